"""The search's default rollouts compiled (Numba): ``heuristic.strategy.rollout_policy`` game by game.

Imported only when Numba is installed (the ``[fast]`` extra, part of ``[agents]``;
``agents.search.pimc.rollout_actions`` decides). For every game it reads what ``rollout_actions`` hands
``rollout_policy`` (the seat's hand, the table, the pending card and legal actions, the next seat's
hand, the unseen cards, whether the stock holds cards) from the engine's arrays and returns the same
action: the same capture options (``escoba_env.executors.compiled_rules.summary``), the same sweep sets, the
same float operations in the same order on the same weights and tables (``strategy``'s
``single_card_weights``, ``HOLD`` and capture-choice order, handed in as arrays), so the same bits
and the same ties. The standard deck only: with jokers ``rollout_actions`` runs ``rollout_policy``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from escoba_env.executors import compiled_rules, engine_kernels
from escoba_env.executors.compiled_rules import (
    NIBBLE,
    SORT_SCRATCH,
    borrow,
    cache_depends_on,
    lowest_bit_index,
    mask_value,
    popcount,
    summary,
)
from escoba_env.executors.engine_compiled import arrays, params
from escoba_env.executors.engine_kernels import (
    EngineArrays,
    borrowed,
    illegal,
    shapes_ok,
    step_one,
    step_rules,
)
from escoba_env.rulebook import cards
from escoba_env.rulebook.cards import OROS, SEVENS, VELO

from ..heuristic import strategy
from ..heuristic.strategy import CAPTURE_BONUS, HOLD, THREATS, Weights, single_card_weights, take_choice

_VELO_BIT = 1 << VELO
_CHOICE_CACHE: dict[Weights, np.ndarray] = {}


def choice_ranks(w: Weights) -> np.ndarray:
    """Return the rank of each card id 0..41 in ``strategy.take_choice``'s order under ``w`` (0 first),
    read off ``take_choice`` itself (the most valuable card of the cards not yet ranked)."""
    ranks = _CHOICE_CACHE.get(w)
    if ranks is None:
        ranks = np.empty(42, np.int64)
        left = (1 << 42) - 1
        for r in range(42):
            c = int(take_choice(np.array([left], np.uint64), w)[0])
            ranks[c] = r
            left &= ~(1 << c)
        ranks.flags.writeable = False
        ranks = _CHOICE_CACHE[w] = ranks
    return ranks


def weight_vector(w: Weights, sweep: float) -> np.ndarray:
    """Return the float64 weights the kernel reads: escoba, velo, seven, oro, card, sweep."""
    return np.array([w.escoba, w.velo, w.seven, w.oro, w.card, sweep], np.float64)


@njit(cache=True, nogil=True, inline="always")
def _card_weights(m, velo, seven, oro, card):
    """``strategy.card_weights`` of one mask (no sixes, no jokers), the same additions in order."""
    return (velo * (1.0 if m & _VELO_BIT else 0.0) + seven * np.float64(popcount(m & SEVENS))
            + oro * np.float64(popcount(m & OROS)) + card * np.float64(popcount(m)))


@njit(cache=True, nogil=True, inline="always")
def _card_score(c, table, total, wv, single_w, threat, next_hand, unseen, n_unseen, h_next):
    """Return the policy's score of playing card ``c`` (``rollout_policy``: capture value or minus the
    card's weight, minus ``sweep`` times the chance the next seat sweeps the table it leaves);
    ``n_unseen``: the number of ``unseen`` cards."""
    v = c // 4 + 1
    count, union, inter = summary(table, 15 - v)
    capture = count > 0
    left_total = total - (15 - v) if capture else total + v
    need = 15 - left_total
    sweep_cards = NIBBLE[need] if 1 <= need <= 10 else 0
    if threat == 1:  # peek: the next hand itself
        p_sweep = 1.0 if next_hand & sweep_cards else 0.0
    elif threat == 0:  # count: a hand of h_next cards drawn from the unseen ones
        p_sweep = HOLD[n_unseen, popcount(unseen & sweep_cards), h_next] if sweep_cards else 0.0
    else:
        p_sweep = 1.0 if sweep_cards else 0.0
    cw = single_w[c]
    if capture:
        escoba = 1.0 if total + v == 15 else 0.0
        value = (CAPTURE_BONUS + wv[0] * escoba + _card_weights(inter, wv[1], wv[2], wv[3], wv[4])
                 + 0.5 * _card_weights(union & ~inter, wv[1], wv[2], wv[3], wv[4]) + cw)
    else:
        value = -cw
    return value - wv[5] * p_sweep


@njit(cache=True, nogil=True, inline="always")
def _choose(g, hands, table, pending, legal, to_act, piles, stock_pos, num_cards, threat, wv, single_w,
            ranks):
    """Return ``rollout_policy``'s action in game ``g`` (borrowed arrays: no reference counting)."""
    if pending[g] >= 0:  # a capture choice: the first legal card in the order of value
        m = np.int64(legal[g])
        best, best_rank = 0, 99
        while m:
            c = np.int64(lowest_bit_index(m))
            if ranks[c] < best_rank:
                best, best_rank = c, ranks[c]
            m &= m - 1
        return best
    p = hands.shape[1]
    seat = to_act[g]
    hand = np.int64(hands[g, seat])
    if hand != 0 and hand & (hand - 1) == 0:  # one card: the loop below would pick it whatever its score
        return np.int64(lowest_bit_index(hand))
    tab = np.int64(table[g])
    nxt = seat + 1 if seat + 1 < p else 0
    next_hand = np.int64(hands[g, nxt])
    seen = tab | hand
    for k in range(p):
        seen |= np.int64(piles[g, k])
    h_next = popcount(next_hand)
    if h_next == 0:
        h_next = 3 if stock_pos[g] < num_cards else 0
    total = mask_value(tab)
    unseen = ((1 << num_cards) - 1) & ~seen
    n_unseen = popcount(unseen)
    best_card, best_score = -1, -1e9
    h = hand
    while h:  # cards ascending; a later card wins only with a strictly higher score
        c = np.int64(lowest_bit_index(h))
        s = _card_score(c, tab, total, wv, single_w, threat, next_hand, unseen, n_unseen, h_next)
        if best_card < 0 or s > best_score:
            best_card, best_score = c, s
        h &= h - 1
    return best_card


