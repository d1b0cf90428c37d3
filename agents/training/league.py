"""The league: who plays each seat of each game, the shaping potential, and the oracle's privileged input.

Each game slot gets an opponent when its episode starts, drawn with the weights ``opp_self``,
``opp_snapshot``, ``opp_greedy``, ``opp_expert`` (``self``: the learner plays every seat;
``snapshot``: a frozen past copy of the learner plays the other side; ``greedy`` / ``expert``: that
heuristic does). The learner's side is drawn uniformly. ``controller[game, seat]`` holds the code of
who plays a seat: ``LEARNER``, ``GREEDY``, ``EXPERT``, ``SNAP0 + i`` for snapshot slot ``i`` or ``FIXED``
(``opp_fixed``: the frozen agent ``fixed_opponent`` names, the only opponent of a best response).
Only the decisions of seats the learner controls become training transitions.

**Shaping.** ``shaping > 0`` adds the change of a potential (each seat's side pile value and
escobas minus the others', ``SHAPING_WEIGHTS``) to the rewards, so a capture is credited when it
is made rather than at the end of the round; with ``gamma = 1`` it telescopes to zero over each
episode, so the objective is unchanged.
"""

from __future__ import annotations

import numpy as np

from escoba_env.executors.engine import unpack_mask
from escoba_env.rulebook.cards import OROS, SEVENS, VELO
from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..heuristic.expert import ExpertAgent
from ..heuristic.greedy import GreedyAgent
from ..heuristic.weights import CARD_WEIGHTS
from .config import Config

OPPONENTS = ("self", "snapshot", "greedy", "expert", "fixed")
"""League opponent kinds, in the order of their codes (see ``Trainer``)."""
HEURISTICS: dict[str, type[Agent]] = {"greedy": GreedyAgent, "expert": ExpertAgent}
"""Heuristic agents usable as league opponents and evaluation baselines."""
LEARNER, GREEDY, EXPERT, SNAP0 = 0, 1, 2, 3  # controller codes; snapshot i is SNAP0 + i
FIXED = -1
"""Controller code of the frozen ``fixed_opponent`` (``opp_fixed``; a best response's only opponent)."""
SHAPING_WEIGHTS = CARD_WEIGHTS
"""Points-per-item estimates of the shaping potential: the heuristics'
``agents.heuristic.weights.CARD_WEIGHTS`` (a velo counts as card, oro, seven and velo; a joker as a card
only)."""
_OROS = np.uint64(OROS)
_SEVENS = np.uint64(SEVENS)
_VELO = np.uint64(1 << VELO)


def potential(engine) -> np.ndarray:
    """Return the shaping potential (N, P) of every seat: its side's pile value minus the others' mean.

    A side's value is ``SHAPING_WEIGHTS`` applied to its capture pile this round plus its escobas.
    """
    piles, esc = engine.side_totals()
    esc = esc.astype(np.float64)
    w = SHAPING_WEIGHTS

    def count(m: np.ndarray) -> np.ndarray:
        return np.bitwise_count(m).astype(np.float64)

    val = (w["card"] * count(piles) + w["oro"] * count(piles & _OROS) + w["seven"] * count(piles & _SEVENS)
           + w["velo"] * count(piles & _VELO) + w["escoba"] * esc)
    s = val.shape[1]
    rel = val - (val.sum(axis=1, keepdims=True) - val) / (s - 1)
    return rel[:, engine.side_of_seat]


PRIVILEGED_PLANES = 4
"""Planes of the oracle critic's privileged input: the hands of the next three seats (relative to
the observer; zeros for absent seats), and the stock order (1 for the top card, decreasing)."""


def privileged(engine, seats: np.ndarray, games: np.ndarray | None = None) -> np.ndarray:
    """Return float32 (K, 4 * W) hidden state for ``seats`` in ``games``: other hands and stock order.

    Only the ``oracle`` critic reads this, during training; no agent ever sees it.
    """
    games = np.arange(engine.num_games) if games is None else np.asarray(games, np.int64)
    seats = np.asarray(seats, np.int64)
    w, p = engine.rules.num_cards, engine.num_players
    k = len(games)
    out = np.zeros((k, PRIVILEGED_PLANES, w), np.float32)
    for j in range(1, p):
        out[:, j - 1] = unpack_mask(engine.hands[games, (seats + j) % p], w)
    deck = engine.deck[games].astype(np.int64)  # (K, W), top first
    pos = np.arange(w)[None, :]
    left = pos - engine.stock_pos[games][:, None]  # 0 for the top of the stock
    order = np.where(left >= 0, 1.0 - left / w, 0.0).astype(np.float32)
    np.put_along_axis(out[:, 3], deck, order, axis=1)
    return out.reshape(k, -1)


def opponent_weights(cfg: Config, have_snapshot: bool) -> np.ndarray:
    """Return the opponent-kind probabilities (the snapshot weight moves to self while none exists)."""
    w = np.array([cfg.opp_self, cfg.opp_snapshot, cfg.opp_greedy, cfg.opp_expert, cfg.opp_fixed], np.float64)
    if not have_snapshot:
        w[0] += w[1]
        w[1] = 0.0
    return w / w.sum()


def draw_opponents(rng: np.random.Generator, cfg: Config, rules: Rules, filled: np.ndarray, k: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (controller (k, P), kind (k,), learner seat (k,)) for ``k`` games starting now.

    ``filled`` lists the snapshot slots that hold a network.
    """
    kinds = rng.choice(len(OPPONENTS), size=k, p=opponent_weights(cfg, len(filled) > 0))
    side = rng.integers(0, rules.num_sides, size=k)
    snap = filled[rng.integers(0, len(filled), size=k)] if len(filled) else np.zeros(k, np.int64)
    code = np.select([kinds == 2, kinds == 3, kinds == 1, kinds == 4], [GREEDY, EXPERT, SNAP0 + snap, FIXED],
                     LEARNER)
    seat_side = np.array([rules.side_of(s) for s in range(rules.num_players)])
    mine = (seat_side[None, :] == side[:, None]) | (kinds == 0)[:, None]
    return np.where(mine, LEARNER, code[:, None]), kinds, side  # seat ``side`` is always on side ``side``
