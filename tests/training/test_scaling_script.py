"""benchmarks/scaling_device.sh (the many-core / GPU scaling run) works in its tiny CPU dry run, and
benchmarks/bench_rollout.py (the league rollout profile) is deterministic."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "scaling_device.sh")


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, env=env, timeout=300)


def test_tiny_run_logs_every_row(tmp_path):
    log = tmp_path / "scaling.log"
    r = _run("--tiny", "--log", str(log))
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    assert text.startswith("# bench_train scaling run, ") and "tiny=1" in text.splitlines()[0]
    rows = re.findall(r"^run 1, default league, (\d+) worker\(s\), (synchronous|overlapped): "
                      r"[\d,]+ env steps/s wall, [\d,]+ per CPU-second", text, re.M)
    # the CPU rows (1 worker, the many-worker count), the "GPU" rows (here on the CPU), one overlapped
    assert rows == [("1", "synchronous"), ("2", "synchronous"), ("1", "synchronous"), ("2", "synchronous"),
                    ("2", "overlapped")]
    assert text.count("$ python benchmarks/bench_train.py") == 3
    assert re.search(r"^16 games x 4 steps, device cpu, .*: CPU s per update [\d.]+ \| wall s [\d.]+ "
                     r"\| digest ", text, re.M)
    assert text.rstrip().splitlines()[-1].startswith("# done in ")


def test_existing_log_is_refused_untouched(tmp_path):
    log = tmp_path / "old.log"
    log.write_text("keep me\n")
    r = _run("--tiny", "--log", str(log))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "already exists" in r.stderr
    assert log.read_text() == "keep me\n"


def test_bad_arguments_get_one_line(tmp_path):
    for args in (["--bogus"], ["--log"], ["--tiny", "--log", str(tmp_path / "nowhere" / "x.log")]):
        r = _run(*args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1
        assert r.stderr.startswith("scaling_device.sh: error:")
        assert r.stdout == ""


def test_bench_rollout_is_deterministic_and_checks_its_input(tmp_path):
    script = os.path.join(ROOT, "benchmarks", "bench_rollout.py")
    env = {**os.environ, "PYTHONPATH": ROOT}
    outs = [subprocess.run([sys.executable, script, "--games", "6", "--rollouts", "1", *more], text=True,
                           capture_output=True, env=env, cwd=tmp_path, timeout=300)
            for more in ([], ["--sections"])]
    digests = []
    for r in outs:
        assert r.returncode == 0, r.stderr
        m = re.fullmatch(r"6 games, 1 rollouts of 32 steps: [\d,]+ rollout steps per CPU-second \| digest "
                         r"([0-9a-f]{16}) \| load average [\d.]+\n(CPU ms per step: [a-z ]+ [\d.]+"
                         r"(, [a-z ]+ -?[\d.]+)* \(total [\d.]+\)\n)?", r.stdout)
        assert m, r.stdout
        digests.append(m.group(1))
    assert digests[0] == digests[1]  # timing the parts changes nothing
    assert "CPU ms per step" not in outs[0].stdout and "CPU ms per step" in outs[1].stdout
    bad = subprocess.run([sys.executable, script, "--games", "0"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--games: must be a positive integer" in bad.stderr
    assert not list(tmp_path.iterdir())


def test_bench_update_checks_its_input(tmp_path):
    script = os.path.join(ROOT, "benchmarks", "bench_update.py")
    env = {**os.environ, "PYTHONPATH": ROOT}
    cases = [(["--updates", "0"], "--updates: must be a positive integer"),
             (["--device", "tpu"], "invalid choice")]
    if not torch.cuda.is_available():
        cases.append((["--device", "cuda"], "CUDA is not available on this machine"))
    for args, message in cases:
        r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=120)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
        assert r.stderr.startswith("bench_update.py: error: ")
    assert not list(tmp_path.iterdir())
