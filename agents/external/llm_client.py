"""The ``llm`` agent's wire: one bounded chat-completions request to an OpenAI-compatible endpoint.

Every request is bounded in time and size. It runs under one deadline, ``timeout`` seconds from its
start to its last byte (a per-read timeout would let an endpoint that drips a byte a second hold it
forever); when the deadline passes, or the decision is cancelled (``LLMAgent.cancel``), the request is
abandoned and its connection closed. The answer is read as a stream and the read stops at
``MAX_RESPONSE_BYTES`` (an error page at ``MAX_ERROR_BYTES``): nothing larger is ever held.

What the endpoint says is kept apart from what a player sees. ``LLMError``'s message, which a game
shows to every seat, holds the URL, the HTTP status and a generic reason, never the endpoint's words.
The endpoint's words go to the operator's log (the ``agents.external.llm`` logger), scrubbed of the key
*before* they are cut (``scrub``: every run of 8 or more of the key's characters), so that a cut
never leaves part of the key where the scrubber cannot see it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

MAX_RESPONSE_BYTES = 1 << 20
"""A chat-completions answer larger than this is refused, its read stopped at the limit."""
MAX_ERROR_BYTES = 4096
"""The most of an error page that is read (for the operator's log)."""
MAX_LOGGED = 300
"""The most characters of an endpoint's words that go to the log, after scrubbing."""
MAX_RETRY_AFTER_S = 120.0
"""Longest ``Retry-After`` wait honoured; a server asking for more ends the run."""
KEY_RUN = 8
"""``scrub`` removes every run of this many or more of the key's characters."""
LOG = logging.getLogger("agents.external.llm")


class LLMError(RuntimeError):
    """The endpoint cannot be used: the run ends with this one-line message (no endpoint's words)."""


class _TooLarge(Exception):
    pass


def scrub(text: str, key: str) -> str:
    """Return ``text`` on one line with every run of ``KEY_RUN`` or more of the key's characters
    replaced by ``[key]`` (a shorter key: every whole occurrence)."""
    text = str(text)
    if key:
        grams = {key} if len(key) < KEY_RUN else {key[i:i + KEY_RUN] for i in range(len(key) - KEY_RUN + 1)}
        hit = bytearray(len(text))
        for g in grams:
            at = text.find(g)
            while at >= 0:
                hit[at:at + len(g)] = b"\1" * len(g)
                at = text.find(g, at + 1)
        if any(hit):
            out, i = [], 0
            while i < len(text):
                if hit[i]:
                    while i < len(text) and hit[i]:
                        i += 1
                    out.append("[key]")
                else:
                    out.append(text[i])
                    i += 1
            text = "".join(out)
    return " ".join(text.split())


def _logged(text: str, key: str) -> str:
    """Return an endpoint's words as the log may hold them: scrubbed first, then cut."""
    clean = scrub(text, key)
    return clean if len(clean) <= MAX_LOGGED else clean[:MAX_LOGGED] + "..."


@dataclass
class Reply:
    """A 200 answer: its text, the endpoint's token counts and the request's wall time (ms)."""

    text: str
    tokens_in: int
    tokens_out: int
    latency_ms: float


def _count(x: Any) -> int:
    """Return a token count from an answer's usage (0 when missing or not a count)."""
    return int(x) if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else 0


def _retry_after(value: str | None) -> float | None:
    """Return a ``Retry-After`` header in seconds (None when absent or an HTTP date)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _reason(status: int) -> str:
    """Return the standard reason phrase of an HTTP status ('' when unknown)."""
    try:
        return " " + HTTPStatus(status).phrase
    except ValueError:
        return ""


@dataclass
class Endpoint:
    """An OpenAI-compatible chat-completions URL and how it is called (``LLMAgent``'s settings)."""

    url: str
    key_env: str
    timeout: float
    attempts: int
    backoff: float
    model: str

    async def _read(self, client, body: dict, headers: dict) -> tuple[int, bytes, Any]:
        """Return (status, body bytes, headers) of one request, the body read up to its cap."""
        async with client.stream("POST", self.url, json=body, headers=headers) as r:
            cap = MAX_RESPONSE_BYTES if r.status_code == 200 else MAX_ERROR_BYTES
            if r.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
                raise LLMError(f"{self.url} answered a compressed body, which is not read (the request "
                               "asked for none)")
            buf = bytearray()
            async for chunk in r.aiter_raw():
                buf += chunk
                if len(buf) > cap:
                    if r.status_code == 200:
                        raise _TooLarge
                    del buf[cap:]
                    break
            return r.status_code, bytes(buf), r.headers

    async def _once(self, client, gate: asyncio.Semaphore, body: dict, headers: dict,
                    key: str) -> tuple[int, bytes, Any, float, str]:
        """Return (status, body, headers, latency ms, why) of one try; status 0: timed out or dropped."""
        import httpx  # the [llm] extra

        async with gate:
            t0 = time.perf_counter()
            try:
                status, raw, hdrs = await asyncio.wait_for(self._read(client, body, headers), self.timeout)
                return status, raw, hdrs, (time.perf_counter() - t0) * 1000.0, ""
            except _TooLarge:
                raise LLMError(f"{self.url} answered more than {MAX_RESPONSE_BYTES} bytes: the read was "
                               "stopped there") from None
            except (asyncio.TimeoutError, httpx.TimeoutException):
                return 0, b"", {}, 0.0, f"no answer within timeout={self.timeout:g} s"
            except (httpx.ConnectError, httpx.UnsupportedProtocol) as exc:  # nothing there: no retry
                raise LLMError(f"cannot reach {self.url}: {scrub(str(exc) or type(exc).__name__, key)}") \
                    from None
            except httpx.TransportError as exc:  # a connection dropped mid-answer: try again
                return 0, b"", {}, 0.0, f"connection lost ({scrub(str(exc) or type(exc).__name__, key)})"

    async def chat(self, client, gate: asyncio.Semaphore, body: dict) -> Reply:
        """Return the reply to ``body``; retry 429, 5xx, timeouts and dropped connections; raise LLMError."""
        key = os.environ.get(self.key_env, "")
        headers = {"Accept-Encoding": "identity", **({"Authorization": f"Bearer {key}"} if key else {})}
        why = ""
        for attempt in range(self.attempts):
            wait = self.backoff * 2 ** attempt
            status, raw, hdrs, latency, why = await self._once(client, gate, body, headers, key)
            if status == 200:
                return self._reply(raw, latency, key)
            if status in (401, 403):
                raise LLMError(f"{self.url} refused the request (HTTP {status}): check the key in "
                               f"${self.key_env}")
            if status == 404:
                raise LLMError(f"{self.url} answered HTTP 404: check base_url (it ends in /v1) and "
                               f"model={self.model!r}")
            if status == 429:
                why = "HTTP 429 Too Many Requests"
                after = _retry_after(hdrs.get("retry-after"))
                if after is not None:
                    if after > MAX_RETRY_AFTER_S:
                        raise LLMError(f"{self.url}: HTTP 429, Retry-After {after:g} s is longer than "
                                       f"{MAX_RETRY_AFTER_S:g} s")
                    wait = after
            elif status >= 500:
                why = f"HTTP {status}"
            elif status:
                LOG.warning("%s answered HTTP %d: %s", self.url, status,
                            _logged(raw.decode("utf-8", "replace"), key))
                raise LLMError(f"{self.url} answered HTTP {status}{_reason(status)}: the request was refused "
                               "(what the endpoint said is in the operator's log)")
            if attempt + 1 < self.attempts:
                await asyncio.sleep(wait)
        raise LLMError(f"{self.url}: {why} on {self.attempts} tries")

    def _reply(self, raw: bytes, latency: float, key: str) -> Reply:
        """Return the reply of a 200 answer's body."""
        try:
            data = json.loads(raw)
            text = data["choices"][0]["message"]["content"] or ""
            if not isinstance(text, str):
                raise TypeError
        except (ValueError, KeyError, IndexError, TypeError):
            LOG.warning("%s did not answer a chat completion: %s", self.url,
                        _logged(raw.decode("utf-8", "replace"), key))
            raise LLMError(f"{self.url} did not answer a chat completion (what it said is in the operator's "
                           "log)") from None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Reply(text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")),
                     latency)
