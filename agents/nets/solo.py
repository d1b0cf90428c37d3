"""A network-only 2-player agent: a midgame network (or the plain one) while the stock lasts, and a
dedicated endgame network once it is empty.

In a 2-player game (no partnerships) the empty stock leaves no hidden card: the observer's unseen
cards are the other hand (``agents.heuristic.endgame``). ``SoloAgent`` plays, while the stock lasts, either
the plain PPO network (``agents.nets.neural``) or, when the checkpoint holds one, a *midgame* network, and
at the endgame decisions an ``EndgameNet``. Both move networks are MLPs that score each legal
*move* (a hand card and the table cards it takes; ``agents.moves``) from the position it leaves.
One forward pass through one network per decision; no search, no solver, no rollout at play time.

The midgame net's inputs per move (``midgame_inputs``, ``MIDGAME_INPUTS``) are those of the endgame
net below with the unseen cards (the other hand and the stock together, which the observer cannot
tell apart) in place of the other hand, the other hand's size / 3 and the stock's size / 30, and,
in place of the other hand's replies and card slots, what the unseen cards can answer on the table
left (``hidden_replies``: the share of them that capture and that sweep, the chance that a hand of
the other hand's size drawn from them holds at least one of each, and the most cards, oros,
sevens and velo one of them could take). It predicts the round's point difference after the move
as ``search`` estimates it (mean greedy-rollout values over sampled deals of the unseen cards),
learnt by regression from ``python -m agents.training.distill --teacher search --values`` labels
(``agents.training.solo_fit --phase midgame``).
A midgame network may read a larger input set instead (``MIDGAME_SETS``; the checkpoint's
``midgame_inputs`` names it): ``"answers"`` adds what each unseen card would take on the table the
move leaves (``agents.nets.move_inputs.answer_blocks``). The per-move inputs both phases share with the
larger tables' move networks are in ``agents.nets.move_inputs``.

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
value (``agents.heuristic.endgame.solve``), learnt by regression (``agents.training.solo_fit``). An action's
value is the best value of the moves that start with it (during a capture choice: of the options
that contain that table card).

Checkpoint: an ``agents.nets.neural`` checkpoint of the plain network (same format, loader and
checks) with two more entries, ``endgame_net`` (``{"hidden": [...], "inputs": N}``) and
``endgame_model`` (its ``state_dict``), and optionally ``midgame_net`` and ``midgame_model``.
``agents.nets.loader.load_checkpoint_agent`` (the registry's ``checkpoint:PATH``) returns a
``SoloAgent`` for such a file; registry spec ``neural-solo``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from itertools import permutations
from typing import Any

import numpy as np
import torch
from torch import nn

from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..heuristic.endgame import endgame_rows
from ..moves import Moves, best_per_row, move_actions
from ..worlds import obs_layout
from .fixedpoint import move_values as fixed_move_values
from .move_inputs import (
    ANSWER_BLOCKS,
    SLOT,
    answer_blocks,
    card_answers,
    card_bits,
    card_slots,
    hidden_replies,
    most_taken,
    pile_shares,
    positions_after_moves,
)
from .neural import (
    NeuralAgent,
    build_net,
    check_compatible,
    check_state_shapes,
    checkpoint_dict,
    load_checkpoint,
)
from .shipped import SOLO_CHECKPOINT, package_file

_BIT_BLOCKS = ("hand_after", "other_hand", "table_after", "card", "captured")
_SCALARS = ("my_cards", "my_oros", "my_sevens", "my_velo", "other_cards", "other_oros", "other_sevens",
            "other_velo", "escoba_diff", "last_me", "last_other", "escoba", "discard", "my_hand_size",
            "other_hand_size", "live_cards", "live_oros", "live_sevens", "live_velo",
            *(f"{who}_{what}_{cat}" for who in ("my", "other") for what in ("has", "can")
              for cat in ("cards", "oros", "sevens", "velo")),
            "reply_captures", "reply_sweeps", "reply_cards", "reply_oros", "reply_sevens", "reply_velo",
            *(f"{who}_card{i}_{what}" for who in ("other", "my") for i in range(3)
              for what in SLOT))
# A category's point needs strictly more than half of it (cards 21 of 40, oros 6 of 10, sevens 3 of 4,
# the velo): "has" = already in the pile, "can" = still reachable with every card in play.
_NEED = np.array([21, 6, 3, 1], np.float32)
_SIZE = np.array([40, 10, 4, 1], np.float32)
ENDGAME_INPUTS = tuple(f"{b}[{c}]" for b in _BIT_BLOCKS for c in range(40)) + _SCALARS
"""The endgame net's inputs per move, in order: five 40-card blocks, then the scalars."""
_MID_SCALARS = ("my_cards", "my_oros", "my_sevens", "my_velo", "other_cards", "other_oros", "other_sevens",
                "other_velo", "escoba_diff", "last_me", "last_other", "escoba", "discard", "my_hand_size",
                "other_hand_size", "stock_size", "live_cards", "live_oros", "live_sevens", "live_velo",
                *(f"{who}_{what}_{cat}" for who in ("my", "other") for what in ("has", "can")
                  for cat in ("cards", "oros", "sevens", "velo")),
                "unseen_capture_share", "unseen_sweep_share", "p_other_captures", "p_other_sweeps",
                "reply_cards", "reply_oros", "reply_sevens", "reply_velo",
                *(f"my_card{i}_{what}" for i in range(3) for what in SLOT))
