"""The search agent (PIMC) and the oracle: determinism, no leak of hidden cards, the oracle's cheat."""

from __future__ import annotations

import numpy as np
import pytest

from agents.moves import enumerate_moves, lowest_card
from agents.search.pimc import OracleAgent, SearchAgent, expected_points, rollout_actions, rollout_values
from agents.worlds import take_games
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from tests.agents.test_agents_heuristics import decide, position
from tests.helpers import C


def _endgame(opponent: str) -> EscobaEngine:
    """Seat 0 discards 3b (leaves 5 on the table: a rey sweeps) or 5e (leaves 7: a sota sweeps).

    The opponent holds ``opponent`` (a rey or a sota) and 1o, the other of Ro / So is in the stock:
    the two positions differ only in hidden cards.
    """
    other = {"Ro": "So", "So": "Ro"}[opponent]
    return position(["3b 5e", f"{opponent} 1o"], "2c", stock=f"{other} 4o 4c 6o 6c 1c")


def test_positions_that_differ_only_in_hidden_cards_look_the_same():
    a, b = _endgame("Ro"), _endgame("So")
    assert a.hands[0, 1] != b.hands[0, 1]
    seat = np.array([0])
    assert np.array_equal(encode(a, seat), encode(b, seat))


def test_search_decides_the_same_when_only_hidden_cards_differ():
    a, b = _endgame("Ro"), _endgame("So")
    assert decide(SearchAgent(sims=64, seed=5), a) == decide(SearchAgent(sims=64, seed=5), b)


def test_search_does_not_leak_the_stock_order():
    # Mid-round position: the same public state with the stock in two different orders.
    stock = "4o 4c 4e 4b 6o 6c 6e 6b 1o 1c 1b 2b"
    a = position(["3b 5e Cc", "Rb So 1e"], "2c", stock=stock)
    b = position(["3b 5e Cc", "Rb So 1e"], "2c", stock=" ".join(reversed(stock.split())))
    seat = np.array([0])
    assert np.array_equal(encode(a, seat), encode(b, seat))
    assert decide(SearchAgent(sims=96, seed=3), a) == decide(SearchAgent(sims=96, seed=3), b)


def test_oracle_sees_the_hidden_hand_that_search_cannot():
    # The oracle leaves the total the real opponent cannot sweep: 7 against a rey, 5 against a sota.
    def oracle_move(e):
        agent = OracleAgent(sims=8, seed=0)
        return int(agent.act_batch(encode(e, np.array([0])), action_masks(e, np.array([0])),
                                   state=(e, np.array([0])))[0])

    assert oracle_move(_endgame("Ro")) == C("5e")
    assert oracle_move(_endgame("So")) == C("3b")


def test_oracle_refuses_to_play_without_the_true_state():
    e = _endgame("Ro")
    with pytest.raises(ValueError, match="cheating"):
        OracleAgent(sims=4).act_batch(encode(e, np.array([0])), action_masks(e, np.array([0])))
    assert OracleAgent.needs_state and not SearchAgent.needs_state
    assert "cheating" in OracleAgent.__doc__.lower() and "upper-bound" in OracleAgent.__doc__
    assert "cheating" in OracleAgent().name


def test_search_sweeps_a_table_holding_the_velo():
    # 5c sweeps 7o + 3c (an escoba and the velo); 1e and 2e can only be discarded next to the velo.
    e = position(["5c 1e 2e", "1b 2b 3b"], "7o 3c", stock="4o 4c 4e 4b 5o 6c")
    assert decide(SearchAgent(sims=60, seed=0), e) == C("5c")


def test_search_is_deterministic_under_its_seed():
    rules = Rules()
    e = EscobaEngine(6, rules, single_round=True)
    e.reset(seed=11)
    obs, masks = encode(e, e.to_act), action_masks(e, e.to_act)
    a1 = SearchAgent(rules, seed=7, sims=40).act_batch(obs, masks)
    a2 = SearchAgent(rules, seed=7, sims=40).act_batch(obs, masks)
    assert np.array_equal(a1, a2)
    assert all(masks[i, a] == 1 for i, a in enumerate(a1))


