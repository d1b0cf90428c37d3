"""The Gymnasium vector env (make_vec): equivalence with the single-agent env, autoreset, wrappers."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers.vector import DictInfoToList, FilterObservation, RecordEpisodeStatistics

import escoba_env  # noqa: F401  (registers the id)
from agents.heuristic.greedy import GreedyAgent
from escoba_env import EscobaEngine, SingleAgentEscobaEnv
from escoba_env.faces.gym_vector import PLACEHOLDER_ACTION, EscobaGymVectorEnv
from escoba_env.faces.opponent_specs import RandomOpponent


def lowest(masks: np.ndarray) -> np.ndarray:
    """The learner policy of these tests: the legal action with the lowest id."""
    return np.argmax(np.asarray(masks) > 0, axis=-1)


class ActOnly:
    """A deterministic opponent with ``act`` only (no ``act_batch``): greedy, one game at a time."""

    def __init__(self):
        self.inner = GreedyAgent()

    def act(self, observation, action_mask, state=None):
        return self.inner.act(observation, action_mask)


def make_vec(n: int, **kwargs) -> VectorEnv:
    return gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=n, vectorization_mode="vector_entry_point",
                              **kwargs)


def test_make_vec_is_a_gymnasium_vector_env():
    env = make_vec(3, num_players=3, target_score=11)
    assert isinstance(env, VectorEnv) and isinstance(env, EscobaGymVectorEnv)
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP  # Gymnasium's default
    assert env.spec.id == "escoba_env/Escoba-v0"
    assert env.rules.num_players == 3 and env.rules.target_score == 11
    obs, info = env.reset(seed=4)
    assert obs["observation"].shape == (3, 546) and obs["observation"].dtype == np.float32
    assert obs["action_mask"].shape == (3, 40) and obs["action_mask"].dtype == np.int8
    assert obs in env.observation_space
    assert env.action_space.shape == (3,) and env.single_action_space.n == 40
    np.testing.assert_array_equal(env.action_masks(), obs["action_mask"] > 0)
    np.testing.assert_array_equal(info["seat"], [0, 0, 0])
    obs, rew, term, trunc, info = env.step(lowest(obs["action_mask"]))
    assert rew.shape == (3,) and rew.dtype == np.float32 and term.shape == trunc.shape == (3,)


@pytest.mark.parametrize("opponent", [GreedyAgent(), ActOnly()], ids=["act_batch", "act_only"])
def test_slot_0_plays_the_single_agent_game_of_the_same_seed(opponent):
    """Slot 0 of reset(seed=s) is the single-agent env's game of seed s, step for step, to the end."""
    vec = EscobaGymVectorEnv(3, opponents=opponent, target_score=11, autoreset_mode="same_step")
    assert vec.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    single = SingleAgentEscobaEnv(opponent, target_score=11)
    vobs, _ = vec.reset(seed=11)
    sobs, _ = single.reset(seed=11)
    steps = 0
    while True:
        np.testing.assert_array_equal(vobs["observation"][0], sobs["observation"])
        np.testing.assert_array_equal(vobs["action_mask"][0], sobs["action_mask"])
        actions = lowest(vobs["action_mask"])
        vobs, vrew, vterm, vtrunc, vinfo = vec.step(actions)
        sobs, srew, sterm, strunc, sinfo = single.step(int(actions[0]))
        steps += 1
        assert vrew[0] == np.float32(srew) and vterm[0] == sterm and vtrunc[0] == strunc
        if sterm or strunc:
            break
    assert vinfo["final_info"]["rounds"][0] >= 2 and steps > 40  # several rounds, then the end
    # SAME_STEP: the final observation is in infos, the returned row is the next game's first.
    assert vinfo["_final_obs"][0] and vinfo["_final_info"][0]
    np.testing.assert_array_equal(vinfo["final_obs"][0]["observation"], sobs["observation"])
    assert vinfo["final_info"]["winner"][0] == sinfo["winner"]
    assert abs(vrew[0]) == 1.0
    assert vec.engine.scores[0].sum() == 0 and vec.engine.episode[0] == 1
    assert vobs["action_mask"][0].sum() > 0 and vinfo["seat"][0] == 0


