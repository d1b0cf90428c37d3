"""docs/rules.md §11 variants in cards, capture, scoring and the engine: jokers and escoba de mesa.

Hand-made positions with exact results. Jokers are ids 40 ("*1") and 41 ("*2"), wild for 1..10:
a set of table cards with ``k`` jokers and other cards summing to ``s`` is an option for a played
card of value ``c`` iff ``k <= 15 - c - s <= 10k`` (a played joker is one more wild).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from escoba_env import EscobaEngine, Rules, capture_options, card_name, parse_card, score_round
from escoba_env.executors.engine import sample_actions
from escoba_env.rulebook import cards as cards_mod
from escoba_env.rulebook.capture import joker_summary
from tests import reference

J1, J2 = 40, 41


def C(name: str) -> int:
    return parse_card(name)


def M(text: str) -> int:
    return sum(1 << parse_card(t) for t in text.split())


def opts(card: str, table: str, rules: Rules) -> list[str]:
    """Return the options as sorted name strings (each option's names in id order)."""
    return [cards_mod.names_of(o) for o in capture_options(C(card), M(table), rules)]


def deal(rules: Rules, dealer: int, hands: list[str], table: str, stock_top: str = "") -> EscobaEngine:
    """Return a 1-game engine dealt these hands and table; the stock is ``stock_top`` then the rest by id."""
    used = [C(c) for h in hands for c in h.split()] + [C(c) for c in table.split()]
    top = [C(c) for c in stock_top.split()]
    stock = top + [c for c in range(rules.num_cards) if c not in used and c not in top]
    eng = EscobaEngine(1, rules)
    eng.reset(0, dealer=dealer, hands=[[C(c) for c in h.split()] for h in hands],
              table=[C(c) for c in table.split()], stock=stock)
    return eng


def step1(eng: EscobaEngine, card: str):
    return eng.step(np.array([C(card)]))


# ------------------------------------------------------------------------------------- cards


def test_joker_ids_names_and_masks():
    assert cards_mod.JOKERS == (40, 41) and cards_mod.MAX_CARDS == 42 and cards_mod.NUM_CARDS == 40
    assert [card_name(40), card_name(41), card_name(40, french=True)] == ["*1", "*2", "*1"]
    assert [parse_card(t) for t in ("*1", "*2", "joker1", "JOKER2", " *1 ")] == [40, 41, 40, 41, 40]
    assert cards_mod.is_joker(40) and cards_mod.is_joker(41) and not cards_mod.is_joker(39)
    assert cards_mod.mask_of([40, 41, 0]) == (1 << 40) | (1 << 41) | 1
    assert cards_mod.cards_of((1 << 41) | 8) == [3, 41]
    assert cards_mod.names_of(M("7o *2")) == "7o *2"
    assert cards_mod.mask_value(M("7o *1 *2 Rb")) == 17  # jokers count 0


def test_a_joker_has_no_value_or_suit():
    with pytest.raises(ValueError, match="joker"):
        cards_mod.card_value(40)
    with pytest.raises(ValueError, match="joker"):
        cards_mod.card_suit(41)
    with pytest.raises(ValueError, match="range"):
        card_name(42)


# ----------------------------------------------------------------------------------- capture


def test_table_joker_completes_a_capture():
    # 7o needs 8: the joker alone (as 8) or with 3c (as 5).
    assert opts("7o", "*1 3c", Rules(jokers=1)) == ["*1", "3c *1"]


def test_played_joker_takes_any_group_it_can_complete():
    # A played joker (1..10) takes table groups summing to 5..14: 5o, 3c+5o, Rb, 3c+Rb (not 3c, 5o+Rb).
    assert opts("*1", "3c 5o Rb", Rules(jokers=1)) == ["5o", "3c 5o", "Rb", "3c Rb"]


def test_two_jokers_in_one_capture():
    # 5o: *1 or *2 alone as 10, or both (10 = 2..20). Rb with 4c: *1+4c (1), *2+4c, but not all three.
    assert opts("5o", "*1 *2", Rules(jokers=2)) == ["*1", "*2", "*1 *2"]
    assert opts("Rb", "4c *1 *2", Rules(jokers=2)) == ["*1", "4c *1", "*2", "4c *2", "*1 *2"]
    # A played joker with a table joker: 15 = two wilds, or with Rb one wild is 5.
    assert opts("*1", "Rb *2", Rules(jokers=2)) == ["Rb", "*2", "Rb *2"]


def test_prefer_single_with_jokers():
    on = Rules(jokers=2, prefer_single=True)
    assert opts("7o", "3c 5o *1", Rules(jokers=1)) == ["3c 5o", "*1", "3c *1", "5o *1"]
    assert opts("7o", "3c 5o *1", Rules(jokers=1, prefer_single=True)) == ["*1"]
    assert opts("*1", "3c 5o Rb *2", on) == ["5o", "Rb", "*2"]  # singles worth 5..10, and a joker
    assert opts("3c", "2o Rb *1", on) == ["2o Rb", "2o *1", "Rb *1"]  # no single can make 12


@pytest.mark.parametrize(("card", "table", "jokers"), [
    (41, 0, 1), (40, 0, 0), (3, 1 << 41, 1), (3, 1 << 40, 0), (3, 1 << 42, 2), (40, 1 << 40, 2),
])
def test_capture_options_rejects_ids_the_rules_do_not_have(card, table, jokers):
    with pytest.raises(ValueError):
        capture_options(card, table, Rules(jokers=jokers))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 41), min_size=1, max_size=9, unique=True), st.booleans())
