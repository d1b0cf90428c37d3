"""The neural agent: a small policy/value MLP over the observation, and its checkpoint files.

``PolicyValueNet`` reads the seat-relative observation (``escoba_env.executors.observation``, 546 floats)
through a few ReLU layers into two heads: 40 action logits, masked so that an illegal action has
probability 0, and one value (the expected return of the seat to act). It is small on purpose:
self-play runs it on every decision of thousands of games at once on a CPU.

``NeuralAgent`` implements ``agents.base.Agent.act_batch`` with one batched forward pass per call,
in fixed point (``agents.nets.fixedpoint``: the same move on every machine); it plays the most likely legal
action (``deterministic=True``, the default) or samples from the masked policy with its own seeded
generator. ``NeuralAgent.policy`` (the probabilities, for display) and training use float32.

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
optimizer, ...      training state for ``--resume`` (optional; see ``agents.training``)
==================  ===============================================================

``NeuralAgent.from_checkpoint(path, rules=...)`` refuses, with a ValueError naming the difference,
a checkpoint for other rules (player count included) or another observation size, and raises
FileNotFoundError for a missing file and ValueError for a corrupt one.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

import escoba_env
from escoba_env.executors import observation as _observation
from escoba_env.executors.observation import OBS_SIZE
from escoba_env.rulebook.cards import JOKERS, NUM_CARDS
from escoba_env.rulebook.rules import Rules

from ..base import Agent
from .features import ENDGAME_FEATURES, MOVE_FEATURES, endgame_features, move_features
from .fixedpoint import policy_logits

FORMAT = "escoba-ppo"
FORMAT_VERSION = 1
_REQUIRED = ("format", "format_version", "env_version", "obs_size", "num_actions", "rules", "net", "model")
_MASKED = -1e9  # finite, so that masked entries give p = 0 and p * log p = 0 (no NaN)

HEADS = ("mlp", "moves", "moves_mlp")
"""Policy heads of ``PolicyValueNet``."""


class PolicyValueNet(nn.Module):
    """MLP torso with a masked 40-way policy head and a scalar value head.

    ``head="mlp"``: the logits are a linear map of the torso output. ``head="moves_mlp"``: the
    action-conditioned term is a small MLP of each action's features and a state query,
    ``v . relu(W f_a + U q(z) + b)``, so features can combine non-linearly. ``head="moves"``: an
    action-conditioned term is added to each action's logit, computed from that action's own
    features (``move_features``) with weights shared by all 40 actions:
    ``w . f_a + (E f_a) . q(z)``, so what is learnt about one card carries over to the others.
    """

    def __init__(self, hidden: Sequence[int] = (256, 256), obs_size: int = OBS_SIZE,
                 num_actions: int = NUM_CARDS, head: str = "mlp", move_dim: int = 16,
                 move_hidden: int = 32, endgame: bool = False, rules: Rules | None = None):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"head must be one of {', '.join(HEADS)}, got {head!r}")
        self.endgame = bool(endgame)
        if self.endgame and head == "mlp":
            raise ValueError("endgame features need an action-conditioned head (moves or moves_mlp)")
        if self.endgame and rules is None:
            raise ValueError("endgame features need the game's rules (rules=...): the scoring decides them")
        self.game_rules = rules
        self.feature_names = MOVE_FEATURES + (ENDGAME_FEATURES if self.endgame else ())
        self.hidden = [int(h) for h in hidden]
        self.obs_size, self.num_actions = int(obs_size), int(num_actions)
        self.head, self.move_dim, self.move_hidden = head, int(move_dim), int(move_hidden)
        if not 0 <= self.num_actions - NUM_CARDS <= len(JOKERS):
            raise ValueError(f"num_actions must be 40, 41 or 42 (the deck with 0-2 jokers), got "
                             f"{num_actions}")
        # The move features depend on the deck only (how many jokers), never on other rules options.
        self._feature_rules = Rules(jokers=self.num_actions - NUM_CARDS)
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
        if head == "moves_mlp":
            k = len(self.feature_names)
            self.move_query = nn.Linear(width, self.move_dim)
            self.move_in = nn.Linear(k, self.move_hidden)
            self.move_state = nn.Linear(self.move_dim, self.move_hidden, bias=False)
            self.move_out = nn.Linear(self.move_hidden, 1, bias=False)
            nn.init.zeros_(self.move_out.weight)
        if head == "moves":
            k = len(self.feature_names)
            self.move_linear = nn.Linear(k, 1, bias=False)
            self.move_embed = nn.Linear(k, self.move_dim, bias=False)
            self.move_query = nn.Linear(width, self.move_dim)
            nn.init.zeros_(self.move_linear.weight)
            nn.init.orthogonal_(self.move_query.weight, 0.01)
            nn.init.zeros_(self.move_query.bias)

    @property
    def uses_features(self) -> bool:
        """Return True if ``forward`` needs the ``move_features`` of the observations."""
        return self.head in ("moves", "moves_mlp")

    def forward(self, obs: torch.Tensor, mask: torch.Tensor, feats: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (masked logits (B, 40), values (B,)); illegal actions get logit -1e9.

        ``feats`` (B, 40, len(self.feature_names)) is required with ``head="moves"``.
        """
        z = self.torso(obs)
        logits = self.policy(z)
        if self.head == "moves_mlp":
            if feats is None:
                raise ValueError("this network has an action-conditioned head: pass move_features(obs)")
            s = self.move_state(self.move_query(z))  # (B, H): the state's share of each action's input
            h = torch.relu(self.move_in(feats) + s.unsqueeze(1))  # (B, A, H)
            logits = logits + self.move_out(h).squeeze(-1)
        if self.head == "moves":
            if feats is None:
                raise ValueError("this network has an action-conditioned head: pass move_features(obs)")
            # w . f_a + (E f_a) . q  ==  f_a . (w + E^T q): one (K,)-vector per row, then one batched
            # matrix-vector product, instead of embedding all 40 actions' features (3x cheaper overall)
            u = self.move_linear.weight + self.move_query(z) @ self.move_embed.weight  # (B, K)
            moves = torch.bmm(feats, u.unsqueeze(-1)).squeeze(-1)
            logits = logits + moves
        return logits.masked_fill(mask == 0, _MASKED), self.value(z).squeeze(-1)

    def values(self, obs: torch.Tensor) -> torch.Tensor:
        """Return the value head's output (B,) alone (no mask or features needed)."""
        return self.value(self.torso(obs)).squeeze(-1)

    def features(self, obs: np.ndarray) -> np.ndarray | None:
        """Return the ``move_features`` this network needs for ``obs`` (None for the plain head),
        followed by the ``endgame_features`` when it was built with ``endgame=True``."""
        if not self.uses_features:
            return None
        f = move_features(obs, self._feature_rules)
        if self.endgame:
            f = np.concatenate([f, endgame_features(obs, self.game_rules)], axis=2)
        return f

    def net_config(self) -> dict[str, Any]:
        """Return the shape description stored in checkpoints (enough to rebuild the module)."""
        return {"hidden": list(self.hidden), "head": self.head, "move_dim": self.move_dim,
                **({"move_hidden": self.move_hidden} if self.head == "moves_mlp" else {}),
                **({"endgame": True} if self.endgame else {}),
                "move_features": list(self.feature_names) if self.uses_features else []}

    @classmethod
    def from_config(cls, net: dict[str, Any], obs_size: int = OBS_SIZE,
                    num_actions: int = NUM_CARDS, rules: Rules | None = None) -> PolicyValueNet:
        """Return a freshly initialised network of the shape ``net`` describes (``rules``: the game's,
        needed by a network with endgame features)."""
        head = net.get("head", "mlp")
        endgame = bool(net.get("endgame", False))
        expected = list(MOVE_FEATURES + (ENDGAME_FEATURES if endgame else ()))
        if head != "mlp" and list(net.get("move_features", expected)) != expected:
            raise ValueError(f"the checkpoint's move features {net.get('move_features')} differ from this "
                             f"code's {expected}")
        return cls(hidden=net["hidden"], obs_size=obs_size, num_actions=num_actions, head=head,
                   move_dim=net.get("move_dim", 16), move_hidden=net.get("move_hidden", 32),
                   endgame=endgame, rules=rules)


