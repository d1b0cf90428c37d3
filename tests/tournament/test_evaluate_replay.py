"""Replays of evaluate.py: every game written as JSON lines, re-played and verified by the engine."""

from __future__ import annotations

import json

import pytest

from agents.tournament.replay import FORMAT, ReplayError, ReplayWriter, check_replay, check_replays
from agents.tournament.runner import TournamentConfig, lineups, run_tournament
from escoba_env import Rules


def _record(tmp_path, rules=None, games=False, deals=3, agents=("random", "expert")):
    rules = Rules() if rules is None else rules
    cfg = TournamentConfig(agents=agents, rules=rules, deals=deals, block_deals=2, games=games, seed=11)
    specs = [tuple(cfg.entrants[i] for i in lu) for lu in lineups(cfg)]
    writer = ReplayWriter(tmp_path, specs, seed=cfg.seed, rules=rules, games=games, max_rounds=cfg.max_rounds)
    run = run_tournament(cfg, record=True, on_block=writer.add)
    return run, writer.paths


def _lines(path):
    return path.read_text().splitlines()


@pytest.mark.parametrize("rules,games", [(Rules(), False), (Rules(target_score=8), True),
                                         (Rules(num_players=3, prefer_single=True), False),
                                         (Rules(num_players=4, partnerships=True, target_score=6), True)],
                         ids=["2p-rounds", "2p-games", "3p-rounds", "2v2-games"])
def test_replays_round_trip_through_the_engine(tmp_path, rules, games):
    run, paths = _record(tmp_path, rules, games)
    assert len(paths) == len(run.lineups)  # one file per lineup (3 players, 2 agents: 2 lineups)
    all_recs = [json.loads(x) for p in paths for x in _lines(p)]
    n_games, n_actions = check_replays(tmp_path)
    assert n_games == len(all_recs) == sum(len(b.rounds) for bs in run.blocks for b in bs)
    assert n_actions == sum(len(r["actions"]) for rec in all_recs for r in rec["rounds"])
    lines = _lines(paths[0])
    assert len(lines) == 3 * rules.num_sides
    recs = [json.loads(x) for x in lines]
    # The lines are in deal order, each deal once per rotation, and say who sat where.
    order = [(d, k) for d in range(3) for k in range(rules.num_sides)]
    assert [(r["game_id"], r["rotation"]) for r in recs] == order
    rec = recs[0]
    assert rec["format"] == FORMAT and rec["seed"] == 11 and rec["rules"] == rules.to_dict()
    assert rec["lineup"] == [run.config.entrants[i] for i in run.lineups[0]]
    assert len(rec["seats"]) == rules.num_players
    # Round points recorded in the replay add up to what the tournament counted.
    block = run.blocks[0][0]
    for j, r in enumerate(recs[: len(block.rounds)]):
        assert len(r["rounds"]) == block.rounds[j]
        totals = [sum(rd["points"][s] for rd in r["rounds"]) for s in range(rules.num_sides)]
        assert r["final_scores"] == totals


def _tamper(path, change):
    lines = _lines(path)
    rec = json.loads(lines[0])
    change(rec)
    lines[0] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")


def _first_capture(rec):
    return next(a for a in rec["rounds"][0]["actions"] if a["captured"])


@pytest.mark.parametrize("change,message", [
    (lambda r: _first_capture(r)["captured"].pop(), "captured"),
    (lambda r: r["rounds"][0]["points"].__setitem__(0, 99), "points"),
    (lambda r: r["rounds"][0]["deck"].reverse(), "deck"),
    (lambda r: r["rounds"][0]["actions"][0].__setitem__("actor", 5), "actor"),
    (lambda r: r.__setitem__("final_scores", [0, 0]), "final scores"),
    (lambda r: r["rounds"][0]["actions"].pop(), "do not end the round"),
    (lambda r: r.__setitem__("seed", r["seed"] + 1), "deck"),
])
def test_replay_checker_reports_a_tampered_record(tmp_path, change, message):
    _, (path,) = _record(tmp_path, deals=1)
    check_replays(path)
    _tamper(path, change)
    with pytest.raises(ReplayError, match=message):
        check_replays(path)


def test_replay_checker_rejects_what_is_not_a_replay(tmp_path):
    with pytest.raises(ReplayError, match="not JSON"):
        check_replay("{not json")
    with pytest.raises(ReplayError, match="not an"):
        check_replay('{"a": 1}')
    with pytest.raises(ReplayError, match="no such file"):
        check_replays(tmp_path / "missing.jsonl")
    with pytest.raises(ReplayError, match="no \\*.jsonl"):
        check_replays(tmp_path)
