"""The neural agent: a small policy/value MLP over the observation, and its checkpoint files.

``PolicyValueNet`` reads the seat-relative observation (``escoba_env.observation``, 546 floats)
through a few ReLU layers into two heads: 40 action logits, masked so that an illegal action has
probability 0, and one value (the expected return of the seat to act). It is small on purpose:
self-play runs it on every decision of thousands of games at once on a CPU.

``NeuralAgent`` implements ``agents.base.Agent.act_batch`` with one batched ``torch.no_grad``
forward pass per call; it plays the most likely legal action (``deterministic=True``, the default)
or samples from the masked policy with its own seeded generator.

Checkpoints (``save_checkpoint`` / ``load_checkpoint``) are ``torch.save`` files of a plain dict of
tensors and primitives, never a pickled object, read back with ``weights_only=True``:

==================  ===============================================================
key                 content
==================  ===============================================================
format              ``"escoba-ppo"``; ``format_version``: int (``FORMAT_VERSION``)
env_version         ``escoba_env.__version__`` of the run that wrote it
obs_size            observation length the network reads (``OBS_SIZE``)
num_actions         40
rules               ``Rules.to_dict()`` the agent was trained for
net                 network shape: ``{"hidden": [..]}``
model               the network ``state_dict``
config              the training config as a dict (optional)
global_step         env steps trained (optional)
optimizer, ...      training state for ``--resume`` (optional; see ``agents.ppo``)
==================  ===============================================================

``NeuralAgent.from_checkpoint(path, rules=...)`` refuses, with a ValueError naming the difference,
a checkpoint for other rules (player count included) or another observation size, and raises
FileNotFoundError for a missing file and ValueError for a corrupt one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

import escoba_env
from escoba_env.cards import NUM_CARDS
from escoba_env.observation import OBS_SIZE
from escoba_env.rules import Rules

from .base import Agent

FORMAT = "escoba-ppo"
FORMAT_VERSION = 1
_REQUIRED = ("format", "format_version", "env_version", "obs_size", "num_actions", "rules", "net", "model")
_MASKED = -1e9  # finite, so that masked entries give p = 0 and p * log p = 0 (no NaN)


class PolicyValueNet(nn.Module):
    """MLP torso with a masked 40-way policy head and a scalar value head."""

    def __init__(self, hidden: Sequence[int] = (256, 256), obs_size: int = OBS_SIZE,
                 num_actions: int = NUM_CARDS):
        super().__init__()
        self.hidden = [int(h) for h in hidden]
        self.obs_size, self.num_actions = int(obs_size), int(num_actions)
        layers: list[nn.Module] = []
        width = self.obs_size
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.torso = nn.Sequential(*layers)
        self.policy = nn.Linear(width, self.num_actions)
        self.value = nn.Linear(width, 1)
        for m in self.torso:
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight, np.sqrt(2))
                nn.init.zeros_(m.bias)
        nn.init.orthogonal_(self.policy.weight, 0.01)
        nn.init.zeros_(self.policy.bias)
        nn.init.orthogonal_(self.value.weight, 1.0)
        nn.init.zeros_(self.value.bias)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (masked logits (B, 40), values (B,)); illegal actions get logit -1e9."""
        z = self.torso(obs)
        logits = self.policy(z).masked_fill(mask == 0, _MASKED)
        return logits, self.value(z).squeeze(-1)

    def net_config(self) -> dict[str, Any]:
        """Return the shape description stored in checkpoints (enough to rebuild the module)."""
        return {"hidden": list(self.hidden)}

    @classmethod
    def from_config(cls, net: dict[str, Any], obs_size: int = OBS_SIZE,
                    num_actions: int = NUM_CARDS) -> PolicyValueNet:
        """Return a freshly initialised network of the shape ``net`` describes."""
        return cls(hidden=net["hidden"], obs_size=obs_size, num_actions=num_actions)


