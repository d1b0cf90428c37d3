"""Deal-time rules (docs/rules.md §3, §11): the deal hash and shuffle, the initial fifteen, the mesa turn-up.

Everything that happens when a round is dealt, before anyone plays, lives here once, in two forms
where both executors need it: plain Python ints for the one-game executor (``game.Game``) and
NumPy arrays for the batched engine (``engine.EscobaEngine``). The two forms are pinned equal by
the differential test (tests/engine/test_game_differential.py).

- **Deal hash.** The shuffle of round ``r`` of episode ``e`` in game slot ``g`` is a counter-based
  hash of ``(seed, g, e, r)`` (SplitMix64), so a game's deals never depend on the rest of its
  batch. Each card gets a 58-bit key with its id in the low 6 bits; sorting the keys orders the
  deck, and one more hash of the same counters (the last position) draws the dealer a new game
  starts with. ``shuffled_deck`` (one game) and ``shuffled_decks`` (a batch) give the same decks.
- **Initial fifteen.** If the four first table cards sum to 15 the dealer takes them as an escoba;
  if they split into two groups of 15, as two escobas (jokers wild). The rule is written once, in
  ``initial_fifteen_escobas`` over the four cards' values; ``INITIAL_FIFTEEN`` tabulates it for
  every value pattern and both executors read that table.
- **Escoba de mesa.** The four table cards are turned one at a time; after each turn the dealer
  takes the best group making 15 that holds the card just turned (most cards, then the velo, most
  sevens, most oros, lowest card mask), an escoba if it empties the table. ``mesa_turn_up`` (one
  game) and ``mesa_turn_up_batch`` rank the groups with the same key, ``group_key``.
"""

from __future__ import annotations

import numpy as np

from .capture import makes_fifteen
from .cards import NUM_CARDS, OROS, SEVENS, VELO, card_name

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_GAME_MUL, _EPISODE_MUL, _ROUND_MUL = 0xD1B54A32D192ED03, 0x8CB92BA72F3D8DD7, 0xAEF17502108EF2D9

# ------------------------------------------------------------------ deal hash, one game


def splitmix64(x: int) -> int:
    """Return the SplitMix64 finaliser of the 64-bit int ``x`` (after one golden-ratio step)."""
    x = (x + _GOLDEN) & _M64
    x = ((x ^ (x >> 30)) * _MIX1) & _M64
    x = ((x ^ (x >> 27)) * _MIX2) & _M64
    return x ^ (x >> 31)


def hash_key(seed: int, game_id: int, episode: int, round_index: int, num_cards: int = NUM_CARDS
             ) -> list[int]:
    """Return the ``num_cards + 1`` 64-bit hashes of one game's deal counters (one row of ``hash_keys``)."""
    h = splitmix64(((game_id * _GAME_MUL) & _M64) ^ (seed & _M64))
    ctr = (episode * _EPISODE_MUL + (round_index + 1) * _ROUND_MUL) & _M64
    h = splitmix64(h ^ ctr)
    return [splitmix64((h + j * _GOLDEN) & _M64) for j in range(1, num_cards + 2)]


def shuffled_deck(seed: int, game_id: int, episode: int, round_index: int, num_players: int = 2,
                  num_cards: int = NUM_CARDS) -> tuple[list[int], int]:
    """Return ``(deck, first_dealer)`` of one game: card ids top first, and the drawn dealer."""
    x = hash_key(seed, game_id, episode, round_index, num_cards)
    keys = sorted([(k & ~63) | c for c, k in enumerate(x[:num_cards])])
    return [k & 63 for k in keys], x[num_cards] % num_players


# ------------------------------------------------------------------ deal hash, a batch

_U_GOLDEN = np.uint64(_GOLDEN)


def splitmix64_inplace(x: np.ndarray) -> np.ndarray:
    """Return ``splitmix64`` of a uint64 array, computed in place (``x`` must be owned by the caller)."""
    x += _U_GOLDEN
    x ^= x >> np.uint64(30)
    x *= np.uint64(_MIX1)
    x ^= x >> np.uint64(27)
    x *= np.uint64(_MIX2)
    x ^= x >> np.uint64(31)
    return x


