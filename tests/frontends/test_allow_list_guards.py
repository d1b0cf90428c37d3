"""Guards of the arena's allow-list: how deep a request may nest agent specs.

A nested spec is built into one agent per level, each checked and built before the outer one: the
allow-list bounds the depth (documented as 3: ``endgame:base=hybrid:policy=greedy``) so that a request
cannot make the server build an unbounded chain.
"""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from agents.spec.registry import REGISTRY  # noqa: E402
from agents.spec.values import AgentSpec  # noqa: E402
from escoba_arena.web.allow import AllowList, Refused  # noqa: E402

DEPTH = 3
"""The documented limit: three agents, the outer one included."""


def _chain(links: list[tuple[str, str]], inner: str = "greedy") -> str:
    """Return the spec nesting ``inner`` in each (agent, parameter) of ``links``, outermost first."""
    spec = inner
    for name, key in reversed(links):
        spec = f"{name}:{key}={spec}"
    return spec


def _links() -> list[tuple[str, str]]:
    """Return every (agent, parameter) of the registry that takes another agent's spec."""
    return [(n, k) for n, e in REGISTRY.items() if e.from_request
            for k, p in e.params.items() if isinstance(p, AgentSpec) and p.requestable]


def test_a_request_nests_agent_specs_at_most_three_deep(tmp_path):
    """The documented example (three agents) and every chain of three are accepted; every chain of
    four, one level more, is refused with the limit named."""
    allow = AllowList([tmp_path])
    assert allow.check("endgame:base=hybrid:policy=greedy") == "endgame:base=hybrid:policy=greedy"
    links = [(n, k) for n, k in _links() if n != "endgame"]  # endgame's base may not be endgame
    assert {("search", "policy"), ("hybrid", "policy")} <= set(links)
    for outer in _links():
        for middle in links:
            spec = _chain([outer, middle])
            assert spec.count("=") == DEPTH - 1 and allow.check(spec)
            for inner in links:
                deeper = _chain([outer, middle, inner])
                with pytest.raises(Refused, match=f"at most {DEPTH} deep"):
                    allow.check(deeper)
