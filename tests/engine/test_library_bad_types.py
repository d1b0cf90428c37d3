"""Library functions refuse values of the wrong type instead of converting them; seeds have one range."""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaEngine, EscobaVectorEnv, Rules, capture_options, escoba_v0, score_round
from escoba_env.rulebook.cards import cards_of, parse_card
from escoba_env.rulebook.rules import SEED_LIMIT, check_seed


@pytest.mark.parametrize("table", [3.7, "3", True, np.float64(3.0), None])
def test_capture_options_refuses_a_table_mask_that_is_not_an_int(table):
    with pytest.raises(TypeError, match="table_mask must be an int"):
        capture_options(12, table)


@pytest.mark.parametrize("card", [12.0, "12", True])
def test_capture_options_refuses_a_card_that_is_not_an_int(card):
    with pytest.raises(TypeError, match="a card id must be an int"):
        capture_options(card, 0b11)


def test_capture_options_still_takes_numpy_ints():
    four, eight = parse_card("4o"), parse_card("Sc")  # 4 + 8 + 3 (the played tres) = 15
    assert capture_options(np.int64(parse_card("3e")), np.uint64((1 << four) | (1 << eight))) == [
        (1 << four) | (1 << eight)]


@pytest.mark.parametrize("piles, escobas, match", [
    ([1.0, 2], [0, 0], "a pile must be an int"),
    (["1", 2], [0, 0], "a pile must be an int"),
    ([True, 2], [0, 0], "a pile must be an int"),
    ([1, 2], ["3", 0], "an escoba count must be an int"),
    ([1, 2], [1.0, 0], "an escoba count must be an int"),
    ([1, 2], [False, 0], "an escoba count must be an int"),
])
def test_score_round_refuses_float_str_and_bool_masks_and_counts(piles, escobas, match):
    with pytest.raises(TypeError, match=match):
        score_round(piles, escobas)


def test_score_round_counts_int_escobas_exactly():
    velo = 1 << parse_card("7o")
    # the velo alone wins cards, oros, velo and sevens (4 points), plus 3 escobas
    assert score_round([velo, 0], [3, 0]) == [7, 0]
    assert score_round([velo, 0], [np.int32(3), 0]) == [7, 0]
    assert score_round([velo, 0], [0, 2]) == [4, 2]


@pytest.mark.parametrize("mask", [3.9, "3", True])
def test_cards_of_refuses_non_int_masks(mask):
    with pytest.raises(TypeError, match="a card mask must be an int"):
        cards_of(mask)


def test_rules_refuses_a_sevens_rule_that_is_not_a_str():
    with pytest.raises(TypeError, match="Rules.sevens_rule must be a str"):
        Rules(sevens_rule=np.array(["primera"]))


@pytest.mark.parametrize("call", [lambda: check_seed(1.0), lambda: cards_of(3.9),
                                  lambda: capture_options(12.0, 3), lambda: Rules(sevens_rule=7)])
def test_a_wrong_type_is_a_type_error_and_not_a_value_error(call):
    with pytest.raises(TypeError) as caught:
        call()
    assert not isinstance(caught.value, ValueError)


@pytest.mark.parametrize("seed, error", [(2**64, ValueError), (2**64 + 5, ValueError), (-1, ValueError),
                                         (True, TypeError), (1.0, TypeError), ("5", TypeError)])
def test_one_seed_range_everywhere(seed, error):
    with pytest.raises(error, match=r"seed must be an int in 0\.\.2\*\*64-1"):
        check_seed(seed)
    eng = EscobaEngine(2, Rules())
    eng.reset(7)
    deck = eng.deck.copy()
    with pytest.raises(error, match="seed must be"):
        eng.reset(seed)
    assert eng.seed == 7 and (eng.deck == deck).all()
    with pytest.raises(error, match="seed must be"):
        EscobaVectorEnv(2).reset(seed=seed)
    with pytest.raises(error, match="seed must be"):  # the AEC env, through the engine's check
        escoba_v0.raw_env().reset(seed=seed)


def test_the_largest_seed_is_accepted_and_does_not_wrap():
    assert check_seed(SEED_LIMIT - 1) == 2**64 - 1 and check_seed(np.uint64(5)) == 5
    a, b = EscobaEngine(1, Rules()), EscobaEngine(1, Rules())
    a.reset(5)
    b.reset(2**64 - 1)
    assert (a.deck != b.deck).any()


def test_vector_env_takes_one_deck_per_game_as_its_docstring_says():
    env = EscobaVectorEnv(2)
    first = list(range(40))
    second = [parse_card("7o"), *[c for c in range(40) if c != parse_card("7o")]]
    env.reset(seed=3, options={"deck": [first, second], "dealer": 1})
    assert env.engine.deck.tolist() == [first, second]
    assert env.engine.dealer.tolist() == [1, 1]
    env.reset(seed=3, options={"deck": np.array([second, first])})
    assert env.engine.deck.tolist() == [second, first]
    with pytest.raises(ValueError, match="40 card ids|one row"):
        env.reset(seed=3, options={"deck": [first, second, first]})


def test_vector_env_step_before_reset_is_an_error():
    env = EscobaVectorEnv(2)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.zeros(2, np.int64))