@njit(cache=True, nogil=True)
def policy_actions(hands, table, pending, legal, to_act, piles, stock_pos, done, num_cards, threat, wv,
                   single_w, ranks, out):
    """Write ``rollout_policy``'s action for every unfinished game into ``out`` (0 for finished ones).

    ``threat``: 0 count, 1 peek, 2 none (``strategy.THREATS``); ``wv``: ``weight_vector``;
    ``single_w``: ``strategy.single_card_weights``; ``ranks``: ``choice_ranks``.
    """
    hands, table, pending, legal = borrow(hands), borrow(table), borrow(pending), borrow(legal)
    to_act, piles, stock_pos = borrow(to_act), borrow(piles), borrow(stock_pos)
    wv, single_w, ranks = borrow(wv), borrow(single_w), borrow(ranks)
    for g in range(len(out)):
        out[g] = 0 if done[g] else _choose(g, hands, table, pending, legal, to_act, piles, stock_pos,
                                           num_cards, threat, wv, single_w, ranks)


CHUNK = 4096
"""Rollouts played together (a chunk of the batch): their state stays in the CPU's cache."""


@njit(cache=True, nogil=True, _nrt=False)
def play_chunk(hands, hand_count, table, piles, played, escobas, scores, deck, stock_pos, dealer, to_act,
               last_capturer, pending, taken, taken_value, legal, round_index, done, truncated, winner,
               episode, game_ids, rp, seed, card, option, threat, wv, single_w, ranks, points, forcing, rows,
               meta, buf):
    """Play the games of these arrays (a chunk of ``rollout_kernel``'s) to the end of their round, adding
    each round's points to ``points``: the move first, then the policy. The games take turns: each pass
    gives every unfinished game its next action and steps it at once (the engine's own step,
    ``escoba_env.executors.engine_kernels.step_one``), while its state is in the CPU's nearest cache.
    ``forcing``, ``rows``, ``meta`` and ``buf``: scratch (a bool a game, one round report, the shuffle's).
    Compiled without reference counting, as the engine's kernels are: nothing here allocates."""
    n = len(card)
    ns = scores.shape[1]
    num_cards = deck.shape[1]
    st = borrowed(EngineArrays(hands, hand_count, table, piles, played, escobas, scores, deck, stock_pos,
                               dealer, to_act, last_capturer, pending, taken, taken_value, legal, round_index,
                               done, truncated, winner, episode, game_ids))
    if not shapes_ok(st, rp, n):
        raise ValueError("the rollouts' arrays disagree with their params")
    rules = step_rules(rp)
    for g in range(n):
        forcing[g] = True
    live = True
    while live:
        live = False
        for g in range(n):
            if done[g]:
                continue
            live = True
            if forcing[g]:  # the move: its card, then the table cards of its option (or "stop")
                name = np.int64(option[g] & legal[g])
                a = card[g] if pending[g] < 0 or name == 0 else np.int64(lowest_bit_index(name))
            else:
                a = _choose(g, st.hands, st.table, st.pending, st.legal, st.to_act, st.piles, st.stock_pos,
                            num_cards, threat, wv, single_w, ranks)
            if illegal(legal[g], a):
                raise ValueError("a rollout played an illegal action")
            if step_one(st, rp, seed, g, a, rows, meta, 0, buf, rules)[3]:  # the round ended: its points
                for s in range(ns):
                    points[g, s] += rows[0, 0, s]
            forcing[g] = forcing[g] and pending[g] >= 0


