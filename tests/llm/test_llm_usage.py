"""What a language-model agent spent, summed and shown: ``Usage``, ``lineup_usage``, ``total_usage``,
``usage_lines`` (``agents.external.llm``), with exact values.

These are what a tournament's summary, a card and the leaderboard's language-model table print; the
mutation run of ``agents/external/llm.py`` found that no test read their exact text and sums.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agents.base import Agent
from agents.external.llm import Usage, lineup_usage, total_usage, usage_lines


def _usage(**kw) -> Usage:
    base = dict(decisions=4, calls=6, reasks=2, first_try=3, forfeits=1, fallbacks=0, split_votes=1,
                tokens_in=120, tokens_out=18, forms={"number": 3, "answer_line": 2},
                latency_ms=[10.04, 20.06, 30.0, 40.0], harness={"moves": "listed", "votes": 1})
    base.update(kw)
    return Usage(**base)


def test_usage_add_sums_counts_merges_forms_and_keeps_the_first_harness():
    a = _usage()
    b = _usage(decisions=1, calls=2, reasks=0, first_try=1, forfeits=0, fallbacks=2, split_votes=0,
               tokens_in=7, tokens_out=3, forms={"number": 1, "bare_move": 4}, latency_ms=[5.0],
               harness={"moves": "hidden"})
    a.add(b)
    assert (a.decisions, a.calls, a.reasks, a.first_try, a.forfeits, a.fallbacks, a.split_votes, a.tokens_in,
            a.tokens_out) == (5, 8, 2, 4, 1, 2, 1, 127, 21)
    assert a.forms == {"number": 4, "answer_line": 2, "bare_move": 4}
    assert a.latency_ms == [10.04, 20.06, 30.0, 40.0, 5.0]
    assert a.harness == {"moves": "listed", "votes": 1}  # the first non-empty harness stays
    empty = Usage()
    empty.add(b)
    assert empty.harness == {"moves": "hidden"} and empty.harness is not b.harness


def test_usage_to_dict_rounds_latency_sorts_forms_and_copies_the_harness():
    u = _usage()
    d = u.to_dict()
    assert d == {"decisions": 4, "calls": 6, "reasks": 2, "first_try": 3, "forfeits": 1, "fallbacks": 0,
                 "split_votes": 1, "tokens_in": 120, "tokens_out": 18,
                 "forms": {"answer_line": 2, "number": 3}, "harness": {"moves": "listed", "votes": 1},
                 "latency_ms": [10.0, 20.1, 30.0, 40.0]}
    assert list(d["forms"]) == ["answer_line", "number"]
    d["harness"]["votes"] = 9
    d["forms"]["number"] = 0
    assert u.harness["votes"] == 1 and u.forms["number"] == 3


def test_usage_summary_gives_rate_and_latency_percentiles():
    s = _usage(latency_ms=[10.0, 20.0, 30.0, 40.0, 100.0]).summary()
    assert s == {"decisions": 4, "calls": 6, "reasks": 2, "first_try": 3, "forfeits": 1, "fallbacks": 0,
                 "split_votes": 1, "tokens_in": 120, "tokens_out": 18, "legal_first_try": 0.75,
                 "forms": {"answer_line": 2, "number": 3}, "latency_p50_ms": 30.0, "latency_p95_ms": 88.0,
                 "harness": {"moves": "listed", "votes": 1}}
    assert list(s["forms"]) == ["answer_line", "number"]
    none = Usage().summary()
    assert none["legal_first_try"] is None
    assert none["latency_p50_ms"] is None and none["latency_p95_ms"] is None
    assert _usage(first_try=2, decisions=3).summary()["legal_first_try"] == 0.6667
    two = Usage(latency_ms=[1.234, 2.345]).summary()  # percentiles rounded to 0.1 ms
    assert (two["latency_p50_ms"], two["latency_p95_ms"]) == (1.8, 2.3)


def test_usage_lines_show_every_figure_and_the_harness():
    s = _usage(latency_ms=[10.0, 20.0, 30.0, 40.0, 100.0]).summary()
    assert usage_lines({"llm:model=m": s}) == [
        "llm:model=m: 4 decisions, legal at the first ask 75.0%, 2 re-asked, 1 forfeits, 0 fallbacks; "
        "6 calls, tokens in 120 / out 18, latency p50 30 ms, p95 88 ms; "
        "answers read: answer_line 2, number 3 [moves=listed, votes=1]"]


def test_usage_lines_without_calls_decisions_forms_or_harness():
    s = Usage().summary()
    assert usage_lines({"a": s}) == [
        "a: 0 decisions, legal at the first ask n/a, 0 re-asked, 0 forfeits, 0 fallbacks; "
        "0 calls, tokens in 0 / out 0, no calls; answers read: none"]
    old = {k: v for k, v in s.items() if k not in ("forfeits", "harness", "forms")}  # an older summary
    assert usage_lines({"b": old}) == [
        "b: 0 decisions, legal at the first ask n/a, 0 re-asked, 0 forfeits, 0 fallbacks; "
        "0 calls, tokens in 0 / out 0, no calls; answers read: none"]
    two = usage_lines({"x": s, "y": _usage(harness={"on_fail": "random", "other": 1}).summary()})
    assert len(two) == 2 and two[0].startswith("x: ") and two[1].endswith("[on_fail=random]")


class _Model(Agent):
    """An agent that reports a usage, reset when taken (as ``LLMAgent.take_usage``)."""

    name = "model"

    def __init__(self, calls: int):
        super().__init__(None, None)
        self.calls = calls

    def act_batch(self, observations, action_masks, state=None):
        raise AssertionError("not played here")

    def take_usage(self) -> Usage:
        u, self.calls = Usage(calls=self.calls, latency_ms=[1.0] * self.calls), 0
        return u


class _Plain(Agent):
    name = "plain"

    def act_batch(self, observations, action_masks, state=None):
        raise AssertionError("not played here")


def test_lineup_usage_takes_each_model_spec_once_and_none_without_models():
    a, b = _Model(2), _Model(5)
    got = lineup_usage(("m", "plain", "m"), [a, _Plain(), b])
    assert list(got) == ["m"] and got["m"]["calls"] == 2 and got["m"]["latency_ms"] == [1.0, 1.0]
    assert a.calls == 0  # taken, so reset
    assert lineup_usage(("plain", "plain"), [_Plain(), _Plain()]) is None
    with pytest.raises(ValueError):  # a spec for every agent, or the usage would be put on another's name
        lineup_usage(("m",), [_Model(1), _Model(2)])


def test_total_usage_sums_every_block_of_each_spec():
    blocks = [SimpleNamespace(usage={"m": _usage(latency_ms=[10.0]).to_dict()}),
              SimpleNamespace(usage=None), SimpleNamespace(),
              SimpleNamespace(usage={"m": _usage(decisions=1, first_try=1, latency_ms=[30.0]).to_dict(),
                                     "n": Usage(calls=1, latency_ms=[7.0]).to_dict()})]
    t = total_usage(blocks)
    assert sorted(t) == ["m", "n"]
    assert t["m"]["decisions"] == 5 and t["m"]["first_try"] == 4 and t["m"]["legal_first_try"] == 0.8
    assert t["m"]["latency_p50_ms"] == 20.0 and t["n"]["calls"] == 1 and t["n"]["latency_p95_ms"] == 7.0
    assert total_usage([]) == {}
