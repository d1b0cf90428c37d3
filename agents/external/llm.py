"""The ``llm`` agent: a language model behind an OpenAI-compatible chat-completions endpoint plays.

``llm:model=NAME,base_url=URL`` talks to ``URL/chat/completions`` (vLLM, Ollama, llama.cpp's server
and hosted services share this API) with ``httpx`` (the ``[llm]`` extra). Each decision is one chat:
the text face's messages (``escoba_env.faces.text``: the rules, the position, the answer protocol) and the
model's reply, read by the text face's strict parser (a final line ``Answer: N`` or the move written
out, a bare number or a bare move; nothing picked out of prose). A reply that names no legal move is
sent back with the reason, up to ``max_retries`` times; then the failure policy plays. A full move with
a capture choice is carried out over the following decisions without asking again.

The harness settings are spec parameters, recorded with the usage of every result and card and part
of the spec's fingerprint (``harness``): ``moves=listed|hidden`` (the prompt numbers the legal moves,
or states the rules and the position only and the model writes its move out), ``on_fail=forfeit|random``
(a decision whose answers all fail plays the lowest legal discard and counts a *forfeit*, or plays a
seeded random move and counts a *fallback*), ``votes=K`` (K samples a question, the move most of them
name wins, ties to the one named first), ``reasoning=off|on`` (a one-line answer, or reasoning before
the final line), and ``max_tokens``, sent with every request (default ``MAX_TOKENS[reasoning]``).

The decisions of one ``act_batch`` call (a tournament's block plays its games in lockstep) are
sent concurrently, at most ``concurrency`` requests at a time. Every request is bounded in time and
size (``agents.external.llm_client``), and ``cancel()``, from any thread, ends a decision in progress: its
requests are abandoned, their connections closed, and ``act_batch`` raises ``LLMError``.

The API key is read from the environment variable ``key_env`` (default ``OPENAI_API_KEY``; none
set: no ``Authorization`` header, as local servers want) at each request. It is never a spec
parameter, never kept on the agent, and never part of a message, so it reaches no log, result,
replay, record or card.

Faults that the run cannot go past end it with ``LLMError`` (one line): an unreachable endpoint,
401/403 (the key), 404 (the URL or the model), another 4xx, and 429, 5xx, timeouts or dropped
connections that last through ``attempts`` tries (429 waits for its ``Retry-After``, the others
back off from ``backoff`` seconds, doubling). ``usage`` counts, per agent: decisions, calls, answers
re-asked, decisions right at the first ask, forfeits, fallbacks, answers per form, split votes,
tokens in and out, and each call's latency (``Usage.summary``: p50/p95).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from escoba_env.faces.text import (
    ANSWER_PROTOCOL,
    MOVES_MODES,
    ON_FAIL,
    IllegalAnswer,
    Move,
    forfeit_move,
    legal_moves,
    messages,
    move_action,
    random_move,
    read_answer,
    read_observation,
    reask,
)
from escoba_env.rulebook.rules import Rules

from ..base import Agent
from .llm_client import MAX_RESPONSE_BYTES, Endpoint, LLMError

__all__ = ["MAX_RESPONSE_BYTES", "MAX_TOKENS", "LLMAgent", "LLMError", "Usage", "is_llm_spec", "lineup_usage",
           "total_usage", "usage_lines", "usage_of"]

MAX_TOKENS = {"off": 48, "on": 1024}
"""``max_tokens`` sent when the spec gives none, per ``reasoning`` mode: room for a written-out move on
one line, or for some reasoning before it."""
MAX_VOTES = 9
HARNESS_SHOWN = ("moves", "on_fail", "votes", "reasoning", "max_tokens")
"""The harness settings a usage line and the leaderboard's language-model table show."""
_COUNTS = ("decisions", "calls", "reasks", "first_try", "forfeits", "fallbacks", "split_votes", "tokens_in",
           "tokens_out")


