"""benchmarks/first_agent.py is a tool that can be stopped: Ctrl-C, a timeout's SIGTERM or a SIGKILL
leaves no process behind, a stop ends in one line, and the results of the methods that finished are
kept (before, a stop lost every result and left train.py running with a budget of 1e9 steps)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import tagged_pids

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "first_agent.py"
TAG = "ESCOBA_TEST_FIRST_AGENT"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds processes in /proc")]


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    tag = uuid.uuid4().hex
    p = subprocess.Popen([sys.executable, str(SCRIPT), "--eval-rounds", "16", "--points", "1",
                          "--out", "out.json", *args], cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), TAG: tag})
    return p, tag


def _wait_for_train(p: subprocess.Popen, tag: str, timeout: float = 300) -> None:
    """Return once the script's train.py child runs (its command line names train.py)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert p.poll() is None, p.communicate()
        for pid in tagged_pids(TAG, tag):
            try:
                if b"train.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return
            except OSError:
                continue
        time.sleep(0.05)
    p.kill()
    pytest.fail(f"train.py did not start within {timeout} s")


def _none_left(tag: str, timeout: float = 20) -> list[int]:
    """Return the tagged processes still alive after ``timeout`` seconds (none, if all went)."""
    end = time.monotonic() + timeout
    while (left := tagged_pids(TAG, tag)) and time.monotonic() < end:
        time.sleep(0.1)
    for pid in left:  # the test cleans up what the script left, then fails
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)],
                         ids=["ctrl-c", "timeout"])
def test_a_stopped_run_keeps_the_finished_method_and_leaves_no_process(tmp_path, sig, status):
    p, tag = _start(tmp_path, "--methods", "cleanrl", "train", "--steps", "4096")
    _wait_for_train(p, tag)  # cleanrl has finished; train.py is starting
    if sig == signal.SIGINT:
        os.killpg(p.pid, sig)  # as a terminal's Ctrl-C: the whole foreground group
    else:
        p.send_signal(sig)  # as `timeout` does: the script alone
    _, err = p.communicate(timeout=120)
    assert _none_left(tag) == []
    assert p.returncode == status, err
    (line,) = err.strip().splitlines()
    assert line.startswith("first_agent.py: ") and "out.json keeps cleanrl (2 points, finished)" in line, line
    results = json.loads((tmp_path / "out.json").read_text())["results"]
    cleanrl = results["cleanrl"]
    assert cleanrl["finished"] and [pt["steps"] for pt in cleanrl["points"]] == [0, 4096]
    assert all(pt["cpu_seconds"] >= 0 and pt["seconds"] >= 0 for pt in results["cleanrl"]["points"])
    assert not results["train"]["finished"]


def test_a_killed_run_takes_its_train_child_with_it(tmp_path):
    """SIGKILL leaves the script no time to clean up: the child's parent-death signal kills it."""
    p, tag = _start(tmp_path, "--methods", "train", "--steps", "1000000")
    _wait_for_train(p, tag)
    p.kill()
    p.communicate(timeout=60)
    assert _none_left(tag) == []


def test_an_existing_out_is_refused_in_one_line(tmp_path):
    (tmp_path / "out.json").write_text("{}")
    p, tag = _start(tmp_path, "--methods", "cleanrl", "--steps", "64")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2
    (line,) = err.strip().splitlines()
    assert "out.json already exists: pass --overwrite" in line
    assert (tmp_path / "out.json").read_text() == "{}"
