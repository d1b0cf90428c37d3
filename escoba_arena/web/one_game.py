"""One game read and stepped as plain Python ints: the seam between the arena and the rules.

``OneGame`` wraps the one-game executor ``escoba_env.executors.game.Game`` (Python ints, no NumPy call on
its step path); everything the arena needs goes through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.game import Game
from escoba_env.rulebook.rules import Rules

CATEGORIES = ("cards", "oros", "velo", "sevens", "escobas")
"""Category points of a round, in the engine's ``StepInfo.round_categories`` keys."""
_SEAT0 = np.zeros(1, np.int64)


@dataclass
class Step:
    """What one action did: the cards captured (played card included), escoba, and the round's end."""

    captured: int
    escoba: int
    round_over: bool
    game_over: bool
    points: list[int] | None = None
    categories: dict[str, list[int]] | None = None
    scores: list[int] | None = None
    winner: int = -1
    truncated: bool = False


class OneGame:
    """A single game on the one-game executor ``Game``; every reading is a Python int or list."""

    def __init__(self, rules: Rules, max_rounds: int | None = None, game: Game | None = None):
        self.rules = rules
        self.game = Game(rules, max_rounds=max_rounds) if game is None else game

    def reset(self, seed: int, dealer: int | None = None, deck: list[int] | None = None) -> None:
        """Deal a new game from ``seed`` (or from an explicit first ``deck`` and ``dealer``)."""
        self.game.reset(seed, dealer=dealer, deck=deck)

    def clone(self) -> OneGame:
        """Return an independent copy (for bots that look ahead)."""
        return OneGame(self.rules, game=self.game.clone())

    done = property(lambda self: self.game.done, doc="True once the game is over.")
    truncated = property(lambda self: self.game.truncated, doc="True if cut by max_rounds.")
    winner = property(lambda self: self.game.winner, doc="Winning side (-1: none yet, or none).")
    to_act = property(lambda self: self.game.to_act, doc="Seat to act.")
    dealer = property(lambda self: self.game.dealer, doc="Dealer of the current round.")
    round_index = property(lambda self: self.game.round_index, doc="Current round, from 0.")
    table = property(lambda self: self.game.table, doc="Table cards (mask).")
    legal = property(lambda self: self.game.legal, doc="Legal actions of the seat to act (mask).")
    pending = property(lambda self: self.game.pending, doc="Card whose capture is being chosen (-1: none).")
    taken = property(lambda self: self.game.taken, doc="Table cards named so far in a capture choice.")
    last_capturer = property(lambda self: self.game.last_capturer, doc="Last seat that captured (-1).")
    stock_left = property(lambda self: self.rules.num_cards - self.game.stock_pos, doc="Cards in the stock.")

    def hand(self, seat: int) -> int:
        """Return the hand of ``seat`` (mask)."""
        return self.game.hands[seat]

    def piles(self) -> list[int]:
        """Return each seat's capture pile (masks)."""
        return list(self.game.piles)

    def escobas(self) -> list[int]:
        """Return each seat's escobas this round."""
        return list(self.game.escobas)

    def scores(self) -> list[int]:
        """Return each side's total score."""
        return list(self.game.scores)

    def deck(self) -> list[int]:
        """Return the current round's deck, top first (hands, table, then the stock): hidden information."""
        return list(self.game.deck)

    def step(self, action: int) -> Step:
        """Apply one action (a play, or a table card named during a capture choice)."""
        st = self.game.step(int(action))
        out = Step(st.captured, st.escoba, st.round_over, st.game_over)
        if out.round_over:
            out.points = list(st.round_points)
            out.categories = {c: list(st.round_categories[c]) for c in CATEGORIES}
            out.scores = list(st.scores)
        if out.game_over:
            out.winner, out.truncated = st.winner, st.truncated
        return out

    def observe(self, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (observation (1, obs_size), int8 action mask (1, W)) of ``seat`` for an agent."""
        return self.game.observe(seat)[None], self.game.action_mask(seat)[None]

    def agent_state(self) -> tuple[EscobaEngine, np.ndarray]:
        """Return the true state for an agent that declares ``needs_state`` (the cheating oracle): a copy."""
        return self.game.to_engine(), _SEAT0.copy()
