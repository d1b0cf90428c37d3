"""One PPO update, top to bottom: the networks, GAE over a turn-based rollout, the clipped loss, the epochs.

Read in this order (``docs/training.md`` has the line map):

1. ``new_net`` / ``new_critic`` / ``ValueNet``: what learns.
2. ``compute_gae``: the advantages of the learner's decisions in a rollout of ``T`` steps x ``N`` games.
3. ``RolloutBatch`` / ``make_batch``: the rollout as flat tensors, and which rows are the learner's.
4. ``ppo_loss``: the clipped surrogate, the value loss and the entropy bonus on one minibatch.
5. ``ppo_update``: the epochs over shuffled minibatches, gradient clipping, the statistics.

``Learner`` holds what those functions share (network, critic, optimizer, generator, config); the
``Trainer`` (``trainer.py``) owns one and calls ``ppo_update`` once per rollout.

**Network.** ``agents.nets.neural.PolicyValueNet``: an MLP torso over the 546-float observation, a
value head, and a masked 40-way policy head; with ``head="moves"`` (the default) each action's
logit also gets an action-conditioned term computed from that action's own features
(``agents.nets.features.move_features``: what a card captures, whether it sweeps, what it leaves on
the table and how many unseen cards could sweep that), with weights shared by all actions. On the
shipped configuration this head learnt to beat greedy within about 2M steps, where the plain MLP
head was still 1.5 points per round behind it after 8M.

**Endgame features** (``endgame_features``, 2 players): two more features per action, its exact
minimax value once the stock is empty relative to the best one, and a best-action flag
(``agents.nets.features.endgame_features``, solved by ``agents.heuristic.endgame``). ``init_from`` a network
without them gives their weights 0, so fine-tuning starts from the same policy. The shipped agent
was fine-tuned this way (+0.18 points per round against ``expert``, where the same network without
them ties it); the solver roughly halves the training throughput.

**Variants.** Any ``Rules`` trains, jokers included: the observation, the masks and the policy grow
to ``rules.num_cards`` actions, and ``move_features`` scores joker captures with the joker-aware
capture summaries.

**PPO.** Clipped surrogate, value loss, entropy bonus (entropy of the masked distribution),
normalised advantages, gradient clipping, linear learning-rate annealing (in ``Trainer.run``): as in
CleanRL's ``ppo.py``. Masked logits are -1e9, so an illegal action has probability 0 in sampling, in
the ratio and in the entropy. Each minibatch gathers its rows with ``index_select`` (gathering a
whole shuffled epoch at once was measured slower: the large fresh allocations cost more than they
save).

**Oracle critic** (``critic="oracle"``): ``ValueNet`` reads the observation plus the privileged state
(``league.privileged``); it exists only in training, the policy reads only its observation.

**Kickstarting** (``distill_data``): every minibatch adds ``distill_coef`` times the cross-entropy
between the policy and a teacher's actions on as many labelled decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from escoba_env.executors.observation import obs_size
from escoba_env.rulebook.rules import Rules

from ..nets.neural import PolicyValueNet
from .config import Config
from .league import PRIVILEGED_PLANES


class ValueNet(torch.nn.Module):
    """The ``oracle`` critic: an MLP from (observation, privileged state) to one value."""

    def __init__(self, in_size: int, hidden: Sequence[int]):
        super().__init__()
        layers: list[torch.nn.Module] = []
        width = in_size
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
            width = h
        self.body = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(width, 1)
        for m in [*self.body, self.head]:
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.orthogonal_(m.weight, np.sqrt(2) if m is not self.head else 1.0)
                torch.nn.init.zeros_(m.bias)

    def forward(self, obs: torch.Tensor, priv: torch.Tensor) -> torch.Tensor:
        """Return the values (B,) of observations with their privileged state."""
        return self.head(self.body(torch.cat([obs, priv], dim=-1))).squeeze(-1)


def new_net(cfg: Config, rules: Rules) -> PolicyValueNet:
    """Return a freshly initialised CPU policy network of the configured shape."""
    return PolicyValueNet(cfg.hidden, obs_size(rules), rules.num_cards, head=cfg.head,
                          endgame=cfg.endgame_features, rules=rules)


def new_critic(cfg: Config, rules: Rules) -> ValueNet:
    """Return a freshly initialised CPU oracle critic of the configured shape."""
    return ValueNet(obs_size(rules) + PRIVILEGED_PLANES * rules.num_cards, cfg.critic_hidden)


@dataclass
class Learner:
    """What one PPO update reads and changes: the networks, their optimizer, the generator of the
    minibatch order (and of the kickstarting labels), the config and the kickstarting data."""

    cfg: Config
    net: PolicyValueNet
    critic: ValueNet | None
    opt: torch.optim.Optimizer
    params: list[torch.nn.Parameter]
    gen: torch.Generator
    device: torch.device
    distill: dict[str, Any] | None = None
    distill_weight: float = 0.0


def compute_gae(rewards: np.ndarray, values: np.ndarray, actor: np.ndarray, learner: np.ndarray,
                dones: np.ndarray, boot_values: np.ndarray, gamma: float, lam: float,
                trunc: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> np.ndarray:
    """Return GAE advantages (T, N) for the learner's decisions of a turn-based rollout.

    ``rewards`` (T, N, P): reward of each seat at each env step; ``values`` (T, N): value of the
    acting seat; ``actor`` (T, N): the acting seat; ``learner`` (T, N): True where the learner
    acted; ``dones`` (T, N): the game ended at that step (the next row is a new game);
    ``boot_values`` (N, P): value of each seat's view after the last step; ``trunc[t] = (games,
    values (K, P))``: games truncated at step t and the values of their final observations.
    A decision's reward is what its seat receives until its next decision (``docs/training.md``).
    Entries where ``learner`` is False are meaningless.
    """
    t_len, n, _ = rewards.shape
    rows = np.arange(n)
    nval = boot_values.astype(np.float64).copy()
    nnt = np.ones_like(nval)
    nadv = np.zeros_like(nval)
    acc = np.zeros_like(nval)
    adv = np.zeros((t_len, n), np.float32)
    for t in range(t_len - 1, -1, -1):
        d = dones[t]
        if d.any():
            acc[d] = 0.0
            nadv[d] = 0.0
            nnt[d] = 0.0
            nval[d] = 0.0
            if trunc is not None and t in trunc:
                g, tv = trunc[t]
                nval[g] = tv
                nnt[g] = 1.0
        acc += rewards[t]
        a = actor[t]
        nn_ = nnt[rows, a]
        delta = acc[rows, a] + gamma * nval[rows, a] * nn_ - values[t]
        at = delta + gamma * lam * nn_ * nadv[rows, a]
        at = np.where(learner[t], at, 0.0)
        adv[t] = at
        nval[rows, a] = values[t]
        nadv[rows, a] = at
        nnt[rows, a] = 1.0
        acc[rows, a] = 0.0
    return adv


@dataclass
class RolloutBatch:
    """One rollout as flat tensors over all ``T x N`` (step, game) slots; ``index``: the learner's rows."""

    index: torch.Tensor
    obs: torch.Tensor
    mask: torch.Tensor
    priv: torch.Tensor
    feat: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    values: torch.Tensor

    def rows(self, idx: torch.Tensor, keys: Sequence[str]) -> dict[str, torch.Tensor]:
        """Return the entries ``keys`` at rows ``idx`` (``index_select``: faster than ``x[idx]``)."""
        return {k: getattr(self, k).index_select(0, idx) for k in keys}


