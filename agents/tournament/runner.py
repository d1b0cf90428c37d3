"""Run a tournament: lineups, blocks of deals, seeds, and the local and Ray backends.

The work is cut into *tasks*, one block of ``block_deals`` deals of one lineup each. A task is
self-contained (agent specs, rules, deal ids, seeds), so it gives the same result in this
process, in a worker process or on a Ray node, and the tournament's numbers depend only on the
config, never on ``workers`` or the backend:

- every task plays the deals ``[b * block_deals, (b + 1) * block_deals)`` of its lineup with the
  engine seeded by the tournament seed, so all lineups play the same deals;
- every agent is re-seeded at the start of a task with a seed derived from the tournament seed,
  the lineup's canonical specs (not its index: a pair gives the same numbers whatever else is in the
  tournament; not their spelling: ``search``, ``search:sims=400`` and ``search:sims=0400`` are one
  agent with one seed, and may not be two entrants), the block index and its lineup position.

Specs are read once, when the config is made (``agents.spec.registry.read_spec``): the config, its
tasks and the workers hold the ``Spec`` values, and nothing after parses a spec again.

Lineups: with ``S`` scoring sides, a round robin of ``N >= S`` agents plays every combination of
``S`` distinct agents (every pair when ``S = 2``); with fewer agents than sides, every multiset of
``S`` agents that uses each agent at least once (2 agents, 3 players: AAB and ABB). ``--vs X``
plays ``X`` with every such choice of ``S - 1`` opponents from the list. With ``orders=2`` and 3
or more sides, every lineup is followed by its reverse cyclic order (A, C, B after A, B, C) where
that is another order of play: who plays after whom matters.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import re
import signal
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from escoba_env.rulebook.rules import Rules, check_seed

from ..base import Agent
from ..external.llm import lineup_usage, usage_of
from ..spec.fingerprint import outside_runtime_env
from ..spec.registry import Spec, make_agent, read_spec
from . import raycluster
from .play import Block, play_block


@dataclass(frozen=True)
class TournamentConfig:
    """Everything that determines a tournament's numbers (plus how to run it)."""

    agents: tuple[str | Spec, ...]
    """Agent specs (``agents.spec.registry``); a round robin, or the opponents of ``vs``. Texts are read
    into ``Spec`` values when the config is made; a text the registry cannot read stays text (building
    it fails with the registry's error)."""
    vs: str | Spec | None = None
    """If set, this agent plays against each of ``agents`` (instead of a round robin)."""
    rules: Rules = field(default_factory=Rules)
    """The rules of every game."""
    deals: int = 250
    """Deals per lineup: single rounds, or whole games with ``games=True``."""
    games: bool = False
    """Play whole games to the target score instead of single rounds."""
    duplicate: bool = True
    """Play each deal once per seat rotation (duplicate deals)."""
    seed: int = 0
    """Seed of the deals and of the agents' seeds."""
    max_rounds: int = 100
    """Games only: a game still undecided after this many rounds is cut (a draw)."""
    block_deals: int = 100
    """Deals per task (part of the config: agents are re-seeded per block)."""
    confidence: float = 0.95
    """Level of every interval."""
    workers: int = 1
    """Processes of the local backend."""
    backend: str = "local"
    """``"local"`` (this process or a process pool) or ``"ray"``."""
    ray_address: str | None = None
    """Ray cluster address (``None``: start a local Ray instance)."""
    orders: int = 1
    """Orders of play of each lineup with 3 or more sides: 1, or 2 (also its reverse cyclic order)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", tuple(_read(s) for s in self.agents))
        object.__setattr__(self, "vs", None if self.vs is None else _read(self.vs))

    @property
    def entrants(self) -> tuple[Spec | str, ...]:
        """Return every agent spec of the tournament (the ``vs`` agent first), as read: a ``Spec`` is the
        text as written, the name tables, files and the journal show."""
        return ((self.vs,) if self.vs is not None else ()) + tuple(self.agents)

    def check(self) -> None:
        """Raise ValueError naming the first invalid setting."""
        for name in ("deals", "block_deals", "workers", "max_rounds"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        check_seed(self.seed)
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        if self.backend not in ("local", "ray"):
            raise ValueError(f"backend must be 'local' or 'ray', got {self.backend!r}")
        if self.orders not in (1, 2):
            raise ValueError(f"orders must be 1 or 2, got {self.orders!r}")
        if self.ray_address and self.backend != "ray":
            raise ValueError("--ray-address needs --backend ray")
        if not isinstance(self.rules, Rules):
            raise ValueError("rules must be an escoba_env.Rules")
        if any(not isinstance(s, str) or not s.strip() for s in self.entrants):
            raise ValueError("agent specs must be non-empty strings")
        _check_entrants(self.agents, self.vs)


def _read(spec: Any) -> Any:
    """Return a spec text read into a ``Spec``; a ``Spec``, a text the registry cannot read (kept as text,
    as ``seed_spec`` keeps it) or anything else (``check`` refuses it) as it is."""
    if not isinstance(spec, str):
        return spec
    try:
        return read_spec(spec)
    except ValueError:
        return spec


def _check_entrants(agents: Sequence[Spec | str], vs: Spec | str | None) -> None:
    """Raise ValueError if an agent is given twice, under any spelling (``search``, ``search:sims=400``),
    or if there are too few; the message names the spellings."""
    def key(s: Spec | str) -> str:  # what seeds derive from (seed_spec), without reading a text again
        return s.canonical if isinstance(s, Spec) else s

    written: dict[str, list[str]] = {}
    for s in agents:
        written.setdefault(key(s), []).append(str(s))
    dup = [(k, w) for k, w in written.items() if len(w) > 1]
    if dup:
        raise ValueError("agent(s) given more than once: " + "; ".join(
            k if len(set(w)) == 1 else f"{' and '.join(map(repr, w))} are one agent ({k})" for k, w in dup))
    if vs is not None:
        same = written.get(key(vs))
        if same:
            also = "" if same == [vs] else f" (as {same[0]!r}: one agent)"
            raise ValueError(f"the --vs agent {vs!r} is also in the opponent list{also}")
        if not agents:
            raise ValueError("--vs needs at least one opponent")
    elif len(agents) < 2:
        raise ValueError(f"a round robin needs at least 2 agents, got {len(agents)}")


def _fill(pool: Sequence[int], k: int) -> list[tuple[int, ...]]:
    """Return the size-``k`` lineups of ``pool``: combinations, or covering multisets if too few."""
    if len(pool) >= k:
        return list(itertools.combinations(pool, k))
    return [c for c in itertools.combinations_with_replacement(pool, k) if set(c) == set(pool)]


def lineups(config: TournamentConfig) -> list[tuple[int, ...]]:
    """Return the lineups (tuples of entrant indices, one per side) of the tournament."""
    s = config.rules.num_sides
    n = len(config.entrants)
    base = _fill(range(n), s) if config.vs is None else [(0, *c) for c in _fill(range(1, n), s - 1)]
    if config.orders == 1 or s < 3:
        return base
    out = []
    for lu in base:
        out.append(lu)
        rev = (lu[0], *reversed(lu[1:]))
        if rev not in {lu[i:] + lu[:i] for i in range(s)}:  # AAB reversed is AAB: one order of play
            out.append(rev)
    return out


@dataclass(frozen=True)
class Task:
    """One block of deals of one lineup: everything a worker needs (picklable)."""

    index: int
    lineup: int
    block: int
    specs: tuple[Spec | str, ...]
    rules: dict
    lo: int
    hi: int
    seed: int
    games: bool
    duplicate: bool
    max_rounds: int
    record: bool


def make_tasks(config: TournamentConfig, record: bool = False) -> list[Task]:
    """Return the tasks, block-major (every lineup's block 0, then block 1, ...) for a fair ETA."""
    ent = config.entrants
    ls = lineups(config)
    b = config.block_deals
    tasks = []
    for block, lo in enumerate(range(0, config.deals, b)):
        for li, lineup in enumerate(ls):
            tasks.append(Task(len(tasks), li, block, tuple(ent[i] for i in lineup),
                              config.rules.to_dict(), lo, min(config.deals, lo + b), config.seed,
                              config.games, config.duplicate, config.max_rounds, record))
    return tasks


def seed_spec(spec: str | Spec) -> str:
    """Return the text an agent's seeds derive from: its canonical spec (``agents.spec.registry``; defaults
    dropped, parameters in the registry's order, values written one way), a spec the registry cannot
    read as written. A spec already written canonically keeps the seeds it always had."""
    spec = _read(spec)
    return spec.canonical if isinstance(spec, Spec) else spec


def agent_seed(seed: int, specs: Sequence[str | Spec], block: int, position: int) -> int:
    """Return the seed of the agent at ``position`` of a lineup for one block of deals."""
    key = zlib.crc32("\x1f".join(map(seed_spec, specs)).encode())
    ss = np.random.SeedSequence([int(seed), key, int(block), int(position)])
    return int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1))


