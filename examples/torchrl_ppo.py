#!/usr/bin/env python3
"""TorchRL: ``PettingZooWrapper(escoba_v0.env(), use_mask=True)`` unchanged, a masked policy, a PPO loss.

    python examples/torchrl_ppo.py --frames 4000 --iterations 10

TorchRL's wrapper steps the turn-based AEC env one agent at a time. With
``group_map=MarlGroupMapType.ALL_IN_ONE_GROUP`` both seats share the group ``"agents"`` (one
policy, self-play): ``("agents", "mask")`` says which seat acts at each step and
``("agents", "action_mask")`` holds its legal actions (TorchRL fills the rows of the seats not to
act with all True, so a masked distribution never sees an empty row). The policy samples from
``MaskedCategorical``; the actions of the seats not to act are ignored by the env, so those entries
are dropped before the loss. Advantages come from TorchRL's GAE per seat.
"""

from __future__ import annotations

import argparse

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs import PettingZooWrapper
from torchrl.envs.utils import MarlGroupMapType
from torchrl.modules import MaskedCategorical, ProbabilisticActor
from torchrl.objectives import ClipPPOLoss, ValueEstimators

from escoba_env import escoba_v0

OBS = ("agents", "observation", "observation")


def make_env(**config) -> PettingZooWrapper:
    """Return ``escoba_v0.env(**config)`` in TorchRL's wrapper, both seats in the group ``agents``."""
    return PettingZooWrapper(escoba_v0.env(**config), use_mask=True,
                             group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)


def mlp(inp: int, out: int, hidden: int) -> nn.Module:
    """Return a two-layer tanh MLP."""
    return nn.Sequential(nn.Linear(inp, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, out))


def train(frames: int = 4000, iterations: int = 1, hidden: int = 64, seed: int = 0, lr: float = 3e-4,
          **config) -> dict[str, float]:
    """Collect ``frames`` frames per iteration with the masked policy and take one PPO step on them."""
    torch.manual_seed(seed)
    env = make_env(**config)
    env.set_seed(seed)
    size, n = env.observation_spec[OBS].shape[-1], env.full_action_spec["agents", "action"].space.n
    actor = ProbabilisticActor(
        TensorDictModule(mlp(size, n, hidden), in_keys=[OBS], out_keys=[("agents", "logits")]),
        in_keys={"logits": ("agents", "logits"), "mask": ("agents", "action_mask")},
        out_keys=[("agents", "action")], distribution_class=MaskedCategorical,
        return_log_prob=True, log_prob_key=("agents", "action_log_prob"))
    critic = TensorDictModule(mlp(size, 1, hidden), in_keys=[OBS], out_keys=[("agents", "state_value")])
    loss = ClipPPOLoss(actor, critic, entropy_coeff=0.01)
    loss.set_keys(reward=("agents", "reward"), action=("agents", "action"),
                  sample_log_prob=("agents", "action_log_prob"), value=("agents", "state_value"),
                  advantage=("agents", "advantage"), value_target=("agents", "value_target"),
                  done=("agents", "done"), terminated=("agents", "terminated"))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    opt = torch.optim.Adam(loss.parameters(), lr=lr)
    collector = Collector(env, actor, frames_per_batch=frames, total_frames=frames * iterations)
    stats: dict[str, float] = {}
    for data in collector:
        with torch.no_grad():
            loss.value_estimator(data, params=loss.critic_network_params,
                                 target_params=loss.target_critic_network_params)
        agents = data["agents"]
        acting = agents[agents["mask"]]  # the seat to act at each step: the only actions the env applied
        batch = TensorDict({"agents": acting}, batch_size=acting.batch_size)
        out = loss(batch)
        total = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
        opt.zero_grad()
        total.backward()
        opt.step()
        stats = {"frames": float(data.numel()), "decisions": float(acting.numel()),
                 "loss": float(total), "episodes": float(data["next", "done"].sum()),
                 "illegal_free": float(acting["action_mask"].gather(-1, acting["action"][..., None]).all())}
    collector.shutdown()
    return stats


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, train, print the last iteration's figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=4000)
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args(argv)
    print(train(args.frames, args.iterations, episode="round", reward="round_points"))


if __name__ == "__main__":
    main()
