"""Fixtures of the benchmark tests: a tiny protocol whose cards play in seconds."""

from __future__ import annotations

import pytest

from agents.bench import PROTOCOLS, Protocol, TableSpec


@pytest.fixture
def tiny3(monkeypatch):
    """A tiny unpinned protocol ``t0`` (random and greedy at 2p, and expert at 3p where it plays both
    orders, a few deals): cards play in seconds."""
    t0 = Protocol("t0", {
        "2p": TableSpec("2p", 2, False, ("random", "greedy"), deals=8, quick_deals=4, block_deals=2),
        "3p": TableSpec("3p", 3, False, ("random", "greedy", "expert"), deals=4, quick_deals=2,
                        block_deals=2, orders=2),
    })
    monkeypatch.setitem(PROTOCOLS, "t0", t0)
    return t0
