"""The three faces are one game: same seed and same actions give the same trajectory in each."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from agents.base import Agent
from escoba_env import EscobaVectorEnv, SingleAgentEscobaEnv, escoba_v0

SEED = 20
CONFIGS = {
    "2p game": {},
    "3p round": {"num_players": 3, "episode": "round"},
    "2v2 round points": {"num_players": 4, "partnerships": True, "reward": "round_points", "target_score": 8},
    "2p truncated": {"max_rounds": 2, "reward": "round_points"},
}


def choose(obs: np.ndarray, mask: np.ndarray) -> int:
    """Return a legal action that depends only on the observation (its CRC picks the index)."""
    legal = np.flatnonzero(mask)
    return int(legal[zlib.crc32(np.ascontiguousarray(obs).tobytes()) % len(legal)])


class HashAgent(Agent):
    """The ``choose`` policy as an agent (deterministic, no randomness)."""

    name = "hash"

    def act_batch(self, observations, action_masks, state=None):
        return np.array([choose(o, m) for o, m in zip(observations, action_masks, strict=True)])


def aec_trajectory(config):
    """Return per-step (seat, obs, mask, action, rewards per seat), final obs per seat and flags."""
    env = escoba_v0.raw_env(**config)
    env.reset(seed=SEED)
    p = len(env.possible_agents)
    steps = []
    while not any(env.terminations.values()) and not any(env.truncations.values()):
        agent = env.agent_selection
        obs = env.observe(agent)
        a = choose(obs["observation"], obs["action_mask"])
        env.step(a)
        rewards = [env.rewards[f"player_{s}"] for s in range(p)]
        steps.append((int(agent.split("_")[1]), obs["observation"].copy(), obs["action_mask"].copy(), a,
                      rewards))
    final = np.stack([env.observe(f"player_{s}")["observation"] for s in range(p)])
    return steps, final, any(env.terminations.values()), any(env.truncations.values())


@pytest.mark.parametrize("name", CONFIGS)
def test_vector_env_game_zero_follows_the_aec_trajectory(name):
    config = CONFIGS[name]
    steps, final, terminated, truncated = aec_trajectory(config)
    assert len(steps) >= 36 and terminated != truncated
    assert truncated == ("max_rounds" in config)
    env = EscobaVectorEnv(3, **config)
    obs, _ = env.reset(seed=SEED)
    for i, (seat, o, m, a, rewards) in enumerate(steps):
        assert int(obs["to_act"][0]) == seat, f"step {i}"
        np.testing.assert_array_equal(obs["observation"][0], o, err_msg=f"step {i}")
        np.testing.assert_array_equal(obs["action_mask"][0], m, err_msg=f"step {i}")
        actions = np.array([choose(obs["observation"][g], obs["action_mask"][g]) for g in range(3)])
        assert actions[0] == a
        obs, rew, term, trunc, infos = env.step(actions)
        assert rew[0].tolist() == rewards, f"step {i}"
        last = i == len(steps) - 1
        assert (bool(term[0]), bool(trunc[0])) == ((terminated, truncated) if last else (False, False))
    k = int(np.flatnonzero(infos["final_index"] == 0)[0])
    np.testing.assert_array_equal(infos["final_obs"][k], final)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("seat", [0, 1])
def test_single_agent_env_follows_the_aec_trajectory(name, seat):
    config = CONFIGS[name]
    steps, final, terminated, truncated = aec_trajectory(config)
    env = SingleAgentEscobaEnv(HashAgent(), seat=seat, **config)
    obs, info = env.reset(seed=SEED)
    reward = pending_reward = 0.0
    turns = 0
    for i, (s, o, m, a, rewards) in enumerate(steps):
        if s == seat:
            np.testing.assert_array_equal(obs["observation"], o, err_msg=f"step {i}")
            np.testing.assert_array_equal(obs["action_mask"], m, err_msg=f"step {i}")
            if turns:
                assert reward == pending_reward, f"step {i}"
            assert choose(obs["observation"], obs["action_mask"]) == a
            obs, reward, term, trunc, info = env.step(a)
            pending_reward = 0.0
            turns += 1
        pending_reward += rewards[seat]
    assert reward == pending_reward
    assert (term, trunc) == (terminated, truncated)
    np.testing.assert_array_equal(obs["observation"], final[seat])
