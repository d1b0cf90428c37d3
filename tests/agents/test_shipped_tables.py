"""The shipped neural agents of the 2v2 partnership game and of the 3-player game."""

from __future__ import annotations

import numpy as np
import pytest

from agents.nets.neural import NeuralAgent
from agents.nets.shipped import DEFAULT_OPPONENT_TABLES, DEFAULT_OPPONENTS, SHIPPED_CHECKPOINTS
from agents.spec.registry import make_agent
from escoba_arena import terminal as play
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode

TABLES = [("neural-2v2", Rules(num_players=4, partnerships=True)), ("neural-3p", Rules(num_players=3))]


@pytest.mark.parametrize("spec, rules", TABLES)
def test_shipped_agent_loads_and_plays_legal_moves_to_the_end_of_rounds(spec, rules):
    agent = make_agent(spec, rules=rules, seed=0)
    assert isinstance(agent, NeuralAgent)
    eng = EscobaEngine(16, rules, single_round=True)
    eng.reset(seed=3)
    steps = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs, masks = encode(eng, eng.to_act[live], live), action_masks(eng, eng.to_act[live], live)
        acts = agent.act_batch(obs, masks)
        assert masks[np.arange(live.size), acts].all()
        full = np.zeros(eng.num_games, np.int64)
        full[live] = acts
        eng.step(full)
        steps += 1
    assert steps >= 36  # every card dealt to a hand was played (40 minus the 4 of the first table)
    again = make_agent(f"{spec}:deterministic=true", rules=rules, seed=0)
    eng.reset(seed=3)
    obs, masks = encode(eng, eng.to_act), action_masks(eng, eng.to_act)
    other_seed = make_agent(spec, rules=rules, seed=9)  # the argmax policy does not depend on the seed
    assert np.array_equal(again.act_batch(obs, masks), other_seed.act_batch(obs, masks))


@pytest.mark.parametrize("spec, rules", TABLES)
def test_shipped_agent_refuses_other_rules(spec, rules):
    with pytest.raises(ValueError):
        make_agent(spec, rules=Rules())
    with pytest.raises(ValueError, match="no parameter"):
        make_agent(f"{spec}:sims=3", rules=rules)


def test_the_terminal_game_faces_the_shipped_agent_of_the_chosen_table():
    for (players, partnerships) in DEFAULT_OPPONENT_TABLES:
        path = SHIPPED_CHECKPOINTS[players, partnerships]
        rules = Rules(num_players=players, partnerships=partnerships)
        spec, note = play.default_opponent(rules)
        assert note is None and spec == "neural-2p" and path.endswith("escoba_2p.pt")
    # the 2v2 and 3-player networks lose to the strong search: those tables face it instead
    assert DEFAULT_OPPONENT_TABLES == ((2, False),)
    assert DEFAULT_OPPONENTS == {(2, False): "neural-2p", (4, True): "strong-2v2", (3, False): "strong-3p"}
    assert play.default_opponent(Rules(num_players=3)) == ("strong-3p", None)
    assert play.default_opponent(Rules(num_players=4, partnerships=True)) == ("strong-2v2", None)
    spec, note = play.default_opponent(Rules(num_players=4))  # 4 players without teams: none shipped
    assert spec == "expert" and note == "no shipped agent plays 4 players; playing expert"
