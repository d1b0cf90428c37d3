"""evaluate.py under faults: a killed worker, SIGTERM and resume, files it must not clobber."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agents.tournament.runner import TournamentConfig
from tests.helpers import journal_blocks

ROOT = Path(__file__).resolve().parents[2]


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(ROOT / "evaluate.py"), *args], cwd=cwd, text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    p = _start(args, cwd)
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _block_lines(journal: Path) -> int:
    return journal_blocks(journal)


def _wait_for_blocks(proc: subprocess.Popen, journal: Path, n: int, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while _block_lines(journal) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "no block was journaled"
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    """Return the child processes of ``pid`` (from /proc/*/stat: field 4 is the parent)."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _numbers(path: Path) -> dict:
    res = json.loads(path.read_text())
    return {k: res[k] for k in ("pairs", "agents", "ratings")}


def test_a_killed_worker_ends_the_run_at_once_with_one_line_and_keeps_the_finished_blocks(tmp_path):
    p = _start(["--agents", "greedy", "expert", "--rounds", "4000", "--block-deals", "10", "--workers", "2",
                "--no-plot", "--no-progress", "--out", "res/t"], tmp_path)
    journal = tmp_path / "res/t.journal.jsonl"
    _wait_for_blocks(p, journal, 1)
    own = Path(f"/proc/{p.pid}/cmdline").read_bytes()
    workers = [c for c in _children(p.pid) if Path(f"/proc/{c}/cmdline").read_bytes() == own]
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    t0 = time.monotonic()
    _, err = p.communicate(timeout=60)  # before the fix the pool waited forever for the lost task
    elapsed = time.monotonic() - t0
    assert p.returncode == 1
    (line,) = err.strip().splitlines()
    assert line.startswith("evaluate.py: error: a worker process died")
    assert "kept in res/t.journal.jsonl" in line and "--resume" in line
    assert elapsed < 30  # a bound on a hang, not a timing: the fix ends it in well under a second
    assert _block_lines(journal) >= 1
    assert not (tmp_path / "res/t.json").exists()
    for w in workers[1:]:  # the other worker is stopped too, not left running
        assert not Path(f"/proc/{w}").exists() or "Z" in Path(f"/proc/{w}/stat").read_text().split()[2]


@pytest.mark.slow
def test_sigterm_then_resume_gives_the_numbers_of_an_uninterrupted_run(tmp_path):
    args = ["--agents", "greedy", "expert", "--rounds", "120", "--block-deals", "4", "--no-plot",
            "--no-progress", "--workers", "1", "--seed", "3"]
    p = _start([*args, "--out", "cut", "--save-replays", "rep_cut"], tmp_path)
    _wait_for_blocks(p, tmp_path / "cut.journal.jsonl", 2)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143
    (line,) = err.strip().splitlines()
    assert line.startswith("evaluate.py: terminated; ") and "with --resume to finish" in line
    kept = _block_lines(tmp_path / "cut.journal.jsonl")
    assert 2 <= kept < 30 and f"; {kept} of 30 blocks finished" in line

    again = _run([*args, "--out", "cut", "--save-replays", "rep_cut"], tmp_path)  # no --resume: refused
    assert again.returncode == 1 and "--resume" in again.stderr and len(again.stderr.splitlines()) == 1
    other = _run([*args, "--rounds", "121", "--out", "cut", "--resume"], tmp_path)  # other settings
    assert other.returncode == 1 and "other settings" in other.stderr

    resumed = _run([*args, "--out", "cut", "--save-replays", "rep_cut", "--resume"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert not (tmp_path / "cut.journal.jsonl").exists()  # the results hold everything now
    full = _run([*args, "--out", "full", "--save-replays", "rep_full"], tmp_path)
    assert full.returncode == 0, full.stderr
    assert _numbers(tmp_path / "cut.json") == _numbers(tmp_path / "full.json")
    cut = json.loads((tmp_path / "cut.json").read_text())  # each sitting and what it played
    assert [s["blocks_played"] for s in cut["sittings"]] == [kept, 30 - kept]
    assert cut["timing"]["blocks"] == 30 and cut["timing"]["blocks_resumed"] == kept
    assert resumed.stdout.split("\nwall")[0] == full.stdout.split("\nwall")[0]  # the printed table
    (a,), (b,) = (sorted((tmp_path / d).glob("*.jsonl")) for d in ("rep_cut", "rep_full"))
    assert a.read_text() == b.read_text() and len(a.read_text().splitlines()) == 240


def test_a_bad_spec_leaves_earlier_replays_and_results_untouched(tmp_path):
    first = _run(["--agents", "random", "greedy", "--rounds", "4", "--no-plot", "--no-progress", "--out", "r",
                  "--save-replays", "rep"], tmp_path)
    assert first.returncode == 0, first.stderr
    names = [*tmp_path.glob("r.*"), *tmp_path.glob("r_*"), *(tmp_path / "rep").iterdir()]
    files = {f: f.read_bytes() for f in names}
    assert len(files) == 4 and all(files.values())
    bad = _run(["--agents", "random", "greedy", "nonsense", "--rounds", "4", "--out", "r", "--save-replays",
                "rep", "--overwrite"], tmp_path)
    assert bad.returncode == 1 and "unknown agent 'nonsense'" in bad.stderr
    same = _run(["--agents", "random", "greedy", "--rounds", "4", "--no-plot", "--out", "r2",
                 "--save-replays", "rep"], tmp_path)  # new results, but the replays exist already
    assert same.returncode == 1
    assert same.stderr.strip() == (f"evaluate.py: error: {Path('rep/00_random_vs_greedy.jsonl')} already "
                                   "exists: pass --overwrite to replace it, or choose another --out / "
                                   "--save-replays")
    assert not (tmp_path / "r2.json").exists()
    assert {f: f.read_bytes() for f in files} == files
    again = _run(["--agents", "random", "greedy", "--rounds", "4", "--no-plot", "--out", "r"], tmp_path)
    assert again.returncode == 1 and "r.json already exists" in again.stderr
    assert {f: f.read_bytes() for f in files} == files


def _small_run():
    from agents.tournament.runner import run_tournament

    cfg = TournamentConfig(agents=("random", "greedy"), deals=6, block_deals=2, seed=5)
    return cfg, run_tournament(cfg, record=True)


def test_the_journal_round_trips_blocks_exactly_and_drops_a_torn_last_line(tmp_path):
    from agents.tournament.journal import Journal, run_key

    cfg, run = _small_run()
    blocks = run.blocks[0]
    j = Journal(tmp_path / "r.journal.jsonl", run_key(cfg, record=True))
    j.start(resume=False)
    for b in blocks:
        j.add(b)
    j.close()
    with open(j.path, "a") as fh:
        fh.write('{"lineup": 0, "blo')  # a kill in the middle of a write
    back = sorted(Journal(j.path, j.key).load(), key=lambda b: b.block)
    assert len(back) == len(blocks) == 3
    for a, b in zip(back, blocks, strict=True):
        for k in ("deal", "rotation", "points", "categories", "rounds", "truncated"):
            x, y = getattr(a, k), getattr(b, k)
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert a.replays == b.replays and (a.lineup, a.block) == (b.lineup, b.block)
    assert j.path.read_text().endswith("}\n")  # the torn tail is cut, the next append starts clean


def test_a_journal_of_other_settings_a_damaged_one_or_none_is_refused(tmp_path):
    from agents.tournament.journal import Journal, run_key

    cfg, run = _small_run()
    path = tmp_path / "r.journal.jsonl"
    with pytest.raises(ValueError, match="nothing to resume"):
        Journal(path, "k").load()
    j = Journal(path, run_key(cfg, record=False))
    j.start(resume=False)
    j.add(run.blocks[0][0])
    j.close()
    assert run_key(cfg, record=True) != j.key
    with pytest.raises(ValueError, match="other settings"):
        Journal(path, run_key(cfg, record=True)).load()
    other = TournamentConfig(agents=("random", "greedy"), deals=6, block_deals=2, seed=6)
    with pytest.raises(ValueError, match="other settings"):
        Journal(path, run_key(other, record=False)).load()
    assert run_key(TournamentConfig(agents=("random", "greedy"), deals=6, block_deals=2, seed=5,
                                    workers=2, backend="ray"), record=False) == j.key  # how, not what
    path.write_text(path.read_text().replace('"lineup":0', '"lineup":"x"'))
    with pytest.raises(ValueError, match="damaged block line"):
        Journal(path, j.key).load()
    path.write_text("not a journal\n")
    with pytest.raises(ValueError, match="is not an evaluate.py journal"):
        Journal(path, j.key).load()
