"""The heuristic strategy, written once: what a capture is worth, what the table a move leaves lets
the next seat take, which card to give away, which table card to name.

Pure, batched functions (arrays in, arrays out, no state) over uint64 card masks, with the card
weights of ``agents.heuristic.weights``. Three players compose them:

- **greedy** (``agents.heuristic.greedy``): a capture is worth ``CAPTURE_BONUS + capture_value`` of
  exactly what it takes; a discard costs ``played_weight`` (the discard choice: the lightest card).
- **expert** (``agents.heuristic.expert``): ``capture_value`` with per-row weights (a decided category cut),
  minus the threat of the table it leaves: the next seat's best capture there, value class by value
  class (``opponent_gains``: a card of each value, forced cards plus half the optional ones, escobas
  from ``sweepers``), weighted by the chance it holds that class (card counting: ``class_counts`` of
  the unseen cards, ``HOLD``) and played best first (``expected_best``).
- **the search's default rollout policy** (``rollout_policy``, on the engine state that
  ``agents.search.pimc.rollout_actions`` reads): per card in hand, ``CAPTURE_BONUS + card_capture_value``
  (no option enumerated: forced cards plus half the optional ones) or minus ``played_weight``, minus
  ``sweep`` times the probability that the next seat holds a card of ``sweepers`` (``HOLD`` from the
  unseen cards, the next hand itself, or 1); capture choices by ``take_choice``.

``rollout_policy`` is deterministic and reads only its arguments, so a compiled twin (engine step and
policy fused) can reproduce it bit for bit: it draws nothing; the exploration around it
(``rollout_actions``) documents the uniforms it draws, in order.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from escoba_env.rulebook.capture import (
    CARD_VALUES,
    FIFTEEN,
    half_keys,
    makes_fifteen,
    option_summary,
    plain_summary,
)
from escoba_env.rulebook.cards import JOKER_MASK, MAX_CARDS, NUM_CARDS, OROS, SEVENS, VELO

from ..moves import bit, lowest_card
from ..worlds import capture_summary
from .weights import CARD_WEIGHTS, JOKER_WILDNESS

CAPTURE_BONUS = 10.0
"""Added to every capture's value by greedy and the rollout policy: any capture beats any discard."""
SWEEP_PENALTY = 1.0
"""The rollout policy's penalty per unit of probability that the next seat sweeps the table left."""
ROLLOUT_WEIGHTS = {**CARD_WEIGHTS, "sweep": SWEEP_PENALTY, "joker": JOKER_WILDNESS}
"""Weights of the default rollout policy: the greedy capture values (``agents.heuristic.weights``), ``sweep``
and (jokers variant) ``joker``, the wildness of a joker."""
THREATS = ("count", "peek", "none")
"""How the rollout policy judges the next seat's sweep: card counting, its actual hand, or not at all."""

_U1 = np.uint64(1)
_ZERO64 = np.uint64(0)
_NIB = np.uint64(0xF)
_M16 = np.uint64(0xFFFF)
_VELO = np.uint64(1 << VELO)
_SEVENS = np.uint64(SEVENS)
_OROS = np.uint64(OROS)
_SIXES = np.uint64(0xF << 20)
_JOKERS = np.uint64(JOKER_MASK)
_BITS = _U1 << np.arange(MAX_CARDS).astype(np.uint64)
VALUE_CLASSES = np.array([0xF << (4 * v) for v in range(10)] + [JOKER_MASK], np.uint64)
"""Card masks of the value classes 1..10, then the jokers (the eleventh class, wild)."""
_CLASS_WORTH = np.array([*range(1, 11), 0])
_CLASS_WILD = np.array([0] * 10 + [1])
PROBE_CARDS = np.array([4 * v for v in range(10)] + [NUM_CARDS])
"""A card of each value class (the oro of each value, then a joker)."""


