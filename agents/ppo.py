"""Compatibility name of the trainer: everything now lives in ``agents.training`` (see its modules)."""

from __future__ import annotations

from .training import *  # noqa: F403
from .training import __all__  # noqa: F401
