"""The Gymnasium single-agent face: API conformance, opponents, seats, illegal actions, MaskablePPO."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agents.base import Agent, RandomAgent
from escoba_env import SingleAgentEscobaEnv, escoba_v0
from tests.helpers import C, ids

CONFIGS = {
    "2p": {},
    "3p": {"num_players": 3, "seat": None},
    "2v2": {"num_players": 4, "partnerships": True, "seat": 2},
}


class LowestAgent(Agent):
    """Plays the legal action with the lowest id (deterministic)."""

    name = "lowest"

    def act_batch(self, observations, action_masks, state=None):
        return np.argmax(np.asarray(action_masks) > 0, axis=1)


class StateRecorder(LowestAgent):
    """A ``needs_state`` agent that records the state it is handed."""

    needs_state = True

    def act(self, observation, action_mask, state=None):
        self.states = getattr(self, "states", []) + [state]
        return super().act(observation, action_mask, state)


def play_random(env, rng, seed):
    """Play one episode with uniformly random legal actions; return (steps, total reward, last info)."""
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        a = int(rng.choice(np.flatnonzero(env.action_masks())))
        obs, r, term, trunc, info = env.step(a)
        total += r
        steps += 1
        if term or trunc:
            return steps, total, info


@pytest.mark.parametrize("name", CONFIGS)
def test_check_env_passes(name):
    env = SingleAgentEscobaEnv(RandomAgent(), **CONFIGS[name])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Not able to test alternative render modes.*")
        check_env(env)


@pytest.mark.parametrize("mode", ["ansi", "human"])
def test_render_modes(mode, capsys):
    env = SingleAgentEscobaEnv(RandomAgent(), render_mode=mode)
    env.reset(seed=0)
    out = env.render()
    if mode == "ansi":
        assert "player_0 to act · hand:" in out
    else:
        assert out is None
        assert "player_0 to act · hand:" in capsys.readouterr().out


def test_observation_matches_the_pettingzoo_env_for_the_learner_seat():
    env = SingleAgentEscobaEnv(RandomAgent(), seat=1, legal_moves_info=True)
    obs, info = env.reset(seed=12)
    aec = escoba_v0.raw_env(legal_moves_info=True)
    aec.reset(seed=12)
    while aec.agent_selection != "player_1":  # replay the opponent's moves in the AEC env
        played = np.flatnonzero(env.engine.played[0, 0] >> np.arange(40, dtype=np.uint64) & 1)
        aec.step(int(played[0]))
    np.testing.assert_array_equal(obs["observation"], aec.observe("player_1")["observation"])
    np.testing.assert_array_equal(obs["action_mask"], aec.observe("player_1")["action_mask"])
    assert info["legal_moves"] == aec.infos["player_1"]["legal_moves"]
    assert info["seat"] == 1


def test_action_masks_match_the_observation_mask_and_are_bool():
    env = SingleAgentEscobaEnv(RandomAgent(), num_players=3)
    obs, _ = env.reset(seed=1)
    m = env.action_masks()
    assert m.dtype == bool and m.shape == (40,)
    np.testing.assert_array_equal(m, obs["action_mask"] > 0)


def test_random_seat_is_drawn_per_episode_from_the_seed():
    env = SingleAgentEscobaEnv(RandomAgent(), seat=None, num_players=4)
    seats = []
    for s in range(12):
        _, info = env.reset(seed=s)
        seats.append(info["seat"])
        assert int(env.engine.to_act[0]) == info["seat"]
    assert len(set(seats)) > 1
    again = [env.reset(seed=s)[1]["seat"] for s in range(12)]
    assert again == seats


def test_episode_reward_is_the_game_result_for_the_learner():
    env = SingleAgentEscobaEnv(RandomAgent(), seat=1)
    rng = np.random.default_rng(0)
    results = set()
    for seed in range(4):
        _, total, info = play_random(env, rng, seed)
        assert total == (1.0 if info["winner"] == 1 else -1.0)
        results.add(total)
    assert results == {1.0, -1.0}


def test_round_points_reward_sums_round_differences():
    env = SingleAgentEscobaEnv(RandomAgent(), reward="round_points", num_players=3, seat=2)
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(1)
    total, expected = 0.0, 0
    while True:
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        total += r
        if "round_points" in info:
            pts = info["round_points"]
            expected += pts[2] - max(pts[0], pts[1])
            assert r == pts[2] - max(pts[0], pts[1])
        else:
            assert r == 0.0
        if term or trunc:
            break
    assert total == expected


def test_list_of_opponents_plays_seats_in_order_after_the_learner():
    a, b, c = LowestAgent(), StateRecorder(), LowestAgent()
    env = SingleAgentEscobaEnv([a, b, c], seat=1, num_players=4)
    assert env._opponent_of(2) is a and env._opponent_of(3) is b and env._opponent_of(0) is c
    env.reset(seed=0, options={"dealer": 1})  # seat 2 (a) plays first, then 3 (b), 0 (c), then us
    assert len(b.states) == 1
    engine, games = b.states[0]
    assert engine is env.engine and games.tolist() == [0]


def test_only_needs_state_agents_receive_the_engine():
    class Spy(LowestAgent):
        def act(self, observation, action_mask, state=None):
            assert state is None
            return super().act(observation, action_mask, state)

    env = SingleAgentEscobaEnv(Spy(), seat=0)
    env.reset(seed=3)
    env.step(int(np.flatnonzero(env.action_masks())[0]))


def test_illegal_action_terminates_with_illegal_reward_by_default():
    env = SingleAgentEscobaEnv(RandomAgent(), seat=0)
    used = ids("7o 1c 4b 6e Rc 2b Sb 3o 5c 2e")
    stock = [c for c in range(40) if c not in used]
    env.reset(seed=0, options={"dealer": 1, "hands": [ids("7o 1c 4b"), ids("6e Rc 2b")],
                                "table": ids("Sb 3o 5c 2e"), "stock": stock})
    obs, r, term, trunc, info = env.step(C("2e"))
    assert (r, term, trunc) == (-1.0, True, False)
    assert info["illegal_action"] == C("2e") and info["legal_actions"] == ids("1c 4b 7o")
    with pytest.raises(ValueError, match="call reset"):
        env.step(C("1c"))


def test_illegal_action_raises_when_asked_and_state_is_unchanged():
    env = SingleAgentEscobaEnv(RandomAgent(), illegal_action="raise", illegal_reward=-5)
    env.reset(seed=0)
    before = {k: v.copy() for k, v in vars(env.engine).items() if isinstance(v, np.ndarray)}
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(ValueError, match=rf"illegal action {illegal} .* for the learner \(seat 0\)"):
        env.step(illegal)
    for k, v in before.items():
        np.testing.assert_array_equal(v, getattr(env.engine, k), err_msg=k)
    env.step(int(np.flatnonzero(env.action_masks())[0]))


def test_an_opponent_that_plays_illegally_is_reported():
    class Cheater(Agent):
        def act_batch(self, observations, action_masks, state=None):
            return np.argmin(np.asarray(action_masks), axis=1)

    env = SingleAgentEscobaEnv(Cheater(), seat=0)
    env.reset(seed=0, options={"dealer": 1})  # the learner plays first
    with pytest.raises(ValueError, match=r"opponent Cheater\('agent'\) \(seat 1\)"):
        env.step(int(np.flatnonzero(env.action_masks())[0]))


@pytest.mark.parametrize("kwargs, match", [
    ({"opponents": [RandomAgent()], "num_players": 3}, "list of 2 agents"),
    ({"opponents": object()}, "has no act"),
    ({"opponents": RandomAgent(), "seat": 2}, r"seat must be None \(random\) or a seat in 0..1"),
    ({"opponents": RandomAgent(), "illegal_action": "ignore"}, "illegal_action must be one of"),
    ({"opponents": RandomAgent(), "episode": "set"}, "episode must be one of"),
    ({"opponents": RandomAgent(), "reward": "win"}, "reward must be one of"),
])
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SingleAgentEscobaEnv(**kwargs)


def test_bad_reset_options_raise():
    env = SingleAgentEscobaEnv(RandomAgent())
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"seat": 1})


def test_maskable_ppo_trains_a_few_hundred_steps():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = SingleAgentEscobaEnv(RandomAgent(), seat=None, episode="round", reward="round_points")
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=2,
                                    seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    obs, _ = env.reset(seed=1)
    for _ in range(40):
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        assert mask[int(action)], "the masked policy chose an illegal action"
        obs, _, term, trunc, _ = env.step(int(action))
        if term or trunc:
            obs, _ = env.reset()


def test_same_seed_same_episode_with_global_rngs_disturbed():
    import random

    def run(disturb):
        env = SingleAgentEscobaEnv(RandomAgent(), seat=None, num_players=3)
        obs, info = env.reset(seed=42)
        out = [(info["seat"], obs["observation"].tobytes())]
        rng = np.random.default_rng(0)
        for _ in range(60):
            if disturb:  # the legacy global generators must play no part in the game
                np.random.seed(random.randrange(2**32))  # noqa: NPY002
                random.seed(np.random.randint(2**31))  # noqa: NPY002
            obs, r, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            out.append((r, obs["observation"].tobytes()))
            if term or trunc:
                break
        return out

    assert run(False) == run(True)
