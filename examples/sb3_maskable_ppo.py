#!/usr/bin/env python3
"""SB3-contrib MaskablePPO on ``gymnasium.make("escoba_env/Escoba-v0")``, then into evaluate.py.

    python examples/sb3_maskable_ppo.py --steps 20000 --save runs/sb3_escoba.zip
    python evaluate.py --vs sb3:runs/sb3_escoba.zip --agents random greedy --rounds 200

The env is the single-agent view (one learner seat against fixed opponents, here the project's
"random" or any agent spec); ``MaskablePPO`` finds the legal actions through ``env.action_masks()``.
The saved model file is an agent spec of ``evaluate.py`` (``sb3:PATH``), so it can enter a tournament.
"""

from __future__ import annotations

import argparse

import gymnasium
from sb3_contrib import MaskablePPO

import escoba_env  # noqa: F401  (registers escoba_env/Escoba-v0)


def train(steps: int, save: str, opponents: str = "random", seed: int = 0, n_steps: int = 256) -> MaskablePPO:
    """Train MaskablePPO for ``steps`` learner steps against ``opponents``; save it to ``save``."""
    env = gymnasium.make("escoba_env/Escoba-v0", opponents=opponents, reward="round_points")
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
    args = ap.parse_args(argv)
    train(args.steps, args.save, args.opponents, args.seed)
    print(f"saved {args.save}; try: python evaluate.py --vs sb3:{args.save} --agents random greedy")


if __name__ == "__main__":
    main()
