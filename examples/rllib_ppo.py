#!/usr/bin/env python3
"""RLlib (new API stack): one PPO policy shared by every seat of ``escoba_v0``, with action masking.

    python examples/rllib_ppo.py --iterations 50

``escoba_env.faces.rllib.EscobaMultiAgentEnv`` is RLlib's ``PettingZooEnv`` over ``escoba_v0`` with the
observation keys that RLlib's own ``ActionMaskingTorchRLModule`` expects (``observations`` and
``action_mask``; the module sets the logits of illegal actions to the float minimum). Every agent
maps to the one policy ``shared`` (self-play with parameter sharing). The game is zero-sum, so
RLlib's ``episode_return_mean`` is 0; each seat's return is in ``agent_episode_returns_mean``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

from escoba_env.faces.rllib import EscobaMultiAgentEnv


def build(train_batch: int = 4000, minibatch: int = 256, epochs: int = 5, **env_config: Any):
    """Return the PPO algorithm (one shared policy, masked) for ``escoba_v0(**env_config)``."""
    config = (
        PPOConfig()
        # RLlib's env checker runs: the action spaces sample legal moves
        # (escoba_env.faces.rllib.LegalDiscrete).
        .environment(EscobaMultiAgentEnv, env_config=env_config)
        .env_runners(num_env_runners=0)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "shared")
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "shared": RLModuleSpec(module_class=ActionMaskingTorchRLModule,
                                   model_config={"fcnet_hiddens": [128, 128]})}))
        .training(train_batch_size_per_learner=train_batch, minibatch_size=minibatch, num_epochs=epochs)
    )
    return config.build_algo()


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, train, print each seat's mean episode return per iteration."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=50)
    args = ap.parse_args(argv)
    algo = build(episode="round", reward="round_points")
    for i in range(args.iterations):
        result = algo.train()
        print(i, result["env_runners"].get("agent_episode_returns_mean"))
    algo.stop()


if __name__ == "__main__":
    main()
