"""A network-only 2-player agent: a midgame network (or the plain one) while the stock lasts, and a
dedicated endgame network once it is empty.

In a 2-player game (no partnerships) the empty stock leaves no hidden card: the observer's unseen
cards are the other hand (``agents.endgame``). ``SoloAgent`` plays, while the stock lasts, either the
plain PPO network (``agents.neural``) or, when the checkpoint holds one, a *midgame* network, and
at the endgame decisions an ``EndgameNet``. Both move networks are MLPs that score each legal
*move* (a hand card and the table cards it takes; ``agents.moves``) from the position it leaves.
One forward pass through one network per decision; no search, no solver, no rollout at play time.

The midgame net's inputs per move (``midgame_inputs``, ``MIDGAME_INPUTS``) are those of the endgame
net below with the unseen cards (the other hand and the stock together, which the observer cannot
tell apart) in place of the other hand, the other hand's size / 3 and the stock's size / 30, and,
in place of the other hand's replies and card slots, what the unseen cards can answer on the table
left (``_hidden_replies``: the share of them that capture and that sweep, the chance that a hand of
the other hand's size drawn from them holds at least one of each, and the most cards, oros,
sevens and velo one of them could take). It predicts the round's point difference after the move
as ``search`` estimates it (mean greedy-rollout values over sampled deals of the unseen cards),
learnt by regression from ``python -m agents.distill --teacher search --values`` labels
(``agents.training.solo_fit --phase midgame``).
A midgame network may read one of two larger input sets instead (``MIDGAME_SETS``; the checkpoint's
``midgame_inputs`` names it): ``"answers"`` adds what each unseen card would take on the table the
move leaves (``answer_blocks``), and ``"playout"`` adds to those, for each unseen card played there as
the ``greedy`` agent would play it, what the observer's remaining hand could then take
(``counter_blocks``).

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
value (``agents.endgame.solve``), learnt by regression (``agents.training.solo_fit``). An action's
value is the best value of the moves that start with it (during a capture choice: of the options
that contain that table card).

Checkpoint: an ``agents.neural`` checkpoint of the plain network (same format, loader and
checks) with two more entries, ``endgame_net`` (``{"hidden": [...], "inputs": N}``) and
``endgame_model`` (its ``state_dict``), and optionally ``midgame_net`` and ``midgame_model``.
``agents.loader.load_checkpoint_agent`` (the registry's ``checkpoint:PATH``) returns a
``SoloAgent`` for such a file; registry spec ``neural-solo``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
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
from .expert import hold_probability
from .greedy import GREEDY_WEIGHTS
from .moves import (
    Moves,
    best_per_row,
    bit,
    card_weights,
    enumerate_moves,
    masks_to_uint64,
    move_actions,
    subset_options,
)
from .neural import (
    NeuralAgent,
    build_net,
    check_compatible,
    check_state_shapes,
    checkpoint_dict,
    load_checkpoint,
)
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
_MID_SCALARS = ("my_cards", "my_oros", "my_sevens", "my_velo", "other_cards", "other_oros", "other_sevens",
                "other_velo", "escoba_diff", "last_me", "last_other", "escoba", "discard", "my_hand_size",
                "other_hand_size", "stock_size", "live_cards", "live_oros", "live_sevens", "live_velo",
                *(f"{who}_{what}_{cat}" for who in ("my", "other") for what in ("has", "can")
                  for cat in ("cards", "oros", "sevens", "velo")),
                "unseen_capture_share", "unseen_sweep_share", "p_other_captures", "p_other_sweeps",
                "reply_cards", "reply_oros", "reply_sevens", "reply_velo",
                *(f"my_card{i}_{what}" for i in range(3) for what in _SLOT))
MIDGAME_INPUTS = tuple(f"{b}[{c}]" for b in ("hand_after", "unseen", "table_after", "card", "captured")
                       for c in range(40)) + _MID_SCALARS
"""The midgame net's inputs per move (``midgame_inputs``), in order: five 40-card blocks, then the scalars."""
ANSWER_BLOCKS = ("answer_cards", "answer_sweeps", "answer_oros", "answer_sevens_velo")
"""The four 40-card blocks of the *answer inputs* (``answer_blocks``): what each unseen card would take."""
MIDGAME_ANSWER_INPUTS = (MIDGAME_INPUTS[:200] + tuple(f"{b}[{c}]" for b in ANSWER_BLOCKS for c in range(40))
                         + MIDGAME_INPUTS[200:])
