"""Train an Escoba agent by PPO self-play: ``python train.py --help`` lists every option.

Examples::

    python train.py --run-name demo --total-steps 2000000          # 2-player default rules
    python train.py --num-players 4 --partnerships --run-name team  # rules pass through to the env
    python train.py --resume runs/demo/checkpoints/latest.pt --total-steps 4000000
    tensorboard --logdir runs

The library code is ``agents.ppo`` (Config, Trainer, train); this file only parses arguments.
"""

from __future__ import annotations

import sys

from agents.ppo import config_from_args, train


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, train, print the summary; return the exit status."""
    cfg, given = config_from_args(argv)
    summary = train(cfg, overrides=given if cfg.resume is not None else None)
    print(f"trained to step {summary['global_step']:,} ({summary['updates']} updates, "
          f"{summary['wall_s']:.0f} s); checkpoint: {summary['checkpoint']}")
    for name, (m, lo, hi) in summary["eval"].items():
        print(f"  vs {name}: {m:+.3f} points/round [95% CI {lo:+.3f}, {hi:+.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
