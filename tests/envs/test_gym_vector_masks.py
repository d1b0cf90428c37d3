"""Masks of the Gymnasium vector env that never break a sampler, in both autoreset modes.

A CleanRL-style loop samples every slot from ``torch.distributions.Categorical`` over logits set to
``-inf`` where the mask is 0, with ``validate_args=True``: an all-zero row would raise (or give NaN).
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch

import escoba_env  # noqa: F401  (registers the id)
from escoba_env.faces.gym_vector import PLACEHOLDER_ACTION


def sample(masks: np.ndarray, gen: torch.Generator) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
    """Sample one action per row from random logits masked to -inf; return actions, log-probs, entropies."""
    mask = torch.as_tensor(masks > 0)
    logits = torch.randn(mask.shape, generator=gen).masked_fill(~mask, float("-inf"))
    dist = torch.distributions.Categorical(logits=logits, validate_args=True)
    action = torch.multinomial(dist.probs, 1, generator=gen).squeeze(-1)
    return action.numpy(), dist.log_prob(action), dist.entropy()


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("rules", [{}, {"num_players": 3, "jokers": 1}])
def test_thousands_of_episodes_sample_from_every_mask(mode, rules):
    n = 64
    env = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=n, vectorization_mode="vector_entry_point",
                             opponents="random", episode="round", autoreset_mode=mode, **rules)
    gen = torch.Generator().manual_seed(0)
    obs, _ = env.reset(seed=5)
    episodes, kept, dropped = 0, 0, 0
    pending = np.zeros(n, bool)  # NEXT_STEP: the slots whose last step ended their game
    while episodes < 2000:
        masks = env.unwrapped.action_masks()
        np.testing.assert_array_equal(masks, obs["action_mask"] > 0)
        assert masks.any(axis=1).all()  # every row offers an action
        action, logp, ent = sample(obs["action_mask"], gen)
        assert torch.isfinite(logp).all() and torch.isfinite(ent).all()
        # a finished game's row offers the placeholder alone: certain, so no gradient and no entropy
        np.testing.assert_array_equal(masks[pending].sum(axis=1), 1)
        assert (action[pending] == PLACEHOLDER_ACTION).all()
        assert (logp[pending] == 0).all() and (ent[pending] == 0).all()
        obs, reward, term, trunc, info = env.step(action)
        if mode == "NextStep":
            # exactly the slots whose game had ended are reset steps, reported in the info to drop them
            np.testing.assert_array_equal(info["autoreset"], pending)
            assert info["_autoreset"].all() and not reward[pending].any()
            assert not (term | trunc)[pending].any()
        else:
            assert "autoreset" not in info and not pending.any()
        kept += int((~info.get("autoreset", pending)).sum())
        dropped += int(pending.sum())
        done = term | trunc
        episodes += int(done.sum())
        pending = done if mode == "NextStep" else np.zeros(n, bool)
    assert episodes >= 2000
    # a learner that keeps the transitions the info does not mark trained on each applied action once:
    # NEXT_STEP wastes exactly one step per finished episode (those still pending are not counted yet)
    if mode == "NextStep":
        assert dropped == episodes - int(pending.sum())
    else:
        assert dropped == 0
    assert kept > 10 * episodes


def test_a_reset_step_ignores_its_action():
    """Whatever is sent for a final observation (placeholder or not), the next game is the same."""
    def run(replace: int | None):
        env = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=8, vectorization_mode="vector_entry_point",
                                 opponents="random", episode="round")
        obs, _ = env.reset(seed=3)
        trace, pending = [], np.zeros(8, bool)
        for _ in range(60):
            a = np.argmax(obs["action_mask"] > 0, axis=1)
            if replace is not None:
                a[pending] = replace
            obs, rew, term, trunc, info = env.step(a)
            trace.append((obs["observation"].copy(), rew.copy(), info["autoreset"].copy()))
            pending = term | trunc
        return trace

    base, other = run(None), run(17)
    assert any(t[2].any() for t in base)
    for (o1, r1, a1), (o2, r2, a2) in zip(base, other, strict=True):
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(a1, a2)