def test_search_rejects_bad_budgets():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="sims"):
            SearchAgent(sims=bad)
    with pytest.raises(ValueError, match="rollout"):
        SearchAgent(rollout="smart")


def test_a_single_legal_move_is_played_without_search():
    e = position(["3b", "1o"], "2c")
    agent = SearchAgent(sims=10, seed=0)
    state = agent.rng.bit_generator.state
    assert decide(agent, e) == C("3b")
    assert agent.rng.bit_generator.state == state  # no world was sampled


@pytest.mark.parametrize("policy", ["greedy", "random"])
def test_rollout_policy_plays_legal_actions_to_the_end_of_the_round(policy):
    rules = Rules(num_players=3)
    e = EscobaEngine(50, rules, single_round=True)
    e.reset(seed=2)
    rng = np.random.default_rng(0)
    while not e.done.all():
        e.step(rollout_actions(e, rng, epsilon=0.1, policy=policy))  # raises on an illegal action
    assert (e.card_count() == 40).all()


def test_rollout_values_equal_the_round_point_difference():
    rules = Rules()
    e = EscobaEngine(20, rules, single_round=True)
    e.reset(seed=4)
    me = e.to_act.copy()
    obs = encode(e, me)
    moves = enumerate_moves(obs, rules)
    first = moves.start[:-1]
    card, option = moves.card[first], moves.option[first]
    values = rollout_values(take_games(e, np.arange(20)), card, option, me, np.random.default_rng(1))
    # Replay the same rollouts by hand and score them.
    sim = take_games(e, np.arange(20))
    rng = np.random.default_rng(1)
    pts = sim.step(card).round_points.astype(np.float64)
    mine = sim.pending >= 0  # seat `me` still naming the cards of its capture
    while not sim.done.all():
        policy = rollout_actions(sim, rng)
        pts += sim.step(np.where(mine, lowest_card(option & sim.legal), policy)).round_points
        mine &= sim.pending >= 0
    expected = pts[np.arange(20), me] - pts[np.arange(20), 1 - me]
    assert np.array_equal(values, expected)


def test_expected_points_at_the_end_of_a_round_are_the_score():
    rules = Rules()
    e = EscobaEngine(30, rules, single_round=True)
    e.reset(seed=9)
    rng = np.random.default_rng(0)
    pts = np.zeros((30, 2))
    while not e.done.all():
        pts += e.step(rollout_actions(e, rng)).round_points
    # After the round every card is in a pile (unless nobody captured the last table): the estimate
    # is then the exact score (escobas, velo, cards, oros, sevens).
    est = expected_points(e, np.arange(30))
    full = np.bitwise_count(np.bitwise_or.reduce(e.piles, axis=1)) == 40
    assert full.all()
    assert np.allclose(est, pts)


def test_search_reports_the_values_behind_its_choice():
    from agents.moves import move_actions

    e = EscobaEngine(6, Rules())
    e.reset(seed=3)
    obs, masks = encode(e, e.to_act), action_masks(e, e.to_act)
    agent = SearchAgent(Rules(), seed=1, sims=60)
    actions = agent.act_batch(obs, masks)
    moves, values = agent.last_moves, agent.last_move_values
    assert values.shape == moves.card.shape
    per_move = move_actions(moves, np.arange(len(moves.card)), obs[moves.row], masks[moves.row])
    for i in range(6):
        mine = np.flatnonzero(moves.row == i)
        if len(mine) == 1:
            assert np.isnan(values[mine]).all()
        else:  # the chosen action is the first move with the highest mean rollout value
            assert actions[i] == per_move[mine[np.argmax(values[mine])]]
