"""Every Box of the faces has finite, tight bounds from the rules, and bound-based normalisers run.

Fails on the old spaces, whose score entries had the largest float32 as their upper bound (3.4e38
next to 1s and 40s): a normaliser by the bounds squashed every score to 0.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import escoba_env  # noqa: F401  (registers the id)
from escoba_env import Rules, escoba_v0
from escoba_env.executors.observation import scalar_offsets, score_cap
from escoba_env.executors.state import round_cap, state_bounds
from escoba_env.faces.gym_vector import EscobaGymVectorEnv

RULES = [Rules(), Rules(jokers=2, bonus_sweeps=True),
         Rules(num_players=4, partnerships=True, target_score=11)]


@pytest.mark.parametrize("rules", RULES, ids=["2p", "jokers-bonus", "2v2"])
def test_bounds_are_finite_and_tight(rules):
    space = escoba_v0.raw_env(rules=rules).observation_space("player_0")["observation"]
    assert np.isfinite(space.high).all() and np.isfinite(space.low).all()
    sc = scalar_offsets(rules)["scores"]
    assert space.high[sc] == np.float32(score_cap(rules) / rules.target_score) <= 1 + 27 / rules.target_score
    assert space.high.max() <= rules.num_cards // 2
    low, high = state_bounds(rules)
    assert np.isfinite(high).all() and high[-1] == round_cap(rules)


def test_every_observation_of_random_games_lies_in_the_space():
    env = EscobaGymVectorEnv(32, target_score=6)
    obs, _ = env.reset(seed=0)
    space = env.single_observation_space["observation"]
    rng = np.random.default_rng(0)
    for _ in range(150):
        assert ((obs["observation"] >= space.low) & (obs["observation"] <= space.high)).all()
        obs, *_ = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]]))


def test_a_score_past_the_cap_saturates_in_the_observation_and_the_state():
    env = escoba_v0.raw_env()
    env.reset(seed=0)
    game, rules = env.game, env.rules
    game.scores = [100, 100]  # a tied lead that played on and on
    game.round_index = 1000
    obs = env.observe(env.agent_selection)["observation"]
    sc = scalar_offsets(rules)["scores"]
    assert obs[sc] == np.float32(score_cap(rules) / rules.target_score)
    assert env.observation_space("player_0")["observation"].contains(obs)
    assert env.state_space.contains(env.state())


def test_normalize_observation_after_flatten_observation_runs():
    env = gymnasium.make("escoba_env/Escoba-v0", episode="round")
    env = gymnasium.wrappers.NormalizeObservation(gymnasium.wrappers.FlattenObservation(env))
    obs, _ = env.reset(seed=0)
    space = env.unwrapped.observation_space
    for _ in range(40):
        mask = env.unwrapped.action_masks()
        obs, _, term, trunc, _ = env.step(int(np.flatnonzero(mask)[0]))
        assert np.isfinite(obs).all()
        if term or trunc:
            obs, _ = env.reset()
    low, high = space["observation"].low, space["observation"].high
    scaled = (env.unwrapped._observe()["observation"] - low) / (high - low)  # a bound-based normaliser
    assert np.isfinite(scaled).all() and (scaled >= 0).all() and (scaled <= 1).all()


def test_sb3_vec_normalize_runs():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import VecNormalize

    from escoba_env.faces.sb3 import EscobaSB3VecEnv

    env = VecNormalize(EscobaSB3VecEnv(4, episode="round"), norm_obs_keys=["observation"])
    obs = env.reset()
    for _ in range(30):
        masks = env.venv.action_masks()
        obs, _, _, _ = env.step(np.array([np.flatnonzero(m)[0] for m in masks]))
        assert np.isfinite(obs["observation"]).all()
