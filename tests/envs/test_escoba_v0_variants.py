"""The env faces with the rule variants of docs/rules.md §11: jokers (ids 40, 41) and escoba de mesa.

PettingZoo's conformance tests run for each variant in tests/envs/test_pettingzoo.py; here: the spaces
and masks sized by ``rules.num_cards``, no leaks with jokers in hidden places, and the three faces agreeing.
"""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaVectorEnv, SingleAgentEscobaEnv, escoba_v0
from escoba_env.executors import observation
from escoba_env.executors.engine import sample_actions
from tests.envs.test_pettingzoo import VARIANTS, assert_player_0_sees_the_same, random_action
from tests.helpers import M, ids

JOKERS = (40, 41)


@pytest.mark.parametrize("jokers", [0, 1, 2])
def test_spaces_and_masks_are_num_cards_wide(jokers):
    env = escoba_v0.raw_env(jokers=jokers)
    w = 40 + jokers
    size = 13 * w + 26
    assert observation.obs_size(env.rules) == size
    assert env.action_space("player_1").n == w
    space = env.observation_space("player_0")
    assert space["observation"].shape == (size,) and space["action_mask"].shape == (w,)
    env.reset(seed=5)
    for agent in env.agents:
        obs = env.observe(agent)
        assert obs["observation"].shape == (size,) and obs["action_mask"].shape == (w,)
        assert space.contains(obs)
    acting = env.observe(env.agent_selection)
    np.testing.assert_array_equal(acting["action_mask"], acting["observation"][:w].astype(np.int8))


def test_joker_actions_are_played_and_shown_in_the_planes():
    env = escoba_v0.raw_env(jokers=2, legal_moves_info=True)
    hands = [ids("1o 2o 3o"), ids("4c 5c 6c")]
    hands[0][0] = 40  # seat 0 holds *1 2o 3o
    table = ids("Sb Cb Rb 1e")
    stock = [c for c in range(42) if c not in hands[0] + hands[1] + table]
    env.reset(seed=0, options={"dealer": 1, "hands": hands, "table": table, "stock": stock})
    obs = env.observe("player_0")["observation"]
    w = 42
    assert obs[40] == 1.0 and obs[41] == 0.0  # own hand: *1, not *2
    unseen = obs[w * observation.PLANE["unseen"]: w * (observation.PLANE["unseen"] + 1)]
    assert unseen[41] == 1.0 and unseen[40] == 0.0
    # *1 is worth any of 1..10: it takes one of Sb Cb Rb (15 - 7..5) or one of them with 1e
    expect = [(4, 0), (8, 0)] + [(40, M(t)) for t in ("Sb", "Cb", "Rb", "Sb 1e", "Cb 1e", "Rb 1e")]
    assert sorted(env.infos["player_0"]["legal_moves"]) == sorted(expect)
    env.step(40)
    assert env.engine.played[0, 0] >> 40 & 1


def test_illegal_joker_id_without_jokers_is_out_of_range():
    env = escoba_v0.raw_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"not a card id 0\.\.39"):
        env.step(40)
    env = escoba_v0.raw_env(jokers=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"not a card id 0\.\.40"):
        env.step(41)


def joker_leak_deals():
    """Return two 2-player jokers=2 deals that differ only in seat 1's hand and the stock order.

    In the first, seat 1 holds *1; in the second, *1 is in the stock and seat 1 holds a plain card.
    """
    hands = [ids("1o 2o 3o"), [40] + ids("5c 6c")]
    table = ids("Sb Cb Rb 1e")
    used = hands[0] + hands[1] + table
    stock = [c for c in range(42) if c not in used]
    other_hands = [hands[0], [stock[0]] + hands[1][1:]]
    other_stock = [40] + stock[1:]
    return ({"dealer": 1, "hands": hands, "table": table, "stock": stock},
            {"dealer": 1, "hands": other_hands, "table": table, "stock": other_stock[::-1]})


def test_observation_does_not_leak_a_joker_in_another_hand_or_the_stock():
    a_opts, b_opts = joker_leak_deals()
    a, b = escoba_v0.raw_env(jokers=2), escoba_v0.raw_env(jokers=2)
    a.reset(seed=1, options=a_opts)
    b.reset(seed=1, options=b_opts)
    assert int(a.engine.hands[0, 1]) >> 40 & 1 and not int(b.engine.hands[0, 1]) >> 40 & 1
    assert_player_0_sees_the_same(a, b, ids("1o")[0])


@pytest.mark.parametrize("name", VARIANTS)
def test_random_games_end_with_every_card_accounted_for(name):
    env = escoba_v0.raw_env(**VARIANTS[name])
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    w = env.rules.num_cards
    while not any(env.terminations.values()):
        assert env.engine.card_count()[0] == w
        env.step(random_action(env, rng))
    assert all(env.terminations.values())
    winner = env.infos["player_0"]["winner"]
    assert max(env.infos["player_0"]["scores"]) >= env.rules.target_score and winner >= 0
    assert [env.rewards[a] for a in env.possible_agents] == [
        1.0 if env.rules.side_of(s) == winner else -1.0 for s in range(env.rules.num_players)]


@pytest.mark.parametrize("name", VARIANTS)
def test_vector_env_game_zero_is_the_aec_game(name):
    config = VARIANTS[name]
    aec = escoba_v0.raw_env(**config)
    aec.reset(seed=11)
    vec = EscobaVectorEnv(3, **config)
    obs, _ = vec.reset(seed=11)
    w = aec.rules.num_cards
    assert obs["action_mask"].shape == (3, w)
    assert obs["observation"].shape == (3, observation.obs_size(aec.rules))
    rng = np.random.default_rng(0)
    for _ in range(150):
        agent = aec.agent_selection
        o = aec.observe(agent)
        np.testing.assert_array_equal(o["observation"], obs["observation"][0])
        np.testing.assert_array_equal(o["action_mask"], obs["action_mask"][0])
        a = random_action(aec, rng)
        actions = sample_actions(vec.engine.legal, rng.random(3))
        actions[0] = a
        aec.step(a)
        obs, rew, term, trunc, _ = vec.step(actions)
        if term[0] or trunc[0]:
            break
        assert rew[0].tolist() == [aec.rewards[f"player_{s}"] for s in range(vec.num_players)]


@pytest.mark.parametrize("name", ["jokers=2", "jokers=2 mesa"])
def test_single_agent_env_plays_the_variant(name):
    from agents.base import RandomAgent

    env = SingleAgentEscobaEnv(RandomAgent(seed=0), **VARIANTS[name])
    w = env.rules.num_cards
    assert env.action_space.n == w
    obs, info = env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(400):
        mask = env.action_masks()
        assert mask.shape == (w,)
        np.testing.assert_array_equal(mask, obs["action_mask"].astype(bool))
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert env.observation_space.contains(obs)
        if term or trunc:
            break
    assert term or trunc
