"""The strongest 2-player agent under a move-time budget: search, then the exact endgame.

``HybridAgent`` plays each decision with one of two tools:

- **stock not empty**: determinized Monte Carlo search (``agents.search.pimc.SearchAgent`` with
  ``sims`` rollouts, greedy ones unless ``policy`` plays them) over the hidden cards;
- **stock empty** (2 players, no partnerships: every card is then known): the exact minimax
  solver of ``agents.heuristic.endgame``; among equally valued best actions it plays the expert's choice
  when that is one of them (a tie for perfect play is not one against a fallible opponent).

Unlike ``endgame:base=...`` (``agents.heuristic.endgame.EndgameAgent``), the search is not run on the
endgame rows at all, so its cost is paid only where it is used. With other player counts there
is no exact endgame and the agent is the search alone. Registry spec: ``hybrid`` or
``hybrid:sims=N`` (default ``HybridAgent.DEFAULT_SIMS``, chosen to stay under 50 ms per move on
one core; ``python benchmarks/bench_agents.py --agents hybrid``); ``leaf`` and ``policy`` are the
search's (``agents.search.pimc``: a leaf value at the empty stock, a fair agent that plays the rollouts).
"""

from __future__ import annotations

import numpy as np

from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..heuristic.endgame import endgame_rows, solve
from ..heuristic.expert import ExpertAgent
from ..worlds import obs_layout
from .pimc import SearchAgent


class HybridAgent(Agent):
    """PIMC search with ``sims`` rollouts before the stock runs out, exact minimax after it."""

    name = "hybrid"
    DEFAULT_SIMS = 1000

    def __init__(self, rules: Rules | None = None, seed: int | None = None, sims: int = DEFAULT_SIMS,
                 leaf: str | None = None, policy: Agent | None = None):
        self.search = SearchAgent(rules, seed, sims=sims, leaf=leaf, policy=policy)
        self.expert = ExpertAgent(rules, seed)
        super().__init__(rules, seed)
        self.name = ("hybrid" + self.search.name[len("search"):])

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the agent and the search it runs (the expert and the solver are deterministic)."""
        super().reset(seed)
        if hasattr(self, "search"):
            self.search.reset(seed)

    def act_batch(self, observations, action_masks, state=None):
        """Return one action per row: the exact best action at an empty stock, else the search's."""
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks)
        if obs.ndim != 2 or obs.shape[1] != obs_layout(self.rules).size:
            raise ValueError("observations do not match this agent's rules")
        if masks.shape != (obs.shape[0], self.rules.num_cards):
            raise ValueError(f"action masks must have shape ({obs.shape[0]}, {self.rules.num_cards}), "
                             f"got {masks.shape}")
        if not (masks > 0).any(axis=1).all():
            raise ValueError("hybrid agent got a row with no legal action")
        actions = np.zeros(obs.shape[0], np.int64)
        exact = endgame_rows(obs, self.rules)
        rows = np.nonzero(~exact)[0]
        if rows.size:
            actions[rows] = self.search.act_batch(obs[rows], masks[rows], state)
        rows = np.nonzero(exact)[0]
        if rows.size:
            v = solve(obs[rows], self.rules)
            is_best = v >= np.nanmax(v, axis=1)[:, None] - 1e-9
            pick = np.asarray(self.expert.act_batch(obs[rows], masks[rows]), np.int64)
            keep = is_best[np.arange(rows.size), pick]
            actions[rows] = np.where(keep, pick, np.argmax(is_best, axis=1))
        return actions
