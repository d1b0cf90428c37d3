"""The bot pool: every bot move of the arena runs in a worker process that a timeout really stops.

- **Bounded.** At most ``workers`` bot moves compute at a time, server-wide; a move waits for a
  free worker in a queue, and the waiting costs no thread to an async caller (the rooms).
- **Fair.** The queue serves the client (an address's key) with the fewest moves computing first,
  in order of arrival among equals, and one client has at most ``per_client`` moves computing at a
  time (default half the workers): the costliest requests of one client leave the other workers
  to everyone else. A room has one move in the queue at most (its bots move one at a time).
- **Stopped.** A move that runs past its time kills its worker (SIGKILL): the CPU, the threads and
  any request the agent had open go with it at once, and a new worker is started when next needed.
  A worker that dies (a crash, memory) fails its move with one clear line.
- **Out of the way.** Workers run at a lower priority (``nice``) than the server, so that the
  server's own work (moves of people, messages) comes first on a busy machine, and each keeps its
  numerical libraries to one thread.

Workers are forked from a fork server (``multiprocessing``'s ``forkserver``) that has loaded the
engine once: a new worker is ready in milliseconds, shares nothing with the server's threads, and
inherits the environment the server started with (a language model's key is read there, never
sent or written). An agent is sent pickled, once per worker that needs it (``bot_worker.CACHE``).
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import pickle
import signal
import threading
from collections import Counter, OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .bot_worker import CACHE, AgentFailure, serve

LOAD_SECONDS = 60.0
"""How long a worker may take to load an agent before its move starts (a network imports torch once)."""
NICE = 10
"""How much lower than the server's the workers' scheduling priority is."""
PRELOAD = ("escoba_arena.web.bot_worker", "escoba_arena.web.one_game", "escoba_arena.web.allow")
"""What the fork server loads before it forks the first worker: the engine and the agents' registry."""
_IDS = itertools.count(1)


def default_workers() -> int:
    """Return the default number of bot workers: the CPUs, from 2 to 4."""
    return max(2, min(4, os.cpu_count() or 2))


class PooledBot:
    """A bot as the pool holds it: its agent pickled (made once), its id, and what the game asks of it."""

    __slots__ = ("blob", "key", "name", "needs_state")

    def __init__(self, agent: Any):
        self.key = next(_IDS)
        self.blob = pickle.dumps(agent, protocol=pickle.HIGHEST_PROTOCOL)
        self.needs_state = bool(getattr(agent, "needs_state", False))
        self.name = str(getattr(agent, "name", type(agent).__name__))


def pooled(agent: Any) -> PooledBot:
    """Return ``agent`` as the pool holds it (a ``PooledBot`` is returned as it is)."""
    return agent if isinstance(agent, PooledBot) else PooledBot(agent)


@dataclass
class Job:
    """One bot move: the bot, a copy of its game, its seat, its seed, its time, and who asked."""

    bot: PooledBot
    sim: Any
    seat: int
    seed: int
    timeout: float
    what: str
    client: str = ""


@dataclass
class _Ticket:
    """A job's place in the queue; ``grant`` is called (under the pool's lock) when a worker is its."""

    client: str
    grant: Any
    worker: Any = None
    granted: bool = False
    refused: bool = False
    """The pool stopped before a worker was free."""
    order: int = field(default_factory=lambda: next(_IDS))


