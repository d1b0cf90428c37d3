"""Move-level view of a decision: enumerate (card, capture) moves from observations, map back to actions.

A *move* is what a player means by a turn: play ``card`` and take the table cards ``option``
(a card mask; 0 for a discard). The engine's actions are finer (docs/rules.md §10): play the
card, then, when it has several capture options, name table cards one at a time. A move-level
agent therefore

- during a play decision picks a move and returns its card;
- during a capture choice (observation scalar 541 = 1) re-enumerates the options of the pending
  card that contain the cards already named, picks one, and names one of its table cards that is
  still a legal action (one always is: two distinct options of equal sum cannot contain each other).

Everything here reads only the observation. ``Moves`` holds the moves of a batch of K observations
flattened and grouped by observation row, so features can be computed with array operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.capture import capture_options, option_summary
from escoba_env.rulebook.cards import NUM_CARDS
from escoba_env.rulebook.rules import Rules

from .worlds import (
    obs_layout,
    observation_masks,
    observation_scalars,
)

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_CARD_IDS = np.arange(NUM_CARDS, dtype=np.uint64)
_MAX_UNION = 12
"""Largest capture union whose subsets ``subset_options`` tries at once (2^12 per pair)."""
_PATTERNS = {k: ((np.arange(1 << k)[:, None] >> np.arange(k)[None, :]) & 1) for k in range(2, _MAX_UNION + 1)}


@dataclass
class Moves:
    """The legal moves of K observations, flattened (arrays of length M, grouped by ``row``)."""

    row: np.ndarray
    """Observation row of each move (non-decreasing)."""
    card: np.ndarray
    """Card played (the pending card during a capture choice)."""
    option: np.ndarray
    """uint64 mask of the table cards the move takes (0: the card is laid on the table)."""
    start: np.ndarray
    """(K + 1,) offsets: the moves of row i are ``start[i]:start[i + 1]``."""

    @property
    def count(self) -> np.ndarray:
        """Return the number of moves of each row (K,)."""
        return np.diff(self.start)


@lru_cache(maxsize=1 << 16)
def _options(card: int, table: int, prefer_single: bool, jokers: bool) -> tuple[int, ...]:
    """Return the capture options of ``card`` on ``table`` (cached; rules reduced to what matters)."""
    return tuple(capture_options(card, table, Rules(prefer_single=prefer_single, jokers=2 if jokers else 0)))


def masks_to_uint64(bits: np.ndarray) -> np.ndarray:
    """Return uint64 card masks from 0/1 arrays (..., W) (e.g. int8 action masks, W = 40 + jokers)."""
    bits = np.asarray(bits)
    w = bits.shape[-1]
    padded = np.zeros((*bits.shape[:-1], 64), np.uint8)
    padded[..., :w] = bits > 0
    packed = np.packbits(padded, axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8")[..., 0].astype(np.uint64)


def lowest_card(masks: np.ndarray) -> np.ndarray:
    """Return the lowest card id in each uint64 mask (-1 for an empty mask)."""
    masks = np.asarray(masks, np.uint64)
    low = masks & (~masks + _ONE)
    return np.where(masks != 0, np.bitwise_count(low - _ONE).astype(np.int64), -1)


def bit(cards: np.ndarray) -> np.ndarray:
    """Return the uint64 single-card masks of card ids (0 for negative ids)."""
    cards = np.asarray(cards, np.int64)
    return np.where(cards >= 0, _ONE << np.maximum(cards, 0).astype(np.uint64), _ZERO)


def subset_options(table: np.ndarray, card: np.ndarray, union: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(pair, option)``: every capture option of ``card[i]`` on ``table[i]`` (standard rules),
    for pairs known to have several options whose union is ``union[i]``, grouped by pair, ascending
    within a pair (the order of ``capture_options``).

    Every option lies inside the union, so the subsets of the union's ``k`` cards are tried at once,
    one batch per ``k`` (the j-th lowest card is bit j of a pattern, so ascending patterns give
    ascending masks); a union of more than ``_MAX_UNION`` cards (rare) is enumerated one by one.
    """
    target = 15 - (card // 4 + 1)
    pairs: list[np.ndarray] = []
    opts: list[np.ndarray] = []
    k_all = np.bitwise_count(union).astype(np.int64)
    for k in np.unique(k_all).tolist():
        sel = np.flatnonzero(k_all == k)
        if k > _MAX_UNION:
            for i in sel.tolist():
                o = _options(int(card[i]), int(table[i]), False, False)
                pairs.append(np.full(len(o), i, np.int64))
                opts.append(np.asarray(o, np.uint64))
            continue
        u = union[sel]
        bits = ((u[:, None] >> _CARD_IDS[None, :]) & _ONE).astype(bool)  # (m, 40), k set per row
        cards = np.nonzero(bits)[1].reshape(len(sel), k)  # ascending card ids of each union
        pat = _PATTERNS[k]  # (2^k, k) 0/1
        sums = (cards // 4 + 1) @ pat.T  # (m, 2^k)
        hit_row, hit_pat = np.nonzero(sums == target[sel][:, None])
        masks = ((_ONE << cards[hit_row].astype(np.uint64)) * pat[hit_pat].astype(np.uint64)).sum(
            axis=1, dtype=np.uint64)
        pairs.append(sel[hit_row])
        opts.append(masks)
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    pair, opt = np.concatenate(pairs), np.concatenate(opts)
    order = np.argsort(pair, kind="stable")
    return pair[order], opt[order]


def enumerate_moves(obs: np.ndarray, rules: Rules, planes: np.ndarray | None = None) -> Moves:
    """Return every legal move of each observation (of a seat that is to act).

    Play decision: one move per (hand card, capture option), or one discard move for a card with
    no option. Capture choice: the options of the pending card that contain the cards named so far.
    """
    obs = np.asarray(obs, np.float32)
    planes = observation_masks(obs, rules) if planes is None else planes
    phase = obs[:, obs_layout(rules).scalars["capture_phase"]] > 0.5
    ps, jk = rules.prefer_single, rules.jokers > 0
    if ps or jk:
        return _enumerate_moves_loop(planes, phase, ps, jk)
    # Standard rules, batched: one summary per (row, hand card), and per capture-choice row for its
    # pending card; a card with no option is a discard, a card with one option takes exactly the
    # union, and the cards with several options (and the capture choices, whose options must hold
    # the cards named so far) get theirs from one ``subset_options`` call.
    hands = np.where(phase, planes[:, PLANE["pending"]], planes[:, PLANE["hand"]])
    empty = np.flatnonzero(hands == 0)  # (a capture choice without its pending card too)
    bits = (hands[:, None] >> _CARD_IDS[None, :]) & _ONE
    pr, pc = np.nonzero(bits)  # row-major: rows ascending, cards ascending within a row
    table = planes[pr, PLANE["table"]]
    n_opt, union, _ = option_summary(table, 15 - (pc // 4 + 1))
    choice = phase[pr]
    per = np.where(choice, 0, np.maximum(n_opt, 1))  # moves of each (row, card)
    multi = np.flatnonzero(n_opt >= 2)
    pair, opt = subset_options(table[multi], pc[multi], union[multi])
    if not np.array_equal(np.bincount(pair, minlength=multi.size), n_opt[multi]):
        raise ValueError("internal error: capture enumeration disagrees with the option count")
    if choice.any():
        taken = planes[pr[multi[pair]], PLANE["taken"]]
        keep = ~choice[multi[pair]] | ((opt & taken) == taken)
        pair, opt = pair[keep], opt[keep]
        per[multi] = np.bincount(pair, minlength=multi.size)
        bad = pr[choice & (per < 2)]
        if bad.size and (not empty.size or bad[0] < empty[0]):
            raise ValueError(f"row {bad[0]}: a capture choice needs at least two remaining options")
    if empty.size:
        raise ValueError(f"row {empty[0]}: the observer has no card to play (is it the seat to act?)")
    first = np.cumsum(per) - per
    option = np.zeros(int(per.sum()), np.uint64)
    single = n_opt < 2  # (not a capture choice: those were checked above)
    option[first[single]] = np.where(n_opt[single] == 1, union[single], _ZERO)
    starts = np.cumsum(per[multi]) - per[multi]
    option[first[multi][pair] + np.arange(len(pair)) - starts[pair]] = opt
    row = np.repeat(pr, per)
    start = np.searchsorted(row, np.arange(obs.shape[0] + 1)).astype(np.int64)
    return Moves(row.astype(np.int64), np.repeat(pc, per).astype(np.int64), option, start)


def _choice_options(planes: np.ndarray, i: int, ps: bool, jk: bool) -> tuple[int, list[int]]:
    """Return the pending card of capture-choice row ``i`` and its options containing the cards named."""
    table = int(planes[i, PLANE["table"]])
    card = int(planes[i, PLANE["pending"]]).bit_length() - 1
    taken = int(planes[i, PLANE["taken"]])
    opts = [o for o in _options(card, table, ps, jk) if o & taken == taken]
    if len(opts) < 2:
        raise ValueError(f"row {i}: a capture choice needs at least two remaining options")
    return card, opts


def _enumerate_moves_loop(planes: np.ndarray, phase: np.ndarray, ps: bool, jk: bool) -> Moves:
    """``enumerate_moves`` one row and card at a time (``prefer_single`` or jokers)."""
    rows: list[int] = []
    cards: list[int] = []
    options: list[int] = []
    for i in range(planes.shape[0]):
        if phase[i]:
            card, opts = _choice_options(planes, i, ps, jk)
            rows.extend([i] * len(opts))
            cards.extend([card] * len(opts))
            options.extend(opts)
            continue
        table = int(planes[i, PLANE["table"]])
        hand = int(planes[i, PLANE["hand"]])
        if hand == 0:
            raise ValueError(f"row {i}: the observer has no card to play (is it the seat to act?)")
        while hand:
            low = hand & -hand
            card = low.bit_length() - 1
            hand ^= low
            opts = _options(card, table, ps, jk) or (0,)
            rows.extend([i] * len(opts))
            cards.extend([card] * len(opts))
            options.extend(opts)
    row = np.asarray(rows, np.int64)
    start = np.searchsorted(row, np.arange(planes.shape[0] + 1)).astype(np.int64)
    return Moves(row, np.asarray(cards, np.int64), np.asarray(options, np.uint64), start)


def move_actions(moves: Moves, chosen: np.ndarray, obs: np.ndarray, action_masks: np.ndarray,
                 planes: np.ndarray | None = None) -> np.ndarray:
    """Return the engine action (int64, one per row) that carries out move ``chosen[i]`` of row i.

    Play decision: the card. Capture choice: the lowest table card of the chosen option that is a
    legal action now; with jokers, when no card of the option is left to name (the option is the
    cards named so far plus the cards in every remaining option, nested in a larger one), the
    pending card's own id, the engine's "stop" action that takes exactly that option.
    """
    obs = np.asarray(obs, np.float32)
    chosen = np.asarray(chosen, np.int64)
    phase = obs[:, obs_layout(size=obs.shape[1]).scalars["capture_phase"]] > 0.5
    legal = masks_to_uint64(action_masks)
    take = lowest_card(moves.option[chosen] & legal)
    stop = phase & (take < 0) & ((legal >> moves.card[chosen].astype(np.uint64)) & _ONE != 0)
    take = np.where(stop, moves.card[chosen], take)
    actions = np.where(phase, take, moves.card[chosen])
    if (actions < 0).any():
        raise ValueError("internal error: a chosen move has no legal action")
    return actions.astype(np.int64)


def last_play(obs: np.ndarray, rules: Rules | None = None, planes: np.ndarray | None = None) -> np.ndarray:
    """Return, per observation, whether the move being decided is the last play of the round
    (``planes``: the observations' ``observation_masks`` when already computed)."""
    obs = np.asarray(obs, np.float32)
    if rules is None:
        rules = Rules(jokers=obs_layout(size=obs.shape[1]).width - NUM_CARDS)
    sc = observation_scalars(obs, rules, planes)
    cards_in_hands = sc["hand_sizes"].sum(axis=1)
    return (sc["stock"] == 0) & (cards_in_hands == np.where(sc["capture_phase"], 0, 1))


def best_per_row(moves: Moves, score: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Return, per row, the index (into the flat moves) of the highest ``score``.

    Ties go to the highest ``tiebreak``, then to the first move in enumeration order.
    """
    m = len(score)
    tb = np.zeros(m) if tiebreak is None else np.asarray(tiebreak, np.float64)
    order = np.lexsort((np.arange(m), -tb, -np.asarray(score, np.float64), moves.row))
    first = moves.start[:-1]
    return order[first]