def test_capture_options_equal_brute_force_with_jokers(cards, prefer):
    card, table = cards[0], cards[1:]
    got = capture_options(card, sum(1 << c for c in table), Rules(jokers=2, prefer_single=prefer))
    want = sorted(sum(1 << c for c in o) for o in reference.capture_options(card, table, prefer))
    assert got == want


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 41), min_size=2, max_size=9, unique=True), st.integers(0, 2**16))
def test_joker_summary_equals_brute_force(cards, pick):
    card, table = cards[0], cards[1:]
    options = [frozenset(o) for o in reference.capture_options(card, table)]
    if not options:
        return
    # Name part of one option (possibly nothing); the summary is over options holding it.
    o = sorted(options[pick % len(options)])
    taken = set(o[: pick % (len(o) + 1)])
    rem = [x - taken for x in options if taken <= x]
    tm = sum(1 << c for c in taken)
    count, union, inter, stop = joker_summary(
        np.array([sum(1 << c for c in table)], np.uint64), np.array([tm], np.uint64),
        np.array([sum(reference.value(c) for c in taken)]), np.array([card]), np.array([not taken]), False)
    assert int(count[0]) == len(rem)
    assert int(union[0]) == sum(1 << c for c in set().union(*rem))
    inter_set = frozenset.intersection(*rem)
    assert int(inter[0]) == sum(1 << c for c in inter_set)
    assert bool(stop[0]) == (len(rem) > 1 and inter_set in rem)


# ----------------------------------------------------------------------------------- scoring


def test_jokers_count_for_most_cards_only():
    rules = Rules(jokers=2)
    # a: values 1-5 and *1, b: values 6-10 and *2: 21 cards each (no point), oros 5-5 (none),
    # velo and the four sevens to b.
    a = M("1o 1c 1e 1b 2o 2c 2e 2b 3o 3c 3e 3b 4o 4c 4e 4b 5o 5c 5e 5b *1")
    b = ((1 << 42) - 1) ^ a
    assert score_round([a, b], [0, 0], rules) == [0, 2]
    # Moving *2 to a: 22 cards to 20 is the cards point, nothing else changes.
    assert score_round([a | (1 << 41), b ^ (1 << 41)], [0, 0], rules) == [1, 2]  # 22 cards to 20
    with pytest.raises(ValueError):
        score_round([1 << 41, 0], [0, 0], Rules(jokers=1))