MIDGAME_INPUTS = tuple(f"{b}[{c}]" for b in ("hand_after", "unseen", "table_after", "card", "captured")
                       for c in range(40)) + _MID_SCALARS
"""The midgame net's inputs per move (``midgame_inputs``), in order: five 40-card blocks, then the scalars."""
MIDGAME_ANSWER_INPUTS = (MIDGAME_INPUTS[:200] + tuple(f"{b}[{c}]" for b in ANSWER_BLOCKS for c in range(40))
                         + MIDGAME_INPUTS[200:])
"""The midgame net's inputs with the answer inputs (``midgame_inputs(..., inputs="answers")``): the five
40-card blocks of ``MIDGAME_INPUTS``, the four ``ANSWER_BLOCKS``, then its scalars."""
MIDGAME_SETS = ("plain", "answers")
"""The input sets a midgame network may read (a checkpoint's ``midgame_inputs``; absent: ``"plain"``)."""
_MIDGAME_NAMES = {"plain": MIDGAME_INPUTS, "answers": MIDGAME_ANSWER_INPUTS}


def _replies(hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 6) of what a hand can answer on each table left: how many of its cards
    capture / 3, whether one sweeps, and the most cards / 40, oros / 10, sevens / 4 and velo one
    card could take (``card_answers``)."""
    r, caps, sweep, pile = card_answers(hands, tables)
    out = np.zeros((len(hands), 6), np.float32)
    np.add.at(out[:, 0], r, caps / 3.0)
    np.maximum.at(out[:, 1], r, sweep.astype(np.float32))
    most_taken(out[:, 2:], r, pile)
    return out


def check_endgame_rules(rules: Rules) -> None:
    """Raise ValueError unless the endgame net can read games of ``rules`` (2 players, no jokers)."""
    if rules.num_players != 2 or rules.partnerships or rules.jokers:
        raise ValueError(f"the endgame network plays 2-player games without jokers, not {rules}")


def endgame_net_values(rules: Rules, path: str | os.PathLike | None = None):
    """Return ``values(obs, masks)``: per endgame observation, the value of its best move as the
    endgame network of ``path`` (default: the shipped ``neural-solo``) scores it (float64 (K,)), the
    leaf value of ``search:leaf=net``."""
    check_endgame_rules(rules)
    if path is None:
        path = package_file(SOLO_CHECKPOINT)
    net = build_endgame_net(load_checkpoint(path, map_location="cpu"), str(path)).eval()

    @torch.no_grad()
    def values(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        moves, x, _ = endgame_inputs(obs, rules, masks)
        return np.maximum.reduceat(fixed_move_values(net, x).numpy(), moves.start[:-1])

    return values


def endgame_inputs(obs: np.ndarray, rules: Rules, masks: np.ndarray) -> tuple[Moves, np.ndarray, np.ndarray]:
    """Return ``(moves, inputs, member)`` of endgame observations (``agents.heuristic.endgame.endgame_rows``).

    ``inputs`` float32 (M, len(ENDGAME_INPUTS)) describes each legal move (module doc); ``member``
    bool (M, 40) says which actions each move can start with: its card, or during a capture choice
    the table cards of its option that are legal now (``masks``: the int8 (K, 40) action masks).
    Raises ValueError for other positions or rules.
    """
    check_endgame_rules(rules)
    obs = np.asarray(obs, np.float32)
    if obs.ndim == 2 and obs.shape[1] == obs_layout(rules).size and not endgame_rows(obs, rules).all():
        raise ValueError("endgame_inputs needs 2-player observations with an empty stock")
    a = _after_moves(obs, rules, masks)
    other, hand_after, table_after = a["unseen"], a["hand_after"], a["table_after"]
    n_other = np.bitwise_count(other).astype(np.float32) / 3.0
    live = pile_shares(hand_after | other | table_after)
    scal = np.column_stack([*_common_scalars(a), n_other, *_category_flags(a, live),
                            _replies(other, table_after), card_slots(other, table_after),
                            card_slots(hand_after, table_after)]).astype(np.float32)
    blocks = [card_bits(m) for m in (hand_after, other, table_after, a["card_bit"], a["captured"])]
    x = np.concatenate([*blocks, scal], axis=1)
    return a["moves"], x, a["member"]


def _after_moves(obs: np.ndarray, rules: Rules, masks: np.ndarray) -> dict[str, Any]:
    """Return ``positions_after_moves`` of 2-player observations with what ``neural-solo`` adds: both
    capture ``piles`` after the move (``my_pile``, ``other_pile``), ``escoba_diff``, ``stock`` (cards
    left in the stock) and ``other_hand`` (its size)."""
    a = positions_after_moves(obs, rules, masks)
    p, sc = a["planes"], a["scalars"]
    esc = sc["escobas"]
    return {**a, "my_pile": p[:, PLANE["piles"]] | a["captured"], "other_pile": p[:, PLANE["piles"] + 1],
            "escoba_diff": esc[:, 0] + a["escoba"] - esc[:, 1], "stock": sc["stock"],
            "other_hand": sc["hand_sizes"][:, 1]}


def _common_scalars(a: dict[str, Any]) -> list[np.ndarray]:
    """Return the scalars both phases share: the piles, escoba difference, last capturer, sweep,
    discard, the observer's hand size / 3 after the move (the live cards' counts come after)."""
    n_hand = np.bitwise_count(a["hand_after"]).astype(np.float32) / 3.0
    return [pile_shares(a["my_pile"]), pile_shares(a["other_pile"]), a["escoba_diff"], a["last"] == 0,
            a["last"] == 1, a["escoba"], ~a["took"], n_hand]


def _category_flags(a: dict[str, Any], live: np.ndarray) -> list[np.ndarray]:
    """Return the live cards' counts and, per side and category, whether its point is won / reachable."""
    my_n, other_n = pile_shares(a["my_pile"]) * _SIZE, pile_shares(a["other_pile"]) * _SIZE
    live_n = live * _SIZE
    return [live, my_n >= _NEED, my_n + live_n >= _NEED, other_n >= _NEED, other_n + live_n >= _NEED]


