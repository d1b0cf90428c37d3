"""The shipped agents by name, and each table's default opponent (``agents.nets.shipped`` holds the tables).

Imported by the ``agents`` package, this module registers the shipped networks (``neural-2p`` and its
alias ``neural``, ``neural-2p-plain``, ``neural-solo``, ``neural-2v2``, ``neural-3p``, ``neural-2v2-move``,
``neural-3p-move``) and the strongest agent of each table (``strong-2v2``, ``strong-3p``) with
``agents.spec.registry``. ``default_opponent(rules)`` is the opponent the terminal game and the web arena
give a table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..nets.shipped import (
    DEFAULT_OPPONENTS,
    FALLBACK_OPPONENT,
    MOVE_CHECKPOINTS,
    PLAIN_CHECKPOINT,
    SHIPPED_CHECKPOINTS,
    SOLO_CHECKPOINT,
    STRONG_AGENTS,
    package_file,
    table_name,
)
from ..search.hybrid import HybridAgent
from .builders import checkpoint_agent
from .registry import NET_PARAMS, SIMS, make_agent, register
from .values import Flag


def default_opponent(rules: Rules | None = None) -> tuple[str, str | None]:
    """Return (spec, note): the table's ``DEFAULT_OPPONENTS`` entry if it plays ``rules``, else
    ``FALLBACK_OPPONENT`` and a note saying why (a missing extra still raises ModuleNotFoundError)."""
    rules = Rules() if rules is None else rules
    table = (rules.num_players, rules.partnerships)
    spec = DEFAULT_OPPONENTS.get(table)
    if spec is None:
        return FALLBACK_OPPONENT, (f"no shipped agent plays {table_name(*table)}; playing "
                                   f"{FALLBACK_OPPONENT}")
    try:
        make_agent(spec, rules=rules, seed=0)
    except (ValueError, OSError) as exc:
        reason = " ".join(str(exc).split())
        return FALLBACK_OPPONENT, (f"{spec} does not play these rules ({reason}); playing "
                                   f"{FALLBACK_OPPONENT}")
    return spec, None


def _network(file: str) -> Callable[..., Agent]:
    """Return a factory of the shipped network in ``file`` (``checkpoint`` with a fixed path)."""
    path = str(package_file(file))

    def factory(rules: Rules | None = None, seed: int | None = None, **params: Any) -> Agent:
        """Return the shipped agent (it refuses other rules with a ValueError naming the difference)."""
        return checkpoint_agent(path, rules=rules, seed=seed, **params)

    return factory


def _strong(players: int, partnerships: bool) -> Callable[..., Agent]:
    """Return a factory of the strongest shipped agent of that table (``STRONG_AGENTS``)."""
    name = STRONG_AGENTS[players, partnerships]

    def factory(rules: Rules | None = None, seed: int | None = None, sims: int | None = None) -> Agent:
        """Return the agent; rules of another table raise a ValueError naming both tables."""
        rules = Rules() if rules is None else rules
        if (rules.num_players, rules.partnerships) != (players, partnerships):
            raise ValueError(f"{name} plays {table_name(players, partnerships)}, not "
                             f"{table_name(rules.num_players, rules.partnerships)}")
        agent = HybridAgent(rules, seed, sims=HybridAgent.DEFAULT_SIMS if sims is None else sims)
        agent.name = f"{name}:sims={agent.search.sims}"
        return agent

    return factory


_MOVE_PARAMS = {**NET_PARAMS, "symmetric": Flag(doc="average over suit permutations")}
register("neural-2p", _network(SHIPPED_CHECKPOINTS[2, False]), NET_PARAMS,
         "the shipped neural agent of the 2-player game")
register("neural-2p-plain", _network(PLAIN_CHECKPOINT), NET_PARAMS,
         "neural-2p before its endgame fine-tune, without endgame inputs")
register("neural", _network(SHIPPED_CHECKPOINTS[2, False]), NET_PARAMS,
         "the same agent as neural-2p (the web arena's name for it)")
register("neural-2v2", _network(SHIPPED_CHECKPOINTS[4, True]), NET_PARAMS,
         "the shipped neural agent of the 4-player partnership game")
register("neural-3p", _network(SHIPPED_CHECKPOINTS[3, False]), NET_PARAMS,
         "the shipped neural agent of the 3-player game")
register("neural-solo", _network(SOLO_CHECKPOINT), NET_PARAMS,
         "network-only 2-player agent: a midgame and an endgame network")
register("neural-2v2-move", _network(MOVE_CHECKPOINTS[4, True]), _MOVE_PARAMS,
         "network-only 2v2 agent: a network scores each legal move")
register("neural-3p-move", _network(MOVE_CHECKPOINTS[3, False]), _MOVE_PARAMS,
         "network-only 3-player agent: a move network and a last-deal network")
for (_players, _teams), _name in STRONG_AGENTS.items():
    register(_name, _strong(_players, _teams),
             {"sims": replace(SIMS, default=HybridAgent.DEFAULT_SIMS)},
             f"the strongest agent of {table_name(_players, _teams)} (hybrid, 1,000 rollouts), only there")
