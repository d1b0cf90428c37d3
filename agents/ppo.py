"""PPO self-play for Escoba on the batched vector env, in the single-file spirit of CleanRL.

One ``Trainer`` holds everything: an ``EscobaVectorEnv`` of ``num_envs`` games, the
``PolicyValueNet`` being trained (the *learner*), its Adam optimizer, the league of opponents, the
loggers and the checkpoints. ``train(Config(...))`` runs it; ``train.py`` is its command line.

**Self-play and the league.** Each game slot gets an opponent when its episode starts, drawn with
the weights ``opp_self``, ``opp_snapshot``, ``opp_greedy``, ``opp_expert``:

- ``self``: the learner plays every seat of the game (pure self-play);
- ``snapshot``: the learner plays one side (drawn at random), a frozen past copy of the learner
  (one of the last ``max_snapshots``, taken every ``snapshot_interval`` steps) plays the others,
  sampling from its policy; while no snapshot exists yet this weight goes to ``self``;
- ``greedy`` / ``expert``: the learner plays one side, the heuristic agent the others.

Only the decisions of seats the learner controls become training transitions.

**Transitions and returns.** A seat's trajectory is the sequence of its own decisions in one game
(two decisions in a row when it names table cards). The reward of a decision is everything paid to
that seat (``rewards[:, seat]``, times ``reward_scale``) from that decision up to its next one; the
episode ends at termination, or is bootstrapped from the final observation on truncation. GAE(λ)
runs backward over the rollout with per-(game, seat) carries, vectorised over games, so no Python
loop ever runs over games. At the end of a rollout each learner seat bootstraps from the value of
its own view of the current state.

**Network.** ``agents.neural.PolicyValueNet``: an MLP torso over the 546-float observation, a
value head, and a masked 40-way policy head; with ``head="moves"`` (the default) each action's
logit also gets an action-conditioned term computed from that action's own features
(``agents.neural.move_features``: what a card captures, whether it sweeps, what it leaves on
the table and how many unseen cards could sweep that), with weights shared by all actions. On the
shipped configuration this head learnt to beat greedy within about 2M steps, where the plain MLP
head was still 1.5 points per round behind it after 8M.

**Endgame features** (``endgame_features``, 2 players): two more features per action, its exact
minimax value once the stock is empty relative to the best one, and a best-action flag
(``agents.neural.endgame_features``, solved by ``agents.endgame``). ``init_from`` a network
without them gives their weights 0, so fine-tuning starts from the same policy. The shipped agent
was fine-tuned this way (+0.18 points per round against ``expert``, where the same network without
them ties it); the solver roughly halves the training throughput.

**Shaping.** ``shaping > 0`` adds the change of a potential (each seat's side pile value and
escobas minus the others', ``SHAPING_WEIGHTS``) to the rewards, so a capture is credited when it
is made rather than at the end of the round; with ``gamma = 1`` it telescopes to zero over each
episode, so the objective is unchanged.

**PPO.** Clipped surrogate, value loss, entropy bonus (entropy of the masked distribution),
normalised advantages, gradient clipping, linear learning-rate annealing: as in CleanRL's
``ppo.py``. Masked logits are -1e9, so an illegal action has probability 0 in sampling, in the
ratio and in the entropy.

**Kickstarting** (optional; Schmitt et al. 2018). ``distill_data`` names a file of decisions
labelled by a stronger, slower teacher (``python -m agents.distill``, usually the ``search`` agent);
every minibatch then adds ``distill_coef`` times the cross-entropy between the policy and the
teacher's actions on as many labelled decisions (``losses/distill_loss``), optionally annealed to 0.
``init_from`` starts the network from a checkpoint's weights (a fresh optimizer and league). Measured
on the plain shipped network (``escoba_2p_plain.pt``): pure imitation of ``search`` labels (150k
decisions, ``scripts/imitate.py``) cost it 0.19 to 0.24 points per round against ``expert`` (see
the model card).

**Oracle critic** (``critic="oracle"``, an asymmetric actor-critic): the value function is a separate
MLP that also reads privileged state (``privileged``: the other seats' hands and the stock order), so
the advantages no longer carry the noise of the hidden cards. It exists only in training: the
policy reads only its observation, and ``export_agent`` drops the critic.

**Variants.** Any ``Rules`` trains, jokers included: the observation, the masks and the policy grow
to ``rules.num_cards`` actions, and ``move_features`` scores joker captures with the joker-aware
capture summaries.

**Logging** (under ``runs_dir/run_name``): TensorBoard scalars ``charts/*`` (throughput, returns
against each opponent kind, learning rate), ``losses/*`` and ``eval/*`` (duplicate evaluation
against ``eval_opponents``: points per round difference with 95% CI, see
``agents.evaluation.play_duplicate``), the same rows in ``metrics.csv`` (``step, wall_s, tag,
value``), ``config.json``, and a tqdm progress bar.

**Checkpoints** (``checkpoints/latest.pt``, every ``save_interval`` steps and at the end) are the
``agents.neural`` checkpoint dict plus the training state: optimizer, step and update counts, the
RNG states (the trainer's NumPy and torch generators, and the global torch, NumPy and Python ones),
the league (snapshot weights, each slot's opponent), and the engine state of every game, so that
``Config(resume=PATH)`` continues exactly where the run stopped.
"""

from __future__ import annotations

import argparse
import ast
import copy
import csv
import dataclasses
import inspect
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from escoba_env.engine import unpack_mask
from escoba_env.observation import action_masks, encode, obs_size
from escoba_env.rules import Rules
from escoba_env.vector_env import EscobaVectorEnv

from .base import Agent
from .evaluation import play_duplicate
from .expert import ExpertAgent
from .greedy import GreedyAgent
from .neural import (
    NeuralAgent,
    PolicyValueNet,
    build_net,
    check_compatible,
    checkpoint_dict,
    load_checkpoint,
    sample_masked,
    save_checkpoint,
)

OPPONENTS = ("self", "snapshot", "greedy", "expert")
"""League opponent kinds, in the order of their codes (see ``Trainer``)."""
HEURISTICS: dict[str, type[Agent]] = {"greedy": GreedyAgent, "expert": ExpertAgent}
"""Heuristic agents usable as league opponents and evaluation baselines."""
_LEARNER, _GREEDY, _EXPERT, _SNAP0 = 0, 1, 2, 3  # controller codes; snapshot i is _SNAP0 + i
SHAPING_WEIGHTS = {"card": 0.05, "oro": 0.1, "seven": 0.3, "velo": 0.6, "escoba": 1.0}
"""Points-per-item estimates of the shaping potential (a velo counts as card, oro, seven and velo)."""
_OROS = np.uint64(sum(1 << c for c in range(0, 40, 4)))
_SEVENS = np.uint64(0xF << 24)
_VELO = np.uint64(1 << 24)