def midgame_inputs(obs: np.ndarray, rules: Rules, masks: np.ndarray, inputs: str = "plain"
                   ) -> tuple[Moves, np.ndarray, np.ndarray]:
    """Return ``(moves, inputs, member)`` of 2-player observations while the stock lasts.

    Like ``endgame_inputs`` (module doc), but the observer's unseen cards (the other hand and the
    stock together) replace the other hand, with the other hand's size / 3, the stock's size / 30
    and ``hidden_replies`` in place of the other hand's replies and card slots
    (``MIDGAME_INPUTS``). ``inputs`` (``MIDGAME_SETS``): ``"answers"``, the four
    ``agents.nets.move_inputs.answer_blocks`` follow the five card blocks (``MIDGAME_ANSWER_INPUTS``).
    Raises ValueError for endgame positions, other rules or an unknown input set.
    """
    check_endgame_rules(rules)
    midgame_input_names(inputs)
    obs = np.asarray(obs, np.float32)
    if obs.ndim == 2 and obs.shape[1] == obs_layout(rules).size and endgame_rows(obs, rules).any():
        raise ValueError("midgame_inputs needs 2-player observations with cards left in the stock")
    a = _after_moves(obs, rules, masks)
    unseen, hand_after, table_after = a["unseen"], a["hand_after"], a["table_after"]
    live = pile_shares(hand_after | unseen | table_after)
    scal = np.column_stack([*_common_scalars(a), a["other_hand"] / 3.0, a["stock"] / 30.0,
                            *_category_flags(a, live), hidden_replies(unseen, a["other_hand"], table_after),
                            card_slots(hand_after, table_after)]).astype(np.float32)
    blocks = [card_bits(m) for m in (hand_after, unseen, table_after, a["card_bit"], a["captured"])]
    if inputs != "plain":
        blocks.append(answer_blocks(unseen, table_after))
    return a["moves"], np.concatenate([*blocks, scal], axis=1), a["member"]


