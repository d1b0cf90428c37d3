"""Agents for escoba-env, all behind one protocol (``agents.base.Agent``).

Build them from spec strings with ``make_agent("greedy")``, ``make_agent("search:sims=200")`` and so
on (``agents.registry``); compare them with ``agents.evaluation.play_duplicate``.
"""

from __future__ import annotations

from . import shipped_agents  # noqa: F401  (registers the shipped agents' names)
from .base import Agent, RandomAgent
from .evaluation import MatchResult, play_duplicate
from .expert import ExpertAgent
from .greedy import GreedyAgent
from .registry import make_agent, register
from .search import OracleAgent, SearchAgent

__all__ = [
    "Agent",
    "ExpertAgent",
    "GreedyAgent",
    "MatchResult",
    "OracleAgent",
    "RandomAgent",
    "SearchAgent",
    "make_agent",
    "play_duplicate",
    "register",
]