class Worker:
    """One worker process and the server's end of its pipe; ``cached`` mirrors the agents it keeps."""

    def __init__(self, ctx, nice: int):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=serve, args=(child, nice), daemon=True, name="escoba bot worker")
        self.proc.start()
        child.close()
        self.cached: OrderedDict[int, None] = OrderedDict()
        self.dead = False
        self._kill_lock = threading.Lock()
        self._closed = False

    def signal_kill(self) -> None:
        """Send the worker SIGKILL and return: the thread that runs its move sees the pipe end and
        closes it (closing it here too raced that thread: one of the two closed a descriptor twice)."""
        self.dead = True
        if self.proc.pid is not None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass

    def kill(self) -> None:
        """Stop the worker at once (SIGKILL), reap it and close the pipe, once whoever calls it."""
        with self._kill_lock:
            if self._closed:
                return
            self._closed = True
            self.signal_kill()
            self.proc.join(5)
            self.conn.close()

    def _send(self, job: Job, with_agent: bool) -> None:
        bot = job.bot
        if with_agent:
            self.cached[bot.key] = None
            while len(self.cached) > CACHE:
                self.cached.popitem(last=False)
        else:
            self.cached.move_to_end(bot.key)
        self.conn.send((bot.key, bot.blob if with_agent else None, job.seed, job.sim, job.seat, job.what))

    def _answer(self, seconds: float, job: Job, past: str) -> tuple:
        if not self.conn.poll(seconds):
            self.kill()
            raise AgentFailure(f"{job.what} {past}")
        return self.conn.recv()

    def run(self, job: Job, load_seconds: float) -> tuple[int, int]:
        """Return (card, capture) of ``job``; AgentFailure (and the worker killed) past its time."""
        try:
            self._send(job, job.bot.key not in self.cached)
            got = self._answer(load_seconds, job, f"could not be loaded within {load_seconds:g} s")
            if got[0] == "missing":  # the worker lost it (it cannot, but a resend costs nothing)
                self._send(job, True)
                got = self._answer(load_seconds, job, f"could not be loaded within {load_seconds:g} s")
            if got[0] == "started":
                got = self._answer(job.timeout, job, f"took longer than {job.timeout:g} s")
        except (EOFError, OSError, BrokenPipeError):
            self.kill()
            raise AgentFailure(f"{job.what} failed: its worker process stopped") from None
        if got[0] == "ok":
            return int(got[1]), int(got[2])
        self.cached.pop(job.bot.key, None)  # an agent that failed to load is sent again next time
        raise AgentFailure(str(got[1]))


