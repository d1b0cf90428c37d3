"""Factories of the registry's agents that do more than call a class: agents whose libraries are
imported only when one is built, a checkpoint file checked before it is read, the endgame wrapper.

Each is called as ``factory(rules=, seed=, **parameters)`` by ``agents.spec.registry.make_agent`` (which
builds a parameter that names another agent into that agent first).
"""

from __future__ import annotations

import os
from typing import Any

from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..external.python_factory import load_python
from ..external.sb3_model import load_sb3
from ..heuristic.endgame import EndgameAgent
from ..heuristic.expert import ExpertAgent
from ..search.ismcts import ISMCTSAgent


def endgame(rules: Rules | None = None, seed: int | None = None, base: Agent | None = None) -> Agent:
    """Return ``base`` (default: the expert) playing 2-player endgames exactly
    (``agents.heuristic.endgame``)."""
    return EndgameAgent(ExpertAgent(rules, seed) if base is None else base, rules=rules, seed=seed)


def checkpoint_agent(path: str | None = None, rules: Rules | None = None, seed: int | None = None,
                     **params: Any) -> Agent:
    """Return the network agent stored at ``path`` (``agents.nets.loader``; imports torch)."""
    if not path:
        raise ValueError("checkpoint needs a file: checkpoint:path/to/model.pt")
    if not os.path.isfile(path):
        raise ValueError(f"checkpoint file not found: {path!r}")
    from ..nets.loader import load_checkpoint_agent  # the [agents] extra

    return load_checkpoint_agent(path, rules=rules, seed=seed, **params)


def sb3(**params: Any) -> Agent:
    """Return a Stable-Baselines3 model's agent (``agents.external.sb3_model.load_sb3``; imports SB3)."""
    return load_sb3(**params)


def python(**params: Any) -> Agent:
    """Return the agent of a user's ``module:factory`` (``agents.external.python_factory.load_python``)."""
    return load_python(**params)


def ismcts(rules: Rules | None = None, seed: int | None = None, **params: Any) -> Agent:
    """Return OpenSpiel's IS-MCTS agent (``agents.search.ismcts``; imports OpenSpiel)."""
    try:
        return ISMCTSAgent(rules=rules, seed=seed, **params)
    except ImportError as e:
        raise ValueError(f"openspiel-ismcts needs OpenSpiel: pip install 'escoba-env[openspiel]' "
                         f"({e})") from None
