"""What one batched step of the engine reports (``StepInfo``), game by game.

The engine (``escoba_env.executors.engine``) builds one per ``step``; the faces read it. The points of the
round that ended are built on first access, from the few games whose round ended.
"""

from __future__ import annotations

import numpy as np

from ..rulebook.scoring import CATEGORIES

REPORTED = ("points", *CATEGORIES, "escobas")
"""The columns of a round's report, in order: its points, then each scoring category's."""


class StepInfo:
    """What one batched step did, per game (arrays of length N, or (N, S) per side).

    - ``actor``: seat that acted (-1 for games that were already over);
    - ``captured``: cards that went to the actor's pile this step (played card included); 0 if none;
    - ``escoba``: 1 if this step's capture was an escoba;
    - ``round_over``: True where a round ended during this step;
    - ``round_points``: (N, S) points of the round that ended (0 elsewhere);
    - ``round_categories``: category name -> (N, S) points of the round that ended (cards, oros,
      velo, sevens, escobas);
    - ``scores``: (N, S) cumulative scores after the step (before any new round is dealt);
    - ``game_over``: True where the game ended (target reached, single round over, or truncated);
    - ``truncated``: True where the game was cut by ``max_rounds`` with no winner;
    - ``winner``: winning side of each game that ended this step (-1 elsewhere, and for a
      truncated game).

    ``round_points`` and ``round_categories`` are built on first access from the few games whose
    round ended (most steps end no round, and most readers never look).
    """

    __slots__ = ("actor", "captured", "escoba", "round_over", "scores", "game_over", "truncated",
                 "winner", "_report", "_round_points", "_round_categories")

    def __init__(self, actor, captured, escoba, round_over, round_points, round_categories, scores,
                 game_over, truncated, winner, *, report=None):
        self.actor, self.captured, self.escoba, self.round_over = actor, captured, escoba, round_over
        self.scores, self.game_over, self.truncated, self.winner = scores, game_over, truncated, winner
        self._round_points, self._round_categories = round_points, round_categories
        self._report = report  # (n, sides, games (K,), table (K, len(REPORTED), S)) or None

    def _build(self):
        n, s, g, rows = self._report
        table = np.zeros((n, len(REPORTED), s), np.int64)
        table[g] = rows
        self._round_points = table[:, 0]
        self._round_categories = {k: table[:, i] for i, k in enumerate(REPORTED[1:], start=1)}
        self._report = None

    @property
    def round_points(self) -> np.ndarray:
        """Return the (N, S) points of the round that ended this step (0 elsewhere)."""
        if self._round_points is None:
            self._build()
        return self._round_points

    @property
    def round_categories(self) -> dict:
        """Return category name -> (N, S) points of the round that ended (0 elsewhere)."""
        if self._round_categories is None:
            self._build()
        return self._round_categories

    def __repr__(self) -> str:
        fields = ("actor", "captured", "escoba", "round_over", "round_points", "round_categories",
                  "scores", "game_over", "truncated", "winner")
        return "StepInfo(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in fields) + ")"
