"""Every setting of a training run (``Config``), and the checks and merges applied to it."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from escoba_env.rulebook.rules import Rules

from ..nets.neural import HEADS

HEURISTIC_NAMES = ("greedy", "expert")
"""Heuristic agents usable as league opponents and evaluation baselines (see ``league.HEURISTICS``)."""
BACKENDS = ("local", "ray")
"""Where rollout workers run (``Config.backend``)."""


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
    """Env steps to train for (decisions of every seat in every game, opponents' included), rounded up to
    whole updates of num_envs x num_steps. The default reproduces the shipped 2-player agent's first
    stage (escoba_2p_plain.pt): about 20 minutes on 2 CPU cores; --total-steps 2000000 takes about one."""
    device: str = "cpu"
    """Torch device for the network: ``cpu`` or ``cuda`` (``cuda:1``...)."""
    threads: int = 1
    """Torch CPU threads (0: all cores). 1 is fastest on a shared machine: extra threads spin-wait."""
    resume: str | None = None
    """Checkpoint to continue from; its config is used, with the fields given here overriding it."""
    workers: int = 1
    """Rollout workers: 1 plays every game in the trainer's own process; K > 1 splits the games into K
    shards, each played by a worker process (``backend="local"``) or Ray actor (``backend="ray"``)
    while the trainer only learns. Same seed and worker count give the same weights; the count may
    change on resume."""
    overlap: bool = False
    """Overlap rollouts with the update: the workers collect batch k+1 with the weights of update k-1
    while the learner updates on batch k (a fixed one-update lag: still exactly reproducible for a
    given seed and worker count; PPO's clipped ratio against the stored behaviour log-probs corrects
    it). Runs the rollout in worker processes even with ``workers=1``."""
    backend: str = "local"
    """Where the rollout workers run when ``workers > 1``: ``local`` processes or ``ray`` actors."""
    ray_address: str | None = None
    """Address of a running Ray cluster (``backend="ray"``); None starts a private local Ray instance
    bound to 127.0.0.1, without dashboard."""
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
    legal action from its own features, see ``agents.nets.features.move_features``) or ``moves_mlp``
    (that term as a small MLP of the features and the state, so they can combine non-linearly)."""
    endgame_features: bool = False
    """Add the exact 2-player endgame values to each action's features
    (``agents.nets.features.endgame_features``: once the stock is empty every hidden card is known and
    ``agents.heuristic.endgame`` solves the rest of the round by minimax). Needs a ``moves``/``moves_mlp``
    head and 2 players without partnerships; costs about half the training throughput."""
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
    """Teacher-labelled decisions (a .npz written by ``python -m agents.training.distill``) to kickstart
    from: every PPO minibatch adds ``distill_coef`` x the cross-entropy between the policy and the
    teacher's action on as many labelled decisions (Schmitt et al. 2018, "Kickstarting Deep
    Reinforcement Learning")."""
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
    opp_fixed: float = 0.0
    """Sampling weight of games against the frozen agent ``fixed_opponent`` names."""
    fixed_opponent: str | None = None
    """A frozen agent (an agent name or spec, e.g. ``neural-solo``) for ``opp_fixed``; ``escoba-bench
    exploit`` trains a best response with every game against it."""
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


def _check_run_name(name: str) -> None:
    """Raise ValueError unless ``name`` is one plain folder name (no path, no ``..``); return None."""
    if (not isinstance(name, str) or not name or name in (".", "..") or os.sep in name
            or (os.altsep is not None and os.altsep in name) or name != name.strip() or "\0" in name):
        raise ValueError(f"run_name must be a plain folder name (no '/', not '.' or '..'), got {name!r}")


def _check_device(device: str) -> None:
    """Raise ValueError unless ``device`` is a torch device this machine has; return None."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}") from e
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} asked but CUDA is not available on this machine")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA "
                             f"device(s)")
    elif dev.type != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}")


_AT_LEAST = {"num_envs": 1, "num_steps": 1, "total_steps": 0, "num_minibatches": 1, "update_epochs": 1,
             "threads": 0, "workers": 1, "save_interval": 1, "eval_interval": 0, "eval_deals": 1,
             "snapshot_interval": 1, "max_snapshots": 0, "critic_warmup": 0, "seed": 0, "eval_seed": 0}
_UNIT = ("gamma", "gae_lambda")
_POSITIVE = ("learning_rate", "clip_coef", "max_grad_norm")
_NON_NEGATIVE = ("ent_coef", "vf_coef", "shaping", "distill_coef", "opp_self", "opp_snapshot", "opp_greedy",
                 "opp_expert", "opp_fixed")


def check_config(cfg: Config) -> None:
    """Raise ValueError (TypeError for a wrong type) naming the first bad field; return None."""
    for name, low in _AT_LEAST.items():
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"{name} must be an int, got {v!r}")
        if v < low:
            raise ValueError(f"{name} must be >= {low}, got {v}")
    floats = (*_UNIT, *_POSITIVE, *_NON_NEGATIVE, "reward_scale")
    for name in floats:
        v = getattr(cfg, name)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise TypeError(f"{name} must be a number, got {v!r}")
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v}")
    for name in _UNIT:
        if not 0.0 <= getattr(cfg, name) <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {getattr(cfg, name)}")
    for name in _POSITIVE:
        if getattr(cfg, name) <= 0:
            raise ValueError(f"{name} must be > 0, got {getattr(cfg, name)}")
    for name in _NON_NEGATIVE:
        if getattr(cfg, name) < 0:
            raise ValueError(f"{name} must be >= 0, got {getattr(cfg, name)}")
    if cfg.reward_scale <= 0:
        raise ValueError(f"reward_scale must be > 0, got {cfg.reward_scale}")
    if cfg.target_kl is not None and not (isinstance(cfg.target_kl, (int, float)) and cfg.target_kl > 0):
        raise ValueError(f"target_kl must be > 0 or None, got {cfg.target_kl!r}")
    for name in ("hidden", "critic_hidden"):
        widths = tuple(getattr(cfg, name))
        if not widths or any(not isinstance(h, int) or isinstance(h, bool) or not 1 <= h <= 65536
                             for h in widths):
            raise ValueError(f"{name} must be one or more layer widths in 1..65536, got {widths!r}")
    if cfg.max_rounds is not None and cfg.max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1 or None, got {cfg.max_rounds}")
    w = [cfg.opp_self, cfg.opp_snapshot, cfg.opp_greedy, cfg.opp_expert, cfg.opp_fixed]
    if sum(w) <= 0:
        raise ValueError(f"opponent weights must be >= 0 and not all 0, got {w}")
    if cfg.opp_fixed > 0 and not cfg.fixed_opponent:
        raise ValueError("opp_fixed > 0 needs fixed_opponent (the frozen agent to play against)")
    if cfg.fixed_opponent is not None and (not isinstance(cfg.fixed_opponent, str) or not cfg.fixed_opponent):
        raise ValueError(f"fixed_opponent must be an agent spec, got {cfg.fixed_opponent!r}")
    known = HEURISTIC_NAMES + ((cfg.fixed_opponent,) if cfg.fixed_opponent else ())
    bad = [o for o in cfg.eval_opponents if o not in known]
    if bad or not cfg.eval_opponents:
        raise ValueError(f"eval_opponents must name one or more of {list(known)}, got "
                         f"{list(cfg.eval_opponents)}")
    choices = {"episode": ("round", "game"), "reward": ("round_points", "game"), "head": HEADS,
               "critic": ("shared", "oracle"), "backend": BACKENDS}
    for name, allowed in choices.items():
        if getattr(cfg, name) not in allowed:
            raise ValueError(f"{name} must be one of {list(allowed)}, got {getattr(cfg, name)!r}")
    if cfg.workers > cfg.num_envs:
        raise ValueError(f"workers ({cfg.workers}) must be <= num_envs ({cfg.num_envs}): each plays a shard "
                         f"of the games")
    if not isinstance(cfg.overlap, bool):
        raise TypeError(f"overlap must be a bool, got {cfg.overlap!r}")
    if cfg.ray_address is not None and cfg.backend != "ray":
        raise ValueError("ray_address needs backend='ray'")
    _check_run_name(cfg.run_name)
    _check_device(cfg.device)
    rules = make_rules(cfg)
    if cfg.endgame_features:
        if cfg.head == "mlp":
            raise ValueError("endgame_features need an action-conditioned head (--head moves or moves_mlp)")
        if rules.num_players != 2 or rules.partnerships:
            raise ValueError("endgame_features solve the 2-player endgame only (num_players=2, no "
                             "partnerships)")