class Weights(NamedTuple):
    """One valuation's weights per item (``agents.heuristic.weights``): floats, or per-row float arrays that
    broadcast against the masks weighed (the expert's, after cutting decided categories)."""

    escoba: float | np.ndarray
    velo: float | np.ndarray
    seven: float | np.ndarray
    oro: float | np.ndarray
    card: float | np.ndarray
    six: float | np.ndarray = 0.0
    joker: float | np.ndarray = 0.0

    @classmethod
    def of(cls, w: Mapping[str, float], joker: bool) -> Weights:
        """Return the weights named in ``w`` (no sixes; ``joker`` only where ``joker`` is true)."""
        return cls(w["escoba"], w["velo"], w["seven"], w["oro"], w["card"],
                   joker=w.get("joker", 0.0) if joker else 0.0)


def card_weights(masks: np.ndarray, w: Weights) -> np.ndarray:
    """Return the weighted value (float64) of the cards of each mask: velo, sevens, oros, card count,
    then sixes and jokers (a joker counts as a card and, with ``w.joker``, for its wildness)."""
    masks = np.asarray(masks, np.uint64)
    out = (w.velo * ((masks & _VELO) != 0) + w.seven * np.bitwise_count(masks & _SEVENS)
           + w.oro * np.bitwise_count(masks & _OROS) + w.card * np.bitwise_count(masks))
    # A per-row weight array is always added (it may be 0 on some rows); a float only when not 0.
    if isinstance(w.six, np.ndarray) or w.six:
        out = out + w.six * np.bitwise_count(masks & _SIXES)
    if isinstance(w.joker, np.ndarray) or w.joker:
        out = out + w.joker * np.bitwise_count(masks & _JOKERS)
    return np.asarray(out, np.float64)


def joker_count(masks: np.ndarray) -> np.ndarray:
    """Return the number of jokers in each card mask (float64)."""
    return np.bitwise_count(np.asarray(masks, np.uint64) & _JOKERS).astype(np.float64)


def capture_value(escoba: np.ndarray, taken: np.ndarray, w: Weights) -> np.ndarray:
    """Return the value of captures that take exactly ``taken`` (the played card included):
    ``w.escoba`` where ``escoba``, plus ``card_weights`` of what is taken."""
    return w.escoba * escoba + card_weights(taken, w)


def card_capture_value(escoba: np.ndarray, inter: np.ndarray, union: np.ndarray, played: np.ndarray,
                       w: Weights, bonus: float = 0.0) -> np.ndarray:
    """Return the value of capturing with a card whose options are known only by their intersection
    (the cards every option takes) and union: ``bonus`` + ``w.escoba`` where ``escoba`` + the weight
    of the forced cards + half that of the optional ones + ``played`` (the played card's weight).
    Exact when the card has one option."""
    return (bonus + w.escoba * escoba + card_weights(inter, w) + 0.5 * card_weights(union & ~inter, w)
            + played)


@functools.cache
def _single_card_weights(velo: float, seven: float, oro: float, card: float) -> np.ndarray:
    """Return ``card_weights`` of each single card id 0..41 (no sixes, no wildness), cached."""
    t = card_weights(_BITS, Weights(0.0, velo, seven, oro, card))
    t.flags.writeable = False
    return t


def single_card_weights(w: Weights) -> np.ndarray:
    """Return the weight of each single card id 0..41 under ``w`` (velo, seven, oro, card; read-only)."""
    return _single_card_weights(w.velo, w.seven, w.oro, w.card)


def played_weight(cards: np.ndarray, capture: np.ndarray | bool, w: Weights) -> np.ndarray:
    """Return the weight of each played card: its ``single_card_weights``, less ``w.joker`` for a joker
    spent in a capture (it could have captured later), plus it for a joker discarded (it hands the
    next seat a wild card). What a discard gives away, the greedy discard choice."""
    out = single_card_weights(w)[cards]
    if w.joker:
        out = out + w.joker * (np.asarray(cards) >= NUM_CARDS) * np.where(capture, -1.0, 1.0)
    return out


