"""Duplicate-deal evaluation of agents on the batched engine (the small shared evaluator).

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

from escoba_env.engine import EscobaEngine
from escoba_env.observation import action_masks, encode
from escoba_env.rules import Rules

from .base import Agent

Z95 = 1.959963984540054


def distinct_agents(agents: Sequence[Agent]) -> tuple[list[Agent], np.ndarray]:
    """Return the distinct agent objects and, per given agent, its index among them.

    An agent object given more than once is then called once per step for all its games.
    """
    callers: list[Agent] = []
    index = []
    for a in agents:
        same = [k for k, c in enumerate(callers) if c is a]
        if not same:
            callers.append(a)
        index.append(same[0] if same else len(callers) - 1)
    return callers, np.asarray(index, np.int64)


def agent_actions(engine: EscobaEngine, agents: Sequence[Agent], who: np.ndarray) -> np.ndarray:
    """Return one action per game: game ``g``'s seat to act is played by ``agents[who[g]]``.

    Each agent is called once, with the observations of all its games (``act_batch``); the oracle
    (``needs_state``) also gets ``state=(engine, games)``. Finished games get action 0.
    """
    actions = np.zeros(engine.num_games, np.int64)
    live = ~engine.done
    for k, agent in enumerate(agents):
        g = np.nonzero(live & (who == k))[0]
        if g.size == 0:
            continue
        seats = engine.to_act[g]
        state = (engine, g) if agent.needs_state else None
        actions[g] = agent.act_batch(encode(engine, seats, g), action_masks(engine, seats, g), state)
    return actions


def mean_ci(x: np.ndarray, z: float = Z95) -> tuple[float, float, float]:
    """Return (mean, lower, upper): the mean of ``x`` and its normal-approximation CI."""
    x = np.asarray(x, np.float64)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = z * float(x.std(ddof=1)) / np.sqrt(len(x))
    return m, m - half, m + half


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
        points[lo:hi] = _play_block(agents, rules, np.arange(lo, hi), seed)
        if progress is not None:
            progress(hi, deals)
    return MatchResult([a.name for a in agents], rules, deals, sides, seed, points)


def _play_block(agents: list[Agent], rules: Rules, deal_ids: np.ndarray, seed: int) -> np.ndarray:
    """Play every rotation of the given deals; return points (len(deal_ids), agents)."""
    sides, p = rules.num_sides, rules.num_players
    rot = sides
    n = len(deal_ids) * rot
    r = np.tile(np.arange(rot), len(deal_ids))
    seat_side = np.array([rules.side_of(s) for s in range(p)])
    # Agent index at each seat of each slot, and each agent's side per slot.
    seat_agent = (seat_side[None, :] + r[:, None]) % sides  # (n, p)
    agent_side = (np.arange(sides)[None, :] - r[:, None]) % sides  # (n, agents)
    engine = EscobaEngine(n, rules, single_round=True)
    engine.reset(seed, game_ids=np.repeat(deal_ids, rot))
    round_points = np.zeros((n, sides))
    callers, slot_of = distinct_agents(agents)
    rows = np.arange(engine.num_games)
    while not engine.done.all():
        actor = engine.to_act
        who = slot_of[seat_agent[rows, actor]]
        info = engine.step(agent_actions(engine, callers, who))
        round_points += info.round_points
    per_agent = np.take_along_axis(round_points, agent_side, axis=1)
    return per_agent.reshape(len(deal_ids), rot, sides).mean(axis=1)
