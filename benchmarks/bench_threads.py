"""What releasing the GIL buys: engine steps per second of 1 and 2 Python threads, each with its own engine.

The compiled step (``escoba_env.engine_kernels``, Numba ``nogil=True``) releases the GIL while it
loops over the games, so threads that step their own engines can run on several cores; the NumPy
step holds it between NumPy calls. Each thread plays random legal actions on its own engine of
``--batch`` games for ``--seconds``; the table gives the total steps per second (wall clock, median
of ``--repeats``) and the speed-up of 2 threads over 1, for each step path.

    python benchmarks/bench_threads.py --batch 4096 --threads 1 2 --repeats 3
"""

from __future__ import annotations

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import numpy as np  # noqa: E402

from escoba_env import EscobaEngine, Rules  # noqa: E402
from escoba_env.executors import engine_compiled  # noqa: E402
from escoba_env.executors.engine import sample_actions  # noqa: E402
from escoba_env.faces.cli import OneLineParser, guarded_main, positive_float, positive_int  # noqa: E402


def play(engine: EscobaEngine, seconds: float, out: list[int], start: threading.Barrier) -> None:
    """Step ``engine`` with random legal actions for ``seconds``; append the steps taken to ``out``."""
    rng = np.random.default_rng(len(out))
    uniforms = rng.random((64, engine.num_games))
    start.wait()
    t0, steps, i = time.perf_counter(), 0, 0
    while time.perf_counter() - t0 < seconds:
        engine.step(sample_actions(engine.legal, uniforms[i % 64]))
        steps += engine.num_games
        i += 1
    out.append(steps)


def measure(threads: int, batch: int, seconds: float, compiled: bool) -> float:
    """Return the total steps per second of ``threads`` threads stepping their own engines."""
    engines = [EscobaEngine(batch, Rules(), autoreset=True, compiled=compiled) for _ in range(threads)]
    for k, e in enumerate(engines):
        e.reset(k)
        e.step(sample_actions(e.legal, np.zeros(batch)))  # warm-up (the compiled step's first call)
    done: list[int] = []
    start = threading.Barrier(threads + 1)
    workers = [threading.Thread(target=play, args=(e, seconds, done, start)) for e in engines]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    return sum(done) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> None:
    """Print steps per second by thread count and step path."""
    ap = OneLineParser(prog="bench_threads.py", description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=positive_int, default=4096)
    ap.add_argument("--threads", type=positive_int, nargs="+", default=[1, 2])
    ap.add_argument("--seconds", type=positive_float, default=3.0)
    ap.add_argument("--repeats", type=positive_int, default=3)
    args = ap.parse_args(argv)
    paths = [False] + ([True] if engine_compiled.available() else [])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"batch {args.batch}, {args.seconds:g} s a run, {os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"{'step':>9} {'threads':>7} {'steps/s':>12} {'speed-up':>9}   (medians of {args.repeats})")
    for compiled in paths:
        runs: dict[int, list[float]] = {t: [] for t in args.threads}
        for _ in range(args.repeats):
            for t in args.threads:
                runs[t].append(measure(t, args.batch, args.seconds, compiled))
        base = float(np.median(runs[args.threads[0]]))
        for t in args.threads:
            med = float(np.median(runs[t]))
            print(f"{'compiled' if compiled else 'numpy':>9} {t:>7} {med:>12,.0f} {med / base:>8.2f}x")


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_threads.py", main))
