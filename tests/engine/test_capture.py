"""Capture options (docs/rules.md §4): worked examples, prefer_single, and brute-force equivalence."""

from __future__ import annotations

import itertools
from math import comb, prod

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from escoba_env import Rules, capture_options
from escoba_env.rulebook.capture import option_summary
from tests.helpers import C, M
from tests.reference import all_subsets_with_sum
from tests.reference import capture_options as ref_capture_options

PREFER = Rules(prefer_single=True)


def test_six_with_two_four_three_and_rey_takes_two_four_three():
    assert capture_options(C("6o"), M("2c 4e 3b Rc")) == [M("2c 4e 3b")]


def test_five_takes_a_rey():
    assert capture_options(C("5o"), M("Rc")) == [M("Rc")]


def test_caballo_takes_a_six():
    assert capture_options(C("Co"), M("6c")) == [M("6c")]


def test_velo_with_three_five_sota_has_two_options():
    assert capture_options(C("7o"), M("3c 5e Sb")) == sorted([M("Sb"), M("3c 5e")])
    assert capture_options(C("7o"), M("3c 5e Sb")) == [M("3c 5e"), M("Sb")]


def test_no_option_gives_an_empty_list():
    assert capture_options(C("7o"), 0) == []
    assert capture_options(C("Ro"), M("1c 3c")) == []  # needs 5: 1, 3, 1+3 = 4
    assert capture_options(C("1o"), M("Rc 3c")) == []  # 1 + 13 = 14
    assert capture_options(C("Ro"), M("Rc")) == []  # 20


def test_options_count_cards_of_equal_value_separately():
    # 5o needs 10: each rey alone, or 4+6.
    assert capture_options(C("5o"), M("Rc Re 4c 6b")) == sorted([M("Rc"), M("Re"), M("4c 6b")])
    # 1o needs 14: 7+7 with three sevens: three pairs.
    assert capture_options(C("1o"), M("7c 7e 7b")) == sorted([M("7c 7e"), M("7c 7b"), M("7e 7b")])


def test_a_capture_may_take_many_cards():
    # 1o needs 14 = 1+2+3+4+4.
    assert capture_options(C("1o"), M("1c 2c 3c 4c 4e")) == [M("1c 2c 3c 4c 4e")]


def test_prefer_single_keeps_only_single_card_options():
    assert capture_options(C("7o"), M("3c 5e Sb"), PREFER) == [M("Sb")]
    assert capture_options(C("5o"), M("Rc Re 4c 6b"), PREFER) == [M("Rc"), M("Re")]


def test_prefer_single_without_a_single_option_keeps_the_others():
    assert capture_options(C("6o"), M("2c 4e 3b Rc"), PREFER) == [M("2c 4e 3b")]
    assert capture_options(C("7o"), M("3c 5e"), PREFER) == [M("3c 5e")]
    assert capture_options(C("7o"), M("Rc"), PREFER) == []


def test_default_rules_are_used_when_none_given():
    assert capture_options(C("7o"), M("3c 5e Sb"), None) == [M("3c 5e"), M("Sb")]


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        capture_options(40, 0)
    with pytest.raises(ValueError):
        capture_options(-1, 0)
    with pytest.raises(ValueError):
        capture_options(C("7o"), 1 << 40)
    with pytest.raises(ValueError):
        capture_options(C("7o"), -1)
    with pytest.raises(ValueError, match="table"):
        capture_options(C("7o"), M("7o Sb"))


