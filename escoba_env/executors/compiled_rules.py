"""Escoba's rules compiled with Numba: capture options, the deal hash and shuffle, the mesa turn-up, scoring.

Imported only when Numba is installed (the ``[fast]`` extra; ``escoba_env.executors.engine_compiled`` decides
whether compiled code runs). Each function is the one-game form of a rule of the rule book
(``capture``, ``deal_rules``, ``scoring``) on machine integers, reading the same tables
(``capture.summary_tables``, ``deal_rules.INITIAL_FIFTEEN``); the compiled engine step
(``escoba_env.executors.engine_kernels``) and other compiled loops are built from them. Card masks are int64
here (every mask is below 2**42); the deal hash works on uint64 words.

Numba counts references to an array each time one is passed to a function it does not inline (two
atomic operations per array per call): ``borrow`` makes views that skip it, and the functions called
once per step are inlined (``inline="always"``) or take no arrays.
"""

from __future__ import annotations

import hashlib

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.registry import CPUDispatcher as Dispatcher
from numba.extending import intrinsic

from ..rulebook import capture, cards, deal_rules, scoring
from ..rulebook.capture import CARD_VALUES, summary_tables
from ..rulebook.cards import FULL_DECK, JOKER_MASK, OROS, SEVENS, VELO, value_nibble
from ..rulebook.deal_rules import HASH_CONSTANTS, INITIAL_FIFTEEN, table_values
from ..rulebook.scoring import PRIMERA_OF_VALUE, TIEBREAK_VALUES

_T = summary_tables()
_KA, _KB, _KC, _KD = _T["key_a"], _T["key_b"], _T["key_c"], _T["key_d"]


def _compact(usable: np.ndarray, forced: np.ndarray, shift: int) -> np.ndarray:
    """Return one int32 per (half key, sum) of ``capture``'s usable / forced tables of one half (card
    masks from bit ``shift``, the count above bit 40): count << 10 | forced values << 5 | usable values.

    The same answers in a quarter of the bytes: the tables stay in cache beside the engine's arrays.
    """
    out = (usable >> 40) << 10
    for j in range(5):
        out |= (((usable >> (shift + 4 * j)) & 15) != 0).astype(np.int64) << j
        out |= (((forced >> (shift + 4 * j)) & 15) != 0).astype(np.int64) << (5 + j)
    return out.astype(np.int32)


_LOW = _compact(_T["u_low"], _T["f_low"], 0)
_HIGH = _compact(_T["u_high"], _T["f_high"], 20)
_LOW_REACH = _T["low_reach"].astype(np.int16)
_HIGH_COMP = _T["high_comp"].astype(np.int16)
_EXPAND = _T["expand"].astype(np.int64)
_SINGLE_BY_CARD = _T["single_by_card"].astype(np.int64)
VALUE = CARD_VALUES.copy()
"""Capture value of each card id, 0 for a joker (``capture.CARD_VALUES``)."""
TABLE_VALUE = np.array(table_values(range(42)), np.int64)
"""Capture value of each card id 0..41, 0 for a joker (the deal rules' ``table_values``)."""
INITIAL_FIFTEEN_TABLE = np.array(INITIAL_FIFTEEN, np.int64)
NIBBLE = np.array([0] + [value_nibble(v) for v in range(1, 11)], np.int64)
"""``NIBBLE[v]``: the mask of the four cards of value ``v`` (1..10)."""
_PRIMERA = np.array(PRIMERA_OF_VALUE, np.int64)
_TIEBREAK = np.array(TIEBREAK_VALUES, np.int64)
_JOKER_SUBSETS = np.array([0, 1 << 40, 1 << 41, 3 << 40], np.int64)
_FULL = FULL_DECK
_JM = JOKER_MASK
_GOLDEN, _MIX1, _MIX2, _GAME_MUL, _EPISODE_MUL, _ROUND_MUL = (np.uint64(c) for c in HASH_CONSTANTS)
_U30, _U27, _U31, _U63 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(63)
_SIGN = np.uint64(1 << 63)
ONE = np.uint64(1)


