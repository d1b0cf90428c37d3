"""Factories of the registry's agents that do more than call a class: agents whose libraries are
imported only when one is built, a checkpoint file checked before it is read, the endgame wrapper.

Each is called as ``factory(rules=, seed=, **parameters)`` by ``agents.registry.make_agent`` (which
builds a parameter that names another agent into that agent first).
"""

from __future__ import annotations

import os
from typing import Any

from escoba_env.rules import Rules

from .base import Agent
from .endgame import EndgameAgent
from .expert import ExpertAgent


def endgame(rules: Rules | None = None, seed: int | None = None, base: Agent | None = None) -> Agent:
    """Return ``base`` (default: the expert) playing 2-player endgames exactly (``agents.endgame``)."""
    return EndgameAgent(ExpertAgent(rules, seed) if base is None else base, rules=rules, seed=seed)


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