def sample_masked(logits: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Return one action per row drawn from softmax(logits) by the Gumbel-max trick on ``uniforms``.

    Masked logits (-1e9) can never win against a legal one (Gumbel noise is below 20 in float32).
    """
    g = -torch.log(-torch.log(uniforms.clamp_min(1e-30)))
    return torch.argmax(logits + g, dim=-1)


class NeuralAgent(Agent):
    """Plays a ``PolicyValueNet``: argmax of the masked policy, or a sample from it."""

    name = "neural"

    def __init__(self, net: PolicyValueNet, rules: Rules | None = None, seed: int | None = None,
                 device: str | torch.device = "cpu", deterministic: bool = True, name: str | None = None):
        self.device = torch.device(device)
        self.net = net.to(self.device).eval()
        self.deterministic = bool(deterministic)
        if name is not None:
            self.name = name
        super().__init__(rules, seed)

    @torch.no_grad()
    def policy(self, observations: np.ndarray, action_masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return (probabilities (K, 40), values (K,)) of the network for a batch, as float32 arrays."""
        obs = torch.as_tensor(np.asarray(observations, np.float32), device=self.device)
        mask = torch.as_tensor(np.asarray(action_masks, np.int8), device=self.device)
        logits, values = self.net(obs, mask)
        return torch.softmax(logits, -1).cpu().numpy(), values.cpu().numpy()

    @torch.no_grad()
    def act_batch(self, observations, action_masks, state=None):
        """Return the network's action (int64) for each row: argmax, or a sample when not deterministic."""
        masks = np.asarray(action_masks, np.int8)
        if masks.shape[0] == 0:
            return np.zeros(0, np.int64)
        if not (masks > 0).any(axis=1).all():
            raise ValueError("neural agent got a row with no legal action")
        obs = torch.as_tensor(np.asarray(observations, np.float32), device=self.device)
        logits, _ = self.net(obs, torch.as_tensor(masks, device=self.device))
        if self.deterministic:
            return torch.argmax(logits, -1).cpu().numpy().astype(np.int64)
        u = torch.as_tensor(self.rng.random(logits.shape, np.float32), device=self.device)
        return sample_masked(logits, u).cpu().numpy().astype(np.int64)

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, rules: Rules | None = None, seed: int | None = None,
                        device: str | torch.device = "cpu", deterministic: bool = True,
                        name: str | None = None) -> NeuralAgent:
        """Return the agent stored in checkpoint ``path`` (any device), checked against ``rules``.

        ``rules=None`` plays the rules the checkpoint was trained for. Raises FileNotFoundError for a
        missing file and ValueError for a corrupt or incompatible one.
        """
        ckpt = load_checkpoint(path, map_location=device)
        trained = check_compatible(ckpt, rules, str(path))
        net = build_net(ckpt, str(path))
        return cls(net, trained, seed=seed, device=device, deterministic=deterministic,
                   name=name if name is not None else f"checkpoint:{path}")


def checkpoint_dict(net: PolicyValueNet, rules: Rules, **extra: Any) -> dict[str, Any]:
    """Return the checkpoint dict of ``net`` for ``rules`` plus ``extra`` entries (see module doc)."""
    d: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "env_version": escoba_env.__version__,
        "obs_size": net.obs_size,
        "num_actions": net.num_actions,
        "rules": rules.to_dict(),
        "net": net.net_config(),
        "model": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
    }
    d.update(extra)
    return d


def save_checkpoint(path: str | os.PathLike, ckpt: dict[str, Any]) -> None:
    """Write ``ckpt`` atomically (temp file, then rename) so a crash never leaves half a file; return None."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    torch.save(ckpt, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Return the checkpoint dict in ``path``, tensors mapped to ``map_location``, after format checks.

    Raises FileNotFoundError if there is no such file, ValueError if it is not a readable
    escoba-env checkpoint of a supported format version or observation size.
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise FileNotFoundError(f"checkpoint not found: {p!r}")
    try:
        ckpt = torch.load(p, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises several types for truncated / foreign files
        raise ValueError(f"cannot read checkpoint {p!r}: the file is corrupt or not a torch.save "
                         f"file of an escoba-env checkpoint ({type(e).__name__}: {e})") from e
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise ValueError(f"{p!r} is not an escoba-env agent checkpoint (no format={FORMAT!r} entry)")
    missing = [k for k in _REQUIRED if k not in ckpt]
    if missing:
        raise ValueError(f"checkpoint {p!r} is incomplete: missing {missing}")
    if ckpt["format_version"] > FORMAT_VERSION:
        raise ValueError(f"checkpoint {p!r} has format version {ckpt['format_version']}; this code reads "
                         f"up to {FORMAT_VERSION} (upgrade escoba-env)")
    if ckpt["obs_size"] != OBS_SIZE or ckpt["num_actions"] != NUM_CARDS:
        raise ValueError(f"checkpoint {p!r} was trained on observations of size {ckpt['obs_size']} with "
                         f"{ckpt['num_actions']} actions; this escoba_env (version {escoba_env.__version__}) "
                         f"has {OBS_SIZE} and {NUM_CARDS} (checkpoint env version {ckpt['env_version']})")
    return ckpt


def check_compatible(ckpt: dict[str, Any], rules: Rules | None, where: str = "checkpoint") -> Rules:
    """Return the checkpoint's Rules; raise ValueError if ``rules`` is given and differs from them."""
    try:
        trained = Rules.from_dict(dict(ckpt["rules"]))
    except (TypeError, ValueError) as e:
        raise ValueError(f"checkpoint {where!r} holds invalid rules {ckpt['rules']!r}: {e}") from e
    if rules is not None and rules != trained:
        a, b = trained.to_dict(), rules.to_dict()
        diff = ", ".join(f"{k}: trained {a[k]!r}, asked {b[k]!r}" for k in a if a[k] != b[k])
        raise ValueError(f"checkpoint {where!r} was trained for other rules ({diff}); load it with the "
                         f"rules it was trained for or retrain")
    return trained


def build_net(ckpt: dict[str, Any], where: str = "checkpoint") -> PolicyValueNet:
    """Return the network stored in ``ckpt`` with its weights loaded; ValueError if they do not fit."""
    try:
        net = PolicyValueNet.from_config(ckpt["net"], ckpt["obs_size"], ckpt["num_actions"])
        net.load_state_dict(ckpt["model"])
    except (KeyError, TypeError, RuntimeError) as e:
        raise ValueError(f"checkpoint {where!r} has weights that do not fit its network description "
                         f"{ckpt.get('net')!r}: {e}") from e
    return net
