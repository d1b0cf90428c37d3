"""escoba_env.faces.sb3: an SB3 VecEnv on the batched engine that MaskablePPO uses directly."""

from __future__ import annotations

import gymnasium
import numpy as np
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import VecEnv

import escoba_env  # noqa: F401
from escoba_env.faces.sb3 import EscobaSB3VecEnv, make_vec_env


def test_slot_zero_is_the_single_agent_game_and_finished_games_restart_at_once():
    env = EscobaSB3VecEnv(3, opponents="greedy", target_score=11)
    single = gymnasium.make("escoba_env/Escoba-v0", opponents="greedy", target_score=11)
    assert isinstance(env, VecEnv) and is_masking_supported(env)
    env.seed(4)
    obs = env.reset()
    sobs, _ = single.reset(seed=4)
    np.testing.assert_array_equal(obs["observation"][0], sobs["observation"])
    while True:
        masks = get_action_masks(env)
        assert masks.shape == (3, 40) and masks.dtype == bool and masks.any(axis=1).all()
        np.testing.assert_array_equal(masks, obs["action_mask"] > 0)
        actions = np.argmax(masks, axis=1)
        obs, rewards, dones, infos = env.step(actions)
        sobs, srew, sterm, strunc, sinfo = single.step(int(actions[0]))
        assert rewards[0] == np.float32(srew) and dones[0] == (sterm or strunc)
        if dones[0]:
            break
        np.testing.assert_array_equal(obs["observation"][0], sobs["observation"])
    final = infos[0]["terminal_observation"]
    np.testing.assert_array_equal(final["observation"], sobs["observation"])
    assert infos[0]["winner"] == sinfo["winner"] and infos[0]["TimeLimit.truncated"] is False
    assert obs["action_mask"][0].any()  # already the next game's first state


def test_max_rounds_cut_is_a_timelimit_truncation():
    env = EscobaSB3VecEnv(2, opponents="random", max_rounds=1, target_score=21)
    env.seed(0)
    obs = env.reset()
    for _ in range(40):
        obs, rewards, dones, infos = env.step(np.argmax(obs["action_mask"], axis=1))
        if dones[0]:
            break
    assert dones[0] and infos[0]["TimeLimit.truncated"] is True


def test_maskable_ppo_learns_on_it_and_logs_episodes():
    env = make_vec_env(8, opponents="random", episode="round", reward="round_points")
    model = MaskablePPO("MultiInputPolicy", env, n_steps=16, batch_size=64, n_epochs=1, seed=0)
    model.learn(256)
    assert model.num_timesteps == 256 and len(model.ep_info_buffer) > 0