@intrinsic
def popcount(typingctx, x):
    """Return the number of set bits of an integer (one machine instruction where the CPU has it)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return x(x), codegen


@intrinsic
def lowest_bit_index(typingctx, x):
    """Return the index of the lowest set bit of a non-zero integer (count of trailing zeros)."""
    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))
    return x(x), codegen


@intrinsic
def borrow(typingctx, arr):
    """Return a view of array ``arr`` without its reference count (the caller keeps ``arr`` alive).

    Numba counts references to an array each time one is passed to a function it did not inline: two
    atomic operations per array per call. The engine's arrays live as long as the kernel call, so its
    helpers take borrowed views, whose counting does nothing.
    """
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, value=args[0])
        out = context.make_array(signature.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(out, name, getattr(src, name))
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        return out._getvalue()
    return arr(arr), codegen


_jit = njit(cache=True, nogil=True)
_inline = njit(cache=True, nogil=True, inline="always")


_VALUE_SUMS = cards.mask_values(np.arange(1024, dtype=np.uint64)[None, :] << np.uint64(10) * np.arange(
    4, dtype=np.uint64)[:, None])
"""``_VALUE_SUMS[k, b]``: the capture values' sum of the cards of bits ``10k .. 10k + 9`` set in ``b``."""


@_inline
def mask_value(m):
    """Return the sum of the capture values of the plain cards of mask ``m`` (int64): four look-ups, one
    per 10 bits (``cards.mask_value``)."""
    return (_VALUE_SUMS[0, m & 1023] + _VALUE_SUMS[1, (m >> 10) & 1023] + _VALUE_SUMS[2, (m >> 20) & 1023]
            + _VALUE_SUMS[3, (m >> 30) & 1023])


@_inline
def summary(table, target):
    """Return (count, union, intersection) of the subsets of the plain ``table`` summing to ``target``
    (0..14): ``capture.summary_of`` on int64 masks (union and intersection are garbage at count 0)."""
    k = _KA[table & 1023] + _KB[(table >> 10) & 1023] + _KC[(table >> 20) & 1023] + _KD[table >> 30]
    kl = k & 0xFFFFFFFF
    kh = (k >> 32) + target
    feasible = np.int64(_LOW_REACH[kl >> 4]) & np.int64(_HIGH_COMP[kh])
    count = 0
    usable = 0  # value sets: bit v - 1 for value v
    forced = 1023
    while feasible != 0:
        a = lowest_bit_index(feasible)
        low = np.int64(_LOW[kl + a])
        high = np.int64(_HIGH[kh - a])
        count += (low >> 10) * (high >> 10)
        usable |= (low & 31) | ((high & 31) << 5)
        forced &= ((low >> 5) & 31) | (((high >> 5) & 31) << 5)
        feasible &= feasible - 1
    return count, _EXPAND[usable] & table, _EXPAND[forced] & table


@_jit
def makes_fifteen(total, wilds):
    """Return whether cards worth ``total`` plus ``wilds`` jokers can make 15 (``capture.makes_fifteen``)."""
    need = 15 - total
    return wilds <= need <= 10 * wilds


@_jit
def joker_options(table, taken, taken_value, card, playing, prefer_single, jokers):
    """Return (count, union, intersection, stop) of the options holding ``taken`` with a joker involved:
    ``capture.joker_summary_of`` on int64 masks."""
    rest = table & ~taken
    plain = rest & _FULL
    rest_j = rest & _JM
    wilds = popcount(taken & _JM) + (1 if card >= 40 else 0)
    need = 15 - VALUE[card] - taken_value
    count = 0
    union = 0
    inter = -1
    for s in range(15):  # each sum of the plain cards, then each subset of the jokers (1, 2 or 4)
        c, un, it = summary(plain, s)
        if c == 0:
            continue
        for xi in range(1 << jokers):
            x = _JOKER_SUBSETS[xi]
            if rest_j & x == x and makes_fifteen(15 - need + s, wilds + popcount(x)):
                count += c
                union |= un | x
                inter &= it | x
    stop = False
    if count > 1:
        u = mask_value(inter & _FULL)
        w = wilds + popcount(inter & _JM)
        stop = u <= 14 and makes_fifteen(15 - need + u, w) and summary(plain, min(u, 14))[0] > 0
    if prefer_single:
        s_union = table & _SINGLE_BY_CARD[card]
        if s_union != 0:
            if playing:
                count = popcount(s_union)
                return count, s_union, s_union if count == 1 else 0, False
            return 1, 0, 0, False
    return count, union, inter, stop


