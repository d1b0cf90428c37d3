"""Agents for the model card's last-deal measurements, as ``python:last_deal_split:FACTORY`` specs.

A move network plays while the stock lasts and the search plays the last deal (the stock empty),
which measures what the networks lose there; ``neural-solo`` with the exact solver in place of its
endgame network (what that network loses to ``hybrid``); and ``neural-solo`` with both networks'
values averaged over the plain suits. Run from the repository root with ``scripts`` on the path::

    PYTHONPATH=scripts python evaluate.py --vs python:last_deal_split:net_then_search_2v2 --agents expert \\
        --players 4 --partnerships --rounds 2000 --seed 777 --workers 1
    PYTHONPATH=scripts python evaluate.py --vs python:last_deal_split:net_then_search_3p --agents expert \\
        --players 3 --rounds 1400 --seed 777 --workers 1
    PYTHONPATH=scripts python evaluate.py --vs python:last_deal_split:solo_symmetric --agents expert \\
        --rounds 5000 --seed 2026 --workers 1
    PYTHONPATH=scripts python evaluate.py --vs python:last_deal_split:solo_then_exact --agents hybrid \\
        --rounds 1500 --seed 31 --workers 1
"""

from __future__ import annotations

import numpy as np

from agents.base import Agent
from agents.registry import make_agent
from agents.solo import symmetric_values
from agents.worlds import observation_scalars


class LastDealSplit(Agent):
    """Plays ``early`` while the stock lasts and ``late`` once it is empty."""

    def __init__(self, early: Agent, late: Agent, rules, seed=None):
        self.early, self.late = early, late
        super().__init__(rules, seed)
        self.name = f"{early.name} then {late.name}"

    def reset(self, seed=None):
        super().reset(seed)
        for agent in (getattr(self, "early", None), getattr(self, "late", None)):
            if agent is not None:
                agent.reset(seed)

    def act_batch(self, observations, action_masks, state=None):
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks, np.int8)
        late = observation_scalars(obs, self.rules)["stock"] == 0
        out = np.zeros(len(obs), np.int64)
        for rows, agent in ((np.flatnonzero(~late), self.early), (np.flatnonzero(late), self.late)):
            if rows.size:
                out[rows] = agent.act_batch(obs[rows], masks[rows])
        return out


def _split(network: str, search: str):
    def factory(rules=None, seed=None):
        return LastDealSplit(make_agent(network, rules=rules, seed=seed),
                             make_agent(search, rules=rules, seed=seed), rules, seed)
    return factory


net_then_search_2v2 = _split("neural-2v2-move-v1:symmetric=true", "search:sims=1000")
net_then_search_3p = _split("neural-3p-move-v1:symmetric=true", "search:sims=400")


def solo_symmetric(rules=None, seed=None):
    """``neural-solo`` with its midgame and endgame networks' values averaged over the plain suits."""
    agent = make_agent("neural-solo", rules=rules, seed=seed)
    for attr in ("midgame", "endgame"):
        net = getattr(agent, attr)
        setattr(agent, attr, lambda x, net=net: symmetric_values(net, x))
    agent.name = "neural-solo:symmetric"
    return agent


solo_then_exact = _split("neural-solo", "hybrid")
"""``neural-solo``'s midgame network while the stock lasts, the exact solver (``hybrid``) after it."""
