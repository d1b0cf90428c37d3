"""Engine throughput: uniformly random legal play, one agent action = one step.

Prints steps/s and rounds/s (wall clock) and steps per CPU-second at several batch sizes (best of
``--repeats`` timed runs, after a warm-up). Run on one core of an otherwise idle machine:
``taskset -c 0 python benchmarks/bench_engine.py``; the CPU-time column is the figure to trust
when something else shares the machine.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from escoba_env.faces.cli import (
    OneLineParser,
    add_rules_arguments,
    guarded_main,
    non_negative_int,
    positive_int,
    rules_from_args,
)


def run(batch: int, rules: Rules, steps: int, seed: int = 0) -> tuple[float, float, float]:
    """Return (steps/s, rounds/s, steps per CPU-second) of random play over ``steps`` steps."""
    eng = EscobaEngine(batch, rules, autoreset=True)  # a finished game restarts in its slot
    eng.reset(seed)
    rng = np.random.default_rng(seed)
    uniforms = rng.random((steps, batch))
    acted = rounds = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(steps):
        info = eng.step(sample_actions(eng.legal, uniforms[i]))
        acted += int((info.actor >= 0).sum())
        rounds += int(info.round_over.sum())
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return acted / dt, rounds / dt, acted / cpu


def main() -> None:
    """Parse arguments, run the benchmark and print a table."""
    ap = OneLineParser(prog="bench_engine.py", description=__doc__)
    ap.add_argument("--batches", type=positive_int, nargs="+", default=[1, 64, 1024, 4096, 16384])
    ap.add_argument("--steps", type=non_negative_int, default=0,
                    help="batched steps per run (default: scaled)")
    ap.add_argument("--repeats", type=positive_int, default=3)
    add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args()
    rules = rules_from_args(args)
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else "?"
    print(f"escoba engine, random play, {args.players} players"
          f"{' (partnerships)' if args.partnerships else ''}"
          f"{f', jokers={args.jokers}' if args.jokers else ''}{', mesa_deal' if args.mesa_deal else ''}"
          f"; numpy {np.__version__}, "
          f"python {platform.python_version()}, cpus {sorted(cpus) if cpus != '?' else cpus}")
    print(f"{'batch':>7} {'steps/s':>14} {'rounds/s':>12} {'steps/CPU-s':>14}")
    for b in args.batches:
        steps = args.steps or max(200, min(3000, 2_000_000 // b))
        run(b, rules, min(steps, 50))  # warm-up
        best = max((run(b, rules, steps, seed=r) for r in range(args.repeats)), key=lambda x: x[0])
        print(f"{b:>7} {best[0]:>14,.0f} {best[1]:>12,.0f} {best[2]:>14,.0f}")


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_engine.py", main))
