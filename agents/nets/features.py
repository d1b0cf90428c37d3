"""The move features of the action-conditioned heads: what each action does, read from observations.

``move_features`` describes every action by ``MOVE_FEATURES`` (what the card captures, whether it
sweeps, what it leaves on the table and what the next player could take from it); ``endgame_features``
adds each action's exact endgame value (``ENDGAME_FEATURES``, from ``agents.heuristic.endgame``). The
networks of ``agents.nets.neural`` read them beside the observation. NumPy only: no torch here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from escoba_env.executors.observation import plane_slice, scalar_offsets
from escoba_env.rulebook.capture import joker_summary, makes_fifteen, option_summary
from escoba_env.rulebook.cards import (
    JOKER_MASK,
    JOKERS,
    NUM_CARDS,
    NUM_VALUES,
    OROS,
    SEVENS,
    VELO,
    mask_values,
)
from escoba_env.rulebook.rules import Rules

from ..heuristic.endgame import endgame_values
from ..heuristic.weights import CARD_WEIGHTS

_VALUES = np.arange(NUM_CARDS) // 4 + 1
_W = CARD_WEIGHTS
_WEIGHT = (_W["card"] + _W["oro"] * (np.arange(NUM_CARDS) % 4 == 0) + _W["seven"] * (_VALUES == 7)
           + _W["velo"] * (np.arange(NUM_CARDS) == VELO)).astype(np.float32)
JOKER_FEATURE_WEIGHT = _W["card"]
"""A joker's weight in the move features: a card only, deliberately without the heuristics'
``JOKER_WILDNESS`` (the features describe what is taken; the network learns what wildness is worth)."""
_OROS = np.uint64(OROS)
_SEVENS = np.uint64(SEVENS)
_VELO = np.uint64(1 << VELO)
_JOKER_BITS = np.uint64(JOKER_MASK)
# Per card id of the 42-card deck: its value class (0..9 for values 1..10, 10 for a joker), its
# capture value (a joker counts 0: it is wild) and its card weight (a joker: JOKER_FEATURE_WEIGHT).
_CLASS = np.array([c // 4 for c in range(NUM_CARDS)] + [10] * len(JOKERS))
_CLASS_VALUE = np.array([c // 4 + 1 for c in range(NUM_CARDS)] + [0] * len(JOKERS), np.float32)
_WEIGHT_J = np.concatenate([_WEIGHT, np.full(len(JOKERS), JOKER_FEATURE_WEIGHT, np.float32)])
_CLASS_CARD = np.array([4 * v for v in range(NUM_VALUES)] + [JOKERS[0]])  # a card of each class
MOVE_FEATURES = ("play", "capture", "escoba", "take_certain", "take_possible", "threat", "discard_cost",
                 "name", "name_value", "card_weight", "card_value", "cards_taken", "left_weight", "left_sum",
                 "left_count", "exposed_gain", "exposed_capture")
"""Per-action features of the ``moves`` head (``move_features``), in this order."""
ENDGAME_FEATURES = ("endgame_loss", "endgame_best")
"""Optional extra per-action features (``endgame_features``, ``PolicyValueNet(endgame=True)``)."""

def _mask_weight(masks: np.ndarray) -> np.ndarray:
    """Return the summed card weights (``_WEIGHT``; a joker ``JOKER_FEATURE_WEIGHT``) of uint64 card
    masks, as float32."""
    def n(m):
        return np.bitwise_count(m).astype(np.float32)
    return (_W["card"] * n(masks) + _W["oro"] * n(masks & _OROS) + _W["seven"] * n(masks & _SEVENS)
            + _W["velo"] * n(masks & _VELO))


def _class_summary(masks: np.ndarray, rules: Rules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (count, union, intersection), each (K, C), of the captures a card of each value class
    could make on each table mask: C = 10 values, plus the joker with ``rules.jokers``."""
    k = len(masks)
    if not rules.jokers:
        c, u, i = option_summary(np.repeat(masks, 10), np.tile(15 - np.arange(1, 11), k))
        return c.reshape(k, 10), u.reshape(k, 10), i.reshape(k, 10)
    classes = len(_CLASS_CARD)
    z = np.zeros(k * classes, np.uint64)
    c, u, i, _ = joker_summary(np.repeat(masks, classes), z, np.zeros(k * classes, np.int64),
                               np.tile(_CLASS_CARD, k), np.ones(k * classes, bool), False, rules.jokers)
    i = np.where(c > 0, i, np.uint64(0))
    return c.reshape(k, classes), u.reshape(k, classes), i.reshape(k, classes)


