"""The strategy's pieces (``agents.heuristic.strategy``) against independent statements of what they mean, and
the rollout policy as a pure function of its arrays (what a compiled twin must reproduce)."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from agents.heuristic.strategy import (
    HOLD,
    ROLLOUT_WEIGHTS,
    Weights,
    card_weights,
    hold_probability,
    rollout_policy,
    table_sweepers,
    take_choice,
)
from agents.search.pimc import rollout_actions
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from escoba_env.rulebook.capture import CARD_VALUES, capture_options
from tests.helpers import M


def _random_tables(rng: np.random.Generator, n: int, jokers: bool) -> list[int]:
    """Return ``n`` random table masks of 1 to 5 cards (jokers among them where ``jokers``)."""
    ids = 42 if jokers else 40
    sizes = rng.integers(1, 6, size=n)
    return [sum(1 << int(c) for c in rng.choice(ids, size=k, replace=False)) for k in sizes]


@pytest.mark.parametrize("jokers", [False, True])
def test_sweepers_are_the_cards_whose_capture_takes_the_whole_table(jokers):
    rules = Rules(jokers=2 if jokers else 0)
    rng = np.random.default_rng(3)
    tables = _random_tables(rng, 300, jokers)
    got = table_sweepers(np.array(tables, np.uint64), jokers)
    for table, mask in zip(tables, got.tolist(), strict=True):
        expect = sum(1 << c for c in range(rules.num_cards)
                     if not table >> c & 1 and table in capture_options(c, table, rules))
        assert mask & ~table == expect, hex(table)  # a mask of whole value classes: read off the table
    assert table_sweepers(np.zeros(1, np.uint64), jokers).tolist() == [0]


def test_hold_probability_is_one_minus_the_hypergeometric_miss():
    for u in range(0, 12):
        for n in range(0, u + 1):
            for h in range(0, min(3, u) + 1):
                exact = 1 - comb(u - n, h) / comb(u, h)
                p = hold_probability(np.int64(u), np.int64(n), np.int64(h))
                assert p == pytest.approx(exact, abs=1e-12)
                assert HOLD[u, n, h] == p


def test_take_choice_names_the_heaviest_card_then_the_highest_value_then_the_lowest_id():
    w = Weights.of(ROLLOUT_WEIGHTS, joker=True)
    rng = np.random.default_rng(4)
    legal = np.array(_random_tables(rng, 500, True), np.uint64)
    got = take_choice(legal, w)
    for mask, card in zip(legal.tolist(), got.tolist(), strict=True):
        ids = [c for c in range(42) if mask >> c & 1]
        key = {c: (float(card_weights(np.uint64(1 << c), w)), CARD_VALUES[c], -c) for c in ids}
        assert card == max(ids, key=key.get)
    # The velo over the sota and the caballo of oros; an empty mask names 0.
    assert take_choice(np.array([M("7o So Co"), 0], np.uint64), w).tolist() == [M("7o").bit_length() - 1, 0]


@pytest.mark.parametrize("rules", [Rules(), Rules(jokers=2, num_players=3)], ids=["2p", "jokers-3p"])
@pytest.mark.parametrize("threat", ["count", "peek", "none"])
def test_the_rollout_policy_reads_only_its_arrays(rules, threat):
    # Arrays taken from an engine give rollout_actions' actions; the arrays are left as they were,
    # and a second call gives the same actions (no state, no random draw).
    e = EscobaEngine(64, rules, single_round=True)
    e.reset(seed=2)
    mix = np.random.default_rng(0)
    w = Weights.of(ROLLOUT_WEIGHTS, rules.jokers > 0)
    for _ in range(12):
        rows = np.arange(e.num_games)
        seat = e.to_act
        nxt = (seat + 1) % rules.num_players
        seen = e.table | e.hands[rows, seat] | np.bitwise_or.reduce(e.piles, axis=1)
        args = [e.hands[rows, seat], e.table, e.pending, e.legal]
        extra = [e.hands[rows, nxt], np.uint64((1 << rules.num_cards) - 1) & ~seen,
                 e.stock_pos < rules.num_cards]
        copies = [a.copy() for a in args + extra]
        a1 = rollout_policy(*args, w, ROLLOUT_WEIGHTS["sweep"], rules.jokers > 0, threat, *extra)
        a2 = rollout_policy(*args, w, ROLLOUT_WEIGHTS["sweep"], rules.jokers > 0, threat, *extra)
        for before, after in zip(copies, args + extra, strict=True):
            np.testing.assert_array_equal(before, after)
        live = ~e.done
        np.testing.assert_array_equal(a1[live], a2[live])
        engine_view = rollout_actions(e, np.random.default_rng(0), threat=threat)
        np.testing.assert_array_equal(a1[live], engine_view[live])
        e.step(np.where(mix.random(e.num_games) < 0.5, sample_actions(e.legal, mix.random(e.num_games)), a1),
               active=live)
