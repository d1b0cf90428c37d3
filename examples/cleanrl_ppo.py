#!/usr/bin/env python3
"""CleanRL-style PPO (one file, masked categorical policy) on the Gymnasium vector env.

    python examples/cleanrl_ppo.py --num-envs 64 --total-steps 200000 --opponents greedy

The env comes from ``gymnasium.make_vec("escoba_env/Escoba-v0", vectorization_mode=
"vector_entry_point")``: N learner games against fixed opponents stepped together on the batched
engine, wrapped in Gymnasium's ``RecordEpisodeStatistics``. It asks for ``autoreset_mode="SameStep"``
so that the classic CleanRL loop works unchanged: the returned observation is already the next
episode's where ``terminations | truncations`` is set (the env's default, ``NextStep``, would add
one ignored step after each episode). Illegal actions are masked out of the logits.

As CleanRL's own scripts do, it prints one line per iteration (``global_step``, steps per second, the
mean return of the last 100 episodes, the losses) and, every ``--eval-every`` iterations and at the
end, the greedy policy's mean points per round against the opponents over ``--eval-rounds`` one-round
games (``evaluate``); ``--quiet`` prints only the final summary.

``--card-features`` (``train(card_features=True)``) adds what each hand card would do if played
(``card_features``: whether it captures or sweeps, what it would take, the table sum it leaves and how
many unseen cards could sweep that) and scores every card with one small network shared by the 40
cards (``Agent(card_head=True)``), as ``escoba-train``'s move networks score moves. A flat MLP has to
find sums of 15 from the card planes alone; with these inputs the example beats ``greedy`` within
about 300k env steps, about 100 CPU-seconds (``docs/first_agent.md``):

    python examples/cleanrl_ppo.py --card-features --opponents greedy --episode round \
        --gamma 1 --lr 5e-4 --ent-coef 0.001 --hidden 256 --total-steps 400000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import gymnasium
import numpy as np
import torch
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from torch import nn

import escoba_env  # noqa: F401  (registers escoba_env/Escoba-v0)
from agents.moves import enumerate_moves
from escoba_env.rulebook.capture import option_summary
from escoba_env.rulebook.cards import OROS, SEVENS, VELO, mask_values
from escoba_env.rulebook.rules import Rules

CARD_FEATURES = 9
"""Per hand card: captures, sweeps, taken cards / 40, oros / 10, sevens / 4, velo, table sum left / 15,
unseen cards that could sweep what is left / 4, several capture options (``card_features``)."""
_RULES = Rules()
_VALUES = np.arange(40) // 4 + 1
_BITS = np.uint64(1) << np.arange(40, dtype=np.uint64)
# What each card is: value / 10, oro, seven, velo.
_CARD = torch.tensor(np.stack([_VALUES / 10.0, np.arange(40) % 4 == 0, _VALUES == 7,
                               np.arange(40) == VELO], 1), dtype=torch.float32)


def _count(masks: np.ndarray, of: int) -> np.ndarray:
    return np.bitwise_count(masks & np.uint64(of)).astype(np.float32)


def _threat(unseen: np.ndarray, left: np.ndarray) -> np.ndarray:
    """Return the unseen cards / 4 whose value sums to 15 with a table of sum ``left`` (a sweep)."""
    need = 15 - left
    return unseen[np.arange(len(left)), np.clip(need - 1, 0, 9)] * ((need >= 1) & (need <= 10)) / 4.0


def card_features(obs: np.ndarray) -> np.ndarray:
    """Return float32 (N, 40 * CARD_FEATURES + 1): what each legal action would do, then the table's
    sum / 15. Reads the 40-card observation only (``docs/observation.md``).

    Deciding which card to play, the features of a hand card are those of playing it (0 for cards
    not in hand; a capture with several options counts every card any option takes). During a
    capture choice, those of a table card are the best, feature by feature, over the options of the
    pending card that hold it and the cards named so far.
    """
    obs = np.asarray(obs, np.float32)
    n = obs.shape[0]
    table = (obs[:, 200:240] > 0.5).astype(np.uint64) @ _BITS if n else np.zeros(0, np.uint64)
    tables, cards = np.repeat(table, 40), np.tile(_BITS, n)
    count, union, _ = option_summary(tables, np.tile(15 - _VALUES, n))
    captures = count > 0
    sweeps = captures & (mask_values(tables) + np.tile(_VALUES, n) == 15)
    taken = np.where(captures, union | cards, np.uint64(0))
    left = mask_values(np.where(captures, tables & ~union, tables | cards))
    unseen = obs[:, 400:440].reshape(n, 10, 4).sum(2)  # unseen cards per value
    f = np.stack([captures, sweeps, _count(taken, (1 << 40) - 1) / 40, _count(taken, OROS) / 10,
                  _count(taken, SEVENS) / 4, _count(taken, 1 << VELO), left / 15.0,
                  _threat(np.repeat(unseen, 40, axis=0), left), count > 1], 1)
    f = f.reshape(n, 40, CARD_FEATURES) * obs[:, :40, None]
    choice = np.flatnonzero(obs[:, 541] > 0.5)  # capture_phase
    if choice.size:
        f[choice] = 0.0
        moves = enumerate_moves(obs[choice], _RULES)
        rows = choice[moves.row]
        taken = moves.option | _BITS[moves.card]
        left = mask_values(table[rows] & ~moves.option)
        several = np.diff(moves.start)[moves.row] > 1
        g = np.stack([np.ones(len(rows)), left == 0, _count(taken, (1 << 40) - 1) / 40,
                      _count(taken, OROS) / 10, _count(taken, SEVENS) / 4, _count(taken, 1 << VELO),
                      left / 15.0, _threat(unseen[rows], left), several], 1)
        move, card = np.nonzero((moves.option[:, None] & _BITS[None, :]) != 0)
        np.maximum.at(f, (rows[move], card), g[move])
    return np.concatenate([f.reshape(n, -1), (mask_values(table) / 15.0)[:, None]], 1).astype(np.float32)


def network_input(obs: np.ndarray, features: bool) -> torch.Tensor:
    """Return the network's input: the observation vectors, followed by ``card_features`` if asked."""
    obs = np.asarray(obs, np.float32)
    return torch.as_tensor(np.concatenate([obs, card_features(obs)], 1) if features else obs)


