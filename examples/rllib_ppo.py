#!/usr/bin/env python3
"""RLlib (new API stack): one PPO policy shared by every seat of ``escoba_v0``, with action masking.

    python examples/rllib_ppo.py --iterations 50

RLlib's ``PettingZooEnv`` wraps the AEC env; the only addition is renaming the observation key
``observation`` to ``observations``, the name RLlib's ``ActionMaskingTorchRLModule`` expects next to
``action_mask`` (the module sets the logits of illegal actions to the float minimum). Every agent
maps to the one policy ``shared`` (self-play with parameter sharing).
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
from ray.tune.registry import register_env

from escoba_env import escoba_v0


def _rename(obs: dict[str, Any]) -> dict[str, Any]:
    return {agent: {"observations": o["observation"], "action_mask": o["action_mask"]}
            for agent, o in obs.items()}


class MaskedEscoba(PettingZooEnv):
    """``escoba_v0`` for RLlib: observations keyed ``observations`` and ``action_mask``."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__(escoba_v0.env(**(config or {})))
        space = self.observation_spaces[self.possible_agents[0]]
        renamed = gymnasium.spaces.Dict({"observations": space["observation"],
                                         "action_mask": space["action_mask"]})
        self.observation_spaces = {a: renamed for a in self.possible_agents}
        self.observation_space = gymnasium.spaces.Dict(self.observation_spaces)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset; return the first observation (renamed) and infos."""
        obs, info = super().reset(seed=seed, options=options)
        return _rename(obs), info

    def step(self, action: dict[str, int]):
        """Step the agent to act; return RLlib's multi-agent 5-tuple (observations renamed)."""
        obs, rew, term, trunc, info = super().step(action)
        return _rename(obs), rew, term, trunc, info


def build(train_batch: int = 4000, minibatch: int = 256, epochs: int = 5, **env_config: Any):
    """Return the PPO algorithm (one shared policy, masked) for ``escoba_v0(**env_config)``."""
    register_env("escoba_masked", lambda cfg: MaskedEscoba(cfg))
    config = (
        PPOConfig()
        # RLlib's env checker steps unmasked random actions (an illegal move ends the game): skip it.
        .environment("escoba_masked", env_config=env_config, disable_env_checking=True)
        .env_runners(num_env_runners=0)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "shared")
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            "shared": RLModuleSpec(module_class=ActionMaskingTorchRLModule,
                                   model_config={"fcnet_hiddens": [128, 128]})}))
        .training(train_batch_size_per_learner=train_batch, minibatch_size=minibatch, num_epochs=epochs)
    )
    return config.build_algo()


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, train, print the mean episode return per iteration."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=50)
    args = ap.parse_args(argv)
    algo = build(episode="round", reward="round_points")
    for i in range(args.iterations):
        result = algo.train()
        print(i, result["env_runners"].get("episode_return_mean"))
    algo.stop()


if __name__ == "__main__":
    main()
