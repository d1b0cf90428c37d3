"""The batched engine's step compiled with Numba: one call steps every game, a plain loop over games.

Imported only when Numba is installed (the ``[fast]`` extra; ``escoba_env.executors.engine_compiled`` decides
whether to use it). Each game is stepped as the one-game executor (``escoba_env.executors.game``) steps it, on
the engine's own arrays, with the compiled rules of ``escoba_env.executors.compiled_rules``. ``RULE_FIELDS``
names the entries of the int64 ``params`` array the functions here read; ``EngineArrays`` bundles
the engine's state arrays.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..rulebook import cards
from ..rulebook.cards import OROS, SEVENS, VELO
from . import compiled_rules
from .compiled_rules import (
    INITIAL_FIFTEEN_TABLE,
    ONE,
    SORT_SCRATCH,
    TABLE_VALUE,
    borrow,
    cache_depends_on,
    mesa_turn_up,
    popcount,
    resolve,
    sevens_metric,
    shuffle,
    strict_winner,
)

RULE_FIELDS = ("players", "sides", "num_cards", "jokers", "prefer_single", "last_play_escoba",
               "initial_fifteen", "mesa_deal", "sevens_rule", "bonus_sweeps", "target_score",
               "partnerships", "single_round", "max_rounds", "autoreset")
"""Entries of the ``params`` array (int64): the rules and the engine's settings (``max_rounds`` -1: none;
``sevens_rule`` 0 most sevens, 1 with tie-break, 2 primera)."""
(_P, _S, _NC, _JOKERS, _PREFER, _LPE, _INIT15, _MESA, _SEVENS, _BONUS, _TARGET, _PARTNER, _SINGLE,
 _MAXR, _AUTO) = range(len(RULE_FIELDS))

_jit = njit(cache=True, nogil=True, _nrt=False)
"""Numba's reference counting off (``_nrt=False``, the option Numba's own allocation-free helpers use):
nothing here allocates (scratch comes from the caller), and with counting on, every array handed to a
compiled helper, or to a function inlined into a loop, costs two calls into Numba's runtime per call,
borrowed views (``borrow``) included: about 7% of a search rollout's time went there."""


# ------------------------------------------------------------------ the engine's arrays

EngineArrays = namedtuple("EngineArrays", (
    "hands", "hand_count", "table", "piles", "played", "escobas", "scores", "deck", "stock_pos", "dealer",
    "to_act", "last_capturer", "pending", "taken", "taken_value", "legal", "round_index", "done",
    "truncated", "winner", "episode", "game_ids"))
"""The state arrays of an ``EscobaEngine`` (its attributes of the same names), as one argument."""


@_jit
def borrowed(st):
    """Return ``st`` (``EngineArrays``) with every array ``borrow``-ed."""
    return EngineArrays(borrow(st.hands), borrow(st.hand_count), borrow(st.table), borrow(st.piles),
                        borrow(st.played), borrow(st.escobas), borrow(st.scores), borrow(st.deck),
                        borrow(st.stock_pos), borrow(st.dealer), borrow(st.to_act), borrow(st.last_capturer),
                        borrow(st.pending), borrow(st.taken), borrow(st.taken_value), borrow(st.legal),
                        borrow(st.round_index), borrow(st.done), borrow(st.truncated), borrow(st.winner),
                        borrow(st.episode), borrow(st.game_ids))


@_jit
def start_round(st, rp, seed, g, draw_dealer, buf):
    """Shuffle game ``g``'s next round (a new game's dealer drawn too), lay the table (initial fifteen
    or mesa turn-up), clear the piles (``engine_deal.start_round``); the hands are dealt afterwards."""
    p = rp[_P]
    drawn = shuffle(seed, st.game_ids[g], st.episode[g], st.round_index[g], rp[_NC], p, st.deck, g, buf)
    if draw_dealer:
        st.dealer[g] = drawn
    for k in range(p):
        st.piles[g, k] = 0
        st.played[g, k] = 0
        st.escobas[g, k] = 0
    st.last_capturer[g] = -1
    st.stock_pos[g] = 0
    d = st.dealer[g]
    t = (np.int64(st.deck[g, 3 * p]), np.int64(st.deck[g, 3 * p + 1]), np.int64(st.deck[g, 3 * p + 2]),
         np.int64(st.deck[g, 3 * p + 3]))
    gained = 0
    n_esc = 0
    if rp[_MESA]:  # replaces the initial-fifteen check
        gained, n_esc, table = mesa_turn_up(t)
    else:
        table = (1 << t[0]) | (1 << t[1]) | (1 << t[2]) | (1 << t[3])
        if rp[_INIT15]:
            n_esc = INITIAL_FIFTEEN_TABLE[TABLE_VALUE[t[0]] * 1331 + TABLE_VALUE[t[1]] * 121
                                     + TABLE_VALUE[t[2]] * 11 + TABLE_VALUE[t[3]]]
            if n_esc:
                gained = table
                table = 0
    if gained:
        st.piles[g, d] = np.uint64(gained)
        st.escobas[g, d] += n_esc
        st.last_capturer[g] = d
    st.table[g] = np.uint64(table)
    st.to_act[g] = (d + 1) % p