def midgame_input_names(inputs: str = "plain") -> tuple[str, ...]:
    """Return the names of a midgame network's inputs of the set ``inputs`` (``MIDGAME_SETS``);
    ValueError for an unknown set."""
    if inputs not in MIDGAME_SETS:
        raise ValueError(f"unknown midgame inputs {inputs!r}; expected one of {', '.join(MIDGAME_SETS)}")
    return _MIDGAME_NAMES[inputs]


class EndgameNet(nn.Module):
    """MLP from a move's inputs (``ENDGAME_INPUTS``, or ``MIDGAME_INPUTS`` with ``inputs`` set to their
    number) to the round's point difference after it."""

    def __init__(self, hidden: Sequence[int] = (256, 256), inputs: int = len(ENDGAME_INPUTS)):
        super().__init__()
        self.hidden = [int(h) for h in hidden]
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(f"hidden must be positive layer widths, got {list(hidden)}")
        self.inputs = int(inputs)
        layers: list[nn.Module] = []
        width = self.inputs
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the predicted value (M,) of each move's inputs (M, inputs)."""
        return self.mlp(x).squeeze(-1)

    def net_config(self) -> dict[str, Any]:
        """Return the shape description stored in checkpoints."""
        return {"hidden": list(self.hidden), "inputs": self.inputs}


