"""CPU seconds of a benchmark card (``escoba-bench card``) under this checkout and others, back to back.

Each run plays ``escoba-bench card SPEC --table TABLE --quick`` (the set's first 500 deals; ``--full``
for the whole set) with one worker process, in a fresh process on the checkout (this one, then each
``--baseline DIR``, e.g. ``git archive main | tar -x -C /tmp/old``), and reports the CPU seconds of that
process and its workers, the wall seconds, and whether the card's results (every number but the
timings) equal this checkout's. With ``--repeats N`` the checkouts take turns N times and the table
gives each one's median.

    python benchmarks/bench_card.py expert --table 2p --baseline /tmp/old --repeats 2
    python benchmarks/bench_card.py expert --table 2p --profile 12     # where this checkout's time goes

``--profile N`` plays this checkout's card once more under ``cProfile`` with a CPU clock and prints the
N functions with the most CPU seconds of their own (a compiled kernel is one function; the profiler
slows the Python around it, so the total is above the table's).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run from a checkout

from escoba_env.faces.cli import OneLineParser, guarded_main, positive_int  # noqa: E402

RESULTS = ("deal_set", "headline", "opponents", "rating")
"""The parts of a card that are its numbers (the rest: timings, machine, versions, git state)."""


def run(code: str, spec: str, table: str, full: bool, out: str, profile: int = 0) -> tuple[float, float]:
    """Return (CPU seconds of the run and its workers, wall seconds) of one card on checkout ``code``;
    ``profile``: print that many top functions by own CPU time (``cProfile``)."""
    env = dict(os.environ, PYTHONPATH=code + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = ["card", spec, "--table", table, "--workers", "1", "--no-progress", "--overwrite", "--out", out]
    argv += [] if full else ["--quick"]
    # escoba-bench's entry point: escoba_arena.commands now, agents.commands in older checkouts.
    code_run = ("import sys\ntry:\n    from escoba_arena.commands import bench\nexcept ImportError:\n"
                f"    from agents.commands import bench\nsys.exit(bench({argv!r}))")
    if profile:  # the same call under cProfile, its table on stderr
        code_run = code_run.replace(f"sys.exit(bench({argv!r}))", (
            "import cProfile, pstats, time\n"
            "pr = cProfile.Profile(time.process_time)\n"
            f"pr.runcall(bench, {argv!r})\n"
            f"pstats.Stats(pr, stream=sys.stderr).sort_stats('tottime').print_stats({profile})"))
    cmd = [sys.executable, "-c", code_run]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=code)
    if profile:
        print(done.stderr, end="")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def results(path: str) -> dict:
    """Return the card's numbers (``RESULTS``): what must not depend on the code's speed."""
    with open(path) as f:
        card = json.load(f)
    return {k: card.get(k) for k in RESULTS}


def main(argv: list[str] | None = None) -> None:
    """Print the CPU seconds of each checkout's card and whether the results agree."""
    ap = OneLineParser(prog="bench_card.py", description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--table", default="2p", choices=("2p", "3p", "2v2"))
    ap.add_argument("--full", action="store_true", help="the whole card, not --quick")
    ap.add_argument("--baseline", metavar="DIR", nargs="*", default=[])
    ap.add_argument("--repeats", type=positive_int, default=1, help="turns of every checkout (medians)")
    ap.add_argument("--profile", type=positive_int, default=0, metavar="N",
                    help="then play this checkout's card under cProfile and print its N costliest functions")
    args = ap.parse_args(argv)
    dirs = [os.path.abspath(d) for d in args.baseline]
    codes = [("this", ROOT)] + [(os.path.basename(d), d) for d in dirs]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"escoba-bench card {args.spec} --table {args.table}{'' if args.full else ' --quick'} --workers 1; "
          f"load average {load:.1f}")
    print(f"{'code':>16} {'CPU s':>9} {'wall s':>9} {'CPU vs this':>12} {'same results':>13}")
    with tempfile.TemporaryDirectory() as work:
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in codes}
        res = {}
        for turn in range(args.repeats):
            for name, code in codes:
                out = os.path.join(work, f"{name}.json")
                runs[name].append(run(code, args.spec, args.table, args.full, out))
                res[name] = results(out)
                print(f"  turn {turn + 1}: {name} {runs[name][-1][0]:.1f} CPU s", flush=True)
        med = {name: (statistics.median(c for c, _ in r), statistics.median(w for _, w in r))
               for name, r in runs.items()}
        for name, (cpu, wall) in med.items():
            print(f"{name:>16} {cpu:>9.1f} {wall:>9.1f} {cpu / med['this'][0]:>11.2f}x "
                  f"{str(res[name] == res['this']):>13}")
        if args.profile:
            print(f"\nthis checkout's card under cProfile: the {args.profile} functions with most own CPU s")
            run(ROOT, args.spec, args.table, args.full, os.path.join(work, "profile.json"), args.profile)


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_card.py", main))
