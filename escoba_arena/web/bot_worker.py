"""A bot worker: the process where bots think, so that a bot past its time can be stopped for real.

The arena never runs an agent's code in the server's own process: every bot move is a job for a
worker process of the pool (``bot_pool.BotPool``). A job is (agent id, the agent pickled the first
time this worker sees it, the move's seed, a copy of the game, the seat); the worker answers
``("started",)`` once the agent is ready, then ``("ok", card, capture)`` or ``("error", message)``.
When a move runs past its time the server kills the worker: its CPU, its threads and any request
it had open (a language model's) go with it.

The worker keeps the agents it was sent (``CACHE`` of them, least recently used first out) and
re-seeds the agent before each move (``move_seed``): a bot's move depends on its game and its seed,
never on which worker played its earlier moves. Nothing here writes a file; an agent arrives over
the pipe and reads its own settings (an API key from the environment) as it would anywhere.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections import OrderedDict
from typing import Any

CACHE = 32
"""Agents a worker keeps (the server mirrors the list, so it sends each agent once per worker)."""


class AgentFailure(RuntimeError):
    """A bot raised, returned an illegal action or ran past its time limit."""


def one_line(exc: BaseException) -> str:
    """Return an exception's message on one line."""
    return " ".join(str(exc).split())


def move_seed(*parts: int) -> int:
    """Return the 64-bit seed of one bot move from its game's seed, seat and position in the game."""
    digest = hashlib.blake2b(" ".join(str(int(p)) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def decide_move(bot: Any, sim: Any, seat: int, what: str) -> tuple[int, int]:
    """Return (card, capture mask) that ``bot`` plays at ``seat`` of ``sim`` (a ``OneGame`` it may step).

    A move is a play, then the table cards of its capture named one at a time: the bot is asked
    until the move is whole. AgentFailure if it returns something that is not a legal action.
    """
    card = -1
    while True:
        obs, mask = sim.observe(seat)
        state = sim.agent_state() if getattr(bot, "needs_state", False) else None
        a = bot.act_batch(obs, mask, state)[0]
        try:
            a = int(a)
        except (TypeError, ValueError):
            raise AgentFailure(f"{what} returned {a!r}, not an action") from None
        if not (0 <= a < mask.shape[1] and mask[0, a]):
            raise AgentFailure(f"{what} returned the illegal action {a}")
        if card < 0:
            card = a
        info = sim.step(a)
        if sim.pending < 0 or sim.to_act != seat or sim.done:
            return card, info.captured & ~(1 << card)


def _quiet_threads() -> None:
    """Keep a worker to one thread of numerical work: the pool, not the libraries, decides the CPU use."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"


def _one_job(agents: OrderedDict, job: tuple) -> tuple:
    """Return the answer to one job (the agent it names must be in ``agents`` or come with it)."""
    bot_id, blob, seed, sim, seat, what = job
    if blob is not None:
        agents[bot_id] = pickle.loads(blob)
        while len(agents) > CACHE:
            agents.popitem(last=False)
    agent = agents.get(bot_id)
    if agent is None:
        return ("missing",)
    agents.move_to_end(bot_id)
    return ("ready", agent, seed, sim, seat, what)


def serve(conn: Any, nice: int) -> None:
    """Answer jobs from the pool on ``conn`` until it closes (the worker's whole life)."""
    _quiet_threads()
    if nice:
        try:
            os.nice(nice)
        except OSError:  # not allowed here: the worker runs at the server's priority
            pass
    agents: OrderedDict = OrderedDict()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            got = _one_job(agents, job)
            if got[0] == "missing":
                conn.send(got)
                continue
            _, agent, seed, sim, seat, what = got
            conn.send(("started",))
            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(1)
            agent.reset(seed)
            card, capture = decide_move(agent, sim, seat, what)
            conn.send(("ok", card, capture))
        except AgentFailure as exc:
            conn.send(("error", str(exc)))
        except Exception as exc:  # any agent's failure is reported to its game, never raised here
            conn.send(("error", f"{job[5]} failed: {type(exc).__name__}: {one_line(exc)}"))


__all__ = ["CACHE", "AgentFailure", "decide_move", "move_seed", "one_line", "serve"]