@cache
def suit_permutations(n: int, blocks: int = 5) -> np.ndarray:
    """Return (6, n) column orders of a move network's ``n`` inputs that permute copas, espadas and
    bastos in the ``blocks`` 40-card blocks that start its inputs (five in ``ENDGAME_INPUTS``,
    ``MIDGAME_INPUTS`` and ``agents.nets.tablenet.table_input_names``; nine in
    ``agents.nets.tablenet.last_input_names`` with ``answers``); the first is the identity.

    Only oros is special in scoring (and the velo is an oro), so these permutations leave every value
    unchanged. Every other input is already the same for suit-permuted positions: the piles, flags and
    replies count cards by value and oros, and the card slots list two cards of one value in different
    plain suits with identical entries. Training permutes each minibatch by one of them at random
    (``agents.training.solo_fit``); ``symmetric_values`` averages a network over all six."""
    out = []
    for p in permutations((1, 2, 3)):
        suit = np.array((0, *p))
        cards = 4 * (np.arange(40) // 4) + suit[np.arange(40) % 4]
        cols = np.arange(n)
        for b in range(blocks):
            cols[40 * b: 40 * b + 40] = 40 * b + cards
        out.append(cols)
    return np.array(out)


def symmetric_values(net: nn.Module, x: torch.Tensor, blocks: int = 5) -> torch.Tensor:
    """Return (M,) the mean of ``net``'s values of the moves ``x`` (M, n) over the six permutations of
    the plain suits (``suit_permutations``, ``blocks`` 40-card blocks): one forward pass on 6M rows.

    The result is the same for a position and any suit-permuted copy of it (up to float rounding),
    which a network trained on permuted minibatches only approximates; the average also cancels part
    of the network's own error."""
    perms = torch.as_tensor(suit_permutations(x.shape[1], blocks))
    return net(x[:, perms].reshape(-1, x.shape[1])).reshape(len(x), len(perms)).mean(1)


def scores(net: nn.Module, x: np.ndarray) -> np.ndarray:
    """Return float64 (M,) the values a move network gives the moves ``x``: in fixed point for an
    ``EndgameNet`` (``agents.nets.fixedpoint``, the same on every machine), else ``net``'s own (a callable an
    experiment puts in its place)."""
    if isinstance(net, EndgameNet):
        return fixed_move_values(net, x).numpy()
    return np.asarray(net(torch.from_numpy(x)), np.float64)


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
    """Plays ``plain`` (a NeuralAgent), or ``midgame`` (an EndgameNet on the midgame input set
    ``midgame_inputs``, ``MIDGAME_SETS``) when given, while the stock lasts, and ``endgame`` (an
    EndgameNet) after it."""

    def __init__(self, plain: NeuralAgent, endgame: EndgameNet, rules: Rules | None = None,
                 seed: int | None = None, name: str = "neural-solo", midgame: EndgameNet | None = None,
                 midgame_inputs: str = "plain"):
        rules = plain.rules if rules is None else rules
        check_endgame_rules(rules)
        if plain.rules != rules:
            raise ValueError(f"the plain network plays {plain.rules}, not {rules}")
        need = len(self.midgame_names(midgame_inputs))
        if midgame is not None and midgame.net_config()["inputs"] != need:
            raise ValueError(f"the midgame network reads {midgame.net_config()['inputs']} inputs; the "
                             f"{midgame_inputs!r} midgame inputs are {need}")
        self.plain, self.endgame = plain, endgame.eval()
        self.midgame = None if midgame is None else midgame.eval()
        self.midgame_inputs = midgame_inputs
        self.name = name
        super().__init__(rules, seed)

    @staticmethod
    def midgame_names(inputs: str) -> tuple[str, ...]:
        """Return the input names of the midgame input set ``inputs`` (a subclass may add sets)."""
        return midgame_input_names(inputs)

    def midgame_features(self, obs: np.ndarray, rules: Rules, masks: np.ndarray
                         ) -> tuple[Moves, np.ndarray, np.ndarray]:
        """Return ``(moves, inputs, member)`` of the midgame network's input set (``midgame_inputs``)."""
        return midgame_inputs(obs, rules, masks, inputs=self.midgame_inputs)

    @staticmethod
    def _play(net: EndgameNet, make_inputs, obs: np.ndarray, masks: np.ndarray, rules: Rules, **how
              ) -> np.ndarray:
        """Return the action of each row: the first action of its best-scored move."""
        moves, x, _ = make_inputs(obs, rules, masks, **how)
        chosen = best_per_row(moves, scores(net, x))
        return move_actions(moves, chosen, obs, masks)

    @torch.no_grad()
    def act_batch(self, observations, action_masks, state=None):
        """Return one action per row: the plain (or midgame) network's, or the endgame network's at an
        empty stock."""
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
        if early.size and self.midgame is None:
            actions[early] = self.plain.act_batch(obs[early], masks[early])
        elif early.size:
            actions[early] = self._play(self.midgame, self.midgame_features, obs[early], masks[early],
                                        self.rules)
        rows = np.flatnonzero(late)
        if rows.size:
            actions[rows] = self._play(self.endgame, endgame_inputs, obs[rows], masks[rows], self.rules)
        return actions

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, rules: Rules | None = None, seed: int | None = None,
                        device: str = "cpu", deterministic: bool = True, name: str | None = None
                        ) -> SoloAgent:
        """Return the agent of a phase-gated checkpoint (FileNotFoundError / ValueError as
        agents.nets.neural)."""
        ckpt = load_checkpoint(path, map_location="cpu")
        plain = NeuralAgent(build_net(ckpt, str(path)), _rules_of(ckpt, rules, str(path)), seed=seed,
                            device=device, deterministic=deterministic)
        inputs = ckpt.get("midgame_inputs", "plain")
        try:
            need = len(cls.midgame_names(inputs))
        except ValueError as e:
            raise ValueError(f"checkpoint {str(path)!r}: {e}") from e
        mid = build_endgame_net(ckpt, str(path), "midgame", need=need) if "midgame_net" in ckpt else None
        return cls(plain, build_endgame_net(ckpt, str(path)), seed=seed, midgame=mid, midgame_inputs=inputs,
                   name=name if name is not None else f"checkpoint:{path}")


