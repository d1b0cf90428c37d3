"""The benchmark scripts answer bad input with one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("script", "args", "status", "message"), [
    ("bench_engine.py", ["--batches", "0"], 2, "argument --batches: must be a positive integer, got '0'"),
    ("bench_engine.py", ["--repeats", "-1"], 2, "argument --repeats: must be a positive integer"),
    ("bench_engine.py", ["--players", "5"], 2, "argument --players: invalid choice: 5"),
    ("bench_envs.py", ["--seconds", "inf"], 2, "argument --seconds: must be a positive number, got 'inf'"),
    ("bench_envs.py", ["--batches", "256,x"], 2, "argument --batches: must be a positive integer, got 'x'"),
    ("bench_agents.py", ["--agents", "nonsense", "--positions", "2"], 1, "unknown agent 'nonsense'"),
    ("bench_agents.py", ["--positions", "0"], 2, "argument --positions: must be a positive integer"),
    ("strength.py", ["--deals", "0"], 2, "argument --deals: must be a positive integer"),
    ("strength.py", ["--seed", str(2**64)], 2, "argument --seed: must be an integer from 0 to 2**64-1"),
    ("strength.py", ["--deals", "2", "--json", "no/such/dir/x.json"], 1, "its folder does not exist"),
    ("bench_train.py", ["--threads", "-4"], 2, "argument --threads: must be a positive integer, got '-4'"),
    ("bench_train.py", ["--device", "foo"], 2, "argument --device: not a torch device: 'foo'"),
    ("bench_arena.py", ["--clients", "0"], 2, "argument --clients: must be a positive integer, got '0'"),
    ("first_agent.py", ["--steps", "0"], 2, "argument --steps: must be a positive integer, got '0'"),
    ("first_agent.py", ["--methods", "dqn"], 2, "argument --methods: invalid choice: 'dqn'"),
    ("command_cost.py", ["--only", "nothing"], 2, "argument --only: invalid choice: 'nothing'"),
    ("fixed_point_moves.py", ["--deals", "0"], 2, "argument --deals: must be a positive integer, got '0'"),
    ("bench_arena.py", ["--seconds", "nan"], 2, "argument --seconds: must be a positive number, got 'nan'"),
    ("bench_arena.py", ["--clients", "2", "--games", "2", "--opponents", "python:os:system"], 1,
     "a client failed: POST /api/games: 400"),
    ("llm_local.py", ["--venv", "v", "--deals", "0"], 2, "argument --deals: must be a positive integer"),
    ("llm_local.py", ["--venv", "v", "--settings", "fast"], 2, "argument --settings: invalid choice: 'fast'"),
    ("llm_local.py", ["--venv", "v", "--out", "no/such/dir/x.json"], 1, "its folder does not exist"),
])
def test_bad_input_gets_one_line_and_a_non_zero_exit(tmp_path, script, args, status, message):
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=tmp_path, text=True,
                         capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == status
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"{script}: error: ") and message in line, line
    assert not list(tmp_path.iterdir())  # nothing written


def test_bench_arena_smoke():
    """Two clients play three whole games against the arena served by another process."""
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_arena.py"), "--clients", "2",
                          "--games", "3", "--opponents", "random"], cwd=ROOT, text=True, capture_output=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1].startswith("2 clients vs random: 3 games in ") and lines[1].endswith(" games/s")
    counts = {ln.split()[0]: int(ln.split()[1]) for ln in lines[3:6]}
    assert counts["create"] == 3 and counts["view"] == 3 and counts["move"] >= 3 * 10
    assert lines[6].startswith("server RSS: ")


def test_bench_arena_rooms_smoke():
    """Rooms mode: 2 rooms of 4 WebSocket people for a few seconds; every move reaches all 4 people."""
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_arena.py"), "--rooms", "2",
                          "--seconds", "4", "--think", "0.05", "--room-target", "2"], cwd=ROOT, text=True,
                         capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1].startswith("2 rooms x 4 people (think 0.05 s, target 2): ")
    moves = int(lines[1].split(": ")[1].split()[0])
    assert moves >= 10
    assert lines[2].startswith("move-to-broadcast (all 4 people have it) ms: p50 ")
    assert lines[3].startswith("server RSS: ") and " peak, " in lines[3]
