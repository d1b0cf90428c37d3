"""Bad input raises a ValueError that says what is wrong, and changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaEngine, Rules
from tests.helpers import C, assert_same_state, ids, state_arrays

HANDS = [ids("1o 2o 3o"), ids("4o 5o 6o")]
TABLE = ids("Rb Rc Re Ro")
STOCK = [c for c in range(40) if c not in sum(HANDS, []) + TABLE]


@pytest.fixture
def eng() -> EscobaEngine:
    """Return a 2-game engine mid-round (a few random plays made)."""
    e = EscobaEngine(2)
    e.reset(0, dealer=1, hands=HANDS, table=TABLE, stock=STOCK)
    # Seat 0 to act with 1o 2o 3o over Rb Rc Re Ro in both games: play 1o (1 needs 14: none).
    e.step(np.array([C("1o"), C("1o")]))
    return e


def _rejects(e: EscobaEngine, actions, match: str) -> None:
    before = state_arrays(e)
    with pytest.raises(ValueError, match=match):
        e.step(actions)
    assert_same_state(before, e)


def test_card_in_another_players_hand_is_rejected(eng):
    assert int(eng.to_act[0]) == 1
    _rejects(eng, np.array([C("2o"), C("4o")]), r"illegal action 4 \(2o\) in game 0: seat 1")


def test_card_not_in_any_hand_is_rejected(eng):
    _rejects(eng, np.array([C("4o"), C("Rb")]), r"illegal action 39 \(Rb\) in game 1")
    _rejects(eng, np.array([C("1o"), C("4o")]), r"illegal action 0 \(1o\) in game 0")  # played already


@pytest.mark.parametrize("bad", [-1, 40, 63, 64, 1000, -(2**40)])
def test_out_of_range_action_is_rejected(eng, bad):
    _rejects(eng, np.array([C("4o"), bad]), "out of range")


def test_illegal_action_in_a_later_game_rejects_the_whole_batch(eng):
    before = state_arrays(eng)
    with pytest.raises(ValueError, match="game 1"):
        eng.step(np.array([C("4o"), C("3o")]))
    assert_same_state(before, eng)
    assert int(eng.hands[0, 1]) >> C("4o") & 1  # game 0 did not play its legal card either


@pytest.mark.parametrize(
    "actions",
    [
        np.array([C("4o")]),
        np.array([C("4o")] * 3),
        np.array([[C("4o"), C("4o")]]),
        np.array(C("4o")),
        np.array([4.0, 4.0]),
        np.array([True, True]),
        np.array(["4", "4"]),
        [],
    ],
    ids=["short", "long", "2d", "scalar", "float", "bool", "str", "empty"],
)
def test_wrong_actions_shape_or_dtype_is_rejected(eng, actions):
    _rejects(eng, actions, "actions must be 2 ints")


def test_a_hand_card_while_a_capture_is_pending_is_rejected():
    e = EscobaEngine(1)
    # Seat 0 holds 5o over Ro Rc 4c 6b: three options, so a take is pending after the play.
    e.reset(0, dealer=1, hands=[ids("5o 1e 1b"), ids("2c 2e 2b")], table=ids("Ro Rc 4c 6b"),
            stock=[c for c in range(40) if c not in ids("5o 1e 1b 2c 2e 2b Ro Rc 4c 6b")])
    e.step(np.array([C("5o")]))
    assert int(e.pending[0]) == C("5o")
    _rejects(e, np.array([C("1e")]), "take a table card")
    _rejects(e, np.array([C("5o")]), "illegal action")


# ---------------------------------------------------------------------------------------------
# reset


def _reset_rejects(e: EscobaEngine, match: str, error: type[Exception] = ValueError, **kw) -> None:
    before = state_arrays(e)
    seed = e.seed
    with pytest.raises(error, match=match):
        e.reset(**kw)
    assert_same_state(before, e)
    assert e.seed == seed


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"deck": [0] + list(range(1, 39)) + [0]}, r"duplicated \['1o'\], missing \['Rb'\]"),
        ({"deck": list(range(39))}, "40 card ids"),
        ({"deck": list(range(41))}, "40 card ids"),
        ({"deck": list(range(39)) + [40]}, "invalid card id"),
        ({"deck": list(range(39)) + [-1]}, "invalid card id"),
        ({"deck": list(range(39)) + [True]}, "invalid card id"),
        ({"deck": list(range(39)) + [39.0]}, "invalid card id"),
        ({"deck": [list(range(40))] * 3}, "40 card ids"),
        ({"hands": HANDS, "table": TABLE, "stock": STOCK, "deck": list(range(40))}, "not both"),
        ({"hands": HANDS, "table": TABLE}, "all of hands, table and stock"),
        ({"hands": HANDS}, "all of hands, table and stock"),
        ({"hands": HANDS[:1], "table": TABLE, "stock": STOCK}, "one list per seat"),
        ({"hands": [*HANDS, ids("7o 7c 7e")], "table": TABLE, "stock": STOCK}, "one list per seat"),
        ({"hands": [HANDS[0][:2], HANDS[1]], "table": TABLE, "stock": STOCK}, "seat 0 must have 3 cards"),
        ({"hands": [HANDS[0], HANDS[1] + [STOCK[0]]], "table": TABLE, "stock": STOCK[1:]},
         "seat 1 must have 3 cards"),
        ({"hands": HANDS, "table": TABLE[:3], "stock": STOCK + TABLE[3:]}, "table must have 4 cards"),
        ({"hands": HANDS, "table": TABLE, "stock": STOCK[:-1]}, "stock must have 30 cards"),
        ({"hands": HANDS, "table": TABLE, "stock": STOCK[:-1] + [C("1o")]}, r"duplicated \['1o'\]"),
        ({"hands": [ids("1o 1o 3o"), HANDS[1]], "table": TABLE, "stock": STOCK[:-1] + [C("2o")]},
         "duplicated"),
        ({"dealer": 2}, "dealer must be a seat in 0..1"),
        ({"dealer": -1}, "dealer"),
        ({"dealer": 1.0}, "dealer"),
        ({"dealer": "1"}, "dealer"),
        ({"dealer": True}, "dealer"),
        ({"dealer": [0, 2]}, "dealer"),
        ({"game_ids": [0]}, "game_ids"),
        ({"game_ids": [0, -1]}, "game_ids"),
    ],
)
def test_malformed_reset_is_rejected_and_changes_nothing(eng, kw, match):
    _reset_rejects(eng, match, **kw)


@pytest.mark.parametrize("seed", ["1", 1.5])
def test_a_seed_of_the_wrong_type_is_a_type_error_and_changes_nothing(eng, seed):
    _reset_rejects(eng, "seed must be an int", TypeError, seed=seed)


def test_dealer_list_of_wrong_length_names_the_dealer(eng):
    _reset_rejects(eng, "dealer", dealer=[0, 1, 0])


def test_explicit_deal_for_three_players_checks_its_counts():
    e = EscobaEngine(1, Rules(num_players=3))
    hands = [ids("1o 2o 3o"), ids("4o 5o 6o"), ids("7o So Co")]
    table = ids("Rb Rc Re Ro")
    stock = [c for c in range(40) if c not in sum(hands, []) + table]
    e.reset(0, hands=hands, table=table, stock=stock)  # valid
    _reset_rejects(e, "seat 2 must have 3 cards", hands=hands[:2] + [ids("7o So")],
                   table=table, stock=stock + [C("Co")])
    _reset_rejects(e, "stock must have 27 cards with 3 players", hands=hands, table=table,
                   stock=stock[:-1])
    _reset_rejects(e, "one list per seat", hands=hands[:2], table=table, stock=stock + ids("7o So Co"))


@pytest.mark.parametrize("num_games", [0, -1, 1.5, True, "4", None])
def test_bad_num_games(num_games):
    with pytest.raises(ValueError, match="num_games"):
        EscobaEngine(num_games)


@pytest.mark.parametrize("max_rounds", [0, -1, 1.5, "3"])
def test_bad_max_rounds(max_rounds):
    with pytest.raises(ValueError, match="max_rounds"):
        EscobaEngine(1, max_rounds=max_rounds)


def test_bool_max_rounds_is_rejected():
    with pytest.raises(ValueError, match="max_rounds"):
        EscobaEngine(1, max_rounds=True)


def test_rules_must_be_a_rules_object():
    with pytest.raises(ValueError, match="Rules"):
        EscobaEngine(1, {"num_players": 2})  # type: ignore[arg-type]