@_inline
def options(table, taken, taken_value, card, playing, jokers, prefer_single):
    """Return (count, union, intersection, stop) of the capture options of ``card`` that hold ``taken``
    (``Game.step``'s choice of summary: with a joker involved, ``joker_options``; else the single
    cards of ``prefer_single`` on a play, then ``summary``). ``jokers`` is ``Rules.jokers``."""
    if jokers and (card >= 40 or table & _JM):
        return joker_options(table, taken, taken_value, card, playing, prefer_single, jokers)
    target = 15 - VALUE[card] - taken_value
    if prefer_single and playing and 1 <= target <= 10:
        union = table & NIBBLE[target]
        count = popcount(union)
        if count:
            return count, union, union if count == 1 else 0, False
    count, union, inter = summary(table & ~taken, target)
    return count, union, inter, False


# ------------------------------------------------------------------ dealing


@_jit
def splitmix(x):
    x = x + _GOLDEN
    x = (x ^ (x >> _U30)) * _MIX1
    x = (x ^ (x >> _U27)) * _MIX2
    return x ^ (x >> _U31)


@_jit
def shuffle(seed, game_id, episode, round_index, num_cards, players, deck, g, buf):
    """Write the deck of (seed, game, episode, round) into ``deck[g]`` (``deal_rules.shuffled_deck``);
    return the dealer drawn for a new game. ``buf``: uint64 scratch of ``SORT_SCRATCH`` words.

    A card's place is the rank of its key among the keys (the order a sort gives; the keys differ
    in their low 6 bits), counted without branches: the loops vectorise. The sign bit is flipped so
    that signed comparison orders the unsigned keys.
    """
    h = splitmix((np.uint64(game_id) * _GAME_MUL) ^ seed)
    h = splitmix(h ^ (np.uint64(episode) * _EPISODE_MUL + (np.uint64(round_index) + ONE) * _ROUND_MUL))
    keys = buf.view(np.int64)
    for j in range(num_cards):
        keys[j] = np.int64(((splitmix(h + np.uint64(j + 1) * _GOLDEN) & ~_U63) | np.uint64(j)) ^ _SIGN)
    for j in range(num_cards):
        kj = keys[j]
        rank = 0
        for i in range(num_cards):
            rank += keys[i] < kj
        deck[g, rank] = j
    return np.int64(splitmix(h + np.uint64(num_cards + 1) * _GOLDEN) % np.uint64(players))


SORT_SCRATCH = 42
"""Words of the uint64 scratch ``shuffle`` ranks the keys in."""


@_jit
def group_ok(values, s):
    """Return whether group ``s`` (4-bit) of four table values (0: a joker) can make 15."""
    total = 0
    wilds = 0
    for j in range(4):
        if (s >> j) & 1:
            total += values[j]
            wilds += values[j] == 0
    return s != 0 and makes_fifteen(total, wilds)


@_jit
def group_key(cards, s):
    """Return ``deal_rules.group_key`` of group ``s`` of the four table ``cards``."""
    mask = 0
    for j in range(4):
        if (s >> j) & 1:
            mask |= 1 << cards[j]
    return ((popcount(s) << 49) + (((mask >> VELO) & 1) << 48) + (popcount(mask & SEVENS) << 45)
            + (popcount(mask & OROS) << 42) + ((1 << 42) - 1 - mask))


