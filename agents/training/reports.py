"""What a run reports: duplicate evaluation of the learner and the scalars logged after every update.

``evaluate`` plays a frozen copy of the network (``frozen_agent``) against each of
``eval_opponents`` in duplicate deals; after every update ``log_update`` logs the throughput
(``charts/sps``, ``charts/sps_rollout``, ``charts/ups``), the learning rate, the PPO statistics
(``losses/*``) and the returns of the episodes that ended (``charts/return_vs_<opponent>``), and
``log_eval`` every evaluation as ``eval/vs_<opponent>`` with its 95% interval (``_lo``, ``_hi``),
returning the row the trainer keeps in ``evals`` (stored in the checkpoints).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from escoba_env.rulebook.rules import Rules

from ..nets.neural import NeuralAgent, PolicyValueNet
from ..spec.registry import make_agent
from ..tournament.duplicate import play_duplicate
from .config import Config
from .league import HEURISTICS, OPPONENTS

Log = Callable[[str, float], None]


def frozen_agent(net: PolicyValueNet, rules: Rules, cfg: Config, device: torch.device,
                 deterministic: bool | None = None) -> NeuralAgent:
    """Return a NeuralAgent playing a frozen copy of ``net``."""
    det = cfg.eval_deterministic if deterministic is None else deterministic
    return NeuralAgent(copy.deepcopy(net), rules, seed=cfg.eval_seed, device=device, deterministic=det,
                       name="learner")


def evaluate(me: NeuralAgent, rules: Rules, cfg: Config, deals: int | None = None
             ) -> dict[str, tuple[float, float, float]]:
    """Return {opponent: (mean, lo, hi)} points-per-round difference of ``me`` in duplicate deals."""
    deals = cfg.eval_deals if deals is None else deals
    out = {}
    for name in cfg.eval_opponents:
        if name in HEURISTICS:
            opp = HEURISTICS[name](rules)
        else:  # the frozen fixed_opponent
            opp = make_agent(name, rules=rules, seed=cfg.eval_seed)
        res = play_duplicate([me] + [opp] * (rules.num_sides - 1), rules, deals=deals, seed=cfg.eval_seed)
        out[name] = res.diff
    return out


def log_eval(log: Log, res: dict[str, tuple[float, float, float]], step: int, wall_s: float
             ) -> dict[str, Any]:
    """Log one evaluation's results; return its row for ``evals``."""
    row: dict[str, Any] = {"step": int(step), "wall_s": float(wall_s)}
    for name, (m, lo, hi) in res.items():
        log(f"eval/vs_{name}", m)
        log(f"eval/vs_{name}_lo", lo)
        log(f"eval/vs_{name}_hi", hi)
        row[name] = [float(m), float(lo), float(hi)]
    return row


def log_update(log: Log, stats: dict[str, float], steps: int, dt: float, dt_rollout: float, lr: float,
               finished: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Log the throughput, the losses and the ``finished`` episodes (kinds, returns, lengths) of one
    update; return None."""
    log("charts/sps", steps / dt)
    log("charts/sps_rollout", steps / max(dt_rollout, 1e-9))
    log("charts/ups", 1.0 / dt)
    log("charts/learning_rate", lr)
    log("charts/transitions", stats["transitions"])
    for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance",
              "distill_loss"):
        if k in stats:
            log(f"losses/{k}", stats[k])
    if not finished:
        return
    kinds, rets, lens = (np.concatenate([f[i] for f in finished]) for i in range(3))
    log("charts/episodes", len(kinds))
    log("charts/episode_length", float(lens.mean()))
    for i, name in enumerate(OPPONENTS):
        sel = kinds == i
        if sel.any() and name != "self":
            log(f"charts/return_vs_{name}", float(rets[sel].mean()))
