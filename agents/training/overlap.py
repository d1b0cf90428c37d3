"""Overlapped rollouts (``Config.overlap``): the workers collect batch k+1 while the learner updates on k.

The rollout started beside update k plays the weights the learner has before that update, so every
batch is exactly one update behind the weights that learn from it, whatever the speed of the workers:
a fixed lag, hence an exactly reproducible run. PPO's ratio is taken against the log-probabilities
stored with the batch (the behaviour policy's), and its clipping bounds the importance weights of the
lag (``docs/training.md``: references and measurements).

A snapshot taken after update k reaches the workers before rollout k+2. A checkpoint holds, besides
the learner, the weights and league of the rollout in flight (``checkpoint["overlap"]``); that rollout
is dropped on save and replayed on resume, with the same generators, so resuming is exact. The loop
itself is ``Trainer._overlapped_update``; these functions are the state it keeps.
"""

from __future__ import annotations

from typing import Any

import torch

Weights = dict[str, torch.Tensor]


def weights_copy(module: torch.nn.Module | None) -> Weights | None:
    """Return a CPU copy of ``module``'s weights (None for no module)."""
    return None if module is None else {k: v.detach().cpu().clone() for k, v in module.state_dict().items()}


def behaviour(net: torch.nn.Module, critic: torch.nn.Module | None) -> tuple[Weights, Weights | None]:
    """Return the weights the next rollout plays: copies of the learner's network and critic now."""
    return weights_copy(net), weights_copy(critic)


def overlap_checkpoint(beh: tuple[Weights, Weights | None] | None, net: torch.nn.Module,
                       critic: torch.nn.Module | None, worker_pool: list[Weights | None]) -> dict[str, Any]:
    """Return the checkpoint entry an overlapped run needs to replay its in-flight rollout exactly
    (``beh`` None: no update yet, the next rollout plays the current weights)."""
    if beh is None:
        beh = (net.state_dict(), None if critic is None else critic.state_dict())
    net_w, critic_w = (None if d is None else {k: v.detach().cpu().clone() for k, v in d.items()}
                       for d in beh)
    return {"overlap": {"behaviour": net_w, "behaviour_critic": critic_w, "worker_pool": list(worker_pool)}}


def restore_overlap(ckpt: dict[str, Any], overlap: bool, critic: torch.nn.Module | None,
                    pool: list[Weights | None]) -> tuple[tuple[Weights, Weights | None] | None,
                                                         list[Weights | None]]:
    """Return (behaviour weights, worker league) of the in-flight rollout stored in ``ckpt``.

    A checkpoint without them (a synchronous run, or an overlapped run resumed synchronously) starts
    the next rollout with the learner's weights and league: (None, a copy of ``pool``).
    """
    ov = ckpt.get("overlap")
    if not overlap or ov is None:
        return None, list(pool)
    critic_w = ov["behaviour_critic"] if critic is not None else None
    if critic is not None and critic_w is None:
        critic_w = {k: v.detach().clone() for k, v in critic.state_dict().items()}
    return (dict(ov["behaviour"]), critic_w), [None if sd is None else dict(sd) for sd in ov["worker_pool"]]