# ------------------------------------------------------------------------- initial fifteen


@pytest.mark.parametrize(("table", "jokers", "escobas"), [
    ("*1 2c 3e 4b", 1, 1),  # 2 + 3 + 4 = 9: the joker is 6
    ("*1 5o Rb 7c", 1, 2),  # 5o + Rb and *1 (as 8) + 7c
    ("*1 *2 5o 5c", 2, 2),  # *1 + 5o and *2 + 5c (also all four could make 15: two is better)
    ("*1 *2 Ro 3c", 2, 1),  # 10 + 3 = 13: the jokers make 2 together; no split works
    ("*1 Rb Rc 2o", 1, 0),  # 22 already; Rb + *1 leaves Rc + 2o = 12
])
def test_initial_fifteen_with_jokers(table, jokers, escobas):
    eng = deal(Rules(jokers=jokers), 1, ["1c 2b 3o", "4o 4c 4e"], table)
    assert eng.escobas[0].tolist() == [0, escobas]
    if escobas:
        assert int(eng.table[0]) == 0 and int(eng.piles[0, 1]) == M(table)
        assert int(eng.last_capturer[0]) == 1
    else:
        assert int(eng.table[0]) == M(table) and int(eng.last_capturer[0]) == -1


def test_initial_fifteen_off_leaves_a_joker_table():
    eng = deal(Rules(jokers=1, initial_fifteen=False), 0, ["1c 2b 3o", "4o 4c 4e"], "*1 2c 3e 4b")
    assert int(eng.table[0]) == M("*1 2c 3e 4b") and eng.escobas[0].tolist() == [0, 0]


# ------------------------------------------------------------------------------ last deal


@pytest.mark.parametrize(("players", "jokers", "partnerships"), [
    (2, 1, False), (2, 2, False), (3, 1, False), (3, 2, False), (4, 1, False), (4, 2, True),
])
def test_short_last_deal_gives_the_rest_one_card_a_seat(players, jokers, partnerships):
    rules = Rules(num_players=players, jokers=jokers, partnerships=partnerships)
    n = 8
    eng = EscobaEngine(n, rules, single_round=True)
    eng.reset(3)
    assert eng.deck.shape == (n, 40 + jokers)
    rng = np.random.default_rng(players * 10 + jokers)
    deck = eng.deck.copy()
    nc = rules.num_cards
    checked = np.zeros(n, bool)
    seen: list[list[int]] = [[] for _ in range(n)]  # seats that play a card after the short deal
    while not eng.done.all():
        for g in np.flatnonzero((eng.stock_pos == nc) & ~checked):  # the short deal just came
            checked[g] = True
            d = int(eng.dealer[g])
            want = [0] * players
            for j in range(jokers):  # the deck's last cards, from the seat after the dealer
                want[(d + 1 + j) % players] = 1 << int(deck[g, nc - jokers + j])
            assert eng.hands[g].tolist() == want
            assert int(eng.hand_count[g]) == jokers and int(eng.to_act[g]) == (d + 1) % players
        for g in np.flatnonzero(checked & ~eng.done & (eng.pending < 0)):
            seen[g].append(int(eng.to_act[g]))
        eng.step(sample_actions(eng.legal, rng.random(n)))
        assert ((eng.card_count() == nc) | eng.done).all()
    assert checked.all()
    for g in range(n):  # the holders played in turn; the empty-handed seats were skipped
        d = int(eng.dealer[g])
        assert seen[g] == [(d + 1 + j) % players for j in range(jokers)]
    # The round ended: hands empty, every card in a pile (or on the table if nobody captured).
    assert (eng.round_index == 1).all() and not eng.hands.any()
    in_piles = np.bitwise_or.reduce(eng.piles, axis=1) | eng.table
    assert (np.bitwise_count(in_piles) == nc).all()


# ---------------------------------------------------------------------------- escoba de mesa


