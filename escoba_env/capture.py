"""Capture enumeration on card masks (RULES.md §4).

A capture option for a played card of value ``v`` is a set of table cards whose values sum to
``15 - v``. Cards of equal value are interchangeable for sums, so everything is computed from the
per-value counts of the table (nibble popcounts), split in two halves: values 1-5 (bits 0-19) and
values 6-10 (bits 20-39). For each half and each count vector (a base-5 key, 3125 keys) we
precompute, for every sum ``s`` in 0..14:

- how many card subsets of that half sum to ``s``;
- which values appear in at least one of them (``usable``);
- which values are taken completely by every one of them (``forced``).

A batched query combines the two halves with a handful of table look-ups, so finding the number
of options, their union and their intersection costs a fixed number of NumPy calls per batch.
The union minus the intersection is exactly the set of "take card t" actions of the play/take
decision scheme (DESIGN.md decision 4): a card in every remaining option needs no decision.
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np

from .cards import NUM_VALUES, _check_card, value_nibble
from .rules import Rules

FIFTEEN = 15
MAX_SUM = 14  # a played card is worth at least 1, so a capture takes at most 14
_NS = MAX_SUM + 1
_HALF_BITS = 20
_HALF_MASK = (1 << _HALF_BITS) - 1


def _half_tables(weights: tuple[int, ...]):
    """Return (count, usable, forced) tables of shape (3125, 15) for one half of the values."""
    keys = np.arange(5**5)
    counts = np.stack([(keys // 5**j) % 5 for j in range(5)], axis=1)  # (3125, 5)
    n = np.zeros((5**5, _NS), np.int64)
    usable = np.zeros((5**5, _NS), np.int64)
    forced = np.full((5**5, _NS), 0x1F, np.int64)
    for m in itertools.product(range(5), repeat=5):
        s = sum(w * k for w, k in zip(weights, m, strict=True))
        if s > MAX_SUM:
            continue
        m_arr = np.array(m)
        ok = np.all(counts >= m_arr, axis=1)
        ways = np.ones(5**5, np.int64)
        for j in range(5):
            ways *= np.array([comb(c, m[j]) for c in range(5)])[counts[:, j]]
        ubits = sum(1 << j for j in range(5) if m[j] > 0)
        fbits = (m_arr[None, :] == counts) @ (1 << np.arange(5))
        n[ok, s] += ways[ok]
        usable[ok, s] |= ubits
        forced[ok, s] &= fbits[ok]
    forced[n == 0] = 0x1F
    return n, usable, forced


def _build_tables():
    low = _half_tables((1, 2, 3, 4, 5))
    high = _half_tables((6, 7, 8, 9, 10))
    # 20-bit half mask -> base-5 key of its five nibble popcounts.
    m = np.arange(1 << _HALF_BITS, dtype=np.int64)
    key = np.zeros(1 << _HALF_BITS, np.int64)
    for j in range(5):
        key += np.bitwise_count((m >> (4 * j)) & 0xF).astype(np.int64) * 5**j
    # Sums a half of values 6..10 can make without exceeding 14.
    high_sums = np.array([s for s in range(_NS) if high[0][:, s].any()], np.int64)
    # 10-bit value set -> 40-bit mask of the nibbles of those values.
    vs = np.arange(1 << NUM_VALUES, dtype=np.uint64)
    expand = np.zeros(1 << NUM_VALUES, np.uint64)
    for j in range(NUM_VALUES):
        expand |= ((vs >> np.uint64(j)) & np.uint64(1)) * np.uint64(value_nibble(j + 1))
    return low, high, key.astype(np.int32), high_sums, expand


(_LOW_N, _LOW_U, _LOW_F), (_HIGH_N, _HIGH_U, _HIGH_F), _HALF_KEY, _HIGH_SUMS, _EXPAND = _build_tables()
# Packed tables for the batched query: per (half key, sum) one int64 holding the number of
# subsets (bits 0-15; at most 5642), the usable values (bits 16-20) and the forced values
# (bits 21-25). Rows have 16 columns; column 15 (sum 15, never asked) is empty.
def _pack(n, usable, forced):
    assert n.max() < 1 << 16
    code = np.zeros((5**5, 16), np.int64)
    code[:, :_NS] = n | (usable << 16) | (forced << 21)
    return code.ravel()


_CODE_LOW = _pack(_LOW_N, _LOW_U, _LOW_F)
_CODE_HIGH = _pack(_HIGH_N, _HIGH_U, _HIGH_F)
# Bit a of _LOW_REACH[k]: the low half with key k has a subset summing to a.
_LOW_REACH = ((_LOW_N > 0) * (1 << np.arange(_NS))).sum(axis=1).astype(np.int64)
# Bit a of _HIGH_COMP[k * 16 + t]: the high half with key k has a subset summing to t - a.
_HIGH_COMP = np.zeros((5**5, 16), np.int64)
for _t in range(_NS):
    for _a in range(_t + 1):
        _HIGH_COMP[:, _t] |= (_HIGH_N[:, _t - _a] > 0).astype(np.int64) << _a
_HIGH_COMP = _HIGH_COMP.ravel()
# Half keys from two small look-ups (bits 0-11 and 12-19 of a 20-bit half) stay in cache.
# Every index array is int64 (intp): NumPy's fast gather path needs it.
_KEY12 = _HALF_KEY[: 1 << 12].astype(np.int64)
_KEY8 = _HALF_KEY[np.arange(1 << 8) << 12].astype(np.int64)
_U20 = np.uint64(_HALF_BITS)
_HALF = np.uint64(_HALF_MASK)
_COLS = np.arange(_NS, dtype=np.int64)


def _half_keys(table: np.ndarray):
    lo = (table & _HALF).astype(np.int64)
    hi = (table >> _U20).astype(np.int64)
    return _KEY12[lo & 4095] + _KEY8[lo >> 12], _KEY12[hi & 4095] + _KEY8[hi >> 12]


def option_summary(table: np.ndarray, target: np.ndarray):
    """Return ``(count, union, intersection)`` of the subsets of ``table`` that sum to ``target``.

    ``table`` is a uint64 array of card masks and ``target`` an int array of sums. Only sums
    0..14 can be asked in play (a zero sum has exactly one subset, the empty set); any other sum
    gets no subset. ``count`` is the number of subsets, ``union`` and ``intersection`` are card
    masks (0 where count is 0).
    """
    table = np.asarray(table, np.uint64)
    target = np.asarray(target)
    t = np.where((target >= 0) & (target <= MAX_SUM), target, 15).astype(np.int64)
    return _summary(table, t)


def _summary(table: np.ndarray, t: np.ndarray):
    """``option_summary`` for int64 sums already in 0..15 (15: no subset)."""
    k_low, k_high = _half_keys(table)
    k_low *= 16
    k_high *= 16
    # Feasible splits: low sums a with a low subset summing to a and a high one to t - a.
    feasible = _LOW_REACH[k_low >> 4] & _HIGH_COMP[k_high + t]
    low = feasible & -feasible
    a = np.minimum(np.bitwise_count(low - 1).astype(np.int64), t)
    c_low = _CODE_LOW[k_low + a]
    c_high = _CODE_HIGH[k_high + (t - a)]
    fe = feasible != 0
    count = (c_low & 0xFFFF) * (c_high & 0xFFFF) * fe
    usable = ((c_low >> 16) & 31) | ((c_high >> 11) & 0x3E0)
    forced = ((c_low >> 21) & 31) | ((c_high >> 16) & 0x3E0)
    multi = np.nonzero(feasible ^ low)[0]
    if multi.size:  # several splits in a few games: combine all of them at once
        sel = ((feasible[multi, None] >> _COLS) & 1).astype(bool)
        t_m = t[multi, None]
        cl = _CODE_LOW[k_low[multi, None] + _COLS]
        ch = _CODE_HIGH[k_high[multi, None] + np.maximum(t_m - _COLS, 0)]
        count[multi] = ((cl & 0xFFFF) * (ch & 0xFFFF) * sel).sum(axis=1)
        usable[multi] = np.bitwise_or.reduce(
            np.where(sel, ((cl >> 16) & 31) | ((ch >> 11) & 0x3E0), 0), axis=1)
        forced[multi] = np.bitwise_and.reduce(
            np.where(sel, ((cl >> 21) & 31) | ((ch >> 16) & 0x3E0), 0x3FF), axis=1)
    union = _EXPAND[usable * fe] & table
    inter = _EXPAND[forced * fe] & table
    return count, union, inter


def single_summary(table: np.ndarray, target: np.ndarray):
    """Return ``(count, union, intersection)`` of the single table cards worth ``target``."""
    table = np.asarray(table, np.uint64)
    target = np.asarray(target, np.int64)
    ok = (target >= 1) & (target <= NUM_VALUES)
    nib = np.where(ok, _EXPAND[np.left_shift(1, np.clip(target - 1, 0, 9))], np.uint64(0))
    union = nib & table
    count = np.bitwise_count(union).astype(np.int64)
    inter = np.where(count == 1, union, np.uint64(0))
    return count, union, inter


# Sub-masks of each nibble (0..15), used to expand value patterns into card subsets.
_SUBNIBBLES = [[s for s in range(16) if s & ~n == 0] for n in range(16)]


def _subsets_with_sum(table_mask: int, target: int) -> list[int]:
    """Return every subset of ``table_mask`` whose values sum to ``target`` (bitmask recursion)."""
    out: list[int] = []

    def rec(value: int, remaining: int, acc: int) -> None:
        if remaining == 0:
            out.append(acc)
            return
        if value > NUM_VALUES or value > remaining:
            return
        shift = 4 * (value - 1)
        nib = (table_mask >> shift) & 0xF
        for sub in _SUBNIBBLES[nib]:
            k = sub.bit_count()
            if k * value <= remaining:
                rec(value + 1, remaining - k * value, acc | (sub << shift))

    if target > 0:
        rec(1, target, 0)
    return out


def capture_options(card: int, table_mask: int, rules: Rules | None = None) -> list[int]:
    """Return every legal capture for ``card`` on ``table_mask`` as table-card masks, ascending."""
    rules = Rules() if rules is None else rules
    value = _check_card(card) // 4 + 1
    table_mask = int(table_mask)
    if table_mask < 0 or table_mask >> 40:
        raise ValueError(f"{table_mask:#x} is not a 40-bit card mask")
    if table_mask >> card & 1:
        raise ValueError(f"card {card} cannot be played: it is already on the table")
    options = _subsets_with_sum(table_mask, FIFTEEN - value)
    if rules.prefer_single:
        singles = [o for o in options if o.bit_count() == 1]
        if singles:
            options = singles
    return sorted(options)
