"""Search whose rollouts a fair agent plays (``search:policy=SPEC``, ``hybrid:policy=SPEC``)."""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import RandomAgent
from agents.heuristic.expert import ExpertAgent
from agents.search.pimc import SearchAgent
from agents.spec.registry import make_agent
from agents.worlds import worlds_from_observations
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from tests.helpers import other_hand_swapped, played_out  # one-game references


def _dealt(seed: int, plays: int, games: int = 4) -> EscobaEngine:
    """``games`` 2-player rounds after ``plays`` expert plays each."""
    e = EscobaEngine(games, Rules(), single_round=True)
    e.reset(seed)
    expert = ExpertAgent(Rules(), seed=0)
    for _ in range(plays):
        g = np.arange(games)
        e.step(expert.act_batch(encode(e, e.to_act, g), action_masks(e, e.to_act, g)))
    return e


@pytest.mark.parametrize("plays", [0, 9])
def test_each_move_is_valued_by_the_policy_in_the_sampled_worlds(plays):
    """A move's value is the mean, over the worlds sampled from the observation alone, of the round
    that follows when the policy plays every seat after it."""
    e = _dealt(seed=40 + plays, plays=plays, games=1)
    g = np.array([0])
    obs, masks = encode(e, e.to_act[g], g), action_masks(e, e.to_act[g], g)
    agent = SearchAgent(Rules(), seed=3, sims=12, policy=ExpertAgent(Rules(), seed=0))
    act = agent.act_batch(obs, masks)
    moves, values = agent.last_moves, agent.last_move_values
    m = int(moves.count[0])
    assert m >= 2
    worlds = -(-12 // m)
    sampled = worlds_from_observations(obs, Rules(), np.random.default_rng(3), worlds)  # the agent's draws
    expert = ExpertAgent(Rules(), seed=0)
    want = [np.mean([played_out(sampled, w, int(moves.card[j]), int(moves.option[j]), expert)
                     for w in range(worlds)]) for j in range(m)]
    assert values[:m] == pytest.approx(want, abs=1e-12)
    assert act[0] == moves.card[int(np.argmax(want))]
    # the greedy rollouts of the plain search value the same moves otherwise
    plain = SearchAgent(Rules(), seed=3, sims=12)
    plain.act_batch(obs, masks)
    assert not np.allclose(plain.last_move_values[:m], values[:m])


def test_the_search_does_not_see_the_hidden_cards():
    """Swapping the other hand with the stock leaves the observation, and so every value, unchanged."""
    e = _dealt(seed=5, plays=4, games=1)
    g = np.array([0])
    obs, masks = encode(e, e.to_act[g], g), action_masks(e, e.to_act[g], g)
    agent = make_agent("hybrid:sims=40,leaf=net,policy=neural-solo", seed=1)
    first = agent.act_batch(obs, masks, state=(e, g))
    values = agent.search.last_move_values.copy()
    swapped = other_hand_swapped(e)
    assert not np.array_equal(swapped.hands, e.hands)
    obs2 = encode(swapped, swapped.to_act, g)
    assert np.array_equal(obs2, obs)
    agent.reset(1)
    assert np.array_equal(agent.act_batch(obs2, masks, state=(swapped, g)), first)
    assert np.array_equal(agent.search.last_move_values, values, equal_nan=True)


def test_the_registry_builds_it_and_it_plays_legal_moves():
    agent = make_agent("hybrid:sims=30,leaf=net,policy=neural-solo", seed=0)
    assert agent.name == "hybrid:sims=30,leaf=net,policy=neural-solo"
    assert make_agent("search:sims=20,policy=expert").name == "search:sims=20,policy=expert"
    assert make_agent("hybrid").name == "hybrid:sims=1000"  # unchanged without a policy
    for plays in (0, 11, 38):  # the last one: the stock is empty (the solver's rows)
        e = _dealt(seed=8, plays=plays)
        g = np.flatnonzero(~e.done)
        assert g.size and (plays < 38 or (e.stock_pos[g] >= 40).all())
        masks = action_masks(e, e.to_act[g], g)
        act = agent.act_batch(encode(e, e.to_act[g], g), masks)
        assert (masks[np.arange(len(g)), act] == 1).all()


def test_same_seed_same_values_even_with_a_random_policy():
    e = _dealt(seed=9, plays=2)
    g = np.arange(4)
    obs, masks = encode(e, e.to_act, g), action_masks(e, e.to_act, g)
    # seeded as the registry seeds it: the agent and its policy alike
    agent = SearchAgent(Rules(), seed=7, sims=24, policy=RandomAgent(Rules(), seed=7))
    agent.act_batch(obs, masks)
    first = agent.last_move_values.copy()
    agent.act_batch(obs, masks)
    assert not np.array_equal(first, agent.last_move_values, equal_nan=True)  # the generators moved on
    agent.reset(7)
    agent.act_batch(obs, masks)
    assert np.array_equal(first, agent.last_move_values, equal_nan=True)  # and reset re-seeds both


def test_bad_rollout_policies_are_refused():
    with pytest.raises(ValueError, match="fair agent"):
        make_agent("search:policy=oracle")
    with pytest.raises(ValueError, match="fair agent"):
        make_agent("hybrid:policy=oracle")
    with pytest.raises(ValueError, match="fair agent"):
        SearchAgent(Rules(), policy="expert")
    with pytest.raises(ValueError, match="plays"):
        SearchAgent(Rules(), policy=ExpertAgent(Rules(num_players=3)))
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("search:policy=no-such-agent")
