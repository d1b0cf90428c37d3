"""Card ids, values, names and masks (docs/rules.md §1)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from escoba_env import card_name, cards_of, mask_of, parse_card
from escoba_env.rulebook import cards as cards_mod


def test_card_id_is_four_times_value_minus_one_plus_suit():
    assert parse_card("1o") == 0
    assert parse_card("1c") == 1
    assert parse_card("1e") == 2
    assert parse_card("1b") == 3
    assert parse_card("2o") == 4
    assert parse_card("7o") == 24
    assert parse_card("Sb") == 4 * 7 + 3
    assert parse_card("Co") == 32
    assert parse_card("Rc") == 37
    assert parse_card("Rb") == 39


def test_velo_is_id_24():
    assert cards_mod.VELO == 24
    assert card_name(24) == "7o"


def test_sota_counts_eight_caballo_nine_rey_ten():
    assert cards_mod.card_value(parse_card("So")) == 8
    assert cards_mod.card_value(parse_card("Cc")) == 9
    assert cards_mod.card_value(parse_card("Re")) == 10
    assert [cards_mod.card_value(c) for c in range(0, 40, 4)] == list(range(1, 11))
    assert [cards_mod.card_suit(c) for c in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_oros_mask_is_every_fourth_bit_and_sevens_one_nibble():
    assert cards_mod.OROS == sum(1 << b for b in range(0, 40, 4))
    assert cards_mod.SEVENS == (1 << 24) | (1 << 25) | (1 << 26) | (1 << 27)
    assert cards_mod.FULL_DECK == (1 << 40) - 1


def test_card_name_of_every_id_round_trips():
    for c in range(40):
        assert parse_card(card_name(c)) == c
        assert parse_card(card_name(c, french=True)) == c
    assert card_name(0) == "1o"
    assert card_name(37) == "Rc"
    assert card_name(30) == "Se"
    assert card_name(35) == "Cb"


@pytest.mark.parametrize(
    ("name", "card"),
    [("7♦", 24), ("A♥", 1), ("J♠", 30), ("Q♥", 33), ("K♣", 39), ("2♣", 7), ("A♦", 0)],
)
def test_parse_card_accepts_french_names(name, card):
    assert parse_card(name) == card


def test_french_card_names():
    assert card_name(24, french=True) == "7♦"
    assert card_name(1, french=True) == "A♥"
    assert card_name(30, french=True) == "J♠"
    assert card_name(33, french=True) == "Q♥"
    assert card_name(39, french=True) == "K♣"


@pytest.mark.parametrize("bad", ["", "7", "o", "8o", "0o", "7x", "Xo", "11", "7oo", "Z♦"])
def test_parse_card_rejects_unknown_names(bad):
    with pytest.raises(ValueError, match="card"):
        parse_card(bad)


@pytest.mark.parametrize("bad", [None, 24, 7.0, b"7o"])
def test_parse_card_rejects_non_strings(bad):
    with pytest.raises(ValueError):
        parse_card(bad)


@pytest.mark.parametrize("bad", [-1, 42, 43, 1000])  # 40, 41 are the jokers (docs/rules.md §11)
def test_out_of_range_ids_raise(bad):
    with pytest.raises(ValueError, match="range"):
        card_name(bad)
    with pytest.raises(ValueError):
        mask_of([bad])


@pytest.mark.parametrize("bad", [True, 1.0, "3", None])
def test_non_int_ids_raise_a_type_error(bad):
    with pytest.raises(TypeError, match="a card id must be an int"):
        card_name(bad)


def test_mask_of_and_cards_of():
    assert mask_of([]) == 0
    assert mask_of([0, 24, 39]) == 1 | (1 << 24) | (1 << 39)
    assert cards_of(1 | (1 << 24) | (1 << 39)) == [0, 24, 39]
    assert cards_of(0) == []
    assert cards_of((1 << 40) - 1) == list(range(40))


def test_mask_of_rejects_duplicates():
    with pytest.raises(ValueError, match="twice"):
        mask_of([3, 3])


@pytest.mark.parametrize("bad", [-1, 1 << 42])
def test_cards_of_rejects_masks_beyond_42_bits(bad):
    with pytest.raises(ValueError):
        cards_of(bad)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 39)))
def test_mask_round_trip(cards):
    m = mask_of(cards)
    assert cards_of(m) == sorted(cards)
    assert mask_of(cards_of(m)) == m
    assert cards_mod.mask_value(m) == sum(c // 4 + 1 for c in cards)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sets(st.integers(0, 41)), min_size=1, max_size=8))
def test_batched_mask_values_equal_mask_value(card_sets):
    import numpy as np

    masks = np.array([mask_of(s) for s in card_sets], np.uint64)
    assert cards_mod.mask_values(masks).tolist() == [cards_mod.mask_value(int(m)) for m in masks]