def sample_masked(logits: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Return one action per row drawn from softmax(logits) by the Gumbel-max trick on ``uniforms``.

    Masked logits (-1e9) can never win against a legal one (Gumbel noise is below 20 in float32).
    """
    g = -torch.log(-torch.log(uniforms.clamp_min(1e-30)))
    return torch.argmax(logits + g, dim=-1)


class NeuralAgent(Agent):
    """Plays a ``PolicyValueNet``: argmax of the masked policy, or a sample from it, on logits computed
    in fixed point (``agents.nets.fixedpoint``: the same bits on every machine; a tie goes to the lowest
    card)."""

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
        logits, values = self._forward(observations, action_masks)
        return torch.softmax(logits, -1).cpu().numpy(), values.cpu().numpy()

    def _forward(self, observations: np.ndarray, action_masks: np.ndarray
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the network's (masked logits, values) for a batch of observations and masks."""
        obs = np.asarray(observations, np.float32)
        feats = self.net.features(obs)
        return self.net(torch.as_tensor(obs, device=self.device),
                        torch.as_tensor(np.asarray(action_masks, np.int8), device=self.device),
                        None if feats is None else torch.as_tensor(feats, device=self.device))

    @torch.no_grad()
    def act_batch(self, observations, action_masks, state=None):
        """Return the network's action (int64) for each row: argmax, or a sample when not deterministic."""
        masks = np.asarray(action_masks, np.int8)
        if masks.shape[0] == 0:
            return np.zeros(0, np.int64)
        if not (masks > 0).any(axis=1).all():
            raise ValueError("neural agent got a row with no legal action")
        obs = np.asarray(observations, np.float32)
        logits = np.where(masks > 0, policy_logits(self.net, obs, self.net.features(obs)), -np.inf)
        if self.deterministic:
            return np.argmax(logits, axis=1).astype(np.int64)
        # Gumbel-max in float64 on the same seeded uniforms: a flip would need two perturbed logits
        # within float64 rounding of each other
        u = np.maximum(self.rng.random(logits.shape, np.float32).astype(np.float64), 1e-30)
        return np.argmax(logits - np.log(-np.log(u)), axis=1).astype(np.int64)

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, rules: Rules | None = None, seed: int | None = None,
                        device: str | torch.device = "cpu", deterministic: bool = True,
                        name: str | None = None) -> NeuralAgent:
        """Return the agent stored in checkpoint ``path`` (any device), checked against ``rules``.

        ``rules=None`` plays the rules the checkpoint was trained for. Raises FileNotFoundError for a
        missing file and ValueError for a corrupt or incompatible one.
        """
        ckpt = load_checkpoint(path, map_location=device)
        if "endgame_net" in ckpt:
            raise ValueError(f"checkpoint {str(path)!r} is a phase-gated agent (plain and endgame networks): "
                             f"load it with agents.nets.loader.load_checkpoint_agent or the checkpoint: spec")
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
                         f"file of an escoba-env checkpoint ({_load_error(e)})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise ValueError(f"{p!r} is not an escoba-env agent checkpoint (no format={FORMAT!r} entry)")
    missing = [k for k in _REQUIRED if k not in ckpt]
    if missing:
        raise ValueError(f"checkpoint {p!r} is incomplete: missing {missing}")
    if ckpt["format_version"] > FORMAT_VERSION:
        raise ValueError(f"checkpoint {p!r} has format version {ckpt['format_version']}; this code reads "
                         f"up to {FORMAT_VERSION} (upgrade escoba-env)")
    trained = check_compatible(ckpt, None, p)
    want = (_observation.obs_size(trained), trained.num_cards)
    if (ckpt["obs_size"], ckpt["num_actions"]) != want:
        raise ValueError(f"checkpoint {p!r} was trained on observations of size {ckpt['obs_size']} with "
                         f"{ckpt['num_actions']} actions; this escoba_env (version {escoba_env.__version__}) "
                         f"has {want[0]} and {want[1]} for its rules (checkpoint env version "
                         f"{ckpt['env_version']})")
    return ckpt