@dataclass
class Usage:
    """What an LLM agent spent and how its answers went: counts, tokens, every call's latency (ms)."""

    decisions: int = 0
    """Decisions the model was asked about (a capture choice already made is not asked again)."""
    calls: int = 0
    """Chat-completions requests answered (a re-ask is one more; each vote is one)."""
    reasks: int = 0
    """Answers that named no legal move and were sent back with the reason."""
    first_try: int = 0
    """Decisions settled by a legal move at the first ask."""
    forfeits: int = 0
    """Decisions where every answer failed under ``on_fail=forfeit``: the lowest legal discard played."""
    fallbacks: int = 0
    """Decisions where every answer failed under ``on_fail=random``: a seeded random legal move played."""
    split_votes: int = 0
    """Decisions whose votes named more than one move."""
    tokens_in: int = 0
    tokens_out: int = 0
    forms: dict[str, int] = field(default_factory=dict)
    """Answers read, per form of the answer protocol (``escoba_env.faces.text.ANSWER_FORMS``)."""
    latency_ms: list[float] = field(default_factory=list)
    harness: dict[str, Any] = field(default_factory=dict)
    """The harness settings the answers were given under (``LLMAgent.harness``)."""

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts and latencies to this one."""
        for k in _COUNTS:
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for k, n in other.forms.items():
            self.forms[k] = self.forms.get(k, 0) + n
        self.latency_ms.extend(other.latency_ms)
        self.harness = self.harness or dict(other.harness)

    def to_dict(self) -> dict[str, Any]:
        """Return the counts, forms, harness and latencies (rounded to 0.1 ms) as JSON-ready data."""
        return {**{k: getattr(self, k) for k in _COUNTS}, "forms": dict(sorted(self.forms.items())),
                "harness": dict(self.harness), "latency_ms": [round(x, 1) for x in self.latency_ms]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Usage:
        """Return the usage that ``to_dict`` wrote (counts an older version did not keep read as 0)."""
        return cls(**{k: int(d.get(k, 0)) for k in _COUNTS}, forms=dict(d.get("forms", {})),
                   harness=dict(d.get("harness", {})), latency_ms=[float(x) for x in d["latency_ms"]])

    def summary(self) -> dict[str, Any]:
        """Return the counts, the legal-first-try rate (None without decisions) and latency p50 and p95
        (ms; None without calls) instead of the list."""
        lat = np.asarray(self.latency_ms, np.float64)
        pct = (lambda q: round(float(np.percentile(lat, q)), 1)) if lat.size else (lambda q: None)
        rate = round(self.first_try / self.decisions, 4) if self.decisions else None
        return {**{k: getattr(self, k) for k in _COUNTS}, "legal_first_try": rate,
                "forms": dict(sorted(self.forms.items())), "latency_p50_ms": pct(50),
                "latency_p95_ms": pct(95), "harness": dict(self.harness)}


def is_llm_spec(spec: str) -> bool:
    """Return whether ``spec`` names the ``llm`` agent (a card of it reports its usage, not its timing)."""
    return spec.partition(":")[0].strip() == "llm"


def _positive(name: str, value: float) -> None:
    """Raise ValueError unless ``value`` is positive."""
    if not value > 0:
        raise ValueError(f"llm: {name} must be positive, got {value!r}")


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check(choice: str, value: str, options: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``options``, else raise ValueError naming them."""
    if value not in options:
        raise ValueError(f"llm: {choice} must be one of {', '.join(options)}, got {value!r}")
    return value