class BotPool:
    """At most ``workers`` bot moves at a time, in worker processes; see the module docstring."""

    def __init__(self, workers: int | None = None, per_client: int | None = None, *,
                 load_seconds: float = LOAD_SECONDS, nice: int = NICE):
        self.size = int(workers or default_workers())
        self.per_client = max(1, int(per_client or self.size // 2))
        self.load_seconds, self.nice = float(load_seconds), int(nice)
        self.ctx = multiprocessing.get_context("forkserver")
        # The fork server loads the engine and the agents' registry once; each worker starts from it.
        self.ctx.set_forkserver_preload(list(PRELOAD))
        self.lock = threading.Lock()
        self.idle: list[Worker] = []
        self.busy: set[Worker] = set()
        self.starting = 0
        self.waiting: list[_Ticket] = []
        self.running: Counter[str] = Counter()
        self.closed = False
        self.name = f"escoba bot pool {next(_IDS)}"
        self.runner = ThreadPoolExecutor(self.size, thread_name_prefix=self.name)
        """The threads that wait on the workers' answers for async callers: one per worker at most."""
        self.kills = 0

    # ------------------------------------------------------------------ the queue

    def _dispatch(self) -> None:
        """Give free workers to the tickets next in line (caller holds the lock)."""
        while self.waiting and len(self.busy) + self.starting < self.size:
            ready = [t for t in self.waiting if self.running[t.client] < self.per_client]
            if not ready:
                return
            ticket = min(ready, key=lambda t: (self.running[t.client], t.order))
            self.waiting.remove(ticket)
            self.running[ticket.client] += 1
            if self.idle:
                ticket.worker = self.idle.pop()
                self.busy.add(ticket.worker)
            else:
                self.starting += 1  # the ticket's holder starts the worker, outside the lock
            ticket.granted = True
            ticket.grant()

    def _enqueue(self, ticket: _Ticket) -> None:
        with self.lock:
            if self.closed:
                raise AgentFailure("the server is stopping")
            self.waiting.append(ticket)
            self._dispatch()

    def _withdraw(self, ticket: _Ticket) -> None:
        """Take back a ticket whose caller stopped waiting (granted or not)."""
        with self.lock:
            if ticket in self.waiting:
                self.waiting.remove(ticket)
                return
        if ticket.granted:
            self._release(ticket, ticket.worker, started=ticket.worker is None)

    def _release(self, ticket: _Ticket, worker: Worker | None, started: bool = False) -> None:
        with self.lock:
            self.running[ticket.client] -= 1
            if self.running[ticket.client] <= 0:
                del self.running[ticket.client]
            if started:
                self.starting -= 1
            if worker is not None:
                self.busy.discard(worker)
                if not worker.dead and not self.closed:
                    self.idle.append(worker)
                elif not worker.dead:
                    worker.kill()
            self._dispatch()

    def _run(self, ticket: _Ticket, job: Job) -> tuple[int, int]:
        """Run ``job`` on the ticket's worker (starting one if it was granted none); release it after."""
        if ticket.refused:
            raise AgentFailure("the server is stopping")
        worker, started = ticket.worker, ticket.worker is None
        try:
            if worker is None:
                worker = self._start_worker(job)
                with self.lock:
                    self.starting -= 1
                    self.busy.add(worker)
                    closed = self.closed
                started = False
                if closed:  # the pool stopped while this worker was starting: it must not run
                    worker.kill()
                    raise AgentFailure("the server is stopping")
            try:
                return worker.run(job, self.load_seconds)
            except AgentFailure:
                if self.closed:
                    raise AgentFailure("the server is stopping") from None
                raise
            finally:
                if worker.dead:
                    with self.lock:
                        self.kills += 1
        finally:
            self._release(ticket, worker, started)

    def _start_worker(self, job: Job) -> Worker:
        """Return a new worker; AgentFailure, naming the cause, where no process can be started (out of
        processes or memory, the fork server gone)."""
        try:
            return Worker(self.ctx, self.nice)
        except Exception as exc:  # whatever the start raised: the move fails with one line
            raise AgentFailure(f"{job.what} failed: no worker process could be started "
                               f"({type(exc).__name__}: {exc})") from None

    # ------------------------------------------------------------------ asking for a move

    def decide(self, job: Job) -> tuple[int, int]:
        """Return (card, capture mask) of one bot move, waiting in this thread; AgentFailure if it fails."""
        event = threading.Event()
        ticket = _Ticket(job.client, event.set)
        self._enqueue(ticket)
        event.wait()
        return self._run(ticket, job)

    async def decide_async(self, job: Job) -> tuple[int, int]:
        """Return (card, capture mask) of one bot move; the wait for a worker holds no thread."""
        loop = asyncio.get_running_loop()
        granted = loop.create_future()

        def grant() -> None:
            loop.call_soon_threadsafe(lambda: granted.done() or granted.set_result(None))

        ticket = _Ticket(job.client, grant)
        self._enqueue(ticket)
        try:
            await granted
        except asyncio.CancelledError:
            self._withdraw(ticket)
            raise
        if ticket.refused:
            raise AgentFailure("the server is stopping")
        return await asyncio.shield(loop.run_in_executor(self.runner, self._run, ticket, job))

    def warm(self) -> None:
        """Start a worker now, in a thread of its own, so that the first bot move does not wait for it."""
        def start() -> None:
            with self.lock:
                if self.closed or self.idle or self.busy or self.starting >= self.size:
                    return
                self.starting += 1
            worker = None
            try:
                worker = Worker(self.ctx, self.nice)
            except Exception:  # no process now: the next move starts one or fails saying why
                worker = None
            finally:
                with self.lock:
                    self.starting -= 1
                    if worker is not None and self.closed:
                        worker.kill()
                    elif worker is not None:
                        self.idle.append(worker)
                    self._dispatch()

        threading.Thread(target=start, daemon=True, name="escoba bot pool warm-up").start()

    # ------------------------------------------------------------------ looking and stopping

    def pids(self) -> list[int]:
        """Return the process ids of the workers alive now."""
        with self.lock:
            return [w.proc.pid for w in [*self.idle, *self.busy] if w.proc.pid is not None]

    def load(self) -> dict:
        """Return the pool's state: workers computing, waiting moves, workers killed so far."""
        with self.lock:
            return {"computing": len(self.busy) + self.starting, "waiting": len(self.waiting),
                    "workers": len(self.idle) + len(self.busy), "killed": self.kills}

    def close(self) -> None:
        """Stop every worker; moves still asked for fail with AgentFailure."""
        with self.lock:
            self.closed = True
            idle, busy, self.idle = self.idle, list(self.busy), []
            waiting, self.waiting = self.waiting, []
        for w in idle:
            w.kill()
        for w in busy:  # their move's thread is reading the pipe: it closes it when the pipe ends
            w.signal_kill()
        for t in waiting:
            t.refused = True
            t.grant()
        self.runner.shutdown(wait=False)


_SHARED: list[BotPool] = []
_SHARED_LOCK = threading.Lock()


def shared_pool() -> BotPool:
    """Return this process's default pool (made on first use; its workers stop with the process)."""
    with _SHARED_LOCK:
        if not _SHARED or _SHARED[0].closed:
            _SHARED[:] = [BotPool()]
        return _SHARED[0]


__all__ = ["LOAD_SECONDS", "NICE", "AgentFailure", "BotPool", "Job", "PooledBot", "default_workers",
           "pooled", "shared_pool"]
