"""Agents of the last-deal measurements, as ``python:lab.last_deal_split:FACTORY`` specs.

A move network plays while the stock lasts and the search plays the last deal (the stock empty),
which measures what the networks lose there; ``neural-solo`` with the exact solver in place of its
endgame network (what that network loses to ``hybrid``); and ``neural-solo`` with both networks'
values averaged over the plain suits. The ``*_at_6`` factories and ``playout_symmetric`` play
unshipped 2-player networks (files a user writes first: ``runs/solo2_ans.pt``, ``runs/s6_playout.pt``
and ``runs/solo3_playout.pt``): another agent takes the decisions of the deal before the last (6 cards
in the stock); ``peek_then_exact`` is a candidate teacher measured against ``hybrid``. The move
networks' first weights are in ``lab/weights/``. Run from the repository root::

    python evaluate.py --vs python:lab.last_deal_split:net_then_search_2v2 --agents expert \\
        --players 4 --partnerships --rounds 2000 --seed 777 --workers 1
    python evaluate.py --vs python:lab.last_deal_split:net_then_search_3p --agents expert \\
        --players 3 --rounds 1400 --seed 777 --workers 1
    python evaluate.py --vs python:lab.last_deal_split:solo_symmetric --agents expert \\
        --rounds 5000 --seed 2026 --workers 1
    python evaluate.py --vs python:lab.last_deal_split:solo_then_exact --agents hybrid \\
        --rounds 1500 --seed 31 --workers 1
    python evaluate.py --vs python:lab.last_deal_split:answers_then_hybrid_at_6 \\
        --agents hybrid --rounds 1500 --seed 31 --workers 1
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Agent
from agents.nets.solo import symmetric_values
from agents.spec.registry import make_agent
from agents.worlds import observation_scalars

from .playout import load_playout_agent

WEIGHTS = Path(__file__).resolve().parent / "weights"
"""The superseded weights of the move networks (``escoba_2v2_move_v1.pt``, ``escoba_3p_move_v1.pt``)."""


class LastDealSplit(Agent):
    """Plays ``early`` while the stock lasts and ``late`` once it is empty; with ``at=N``, ``late`` at
    the decisions taken with exactly N cards in the stock (one deal) and ``early`` at all others."""

    def __init__(self, early: Agent, late: Agent, rules, seed=None, at: int = 0):
        self.early, self.late, self.at = early, late, int(at)
        super().__init__(rules, seed)
        self.name = f"{early.name} then {late.name}" + (f" at stock {self.at}" if self.at else "")

    def reset(self, seed=None):
        super().reset(seed)
        for agent in (getattr(self, "early", None), getattr(self, "late", None)):
            if agent is not None:
                agent.reset(seed)

    def act_batch(self, observations, action_masks, state=None):
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks, np.int8)
        late = observation_scalars(obs, self.rules)["stock"] == self.at
        out = np.zeros(len(obs), np.int64)
        for rows, agent in ((np.flatnonzero(~late), self.early), (np.flatnonzero(late), self.late)):
            if rows.size:
                out[rows] = agent.act_batch(obs[rows], masks[rows])
        return out


def _split(network: str, search: str, at: int = 0):
    def factory(rules=None, seed=None):
        return LastDealSplit(make_agent(network, rules=rules, seed=seed),
                             make_agent(search, rules=rules, seed=seed), rules, seed, at=at)
    return factory


net_then_search_2v2 = _split(f"checkpoint:{WEIGHTS / 'escoba_2v2_move_v1.pt'},symmetric=true",
                             "search:sims=1000")
net_then_search_3p = _split(f"checkpoint:{WEIGHTS / 'escoba_3p_move_v1.pt'},symmetric=true",
                            "search:sims=400")


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
peek_then_exact = _split("search:sims=1000,threat=peek", "hybrid")
"""``hybrid`` with rollouts that judge sweep threats from the sampled deal's next hand (a candidate
teacher): ``search:sims=1000,threat=peek`` while the stock lasts, the exact solver after it."""

def answers_then_playout_at_6(rules=None, seed=None):
    """The answer-input network, with the counter-input network (``lab.playout``) at the deal before
    the last."""
    return LastDealSplit(make_agent("checkpoint:runs/solo2_ans.pt", rules=rules, seed=seed),
                         load_playout_agent("runs/s6_playout.pt", rules=rules, seed=seed), rules, seed, at=6)



answers_then_hybrid_at_6 = _split("checkpoint:runs/solo2_ans.pt", "hybrid", at=6)
"""The answer-input network, with ``hybrid``'s own moves in the deal before the last."""


def playout_symmetric(rules=None, seed=None, path: str = "runs/solo3_playout.pt"):
    """The counter-input network (``path``) with both networks' values averaged over the plain suits
    (its midgame inputs start with 12 card blocks)."""
    agent = load_playout_agent(path, rules=rules, seed=seed)
    mid, end = agent.midgame, agent.endgame
    agent.midgame = lambda x: symmetric_values(mid, x, 12)
    agent.endgame = lambda x: symmetric_values(end, x)
    agent.name = f"{agent.name}:symmetric"
    return agent