def build_agent(spec: str | Spec, rules: Rules, seed: int = 0) -> Agent:
    """Return the agent that ``spec`` names, built by the registry for ``rules``."""
    return make_agent(spec, rules=rules, seed=seed)


_AGENTS: dict[tuple[Spec | str, Rules], Agent] = {}
"""Agents built in this process, reused across tasks (re-seeded at the start of each)."""


def run_task(task: Task) -> Block:
    """Return the result of one task (agents built once per process and re-seeded per task)."""
    rules = Rules.from_dict(task.rules)
    agents = []
    for spec in task.specs:
        key = (spec, rules)
        if key not in _AGENTS:
            _AGENTS[key] = build_agent(spec, rules)
        agents.append(_AGENTS[key])
    seen: set[int] = set()
    for pos, a in enumerate(agents):
        if id(a) not in seen:
            seen.add(id(a))
            a.reset(agent_seed(task.seed, task.specs, task.block, pos))
            usage_of(a)  # a language model's counts start at this block
    block = play_block(agents, rules, np.arange(task.lo, task.hi), task.seed, games=task.games,
                       duplicate=task.duplicate, max_rounds=task.max_rounds, record=task.record,
                       lineup=task.lineup, block=task.block)
    block.usage = lineup_usage(task.specs, agents)
    return block


