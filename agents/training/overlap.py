"""Overlapped rollouts (``Config.overlap``): the workers collect batch k+1 while the learner updates on k.

The rollout started beside update k plays the weights the learner has before that update, so every
batch is exactly one update behind the weights that learn from it, whatever the speed of the workers:
a fixed lag, hence an exactly reproducible run. PPO's ratio is taken against the log-probabilities
stored with the batch (the behaviour policy's), and its clipping bounds the importance weights of the
lag (``docs/training.md``: references and measurements).

A snapshot taken after update k reaches the workers before rollout k+2. A checkpoint holds, besides
the learner, the weights and league of the rollout in flight (``checkpoint["overlap"]``); that rollout
is dropped on save and replayed on resume, with the same generators, so resuming is exact.
"""

from __future__ import annotations

import time
from typing import Any

from .workers import WorkerError


class OverlapMixin:
    """The overlapped steps of ``Trainer`` (which provides the workers, the buffers and the learner)."""

    _behaviour: tuple[dict, dict | None] | None
    _inflight: bool

    def _overlapped_update(self, last: bool) -> dict[str, float]:
        """Collect batch ``update`` (started during the previous update, or now), start the next rollout
        unless ``last``, then update on the batch; return the update's statistics.

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
            self._behaviour = ({k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()},
                               None if self.critic is None else
                               {k: v.detach().cpu().clone() for k, v in self.critic.state_dict().items()})
            if not last:
                for slot in range(len(self.pool)):
                    if self.worker_pool[slot] is not self.pool[slot]:
                        self._send_snapshot(slot)
                self.workers.start(self.update + 1, (self.update + 1) % 2, self._behaviour)
                self._inflight = True
        except WorkerError:
            self.close()
            raise
        self._use_set(self.update % 2)
        stats = self.ppo_update(*self.advantages())
        self.global_step += self.n * self.cfg.num_steps
        return stats

    def _overlap_checkpoint(self) -> dict[str, Any]:
        """Return the checkpoint entry an overlapped run needs to replay its in-flight rollout exactly."""
        if not self.cfg.overlap:
            return {}
        beh = self._behaviour
        if beh is None:  # no update yet: the next rollout plays the current weights
            beh = (self.net.state_dict(), None if self.critic is None else self.critic.state_dict())
        net, critic = (None if d is None else {k: v.detach().cpu().clone() for k, v in d.items()}
                       for d in beh)
        return {"overlap": {"behaviour": net, "behaviour_critic": critic,
                            "worker_pool": list(self.worker_pool)}}

    def _restore_overlap(self, ckpt: dict[str, Any]) -> None:
        """Take the in-flight rollout's weights and league from an overlapped run's checkpoint; return None.

        A checkpoint without them (a synchronous run, or an overlapped run resumed synchronously) starts
        the next rollout with the learner's weights and league.
        """
        self.worker_pool = list(self.pool)
        ov = ckpt.get("overlap")
        if not self.cfg.overlap or ov is None:
            return
        critic = ov["behaviour_critic"] if self.critic is not None else None
        if self.critic is not None and critic is None:
            critic = {k: v.detach().clone() for k, v in self.critic.state_dict().items()}
        self._behaviour = (dict(ov["behaviour"]), critic)
        self.worker_pool = [None if sd is None else dict(sd) for sd in ov["worker_pool"]]
