"""Agent decision speed: seconds per move of each agent, one decision at a time, and batched.

Positions come from real rounds (expert against expert, at the rules given: ``--players 3``,
``--players 4 --partnerships``, ...) sampled all along the round.
"One core": the process is pinned to one CPU where the OS allows it, and CPU time of this process
is reported (the figure to trust when something else shares the machine) beside wall time.

    python benchmarks/bench_agents.py                 # default agents, 60 positions
    python benchmarks/bench_agents.py --agents search:sims=1600 --positions 100
    python benchmarks/bench_agents.py --players 3 --agents strong-3p neural-3p-move --positions 100
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

# The checkout this script is in, before an installed copy: two worktrees compare two versions.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from agents.search.pimc import SearchAgent  # noqa: E402
from agents.spec.registry import make_agent  # noqa: E402
from escoba_env import EscobaEngine, Rules  # noqa: E402
from escoba_env.executors.observation import action_masks, encode  # noqa: E402
from escoba_env.faces.cli import (  # noqa: E402
    OneLineParser,
    add_rules_arguments,
    guarded_main,
    positive_int,
    rules_from_args,
)


def positions(rules: Rules, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Return ``count`` (observation, mask) pairs of the seat to act, from expert-vs-expert rounds."""
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
    rng = np.random.default_rng(seed)
    o, m = np.concatenate(obs), np.concatenate(masks)
    pick = rng.choice(len(o), size=min(count, len(o)), replace=False)
    return o[pick], m[pick]


def main(argv: list[str] | None = None) -> int:
    """Print per-move times of each agent; return the exit status."""
    ap = OneLineParser(prog="bench_agents.py", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", nargs="*", default=["greedy", "expert", "search:sims=100",
                                                     f"search:sims={SearchAgent.DEFAULT_SIMS}",
                                                     "search:sims=1600"])
    ap.add_argument("--positions", type=positive_int, default=60)
    ap.add_argument("--batch", type=positive_int, default=256, help="batch size of the batched measurement")
    add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rules = rules_from_args(args)
    obs, masks = positions(rules, args.positions)
    print(f"{platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"{len(obs)} positions, one core")
    print(f"{'agent':<22} {'mean ms/move':>12} {'median':>8} {'p95':>8} {'max':>8}   batched ({args.batch}): "
          "ms/move")
    for spec in args.agents:
        agent = make_agent(spec, rules, seed=0)
        agent.act_batch(obs[:1], masks[:1])  # warm-up (tables, caches)
        cpu = []
        for i in range(len(obs)):
            c0 = time.process_time()
            agent.act_batch(obs[i:i + 1], masks[i:i + 1])
            cpu.append(time.process_time() - c0)
        cpu = np.array(cpu) * 1e3
        reps = np.resize(np.arange(len(obs)), args.batch)
        c0 = time.process_time()
        agent.act_batch(obs[reps], masks[reps])
        batched = (time.process_time() - c0) * 1e3 / args.batch
        print(f"{spec:<22} {cpu.mean():12.2f} {np.median(cpu):8.2f} {np.percentile(cpu, 95):8.2f} "
              f"{cpu.max():8.2f}   {batched:8.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_agents.py", main))