@_jit
def deal_hands(hands, hand_count, stock_pos, deck, dealer, g, p, nc):
    """Give three stock cards to each seat of game ``g`` after the dealer (with jokers, the short deal)."""
    pos = stock_pos[g]
    seat = dealer[g]
    if nc - pos < 3 * p:  # jokers only: the 1 or 2 cards left, one a seat
        for j in range(nc - pos):
            seat = seat + 1 if seat + 1 < p else 0
            hands[g, seat] |= ONE << np.uint64(deck[g, pos + j])
        hand_count[g] = nc - pos
        stock_pos[g] = nc
        return
    for j in range(pos, pos + p):
        seat = seat + 1 if seat + 1 < p else 0
        hands[g, seat] = ((ONE << np.uint64(deck[g, j])) | (ONE << np.uint64(deck[g, j + p]))
                          | (ONE << np.uint64(deck[g, j + 2 * p])))
    stock_pos[g] = pos + (3 * p + 4 if pos == 0 else 3 * p)
    hand_count[g] = 3 * p


@_jit
def score_round(st, rp, g, rows, r, work):
    """Write game ``g``'s round awards per side into ``rows[r]`` (``REPORTED``: points, the categories,
    escobas; ``scoring.round_awards``). ``work``: int64 scratch of 8 words."""
    ns = rp[_S]
    for s in range(ns):
        pile = st.piles[g, s] | st.piles[g, s + 2] if rp[_PARTNER] else st.piles[g, s]
        work[s] = np.int64(pile)
        rows[r, 5, s] = st.escobas[g, s] + st.escobas[g, s + 2] if rp[_PARTNER] else st.escobas[g, s]
    for col in range(1, 5):
        for s in range(ns):
            pile = work[s]
            if col == 1:
                work[4 + s] = popcount(pile)
            elif col == 2:
                work[4 + s] = popcount(pile & OROS)
            elif col == 4:
                work[4 + s] = sevens_metric(pile, rp[_SEVENS])
        if col == 3:
            for s in range(ns):
                rows[r, 3, s] = (work[s] >> VELO) & 1
            continue
        if col == 4 and rp[_SEVENS] == 2:  # nobody has a primera: nobody wins the sevens
            top = work[4]
            for s in range(1, ns):
                top = max(top, work[4 + s])
            if top < 0:
                for s in range(ns):
                    work[4 + s] = 0
        strict_winner(work[4:], ns, rows, r, col)
    for s in range(ns):
        if rp[_BONUS]:
            rows[r, 2, s] *= 2 if popcount(work[s] & OROS) == 10 else 1
            rows[r, 4, s] *= 2 if popcount(work[s] & SEVENS) == 4 else 1
        rows[r, 0, s] = rows[r, 1, s] + rows[r, 2, s] + rows[r, 3, s] + rows[r, 4, s] + rows[r, 5, s]


# ------------------------------------------------------------------ stepping


