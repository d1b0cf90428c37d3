"""lab.guided: PIMC search whose rollouts the table's shipped network plays."""

from __future__ import annotations

import numpy as np
import pytest

from agents.search.pimc import rollout_actions
from agents.spec.registry import make_agent
from escoba_env import Rules
from escoba_env.executors.observation import encode
from lab.guided import GuidedSearchAgent
from tests.agents.test_agents_heuristics import decide, position
from tests.agents.test_strong_tables import THREE, TWO_V_TWO, _observations
from tests.project.test_pinned_digests import TABLES, positions, sha


def test_guided_moves_are_pinned():
    """The digest of ``guided:sims=8``'s moves at the first 64 pinned 2v2 positions, taken when it was
    a registry agent: the move to the lab changed no bit."""
    obs, masks = positions(TABLES["2v2"])
    acts = GuidedSearchAgent(TABLES["2v2"], seed=5, sims=8).act_batch(obs[:64], masks[:64]).astype(np.int64)
    assert sha(acts) == "d663d4cbf186e5c0"


def test_the_python_spec_plays_the_lab_agent_from_a_checkout():
    agent = make_agent("python:lab.guided:make", rules=THREE, seed=1)
    assert isinstance(agent, GuidedSearchAgent) and agent.sims == GuidedSearchAgent.DEFAULT_SIMS


@pytest.mark.parametrize("rules", [TWO_V_TWO, THREE])
def test_guided_search_plays_legal_moves_and_is_deterministic_for_a_seed(rules):
    _, obs, masks = _observations(rules, games=2)
    agent = GuidedSearchAgent(rules, seed=8, sims=8)
    assert isinstance(agent, GuidedSearchAgent)
    acts = agent.act_batch(obs, masks)
    assert masks[np.arange(len(acts)), acts].all()
    assert np.array_equal(GuidedSearchAgent(rules, seed=8, sims=8).act_batch(obs, masks), acts)
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
    assert decide(GuidedSearchAgent(THREE, seed=3, sims=20), a) == decide(GuidedSearchAgent(THREE, seed=3,
                                                                                            sims=20), b)


def test_guided_search_refuses_bad_settings():
    with pytest.raises(ValueError, match="no shipped network for 4 players; shipped tables"):
        GuidedSearchAgent(Rules(num_players=4))
    with pytest.raises(ValueError, match="net_steps must be"):
        GuidedSearchAgent(THREE, net_steps=0)
    with pytest.raises(ValueError, match="checkpoint file not found"):
        GuidedSearchAgent(THREE, checkpoint="/nonexistent.pt")
