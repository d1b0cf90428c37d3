"""escoba-evaluate with a language model: a whole tournament against the stand-in, a fault that ends
the run and ``--resume``, and the key written nowhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-standin-9c8b7a6f5e4d"


def _evaluate(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run escoba-evaluate (the console script when installed, else evaluate.py) on this tree."""
    script = Path(sys.executable).with_name("escoba-evaluate")
    cmd = [str(script)] if script.exists() else [sys.executable, str(ROOT / "evaluate.py")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY}
    return subprocess.run([*cmd, *args], cwd=cwd, env=env, text=True, capture_output=True, timeout=240)


def _written(tmp_path: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.is_file()]


def test_escoba_evaluate_plays_a_whole_tournament_against_the_stand_in(standin, tmp_path):
    spec = f"llm:base_url={standin.url},model=M"  # "M" is scripted as the legal player
    r = _evaluate(["--agents", spec, "random", "--rounds", "2", "--no-plot", "--no-progress", "--workers",
                   "1", "--out", "res/t", "--save-replays", "rep"], tmp_path)
    assert r.returncode == 0, r.stderr
    u = json.loads((tmp_path / "res/t.json").read_text())["llm_usage"][spec]
    assert u["decisions"] > 20 and u["fallbacks"] == 0 and u["reasks"] == 0 and u["calls"] == u["decisions"]
    assert u["tokens_in"] > 0 and u["tokens_out"] == u["calls"] and u["latency_p95_ms"] >= u["latency_p50_ms"]
    assert "language models:" in r.stdout and f"{spec}: {u['decisions']} decisions" in r.stdout
    check = _evaluate(["--check-replays", "rep"], tmp_path)  # every move legal, re-played by the engine
    assert check.returncode == 0 and check.stdout.startswith("ok: 4 games")
    assert {h.get("Authorization") for h in standin.headers} == {f"Bearer {KEY}"}
    for path in _written(tmp_path):  # results, CSVs, replays: never the key
        assert KEY not in path.read_text(errors="replace"), path
    assert KEY not in r.stdout + r.stderr


@pytest.mark.slow
def test_a_fault_ends_the_run_with_one_line_and_resume_finishes_it(standin, tmp_path):
    spec = f"llm:base_url={standin.url},model=legal,attempts=2,backoff=0"
    args = ["--agents", spec, "random", "--rounds", "3", "--block-deals", "1", "--no-plot", "--no-progress",
            "--workers", "1", "--out", "res/t"]
    standin.fail_after = 30  # a block takes ~20 requests: the first is kept, a later one meets the 500s
    r = _evaluate(args, tmp_path)
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("evaluate.py: error: " if "evaluate.py" in line else "escoba-evaluate: error: ")
    assert "HTTP 500 on 2 tries" in line and "blocks finished, kept in res/t.journal.jsonl" in line
    assert "--resume" in line
    for path in _written(tmp_path):
        assert KEY not in path.read_text(errors="replace"), path
    standin.fail_after = None  # the endpoint is back
    again = _evaluate([*args, "--resume"], tmp_path)
    assert again.returncode == 0, again.stderr
    res = json.loads((tmp_path / "res/t.json").read_text())
    assert res["timing"]["blocks_resumed"] >= 1 and res["llm_usage"][spec]["fallbacks"] == 0
    assert KEY not in (tmp_path / "res/t.json").read_text()


def test_an_endpoint_echoing_the_key_leaks_no_part_of_it_into_output_results_or_logs(standin, tmp_path):
    from tests.llm.test_llm_bounded import KEY as LONG_KEY
    from tests.llm.test_llm_bounded import key_runs

    spec = f"llm:base_url={standin.url},model=echo400"
    script = Path(sys.executable).with_name("escoba-evaluate")
    cmd = [str(script)] if script.exists() else [sys.executable, str(ROOT / "evaluate.py")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": LONG_KEY}
    r = subprocess.run([*cmd, "--agents", spec, "random", "--rounds", "2", "--no-plot", "--no-progress",
                        "--workers", "1", "--out", "res/t"], cwd=tmp_path, env=env, text=True,
                       capture_output=True, timeout=240)
    assert r.returncode == 1 and "HTTP 400 Bad Request" in r.stderr and "Traceback" not in r.stderr
    assert "[key]" in r.stderr  # the operator's log line: what the endpoint said, scrubbed
    assert standin.headers[0]["Authorization"] == f"Bearer {LONG_KEY}"
    assert key_runs(r.stdout + r.stderr) == []
    for path in _written(tmp_path):
        assert key_runs(path.read_text(errors="replace")) == [], path
