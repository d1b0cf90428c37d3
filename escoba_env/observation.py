"""Seat-relative observation vectors, encoded for a whole batch at once (DESIGN.md decision 5).

The vector has a fixed length ``OBS_SIZE`` for every rules configuration (seat and side slots are
sized for 4 and unused slots are zero), so one network can read every variant. "Relative seat k"
is seat ``(observer + k) % num_players``: slot 0 is always the observer. "Relative side k" is the
side of relative seat k for k < num_sides (with partnerships: slot 0 the observer's team, slot 1
the other team).

Card planes (40 entries each, index = card id, 1.0 where the card is in the set):

==========  =====================================================================
plane       content
==========  =====================================================================
0           own hand
1-4         captured cards this round of relative seats 0-3 (the capture piles)
5           table
6-9         cards played from hand this round by relative seats 0-3
10          unseen: cards in no public place and not in the own hand (other hands and stock)
11          pending played card, during a capture choice (one card)
12          table cards taken so far during a capture choice
==========  =====================================================================

Scalars, from index ``13 * 40 = 520``:

=========  ===============================================================
index      content
=========  ===============================================================
520-523    escobas this round of relative sides 0-3
524-527    cumulative score of relative sides 0-3, divided by target_score
528        cards left in the stock / 40
529-532    hand sizes of relative seats 0-3 / 3
533-536    dealer, one-hot over relative seats 0-3
537-540    last capturer this round, one-hot over relative seats 0-3 (all 0: nobody yet)
541        1.0 during a capture choice (actions name table cards), else 0
542-544    number of players, one-hot over 2, 3, 4
545        1.0 with partnerships
=========  ===============================================================

An observation never contains another player's hand or the stock order.
"""

from __future__ import annotations

import numpy as np

from .cards import FULL_DECK, NUM_CARDS

NUM_PLANES = 13
MAX_SEATS = 4
PLANE = {
    "hand": 0,
    "piles": 1,
    "table": 5,
    "played": 6,
    "unseen": 10,
    "pending": 11,
    "taken": 12,
}
SCALARS = {
    "escobas": 520,
    "scores": 524,
    "stock": 528,
    "hand_sizes": 529,
    "dealer": 533,
    "last_capturer": 537,
    "capture_phase": 541,
    "num_players": 542,
    "partnerships": 545,
}
OBS_SIZE = 546
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


def observer_planes(engine, seats: np.ndarray, games: np.ndarray | None = None) -> np.ndarray:
    """Return the 13 card-plane masks (len(games), 13) uint64 seen by ``seats`` in ``games``."""
    games = engine._rows if games is None else np.asarray(games)
    seats = np.asarray(seats, np.int64)
    p = engine.num_players
    k = len(games)
    rel = (seats[:, None] + np.arange(p)[None, :]) % p
    gcol = games[:, None]
    masks = np.zeros((k, NUM_PLANES), np.uint64)
    masks[:, 0] = engine.hands[games, seats]
    masks[:, 1:1 + p] = engine.piles[gcol, rel]
    masks[:, 5] = engine.table[games]
    masks[:, 6:6 + p] = engine.played[gcol, rel]
    pending = engine.pending[games]
    masks[:, 11] = np.where(pending >= 0, _ONE << np.maximum(pending, 0).astype(np.uint64), _ZERO)
    masks[:, 12] = engine.taken[games]
    public = np.bitwise_or.reduce(masks, axis=1)
    masks[:, 10] = np.uint64(FULL_DECK) & ~public
    return masks


def encode(engine, seats, games=None, out: np.ndarray | None = None) -> np.ndarray:
    """Return float32 observations (len(games), OBS_SIZE) of ``seats`` in ``games`` (default: all).

    Writes into ``out`` when given (it must be float32 of the right shape).
    """
    games = engine._rows if games is None else np.asarray(games)
    seats = np.broadcast_to(np.asarray(seats, np.int64), games.shape)
    k, p, s = len(games), engine.num_players, engine.num_sides
    if out is None:
        out = np.zeros((k, OBS_SIZE), np.float32)
    masks = observer_planes(engine, seats, games)
    bits = np.unpackbits(masks.view(np.uint8).reshape(k, NUM_PLANES, 8), axis=-1, bitorder="little")
    out[:, : NUM_PLANES * NUM_CARDS].reshape(k, NUM_PLANES, NUM_CARDS)[:] = bits[:, :, :NUM_CARDS]
    out[:, NUM_PLANES * NUM_CARDS:] = 0
    rel = (seats[:, None] + np.arange(p)[None, :]) % p
    rel_side = engine.side_of_seat[rel[:, :s]]
    gcol = games[:, None]
    if engine.rules.partnerships:
        esc = engine.escobas[games][:, [0, 1]] + engine.escobas[games][:, [2, 3]]
    else:
        esc = engine.escobas[games]
    out[:, 520:520 + s] = np.take_along_axis(esc, rel_side, axis=1)
    out[:, 524:524 + s] = engine.scores[gcol, rel_side] / engine.rules.target_score
    out[:, 528] = (NUM_CARDS - engine.stock_pos[games]) / NUM_CARDS
    out[:, 529:529 + p] = np.bitwise_count(engine.hands[gcol, rel]) / 3.0
    dealer_rel = (engine.dealer[games] - seats) % p
    out[np.arange(k), 533 + dealer_rel] = 1.0
    lc = engine.last_capturer[games]
    has = lc >= 0
    out[np.arange(k)[has], 537 + ((lc[has] - seats[has]) % p)] = 1.0
    out[:, 541] = engine.pending[games] >= 0
    out[:, 542 + p - 2] = 1.0
    out[:, 545] = float(engine.rules.partnerships)
    return out


def action_masks(engine, seats, games=None) -> np.ndarray:
    """Return int8 action masks (len(games), 40): the legal actions for the seat to act, else 0."""
    games = engine._rows if games is None else np.asarray(games)
    seats = np.broadcast_to(np.asarray(seats, np.int64), games.shape)
    legal = np.where(engine.to_act[games] == seats, engine.legal[games], _ZERO)
    b = np.unpackbits(legal.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    return b[:, :NUM_CARDS].astype(np.int8)
