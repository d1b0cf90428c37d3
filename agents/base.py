"""The agent protocol shared by every agent, and the uniform random agent.

An agent maps observations (``escoba_env.executors.observation`` layout, seat-relative) and int8 action
masks to actions. ``act_batch`` is the primary method: it takes a batch (K, OBS_SIZE) of
observations with masks (K, 40) and returns K actions (with jokers, docs/rules.md §11, the planes and
masks are ``rules.num_cards`` = 40 + jokers wide). ``act`` is the single-game convenience
used by the AEC and Gymnasium faces. Agents see only what the observation holds, so they cannot
use hidden information; the labelled exceptions (the oracles) declare ``needs_state = True``
and are handed the true engine state by the caller.
"""

from __future__ import annotations

import numpy as np

from escoba_env.rulebook.rules import Rules


class Agent:
    """Base class: subclasses implement ``act_batch``."""

    name: str = "agent"
    needs_state: bool = False
    """True only for agents that must see hidden information (the oracles); they get ``state``."""

    def __init__(self, rules: Rules | None = None, seed: int | None = None):
        self.rules = Rules() if rules is None else rules
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the agent's own random generator (the only randomness it may use)."""
        self.rng = np.random.default_rng(seed)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray, state=None) -> np.ndarray:
        """Return one legal action (int64) per row of ``observations`` / ``action_masks``."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Stop a decision in progress, from another thread (its caller's time ran out). Agents that
        wait on something outside (the ``llm`` agent's requests) end it and raise; the rest compute
        briefly and ignore it."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, state=None) -> int:
        """Return one legal action for a single observation and int8 mask (rules.num_cards,)."""
        obs = np.asarray(observation, np.float32)[None, :]
        mask = np.asarray(action_mask, np.int8)[None, :]
        return int(self.act_batch(obs, mask, state)[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class RandomAgent(Agent):
    """Uniform over the legal actions."""

    name = "random"

    def act_batch(self, observations, action_masks, state=None):
        m = np.asarray(action_masks) > 0
        if not m.any(axis=1).all():
            raise ValueError("random agent got a row with no legal action")
        u = self.rng.random(m.shape[0])
        counts = m.sum(axis=1)
        k = (u * counts).astype(np.int64)
        # k-th legal action of each row.
        csum = np.cumsum(m, axis=1)
        return (csum <= k[:, None]).sum(axis=1).astype(np.int64)
