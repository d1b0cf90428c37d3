"""Round scoring (docs/rules.md §6): batched over games, and one round on Python ints (``round_awards``).

With jokers (docs/rules.md §11; bits 40, 41 of a pile) the jokers count for "most cards" and nothing
else: "most cards" is strictly the most of 41 or 42 cards (with two sides, 21 cards no longer
settle it when the deck has 42; only strictly more than the other side does).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .cards import OROS, SEVENS, VELO, check_mask, value_nibble
from .rules import Rules, check_int

CATEGORIES = ("cards", "oros", "velo", "sevens")
_PRIMERA_OF_VALUE = (16, 12, 13, 14, 15, 18, 21, 10, 10, 10)  # values 1..10
# Tie-break order of "most_sevens_tiebreak": sevens, then sixes, aces, fives, fours, threes, twos.
_TIEBREAK_VALUES = (7, 6, 1, 5, 4, 3, 2)
_OROS = np.uint64(OROS)
_SEVENS = np.uint64(SEVENS)
_VELO_BIT = np.uint64(1 << VELO)


def side_piles(piles: np.ndarray, partnerships: bool) -> np.ndarray:
    """Return capture piles per side (..., S) from piles per seat (..., P): partners' piles joined.

    With partnerships seats 0+2 and 1+3 are sides 0 and 1; otherwise each seat is its own side.
    """
    return piles[..., :2] | piles[..., 2:4] if partnerships else piles


def side_escobas(escobas: np.ndarray, partnerships: bool) -> np.ndarray:
    """Return escobas per side (..., S) from escobas per seat (..., P): partners' escobas added."""
    return escobas[..., :2] + escobas[..., 2:4] if partnerships else escobas


def _strict_winner(metric: np.ndarray) -> np.ndarray:
    """Return a bool array (N, S) marking the side with the strictly highest metric, if any."""
    if metric.shape[1] == 2:
        return np.stack([metric[:, 0] > metric[:, 1], metric[:, 1] > metric[:, 0]], axis=1)
    best = metric.max(axis=1, keepdims=True)
    at_best = metric == best
    return at_best & (at_best.sum(axis=1, keepdims=True) == 1)


def _primera(piles: np.ndarray) -> np.ndarray:
    """Return each side's primera (N, S); -1 for a side that misses a suit."""
    total = np.zeros(piles.shape, np.int64)
    complete = np.ones(piles.shape, bool)
    for suit in range(4):
        best = np.zeros(piles.shape, np.int64)
        for value, points in enumerate(_PRIMERA_OF_VALUE, start=1):
            has = (piles >> np.uint64(4 * (value - 1) + suit)) & np.uint64(1)
            best = np.maximum(best, has.astype(np.int64) * points)
        complete &= best > 0
        total += best
    return np.where(complete, total, -1)


def score_round_batch(piles: np.ndarray, escobas: np.ndarray, rules: Rules) -> dict[str, np.ndarray]:
    """Return the round's points per side (N, S) and each category's awards (N, S).

    ``piles`` is a uint64 array (N, S) of each side's captured cards (jokers in bits 40, 41 count
    for "cards" only), ``escobas`` an int array
    (N, S). The result maps ``"points"`` and every name in ``CATEGORIES`` plus ``"escobas"`` to
    an int array (N, S) of the points that category gave.
    """
    piles = np.asarray(piles, np.uint64)
    escobas = np.asarray(escobas, np.int64)
    n_cards = np.bitwise_count(piles).astype(np.int64)
    n_oros = np.bitwise_count(piles & _OROS).astype(np.int64)
    n_sevens = np.bitwise_count(piles & _SEVENS).astype(np.int64)
    out = {
        "cards": _strict_winner(n_cards).astype(np.int64),
        "oros": _strict_winner(n_oros).astype(np.int64),
        "velo": ((piles & _VELO_BIT) != 0).astype(np.int64),
    }
    if rules.sevens_rule == "most_sevens":
        metric = n_sevens
    elif rules.sevens_rule == "most_sevens_tiebreak":
        metric = np.zeros(piles.shape, np.int64)
        for v in _TIEBREAK_VALUES:
            metric = metric * 5 + np.bitwise_count(piles & np.uint64(value_nibble(v))).astype(np.int64)
    else:
        metric = _primera(piles)
        metric = np.where((metric < 0).all(axis=1, keepdims=True), 0, metric)  # nobody has one
    out["sevens"] = _strict_winner(metric).astype(np.int64)
    if rules.bonus_sweeps:
        out["oros"] = out["oros"] * np.where(n_oros == 10, 2, 1)
        out["sevens"] = out["sevens"] * np.where(n_sevens == 4, 2, 1)
    out["escobas"] = escobas
    out["points"] = out["cards"] + out["oros"] + out["velo"] + out["sevens"] + escobas
    return out


