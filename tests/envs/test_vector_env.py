"""The batched self-play face ``EscobaVectorEnv``: shapes, rewards per seat, auto-reset, options."""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaEngine, EscobaVectorEnv, Rules
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import OBS_SIZE, action_masks, encode


def random_actions(env, rng):
    """Return one uniformly random legal action per game."""
    return sample_actions(env.engine.legal, rng.random(env.num_envs))


def test_reset_returns_batched_observations_of_the_seat_to_act():
    env = EscobaVectorEnv(5, num_players=3)
    obs, infos = env.reset(seed=4)
    assert infos == {}
    assert obs["observation"].shape == (5, OBS_SIZE) and obs["observation"].dtype == np.float32
    assert obs["action_mask"].shape == (5, 40) and obs["action_mask"].dtype == np.int8
    assert obs["to_act"].shape == (5,) and obs["to_act"].dtype == np.int64
    eng = env.engine
    np.testing.assert_array_equal(obs["to_act"], eng.to_act)
    np.testing.assert_array_equal(obs["observation"], encode(eng, eng.to_act))
    np.testing.assert_array_equal(obs["action_mask"], action_masks(eng, eng.to_act))
    assert env.observation_space.contains({k: v.copy() for k, v in obs.items()})


def test_step_returns_rewards_per_seat_and_flags_per_game():
    env = EscobaVectorEnv(6, num_players=4)
    env.reset(seed=1)
    obs, rew, term, trunc, infos = env.step(random_actions(env, np.random.default_rng(0)))
    assert rew.shape == (6, 4) and rew.dtype == np.float32
    assert term.shape == trunc.shape == (6,) and term.dtype == trunc.dtype == bool
    for key in ("actor", "round_over", "round_points", "scores", "_final", "final_index", "final_obs",
                "final_info"):
        assert key in infos
    assert infos["final_obs"].shape == (0, 4, OBS_SIZE)


def test_game_over_pays_plus_one_and_minus_one_and_auto_resets():
    env = EscobaVectorEnv(8, target_score=5)
    env.reset(seed=2)
    rng = np.random.default_rng(1)
    finished = 0
    for _ in range(2000):
        before_episode = env.engine.episode.copy()
        obs, rew, term, trunc, infos = env.step(random_actions(env, rng))
        done = term | trunc
        np.testing.assert_array_equal(infos["_final"], done)
        idx = infos["final_index"]
        np.testing.assert_array_equal(idx, np.flatnonzero(done))
        assert infos["final_obs"].shape == (len(idx), 2, OBS_SIZE)
        np.testing.assert_array_equal(rew[~done], 0.0)
        for k, g in enumerate(idx):
            w = infos["final_info"]["winner"][k]
            assert rew[g].tolist() == [1.0 if s == w else -1.0 for s in range(2)]
            assert max(infos["final_info"]["scores"][k]) >= 5
            np.testing.assert_array_equal(infos["final_info"]["scores"][k], infos["scores"][g])
            # the final observation is seat-relative: slot 0 holds the observer's own score
            for s in range(2):
                own = infos["final_obs"][k, s, 524] * 5
                assert own == infos["final_info"]["scores"][k][s]
            assert env.engine.episode[g] == before_episode[g] + 1
            assert (env.engine.scores[g] == 0).all() and obs["observation"][g, 524] == 0.0
            assert infos["final_info"]["length"][k] >= 36
        finished += len(idx)
        if finished >= 10:
            break
    assert finished >= 10


def test_truncation_by_max_rounds_pays_nothing_and_is_reported():
    env = EscobaVectorEnv(4, max_rounds=1)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    cut = np.zeros(4, bool)
    for _ in range(200):
        obs, rew, term, trunc, infos = env.step(random_actions(env, rng))
        assert not term.any()  # every game is cut after its first round
        np.testing.assert_array_equal(rew, 0.0)
        np.testing.assert_array_equal(infos["_final"], trunc)
        assert infos["final_info"]["truncated"].all()
        assert (infos["final_info"]["winner"] == -1).all()
        assert (infos["final_info"]["rounds"] == 1).all()
        cut |= trunc
        if cut.all():
            break
    assert cut.all()