def _chunk_sums() -> list[np.ndarray]:
    """Return the capture-value sum of each 16-bit chunk of a card mask (chunks at bits 0, 16, 32)."""
    x = np.arange(1 << 16, dtype=np.int64)
    out = []
    for k in range(3):
        t = np.zeros(1 << 16, np.int64)
        for i in range(min(16, NUM_CARDS - 16 * k)):
            t += ((x >> i) & 1) * ((16 * k + i) // 4 + 1)
        out.append(t)
    return out


_CHUNK_SUM = _chunk_sums()


def table_sums(masks: np.ndarray) -> np.ndarray:
    """Return the capture-value sum (int64; jokers count 0) of each uint64 card mask: three look-ups."""
    return (_CHUNK_SUM[0][masks & _M16] + _CHUNK_SUM[1][(masks >> np.uint64(16)) & _M16]
            + _CHUNK_SUM[2][(masks >> np.uint64(32)) & _M16])


def sweepers(total: np.ndarray, jokers_left: np.ndarray | None = None) -> np.ndarray:
    """Return, per table of capture-value ``total`` holding ``jokers_left`` jokers (None: no jokers in
    the game), the uint64 mask of every card id that would sweep it all (0 for an empty table).

    Without jokers that is the four cards of value ``15 - total``; jokers are wild
    (``makes_fifteen``), and a joker played is one more wild card."""
    if jokers_left is None:
        need = FIFTEEN - np.asarray(total)
        shift = (4 * np.minimum(np.maximum(need - 1, 0), 9)).astype(np.uint64)
        return np.where((need >= 1) & (need <= 10), _NIB << shift, _ZERO64)
    total = np.asarray(total)[..., None]
    k = np.asarray(jokers_left)[..., None]
    # Value classes 1..10, then one more joker (worth nothing, one more wild), in one broadcast.
    sweeps = makes_fifteen(total + _CLASS_WORTH, k + _CLASS_WILD)
    return np.bitwise_or.reduce(np.where(sweeps, VALUE_CLASSES, _ZERO64), axis=-1)


def table_sweepers(tables: np.ndarray, jokers: bool) -> np.ndarray:
    """Return ``sweepers`` of each table mask (its jokers counted where ``jokers``)."""
    k = np.bitwise_count(tables & _JOKERS).astype(np.int64) if jokers else None
    return sweepers(table_sums(tables), k)


def class_counts(cards: np.ndarray, classes: int) -> np.ndarray:
    """Return (len(cards), classes) int64: how many cards of each mask are in each ``VALUE_CLASSES``."""
    return np.bitwise_count(cards[:, None] & VALUE_CLASSES[None, :classes]).astype(np.int64)


def hold_probability(u: np.ndarray, n: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Return P(a hand of ``h`` cards drawn from ``u`` unseen holds at least one of ``n`` cards)."""
    miss = np.ones(np.broadcast(u, n, h).shape)
    for i in range(3):
        num = np.clip(u - n - i, 0, None)
        den = np.maximum(u - i, 1)
        miss = np.where(i < h, miss * num / den, miss)
    return 1.0 - miss


HOLD = hold_probability(*np.meshgrid(np.arange(MAX_CARDS + 1), np.arange(MAX_CARDS + 1), np.arange(4),
                                     indexing="ij"))
"""``HOLD[u, n, h]``: ``hold_probability`` tabulated for hands of at most 3 cards (the same float
operations, so the same bits)."""


def expected_best(gains: np.ndarray, hold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (expected gain, probability of none) of a seat that holds each class ``c`` with
    probability ``hold[:, c]`` and plays its best capture (gain ``gains[:, c]``; only gains > 0 count).
    ``gains`` and ``hold`` are (m, classes); the classes are taken as independent."""
    m = gains.shape[0]
    q = hold * (gains > 0)
    order = np.argsort(-gains, axis=1, kind="stable")
    g_sorted = np.take_along_axis(gains, order, axis=1)
    q_sorted = np.take_along_axis(q, order, axis=1)
    none_before = np.cumprod(np.concatenate([np.ones((m, 1)), 1 - q_sorted[:, :-1]], axis=1), axis=1)
    return (g_sorted * q_sorted * none_before).sum(axis=1), np.prod(1 - q, axis=1)


def opponent_gains(left: np.ndarray, w: Weights, jokers: bool) -> np.ndarray:
    """Return (len(left), classes) float64: what a card of each value class (10, or 11 with the
    joker) takes from each table ``left``, by ``card_capture_value`` (the escoba where it sweeps, the
    forced cards, half the optional ones, the card itself: ``card`` plus ``seven`` for a seven); 0
    where it takes nothing. ``w``'s per-row weights are (len(left), 1) arrays or floats."""
    m = len(left)
    classes = 11 if jokers else 10
    values = np.arange(1, classes + 1)[None, :]
    if jokers:
        count, union, inter = capture_summary(np.repeat(left, classes), np.tile(PROBE_CARDS[:classes], m))
    else:
        target = np.broadcast_to(FIFTEEN - values, (m, classes))
        count, union, inter = option_summary(np.repeat(left, classes), target.ravel())
    count, union, inter = count.reshape(m, classes), union.reshape(m, classes), inter.reshape(m, classes)
    sweep = (table_sweepers(left, jokers)[:, None] & VALUE_CLASSES[None, :classes]) != 0
    own_card = w.card + np.where(values == 7, w.seven, 0.0)
    return np.where(count > 0, card_capture_value(sweep, inter, union, own_card, w), 0.0)


def _take_priority(w: Weights) -> np.ndarray:
    """Return the priority of each card id (0..41) when naming table cards (most valuable, then highest)."""
    return card_weights(_BITS, w._replace(six=0.0)) + CARD_VALUES * 1e-3


@functools.cache
def _take_tables(w: Weights) -> tuple[list[np.ndarray], np.ndarray]:
    """Return (three 16-bit chunk tables mapping a card mask to the mask of its cards' ranks, the card
    id of each rank) for the capture-choice priority of weights ``w``: rank 0 is the most valuable
    card, ties to the lowest id (what ``argmax`` over the priorities picks)."""
    prio = _take_priority(w) + 1.0
    order = np.lexsort((np.arange(MAX_CARDS), -prio))
    rank = np.empty(MAX_CARDS, np.uint64)
    rank[order] = np.arange(MAX_CARDS, dtype=np.uint64)
    x = np.arange(1 << 16, dtype=np.uint64)
    chunks = []
    for k in range(3):
        t = np.zeros(1 << 16, np.uint64)
        for i in range(min(16, MAX_CARDS - 16 * k)):
            t |= ((x >> np.uint64(i)) & _U1) << rank[16 * k + i]
        chunks.append(t)
    return chunks, order


def take_choice(legal: np.ndarray, w: Weights) -> np.ndarray:
    """Return, per legal mask of a capture choice, its most valuable card (``card_weights`` under
    ``w``, then the highest capture value; ties to the lowest id; 0 for an empty mask): three
    look-ups and the lowest set bit, for any number of masks."""
    (t0, t1, t2), order = _take_tables(w)
    ranks = t0[legal & _M16] | t1[(legal >> np.uint64(16)) & _M16] | t2[(legal >> np.uint64(32)) & _M16]
    best = np.minimum(np.bitwise_count((ranks & (~ranks + _U1)) - _U1), MAX_CARDS - 1)
    return np.where(ranks != 0, order[best], 0)


def hand_cards(hand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(cards, r, j)``: the (up to three) card ids of each hand mask, ascending, as (n, 3)
    int64 (-1 where none), and the (row, column) of each card that exists, row-major."""
    cards = np.empty((len(hand), 3), np.int64)
    h = np.array(hand, np.uint64)
    for j in range(3):
        cards[:, j] = lowest_card(h)
        h &= h - _U1
    r, j = np.nonzero(cards >= 0)
    return cards, r, j


def card_captures(table: np.ndarray, r: np.ndarray, c: np.ndarray, jokers: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(capture, escoba, inter, union, sweep_cards)`` of playing card ``c[i]`` on
    ``table[r[i]]``: whether it captures, whether every option sweeps, the intersection and union of
    its options (read only where it captures), and ``sweepers`` of the table it leaves.

    Without jokers every option of a card takes the same value, so the total left is known without
    the option; with jokers the table left is judged without the forced cards (exact with one option).
    The table's capture keys are computed once per table and gathered for its cards."""
    if not jokers:
        v = c // 4 + 1
        kl, kh = half_keys(table)
        count, union, inter = plain_summary(table[r], FIFTEEN - v, keys=(kl[r], kh[r]))
        capture = count > 0
        ts = table_sums(table)[r]
        escoba = capture & (ts + v == FIFTEEN)
        return capture, escoba, inter, union, sweepers(np.where(capture, ts - (FIFTEEN - v), ts + v))
    tr = table[r]
    count, union, inter = capture_summary(tr, c)
    capture = count > 0
    escoba = capture & (union == tr) & (inter == tr)
    left = np.where(capture, tr & ~inter, tr | bit(c))
    return capture, escoba, inter, union, table_sweepers(left, True)


def sweep_probability(sweep_cards: np.ndarray, r: np.ndarray, threat: str, next_hand: np.ndarray | None,
                      unseen: np.ndarray | None, stock_left: np.ndarray | None) -> np.ndarray:
    """Return, per (row ``r[i]``, card) pair, the probability that the next seat holds a card of
    ``sweep_cards[i]``: ``"peek"`` 0/1 from its hand ``next_hand``, ``"count"`` ``HOLD`` from the
    actor's ``unseen`` cards and the next hand's size (3 when it is empty and ``stock_left``: a new
    deal), ``"none"`` 1 wherever the table can be swept."""
    if threat == "peek":
        return (next_hand[r] & sweep_cards) != 0
    sweepable = sweep_cards != 0
    if threat == "count":
        u = np.bitwise_count(unseen)[r]
        n_need = np.bitwise_count(unseen[r] & sweep_cards)
        h_next = np.bitwise_count(next_hand).astype(np.int64)
        h_next = np.where(h_next > 0, h_next, np.where(stock_left, 3, 0))
        return sweepable * HOLD[u, n_need, h_next[r]]
    return sweepable * 1.0


def rollout_policy(hand: np.ndarray, table: np.ndarray, pending: np.ndarray, legal: np.ndarray,
                   w: Weights, sweep: float, jokers: bool, threat: str = "count",
                   next_hand: np.ndarray | None = None, unseen: np.ndarray | None = None,
                   stock_left: np.ndarray | None = None) -> np.ndarray:
    """Return the default rollout policy's action (int64) per game, from arrays of the seat to act:
    its ``hand``, the ``table``, the ``pending`` card (>= 0 in a capture choice), the ``legal``
    actions (uint64 masks), and for the threat the next seat's hand (``peek``, and its size for
    ``count``), the cards the actor cannot see (``count``) and whether the stock holds cards (``count``).

    Each card in hand scores ``CAPTURE_BONUS + card_capture_value`` (``card_captures``) when it
    captures, else minus its ``played_weight``; minus ``sweep`` times ``sweep_probability`` of the
    table it leaves. The best card is played, ties to the lowest id. In a capture choice it names
    ``take_choice`` of the legal cards. Deterministic: no random draw. Games with no card in hand
    get any value."""
    cards, r, j = hand_cards(hand)
    c = cards[r, j]
    capture, escoba, inter, union, sweep_cards = card_captures(table, r, c, jokers)
    p_sweep = sweep_probability(sweep_cards, r, threat, next_hand, unseen, stock_left)
    cw = played_weight(c, capture, w)
    # A capture's value on the capturing cards only (union and intersection are unset elsewhere).
    cap = np.nonzero(capture)[0]
    value = -cw
    value[cap] = card_capture_value(escoba[cap], inter[cap], union[cap], cw[cap], w, bonus=CAPTURE_BONUS)
    score = np.full((len(hand), 3), -1e9)
    score[r, j] = value - sweep * p_sweep
    # The best card of each hand, ties to the first (argmax over three columns).
    s0, s1, s2 = score[:, 0], score[:, 1], score[:, 2]
    second = s1 > s0
    third = s2 > np.where(second, s1, s0)
    actions = cards[np.arange(len(hand)), np.where(third, 2, second.astype(np.int64))]
    pend = np.nonzero(pending >= 0)[0]
    if pend.size:
        actions[pend] = take_choice(legal[pend], w)
    return actions
