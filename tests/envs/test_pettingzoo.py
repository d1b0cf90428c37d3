"""The PettingZoo face ``escoba_v0``: API conformance, observations, masks, infos, rewards, options."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import random
import warnings

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, render_test, seed_test

from escoba_env import Rules, escoba_v0
from escoba_env.executors import observation
from escoba_env.rulebook.cards import FULL_DECK
from tests.helpers import C, M, ids

CONFIGS = {
    "2p": {},
    "3p": {"num_players": 3},
    "4p": {"num_players": 4},
    "2v2": {"num_players": 4, "partnerships": True},
}
VARIANTS = {
    "jokers=1": {"jokers": 1},
    "jokers=2": {"jokers": 2},
    "mesa": {"mesa_deal": True},
    "jokers=2 mesa": {"jokers": 2, "mesa_deal": True},
    "2v2 jokers=2": {"num_players": 4, "partnerships": True, "jokers": 2},
}
"""The docs/rules.md §11 variants; the conformance tests below run for every one of CONFIGS and VARIANTS."""
# api_test warns about every dict observation space; that is PettingZoo's classic convention.
HARMLESS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be",
)


@contextlib.contextmanager
def quiet():
    """Silence stdout and the harmless dict-observation warnings of PettingZoo's test helpers."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        for msg in HARMLESS:
            warnings.filterwarnings("ignore", message=msg)
        yield


def random_action(env, rng):
    """Return a uniformly random legal action of the agent to act (None if it is finished)."""
    obs, _, term, trunc, _ = env.last()
    if term or trunc:
        return None
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


def play_to_end(env, rng, max_steps=100_000):
    """Play random legal actions until every agent is done; return the list of (agent, reward)."""
    seen = []
    for agent in env.agent_iter(max_steps):
        _, reward, _, _, _ = env.last()
        seen.append((agent, reward))
        env.step(random_action(env, rng))
    return seen


# ---------------------------------------------------------------------- PettingZoo test suite


@pytest.mark.parametrize("name", [*CONFIGS, *VARIANTS])
def test_api_test_passes(name):
    with quiet():
        api_test(escoba_v0.env(**{**CONFIGS, **VARIANTS}[name]), num_cycles=1000)


@pytest.mark.parametrize("name", [*CONFIGS, *VARIANTS])
def test_seed_test_passes(name):
    with quiet():
        seed_test(lambda **kw: escoba_v0.env(**{**CONFIGS, **VARIANTS}[name], **kw))


@pytest.mark.parametrize("name", [*CONFIGS, *VARIANTS])
def test_render_test_passes(name):
    with quiet():
        render_test(lambda **kw: escoba_v0.env(**{**CONFIGS, **VARIANTS}[name], **kw))


def test_make_from_pettingzoo_registry():
    env = pettingzoo.make("aec", "escoba/escoba-v0", num_players=3)
    env.reset(seed=1)
    assert env.agents == ["player_0", "player_1", "player_2"]
    assert isinstance(env.unwrapped, escoba_v0.raw_env)


# ---------------------------------------------------------------------- spaces and masks


def test_spaces_are_the_same_object_on_every_call():
    env = escoba_v0.raw_env(num_players=4)
    for a in env.possible_agents:
        assert env.observation_space(a) is env.observation_space(a)
        assert env.action_space(a) is env.action_space(a)
    assert env.action_space("player_0").n == 40
    assert env.observation_space("player_0")["observation"].shape == (observation.OBS_SIZE,)


def test_observation_dtypes_and_masks():
    env = escoba_v0.raw_env(num_players=3)
    env.reset(seed=3)
    acting = env.agent_selection
    for a in env.agents:
        obs = env.observe(a)
        assert obs["observation"].dtype == np.float32 and obs["observation"].shape == (546,)
        assert obs["action_mask"].dtype == np.int8 and obs["action_mask"].shape == (40,)
        assert env.observation_space(a).contains(obs)
        if a == acting:
            hand = obs["observation"][:40]
            np.testing.assert_array_equal(obs["action_mask"], hand.astype(np.int8))
        else:
            assert not obs["action_mask"].any(), "a non-acting agent's mask must be all zeros"