def potential(engine) -> np.ndarray:
    """Return the shaping potential (N, P) of every seat: its side's pile value minus the others' mean.

    A side's value is ``SHAPING_WEIGHTS`` applied to its capture pile this round plus its escobas.
    """
    piles, esc = engine.piles, engine.escobas.astype(np.float64)
    if engine.rules.partnerships:
        piles = np.stack([piles[:, 0] | piles[:, 2], piles[:, 1] | piles[:, 3]], axis=1)
        esc = esc[:, [0, 1]] + esc[:, [2, 3]]
    w = SHAPING_WEIGHTS

    def count(m: np.ndarray) -> np.ndarray:
        return np.bitwise_count(m).astype(np.float64)

    val = (w["card"] * count(piles) + w["oro"] * count(piles & _OROS) + w["seven"] * count(piles & _SEVENS)
           + w["velo"] * count(piles & _VELO) + w["escoba"] * esc)
    s = val.shape[1]
    rel = val - (val.sum(axis=1, keepdims=True) - val) / (s - 1)
    return rel[:, engine.side_of_seat]


PRIVILEGED_PLANES = 4
"""Planes of the oracle critic's privileged input: the hands of the next three seats (relative to
the observer; zeros for absent seats), and the stock order (1 for the top card, decreasing)."""


def privileged(engine, seats: np.ndarray, games: np.ndarray | None = None) -> np.ndarray:
    """Return float32 (K, 4 * W) hidden state for ``seats`` in ``games``: other hands and stock order.

    Only the ``oracle`` critic reads this, during training; no agent ever sees it.
    """
    games = np.arange(engine.num_games) if games is None else np.asarray(games, np.int64)
    seats = np.asarray(seats, np.int64)
    w, p = engine.rules.num_cards, engine.num_players
    k = len(games)
    out = np.zeros((k, PRIVILEGED_PLANES, w), np.float32)
    for j in range(1, p):
        out[:, j - 1] = unpack_mask(engine.hands[games, (seats + j) % p], w)
    deck = engine.deck[games].astype(np.int64)  # (K, W), top first
    pos = np.arange(w)[None, :]
    left = pos - engine.stock_pos[games][:, None]  # 0 for the top of the stock
    order = np.where(left >= 0, 1.0 - left / w, 0.0).astype(np.float32)
    np.put_along_axis(out[:, 3], deck, order, axis=1)
    return out.reshape(k, -1)


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


@dataclass
class Config:
    """Every setting of a training run (the CLI of ``train.py`` is generated from these fields)."""

    # --- run
    run_name: str = "escoba_ppo"
    """Folder of this run under ``runs_dir`` (logs, metrics.csv, checkpoints)."""
    runs_dir: str = "runs"
    """Parent folder of all runs."""
    seed: int = 1
    """Seed of everything random: deals, league draws, action sampling, minibatches, initial weights."""
    total_steps: int = 45_000_000
    """Env steps to train for (decisions of every seat in every game, opponents' included)."""
    device: str = "cpu"
    """Torch device for the network: ``cpu`` or ``cuda`` (``cuda:1``...)."""
    threads: int = 1
    """Torch CPU threads (0: all cores). 1 is fastest on a shared machine: extra threads spin-wait."""
    resume: str | None = None
    """Checkpoint to continue from; its config is used, with the fields given here overriding it."""
    # --- environment
    num_envs: int = 2048
    """Games stepped together in the vector env."""
    episode: str = "round"
    """``round``: an episode is one round (what duplicate evaluation scores); ``game``: to target_score."""
    reward: str = "round_points"
    """Env reward: ``round_points`` (round point difference at each round end) or ``game`` (+1/-1)."""
    max_rounds: int | None = None
    """Truncate games after this many rounds (``episode="game"`` only); None for no limit."""
    rules: dict[str, Any] = field(default_factory=dict)
    """Rules options passed to the env (any field of ``escoba_env.Rules``; the CLI has one flag each)."""
    # --- network
    hidden: tuple[int, ...] = (128, 128)
    """Widths of the MLP's hidden layers (128x128 plays as well as 256x256 here and trains 2x faster)."""
    head: str = "moves"
    """Policy head: ``mlp`` (linear logits), ``moves`` (plus an action-conditioned term scoring each
    legal action from its own features, see ``agents.neural.move_features``) or ``moves_mlp`` (that term
    as a small MLP of the features and the state, so they can combine non-linearly)."""
    endgame_features: bool = False
    """Add the exact 2-player endgame values to each action's features (``agents.neural.endgame_features``:
    once the stock is empty every hidden card is known and ``agents.endgame`` solves the rest of the
    round by minimax). Needs a ``moves``/``moves_mlp`` head and 2 players without partnerships; costs
    about half the training throughput."""
    critic: str = "shared"
    """Value function: ``shared`` (the policy network's value head, over the observation) or ``oracle``
    (a separate MLP over the observation plus privileged state: the other hands and the stock order;
    an asymmetric actor-critic, used in training only; the policy still sees only its observation)."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Hidden widths of the ``oracle`` critic."""
    critic_warmup: int = 0
    """PPO updates at the start of a run in which only the value loss is optimised, e.g. to fit a fresh
    ``oracle`` critic to a policy loaded with ``init_from`` (the policy is then frozen; with the
    ``shared`` critic the torso is shared, so the policy moves too)."""
    init_from: str | None = None
    """Start the network from this checkpoint's weights (an exported agent or a training checkpoint with
    the same network shape and rules); the optimizer, league and step counters start fresh."""
    distill_data: str | None = None
    """Teacher-labelled decisions (a .npz written by ``python -m agents.distill``) to kickstart from: every
    PPO minibatch adds ``distill_coef`` x the cross-entropy between the policy and the teacher's action
    on as many labelled decisions (Schmitt et al. 2018, "Kickstarting Deep Reinforcement Learning")."""
    distill_coef: float = 1.0
    """Weight of the kickstarting cross-entropy (only with ``distill_data``)."""
    distill_anneal: bool = False
    """Decay ``distill_coef`` linearly to 0 over ``total_steps`` (the learner ends up on its own)."""
    # --- PPO
    num_steps: int = 32
    """Env steps per game slot in each rollout (a batch is num_envs * num_steps env steps)."""
    learning_rate: float = 1e-3
    """Adam learning rate (start value when annealed)."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over total_steps."""
    gamma: float = 1.0
    """Discount per decision of a seat."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    num_minibatches: int = 32
    """Minibatches per epoch (the learner's transitions of a rollout, shuffled, split this many ways)."""
    update_epochs: int = 2
    """Passes over each rollout."""
    norm_adv: bool = True
    """Normalise advantages per minibatch."""
    clip_coef: float = 0.2
    """PPO surrogate clipping coefficient."""
    clip_vloss: bool = False
    """Clip the value loss like the policy ratio."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    target_kl: float | None = None
    """Stop an update's epochs early when the approximate KL exceeds this (None: never)."""
    reward_scale: float = 0.25
    """Factor applied to env rewards (round points are a few units; this keeps value targets near 1)."""
    shaping: float = 1.0
    """Scale of the potential-based reward shaping (0: none): each seat's potential is the weighted
    value of its side's capture pile and escobas minus the other sides' (``SHAPING_WEIGHTS``); the
    change of potential is added to the reward, so captures are credited when made. With gamma=1 the
    shaping sums to zero over an episode and does not change the optimal policy."""
    # --- league
    opp_self: float = 0.35
    """Sampling weight of pure self-play games (the learner plays every seat)."""
    opp_snapshot: float = 0.15
    """Sampling weight of games against a past snapshot of the learner."""
    opp_greedy: float = 0.1
    """Sampling weight of games against the greedy heuristic."""
    opp_expert: float = 0.4
    """Sampling weight of games against the expert heuristic."""
    snapshot_interval: int = 2_500_000
    """Env steps between two snapshots added to the league."""
    max_snapshots: int = 8
    """Snapshots kept in the league (the oldest is replaced)."""
    # --- logging, evaluation, checkpoints
    eval_interval: int = 2_500_000
    """Env steps between duplicate evaluations (also at the start and the end; 0 disables them)."""
    eval_deals: int = 500
    """Deals per evaluation and opponent (each played once per seat rotation)."""
    eval_opponents: tuple[str, ...] = ("greedy", "expert")
    """Baselines to evaluate against (``greedy``, ``expert``)."""
    eval_seed: int = 20240
    """Seed of the evaluation deals (the same deals at every evaluation, so the curve is paired)."""
    eval_deterministic: bool = True
    """Evaluate the argmax policy (else sample from it)."""
    save_interval: int = 2_500_000
    """Env steps between checkpoints (also one at the end)."""
    tensorboard: bool = True
    """Write TensorBoard event files (the CSV is always written)."""
    progress: bool = True
    """Show a tqdm progress bar."""


def make_rules(cfg: Config) -> Rules:
    """Return the Rules of ``cfg`` (ValueError for unknown or invalid options)."""
    return Rules.from_dict(dict(cfg.rules))


def config_from_dict(d: dict[str, Any]) -> Config:
    """Return the Config of a dict written by ``asdict`` (lists back to tuples); unknown keys fail."""
    names = {f.name: f for f in dataclasses.fields(Config)}
    unknown = sorted(set(d) - set(names))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown}")
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
    return Config(**kw)