def test_next_step_autoreset_ends_with_the_final_observation_then_restarts():
    vec = EscobaGymVectorEnv(2, opponents=GreedyAgent(), target_score=11)
    single = SingleAgentEscobaEnv(GreedyAgent(), target_score=11)
    vobs, _ = vec.reset(seed=11)
    sobs, _ = single.reset(seed=11)
    while True:
        actions = lowest(vobs["action_mask"])
        vobs, vrew, vterm, vtrunc, vinfo = vec.step(actions)
        sobs, srew, sterm, strunc, sinfo = single.step(int(actions[0]))
        np.testing.assert_array_equal(vobs["observation"][0], sobs["observation"])
        assert vrew[0] == np.float32(srew) and vterm[0] == sterm
        if sterm:
            break
    assert vinfo["_winner"][0] and vinfo["winner"][0] == sinfo["winner"] and vinfo["rounds"][0] >= 2
    # the final state offers no move: its mask offers the placeholder alone, which the next step ignores
    np.testing.assert_array_equal(np.flatnonzero(vobs["action_mask"][0]), [PLACEHOLDER_ACTION])
    np.testing.assert_array_equal(np.flatnonzero(vec.action_masks()[0]), [PLACEHOLDER_ACTION])
    assert not vinfo["autoreset"][0]
    if vterm[1]:  # both ended together: nothing else to check about slot 1
        pytest.skip("slot 1 ended on the same step")
    a = lowest(vobs["action_mask"])
    a[0] = 99  # ignored: slot 0 restarts
    vobs, vrew, vterm, vtrunc, vinfo = vec.step(a)
    assert vrew[0] == 0 and not vterm[0] and not vtrunc[0] and vinfo["autoreset"][0]
    assert vec.engine.episode[0] == 1 and vec.engine.scores[0].sum() == 0
    assert vobs["action_mask"][0].sum() > 0 and vec.engine.to_act[0] == 0


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_record_episode_statistics_agrees_with_the_rewards(mode):
    env = RecordEpisodeStatistics(make_vec(4, episode="round", reward="round_points", opponents="random",
                                           autoreset_mode=mode))
    next_step = mode == "NextStep"
    obs, _ = env.reset(seed=2)
    returns, lengths = np.zeros(4), np.zeros(4, np.int64)
    finished = 0
    for _ in range(60):
        restarting = env.unwrapped._autoreset.copy()
        obs, rew, term, trunc, info = env.step(lowest(obs["action_mask"]))
        returns += rew
        lengths += ~restarting
        done = term | trunc
        assert not trunc.any() and not (rew[restarting]).any()
        if done.any():
            np.testing.assert_array_equal(info["_episode"], done)
            np.testing.assert_allclose(info["episode"]["r"][done], returns[done])
            np.testing.assert_array_equal(info["episode"]["l"][done], lengths[done])
            if next_step:
                np.testing.assert_array_equal(info["_winner"], done)
            else:
                np.testing.assert_array_equal(info["_final_obs"], done)
                assert all(o is None for o in info["final_obs"][~done])
            # reward="round_points" with two sides: the learner's (seat 0) round points minus the other's
            assert info["_round_points"][done].all()
            pts = info["round_points"][done]
            np.testing.assert_array_equal(rew[done], pts[:, 0] - pts[:, 1])
            finished += int(done.sum())
            returns[done], lengths[done] = 0, 0
    assert finished >= 8 and len(env.return_queue) == finished


def test_standard_vector_wrappers():
    env = DictInfoToList(FilterObservation(make_vec(2, episode="round"), ["observation"]))
    obs, infos = env.reset(seed=0)
    assert set(obs) == {"observation"} and isinstance(infos, list) and infos[1]["seat"] == 0
    masks = env.unwrapped.action_masks()
    obs, rew, term, trunc, infos = env.step(lowest(masks))
    assert len(infos) == 2


def test_same_seed_same_games_and_random_seats():
    def run():
        env = make_vec(4, seat=None, num_players=3, episode="round", opponents="random")
        obs, info = env.reset(seed=9)
        seats, total = [info["seat"].copy()], 0.0
        for _ in range(40):
            obs, rew, term, trunc, info = env.step(lowest(obs["action_mask"]))
            seats.append(info["seat"].copy())
            total += float(rew.sum())
        return np.array(seats), total, obs["observation"].copy()

    a, b = run(), run()
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])
    assert len(set(a[0].ravel().tolist())) > 1  # seats drawn per slot and episode


def test_illegal_action_raises_and_changes_nothing():
    env = make_vec(2)
    obs, _ = env.reset(seed=1)
    before = obs["observation"].copy()
    bad = lowest(obs["action_mask"])
    bad[1] = int(np.flatnonzero(obs["action_mask"][1] == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        env.step(bad)
    with pytest.raises(ValueError, match="one per slot"):
        env.step(np.zeros(3, np.int64))
    np.testing.assert_array_equal(env.unwrapped._observe()["observation"], before)
    with pytest.raises(ValueError, match="reset"):
        EscobaGymVectorEnv(1).step(np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="num_envs"):
        EscobaGymVectorEnv(0)
    with pytest.raises(ValueError, match="seat"):
        EscobaGymVectorEnv(1, seat=2)


def test_engine_steps_only_the_active_games():
    eng = EscobaEngine(3)
    eng.reset(5)
    other = EscobaEngine(3)
    other.reset(5)
    acts = np.array([int(np.flatnonzero(eng.legal_action_mask()[g])[0]) for g in range(3)])
    active = np.array([True, False, True])
    info = eng.step(acts, active)
    np.testing.assert_array_equal(info.actor, [other.to_act[0], -1, other.to_act[2]])
    assert eng.hands[1].tolist() == other.hands[1].tolist() and eng.table[1] == other.table[1]
    assert eng.hands[0].tolist() != other.hands[0].tolist()
    bad = acts.copy()
    bad[1] = 99  # an inactive game's action is not checked
    eng.step(bad, np.array([False, False, False]))
    with pytest.raises(ValueError, match="active"):
        eng.step(acts, np.array([1, 0, 1]))


def test_random_opponent_is_seeded():
    a, b = RandomOpponent(seed=3), RandomOpponent(seed=3)
    masks = np.ones((5, 40), np.int8)
    np.testing.assert_array_equal(a.act_batch(None, masks), b.act_batch(None, masks))


class StateChecker(GreedyAgent):
    """A ``needs_state`` opponent: checks that it gets the engine and the slots it plays."""

    needs_state = True

    def act_batch(self, observations, action_masks, state=None):
        engine, games = state
        assert isinstance(engine, EscobaEngine) and len(games) == len(observations)
        assert (engine.to_act[games] != 0).all()  # the learner sits at seat 0
        self.calls = getattr(self, "calls", 0) + 1
        return super().act_batch(observations, action_masks)


def test_an_opponent_that_needs_state_gets_the_engine_and_its_slots():
    opp = StateChecker()
    env = EscobaGymVectorEnv(3, opponents=opp)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        obs, *_ = env.step(lowest(obs["action_mask"]))
    assert opp.calls >= 5