def _sweepable(masks: np.ndarray, played: np.ndarray, wild: np.ndarray) -> np.ndarray:
    """Return where a played card of value ``played`` (``wild``: a joker) takes all of ``masks``.

    Broadcasts. The table's jokers and a played joker are wild (1..10 each).
    """
    w = np.bitwise_count(masks & _JOKER_BITS).astype(np.int64) + wild
    return (masks != 0) & makes_fifteen(mask_values(masks) + played, w)


def endgame_features(obs: np.ndarray, rules: Rules) -> np.ndarray:
    """Return float32 (K, W, 2): the exact endgame value of each action, as move features.

    In a 2-player endgame (the stock empty, so the observer knows the other hand;
    ``agents.heuristic.endgame``) ``endgame_loss`` is the action's exact minimax value minus the best
    action's (points of the round, <= 0) and ``endgame_best`` is 1 for the best actions. Zero elsewhere:
    other decisions, other player counts, and actions that are not legal. ``rules`` are the game's full rules
    (the scoring decides the values). Read from the observation only.
    """
    obs = np.asarray(obs, np.float32)
    v = endgame_values(obs, rules)
    ok = np.isfinite(v)
    best = np.max(np.where(ok, v, -np.inf), axis=1, initial=-np.inf)[:, None]
    loss = np.where(ok, v - best, 0.0)
    return np.stack([loss, ok & (loss > -1e-6)], axis=-1).astype(np.float32)


