"""Engine throughput as a ratio to a C random playout of the same game, each step path in one run.

Uniformly random legal play, one agent action = one step, ``autoreset=True``. Each measurement runs
in a fresh process pinned where this one is (``taskset -c 1 python benchmarks/bench_engine.py``):

- ``C``: ``benchmarks/playout.c`` (standard rules, 2 players), compiled here with ``cc -O2``: the
  reference limit, what one core does with the game written plainly in C;
- ``numpy`` and ``compiled``: this checkout's engine with ``ESCOBA_ENGINE=numpy`` / ``compiled``;
- ``baseline``: with ``--baseline DIR``, the NumPy engine of another checkout (e.g. ``git worktree
  add /tmp/old main``), to compare old and new in the same run.

The paths take turns, ``--repeats`` times; the table gives medians of steps per CPU-second (the
figure to trust on a shared machine) and of wall-clock steps/s, and each path's ratio to the C
playout's steps per CPU-second. The C playout plays the standard rules only; with other rules the
ratio is still to it.

    taskset -c 1 python benchmarks/bench_engine.py --batches 1 4096 --repeats 5
    taskset -c 1 python benchmarks/bench_engine.py --baseline /tmp/old --batches 1 4096
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PATHS = ("numpy", "compiled", "baseline")
# This checkout's escoba_env before an installed copy; a worker imports the one its PYTHONPATH names.
if sys.argv[1:2] != ["--worker"]:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from escoba_env import EscobaEngine, Rules  # noqa: E402

try:  # this layout; an older checkout measured with --baseline has the flat one
    from escoba_env.executors.engine import sample_actions  # noqa: E402
    from escoba_env.faces import cli  # noqa: E402
except ImportError:
    from escoba_env.engine import sample_actions  # noqa: E402

    from escoba_env import cli  # noqa: E402


def measure(batch: int, steps: int, rules: dict, seed: int = 0) -> dict[str, float]:
    """Return steps/s, rounds/s and steps per CPU-second of random play (this process's engine).

    The engine is that of whatever checkout is first on the path (the worker's ``PYTHONPATH``).
    """
    eng = EscobaEngine(batch, Rules.from_dict(rules), autoreset=True)  # a finished game restarts in its slot
    eng.reset(seed)
    rng = np.random.default_rng(seed)
    for _ in range(min(steps, 50)):  # warm-up (and the compiled step's first call)
        eng.step(sample_actions(eng.legal, rng.random(batch)))
    uniforms = rng.random((steps, batch))
    acted = rounds = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(steps):
        info = eng.step(sample_actions(eng.legal, uniforms[i]))
        acted += int((info.actor >= 0).sum())
        rounds += int(info.round_over.sum())
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"steps_s": acted / dt, "rounds_s": rounds / dt, "steps_cpu": acted / cpu}


def build_playout(work: str) -> str:
    """Compile ``playout.c`` with ``cc -O2`` into ``work``; return the program's path."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SystemExit("bench_engine.py: no C compiler (cc) found; --no-reference skips the C playout")
    exe = os.path.join(work, "playout")
    subprocess.run([cc, "-O2", "-o", exe, os.path.join(HERE, "playout.c")], check=True)
    return exe


def run_playout(exe: str, steps: int, seed: int) -> dict[str, float]:
    """Return the C playout's steps/s and steps per CPU-second over ``steps`` steps."""
    out = subprocess.run([exe, str(steps), str(seed + 1)], check=True, capture_output=True, text=True).stdout
    n, cpu, wall, _, rounds = out.split()
    return {"steps_s": int(n) / float(wall), "rounds_s": int(rounds) / float(wall),
            "steps_cpu": int(n) / float(cpu)}


def run_worker(path: str, batch: int, steps: int, rules, seed: int, baseline: str | None) -> dict[str, float]:
    """Return ``measure`` of one path, run in a fresh Python process."""
    env = dict(os.environ)
    code_root = baseline if path == "baseline" else ROOT
    env["PYTHONPATH"] = code_root + os.pathsep + env.get("PYTHONPATH", "")
    env["ESCOBA_ENGINE"] = "numpy" if path == "baseline" else path
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(batch), str(steps), str(seed),
           json.dumps(rules.to_dict())]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=code_root).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    """Parse arguments, take turns measuring every path, print the medians and ratios."""
    ap = cli.OneLineParser(prog="bench_engine.py", description=__doc__)
    ap.add_argument("--batches", type=cli.positive_int, nargs="+", default=[1, 4096])
    ap.add_argument("--steps", type=cli.non_negative_int, default=0,
                    help="batched steps per run (default: scaled)")
    ap.add_argument("--repeats", type=cli.positive_int, default=3)
    ap.add_argument("--baseline", metavar="DIR",
                    help="another checkout whose NumPy engine is measured too")
    ap.add_argument("--no-reference", action="store_true", help="skip the C playout")
    cli.add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args()
    if args.baseline and not os.path.isdir(os.path.join(args.baseline, "escoba_env")):
        ap.error(f"--baseline {args.baseline!r} is not a checkout (no escoba_env folder in it)")
    numba = importlib.util.find_spec("numba") is not None  # the compiled path needs it (the [fast] extra)
    paths = ["numpy"] + (["compiled"] if numba else []) + (
        ["baseline"] if args.baseline else [])
    _report(args, cli.rules_from_args(args), paths)


def _report(args, rules, paths: list[str]) -> None:
    """Measure every path at every batch size, taking turns; print the table of medians."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    changed = {k: v for k, v in rules.to_dict().items() if v != getattr(type(rules)(), k)}
    print(f"escoba engine, random play, rules {changed or 'standard'}; "
          f"numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}, cpus {cpus}, "
          f"load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "")
    results: dict[tuple, list[dict]] = {}
    with tempfile.TemporaryDirectory() as work:
        exe = None if args.no_reference else build_playout(work)
        for r in range(args.repeats):
            if exe:
                results.setdefault(("C", 0), []).append(run_playout(exe, 20_000_000, r))
            for b in args.batches:
                steps = args.steps or max(200, min(20_000, 8_000_000 // b))
                for path in paths:
                    results.setdefault((path, b), []).append(
                        run_worker(path, b, steps, rules, r, args.baseline))
    ref = np.median([x["steps_cpu"] for x in results[("C", 0)]]) if exe else None
    print(f"{'path':<10} {'batch':>6} {'steps/s':>13} {'steps/CPU-s':>13} {'ratio to C':>11}   "
          f"(medians of {args.repeats})")
    for (path, b), runs in sorted(results.items(), key=lambda kv: (kv[0][1], PATHS.index(kv[0][0])
                                                                   if kv[0][0] in PATHS else -1)):
        sps = np.median([x["steps_s"] for x in runs])
        cps = np.median([x["steps_cpu"] for x in runs])
        ratio = f"{cps / ref:>11.3f}" if ref else f"{'-':>11}"
        print(f"{path:<10} {b if path != 'C' else '-':>6} {sps:>13,.0f} {cps:>13,.0f} {ratio}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":  # one measurement, in this process
        batch, steps, seed = (int(x) for x in sys.argv[2:5])
        print(json.dumps(measure(batch, steps, json.loads(sys.argv[5]), seed)))
    else:
        raise SystemExit(cli.guarded_main("bench_engine.py", main))
