"""Faults a face could let in, each caught here (the planted change is named in each test's docstring)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from escoba_env import Rules, SingleAgentEscobaEnv, escoba_v0
from escoba_env.executors.state import PLANES
from escoba_env.faces.gym_vector import PLACEHOLDER_ACTION, EscobaGymVectorEnv
from escoba_env.faces.opponent_specs import RandomOpponent


def test_same_step_final_info_seat_is_the_seat_of_the_game_that_ended():
    """Planted: ``final_info["seat"]`` read after the slot restarts (the next game's seat, seat=None)."""
    env = EscobaGymVectorEnv(8, seat=None, episode="round", autoreset_mode=AutoresetMode.SAME_STEP)
    obs, info = env.reset(seed=4)
    seats = info["seat"].copy()
    rng = np.random.default_rng(0)
    changed = checked = 0
    for _ in range(300):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, _, term, trunc, info = env.step(acts)
        done = term | trunc
        for i in np.flatnonzero(done):
            assert info["final_info"]["seat"][i] == seats[i], f"slot {i}: final seat"
            checked += 1
            changed += int(info["seat"][i] != seats[i])
        seats = info["seat"].copy()
        if changed >= 2:
            break
    assert checked and changed >= 2, "no game ended with a new seat drawn for the next one"


@pytest.mark.parametrize("rules", [Rules(), Rules(num_players=3), Rules(num_players=4, partnerships=True)],
                         ids=["2p", "3p", "2v2"])
def test_seat_none_draws_every_seat(rules):
    """Planted: the seat drawn from ``num_players - 1`` values (the last seat never drawn)."""
    p = rules.num_players
    env = EscobaGymVectorEnv(48, seat=None, rules=rules, episode="round")
    _, info = env.reset(seed=0)
    assert set(info["seat"].tolist()) == set(range(p))
    single = SingleAgentEscobaEnv(RandomOpponent(rules), seat=None, rules=rules, episode="round")
    seen = {single.reset(seed=s)[1]["seat"] for s in range(40)}
    assert seen == set(range(p))


def test_sb3_vec_env_later_resets_deal_new_games():
    """Planted: the SB3 VecEnv keeps the ``seed()`` seed for every later ``reset()`` (the same games)."""
    pytest.importorskip("stable_baselines3")
    from escoba_env.faces.sb3 import EscobaSB3VecEnv

    env = EscobaSB3VecEnv(4, opponents="random")
    env.seed(7)
    first = env.reset()["observation"].copy()
    second = env.reset()["observation"]
    assert all(not np.array_equal(first[i], second[i]) for i in range(4))
    env.seed(7)
    np.testing.assert_array_equal(env.reset()["observation"], first)


def test_state_has_no_seat_to_act_once_the_game_is_over():
    """Planted: ``state()`` keeps the to-act one-hot set after the game ends."""
    env = escoba_v0.raw_env(episode="round")
    env.reset(seed=2)
    w = env.rules.num_cards
    to_act = slice(PLANES * w + 8, PLANES * w + 12)
    rng = np.random.default_rng(1)
    while not env.game.done:
        assert env.state()[to_act].sum() == 1.0
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    assert env.state()[to_act].tolist() == [0.0] * 4


def test_reset_right_after_a_game_end_starts_clean():
    """Planted: ``reset()`` keeps the NEXT_STEP placeholder rows (its masks offer only the placeholder,
    and the next step ignores the fresh game's first action, starting yet another game)."""
    env = EscobaGymVectorEnv(3, episode="round")
    obs, _ = env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(300):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, _, term, trunc, _ = env.step(acts)
        if (term | trunc).any():
            break
    assert (term | trunc).any() and env.action_masks()[term | trunc, PLACEHOLDER_ACTION].all()
    fresh = EscobaGymVectorEnv(3, episode="round")
    want, _ = fresh.reset(seed=9)
    got, _ = env.reset(seed=9)
    np.testing.assert_array_equal(got["action_mask"], want["action_mask"])
    np.testing.assert_array_equal(env.action_masks(), fresh.action_masks())
    acts = np.array([np.flatnonzero(m)[-1] for m in got["action_mask"]])
    got, _, _, _, info = env.step(acts)
    want, _, _, _, _ = fresh.step(acts)
    assert not info["autoreset"].any()
    np.testing.assert_array_equal(got["observation"], want["observation"])
