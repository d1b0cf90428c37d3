"""Duplicate-deal evaluation of agents in one call, for the trainer and scripts.

A small front to ``agents.tournament``, which alone plays the duplicate blocks
(``agents.tournament.play.play_block``) and computes the intervals (``agents.tournament.stats``).
``play_duplicate`` plays ``deals`` single rounds, each deal once per *seat rotation*, so every
agent gets every hand and the luck of the deal cancels in the comparison:

- agents are given per side: with 2 or 3 players (no partnerships) one agent per seat, with
  partnerships one agent per team (it plays both seats of the team);
- rotation ``r`` gives side ``s`` to agent ``(s + r) % num_sides``; slot ``d * R + r`` holds deal
  ``d`` in rotation ``r``, and slots of one deal share the engine's game id, hence the same cards,
  dealer and stock;
- all games of the batch step together; each step groups the games by the agent to act and calls
  that agent's ``act_batch`` once (the same agent object given twice is called once).

``MatchResult`` reports, per agent, mean points per round with a 95% confidence interval, and the
mean difference (agent 0 minus the mean of the others) with a 95% CI paired over deals (each
deal's difference is averaged over its rotations first, so the deals are independent samples).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from escoba_env.rulebook.rules import Rules

from ..base import Agent
from .play import play_block
from .stats import mean_ci


@dataclass
class MatchResult:
    """Outcome of a duplicate match (see the module docstring)."""

    names: list[str]
    """Agent names, in the order given."""
    rules: Rules
    deals: int
    rotations: int
    seed: int
    points: np.ndarray = field(repr=False)
    """(deals, agents) points per round of each agent's side, averaged over the deal's rotations."""

    @property
    def rounds(self) -> int:
        """Return the number of rounds played (deals x rotations)."""
        return self.deals * self.rotations

    @property
    def deal_diff(self) -> np.ndarray:
        """Return, per deal, agent 0's points minus the mean of the others' (paired samples)."""
        return self.points[:, 0] - self.points[:, 1:].mean(axis=1)

    @property
    def diff(self) -> tuple[float, float, float]:
        """Return (mean, lower, upper) of agent 0's points-per-round advantage (95% CI, paired)."""
        return mean_ci(self.deal_diff)

    def agent_points(self, i: int) -> tuple[float, float, float]:
        """Return (mean, lower, upper) of agent ``i``'s points per round (95% CI over deals)."""
        return mean_ci(self.points[:, i])

    def summary(self) -> str:
        """Return a one-line human-readable summary."""
        m, lo, hi = self.diff
        per = ", ".join(f"{n} {self.points[:, i].mean():.3f}" for i, n in enumerate(self.names))
        return (f"{self.names[0]} vs {' / '.join(self.names[1:])}: {m:+.3f} points/round "
                f"[95% CI {lo:+.3f}, {hi:+.3f}] over {self.rounds} rounds ({per})")


def play_duplicate(agents: Sequence[Agent], rules: Rules | None = None, deals: int = 1000,
                   seed: int = 0, batch_deals: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> MatchResult:
    """Return the result of ``deals`` duplicate single rounds between ``agents`` (one per side).

    ``batch_deals`` bounds how many deals are played in one engine batch (default: all).
    ``progress(done, total)`` is called after each batch.
    """
    rules = Rules() if rules is None else rules
    agents = list(agents)
    sides = rules.num_sides
    if len(agents) != sides:
        raise ValueError(f"need one agent per side ({sides} with these rules), got {len(agents)}")
    if deals < 1:
        raise ValueError(f"deals must be >= 1, got {deals}")
    batch = deals if batch_deals is None else max(1, int(batch_deals))
    points = np.zeros((deals, sides))
    for lo in range(0, deals, batch):
        hi = min(deals, lo + batch)
        block = play_block(agents, rules, np.arange(lo, hi), seed)
        points[lo:hi] = block.points.reshape(hi - lo, sides, sides).mean(axis=1)
        if progress is not None:
            progress(hi, deals)
    return MatchResult([a.name for a in agents], rules, deals, sides, seed, points)