def make_batch(buf: dict[str, torch.Tensor], learner: np.ndarray, values: np.ndarray, adv: np.ndarray,
               ret: np.ndarray, device: torch.device) -> RolloutBatch:
    """Return the rollout buffers ``buf`` (``workers.buffers_for``) with ``adv``/``ret`` as a batch."""
    tn = learner.size

    def flat(key: str, *shape: int) -> torch.Tensor:
        return buf[key].view(tn, *shape).to(device, non_blocking=True)

    return RolloutBatch(
        index=torch.from_numpy(np.flatnonzero(learner.ravel())),
        obs=flat("obs", -1),
        mask=flat("mask", -1),
        priv=flat("priv", buf["priv"].shape[-1]),
        feat=flat("feat", buf["feat"].shape[-2], buf["feat"].shape[-1]),
        actions=flat("act"),
        logp=flat("logp"),
        advantages=torch.from_numpy(adv.ravel()).to(device),
        returns=torch.from_numpy(ret.ravel()).to(device),
        values=torch.from_numpy(values.ravel()).to(device),
    )


def loss_keys(lr: Learner) -> list[str]:
    """Return the batch entries ``ppo_loss`` reads with this learner's networks and config."""
    keys = ["obs", "mask", "actions", "logp", "advantages", "returns"]
    keys += ["feat"] if lr.net.uses_features else []
    keys += ["priv"] if lr.critic is not None else []
    return keys + (["values"] if lr.cfg.clip_vloss else [])


