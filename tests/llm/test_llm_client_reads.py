"""How much of an answer the model client reads: a 200 answer whole up to 1 MiB, an error page only its
first 4 KiB, a compressed answer not at all.

The mutation run of ``agents/external/llm_client.py`` gave a 200 answer the error page's cap, an error
page the answer's cap, and let a compressed answer through, and no test noticed. The client here is a
stand-in for ``httpx.AsyncClient`` that counts the chunks the client pulls, so the cap is seen where
it works: in what is read, not in what is logged afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

pytest.importorskip("httpx")
import httpx  # noqa: E402

from agents.external.llm_client import MAX_ERROR_BYTES, MAX_RESPONSE_BYTES, Endpoint, LLMError  # noqa: E402

CHUNK = 1024


class _Client:
    """Answers every request with ``status``, ``headers`` and ``body`` (bytes, or None: endless), in
    chunks of 1 KiB; ``pulled`` counts the chunks the reader asked for."""

    def __init__(self, status: int, body: bytes | None, headers: dict | None = None):
        self.status, self.body, self.pulled = status, body, 0
        self.headers = httpx.Headers(headers or {})

    @contextlib.asynccontextmanager
    async def stream(self, method, url, json=None, headers=None):
        client = self

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


def _chat(client: _Client):
    endpoint = Endpoint("http://127.0.0.1:9/v1/chat/completions", "NO_SUCH_KEY_VAR", 10.0, 1, 0.0, "m")
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
    with pytest.raises(LLMError, match=f"more than {MAX_RESPONSE_BYTES} bytes"):
        _chat(client)
    assert client.pulled == MAX_RESPONSE_BYTES // CHUNK + 1


@pytest.mark.parametrize("encoding", ["gzip", "GZIP", "br"])
def test_a_compressed_answer_is_refused_unread(encoding):
    client = _Client(200, b'{"choices": [{"message": {"content": "1"}}]}', {"Content-Encoding": encoding})
    with pytest.raises(LLMError, match="answered a compressed body, which is not read"):
        _chat(client)
    assert client.pulled == 0
    assert _chat(_Client(200, b'{"choices": [{"message": {"content": "1"}}]}',
                         {"Content-Encoding": "identity"})).text == "1"
