"""examples/ run (tiny step counts): Tianshou, RLlib, SB3 + evaluate.py, CleanRL-style PPO, TorchRL."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def example(name: str) -> ModuleType:
    """Import examples/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tianshou_collector_stores_the_default_env_with_no_other_wrapper():
    """Tianshou's collector and buffer take escoba_v0's default infos, round ends and game end included."""
    from tianshou.algorithm import MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.env.pettingzoo_env import PettingZooEnv

    from escoba_env import escoba_v0

    env = PettingZooEnv(escoba_v0.env())
    algos = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in range(2)]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=algos, env=env)
    envs = DummyVectorEnv([lambda: PettingZooEnv(escoba_v0.env()) for _ in range(2)])
    envs.seed(0)
    collector = Collector[CollectStats](algorithm, envs, VectorReplayBuffer(5000, 2), exploration_noise=True)
    collector.reset()
    stats = collector.collect(n_episode=2)
    assert stats.n_collected_episodes == 2 and stats.n_collected_steps > 100
    info = collector.buffer.info
    assert {"round_points", "scores", "winner"} <= set(info.keys()) and "legal_moves" not in info.keys()
    idx = collector.buffer.sample_indices(0)  # every stored step
    done = idx[collector.buffer.done[idx]]
    winners = np.asarray(info.winner)[done]
    assert len(winners) == 2 and set(winners.tolist()) <= {0, 1}
    # a game's last step reports its winner, and the winner's reward is +1
    rew = collector.buffer.rew[done]
    np.testing.assert_array_equal(rew[np.arange(2), winners], [1.0, 1.0])


def test_tianshou_dqn_example():
    result, learner = example("tianshou_dqn").train(epochs=1, epoch_steps=40, num_envs=2, opponent="greedy",
                                                    episode="round", reward="round_points")
    assert math.isfinite(result.best_reward)
    assert type(learner).__name__ == "DQN"


@pytest.mark.slow
def test_rllib_shared_policy_ppo_example_masks_actions(capfd):
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        algo = example("rllib_ppo").build(train_batch=64, minibatch=32, epochs=1, episode="round",
                                          reward="round_points")
        result = algo.train()
        algo.stop()
    finally:
        ray.shutdown()
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 64
    out, err = capfd.readouterr()
    assert "Illegal move" not in out + err  # the mask kept every sampled action legal


def test_sb3_example_trains_and_its_model_enters_evaluate(tmp_path):
    model = tmp_path / "sb3_escoba.zip"
    example("sb3_maskable_ppo").main(["--steps", "64", "--save", str(model)])
    assert model.is_file()
    r = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "--vs", f"sb3:{model}",
                        "--agents", "greedy", "--rounds", "6", "--no-progress", "--no-plot",
                        "--out", "res/out"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"sb3:{model}" in r.stdout


@pytest.mark.parametrize("card_features", [False, True])
def test_cleanrl_ppo_example_on_make_vec(card_features):
    stats = example("cleanrl_ppo").train(num_envs=4, num_steps=16, iterations=2, episode="round",
                                         opponents="greedy" if card_features else "random",
                                         card_features=card_features)
    assert stats["episodes"] >= 4
    assert math.isfinite(stats["policy_loss"]) and math.isfinite(stats["value_loss"])


def test_cleanrl_ppo_example_prints_progress_and_a_periodic_evaluation(capsys):
    """As CleanRL's scripts do: a line per iteration as it runs, and the greedy policy's evaluation every
    --eval-every iterations and at the end (before, it printed nothing until it ended)."""
    example("cleanrl_ppo").main(["--num-envs", "4", "--num-steps", "16", "--total-steps", "192",
                                 "--episode", "round", "--eval-every", "2", "--eval-rounds", "8"])
    lines = capsys.readouterr().out.splitlines()
    iterations = [x for x in lines if x.startswith("iteration ")]
    evals = [x for x in lines if x.startswith("eval global_step=")]
    assert [x.split()[1] for x in iterations] == ["1/3", "2/3", "3/3"]
    assert all("SPS=" in x and "mean_return(last 100)=" in x for x in iterations)
    assert [x.split()[1] for x in evals] == ["global_step=128:", "global_step=192:"]  # every 2nd and the last
    assert all("points per round over 8 rounds" in x for x in evals)


@pytest.mark.slow
def test_torchrl_example_collects_thousands_of_frames_masked_and_takes_a_loss_step(capfd):
    """TorchRL's PettingZooWrapper(escoba_v0.env(), use_mask=True), unchanged, under a masked policy."""
    stats = example("torchrl_ppo").train(frames=2000, iterations=1, episode="round", reward="round_points")
    assert stats["frames"] == 2000 and stats["decisions"] == 2000  # one seat acts per frame
    assert stats["episodes"] >= 20 and stats["illegal_free"] == 1.0 and math.isfinite(stats["loss"])
    out, err = capfd.readouterr()
    assert "Illegal move" not in out + err
