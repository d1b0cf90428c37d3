"""Parallel rollouts: local worker processes and Ray actors train, resume and stop cleanly."""

from __future__ import annotations

import os
import shutil
import signal

import numpy as np
import pytest
import torch

from agents.nets.neural import load_checkpoint
from agents.training import Config, Trainer, WorkerError, train
from agents.training.cli import main
from agents.training.league import SNAP0
from agents.training.workers import shards

TINY = dict(num_envs=24, num_steps=8, hidden=(16,), total_steps=24 * 8 * 4, eval_interval=0, eval_deals=8,
            snapshot_interval=192, save_interval=192, num_minibatches=2, opp_self=0.4, opp_snapshot=0.3,
            opp_greedy=0.1, opp_expert=0.2, progress=False, tensorboard=False, seed=5)


def tiny(tmp_path, name: str = "run", **kw) -> Config:
    """Return a tiny deterministic config writing under ``tmp_path``."""
    return Config(**{**TINY, "runs_dir": str(tmp_path), "run_name": name, **kw})


def weights(t: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in t.net.state_dict().items()}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_shards_cover_the_games_once_in_order():
    assert shards(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert shards(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_same_seed_and_worker_count_give_the_same_weights(tmp_path):
    runs = []
    for name in ("a", "b"):
        t = Trainer(tiny(tmp_path, name, workers=2))
        t.run()
        runs.append(weights(t))
    assert same(*runs)
    other = Trainer(tiny(tmp_path, "c", workers=2, seed=6))
    other.run()
    assert not same(runs[0], weights(other))


def test_workers_deal_the_same_games_as_one_process(tmp_path):
    """The shards' engines deal with the global game ids: the first deal of every game is the same."""
    one, two = Trainer(tiny(tmp_path, "one")), Trainer(tiny(tmp_path, "two", workers=2))
    one.rollout()
    two.rollout()
    two.close()
    first = [t.buf_obs[0].numpy()[t.learner[0]] for t in (one, two)]
    np.testing.assert_array_equal(*first)


def test_resume_is_exact_with_the_same_worker_count_and_works_with_another(tmp_path):
    full = Trainer(tiny(tmp_path, "full", workers=2))
    full.run()
    half = Trainer(tiny(tmp_path, "half", workers=2))
    half.run(max_updates=2)
    ck2 = str(tmp_path / "update2.pt")
    shutil.copy(half.ckpt_path, ck2)
    assert load_checkpoint(ck2)["global_step"] == 2 * 24 * 8
    assert train(Config(resume=ck2, progress=False), overrides=["progress"])["global_step"] == 768
    assert same(load_checkpoint(half.ckpt_path)["model"], weights(full))
    # the worker count may change on resume: 3 workers (or 1) continue the same games
    for k in (3, 1):
        t = Trainer(Config(resume=ck2, workers=k), overrides=["workers"])
        assert t.cfg.workers == k and t.global_step == 2 * 24 * 8
        assert t.run()["global_step"] == 768


def test_league_snapshots_and_endgame_features_work_with_workers(tmp_path):
    cfg = tiny(tmp_path, workers=2, endgame_features=True, head="moves", snapshot_interval=96,
               total_steps=24 * 8 * 7, opp_self=0.0, opp_snapshot=1.0, opp_greedy=0.0, opp_expert=0.0)
    t = Trainer(cfg)
    seen: list[np.ndarray] = []
    t.run(callback=lambda tr, _: seen.append(tr.controller.copy()))
    assert t.pool[0] is not None and t.net.endgame
    assert (seen[-1] >= SNAP0).any()  # games against snapshots started inside the workers
    assert len(load_checkpoint(t.ckpt_path)["league"]["pool"]) == cfg.max_snapshots


def test_oracle_critic_trains_with_workers(tmp_path):
    t = Trainer(tiny(tmp_path, workers=2, critic="oracle", critic_hidden=(8,)))
    c0 = {k: v.clone() for k, v in t.critic.state_dict().items()}
    t.run(max_updates=1)
    assert not same(c0, {k: v for k, v in t.critic.state_dict().items()})


def test_a_dying_worker_stops_training_with_a_checkpoint_of_the_last_update(tmp_path):
    t = Trainer(tiny(tmp_path, workers=2, save_interval=10**9))

    def kill_one(tr: Trainer, _stats) -> None:
        if tr.update == 1:
            os.kill(tr.workers.procs[1].pid, signal.SIGKILL)

    with pytest.raises(WorkerError, match=r"rollout worker 1 \(pid \d+\) died.*step 192"):
        t.run(callback=kill_one)
    ckpt = load_checkpoint(t.ckpt_path)
    assert ckpt["global_step"] == 192 and ckpt["update"] == 1
    assert t.workers is None  # the other worker was shut down too
    # the saved update resumes
    assert train(Config(resume=t.ckpt_path, progress=False), overrides=["progress"])["global_step"] == 768


def test_cli_workers_train_checkpoint_resume_and_evaluate(tmp_path, capsys):
    args = ["--runs-dir", str(tmp_path), "--run-name", "cli", "--num-envs", "16", "--num-steps", "8",
            "--hidden", "16", "--total-steps", "256", "--eval-interval", "256", "--eval-deals", "4",
            "--no-progress", "--no-tensorboard", "--workers", "2", "--num-minibatches", "2"]
    assert main(args) == 0
    ckpt = os.path.join(tmp_path, "cli", "checkpoints", "latest.pt")
    assert load_checkpoint(ckpt)["global_step"] == 256
    assert main(["--resume", ckpt, "--total-steps", "512", "--workers", "3"]) == 0
    out = capsys.readouterr().out
    assert "trained to step 512" in out and "vs expert" in out
    assert load_checkpoint(ckpt)["global_step"] == 512


@pytest.mark.slow
def test_ray_backend_trains_stops_on_a_dead_actor_resumes_and_evaluates(tmp_path, capsys):
    ray = pytest.importorskip("ray")
    local = Trainer(tiny(tmp_path, "local", workers=2))
    local.run(max_updates=2)
    nodes = []

    def check_then_kill(tr: Trainer, _stats) -> None:
        nodes.append([n["NodeManagerAddress"] for n in ray.nodes()])
        if tr.update == 2:
            ray.kill(tr.workers.actors[1])

    t = Trainer(tiny(tmp_path, "ray", workers=2, backend="ray"))
    with pytest.raises(WorkerError, match="Ray rollout actor died.*step 384"):
        t.run(callback=check_then_kill)
    assert nodes[0] == ["127.0.0.1"] and not ray.is_initialized()  # a private instance, shut down
    ckpt = load_checkpoint(t.ckpt_path)
    assert ckpt["update"] == 2
    assert same(ckpt["model"], weights(local))  # Ray actors and local processes compute the same updates
    args = ["--resume", t.ckpt_path, "--total-steps", str(3 * 24 * 8), "--eval-interval", "192",
            "--eval-deals", "4"]
    assert main(args) == 0
    assert "trained to step 576" in capsys.readouterr().out


def test_league_rollout_computes_the_move_features_once_per_step_with_the_same_values(tmp_path, monkeypatch):
    """The learner's and the snapshots' games share one feature call a step, equal to separate calls."""
    from agents.nets.neural import PolicyValueNet
    from agents.training.league import LEARNER

    t = Trainer(tiny(tmp_path, opp_self=0.0, opp_snapshot=1.0, opp_greedy=0.0, opp_expert=0.0))
    t._add_snapshot()
    for _ in range(12):  # until some games started against the snapshot
        t.rollout()
        w = t.workers.worker
        code = w.controller[np.arange(w.n), w.env.engine.to_act]
        if (code >= SNAP0).any():
            break
    assert (code == LEARNER).any() and (code >= SNAP0).any()
    calls: list[int] = []
    real = PolicyValueNet.features
    monkeypatch.setattr(PolicyValueNet, "features", lambda net, obs: calls.append(len(obs)) or real(net, obs))
    feat = w._shared_features(code)
    for rows in (np.flatnonzero(code == LEARNER), np.flatnonzero(code >= SNAP0)):
        np.testing.assert_array_equal(feat(rows), real(w.net, w._obs[rows]))
    assert calls == [int(((code == LEARNER) | (code >= SNAP0)).sum())]
    t.rollout()
    assert len(calls) == 1 + t.cfg.num_steps  # one call a step, whatever the opponents


def test_bench_train_counts_the_bytes_a_ray_update_sends(tmp_path):
    """benchmarks/bench_train.py prints what the Ray backend ships per update: the weights once, and every
    worker's shard of the rollout buffers (4,978 bytes per env step for these rules and the moves head:
    546 float32 of observation, 40 x 17 float32 of move features, and the small arrays) plus its result."""
    from benchmarks.bench_train import measure

    cfg = tiny(tmp_path, workers=2, head="moves")
    r = measure(cfg, 1)
    raw = 24 * 8 * 4978
    assert raw + 24 * 100 < r["rollouts"] < raw + 24 * 1000  # the results: a few hundred bytes per game
    net = Trainer(tiny(tmp_path, "w", head="moves")).net
    params = sum(v.numel() * v.element_size() for v in net.state_dict().values())
    assert params < r["snapshot"] <= r["weights"] < params + 10_000  # the policy alone: no critic here