class LLMAgent(Agent):
    """A language model at an OpenAI-compatible chat-completions endpoint (see the module docstring)."""

    name = "llm"

    def __init__(self, rules: Rules | None = None, seed: int | None = None, *, model: str = "",
                 base_url: str = "", temperature: float = 0.0, max_retries: int = 2, timeout: float = 60.0,
                 key_env: str = "OPENAI_API_KEY", concurrency: int = 8, attempts: int = 4,
                 backoff: float = 1.0, max_tokens: int | None = None, french: bool = False,
                 moves: str = "listed", on_fail: str = "forfeit", votes: int = 1, reasoning: str = "off"):
        if not model:
            raise ValueError("llm needs a model: llm:model=NAME,base_url=URL")
        if not re.match(r"^https?://[^\s/]+", base_url or ""):
            raise ValueError(f"llm needs base_url=http(s)://HOST[:PORT]/v1, got {base_url!r}")
        if not _ENV_NAME.match(key_env):
            raise ValueError("llm: key_env names the environment variable that holds the key (e.g. "
                             "OPENAI_API_KEY), not the key itself")
        if not 0 <= max_retries <= 20:
            raise ValueError(f"llm: max_retries must be in 0..20, got {max_retries!r}")
        if not 1 <= concurrency <= 1024 or not 1 <= attempts <= 20 or not 1 <= votes <= MAX_VOTES:
            raise ValueError(f"llm: concurrency must be in 1..1024, attempts in 1..20 and votes in "
                             f"1..{MAX_VOTES}")
        if not 0.0 <= temperature <= 2.0:
            raise ValueError(f"llm: temperature must be in [0, 2], got {temperature!r}")
        _positive("timeout", timeout)
        if backoff < 0 or (max_tokens is not None and max_tokens < 1):
            raise ValueError("llm: backoff must be >= 0 and max_tokens positive")
        self.moves, self.on_fail = _check("moves", moves, MOVES_MODES), _check("on_fail", on_fail, ON_FAIL)
        self.reasoning = _check("reasoning", reasoning, tuple(MAX_TOKENS))
        self.model, self.url = model, base_url.rstrip("/") + "/chat/completions"
        self.temperature, self.max_retries, self.votes = float(temperature), int(max_retries), int(votes)
        self.max_tokens = int(max_tokens) if max_tokens is not None else MAX_TOKENS[self.reasoning]
        self.concurrency, self.french = int(concurrency), bool(french)
        self.endpoint = Endpoint(self.url, key_env, float(timeout), int(attempts), float(backoff), model)
        self.usage = Usage(harness=self.harness)
        self._chosen: dict[tuple[int, int, int], int] = {}
        self._tls: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._running: set[tuple[asyncio.AbstractEventLoop, asyncio.Task]] = set()
        self._cancelled: set[asyncio.Task] = set()
        super().__init__(rules, seed)

    @property
    def harness(self) -> dict[str, Any]:
        """Return the settings that shape the model's answers (recorded on results and cards)."""
        return {"protocol": ANSWER_PROTOCOL, "moves": self.moves, "on_fail": self.on_fail,
                "votes": self.votes, "reasoning": self.reasoning, "max_tokens": self.max_tokens,
                "temperature": self.temperature, "max_retries": self.max_retries}

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the fallback generator and forget capture choices in progress."""
        super().reset(seed)
        self._chosen = {}

    def take_usage(self) -> Usage:
        """Return the usage since the last call and start counting again."""
        used, self.usage = self.usage, Usage(harness=self.harness)
        return used

    def cancel(self) -> None:
        """End the decision in progress, from any thread: its requests are abandoned and their
        connections closed, and ``act_batch`` raises ``LLMError`` (nothing in progress: nothing happens)."""
        with self._lock:
            running = list(self._running)
            self._cancelled.update(task for _, task in running)
        for loop, task in running:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # that loop has just finished
                pass

    # ----------------------------------------------------------------------------- deciding

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray, state=None) -> np.ndarray:
        """Return one legal action per row, asking the model (concurrently) about each new decision."""
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks)
        draws = self.rng.random(obs.shape[0])  # drawn up front: fallbacks never depend on timing
        chosen: list[Move | None] = [None] * obs.shape[0]
        asks = []
        listed, reasoning = self.moves == "listed", self.reasoning == "on"
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
            asks.append((i, moves, messages(obs[i], self.rules, self.french, moves, listed, reasoning)))
        if asks:
            answers = _run(self._guarded(self._ask_all([(moves, msgs, draws[i]) for i, moves, msgs in asks])))
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

    async def _guarded(self, coro):
        """Return ``coro``'s result; a ``cancel()`` meanwhile raises LLMError instead."""
        me = (asyncio.get_running_loop(), asyncio.current_task())
        with self._lock:
            self._running.add(me)
        try:
            return await coro
        except asyncio.CancelledError:
            with self._lock:
                asked = me[1] in self._cancelled
            if not asked:  # not ours (an interrupt ending the loop): stays a cancellation
                raise
            raise LLMError(f"{self.url}: the decision was cancelled (its time ran out); its requests were "
                           "abandoned") from None
        finally:
            with self._lock:
                self._running.discard(me)
                self._cancelled.discard(me[1])

    async def _ask_all(self, jobs: list[tuple[list[Move], list[dict], float]]) -> list[Move]:
        """Return the move of every job, at most ``concurrency`` requests in flight."""
        import httpx  # the [llm] extra

        gate = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(max_connections=self.concurrency)
        if self._tls is None:  # built once: loading the certificate store costs tens of ms per client
            self._tls = ssl.create_default_context()
        timeout = self.endpoint.timeout
        async with httpx.AsyncClient(timeout=timeout, limits=limits, verify=self._tls) as client:
            tasks = [asyncio.ensure_future(self._decide(client, gate, *job)) for job in jobs]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:  # one fault (or a cancel) ends the batch: cancel the other requests
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _decide(self, client, gate: asyncio.Semaphore, moves: list[Move], msgs: list[dict],
                      draw: float) -> Move:
        """Return the move the model names (the votes' majority), re-asking with the reason; at the end
        the failure policy's move."""
        u = self.usage
        u.decisions += 1
        chat = list(msgs)
        for attempt in range(self.max_retries + 1):
            texts = await asyncio.gather(*(self._ask(client, gate, chat) for _ in range(self.votes)))
            move, reason, text = self._vote(texts, moves)
            if move is not None:
                u.first_try += attempt == 0
                return move
            if attempt == self.max_retries:
                break
            u.reasks += 1
            chat += [{"role": "assistant", "content": text[:2000]},
                     {"role": "user", "content": reask(reason, len(moves), self.moves == "listed")}]
        if self.on_fail == "forfeit":
            u.forfeits += 1
            return forfeit_move(moves)
        u.fallbacks += 1
        return random_move(moves, draw)

    def _vote(self, texts: list[str], moves: list[Move]) -> tuple[Move | None, str, str]:
        """Return the move most answers name (ties: the one named first), or None with the first
        answer's reason and text when none names a legal move."""
        named: list[Move] = []
        reason = ""
        for text in texts:
            try:
                move, form = read_answer(text, moves, self.french, self.moves == "listed")
            except IllegalAnswer as exc:
                reason = reason or str(exc)
                continue
            named.append(move)
            self.usage.forms[form] = self.usage.forms.get(form, 0) + 1
        if not named:
            return None, reason, texts[0]
        counts = Counter(named)
        self.usage.split_votes += len(counts) > 1
        return max(counts, key=lambda m: (counts[m], -named.index(m))), "", ""

    async def _ask(self, client, gate: asyncio.Semaphore, chat: list[dict]) -> str:
        """Return one answer of the model to ``chat`` (one request), counting its tokens and latency."""
        body: dict[str, Any] = {"model": self.model, "messages": chat, "temperature": self.temperature,
                                "max_tokens": self.max_tokens, "stream": False}
        reply = await self.endpoint.chat(client, gate, body)
        u = self.usage
        u.calls += 1
        u.tokens_in += reply.tokens_in
        u.tokens_out += reply.tokens_out
        u.latency_ms.append(reply.latency_ms)
        return reply.text

    def __getstate__(self) -> dict:
        """Return the agent's state without its lock and event loops (a copy starts idle)."""
        state = dict(vars(self))
        state.update(_lock=None, _running=set(), _cancelled=set(), _tls=None)
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()


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
    """Return one readable line per model agent of ``total_usage``: its harness, how its answers went
    and what it spent."""
    lines = []
    for spec, u in usage.items():
        lat = ("no calls" if u["latency_p50_ms"] is None else
               f"latency p50 {u['latency_p50_ms']:.0f} ms, p95 {u['latency_p95_ms']:.0f} ms")
        h = u.get("harness") or {}
        how = ", ".join(f"{k}={h[k]}" for k in HARNESS_SHOWN if k in h)
        rate = "n/a" if u.get("legal_first_try") is None else f"{100 * u['legal_first_try']:.1f}%"
        forms = ", ".join(f"{k} {n}" for k, n in (u.get("forms") or {}).items()) or "none"
        lines.append(f"{spec}: {u['decisions']} decisions, legal at the first ask {rate}, {u['reasks']} "
                     f"re-asked, {u.get('forfeits', 0)} forfeits, {u['fallbacks']} fallbacks; "
                     f"{u['calls']} calls, tokens in {u['tokens_in']} / out {u['tokens_out']}, {lat}; "
                     f"answers read: {forms}"
                     + (f" [{how}]" if how else ""))
    return lines