def _rules_of(ckpt: dict[str, Any], rules: Rules | None, where: str) -> Rules:
    """Return the checkpoint's rules, checked against ``rules`` (ValueError on a difference)."""
    return check_compatible(ckpt, rules, where)


def build_endgame_net(ckpt: dict[str, Any], where: str = "checkpoint", phase: str = "endgame",
                      need: int | None = None) -> EndgameNet:
    """Return the ``phase`` ("endgame" or "midgame"; or another entry, such as ``agents.nets.tablenet``'s
    "move", with its input count ``need``) network stored in ``ckpt``; ValueError if it is missing or
    does not fit."""
    desc, key = ckpt.get(f"{phase}_net"), f"{phase}_model"
    if need is None:
        need = len(ENDGAME_INPUTS if phase == "endgame" else MIDGAME_INPUTS)
    if not isinstance(desc, dict) or key not in ckpt:
        raise ValueError(f"checkpoint {where!r} holds no {phase} network ({phase}_net, {key})")
    if desc.get("inputs") != need:
        raise ValueError(f"checkpoint {where!r}: its {phase} network reads {desc.get('inputs')} inputs, "
                         f"this code makes {need}")
    try:
        with torch.device("meta"):
            shape = EndgameNet(desc["hidden"], need)
        check_state_shapes(shape, ckpt[key], where)
        net = EndgameNet(desc["hidden"], need)
        net.load_state_dict(ckpt[key])
    except (KeyError, TypeError, RuntimeError) as e:
        raise ValueError(f"checkpoint {where!r} has a {phase} network that does not fit its description "
                         f"{desc!r}: {e}") from e
    return net


def solo_checkpoint_dict(plain: NeuralAgent, endgame: EndgameNet, midgame: EndgameNet | None = None,
                         **extra: Any) -> dict[str, Any]:
    """Return the checkpoint dict of a phase-gated agent (the plain network's, plus the endgame net and,
    when given, the midgame net)."""
    def weights(net: EndgameNet) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}

    if midgame is not None:
        extra.update(midgame_net=midgame.net_config(), midgame_model=weights(midgame))
    return checkpoint_dict(plain.net, plain.rules, endgame_net=endgame.net_config(),
                           endgame_model=weights(endgame), **extra)
