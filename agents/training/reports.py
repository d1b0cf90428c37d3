"""What a run reports: duplicate evaluation of the learner and the scalars logged after every update.

``ReportsMixin`` is the reporting side of ``Trainer`` (which provides the network, the config, the
counters and the ``MetricsLogger``): ``evaluate()`` plays the current network against each of
``eval_opponents`` in duplicate deals; after every update the throughput (``charts/sps``,
``charts/sps_rollout``, ``charts/ups``), the learning rate, the PPO statistics (``losses/*``) and the
returns of the episodes that ended (``charts/return_vs_<opponent>``) are logged, and every
evaluation as ``eval/vs_<opponent>`` with its 95% interval (``_lo``, ``_hi``), also kept in
``evals`` (stored in the checkpoints).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from ..evaluation import play_duplicate
from ..neural import NeuralAgent
from .league import HEURISTICS, OPPONENTS


class ReportsMixin:
    """Evaluation and logging of ``Trainer`` (see the module docstring)."""

    evals: list[dict[str, Any]]
    _finished: list[tuple[np.ndarray, np.ndarray, np.ndarray]]

    def agent(self, deterministic: bool | None = None) -> NeuralAgent:
        """Return a NeuralAgent playing a frozen copy of the current network."""
        det = self.cfg.eval_deterministic if deterministic is None else deterministic
        return NeuralAgent(copy.deepcopy(self.net), self.rules, seed=self.cfg.eval_seed, device=self.device,
                           deterministic=det, name="learner")

    def evaluate(self, deals: int | None = None) -> dict[str, tuple[float, float, float]]:
        """Return {opponent: (mean, lo, hi)} points-per-round difference in duplicate deals."""
        deals = self.cfg.eval_deals if deals is None else deals
        me = self.agent()
        out = {}
        for name in self.cfg.eval_opponents:
            opp = HEURISTICS[name](self.rules)
            res = play_duplicate([me] + [opp] * (self.rules.num_sides - 1), self.rules, deals=deals,
                                 seed=self.cfg.eval_seed)
            out[name] = res.diff
        return out

    def _log(self, tag: str, value: float) -> None:
        """Record one scalar at the current step (nothing outside ``run``); return None."""
        if self.logger is not None:
            self.logger.scalar(tag, value, self.global_step, self.wall_s)

    def _run_eval(self) -> dict[str, tuple[float, float, float]]:
        """Evaluate now, log the results and keep them in ``evals``; return them."""
        t0 = time.perf_counter()
        res = self.evaluate()
        self.last_eval_s = time.perf_counter() - t0
        row: dict[str, Any] = {"step": int(self.global_step), "wall_s": float(self.wall_s)}
        for name, (m, lo, hi) in res.items():
            self._log(f"eval/vs_{name}", m)
            self._log(f"eval/vs_{name}_lo", lo)
            self._log(f"eval/vs_{name}_hi", hi)
            row[name] = [float(m), float(lo), float(hi)]
        self.evals.append(row)
        return res

    def _log_update(self, stats: dict[str, float], dt: float, dt_rollout: float) -> None:
        """Log the throughput, the losses and the finished episodes of one update; return None."""
        steps = self.n * self.cfg.num_steps
        self._log("charts/sps", steps / dt)
        self._log("charts/sps_rollout", steps / max(dt_rollout, 1e-9))
        self._log("charts/ups", 1.0 / dt)
        self._log("charts/learning_rate", self.opt.param_groups[0]["lr"])
        self._log("charts/transitions", stats["transitions"])
        for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance",
                  "distill_loss"):
            if k in stats:
                self._log(f"losses/{k}", stats[k])
        if not self._finished:
            return
        kinds, rets, lens = (np.concatenate([f[i] for f in self._finished]) for i in range(3))
        self._finished = []
        self._log("charts/episodes", len(kinds))
        self._log("charts/episode_length", float(lens.mean()))
        for i, name in enumerate(OPPONENTS):
            sel = kinds == i
            if sel.any() and name != "self":
                self._log(f"charts/return_vs_{name}", float(rets[sel].mean()))