def _strict_winner_of(metric: list[int]) -> list[int]:
    """Return 1 for the side with the strictly highest metric (if any), 0 for the others."""
    best = max(metric)
    if metric.count(best) != 1:
        return [0] * len(metric)
    return [int(m == best) for m in metric]


def _primera_of(pile: int) -> int:
    """Return the primera of one side's pile (an int mask); -1 if it misses a suit."""
    total = 0
    for suit in range(4):
        best = 0
        for value, points in enumerate(_PRIMERA_OF_VALUE, start=1):
            if pile >> (4 * (value - 1) + suit) & 1 and points > best:
                best = points
        if not best:
            return -1
        total += best
    return total


def round_awards(piles: Sequence[int], escobas: Sequence[int], rules: Rules) -> dict[str, list[int]]:
    """Return ``score_round_batch`` of one round on Python ints: category -> points per side.

    The one-game form (the one-game executor's round end); ``piles`` are int masks per side.
    """
    n_oros = [(p & OROS).bit_count() for p in piles]
    n_sevens = [(p & SEVENS).bit_count() for p in piles]
    out = {
        "cards": _strict_winner_of([p.bit_count() for p in piles]),
        "oros": _strict_winner_of(n_oros),
        "velo": [p >> VELO & 1 for p in piles],
    }
    if rules.sevens_rule == "most_sevens":
        metric = n_sevens
    elif rules.sevens_rule == "most_sevens_tiebreak":
        metric = [0] * len(piles)
        for v in _TIEBREAK_VALUES:
            metric = [m * 5 + (p & value_nibble(v)).bit_count() for m, p in zip(metric, piles, strict=True)]
    else:
        metric = [_primera_of(p) for p in piles]
        if max(metric) < 0:  # nobody has one
            metric = [0] * len(piles)
    out["sevens"] = _strict_winner_of(metric)
    if rules.bonus_sweeps:
        out["oros"] = [x * (2 if n == 10 else 1) for x, n in zip(out["oros"], n_oros, strict=True)]
        out["sevens"] = [x * (2 if n == 4 else 1) for x, n in zip(out["sevens"], n_sevens, strict=True)]
    out["escobas"] = list(escobas)
    out["points"] = [sum(x) for x in zip(out["cards"], out["oros"], out["velo"], out["sevens"], escobas,
                                         strict=True)]
    return out


def score_round(piles: Sequence[int], escobas: Sequence[int], rules: Rules | None = None) -> list[int]:
    """Return the round's points per side from one capture-pile mask and escoba count per side.

    Pile bits must exist under ``rules`` (bits 40, 41 only with that many jokers).
    """
    rules = Rules() if rules is None else rules
    if len(piles) != len(escobas) or len(piles) != rules.num_sides:
        raise ValueError(
            f"need one pile and one escoba count per side ({rules.num_sides} sides), got "
            f"{len(piles)} piles and {len(escobas)} escoba counts"
        )
    seen = 0
    nc = rules.num_cards
    masks = [check_mask(p, nc, "a pile") for p in piles]
    for p in masks:
        if seen & p:
            raise ValueError("two sides' piles share a card")
        seen |= p
    counts = [check_int(e, "an escoba count") for e in escobas]
    if any(e < 0 for e in counts):
        raise ValueError(f"escoba counts must be >= 0, got {counts}")
    res = score_round_batch(np.array([masks], np.uint64), np.array([counts], np.int64), rules)
    return [int(x) for x in res["points"][0]]
