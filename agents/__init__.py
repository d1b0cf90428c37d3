"""Agents for escoba-env, all behind one protocol (``agents.base.Agent``)."""

from __future__ import annotations

from .base import Agent, RandomAgent

__all__ = ["Agent", "RandomAgent"]
