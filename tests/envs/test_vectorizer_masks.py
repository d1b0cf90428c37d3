"""No all-zero mask row under Gymnasium's own vectorizers, in any autoreset mode.

A masked ``Categorical(validate_args=True)`` samples every step of whole episodes of
``gymnasium.make_vec(..., vectorization_mode="sync" | "async")`` in NEXT_STEP, SAME_STEP and
DISABLED modes. Fails on a single env whose final observation has an all-zero ``action_mask``
(NEXT_STEP and DISABLED hand that observation to the learner: the Categorical raises ValueError).
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import escoba_env  # noqa: F401  (registers the id)
from escoba_env.faces.common import PLACEHOLDER_ACTION

torch = pytest.importorskip("torch")

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]


def _sample(masks: np.ndarray, gen: torch.Generator) -> np.ndarray:
    """Return one action per row from a uniform masked Categorical that validates its arguments."""
    m = torch.as_tensor(masks, dtype=torch.bool)
    logits = torch.zeros(m.shape).masked_fill(~m, float("-inf"))
    dist = torch.distributions.Categorical(logits=logits, validate_args=True)
    probs = dist.probs
    return torch.multinomial(probs, 1, generator=gen).squeeze(1).numpy()


@pytest.mark.parametrize("vectorization", ["sync", "async"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_a_masked_categorical_never_sees_an_empty_row(vectorization, mode):
    envs = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=2, vectorization_mode=vectorization,
                              vector_kwargs={"autoreset_mode": mode}, episode="round")
    try:
        gen = torch.Generator().manual_seed(0)
        obs, _ = envs.reset(seed=3)
        episodes = finals = 0
        for _ in range(200):
            actions = _sample(obs["action_mask"], gen)
            obs, _, term, trunc, _ = envs.step(actions)
            done = term | trunc
            if done.any() and mode is not AutoresetMode.SAME_STEP:
                # the final observation offers the placeholder alone
                assert (obs["action_mask"][done].sum(axis=1) == 1).all()
                assert (obs["action_mask"][done, PLACEHOLDER_ACTION] == 1).all()
                finals += int(done.sum())
            if done.any() and mode is AutoresetMode.DISABLED:
                obs, _ = envs.reset(options={"reset_mask": done})
            episodes += int(done.sum())
            if episodes >= 4:
                break
        assert episodes >= 4, "episodes did not end in 200 steps"
        assert mode is AutoresetMode.SAME_STEP or finals >= 4
    finally:
        envs.close()


def test_the_single_env_mask_after_the_end_offers_the_placeholder():
    env = gymnasium.make("escoba_env/Escoba-v0", episode="round").unwrapped
    obs, _ = env.reset(seed=1)
    done = False
    while not done:
        obs, _, term, trunc, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        done = term or trunc
    assert np.flatnonzero(obs["action_mask"]).tolist() == [PLACEHOLDER_ACTION]
    assert np.flatnonzero(env.action_masks()).tolist() == [PLACEHOLDER_ACTION]
    assert obs["action_mask"].dtype == np.int8 and env.action_masks().dtype == bool