def resume_config(stored: Config, given: Config, overrides: Sequence[str] | None = None) -> Config:
    """Return the config of a resumed run: ``stored`` with the fields named in ``overrides`` taken from
    ``given`` (default: the fields of ``given`` that differ from the Config defaults)."""
    defaults = Config()
    if overrides is None:
        overrides = [f.name for f in dataclasses.fields(Config)
                     if getattr(given, f.name) != getattr(defaults, f.name)]
    cfg = dataclasses.replace(stored, **{k: getattr(given, k) for k in overrides if k != "resume"})
    cfg.resume = None
    return cfg


def check_config(cfg: Config) -> None:
    """Raise ValueError for an inconsistent config; return None."""
    if cfg.num_envs < 1 or cfg.num_steps < 1 or cfg.total_steps < 0:
        raise ValueError("num_envs and num_steps must be >= 1 and total_steps >= 0")
    w = [cfg.opp_self, cfg.opp_snapshot, cfg.opp_greedy, cfg.opp_expert]
    if min(w) < 0 or sum(w) <= 0:
        raise ValueError(f"opponent weights must be >= 0 and not all 0, got {w}")
    bad = [o for o in cfg.eval_opponents if o not in HEURISTICS]
    if bad:
        raise ValueError(f"unknown eval opponent(s) {bad}; known: {sorted(HEURISTICS)}")
    if cfg.num_minibatches < 1 or cfg.update_epochs < 1:
        raise ValueError("num_minibatches and update_epochs must be >= 1")
    if cfg.critic not in ("shared", "oracle"):
        raise ValueError(f"critic must be 'shared' or 'oracle', got {cfg.critic!r}")
    if cfg.critic_warmup < 0:
        raise ValueError(f"critic_warmup must be >= 0, got {cfg.critic_warmup}")
    if cfg.distill_coef < 0:
        raise ValueError(f"distill_coef must be >= 0, got {cfg.distill_coef}")
    rules = make_rules(cfg)
    if cfg.endgame_features:
        if cfg.head == "mlp":
            raise ValueError("endgame_features need an action-conditioned head (--head moves or moves_mlp)")
        if rules.num_players != 2 or rules.partnerships:
            raise ValueError("endgame_features solve the 2-player endgame only (num_players=2, no "
                             "partnerships)")


# ----------------------------------------------------------------------------------------- GAE