def test_round_points_rewards_are_shared_by_partners_and_zero_sum():
    env = EscobaVectorEnv(16, num_players=4, partnerships=True, reward="round_points")
    env.reset(seed=3)
    rng = np.random.default_rng(2)
    paid = 0
    for _ in range(150):
        _, rew, _, _, infos = env.step(random_actions(env, rng))
        np.testing.assert_array_equal(rew[:, 0], rew[:, 2])
        np.testing.assert_array_equal(rew[:, 1], rew[:, 3])
        np.testing.assert_array_equal(rew[:, 0], -rew[:, 1])
        pts = infos["round_points"]
        np.testing.assert_array_equal(rew[:, 0], pts[:, 0] - pts[:, 1])
        paid += int(infos["round_over"].sum())
    assert paid >= 16


def test_same_seed_gives_the_same_games_and_game_ids_differ():
    a, b = EscobaVectorEnv(3), EscobaVectorEnv(3)
    oa, _ = a.reset(seed=9)
    oa = {k: v.copy() for k, v in oa.items()}
    ob, _ = b.reset(seed=9)
    for k in oa:
        np.testing.assert_array_equal(oa[k], ob[k])
    assert not np.array_equal(a.engine.deck[0], a.engine.deck[1])


def test_game_zero_is_the_one_game_engine_of_the_same_seed():
    env = EscobaVectorEnv(4)
    env.reset(seed=17)
    one = EscobaEngine(1, Rules())
    one.reset(17)
    np.testing.assert_array_equal(env.engine.deck[0], one.deck[0])
    assert env.engine.dealer[0] == one.dealer[0]


def test_illegal_action_raises_and_changes_nothing():
    env = EscobaVectorEnv(3)
    env.reset(seed=0)
    before = {k: v.copy() for k, v in vars(env.engine).items() if isinstance(v, np.ndarray)}
    actions = random_actions(env, np.random.default_rng(0))
    legal1 = int(env.engine.legal[1])
    actions[1] = next(c for c in range(40) if not legal1 >> c & 1)
    with pytest.raises(ValueError, match="illegal action .* in game 1"):
        env.step(actions)
    for k, v in before.items():
        np.testing.assert_array_equal(v, getattr(env.engine, k), err_msg=k)


def test_options_apply_to_every_game():
    env = EscobaVectorEnv(3)
    env.reset(seed=0, options={"deck": list(range(40)), "dealer": 1})
    assert (env.engine.dealer == 1).all()
    assert (env.engine.hands[:, 0] == (1 << 0) | (1 << 2) | (1 << 4)).all()
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"decks": []})


def test_buffers_are_reused_between_steps():
    env = EscobaVectorEnv(2)
    obs, _ = env.reset(seed=0)
    obs2, rew, *_ = env.step(random_actions(env, np.random.default_rng(0)))
    assert obs2["observation"] is obs["observation"]
    _, rew2, *_ = env.step(random_actions(env, np.random.default_rng(1)))
    assert rew2 is rew


@pytest.mark.parametrize("kwargs, match", [
    ({"num_envs": 0}, "num_envs must be a positive int"),
    ({"num_envs": 2, "episode": "x"}, "episode must be one of"),
    ({"num_envs": 2, "reward": "x"}, "reward must be one of"),
    ({"num_envs": 2, "partnerships": True}, "partnerships needs exactly 4 players"),
])
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EscobaVectorEnv(**kwargs)


def test_observations_do_not_leak_hidden_cards():
    hands = [[0, 1, 2], [3, 4, 5]]
    table = [36, 37, 38, 39]
    stock = list(range(6, 36))
    other = {"dealer": 1, "hands": [hands[0], [6, 4, 5]], "table": table, "stock": [3] + stock[1:][::-1]}
    a, b = EscobaVectorEnv(2), EscobaVectorEnv(2)
    oa, _ = a.reset(seed=0, options={"dealer": 1, "hands": hands, "table": table, "stock": stock})
    ob, _ = b.reset(seed=0, options=other)
    assert (oa["to_act"] == 0).all()
    np.testing.assert_array_equal(oa["observation"], ob["observation"])
    np.testing.assert_array_equal(oa["action_mask"], ob["action_mask"])