# Position j of a row hashes h + (j + 1) * golden ratio (then one more golden step in the mix).
_POSITIONS = {nc: np.arange(1, nc + 2, dtype=np.uint64)[None, :] * _U_GOLDEN for nc in (40, 41, 42)}
_CARD_IDS = {nc: np.arange(nc, dtype=np.uint64) for nc in (40, 41, 42)}


def hash_keys(seed: int, game_ids, episodes, rounds, num_cards: int = NUM_CARDS) -> np.ndarray:
    """Return uint64 hashes (len(game_ids), num_cards + 1) that depend only on the given counters."""
    ids = np.asarray(game_ids).astype(np.uint64)
    ids *= np.uint64(_GAME_MUL)
    ids ^= np.uint64(int(seed) & _M64)
    h = splitmix64_inplace(ids)
    ctr = np.asarray(episodes).astype(np.uint64)
    ctr *= np.uint64(_EPISODE_MUL)
    r = np.asarray(rounds).astype(np.uint64)
    r += np.uint64(1)
    r *= np.uint64(_ROUND_MUL)
    ctr += r
    h ^= ctr
    h = splitmix64_inplace(h)
    return splitmix64_inplace(h[:, None] + _POSITIONS[num_cards])


def shuffled_decks(seed: int, game_ids, episodes, rounds, num_players: int = 2,
                   num_cards: int = NUM_CARDS):
    """Return ``(decks, first_dealers)`` for the given counters (one row per game).

    ``decks`` holds int8 card ids 0..num_cards-1, top first; a plain sort of each row's keys (ids in
    the low 6 bits, so ties are impossible) orders the cards by hash. ``first_dealers`` are used for
    round 0 of a new game only.
    """
    x = hash_keys(seed, game_ids, episodes, rounds, num_cards)
    dealers = (x[:, num_cards] % np.uint64(num_players)).astype(np.int64)
    keys = x[:, :num_cards] & ~np.uint64(63)
    keys |= _CARD_IDS[num_cards]
    keys.sort(axis=1)
    keys &= np.uint64(63)
    return keys.astype(np.int8), dealers


# ------------------------------------------------------------------ explicit deals


def explicit_decks(num_games: int, num_players: int, num_cards: int, dealers, deck, hands, table,
                   stock):
    """Return the validated explicit first-round decks (num_games, num_cards) int8, or None.

    ``deck`` is all card ids top first (or one row per game); ``hands`` (one list of 3 ids per
    seat), ``table`` (4) and ``stock`` (the rest, top first) are laid out in deal order: card j of
    the deal goes to the ``j % P``-th seat after the dealer. Bad input raises ValueError.
    """
    n, p, nc = num_games, num_players, num_cards
    parts = (hands, table, stock)
    if deck is not None and any(x is not None for x in parts):
        raise ValueError("give either deck or hands/table/stock, not both")
    if deck is None and all(x is None for x in parts):
        return None
    if deck is None:
        if any(x is None for x in parts):
            raise ValueError("an explicit deal needs all of hands, table and stock")
        n_stock = nc - 3 * p - 4
        if len(hands) != p:
            raise ValueError(f"hands must hold one list per seat ({p} seats), got {len(hands)}")
        for i, h in enumerate(hands):
            if len(h) != 3:
                raise ValueError(f"hand of seat {i} must have 3 cards, got {len(h)}")
        if len(table) != 4:
            raise ValueError(f"table must have 4 cards, got {len(table)}")
        if len(stock) != n_stock:
            raise ValueError(f"stock must have {n_stock} cards with {p} players, got {len(stock)}")
        decks = np.zeros((n, nc), np.int64)
        hands_arr = np.asarray(hands, np.int64)
        dealers = np.asarray(dealers, np.int64)
        for j in range(p):
            seat = (dealers + 1 + j) % p
            for r in range(3):
                decks[:, j + p * r] = hands_arr[seat, r]
        decks[:, 3 * p: 3 * p + 4] = np.asarray(table, np.int64)
        decks[:, 3 * p + 4:] = np.asarray(stock, np.int64)
        what = "the explicit deal (hands + table + stock)"
    else:
        decks = np.array(deck, dtype=object)
        if decks.ndim == 1:
            decks = np.broadcast_to(decks, (n, decks.shape[0]))
        if decks.shape != (n, nc):
            raise ValueError(f"deck must have {nc} card ids (or one row of {nc} per game), got shape "
                             f"{decks.shape}")
        what = "deck"
    for row in np.asarray(decks, dtype=object).reshape(-1, nc):
        bad = [c for c in row if isinstance(c, bool) or not isinstance(c, (int, np.integer))
               or not 0 <= c < nc]
        if bad:
            raise ValueError(f"{what} has invalid card id(s) {bad}; ids are ints 0..{nc - 1}")
        counts = np.bincount(np.asarray(row, np.int64), minlength=nc)
        if (counts != 1).any():
            dup = [card_name(int(c)) for c in np.nonzero(counts > 1)[0]]
            miss = [card_name(int(c)) for c in np.nonzero(counts == 0)[0]]
            raise ValueError(f"{what} must hold each of the {nc} cards once: duplicated {dup}, "
                             f"missing {miss}")
    return np.asarray(decks, np.int64).astype(np.int8)


