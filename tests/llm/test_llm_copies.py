"""Copies and cancels of the llm agent: a copy is an idle agent of its own, whenever it is made, and a
finished or cancelled decision leaves nothing behind.

A server copies agents (a room's bot is sent pickled to a worker) and cancels decisions whose time ran
out, for as long as it runs. The mutation run of ``agents/external/llm.py`` found that no test copied an
agent that had played or was deciding, nor read the cancel's exact message, nor looked at what a
finished decision leaves.
"""

from __future__ import annotations

import copy
import pickle
import re
import threading
import time

import pytest

from agents.external.llm import LLMError
from agents.external.llm_standin import StandIn
from agents.spec.registry import make_agent
from tests.llm.llm_support import batch

CANCELLED = (r"http://127\.0\.0\.1:\d+/v1/chat/completions: the decision was cancelled "
             r"\(its time ran out\); its requests were abandoned")






def test_a_copy_of_an_agent_that_has_played_plays_the_same_moves(standin):
    a = make_agent(f"llm:base_url={standin.url},model=legal")
    obs, masks = batch(2)
    first = a.act_batch(obs, masks).tolist()
    for b in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):  # after play: its TLS context is built
        assert b.act_batch(obs, masks).tolist() == first


def test_a_finished_or_cancelled_decision_leaves_nothing_running(standin):
    """The agent keeps no trace of decisions that ended (a server makes millions of them)."""
    a = make_agent(f"llm:base_url={standin.url},model=legal")
    a.act_batch(*batch(2))
    assert a._running == set() and a._cancelled == set()
    d = make_agent(f"llm:base_url={standin.url},model=drip,attempts=1,timeout=60")
    t = threading.Thread(target=lambda: d.cancel() if _streaming(standin) else None, daemon=True)
    t.start()
    with pytest.raises(LLMError, match=CANCELLED):
        d.act_batch(*batch(1))
    t.join(10)
    assert d._running == set() and d._cancelled == set()


def _streaming(standin: StandIn, seconds: float = 10.0) -> bool:
    """Wait until the stand-in streams an answer; return whether it began within ``seconds``."""
    deadline = time.monotonic() + seconds
    while standin.stream_sent == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return standin.stream_sent > 0


def test_a_copy_made_while_deciding_is_idle_and_its_cancel_leaves_the_original_deciding(standin):
    a = make_agent(f"llm:base_url={standin.url},model=drip,attempts=1,timeout=60")
    raised: list[BaseException] = []

    def decide():
        try:
            a.act_batch(*batch(1))
        except BaseException as exc:  # noqa: BLE001 - the test reads what ended the decision
            raised.append(exc)

    t = threading.Thread(target=decide, daemon=True)
    t.start()
    assert _streaming(standin)
    b = pickle.loads(pickle.dumps(a))  # mid-decision: nothing of the running decision is copied
    c = copy.deepcopy(a)
    b.cancel()
    c.cancel()
    time.sleep(0.3)
    assert t.is_alive(), "cancelling a copy ended the original's decision"
    a.cancel()
    t.join(10)
    assert not t.is_alive() and len(raised) == 1 and isinstance(raised[0], LLMError)
    assert re.fullmatch(CANCELLED, str(raised[0]))
