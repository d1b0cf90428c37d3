"""An agent from a user's Python factory (``python:module:factory``).

``module.factory(rules=..., seed=...)`` returns an agent (``module`` is imported from the installed
packages or from the folder the command runs from): an object with ``act_batch(observations,
action_masks, state=None)`` or with ``act(observation, action_mask, state=None)`` (then called once
per game), and optionally ``reset(seed)``. The files the factory opens while it builds the agent
(its weights) are recorded for the spec's fingerprint (``agents.external.provenance``).

Every failure to build one (missing module or factory, a factory that returns no agent) is a
ValueError with one line saying what is wrong, as for the built-in specs.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from escoba_env.rulebook.rules import Rules

from ..base import Agent
from .provenance import LOADED, cwd_importable, opened_files, weight_files


class FunctionAgent(Agent):
    """Wraps a user's agent object so that the tournament can call ``act_batch`` on it."""

    def __init__(self, inner: Any, rules: Rules | None = None, seed: int | None = None):
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))
        self.needs_state = False
        super().__init__(rules, seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed this wrapper and the wrapped agent (if it has ``reset``)."""
        super().reset(seed)
        if callable(getattr(getattr(self, "inner", None), "reset", None)):
            self.inner.reset(seed)

    def act_batch(self, observations, action_masks, state=None):
        """Return the wrapped agent's actions (its ``act_batch``, else one ``act`` per row)."""
        if callable(getattr(self.inner, "act_batch", None)):
            return np.asarray(self.inner.act_batch(observations, action_masks), np.int64).reshape(-1)
        return np.array([int(self.inner.act(o, m)) for o, m in zip(observations, action_masks, strict=True)],
                        np.int64)


def load_python(target: str | None = None, rules: Rules | None = None, seed: int | None = None) -> Agent:
    """Return the agent that ``module.factory(rules=, seed=)`` builds (``python:module:factory``)."""
    module_name, sep, attr = (target or "").rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"python agents are written python:module:factory, got python:{target or ''}")
    cwd_importable()
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import module {module_name!r} for python:{target}: {e}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"module {module_name!r} has no callable {attr!r} (python:{target})")
    rules = Rules() if rules is None else rules
    try:
        with opened_files() as opened:  # the weights it loads go into the card's fingerprint
            inner = factory(rules=rules, seed=seed)
        LOADED[target] = weight_files(opened)
    except TypeError as e:
        raise ValueError(f"python:{target}: the factory must accept rules= and seed= ({e})") from None
    if not callable(getattr(inner, "act_batch", None)) and not callable(getattr(inner, "act", None)):
        raise ValueError(f"python:{target} returned {inner!r}, which has neither act_batch nor act")
    return inner if isinstance(inner, Agent) else FunctionAgent(inner, rules, seed)
