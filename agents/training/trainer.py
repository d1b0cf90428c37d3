"""The training loop: rollout workers play, the learner updates, the league grows, logs and checkpoints.

``Trainer(cfg).run()`` repeats: rollout (every worker plays ``num_steps`` steps of its shard of the
games with the current weights), GAE and PPO update on the whole batch, then snapshot, evaluation and
checkpoint when due. The scheme is synchronous: every rollout uses the weights of the last update,
so the data is exactly on-policy and a run is exactly reproducible (same seed, same worker count,
same weights). With ``overlap`` the workers collect batch k+1 with the weights of update k-1 while
the learner updates on batch k: a fixed one-update lag, so a run stays exactly reproducible, and a
checkpoint stores the behaviour weights and league of the in-flight rollout, which a resumed run
replays (``docs/training.md``).

A run stops cleanly, saving ``checkpoints/latest.pt`` of the last completed update, on SIGINT or
SIGTERM (``TrainingInterrupted``) and when a worker dies (``WorkerError``).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from ..nets.neural import build_net, check_compatible, checkpoint_dict, save_checkpoint
from ..tournament.raycluster import check_reachable
from .checkpoints import (
    check_resumable,
    init_weights_from,
    load_training_checkpoint,
    rng_state,
    set_rng_state,
    state_from_checkpoint,
    state_to_checkpoint,
)
from .config import Config, check_config, config_from_dict, make_rules, resume_config
from .distill import load_labels
from .metrics import MetricsLogger
from .overlap import behaviour, overlap_checkpoint, restore_overlap
from .ppo import Learner, RolloutBatch, compute_gae, loss_keys, make_batch, new_critic, new_net, ppo_loss
from .ppo import ppo_update as _ppo_update
from .reports import evaluate, frozen_agent, log_eval, log_update
from .rollout import initial_state, merge_states, per_game_keys
from .workers import InProcess, WorkerError, buffers_for, start_workers


class TrainingInterrupted(RuntimeError):
    """SIGINT or SIGTERM stopped training; the last completed update was saved first."""


class Trainer:
    """PPO self-play with a league over rollout workers. ``run()`` trains; ``evaluate()`` measures.

    It owns its parts: ``ppo`` (a ``ppo.Learner``: networks, optimizer, generator) that
    ``ppo.ppo_update`` updates, the rollout ``workers``, the league pool, the ``MetricsLogger``.
    """

    def __init__(self, cfg: Config, overrides: Sequence[str] | None = None):
        """Build the learner and the games of ``cfg`` (resumed from ``cfg.resume``); start no worker yet."""
        ckpt, src, self._resumed_dir = None, None, None
        if cfg.resume is not None:
            src = cfg.resume
            ckpt = load_training_checkpoint(src)
            stored = config_from_dict(dict(ckpt["config"]))
            self._resumed_dir = os.path.abspath(os.path.join(stored.runs_dir, stored.run_name))
            cfg = resume_config(stored, cfg, overrides)
        check_config(cfg)
        self.cfg = cfg
        self.rules = make_rules(cfg)
        if ckpt is not None:
            check_resumable(ckpt, cfg, src)
            check_compatible(ckpt, self.rules, src)
        torch.set_num_threads(cfg.threads if cfg.threads > 0 else (os.cpu_count() or 1))
        self.device = torch.device(cfg.device)
        self.run_dir = os.path.join(cfg.runs_dir, cfg.run_name)
        self.ckpt_path = os.path.join(self.run_dir, "checkpoints", "latest.pt")

        self.np_rng = np.random.default_rng(cfg.seed)
        self.gen = torch.Generator(device="cpu")
        self.gen.manual_seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.net = new_net(cfg, self.rules).to(self.device)
        if cfg.init_from is not None and ckpt is None:
            init_weights_from(self.net, self.rules, cfg.init_from)
        self.distill: dict[str, Any] | None = None
        if cfg.distill_data is not None:
            arrays, _ = load_labels(cfg.distill_data, self.rules)
            self.distill = {"obs": arrays["obs"], "mask": torch.from_numpy(arrays["mask"].astype(np.int8)),
                            "action": torch.from_numpy(arrays["action"].astype(np.int64))}
        self.critic = new_critic(cfg, self.rules).to(self.device) if cfg.critic == "oracle" else None
        self.params = list(self.net.parameters())
        if self.critic is not None:
            self.params += list(self.critic.parameters())
        # fused: one kernel for all parameters (the unfused loop was ~7% of the update's CPU time)
        self.opt = torch.optim.Adam(self.params, lr=cfg.learning_rate, eps=1e-5, fused=True)
        self.ppo = Learner(cfg, self.net, self.critic, self.opt, self.params, self.gen, self.device,
                           self.distill, cfg.distill_coef)

        self.n, self.p = cfg.num_envs, self.rules.num_players
        self.pool: list[dict[str, torch.Tensor] | None] = [None] * cfg.max_snapshots
        self.pool_next = 0
        self.global_step = 0
        self.update = 0
        self.wall_s = 0.0  # training wall time accumulated over resumes
        self.evals: list[dict[str, Any]] = []
        self.next_eval = 0 if cfg.eval_interval > 0 else None
        self.next_save = cfg.save_interval
        self.next_snapshot = cfg.snapshot_interval
        self._state = initial_state(cfg, self.rules, self.np_rng) if ckpt is None else self._restore(ckpt)
        self._keys = per_game_keys(cfg, self.rules)

        nf = len(self.net.feature_names) if self.net.uses_features else 0
        # overlap: two sets of buffers, the workers fill one while the learner reads the other
        self._bufsets = [buffers_for(cfg, self.rules, nf) for _ in range(2 if cfg.overlap else 1)]
        self._use_set(0)
        # overlap: the weights and league of the next rollout to start (one update behind the learner)
        self._behaviour: tuple[dict, dict | None] | None = None
        self.worker_pool: list[dict[str, torch.Tensor] | None] = list(self.pool)
        if ckpt is not None:
            self._behaviour, self.worker_pool = restore_overlap(ckpt, cfg.overlap, self.critic, self.pool)
        self._inflight = False
        self.last_rollout_s = 0.0  # seconds the last update spent in (or waiting for) its rollout
        self._boot = np.zeros((self.n, self.p), np.float32)
        self._trunc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.workers = None
        self.logger: MetricsLogger | None = None
        self._finished: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._stop: int | None = None

    def _use_set(self, i: int) -> None:
        """Point the learner at rollout buffer set ``i``; return None."""
        self.buf = b = self._bufsets[i]
        self.buf_obs, self.buf_mask, self.buf_priv, self.buf_feat = b["obs"], b["mask"], b["priv"], b["feat"]
        self.buf_act, self.buf_logp = b["act"], b["logp"]
        self.values, self.actor, self.learner = b["values"].numpy(), b["actor"].numpy(), b["learner"].numpy()
        self.rewards, self.dones = b["rewards"].numpy(), b["dones"].numpy()

    # ------------------------------------------------------------------------- league state

    @property
    def controller(self) -> np.ndarray:
        """Who plays each seat of each game (N, P) now (codes: see ``league``)."""
        return self._state["league"]["controller"]

    @property
    def env(self) -> Any:
        """The ``EscobaVectorEnv`` of all the games, with ``workers=1`` (else they live in the workers)."""
        if self.workers is None:
            self._start_workers()
        if not isinstance(self.workers, InProcess):
            raise AttributeError("with workers > 1 the games live in the worker processes; no env here")
        return self.workers.worker.env

    @property
    def kind(self) -> np.ndarray:
        """Index in ``OPPONENTS`` of each game's current opponent (N,)."""
        return self._state["league"]["kind"]

    def _add_snapshot(self) -> None:
        """Copy the learner into the league (replacing the oldest snapshot when full); return None."""
        if self.cfg.max_snapshots < 1:
            return
        sd = {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()}
        slot = self.pool_next
        self.pool[slot] = sd
        self.pool_next = (slot + 1) % self.cfg.max_snapshots
        if not self.cfg.overlap:  # overlapped: the workers get it before the rollout after the next
            self._send_snapshot(slot)

    def _send_snapshot(self, slot: int) -> None:
        """Give league slot ``slot`` of the learner to the workers; return None."""
        self.worker_pool[slot] = self.pool[slot]
        if self.workers is not None:
            self.workers.set_snapshot(slot, self.pool[slot])

    # ------------------------------------------------------------------------------ rollout

    def _start_workers(self) -> None:
        """Start the rollout workers on the current games and league; return None."""
        self.workers = start_workers(self.cfg, self.rules, self._state, self._bufsets, self.net, self.critic)
        self._inflight = False
        for slot, sd in enumerate(self.worker_pool):
            if sd is not None:
                self.workers.set_snapshot(slot, sd)

    def close(self) -> None:
        """Stop the rollout workers (they restart on the next rollout); return None."""
        if self.workers is not None:
            self.workers.close()
            self.workers = None
        self._inflight = False  # an overlapped rollout still running is dropped; a new one replays it

    def rollout(self) -> None:
        """Let every worker play ``num_steps`` steps in its games, filling the buffers; return None.

        Nothing of the trainer changes unless every worker finished (``WorkerError`` otherwise).
        """
        if self.workers is None:
            self._start_workers()
        try:
            res = self.workers.rollout(self.update)
        except WorkerError:
            self.close()
            raise
        self._use_set(0)
        self._apply(res)
        self.global_step += self.n * self.cfg.num_steps

    def _apply(self, res: list[dict[str, Any]]) -> None:
        """Take the workers' results of a rollout: truncations, bootstrap values, episodes, game state."""
        trunc: dict[int, tuple[list, list]] = {}
        for r in res:
            for t, (g, v) in r["trunc"].items():
                trunc.setdefault(t, ([], []))[0].append(g)
                trunc[t][1].append(v)
        self._trunc = {t: (np.concatenate(g), np.concatenate(v)) for t, (g, v) in trunc.items()}
        self._boot = np.concatenate([r["boot"] for r in res])
        self._finished.extend(f for r in res for f in r["finished"])
        states = [r["state"] for r in res]
        self._state = states[0] if len(res) == 1 else merge_states(states, self._keys)

    # ---------------------------------------------------------------------------- the update

    def advantages(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (advantages, returns), each (T, N), of the current rollout (``ppo.compute_gae``)."""
        c = self.cfg
        adv = compute_gae(self.rewards, self.values, self.actor, self.learner, self.dones,
                          self._boot, c.gamma, c.gae_lambda, self._trunc)
        return adv, adv + self.values

    def batch(self, adv: np.ndarray, ret: np.ndarray) -> RolloutBatch:
        """Return the current rollout with ``adv`` and ``ret`` as a ``ppo.RolloutBatch``."""
        return make_batch(self.buf, self.learner, self.values, adv, ret, self.device)

    def loss(self, b: RolloutBatch, idx: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Return (PPO loss, its parts) of the current network on rows ``idx`` of batch ``b``."""
        return ppo_loss(self.ppo, b.rows(idx, loss_keys(self.ppo)), self.update)

    def ppo_update(self, adv: np.ndarray, ret: np.ndarray) -> dict[str, float]:
        """Run the PPO epochs on the current rollout (``ppo.ppo_update``); return the loss statistics."""
        return _ppo_update(self.ppo, self.batch(adv, ret), self.update)

    def _overlapped_update(self, last: bool) -> dict[str, float]:
        """Collect batch ``update`` (started during the previous update, or now), start the next rollout
        unless ``last``, then update on the batch; return the update's statistics (``overlap``).

        The next rollout plays with the weights the learner has before this update, so every batch is
        exactly one update behind the learner (the first two both use the initial weights).
        """
        if self.workers is None:
            self._start_workers()
        t0 = time.perf_counter()
        try:
            if not self._inflight:  # start of a run or a resume: replay the rollout in flight when saved
                self.workers.start(self.update, self.update % 2, self._behaviour)
            self._inflight = False
            res = self.workers.finish()
            self._apply(res)
            self.last_rollout_s = time.perf_counter() - t0
            self._behaviour = behaviour(self.net, self.critic)
            # the league of the next rollout, sent even when none starts now: a checkpoint stores it, and
            # the rollout a resumed run replays must have it
            for slot in range(len(self.pool)):
                if self.worker_pool[slot] is not self.pool[slot]:
                    self._send_snapshot(slot)
            if not last:
                self.workers.start(self.update + 1, (self.update + 1) % 2, self._behaviour)
                self._inflight = True
        except WorkerError:
            self.close()
            raise
        self._use_set(self.update % 2)
        stats = self.ppo_update(*self.advantages())
        self.global_step += self.n * self.cfg.num_steps
        return stats

    # ------------------------------------------------------------------------------ reports

    def agent(self, deterministic: bool | None = None) -> Any:
        """Return a NeuralAgent playing a frozen copy of the current network."""
        return frozen_agent(self.net, self.rules, self.cfg, self.device, deterministic)

    def evaluate(self, deals: int | None = None) -> dict[str, tuple[float, float, float]]:
        """Return {opponent: (mean, lo, hi)} points-per-round difference in duplicate deals."""
        return evaluate(self.agent(), self.rules, self.cfg, deals)

    def _log(self, tag: str, value: float) -> None:
        """Record one scalar at the current step (nothing outside ``run``); return None."""
        if self.logger is not None:
            self.logger.scalar(tag, value, self.global_step, self.wall_s)

    def _run_eval(self) -> dict[str, tuple[float, float, float]]:
        """Evaluate now, log the results and keep them in ``evals``; return them."""
        t0 = time.perf_counter()
        res = self.evaluate()
        self.last_eval_s = time.perf_counter() - t0
        self.evals.append(log_eval(self._log, res, self.global_step, self.wall_s))
        return res

    def _log_update(self, stats: dict[str, float], dt: float, dt_rollout: float) -> None:
        """Log one update (``reports.log_update``) and forget its finished episodes; return None."""
        log_update(self._log, stats, self.n * self.cfg.num_steps, dt, dt_rollout,
                   self.opt.param_groups[0]["lr"], self._finished)
        self._finished = []

    # -------------------------------------------------------------------------- checkpoints

    def checkpoint(self) -> dict[str, Any]:
        """Return the full training checkpoint dict of the last completed update (see ``checkpoints``)."""
        engine, league = state_to_checkpoint(self._state)
        league = {"pool": list(self.pool), "pool_next": self.pool_next, **league}
        cfg = asdict(self.cfg)
        cfg["resume"] = None
        overlap = (overlap_checkpoint(self._behaviour, self.net, self.critic, self.worker_pool)
                   if self.cfg.overlap else {})
        critic = {} if self.critic is None else {
            "critic": {k: v.detach().cpu().clone() for k, v in self.critic.state_dict().items()}}
        return checkpoint_dict(
            self.net, self.rules, config=cfg, global_step=self.global_step, update=self.update,
            wall_s=self.wall_s, optimizer=self.opt.state_dict(), rng=rng_state(self.np_rng, self.gen),
            league=league, engine=engine,
            schedule={"next_eval": -1 if self.next_eval is None else self.next_eval,
                      "next_save": self.next_save, "next_snapshot": self.next_snapshot},
            evals=self.evals, **critic, **overlap)

    def save(self, path: str | None = None) -> str:
        """Write the training checkpoint to ``path`` (default ``checkpoints/latest.pt``); return the path."""
        path = self.ckpt_path if path is None else path
        save_checkpoint(path, self.checkpoint())
        return path

    def _restore(self, ckpt: dict[str, Any]) -> dict[str, Any]:
        """Load weights, optimizer, league, counters and RNG states from ``ckpt``; return its game state."""
        self.net.load_state_dict(build_net(ckpt, str(self.cfg.resume)).state_dict())
        if self.critic is not None:
            self.critic.load_state_dict(ckpt["critic"])
        self.opt.load_state_dict(ckpt["optimizer"])
        lg = ckpt["league"]
        self.pool = [None if sd is None else dict(sd) for sd in lg["pool"]]
        self.pool_next = int(lg["pool_next"])
        self.global_step = int(ckpt["global_step"])
        self.update = int(ckpt["update"])
        self.wall_s = float(ckpt.get("wall_s", 0.0))
        self.evals = list(ckpt.get("evals", []))
        sch = ckpt["schedule"]
        self.next_eval = None if sch["next_eval"] < 0 else int(sch["next_eval"])
        self.next_save = int(sch["next_save"])
        self.next_snapshot = int(sch["next_snapshot"])
        set_rng_state(self.np_rng, self.gen, ckpt["rng"])
        return state_from_checkpoint(ckpt)

    def _check_run_folder(self) -> None:
        """Raise ValueError if the run folder holds another run, which this one would overwrite."""
        taken = [f for f in ("metrics.csv", os.path.join("checkpoints", "latest.pt"))
                 if os.path.exists(os.path.join(self.run_dir, f))]
        if taken and self._resumed_dir != os.path.abspath(self.run_dir):
            held = f"run folder {self.run_dir!r} already holds a run ({', '.join(taken)})"
            if os.path.exists(self.ckpt_path):
                raise ValueError(f"{held}; choose another --run-name, continue it with --resume "
                                 f"{self.ckpt_path}, or delete it")
            # a run killed before its first checkpoint: nothing to resume, so none is named
            raise ValueError(f"{held} with no checkpoint to continue from; choose another --run-name, or "
                             "delete the folder to start over")

    # ---------------------------------------------------------------------------------- loop

    def _catch_signals(self) -> dict[int, Any]:
        """Make SIGINT and SIGTERM stop the loop after the current update; return the old handlers."""
        if threading.current_thread() is not threading.main_thread():
            return {}

        def stop(signum: int, frame: Any) -> None:
            self._stop = signum
        return {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}

    def plan(self) -> dict[str, int]:
        """Return what ``run`` will do: env steps per update, updates left, and the step it ends at
        (``total_steps`` rounded up to whole updates) and the evaluations on the way."""
        per = self.n * self.cfg.num_steps
        updates = max(0, -(-(self.cfg.total_steps - self.global_step) // per))
        end = self.global_step + updates * per
        evals, due, step = 0, self.next_eval, self.global_step
        last = self.evals[-1]["step"] if self.evals else None
        if due is not None:  # the loop's schedule, replayed on the step counts alone
            if step >= due:
                evals, last, due = evals + 1, step, due + self.cfg.eval_interval
            for _ in range(updates):
                step += per
                if step >= due:
                    evals, last, due = evals + 1, step, due + self.cfg.eval_interval
            if updates and last != end:
                evals += 1
        return {"steps_per_update": per, "updates": updates, "start_step": self.global_step, "end_step": end,
                "evaluations": evals}

    def run(self, max_updates: int | None = None, callback: Callable[[Trainer, dict], None] | None = None
            ) -> dict[str, Any]:
        """Train until ``total_steps`` (or ``max_updates`` more updates, as if interrupted); return a summary.

        ``callback(trainer, stats)`` is called after every update.
        """
        c = self.cfg
        self._open_run_folder()
        bar = tqdm(total=c.total_steps, initial=min(self.global_step, c.total_steps), unit="step",
                   unit_scale=True, disable=not c.progress, dynamic_ncols=True)
        last_eval: dict[str, tuple[float, float, float]] = {}
        stats: dict[str, float] = {}
        self._stop = None
        handlers = self._catch_signals()
        try:
            last_eval, stats = self._train_loop(bar, max_updates, callback)
            self.save()
        except WorkerError as e:  # the trainer's state is that of the last completed update
            self.close()
            raise WorkerError(f"{e}; training stopped at step {self.global_step:,}, checkpoint of the last "
                              f"completed update: {self.save()}") from e
        else:
            if self._stop is not None:
                name = signal.Signals(self._stop).name
                raise TrainingInterrupted(f"{name} received: stopped at step {self.global_step:,} "
                                          f"({self.update} updates); checkpoint saved: {self.ckpt_path} "
                                          f"(continue with --resume {self.ckpt_path})")
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
            self.close()
            bar.close()
            self.logger.close()
            self.logger = None
        return {"global_step": self.global_step, "updates": self.update, "wall_s": self.wall_s,
                "eval": last_eval, "stats": stats, "checkpoint": self.ckpt_path}

    def _open_run_folder(self) -> None:
        """Check, then write, the run folder (its ``config.json``) and open the metrics logger; a cluster
        that is not there is refused first: a typo changes nothing."""
        c = self.cfg
        self._check_run_folder()
        if c.backend == "ray" and c.ray_address:
            check_reachable(c.ray_address)
        self._resumed_dir = os.path.abspath(self.run_dir)  # this trainer's own run from now on
        os.makedirs(self.run_dir, exist_ok=True)
        with open(os.path.join(self.run_dir, "config.json"), "w") as f:
            json.dump(asdict(c), f, indent=2)
        self.logger = MetricsLogger(self.run_dir, c.tensorboard, purge_step=self.global_step or None)

    def _train_loop(self, bar: Any, max_updates: int | None, callback: Callable[[Trainer, dict], None] | None
                    ) -> tuple[dict[str, tuple[float, float, float]], dict[str, float]]:
        """Update until ``total_steps``, ``max_updates`` updates or a signal, evaluating when due (and at
        the end of a finished run); return (the last evaluation, the last update's stats)."""
        c = self.cfg
        last_eval: dict[str, tuple[float, float, float]] = {}
        stats: dict[str, float] = {}
        post: dict[str, str] = {}
        done_updates = 0
        if self.next_eval is not None and self.global_step >= self.next_eval:
            last_eval = self._run_eval()
            self.next_eval += c.eval_interval
        while (self.global_step < c.total_steps and (max_updates is None or done_updates < max_updates)
               and self._stop is None):
            last = (self.global_step + self.n * c.num_steps >= c.total_steps
                    or (max_updates is not None and done_updates + 1 >= max_updates))
            stats = self._one_update(last)
            done_updates += 1
            evaluated = self._after_update()
            last_eval = last_eval if evaluated is None else evaluated
            sps = self.n * c.num_steps / self.last_update_s
            post = {"sps": f"{sps:,.0f}", "ent": f"{stats['entropy']:.2f}"}
            post.update({name: f"{m:+.3f}" for name, (m, _, _) in last_eval.items()})
            bar.set_postfix(post, refresh=False)
            bar.update(min(self.n * c.num_steps, c.total_steps - bar.n))
            if callback is not None:
                callback(self, stats)
        finished = self.global_step >= c.total_steps and self._stop is None
        if finished and self.next_eval is not None and (not self.evals
                                                         or self.evals[-1]["step"] != self.global_step):
            last_eval = self._run_eval()
            post.update({name: f"{m:+.3f}" for name, (m, _, _) in last_eval.items()})
            bar.set_postfix(post)  # the bar ends on the evaluation the summary prints
        return last_eval, stats

    def _one_update(self, last: bool) -> dict[str, float]:
        """Anneal, roll out and update once (``last``: the run's last update, which overlaps nothing); count
        and log it; return its stats."""
        c = self.cfg
        t0 = time.perf_counter()
        frac = max(0.0, 1.0 - self.global_step / max(c.total_steps, 1))
        if c.anneal_lr:
            for g in self.opt.param_groups:
                g["lr"] = frac * c.learning_rate
        if c.distill_anneal:
            self.ppo.distill_weight = frac * c.distill_coef
        if c.overlap:
            stats = self._overlapped_update(last)
            t1 = t0 + self.last_rollout_s
        else:
            self.rollout()
            t1 = time.perf_counter()
            self.last_rollout_s = t1 - t0
            stats = self.ppo_update(*self.advantages())
        t2 = time.perf_counter()
        self.update += 1
        self.wall_s += t2 - t0
        self.last_update_s = t2 - t0
        self._log_update(stats, t2 - t0, t1 - t0)
        return stats

    def _after_update(self) -> dict[str, tuple[float, float, float]] | None:
        """Snapshot, evaluate and save when due; return the evaluation made (None if none was due)."""
        c = self.cfg
        evaluated = None
        if self.global_step >= self.next_snapshot:
            self.next_snapshot += c.snapshot_interval
            self._add_snapshot()
        if self.next_eval is not None and self.global_step >= self.next_eval and self._stop is None:
            t3 = time.perf_counter()
            evaluated = self._run_eval()
            self.next_eval += c.eval_interval
            self.wall_s += time.perf_counter() - t3
        if self.global_step >= self.next_save:
            self.save()
            self.next_save += c.save_interval
        self.logger.flush()
        return evaluated


def train(cfg: Config, max_updates: int | None = None, overrides: Sequence[str] | None = None
          ) -> dict[str, Any]:
    """Train with ``cfg`` (resuming from ``cfg.resume`` if set); return the run summary."""
    return Trainer(cfg, overrides).run(max_updates=max_updates)
