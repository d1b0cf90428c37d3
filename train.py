"""Train an Escoba agent by PPO self-play: ``python train.py --help`` lists every option.

Examples::

    python train.py --run-name demo --total-steps 2000000          # 2-player default rules
    python train.py --players 4 --partnerships --run-name team     # rules pass through to the env
    python train.py --run-name fast --workers 4                    # 4 local rollout worker processes
    python train.py --run-name big --backend ray --ray-address auto --workers 32   # Ray actors
    python train.py --resume runs/demo/checkpoints/latest.pt --total-steps 4000000
    tensorboard --logdir runs

The library code is ``agents.training`` (Config, Trainer, train); this file only calls its CLI.
"""

from __future__ import annotations

import sys

from escoba_arena.commands import train as main

if __name__ == "__main__":
    sys.exit(main())