"""The midgame net's inputs with the answer inputs (``midgame_inputs(..., inputs="answers")``): the five
40-card blocks of ``MIDGAME_INPUTS``, the four ``ANSWER_BLOCKS``, then its scalars."""
COUNTER_BLOCKS = ("counter_cards", "counter_sweeps", "counter_points")
"""The three 40-card blocks of the *counter inputs* (``counter_blocks``): for each unseen card, what
the observer's remaining hand could take after a seat played it greedily on the table the move leaves."""
MIDGAME_PLAYOUT_INPUTS = (MIDGAME_ANSWER_INPUTS[:360]
                          + tuple(f"{b}[{c}]" for b in COUNTER_BLOCKS for c in range(40))
                          + MIDGAME_ANSWER_INPUTS[360:])
"""The midgame net's inputs with the answer and the counter inputs (``midgame_inputs(...,
inputs="playout")``): the nine 40-card blocks of ``MIDGAME_ANSWER_INPUTS``, the three
``COUNTER_BLOCKS``, then its scalars."""
MIDGAME_SETS = ("plain", "answers", "playout")
"""The input sets a midgame network may read (a checkpoint's ``midgame_inputs``; absent: ``"plain"``)."""
_MIDGAME_NAMES = {"plain": MIDGAME_INPUTS, "answers": MIDGAME_ANSWER_INPUTS,
                  "playout": MIDGAME_PLAYOUT_INPUTS}


def _bits(masks: np.ndarray) -> np.ndarray:
    """Return float32 (M, 40) 0/1 planes of uint64 card masks."""
    return ((masks[:, None] >> _CARD_BITS[None, :]) & _ONE).astype(np.float32)


def _pile(masks: np.ndarray) -> np.ndarray:
    """Return float32 (M, 4): cards / 40, oros / 10, sevens / 4, velo of capture piles."""
    return np.stack([np.bitwise_count(masks) / 40.0, np.bitwise_count(masks & np.uint64(OROS)) / 10.0,
                     np.bitwise_count(masks & np.uint64(SEVENS)) / 4.0,
                     (masks & np.uint64(1 << VELO)) != 0], axis=1).astype(np.float32)


