"""Every observation lies inside its own space, on every face, over many whole games of every table.

The spaces' bounds are derived from the rules (``faces.observation_bounds``: escobas of a round, scores
to the saturation cap); an observation outside them breaks anything that trusts the space (a
normaliser by the bounds, a space check of a vectoriser, RLlib's env checker). Random play of whole
games to a low target (so scores run far past it, ties playing on) checks every entry of every
observation a face hands out, final observations included; ``test_observation_extremes.py`` plays to
the extremes that random play does not reach.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from escoba_env import EscobaGymVectorEnv, EscobaVectorEnv, Rules, SingleAgentEscobaEnv, escoba_v0

RULES = {
    "2p": Rules(target_score=4),
    "2p-21": Rules(),
    "3p": Rules(num_players=3, target_score=4),
    "4p": Rules(num_players=4, target_score=4, sevens_rule="primera"),
    "2v2": Rules(num_players=4, partnerships=True, target_score=4),
    "jokers-bonus": Rules(jokers=2, bonus_sweeps=True, last_play_escoba=True, target_score=3),
    "mesa-3p-joker": Rules(num_players=3, jokers=1, mesa_deal=True, target_score=3),
    "plain-single": Rules(prefer_single=True, initial_fifteen=False, sevens_rule="most_sevens_tiebreak",
                          target_score=4),
    "2v2-mesa-jokers": Rules(num_players=4, partnerships=True, mesa_deal=True, jokers=2, bonus_sweeps=True,
                             target_score=3),
}
"""Every table size (2, 3, 4 players, 2v2) and every variant, at low targets: many rounds a game."""


def assert_inside(box: gymnasium.spaces.Box, x: np.ndarray, where: str) -> None:
    """Assert that ``x`` (one observation, or a batch of them) lies inside ``box``, naming the entry."""
    x = np.asarray(x)
    assert x.dtype == np.float32 and x.shape[-1:] == box.shape[-1:], (where, x.dtype, x.shape)
    bad = (x < box.low) | (x > box.high)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{where}: entry {i} is {x[i]}, outside [{box.low[i[-1:]]}, {box.high[i[-1:]]}]")


class Dice:
    """An opponent that plays a uniformly random legal action (the agent protocol of the faces)."""

    needs_state = False

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, state=None) -> int:
        return int(self.rng.choice(np.flatnonzero(action_mask)))

    def act_batch(self, observations, action_masks, state=None) -> np.ndarray:
        return _random_legal(self.rng, action_masks)


def _random_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """Return one uniformly drawn legal action per row of ``masks``."""
    masks = np.atleast_2d(masks)
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], np.int64)


@pytest.mark.parametrize("name", sorted(RULES))
def test_pettingzoo_observations_and_states_lie_in_their_spaces(name):
    """escoba_v0: the observation of every agent at every step, and the global state, over whole games."""
    rules, rng = RULES[name], np.random.default_rng(0)
    env = escoba_v0.env(rules=rules)
    space = env.observation_space("player_0")["observation"]
    for game in range(10):
        env.reset(seed=100 + game)
        for agent in env.agent_iter():
            _, _, term, trunc, _ = env.last()
            for a in env.agents:
                assert_inside(space, env.observe(a)["observation"], f"{name} game {game} {a}")
            assert env.unwrapped.state_space.contains(env.state()), f"{name} game {game}: state"
            if term or trunc:
                env.step(None)
            else:
                env.step(int(_random_legal(rng, env.observe(agent)["action_mask"])[0]))


@pytest.mark.parametrize("name", sorted(RULES))
def test_gymnasium_single_agent_observations_lie_in_their_space(name):
    """SingleAgentEscobaEnv against random opponents, whole games, every learner seat."""
    rules, rng = RULES[name], np.random.default_rng(1)
    env = SingleAgentEscobaEnv(Dice(), seat=None, rules=rules)
    space = env.observation_space["observation"]
    for game in range(10):
        obs, _ = env.reset(seed=200 + game)
        done = False
        while not done:
            assert_inside(space, obs["observation"], f"{name} game {game}")
            obs, _, term, trunc, _ = env.step(int(_random_legal(rng, obs["action_mask"])[0]))
            done = term or trunc
        assert_inside(space, obs["observation"], f"{name} game {game}: final")


@pytest.mark.parametrize("name", sorted(RULES))
def test_gymnasium_vector_observations_lie_in_their_space(name):
    """EscobaGymVectorEnv (next-step autoreset: a game's final observation is the one its last step
    returns), 16 slots against random opponents, random learner seats, until 64 whole games ended."""
    rng, env = np.random.default_rng(2), EscobaGymVectorEnv(16, Dice(), seat=None, rules=RULES[name])
    space = env.single_observation_space["observation"]
    obs, _ = env.reset(seed=300)
    ended = 0
    while ended < 64:
        assert_inside(space, obs["observation"], name)
        assert env.observation_space.contains(obs), name
        obs, _, term, trunc, _ = env.step(_random_legal(rng, obs["action_mask"]))
        ended += int((term | trunc).sum())
    assert_inside(space, obs["observation"], name)


@pytest.mark.parametrize("name", sorted(RULES))
def test_selfplay_vector_observations_and_final_observations_lie_in_their_space(name):
    """EscobaVectorEnv (self-play, every seat): each step's observations, and every seat's final
    observation of each finished game, until 64 whole games ended."""
    rules, rng = RULES[name], np.random.default_rng(3)
    env = EscobaVectorEnv(16, rules)
    space = env.single_observation_space["observation"]
    obs, _ = env.reset(seed=400)
    ended = 0
    while ended < 64:
        assert env.observation_space.contains(obs), name
        obs, _, term, trunc, info = env.step(_random_legal(rng, obs["action_mask"]))
        ended += int((term | trunc).sum())
        for final in info["final_obs"]:
            assert_inside(space, final, f"{name}: final")


@pytest.mark.parametrize("name", ["2p", "2v2", "jokers-bonus"])
def test_sb3_vec_env_observations_and_terminal_observations_lie_in_their_space(name):
    """The SB3 ``VecEnv`` (same-step autoreset): observations and every terminal observation."""
    pytest.importorskip("stable_baselines3")
    from escoba_env.faces.sb3 import EscobaSB3VecEnv

    rng, env = np.random.default_rng(4), EscobaSB3VecEnv(8, Dice(), seat=None, rules=RULES[name])
    space = env.observation_space["observation"]
    obs, ended = env.reset(), 0
    while ended < 12:
        assert_inside(space, obs["observation"], name)
        obs, _, dones, infos = env.step(_random_legal(rng, env.action_masks()))
        for i in np.flatnonzero(dones):
            assert_inside(space, infos[i]["terminal_observation"]["observation"], f"{name}: terminal")
        ended += int(dones.sum())


@pytest.mark.parametrize("name", sorted(RULES))
def test_openspiel_observation_tensors_lie_in_the_faces_space(name):
    """OpenSpiel declares no bounds for ``observation_tensor``: it is the faces' observation vector, so
    every player's tensor at every decision of whole games, and at their end, lies in the faces'
    space."""
    pytest.importorskip("pyspiel")
    from escoba_env.faces import openspiel as eos
    from escoba_env.faces.common import observation_space

    rules, rng = RULES[name], np.random.default_rng(5)
    game = eos.load_game(**rules.to_dict(), episode="game")
    space = observation_space(rules)["observation"]
    for g in range(2):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[rng.integers(len(outcomes))][0])
                continue
            for p in range(rules.num_players):
                assert_inside(space, np.asarray(state.observation_tensor(p), np.float32), f"{name} game {g}")
            state.apply_action(int(rng.choice(state.legal_actions())))
        for p in range(rules.num_players):  # the end: the final scores
            assert_inside(space, np.asarray(state.observation_tensor(p), np.float32), f"{name} game {g}: end")


@pytest.mark.slow  # importing RLlib takes about 10 s
@pytest.mark.parametrize("name", ["2p", "2v2", "jokers-bonus"])
def test_rllib_observations_lie_in_their_spaces(name):
    """RLlib's envs (masking keys renamed): every observation of whole games, multi- and single-agent."""
    pytest.importorskip("ray")
    from escoba_env.faces.rllib import EscobaMultiAgentEnv, EscobaSingleAgentEnv

    rules, rng = RULES[name], np.random.default_rng(6)
    multi = EscobaMultiAgentEnv({"rules": rules})
    for game in range(4):
        obs, _ = multi.reset(seed=500 + game)
        done = False
        while not done:
            (agent, o), = obs.items()
            assert_inside(multi.observation_spaces[agent]["observations"], o["observations"], name)
            obs, _, term, trunc, _ = multi.step({agent: int(_random_legal(rng, o["action_mask"])[0])})
            done = term["__all__"] or trunc["__all__"]
            for final in obs.values():
                assert_inside(multi.observation_spaces[agent]["observations"], final["observations"], name)
    single = EscobaSingleAgentEnv({"opponents": Dice(), "rules": rules})
    for game in range(4):
        o, _ = single.reset(seed=600 + game)
        done = False
        while not done:
            assert_inside(single.observation_space["observations"], o["observations"], name)
            o, _, term, trunc, _ = single.step(int(_random_legal(rng, o["action_mask"])[0]))
            done = term or trunc
        assert_inside(single.observation_space["observations"], o["observations"], f"{name}: final")