@_jit
def mesa_turn_up(cards):
    """Return (taken, escobas, table) of turning the four table ``cards`` (a tuple of ids) one at a time
    (``deal_rules.mesa_turn_up``)."""
    values = (TABLE_VALUE[cards[0]], TABLE_VALUE[cards[1]], TABLE_VALUE[cards[2]], TABLE_VALUE[cards[3]])
    gone = 0
    taken = 0
    escobas = 0
    for i in range(4):
        best = 0
        best_key = -1
        for s in range(1 << i, 1 << (i + 1)):
            if group_ok(values, s) and s & gone == 0:
                k = group_key(cards, s)
                if k > best_key:
                    best = s
                    best_key = k
        if best:
            gone |= best
            for j in range(4):
                if (best >> j) & 1:
                    taken |= 1 << cards[j]
            escobas += gone == (1 << (i + 1)) - 1
    table = 0
    for j in range(4):
        if not (gone >> j) & 1:
            table |= 1 << cards[j]
    return taken, escobas, table


# ------------------------------------------------------------------ scoring


@_jit
def strict_winner(metric, ns, out, r, col):
    """Write 1 into ``out[r, col, s]`` for the side with the strictly highest of ``metric[:ns]``, if any."""
    best = metric[0]
    for s in range(1, ns):
        best = max(best, metric[s])
    n_best = 0
    for s in range(ns):
        n_best += metric[s] == best
    for s in range(ns):
        out[r, col, s] = 1 if (n_best == 1 and metric[s] == best) else 0


@_jit
def primera(pile):
    """Return the primera of one side's pile; -1 if it misses a suit."""
    total = 0
    for suit in range(4):
        best = 0
        for value in range(1, 11):
            if (pile >> (4 * (value - 1) + suit)) & 1 and _PRIMERA[value - 1] > best:
                best = _PRIMERA[value - 1]
        if best == 0:
            return -1
        total += best
    return total


@_jit
def sevens_metric(pile, rule):
    """Return a side's sevens metric: its sevens (rule 0), the tie-break count (1), its primera (2)."""
    if rule == 0:
        return popcount(pile & SEVENS)
    if rule == 1:
        m = 0
        for v in _TIEBREAK:
            m = m * 5 + popcount(pile & NIBBLE[v])
        return m
    return primera(pile)


@_inline
def resolve(a, card, table, taken, taken_value, playing, jokers, prefer_single):
    """Return what action ``a`` does once its card is played (``Game.step``): (choosing, table, taken,
    taken_value, legal, captured, escoba_possible); ``jokers`` is ``Rules.jokers``.

    ``card`` is the card being played (``a`` itself, or the pending card when ``a`` names a table
    card or, with jokers, is the pending card's "stop"), ``taken``/``taken_value`` the table cards
    named before ``a``. Choosing: several options remain (``legal`` is then the cards to name next);
    else the card went to the table (``captured`` 0) or captured ``captured`` (played card included),
    and ``escoba_possible`` says whether that capture emptied the table.
    """
    if not playing and a != card:
        taken |= 1 << a
        taken_value += VALUE[a]
    count, union, inter, can_stop = options(table, taken, taken_value, card, playing, jokers, prefer_single)
    if not playing and a == card:  # jokers' "stop": the named cards plus the forced ones
        count = 1
    if count > 1:
        return True, table, taken, taken_value, (union & ~inter) | ((1 << card) if can_stop else 0), 0, False
    if count == 0:  # the card goes to the table
        return False, table | (1 << card), 0, 0, 0, 0, False
    take = taken | inter  # exactly one option: it executes
    return False, table & ~take, 0, 0, 0, take | (1 << card), table & ~take == 0


def cache_depends_on(namespace: dict, *modules) -> None:
    """Make the on-disk cache of every compiled function in ``namespace`` (a module's ``globals()``) also
    depend on the source files of ``modules``.

    Numba checks only the file that defines a cached function; one that calls another module's
    compiled functions, or reads its tables as constants, would otherwise keep a stale copy when that
    module changes. Numba versions without the attribute used here keep their own check.
    """
    stamps = []
    for m in modules:
        with open(m.__file__, "rb") as f:
            stamps.append(hashlib.sha256(f.read()).hexdigest())
    for obj in list(namespace.values()):
        cache_file = getattr(getattr(obj, "_cache", None), "_cache_file", None)
        stamp = getattr(cache_file, "_source_stamp", None)
        if isinstance(obj, Dispatcher) and stamp is not None:
            cache_file._source_stamp = (stamp, tuple(stamps))


cache_depends_on(globals(), capture, cards, deal_rules, scoring)  # their tables are constants here
