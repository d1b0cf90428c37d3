"""One game read and stepped as plain Python ints: the seam between the arena and the engine.

``OneGame`` drives an ``EscobaEngine`` batch of one; everything the arena needs goes through it, so
that a one-game executor can take its place without touching the rest of the arena.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escoba_env.engine import EscobaEngine
from escoba_env.observation import action_masks, encode
from escoba_env.rules import Rules

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
    """A single game on a one-game ``EscobaEngine``; every reading is a Python int or list."""

    def __init__(self, rules: Rules, max_rounds: int | None = None, engine: EscobaEngine | None = None):
        self.rules = rules
        self.engine = EscobaEngine(1, rules, max_rounds=max_rounds) if engine is None else engine

    def reset(self, seed: int, dealer: int | None = None, deck: list[int] | None = None) -> None:
        """Deal a new game from ``seed`` (or from an explicit first ``deck`` and ``dealer``)."""
        self.engine.reset(seed, dealer=dealer, deck=deck)

    def clone(self) -> OneGame:
        """Return an independent copy (for bots that look ahead)."""
        return OneGame(self.rules, engine=self.engine.clone())

    def _i(self, name: str) -> int:
        return int(getattr(self.engine, name)[0])

    done = property(lambda self: bool(self.engine.done[0]), doc="True once the game is over.")
    truncated = property(lambda self: bool(self.engine.truncated[0]), doc="True if cut by max_rounds.")
    winner = property(lambda self: self._i("winner"), doc="Winning side (-1: none yet, or none).")
    to_act = property(lambda self: self._i("to_act"), doc="Seat to act.")
    dealer = property(lambda self: self._i("dealer"), doc="Dealer of the current round.")
    round_index = property(lambda self: self._i("round_index"), doc="Current round, from 0.")
    table = property(lambda self: self._i("table"), doc="Table cards (mask).")
    legal = property(lambda self: self._i("legal"), doc="Legal actions of the seat to act (mask).")
    pending = property(lambda self: self._i("pending"), doc="Card whose capture is being chosen (-1: none).")
    taken = property(lambda self: self._i("taken"), doc="Table cards named so far in a capture choice.")
    last_capturer = property(lambda self: self._i("last_capturer"), doc="Last seat that captured (-1).")
    stock_left = property(lambda self: self.rules.num_cards - self._i("stock_pos"), doc="Cards in the stock.")

    def hand(self, seat: int) -> int:
        """Return the hand of ``seat`` (mask)."""
        return int(self.engine.hands[0, seat])

    def piles(self) -> list[int]:
        """Return each seat's capture pile (masks)."""
        return [int(x) for x in self.engine.piles[0]]

    def escobas(self) -> list[int]:
        """Return each seat's escobas this round."""
        return [int(x) for x in self.engine.escobas[0]]

    def scores(self) -> list[int]:
        """Return each side's total score."""
        return [int(x) for x in self.engine.scores[0]]

    def deck(self) -> list[int]:
        """Return the current round's deck, top first (hands, table, then the stock): hidden information."""
        return [int(c) for c in self.engine.deck[0]]

    def step(self, action: int) -> Step:
        """Apply one action (a play, or a table card named during a capture choice)."""
        info = self.engine.step(np.array([action], np.int64))
        out = Step(int(info.captured[0]), int(info.escoba[0]), bool(info.round_over[0]),
                   bool(info.game_over[0]))
        if out.round_over:
            out.points = [int(x) for x in info.round_points[0]]
            out.categories = {c: [int(x) for x in info.round_categories[c][0]] for c in CATEGORIES}
            out.scores = [int(x) for x in info.scores[0]]
        if out.game_over:
            out.winner, out.truncated = int(info.winner[0]), bool(info.truncated[0])
        return out

    def observe(self, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (observation (1, obs_size), int8 action mask (1, W)) of ``seat`` for an agent."""
        seats = np.array([seat], np.int64)
        return encode(self.engine, seats, _SEAT0), action_masks(self.engine, seats, _SEAT0)

    def agent_state(self) -> tuple[EscobaEngine, np.ndarray]:
        """Return the true state for an agent that declares ``needs_state`` (the cheating oracle): a copy."""
        return self.engine.clone(), _SEAT0.copy()
