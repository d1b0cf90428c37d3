"""Guards of the ``llm`` agent's model client: how long it waits between tries, and when it gives up.

No test here waits for real or measures time: the client's waits go through ``asyncio.sleep``, which
the ``waits`` fixture replaces by a recorder (every wait of a second or more is written down and not
slept). The endpoint is the stand-in server on loopback, asked for through the agent's spec, so the
tests hold however the client is written inside.
"""

from __future__ import annotations

import asyncio

import pytest

from agents.external.llm import LLMError
from agents.external.llm_standin import StandIn
from agents.spec.registry import make_agent
from tests.llm.llm_support import batch

RETRY_AFTER_CAP_S = 120
"""The longest ``Retry-After`` the client honours (``agents.external.llm_client``'s documented cap)."""


class _AskLater(StandIn):
    """The stand-in, answering every request HTTP 429 with ``Retry-After: retry_after`` (None: without)."""

    retry_after: str | None = "0"

    def answer(self, model, chat, n, max_tokens=None):
        return 429, {} if self.retry_after is None else {"Retry-After": self.retry_after}, "slow down"


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """Record every wait of a second or more (and sleep none of it); shorter ones pass through."""
    real, seen = asyncio.sleep, []

    async def sleep(delay, result=None):
        if delay >= 1:
            seen.append(float(delay))
            delay = 0
        return await real(delay, result)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    return seen


@pytest.fixture(scope="module")
def standin():
    s = StandIn()
    yield s
    s.close()


@pytest.fixture(scope="module")
def ask_later():
    s = _AskLater()
    yield s
    s.close()


def _tries(server: StandIn, spec: str) -> tuple[str, int]:
    """Return the message of the ``LLMError`` that ends one decision of ``spec``, and the requests it made."""
    before = server.requests
    with pytest.raises(LLMError) as err:
        make_agent(spec).act_batch(*batch())
    return str(err.value), server.requests - before


def test_no_backoff_wait_after_the_last_try(standin, waits):
    """Three tries that all meet HTTP 500 wait ``backoff`` then twice that between them, and nothing
    after the third: the run gives up at once instead of sleeping before an error it already has."""
    message, tries = _tries(standin, f"llm:base_url={standin.url},model=e500,attempts=3,backoff=10")
    assert "HTTP 500 on 3 tries" in message and tries == 3
    assert waits == [10.0, 20.0]


def test_a_single_try_never_waits(standin, waits):
    """With ``attempts=1`` a failed try ends the run without any backoff wait."""
    message, tries = _tries(standin, f"llm:base_url={standin.url},model=e500,attempts=1,backoff=10")
    assert "on 1 tries" in message and tries == 1
    assert waits == []


def test_a_retry_after_at_the_cap_is_waited_for(ask_later, waits):
    """A 429 asking for exactly the documented cap (120 s) is honoured: that wait, instead of the backoff,
    between the two tries, and none after the last."""
    ask_later.retry_after = str(RETRY_AFTER_CAP_S)
    message, tries = _tries(ask_later, f"llm:base_url={ask_later.url},model=m,attempts=2,backoff=5")
    assert "429" in message and tries == 2
    assert waits == [float(RETRY_AFTER_CAP_S)]


@pytest.mark.parametrize("asked", [RETRY_AFTER_CAP_S + 1, 10 * RETRY_AFTER_CAP_S - 1])
def test_a_retry_after_past_the_cap_ends_the_run_without_waiting(ask_later, waits, asked):
    """A 429 asking for more than the documented cap (120 s; a cap of 1200 s would wait these out) ends
    the run at once, with a message naming the wait asked for: no wait, no second try."""
    ask_later.retry_after = str(asked)
    message, tries = _tries(ask_later, f"llm:base_url={ask_later.url},model=m,attempts=3,backoff=5")
    assert f"Retry-After {asked} s is longer than {RETRY_AFTER_CAP_S} s" in message and tries == 1
    assert waits == []


@pytest.mark.parametrize("said, wait", [(None, 5.0), ("Wed, 21 Oct 2026 07:28:00 GMT", 5.0), ("0", None),
                                        ("-3", None), ("2.5", 2.5)])
def test_a_429_waits_what_retry_after_says_or_the_backoff_without_one(ask_later, waits, said, wait):
    """No ``Retry-After``, or an HTTP date: the backoff (5 s); a number: that many seconds, and none for
    0 or less (a wait under a second is not recorded by ``waits``)."""
    ask_later.retry_after = said
    try:
        message, tries = _tries(ask_later, f"llm:base_url={ask_later.url},model=m,attempts=2,backoff=5")
    finally:
        ask_later.retry_after = "0"
    assert "HTTP 429 Too Many Requests on 2 tries" in message and tries == 2
    assert waits == ([] if wait is None else [wait])
