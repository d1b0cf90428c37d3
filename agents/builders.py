"""Factories of the registry's agents that do more than call a class: an agent built around another
agent named by its spec, and agents whose libraries are imported only when one is built.

Each is called as ``factory(rules=, seed=, **parameters)`` by ``agents.registry.make_agent``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from escoba_env.rules import Rules

from .base import Agent
from .endgame import EndgameAgent


def with_policy(cls: type[Agent]) -> Callable[..., Agent]:
    """Return a factory of ``cls`` whose ``policy`` parameter (an agent spec) is built into that agent."""
    def factory(rules: Rules | None = None, seed: int | None = None, policy: str | None = None,
                **params: Any) -> Agent:
        if policy is not None:
            from .registry import make_agent

            params["policy"] = make_agent(policy, rules=rules, seed=seed)
            params["policy"].name = policy  # named by its spec, not by the file it loaded
        return cls(rules=rules, seed=seed, **params)
    factory.__doc__ = f"Return a ``{cls.__name__}``; ``policy`` (an agent spec) plays its rollouts."
    return factory


def endgame(rules: Rules | None = None, seed: int | None = None, base: str = "expert") -> Agent:
    """Return ``base`` wrapped so that it plays 2-player endgames exactly (``agents.endgame``)."""
    from .registry import make_agent

    return EndgameAgent(make_agent(base, rules=rules, seed=seed), rules=rules, seed=seed)


def checkpoint_agent(path: str | None = None, rules: Rules | None = None, seed: int | None = None,
                     **params: Any) -> Agent:
    """Return the network agent stored at ``path`` (``agents.loader``; imports torch)."""
    if not path:
        raise ValueError("checkpoint needs a file: checkpoint:path/to/model.pt")
    if not os.path.isfile(path):
        raise ValueError(f"checkpoint file not found: {path!r}")
    from .loader import load_checkpoint_agent

    return load_checkpoint_agent(path, rules=rules, seed=seed, **params)


def sb3(**params: Any) -> Agent:
    """Return a Stable-Baselines3 model's agent (``agents.outside.load_sb3``; imports SB3)."""
    from .outside import load_sb3

    return load_sb3(**params)


def python(**params: Any) -> Agent:
    """Return the agent of a user's ``module:factory`` (``agents.outside.load_python``)."""
    from .outside import load_python

    return load_python(**params)


def ismcts(rules: Rules | None = None, seed: int | None = None, **params: Any) -> Agent:
    """Return OpenSpiel's IS-MCTS agent (``agents.ismcts``; imports OpenSpiel)."""
    try:
        from .ismcts import ISMCTSAgent

        return ISMCTSAgent(rules=rules, seed=seed, **params)
    except ImportError as e:
        raise ValueError(f"openspiel-ismcts needs OpenSpiel: pip install 'escoba-env[openspiel]' "
                         f"({e})") from None
