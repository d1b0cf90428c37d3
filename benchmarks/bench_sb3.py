"""Learner steps per second through SB3's VecEnv API: escoba_env.faces.sb3 (batched engine) vs DummyVecEnv.

Both sides are stepped the way sb3-contrib's MaskablePPO collects a rollout: read the masks with
``get_action_masks(env)``, play the first legal action of every slot, ``env.step``. The reference is
SB3's ``DummyVecEnv`` of N ``gymnasium.make("escoba_env/Escoba-v0")`` envs, the same opponents and rules.

    taskset -c 1 python benchmarks/bench_sb3.py --num-envs 64 --seconds 5
"""

from __future__ import annotations

import os
import sys
import time

import gymnasium
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import escoba_env  # noqa: E402,F401
from escoba_env.faces.cli import OneLineParser, guarded_main, positive_float, positive_int  # noqa: E402


def bench(env, seconds: float) -> float:
    """Return learner steps per wall second of ``env`` (an SB3 VecEnv) over about ``seconds``."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    env.seed(0)
    env.reset()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(np.argmax(get_action_masks(env), axis=1))
        steps += env.num_envs
    return steps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    """Print both speeds and their ratio."""
    import stable_baselines3
    from stable_baselines3.common.vec_env import DummyVecEnv

    from escoba_env.faces.sb3 import make_vec_env

    ap = OneLineParser(prog="bench_sb3.py", description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=positive_int, default=64)
    ap.add_argument("--opponents", default="random")
    ap.add_argument("--seconds", type=positive_float, default=5.0)
    args = ap.parse_args(argv)
    n = args.num_envs
    batched = bench(make_vec_env(n, opponents=args.opponents), args.seconds)
    dummy = bench(DummyVecEnv([lambda: gymnasium.make("escoba_env/Escoba-v0", opponents=args.opponents)] * n),
                  args.seconds)
    print(f"stable-baselines3 {stable_baselines3.__version__}, numpy {np.__version__}, "
          f"python {sys.version.split()[0]}; {n} games, opponents {args.opponents}")
    print(f"escoba_env.faces.sb3.make_vec_env   {batched:>10,.0f} learner steps/s")
    print(f"DummyVecEnv of gymnasium.make {dummy:>10,.0f} learner steps/s")
    print(f"ratio                         {batched / dummy:>10.1f}x")


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_sb3.py", main))
