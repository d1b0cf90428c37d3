"""The ``llm`` agent: a language model behind an OpenAI-compatible chat-completions endpoint plays.

``llm:model=NAME,base_url=URL`` talks to ``URL/chat/completions`` (vLLM, Ollama, llama.cpp's server
and hosted services share this API) with ``httpx`` (the ``[llm]`` extra). Each decision is one chat:
the text face's messages (``escoba_env.faces.text``: the rules, the position, every legal full move
numbered from 1), and the model answers with a number or the move written out. An answer that
names no legal move is sent back with the reason, up to ``max_retries`` times; then a seeded random
legal move is played and counted as a *fallback*. A full move with a capture choice is carried out
over the following decisions without asking again.

The decisions of one ``act_batch`` call (a tournament's block plays its games in lockstep) are
sent concurrently, at most ``concurrency`` requests at a time, so a block costs about
``decisions / concurrency`` times one call's latency.

The API key is read from the environment variable ``key_env`` (default ``OPENAI_API_KEY``; none
set: no ``Authorization`` header, as local servers want) at each request. It is never a spec
parameter, never kept on the agent, and never part of a message, so it reaches no log, result,
replay, record or card.

Faults that the run cannot go past end it with ``LLMError`` (one line): an unreachable endpoint,
401/403 (the key), 404 (the URL or the model), another 4xx, and 429, 5xx, timeouts or dropped
connections that last through ``attempts`` tries (429 waits for its ``Retry-After``, the others
back off from ``backoff`` seconds, doubling). ``usage`` counts, per agent: decisions, calls,
answers re-asked, fallbacks, tokens in and out, and each call's latency (``Usage.summary``: p50/p95).
"""

from __future__ import annotations

import asyncio
import os
import re
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from escoba_env.faces.text import (
    IllegalAnswer,
    Move,
    legal_moves,
    messages,
    move_action,
    parse_answer,
    read_observation,
)
from escoba_env.rulebook.rules import Rules

from ..base import Agent

MAX_RESPONSE_BYTES = 1 << 20
"""A chat-completions answer larger than this is refused (an answer here is a few tokens)."""
MAX_RETRY_AFTER_S = 120.0
"""Longest ``Retry-After`` wait honoured; a server asking for more ends the run."""


class LLMError(RuntimeError):
    """The endpoint cannot be used: the run ends with this one-line message."""


