"""The model client is bounded while it reads (issue 65's probes): an endless answer is cut at the byte
cap, a drip and a timeout close the connection, a cancelled decision hangs up, and no run of 8 or more
of the key's characters reaches a message, a log, a result or a player."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from agents.external.llm import LLMError
from agents.external.llm_standin import StandIn
from agents.spec.registry import make_agent
from tests.llm.llm_support import batch

KEY = "sk-proj-Q7xV2mK9pL4tR8wZ3nB6c"  # 29 characters, as in the probe


def key_runs(text: str, key: str = KEY, run: int = 8) -> list[str]:
    """Return every run of ``run`` or more of the key's characters found in ``text``."""
    return [key[i:i + run] for i in range(len(key) - run + 1) if key[i:i + run] in text]


def _wait_for_hang_up(standin: StandIn, seconds: float) -> None:
    """Wait up to ``seconds`` for the stand-in to see its client hang up on a stream."""
    deadline = time.monotonic() + seconds
    while standin.hung_up_at is None and time.monotonic() < deadline:
        time.sleep(0.05)


def _cancel_once_streaming(standin: StandIn, agent) -> None:
    """Cancel ``agent``'s decision once the stand-in has begun to stream its answer (at most 10 s on)."""
    deadline = time.monotonic() + 10
    while standin.stream_sent == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    agent.cancel()


def test_an_endless_answer_is_cut_at_the_byte_cap_and_the_connection_closed(standin):
    a = make_agent(f"llm:base_url={standin.url},model=endless,attempts=1,timeout=60")
    with pytest.raises(LLMError, match="more than 1048576 bytes"):
        a.act_batch(*batch())
    _wait_for_hang_up(standin, 5)
    # the client hung up long before the stand-in's 64 MiB were written: it never held them
    assert not standin.stream_done and standin.hung_up_at is not None
    assert standin.stream_sent < 32 << 20


@pytest.mark.parametrize("how", ["timeout", "cancel"])
def test_a_drip_is_cut_by_the_timeout_or_a_cancel_which_closes_the_connection(standin, how):
    """The drip lasts 160 bytes at 20 a second: the request ends (its connection closed) long before."""
    timeout = 0.5 if how == "timeout" else 60
    a = make_agent(f"llm:base_url={standin.url},model=drip,attempts=1,timeout={timeout}")
    if how == "cancel":  # once the drip has begun (a cancel with nothing in flight does nothing)
        threading.Thread(target=_cancel_once_streaming, args=(standin, a), daemon=True).start()
    with pytest.raises(LLMError, match="no answer within timeout=0.5 s" if how == "timeout" else "cancelled"):
        a.act_batch(*batch())
    _wait_for_hang_up(standin, 3)
    assert standin.hung_up_at is not None and not standin.stream_done and standin.stream_sent < 100
    if how == "cancel":
        a.cancel()  # nothing in flight: nothing happens, and the next decision plays
        legal = make_agent(f"llm:base_url={standin.url},model=legal")
        assert legal.act_batch(*batch()).shape == (1,)


def test_an_echoing_400_page_leaks_no_part_of_the_key(standin, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    a = make_agent(f"llm:base_url={standin.url},model=echo400")
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as err:
        a.act_batch(*batch())
    message = str(err.value)
    assert "HTTP 400" in message and "<html" not in message and "Bad Request</h1>" not in message
    assert key_runs(message) == []
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Bad Request" in logged  # the operator sees what the endpoint said ...
    assert key_runs(logged) == [] and "[key]" in logged  # ... with the key scrubbed before the cut
    assert standin.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_players_of_a_web_game_see_no_part_of_the_key(standin, monkeypatch, caplog):
    from tests.frontends.arena_support import client

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    allowed = f"llm:model=echo400,base_url={standin.url}"
    c = client(allow_agents=[allowed])
    with caplog.at_level(logging.DEBUG):
        r = c.post("/api/games", json={"opponents": [allowed], "seat": 1})
        assert r.status_code == 201, r.text
        body = r.text
        if standin.requests == 0:  # the person moves first: play, then the model is asked
            m = r.json()["view"]["moves"][0]
            r = c.post(f"/api/games/{r.json()['id']}/move", json={"card": m["card"],
                                                                   "capture": m["options"][0]})
            body += r.text
    assert standin.requests > 0 and "HTTP 400" in body  # the seat saw the failure ...
    assert key_runs(body) == []  # ... and nothing of the key
    assert key_runs("\n".join(r.getMessage() for r in caplog.records)) == []


def test_a_web_games_timeout_cancels_the_models_request(standin):
    """The game's bot time runs out: the seat sees the timeout and the drip's connection is closed."""
    from tests.frontends.arena_support import client

    allowed = f"llm:model=drip,base_url={standin.url},attempts=1,timeout=60"
    # 2 s: long enough that the worker has sent its request under a loaded machine, short enough that
    # the drip (one byte every 50 ms) is far from done when the worker is killed
    c = client(bot_timeout=2.0, allow_agents=[allowed])
    r = c.post("/api/games", json={"opponents": [allowed], "seat": 1})
    assert r.status_code == 201, r.text
    body = r.text
    if standin.requests == 0:  # the person moves first: play, then the model is asked
        m = r.json()["view"]["moves"][0]
        body += c.post(f"/api/games/{r.json()['id']}/move", json={"card": m["card"],
                                                                   "capture": m["options"][0]}).text
    assert "took longer than 2 s" in body
    _wait_for_hang_up(standin, 5)
    assert standin.hung_up_at is not None and not standin.stream_done and standin.stream_sent < 100