# ---------------------------------------------------------------------- legal moves and capture choice


def choice_deal():
    """Return reset options: seat 0 acts first holding 7o 1c 4b; the table is Sb 3o 5c 2e."""
    used = ids("7o 1c 4b 6e Rc 2b Sb 3o 5c 2e")
    stock = [c for c in range(40) if c not in used]
    return {"dealer": 1, "hands": [ids("7o 1c 4b"), ids("6e Rc 2b")], "table": ids("Sb 3o 5c 2e"),
            "stock": stock}


def test_legal_moves_list_every_capture_option_and_discards():
    env = escoba_v0.raw_env(legal_moves_info=True)
    env.reset(seed=0, options=choice_deal())
    assert env.agent_selection == "player_0"
    assert env.infos["player_0"]["legal_moves"] == [
        (C("1c"), 0), (C("4b"), M("3o Sb")), (C("7o"), M("3o 5c")), (C("7o"), M("Sb"))]
    assert env.infos["player_1"] == {}
    assert all(type(c) is int and type(m) is int for c, m in env.infos["player_0"]["legal_moves"])


def test_default_infos_hold_no_move_list_and_are_json_able():
    """Replay buffers (Tianshou's) store infos as arrays: by default no variable-length list."""
    env = escoba_v0.raw_env()
    env.reset(seed=0, options=choice_deal())
    assert env.infos == {"player_0": {}, "player_1": {}}
    rng = np.random.default_rng(0)
    while env.agents:
        obs, _, term, trunc, info = env.last()
        assert "legal_moves" not in info
        json.dumps(info)
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    with pytest.raises(TypeError, match="legal_moves_info must be a bool"):
        escoba_v0.raw_env(legal_moves_info=1)


def test_capture_choice_is_made_by_the_same_agent_naming_table_cards():
    env = escoba_v0.raw_env(legal_moves_info=True)
    env.reset(seed=0, options=choice_deal())
    env.step(C("7o"))
    assert env.agent_selection == "player_0"
    obs = env.observe("player_0")
    assert np.flatnonzero(obs["action_mask"]).tolist() == sorted(ids("Sb 3o 5c"))
    assert obs["observation"][observation.SCALARS["capture_phase"]] == 1.0
    assert obs["observation"][40 * observation.PLANE["pending"] + C("7o")] == 1.0
    assert env.infos["player_0"]["legal_moves"] == [(C("7o"), M("3o 5c")), (C("7o"), M("Sb"))]
    env.step(C("5c"))
    assert env.agent_selection == "player_1"
    assert int(env.unwrapped.engine.piles[0, 0]) == M("7o 3o 5c")
    assert int(env.unwrapped.engine.table[0]) == M("Sb 2e")


def test_illegal_action_in_raw_env_raises_and_changes_nothing():
    env = escoba_v0.raw_env(legal_moves_info=True)
    env.reset(seed=0, options=choice_deal())
    before = {k: v.copy() for k, v in vars(env.engine).items() if isinstance(v, np.ndarray)}
    with pytest.raises(ValueError, match=r"illegal action 6 \(2e\) for player_0.*legal actions are "
                                         r"\[1, 15, 24\] \(1c 4b 7o\)"):
        env.step(C("2e"))
    with pytest.raises(ValueError, match="not a card id"):
        env.step(40)
    with pytest.raises(ValueError, match="not a card id"):
        env.step(None)
    for k, v in before.items():
        np.testing.assert_array_equal(v, getattr(env.engine, k), err_msg=k)
    assert env.agent_selection == "player_0"
    assert env.infos["player_0"]["legal_moves"][0] == (C("1c"), 0)
    env.step(C("1c"))  # still playable
    assert env.agent_selection == "player_1"


def test_illegal_action_in_env_ends_the_game_with_minus_one():
    env = escoba_v0.env()
    env.reset(seed=0, options=choice_deal())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(C("2e"))
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": -1.0, "player_1": 0.0}