@dataclass
class Usage:
    """What an LLM agent spent: counts, tokens and the latency of every call (milliseconds)."""

    decisions: int = 0
    """Decisions the model was asked about (a capture choice already made is not asked again)."""
    calls: int = 0
    """Chat-completions requests answered (a re-ask is one more)."""
    reasks: int = 0
    """Answers that named no legal move and were sent back with the reason."""
    fallbacks: int = 0
    """Decisions where every answer failed: a seeded random legal move was played."""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: list[float] = field(default_factory=list)

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts and latencies to this one."""
        for k in ("decisions", "calls", "reasks", "fallbacks", "tokens_in", "tokens_out"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.latency_ms.extend(other.latency_ms)

    def to_dict(self) -> dict[str, Any]:
        """Return the counts and the latencies (rounded to 0.1 ms) as JSON-ready data."""
        return {"decisions": self.decisions, "calls": self.calls, "reasks": self.reasks,
                "fallbacks": self.fallbacks, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "latency_ms": [round(x, 1) for x in self.latency_ms]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Usage:
        """Return the usage that ``to_dict`` wrote."""
        return cls(**{k: d[k] for k in ("decisions", "calls", "reasks", "fallbacks", "tokens_in",
                                        "tokens_out")}, latency_ms=[float(x) for x in d["latency_ms"]])

    def summary(self) -> dict[str, Any]:
        """Return the counts with latency p50 and p95 (ms; None without calls) instead of the list."""
        lat = np.asarray(self.latency_ms, np.float64)
        pct = (lambda q: round(float(np.percentile(lat, q)), 1)) if lat.size else (lambda q: None)
        return {"decisions": self.decisions, "calls": self.calls, "reasks": self.reasks,
                "fallbacks": self.fallbacks, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "latency_p50_ms": pct(50), "latency_p95_ms": pct(95)}


def _positive(name: str, value: float) -> None:
    """Raise ValueError unless ``value`` is positive."""
    if not value > 0:
        raise ValueError(f"llm: {name} must be positive, got {value!r}")


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LLMAgent(Agent):
    """A language model at an OpenAI-compatible chat-completions endpoint (see the module docstring)."""

    name = "llm"

    def __init__(self, rules: Rules | None = None, seed: int | None = None, *, model: str = "",
                 base_url: str = "", temperature: float = 0.0, max_retries: int = 2, timeout: float = 60.0,
                 key_env: str = "OPENAI_API_KEY", concurrency: int = 8, attempts: int = 4,
                 backoff: float = 1.0, max_tokens: int | None = None, french: bool = False):
        if not model:
            raise ValueError("llm needs a model: llm:model=NAME,base_url=URL")
        if not re.match(r"^https?://[^\s/]+", base_url or ""):
            raise ValueError(f"llm needs base_url=http(s)://HOST[:PORT]/v1, got {base_url!r}")
        if not _ENV_NAME.match(key_env):
            raise ValueError("llm: key_env names the environment variable that holds the key (e.g. "
                             "OPENAI_API_KEY), not the key itself")
        if not 0 <= max_retries <= 20:
            raise ValueError(f"llm: max_retries must be in 0..20, got {max_retries!r}")
        if not 1 <= concurrency <= 1024 or not 1 <= attempts <= 20:
            raise ValueError("llm: concurrency must be in 1..1024 and attempts in 1..20")
        if not 0.0 <= temperature <= 2.0:
            raise ValueError(f"llm: temperature must be in [0, 2], got {temperature!r}")
        _positive("timeout", timeout)
        if backoff < 0 or (max_tokens is not None and max_tokens < 1):
            raise ValueError("llm: backoff must be >= 0 and max_tokens positive")
        self.model, self.url = model, base_url.rstrip("/") + "/chat/completions"
        self.temperature, self.max_retries = float(temperature), int(max_retries)
        self.timeout = float(timeout)
        self.key_env, self.concurrency, self.attempts = key_env, int(concurrency), int(attempts)
        self.backoff, self.max_tokens, self.french = float(backoff), max_tokens, bool(french)
        self.usage = Usage()
        self._chosen: dict[tuple[int, int, int], int] = {}
        self._tls: ssl.SSLContext | None = None
        super().__init__(rules, seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the fallback generator and forget capture choices in progress."""
        super().reset(seed)
        self._chosen = {}

    def take_usage(self) -> Usage:
        """Return the usage since the last call and start counting again."""
        used, self.usage = self.usage, Usage()
        return used

    # ----------------------------------------------------------------------------- deciding

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray, state=None) -> np.ndarray:
        """Return one legal action per row, asking the model (concurrently) about each new decision."""
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks)
        draws = self.rng.random(obs.shape[0])  # drawn up front: fallbacks never depend on timing
        chosen: list[Move | None] = [None] * obs.shape[0]
        asks = []
        for i in range(obs.shape[0]):
            moves = legal_moves(obs[i], self.rules)
            v = read_observation(obs[i], self.rules)
            if v.pending >= 0:  # a capture choice: carry on the move chosen at the play decision
                taken = self._chosen.get((v.hand, v.table, v.pending))
                same = [m for m in moves if m.taken == taken]
                if same:
                    chosen[i] = same[0]
                    continue
            if len(moves) == 1:
                chosen[i] = moves[0]
                continue
            asks.append((i, moves, messages(obs[i], self.rules, self.french, moves)))
        if asks:
            answers = _run(self._ask_all([(moves, msgs, draws[i]) for i, moves, msgs in asks]))
            for (i, _, _), move in zip(asks, answers, strict=True):
                chosen[i] = move
        actions = np.empty(obs.shape[0], np.int64)
        for i, move in enumerate(chosen):
            v = read_observation(obs[i], self.rules)
            if v.pending < 0 and move.taken:
                if len(self._chosen) > 100_000:
                    self._chosen.clear()
                self._chosen[(v.hand & ~(1 << move.card), v.table, move.card)] = move.taken
            actions[i] = move_action(move, obs[i], masks[i], self.rules)
        return actions

    async def _ask_all(self, jobs: list[tuple[list[Move], list[dict], float]]) -> list[Move]:
        """Return the move of every job, at most ``concurrency`` requests in flight."""
        import httpx

        gate = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(max_connections=self.concurrency)
        if self._tls is None:  # built once: loading the certificate store costs tens of ms per client
            self._tls = ssl.create_default_context()
        async with httpx.AsyncClient(timeout=self.timeout, limits=limits, verify=self._tls) as client:
            tasks = [asyncio.ensure_future(self._decide(client, gate, *job)) for job in jobs]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:  # one fault ends the batch: cancel the other requests
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _decide(self, client, gate: asyncio.Semaphore, moves: list[Move], msgs: list[dict],
                      draw: float) -> Move:
        """Return the move the model names, re-asking with the reason; a seeded random one at the end."""
        self.usage.decisions += 1
        chat = list(msgs)
        for attempt in range(self.max_retries + 1):
            text = await self._chat(client, gate, chat)
            try:
                return parse_answer(text, moves, self.french)
            except IllegalAnswer as exc:
                if attempt == self.max_retries:
                    break
                self.usage.reasks += 1
                chat += [{"role": "assistant", "content": text[:2000]},
                         {"role": "user", "content": f"That is not a legal move: {exc}. Answer with the "
                                                     f"number of one move from 1 to {len(moves)}."}]
        self.usage.fallbacks += 1
        return moves[min(int(draw * len(moves)), len(moves) - 1)]

    # ----------------------------------------------------------------------------- the wire

    async def _chat(self, client, gate: asyncio.Semaphore, chat: list[dict]) -> str:
        """Return the model's answer to ``chat``; retry 429, 5xx and timeouts; raise LLMError."""
        import httpx

        body: dict[str, Any] = {"model": self.model, "messages": chat, "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        key = os.environ.get(self.key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        why = ""
        for attempt in range(self.attempts):
            wait = self.backoff * 2 ** attempt
            async with gate:
                t0 = time.perf_counter()
                try:
                    r = await client.post(self.url, json=body, headers=headers)
                    status = r.status_code
                except httpx.TimeoutException:
                    status, why = 0, f"no answer within timeout={self.timeout:g} s"
                except (httpx.ConnectError, httpx.UnsupportedProtocol) as exc:  # nothing there: no retry
                    raise LLMError(f"cannot reach {self.url}: {_error(exc, key)}") from None
                except httpx.TransportError as exc:  # a connection dropped mid-answer: try again
                    status, why = 0, f"connection lost ({_error(exc, key)})"
                latency = (time.perf_counter() - t0) * 1000.0
            if status == 200:
                return self._answer(r, latency, key)
            if status in (401, 403):
                raise LLMError(f"{self.url} refused the request (HTTP {status}): check the key in "
                               f"${self.key_env}")
            if status == 404:
                raise LLMError(f"{self.url} answered HTTP 404: check base_url (it ends in /v1) and "
                               f"model={self.model!r}")
            if status == 429:
                why = "HTTP 429 Too Many Requests"
                after = _retry_after(r.headers.get("retry-after"))
                if after is not None:
                    if after > MAX_RETRY_AFTER_S:
                        raise LLMError(f"{self.url}: HTTP 429, Retry-After {after:g} s is longer than "
                                       f"{MAX_RETRY_AFTER_S:g} s")
                    wait = after
            elif status >= 500:
                why = f"HTTP {status}"
            elif status:
                raise LLMError(f"{self.url} answered HTTP {status}: {_clean(r.text[:200], key)}")
            if attempt + 1 < self.attempts:
                await asyncio.sleep(wait)
        raise LLMError(f"{self.url}: {why} on {self.attempts} tries")

    def _answer(self, r, latency: float, key: str) -> str:
        """Return the text of a 200 answer and count its tokens and latency."""
        if len(r.content) > MAX_RESPONSE_BYTES:
            raise LLMError(f"{self.url} answered more than {MAX_RESPONSE_BYTES} bytes")
        try:
            data = r.json()
            text = data["choices"][0]["message"]["content"] or ""
            if not isinstance(text, str):
                raise TypeError
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"{self.url} did not answer a chat completion: {_clean(r.text[:120], key)!r}") \
                from None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        self.usage.calls += 1
        self.usage.tokens_in += _count(usage.get("prompt_tokens"))
        self.usage.tokens_out += _count(usage.get("completion_tokens"))
        self.usage.latency_ms.append(latency)
        return text


