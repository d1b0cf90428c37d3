"""Learner steps per second of the Gymnasium vector env (``make_vec``) against fixed opponents.

Opponents are agent specs of ``evaluate.py``: ``"random"`` is the env's own random opponent, other
specs are built with ``agents.registry.make_agent`` and handed to ``make_vec`` as agents (so that an
old checkout, whose entry points are not installed, runs the same way). Each ``step`` plays one
learner action in every slot (the first legal card) and the opponents' replies on the batched
engine until the learner is to act again; a learner step counts once. Opponents with
``act_streams`` (``random``, the search agents) play all slots at once, each slot from its own
keyed stream.

Each measurement runs in a fresh process; with ``--baseline DIR ...`` (other checkouts, e.g. ``git
archive 1671f82 | tar -x -C /tmp/old``) their code is measured too, all taking turns ``--repeats``
times; the table gives medians.

    taskset -c 1 python benchmarks/bench_gym_vector.py --batches 1 64 1024 --opponents random greedy
    taskset -c 1 python benchmarks/bench_gym_vector.py --batches 64 --opponents search:sims=8 \\
        --baseline /tmp/old --repeats 3
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if sys.argv[1:2] != ["--worker"]:  # this checkout first; a worker runs what its PYTHONPATH names
    sys.path.insert(0, ROOT)

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

import escoba_env  # noqa: E402,F401  (registers the env id)
from escoba_env import Rules  # noqa: E402

try:  # this layout; an older checkout measured with --baseline has the flat one
    from escoba_env.faces import cli  # noqa: E402
except ImportError:
    from escoba_env import cli  # noqa: E402


def bench(num_envs: int, opponents: str, seconds: float, rules: Rules) -> tuple[float, float]:
    """Return (learner steps per wall second, per CPU second) over about ``seconds``."""
    if opponents != "random":
        from agents import make_agent  # the [agents] extra

        opponents = make_agent(opponents, rules)
    env = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=num_envs,
                             vectorization_mode="vector_entry_point", rules=rules,
                             opponents=opponents)
    env.reset(seed=0)
    env.step(np.argmax(env.action_masks(), axis=1))  # warm-up (a compiled step's first call)
    steps = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        env.step(np.argmax(env.action_masks(), axis=1))
        steps += num_envs
    return steps / (time.perf_counter() - wall), steps / (time.process_time() - cpu)


def run_worker(code: str, num_envs: int, opponents: str, seconds: float, rules: Rules) -> tuple[float, float]:
    """Return ``bench`` run in a fresh process on the checkout ``code``."""
    env = dict(os.environ, PYTHONPATH=code + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(num_envs), opponents, str(seconds),
           json.dumps(rules.to_dict())]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=code).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    """Print a table of learner steps per second (medians of the runs)."""
    ap = cli.OneLineParser(prog="bench_gym_vector.py", description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=cli.positive_int, nargs="+", default=[1, 64, 1024])
    ap.add_argument("--opponents", nargs="+", default=["random", "greedy"])
    ap.add_argument("--seconds", type=cli.positive_float, default=3.0)
    ap.add_argument("--repeats", type=cli.positive_int, default=1)
    ap.add_argument("--baseline", metavar="DIR", nargs="+", default=[],
                    help="other checkouts, measured in turn with this one (named by their folder)")
    cli.add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args(argv)
    for d in args.baseline:
        if not os.path.isdir(os.path.join(d, "escoba_env")):
            ap.error(f"--baseline {d!r} is not a checkout (no escoba_env folder in it)")
    rules = cli.rules_from_args(args)
    dirs = [os.path.abspath(d) for d in args.baseline]
    codes = [("this", ROOT)] + [(os.path.basename(d), d) for d in dirs]
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"gymnasium {gymnasium.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
          f"{args.seconds:g} s a run, medians of {args.repeats}{load}")
    print(f"{'opponents':>16} {'batch':>6} {'code':>12} {'steps/s':>12} {'steps/CPU-s':>12}")
    for opp in args.opponents:
        for n in args.batches:
            runs = {name: [] for name, _ in codes}
            for _ in range(args.repeats):
                for name, code in codes:
                    runs[name].append(run_worker(code, n, opp, args.seconds, rules))
            for name, got in runs.items():
                wall, cpu = np.median([g[0] for g in got]), np.median([g[1] for g in got])
                print(f"{opp:>16} {n:>6} {name:>12} {wall:>12,.0f} {cpu:>12,.0f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:  # one measurement, in this process
        n, opp, secs = int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
        print(json.dumps(bench(n, opp, secs, Rules.from_dict(json.loads(sys.argv[5])))))
    else:
        raise SystemExit(cli.guarded_main("bench_gym_vector.py", main))
