"""The worlds' hidden cards dealt compiled (Numba): ``agents.worlds.deal_hidden``, row by row.

Imported only when Numba is installed (the ``[fast]`` extra, part of ``[agents]``;
``agents.worlds.deal_hidden`` decides): the same decks and hands as its NumPy code (a card's place is
its rank among the uniforms, ties to the lower id, as a stable sort gives). It imports nothing of the
agents, so the worlds do not depend on the search's compiled rollouts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BUCKETS = 64
"""The hidden cards are first spread over this many buckets by their uniform (``floor(u * BUCKETS)``,
exact for a power of two, so a smaller uniform never lands in a later bucket), then sorted by insertion
within each bucket: the order of one stable sort, in about one pass."""


@njit(cache=True, nogil=True, inline="always")
def _bucket(key):
    b = np.int64(np.floor(key * BUCKETS))  # clamped: still never decreasing in the key
    return 0 if b < 0 else (BUCKETS - 1 if b >= BUCKETS else b)


@njit(cache=True, nogil=True)
def deal_hidden_kernel(unseen, uniforms, hand_sizes, own_hand, deck, hands):
    """Write ``worlds.deal_hidden``'s decks and hands into ``deck`` and ``hands``: the public cards in id
    order, then the hidden ones by their uniforms, ties to the lower id (what a stable sort gives)."""
    n, nc = uniforms.shape
    keys = np.empty(nc)
    fill = np.empty(BUCKETS, np.int64)
    low = np.empty(BUCKETS, np.int64)
    for r in range(n):
        u = np.int64(unseen[r])
        pos = 0
        fill[:] = 0
        for j in range(nc):  # the public cards first, in id order; count the hidden ones per bucket
            if not (u >> j) & 1:
                deck[r, pos] = j
                pos += 1
            else:
                fill[_bucket(uniforms[r, j])] += 1
        start = pos
        for b in range(BUCKETS):  # each bucket's first place, where its cards go next
            low[b] = pos
            pos += fill[b]
            fill[b] = low[b]
        for j in range(nc):  # the hidden ones in id order, each inserted by key within its bucket
            if (u >> j) & 1:
                key = uniforms[r, j]
                b = _bucket(key)
                i = fill[b]
                while i > low[b] and keys[i - 1] > key:  # a later id after an equal key
                    keys[i] = keys[i - 1]
                    deck[r, i] = deck[r, i - 1]
                    i -= 1
                keys[i] = key
                deck[r, i] = j
                fill[b] += 1
        pos = start
        hands[r, 0] = own_hand[r]
        for seat in range(1, hand_sizes.shape[1]):
            m = np.uint64(0)
            for _ in range(hand_sizes[r, seat]):
                m |= np.uint64(1) << np.uint64(deck[r, pos])
                pos += 1
            hands[r, seat] = m


def compiled_deal_hidden(unseen: np.ndarray, uniforms: np.ndarray, hand_sizes: np.ndarray,
                         own_hand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``worlds.deal_hidden``'s (decks, hands), computed by ``deal_hidden_kernel``."""
    n, nc = uniforms.shape
    deck = np.empty((n, nc), np.int8)
    hands = np.empty((n, hand_sizes.shape[1]), np.uint64)
    deal_hidden_kernel(np.ascontiguousarray(unseen, np.uint64), np.ascontiguousarray(uniforms, np.float64),
                       np.ascontiguousarray(hand_sizes, np.int64), np.ascontiguousarray(own_hand, np.uint64),
                       deck, hands)
    return deck, hands


@njit(cache=True, nogil=True, inline="always")
def _world_key(hands, deck, stock_pos, w):
    """Return a 64-bit hash of world ``w``'s hidden deal: its hands and its stock in order."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for k in range(hands.shape[1]):
        h = (h ^ np.uint64(hands[w, k])) * np.uint64(0x100000001B3)
        h ^= h >> np.uint64(29)
    for j in range(stock_pos[w], deck.shape[1]):
        h = (h ^ np.uint64(deck[w, j] + 1)) * np.uint64(0x100000001B3)
        h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True, inline="always")
def _same_world(hands, deck, stock_pos, a, b):
    """Return whether worlds ``a`` and ``b`` deal the same hands and the same stock in the same order."""
    if stock_pos[a] != stock_pos[b]:
        return False
    for k in range(hands.shape[1]):
        if hands[a, k] != hands[b, k]:
            return False
    for j in range(stock_pos[a], deck.shape[1]):
        if deck[a, j] != deck[b, j]:
            return False
    return True


@njit(cache=True, nogil=True)
def first_same_world(hands, deck, stock_pos, counts, out):
    """Write into ``out[w]`` the first world of ``w``'s block (the ``counts[i]`` worlds of observation
    ``i`` follow each other) that deals the same hands and stock as ``w`` (``w`` itself when none before
    it does). The worlds of one observation share all the rest, so such worlds play alike."""
    start = 0
    for c in counts:
        size = 1
        while size < 2 * c:
            size *= 2
        slot_world = np.full(size, -1, np.int64)
        slot_key = np.zeros(size, np.uint64)
        for w in range(start, start + c):
            key = _world_key(hands, deck, stock_pos, w)
            i = np.int64(key & np.uint64(size - 1))
            out[w] = w
            while slot_world[i] >= 0:
                if slot_key[i] == key and _same_world(hands, deck, stock_pos, slot_world[i], w):
                    out[w] = slot_world[i]
                    break
                i = (i + 1) & (size - 1)
            if out[w] == w:
                slot_world[i] = w
                slot_key[i] = key
        start += c