@pytest.mark.parametrize(("turned", "pile", "left", "escobas"), [
    ("7o Sc 2b 3e", "7o Sc", "2b 3e", 1),  # early: after two turns, the whole table
    ("1o 2c 4e Rb", "1o 4e Rb", "2c", 0),  # late: the fourth card, 2c stays
    ("1o 2c 2e Rb", "1o 2c 2e Rb", "", 1),  # late: all four
    ("Ro Cc 5c 6e", "Ro 5c Cc 6e", "", 1),  # Ro+5c (Cc stays), then Cc+6e sweeps: one escoba, not two
    ("5c 5o Ro Rc", "5c 5o Ro Rc", "", 1),  # Ro takes 5o (more oros than 5c), then 5c+Rc sweeps
    ("7o 1c 6e Sb", "1c 6e Sb", "7o", 0),  # most cards first: 1c+6e+Sb beats the velo's 7o+Sb
    ("7c 7o 3c Sb", "7o Sb", "7c 3c", 0),  # two cards each: the velo first
    ("5c 5e Rc 2b", "5c Rc", "5e 2b", 0),  # all else equal: the lowest mask (5c < 5e)
])
def test_mesa_deal_captures_as_the_table_is_turned(turned, pile, left, escobas):
    for initial_fifteen in (True, False):  # mesa replaces the initial-fifteen check
        rules = Rules(mesa_deal=True, initial_fifteen=initial_fifteen)
        eng = deal(rules, 1, ["1b 2o 3o", "4o 4c 4b"], turned)
        assert int(eng.piles[0, 1]) == M(pile) and int(eng.piles[0, 0]) == 0
        assert int(eng.table[0]) == M(left)
        assert eng.escobas[0].tolist() == [0, escobas]
        assert int(eng.last_capturer[0]) == (1 if pile else -1)
        assert int(eng.to_act[0]) == 0 and int(eng.legal[0]) == M("1b 2o 3o")


def test_mesa_tie_break_cards_then_sevens_then_oros_with_a_joker():
    # *1 turned last: 7c+*1, 6b+*1 (2 cards) lose to the 3-card groups 7c+6b+*1, 7c+3o+*1, 6b+3o+*1;
    # two of them hold a seven, and 7c+3o+*1 an oro.
    eng = deal(Rules(mesa_deal=True, jokers=1), 1, ["1b 2o 4o", "4c 4e 4b"], "7c 6b 3o *1")
    assert int(eng.piles[0, 1]) == M("7c 3o *1") and int(eng.table[0]) == M("6b")
    assert eng.escobas[0].tolist() == [0, 0]


def test_mesa_without_a_fifteen_leaves_the_four_cards():
    eng = deal(Rules(mesa_deal=True), 0, ["1b 2o 4o", "4c 4e 4b"], "1o 2c 3e Cb")
    # 1+2+3+9 = 15 only once all four are turned: the dealer takes them as an escoba.
    assert eng.escobas[0].tolist() == [1, 0] and int(eng.table[0]) == 0
    eng = deal(Rules(mesa_deal=True), 0, ["1b 2o 4o", "4c 4e 4b"], "1o 2c 3e Sb")
    assert eng.escobas[0].tolist() == [0, 0] and int(eng.table[0]) == M("1o 2c 3e Sb")


# -------------------------------------------------------------------------------- stepping


def test_step_with_a_joker_capture_and_naming_a_joker():
    rules = Rules(jokers=1)
    # Table *1 3e 5b Rb (no initial fifteen). Seat 0 plays 7o (needs 8): {*1}, {3e 5b}, {*1 3e}, {*1 5b}.
    eng = deal(rules, 1, ["7o 1c 2c", "6o 6c 6e"], "*1 3e 5b Rb")
    assert int(eng.table[0]) == M("*1 3e 5b Rb")
    info = step1(eng, "7o")
    assert int(eng.pending[0]) == C("7o") and int(info.captured[0]) == 0
    assert int(eng.legal[0]) == M("*1 3e 5b")
    step1(eng, "*1")  # {*1}, {*1 3e}, {*1 5b} remain: name 3e or 5b, or stop at {*1} with 7o
    assert int(eng.taken[0]) == M("*1") and int(eng.legal[0]) == M("3e 5b 7o")
    info = step1(eng, "3e")
    assert int(info.captured[0]) == M("7o *1 3e") and int(eng.table[0]) == M("5b Rb")
    assert int(eng.to_act[0]) == 1 and int(eng.pending[0]) == -1