# ---------------------------------------------------------------------- rewards and infos


def test_game_reward_is_plus_one_for_the_winner_and_minus_one_for_the_loser():
    env = escoba_v0.env()
    env.reset(seed=11)
    totals = {a: 0.0 for a in env.possible_agents}
    rng = np.random.default_rng(0)
    winner = None
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        totals[agent] += reward
        if term or trunc:
            winner = info["winner"]
            assert info["scores"][winner] >= 21
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert winner in (0, 1)
    assert totals == {f"player_{winner}": 1.0, f"player_{1 - winner}": -1.0}


def test_three_player_game_pays_the_winner_one_and_each_other_minus_one():
    env = escoba_v0.raw_env(num_players=3, target_score=6)
    env.reset(seed=5)
    seen = play_to_end(env, np.random.default_rng(1))
    finals = dict(seen[-3:])
    assert sorted(finals.values()) == [-1.0, -1.0, 1.0]
    winner = int(env.engine.winner[0])
    assert finals[f"player_{winner}"] == 1.0


def test_partners_share_rewards_every_step():
    env = escoba_v0.raw_env(num_players=4, partnerships=True, reward="round_points", target_score=5)
    env.reset(seed=2)
    rng = np.random.default_rng(3)
    nonzero = 0
    while len(env.agents) == 4:
        assert env.rewards["player_0"] == env.rewards["player_2"]
        assert env.rewards["player_1"] == env.rewards["player_3"]
        assert env.rewards["player_0"] == -env.rewards["player_1"]
        nonzero += env.rewards["player_0"] != 0
        env.step(random_action(env, rng))
    assert nonzero > 0


def test_round_points_reward_is_own_points_minus_best_other_side():
    env = escoba_v0.raw_env(num_players=3, episode="round", reward="round_points")
    env.reset(seed=8)
    rng = np.random.default_rng(4)
    while not any(env.terminations.values()):
        env.step(random_action(env, rng))
    pts = env.infos["player_0"]["round_points"]
    assert env.infos["player_1"]["round_points"] == pts
    for seat in range(3):
        best_other = max(pts[s] for s in range(3) if s != seat)
        assert env.rewards[f"player_{seat}"] == pts[seat] - best_other
    assert env.infos["player_0"]["scores"] == pts  # one round: cumulative = this round


def test_round_end_infos_hold_round_points_and_scores_for_every_agent():
    env = escoba_v0.raw_env()
    env.reset(seed=21)
    rng = np.random.default_rng(5)
    ends = 0
    scores = [0, 0]
    while True:
        env.step(random_action(env, rng))
        info = env.infos[env.agent_selection]
        if "round_points" in info:
            ends += 1
            for a in env.agents:
                assert env.infos[a]["round_points"] == info["round_points"]
                assert set(env.infos[a]["round_categories"]) == {"cards", "oros", "velo", "sevens",
                                                                "escobas"}
            scores = [s + p for s, p in zip(scores, info["round_points"], strict=True)]
            assert info["scores"] == scores
            assert sum(sum(v) for k, v in info["round_categories"].items()) == sum(info["round_points"])
        else:
            assert not any("scores" in env.infos[a] for a in env.agents)
        if any(env.terminations.values()):
            break
    assert ends == int(env.engine.round_index[0]) >= 1


def test_max_rounds_truncation_pays_nothing():
    env = escoba_v0.raw_env(max_rounds=1)
    env.reset(seed=4)
    rng = np.random.default_rng(6)
    while not any(env.truncations.values()):
        assert not any(env.terminations.values())
        env.step(random_action(env, rng))
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert env.infos["player_0"]["winner"] == -1


def test_single_round_episode_ends_after_one_round():
    env = escoba_v0.raw_env(episode="round")
    env.reset(seed=9)
    steps = 0
    rng = np.random.default_rng(7)
    while not any(env.terminations.values()):
        env.step(random_action(env, rng))
        steps += 1
    assert int(env.engine.round_index[0]) == 1
    assert steps >= 36  # 36 cards are played, plus any capture choices