def _count(x: Any) -> int:
    """Return a token count from an answer's usage (0 when missing or not a count)."""
    return int(x) if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else 0


def _retry_after(value: str | None) -> float | None:
    """Return a ``Retry-After`` header in seconds (None when absent or an HTTP date)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _clean(text: str, key: str) -> str:
    """Return ``text`` on one line, without the key should a server have echoed it."""
    text = " ".join(str(text).split())
    return text.replace(key, "[key]") if key else text


def _error(exc: BaseException, key: str) -> str:
    """Return an exception's message on one line, without the key."""
    return _clean(str(exc) or type(exc).__name__, key)


def _run(coro):
    """Return the result of ``coro``, run here or (inside a running event loop) in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def usage_of(agent: Agent) -> Usage | None:
    """Return and reset the usage of an agent that calls a model (None for any other agent)."""
    take = getattr(agent, "take_usage", None)
    return take() if callable(take) else None


def lineup_usage(specs: tuple[str, ...], agents: list[Agent]) -> dict[str, dict] | None:
    """Return ``{spec: Usage.to_dict()}`` of the model agents of a lineup (each taken once and reset),
    or None when the lineup has none."""
    out: dict[str, dict] = {}
    for spec, agent in zip(specs, agents, strict=True):
        used = usage_of(agent)
        if used is not None and spec not in out:
            out[spec] = used.to_dict()
    return out or None


def total_usage(blocks) -> dict[str, dict]:
    """Return ``{spec: Usage.summary()}`` over blocks carrying a ``usage`` (a tournament's, a card's)."""
    totals: dict[str, Usage] = {}
    for b in blocks:
        for spec, d in (getattr(b, "usage", None) or {}).items():
            totals.setdefault(spec, Usage()).add(Usage.from_dict(d))
    return {spec: u.summary() for spec, u in totals.items()}


def usage_lines(usage: dict[str, dict]) -> list[str]:
    """Return one readable line per model agent of ``total_usage``."""
    lines = []
    for spec, u in usage.items():
        lat = ("no calls" if u["latency_p50_ms"] is None else
               f"latency p50 {u['latency_p50_ms']:.0f} ms, p95 {u['latency_p95_ms']:.0f} ms")
        lines.append(f"{spec}: {u['decisions']} decisions, {u['calls']} calls, {u['reasks']} re-asked, "
                     f"{u['fallbacks']} fallbacks, tokens in {u['tokens_in']} / out {u['tokens_out']}, {lat}")
    return lines