class WorkerDied(RuntimeError):
    """A worker process (local or Ray) died in the middle of a tournament."""


def _worker_init() -> None:
    """Set up a worker process: one thread of BLAS / torch, Ctrl-C and SIGTERM left to the parent.

    A terminal's Ctrl-C reaches the whole process group: the workers ignore it and the parent,
    which handles it, stops them. SIGTERM gets its default action back (the parent's handler
    was inherited by the fork).
    """
    os.environ["OMP_NUM_THREADS"] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_tasks(tasks: list[Task], config: TournamentConfig,
              on_done: Callable[[Block], None] | None = None) -> list[Block]:
    """Return the blocks of all tasks, in task order, run on the configured backend.

    A worker that dies raises WorkerDied at once (the other workers are stopped); ``on_done`` has
    then been called for every block that finished before.
    """
    out: dict[int, Block] = {}

    def done(i: int, block: Block) -> None:
        out[i] = block
        if on_done is not None:
            on_done(block)

    if config.backend == "ray":
        _run_ray(tasks, config, done)
    elif config.workers == 1 or len(tasks) <= 1:
        for t in tasks:
            done(t.index, run_task(t))
    else:
        _run_pool(tasks, config, done)
    return [out[t.index] for t in tasks]


def _run_pool(tasks: list[Task], config: TournamentConfig, done: Callable[[int, Block], None]) -> None:
    """Run the tasks on a local process pool; a dead worker ends the run (no task is lost silently)."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    pool = ProcessPoolExecutor(min(config.workers, len(tasks)), initializer=_worker_init,
                               mp_context=multiprocessing.get_context(method))
    ok = False
    try:
        futures = {pool.submit(run_task, t): t.index for t in tasks}
        for fut in as_completed(futures):
            try:
                block = fut.result()
            except BrokenProcessPool:
                raise WorkerDied("a worker process died (killed, or out of memory)") from None
            done(futures[fut], block)
        ok = True
    finally:
        _stop_pool(pool, wait=ok)


def _stop_pool(pool: ProcessPoolExecutor, wait: bool) -> None:
    """Shut the pool down; unless ``wait``, terminate its workers instead of letting them finish."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # no public handle on them
    pool.shutdown(wait=wait, cancel_futures=True)
    if not wait:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)


def _run_ray(tasks: list[Task], config: TournamentConfig, done: Callable[[int, Block], None]) -> None:
    """Run the tasks as Ray tasks (a local instance on 127.0.0.1 unless ``ray_address`` is given)."""
    try:
        import ray  # the [ray] extra
    except ImportError as exc:
        raise ValueError("--backend ray needs Ray: pip install 'escoba-env[ray]'") from exc

    # python: agents from the driver's folder travel with the job (Ray's runtime env, py_modules)
    extra = outside_runtime_env(config.entrants)
    started = False
    if not ray.is_initialized():
        if config.ray_address:
            raycluster.join(ray, config.ray_address, **extra)
        else:
            with raycluster.loopback_only():
                ray.init(**local_ray_options(config.workers), **extra)
        started = True
    pending = []
    try:
        # no retries: a task whose worker died is not silently re-run elsewhere, the run stops
        remote = ray.remote(num_cpus=1, max_retries=0)(_indexed)
        pending = [remote.remote(t) for t in tasks]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    i, block = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # re-raise the task's own error, not Ray's
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, Exception):
                        raise cause from None
                    raise
                except ray.exceptions.RayError as exc:
                    raise WorkerDied(f"a Ray worker died ({type(exc).__name__})") from None
                done(i, block)
    finally:
        if not started:  # a cluster we joined keeps running: take our tasks off it
            for ref in pending:
                ray.cancel(ref, force=True)
        else:
            raycluster.leave(ray)


