"""evaluate.py end to end, as a user runs it (subprocesses): files written, options, clear errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "evaluate.py"), *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    p = _start(args, cwd)
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_cli_runs_a_small_tournament_and_writes_table_json_csv_plot_and_replays(tmp_path):
    r = _run(["--agents", "random", "greedy", "--rounds", "20", "--block-deals", "10", "--out", "res/small",
              "--save-replays", "rep"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "A-B points/round [95% CI]" in r.stdout and "rating mu" in r.stdout
    assert "random  greedy" in r.stdout
    assert "round" in r.stderr  # the progress bar
    res = json.loads((tmp_path / "res/small.json").read_text())
    cfg = res["config"]
    assert cfg["entrants"] == ["random", "greedy"] and cfg["deals_per_lineup"] == 20
    assert cfg["mode"] == "rounds" and cfg["duplicate"] is True and cfg["rotations"] == 2
    assert cfg["rules"]["num_players"] == 2
    assert res["seeds"]["seed"] == 0
    assert res["versions"]["numpy"] and res["versions"]["openskill"] and res["versions"]["python"]
    assert len(res["git"]["commit"]) == 40
    (pair,) = res["pairs"]
    assert (pair["a"], pair["b"], pair["rounds"], pair["deals"]) == ("random", "greedy", 40, 20)
    assert {r["agent"] for r in res["ratings"]} == {"random", "greedy"}
    with open(tmp_path / "res/small_pairs.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1 and float(rows[0]["diff_mean"]) == pytest.approx(pair["diff"]["mean"])
    with open(tmp_path / "res/small_ratings.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 2
    assert (tmp_path / "res/small.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (replay,) = sorted((tmp_path / "rep").glob("*.jsonl"))
    assert len(replay.read_text().splitlines()) == 40
    check = _run(["--check-replays", "rep"], tmp_path)
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("ok: 40 games")


def test_cli_takes_every_rules_option_and_the_vs_whole_game_mode(tmp_path):
    r = _run(["--vs", "greedy", "--agents", "random", "--players", "4", "--partnerships", "--games", "3",
              "--target-score", "5", "--sevens-rule", "primera", "--bonus-sweeps", "--prefer-single",
              "--no-last-play-escoba", "--no-initial-fifteen", "--no-duplicate", "--seed", "9",
              "--max-rounds", "50", "--no-progress", "--no-plot", "--out", "o"], tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "o.json").read_text())
    assert res["config"]["rules"] == {"num_players": 4, "partnerships": True, "target_score": 5,
                                      "sevens_rule": "primera", "bonus_sweeps": True, "prefer_single": True,
                                      "last_play_escoba": False, "initial_fifteen": False,
                                      "jokers": 0, "mesa_deal": False}
    cfg = res["config"]
    assert (cfg["mode"], cfg["duplicate"], cfg["vs"], cfg["max_rounds"]) == ("games", False, "greedy", 50)
    (pair,) = res["pairs"]
    assert (pair["a"], pair["b"], pair["games"]) == ("greedy", "random", 3)
    assert not (tmp_path / "o.png").exists()


def test_cli_same_seed_writes_the_same_numbers(tmp_path):
    args = ["--agents", "random", "greedy", "--rounds", "10", "--no-progress", "--no-plot"]
    a = _run([*args, "--out", "a"], tmp_path)
    b = _run([*args, "--out", "b", "--workers", "2", "--block-deals", "100"], tmp_path)
    assert a.returncode == b.returncode == 0
    ja, jb = (json.loads((tmp_path / f"{x}.json").read_text()) for x in "ab")
    assert ja["pairs"] == jb["pairs"] and ja["ratings"] == jb["ratings"]


def _checkpoints(tmp_path: Path) -> dict[str, Path]:
    """Write a corrupt checkpoint and one for 3 players; return their paths."""
    from agents.nets.neural import PolicyValueNet, checkpoint_dict, save_checkpoint
    from escoba_env import Rules

    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"this is not a checkpoint")
    other = tmp_path / "three_players.pt"
    save_checkpoint(other, checkpoint_dict(PolicyValueNet(hidden=(8,)), Rules(num_players=3)))
    return {"corrupt": corrupt, "other": other}


BAD = {
    "unknown agent": (["--agents", "random", "nosuchagent"], "nosuchagent"),
    "bad agent parameter": (["--agents", "random", "search:sims=0"], "sims"),
    "missing checkpoint": (["--agents", "random", "checkpoint:missing.pt"], "missing.pt"),
    "corrupt checkpoint": (["--agents", "random", "checkpoint:corrupt.pt"], "corrupt"),
    "checkpoint for other rules": (["--agents", "random", "checkpoint:three_players.pt"], "rules"),
    "partnerships with 3 players": (["--players", "3", "--partnerships"], "partnerships"),
    "zero rounds": (["--rounds", "0"], "--rounds"),
    "negative games": (["--games", "-3"], "--games"),
    "zero workers": (["--workers", "0"], "--workers"),
    "zero target score": (["--target-score", "0"], "--target-score"),
    "zero block": (["--block-deals", "0"], "--block-deals"),
    "bad sevens rule": (["--sevens-rule", "best"], "--sevens-rule"),
    "five players": (["--players", "5"], "--players"),
    "one agent": (["--agents", "random"], "at least 2"),
    "agent twice": (["--agents", "random", "random"], "more than once"),
    "rounds and games": (["--rounds", "5", "--games", "5"], "not allowed"),
    "bad confidence": (["--confidence", "1.5"], "--confidence"),
    "missing replay": (["--check-replays", "nowhere.jsonl"], "nowhere"),
}


@pytest.fixture(scope="module")
def bad_runs(tmp_path_factory):
    """Run every bad command line at once (in parallel subprocesses); return name -> result."""
    tmp = tmp_path_factory.mktemp("bad")
    _checkpoints(tmp)

    def go(args):
        return _run([*args, "--no-progress", "--no-plot", "--rounds", "2", "--out", "o"]
                    if "--rounds" not in args and "--games" not in args and "--check-replays" not in args
                    else [*args, "--no-progress", "--out", "o"], tmp)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(BAD, pool.map(go, [a for a, _ in BAD.values()]), strict=True))
    return results


@pytest.mark.parametrize("case", list(BAD))
def test_cli_bad_input_gives_one_clear_error_line_and_no_traceback(bad_runs, case):
    r = bad_runs[case]
    _, needle = BAD[case]
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("evaluate.py: error: ")
    assert needle in lines[0]
    assert r.stdout == ""


def test_the_results_name_the_source_the_run_started_from(tmp_path, monkeypatch):
    """A tournament can run for hours: its results record the commit its process loaded, not whatever
    the checkout holds when they are written (a fake git state that changes once play starts)."""
    from agents.tournament import cli
    from tests.helpers import git_state_that_changes_once_play_starts

    started = git_state_that_changes_once_play_starts(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--agents", "random", "greedy", "--rounds", "4", "--block-deals", "2", "--workers", "1",
                     "--no-progress", "--no-plot", "--out", "res"]) == 0
    assert started and json.loads((tmp_path / "res.json").read_text())["git"] == {"commit": "before",
                                                                                  "dirty": False}
