"""Learner steps per second of the Gymnasium vector env (``make_vec``) against fixed opponents.

Opponents are agent specs of ``evaluate.py``, given to ``make_vec`` as spec strings (as a user
does: ``"random"`` is the env's own keyed random opponent, other names resolve through the
``escoba_env.opponents`` entry points). Each ``step`` plays one learner action in every slot (the
first legal card) and the opponents' replies on the batched engine until the learner is to act
again; a learner step counts once. A stochastic agent such as ``search`` plays one slot at a time
(each slot's own generator, so that every slot is the single env's game of its seed).

    taskset -c 1 python benchmarks/bench_gym_vector.py --batches 1 64 1024 --opponents random greedy
    python benchmarks/bench_gym_vector.py --batches 64 --opponents random greedy search:sims=8 --seconds 5
"""

from __future__ import annotations

import os
import sys
import time

import gymnasium
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import escoba_env  # noqa: E402,F401
from escoba_env.faces.cli import (  # noqa: E402
    OneLineParser,
    add_rules_arguments,
    guarded_main,
    positive_float,
    positive_int,
    rules_from_args,
)
from escoba_env.rulebook.rules import Rules  # noqa: E402


def bench(num_envs: int, opponents: str, seconds: float, rules: Rules) -> tuple[float, float]:
    """Return (learner steps per wall second, per CPU second) over about ``seconds``."""
    env = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=num_envs,
                             vectorization_mode="vector_entry_point", rules=rules,
                             opponents=opponents)
    env.reset(seed=0)
    steps = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        env.step(np.argmax(env.action_masks(), axis=1))
        steps += num_envs
    return steps / (time.perf_counter() - wall), steps / (time.process_time() - cpu)


def main(argv: list[str] | None = None) -> None:
    """Print a table of learner steps per second."""
    ap = OneLineParser(prog="bench_gym_vector.py", description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=positive_int, nargs="+", default=[1, 64, 1024])
    ap.add_argument("--opponents", nargs="+", default=["random", "greedy"])
    ap.add_argument("--seconds", type=positive_float, default=3.0)
    add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args(argv)
    rules = rules_from_args(args)
    print(f"gymnasium {gymnasium.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    print(f"{'opponents':>10} {'batch':>6} {'steps/s':>12} {'steps/CPU-s':>12}")
    for opp in args.opponents:
        for n in args.batches:
            wall, cpu = bench(n, opp, args.seconds, rules)
            print(f"{opp:>10} {n:>6} {wall:>12,.0f} {cpu:>12,.0f}")


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_gym_vector.py", main))
