"""The global state of one game, for centralised critics (PettingZoo's ``state()``): privileged.

It holds the whole position: every hand, the stock in order, the table, the capture piles, the
cards played, the pending capture choice, escobas, scores, dealer, seat to act, last capturer and
round number. It is for critics during training only (CTDE, MAPPO): no observation ever contains
it, and an agent that acts from it sees hidden information.

Layout (float32, by absolute seat, seat slots sized for 4 and unused slots 0; W = ``rules.num_cards``):

- card planes, W entries each (1.0 where the card is in the set): hands of seats 0-3 (planes 0-3),
  capture piles of seats 0-3 (4-7), cards played this round by seats 0-3 (8-11), table (12),
  pending played card (13), table cards named so far during a capture choice (14);
- plane 15, the stock in order: ``(k + 1) / W`` for the card that is k-th from the top, 0 elsewhere;
- scalars from ``16 W``: escobas this round of seats 0-3, scores of sides 0-3 divided by
  ``target_score`` (saturating at ``observation.score_cap``, as in the observation), seat to act
  one-hot (4, all 0 once the game is over), dealer one-hot (4), last capturer one-hot (4, all 0:
  nobody yet), 1.0 during a capture choice, round index (0 in the first round; saturating at
  ``round_cap(rules)``, reached only while a tied lead plays on).
"""

from __future__ import annotations

import numpy as np

from ..rulebook.rules import Rules
from .game import Game
from .observation import score_cap

__all__ = ["round_cap", "state_bounds", "state_size", "state_vector"]

PLANES = 16
SCALARS = 4 + 4 + 4 + 4 + 4 + 1 + 1


def state_size(rules: Rules) -> int:
    """Return the length of the state vector: ``16 W + 22`` (662 for the 40-card deck)."""
    return PLANES * rules.num_cards + SCALARS


def state_bounds(rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """Return the (low, high) float32 bounds of the state vector of ``rules``."""
    w = rules.num_cards
    low = np.zeros(state_size(rules), np.float32)
    high = np.ones(state_size(rules), np.float32)
    s = PLANES * w
    high[s:s + 4] = float(w // 2)  # escobas of a round: each takes two cards at least
    high[s + 4:s + 8] = score_cap(rules) / rules.target_score
    high[-1] = float(round_cap(rules))
    return low, high


def round_cap(rules: Rules) -> int:
    """Return the round index at which the state's round entry saturates: ``num_sides * target_score``.

    The velo's point goes to some side every round, so a game whose lead is not tied ends within
    ``num_sides * (target_score - 1) + 1`` rounds; only a tied lead that plays on goes further.
    """
    return rules.num_sides * rules.target_score


def _bits(mask: int, w: int) -> np.ndarray:
    return np.array([mask >> c & 1 for c in range(w)], np.float32)


def state_vector(game: Game) -> np.ndarray:
    """Return the global state of ``game`` (see the module docstring), a new float32 array."""
    rules, w = game.rules, game.num_cards
    out = np.zeros(state_size(rules), np.float32)
    planes = out[:PLANES * w].reshape(PLANES, w)
    for seat in range(game.num_players):
        planes[seat] = _bits(game.hands[seat], w)
        planes[4 + seat] = _bits(game.piles[seat], w)
        planes[8 + seat] = _bits(game.played[seat], w)
    planes[12] = _bits(game.table, w)
    if game.pending >= 0:
        planes[13, game.pending] = 1.0
    planes[14] = _bits(game.taken, w)
    stock = game.deck[game.stock_pos:]
    planes[15, stock] = (np.arange(len(stock), dtype=np.float32) + 1) / w
    s = out[PLANES * w:]
    s[:game.num_players] = game.escobas
    s[4:4 + game.num_sides] = np.minimum(game.scores, score_cap(rules)) / rules.target_score
    if not game.done:
        s[8 + game.to_act] = 1.0
    s[12 + game.dealer] = 1.0
    if game.last_capturer >= 0:
        s[16 + game.last_capturer] = 1.0
    s[20] = float(game.pending >= 0)
    s[21] = float(min(game.round_index, round_cap(rules)))
    return out