def _subsets_of_mask(table: int, target: int) -> list[int]:
    cards = [c for c in range(40) if table >> c & 1]
    out = []
    for k in range(len(cards) + 1):
        for combo in itertools.combinations(cards, k):
            if sum(c // 4 + 1 for c in combo) == target:
                out.append(sum(1 << c for c in combo))
    return out


@st.composite
def card_and_table(draw, max_table=12):
    card = draw(st.integers(0, 39))
    others = [c for c in range(40) if c != card]
    table = draw(st.lists(st.sampled_from(others), max_size=max_table, unique=True))
    return card, sum(1 << c for c in table)


@settings(max_examples=300, deadline=None)
@given(card_and_table(), st.booleans())
def test_capture_options_equal_brute_force_over_all_subsets(ct, prefer):
    card, table = ct
    rules = Rules(prefer_single=prefer)
    brute = [m for m in _subsets_of_mask(table, 15 - (card // 4 + 1)) if m]
    if prefer and any(bin(m).count("1") == 1 for m in brute):
        brute = [m for m in brute if bin(m).count("1") == 1]
    assert capture_options(card, table, rules) == sorted(brute)
    ref = ref_capture_options(card, [c for c in range(40) if table >> c & 1], prefer)
    assert sorted(sum(1 << c for c in o) for o in ref) == sorted(brute)


def _brute_summary(table: int, target: int) -> tuple[int, int, int]:
    subs = _subsets_of_mask(table, target) if target >= 0 else []
    union = 0
    inter = (1 << 40) - 1 if subs else 0
    for s in subs:
        union |= s
        inter &= s
    return len(subs), union, inter


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 39), max_size=12, unique=True), st.integers(-2, 14)),
                min_size=1, max_size=16))
def test_option_summary_equals_brute_force(rows):
    tables = np.array([sum(1 << c for c in t) for t, _ in rows], np.uint64)
    targets = np.array([s for _, s in rows], np.int64)
    count, union, inter = option_summary(tables, targets)
    for i, (t, s) in enumerate(rows):
        n, u, x = _brute_summary(sum(1 << c for c in t), s)
        assert (int(count[i]), int(union[i]), int(inter[i])) == (n, u, x), (t, s)


def _pattern_summary(table: int, target: int) -> tuple[int, int, int]:
    """Count subsets by value multiplicities (valid for tables of any size)."""
    cnt = [bin((table >> (4 * v)) & 0xF).count("1") for v in range(10)]
    feasible: list[tuple[int, ...]] = []

    def extend(v: int, left: int, ks: tuple[int, ...]) -> None:
        if v == 10:
            if left == 0:
                feasible.append(ks)
            return
        for k in range(min(cnt[v], left // (v + 1)) + 1):
            extend(v + 1, left - (v + 1) * k, (*ks, k))

    extend(0, target, ())
    count = sum(prod(comb(c, k) for c, k in zip(cnt, ks, strict=True)) for ks in feasible)
    union = inter = 0
    for v in range(10):
        nib = table & (0xF << (4 * v))
        if any(ks[v] > 0 for ks in feasible):
            union |= nib
        if feasible and cnt[v] and all(ks[v] == cnt[v] for ks in feasible):
            inter |= nib
    return count, union, inter


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 39), min_size=13, max_size=40, unique=True), st.integers(0, 14))
def test_option_summary_on_large_tables_equals_counting_by_value(table_cards, target):
    table = sum(1 << c for c in table_cards)
    count, union, inter = option_summary(np.array([table], np.uint64), np.array([target]))
    assert (int(count[0]), int(union[0]), int(inter[0])) == _pattern_summary(table, target)


def test_option_summary_exact_values():
    full = (1 << 40) - 1
    tables = np.array([M("3c 5e Sb"), M("3c 5e Sb"), M("Rc"), 0, M("1o 1c"), full], np.uint64)
    targets = np.array([8, 0, 5, 0, -1, 1])
    count, union, inter = option_summary(tables, targets)
    assert count.tolist() == [2, 1, 0, 1, 0, 4]
    assert union.tolist() == [M("3c 5e Sb"), 0, 0, 0, 0, 0xF]
    assert inter.tolist() == [0, 0, 0, 0, 0, 0]


def test_reference_subsets_helper_agrees_with_the_worked_example():
    assert sorted(all_subsets_with_sum([C("3c"), C("5e"), C("Sb")], 8), key=len) == [
        frozenset({C("Sb")}), frozenset({C("3c"), C("5e")})]
