"""Capture enumeration on card masks (docs/rules.md §4).

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
decision scheme (docs/rules.md §10): a card in every remaining option needs no decision.

Jokers (docs/rules.md §11; ids 40, 41) are wild for any value 1..10, played or on the table. For a
played card of value ``c`` and a set ``S`` of table cards holding ``k`` jokers and other cards
summing to ``s``, ``S`` (non-empty) is an option iff ``15 - c - s`` lies in ``[k, 10k]`` (``k = 0``:
``s = 15 - c``); a played joker is one more wild: ``15 - s`` in ``[k + 1, 10(k + 1)]``. Options are
distinct sets of cards, whatever values the jokers could take. ``joker_summary`` gives the batched
count / union / intersection of such options from the same tables, one sum of the other cards
at a time.

With jokers one option can hold another ({*1} and {*1, 3c} for a played 7o): naming table cards
alone can then never settle on the smaller one, so the play/take scheme has one more action while
a choice is pending: the played card's own id, legal when the cards named so far plus the cards
in every remaining option form an option themselves, takes exactly that option (``stop``).
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np

from .cards import (
    FULL_DECK,
    JOKER_MASK,
    JOKERS,
    NUM_CARDS,
    NUM_VALUES,
    card_name,
    check_card,
    check_mask,
    mask_values,
    value_nibble,
)
from .rules import Rules

FIFTEEN = 15
MAX_SUM = 14  # a played card is worth at least 1, so a capture takes at most 14
_NS = MAX_SUM + 1
_HALF_BITS = 20
_HALF_MASK = (1 << _HALF_BITS) - 1


def makes_fifteen(total, wilds):
    """Return where cards worth ``total`` plus ``wilds`` jokers (each worth any 1-10) can make 15.

    Broadcasts over arrays. Without jokers that is ``total == 15``; with ``k`` jokers,
    ``k <= 15 - total <= 10k``. The one statement of the joker rule for group sums, used by the
    engine (captures through ``joker_summary``, initial fifteen, mesa) and by agents and features
    that test sweeps.
    """
    if type(total) is int and type(wilds) is int:  # one group (deal_rules.py, the one-game executor)
        return wilds <= FIFTEEN - total <= 10 * wilds
    need = FIFTEEN - np.asarray(total)
    wilds = np.asarray(wilds)
    return (need >= wilds) & (need <= 10 * wilds)


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
    # 10-bit value set -> 40-bit mask of the nibbles of those values.
    vs = np.arange(1 << NUM_VALUES, dtype=np.uint64)
    expand = np.zeros(1 << NUM_VALUES, np.uint64)
    for j in range(NUM_VALUES):
        expand |= ((vs >> np.uint64(j)) & np.uint64(1)) * np.uint64(value_nibble(j + 1))
    return low, high, expand


(_LOW_N, _LOW_U, _LOW_F), (_HIGH_N, _HIGH_U, _HIGH_F), _EXPAND = _build_tables()
# Rows of the per-(half key, sum) tables have 16 columns; column 15 (sum 15, never asked) is empty.
# Bit a of _LOW_REACH[k]: the low half with key k has a subset summing to a.
_LOW_REACH = ((_LOW_N > 0) * (1 << np.arange(_NS))).sum(axis=1).astype(np.int64)
# Bit a of _HIGH_COMP[k * 16 + t]: the high half with key k has a subset summing to t - a.
_HIGH_COMP = np.zeros((5**5, 16), np.int64)
for _t in range(_NS):
    for _a in range(_t + 1):
        _HIGH_COMP[:, _t] |= (_HIGH_N[:, _t - _a] > 0).astype(np.int64) << _a
_HIGH_COMP = _HIGH_COMP.ravel()
# Half keys are additive over card bits: the base-5 key of a half is the sum over its cards of
# 5**(value index), so the keys of both halves (times the row width 16, low half in bits 0-31,
# high half in bits 32-63) come from four look-ups of 10 card bits each (8 KiB tables).
def _key_tables():
    bits = np.arange(NUM_CARDS)
    w = np.where(bits < _HALF_BITS, 16 * 5 ** (bits // 4), (16 * 5 ** (np.abs(bits - _HALF_BITS) // 4)) << 32)
    m = np.arange(1 << 10)
    return [((m[:, None] >> np.arange(10)) & 1) @ w[10 * i: 10 * i + 10] for i in range(4)]


_KEY_A, _KEY_B, _KEY_C, _KEY_D = (k.astype(np.int64) for k in _key_tables())
_LOW32 = np.int64(0xFFFFFFFF)
_M10 = np.int64(1023)
_S10, _S20, _S30, _S32 = (np.int64(s) for s in (10, 20, 30, 32))
_S40 = np.int64(40)


def _expand_code(n, values):
    """Return int64 table (3125 * 16,): the card mask of ``values`` | ``n`` << 40 (col 15 empty)."""
    code = np.zeros((5**5, 16), np.int64)
    code[:, :_NS] = _EXPAND[values].astype(np.int64) | (n << 40)
    return code.ravel()


# Per (half key, sum): usable / forced value sets expanded to their nibbles (the high half's in
# bits 20-39), the number of subsets in bits 40-63 of the "usable" tables.
_U_LOW = _expand_code(_LOW_N, _LOW_U)
_F_LOW = _expand_code(np.zeros_like(_LOW_N), _LOW_F * (_LOW_N > 0))
_U_HIGH = _expand_code(_HIGH_N, _HIGH_U << 5)
_F_HIGH = _expand_code(np.zeros_like(_HIGH_N), (_HIGH_F << 5) * (_HIGH_N > 0))


def _half_keys(table: np.ndarray):
    """Return (16 * low key, 16 * high key) of uint64 table masks, as int64."""
    m = table.view(np.int64)
    k = _KEY_A[m & _M10] + _KEY_B[(m >> _S10) & _M10] + _KEY_C[(m >> _S20) & _M10] + _KEY_D[m >> _S30]
    return k & _LOW32, k >> _S32


def option_summary(table: np.ndarray, target: np.ndarray):
    """Return ``(count, union, intersection)`` of the subsets of ``table`` that sum to ``target``.

    ``table`` is a uint64 array of card masks and ``target`` an int array of sums. Only sums
    0..14 can be asked in play (a zero sum has exactly one subset, the empty set); any other sum
    gets no subset. ``count`` is the number of subsets, ``union`` and ``intersection`` are card
    masks (0 where count is 0).
    """
    table = np.ascontiguousarray(table, np.uint64)
    target = np.asarray(target)
    t = np.where((target >= 0) & (target <= MAX_SUM), target, 15).astype(np.int64)
    count, union, inter = plain_summary(table, t)
    none = count == 0
    union[none] = 0
    inter[none] = 0
    return count, union, inter


def half_keys(table: np.ndarray):
    """Return the half keys of contiguous uint64 table masks, for ``plain_summary(..., keys=)``.

    A caller asking several sums of the same tables (one per card in a hand) computes the keys
    once per table and gathers them, instead of once per query.
    """
    return _half_keys(table)


def plain_summary(table: np.ndarray, t: np.ndarray, keys=None):
    """``option_summary`` for a contiguous uint64 ``table`` and int64 sums in 0..15 (15: none).

    Union and intersection are garbage where the count is 0 (the engine never reads them there).
    A sum splits into a low-half part ``a`` and a high-half part ``t - a``; the lowest feasible
    split of every game is read at once, and the few games with more splits are completed by a
    loop over split ranks (never over games). ``keys``: ``half_keys(table)``, when the caller has
    them already.
    """
    kl, kh = _half_keys(table) if keys is None else keys
    feasible = _LOW_REACH[kl >> 4] & _HIGH_COMP[kh + t]
    low = feasible & -feasible
    # a = index of the lowest feasible split; 64 (no split) is clipped to the empty column 15.
    a = np.minimum(np.bitwise_count((low - 1).view(np.uint64)), 15)
    il = kl + a
    kht = kh + t
    ih = kht - a
    ul = _U_LOW[il]
    uh = _U_HIGH[ih]
    count = (ul >> _S40) * (uh >> _S40)
    avail = table.view(np.int64)
    union = (ul | uh) & avail
    inter = (_F_LOW[il] | _F_HIGH[ih]) & avail
    rest = feasible ^ low
    multi = np.flatnonzero(rest)
    if multi.size:  # several splits in a few games: add the other splits one rank at a time
        rest, klm, khtm, av = rest[multi], kl[multi], kht[multi], avail[multi]
        cm, um, im = count[multi], union[multi], inter[multi]
        games = None  # positions (in multi) of the games still being combined; None: all
        while True:
            low = rest & -rest
            a = np.bitwise_count(low - 1)
            il = klm + a
            ih = khtm - a
            ul = _U_LOW[il]
            uh = _U_HIGH[ih]
            c = (ul >> _S40) * (uh >> _S40)
            u = (ul | uh) & av
            x = (_F_LOW[il] | _F_HIGH[ih]) & av
            if games is None:
                cm += c
                um |= u
                im &= x
            else:
                cm[games] += c
                um[games] |= u
                im[games] &= x
            rest ^= low
            more = np.flatnonzero(rest)
            if not more.size:
                break
            rest, klm, khtm, av = rest[more], klm[more], khtm[more], av[more]
            games = more if games is None else games[more]
        count[multi], union[multi], inter[multi] = cm, um, im
    return count, union.view(np.uint64), inter.view(np.uint64)


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


def _joker_options(card: int, table_mask: int) -> list[int]:
    """Return every capture (table-card mask) of ``card`` on ``table_mask`` when jokers are involved."""
    plain = table_mask & FULL_DECK
    table_jokers = [j for j in JOKERS if table_mask >> j & 1]
    value = 0 if card >= NUM_CARDS else card // 4 + 1
    out: list[int] = []
    for k in range(len(table_jokers) + 1):
        for chosen in itertools.combinations(table_jokers, k):
            jmask = sum(1 << j for j in chosen)
            wilds = k + (card >= NUM_CARDS)
            need = FIFTEEN - value  # the other table cards' sum plus the wild values
            sums = [need] if wilds == 0 else range(max(0, need - 10 * wilds), need - wilds + 1)
            for u in sums:
                subs = [0] if u == 0 else _subsets_with_sum(plain, u)
                out.extend(sub | jmask for sub in subs if sub | jmask)
    return out


def capture_options(card: int, table_mask: int, rules: Rules | None = None) -> list[int]:
    """Return every legal capture for ``card`` on ``table_mask`` as table-card masks, ascending.

    With ``rules.jokers`` the played card may be a joker (40, 41) and the table may hold jokers
    (bits 40, 41): see the module docstring for when a set with jokers is an option. Card ids and
    table bits beyond ``rules.num_cards`` are a ValueError.
    """
    rules = Rules() if rules is None else rules
    card = check_card(card)
    nc = rules.num_cards
    if card >= nc:
        raise ValueError(f"card {card} ({card_name(card)}) does not exist with {rules.jokers} joker(s)")
    table_mask = check_mask(table_mask, nc, "table_mask")
    if table_mask >> card & 1:
        raise ValueError(f"card {card} cannot be played: it is already on the table")
    if card >= NUM_CARDS or table_mask & JOKER_MASK:
        options = _joker_options(card, table_mask)
    else:
        options = _subsets_with_sum(table_mask, FIFTEEN - (card // 4 + 1))
    if rules.prefer_single:
        singles = [o for o in options if o.bit_count() == 1]
        if singles:
            options = singles
    return sorted(options)


# _SINGLE_BY_CARD[c]: the table cards (jokers included) that played card c may take alone.
_SINGLE_BY_CARD = np.zeros(NUM_CARDS + len(JOKERS), np.uint64)
for _c in range(NUM_CARDS):
    if _c // 4 + 1 >= 5:
        _SINGLE_BY_CARD[_c] = value_nibble(FIFTEEN - (_c // 4 + 1)) | JOKER_MASK
_SINGLE_BY_CARD[NUM_CARDS:] = sum(value_nibble(v) for v in range(5, NUM_VALUES + 1)) | JOKER_MASK
# Values of the played card and of named cards: a joker counts 0 (its value is wild).
CARD_VALUES = np.array([c // 4 + 1 for c in range(NUM_CARDS)] + [0] * len(JOKERS), np.int64)
_STD = np.uint64(FULL_DECK)
_JM = np.uint64(JOKER_MASK)
_ALL = np.uint64((1 << 64) - 1)
_ZERO64 = np.uint64(0)
_SUMS = np.arange(_NS, dtype=np.int64)
_JOKER_SUBSETS = (0, 1 << JOKERS[0], 1 << JOKERS[1], JOKER_MASK)


def joker_summary(table: np.ndarray, taken: np.ndarray, taken_value: np.ndarray, card: np.ndarray,
                  playing: np.ndarray, prefer_single: bool, jokers: int = 2):
    """Return ``(count, union, intersection, stop)`` of the capture options that contain ``taken``.

    Batched over K games with jokers involved. ``table`` (uint64) is the whole table (named cards
    included), ``taken`` the table cards named so far, ``taken_value`` the sum of their non-joker
    values, ``card`` the played card id (40, 41: a joker) and ``playing`` True where the card is
    being played now (``taken`` empty). ``union`` and ``intersection`` are over the rest of each
    option beyond ``taken`` (0 / garbage where the count is 0). ``stop`` is True where several
    options remain and ``taken | intersection`` is one of them (it holds no other remaining option).
    With ``prefer_single`` and a single card option for the card, only single-card options count
    (naming one of them completes it).
    """
    k = len(table)
    rest = table & ~taken
    plain = rest & _STD
    rest_j = rest & _JM
    cj = card >= NUM_CARDS
    wilds = np.bitwise_count(taken & _JM).astype(np.int64) + cj
    need = FIFTEEN - CARD_VALUES[card] - taken_value  # other cards' sum + wild values
    # Every sum 0..14 of the plain rest at once: (K, 15).
    c, un, it = plain_summary(np.repeat(plain, _NS), np.tile(_SUMS, k))
    c, un, it = c.reshape(k, _NS), un.reshape(k, _NS), it.reshape(k, _NS)
    count = np.zeros(k, np.int64)
    union = np.zeros(k, np.uint64)
    inter = np.full(k, _ALL)
    for x in _JOKER_SUBSETS[: (1, 2, 4)[jokers]]:
        xu = np.uint64(x)
        # an option: the plain cards sum to s, and with the w wild cards the group makes fifteen
        w = wilds + x.bit_count()
        fifteen = makes_fifteen(FIFTEEN - need[:, None] + _SUMS, w[:, None])
        ok = ((rest_j & xu) == xu)[:, None] & fifteen & (c > 0)
        count += np.where(ok, c, 0).sum(axis=1)
        union |= np.bitwise_or.reduce(np.where(ok, un | xu, _ZERO64), axis=1)
        inter &= np.bitwise_and.reduce(np.where(ok, it | xu, _ALL), axis=1)
    # taken | inter is an option iff the cell (sum of inter's plain cards, inter's jokers) is one:
    # every subset of that sum then contains inter's plain cards, so it is exactly them.
    u = mask_values(inter & _STD)
    w = wilds + np.bitwise_count(inter & _JM).astype(np.int64)
    uc = np.minimum(u, MAX_SUM)
    stop = (count > 1) & (u <= MAX_SUM) & makes_fifteen(FIFTEEN - need + u, w) & (c[np.arange(k), uc] > 0)
    if prefer_single:
        s_union = table & _SINGLE_BY_CARD[card]
        s_count = np.bitwise_count(s_union).astype(np.int64)
        single = s_count > 0
        s_inter = np.where(s_count == 1, s_union, _ZERO64)
        count = np.where(single, np.where(playing, s_count, 1), count)
        union = np.where(single, np.where(playing, s_union, _ZERO64), union)
        inter = np.where(single, np.where(playing, s_inter, _ZERO64), inter)
        stop &= ~single
    return count, union, inter, stop



# ------------------------------------------------------------------ one game, Python ints
# The same tables as Python lists, for the one-game executor (``game.Game``): its step makes no
# NumPy call. The per-(value pattern, sum) results are memoised (the key is the additive half key
# of the table plus the sum, unique because half keys are multiples of 16).

_KEY_LISTS = [k.tolist() for k in (_KEY_A, _KEY_B, _KEY_C, _KEY_D)]
_LOW_REACH_L = _LOW_REACH.tolist()
_HIGH_COMP_L = _HIGH_COMP.tolist()
_U_LOW_L, _U_HIGH_L, _F_LOW_L, _F_HIGH_L = (t.tolist() for t in (_U_LOW, _U_HIGH, _F_LOW, _F_HIGH))
_CACHE: dict[int, tuple[int, int, int]] = {}
_CACHE_LIMIT = 1 << 20
_CARD_MASK_40 = FULL_DECK
SINGLE_BY_CARD = _SINGLE_BY_CARD.tolist()
"""``SINGLE_BY_CARD[c]``: the table cards (jokers included) that played card ``c`` may take alone."""
VALUE_OF = CARD_VALUES.tolist()
"""``VALUE_OF[c]``: capture value of card id ``c`` (1..10), 0 for a joker (its value is wild)."""
_NIBBLE_OF_VALUE = [0] + [value_nibble(v) for v in range(1, NUM_VALUES + 1)]


def summary_of(table: int, target: int) -> tuple[int, int, int]:
    """Return ``option_summary`` of one plain table (an int mask, no jokers) and a sum in 0..14.

    ``(count, union, intersection)`` as Python ints; union and intersection are 0 where count is 0.
    """
    ka, kb, kc, kd = _KEY_LISTS
    k = ka[table & 1023] + kb[table >> 10 & 1023] + kc[table >> 20 & 1023] + kd[table >> 30] + target
    hit = _CACHE.get(k)
    if hit is None:
        kl = (k - target) & 0xFFFFFFFF  # 16 * low half key
        kh = ((k - target) >> 32) + target  # 16 * high half key + the sum
        feasible = _LOW_REACH_L[kl >> 4] & _HIGH_COMP_L[kh]
        count, union, inter = 0, 0, -1
        while feasible:
            low = feasible & -feasible
            a = low.bit_length() - 1
            ul, uh = _U_LOW_L[kl + a], _U_HIGH_L[kh - a]
            count += (ul >> 40) * (uh >> 40)
            union |= ul | uh
            inter &= _F_LOW_L[kl + a] | _F_HIGH_L[kh - a]
            feasible ^= low
        hit = (count, union & _CARD_MASK_40, inter & _CARD_MASK_40) if count else (0, 0, 0)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[k] = hit
    return hit[0], hit[1] & table, hit[2] & table


def single_summary_of(table: int, target: int) -> tuple[int, int, int]:
    """Return ``single_summary`` of one table and sum: the single table cards worth ``target``."""
    if not 1 <= target <= NUM_VALUES:
        return 0, 0, 0
    union = table & _NIBBLE_OF_VALUE[target]
    count = union.bit_count()
    return count, union, union if count == 1 else 0


def joker_summary_of(table: int, taken: int, taken_value: int, card: int, playing: bool,
                     prefer_single: bool, jokers: int = 2) -> tuple[int, int, int, bool]:
    """Return ``joker_summary`` of one game as Python ints: ``(count, union, intersection, stop)``."""
    rest = table & ~taken
    plain = rest & FULL_DECK
    rest_j = rest & JOKER_MASK
    wilds = (taken & JOKER_MASK).bit_count() + (card >= NUM_CARDS)
    need = FIFTEEN - VALUE_OF[card] - taken_value  # other cards' sum + wild values
    sums = [summary_of(plain, s) for s in range(_NS)]
    count, union, inter = 0, 0, -1
    for x in _JOKER_SUBSETS[: (1, 2, 4)[jokers]]:
        if rest_j & x != x:
            continue
        w = wilds + x.bit_count()
        for s, (c, un, it) in enumerate(sums):
            if c and makes_fifteen(FIFTEEN - need + s, w):
                count += c
                union |= un | x
                inter &= it | x
    stop = False
    if count > 1:
        u = sum(VALUE_OF[b] for b in range(NUM_CARDS) if inter >> b & 1)
        w = wilds + (inter & JOKER_MASK).bit_count()
        stop = u <= MAX_SUM and makes_fifteen(FIFTEEN - need + u, w) and sums[u][0] > 0
    if prefer_single:
        s_union = table & SINGLE_BY_CARD[card]
        if s_union:
            if playing:
                count = s_union.bit_count()
                return count, s_union, s_union if count == 1 else 0, False
            return 1, 0, 0, False
    return count, union, inter, stop
