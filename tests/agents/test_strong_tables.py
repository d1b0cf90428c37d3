"""The strongest agents of the 2v2 and 3-player tables (strong-2v2, strong-3p)."""

from __future__ import annotations

import numpy as np
import pytest

from agents.moves import enumerate_moves
from agents.nets.shipped import STRONG_AGENTS
from agents.search.hybrid import HybridAgent
from agents.search.pimc import rollout_actions, rollout_values
from agents.spec.registry import make_agent
from agents.worlds import take_games
from escoba_arena import terminal as play
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode

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