# ------------------------------------------------------------------ fifteen groups of the first table

# A group of the four table positions is a 4-bit int s in 1..15 (bit j: position j is in it).


def table_values(cards) -> list[int]:
    """Return the capture value of each card id (1..10), 0 for a joker (its value is wild)."""
    return [c // 4 + 1 if c < NUM_CARDS else 0 for c in cards]


def groups_making_15(cards) -> list[bool]:
    """Return ``ok`` (16 entries): ``ok[s]`` says whether group ``s`` of the four ``cards`` can make 15.

    Jokers are wild (``capture.makes_fifteen``); ``ok[0]`` (the empty group) is False.
    """
    values = table_values(cards)
    ok = [False] * 16
    for s in range(1, 16):
        total = wilds = 0
        for j in range(4):
            if s >> j & 1:
                total += values[j]
                wilds += values[j] == 0
        ok[s] = bool(makes_fifteen(total, wilds))
    return ok


def initial_fifteen_escobas(cards) -> int:
    """Return the dealer's escobas (0, 1 or 2) for a first table of four ``cards`` (docs/rules.md §3, §11).

    Two if the four cards split into two groups that can each make 15, else one if all four can
    make 15, else none (jokers wild).
    """
    ok = groups_making_15(cards)
    if any(ok[s] and ok[15 - s] for s in range(1, 15)):
        return 2
    return int(ok[15])


def _initial_fifteen_table() -> list[int]:
    """Return ``initial_fifteen_escobas`` for every pattern of four values 0..10 (0: a joker)."""
    out = []
    for code in range(11 ** 4):
        vals = [code // 11 ** (3 - j) % 11 for j in range(4)]
        out.append(initial_fifteen_escobas([4 * (v - 1) if v else NUM_CARDS for v in vals]))
    return out


INITIAL_FIFTEEN = _initial_fifteen_table()
"""Dealer's escobas by the four table values: index ``v0 * 1331 + v1 * 121 + v2 * 11 + v3``."""
_INITIAL_FIFTEEN_NP = np.array(INITIAL_FIFTEEN, np.int64)
_VALUE_OF_CARD = np.array(table_values(range(NUM_CARDS + 2)), np.int64)
_PATTERN_WEIGHTS = np.array([1331, 121, 11, 1], np.int64)
_VALUE_CODE = [v * w for w in (1331, 121, 11, 1) for v in table_values(range(NUM_CARDS + 2))]


def initial_fifteen_of(cards) -> int:
    """Return the dealer's initial-fifteen escobas for four table card ids (a ``INITIAL_FIFTEEN`` look-up)."""
    w = NUM_CARDS + 2
    return INITIAL_FIFTEEN[_VALUE_CODE[cards[0]] + _VALUE_CODE[w + cards[1]]
                           + _VALUE_CODE[2 * w + cards[2]] + _VALUE_CODE[3 * w + cards[3]]]


def initial_fifteen_batch(tcards: np.ndarray) -> np.ndarray:
    """Return the dealer's escobas (K,) for first tables ``tcards`` (K, 4) (``INITIAL_FIFTEEN`` look-ups)."""
    return _INITIAL_FIFTEEN_NP[_VALUE_OF_CARD[tcards.astype(np.int64)] @ _PATTERN_WEIGHTS]


# ------------------------------------------------------------------ escoba de mesa


def group_key(cards, s: int) -> int:
    """Return the dealer's preference for group ``s`` of the four table ``cards`` (higher is taken).

    Most cards, then the velo, then most sevens, then most oros, then the lowest card mask.
    """
    mask = 0
    for j in range(4):
        if s >> j & 1:
            mask |= 1 << cards[j]
    return ((s.bit_count() << 49) + ((mask >> VELO & 1) << 48) + ((mask & SEVENS).bit_count() << 45)
            + ((mask & OROS).bit_count() << 42) + ((1 << 42) - 1 - mask))


def mesa_turn_up(cards) -> tuple[int, int, int]:
    """Turn the four table ``cards`` one at a time (escoba de mesa); return (taken, escobas, table).

    ``taken`` is the mask of cards the dealer captured, ``escobas`` how many of those captures
    emptied the table, ``table`` the mask of the cards left.
    """
    ok = groups_making_15(cards)
    gone = taken = escobas = 0
    for i in range(4):  # after turning position i: the groups of positions <= i holding i
        best, best_key = 0, -1
        for s in range(1 << i, 1 << (i + 1)):
            if ok[s] and not s & gone:
                k = group_key(cards, s)
                if k > best_key:
                    best, best_key = s, k
        if best:
            gone |= best
            for j in range(4):
                if best >> j & 1:
                    taken |= 1 << cards[j]
            escobas += gone == (1 << (i + 1)) - 1
    table = 0
    for j in range(4):
        if not gone >> j & 1:
            table |= 1 << cards[j]
    return taken, escobas, table


# Column s - 1 of _GROUPS is the 0/1 membership of the four table positions in group s (1..15).
_GROUPS = np.array([[s >> j & 1 for s in range(1, 16)] for j in range(4)], np.int64)  # (4, 15)
_GROUP_IDS = np.arange(1, 16)
_TURN_COLUMNS = [np.array([s - 1 for s in range(1 << i, 1 << (i + 1))]) for i in range(4)]
_ONE, _ZERO = np.uint64(1), np.uint64(0)


def groups_making_15_batch(tcards: np.ndarray) -> np.ndarray:
    """Return bool (K, 15): column ``s - 1`` says whether group ``s`` of ``tcards`` (K, 4) can make 15."""
    values = _VALUE_OF_CARD[tcards.astype(np.int64)]
    return makes_fifteen(values @ _GROUPS, (values == 0).astype(np.int64) @ _GROUPS)


def mesa_turn_up_batch(tcards: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``mesa_turn_up`` of each row of ``tcards`` (K, 4): uint64 taken, int64 escobas, uint64 table."""
    k = len(tcards)
    tbits = _ONE << tcards.astype(np.uint64)
    ok = groups_making_15_batch(tcards)
    taken = np.zeros(k, np.uint64)
    escobas = np.zeros(k, np.int64)
    if not ok.any():
        return taken, escobas, tbits[:, 0] | tbits[:, 1] | tbits[:, 2] | tbits[:, 3]
    # group_key of every group (disjoint bits: the group's mask is the sum of its bits).
    b = tbits.astype(np.int64)
    sevens = np.bitwise_count(tbits & np.uint64(SEVENS)).astype(np.int64)
    oros = np.bitwise_count(tbits & np.uint64(OROS)).astype(np.int64)
    feats = (((b >> VELO) & 1) << 48) + (sevens << 45) + (oros << 42) - b
    key = feats @ _GROUPS + (_GROUPS.sum(axis=0) << 49) + ((1 << 42) - 1)
    key = np.where(ok, key, -1)
    gone = np.zeros(k, np.int64)  # positions captured so far (bits)
    rows = np.arange(k)
    for i in range(4):
        cols = _TURN_COLUMNS[i]
        cand = np.where((_GROUP_IDS[cols] & gone[:, None]) == 0, key[:, cols], -1)
        best = cand.argmax(axis=1)
        hit = np.flatnonzero(cand[rows, best] >= 0)
        if not hit.size:
            continue
        took = _GROUP_IDS[cols][best[hit]]
        gone[hit] |= took
        took_pos = (took[:, None] >> np.arange(4)) & 1 == 1
        taken[hit] |= np.bitwise_or.reduce(np.where(took_pos, tbits[hit], _ZERO), axis=1)
        escobas[hit] += gone[hit] == (1 << (i + 1)) - 1
    left = (gone[:, None] >> np.arange(4)) & 1 == 0
    return taken, escobas, np.bitwise_or.reduce(np.where(left, tbits, _ZERO), axis=1)
