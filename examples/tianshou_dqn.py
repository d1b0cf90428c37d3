#!/usr/bin/env python3
"""Tianshou 2.x: masked DQN on the PettingZoo env ``escoba_v0`` against a project agent.

    python examples/tianshou_dqn.py --epochs 20 --opponent greedy

Tianshou's own multi-agent pattern (as in its tic-tac-toe example): ``PettingZooEnv`` wraps the
default ``escoba_v0.env()`` with no other wrapper (its default infos are fixed-shape and
storable), ``MultiAgentOffPolicyAlgorithm`` gives each seat an algorithm, the learner is a DQN
whose Q-values are masked by the legal actions (``obs.mask``), and the other seat is a fixed agent
of this project (any ``evaluate.py`` spec) that learns nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch
from tianshou.algorithm import DQN, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, TrainingStats
from tianshou.algorithm.algorithm_base import Policy as BasePolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

from agents.spec.registry import make_agent
from escoba_env import escoba_v0


class FixedAgentAlgorithm(OffPolicyAlgorithm):
    """A project agent (``act_batch`` on observations and int8 masks) as a Tianshou algorithm."""

    class Policy(BasePolicy):
        """Plays the wrapped agent's actions; learns nothing."""

        def __init__(self, agent: Any, action_space: Any) -> None:
            super().__init__(action_space=action_space)
            self.agent = agent

        def forward(self, batch: Any, state: Any = None, **kwargs: Any) -> Any:
            """Return the agent's action for every observation of the batch."""
            obs = np.asarray(batch.obs.obs, np.float32)
            mask = np.asarray(batch.obs.mask, np.int8)
            return Batch(act=self.agent.act_batch(obs, mask))

    def __init__(self, agent: Any, action_space: Any) -> None:
        super().__init__(policy=self.Policy(agent, action_space))

    def _update_with_batch(self, batch: Any) -> TrainingStats:  # the fixed agent learns nothing
        return TrainingStats()


def get_env(**config: Any) -> PettingZooEnv:
    """Return the PettingZoo env in Tianshou's wrapper."""
    return PettingZooEnv(escoba_v0.env(**config))


def train(epochs: int = 5, epoch_steps: int = 1000, num_envs: int = 4, opponent: str = "greedy",
          seed: int = 0, **config: Any) -> tuple[Any, DQN]:
    """Train the DQN seat (player_0) against ``opponent``; return Tianshou's stats and the DQN."""
    np.random.seed(seed)  # noqa: NPY002  (Tianshou's epsilon-greedy draws from the global generator)
    torch.manual_seed(seed)
    env = get_env(**config)
    obs_shape = env.observation_space["observation"].shape
    net = Net(state_shape=obs_shape, action_shape=env.action_space.n, hidden_sizes=[256, 256])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1,
                                     eps_inference=0.0)
    learner = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-4), gamma=0.99, n_step_return_horizon=1,
                  target_update_freq=200)
    fixed = FixedAgentAlgorithm(make_agent(opponent, seed=seed), env.action_space)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, fixed], env=env)
    train_envs = DummyVectorEnv([lambda: get_env(**config) for _ in range(num_envs)])
    test_envs = DummyVectorEnv([lambda: get_env(**config) for _ in range(num_envs)])
    train_envs.seed(seed)
    test_envs.seed(seed + 1)
    train_collector = Collector[CollectStats](algorithm, train_envs, VectorReplayBuffer(20_000, num_envs),
                                              exploration_noise=True)
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=64 * num_envs)
    result = algorithm.run_training(OffPolicyTrainerParams(
        training_collector=train_collector, test_collector=test_collector, max_epochs=epochs,
        epoch_num_steps=epoch_steps, collection_step_num_env_steps=10 * num_envs,
        test_step_num_episodes=num_envs, batch_size=64, update_step_num_gradient_steps_per_sample=0.1,
        test_in_training=False, multi_agent_return_reduction=lambda rews: rews[:, 0]))
    return result, learner


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and train."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--epoch-steps", type=int, default=2000)
    ap.add_argument("--opponent", default="greedy", help="agent spec of the fixed opponent")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    result, _ = train(args.epochs, args.epoch_steps, opponent=args.opponent, seed=args.seed,
                      episode="round", reward="round_points")
    print(f"best test return of player_0: {result.best_reward:.3f}")


if __name__ == "__main__":
    main()
