"""Fixtures of the llm tests."""

from __future__ import annotations

import pytest

from agents.external.llm_standin import StandIn


@pytest.fixture
def standin():
    """A stand-in chat-completions server on loopback for one test (a module may define its own)."""
    s = StandIn()
    yield s
    s.close()