def _load_error(e: Exception) -> str:
    """Return a one-line account of torch.load's error ``e`` without its advice to load unsafely.

    torch suggests ``weights_only=False`` when a file holds pickled objects: that would run code from
    an untrusted file, so it is never passed on.
    """
    if isinstance(e, pickle.UnpicklingError) or "weights_only" in str(e) or "Weights only" in str(e):
        return (f"{type(e).__name__}: it holds pickled Python objects, which are never loaded; a checkpoint "
                f"holds only tensors and plain values")
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def check_state_shapes(module: nn.Module, state: Any, where: str = "checkpoint") -> None:
    """Raise ValueError unless ``state`` is a dict of tensors with exactly ``module``'s keys and shapes.

    ``module`` may live on the meta device, so a description of a huge network is refused before any
    memory is allocated for it.
    """
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"checkpoint {where!r} has weights that are not a dict of tensors")
    want = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    have = {k: tuple(v.shape) for k, v in state.items()}
    if want != have:
        diff = sorted(k for k in want.keys() | have.keys() if want.get(k) != have.get(k))
        raise ValueError(f"checkpoint {where!r} has weights that do not fit its network description: "
                         + ", ".join(f"{k}: stored {have.get(k)}, described {want.get(k)}" for k in diff[:4]))


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
        rules = Rules.from_dict(ckpt["rules"]) if isinstance(ckpt.get("rules"), dict) else None
        with torch.device("meta"):  # shapes only: a crafted huge description allocates nothing
            shape = PolicyValueNet.from_config(ckpt["net"], ckpt["obs_size"], ckpt["num_actions"], rules)
        check_state_shapes(shape, ckpt["model"], where)
        net = PolicyValueNet.from_config(ckpt["net"], ckpt["obs_size"], ckpt["num_actions"], rules)
        net.load_state_dict(ckpt["model"])
    except (KeyError, TypeError, RuntimeError) as e:
        raise ValueError(f"checkpoint {where!r} has weights that do not fit its network description "
                         f"{ckpt.get('net')!r}: {e}") from e
    return net
