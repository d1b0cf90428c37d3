"""Tournaments of evaluate.py: lineups, duplicate pairing, determinism, statistics of a run."""

from __future__ import annotations

import numpy as np
import pytest

from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.tournament import analysis, runner
from agents.tournament.play import CATEGORIES, play_block
from agents.tournament.runner import TournamentConfig, TournamentRun, lineups, run_tournament
from agents.tournament.stats import group_means
from escoba_env import Rules

FAST = {"progress": False}


def _run(agents, **kw) -> TournamentRun:
    kw.setdefault("deals", 40)
    kw.setdefault("block_deals", 20)
    return run_tournament(TournamentConfig(agents=tuple(agents), **kw), **FAST)


def test_round_robin_of_two_sides_plays_every_pair_once():
    cfg = TournamentConfig(agents=("a", "b", "c", "d"))
    assert lineups(cfg) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def test_round_robin_with_fewer_agents_than_seats_uses_every_agent():
    cfg = TournamentConfig(agents=("a", "b"), rules=Rules(num_players=3))
    assert lineups(cfg) == [(0, 0, 1), (0, 1, 1)]
    cfg = TournamentConfig(agents=("a", "b", "c", "d"), rules=Rules(num_players=3))
    assert lineups(cfg) == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]


def test_vs_plays_the_candidate_against_each_opponent():
    cfg = TournamentConfig(agents=("b", "c", "d"), vs="x")
    assert cfg.entrants == ("x", "b", "c", "d")
    assert lineups(cfg) == [(0, 1), (0, 2), (0, 3)]
    cfg = TournamentConfig(agents=("b",), vs="x", rules=Rules(num_players=4, partnerships=True))
    assert lineups(cfg) == [(0, 1)]


@pytest.mark.parametrize("rules", [Rules(), Rules(num_players=3), Rules(num_players=4),
                                   Rules(num_players=4, partnerships=True)],
                         ids=["2p", "3p", "4p", "2v2"])
def test_identical_deterministic_agents_have_exactly_zero_paired_difference_on_every_deal(rules):
    agents = [GreedyAgent(rules, seed=k) for k in range(rules.num_sides)]
    block = play_block(agents, rules, np.arange(30), seed=5)
    for k in range(1, rules.num_sides):
        diff = group_means(block.points[:, 0] - block.points[:, k], block.deal)
        assert diff.shape == (30,)
        assert (diff == 0).all()
    # Not trivially zero: the seats themselves score differently on a deal.
    assert (block.points[:, 0] != block.points[:, 1]).any()


def test_identical_deterministic_agents_have_zero_difference_in_whole_games_too():
    rules = Rules(target_score=11)
    block = play_block([GreedyAgent(rules), GreedyAgent(rules)], rules, np.arange(20), seed=3, games=True)
    diff = group_means((block.points[:, 0] - block.points[:, 1]) / block.rounds, block.deal)
    assert (diff == 0).all()
    assert block.rounds.max() > 1


def test_rotations_of_a_deal_give_each_agent_every_seat():
    rules = Rules(num_players=3)
    agents = [GreedyAgent(rules), ExpertAgent(rules), GreedyAgent(rules)]
    block = play_block(agents, rules, np.arange(4), seed=0)
    np.testing.assert_array_equal(block.deal, np.repeat(np.arange(4), 3))
    np.testing.assert_array_equal(block.rotation, np.tile(np.arange(3), 4))


def test_no_duplicate_plays_each_deal_once_with_alternating_seats():
    rules = Rules()
    block = play_block([GreedyAgent(rules), ExpertAgent(rules)], rules, np.arange(6), seed=0, duplicate=False)
    np.testing.assert_array_equal(block.deal, np.arange(6))
    np.testing.assert_array_equal(block.rotation, [0, 1, 0, 1, 0, 1])


def test_recorded_categories_add_up_to_the_points():
    rules = Rules(num_players=4, partnerships=True, target_score=9)
    block = play_block([GreedyAgent(rules), ExpertAgent(rules)], rules, np.arange(10), seed=1, games=True)
    assert block.categories.shape == (20, len(CATEGORIES), 2)
    np.testing.assert_array_equal(block.categories.sum(axis=1), block.points)
    # Every game ended with one side on the target score and ahead.
    assert (block.points.max(axis=1) >= 9).all()


