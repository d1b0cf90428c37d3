"""The strongest agents of the 2v2 and 3-player tables (strong-2v2, strong-3p) and the guided search."""

from __future__ import annotations

import numpy as np
import pytest

from agents.guided import GuidedSearchAgent
from agents.hybrid import HybridAgent
from agents.moves import enumerate_moves
from agents.registry import make_agent
from agents.search import rollout_actions, rollout_values
from agents.shipped import STRONG_AGENTS
from agents.worlds import take_games
from escoba_arena import terminal as play
from escoba_env import EscobaEngine, Rules
from escoba_env.observation import action_masks, encode
from tests.agents.test_agents_heuristics import decide, position

TWO_V_TWO = Rules(num_players=4, partnerships=True)
THREE = Rules(num_players=3)
TABLES = [("strong-2v2", TWO_V_TWO), ("strong-3p", THREE)]


def _observations(rules: Rules, games: int = 4, seed: int = 3, steps: int = 7):
    """Return (engine, obs, masks) of the seats to act after ``steps`` expert moves in each game."""
    expert = make_agent("expert", rules=rules)
    eng = EscobaEngine(games, rules, single_round=True)
    eng.reset(seed=seed)
    for _ in range(steps):
        eng.step(expert.act_batch(encode(eng, eng.to_act), action_masks(eng, eng.to_act)))
    return eng, encode(eng, eng.to_act), action_masks(eng, eng.to_act)


@pytest.mark.parametrize("spec, rules", TABLES)
def test_the_strong_agent_is_the_1000_rollout_search_of_its_table(spec, rules):
    agent = make_agent(spec, rules=rules, seed=4)
    assert isinstance(agent, HybridAgent) and agent.search.sims == 1000 and agent.name == f"{spec}:sims=1000"
    _, obs, masks = _observations(rules)
    small = make_agent(f"{spec}:sims=40", rules=rules, seed=4).act_batch(obs, masks)
    # the very agent measured as `hybrid` in the model card: same seed, same actions
    assert np.array_equal(small, make_agent("hybrid:sims=40", rules=rules, seed=4).act_batch(obs, masks))
    assert masks[np.arange(len(small)), small].all()


@pytest.mark.parametrize("spec, rules", TABLES)
def test_the_strong_agent_refuses_another_table(spec, rules):
    for other in (Rules(), Rules(num_players=4), TWO_V_TWO if rules is THREE else THREE):
        with pytest.raises(ValueError, match=f"^{spec} plays {rules.num_players} players"):
            make_agent(spec, rules=other)
    with pytest.raises(ValueError, match="no parameter 'net_steps'"):
        make_agent(f"{spec}:net_steps=3", rules=rules)


def test_escoba_play_faces_the_strong_agent_at_2v2_and_3_players():
    assert STRONG_AGENTS == {(4, True): "strong-2v2", (3, False): "strong-3p"}
    assert play.default_opponent(TWO_V_TWO) == ("strong-2v2", None)
    assert play.default_opponent(THREE) == ("strong-3p", None)
    spec, note = play.default_opponent(Rules(num_players=4))  # 4 players without teams: nothing shipped
    assert spec == "expert" and note == "no shipped agent plays 4 players; playing expert"


@pytest.mark.parametrize("rules", [TWO_V_TWO, THREE])
def test_guided_search_plays_legal_moves_and_is_deterministic_for_a_seed(rules):
    _, obs, masks = _observations(rules, games=3)
    agent = make_agent("guided:sims=24", rules=rules, seed=8)
    assert isinstance(agent, GuidedSearchAgent)
    acts = agent.act_batch(obs, masks)
    assert masks[np.arange(len(acts)), acts].all()
    assert np.array_equal(make_agent("guided:sims=24", rules=rules, seed=8).act_batch(obs, masks), acts)
    agent.reset(8)
    assert np.array_equal(agent.act_batch(obs, masks), acts)


def test_guided_rollouts_are_played_by_the_network():
    eng, obs, masks = _observations(THREE, games=5)
    agent = GuidedSearchAgent(THREE, seed=0, sims=8, net_steps=2)
    policy = agent._rollout_policy()
    eng.done[1] = True  # a finished game gets a placeholder action, the live ones the network's
    live = np.array([0, 2, 3, 4])
    expected = agent.net.act_batch(obs[live], masks[live])
    assert np.array_equal(policy(eng)[live], expected)
    policy(eng)
    # after net_steps steps the greedy default policy takes over
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    agent.rng = rng_a
    assert np.array_equal(policy(eng), rollout_actions(eng, rng_b, 0.0, "greedy"))


def test_rollout_values_take_a_callable_policy():
    eng, obs, _ = _observations(THREE, games=3)
    moves = enumerate_moves(obs, THREE)
    first = moves.start[:-1]
    card, option, me = moves.card[first], moves.option[first], eng.to_act.copy()
    by_name = rollout_values(take_games(eng, np.arange(3), single_round=True), card, option, me,
                             np.random.default_rng(2))
    rng = np.random.default_rng(2)
    by_call = rollout_values(take_games(eng, np.arange(3), single_round=True), card, option, me,
                             np.random.default_rng(5), policy=lambda e: rollout_actions(e, rng))
    assert np.array_equal(by_name, by_call) and np.abs(by_name).sum() > 0


def test_guided_search_does_not_see_hidden_cards():
    # 3 players: the same public position with a card swapped between seat 1's hand and the stock,
    # and the stock in another order. Seat 0 sees the same observation, so it must decide the same.
    stock = "4o 4c 4e 4b 6o 6c 6e 6b 1c"
    a = position(["3b 5e Cc", "Rb So 1e", "2b 7c 7b"], "2c", stock=stock, rules=THREE)
    b = position(["3b 5e Cc", "Rb So 1c", "2b 7c 7b"], "2c", stock=" ".join(reversed(stock.replace("1c", "1e")
                                                                                  .split())), rules=THREE)
    seat = np.array([0])
    assert a.hands[0, 1] != b.hands[0, 1]
    assert np.array_equal(encode(a, seat), encode(b, seat))
    assert decide(GuidedSearchAgent(THREE, seed=3, sims=60), a) == decide(GuidedSearchAgent(THREE, seed=3,
                                                                                            sims=60), b)


def test_guided_search_refuses_bad_settings():
    with pytest.raises(ValueError, match="no shipped network for 4 players; shipped tables"):
        GuidedSearchAgent(Rules(num_players=4))
    with pytest.raises(ValueError, match="net_steps must be"):
        GuidedSearchAgent(THREE, net_steps=0)
    with pytest.raises(ValueError, match="checkpoint file not found"):
        make_agent("guided:checkpoint=/nonexistent.pt", rules=THREE)
