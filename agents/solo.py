"""A network-only 2-player agent: the plain network, and a dedicated endgame network once the stock is empty.

In a 2-player game (no partnerships) the empty stock leaves no hidden card: the observer's unseen
cards are the other hand (``agents.endgame``). ``SoloAgent`` plays the plain PPO network
(``agents.neural``) while the stock lasts and, at those endgame decisions, an ``EndgameNet``: an MLP
that scores each legal *move* (a hand card and the table cards it takes; ``agents.moves``) from the
position it leaves. One forward pass through one of the two networks per decision; no search, no
solver, no rollout at play time.

The endgame net's inputs per move (``endgame_inputs``, ``ENDGAME_INPUTS``; all read from the
observation, and only ever computed at an empty stock, where the unseen cards *are* the other
hand): the observer's hand after the move, the other hand, the table after it, the card played,
the cards it captures (the played card included), and scalars: per side the capture pile's cards
/ 40, oros / 10, sevens / 4 and velo after the move, the escoba difference after it, who captured
last after it (observer / other), whether the move sweeps, whether it is a discard, the two
hand sizes / 3 after it, the same four counts of the cards still in play (hands and table), and
per side and category (cards, oros, sevens, velo) whether its point is already won (more than
half in the pile) and whether it can still be won (with every card in play), and what the other
hand can answer on the table left (the share of its cards that capture, whether one sweeps, the
most cards, oros, sevens and velo one of them could take). It predicts the round's point
difference (observer minus other) after the move with best play by both sides: the solver's
value (``agents.endgame.solve``), learnt by regression (``scripts/train_solo.py``). An action's
value is the best value of the moves that start with it (during a capture choice: of the options
that contain that table card).

Checkpoint: an ``agents.neural`` checkpoint of the plain network (same format, loader and
checks) with two more entries: ``endgame_net`` (``{"hidden": [...], "inputs": N}``) and
``endgame_model`` (its ``state_dict``). ``agents.neural.load_checkpoint_agent`` (the registry's
``checkpoint:PATH``) returns a ``SoloAgent`` for such a file; registry spec ``neural-solo``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from escoba_env.capture import option_summary
from escoba_env.cards import OROS, SEVENS, VELO, mask_values
from escoba_env.observation import PLANE
from escoba_env.rules import Rules

from .base import Agent
from .endgame import endgame_rows
from .moves import Moves, best_per_row, bit, enumerate_moves, masks_to_uint64, move_actions
from .neural import NeuralAgent, build_net, check_state_shapes, checkpoint_dict, load_checkpoint
from .worlds import obs_layout, observation_masks, observation_scalars

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_CARD_BITS = np.arange(40, dtype=np.uint64)
_BIT_BLOCKS = ("hand_after", "other_hand", "table_after", "card", "captured")
_SLOT = ("present", "value", "oro", "seven", "captures", "sweeps", "options", "takes_cards", "takes_oros",
         "takes_sevens", "takes_velo", "surely_takes")
_SCALARS = ("my_cards", "my_oros", "my_sevens", "my_velo", "other_cards", "other_oros", "other_sevens",
            "other_velo", "escoba_diff", "last_me", "last_other", "escoba", "discard", "my_hand_size",
            "other_hand_size", "live_cards", "live_oros", "live_sevens", "live_velo",
            *(f"{who}_{what}_{cat}" for who in ("my", "other") for what in ("has", "can")
              for cat in ("cards", "oros", "sevens", "velo")),
            "reply_captures", "reply_sweeps", "reply_cards", "reply_oros", "reply_sevens", "reply_velo",
            *(f"{who}_card{i}_{what}" for who in ("other", "my") for i in range(3)
              for what in _SLOT))
# A category's point needs strictly more than half of it (cards 21 of 40, oros 6 of 10, sevens 3 of 4,
# the velo): "has" = already in the pile, "can" = still reachable with every card in play.
_NEED = np.array([21, 6, 3, 1], np.float32)
_SIZE = np.array([40, 10, 4, 1], np.float32)
ENDGAME_INPUTS = tuple(f"{b}[{c}]" for b in _BIT_BLOCKS for c in range(40)) + _SCALARS
"""The endgame net's inputs per move, in order: five 40-card blocks, then the scalars."""


