"""How the model client reads an answer: a 200 answer whole up to 1 MiB, an error page only its first
4 KiB, a compressed answer not at all; its wall time; and the words of a connection that fails.

The mutation run of ``agents/external/llm_client.py`` gave a 200 answer the error page's cap, an error
page the answer's cap, let a compressed answer through, miscounted the latency, and left the key in,
or the cause out of, a failed connection's words, and no test noticed. The client here is a stand-in
for ``httpx.AsyncClient`` that counts the chunks the reader pulls (so a cap is seen where it works,
in what is read) or raises the transport error it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import pytest

pytest.importorskip("httpx")
import httpx  # noqa: E402

from agents.external import llm_client  # noqa: E402
from agents.external.llm_client import (  # noqa: E402
    MAX_ERROR_BYTES,
    MAX_LOGGED,
    MAX_RESPONSE_BYTES,
    Endpoint,
    LLMError,
)

CHUNK = 1024


class _Client:
    """Answers every request with ``status``, ``headers`` and ``body`` (bytes, or None: endless), in
    chunks of 1 KiB; ``pulled`` counts the chunks the reader asked for."""

    def __init__(self, status: int, body: bytes | None, headers: dict | None = None,
                 raises: Exception | None = None):
        self.status, self.body, self.pulled, self.raises = status, body, 0, raises
        self.headers = httpx.Headers(headers or {})
        self.sent: list[dict] = []  # the headers of each request

    @contextlib.asynccontextmanager
    async def stream(self, method, url, json=None, headers=None):
        client = self
        self.sent.append(dict(headers))
        if self.raises is not None:
            raise self.raises

        class Response:
            status_code = client.status
            headers = client.headers

            async def aiter_raw(self):
                k = 0
                while client.body is None or k < len(client.body):
                    client.pulled += 1
                    yield b"x" * CHUNK if client.body is None else client.body[k:k + CHUNK]
                    k += CHUNK

        yield Response()


URL = "http://127.0.0.1:9/v1/chat/completions"
KEY = "sk-test-0123456789abcdef"
ANSWER = b'{"choices": [{"message": {"content": "1"}}]}'


def _chat(client: _Client, key_env: str = "NO_SUCH_KEY_VAR", attempts: int = 1):
    endpoint = Endpoint(URL, key_env, 10.0, attempts, 0.0, "m")
    return asyncio.run(endpoint.chat(client, asyncio.Semaphore(1), {"model": "m"}))


def test_a_200_answer_longer_than_an_error_page_is_read_whole():
    content = "1" + " " * (8 * MAX_ERROR_BYTES)
    body = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
    client = _Client(200, body)
    reply = _chat(client)
    assert reply.text == content
    assert client.pulled == -(-len(body) // CHUNK)


def test_an_error_page_is_read_only_to_its_cap():
    """An endless 500 page: the read stops just past 4 KiB (the answer's 1 MiB cap would pull 1,025
    chunks), and the refusal names the status."""
    client = _Client(500, None)
    with pytest.raises(LLMError, match="HTTP 500 on 1 tries"):
        _chat(client)
    assert client.pulled == MAX_ERROR_BYTES // CHUNK + 1
    client = _Client(200, None)  # an endless answer: refused at its own cap
    with pytest.raises(LLMError) as err:
        _chat(client)
    said = f"{URL} answered more than {MAX_RESPONSE_BYTES} bytes: the read was stopped there"
    assert str(err.value) == said
    assert client.pulled == MAX_RESPONSE_BYTES // CHUNK + 1


@pytest.mark.parametrize("encoding", ["gzip", "GZIP", "br"])
def test_a_compressed_answer_is_refused_unread(encoding):
    client = _Client(200, ANSWER, {"Content-Encoding": encoding})
    with pytest.raises(LLMError) as err:
        _chat(client)
    said = f"{URL} answered a compressed body, which is not read (the request asked for none)"
    assert str(err.value) == said
    assert client.pulled == 0
    for plain in ("identity", "IDENTITY", ""):  # an empty header names no encoding
        assert _chat(_Client(200, ANSWER, {"Content-Encoding": plain})).text == "1"


def test_a_replys_latency_is_the_requests_wall_time_in_ms(monkeypatch):
    clock = iter([100.0, 100.25])
    monkeypatch.setattr(llm_client.time, "perf_counter", lambda: next(clock))
    assert _chat(_Client(200, ANSWER)).latency_ms == 250.0


@pytest.mark.parametrize("error, said, tries, words", [
    (httpx.ConnectError, f"no route to host, key {KEY}", 1,
     "cannot reach {url}: no route to host, key [key]"),
    (httpx.ConnectError, "", 1, "cannot reach {url}: ConnectError"),
    (httpx.ReadError, f"peer reset the stream ({KEY})", 2,
     "{url}: connection lost (peer reset the stream ([key])) on 2 tries"),
    (httpx.ReadError, "", 2, "{url}: connection lost (ReadError) on 2 tries"),
])
def test_a_failed_connection_names_its_cause_without_the_key(monkeypatch, error, said, tries, words):
    """Nothing there (refused): one try, no retry. A connection lost mid-answer: tried again."""
    monkeypatch.setenv("TEST_LLM_KEY", KEY)
    client = _Client(200, ANSWER, raises=error(said))
    with pytest.raises(LLMError) as err:
        _chat(client, "TEST_LLM_KEY", attempts=2)
    assert str(err.value) == words.format(url=URL)
    assert len(client.sent) == tries


def test_a_request_asks_for_an_uncompressed_answer_and_sends_the_key_only_when_there_is_one(monkeypatch):
    monkeypatch.delenv("TEST_LLM_KEY", raising=False)
    client = _Client(200, ANSWER)
    _chat(client, "TEST_LLM_KEY")
    monkeypatch.setenv("TEST_LLM_KEY", KEY)
    _chat(client, "TEST_LLM_KEY")
    assert client.sent == [{"Accept-Encoding": "identity"},
                           {"Accept-Encoding": "identity", "Authorization": f"Bearer {KEY}"}]


def test_an_answer_that_is_not_a_chat_completion_is_logged_without_the_key(monkeypatch, caplog):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)
    caplog.set_level(logging.WARNING, logger="agents.external.llm")
    with pytest.raises(LLMError, match="did not answer a chat completion"):
        _chat(_Client(200, f"<html>proxy error for {KEY}</html>".encode()), "TEST_LLM_KEY")
    assert [r.getMessage() for r in caplog.records] == [
        f"{URL} did not answer a chat completion: <html>proxy error for [key]</html>"]


def test_an_answer_that_is_not_utf8_is_logged_with_replacement_characters(caplog):
    caplog.set_level(logging.WARNING, logger="agents.external.llm")
    with pytest.raises(LLMError, match="did not answer a chat completion"):
        _chat(_Client(200, b"\xff\xfeerror\xc3"))
    said = f"{URL} did not answer a chat completion: \ufffd\ufffderror\ufffd"
    assert [r.getMessage() for r in caplog.records] == [said]


@pytest.mark.parametrize("size", [MAX_LOGGED, MAX_LOGGED + 1])
def test_an_error_page_is_logged_whole_up_to_the_log_cut(caplog, size):
    caplog.set_level(logging.WARNING, logger="agents.external.llm")
    with pytest.raises(LLMError, match="HTTP 400 Bad Request"):
        _chat(_Client(400, b"\xff" + b"e" * (size - 1)))  # not UTF-8: replaced, not refused
    page = "\ufffd" + "e" * (size - 1)
    logged = page if size <= MAX_LOGGED else page[:MAX_LOGGED] + "..."
    assert [r.getMessage() for r in caplog.records] == [f"{URL} answered HTTP 400: {logged}"]
