"""PPO self-play training for Escoba, in small modules in the spirit of CleanRL (see docs/training.md).

- ``config``: ``Config``, every setting of a run, and its checks;
- ``league``: who plays each seat (self-play, snapshots, heuristics), the shaping potential, the
  oracle critic's privileged input;
- ``rollout``: ``RolloutWorker``, one shard of the games played with a CPU copy of the policy;
- ``workers``: where the workers run (in process, local processes, Ray actors);
- ``learner``: the networks, GAE and the PPO loss and update;
- ``checkpoints``: training checkpoints, resume, ``export_agent``;
- ``metrics``: TensorBoard and ``metrics.csv``;
- ``reports``: the learner's duplicate evaluation and the scalars logged after every update;
- ``trainer``: ``Trainer`` and ``train``, the loop that ties them together;
- ``cli``: the command line of ``train.py``.
"""

from __future__ import annotations

from .checkpoints import export_agent
from .cli import build_parser, config_from_args, field_docs, main
from .config import Config, check_config, config_from_dict, make_rules, resume_config
from .league import HEURISTICS, OPPONENTS, PRIVILEGED_PLANES, SHAPING_WEIGHTS, potential, privileged
from .learner import ValueNet, compute_gae
from .metrics import MetricsLogger
from .trainer import Trainer, TrainingInterrupted, train
from .workers import WorkerError

__all__ = ["HEURISTICS", "OPPONENTS", "PRIVILEGED_PLANES", "SHAPING_WEIGHTS", "Config", "MetricsLogger",
           "Trainer", "TrainingInterrupted", "ValueNet", "WorkerError", "build_parser", "check_config",
           "compute_gae", "config_from_args", "config_from_dict", "export_agent", "field_docs", "main",
           "make_rules", "potential", "privileged", "resume_config", "train"]