@_jit
def end_round(st, rp, seed, g, rows, meta, r, buf):
    """Finish game ``g``'s round (``EscobaEngine._end_round``); return whether a round starts in it.

    The last capturer takes the table; the report goes to ``rows[r]`` (``score_round``) and
    ``meta[r]`` (game, finished, winner, cut, then the scores per side); then the next round, the
    game's end, or (autoreset) the next game's first round. The new round's hands are not dealt.
    """
    lc = st.last_capturer[g]
    if lc >= 0:
        st.piles[g, lc] |= st.table[g]
        st.table[g] = 0
    score_round(st, rp, g, rows, r, meta[r])  # meta[r] is scratch until written below
    ns = rp[_S]
    best = -(1 << 62)
    top = 0
    for s in range(ns):
        sc = st.scores[g, s] + rows[r, 0, s]
        st.scores[g, s] = sc
        if sc > best:
            best = sc
            top = s
    n_best = 0
    for s in range(ns):
        meta[r, 4 + s] = st.scores[g, s]
        n_best += st.scores[g, s] == best
    ri = st.round_index[g] + 1
    st.round_index[g] = ri
    won = n_best == 1 if rp[_SINGLE] else best >= rp[_TARGET] and n_best == 1
    finished = won or rp[_SINGLE] != 0
    cut = rp[_MAXR] >= 0 and not finished and ri >= rp[_MAXR]
    finished = finished or cut
    winner = top if won and finished else -1
    meta[r, 0], meta[r, 1], meta[r, 2], meta[r, 3] = g, finished, winner, cut
    if not finished:
        st.dealer[g] = (st.dealer[g] + 1) % rp[_P]
        start_round(st, rp, seed, g, False, buf)
        return True
    st.winner[g] = winner
    st.truncated[g] = cut
    st.done[g] = True
    st.legal[g] = 0
    if not rp[_AUTO]:
        return False
    st.episode[g] += 1  # autoreset: the slot's next game, its dealer drawn
    for s in range(ns):
        st.scores[g, s] = 0
    st.round_index[g] = 0
    st.done[g] = False
    st.truncated[g] = False
    st.winner[g] = -1
    for k in range(rp[_P]):
        st.hands[g, k] = 0
    st.pending[g] = -1
    st.taken[g] = 0
    st.taken_value[g] = 0
    start_round(st, rp, seed, g, True, buf)
    return True


@_jit
def shapes_ok(st, rp, n):
    """Return whether every state array holds ``n`` games of the sizes ``rp`` says (no index goes astray)."""
    p = rp[_P]
    if st.hands.shape != (n, p) or st.piles.shape != (n, p) or st.played.shape != (n, p):
        return False
    if st.escobas.shape != (n, p) or st.scores.shape != (n, rp[_S]) or st.deck.shape != (n, rp[_NC]):
        return False
    for m in (len(st.hand_count), len(st.table), len(st.stock_pos), len(st.dealer), len(st.to_act),
              len(st.last_capturer), len(st.pending), len(st.taken), len(st.taken_value), len(st.legal),
              len(st.round_index), len(st.done), len(st.truncated), len(st.winner), len(st.episode),
              len(st.game_ids)):
        if m != n:
            return False
    return True


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def illegal(mask, a):
    """Return whether action ``a`` is not in legal mask ``mask`` (out of 0..63 included)."""
    return a < 0 or a >= 64 or (mask >> np.uint64(a)) & ONE == 0


@_jit
def first_illegal(legal, done, active, actions):
    """Return the first game stepped (unfinished, inside ``active`` unless it is empty) whose action is
    not legal, or -1."""
    use_active = len(active) > 0
    for g in range(len(actions)):
        if done[g] or (use_active and not active[g]):
            continue
        if illegal(legal[g], actions[g]):
            return g
    return -1


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def step_rules(rp):
    """Return what ``step_one`` reads of ``rp`` as plain values: (players, cards, jokers, prefer-single,
    last-play escoba); read from the array at each game, they would be read again after every write."""
    return rp[_P], rp[_NC], rp[_JOKERS], rp[_PREFER] != 0, rp[_LPE] != 0


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def step_one(st, rp, seed, g, a, rep_rows, rep_meta, r, buf, rules):
    """Step unfinished game ``g`` of ``st`` (borrowed ``EngineArrays``) with its legal action ``a``, as the
    one-game executor steps it; return (actor, captured cards, escoba 0/1, rounds ended 0/1): an ended
    round's report goes to row ``r`` of ``rep_rows`` and ``rep_meta`` (``end_round``). ``rules``:
    ``step_rules(rp)``, read once by the loop. Inlined into each loop over games (``step_games``, the
    search's rollouts)."""
    p, nc, jokers, prefer_single, last_play_escoba = rules
    hands, hand_count, table, stock_pos, to_act, pending = (st.hands, st.hand_count, st.table, st.stock_pos,
                                                            st.to_act, st.pending)
    seat = to_act[g]
    playing = pending[g] < 0
    if playing:  # the card leaves the hand
        hands[g, seat] &= ~(ONE << np.uint64(a))
        st.played[g, seat] |= ONE << np.uint64(a)
        hand_count[g] -= 1
    choosing, tab, tk, tv, legal, captured, swept = resolve(
        a, a if playing else pending[g], np.int64(table[g]), 0 if playing else np.int64(st.taken[g]),
        0 if playing else st.taken_value[g], playing, jokers, prefer_single)
    if choosing:  # the same seat names table cards
        pending[g] = a if playing else pending[g]
        st.taken[g], st.taken_value[g], st.legal[g] = np.uint64(tk), tv, np.uint64(legal)
        return seat, 0, 0, 0
    table[g] = np.uint64(tab)
    pending[g] = -1
    st.taken[g] = 0
    st.taken_value[g] = 0
    escoba = 0
    if captured:
        st.piles[g, seat] |= np.uint64(captured)
        st.last_capturer[g] = seat
        if swept and (last_play_escoba or hand_count[g] != 0 or stock_pos[g] < nc):
            escoba = 1
            st.escobas[g, seat] += 1
    to_act[g] = seat + 1 if seat + 1 < p else 0
    ended = 0
    turn_over = hand_count[g] == 0
    if turn_over and stock_pos[g] >= nc:  # the round ends
        turn_over = end_round(st, rp, seed, g, rep_rows, rep_meta, r, buf)
        ended = 1
    if turn_over:  # three cards a seat (a new round's first deal, or the next one)
        deal_hands(hands, hand_count, stock_pos, st.deck, st.dealer, g, p, nc)
    if not st.done[g]:
        st.legal[g] = hands[g, to_act[g]]
    return seat, captured, escoba, ended


