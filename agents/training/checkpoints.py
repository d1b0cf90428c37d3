"""Training checkpoints: the ``agents.nets.neural`` checkpoint dict plus everything ``--resume`` needs.

``checkpoints/latest.pt`` holds the network and rules (so it plays like an exported agent), the
config, the optimizer, the step and update counts, the learner's RNG states (its NumPy and torch
generators and the global torch, NumPy and Python ones), the league (snapshot weights and each
game's opponent) and the engine state of every game, written atomically. Rollout generators are
seeded per update (see ``rollout``), so no worker state is saved and the worker count may change on
resume. ``export_agent`` writes a play-only copy.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from escoba_env.rulebook.rules import Rules

from ..nets.neural import (
    PolicyValueNet,
    build_net,
    check_compatible,
    check_state_shapes,
    checkpoint_dict,
    load_checkpoint,
    save_checkpoint,
)
from .config import Config
from .ppo import new_critic
from .rollout import LEAGUE_KEYS

TRAINING_KEYS = ("optimizer", "engine", "league", "rng", "schedule", "config", "global_step", "update")
"""Entries a checkpoint needs to be resumed (an exported agent has none of the training state)."""


def load_training_checkpoint(path: str) -> dict[str, Any]:
    """Return the training checkpoint at ``path``; FileNotFoundError or ValueError if it cannot resume.

    The network and the oracle critic are checked against their stored shapes (on the meta device)
    before anything is built, so a crafted description of a huge network allocates nothing.
    """
    ckpt = load_checkpoint(path, map_location="cpu")
    missing = [k for k in TRAINING_KEYS if k not in ckpt]
    if missing:
        raise ValueError(f"checkpoint {path!r} holds no training state (an exported agent?) and cannot be "
                         f"resumed: missing {missing}; resume needs a checkpoint written by the trainer")
    build_net(ckpt, path)  # refuses weights that do not fit their description
    return ckpt


def check_resumable(ckpt: dict[str, Any], cfg: Config, where: str) -> None:
    """Raise ValueError unless the resumed ``cfg`` builds the networks stored in ``ckpt``; return None."""
    stored = list(ckpt["net"].get("hidden", []))
    if stored != list(cfg.hidden):
        raise ValueError(f"checkpoint {where!r} has hidden={stored}; resume cannot change it to "
                         f"{list(cfg.hidden)}")
    if cfg.critic == "oracle":
        if "critic" not in ckpt:
            raise ValueError("resume with critic='oracle' needs a checkpoint of an oracle-critic run")
        rules = check_compatible(ckpt, None, where)
        with torch.device("meta"):
            shape = new_critic(cfg, rules)
        check_state_shapes(shape, ckpt["critic"], where)
    lg = ckpt["league"]
    if len(lg["pool"]) != cfg.max_snapshots or tuple(lg["controller"].shape)[0] != cfg.num_envs:
        raise ValueError("resume needs the same num_envs, rules and max_snapshots as the checkpoint")


def state_to_checkpoint(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the (engine, league) checkpoint entries of a whole-run state, arrays as tensors."""
    engine = {k: (v if k == "seed" else torch.from_numpy(np.ascontiguousarray(v).copy()))
              for k, v in state["engine"].items()}
    league = {k: torch.from_numpy(state["league"][k].copy()) for k in LEAGUE_KEYS}
    return engine, league


def state_from_checkpoint(ckpt: dict[str, Any]) -> dict[str, Any]:
    """Return the whole-run state (engine and league arrays) stored in ``ckpt``."""
    engine = {k: (int(v) if k == "seed" else v.numpy()) for k, v in ckpt["engine"].items()}
    return {"engine": engine, "league": {k: ckpt["league"][k].numpy() for k in LEAGUE_KEYS}}


def rng_state(np_rng: np.random.Generator, gen: torch.Generator) -> dict[str, Any]:
    """Return every RNG state the learner depends on (its generators and the global ones)."""
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


def set_rng_state(np_rng: np.random.Generator, gen: torch.Generator, s: dict[str, Any]) -> None:
    """Restore the states saved by ``rng_state``; return None."""
    np_rng.bit_generator.state = s["numpy_generator"]
    gen.set_state(s["torch_generator"].cpu())
    torch.set_rng_state(s["torch_global"].cpu())
    np.random.set_state(  # noqa: NPY002
        ("MT19937", s["numpy_global"].numpy().astype(np.uint32), s["numpy_global_pos"]))
    random.setstate((s["python"][0], tuple(s["python"][1]), s["python"][2]))


def export_agent(src: str, dst: str) -> str:
    """Write a play-only copy of training checkpoint ``src`` (weights, rules, config, step) to ``dst``."""
    ckpt = load_checkpoint(src)
    net = build_net(ckpt, src)
    rules = check_compatible(ckpt, None, src)
    keep = {k: ckpt[k] for k in ("config", "global_step", "update", "wall_s", "evals") if k in ckpt}
    save_checkpoint(dst, checkpoint_dict(net, rules, **keep))
    return dst


def init_weights_from(net: PolicyValueNet, rules: Rules, path: str) -> None:
    """Load the weights of checkpoint ``path`` into the fresh ``net`` (shapes and rules checked).

    A network without endgame features can start one with them: the new features' weights are 0,
    so fine-tuning starts from the same policy.
    """
    ckpt = load_checkpoint(path, map_location="cpu")
    check_compatible(ckpt, rules, path)
    src = build_net(ckpt, path)
    mine, theirs = net.net_config(), src.net_config()
    grow = net.endgame and not src.endgame
    if grow:
        theirs = {**theirs, "endgame": True, "move_features": mine["move_features"]}
    if theirs != mine:
        raise ValueError(f"init_from checkpoint {path!r} has network {src.net_config()}, but this run "
                         f"builds {mine} (set --hidden/--head/--endgame-features to match)")
    state = src.state_dict()
    if grow:
        for key, target in net.state_dict().items():
            if state[key].shape != target.shape:  # the feature axis (last) grew
                padded = torch.zeros_like(target)
                padded[..., : state[key].shape[-1]] = state[key]
                state[key] = padded
    net.load_state_dict(state)
