"""train.py and training checkpoints against bad input, reused run names, signals and crafted files."""

from __future__ import annotations

import csv
import fractions
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
import torch

from agents.nets.neural import NeuralAgent, load_checkpoint
from agents.training import Config, Trainer, export_agent
from agents.training.cli import config_from_args, main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = ["--num-envs", "16", "--num-steps", "8", "--hidden", "16", "--total-steps", "128", "--eval-interval",
         "0", "--no-progress", "--no-tensorboard", "--num-minibatches", "2"]


def tiny(tmp_path, name: str = "run", **kw) -> Config:
    base = dict(num_envs=16, num_steps=8, hidden=(16,), total_steps=3 * 128, eval_interval=0, progress=False,
                tensorboard=False, num_minibatches=2, save_interval=128, seed=2, runs_dir=str(tmp_path),
                run_name=name)
    return Config(**{**base, **kw})


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A finished tiny run: return its checkpoint path."""
    tmp = tmp_path_factory.mktemp("small")
    assert main([*SMALL, "--runs-dir", str(tmp), "--run-name", "small"]) == 0
    return os.path.join(tmp, "small", "checkpoints", "latest.pt")


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("train.py: error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(("args", "words"), [
    (["--num-envs", "0"], "num_envs must be >= 1"),
    (["--device", "foo"], "device"),
    (["--num-players", "4"], "unrecognized arguments: --num-players"),
    (["--players", "5"], "invalid choice"),
    (["--eval-deals", "0"], "eval_deals must be >= 1"),
    (["--gamma", "5"], "gamma must be in [0, 1]"),
    (["--gamma", "nan"], "gamma must be finite"),
    (["--hidden", "0"], "hidden must be"),
    (["--threads", "-4"], "threads must be >= 0"),
    (["--save-interval", "0"], "save_interval must be >= 1"),
    (["--learning-rate", "-1"], "learning_rate must be > 0"),
    (["--workers", "17"], "workers (17) must be <= num_envs (16)"),
    (["--backend", "mpi"], "backend must be one of"),
    (["--run-name", "../../x"], "run_name must be a plain folder name"),
    (["--run-name", "a/b"], "run_name must be a plain folder name"),
    (["--total-steps", "many"], "invalid int value"),
    (["--resume", "no/such/file.pt"], "checkpoint not found"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, words):
    runs = tmp_path / "a" / "b" / "runs"
    code = main([*SMALL, "--runs-dir", str(runs), *args])
    assert code == 2
    assert words in one_error_line(capsys)
    assert not runs.exists() and sorted(os.listdir(tmp_path)) == []


def test_resume_of_a_corrupt_or_exported_file_is_one_line(tmp_path, capsys, small_run):
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(open(small_run, "rb").read()[:200])
    assert main(["--resume", str(bad)]) == 2
    assert "corrupt" in one_error_line(capsys)
    exported = export_agent(small_run, str(tmp_path / "agent.pt"))
    assert main(["--resume", exported]) == 2
    assert "no training state" in one_error_line(capsys)


def test_players_flag_is_the_shared_rules_flag(capsys):
    assert config_from_args(["--players", "3"])[0].rules == {"num_players": 3}
    assert config_from_args(["--players", "4", "--partnerships"])[0].rules == {"num_players": 4,
                                                                                   "partnerships": True}
    with pytest.raises(SystemExit):
        config_from_args(["--help"])
    out = capsys.readouterr().out
    assert "--players" in out and "--num-players" not in out and "--sevens-rule" in out


def test_a_reused_run_name_is_refused_and_the_old_run_is_kept(tmp_path, capsys, small_run):
    runs = os.path.dirname(os.path.dirname(os.path.dirname(small_run)))
    run = os.path.dirname(os.path.dirname(small_run))
    before = {f: open(os.path.join(run, f), "rb").read() for f in ("metrics.csv", "checkpoints/latest.pt")}
    code = main([*SMALL, "--runs-dir", runs, "--run-name", "small", "--players", "3"])
    assert code == 2
    line = one_error_line(capsys)
    assert "already holds a run" in line and f"--resume {small_run}" in line
    assert before == {f: open(os.path.join(run, f), "rb").read() for f in before}


def test_a_run_killed_before_its_first_checkpoint_is_not_told_to_resume(tmp_path, capsys):
    """A run killed before its first checkpoint leaves metrics.csv only: the advice names no checkpoint
    (``--resume`` of one that is not there answers "checkpoint not found"), it says how to start over."""
    run = tmp_path / "ci"
    run.mkdir()
    (run / "metrics.csv").write_text("step,wall_s,tag,value\n")
    assert main([*SMALL, "--runs-dir", str(tmp_path), "--run-name", "ci"]) == 2
    line = one_error_line(capsys)
    assert "already holds a run" in line and "--resume" not in line and "no checkpoint" in line
    assert "start over" in line and "--run-name" in line
    assert sorted(os.listdir(run)) == ["metrics.csv"]


def test_resume_drops_metric_rows_logged_after_its_checkpoint(tmp_path):
    """A run saved at step 128, then logged up to 384 before it died: resuming from 128 logs 256 and
    384 again, once each."""
    copy = str(tmp_path / "step128.pt")

    def keep_first(t: Trainer, _stats) -> None:
        if t.update == 1:
            shutil.copy(t.ckpt_path, copy)

    Trainer(tiny(tmp_path)).run(callback=keep_first)
    Trainer(Config(resume=copy)).run()
    with open(tmp_path / "run" / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    counts = Counter((r["step"], r["tag"]) for r in rows)
    assert max(counts.values()) == 1
    assert counts[("384", "losses/value_loss")] == 1 and counts[("128", "losses/value_loss")] == 1


def _start(tmp_path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": ROOT}
    args = [sys.executable, os.path.join(ROOT, "train.py"), "--runs-dir", str(tmp_path), "--run-name", "sig",
            "--num-envs", "32", "--num-steps", "8", "--hidden", "16", "--total-steps", "10000000000",
            "--eval-interval", "0", "--no-progress", "--no-tensorboard", "--save-interval", "1000000000",
            *extra]
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _wait_for_training(tmp_path, proc: subprocess.Popen) -> None:
    metrics = tmp_path / "sig" / "metrics.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.exists() and len(metrics.read_text().splitlines()) > 5:
            return
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"training did not start: {proc.communicate()}")


@pytest.mark.parametrize(("sig", "extra"), [(signal.SIGTERM, ()), (signal.SIGINT, ("--workers", "2")),
                                           (signal.SIGTERM, ("--overlap",))])
def test_a_signal_saves_the_last_update_and_exits_with_one_line(tmp_path, sig, extra):
    proc = _start(tmp_path, *extra)
    _wait_for_training(tmp_path, proc)
    os.killpg(proc.pid, sig)  # the whole process group, as a terminal's Ctrl-C does
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 128 + sig, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"{signal.Signals(sig).name} received" in lines[0] and "checkpoint saved" in lines[0]
    ckpt = load_checkpoint(tmp_path / "sig" / "checkpoints" / "latest.pt")
    assert ckpt["global_step"] > 0 and ckpt["global_step"] % 256 == 0
    assert Trainer(Config(resume=str(tmp_path / "sig" / "checkpoints" / "latest.pt"))).global_step == \
        ckpt["global_step"]


def test_a_crafted_huge_network_is_refused_before_any_allocation(tmp_path, small_run, monkeypatch):
    ckpt = load_checkpoint(small_run)
    ckpt["net"] = {**ckpt["net"], "hidden": [100_000]}
    path = tmp_path / "huge.pt"
    torch.save(ckpt, path)
    sizes: list[int] = []
    real = torch.nn.Linear.__init__

    def spy(self, in_features, out_features, *a, **kw):
        if kw.get("device") is None and torch.get_default_device().type != "meta":
            sizes.append(in_features * out_features)
        real(self, in_features, out_features, *a, **kw)

    monkeypatch.setattr(torch.nn.Linear, "__init__", spy)
    with pytest.raises(ValueError, match="do not fit its network description"):
        NeuralAgent.from_checkpoint(path)
    with pytest.raises(ValueError, match="do not fit its network description"):
        Trainer(Config(resume=str(path)))
    assert max(sizes, default=0) < 10**6


def test_a_file_with_pickled_objects_is_refused_without_advising_weights_only_false(tmp_path, capsys):
    path = tmp_path / "evil.pt"
    torch.save({"format": "escoba-ppo", "payload": fractions.Fraction(1, 3)}, path)
    with pytest.raises(ValueError) as err:
        load_checkpoint(path)
    assert "weights_only" not in str(err.value) and "trust" not in str(err.value)
    assert "never loaded" in str(err.value)
    assert main(["--resume", str(path)]) == 2
    line = one_error_line(capsys)
    assert "weights_only" not in line


def test_workers_exit_when_the_trainer_is_killed(tmp_path):
    proc = _start(tmp_path, "--workers", "2")
    _wait_for_training(tmp_path, proc)
    with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        children = [int(c) for c in f.read().split()]
    assert len(children) == 2
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{c}") for c in children):
        time.sleep(0.2)
    alive = [c for c in children if os.path.exists(f"/proc/{c}")]
    for c in alive:
        os.kill(c, signal.SIGKILL)
    assert alive == []


def test_the_plan_is_printed_before_training_with_the_rounded_steps(tmp_path, capsys):
    from agents.training.cli import main as train_main

    rc = train_main(["--run-name", "plan", "--runs-dir", str(tmp_path), "--num-envs", "8", "--num-steps", "4",
                     "--total-steps", "50", "--eval-interval", "32", "--eval-deals", "2", "--no-tensorboard",
                     "--no-progress", "--hidden", "8"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0] == ("plan: train to step 64 in 2 updates of 32 env steps; --total-steps 50 rounded up to "
                      "whole updates, with 3 evaluations")
    assert out[1].startswith("estimate: about ") and out[1].endswith("; 1 more to go)")
    assert out[2].startswith("trained to step 64 (2 updates, ")
    evals = torch.load(tmp_path / "plan" / "checkpoints" / "latest.pt", weights_only=False)["evals"]
    assert [e["step"] for e in evals] == [0, 32, 64]  # the plan counted the evaluations the run made


def test_a_whole_number_of_updates_is_not_called_rounded(tmp_path):
    from agents.training.cli import plan_line

    plan = {"steps_per_update": 32, "updates": 2, "start_step": 0, "end_step": 64, "evaluations": 0}
    assert plan_line(plan, 64) == "plan: train to step 64 in 2 updates of 32 env steps, with 0 evaluations"
    plan = {"steps_per_update": 32, "updates": 1, "start_step": 32, "end_step": 64, "evaluations": 1}
    assert plan_line(plan, 50) == ("plan: train to step 64 from step 32 in 1 updates of 32 env steps; "
                                   "--total-steps 50 rounded up to whole updates, with 1 evaluations")


def test_the_progress_bar_ends_on_the_evaluation_the_summary_prints(tmp_path, capsys):
    import re

    from agents.training.cli import main as train_main

    # evaluations at steps 0 and 64 inside the loop, and the last one at 96 after it
    rc = train_main(["--run-name", "bar", "--runs-dir", str(tmp_path), "--num-envs", "8", "--num-steps", "4",
                     "--total-steps", "96", "--eval-interval", "64", "--eval-deals", "6", "--no-tensorboard",
                     "--progress", "--hidden", "8", "--seed", "3"])
    captured = capsys.readouterr()
    assert rc == 0
    evals = torch.load(tmp_path / "bar" / "checkpoints" / "latest.pt", weights_only=False)["evals"]
    assert [e["step"] for e in evals] == [0, 64, 96]
    assert evals[-1]["expert"][0] != evals[-2]["expert"][0]  # so the bar's last figure tells them apart
    shown = re.findall(r"expert=([+-]\d\.\d{3})", captured.err)
    assert shown and float(shown[-1]) == pytest.approx(evals[-1]["expert"][0], abs=5e-4)
    assert f"vs expert: {evals[-1]['expert'][0]:+.3f}" in captured.out


def test_a_run_evaluates_by_default_and_ends_with_its_curve_folder_and_tensorboard_line(tmp_path, capsys):
    """Fails on the old ending: two evaluations (start and end) for a short run, no learning_curve.png,
    no run folder or tensorboard line; and a resume without --total-steps planned against the command
    line's default target ("--total-steps 45,000,000 rounded up") instead of the run's own."""
    from agents.training.cli import main as train_main

    rc = train_main(["--run-name", "end", "--runs-dir", str(tmp_path), "--num-envs", "8", "--num-steps", "4",
                     "--total-steps", "96", "--eval-deals", "2", "--no-progress", "--hidden", "8"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].endswith("with 4 evaluations")  # one per update and the start: a tenth of the run
    run = tmp_path / "end"
    assert (run / "learning_curve.png").stat().st_size > 0 and (run / "metrics.csv").exists()
    assert out[-2] == f"run folder: {run} (learning curve: {run / 'learning_curve.png'})"
    assert out[-1] == f"tensorboard --logdir {run}"
    rc = train_main(["--resume", str(run / "checkpoints" / "latest.pt"), "--no-progress"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].startswith("plan: train to step 96 from step 96 in 0 updates of 32 env steps, with ")
    assert "rounded" not in out[0]


def test_any_ray_error_of_the_rollout_actors_is_a_worker_error():
    """Fails with only RayActorError/RayTaskError caught: a lost node's ObjectReconstructionFailedError
    escaped as a full traceback instead of the one-line WorkerError (which saves the checkpoint)."""
    import types

    ray = pytest.importorskip("ray")
    from agents.training.workers import RayActors, WorkerError

    lost = ray.exceptions.ObjectReconstructionFailedError("ab" * 14)

    def get(refs):
        raise lost

    actors = RayActors.__new__(RayActors)
    actors.ray = types.SimpleNamespace(get=get, exceptions=ray.exceptions)
    want = r"^Ray lost a rollout actor or its data \(ObjectReconstructionFailedError\)"
    with pytest.raises(WorkerError, match=want):
        actors._get([])