@_jit
def step_games(hands, hand_count, table, piles, played, escobas, scores, deck, stock_pos, dealer, to_act,
               last_capturer, pending, taken, taken_value, legal, round_index, done, truncated, winner,
               episode, game_ids, rp, seed, actions, active, out_actor, out_captured, out_escoba, rep_rows,
               rep_meta, buf):
    """Step every unfinished game (inside ``active`` when it is not empty) with its legal action.

    The first arguments are the engine's arrays (``EngineArrays``: apart, as Numba reads a tuple of
    arrays slowly on each call), ``rp`` its ``params``. Returns (first illegal
    game, 0), having changed nothing; (-2, 0) where an array's shape disagrees with ``rp`` (or a scratch
    array is too small); else (-1,
    number of rounds that ended): the step's report in the ``out_*`` arrays (every game) and the
    ended rounds' in ``rep_rows`` and ``rep_meta`` (one row each, in game order; ``end_round``; the
    final scores of a game that autoreset cleared are in ``rep_meta``). ``buf``: uint64 scratch of
    ``SORT_SCRATCH`` words. Each game steps through ``step_one``.
    """
    n = len(actions)
    st = EngineArrays(hands, hand_count, table, piles, played, escobas, scores, deck, stock_pos, dealer,
                      to_act, last_capturer, pending, taken, taken_value, legal, round_index, done, truncated,
                      winner, episode, game_ids)
    if (not shapes_ok(st, rp, n) or len(out_actor) != n or rep_rows.shape[0] < n or rep_meta.shape[0] < n
            or len(buf) < SORT_SCRATCH):
        return -2, 0
    bad = first_illegal(st.legal, st.done, active, actions)
    if bad >= 0:
        return bad, 0
    st = borrowed(st)
    rep_rows, rep_meta = borrow(rep_rows), borrow(rep_meta)
    use_active = len(active) > 0
    rules = step_rules(rp)
    nrep = 0
    for g in range(n):
        if st.done[g] or (use_active and not active[g]):
            out_actor[g], out_captured[g], out_escoba[g] = -1, 0, 0
            continue
        actor, captured, escoba, ended = step_one(st, rp, seed, g, actions[g], rep_rows, rep_meta, nrep, buf,
                                                  rules)
        out_actor[g], out_captured[g], out_escoba[g] = actor, np.uint64(captured), escoba
        nrep += ended
    return -1, nrep


@_jit
def sample_legal(legal, uniforms, out):
    """Write into ``out`` the legal card ``uniforms`` picks in each mask (``engine.sample_actions``; 64
    for an empty mask): the ``int(u * popcount)``-th set bit, lowest first, found by halving the mask
    six times (no branch on the data)."""
    for g in range(len(legal)):
        m = legal[g]
        k = np.uint64(uniforms[g] * popcount(m))
        pos = np.uint64(0)
        for width in (32, 16, 8, 4, 2, 1):
            w = np.uint64(width)
            low = m & ((ONE << w) - ONE)
            c = popcount(low)
            up = k >= c
            k = k - c if up else k
            m = m >> w if up else low
            pos = pos + w if up else pos
        out[g] = np.int64(pos) if legal[g] != 0 else 64


cache_depends_on(globals(), compiled_rules, cards)  # the rules compiled into the step