@njit(cache=True, nogil=True)
def rollout_kernel(hands, hand_count, table, piles, played, escobas, scores, deck, stock_pos, dealer, to_act,
                   last_capturer, pending, taken, taken_value, legal, round_index, done, truncated, winner,
                   episode, game_ids, rp, seed, games, card, option, side, threat, wv, single_w, ranks, out):
    """Play rollout ``j`` from a copy of game ``games[j]`` of the engine's arrays to the end of its round:
    first the move (``card[j]``, then the table cards of ``option[j]``), then ``rollout_policy`` for every
    seat; write into ``out[j]`` the round's points of ``side[j]`` minus the mean of the other sides'
    (``pimc.rollout_values``). The engine's arrays are not changed.

    The engine's arrays come first (``escoba_env.executors.engine_kernels.EngineArrays``), ``rp`` the
    params of a single-round copy (``engine_compiled.params(engine, single_round=True)``); a chunk of
    ``CHUNK`` rollouts at a time is copied out (as ``worlds.take_games`` would) and steps together
    (``play_chunk``).
    """
    n = len(card)
    ns = scores.shape[1]
    wv, single_w, ranks = borrow(wv), borrow(single_w), borrow(ranks)
    points = np.zeros((n, ns))
    forcing = np.empty(min(n, CHUNK), np.bool_)
    rows, meta = np.empty((1, 6, ns), np.int64), np.empty((1, 8), np.int64)
    buf = np.empty(SORT_SCRATCH, np.uint64)
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        g = games[lo:hi]
        c = slice(lo, hi)
        play_chunk(hands[g], hand_count[g], table[g], piles[g], played[g], escobas[g], scores[g], deck[g],
                   stock_pos[g], dealer[g], to_act[g], last_capturer[g], pending[g], taken[g], taken_value[g],
                   legal[g], round_index[g], done[g], truncated[g], winner[g], episode[g], game_ids[g], rp,
                   seed, card[c], option[c], threat, wv, single_w, ranks, points[c], forcing[:hi - lo], rows,
                   meta, buf)
    for j in range(n):
        own = points[j, side[j]]
        total = 0.0
        for s in range(ns):
            total += points[j, s]
        out[j] = own - (total - own) / max(ns - 1, 1)


def compiled_policy(engine, w: dict[str, float], threat: str) -> np.ndarray:
    """Return ``rollout_policy``'s action (int64) per game of ``engine`` (0 for finished games)."""
    weights = Weights.of(w, False)
    out = np.empty(engine.num_games, np.int64)
    policy_actions(engine.hands, engine.table, engine.pending, engine.legal, engine.to_act, engine.piles,
                   engine.stock_pos, engine.done, engine.rules.num_cards, THREATS.index(threat),
                   weight_vector(weights, w["sweep"]), single_card_weights(weights), choice_ranks(weights),
                   out)
    return out


def compiled_rollout_values(engine, card: np.ndarray, option: np.ndarray, me: np.ndarray, w: dict[str, float],
                            threat: str, games: np.ndarray | None = None) -> np.ndarray:
    """Return ``pimc.rollout_values`` of the default policy (greedy, no draws, to the end of the round)
    computed by ``rollout_kernel``, for rollout ``j`` from game ``games[j]`` of ``engine`` (default: game
    ``j``), as if played on ``worlds.take_games(engine, games, single_round=True)``; ``engine`` is not
    changed."""
    weights = Weights.of(w, False)
    games = np.arange(engine.num_games) if games is None else np.asarray(games, np.int64)
    out = np.empty(len(games), np.float64)
    side = engine.side_of_seat[np.asarray(me, np.int64)]
    rollout_kernel(*arrays(engine), params(engine, single_round=True), np.uint64(engine.seed),
                   np.ascontiguousarray(games, np.int64), np.asarray(card, np.int64),
                   np.asarray(option, np.uint64), np.ascontiguousarray(side, np.int64), THREATS.index(threat),
                   weight_vector(weights, w["sweep"]), single_card_weights(weights), choice_ranks(weights),
                   out)
    return out


cache_depends_on(globals(), compiled_rules, engine_kernels, strategy, cards)  # compiled in, or constants here
