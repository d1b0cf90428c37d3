"""Search agents' CPU milliseconds per decision, one decision at a time, this checkout against others.

Each agent (registry specs at their defaults: ``search``, ``hybrid``, ``strong-2v2`` on the 2v2 table,
``strong-3p`` on the 3-player table) decides ``--positions`` positions of expert-against-expert
rounds, one at a time, in a fresh process per measurement; the checkouts (this one and each
``--baseline DIR``, e.g. ``git archive main | tar -x -C /tmp/old``) take turns ``--repeats`` times.
The table gives the median over the runs of each run's mean CPU ms per decision, and each other
checkout's time divided by this one's (the speed-up).

    python benchmarks/bench_search.py --baseline /tmp/old --repeats 3
    python benchmarks/bench_search.py --agents search:2p hybrid:2p --positions 40 --baseline /tmp/old
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if sys.argv[1:2] != ["--worker"]:  # this checkout first; a worker runs what its PYTHONPATH names
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from escoba_env import EscobaEngine, Rules  # noqa: E402

try:  # this layout; an older checkout measured with --baseline has the flat one
    from escoba_env.executors.observation import action_masks, encode  # noqa: E402
    from escoba_env.faces.cli import OneLineParser, guarded_main, positive_int  # noqa: E402
except ImportError:
    from escoba_env.cli import OneLineParser, guarded_main, positive_int  # noqa: E402
    from escoba_env.observation import action_masks, encode  # noqa: E402

TABLES = {"2p": Rules(), "2v2": Rules(num_players=4, partnerships=True), "3p": Rules(num_players=3)}
DEFAULT = ["search:2p", "hybrid:2p", "strong-2v2:2v2", "strong-3p:3p"]


def positions(rules: Rules, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Return ``count`` (observation, mask) pairs of the seat to act, from expert-vs-expert rounds.

    The same positions as ``bench_agents.positions``, written again on purpose: a worker runs it on an
    older checkout (``--baseline``), whose layout this checkout's ``bench_agents`` imports would miss."""
    from agents import make_agent  # the [agents] extra

    expert = make_agent("expert", rules)
    games = max(1, count // 6)
    e = EscobaEngine(games, rules, single_round=True)
    e.reset(seed=seed)
    obs, masks = [], []
    step = 0
    while not e.done.all():
        live = np.nonzero(~e.done)[0]
        o, m = encode(e, e.to_act[live], live), action_masks(e, e.to_act[live], live)
        if step % 6 == 0:
            obs.append(o)
            masks.append(m)
        a = np.zeros(games, np.int64)
        a[live] = expert.act_batch(o, m)
        e.step(a)
        step += 1
    pick = np.random.default_rng(seed).choice(sum(len(x) for x in obs), size=count, replace=False)
    return np.concatenate(obs)[pick], np.concatenate(masks)[pick]


def measure(spec: str, table: str, count: int) -> float:
    """Return the mean CPU ms per decision of agent ``spec`` over ``count`` positions, one at a time."""
    from agents import make_agent  # the [agents] extra

    rules = TABLES[table]
    obs, masks = positions(rules, count)
    agent = make_agent(spec, rules, seed=0)
    agent.act_batch(obs, masks)  # warm-up, every position in one call (tables, caches, compiled code)
    c0 = time.process_time()
    for i in range(len(obs)):
        agent.act_batch(obs[i:i + 1], masks[i:i + 1])
    return (time.process_time() - c0) * 1e3 / len(obs)


def run_worker(code: str, spec: str, table: str, count: int) -> float:
    """Return ``measure`` run in a fresh process on the checkout ``code``."""
    env = dict(os.environ, PYTHONPATH=code + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", spec, table, str(count)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=code).stdout
    return float(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Print CPU ms per decision of each agent and checkout, and the speed-ups."""
    ap = OneLineParser(prog="bench_search.py", description=__doc__.splitlines()[0])
    ap.add_argument("--agents", nargs="+", default=DEFAULT, metavar="SPEC:TABLE",
                    help=f"agent spec and table ({', '.join(TABLES)}); default: {' '.join(DEFAULT)}")
    ap.add_argument("--positions", type=positive_int, default=30)
    ap.add_argument("--repeats", type=positive_int, default=2)
    ap.add_argument("--baseline", metavar="DIR", nargs="*", default=[])
    args = ap.parse_args(argv)
    for d in args.baseline:
        if not os.path.isdir(os.path.join(d, "escoba_env")):
            ap.error(f"--baseline {d!r} is not a checkout (no escoba_env folder in it)")
    jobs = [a.rpartition(":") for a in args.agents]
    for spec, _, table in jobs:
        if table not in TABLES:
            ap.error(f"--agents takes SPEC:TABLE with a table of {', '.join(TABLES)}, got {spec}:{table}")
    dirs = [os.path.abspath(d) for d in args.baseline]
    codes = [("this", ROOT)] + [(os.path.basename(d), d) for d in dirs]
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"{platform.machine()}, python {platform.python_version()}, {args.positions} positions a run, one "
          f"decision at a time, medians of {args.repeats}{load}")
    print(f"{'agent':<14} {'table':>5} {'code':>16} {'CPU ms/decision':>16} {'speed-up':>9}")
    for spec, _, table in jobs:
        runs: dict[str, list[float]] = {name: [] for name, _ in codes}
        for _ in range(args.repeats):
            for name, code in codes:
                runs[name].append(run_worker(code, spec, table, args.positions))
        ours = float(np.median(runs["this"]))
        for name, got in runs.items():
            med = float(np.median(got))
            print(f"{spec:<14} {table:>5} {name:>16} {med:>16.2f} {med / ours:>8.2f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:  # one measurement, in this process
        print(measure(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    else:
        raise SystemExit(guarded_main("bench_search.py", main))