def ppo_loss(lr: Learner, mb: dict[str, torch.Tensor], update: int
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Return (PPO loss, its parts) of the current network on the minibatch rows ``mb``; ``update``:
    how many updates came before (the critic warms up alone for ``critic_warmup`` of them)."""
    c = lr.cfg
    obs = mb["obs"]
    logits, v = lr.net(obs, mb["mask"], mb["feat"] if lr.net.uses_features else None)
    if lr.critic is not None:
        v = lr.critic(obs, mb["priv"])
    logp_all = torch.log_softmax(logits, -1)
    newlogp = logp_all.gather(1, mb["actions"][:, None]).squeeze(1)
    # softmax, not logp.exp(): exp of the -1e9 masked entries takes a slow path on CPU
    entropy = -(torch.softmax(logits, -1) * logp_all).sum(-1).mean()
    logratio = newlogp - mb["logp"]
    ratio = logratio.exp()
    a = mb["advantages"]
    if c.norm_adv and len(a) > 1:
        a = (a - a.mean()) / (a.std() + 1e-8)
    pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - c.clip_coef, 1 + c.clip_coef)).mean()
    r = mb["returns"]
    if c.clip_vloss:
        old = mb["values"]
        v_clip = old + (v - old).clamp(-c.clip_coef, c.clip_coef)
        v_loss = 0.5 * torch.max((v - r) ** 2, (v_clip - r) ** 2).mean()
    else:
        v_loss = 0.5 * ((v - r) ** 2).mean()
    loss = pg_loss - c.ent_coef * entropy + c.vf_coef * v_loss
    if update < c.critic_warmup:  # only the value function learns
        loss = c.vf_coef * v_loss
    distill = None
    if lr.distill is not None and lr.distill_weight > 0:
        distill = distill_loss(lr, len(a))
        loss = loss + lr.distill_weight * distill
    with torch.no_grad():
        parts = {"policy_loss": pg_loss.detach(), "value_loss": v_loss.detach(),
                 "entropy": entropy.detach(),
                 "approx_kl": ((ratio - 1) - logratio).mean(),
                 "clipfrac": ((ratio - 1.0).abs() > c.clip_coef).float().mean()}
        if distill is not None:
            parts["distill_loss"] = distill.detach()
    return loss, parts


def distill_loss(lr: Learner, k: int) -> torch.Tensor:
    """Return the cross-entropy of the policy to the teacher's actions on ``k`` random labels."""
    d = lr.distill
    i = torch.randint(len(d["action"]), (k,), generator=lr.gen)
    obs = np.asarray(d["obs"][i.numpy()], np.float32)
    f = lr.net.features(obs)
    logits, _ = lr.net(torch.from_numpy(obs).to(lr.device), d["mask"][i].to(lr.device),
                       None if f is None else torch.from_numpy(f).to(lr.device))
    return torch.nn.functional.cross_entropy(logits, d["action"][i].to(lr.device))


def ppo_update(lr: Learner, b: RolloutBatch, update: int) -> dict[str, float]:
    """Run the PPO epochs on batch ``b``; return the mean loss statistics (and explained variance)."""
    c = lr.cfg
    flat = b.index
    m = len(flat)
    mb = max(1, -(-m // c.num_minibatches))
    keys = loss_keys(lr)
    # the loss parts of every minibatch stay on the device, stacked, and are read once per update
    # (a read per part and minibatch would make the CPU wait for a GPU after every minibatch)
    parts_log: list[torch.Tensor] = []
    names: list[str] = []
    lr.net.train()
    for _ in range(c.update_epochs):
        perm = flat[torch.randperm(m, generator=lr.gen)].to(lr.device)
        for start in range(0, m, mb):
            loss, parts = ppo_loss(lr, b.rows(perm[start:start + mb], keys), update)
            lr.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(lr.params, c.max_grad_norm)
            lr.opt.step()
            names = list(parts)
            parts_log.append(torch.stack([parts[k] for k in names]))
        if c.target_kl is not None and float(parts_log[-1][names.index("approx_kl")]) > c.target_kl:
            break
    lr.net.eval()
    table = torch.stack(parts_log).cpu().numpy()
    out = {k: float(np.mean(table[:, i].tolist())) for i, k in enumerate(names)}
    sel = flat.cpu().numpy()
    y = b.returns.cpu().numpy()[sel]
    resid = y - b.values.cpu().numpy()[sel]
    var_y = float(np.var(y))
    out["explained_variance"] = float("nan") if var_y == 0 else 1.0 - float(np.var(resid)) / var_y
    out["transitions"] = float(m)
    return out
