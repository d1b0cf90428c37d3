"""Guards of agent specs: the canonical text of a spec reads back as the same agent, whatever its values.

A canonical spec is what tournament seeds, journals, cards and the arena's seats are keyed by
(``agents.spec.registry.canonical_spec``): if it does not read back as the agent it was written for, a
seed, a resumed run or a seat names another agent.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.spec.registry import REGISTRY, canonical_spec, entry_of, value, write_spec
from agents.spec.values import AgentSpec, Choice, File, Flag, Int, Number, Param, Text

_FREE = string.ascii_letters + string.digits + "._-/:=+~@# "
"""Characters a free-text value may hold in a spec (a comma separates parameters, so it cannot)."""


def _text(param: Param) -> st.SearchStrategy[str]:
    """Return a strategy of texts that ``param`` reads as a value, in the many ways one is written."""
    if isinstance(param, Int):
        ints = st.integers(param.low, min(param.high, 10**6)).flatmap(
            lambda v: st.sampled_from([str(v), f"0{v}", f" {v} ", f"+{v}"]))
        return st.one_of(ints, *[st.sampled_from([w, w.upper()]) for w in param.none])
    if isinstance(param, Number):
        low, high = max(param.low, -1e6), min(param.high, 1e6)
        return st.floats(low, high, allow_nan=False).map(repr)
    if isinstance(param, Choice):
        return st.sampled_from(param.options).flatmap(lambda o: st.sampled_from([o, o.upper(), f" {o}"]))
    if isinstance(param, Flag):
        return st.sampled_from(["1", "0", "true", "False", "yes", "NO", "on", "off"])
    if isinstance(param, AgentSpec):
        names = [n for n in ("greedy", "random", "expert", "search:sims=0020") if n.split(":")[0]
                 not in param.exclude]
        return st.sampled_from(names)
    if isinstance(param, (Text, File)):
        part = st.text(_FREE, min_size=1, max_size=12)
        joined = st.tuples(part, st.sampled_from("=:"), part).map("".join)  # often a separator inside
        return st.one_of(part, joined).filter(lambda t: t.strip())
    raise AssertionError(f"a parameter type without a strategy: {param!r}")


@st.composite
def _spec(draw) -> tuple[str, str, dict[str, str]]:
    """Return (name, spec text, raw values) of a registered agent with random parameter values."""
    bare = sorted(n for n, e in REGISTRY.items() if e.bare)  # half the draws: an agent with a bare value
    name = draw(st.one_of(st.sampled_from(bare), st.sampled_from(sorted(REGISTRY))))
    entry = REGISTRY[name]
    keys = draw(st.lists(st.sampled_from(list(entry.params)), unique=True)) if entry.params else []
    raw = {k: draw(_text(entry.params[k])) for k in keys}
    if entry.bare in raw and draw(st.booleans()) and "=" not in raw[entry.bare]:
        rest = [f"{k}={v}" for k, v in raw.items() if k != entry.bare]
        return name, f"{name}:" + ",".join([raw[entry.bare], *rest]), raw
    return name, f"{name}:" + ",".join(f"{k}={v}" for k, v in raw.items()) if raw else name, raw


def _read(spec: str) -> tuple[str, dict]:
    """Return the agent a spec names: its name and every parameter's value, defaults filled in."""
    entry, raw = entry_of(spec)
    values = {k: p.default for k, p in entry.params.items()}
    values.update({k: value(entry, k, t) for k, t in raw.items()})
    for k, p in entry.params.items():  # another agent is compared by its canonical spec
        if isinstance(p, AgentSpec) and isinstance(values[k], str):
            values[k] = canonical_spec(values[k])
    return entry.name, values


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_spec())
def test_the_canonical_spec_reads_back_as_the_same_agent(drawn):
    """The canonical text of any spec (random values of every parameter type of every registered agent,
    a bare first parameter holding ``=`` or ``:`` included) reads back as the same agent, and is its own
    canonical form."""
    _, spec, _ = drawn
    canonical = canonical_spec(spec)
    assert _read(canonical) == _read(spec), (spec, canonical)
    assert canonical_spec(canonical) == canonical


@pytest.mark.parametrize("path", ["runs/lr=3e-4/model.pt", "a=b", "x/=/y.pt", "c:d=e.pt"])
@pytest.mark.parametrize("name", ["checkpoint", "sb3"])
def test_a_bare_value_holding_an_equals_sign_is_written_with_its_key(name, path):
    """A file path holding ``=`` cannot be written bare (it would read as a ``key=value`` pair): the
    canonical spec names its key, and reads back as that path."""
    entry = REGISTRY[name]
    assert entry.bare is not None
    spec = write_spec(entry, {entry.bare: path})
    assert entry_of(spec) == (entry, {entry.bare: path})
    assert entry_of(canonical_spec(f"{name}:{entry.bare}={path}"))[1] == {entry.bare: path}
