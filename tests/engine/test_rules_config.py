"""The rules configuration object validates itself (docs/rules.md §2, §4, §6, §7 options)."""

from __future__ import annotations

import pytest

from escoba_env import Rules


def test_defaults_follow_the_rule_book():
    r = Rules()
    assert r.num_players == 2
    assert r.partnerships is False
    assert r.target_score == 21
    assert r.sevens_rule == "most_sevens"
    assert r.bonus_sweeps is False
    assert r.prefer_single is False
    assert r.last_play_escoba is True
    assert r.initial_fifteen is True
    assert r.num_sides == 2


def test_sides_of_seats():
    assert [Rules(num_players=3).side_of(s) for s in range(3)] == [0, 1, 2]
    assert Rules(num_players=3).num_sides == 3
    assert [Rules(num_players=4).side_of(s) for s in range(4)] == [0, 1, 2, 3]
    assert Rules(num_players=4).num_sides == 4
    team = Rules(num_players=4, partnerships=True)
    assert [team.side_of(s) for s in range(4)] == [0, 1, 0, 1]
    assert team.num_sides == 2


def test_deals_per_round():
    assert [Rules(num_players=p).deals_per_round for p in (2, 3, 4)] == [6, 4, 3]
    # With jokers one more, short deal gives out the 1 or 2 cards left (docs/rules.md §11).
    assert [Rules(num_players=p, jokers=j).deals_per_round for j in (1, 2) for p in (2, 3, 4)] == [
        7, 5, 4, 7, 5, 4]
    assert [Rules(jokers=j).num_cards for j in (0, 1, 2)] == [40, 41, 42]


def test_rules_are_frozen():
    r = Rules()
    with pytest.raises(AttributeError):
        r.num_players = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_players": 3, "partnerships": True}, "partnerships"),
        ({"num_players": 2, "partnerships": True}, "partnerships"),
        ({"num_players": 5}, "num_players"),
        ({"num_players": 1}, "num_players"),
        ({"num_players": 0}, "num_players"),
        ({"num_players": "2"}, "num_players"),
        ({"num_players": True}, "num_players"),
        ({"sevens_rule": "unknown"}, "sevens_rule"),
        ({"sevens_rule": "Primera"}, "sevens_rule"),
        ({"target_score": 0}, "target_score"),
        ({"target_score": -5}, "target_score"),
        ({"target_score": 21.0}, "target_score"),
        ({"target_score": True}, "target_score"),
        ({"partnerships": 1, "num_players": 4}, "partnerships"),
        ({"bonus_sweeps": 1}, "bonus_sweeps"),
        ({"prefer_single": "yes"}, "prefer_single"),
        ({"last_play_escoba": 0}, "last_play_escoba"),
        ({"initial_fifteen": None}, "initial_fifteen"),
    ],
)
def test_invalid_options_raise_a_clear_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Rules(**kwargs)


def test_a_sevens_rule_that_is_not_a_str_is_a_type_error():
    with pytest.raises(TypeError, match="Rules.sevens_rule must be a str"):
        Rules(sevens_rule=None)


def test_float_num_players_is_rejected():
    with pytest.raises(ValueError, match="num_players"):
        Rules(num_players=2.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("sevens_rule", ["most_sevens", "most_sevens_tiebreak", "primera"])
def test_every_sevens_rule_is_accepted(sevens_rule):
    assert Rules(sevens_rule=sevens_rule).sevens_rule == sevens_rule


def test_four_player_partnerships_and_other_valid_combinations():
    assert Rules(num_players=4, partnerships=True).partnerships is True
    assert Rules(num_players=3, target_score=30, bonus_sweeps=True, prefer_single=True,
                 last_play_escoba=False, initial_fifteen=False).target_score == 30
    assert Rules(target_score=1).target_score == 1


def test_to_dict_and_from_dict_round_trip():
    r = Rules(num_players=4, partnerships=True, target_score=30, sevens_rule="primera",
              bonus_sweeps=True, prefer_single=True, last_play_escoba=False, initial_fifteen=False,
              jokers=2, mesa_deal=True)
    d = r.to_dict()
    assert d == {
        "num_players": 4, "partnerships": True, "target_score": 30, "sevens_rule": "primera",
        "bonus_sweeps": True, "prefer_single": True, "last_play_escoba": False,
        "initial_fifteen": False, "jokers": 2, "mesa_deal": True,
    }
    assert Rules.from_dict(d) == r
    assert Rules.from_dict({}) == Rules()
    assert Rules.from_dict(Rules().to_dict()) == Rules()


def test_from_dict_rejects_unknown_keys_and_bad_values():
    with pytest.raises(ValueError, match="unknown rules option"):
        Rules.from_dict({"joker": 1})
    for bad in (3, -1, True, 1.0, "1"):
        with pytest.raises(ValueError, match="jokers"):
            Rules.from_dict({"jokers": bad})
    with pytest.raises(ValueError, match="mesa_deal"):
        Rules(mesa_deal=1)
    with pytest.raises(ValueError, match="num_players"):
        Rules.from_dict({"num_players": 5})
