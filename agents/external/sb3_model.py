"""An agent from a Stable-Baselines3 model file (``sb3:PATH[,algo=maskable_ppo,deterministic=true]``).

The model was saved by SB3 / sb3-contrib (``model.save(PATH)``) for the single-agent env
``escoba_env/Escoba-v0`` (Dict observation of ``observation`` and ``action_mask``). ``algo`` is
``maskable_ppo`` (sb3-contrib ``MaskablePPO``, default), ``ppo`` or ``a2c``; a model that is not maskable
is masked here (the most probable legal action, or a draw from its distribution restricted to the
legal actions).

Every failure to build one (missing file or package, wrong model, wrong shapes) is a ValueError
with one line saying what is wrong, as for the built-in specs.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np

from escoba_env.executors.observation import obs_size
from escoba_env.rulebook.rules import Rules

from ..base import Agent

SB3_ALGOS = ("maskable_ppo", "ppo", "a2c")


class SB3Agent(Agent):
    """A Stable-Baselines3 policy playing through the batched agent interface."""

    name = "sb3"

    def __init__(self, model: Any, rules: Rules | None = None, seed: int | None = None,
                 deterministic: bool = True, maskable: bool = True):
        self.model = model
        self.deterministic = bool(deterministic)
        self.maskable = maskable
        super().__init__(rules, seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the agent's generator, and torch's when a maskable model samples (SB3 uses torch's)."""
        super().reset(seed)
        if seed is not None and not getattr(self, "deterministic", True) and getattr(self, "maskable", False):
            import torch  # the [agents] extra

            torch.manual_seed(int(seed) % 2**63)

    def act_batch(self, observations, action_masks, state=None):
        """Return the model's action for every row, restricted to the legal ones."""
        masks = np.asarray(action_masks, np.int8)
        obs = {"observation": np.asarray(observations, np.float32), "action_mask": masks}
        if self.maskable:
            actions, _ = self.model.predict(obs, action_masks=masks.astype(bool),
                                            deterministic=self.deterministic)
            return np.asarray(actions, np.int64).reshape(-1)
        import torch  # the [agents] extra

        policy = self.model.policy
        with torch.no_grad():
            tensor, _ = policy.obs_to_tensor(obs)
            probs = policy.get_distribution(tensor).distribution.probs.cpu().numpy()
        probs = np.where(masks > 0, probs + 1e-12, 0.0)
        if self.deterministic:
            return probs.argmax(axis=1).astype(np.int64)
        cdf = np.cumsum(probs / probs.sum(axis=1, keepdims=True), axis=1)
        return np.minimum((cdf < self.rng.random(len(probs))[:, None]).sum(axis=1),
                          masks.shape[1] - 1).astype(np.int64)


def load_sb3(path: str | None = None, rules: Rules | None = None, seed: int | None = None,
             algo: str = "maskable_ppo", deterministic: bool = True) -> Agent:
    """Return an ``SB3Agent`` for the model file at ``path`` (``sb3:PATH``)."""
    if not path:
        raise ValueError("sb3 needs a model file: sb3:path/to/model.zip")
    if algo not in SB3_ALGOS:
        raise ValueError(f"sb3 algo must be one of {', '.join(SB3_ALGOS)}, got {algo!r}")
    file = path if os.path.isfile(path) or path.endswith(".zip") else path + ".zip"
    if not os.path.isfile(file):
        raise ValueError(f"sb3 model file not found: {path!r}")
    module, cls = ("sb3_contrib", "MaskablePPO") if algo == "maskable_ppo" else ("stable_baselines3",
                                                                                  algo.upper())
    try:
        algo_cls = getattr(importlib.import_module(module), cls)
    except ImportError:
        raise ValueError(f"sb3:{path} needs the package {module!r} "
                         "(pip install escoba-env[examples])") from None
    try:
        model = algo_cls.load(file, device="cpu")
    except Exception as e:  # SB3 raises many kinds for a file it cannot read
        raise ValueError(f"cannot read {file!r} as an SB3 {cls} model: {type(e).__name__}: {e}") from None
    rules = Rules() if rules is None else rules
    space = getattr(model, "observation_space", None)
    want = (obs_size(rules),)
    got = getattr(getattr(space, "spaces", {}).get("observation"), "shape", None)
    if got != want:
        raise ValueError(f"the SB3 model {file!r} expects observation shape {got}, but these rules give "
                         f"{want} (train it on escoba_env/Escoba-v0 with the same deck)")
    return SB3Agent(model, rules, seed, deterministic, maskable=algo == "maskable_ppo")
