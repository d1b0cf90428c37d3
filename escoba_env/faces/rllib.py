"""RLlib (new API stack) on escoba-env: envs whose observations carry RLlib's masking keys.

RLlib's own ``ActionMaskingTorchRLModule`` (``ray.rllib.examples.rl_modules.classes.action_masking_rlm``)
reads a Dict observation with the keys ``observations`` and ``action_mask``; escoba-env's
observations are keyed ``observation`` and ``action_mask``. The two classes here rename the one
key and change nothing else; pass either class itself as the env of an ``AlgorithmConfig``:

    from ray.rllib.algorithms.ppo import PPOConfig
    from escoba_env.faces.rllib import EscobaMultiAgentEnv

    config = (PPOConfig()
              .environment(EscobaMultiAgentEnv, env_config={"episode": "round"})
              .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *a, **k: "shared")
              .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
                  "shared": RLModuleSpec(module_class=ActionMaskingTorchRLModule)})))

- ``EscobaMultiAgentEnv(config)``: RLlib's ``PettingZooEnv`` over ``escoba_v0.env(**config)``, one
  agent per seat (``player_0`` ...), turn-based (only the agent to act gets an observation);
- ``EscobaSingleAgentEnv(config)``: ``gymnasium.make("escoba_env/Escoba-v0", **config)``, one
  learner seat against fixed opponents (``config["opponents"]``, default ``"random"``).

``config`` is the ``env_config`` dict: the keywords of the env it wraps. In this zero-sum game
RLlib's ``env_runners/episode_return_mean`` (the sum over agents) is always 0 for two sides; each
seat's mean return is ``result["env_runners"]["agent_episode_returns_mean"]["player_0"]`` etc.
RLlib's env checker steps ``action_space.sample()``: the multi-agent env's action spaces sample
legal actions of the agent to act (``LegalDiscrete``), so the checker never plays an illegal move.

This module imports ``ray``; ``escoba_env`` imports it only when asked.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium
import numpy as np
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

from . import escoba_v0
from .registration import register

__all__ = ["EscobaMultiAgentEnv", "EscobaSingleAgentEnv", "masked_space", "rename"]


def masked_space(space: gymnasium.spaces.Dict) -> gymnasium.spaces.Dict:
    """Return escoba-env's observation space with RLlib's keys: ``observations`` and ``action_mask``."""
    return gymnasium.spaces.Dict({"observations": space["observation"], "action_mask": space["action_mask"]})


def rename(obs: dict[str, Any]) -> dict[str, Any]:
    """Return one observation with the key ``observation`` renamed ``observations``."""
    return {"observations": obs["observation"], "action_mask": obs["action_mask"]}


class LegalDiscrete(gymnasium.spaces.Discrete):
    """``Discrete(W)`` whose ``sample()`` without a mask draws a legal action of its agent, when that
    agent is to act (RLlib's env checker and random exploration step ``action_space.sample()``).

    Pickled (as RLlib does to ship spaces) it is a plain ``Discrete(W)``.
    """

    def __init__(self, n: int, legal: Callable[[], np.ndarray | None]):
        super().__init__(n)
        self._legal = legal

    def sample(self, mask: np.ndarray | None = None, probability: np.ndarray | None = None) -> np.int64:
        """Return a random action: a legal one of the agent to act unless a mask or probability is given."""
        if mask is None and probability is None:
            legal = self._legal()
            if legal is not None and legal.any():
                mask = legal.astype(np.int8)
        return super().sample(mask=mask, probability=probability)

    def __reduce__(self):
        return (gymnasium.spaces.Discrete, (int(self.n),))


class EscobaMultiAgentEnv(PettingZooEnv):
    """``escoba_v0.env(**config)`` as RLlib's ``PettingZooEnv``, observations keyed for action masking."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__(escoba_v0.env(**dict(config or {})))
        renamed = masked_space(self.observation_spaces[self.possible_agents[0]])
        self.observation_spaces = dict.fromkeys(self.possible_agents, renamed)
        self.observation_space = gymnasium.spaces.Dict(self.observation_spaces)
        n = int(self.action_spaces[self.possible_agents[0]].n)
        self.action_spaces = {a: LegalDiscrete(n, partial(self._legal, a)) for a in self.possible_agents}
        self.action_space = gymnasium.spaces.Dict(self.action_spaces)

    def _legal(self, agent: str) -> np.ndarray | None:
        """Return ``agent``'s action mask while it is to act, else None."""
        try:
            if self.env.agent_selection != agent:
                return None
        except AttributeError:  # never reset
            return None
        return self.env.observe(agent)["action_mask"]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset; return the first observation (keys renamed) and infos."""
        obs, info = super().reset(seed=seed, options=options)
        return {a: rename(o) for a, o in obs.items()}, info

    def step(self, action: dict[str, int]):
        """Step the agent to act; return RLlib's multi-agent 5-tuple (keys renamed)."""
        obs, rew, term, trunc, info = super().step(action)
        return {a: rename(o) for a, o in obs.items()}, rew, term, trunc, info


class EscobaSingleAgentEnv(gymnasium.ObservationWrapper):
    """``gymnasium.make("escoba_env/Escoba-v0", **config)``, observations keyed for action masking."""

    def __init__(self, config: dict[str, Any] | None = None):
        register()  # the id, in a Ray worker too

        super().__init__(gymnasium.make("escoba_env/Escoba-v0", **dict(config or {})))
        self.observation_space = masked_space(self.env.observation_space)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """Return the observation with the key ``observation`` renamed ``observations``."""
        return rename(observation)