def compute_gae(rewards: np.ndarray, values: np.ndarray, actor: np.ndarray, learner: np.ndarray,
                dones: np.ndarray, boot_values: np.ndarray, gamma: float, lam: float,
                trunc: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> np.ndarray:
    """Return GAE advantages (T, N) for the learner's decisions of a turn-based rollout.

    ``rewards`` (T, N, P): reward of each seat at each env step; ``values`` (T, N): value of the
    acting seat; ``actor`` (T, N): the acting seat; ``learner`` (T, N): True where the learner
    acted; ``dones`` (T, N): the game ended at that step (the next row is a new game);
    ``boot_values`` (N, P): value of each seat's view after the last step; ``trunc[t] = (games,
    values (K, P))``: games truncated at step t and the values of their final observations.
    A decision's reward is what its seat receives until its next decision (see module doc).
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


# -------------------------------------------------------------------------------------- logging


class MetricsLogger:
    """Writes each scalar to TensorBoard (optional) and to ``metrics.csv`` (step, wall_s, tag, value)."""

    def __init__(self, run_dir: str, tensorboard: bool = True, purge_step: int | None = None):
        os.makedirs(run_dir, exist_ok=True)
        self.csv_path = os.path.join(run_dir, "metrics.csv")
        new = not os.path.exists(self.csv_path)
        self._csv_file = open(self.csv_path, "a", newline="")  # noqa: SIM115 - closed in close()
        self._csv = csv.writer(self._csv_file)
        if new:
            self._csv.writerow(["step", "wall_s", "tag", "value"])
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(run_dir, purge_step=purge_step)

    def scalar(self, tag: str, value: float, step: int, wall_s: float) -> None:
        """Record one scalar at env step ``step`` and training wall time ``wall_s``; return None."""
        value = float(value)
        self._csv.writerow([int(step), f"{wall_s:.3f}", tag, repr(value)])
        if self.writer is not None:
            self.writer.add_scalar(tag, value, int(step))

    def flush(self) -> None:
        """Flush both outputs to disk; return None."""
        self._csv_file.flush()
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        """Flush and close both outputs; return None."""
        self.flush()
        self._csv_file.close()
        if self.writer is not None:
            self.writer.close()


# -------------------------------------------------------------------------------------- trainer


def _engine_state(engine) -> dict[str, Any]:
    """Return the engine's state arrays as tensors (for an exact resume)."""
    state: dict[str, Any] = {"seed": int(engine.seed)}
    for k, v in vars(engine).items():
        if isinstance(v, np.ndarray) and not k.startswith("_"):
            state[k] = torch.from_numpy(v.copy())
    return state


def _load_engine_state(engine, state: dict[str, Any]) -> None:
    """Overwrite the engine's state arrays with ``state`` (from ``_engine_state``); return None."""
    for k, v in state.items():
        if k == "seed":
            engine.seed = int(v)
            continue
        cur = getattr(engine, k)
        arr = v.numpy()
        if arr.shape != cur.shape:
            raise ValueError(f"engine state {k!r} has shape {arr.shape}, expected {cur.shape} "
                             f"(resume needs the same num_envs and rules)")
        cur[...] = arr


def _rng_state(np_rng: np.random.Generator, gen: torch.Generator) -> dict[str, Any]:
    """Return every RNG state the run depends on (trainer generators and the global ones)."""
    py = random.getstate()
    np_global = np.random.get_state()  # noqa: NPY002 - saved so that code using it resumes exactly too
    return {
        "numpy_generator": np_rng.bit_generator.state,
        "torch_generator": gen.get_state(),
        "torch_global": torch.get_rng_state(),
        "numpy_global": torch.from_numpy(np_global[1].astype(np.int64)),
        "numpy_global_pos": int(np_global[2]),
        "python": [py[0], list(py[1]), py[2]],
    }


def _set_rng_state(np_rng: np.random.Generator, gen: torch.Generator, s: dict[str, Any]) -> None:
    """Restore the states saved by ``_rng_state``; return None."""
    np_rng.bit_generator.state = s["numpy_generator"]
    gen.set_state(s["torch_generator"].cpu())
    torch.set_rng_state(s["torch_global"].cpu())
    np.random.set_state(  # noqa: NPY002
        ("MT19937", s["numpy_global"].numpy().astype(np.uint32), s["numpy_global_pos"]))
    random.setstate((s["python"][0], tuple(s["python"][1]), s["python"][2]))


class Trainer:
    """PPO self-play with a league (see the module docstring). ``run()`` trains; ``evaluate()`` measures."""

    def __init__(self, cfg: Config, overrides: Sequence[str] | None = None):
        ckpt = None
        if cfg.resume is not None:
            src = cfg.resume
            ckpt = load_checkpoint(src, map_location="cpu")
            if "optimizer" not in ckpt or "engine" not in ckpt:
                raise ValueError(f"checkpoint {src!r} holds no training state (an exported agent?); "
                                 f"resume needs a checkpoint written by the trainer")
            cfg = resume_config(config_from_dict(dict(ckpt["config"])), cfg, overrides)
        check_config(cfg)
        self.cfg = cfg
        self.rules = make_rules(cfg)
        if ckpt is not None:
            check_compatible(ckpt, self.rules, src)
        threads = cfg.threads if cfg.threads > 0 else (os.cpu_count() or 1)
        torch.set_num_threads(threads)
        self.device = torch.device(cfg.device)
        self.run_dir = os.path.join(cfg.runs_dir, cfg.run_name)
        self.ckpt_path = os.path.join(self.run_dir, "checkpoints", "latest.pt")

        self.np_rng = np.random.default_rng(cfg.seed)
        self.gen = torch.Generator(device="cpu")
        self.gen.manual_seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.net = self._new_net()
        if cfg.init_from is not None and ckpt is None:
            self._init_from(cfg.init_from)
        self.distill: dict[str, Any] | None = None
        if cfg.distill_data is not None:
            from .distill import load_labels
            arrays, _ = load_labels(cfg.distill_data, self.rules)
            self.distill = {"obs": arrays["obs"], "mask": torch.from_numpy(arrays["mask"].astype(np.int8)),
                            "action": torch.from_numpy(arrays["action"].astype(np.int64))}
        self.distill_weight = cfg.distill_coef
        self.critic: ValueNet | None = None
        if cfg.critic == "oracle":
            width = obs_size(self.rules) + PRIVILEGED_PLANES * self.rules.num_cards
            self.critic = ValueNet(width, cfg.critic_hidden).to(self.device)
        self.params = list(self.net.parameters())
        if self.critic is not None:
            self.params += list(self.critic.parameters())
        self.opt = torch.optim.Adam(self.params, lr=cfg.learning_rate, eps=1e-5)

        n, p = cfg.num_envs, self.rules.num_players
        self.n, self.p = n, p
        self.env = EscobaVectorEnv(n, rules=self.rules, episode=cfg.episode, reward=cfg.reward,
                                   max_rounds=cfg.max_rounds)
        self.heuristics = {_GREEDY: GreedyAgent(self.rules), _EXPERT: ExpertAgent(self.rules)}
        self.pool: list[PolicyValueNet | None] = [None] * cfg.max_snapshots
        self.pool_next = 0
        self.controller = np.zeros((n, p), np.int64)  # per slot and seat: code of who plays it
        self.kind = np.zeros(n, np.int64)  # index in OPPONENTS of each slot's current opponent
        self.learner_seat = np.zeros(n, np.int64)  # a seat the learner plays (for return stats)
        self.ep_ret = np.zeros(n, np.float64)
        self.ep_len = np.zeros(n, np.int64)
        self.global_step = 0
        self.update = 0
        self.wall_s = 0.0  # training wall time accumulated over resumes
        self.evals: list[dict[str, Any]] = []
        self.next_eval = 0 if cfg.eval_interval > 0 else None
        self.next_save = cfg.save_interval
        self.next_snapshot = cfg.snapshot_interval

        if ckpt is None:
            self.env.reset(seed=cfg.seed)
            self._assign(np.arange(n))
        else:
            self._restore(ckpt)
        self._obs = encode(self.env.engine, self.env.engine.to_act)
        self._mask = action_masks(self.env.engine, self.env.engine.to_act)
        t, dev = cfg.num_steps, self.device
        self.obs_size, self.num_actions = obs_size(self.rules), self.rules.num_cards
        self.buf_obs = torch.zeros((t, n, self.obs_size), dtype=torch.float32, device=dev)
        self.buf_mask = torch.zeros((t, n, self.num_actions), dtype=torch.int8, device=dev)
        npriv = PRIVILEGED_PLANES * self.num_actions if self.critic is not None else 0
        self.buf_priv = torch.zeros((t, n, npriv), dtype=torch.float32, device=dev)
        self.buf_act = torch.zeros((t, n), dtype=torch.int64, device=dev)
        self.buf_logp = torch.zeros((t, n), dtype=torch.float32, device=dev)
        nf = len(self.net.feature_names) if self.net.uses_features else 0
        self.buf_feat = torch.zeros((t, n, self.num_actions, nf), dtype=torch.float32, device=dev)
        self.values = np.zeros((t, n), np.float32)
        self.actor = np.zeros((t, n), np.int64)
        self.learner = np.zeros((t, n), bool)
        self.rewards = np.zeros((t, n, p), np.float32)
        self.dones = np.zeros((t, n), bool)
        self.logger: MetricsLogger | None = None
        self._finished: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def _init_from(self, path: str) -> None:
        """Load the weights of checkpoint ``path`` into the fresh network (shapes and rules checked)."""
        ckpt = load_checkpoint(path, map_location="cpu")
        check_compatible(ckpt, self.rules, path)
        src = build_net(ckpt, path)
        mine, theirs = self.net.net_config(), src.net_config()
        # A network without endgame features can start one with them: the new features' weights are 0.
        grow = self.net.endgame and not src.endgame
        if grow:
            theirs = {**theirs, "endgame": True, "move_features": mine["move_features"]}
        if theirs != mine:
            raise ValueError(f"init_from checkpoint {path!r} has network {src.net_config()}, but this run "
                             f"builds {mine} (set --hidden/--head/--endgame-features to match)")
        state = src.state_dict()
        if grow:
            for key, target in self.net.state_dict().items():
                if state[key].shape != target.shape:  # the feature axis (last) grew
                    padded = torch.zeros_like(target)
                    padded[..., : state[key].shape[-1]] = state[key]
                    state[key] = padded
        self.net.load_state_dict(state)

    def _new_net(self) -> PolicyValueNet:
        """Return a freshly initialised network of the configured shape, on the device."""
        return PolicyValueNet(self.cfg.hidden, obs_size(self.rules), self.rules.num_cards,
                              head=self.cfg.head, endgame=self.cfg.endgame_features,
                              rules=self.rules).to(self.device)

    # ------------------------------------------------------------------------------- league

    def _weights(self) -> np.ndarray:
        """Return the opponent-kind probabilities (snapshot weight moves to self while none exists)."""
        c = self.cfg
        w = np.array([c.opp_self, c.opp_snapshot, c.opp_greedy, c.opp_expert], np.float64)
        if not any(m is not None for m in self.pool):
            w[0] += w[1]
            w[1] = 0.0
        return w / w.sum()

    def _assign(self, idx: np.ndarray) -> None:
        """Draw an opponent and a learner side for the games starting in slots ``idx``; return None."""
        k = len(idx)
        if k == 0:
            return
        kinds = self.np_rng.choice(len(OPPONENTS), size=k, p=self._weights())
        side = self.np_rng.integers(0, self.rules.num_sides, size=k)
        filled = np.flatnonzero([m is not None for m in self.pool])
        snap = (filled[self.np_rng.integers(0, len(filled), size=k)] if len(filled)
                else np.zeros(k, np.int64))
        code = np.select([kinds == 2, kinds == 3, kinds == 1], [_GREEDY, _EXPERT, _SNAP0 + snap], _LEARNER)
        seat_side = np.array([self.rules.side_of(s) for s in range(self.p)])
        mine = (seat_side[None, :] == side[:, None]) | (kinds == 0)[:, None]
        self.controller[idx] = np.where(mine, _LEARNER, code[:, None])
        self.kind[idx] = kinds
        self.learner_seat[idx] = side  # seat ``side`` is always on side ``side``
        self.ep_ret[idx] = 0.0
        self.ep_len[idx] = 0

    def _add_snapshot(self) -> None:
        """Copy the learner into the league (replacing the oldest snapshot when full); return None."""
        if self.cfg.max_snapshots < 1:
            return
        snap = copy.deepcopy(self.net).eval()
        for q in snap.parameters():
            q.requires_grad_(False)
        self.pool[self.pool_next] = snap
        self.pool_next = (self.pool_next + 1) % self.cfg.max_snapshots

    # ------------------------------------------------------------------------------- rollout

    @torch.no_grad()
    def _policy_step(self, net: PolicyValueNet, obs: np.ndarray, mask: np.ndarray
                     ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return (obs, features, actions, log-probs, values) sampled from ``net`` for a batch."""
        o = torch.from_numpy(obs).to(self.device, non_blocking=True)
        m = torch.from_numpy(mask).to(self.device, non_blocking=True)
        f = net.features(obs)
        f = None if f is None else torch.from_numpy(f).to(self.device, non_blocking=True)
        logits, v = net(o, m, f)
        u = torch.rand(logits.shape, generator=self.gen).to(self.device, non_blocking=True)
        a = sample_masked(logits, u)
        logp = torch.log_softmax(logits, -1).gather(1, a[:, None]).squeeze(1)
        return o, f, a, logp, v

    def _opponent_actions(self, code: int, rows: np.ndarray, actions: np.ndarray) -> None:
        """Fill ``actions[rows]`` with the moves of the opponent ``code``; return None."""
        obs, mask = self._obs[rows], self._mask[rows]
        if code in self.heuristics:
            actions[rows] = self.heuristics[code].act_batch(obs, mask)
        else:
            _, _, a, _, _ = self._policy_step(self.pool[code - _SNAP0], obs, mask)
            actions[rows] = a.cpu().numpy()

    @torch.no_grad()
    def rollout(self) -> None:
        """Play ``num_steps`` steps in every slot, storing the learner's decisions; return None."""
        eng, n, dev = self.env.engine, self.n, self.device
        rows = np.arange(n)
        trunc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        shaping = self.cfg.shaping
        phi = potential(eng) if shaping else None
        for t in range(self.cfg.num_steps):
            to_act = eng.to_act.copy()
            code = self.controller[rows, to_act]
            is_l = code == _LEARNER
            self.actor[t] = to_act
            self.learner[t] = is_l
            actions = np.zeros(n, np.int64)
            if is_l.all():
                o, f, a, logp, v = self._policy_step(self.net, self._obs, self._mask)
                self.buf_obs[t].copy_(o)
                if f is not None:
                    self.buf_feat[t].copy_(f)
                self.buf_mask[t].copy_(torch.from_numpy(self._mask))
                self.buf_act[t].copy_(a)
                self.buf_logp[t].copy_(logp)
                if self.critic is not None:
                    pr = torch.from_numpy(privileged(eng, to_act)).to(dev)
                    self.buf_priv[t].copy_(pr)
                    v = self.critic(o, pr)
                self.values[t] = v.cpu().numpy()
                actions[:] = a.cpu().numpy()
            else:
                li = np.flatnonzero(is_l)
                self.values[t] = 0.0
                if len(li):
                    o, f, a, logp, v = self._policy_step(self.net, self._obs[li], self._mask[li])
                    ti = torch.from_numpy(li).to(self.device)
                    self.buf_obs[t, ti] = o
                    if f is not None:
                        self.buf_feat[t, ti] = f
                    self.buf_mask[t, ti] = torch.from_numpy(self._mask[li]).to(self.device)
                    self.buf_act[t, ti] = a
                    self.buf_logp[t, ti] = logp
                    if self.critic is not None:
                        pr = torch.from_numpy(privileged(eng, to_act[li], li)).to(dev)
                        self.buf_priv[t, ti] = pr
                        v = self.critic(o, pr)
                    self.values[t, li] = v.cpu().numpy()
                    actions[li] = a.cpu().numpy()
                others = code[~is_l]
                for c in np.unique(others):
                    self._opponent_actions(int(c), np.flatnonzero(code == c), actions)
            obs, rew, term, truncd, infos = self.env.step(actions)
            self.rewards[t] = rew * self.cfg.reward_scale
            done = infos["_final"]
            if shaping:
                # potential after the step: 0 for a game that ended (the engine already dealt the next)
                phi_next = potential(eng)
                self.rewards[t] += shaping * self.cfg.reward_scale * (
                    np.where(done[:, None], 0.0, phi_next) - phi)
                phi = phi_next
            self.dones[t] = done
            self.ep_ret += rew[rows, self.learner_seat]
            self.ep_len += 1
            if done.any():
                idx = infos["final_index"]
                tr = infos["final_info"]["truncated"]
                if tr.any():
                    ti_ = idx[tr]
                    fo = infos["final_obs"][tr]  # (K, P, OBS)
                    fo_t = torch.from_numpy(fo.reshape(-1, self.obs_size)).to(dev)
                    if self.critic is not None:  # a game ends at a round end: no hands, no stock
                        no_priv = torch.zeros((len(fo_t), self.buf_priv.shape[-1]), device=dev)
                        vals = self.critic(fo_t, no_priv)
                    else:
                        vals = self.net.values(fo_t)
                    trunc[t] = (ti_, vals.cpu().numpy().reshape(-1, self.p))
                self._finished.append((self.kind[idx].copy(), self.ep_ret[idx].copy(),
                                       self.ep_len[idx].copy()))
                self._assign(idx)
            self._obs = obs["observation"].copy()
            self._mask = obs["action_mask"].copy()
        self.global_step += n * self.cfg.num_steps
        self._trunc = trunc

    @torch.no_grad()
    def _bootstrap(self) -> np.ndarray:
        """Return the value (N, P) of each learner seat's view of the current state (0 elsewhere)."""
        g, s = np.nonzero(self.controller == _LEARNER)
        out = np.zeros((self.n, self.p), np.float32)
        if len(g):
            o = torch.from_numpy(encode(self.env.engine, s, g)).to(self.device)
            if self.critic is not None:
                pr = torch.from_numpy(privileged(self.env.engine, s, g)).to(self.device)
                out[g, s] = self.critic(o, pr).cpu().numpy()
            else:
                out[g, s] = self.net.values(o).cpu().numpy()
        return out

    # -------------------------------------------------------------------------------- update

    def advantages(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (advantages, returns), each (T, N), of the current rollout."""
        c = self.cfg
        adv = compute_gae(self.rewards, self.values, self.actor, self.learner, self.dones,
                          self._bootstrap(), c.gamma, c.gae_lambda, self._trunc)
        return adv, adv + self.values

    def batch(self, adv: np.ndarray, ret: np.ndarray) -> dict[str, torch.Tensor]:
        """Return the rollout as flat tensors (all slots x steps) plus ``index``: the learner's rows."""
        dev = self.device
        return {
            "index": torch.from_numpy(np.flatnonzero(self.learner.ravel())),
            "obs": self.buf_obs.view(-1, self.obs_size),
            "mask": self.buf_mask.view(-1, self.num_actions),
            "priv": self.buf_priv.view(self.buf_priv.shape[0] * self.n, -1),
            "feat": self.buf_feat.view(self.buf_feat.shape[0] * self.n, self.num_actions, -1),
            "actions": self.buf_act.view(-1),
            "logp": self.buf_logp.view(-1),
            "advantages": torch.from_numpy(adv.ravel()).to(dev),
            "returns": torch.from_numpy(ret.ravel()).to(dev),
            "values": torch.from_numpy(self.values.ravel()).to(dev),
        }

    def loss(self, b: dict[str, torch.Tensor], idx: torch.Tensor
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Return (PPO loss, its parts) of the current network on rows ``idx`` of batch ``b``."""
        c = self.cfg
        def rows(key: str) -> torch.Tensor:
            return b[key].index_select(0, idx)  # much faster than b[key][idx] on CPU

        obs = rows("obs")
        logits, v = self.net(obs, rows("mask"), rows("feat") if self.net.uses_features else None)
        if self.critic is not None:
            v = self.critic(obs, rows("priv"))
        logp_all = torch.log_softmax(logits, -1)
        newlogp = logp_all.gather(1, rows("actions")[:, None]).squeeze(1)
        # softmax, not logp.exp(): exp of the -1e9 masked entries takes a slow path on CPU
        entropy = -(torch.softmax(logits, -1) * logp_all).sum(-1).mean()
        logratio = newlogp - rows("logp")
        ratio = logratio.exp()
        a = rows("advantages")
        if c.norm_adv and len(idx) > 1:
            a = (a - a.mean()) / (a.std() + 1e-8)
        pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - c.clip_coef, 1 + c.clip_coef)).mean()
        r = rows("returns")
        if c.clip_vloss:
            old = rows("values")
            v_clip = old + (v - old).clamp(-c.clip_coef, c.clip_coef)
            v_loss = 0.5 * torch.max((v - r) ** 2, (v_clip - r) ** 2).mean()
        else:
            v_loss = 0.5 * ((v - r) ** 2).mean()
        loss = pg_loss - c.ent_coef * entropy + c.vf_coef * v_loss
        if self.update < c.critic_warmup:  # only the value function learns
            loss = c.vf_coef * v_loss
        distill = None
        if self.distill is not None and self.distill_weight > 0:
            distill = self._distill_loss(len(idx))
            loss = loss + self.distill_weight * distill
        with torch.no_grad():
            parts = {"policy_loss": pg_loss.detach(), "value_loss": v_loss.detach(),
                     "entropy": entropy.detach(),
                     "approx_kl": ((ratio - 1) - logratio).mean(),
                     "clipfrac": ((ratio - 1.0).abs() > c.clip_coef).float().mean()}
            if distill is not None:
                parts["distill_loss"] = distill.detach()
        return loss, parts

    def _distill_loss(self, k: int) -> torch.Tensor:
        """Return the cross-entropy of the policy to the teacher's actions on ``k`` random labels."""
        d = self.distill
        i = torch.randint(len(d["action"]), (k,), generator=self.gen)
        obs = np.asarray(d["obs"][i.numpy()], np.float32)
        f = self.net.features(obs)
        logits, _ = self.net(torch.from_numpy(obs).to(self.device), d["mask"][i].to(self.device),
                             None if f is None else torch.from_numpy(f).to(self.device))
        return torch.nn.functional.cross_entropy(logits, d["action"][i].to(self.device))

    def ppo_update(self, adv: np.ndarray, ret: np.ndarray) -> dict[str, float]:
        """Run the PPO epochs on the current rollout; return the mean loss statistics."""
        c = self.cfg
        b = self.batch(adv, ret)
        flat = b["index"]
        m = len(flat)
        mb = max(1, -(-m // c.num_minibatches))
        stats: dict[str, list[float]] = {}
        self.net.train()
        for _ in range(c.update_epochs):
            perm = flat[torch.randperm(m, generator=self.gen)].to(self.device)
            for start in range(0, m, mb):
                loss, parts = self.loss(b, perm[start:start + mb])
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.params, c.max_grad_norm)
                self.opt.step()
                for k, val in parts.items():
                    stats.setdefault(k, []).append(float(val))
            if c.target_kl is not None and stats["approx_kl"][-1] > c.target_kl:
                break
        self.net.eval()
        out = {k: float(np.mean(v)) for k, v in stats.items()}
        sel = flat.numpy()
        y = ret.ravel()[sel]
        resid = y - self.values.ravel()[sel]
        var_y = float(np.var(y))
        out["explained_variance"] = float("nan") if var_y == 0 else 1.0 - float(np.var(resid)) / var_y
        out["transitions"] = float(m)
        return out

    # ---------------------------------------------------------------------------- evaluation

    def agent(self, deterministic: bool | None = None) -> NeuralAgent:
        """Return a NeuralAgent playing a frozen copy of the current network."""
        det = self.cfg.eval_deterministic if deterministic is None else deterministic
        return NeuralAgent(copy.deepcopy(self.net), self.rules, seed=self.cfg.eval_seed, device=self.device,
                           deterministic=det, name="learner")

    def evaluate(self, deals: int | None = None) -> dict[str, tuple[float, float, float]]:
        """Return {opponent: (mean, lo, hi)} points-per-round difference in duplicate deals."""
        deals = self.cfg.eval_deals if deals is None else deals
        me = self.agent()
        out = {}
        for name in self.cfg.eval_opponents:
            opp = HEURISTICS[name](self.rules)
            res = play_duplicate([me] + [opp] * (self.rules.num_sides - 1), self.rules, deals=deals,
                                 seed=self.cfg.eval_seed)
            out[name] = res.diff
        return out

    # ---------------------------------------------------------------------------- checkpoints

    def checkpoint(self) -> dict[str, Any]:
        """Return the full training checkpoint dict (see the module docstring)."""
        league = {
            "pool": [None if m is None else {k: v.detach().cpu().clone() for k, v in m.state_dict().items()}
                     for m in self.pool],
            "pool_next": self.pool_next,
            "controller": torch.from_numpy(self.controller.copy()),
            "kind": torch.from_numpy(self.kind.copy()),
            "learner_seat": torch.from_numpy(self.learner_seat.copy()),
            "ep_ret": torch.from_numpy(self.ep_ret.copy()),
            "ep_len": torch.from_numpy(self.ep_len.copy()),
        }
        cfg = asdict(self.cfg)
        cfg["resume"] = None
        return checkpoint_dict(
            self.net, self.rules, config=cfg, global_step=self.global_step, update=self.update,
            wall_s=self.wall_s, optimizer=self.opt.state_dict(), rng=_rng_state(self.np_rng, self.gen),
            league=league, engine=_engine_state(self.env.engine),
            schedule={"next_eval": -1 if self.next_eval is None else self.next_eval,
                      "next_save": self.next_save, "next_snapshot": self.next_snapshot},
            evals=self.evals,
            **({} if self.critic is None else {"critic": {k: v.detach().cpu().clone()
                                                          for k, v in self.critic.state_dict().items()}}))

    def save(self, path: str | None = None) -> str:
        """Write the training checkpoint to ``path`` (default ``checkpoints/latest.pt``); return the path."""
        path = self.ckpt_path if path is None else path
        save_checkpoint(path, self.checkpoint())
        return path

    def _restore(self, ckpt: dict[str, Any]) -> None:
        """Load weights, optimizer, league, engine, counters and RNG states from ``ckpt``; return None."""
        src = str(self.cfg.run_name)
        try:
            self.net.load_state_dict(build_net(ckpt, src).state_dict())
        except RuntimeError as e:
            raise ValueError(f"checkpoint network does not match hidden={self.cfg.hidden}: {e}") from e
        if self.critic is not None:
            if "critic" not in ckpt:
                raise ValueError("resume with critic='oracle' needs a checkpoint of an oracle-critic run")
            self.critic.load_state_dict(ckpt["critic"])
        self.opt.load_state_dict(ckpt["optimizer"])
        lg = ckpt["league"]
        if len(lg["pool"]) != self.cfg.max_snapshots or lg["controller"].shape != self.controller.shape:
            raise ValueError("resume needs the same num_envs, rules and max_snapshots as the checkpoint")
        for i, sd in enumerate(lg["pool"]):
            if sd is not None:
                net = self._new_net()
                net.load_state_dict(sd)
                net.eval()
                for q in net.parameters():
                    q.requires_grad_(False)
                self.pool[i] = net
        self.pool_next = int(lg["pool_next"])
        self.controller[...] = lg["controller"].numpy()
        self.kind[...] = lg["kind"].numpy()
        self.learner_seat[...] = lg["learner_seat"].numpy()
        self.ep_ret[...] = lg["ep_ret"].numpy()
        self.ep_len[...] = lg["ep_len"].numpy()
        _load_engine_state(self.env.engine, ckpt["engine"])
        self.global_step = int(ckpt["global_step"])
        self.update = int(ckpt["update"])
        self.wall_s = float(ckpt.get("wall_s", 0.0))
        self.evals = list(ckpt.get("evals", []))
        sch = ckpt["schedule"]
        self.next_eval = None if sch["next_eval"] < 0 else int(sch["next_eval"])
        self.next_save = int(sch["next_save"])
        self.next_snapshot = int(sch["next_snapshot"])
        _set_rng_state(self.np_rng, self.gen, ckpt["rng"])

    # ----------------------------------------------------------------------------------- loop

    def _log(self, tag: str, value: float) -> None:
        if self.logger is not None:
            self.logger.scalar(tag, value, self.global_step, self.wall_s)

    def _run_eval(self) -> dict[str, tuple[float, float, float]]:
        res = self.evaluate()
        row: dict[str, Any] = {"step": int(self.global_step), "wall_s": float(self.wall_s)}
        for name, (m, lo, hi) in res.items():
            self._log(f"eval/vs_{name}", m)
            self._log(f"eval/vs_{name}_lo", lo)
            self._log(f"eval/vs_{name}_hi", hi)
            row[name] = [float(m), float(lo), float(hi)]
        self.evals.append(row)
        return res

    def run(self, max_updates: int | None = None, callback: Callable[[Trainer, dict], None] | None = None
            ) -> dict[str, Any]:
        """Train until ``total_steps`` (or ``max_updates`` more updates, as if interrupted); return a summary.

        ``callback(trainer, stats)`` is called after every update.
        """
        from tqdm.auto import tqdm

        c = self.cfg
        os.makedirs(self.run_dir, exist_ok=True)
        with open(os.path.join(self.run_dir, "config.json"), "w") as f:
            json.dump(asdict(c), f, indent=2)
        self.logger = MetricsLogger(self.run_dir, c.tensorboard, purge_step=self.global_step or None)
        bar = tqdm(total=c.total_steps, initial=min(self.global_step, c.total_steps), unit="step",
                   unit_scale=True, disable=not c.progress, dynamic_ncols=True)
        last_eval: dict[str, tuple[float, float, float]] = {}
        done_updates = 0
        stats: dict[str, float] = {}
        try:
            if self.next_eval is not None and self.global_step >= self.next_eval:
                last_eval = self._run_eval()
                self.next_eval += c.eval_interval
            while self.global_step < c.total_steps and (max_updates is None or done_updates < max_updates):
                t0 = time.perf_counter()
                frac = max(0.0, 1.0 - self.global_step / max(c.total_steps, 1))
                if c.anneal_lr:
                    for g in self.opt.param_groups:
                        g["lr"] = frac * c.learning_rate
                if c.distill_anneal:
                    self.distill_weight = frac * c.distill_coef
                self.rollout()
                t1 = time.perf_counter()
                adv, ret = self.advantages()
                stats = self.ppo_update(adv, ret)
                t2 = time.perf_counter()
                self.update += 1
                done_updates += 1
                dt = t2 - t0
                self.wall_s += dt
                steps = self.n * c.num_steps
                self._log("charts/sps", steps / dt)
                self._log("charts/sps_rollout", steps / max(t1 - t0, 1e-9))
                self._log("charts/ups", 1.0 / dt)
                self._log("charts/learning_rate", self.opt.param_groups[0]["lr"])
                self._log("charts/transitions", stats["transitions"])
                for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac",
                          "explained_variance", "distill_loss"):
                    if k in stats:
                        self._log(f"losses/{k}", stats[k])
                self._log_episodes()
                if self.global_step >= self.next_snapshot:
                    self._add_snapshot()
                    self.next_snapshot += c.snapshot_interval
                if self.next_eval is not None and self.global_step >= self.next_eval:
                    t3 = time.perf_counter()
                    last_eval = self._run_eval()
                    self.next_eval += c.eval_interval
                    self.wall_s += time.perf_counter() - t3
                if self.global_step >= self.next_save:
                    self.save()
                    self.next_save += c.save_interval
                self.logger.flush()
                post = {"sps": f"{steps / dt:,.0f}", "ent": f"{stats['entropy']:.2f}"}
                for name, (m, _, _) in last_eval.items():
                    post[name] = f"{m:+.3f}"
                bar.set_postfix(post, refresh=False)
                bar.update(min(steps, c.total_steps - bar.n))
                if callback is not None:
                    callback(self, stats)
            finished = self.global_step >= c.total_steps
            if finished and self.next_eval is not None and (not self.evals
                                                             or self.evals[-1]["step"] != self.global_step):
                last_eval = self._run_eval()
            self.save()
        finally:
            bar.close()
            self.logger.close()
            self.logger = None
        return {"global_step": self.global_step, "updates": self.update, "wall_s": self.wall_s,
                "eval": last_eval, "stats": stats, "checkpoint": self.ckpt_path}

    def _log_episodes(self) -> None:
        """Log mean learner return per opponent kind and episode length of the games that ended."""
        if not self._finished:
            return
        kinds = np.concatenate([f[0] for f in self._finished])
        rets = np.concatenate([f[1] for f in self._finished])
        lens = np.concatenate([f[2] for f in self._finished])
        self._finished = []
        self._log("charts/episodes", len(kinds))
        self._log("charts/episode_length", float(lens.mean()))
        for i, name in enumerate(OPPONENTS):
            sel = kinds == i
            if sel.any() and name != "self":
                self._log(f"charts/return_vs_{name}", float(rets[sel].mean()))


def train(cfg: Config, max_updates: int | None = None, overrides: Sequence[str] | None = None
          ) -> dict[str, Any]:
    """Train with ``cfg`` (resuming from ``cfg.resume`` if set, see ``resume_config``); return the summary."""
    return Trainer(cfg, overrides).run(max_updates=max_updates)


def export_agent(src: str, dst: str) -> str:
    """Write a play-only copy of training checkpoint ``src`` (weights, rules, config, step) to ``dst``."""
    ckpt = load_checkpoint(src)
    net = build_net(ckpt, src)
    rules = check_compatible(ckpt, None, src)
    keep = {k: ckpt[k] for k in ("config", "global_step", "update", "wall_s", "evals") if k in ckpt}
    save_checkpoint(dst, checkpoint_dict(net, rules, **keep))
    return dst


# ------------------------------------------------------------------------------------------ CLI


def field_docs(cls: type) -> dict[str, str]:
    """Return {field name: docstring} of a dataclass, read from the string under each field."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body
    docs: dict[str, str] = {}
    for a, b in zip(body, body[1:], strict=False):
        if (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)):
            docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def _parse_bool(s: str) -> bool:
    if s.lower() in ("1", "true", "yes", "on"):
        return True
    if s.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {s!r}")


def _optional(conv: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(s: str) -> Any:
        return None if s.lower() == "none" else conv(s)
    return parse


_CONVERTERS: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "str": str, "bool": _parse_bool}


def build_parser() -> argparse.ArgumentParser:
    """Return the argparse parser of ``train.py``: one flag per Config field and per Rules field."""
    parser = argparse.ArgumentParser(
        prog="train.py", description="PPO self-play training for Escoba (see agents/ppo.py).",
        argument_default=argparse.SUPPRESS)
    docs = field_docs(Config)
    for f in dataclasses.fields(Config):
        if f.name == "rules":
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        typ = str(f.type)
        help_ = f"{docs.get(f.name, '')} (default: {default!r})"
        if typ.startswith("tuple["):
            item = typ[len("tuple["):].split(",")[0].strip()
            parser.add_argument(flag, nargs="+", type=_CONVERTERS[item], help=help_, dest=f.name)
        elif typ == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, help=help_, dest=f.name)
        elif typ.endswith("| None"):
            parser.add_argument(flag, type=_optional(_CONVERTERS[typ.split("|")[0].strip()]), help=help_,
                                dest=f.name, metavar=typ.split("|")[0].strip().upper())
        else:
            parser.add_argument(flag, type=_CONVERTERS[typ], help=help_, dest=f.name)
    group = parser.add_argument_group("rules (passed to the env; defaults: escoba_env.Rules)")
    rdocs = field_docs(Rules)
    for f in dataclasses.fields(Rules):
        typ = str(f.type)
        flag = "--" + f.name.replace("_", "-")
        help_ = f"{rdocs.get(f.name, '')} (default: {f.default!r})"
        if typ == "bool":
            group.add_argument(flag, action=argparse.BooleanOptionalAction, help=help_,
                               dest="rules." + f.name)
        else:
            group.add_argument(flag, type=_CONVERTERS[typ], help=help_, dest="rules." + f.name)
    return parser


def config_from_args(argv: Sequence[str] | None = None) -> tuple[Config, list[str]]:
    """Return (Config, names of the fields given on the command line) for ``argv``."""
    ns = vars(build_parser().parse_args(argv))
    rules = {k[len("rules."):]: v for k, v in ns.items() if k.startswith("rules.")}
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in ns.items() if not k.startswith("rules.")}
    if rules:
        kw["rules"] = rules
    return Config(**kw), sorted(kw)