def test_stop_takes_the_option_held_in_the_others():
    eng = deal(Rules(jokers=1), 1, ["7o 1c 2c", "6o 6c 6e"], "*1 3e 5b Rb")
    step1(eng, "7o")
    step1(eng, "*1")
    info = step1(eng, "7o")  # the played card's id: take just the joker
    assert int(info.captured[0]) == M("7o *1") and int(eng.table[0]) == M("3e 5b Rb")
    assert int(eng.piles[0, 0]) == M("7o *1") and int(eng.last_capturer[0]) == 0


def test_played_joker_with_one_option_captures_at_once_and_sweeps():
    # Table 2c 3e 4b Rb (19): *1 takes Rb+... several; with table 3e 4b only 3e+4b (7 -> joker 8).
    eng = deal(Rules(jokers=1, initial_fifteen=False), 1, ["*1 1c 2c", "6o 6c 6e"], "3e 4b 2b 1b")
    info = step1(eng, "*1")  # sums 5..14 of 1b 2b 3e 4b: several options
    assert int(eng.pending[0]) == 40 and int(info.captured[0]) == 0
    eng = deal(Rules(jokers=1, initial_fifteen=False), 1, ["*1 1c 2c", "6o 6c 6e"], "1b 1e 2b 1o")
    # 1+1+2+1 = 5: only the whole table reaches 5 -> one option, an escoba.
    info = step1(eng, "*1")
    assert int(info.captured[0]) == M("*1 1b 1e 2b 1o") and int(info.escoba[0]) == 1
    assert eng.escobas[0].tolist() == [1, 0]


def test_variant_engine_api_sizes():
    eng = EscobaEngine(3, Rules(jokers=2, mesa_deal=True))
    eng.reset(5)
    assert eng.deck.shape == (3, 42) and eng.legal_action_mask().shape == (3, 42)
    assert (np.sort(eng.deck, axis=1) == np.arange(42)).all()
    assert (eng.card_count() == 42).all()
    with pytest.raises(ValueError, match="42"):
        eng.reset(0, deck=list(range(40)))
    with pytest.raises(ValueError, match="stock must have 32"):
        eng.reset(0, hands=[[0, 1, 2], [3, 4, 5]], table=[6, 7, 8, 9], stock=list(range(10, 40)))


def test_standard_deals_are_unchanged_and_joker_deals_differ():
    a, b = EscobaEngine(4, Rules()), EscobaEngine(4, Rules(mesa_deal=True))
    a.reset(9)
    b.reset(9)
    assert (a.deck == b.deck).all() and (a.dealer == b.dealer).all()
    c = EscobaEngine(4, Rules(jokers=2))
    c.reset(9)
    assert not (c.deck[:, :40] == a.deck).all()


def test_makes_fifteen_states_the_joker_rule_for_group_sums():
    from escoba_env.rulebook.capture import makes_fifteen

    # no joker: exactly 15; k jokers: 15 - total between k and 10k
    assert makes_fifteen(np.array([15, 14, 16]), 0).tolist() == [True, False, False]
    assert makes_fifteen(np.array([14, 5, 4, 15]), 1).tolist() == [True, True, False, False]
    assert makes_fifteen(np.array([13, 0, 14]), 2).tolist() == [True, True, False]  # 0: jokers 5 + 10
    assert makes_fifteen(np.array([0, 0]), np.array([1, 2])).tolist() == [False, True]  # a joker is <= 10