def test_workers_1_and_2_give_identical_numbers():
    kw = {"agents": ("random", "greedy", "expert"), "deals": 60, "block_deals": 20}
    one = _run(**kw, workers=1)
    two = _run(**kw, workers=2)
    assert analysis.pair_stats(one) == analysis.pair_stats(two)
    assert analysis.fit_ratings(one) == analysis.fit_ratings(two)


def test_workers_1_plays_on_one_torch_thread_and_gives_the_caller_its_threads_back(monkeypatch):
    # --workers 1 plays in this process: on one thread of torch, as each pool worker does.
    torch = pytest.importorskip("torch")
    seen = []

    class Probe(GreedyAgent):
        def act_batch(self, observations, action_masks, state=None):
            seen.append(torch.get_num_threads())
            return super().act_batch(observations, action_masks, state)

    monkeypatch.setattr(runner, "build_agent", lambda spec, rules, seed=0: Probe(rules, seed))
    monkeypatch.setattr(runner, "_AGENTS", {})
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _run(("greedy", "expert"), deals=20, workers=1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert seen and set(seen) == {1}


def test_same_seed_gives_the_same_numbers_and_another_seed_does_not():
    a = analysis.pair_stats(_run(("random", "greedy"), seed=3))
    b = analysis.pair_stats(_run(("random", "greedy"), seed=3))
    c = analysis.pair_stats(_run(("random", "greedy"), seed=4))
    assert a == b
    assert a != c


def test_a_pair_scores_the_same_whatever_else_is_in_the_tournament():
    small = analysis.pair_stats(_run(("random", "greedy")))
    big = analysis.pair_stats(_run(("random", "greedy", "expert")))
    assert small[0] == big[0]
    assert (big[0]["a"], big[0]["b"]) == ("random", "greedy")


def test_pair_statistics_of_a_run_are_consistent():
    run = _run(("random", "expert"), deals=50, block_deals=50)
    (p,) = analysis.pair_stats(run)
    assert (p["deals"], p["games"], p["rounds"]) == (50, 100, 100)
    w = p["win_rate"]
    assert w["wins"] + w["draws"] + w["losses"] == 100
    assert w["lo"] < w["rate"] < w["hi"]
    d = p["diff"]
    assert d["lo"] < d["mean"] < d["hi"] < 0  # random loses clearly to the expert
    assert p["diff"]["mean"] == pytest.approx(p["points_per_round"]["a"] - p["points_per_round"]["b"])
    for c in ("cards", "oros", "velo", "sevens"):
        assert 0 <= p["category_share"][c] < 0.5


def test_points_difference_in_whole_games_is_per_round_over_all_rounds():
    run = _run(("random", "greedy"), deals=20, games=True, rules=Rules(target_score=11))
    (p,) = analysis.pair_stats(run)
    d = analysis.lineup_arrays(run.blocks[0])
    assert p["rounds"] == int(d["rounds"].sum()) > p["games"] == 40
    expect = (d["points"][:, 0].sum() - d["points"][:, 1].sum()) / d["rounds"].sum()
    assert p["diff"]["mean"] == pytest.approx(expect)
    assert p["diff"]["mean"] == pytest.approx(p["points_per_round"]["a"] - p["points_per_round"]["b"])
    assert p["diff"]["lo"] < p["diff"]["mean"] < p["diff"]["hi"]


def test_ratings_rank_the_stronger_agent_first_with_intervals():
    ratings = analysis.fit_ratings(_run(("random", "expert"), deals=60))
    assert [r["agent"] for r in ratings] == ["expert", "random"]
    for r in ratings:
        assert r["lo"] < r["mu"] < r["hi"] and r["sigma"] > 0


def test_config_rejects_bad_counts_and_combinations():
    bad = [
        {"agents": ("random", "greedy"), "deals": 0},
        {"agents": ("random", "greedy"), "workers": -1},
        {"agents": ("random", "greedy"), "block_deals": 0},
        {"agents": ("random",)},
        {"agents": ("random", "random")},
        {"agents": ("greedy",), "vs": "greedy"},
        {"agents": ("random", "greedy"), "seed": -1},
        {"agents": ("random", "greedy"), "backend": "dask"},
        {"agents": ("random", "greedy"), "ray_address": "auto"},
    ]
    for kw in bad:
        with pytest.raises(ValueError):
            TournamentConfig(**kw).check()
