"""The duplicate evaluation (agents.tournament.duplicate) and every agent playing every table size legally."""

from __future__ import annotations

import numpy as np
import pytest

from agents import ExpertAgent, GreedyAgent, RandomAgent, make_agent, play_duplicate
from agents.tournament.stats import mean_ci
from escoba_env import Rules


def test_mean_ci_known_values():
    m, lo, hi = mean_ci(np.array([1.0, 2.0, 3.0, 4.0]))
    half = 1.959963984540054 * np.std([1, 2, 3, 4], ddof=1) / 2
    assert m == 2.5 and lo == pytest.approx(2.5 - half) and hi == pytest.approx(2.5 + half)


def test_identical_deterministic_agents_tie_on_every_deal():
    # Both rotations of a deal are the same game with the seats swapped: every paired difference is 0.
    res = play_duplicate([GreedyAgent(), GreedyAgent()], Rules(), deals=40, seed=1)
    assert res.rounds == 80
    assert np.array_equal(res.deal_diff, np.zeros(40))


def test_one_agent_object_can_sit_on_both_sides():
    g = ExpertAgent()
    res = play_duplicate([g, g], Rules(), deals=10, seed=2)
    assert np.array_equal(res.deal_diff, np.zeros(10))


def test_results_do_not_depend_on_the_batch_split():
    a = play_duplicate([ExpertAgent(), GreedyAgent()], Rules(), deals=30, seed=3)
    b = play_duplicate([ExpertAgent(), GreedyAgent()], Rules(), deals=30, seed=3, batch_deals=7)
    assert np.array_equal(a.points, b.points)


def test_points_add_up_to_the_rounds_scores():
    res = play_duplicate([GreedyAgent(), RandomAgent(seed=0)], Rules(), deals=25, seed=4)
    assert res.points.shape == (25, 2)
    # Each round gives at least the velo point and at most every category plus escobas.
    assert (res.points.sum(axis=1) >= 1).all()
    assert res.summary().startswith("greedy vs random: ")


def test_wrong_number_of_agents_is_an_error():
    with pytest.raises(ValueError, match="one agent per side"):
        play_duplicate([GreedyAgent()], Rules(), deals=2)
    with pytest.raises(ValueError, match="deals"):
        play_duplicate([GreedyAgent(), GreedyAgent()], Rules(), deals=0)


@pytest.mark.parametrize("rules", [Rules(num_players=3), Rules(num_players=4),
                                   Rules(num_players=4, partnerships=True),
                                   Rules(prefer_single=True, last_play_escoba=False, sevens_rule="primera")],
                         ids=["3p", "4p", "2v2", "2p-variant"])
def test_every_agent_plays_legally(rules):
    # The engine raises on any illegal action, so finishing the rounds is the check.
    specs = ["greedy", "expert", "search:sims=12", "oracle:sims=6", "random"]
    agents = [make_agent(s, rules=rules, seed=i) for i, s in enumerate(specs)]
    for k in range(len(specs)):
        lineup = [agents[(k + j) % len(specs)] for j in range(rules.num_sides)]
        res = play_duplicate(lineup, rules, deals=3, seed=k)
        assert res.rounds == 3 * rules.num_sides
        assert np.isfinite(res.points).all()


@pytest.mark.parametrize("spec", ["random", "greedy", "expert", "search:sims=16", "oracle:sims=8"])
def test_every_agent_is_deterministic_under_its_seed(spec):
    def run():
        return play_duplicate([make_agent(spec, seed=9), make_agent("random", seed=1)], Rules(),
                              deals=6, seed=5).points

    assert np.array_equal(run(), run())