def local_ray_options(workers: int) -> dict:
    """Return the ``ray.init`` options of the local Ray instance: no dashboard, no log lines."""
    return {"num_cpus": workers, "include_dashboard": False, "log_to_driver": False,
            "logging_level": "error", "_node_ip_address": "127.0.0.1"}


def _indexed(task: Task) -> tuple[int, Block]:
    return task.index, run_task(task)


@dataclass
class TournamentRun:
    """A finished tournament: its config, lineups and the blocks of every lineup in deal order."""

    config: TournamentConfig
    lineups: list[tuple[int, ...]]
    blocks: list[list[Block]]
    """Per lineup, its blocks in block order."""
    wall_s: float = 0.0
    """Wall-clock seconds of the play."""
    cpu_s: float = 0.0
    """CPU seconds of the play in this process and its local worker processes (not Ray workers)."""
    cheating: list[str] = field(default_factory=list)
    """Specs of agents that see hidden information (the oracle): references, never fair opponents."""


def prepare_agents(config: TournamentConfig) -> list[str]:
    """Build every entrant in this process (a bad spec or checkpoint fails here, before any play).

    Return the specs of the agents that see hidden information.
    """
    config.check()
    rules = config.rules
    cheating = []
    _AGENTS.clear()  # a checkpoint file may have changed since the last tournament in this process
    for spec in config.entrants:
        if (spec, rules) not in _AGENTS:
            try:
                _AGENTS[(spec, rules)] = build_agent(spec, rules)
            except Exception as exc:
                msg = one_line(exc)
                raise ValueError(msg if spec in msg else f"agent {spec!r}: {msg}") from exc
        if _AGENTS[(spec, rules)].needs_state:
            cheating.append(spec)
    return cheating


def run_tournament(config: TournamentConfig, *, progress: bool = False,
                   on_block: Callable[[Block], None] | None = None,
                   record: bool = False, finished: Sequence[Block] = (),
                   cheating: list[str] | None = None) -> TournamentRun:
    """Return the played tournament (``progress``: a tqdm bar on stderr; ``on_block``: callback).

    ``finished``: blocks of an earlier, interrupted run of the same config (a journal): only the
    other blocks are played. ``cheating``: what ``prepare_agents`` returned, if already called.
    """
    if cheating is None:
        cheating = prepare_agents(config)
    rules = config.rules
    ls = lineups(config)
    have = {(b.lineup, b.block): b for b in finished}
    tasks = [t for t in make_tasks(config, record) if (t.lineup, t.block) not in have]
    t0, c0 = time.perf_counter(), _cpu_time()
    bar = None
    if progress:
        from tqdm import tqdm  # the [agents] extra: only for a progress bar

        tqdm.monitor_interval = 0  # no monitor thread: worker processes are forked after this
        reps = rules.num_sides if config.duplicate else 1
        total = config.deals * reps * len(ls)
        bar = tqdm(total=total, initial=sum(len(b.rounds) for b in have.values()),
                   unit="game" if config.games else "round", file=sys.stderr, dynamic_ncols=True,
                   smoothing=0.1)
    rounds_done = 0

    def on_done(block: Block) -> None:
        nonlocal rounds_done
        rounds_done += int(block.rounds.sum())
        if bar is not None:
            bar.update(len(block.rounds))
            if config.games:
                bar.set_postfix(rounds=rounds_done, refresh=False)
        if on_block is not None:
            on_block(block)

    try:
        blocks = list(have.values()) + run_tasks(tasks, config, on_done)
    finally:
        if bar is not None:
            bar.close()
    per_lineup: list[list[Block]] = [[] for _ in ls]
    for b in blocks:
        per_lineup[b.lineup].append(b)
    for lst in per_lineup:
        lst.sort(key=lambda b: b.block)
    return TournamentRun(config, ls, per_lineup, time.perf_counter() - t0, _cpu_time() - c0, cheating)


def one_line(exc: BaseException) -> str:
    """Return an exception's message as one line (a listing after the first line is condensed)."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    if not lines:
        return type(exc).__name__
    rest = []
    for x in lines[1:]:
        m = _LISTING.match(x)  # the registry's list of agents: keep "name (params)", drop the help
        rest.append(m.group(1) if m else " ".join(x.split()))
    text = " ".join(lines[0].split()) + (" " + "; ".join(rest) if rest else "")
    return text if len(text) <= 400 else text[:397] + "..."


_LISTING = re.compile(r"^(\w+ \([^)]*\)): ")


def _cpu_time() -> float:
    """Return the CPU seconds of this process and its finished child processes."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def with_overrides(config: TournamentConfig, **kw) -> TournamentConfig:
    """Return a copy of ``config`` with some fields replaced."""
    return replace(config, **kw)
