"""Overlapped rollouts: batch k+1 is collected with the weights of update k-1 while the learner updates."""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest

from agents.nets.neural import load_checkpoint
from agents.training import Config, Trainer, WorkerError, train
from agents.training.workers import LocalProcesses, _state_dicts
from tests.training.test_train_workers import same, tiny, weights


@pytest.mark.parametrize("workers", [1, 2])
def test_overlap_is_exactly_one_update_behind_and_reproducible(tmp_path, workers):
    """The overlapped run equals a hand-driven schedule where rollout u plays the weights W[max(u-1, 0)]."""
    cfg = dict(workers=workers, opp_snapshot=0.0, anneal_lr=True)
    runs = []
    for name in ("a", "b"):
        t = Trainer(tiny(tmp_path, name, overlap=True, **cfg))
        assert t.run()["updates"] == 4
        runs.append(weights(t))
    assert same(*runs)

    ref = Trainer(tiny(tmp_path, "ref", overlap=True, **cfg))  # driven by hand, one rollout at a time
    ref._start_workers()
    assert isinstance(ref.workers, LocalProcesses)
    seen = [_state_dicts(ref.net, ref.critic)]
    try:
        for u in range(4):
            ref.workers.start(u, 0, seen[max(u - 1, 0)])
            ref._apply(ref.workers.finish())
            for g in ref.opt.param_groups:
                g["lr"] = (1.0 - ref.global_step / ref.cfg.total_steps) * ref.cfg.learning_rate
            ref.ppo_update(*ref.advantages())
            ref.global_step += ref.n * ref.cfg.num_steps
            seen.append(_state_dicts(ref.net, ref.critic))
    finally:
        ref.close()
    assert same(runs[0], weights(ref))
    sync = Trainer(tiny(tmp_path, "sync", **cfg))
    sync.run()
    assert not same(runs[0], weights(sync))  # the lag changes the data, hence the weights


def test_overlapped_resume_replays_the_in_flight_rollout_exactly(tmp_path):
    """Snapshots in play (one per update): a checkpoint holds the in-flight rollout's weights and league."""
    full = Trainer(tiny(tmp_path, "full", overlap=True, workers=2, snapshot_interval=96))
    full.run()
    half = Trainer(tiny(tmp_path, "half", overlap=True, workers=2, snapshot_interval=96))
    half.run(max_updates=2)
    ck2 = str(tmp_path / "update2.pt")
    shutil.copy(half.ckpt_path, ck2)
    ck = load_checkpoint(ck2)
    assert ck["global_step"] == 2 * 24 * 8 and ck["update"] == 2
    assert not same(ck["overlap"]["behaviour"], ck["model"])  # one update behind
    assert train(Config(resume=ck2, progress=False), overrides=["progress"])["global_step"] == 768
    assert same(load_checkpoint(half.ckpt_path)["model"], weights(full))
    # the worker count may change on resume, and so may the scheme
    for kw in ({"workers": 3}, {"workers": 1, "overlap": False}):
        t = Trainer(Config(resume=ck2, **kw), overrides=list(kw))
        assert t.run()["global_step"] == 768


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


def test_a_dying_worker_stops_an_overlapped_run_with_the_last_update(tmp_path, monkeypatch):
    t = Trainer(tiny(tmp_path, overlap=True, workers=2, save_interval=10**9))
    start, fired = LocalProcesses.start, []

    def start_then_kill_worker_1(self, update, *args, **kwargs):
        """Rollout 1 is sent to a frozen worker 1, which is then killed: it dies with the rollout in flight
        and cannot have finished it first, whatever the timing."""
        if update != 1 or fired:
            return start(self, update, *args, **kwargs)
        fired.append(update)
        pid = self.procs[1].pid
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10.0
        while not _stopped(pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        try:
            return start(self, update, *args, **kwargs)
        finally:
            os.kill(pid, signal.SIGKILL)

    monkeypatch.setattr(LocalProcesses, "start", start_then_kill_worker_1)
    with pytest.raises(WorkerError, match=r"rollout worker 1 \(pid \d+\) died.*step 192"):
        t.run()
    ckpt = load_checkpoint(t.ckpt_path)
    assert ckpt["global_step"] == 192 and ckpt["update"] == 1
    assert t.workers is None and fired == [1]
    assert train(Config(resume=t.ckpt_path, progress=False), overrides=["progress"])["global_step"] == 768


def test_overlap_is_a_checked_flag(tmp_path):
    with pytest.raises(TypeError, match="overlap must be a bool"):
        Trainer(tiny(tmp_path, overlap=1))


@pytest.mark.slow
def test_ray_actors_overlap_like_local_processes(tmp_path):
    pytest.importorskip("ray")
    runs = []
    for backend in ("local", "ray"):
        t = Trainer(tiny(tmp_path, backend, overlap=True, workers=2, backend=backend))
        assert t.run(max_updates=3)["updates"] == 3
        runs.append(weights(t))
    assert same(*runs)
