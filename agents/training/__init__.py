"""Training of the shipped networks: PPO self-play, and the supervised fit of the move networks.

What belongs here: the code that rebuilds a shipped network, PPO self-play (``train.py``) or the
supervised fit of the move networks to search labels (``solo_fit``, on labels of ``agents.training.distill``).
A training method that was tried and did not ship lives in the repository's ``lab/``, and moves here
when a network trained with it ships. The modules, in the spirit of CleanRL (see docs/training.md):

- ``config``: ``Config``, every setting of a run, and its checks;
- ``league``: who plays each seat (self-play, snapshots, heuristics), the shaping potential, the
  oracle critic's privileged input;
- ``rollout``: ``RolloutWorker``, one shard of the games played with a CPU copy of the policy;
- ``workers``: where the workers run (in process, local processes, Ray actors);
- ``ppo``: one PPO update in one file: the networks, GAE, the rollout batch, the clipped loss, the epochs;
- ``checkpoints``: training checkpoints, resume, ``export_agent``;
- ``metrics``: TensorBoard and ``metrics.csv``;
- ``reports``: the learner's duplicate evaluation and the scalars logged after every update;
- ``trainer``: ``Trainer`` and ``train``, the loop that ties them together;
- ``cli``: the command line of ``train.py``;
- ``solo_fit`` (not PPO): the recipe of the move networks (``neural-solo``, ``neural-2v2-move``,
  ``neural-3p-move``), with its ``python -m`` command line.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "export_agent": "checkpoints", "build_parser": "cli", "config_from_args": "cli", "field_docs": "cli",
    "main": "cli", "Config": "config", "check_config": "config", "config_from_dict": "config",
    "make_rules": "config", "resume_config": "config", "HEURISTICS": "league", "OPPONENTS": "league",
    "PRIVILEGED_PLANES": "league", "SHAPING_WEIGHTS": "league", "potential": "league",
    "privileged": "league", "ValueNet": "ppo", "compute_gae": "ppo", "MetricsLogger": "metrics",
    "Trainer": "trainer", "TrainingInterrupted": "trainer", "train": "trainer", "WorkerError": "workers",
}
"""Each public name -> its module. They load on first use (they need torch), so ``python -m
agents.training`` can name a missing extra in one line."""


def __getattr__(name: str) -> Any:
    """Return the public name ``name`` from its module (imported on first use)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)


__all__ = ["HEURISTICS", "OPPONENTS", "PRIVILEGED_PLANES", "SHAPING_WEIGHTS", "Config", "MetricsLogger",
           "Trainer", "TrainingInterrupted", "ValueNet", "WorkerError", "build_parser", "check_config",
           "compute_gae", "config_from_args", "config_from_dict", "export_agent", "field_docs", "main",
           "make_rules", "potential", "privileged", "resume_config", "train"]