def _bits(masks: np.ndarray) -> np.ndarray:
    """Return float32 (M, 40) 0/1 planes of uint64 card masks."""
    return ((masks[:, None] >> _CARD_BITS[None, :]) & _ONE).astype(np.float32)


def _pile(masks: np.ndarray) -> np.ndarray:
    """Return float32 (M, 4): cards / 40, oros / 10, sevens / 4, velo of capture piles."""
    return np.stack([np.bitwise_count(masks) / 40.0, np.bitwise_count(masks & np.uint64(OROS)) / 10.0,
                     np.bitwise_count(masks & np.uint64(SEVENS)) / 4.0,
                     (masks & np.uint64(1 << VELO)) != 0], axis=1).astype(np.float32)


def _replies(hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 6) of what a hand can answer on each table left: how many of its cards
    capture / 3, whether one sweeps, and the most cards / 40, oros / 10, sevens / 4 and velo one
    card could take (its own card plus every card in any of its options: an upper bound)."""
    m = len(hands)
    cards = np.arange(40)
    held = ((hands[:, None] >> cards.astype(np.uint64)[None, :]) & _ONE).astype(bool)
    r, c = np.nonzero(held)
    count, union, _ = option_summary(tables[r], 15 - (c // 4 + 1))
    took = np.where(count > 0, union | bit(c), _ZERO)
    sweep = (count > 0) & (mask_values(tables[r]) + c // 4 + 1 == 15)
    out = np.zeros((m, 6), np.float32)
    np.add.at(out[:, 0], r, (count > 0) / 3.0)
    np.maximum.at(out[:, 1], r, sweep.astype(np.float32))
    pile = _pile(took)
    for j in range(4):
        np.maximum.at(out[:, 2 + j], r, pile[:, j])
    return out


def _slots(hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 3 * len(_SLOT)): for each card of the hand (up to 3, by id), what it is and
    what it can take from the table (``_SLOT``: value / 10, oro, seven, whether it captures or
    sweeps, its option count / 4, the cards / 10, oros / 4, sevens / 4 and velo of the union of its
    options, the cards / 10 in all of them)."""
    m = len(hands)
    held = ((hands[:, None] >> _CARD_BITS[None, :]) & _ONE).astype(bool)
    r, c = np.nonzero(held)
    slot = np.arange(len(r)) - np.searchsorted(r, r)  # rank of the card in its hand
    keep = slot < 3
    r, c, slot = r[keep], c[keep], slot[keep]
    count, union, inter = option_summary(tables[r], 15 - (c // 4 + 1))
    sweep = (count > 0) & (mask_values(tables[r]) + c // 4 + 1 == 15)
    pile = _pile(union) * np.array([4.0, 2.5, 1.0, 1.0], np.float32)  # cards / 10, oros / 4
    f = np.column_stack([np.ones(len(r)), (c // 4 + 1) / 10.0, c % 4 == 0, c // 4 == 6, count > 0, sweep,
                         np.minimum(count, 4) / 4.0, pile, np.bitwise_count(inter) / 10.0]).astype(np.float32)
    out = np.zeros((m, 3, len(_SLOT)), np.float32)
    out[r, slot] = f
    return out.reshape(m, -1)


def check_endgame_rules(rules: Rules) -> None:
    """Raise ValueError unless the endgame net can read games of ``rules`` (2 players, no jokers)."""
    if rules.num_players != 2 or rules.partnerships or rules.jokers:
        raise ValueError(f"the endgame network plays 2-player games without jokers, not {rules}")


def endgame_inputs(obs: np.ndarray, rules: Rules, masks: np.ndarray) -> tuple[Moves, np.ndarray, np.ndarray]:
    """Return ``(moves, inputs, member)`` of endgame observations (``agents.endgame.endgame_rows``).

    ``inputs`` float32 (M, len(ENDGAME_INPUTS)) describes each legal move (module doc); ``member``
    bool (M, 40) says which actions each move can start with: its card, or during a capture choice
    the table cards of its option that are legal now (``masks``: the int8 (K, 40) action masks).
    Raises ValueError for other positions or rules.
    """
    check_endgame_rules(rules)
    obs = np.asarray(obs, np.float32)
    if obs.ndim != 2 or obs.shape[1] != obs_layout(rules).size:
        raise ValueError(f"observations must have shape (K, {obs_layout(rules).size}), got {obs.shape}")
    if not endgame_rows(obs, rules).all():
        raise ValueError("endgame_inputs needs 2-player observations with an empty stock")
    planes = observation_masks(obs, rules)
    sc = observation_scalars(obs, rules)
    moves = enumerate_moves(obs, rules, planes)
    r, card, opt = moves.row, moves.card, moves.option
    p = planes[r]
    hand, table, other = p[:, PLANE["hand"]], p[:, PLANE["table"]], p[:, PLANE["unseen"]]
    mine, theirs = p[:, PLANE["piles"]], p[:, PLANE["piles"] + 1]
    cbit = bit(card)
    took = opt != _ZERO
    hand_after = hand & ~cbit
    table_after = np.where(took, table & ~opt, table | cbit)
    captured = np.where(took, opt | cbit, _ZERO)
    escoba = took & (table_after == _ZERO)
    esc = sc["escobas"][r]
    last = np.where(took, 0, sc["last_capturer"][r])
    n_hand = np.bitwise_count(hand_after).astype(np.float32) / 3.0
    n_other = np.bitwise_count(other).astype(np.float32) / 3.0
    my_pile, other_pile = _pile(mine | captured), _pile(theirs)
    live = _pile(hand_after | other | table_after)
    my_n, other_n, live_n = my_pile * _SIZE, other_pile * _SIZE, live * _SIZE
    scal = np.column_stack([my_pile, other_pile, esc[:, 0] + escoba - esc[:, 1],
                            last == 0, last == 1, escoba, ~took, n_hand, n_other, live,
                            my_n >= _NEED, my_n + live_n >= _NEED, other_n >= _NEED,
                            other_n + live_n >= _NEED, _replies(other, table_after),
                            _slots(other, table_after), _slots(hand_after, table_after)]).astype(np.float32)
    x = np.concatenate([_bits(hand_after), _bits(other), _bits(table_after), _bits(cbit), _bits(captured),
                        scal], axis=1)
    phase = sc["capture_phase"][r]
    legal = masks_to_uint64(masks)[r]
    member_mask = np.where(phase, opt & legal, cbit)
    return moves, x, _bits(member_mask) > 0


class EndgameNet(nn.Module):
    """MLP from a move's ``ENDGAME_INPUTS`` to the round's point difference after it (best play)."""

    def __init__(self, hidden: Sequence[int] = (256, 256)):
        super().__init__()
        self.hidden = [int(h) for h in hidden]
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(f"hidden must be positive layer widths, got {list(hidden)}")
        layers: list[nn.Module] = []
        width = len(ENDGAME_INPUTS)
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the predicted value (M,) of each move's inputs (M, len(ENDGAME_INPUTS))."""
        return self.mlp(x).squeeze(-1)

    def net_config(self) -> dict[str, Any]:
        """Return the shape description stored in checkpoints."""
        return {"hidden": list(self.hidden), "inputs": len(ENDGAME_INPUTS)}


def action_values(move_values: torch.Tensor, row: np.ndarray, member: np.ndarray, k: int, w: int = 40
                  ) -> torch.Tensor:
    """Return (k, w) action values: the best value of the moves (of observation ``row``) that start
    with each action (``member``); -inf for an action no move starts with."""
    m, a = np.nonzero(member)
    flat = torch.as_tensor(row[m] * w + a)
    out = torch.full((k * w,), -torch.inf, dtype=move_values.dtype)
    out = out.scatter_reduce(0, flat, move_values[torch.as_tensor(m)], reduce="amax", include_self=True)
    return out.view(k, w)


class SoloAgent(Agent):
    """Plays ``plain`` (a NeuralAgent) while the stock lasts and ``endgame`` (an EndgameNet) after it."""

    def __init__(self, plain: NeuralAgent, endgame: EndgameNet, rules: Rules | None = None,
                 seed: int | None = None, name: str = "neural-solo"):
        rules = plain.rules if rules is None else rules
        check_endgame_rules(rules)
        if plain.rules != rules:
            raise ValueError(f"the plain network plays {plain.rules}, not {rules}")
        self.plain, self.endgame = plain, endgame.eval()
        self.name = name
        super().__init__(rules, seed)

    @torch.no_grad()
    def act_batch(self, observations, action_masks, state=None):
        """Return one action per row: the plain network's, or the endgame network's at an empty stock."""
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks, np.int8)
        if obs.ndim != 2 or obs.shape[1] != obs_layout(self.rules).size or masks.shape != (len(obs), 40):
            raise ValueError(f"observations (K, {obs_layout(self.rules).size}) and masks (K, 40) expected, "
                             f"got {obs.shape} and {masks.shape}")
        if not (masks > 0).any(axis=1).all():
            raise ValueError("neural-solo got a row with no legal action")
        actions = np.zeros(len(obs), np.int64)
        late = endgame_rows(obs, self.rules)
        early = np.flatnonzero(~late)
        if early.size:
            actions[early] = self.plain.act_batch(obs[early], masks[early])
        rows = np.flatnonzero(late)
        if rows.size:
            moves, x, _ = endgame_inputs(obs[rows], self.rules, masks[rows])
            v = self.endgame(torch.from_numpy(x)).numpy()
            chosen = best_per_row(moves, v)
            actions[rows] = move_actions(moves, chosen, obs[rows], masks[rows])
        return actions

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, rules: Rules | None = None, seed: int | None = None,
                        device: str = "cpu", deterministic: bool = True, name: str | None = None
                        ) -> SoloAgent:
        """Return the agent of a phase-gated checkpoint (FileNotFoundError / ValueError as agents.neural)."""
        ckpt = load_checkpoint(path, map_location="cpu")
        plain = NeuralAgent(build_net(ckpt, str(path)), _rules_of(ckpt, rules, str(path)), seed=seed,
                            device=device, deterministic=deterministic)
        return cls(plain, build_endgame_net(ckpt, str(path)), seed=seed,
                   name=name if name is not None else f"checkpoint:{path}")


def _rules_of(ckpt: dict[str, Any], rules: Rules | None, where: str) -> Rules:
    """Return the checkpoint's rules, checked against ``rules`` (ValueError on a difference)."""
    from .neural import check_compatible

    return check_compatible(ckpt, rules, where)


def build_endgame_net(ckpt: dict[str, Any], where: str = "checkpoint") -> EndgameNet:
    """Return the endgame network stored in ``ckpt``; ValueError if it is missing or does not fit."""
    desc = ckpt.get("endgame_net")
    if not isinstance(desc, dict) or "endgame_model" not in ckpt:
        raise ValueError(f"checkpoint {where!r} holds no endgame network (endgame_net, endgame_model)")
    if desc.get("inputs") != len(ENDGAME_INPUTS):
        raise ValueError(f"checkpoint {where!r}: its endgame network reads {desc.get('inputs')} inputs, "
                         f"this code makes {len(ENDGAME_INPUTS)}")
    try:
        with torch.device("meta"):
            shape = EndgameNet(desc["hidden"])
        check_state_shapes(shape, ckpt["endgame_model"], where)
        net = EndgameNet(desc["hidden"])
        net.load_state_dict(ckpt["endgame_model"])
    except (KeyError, TypeError, RuntimeError) as e:
        raise ValueError(f"checkpoint {where!r} has an endgame network that does not fit its description "
                         f"{desc!r}: {e}") from e
    return net


def solo_checkpoint_dict(plain: NeuralAgent, endgame: EndgameNet, **extra: Any) -> dict[str, Any]:
    """Return the checkpoint dict of a phase-gated agent (the plain network's, plus the endgame net)."""
    weights = {k: v.detach().cpu().clone() for k, v in endgame.state_dict().items()}
    return checkpoint_dict(plain.net, plain.rules, endgame_net=endgame.net_config(), endgame_model=weights,
                           **extra)
