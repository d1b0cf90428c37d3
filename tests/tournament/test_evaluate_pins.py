"""Tournament numbers pinned against values computed here: who sits where with 3 and 4 sides, the
agents' seeding per block, cut games in the statistics, resuming, and the paired interval."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import agents.tournament.runner as runner
from agents.base import Agent, RandomAgent
from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.tournament import analysis
from agents.tournament.cli import run_and_report
from agents.tournament.journal import Journal, journal_path, run_key
from agents.tournament.play import CATEGORIES, Block, play_block
from agents.tournament.runner import (
    TournamentConfig,
    TournamentRun,
    agent_seed,
    make_tasks,
    prepare_agents,
    run_task,
    run_tournament,
)
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode


class _Lowest(Agent):
    """Plays the lowest legal action."""

    name = "lowest"

    def act_batch(self, observations, action_masks, state=None):
        return np.argmax(np.asarray(action_masks) > 0, axis=1).astype(np.int64)


class _Highest(Agent):
    """Plays the highest legal action."""

    name = "highest"

    def act_batch(self, observations, action_masks, state=None):
        m = np.asarray(action_masks) > 0
        return (m.shape[1] - 1 - np.argmax(m[:, ::-1], axis=1)).astype(np.int64)


def _side_points_of_a_slot(agents, rules: Rules, deal: int, rotation: int, seed: int) -> list[int]:
    """Play one game slot here, one action at a time: the agent at seat ``s`` is lineup position
    ``(s + rotation) % S`` (independent seats: seat s is side s). Return the points per position."""
    s = rules.num_players
    eng = EscobaEngine(1, rules, single_round=True)
    eng.reset(seed, game_ids=[deal])
    side_points = [0] * s
    while not eng.done[0]:
        seat = int(eng.to_act[0])
        agent = agents[(seat + rotation) % s]
        g = np.array([0])
        a = agent.act(encode(eng, eng.to_act[:1], g)[0], action_masks(eng, eng.to_act[:1], g)[0])
        info = eng.step(np.array([a], np.int64))
        if info.round_over[0]:
            side_points = [x + int(y) for x, y in zip(side_points, info.round_points[0], strict=True)]
    # position k sits at the seat s with (s + rotation) % S == k
    return [side_points[(k - rotation) % s] for k in range(s)]


@pytest.mark.parametrize("players, totals", [(3, [9, 16, 28]), (4, [26, 13, 21, 3])])
def test_rotations_with_3_and_4_sides_credit_each_agent_its_own_points(players, totals):
    rules = Rules(num_players=players)
    agents = [GreedyAgent(rules), _Lowest(rules), ExpertAgent(rules), _Highest(rules)][:players]
    block = play_block(agents, rules, np.arange(3), seed=4)
    want = [_side_points_of_a_slot(agents, rules, int(d), int(r), 4)
            for d, r in zip(block.deal, block.rotation, strict=True)]
    np.testing.assert_array_equal(block.points, want)
    # The agents play differently: a seat mix-up would move points between them.
    assert block.points.sum(axis=0).tolist() == totals


def _small(**kw) -> TournamentConfig:
    kw = {"agents": ("random", "greedy"), "deals": 6, "block_deals": 2, "seed": 5, **kw}
    return TournamentConfig(**kw)


def test_a_block_gives_the_same_numbers_whatever_ran_before_it_and_alone():
    cfg = _small()
    prepare_agents(cfg)
    tasks = make_tasks(cfg)
    assert [(t.lineup, t.block) for t in tasks] == [(0, 0), (0, 1), (0, 2)]
    forward = [run_task(t) for t in tasks]
    backward = [run_task(t) for t in reversed(tasks)][::-1]
    again = run_task(tasks[1])  # after all of them, in the same process (agents reused)
    rules = cfg.rules
    for t, f, b in zip(tasks, forward, backward, strict=True):
        alone = play_block([RandomAgent(rules, seed=agent_seed(cfg.seed, t.specs, t.block, 0)),
                            GreedyAgent(rules)], rules, np.arange(t.lo, t.hi), cfg.seed, block=t.block)
        for k in ("deal", "rotation", "points", "categories", "rounds"):
            np.testing.assert_array_equal(getattr(f, k), getattr(alone, k))
            np.testing.assert_array_equal(getattr(b, k), getattr(alone, k))
    np.testing.assert_array_equal(again.points, forward[1].points)
    # Each block's agents get their own seed: block, position and lineup all count.
    seeds = {agent_seed(5, ("random", "greedy"), b, p) for b in range(3) for p in range(2)}
    assert len(seeds) == 6 and agent_seed(5, ("random", "expert"), 0, 0) not in seeds
    # Pinned: the random agent's points per block (seat 0 and seat 1 of each deal summed).
    assert [int(f.points[:, 0].sum()) for f in forward] == [8, 5, 10]
    (p,) = analysis.pair_stats(run_tournament(cfg))
    assert p["diff"]["mean"] == pytest.approx(-13 / 12)


def _made_up_run(blocks: list[Block], games: bool) -> TournamentRun:
    cfg = TournamentConfig(agents=("a", "b"), games=games)
    return TournamentRun(cfg, [(0, 1)], [blocks])


def _block(points, rounds, truncated, deals) -> Block:
    points = np.asarray(points, np.int64)
    n = len(points)
    cats = np.zeros((n, len(CATEGORIES), 2), np.int64)
    cats[:, 0] = points  # every point in "cards": the statistics only add them up
    return Block(0, 0, np.asarray(deals, np.int64), np.tile([0, 1], n // 2), points, cats,
                 np.asarray(rounds, np.int64), np.asarray(truncated, bool))


def test_a_game_cut_by_max_rounds_is_a_draw_and_its_points_count():
    # Three deals, two rotations each: (a's side, b's side) points, rounds, cut by max_rounds.
    block = _block([[21, 10], [12, 25], [18, 9], [14, 14], [7, 19], [22, 20]], [3, 4, 5, 5, 5, 2],
                   [False, False, True, True, True, False], [0, 0, 1, 1, 2, 2])
    (p,) = analysis.pair_stats(_made_up_run([block], games=True))
    w = p["win_rate"]
    # won: 21-10 and 22-20; lost: 12-25; the three cut games are draws, 18-9 included.
    assert (w["wins"], w["draws"], w["losses"], w["n"]) == (2, 3, 1, 6)
    assert w["rate"] == pytest.approx(3.5 / 6)
    assert (p["games"], p["rounds"], p["truncated"]) == (6, 24, 3)
    assert p["points_per_round"] == pytest.approx({"a": 94 / 24, "b": 97 / 24})
    assert p["diff"]["mean"] == pytest.approx(-3 / 24)


def test_a_real_run_with_cut_games_counts_them_as_draws():
    cfg = _small(games=True, max_rounds=2, rules=Rules(target_score=11), deals=8, block_deals=8)
    run = run_tournament(cfg)
    d = analysis.lineup_arrays(run.blocks[0])
    cut = d["truncated"]
    assert 0 < cut.sum() < len(cut)  # some games reached 11 in two rounds, some did not
    assert (d["rounds"][cut] == 2).all()
    a, b = d["points"][:, 0], d["points"][:, 1]
    (p,) = analysis.pair_stats(run)
    w = p["win_rate"]
    assert w["wins"] == int(((a > b) & ~cut).sum())
    assert w["losses"] == int(((a < b) & ~cut).sum())
    assert w["draws"] == int(cut.sum() + ((a == b) & ~cut).sum())
    assert p["truncated"] == int(cut.sum())


def test_the_paired_interval_is_the_textbook_one_over_deals():
    # Single rounds: per deal, the mean over its two rotations of a's points minus b's.
    pts = [[3, 1], [2, 2], [0, 4], [1, 3], [5, 0], [4, 1], [2, 1], [1, 1], [3, 3], [0, 2]]
    block = _block(pts, [1] * 10, [False] * 10, np.repeat(np.arange(5), 2))
    (p,) = analysis.pair_stats(_made_up_run([block], games=False))
    per_deal = [((pts[2 * i][0] - pts[2 * i][1]) + (pts[2 * i + 1][0] - pts[2 * i + 1][1])) / 2
                for i in range(5)]
    assert per_deal == [1.0, -3.0, 4.0, 0.5, -1.0]
    n = len(per_deal)
    mean = sum(per_deal) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in per_deal) / (n - 1))  # sample sd
    half = 1.959963984540054 * sd / math.sqrt(n)  # the normal quantile of 97.5 % (module doc)
    assert p["deals"] == 5
    assert p["diff"] == pytest.approx({"mean": mean, "lo": mean - half, "hi": mean + half}, abs=1e-12)
    assert (mean, round(half, 6)) == (0.3, round(1.959963984540054 * math.sqrt(6.7 / 5), 6))


def test_the_paired_interval_of_whole_games_weights_deals_by_their_rounds():
    # Whole games: per deal, the points difference over its games and the rounds they took; the
    # ratio's interval by the delta method: sd of (difference - ratio * rounds) / (sqrt(n) mean rounds).
    pts = [[21, 10], [15, 21], [21, 3], [21, 18], [9, 21], [20, 21]]
    rounds = [3, 5, 2, 4, 6, 7]
    block = _block(pts, rounds, [False] * 6, [0, 0, 1, 1, 2, 2])
    (p,) = analysis.pair_stats(_made_up_run([block], games=True))
    num = [(21 - 10) + (15 - 21), (21 - 3) + (21 - 18), (9 - 21) + (20 - 21)]
    den = [3 + 5, 2 + 4, 6 + 7]
    n = 3
    r = sum(num) / sum(den)
    res = [x - r * y for x, y in zip(num, den, strict=True)]
    sd = math.sqrt(sum((e - sum(res) / n) ** 2 for e in res) / (n - 1))
    half = 1.959963984540054 * sd / (math.sqrt(n) * (sum(den) / n))
    assert r == 13 / 27
    assert p["diff"] == pytest.approx({"mean": r, "lo": r - half, "hi": r + half}, abs=1e-12)


def test_resume_plays_only_the_blocks_the_journal_lacks(tmp_path, monkeypatch, capsys):
    cfg = _small()
    assert run_and_report(cfg, out=str(tmp_path / "full"), plot=False) == 0
    finished = run_tournament(cfg).blocks[0]
    journal = Journal(journal_path(tmp_path / "cut"), run_key(cfg, record=False))
    journal.start(resume=False)
    for b in (finished[0], finished[2]):  # blocks 0 and 2 done, block 1 not
        journal.add(b)
    journal.close()
    played = []

    def counting(task):
        played.append((task.lineup, task.block))
        return run_task(task)

    monkeypatch.setattr(runner, "run_task", counting)
    assert run_and_report(cfg, out=str(tmp_path / "cut"), plot=False, resume=True) == 0
    assert played == [(0, 1)]
    capsys.readouterr()

    def numbers(name):
        res = json.loads((tmp_path / f"{name}.json").read_text())
        return {k: res[k] for k in ("pairs", "agents", "ratings")}

    assert numbers("cut") == numbers("full")
    assert not journal.path.exists()
