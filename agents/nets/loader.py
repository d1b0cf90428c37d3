"""One loader for every network checkpoint: a plain ``NeuralAgent`` or a phase-gated ``SoloAgent``.

A checkpoint with an ``endgame_net`` entry is a phase-gated agent (``agents.nets.solo``); any other is a
plain network (``agents.nets.neural``). ``load_checkpoint_agent`` is the registry's ``checkpoint:PATH``
loader; this module imports both kinds so that neither imports the other's loader.
"""

from __future__ import annotations

import os
from typing import Any

from escoba_env.rulebook.rules import Rules

from ..base import Agent
from .neural import NeuralAgent, load_checkpoint
from .solo import SoloAgent
from .tablenet import TableNetAgent


def load_checkpoint_agent(path: str | os.PathLike, rules: Rules | None = None, seed: int | None = None,
                          **params: Any) -> Agent:
    """Return the agent stored at ``path``: a ``TableNetAgent`` for a move-network checkpoint (a
    ``move_net`` entry, ``agents.nets.tablenet``), a ``SoloAgent`` for a phase-gated one (an ``endgame_net``
    entry), else a ``NeuralAgent``; FileNotFoundError / ValueError as ``load_checkpoint``."""
    ckpt = load_checkpoint(path)
    if "move_net" not in ckpt and params.pop("symmetric", None) is not None:
        raise ValueError(f"symmetric applies to move networks (agents.nets.tablenet); {str(path)!r} "
                         "is not one")
    if "move_net" in ckpt:
        return TableNetAgent.from_checkpoint(path, rules=rules, seed=seed, **params)
    if "endgame_net" in ckpt:
        return SoloAgent.from_checkpoint(path, rules=rules, seed=seed, **params)
    return NeuralAgent.from_checkpoint(path, rules=rules, seed=seed, **params)
