"""Tournaments: duplicate deals, paired statistics, ratings, replays, parallel backends.

The one evaluator of the project: evaluate.py, the trainer's periodic evaluation
(``agents.tournament.duplicate.play_duplicate``), the benchmarks and scripts all play through ``play`` and
take their intervals from ``stats``.

- ``runner``: the config, lineups, tasks (blocks of deals) and the local / Ray backends;
- ``play``: one block of one lineup on the batched engine (each agent called once per step);
- ``analysis``: per-pair statistics, per-agent totals and OpenSkill ratings;
- ``stats``: confidence intervals (mean, Wilson);
- ``report``: the terminal table, JSON / CSV files and the PNG plot;
- ``replay``: replays as JSON lines and their checker;
- ``cli``: the command line of evaluate.py.
"""

from __future__ import annotations

from .replay import ReplayError, check_replay, check_replays
from .runner import TournamentConfig, TournamentRun, lineups, run_tournament
from .stats import mean_ci, wilson_interval

__all__ = [
    "ReplayError",
    "TournamentConfig",
    "TournamentRun",
    "check_replay",
    "check_replays",
    "lineups",
    "mean_ci",
    "run_tournament",
    "wilson_interval",
]
