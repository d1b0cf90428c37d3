#!/usr/bin/env python3
"""SB3-contrib MaskablePPO on the batched engine (``escoba_env.faces.sb3.make_vec_env``), then into
evaluate.py.

    python examples/sb3_maskable_ppo.py --steps 20000 --save runs/sb3_escoba.zip
    python evaluate.py --vs sb3:runs/sb3_escoba.zip --agents random greedy --rounds 200

The env is an SB3 ``VecEnv`` of N learner games against fixed opponents (the project's "random" or
any agent spec), stepped together on the batched engine; ``MaskablePPO`` finds the legal actions
through its ``action_masks()``. The Dict observation needs ``"MultiInputPolicy"``.
The saved model file is an agent spec of ``evaluate.py`` (``sb3:PATH``), so it can enter a tournament.
"""

from __future__ import annotations

import argparse

from sb3_contrib import MaskablePPO

from escoba_env.faces.sb3 import make_vec_env


def train(steps: int, save: str, opponents: str = "random", seed: int = 0, n_steps: int = 32,
          num_envs: int = 16) -> MaskablePPO:
    """Train MaskablePPO for ``steps`` learner steps in ``num_envs`` games against ``opponents``; save it."""
    env = make_vec_env(num_envs, opponents=opponents, reward="round_points")
    model = MaskablePPO("MultiInputPolicy", env, n_steps=n_steps, batch_size=64, seed=seed, verbose=0)
    model.learn(total_timesteps=steps)
    model.save(save)
    return model


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and train."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--save", default="sb3_escoba.zip")
    ap.add_argument("--opponents", default="random", help="agent spec of the fixed opponents")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--num-envs", type=int, default=16)
    args = ap.parse_args(argv)
    train(args.steps, args.save, args.opponents, args.seed, num_envs=args.num_envs)
    print(f"saved {args.save}; try: python evaluate.py --vs sb3:{args.save} --agents random greedy")


if __name__ == "__main__":
    main()