class Agent(nn.Module):
    """Actor-critic MLP over the observation vector; the action mask sets illegal logits to -inf.

    With ``card_head`` the input is ``network_input(obs, True)`` (``obs_size`` counts the card
    features; 40 actions) and each card's logit adds a score from one network shared by the 40 cards,
    fed with that card's ``card_features``, what the card is, and 32 numbers of context from the body.
    """

    def __init__(self, obs_size: int, num_actions: int, hidden: int = 128, card_head: bool = False,
                 activation: type[nn.Module] = nn.Tanh):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_size, hidden), activation(),
                                  nn.Linear(hidden, hidden), activation())
        self.flat_actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)
        self.card_head = card_head
        if card_head:
            self.context = nn.Linear(hidden, 32)
            self.card_scorer = nn.Sequential(nn.Linear(CARD_FEATURES + 4 + 32, 64), nn.ReLU(),
                                             nn.Linear(64, 1))

    def card_scores(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Return the card head's score (B, 40) of every card from the body's output ``h`` and input ``x``."""
        n, start = x.shape[0], x.shape[1] - 40 * CARD_FEATURES - 1
        per_card = x[:, start:start + 40 * CARD_FEATURES].reshape(n, 40, CARD_FEATURES)
        context = self.context(h)[:, None, :].expand(n, 40, 32)
        return self.card_scorer(torch.cat([per_card, _CARD.expand(n, 40, 4), context], 2)).squeeze(-1)

    def actor(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Return the logits (B, num_actions) from the body's output ``h`` and the input ``x``."""
        logits = self.flat_actor(h)
        return logits + self.card_scores(h, x) if self.card_head else logits

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Return V(obs), shape (B,)."""
        return self.critic(self.body(obs)).squeeze(-1)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
        """Return (action, log-prob, entropy, value) under the masked policy."""
        h = self.body(obs)
        logits = self.actor(h, obs).masked_fill(~mask, -1e9)
        dist = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(h).squeeze(-1)


def greedy_policy(agent: Agent, card_features: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Return ``policy(observations, masks)``: the agent's most likely legal action per row."""
    def policy(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = network_input(obs, card_features)
            logits = agent.actor(agent.body(x), x)
            return logits.masked_fill(~torch.as_tensor(masks), -1e9).argmax(1).numpy()
    return policy


def evaluate(policy: Callable[[np.ndarray, np.ndarray], np.ndarray], opponent: str, rounds: int = 2048,
             seed: int = 12345) -> tuple[float, float]:
    """Return the mean points per round (the learner's minus the opponent's) of ``policy`` over ``rounds``
    one-round games against ``opponent`` (the learner in every seat in turn), and its standard error.

    ``policy(observations (N, obs), masks bool (N, W))`` returns N actions.
    """
    envs = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=min(64, rounds),
                              vectorization_mode="vector_entry_point", opponents=opponent, episode="round",
                              reward="round_points", autoreset_mode="SameStep", seat=None)
    obs, _ = envs.reset(seed=seed)
    points: list[float] = []
    while len(points) < rounds:
        obs, reward, term, trunc, _ = envs.step(policy(obs["observation"], obs["action_mask"] > 0))
        points.extend(reward[term | trunc].tolist())
    envs.close()
    se = float(np.std(points, ddof=1) / np.sqrt(len(points))) if len(points) > 1 else float("nan")
    return float(np.mean(points)), se


def train(num_envs: int = 16, num_steps: int = 64, iterations: int = 10, opponents: str = "random",
          seed: int = 0, lr: float = 3e-4, gamma: float = 0.99, lam: float = 0.95, epochs: int = 4,
          minibatches: int = 4, clip: float = 0.2, episode: str = "game",
          callback: Callable[[Agent, int], None] | None = None, hidden: int = 128,
          card_features: bool = False, ent_coef: float = 0.01, progress: bool = False,
          eval_every: int = 0, eval_rounds: int = 512) -> dict[str, float]:
    """Run PPO; return the mean return and count of the finished episodes and the last losses.

    ``card_features`` feeds ``card_features`` to the network and scores cards with ``Agent``'s card
    head (ReLU body); without it the body is the plain tanh MLP over the observation.

    ``callback(agent, steps)``, if given, is called after every iteration with the learner steps so
    far (``benchmarks/first_agent.py`` evaluates the policy there). ``progress`` prints, as CleanRL's
    scripts do, one line per iteration (the steps, steps per second, the mean return of the last 100
    episodes); ``eval_every`` (iterations, 0: never) also prints the greedy policy's mean points per
    round against ``opponents`` over ``eval_rounds`` rounds (``evaluate``), and once more at the end.
    """
    torch.manual_seed(seed)
    envs = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=num_envs,
                              vectorization_mode="vector_entry_point", opponents=opponents,
                              reward="round_points", episode=episode, autoreset_mode="SameStep")
    envs = RecordEpisodeStatistics(envs)
    obs_size = envs.single_observation_space["observation"].shape[0]
    n_act = envs.single_action_space.n
    if card_features:
        obs_size += 40 * CARD_FEATURES + 1
    agent = Agent(obs_size, n_act, hidden, card_head=card_features,
                  activation=nn.ReLU if card_features else nn.Tanh)
    opt = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    obs_buf = torch.zeros((num_steps, num_envs, obs_size))
    mask_buf = torch.zeros((num_steps, num_envs, n_act), dtype=torch.bool)
    act_buf = torch.zeros((num_steps, num_envs), dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    next_obs, _ = envs.reset(seed=seed)
    next_done = torch.zeros(num_envs)
    t0 = time.perf_counter()
    returns: list[float] = []
    stats: dict[str, float] = {}
    for it in range(iterations):
        for t in range(num_steps):
            obs_buf[t] = network_input(next_obs["observation"], card_features)
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
            next_value = agent.value(network_input(next_obs["observation"], card_features))
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
                loss = pg + 0.5 * v_loss - ent_coef * ent.mean()
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                opt.step()
        stats = {"policy_loss": pg.item(), "value_loss": v_loss.item()}
        steps = (it + 1) * num_steps * num_envs
        if progress:
            recent = f"{np.mean(returns[-100:]):+.3f}" if returns else "n/a"
            sps = steps / (time.perf_counter() - t0)
            print(f"iteration {it + 1}/{iterations} global_step={steps} SPS={sps:.0f} "
                  f"episodes={len(returns)} mean_return(last 100)={recent} "
                  f"policy_loss={pg.item():.4f} value_loss={v_loss.item():.4f}", flush=True)
        if eval_every and ((it + 1) % eval_every == 0 or it + 1 == iterations):
            policy = greedy_policy(agent, card_features)
            mean, se = evaluate(policy, opponents, eval_rounds, seed=seed + 12345)
            print(f"eval global_step={steps}: greedy policy vs {opponents}: {mean:+.3f} +- {se:.3f} points "
                  f"per round over {eval_rounds} rounds", flush=True)
        if callback is not None:
            callback(agent, steps)
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
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--ent-coef", type=float, default=0.01)
    ap.add_argument("--card-features", action="store_true", help="add card_features and the card head")
    ap.add_argument("--eval-every", type=int, default=10,
                    help="evaluate the greedy policy every N iterations and at the end (0: never)")
    ap.add_argument("--eval-rounds", type=int, default=512, help="rounds of each evaluation")
    ap.add_argument("--quiet", action="store_true", help="print only the final summary")
    args = ap.parse_args(argv)
    iterations = max(1, args.total_steps // (args.num_envs * args.num_steps))
    print(train(args.num_envs, args.num_steps, iterations, args.opponents, args.seed, lr=args.lr,
                gamma=args.gamma, episode=args.episode, hidden=args.hidden, card_features=args.card_features,
                ent_coef=args.ent_coef, progress=not args.quiet,
                eval_every=0 if args.quiet else args.eval_every, eval_rounds=args.eval_rounds))


if __name__ == "__main__":
    main()
