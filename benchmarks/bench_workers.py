"""Tournament throughput at 1 and more worker processes: games per second of ``escoba-evaluate --workers N``.

Runs the same tournament (``--agents``, ``--rounds`` deals per lineup in both seat orders, blocks of
``--block-deals``) with each worker count in turn, ``--repeats`` times, and prints the median wall
seconds, games per second and the speed-up over one worker, with the CPU seconds of the run's
processes. The results files do not depend on the worker count (the tournament's own guarantee).

    python benchmarks/bench_workers.py --agents search expert --rounds 200 --workers 1 2 --repeats 2
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import numpy as np  # noqa: E402

from escoba_env.faces.cli import OneLineParser, guarded_main, positive_int  # noqa: E402


def run(agents: list[str], rounds: int, workers: int, block: int, work: str) -> tuple[float, float]:
    """Return (wall seconds, CPU seconds of the run's processes) of one tournament."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "agents.tournament", "--agents", *agents, "--rounds", str(rounds),
           "--workers", str(workers), "--block-deals", str(block), "--no-progress", "--no-plot",
           "--overwrite", "--out", os.path.join(work, f"w{workers}")]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    """Print the table of games per second by worker count."""
    ap = OneLineParser(prog="bench_workers.py", description=__doc__.splitlines()[0])
    ap.add_argument("--agents", nargs="+", default=["search", "expert"])
    ap.add_argument("--rounds", type=positive_int, default=200)
    ap.add_argument("--block-deals", type=positive_int, default=50)
    ap.add_argument("--workers", type=positive_int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=positive_int, default=2)
    args = ap.parse_args(argv)
    lineups = len(args.agents) * (len(args.agents) - 1) // 2
    games = 2 * args.rounds * lineups
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"agents {' '.join(args.agents)}: {games} games ({args.rounds} deals x 2 seat orders x {lineups} "
          f"lineups), blocks of {args.block_deals} deals, {os.cpu_count()} CPUs, load average {load:.1f}")
    runs: dict[int, list[tuple[float, float]]] = {w: [] for w in args.workers}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.repeats):
            for w in args.workers:
                runs[w].append(run(args.agents, args.rounds, w, args.block_deals, work))
    base = None
    print(f"{'workers':>7} {'wall s':>8} {'games/s':>9} {'speed-up':>9} {'CPU s':>8}"
          f"   (medians of {args.repeats})")
    for w in args.workers:
        wall = float(np.median([r[0] for r in runs[w]]))
        cpu = float(np.median([r[1] for r in runs[w]]))
        base = base or games / wall
        print(f"{w:>7} {wall:>8.1f} {games / wall:>9.2f} {games / wall / base:>8.2f}x {cpu:>8.1f}")


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_workers.py", main))