# ---------------------------------------------------------------------- reset options


def test_dealer_option_fixes_the_first_dealer_and_first_player():
    env = escoba_v0.raw_env(num_players=3)
    for d in range(3):
        env.reset(seed=0, options={"dealer": d})
        assert env.agent_selection == f"player_{(d + 1) % 3}"
        obs = env.observe("player_0")["observation"]
        assert obs[observation.SCALARS["dealer"] + d] == 1.0


def test_deck_option_is_dealt_from_the_top_starting_after_the_dealer():
    env = escoba_v0.raw_env()
    env.reset(seed=0, options={"deck": list(range(40)), "dealer": 0})
    hand1 = env.observe("player_1")["observation"][:40]
    hand0 = env.observe("player_0")["observation"][:40]
    assert np.flatnonzero(hand1).tolist() == [0, 2, 4]
    assert np.flatnonzero(hand0).tolist() == [1, 3, 5]
    table = env.observe("player_0")["observation"][200:240]
    assert np.flatnonzero(table).tolist() == [6, 7, 8, 9]


def test_card_names_are_accepted_in_deal_options():
    env = escoba_v0.raw_env()
    opts = choice_deal()
    opts["table"] = ["Sb", "3o", "5c", "2e"]
    env.reset(seed=0, options=opts)
    assert int(env.engine.table[0]) == M("Sb 3o 5c 2e")


def test_explicit_deal_applies_to_the_first_round_only():
    a, b = escoba_v0.raw_env(), escoba_v0.raw_env()
    a.reset(seed=13, options={"deck": list(range(40))})
    b.reset(seed=13)
    assert int(a.engine.dealer[0]) == int(b.engine.dealer[0])
    rng = np.random.default_rng(0)
    for env in (a, b):
        while int(env.engine.round_index[0]) == 0:
            env.step(random_action(env, rng))
    np.testing.assert_array_equal(a.engine.deck, b.engine.deck)


@pytest.mark.parametrize("options, match", [
    ({"dealr": 0}, r"unknown reset option\(s\) \['dealr'\]; known options: dealer, deck, hands"),
    ({"dealer": 2}, "dealer must be a seat"),
    ({"dealer": "0"}, "'dealer' must be a seat number"),
    ({"deck": list(range(39))}, "deck must have 40 card ids"),
    ({"deck": [0] * 40}, "each of the 40 cards once"),
    ({"deck": "1o 2o"}, "'deck' must be a list of card ids"),
    ({"deck": [0.5] * 40}, "cards are ids 0..39"),
    ({"deck": list(range(40)), "table": [0, 1, 2, 3]}, "either deck or hands/table/stock"),
    ({"hands": [[0, 1, 2], [3, 4, 5]], "table": [6, 7, 8, 9]}, "needs all of hands, table and stock"),
    ({"hands": [[0, 1, 2]], "table": [6, 7, 8, 9], "stock": list(range(10, 40))}, "one list per seat"),
    ({"hands": [[0, 1], [3, 4, 5]], "table": [6, 7, 8, 9], "stock": list(range(10, 40))}, "3 cards"),
    ({"hands": [[0, 1, 2], [3, 4, 5]], "table": [6, 7, 8], "stock": list(range(9, 40))}, "4 cards"),
    ({"hands": [[0, 1, 2], [3, 4, 5]], "table": [6, 7, 8, 9], "stock": list(range(10, 39)) + [0]},
     "duplicated"),
    ({"hands": [[0, 1, "Zz"], [3, 4, 5]], "table": [6, 7, 8, 9], "stock": list(range(10, 40))},
     "unknown card 'Zz'"),
    ([("dealer", 0)], "reset options must be a dict"),
])
def test_bad_reset_options_raise_clear_errors(options, match):
    env = escoba_v0.raw_env()
    with pytest.raises(ValueError, match=match):
        env.reset(seed=0, options=options)


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (2**64, ValueError), (1.5, TypeError),
                                         ("7", TypeError), (True, TypeError)])
