#!/usr/bin/env python3
"""CleanRL-style PPO (one file, masked categorical policy) on the Gymnasium vector env.

    python examples/cleanrl_ppo.py --num-envs 64 --total-steps 200000 --opponents greedy

The env comes from ``gymnasium.make_vec("escoba_env/Escoba-v0", vectorization_mode=
"vector_entry_point")``: N learner games against fixed opponents stepped together on the batched
engine, wrapped in Gymnasium's ``RecordEpisodeStatistics``. It asks for ``autoreset_mode="SameStep"``
so that the classic CleanRL loop works unchanged: the returned observation is already the next
episode's where ``terminations | truncations`` is set (the env's default, ``NextStep``, would add
one ignored step after each episode). Illegal actions are masked out of the logits.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import gymnasium
import numpy as np
import torch
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from torch import nn

import escoba_env  # noqa: F401  (registers escoba_env/Escoba-v0)


class Agent(nn.Module):
    """Actor-critic MLP over the observation vector; the action mask sets illegal logits to -inf."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int = 128):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(),
                                  nn.Linear(hidden, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Return V(obs), shape (B,)."""
        return self.critic(self.body(obs)).squeeze(-1)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
        """Return (action, log-prob, entropy, value) under the masked policy."""
        h = self.body(obs)
        logits = self.actor(h).masked_fill(~mask, -1e9)
        dist = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(h).squeeze(-1)


def train(num_envs: int = 16, num_steps: int = 64, iterations: int = 10, opponents: str = "random",
          seed: int = 0, lr: float = 3e-4, gamma: float = 0.99, lam: float = 0.95, epochs: int = 4,
          minibatches: int = 4, clip: float = 0.2, episode: str = "game",
          callback: Callable[[Agent, int], None] | None = None) -> dict[str, float]:
    """Run PPO; return the mean return and count of the finished episodes and the last losses.

    ``callback(agent, steps)``, if given, is called after every iteration with the learner steps so
    far (``benchmarks/first_agent.py`` evaluates the policy there).
    """
    torch.manual_seed(seed)
    envs = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=num_envs,
                              vectorization_mode="vector_entry_point", opponents=opponents,
                              reward="round_points", episode=episode, autoreset_mode="SameStep")
    envs = RecordEpisodeStatistics(envs)
    obs_size = envs.single_observation_space["observation"].shape[0]
    n_act = envs.single_action_space.n
    agent = Agent(obs_size, n_act)
    opt = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    obs_buf = torch.zeros((num_steps, num_envs, obs_size))
    mask_buf = torch.zeros((num_steps, num_envs, n_act), dtype=torch.bool)
    act_buf = torch.zeros((num_steps, num_envs), dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    next_obs, _ = envs.reset(seed=seed)
    next_done = torch.zeros(num_envs)
    returns: list[float] = []
    stats: dict[str, float] = {}
    for it in range(iterations):
        for t in range(num_steps):
            obs_buf[t] = torch.as_tensor(next_obs["observation"])
            mask_buf[t] = torch.as_tensor(next_obs["action_mask"] > 0)
            done_buf[t] = next_done
            with torch.no_grad():
                action, logp, _, value = agent.act(obs_buf[t], mask_buf[t])
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            next_obs, reward, term, trunc, info = envs.step(action.numpy())
            rew_buf[t] = torch.as_tensor(reward)
            next_done = torch.as_tensor(term | trunc, dtype=torch.float32)
            if "episode" in info:
                returns.extend(info["episode"]["r"][info["_episode"]].tolist())
        with torch.no_grad():  # generalized advantage estimation
            next_value = agent.value(torch.as_tensor(next_obs["observation"]))
            adv = torch.zeros_like(rew_buf)
            last = torch.zeros(num_envs)
            for t in reversed(range(num_steps)):
                nonterminal = 1.0 - (next_done if t == num_steps - 1 else done_buf[t + 1])
                nv = next_value if t == num_steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + gamma * nv * nonterminal - val_buf[t]
                last = delta + gamma * lam * nonterminal * last
                adv[t] = last
            ret = adv + val_buf
        b_obs, b_mask = obs_buf.reshape(-1, obs_size), mask_buf.reshape(-1, n_act)
        b_act, b_logp = act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
        size = num_steps * num_envs
        for _ in range(epochs):
            perm = torch.randperm(size)
            for mb in perm.split(size // minibatches):
                _, logp, ent, value = agent.act(b_obs[mb], b_mask[mb], b_act[mb])
                ratio = (logp - b_logp[mb]).exp()
                a = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
                v_loss = 0.5 * ((value - b_ret[mb]) ** 2).mean()
                loss = pg + 0.5 * v_loss - 0.01 * ent.mean()
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                opt.step()
        stats = {"policy_loss": pg.item(), "value_loss": v_loss.item()}
        if callback is not None:
            callback(agent, (it + 1) * num_steps * num_envs)
    envs.close()
    stats.update(episodes=len(returns), mean_return=float(np.mean(returns)) if returns else float("nan"))
    return stats


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, train, print the summary."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=int, default=64)
    ap.add_argument("--num-steps", type=int, default=64)
    ap.add_argument("--total-steps", type=int, default=200_000)
    ap.add_argument("--opponents", default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episode", choices=("game", "round"), default="game")
    args = ap.parse_args(argv)
    iterations = max(1, args.total_steps // (args.num_envs * args.num_steps))
    print(train(args.num_envs, args.num_steps, iterations, args.opponents, args.seed, episode=args.episode))


if __name__ == "__main__":
    main()