def _by_card(x: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Return ``x[:, classes]`` as a C-ordered array (fancy indexing gives a Fortran-ordered one, and
    arithmetic mixing the two orders is ten times slower)."""
    return np.take(x, classes, axis=1)


def move_features(obs: np.ndarray, rules: Rules | None = None) -> np.ndarray:
    """Return float32 (K, W, len(MOVE_FEATURES)) features of each action, read from observations only.

    W is the action count (``rules.num_cards``: 40, or 41/42 with jokers). For a hand card in the
    play phase: whether it captures, can sweep (escoba), the weighted value of the cards it surely /
    possibly takes (``agents.heuristic.weights.CARD_WEIGHTS``; a joker: ``JOKER_FEATURE_WEIGHT``), how many it
    surely takes, the share of the unseen cards that could sweep the table it leaves, and the weight
    it gives away when discarded. For a table card in the capture choice: its weight. For every
    card: its own weight and value / 10 (a joker: 0). What the play leaves on the table: its weight
    (at most), its sum / 15 and its card count / 10; and what the next player could take from it
    (an expert-style threat): the largest ``P(they hold a card of class w) * gain(w)`` over the
    value classes, ``gain`` being the weight of what ``w`` can take plus 1 for a sweep, and the
    largest ``P(they hold w)`` among classes that capture something. Zero for cards that are not
    legal candidates (not in hand, or not on the table during a choice). With jokers the capture
    features use the joker-aware summaries (a joker played or on the table is wild); the table sums
    and the sweep threat of unseen cards count a joker as 0. These are features, not rules: the
    engine alone decides what is legal.
    """
    rules = Rules() if rules is None else rules
    obs = np.asarray(obs, np.float32)
    k = obs.shape[0]
    nc = rules.num_cards
    if k == 0:
        return np.zeros((k, nc, len(MOVE_FEATURES)), np.float32)
    f = np.zeros((len(MOVE_FEATURES), k, nc), np.float32)  # feature-major: contiguous writes
    table = obs[:, plane_slice("table", rules)]
    unseen = obs[:, plane_slice("unseen", rules)]
    choose = obs[:, scalar_offsets(rules)["capture_phase"]] > 0.5
    play = obs[:, plane_slice("hand", rules)] * ~choose[:, None]
    by_value = table[:, :NUM_CARDS].reshape(k, 10, 4).sum(axis=2)  # no BLAS: tiny matmuls spin threads
    t_sum = (by_value * np.arange(1, 11, dtype=np.float32)).sum(axis=1)
    t_mask = _table_mask(table, nc)
    cls = _class_stats(t_mask, t_sum, unseen, rules)
    _fill_card_features(f, play, table, choose, cls, nc)
    _fill_exposure(f, obs, play, unseen, t_mask, cls, rules)
    return np.ascontiguousarray(f.transpose(1, 2, 0))


def _table_mask(table: np.ndarray, nc: int) -> np.ndarray:
    """Return the uint64 card mask (K,) of each row's table plane (K, nc)."""
    bits = np.ascontiguousarray((table > 0.5).astype(np.uint8))
    padded = np.zeros((len(table), 64), np.uint8)
    padded[:, :nc] = bits
    return np.packbits(padded, axis=1, bitorder="little").view("<u8")[:, 0].astype(np.uint64)


class _ClassStats(NamedTuple):
    """What playing a card of each value class does to each row's table, every field (K, C)."""

    cap: np.ndarray  # 1.0 where the class captures something
    inter: np.ndarray  # the cards every capture of the class takes (uint64 masks)
    certain: np.ndarray  # their weight
    possible: np.ndarray  # the weight of the cards some capture takes
    ntaken: np.ndarray  # how many cards every capture takes
    escoba: np.ndarray  # 1.0 where the class can sweep
    left: np.ndarray  # the table sum the play leaves
    threat: np.ndarray  # the share of the unseen cards that sweep what is left
    values: np.ndarray  # (C,) each class's card value
    unseen_by_value: np.ndarray  # (K, 10) the unseen cards of each value


def _class_stats(t_mask: np.ndarray, t_sum: np.ndarray, unseen: np.ndarray, rules: Rules) -> _ClassStats:
    """Return the ``_ClassStats`` of the tables ``t_mask`` (sums ``t_sum``) given the unseen cards."""
    k = len(t_mask)
    # capture options depend on the played card's value class only: one summary per (row, class)
    count, union, inter = _class_summary(t_mask, rules)
    classes = count.shape[1]
    cap_v = (count > 0).astype(np.float32)
    values = _CLASS_VALUE[_CLASS_CARD[:classes]]
    if rules.jokers:
        escoba_v = cap_v * _sweepable(t_mask[:, None], values[None, :].astype(np.int64),
                                      (np.arange(classes) == 10)[None, :].astype(np.int64))
    else:
        escoba_v = cap_v * (t_sum[:, None] + values[None, :] == 15)
    # table sum left: after a capture of value 15 - v it is t_sum - (15 - v), after a discard t_sum + v
    left = np.where(cap_v > 0, t_sum[:, None] - (15 - values[None, :]), t_sum[:, None] + values[None, :])
    need = 15 - left  # the card value that sweeps what is left
    unseen_by_value = unseen[:, :NUM_CARDS].reshape(k, 10, 4).sum(axis=2)
    n_unseen = np.maximum(unseen.sum(axis=1, keepdims=True), 1.0)
    idx = np.clip(need, 1, 10).astype(np.int64) - 1
    threat_v = np.where((need >= 1) & (need <= 10) & (left > 0),
                        np.take_along_axis(unseen_by_value, idx, axis=1) / n_unseen, 0.0)
    return _ClassStats(cap_v, inter, _mask_weight(inter), _mask_weight(union),
                       np.bitwise_count(inter).astype(np.float32), escoba_v, left, threat_v, values,
                       unseen_by_value)


def _fill_card_features(f: np.ndarray, play: np.ndarray, table: np.ndarray, choose: np.ndarray,
                        cls: _ClassStats, nc: int) -> None:
    """Write features 0-14 (the card's own, its capture's and the table it leaves) into ``f``."""
    weight = _WEIGHT_J[:nc]
    vi = _CLASS[:nc]  # value class of each card id
    capc = play * _by_card(cls.cap, vi)  # the hand cards that capture
    f[0] = play
    f[1] = capc
    f[2] = play * _by_card(cls.escoba, vi)
    f[3] = capc * (_by_card(cls.certain, vi) + weight[None, :])
    f[4] = capc * (_by_card(cls.possible, vi) + weight[None, :])
    f[5] = play * _by_card(cls.threat, vi)
    f[6] = (play - capc) * weight[None, :]
    name = table * choose[:, None]
    f[7] = name
    f[8] = name * weight[None, :]
    cand = np.maximum(play, name)
    f[9] = cand * weight[None, :]
    f[10] = cand * (_CLASS_VALUE[:nc] / 10.0)[None, :]
    f[11] = capc * (_by_card(cls.ntaken, vi) + 1) / 5.0
    # what the move leaves on the table (a capture leaves at most the cards outside the intersection)
    t_weight = (table * weight[None, :]).sum(axis=1)
    t_count = table.sum(axis=1)
    left_w = np.where(cls.cap > 0, t_weight[:, None] - cls.certain, 0.0)
    left_n = np.where(cls.cap > 0, t_count[:, None] - cls.ntaken, t_count[:, None] + 1)
    discard_w = (1 - _by_card(cls.cap, vi)) * (t_weight[:, None] + weight[None, :])
    f[12] = play * (_by_card(left_w, vi) + discard_w)
    f[13] = play * np.clip(_by_card(cls.left, vi), 0, 30) / 15.0
    f[14] = play * _by_card(left_n, vi) / 10.0


def _fill_exposure(f: np.ndarray, obs: np.ndarray, play: np.ndarray, unseen: np.ndarray, t_mask: np.ndarray,
                   cls: _ClassStats, rules: Rules) -> None:
    """Write features 15-16 into ``f``: what the next player could take from the table each hand card
    leaves (the best ``P(they hold class w) * gain(w)``, and the best ``P(they hold w)`` that captures)."""
    k, classes = cls.cap.shape
    hand = obs[:, plane_slice("hand", rules)]
    order = np.argsort(-hand, axis=1, kind="stable")[:, :3]  # the (up to 3) hand cards
    valid = (np.take_along_axis(play, order, axis=1) > 0).astype(np.float32)
    rows = np.arange(k)[:, None]
    cvi = _CLASS[:rules.num_cards][order]
    cap = cls.cap[rows, cvi] > 0
    bits_c = np.uint64(1) << order.astype(np.uint64)
    left_mask = np.where(cap, t_mask[:, None] & ~cls.inter[rows, cvi], t_mask[:, None] | bits_c)  # (k, 3)
    live = np.flatnonzero(valid.ravel())  # only the real hand cards' tables (the rest stay 0)
    cnt = np.zeros((k * 3, classes), np.int64)
    un = np.zeros((k * 3, classes), np.uint64)
    cnt[live], un[live], _ = _class_summary(left_mask.ravel()[live], rules)
    cnt, un = cnt.reshape(k, 3, classes), un.reshape(k, 3, classes)
    if rules.jokers:
        sweep = _sweepable(left_mask[:, :, None], cls.values[None, None, :].astype(np.int64),
                           (np.arange(classes) == 10)[None, None, :].astype(np.int64))
        jokers_unseen = unseen[:, NUM_CARDS:].sum(axis=1, keepdims=True)
        unseen_by_class = np.concatenate([cls.unseen_by_value, jokers_unseen], axis=1)
    else:
        sweep = ((mask_values(left_mask)[:, :, None] + np.arange(1, 11)[None, None, :] == 15)
                 & (left_mask[:, :, None] != 0))
        unseen_by_class = cls.unseen_by_value
    gain = (cnt > 0) * (_mask_weight(un) + sweep)
    h = obs[:, scalar_offsets(rules)["hand_sizes"] + 1] * 3.0  # the next player's hand size
    u = unseen.sum(axis=1)
    miss = np.ones((k, classes), np.float32)
    for i in range(3):
        step = np.clip(u[:, None] - unseen_by_class - i, 0, None) / np.maximum(u[:, None] - i, 1)
        miss = np.where(i < h[:, None] - 0.5, miss * step, miss)
    q = (1.0 - miss)[:, None, :]  # P(the next player holds a card of class w), (k, 1, C)
    f[15][rows, order] = valid * (q * gain).max(axis=2)
    f[16][rows, order] = valid * (q * (cnt > 0)).max(axis=2)
