"""One rollout worker's league rollout: steps per CPU-second, its top functions, and a digest of its data.

Builds a ``RolloutWorker`` of ``--games`` games with the default league (self-play, snapshots, greedy,
expert) and every snapshot slot filled, plays one warm-up rollout, then ``--rollouts`` measured ones
(32 steps each at the defaults), and prints the rollout steps per CPU-second of this process, a
digest of what the last rollout wrote (actions, log-probs, values, rewards, observations: equal
digests mean identical trajectories, to compare two versions of the code) and, with ``--profile``,
the top functions by own time (cProfile; the profiler slows the rollout, so the throughput figure
is then not comparable); with ``--sections``, the CPU milliseconds per step of each part: the move
features, the learner's step, greedy, expert, the snapshots, the engine, the rest.

    python benchmarks/bench_rollout.py                      # 1,024 games (one of 2 workers' shards)
    python benchmarks/bench_rollout.py --games 2048 --profile
    python benchmarks/bench_rollout.py --sections
"""

from __future__ import annotations

import collections
import cProfile
import hashlib
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from agents.training import Config, make_rules  # noqa: E402
from agents.training.league import EXPERT, GREEDY  # noqa: E402
from agents.training.ppo import new_net  # noqa: E402
from agents.training.rollout import RolloutWorker, initial_state, make_buffers  # noqa: E402
from escoba_env.faces.cli import OneLineParser, guarded_main, positive_int  # noqa: E402


def time_sections(worker: RolloutWorker) -> collections.Counter:
    """Make the worker's parts add their CPU seconds to the returned counter (per part name)."""
    spent: collections.Counter = collections.Counter()

    def timed(obj: object, name: str, part) -> None:
        inner = getattr(obj, name)

        def wrapper(*a, **k):
            t = time.process_time()
            try:
                return inner(*a, **k)
            finally:
                spent[part(a) if callable(part) else part] += time.process_time() - t
        setattr(obj, name, wrapper)

    timed(worker, "_shared_features", "move features")
    timed(worker, "_learner_step", "learner step")
    timed(worker, "_opponent_actions",
          lambda a: {GREEDY: "greedy", EXPERT: "expert"}.get(int(a[0]), "snapshots"))
    timed(worker.env, "step", "engine")
    return spent


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the rollouts and print their throughput and digest; return the exit status."""
    ap = OneLineParser(prog="bench_rollout.py", description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=positive_int, default=1024, help="games of the worker's shard")
    ap.add_argument("--rollouts", type=positive_int, default=3, help="measured rollouts after one warm-up")
    ap.add_argument("--profile", action="store_true", help="print the top functions (cProfile)")
    ap.add_argument("--sections", action="store_true", help="print the CPU ms per step of each part")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)  # the learner's and the snapshots' initial weights
    cfg = Config(num_envs=args.games, tensorboard=False, progress=False)
    rules = make_rules(cfg)
    net = new_net(cfg, rules)
    bufs = make_buffers(cfg, rules, len(net.feature_names) if net.uses_features else 0, args.games)
    worker = RolloutWorker(cfg, rules, 0, 0, args.games, initial_state(cfg, rules, np.random.default_rng(0)),
                           bufs, net=net)
    for slot in range(cfg.max_snapshots):
        worker.set_snapshot(slot, new_net(cfg, rules).state_dict())
    spent = time_sections(worker) if args.sections else None
    worker.rollout(0)
    if spent is not None:
        spent.clear()
    prof = cProfile.Profile() if args.profile else None
    t0 = time.process_time()
    if prof:
        prof.enable()
    for u in range(1, args.rollouts + 1):
        worker.rollout(u)
    if prof:
        prof.disable()
    cpu = time.process_time() - t0
    digest = hashlib.sha256()
    for k in ("act", "logp", "values", "rewards", "obs"):
        digest.update(bufs[k].numpy().tobytes())
    print(f"{args.games:,} games, {args.rollouts} rollouts of {cfg.num_steps} steps: "
          f"{args.rollouts * cfg.num_steps * args.games / cpu:,.0f} rollout steps per CPU-second"
          f"{' (profiled)' if prof else ''} | digest {digest.hexdigest()[:16]} | load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    if spent is not None:
        steps = args.rollouts * cfg.num_steps
        parts = {k: v for k, v in spent.most_common()}
        parts["rest"] = cpu - sum(parts.values())
        print("CPU ms per step: " + ", ".join(f"{k} {1e3 * v / steps:.2f}" for k, v in parts.items())
              + f" (total {1e3 * cpu / steps:.2f})")
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_rollout.py", main))