def test_bad_seed_raises(seed, error):
    with pytest.raises(error, match=r"seed must be an int in 0\.\.2\*\*64-1"):
        escoba_v0.raw_env().reset(seed=seed)


@pytest.mark.parametrize("kwargs, match", [
    ({"episode": "match"}, r"episode must be one of \('game', 'round'\)"),
    ({"reward": "points"}, r"reward must be one of \('game', 'round_points'\)"),
    ({"max_rounds": 0}, "max_rounds must be None or a positive int"),
    ({"num_players": 5}, "num_players must be 2, 3 or 4"),
    ({"num_player": 3}, r"unknown rules option\(s\) \['num_player'\]"),
    ({"rules": Rules(), "num_players": 3}, "not both"),
    ({"render_mode": "rgb"}, "render_mode must be None or one of"),
])
def test_bad_constructor_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        escoba_v0.raw_env(**kwargs)


def test_rules_object_and_keyword_options_build_the_same_env():
    a = escoba_v0.raw_env(rules=Rules(num_players=3, sevens_rule="primera"))
    b = escoba_v0.raw_env(num_players=3, sevens_rule="primera")
    assert a.rules == b.rules


# ---------------------------------------------------------------------- determinism, pickling, leaks


def trajectory(env, seed, steps, disturb=False):
    """Return the (agent, observation bytes, rewards) of ``steps`` random steps from ``seed``."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        if not env.agents:
            break
        if disturb:  # the legacy global generators must play no part in the game
            np.random.seed(random.randrange(2**32))  # noqa: NPY002
            random.seed(np.random.randint(2**31))  # noqa: NPY002
            np.random.random(17)  # noqa: NPY002
        agent = env.agent_selection
        obs = env.observe(agent)
        out.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(),
                    tuple(sorted(env.rewards.items()))))
        env.step(random_action(env, rng))
    return out


def test_same_seed_same_game_with_global_rngs_disturbed():
    plain = trajectory(escoba_v0.env(num_players=3), 77, 400)
    disturbed = trajectory(escoba_v0.env(num_players=3), 77, 400, disturb=True)
    assert plain == disturbed
    assert trajectory(escoba_v0.env(num_players=3), 78, 50) != plain[:50]


def test_reset_without_seed_continues_the_seeded_generator():
    a, b = escoba_v0.raw_env(), escoba_v0.raw_env()
    a.reset(seed=3)
    b.reset(seed=3)
    a.reset()
    b.reset()
    np.testing.assert_array_equal(a.engine.deck, b.engine.deck)
    c = escoba_v0.raw_env()
    c.reset(seed=3)
    assert not np.array_equal(a.engine.deck, c.engine.deck)


@pytest.mark.parametrize("wrapped", [False, True])
def test_pickle_round_trip_mid_game_continues_identically(wrapped):
    env = escoba_v0.env(num_players=3) if wrapped else escoba_v0.raw_env(num_players=3)
    env.reset(seed=31)
    rng = np.random.default_rng(2)
    for _ in range(25):
        env.step(random_action(env, rng))
    copy = pickle.loads(pickle.dumps(env))
    rng_a, rng_b = np.random.default_rng(9), np.random.default_rng(9)
    for _ in range(60):
        assert copy.agent_selection == env.agent_selection
        oa, ob = env.observe(env.agent_selection), copy.observe(copy.agent_selection)
        np.testing.assert_array_equal(oa["observation"], ob["observation"])
        assert env.rewards == copy.rewards and env.infos == copy.infos
        env.step(random_action(env, rng_a))
        copy.step(random_action(copy, rng_b))


def leak_deals():
    """Return two 2-player deals that differ only in seat 1's hand and the stock."""
    hands = [ids("1o 2o 3o"), ids("4c 5c 6c")]
    table = ids("Sb Cb Rb 1e")
    used = hands[0] + hands[1] + table
    stock = [c for c in range(40) if c not in used]
    other_hands = [hands[0], [stock[0], hands[1][1], hands[1][2]]]
    other_stock = [hands[1][0]] + stock[1:]
    return ({"dealer": 1, "hands": hands, "table": table, "stock": stock},
            {"dealer": 1, "hands": other_hands, "table": table, "stock": other_stock[::-1]})


