"""Agents for escoba-env, all behind one protocol (``agents.base.Agent``).

Build them from spec strings with ``make_agent("greedy")``, ``make_agent("search:sims=200")`` and so
on (``agents.spec.registry``; ``available()`` lists the names); compare two with ``play_duplicate``
(``agents.tournament.duplicate``). The agents are grouped by kind: ``agents.heuristic``,
``agents.search``, ``agents.nets`` and ``agents.external``; ``agents.spec`` declares them.
"""

from __future__ import annotations

from .base import Agent, RandomAgent
from .heuristic.expert import ExpertAgent
from .heuristic.greedy import GreedyAgent
from .search.pimc import OracleAgent, SearchAgent
from .spec import shipped_agents  # noqa: F401  (registers the shipped agents' names)
from .spec.registry import make_agent, names, register
from .tournament.duplicate import MatchResult, play_duplicate


def available() -> list[str]:
    """Return the name of every registered agent, in registration order (``agents.spec.registry``)."""
    return names()


__all__ = [
    "Agent",
    "ExpertAgent",
    "GreedyAgent",
    "MatchResult",
    "OracleAgent",
    "RandomAgent",
    "SearchAgent",
    "available",
    "make_agent",
    "play_duplicate",
    "register",
]
