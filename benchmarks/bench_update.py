"""The PPO update alone: CPU and wall seconds per update on one rollout, and a digest of the weights.

Builds the trainer at the ``Config`` defaults (or ``--num-envs``), plays one rollout (one process,
default league), runs one warm-up update, then ``--updates`` timed updates on that same batch, and
prints the CPU seconds of this process and the wall seconds per update (on a GPU the wall time is
the figure: the CPU then mostly launches kernels and waits), and a digest of the final weights
(equal digests: identical updates, to compare two versions of the code). ``--profile`` prints the
top functions of one more update (cProfile).

    python benchmarks/bench_update.py
    python benchmarks/bench_update.py --device cuda --updates 5
"""

from __future__ import annotations

import cProfile
import hashlib
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from agents.training import Config, Trainer  # noqa: E402
from escoba_env.faces.cli import OneLineParser, guarded_main, positive_int  # noqa: E402


def _sync(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA), so that a wall time covers it; return None."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, time the updates and print the figures; return the exit status."""
    ap = OneLineParser(prog="bench_update.py", description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=positive_int, default=Config.num_envs)
    ap.add_argument("--num-steps", type=positive_int, default=Config.num_steps)
    ap.add_argument("--num-minibatches", type=positive_int, default=Config.num_minibatches)
    ap.add_argument("--updates", type=positive_int, default=3, help="timed updates after one warm-up")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="torch device of the learner")
    ap.add_argument("--profile", action="store_true", help="print the top functions of one more update")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_update.py: error: --device cuda: CUDA is not available on this machine", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Config(run_name="bench", runs_dir=tmp, num_envs=args.num_envs, num_steps=args.num_steps,
                     num_minibatches=args.num_minibatches, device=args.device, eval_interval=0,
                     tensorboard=False, progress=False, total_steps=10**12)
        t = Trainer(cfg)
        t.rollout()
        adv = t.advantages()
        t.ppo_update(*adv)
        _sync(t.device)
        cpu, wall = [], []
        for _ in range(args.updates):
            c0, w0 = time.process_time(), time.perf_counter()
            t.ppo_update(*adv)
            _sync(t.device)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        digest = hashlib.sha256()
        for v in t.net.state_dict().values():
            digest.update(v.detach().cpu().numpy().tobytes())
        secs = [", ".join(f"{x:.3f}" for x in xs) for xs in (cpu, wall)]
        print(f"{args.num_envs:,} games x {args.num_steps} steps, device {args.device}, torch "
              f"{torch.__version__}: CPU s per update {secs[0]} | wall s {secs[1]} | digest "
              f"{digest.hexdigest()[:16]} | load average {os.getloadavg()[0]:.1f}", flush=True)
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            t.ppo_update(*adv)
            _sync(t.device)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        t.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_update.py", main))
