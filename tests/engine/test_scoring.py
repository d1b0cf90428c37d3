"""Round scoring (docs/rules.md §6): every category with exact values and ties."""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import Rules, score_round
from escoba_env.rulebook.scoring import score_round_batch, side_escobas, side_piles
from tests.helpers import M

FULL = (1 << 40) - 1
TIEBREAK = Rules(sevens_rule="most_sevens_tiebreak")
PRIMERA = Rules(sevens_rule="primera")
BONUS = Rules(bonus_sweeps=True)

# A balanced split of the deck: 5 oros, 2 sevens each; side 0 holds the velo.
BASE0 = M("1o 2o 3o 4o 7o 7c")
BASE1 = M("5o 6o So Co Ro 7e 7b")
# The 27 cards that are neither oros nor sevens, ascending.
FILLER = [c for c in range(40) if c % 4 != 0 and c // 4 != 6]


def fill(k: int) -> tuple[int, int]:
    """Return the two base piles with the first k filler cards added to side 0, the rest to side 1."""
    first = sum(1 << c for c in FILLER[:k])
    return BASE0 | first, BASE1 | (FULL & ~(BASE0 | BASE1 | first))


def cats(piles, escobas, rules: Rules | None = None) -> dict[str, list[int]]:
    rules = Rules() if rules is None else rules
    res = score_round_batch(np.array([piles], np.uint64), np.array([escobas]), rules)
    return {k: v[0].tolist() for k, v in res.items()}


def test_filler_split_is_a_partition():
    assert len(FILLER) == 27
    p0, p1 = fill(14)
    assert p0 & p1 == 0 and p0 | p1 == FULL
    assert bin(p0).count("1") == 20


def test_cards_tie_twenty_twenty_scores_nobody():
    p0, p1 = fill(14)  # 20 - 20 cards, 5 - 5 oros, 2 - 2 sevens, velo side 0
    assert score_round([p0, p1], [0, 0]) == [1, 0]
    assert cats([p0, p1], [0, 0]) == {
        "cards": [0, 0], "oros": [0, 0], "velo": [1, 0], "sevens": [0, 0], "escobas": [0, 0],
        "points": [1, 0]}


def test_twenty_one_cards_score_the_cards_point():
    assert score_round(list(fill(15)), [0, 0]) == [2, 0]  # 21 - 19
    assert score_round(list(fill(13)), [0, 0]) == [1, 1]  # 19 - 21


def test_most_cards_among_three_sides_and_three_way_ties():
    rules = Rules(num_players=3)
    a = M("1o 1c 1e 1b 2o 2c")  # 6 cards, 2 oros
    b = M("3o 3c 3e 3b 4o 4c")  # 6 cards, 2 oros
    c = M("5c 5e 5b 6c 6e")  # 5 cards, 0 oros
    assert score_round([a, b, c], [0, 0, 0], rules) == [0, 0, 0]
    c2 = c | M("6b Sc")  # now 7 cards
    assert score_round([a, b, c2], [0, 0, 0], rules) == [0, 0, 1]


def test_most_oros_six_scores_and_five_five_scores_nobody():
    p0, p1 = fill(14)
    # Move 5o to side 0 and one filler card back to side 1: 20 - 20 cards, 6 - 4 oros.
    f = 1 << FILLER[0]
    q0, q1 = (p0 | M("5o")) & ~f, (p1 & ~M("5o")) | f
    assert bin(q0).count("1") == 20
    assert score_round([q0, q1], [0, 0]) == [2, 0]
    assert cats([q0, q1], [0, 0])["oros"] == [1, 0]
    # And 4 - 6 oros the other way.
    r0, r1 = (p0 & ~M("4o")) | (1 << FILLER[20]), (p1 | M("4o")) & ~(1 << FILLER[20])
    assert cats([r0, r1], [0, 0])["oros"] == [0, 1]
    assert score_round([r0, r1], [0, 0]) == [1, 1]


def test_velo_point_goes_to_the_side_holding_seven_of_oros():
    p0, p1 = fill(14)
    # Swap 7o for 7e and a filler card for 5o: still 20 - 20 cards, 5 - 5 oros, 2 - 2 sevens.
    moved = M("7o") | (1 << FILLER[0])
    q0 = (p0 & ~moved) | M("7e 5o")
    q1 = FULL & ~q0
    assert bin(q0).count("1") == 20
    assert cats([q0, q1], [0, 0]) == {
        "cards": [0, 0], "oros": [0, 0], "velo": [0, 1], "sevens": [0, 0], "escobas": [0, 0],
        "points": [0, 1]}
    assert score_round([q0, q1], [0, 0]) == [0, 1]
    assert cats([0, 0], [0, 0])["velo"] == [0, 0]


def test_most_sevens_three_one_scores_and_two_two_scores_nobody():
    p0, p1 = fill(14)
    assert cats([p0, p1], [0, 0])["sevens"] == [0, 0]
    q0, q1 = (p0 | M("7e")) & ~M("1c"), (p1 & ~M("7e")) | M("1c")  # 3 - 1 sevens, 20 - 20 cards
    assert cats([q0, q1], [0, 0])["sevens"] == [1, 0]
    assert score_round([q0, q1], [0, 0]) == [2, 0]


def test_escobas_add_one_point_each():
    p0, p1 = fill(14)
    assert score_round([p0, p1], [3, 2]) == [4, 2]
    assert cats([p0, p1], [3, 2])["escobas"] == [3, 2]


def test_empty_piles_score_nothing():
    assert score_round([0, 0], [0, 0]) == [0, 0]
    assert score_round([0, 0, 0], [0, 0, 0], Rules(num_players=3)) == [0, 0, 0]


def _split_by_counts(counts0: dict[int, int]) -> tuple[int, int]:
    """Return piles where side 0 holds counts0[v] cards of value v (suits o, c, e, b in order)."""
    p0 = 0
    for v, k in counts0.items():
        for s in range(k):
            p0 |= 1 << (4 * (v - 1) + s)
    return p0, FULL & ~p0


@pytest.mark.parametrize(
    ("counts0", "winner"),
    [
        ({7: 3}, 0),
        ({7: 1}, 1),
        ({7: 2, 6: 3}, 0),  # sevens tie, sixes decide
        ({7: 2, 6: 1, 1: 4}, 1),  # sixes come before aces
        ({7: 2, 6: 2, 1: 3}, 0),  # then aces
        ({7: 2, 6: 2, 1: 1, 5: 4}, 1),  # aces come before fives
        ({7: 2, 6: 2, 1: 2, 5: 3}, 0),  # then fives
        ({7: 2, 6: 2, 1: 2, 5: 1, 4: 4}, 1),  # fives come before fours
        ({7: 2, 6: 2, 1: 2, 5: 2, 4: 3}, 0),  # then fours
        ({7: 2, 6: 2, 1: 2, 5: 2, 4: 2, 3: 3}, 0),  # then threes
        ({7: 2, 6: 2, 1: 2, 5: 2, 4: 2, 3: 1, 2: 4}, 1),  # threes come before twos
        ({7: 2, 6: 2, 1: 2, 5: 2, 4: 2, 3: 2, 2: 3}, 0),  # then twos
        ({7: 2, 6: 2, 1: 2, 5: 2, 4: 2, 3: 2, 2: 1}, 1),
        ({7: 2, 6: 2, 1: 2, 5: 2, 4: 2, 3: 2, 2: 2, 8: 4, 9: 4, 10: 4}, None),  # all tied: nobody
        ({7: 2, 6: 2, 1: 2, 5: 2, 4: 2, 3: 2, 2: 2}, None),  # figures never break the tie
    ],
)
def test_most_sevens_tiebreak_chain(counts0, winner):
    p0, p1 = _split_by_counts(counts0)
    expect = [0, 0] if winner is None else [int(winner == 0), int(winner == 1)]
    assert cats([p0, p1], [0, 0], TIEBREAK)["sevens"] == expect
    # Plain most_sevens only looks at the sevens.
    plain = {3: [1, 0], 1: [0, 1]}.get(counts0[7], [0, 0])
    assert cats([p0, p1], [0, 0])["sevens"] == plain


def test_most_sevens_tiebreak_with_three_sides_compares_only_the_tied_leaders():
    rules = Rules(num_players=3, sevens_rule="most_sevens_tiebreak")
    a = M("7o 7c 1o")  # 2 sevens, 0 sixes
    b = M("7e 7b 6o")  # 2 sevens, 1 six
    c = M("6c 6e 6b")  # 0 sevens, 3 sixes
    assert cats([a, b, c], [0, 0, 0], rules)["sevens"] == [0, 1, 0]
    # Totals: cards 3-3-3 nobody; oros a 2 (1o, 7o), b 1, c 0 -> a; velo a.
    assert score_round([a, b, c], [0, 0, 0], rules) == [2, 1, 0]
    assert cats([a, b, c], [0, 0, 0], Rules(num_players=3))["sevens"] == [0, 0, 0]


@pytest.mark.parametrize(
    ("pile0", "pile1", "expect"),
    [
        ("7o 7c 7e 7b", "6o 6c 6e 6b", [1, 0]),  # 84 vs 72
        ("7o 2c 2e 2b", "6o 6c 6e Sb", [0, 1]),  # 57 vs 64: the best card alone does not decide
        ("7o 3c Se Sb", "6o 1c Ce Cb", [0, 0]),  # 21+13+10+10 = 54 = 18+16+10+10
        ("7o 3c Se 2b", "6o 1c Ce Cb", [1, 0]),  # 56 vs 54: a two (12) beats a figure (10)
        ("1o 2c Se Sb", "4o 4c Ce Cb", [0, 0]),  # 16+12 = 28 = 14+14
        ("3o 5c Se Sb", "4o 4c Ce Cb", [0, 0]),  # 13+15 = 28 = 14+14
        ("So 6c Se Sb", "4o 4c Ce Cb", [0, 0]),  # 10+18 = 28 = 14+14
        ("7o 5c Se Sb", "6o 6c Ce Cb", [0, 0]),  # 21+15 = 36 = 18+18
        ("1o 1c 1e 1b", "5o 5c 5e 5b", [1, 0]),  # 64 vs 60
        ("5o 5c 5e 5b", "4o 4c 4e 4b", [1, 0]),  # 60 vs 56
        ("3o 3c 3e 3b", "4o 4c 4e 4b", [0, 1]),  # 52 vs 56
        ("3o 3c 3e 3b", "2o 2c 2e 2b", [1, 0]),  # 52 vs 48
        ("So Cc Re Rb", "2o 2c 2e 2b", [0, 1]),  # 40 vs 48
        ("7o 7c 1o So Ro Ce", "7e 2b", [0, 0]),  # neither has all four suits
        ("7o 7c 7e", "Sb So Sc Se", [0, 1]),  # a side missing a suit has no primera
        ("7o 6o 1o 5o 7c 7e", "2b 2c 2e 2o", [0, 1]),  # 48 beats a side with no bastos
    ],
)
def test_primera(pile0, pile1, expect):
    assert cats([M(pile0), M(pile1)], [0, 0], PRIMERA)["sevens"] == expect


def test_primera_only_counts_the_best_card_of_each_suit():
    # Extra cards of a suit add nothing: 21*4 = 84 either way.
    assert cats([M("7o 7c 7e 7b 6o 6c 1e 5b"), M("So")], [0, 0], PRIMERA)["sevens"] == [1, 0]
    # Many cards do not help either: 6o 6c 6e 6b and eight figures is 72, 7o 2c 2e 2b is 57.
    big = M("6o 6c 6e 6b So Sc Se Sb Co Cc Ce Cb")
    assert cats([big, M("7o 2c 2e 2b")], [0, 0], PRIMERA)["sevens"] == [1, 0]


def test_primera_missing_suit_round_total():
    # side 0: 7o 7c 7e (no bastos: no primera), velo; side 1: four sotas (40), 4 > 3 cards.
    # oros: 7o vs So, 1 - 1: nobody.
    assert score_round([M("7o 7c 7e"), M("Sb So Sc Se")], [0, 0], PRIMERA) == [1, 2]
    # Both miss a suit: nobody gets the primera point; side 0: cards, oros, velo.
    assert score_round([M("7o 7c 7e"), M("7b 6b")], [0, 0], PRIMERA) == [3, 0]


def test_primera_with_three_sides():
    rules = Rules(num_players=3, sevens_rule="primera")
    a = M("7o 7c 7e 2b")  # 75
    b = M("6o 6c 6e 6b")  # 72
    c = M("1o 1c 1e")  # missing bastos
    assert cats([a, b, c], [0, 0, 0], rules)["sevens"] == [1, 0, 0]
    a2 = M("7o 6c 6e 2b")  # 21+18+18+12 = 69 < 72
    assert cats([a2, b & ~M("6c 6e") | M("7c 7e"), c], [0, 0, 0], rules)["sevens"] == [0, 1, 0]


def test_bonus_sweeps_all_ten_oros_and_all_four_sevens():
    p0 = M("1o 2o 3o 4o 5o 6o 7o So Co Ro 7c 7e 7b")  # 13 cards
    p1 = FULL & ~p0  # 27 cards
    assert cats([p0, p1], [0, 0], BONUS) == {
        "cards": [0, 1], "oros": [2, 0], "velo": [1, 0], "sevens": [2, 0], "escobas": [0, 0],
        "points": [5, 1]}
    assert score_round([p0, p1], [0, 0], Rules()) == [3, 1]
    for rule in ("most_sevens_tiebreak", "primera"):
        assert score_round([p0, p1], [0, 0], Rules(bonus_sweeps=True, sevens_rule=rule)) == [5, 1]
    assert score_round([p0, p1], [2, 1], BONUS) == [7, 2]


def test_bonus_sweeps_four_sevens_alone_give_three_with_the_velo():
    p0 = M("7o 7c 7e 7b")
    p1 = FULL & ~p0
    # side 0: velo 1 + sevens 2; side 1: cards 36, oros 9.
    assert score_round([p0, p1], [0, 0], BONUS) == [3, 2]
    assert score_round([p0, p1], [0, 0]) == [2, 2]


def test_bonus_sweeps_nine_oros_or_three_sevens_score_one():
    p0 = M("1o 2o 3o 4o 5o 6o 7o So Co 7c 7e")
    p1 = FULL & ~p0
    assert cats([p0, p1], [0, 0], BONUS)["oros"] == [1, 0]
    assert cats([p0, p1], [0, 0], BONUS)["sevens"] == [1, 0]


def test_partnership_scoring_has_two_sides():
    rules = Rules(num_players=4, partnerships=True)
    p0, p1 = fill(15)
    assert score_round([p0, p1], [1, 0], rules) == [3, 0]
    with pytest.raises(ValueError, match="2 sides"):
        score_round([p0, p1, 0, 0], [0, 0, 0, 0], rules)


def test_score_round_batch_rows_are_independent():
    a = fill(14)
    b = fill(15)
    res = score_round_batch(np.array([a, b], np.uint64), np.array([[0, 0], [1, 2]]), Rules())
    assert res["points"].tolist() == [[1, 0], [3, 2]]
    assert res["cards"].tolist() == [[0, 0], [1, 0]]


@pytest.mark.parametrize(
    ("piles", "escobas", "rules", "match"),
    [
        ([0, 0, 0], [0, 0, 0], Rules(), "sides"),
        ([0, 0], [0], Rules(), "side"),
        ([0, 0], [0, 0], Rules(num_players=3), "sides"),
        ([M("7o"), M("7o")], [0, 0], Rules(), "share"),
        ([1 << 40, 0], [0, 0], Rules(), "mask"),
        ([-1, 0], [0, 0], Rules(), "mask"),
        ([0, 0], [-1, 0], Rules(), "escoba"),
    ],
)
def test_bad_input_to_score_round_raises(piles, escobas, rules, match):
    with pytest.raises(ValueError, match=match):
        score_round(piles, escobas, rules)


def test_partners_piles_and_escobas_are_pooled_per_side():
    piles = np.array([[M("1o"), M("2o"), M("3o 7o"), M("Rb")]], np.uint64)
    escobas = np.array([[1, 0, 2, 3]])
    assert side_piles(piles, True).tolist() == [[M("1o 3o 7o"), M("2o Rb")]]
    assert side_escobas(escobas, True).tolist() == [[3, 3]]
    # Without partnerships every seat is its own side (three players here).
    assert side_piles(piles[:, :3], False).tolist() == [[M("1o"), M("2o"), M("3o 7o")]]
    assert side_escobas(escobas[:, :3], False).tolist() == [[1, 0, 2]]