def _answers(hands: np.ndarray, tables: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return, for every card of every hand, ``(row, captures, sweeps, pile)``: its hand's row, whether
    it can capture on that row's table, whether it sweeps it, and the ``_pile`` of its own card plus
    every card in any of its options (an upper bound of what it takes)."""
    r, c = np.nonzero(_bits(hands))
    count, union, _ = option_summary(tables[r], 15 - (c // 4 + 1))
    sweep = (count > 0) & (mask_values(tables[r]) + c // 4 + 1 == 15)
    return r, count > 0, sweep, _pile(np.where(count > 0, union | bit(c), _ZERO))


def _most_taken(out: np.ndarray, r: np.ndarray, pile: np.ndarray) -> None:
    """Write into ``out`` (M, 4) the most cards, oros, sevens and velo one card of each row takes."""
    for j in range(4):
        np.maximum.at(out[:, j], r, pile[:, j])


def _replies(hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 6) of what a hand can answer on each table left: how many of its cards
    capture / 3, whether one sweeps, and the most cards / 40, oros / 10, sevens / 4 and velo one
    card could take (``_answers``)."""
    r, caps, sweep, pile = _answers(hands, tables)
    out = np.zeros((len(hands), 6), np.float32)
    np.add.at(out[:, 0], r, caps / 3.0)
    np.maximum.at(out[:, 1], r, sweep.astype(np.float32))
    _most_taken(out[:, 2:], r, pile)
    return out


def _slots(hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 3 * len(_SLOT)): for each card of the hand (up to 3, by id), what it is and
    what it can take from the table (``_SLOT``: value / 10, oro, seven, whether it captures or
    sweeps, its option count / 4, the cards / 10, oros / 4, sevens / 4 and velo of the union of its
    options, the cards / 10 in all of them)."""
    m = len(hands)
    r, c = np.nonzero(_bits(hands))
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
    return out.reshape(m, 3 * len(_SLOT))


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
        from .shipped import SOLO_CHECKPOINT, package_file

        path = package_file(SOLO_CHECKPOINT)
    net = build_endgame_net(load_checkpoint(path, map_location="cpu"), str(path)).eval()

    @torch.no_grad()
    def values(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        moves, x, _ = endgame_inputs(obs, rules, masks)
        y = net(torch.from_numpy(x)).numpy().astype(np.float64)
        return np.maximum.reduceat(y, moves.start[:-1])

    return values


def endgame_inputs(obs: np.ndarray, rules: Rules, masks: np.ndarray) -> tuple[Moves, np.ndarray, np.ndarray]:
    """Return ``(moves, inputs, member)`` of endgame observations (``agents.endgame.endgame_rows``).

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
    live = _pile(hand_after | other | table_after)
    scal = np.column_stack([*_common_scalars(a), n_other, *_category_flags(a, live),
                            _replies(other, table_after), _slots(other, table_after),
                            _slots(hand_after, table_after)]).astype(np.float32)
    x = np.concatenate([_bits(hand_after), _bits(other), _bits(table_after), _bits(a["card_bit"]),
                        _bits(a["captured"]), scal], axis=1)
    return a["moves"], x, a["member"]


def positions_after_moves(obs: np.ndarray, rules: Rules, masks: np.ndarray) -> dict[str, Any]:
    """Return every legal move of observations of the seat to act and the position each leaves.

    The part of the move networks' inputs that every table shares (``neural-solo`` here, the
    3-player and 2v2 move networks in ``agents.tablenet``), batched over all rows and moves. Per
    move (arrays of length M): ``planes`` and ``scalars`` of its row (``observation_masks``,
    ``observation_scalars``), card masks ``hand_after``, ``table_after``, ``captured``,
    ``card_bit`` and the observer's ``unseen`` cards, ``took`` and ``escoba``, ``last`` (the seat
    that captured last after it, relative to the observer; -1 nobody), and ``member``, bool (M, 40):
    the actions the move can start with (its card, or during a capture choice the legal table cards
    of its option); ``moves``, the ``agents.moves.Moves``.
    """
    obs = np.asarray(obs, np.float32)
    if obs.ndim != 2 or obs.shape[1] != obs_layout(rules).size:
        raise ValueError(f"observations must have shape (K, {obs_layout(rules).size}), got {obs.shape}")
    planes = observation_masks(obs, rules)
    sc = observation_scalars(obs, rules, planes)
    moves = enumerate_moves(obs, rules, planes)
    r, card, opt = moves.row, moves.card, moves.option
    p = planes[r]
    scalars = {k: v[r] for k, v in sc.items()}
    hand, table = p[:, PLANE["hand"]], p[:, PLANE["table"]]
    cbit = bit(card)
    took = opt != _ZERO
    table_after = np.where(took, table & ~opt, table | cbit)
    legal = masks_to_uint64(np.asarray(masks))[r]
    return {"moves": moves, "planes": p, "scalars": scalars,
            "member": _bits(np.where(scalars["capture_phase"], opt & legal, cbit)) > 0,
            "hand_after": hand & ~cbit, "table_after": table_after,
            "captured": np.where(took, opt | cbit, _ZERO), "card_bit": cbit, "unseen": p[:, PLANE["unseen"]],
            "took": took, "escoba": took & (table_after == _ZERO),
            "last": np.where(took, 0, scalars["last_capturer"])}


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
    return [_pile(a["my_pile"]), _pile(a["other_pile"]), a["escoba_diff"], a["last"] == 0, a["last"] == 1,
            a["escoba"], ~a["took"], n_hand]


def _category_flags(a: dict[str, Any], live: np.ndarray) -> list[np.ndarray]:
    """Return the live cards' counts and, per side and category, whether its point is won / reachable."""
    my_n, other_n, live_n = _pile(a["my_pile"]) * _SIZE, _pile(a["other_pile"]) * _SIZE, live * _SIZE
    return [live, my_n >= _NEED, my_n + live_n >= _NEED, other_n >= _NEED, other_n + live_n >= _NEED]


def _hidden_replies(unseen: np.ndarray, other_hand: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 8) of what the unseen cards can answer on each table left, for a hand of
    ``other_hand`` cards drawn from them: the share of unseen cards that capture and that sweep,
    the chance the hand holds at least one of each, and the most cards / 40, oros / 10, sevens / 4
    and velo one unseen card could take (``_answers``)."""
    m = len(unseen)
    r, caps, sweep, pile = _answers(unseen, tables)
    n = np.maximum(np.bitwise_count(unseen).astype(np.float64), 1.0)
    out = np.zeros((m, 8), np.float32)
    for j, flag in enumerate((caps, sweep)):
        k = np.bincount(r, weights=flag, minlength=m)
        out[:, j] = k / n
        out[:, 2 + j] = hold_probability(n, k, other_hand)
    _most_taken(out[:, 4:], r, pile)
    return out


def answer_blocks(unseen: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 160), the four ``ANSWER_BLOCKS`` of each move: for every unseen card (by id),
    what it would take if a seat played it on the table the move leaves (``_answers``): the cards /
    10, whether it sweeps, the oros / 4, and sevens / 4 plus the velo of the union of its options and
    itself; zeros for a card that captures nothing or is not unseen."""
    m = len(unseen)
    r, c = np.nonzero(_bits(unseen))
    _, _, sweep, pile = _answers(unseen, tables)  # the same (row, card) order
    blocks = np.zeros((m, 4, 40), np.float32)
    blocks[r, 0, c] = pile[:, 0] * 4.0
    blocks[r, 1, c] = sweep
    blocks[r, 2, c] = pile[:, 1] * 2.5
    blocks[r, 3, c] = pile[:, 2] + pile[:, 3]
    return blocks.reshape(m, 160)


def greedy_replies(tables: np.ndarray, cards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(table_after, took)`` of ``cards[i]`` played on ``tables[i]`` (standard rules) as the
    ``greedy`` agent would play it with that card: the capture option of the highest
    ``GreedyAgent.move_scores`` score (ties to more cards taken, then to the lowest option, as
    ``capture_options`` orders them), or a discard when the card has no option."""
    cbit = bit(cards)
    count, union, _ = option_summary(tables, 15 - (cards // 4 + 1))
    taken = np.where(count > 0, union, _ZERO)  # one option: the union is it
    multi = np.flatnonzero(count >= 2)
    if multi.size:
        pair, opt = subset_options(tables[multi], cards[multi], union[multi])
        w = GREEDY_WEIGHTS
        took = opt | cbit[multi][pair]
        # the greedy agent's score of a capture (the same float operations, so the same ties)
        score = 10.0 + (w["escoba"] * ((tables[multi][pair] & ~opt) == _ZERO)
                        + card_weights(took, w["velo"], w["seven"], w["oro"], w["card"]))
        order = np.lexsort((-np.bitwise_count(took).astype(np.float64), -score, pair))  # stable
        first = order[np.r_[True, pair[order][1:] != pair[order][:-1]]]
        taken[multi[pair[first]]] = opt[first]
    took = count > 0
    return np.where(took, tables & ~taken, tables | cbit), took


def counter_blocks(unseen: np.ndarray, hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 120), the three ``COUNTER_BLOCKS`` of each move: for every unseen card (by
    id), played greedily (``greedy_replies``) on the table the move leaves, what the best card of
    the observer's remaining hand ``hands`` could then take (``_answers``): the most cards / 10,
    whether one sweeps, and the most oros / 4 + sevens / 4 + velo; zeros for a card that is not
    unseen, and where the hand is empty or no card of it captures."""
    m = len(unseen)
    r, u = np.nonzero(_bits(unseen))
    table2, _ = greedy_replies(tables[r], u.astype(np.int64))
    p, _, sweep, pile = _answers(hands[r], table2)  # p: the (row, unseen card) pair of each hand card
    best = np.zeros((len(r), 3), np.float32)
    np.maximum.at(best[:, 0], p, pile[:, 0] * 4.0)
    np.maximum.at(best[:, 1], p, sweep.astype(np.float32))
    np.maximum.at(best[:, 2], p, pile[:, 1] * 2.5 + pile[:, 2] + pile[:, 3])
    blocks = np.zeros((m, 3, 40), np.float32)
    blocks[r, :, u] = best
    return blocks.reshape(m, 120)


def midgame_inputs(obs: np.ndarray, rules: Rules, masks: np.ndarray, inputs: str = "plain"
                   ) -> tuple[Moves, np.ndarray, np.ndarray]:
    """Return ``(moves, inputs, member)`` of 2-player observations while the stock lasts.

    Like ``endgame_inputs`` (module doc), but the observer's unseen cards (the other hand and the
    stock together) replace the other hand, with the other hand's size / 3, the stock's size / 30
    and ``_hidden_replies`` in place of the other hand's replies and card slots
    (``MIDGAME_INPUTS``). ``inputs`` (``MIDGAME_SETS``): ``"answers"``, the four ``answer_blocks``
    follow the five card blocks (``MIDGAME_ANSWER_INPUTS``); ``"playout"``, the three
    ``counter_blocks`` follow those (``MIDGAME_PLAYOUT_INPUTS``). Raises ValueError for endgame
    positions, other rules or an unknown input set.
    """
    check_endgame_rules(rules)
    midgame_input_names(inputs)
    obs = np.asarray(obs, np.float32)
    if obs.ndim == 2 and obs.shape[1] == obs_layout(rules).size and endgame_rows(obs, rules).any():
        raise ValueError("midgame_inputs needs 2-player observations with cards left in the stock")
    a = _after_moves(obs, rules, masks)
    unseen, hand_after, table_after = a["unseen"], a["hand_after"], a["table_after"]
    live = _pile(hand_after | unseen | table_after)
    scal = np.column_stack([*_common_scalars(a), a["other_hand"] / 3.0, a["stock"] / 30.0,
                            *_category_flags(a, live), _hidden_replies(unseen, a["other_hand"], table_after),
                            _slots(hand_after, table_after)]).astype(np.float32)
    blocks = [_bits(m) for m in (hand_after, unseen, table_after, a["card_bit"], a["captured"])]
    if inputs != "plain":
        blocks.append(answer_blocks(unseen, table_after))
    if inputs == "playout":
        blocks.append(counter_blocks(unseen, hand_after, table_after))
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
    ``MIDGAME_INPUTS`` and ``agents.tablenet.table_input_names``; nine in
    ``agents.tablenet.last_input_names`` with ``answers``); the first is the identity.

    Only oros is special in scoring (and the velo is an oro), so these permutations leave every value
    unchanged. Every other input is already the same for suit-permuted positions: the piles, flags and
    replies count cards by value and oros, and the card slots list two cards of one value in different
    plain suits with identical entries. Training permutes each minibatch by one of them at random
    (``agents.training.solo_fit``); ``symmetric_values`` averages a network over all six."""
    from itertools import permutations

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
        need = len(midgame_input_names(midgame_inputs))
        if midgame is not None and midgame.net_config()["inputs"] != need:
            raise ValueError(f"the midgame network reads {midgame.net_config()['inputs']} inputs; the "
                             f"{midgame_inputs!r} midgame inputs are {need}")
        self.plain, self.endgame = plain, endgame.eval()
        self.midgame = None if midgame is None else midgame.eval()
        self.midgame_inputs = midgame_inputs
        self.name = name
        super().__init__(rules, seed)

    @staticmethod
    def _play(net: EndgameNet, make_inputs, obs: np.ndarray, masks: np.ndarray, rules: Rules, **how
              ) -> np.ndarray:
        """Return the action of each row: the first action of its best-scored move."""
        moves, x, _ = make_inputs(obs, rules, masks, **how)
        chosen = best_per_row(moves, net(torch.from_numpy(x)).numpy())
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
            actions[early] = self._play(self.midgame, midgame_inputs, obs[early], masks[early], self.rules,
                                        inputs=self.midgame_inputs)
        rows = np.flatnonzero(late)
        if rows.size:
            actions[rows] = self._play(self.endgame, endgame_inputs, obs[rows], masks[rows], self.rules)
        return actions

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, rules: Rules | None = None, seed: int | None = None,
                        device: str = "cpu", deterministic: bool = True, name: str | None = None
                        ) -> SoloAgent:
        """Return the agent of a phase-gated checkpoint (FileNotFoundError / ValueError as agents.neural)."""
        ckpt = load_checkpoint(path, map_location="cpu")
        plain = NeuralAgent(build_net(ckpt, str(path)), _rules_of(ckpt, rules, str(path)), seed=seed,
                            device=device, deterministic=deterministic)
        inputs = ckpt.get("midgame_inputs", "plain")
        try:
            need = len(midgame_input_names(inputs))
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
    """Return the ``phase`` ("endgame" or "midgame"; or another entry, such as ``agents.tablenet``'s
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
