"""Dealing into the batched engine: start a round in some of its games, then give out the hands.

``start_round`` shuffles (or takes explicit decks), lays the table with the initial-fifteen check or
the mesa turn-up (``escoba_env.rulebook.deal_rules`` holds those rules) and clears the round's piles;
``deal_hands`` gives three stock cards to each seat, and ``deal_short`` the last short deal of a
jokers game. Each works on the engine's arrays for the games given (docs/rules.md §3); the engine
(``escoba_env.executors.engine``) calls them when a round starts and when the hands run out.
"""

from __future__ import annotations

import numpy as np

from ..rulebook.deal_rules import initial_fifteen_batch, mesa_turn_up_batch, shuffled_decks

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_DEAL_OFFSETS_T = {p: np.arange(3 * p)[:, None] for p in (2, 3, 4)}


def start_round(eng, games: np.ndarray, decks=None, draw_dealer=False) -> None:
    """Shuffle (or take ``decks``), lay the table with the initial-fifteen check, clear piles.

    ``draw_dealer`` (bool or one per game) marks new games, whose dealer is drawn from the
    deal's hash. The hands are dealt by ``deal_hands`` afterwards; the deal order is the same:
    hands come from deck positions 0..3P-1, the table from the next four.
    """
    p = eng.num_players
    if decks is None:
        decks, drawn = shuffled_decks(eng.seed, eng.game_ids[games], eng.episode[games],
                                      eng.round_index[games], p, eng._nc)
        if np.any(draw_dealer):
            eng.dealer[games] = np.where(draw_dealer, drawn, eng.dealer[games])
    eng.deck[games] = decks
    eng.piles[games] = 0
    eng.played[games] = 0
    eng.escobas[games] = 0
    eng.last_capturer[games] = -1
    eng.stock_pos[games] = 0
    dealer = eng.dealer[games]
    tcards = decks[:, 3 * p: 3 * p + 4]
    if eng.rules.mesa_deal:  # replaces the initial-fifteen check
        gained, n_esc, table = mesa_turn_up_batch(tcards)
        hit = gained != _ZERO
    else:
        tbits = _ONE << tcards.astype(np.uint64)
        table = tbits[:, 0] | tbits[:, 1] | tbits[:, 2] | tbits[:, 3]
        if eng.rules.initial_fifteen:
            n_esc = initial_fifteen_batch(tcards)
            hit = n_esc > 0
            gained = table
            table = np.where(hit, _ZERO, table)
        else:
            hit = None
    if hit is not None and hit.any():
        g, d = games[hit], dealer[hit]
        eng.piles[g, d] |= gained[hit]
        eng.escobas[g, d] += n_esc[hit]
        eng.last_capturer[g] = d
    eng.table[games] = table
    eng.to_act[games] = eng._next_seat[dealer]


def deal_hands(eng, games: np.ndarray) -> None:
    """Give three stock cards to each seat of ``games``, starting after the dealer.

    Works on (3P, K) arrays (the long axis last: small trailing axes are slow in NumPy).
    """
    p = eng.num_players
    pos = eng.stock_pos[games]
    if eng._jokers:
        short = eng._nc - pos < 3 * p
        if short.any():
            deal_short(eng, games[short])
            games, pos = games[~short], pos[~short]
    # Hand cards sit at deck positions 0..3P-1 of a new round, then after the table cards.
    base = games * eng._nc + pos
    cards = eng.deck.reshape(-1)[_DEAL_OFFSETS_T[p] + base]  # (3P, K): card j of the deal
    bits = _ONE << cards.astype(np.uint64)
    dealer = eng.dealer[games]
    flat = eng.hands.reshape(-1)
    row = games * p
    for j in range(p):  # card j, j + P, j + 2P go to the j-th seat after the dealer
        seat = dealer + (j + 1)
        seat = seat & 1 if p == 2 else seat - p * (seat >= p)
        flat[row + seat] = bits[j] | bits[j + p] | bits[j + 2 * p]
    eng.stock_pos[games] = pos + np.where(pos == 0, 3 * p + 4, 3 * p)
    eng.hand_count[games] = 3 * p


def deal_short(eng, games: np.ndarray) -> None:
    """Deal the last, short deal of a jokers game: the 1 or 2 stock cards left, one a seat.

    The cards go one at a time in the usual order (the seat after the dealer first) as far as
    they go; the other seats stay empty-handed and the rotation passes over them.
    """
    p, nc = eng.num_players, eng._nc
    pos = eng.stock_pos[games]
    dealer = eng.dealer[games]
    flat_deck = eng.deck.reshape(-1)
    flat = eng.hands.reshape(-1)
    left = nc - pos
    for j in range(2):  # the short deal holds jokers (1 or 2) < P cards
        has = np.flatnonzero(left > j)
        if not has.size:
            break
        g = games[has]
        card = flat_deck[g * nc + pos[has] + j].astype(np.uint64)
        flat[g * p + (dealer[has] + 1 + j) % p] |= _ONE << card
    eng.stock_pos[games] = nc
    eng.hand_count[games] = left
