"""Stable-Baselines3 on the batched engine: an SB3 ``VecEnv`` of N learner games against fixed opponents.

    from sb3_contrib import MaskablePPO
    from escoba_env.faces.sb3 import make_vec_env

    env = make_vec_env(64, opponents="random", reward="round_points")
    model = MaskablePPO("MultiInputPolicy", env, n_steps=64)   # the Dict observation needs MultiInputPolicy
    model.learn(100_000)

``EscobaSB3VecEnv(num_envs, opponents=..., seat=0, **config)`` takes the keywords of
``gymnasium.make_vec("escoba_env/Escoba-v0", ...)`` (``escoba_env.faces.gym_vector``) and steps all its
games at once on one batched engine, where SB3's ``DummyVecEnv`` loops over N one-game envs. It
follows SB3's ``VecEnv`` conventions: a finished game is replaced in the same step, its final
observation is in ``infos[i]["terminal_observation"]`` and a game cut by ``max_rounds`` has
``infos[i]["TimeLimit.truncated"]``. ``infos[i]`` holds the keys of every face (docs/observation.md,
"Infos"): ``seat`` (on a finished game's step, the seat of the game that ended; the next game's seat
comes with its next step), ``round_points``, ``scores`` and ``round_categories`` where a round
ended, ``winner`` and ``rounds`` where a game ended. ``action_masks()`` (and ``env_method("action_masks")``)
returns the learner's legal actions, which is how sb3-contrib's ``MaskablePPO`` finds them.
``make_vec_env`` wraps it in SB3's ``VecMonitor`` so that episode returns are logged.

This module imports ``stable_baselines3``; ``escoba_env`` imports it only when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv, VecMonitor

from .gym_vector import CATEGORIES, EscobaGymVectorEnv

__all__ = ["EscobaSB3VecEnv", "make_vec_env"]


class EscobaSB3VecEnv(VecEnv):
    """N Escoba learner games on the batched engine as an SB3 ``VecEnv`` (see the module docstring)."""

    def __init__(self, num_envs: int, opponents: Any = "random", seat: int | None = 0, **config: Any):
        config.pop("autoreset_mode", None)
        self.env = EscobaGymVectorEnv(num_envs, opponents, seat, autoreset_mode=AutoresetMode.SAME_STEP,
                                      **config)
        self.render_mode = None
        self._actions: np.ndarray | None = None
        super().__init__(self.env.num_envs, self.env.single_observation_space, self.env.single_action_space)

    def reset(self) -> dict[str, np.ndarray]:
        """Start a game in every slot (seeded by ``seed()`` if called); return the observations."""
        seed = self._seeds[0]
        obs, info = self.env.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{"seat": int(s)} for s in info["seat"]]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Store one learner action per slot for ``step_wait``."""
        self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64)

    def step_wait(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every slot; return SB3's (obs, rewards, dones, infos), finished games already replaced."""
        obs, rewards, term, trunc, info = self.env.step(self._actions)
        dones = term | trunc
        infos: list[dict[str, Any]] = [{"seat": int(s)} for s in info["seat"]]
        if "_round_points" in info:
            cats = info["round_categories"]
            for i in np.flatnonzero(info["_round_points"]):
                infos[i].update(round_points=info["round_points"][i].tolist(),
                                scores=info["scores"][i].tolist(),
                                round_categories={k: cats[k][i].tolist() for k in CATEGORIES})
        for i in np.flatnonzero(dones):
            final = info["final_info"]
            infos[i].update(terminal_observation=info["final_obs"][i], winner=int(final["winner"][i]),
                            scores=final["scores"][i].tolist(), rounds=int(final["rounds"][i]),
                            seat=int(final["seat"][i]))
            infos[i]["TimeLimit.truncated"] = bool(trunc[i] and not term[i])
        return obs, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """Return the learner's legal actions, bool (N, W)."""
        return self.env.action_masks()

    def close(self) -> None:
        """Release nothing (no process is held)."""

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed the next ``reset`` (slot ``g`` plays the game of ``slot_seed(seed, g)``); return the seeds."""
        self._seeds = [seed] * self.num_envs
        return self._seeds

    def _indices(self, indices: Any) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """Return the attribute of the whole env (the same object) once per slot."""
        value = getattr(self, attr_name) if attr_name == "action_masks" else getattr(self.env, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set an attribute of the whole env (every slot shares it)."""
        setattr(self.env, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices: Any = None, **method_kwargs) -> list[Any]:
        """Call a method of the whole env; ``action_masks`` answers one row per slot."""
        idx = self._indices(indices)
        if method_name == "action_masks":
            return list(self.action_masks()[idx])
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """Return False for every slot (no Gymnasium wrapper is applied)."""
        return [False for _ in self._indices(indices)]


def make_vec_env(num_envs: int, opponents: Any = "random", seat: int | None = 0, **config: Any) -> VecMonitor:
    """Return ``VecMonitor(EscobaSB3VecEnv(num_envs, opponents, seat, **config))`` for SB3 algorithms."""
    return VecMonitor(EscobaSB3VecEnv(num_envs, opponents, seat, **config))
