"""Helpers of the llm tests: a batch of real positions (the stand-in server is ``conftest.standin``)."""

from __future__ import annotations

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.observation import action_masks, encode
from escoba_env.rulebook.rules import Rules


def batch(n: int = 1, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Return the observations and action masks of the seats to act in ``n`` fresh 2-player games."""
    e = EscobaEngine(n, Rules(), single_round=True)
    e.reset(seed)
    g = np.arange(n)
    return encode(e, e.to_act, g), action_masks(e, e.to_act, g)
