"""escoba_v0's privileged global state (state() / state_space) for centralised critics."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from pettingzoo.test.state_test import test_state as pettingzoo_state_test
from pettingzoo.test.state_test import test_state_space as pettingzoo_state_space_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from escoba_env import escoba_v0
from escoba_env.executors.state import state_size
from escoba_env.rulebook.cards import parse_card


def play_whole_game(env, seed: int) -> list[np.ndarray]:
    """Play a whole game with the lowest legal action; return every state seen."""
    env.reset(seed=seed)
    states = [env.state()]
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
        states.append(env.state())
    return states


@pytest.mark.parametrize("rules", [{}, {"num_players": 4, "partnerships": True},
                                   {"num_players": 3, "jokers": 2}, {"mesa_deal": True, "target_score": 11}])
def test_state_space_contains_every_state_of_whole_games(rules):
    env = escoba_v0.env(**rules)
    assert env.unwrapped.state_space.shape == (state_size(env.unwrapped.rules),)
    for seed in range(3):
        states = play_whole_game(env, seed)
        assert len(states) > 50
        assert all(env.unwrapped.state_space.contains(s) for s in states)
        assert env.unwrapped.game.done


def test_state_holds_the_hidden_position_exactly():
    env = escoba_v0.raw_env()
    deck = list(range(40))
    env.reset(seed=0, options={"deck": deck, "dealer": 1})
    s = env.state()
    game, w = env.game, 40
    for seat in range(2):
        np.testing.assert_array_equal(np.flatnonzero(s[seat * w:(seat + 1) * w]),
                                      sorted(c for c in range(w) if game.hands[seat] >> c & 1))
    stock = game.deck[game.stock_pos:]
    order = s[15 * w:16 * w]
    assert len(stock) == 30
    np.testing.assert_allclose(order[stock], (np.arange(30) + 1) / w)
    assert s[16 * w + 8 + game.to_act] == 1 and s[16 * w + 12 + 1] == 1  # to act, dealer 1


def test_state_differs_for_deals_differing_only_in_hidden_cards_while_observations_are_equal():
    """Swap an opponent's card with a stock card: player_0 sees the same, the state differs."""
    hands = [["1o", "2o", "3o"], ["4c", "5c", "6c"]]
    table = ["1e", "2e", "3e", "4e"]
    env_a, env_b = escoba_v0.raw_env(), escoba_v0.raw_env()
    used = {parse_card(c) for c in hands[0] + hands[1] + table}
    stock = [c for c in range(40) if c not in used]
    env_a.reset(seed=0, options={"hands": hands, "table": table, "stock": stock, "dealer": 1})
    swapped = [["1o", "2o", "3o"], ["4c", "5c", stock[-1]]]
    stock_b = stock[:-1] + [parse_card("6c")]
    env_b.reset(seed=0, options={"hands": swapped, "table": table, "stock": stock_b, "dealer": 1})
    for a, b in zip(env_a.observe("player_0").values(), env_b.observe("player_0").values(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(env_a.state(), env_b.state())


def test_parallel_api_after_turn_based_aec_to_parallel_and_pettingzoo_state_tests():
    par = turn_based_aec_to_parallel(escoba_v0.env())
    parallel_api_test(par, num_cycles=200)
    par.reset(seed=1)
    assert par.state_space.contains(par.state())
    env = escoba_v0.env()
    pettingzoo_state_space_test(env)
    pettingzoo_state_test(env, num_cycles=200)
