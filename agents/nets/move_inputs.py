"""The move inputs every move network shares: the position each legal move leaves, and what cards can
take there.

A move network (``agents.nets.solo`` at 2 players, ``agents.nets.tablenet`` at 3 players and 2v2) scores each
legal *move* (a hand card and the table cards it takes; ``agents.moves``) from the position it
leaves. ``positions_after_moves`` enumerates the moves of a batch of observations and that position;
the other functions describe cards and hands there: ``card_bits`` (0/1 planes of card masks),
``pile_shares`` (a pile's cards, oros, sevens and velo), ``card_answers`` (what each card of a hand
can take), ``card_slots`` (the observer's up to three cards, ``SLOT``), ``hidden_replies`` (what a
hand drawn from the unseen cards can answer) and ``answer_blocks`` (what each unseen card would
take, ``ANSWER_BLOCKS``). All read the observation only, batched over every row and move.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.capture import option_summary
from escoba_env.rulebook.cards import OROS, SEVENS, VELO, mask_values
from escoba_env.rulebook.rules import Rules

from ..heuristic.strategy import hold_probability
from ..moves import bit, enumerate_moves, masks_to_uint64
from ..worlds import obs_layout, observation_masks, observation_scalars

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_CARD_BITS = np.arange(40, dtype=np.uint64)
SLOT = ("present", "value", "oro", "seven", "captures", "sweeps", "options", "takes_cards", "takes_oros",
        "takes_sevens", "takes_velo", "surely_takes")
"""What ``card_slots`` says of each of the observer's cards, in order."""
ANSWER_BLOCKS = ("answer_cards", "answer_sweeps", "answer_oros", "answer_sevens_velo")
"""The four 40-card blocks of the *answer inputs* (``answer_blocks``): what each unseen card would take."""


def card_bits(masks: np.ndarray) -> np.ndarray:
    """Return float32 (M, 40) 0/1 planes of uint64 card masks."""
    return ((masks[:, None] >> _CARD_BITS[None, :]) & _ONE).astype(np.float32)


def pile_shares(masks: np.ndarray) -> np.ndarray:
    """Return float32 (M, 4): cards / 40, oros / 10, sevens / 4, velo of capture piles."""
    return np.stack([np.bitwise_count(masks) / 40.0, np.bitwise_count(masks & np.uint64(OROS)) / 10.0,
                     np.bitwise_count(masks & np.uint64(SEVENS)) / 4.0,
                     (masks & np.uint64(1 << VELO)) != 0], axis=1).astype(np.float32)


def card_answers(hands: np.ndarray, tables: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return, for every card of every hand, ``(row, captures, sweeps, pile)``: its hand's row, whether
    it can capture on that row's table, whether it sweeps it, and the ``pile_shares`` of its own card plus
    every card in any of its options (an upper bound of what it takes)."""
    r, c = np.nonzero(card_bits(hands))
    count, union, _ = option_summary(tables[r], 15 - (c // 4 + 1))
    sweep = (count > 0) & (mask_values(tables[r]) + c // 4 + 1 == 15)
    return r, count > 0, sweep, pile_shares(np.where(count > 0, union | bit(c), _ZERO))


def most_taken(out: np.ndarray, r: np.ndarray, taken: np.ndarray) -> None:
    """Write into ``out`` (M, 4) the most cards, oros, sevens and velo one card of each row takes."""
    for j in range(4):
        np.maximum.at(out[:, j], r, taken[:, j])


def card_slots(hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 3 * len(SLOT)): for each card of the hand (up to 3, by id), what it is and
    what it can take from the table (``SLOT``: value / 10, oro, seven, whether it captures or
    sweeps, its option count / 4, the cards / 10, oros / 4, sevens / 4 and velo of the union of its
    options, the cards / 10 in all of them)."""
    m = len(hands)
    r, c = np.nonzero(card_bits(hands))
    slot = np.arange(len(r)) - np.searchsorted(r, r)  # rank of the card in its hand
    keep = slot < 3
    r, c, slot = r[keep], c[keep], slot[keep]
    count, union, inter = option_summary(tables[r], 15 - (c // 4 + 1))
    sweep = (count > 0) & (mask_values(tables[r]) + c // 4 + 1 == 15)
    took = pile_shares(union) * np.array([4.0, 2.5, 1.0, 1.0], np.float32)  # cards / 10, oros / 4
    f = np.column_stack([np.ones(len(r)), (c // 4 + 1) / 10.0, c % 4 == 0, c // 4 == 6, count > 0, sweep,
                         np.minimum(count, 4) / 4.0, took, np.bitwise_count(inter) / 10.0]).astype(np.float32)
    out = np.zeros((m, 3, len(SLOT)), np.float32)
    out[r, slot] = f
    return out.reshape(m, 3 * len(SLOT))


def positions_after_moves(obs: np.ndarray, rules: Rules, masks: np.ndarray) -> dict[str, Any]:
    """Return every legal move of observations of the seat to act and the position each leaves.

    The part of the move networks' inputs that every table shares (``neural-solo`` here, the
    3-player and 2v2 move networks in ``agents.nets.tablenet``), batched over all rows and moves. Per
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
            "member": card_bits(np.where(scalars["capture_phase"], opt & legal, cbit)) > 0,
            "hand_after": hand & ~cbit, "table_after": table_after,
            "captured": np.where(took, opt | cbit, _ZERO), "card_bit": cbit, "unseen": p[:, PLANE["unseen"]],
            "took": took, "escoba": took & (table_after == _ZERO),
            "last": np.where(took, 0, scalars["last_capturer"])}


def hidden_replies(unseen: np.ndarray, other_hand: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 8) of what the unseen cards can answer on each table left, for a hand of
    ``other_hand`` cards drawn from them: the share of unseen cards that capture and that sweep,
    the chance the hand holds at least one of each, and the most cards / 40, oros / 10, sevens / 4
    and velo one unseen card could take (``card_answers``)."""
    m = len(unseen)
    r, caps, sweep, taken = card_answers(unseen, tables)
    n = np.maximum(np.bitwise_count(unseen).astype(np.float64), 1.0)
    out = np.zeros((m, 8), np.float32)
    for j, flag in enumerate((caps, sweep)):
        k = np.bincount(r, weights=flag, minlength=m)
        out[:, j] = k / n
        out[:, 2 + j] = hold_probability(n, k, other_hand)
    most_taken(out[:, 4:], r, taken)
    return out


def answer_blocks(unseen: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 160), the four ``ANSWER_BLOCKS`` of each move: for every unseen card (by id),
    what it would take if a seat played it on the table the move leaves (``card_answers``): the cards /
    10, whether it sweeps, the oros / 4, and sevens / 4 plus the velo of the union of its options and
    itself; zeros for a card that captures nothing or is not unseen."""
    m = len(unseen)
    r, c = np.nonzero(card_bits(unseen))
    _, _, sweep, taken = card_answers(unseen, tables)  # the same (row, card) order
    blocks = np.zeros((m, 4, 40), np.float32)
    blocks[r, 0, c] = taken[:, 0] * 4.0
    blocks[r, 1, c] = sweep
    blocks[r, 2, c] = taken[:, 1] * 2.5
    blocks[r, 3, c] = taken[:, 2] + taken[:, 3]
    return blocks.reshape(m, 160)