def test_observation_does_not_leak_another_hand_or_the_stock_order():
    a_opts, b_opts = leak_deals()
    a, b = escoba_v0.raw_env(), escoba_v0.raw_env()
    a.reset(seed=1, options=a_opts)
    b.reset(seed=1, options=b_opts)
    assert int(a.engine.hands[0, 1]) != int(b.engine.hands[0, 1])
    assert_player_0_sees_the_same(a, b, C("1o"))


def assert_player_0_sees_the_same(a, b, action: int) -> None:
    """Assert that player_0's observation, mask and info agree in envs a and b, before and after
    both play ``action``."""
    for step in range(2):
        oa, ob = a.observe("player_0"), b.observe("player_0")
        np.testing.assert_array_equal(oa["observation"], ob["observation"], err_msg=f"step {step}")
        np.testing.assert_array_equal(oa["action_mask"], ob["action_mask"])
        assert a.infos["player_0"] == b.infos["player_0"]
        if step == 0:
            a.step(action)
            b.step(action)


def test_stock_order_alone_changes_no_observation_during_the_first_deal():
    hands = [ids("1o 2o 3o"), ids("4c 5c 6c")]
    table = ids("Sb Cb Rb 1e")
    stock = [c for c in range(40) if c not in hands[0] + hands[1] + table]
    a, b = escoba_v0.raw_env(), escoba_v0.raw_env()
    a.reset(seed=1, options={"dealer": 1, "hands": hands, "table": table, "stock": stock})
    b.reset(seed=1, options={"dealer": 1, "hands": hands, "table": table, "stock": stock[::-1]})
    rng = np.random.default_rng(0)
    for _ in range(6):  # both hands are played out before the stock is dealt
        for agent in a.possible_agents:
            np.testing.assert_array_equal(a.observe(agent)["observation"], b.observe(agent)["observation"])
        act = random_action(a, rng)
        a.step(act)
        b.step(act)


def test_unseen_plane_holds_exactly_the_other_hands_and_the_stock():
    env = escoba_v0.raw_env(num_players=3)
    env.reset(seed=6)
    obs = env.observe("player_1")["observation"]
    unseen = obs[40 * observation.PLANE["unseen"]: 40 * observation.PLANE["unseen"] + 40]
    eng = env.engine
    public = int(eng.hands[0, 1]) | int(eng.table[0]) | int(np.bitwise_or.reduce(eng.piles[0]))
    expect = FULL_DECK & ~public
    assert sum(1 << int(c) for c in np.flatnonzero(unseen)) == expect


# ---------------------------------------------------------------------- rendering


def test_ansi_render_shows_table_acting_hand_and_scores():
    env = escoba_v0.raw_env(render_mode="ansi")
    env.reset(seed=0, options=choice_deal())
    text = env.render()
    assert "Table: 2e 3o 5c Sb" in text
    assert "player_0 to act · hand: 1c 4b 7o" in text
    assert "Scores: player_0 0, player_1 0" in text
    assert "6e" not in text  # the other hand is hidden
    env.step(C("7o"))
    env.step(C("5c"))
    text = env.render()
    assert "Last: player_0: 7 de oros takes 3 de oros + 5 de copas" in text  # the one phrasing of a move
    assert "player_0: hand 2 · captured 3 cards, 2 oros, 1 sevens, velo" in text


def test_french_render_uses_suit_symbols():
    env = escoba_v0.raw_env(render_mode="ansi", french=True)
    env.reset(seed=0, options=choice_deal())
    assert "hand: A♥ 4♣ 7♦" in env.render()


def test_human_render_prints_and_returns_none(capsys):
    env = escoba_v0.raw_env(render_mode="human", num_players=4, partnerships=True)
    env.reset(seed=0)
    assert env.render() is None
    assert "team 0 (player_0+player_2)" in capsys.readouterr().out
