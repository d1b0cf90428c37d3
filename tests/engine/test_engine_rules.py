"""Scripted deals played through the engine with exact captures, escobas and points (docs/rules.md §2-7).

Every expected value below was worked out by hand from the rule book; the comments show the
arithmetic. Scripts are written as in tests/helpers.py: plays in turn order from the seat after
the dealer, ``"7o>3c+5e"`` a capture, ``"!"`` an escoba, a bare name a discard.

Two rules cannot be reached in a real 40-card round, and the tests say so instead of faking them:
the card values sum to 4 * 55 = 220, which is not a multiple of 15, and every capture (initial
fifteens included) removes exactly a multiple of 15, so (a) the table is never empty when the
last card has been played: no "escoba on the last play" exists, whatever ``last_play_escoba`` says;
(b) somebody always captures in a round (the last card meets a table of every other card).
"""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaEngine, Rules, capture_options
from escoba_env.executors.engine import sample_actions
from tests.helpers import C, M, conserved, ids, play, start_script

# ---------------------------------------------------------------------------------------------
# Round A: 2 players, seat 1 deals, table 1o 2c 3e Cb = 15 goes to the dealer as an escoba.
TABLE_A = "1o 2c 3e Cb"
ROUND_A = [
    # deal 1 (seat 0: 3c Sb 7c, seat 1: 5e 7o 2o)
    "3c", "5e", "Sb", "7o>3c+5e", "7c>Sb!", "2o",
    # deal 2 (seat 0: 6o 1c 2e, seat 1: Ce Rc 4b)
    "6o", "Ce>6o", "1c", "Rc", "2e>2o+1c+Rc!", "4b",
    # deal 3
    "Se", "3b>4b+Se!", "6c", "1e", "4e", "Ro>1e+4e",
    # deal 4
    "Sc", "5c", "2b>Sc+5c", "3o", "4o", "1b",
    # deal 5
    "Re>4o+1b", "7e", "5o>3o+7e", "Cc>6c!", "4c", "7b",
    # deal 6: seat 0 captures last (5b>Rb), seat 1 discards 6b, so seat 0 takes 4c 6b at the end.
    "So>7b", "Rb", "6e", "Co>6e", "5b>Rb", "6b",
]
PILE_A0 = "7c Sb 2e 2o 1c Rc 2b Sc 5c Re 4o 1b 5o 3o 7e So 7b 5b Rb 4c 6b"
PILE_A1 = "1o 2c 3e Cb 7o 3c 5e Ce 6o 3b 4b Se Ro 1e 4e Cc 6c Co 6e"

# Round C: round A with another last deal; seat 1 captures last and takes Rb.
ROUND_C = ROUND_A[:30] + ["6e", "Rb", "5b>4c+6e", "6b", "Co>6b", "So>7b"]
PILE_C0 = "7c Sb 2e 2o 1c Rc 2b Sc 5c Re 4o 1b 5o 3o 7e 5b 4c 6e Co 6b"
PILE_C1 = "1o 2c 3e Cb 7o 3c 5e Ce 6o 3b 4b Se Ro 1e 4e Cc 6c So 7b Rb"

# Round D: 4 players, seat 3 deals, table 1b 3o 6b Rb (20).
TABLE_D = "1b 3o 6b Rb"
ROUND_D = [
    "7b", "6e>3o+6b", "Se>7b", "6c", "5c>Rb", "Sc>1b+6c!", "2b", "3e", "Cc", "4b>2b+Cc", "2c", "6o",
    "4e>2c+3e+6o!", "3c", "2e", "Cb", "Rc>2e+3c", "5e", "7c", "Re>5e", "So>7c", "3b", "1c", "4c",
    "5b>1c+Cb", "7o", "1e>3b+4c+7o!", "2o", "4o", "Ro", "Ce>2o+4o", "Sb", "Co", "7e>Sb", "5o>Ro", "1o",
]
PILES_D = [
    "5c Rb 4e 2c 3e 6o Rc 2e 3c So 7c 5b 1c Cb",
    "6e 3o 6b Sc 1b 6c 4b 2b Cc 7e Sb",
    "Se 7b 1e 3b 4c 7o Ce 2o 4o 5o Ro Co 1o",  # seat 2 captured last (5o>Ro): + Co 1o
    "Re 5e",
]

# Round E: 3 players, seat 2 deals, table 3b 5b 6b Re (24).
TABLE_E = "3b 5b 6b Re"
ROUND_E = [
    "5e>Re", "Cc>6b", "Ro>5b", "1o", "Sc", "So", "Ce", "3e>3b+Ce", "2o",
    "4o>1o+2o+So", "5c", "6e", "6c", "5o", "1e>6c+Sc", "2b", "7b>2b+6e", "Rb>5o",
    "4c", "3c", "3o>3c+4c+5c!", "2e", "7o", "4e", "6o>2e+7o", "7e", "1c",
    "Sb>7e", "Rc>1c+4e!", "4b", "1b", "Se", "7c>Se", "Co", "Cb", "2c>4b+Cb",
]
PILES_E = [
    "5e Re 4o 1o 2o So 6o 2e 7o Sb 7e",  # 11 cards, 6 oros, 7o 7e, no copas
    "Cc 6b 3e 3b Ce 7b 2b 6e Rc 1c 4e",  # 11 cards, no oros
    "Ro 5b 1e 6c Sc Rb 5o 3o 3c 4c 5c 7c Se 2c 4b Cb 1b Co",  # 18 cards; captured last: + 1b Co
]


# ---------------------------------------------------------------------------------------------
# The deal (docs/rules.md §3)


def test_deal_order_two_players():
    # Deck 39, 38, ..., 0 (top first); seat 0 deals, so seat 1 gets positions 0, 2, 4.
    eng = EscobaEngine(1)
    eng.reset(0, dealer=0, deck=list(range(39, -1, -1)))
    assert int(eng.hands[0, 1]) == M("Rb Rc Cb")  # ids 39, 37, 35
    assert int(eng.hands[0, 0]) == M("Re Ro Ce")  # ids 38, 36, 34
    assert int(eng.table[0]) == M("Cc Co Sb Se")  # ids 33..30: 9+9+8+8 = 34 stays
    assert int(eng.stock_pos[0]) == 10
    assert eng.deck[0, 10:].tolist() == list(range(29, -1, -1))
    assert int(eng.to_act[0]) == 1
    assert int(eng.legal[0]) == M("Rb Rc Cb")
    assert eng.escobas[0].tolist() == [0, 0]
    assert int(eng.last_capturer[0]) == -1


def test_deal_order_three_players():
    eng = EscobaEngine(1, Rules(num_players=3))
    eng.reset(0, dealer=1, deck=list(range(39, -1, -1)))
    # Order 2, 0, 1: seat 2 gets positions 0, 3, 6; seat 0 1, 4, 7; seat 1 2, 5, 8.
    assert int(eng.hands[0, 2]) == M("Rb Ro Cc")
    assert int(eng.hands[0, 0]) == M("Re Cb Co")
    assert int(eng.hands[0, 1]) == M("Rc Ce Sb")
    assert int(eng.table[0]) == M("Se Sc So 7b")  # 8+8+8+7 = 31
    assert int(eng.stock_pos[0]) == 13
    assert int(eng.to_act[0]) == 2


def test_deal_order_four_players():
    eng = EscobaEngine(1, Rules(num_players=4))
    eng.reset(0, dealer=2, deck=list(range(39, -1, -1)))
    assert int(eng.hands[0, 3]) == M("Rb Cb Sb")
    assert int(eng.hands[0, 0]) == M("Re Ce Se")
    assert int(eng.hands[0, 1]) == M("Rc Cc Sc")
    assert int(eng.hands[0, 2]) == M("Ro Co So")
    assert int(eng.table[0]) == M("7b 7e 7c 7o")  # 28
    assert int(eng.stock_pos[0]) == 16
    assert int(eng.to_act[0]) == 3


def test_explicit_hands_table_and_stock():
    hands = [ids("1o 2o 3o"), ids("4o 5o 6o")]
    table = ids("Rb Rc Re Ro")
    stock = [c for c in range(40) if c not in sum(hands, []) + table]
    eng = EscobaEngine(2)
    eng.reset(0, dealer=[0, 1], hands=hands, table=table, stock=stock)
    for g in range(2):  # hands are per seat, whoever deals
        assert int(eng.hands[g, 0]) == M("1o 2o 3o")
        assert int(eng.hands[g, 1]) == M("4o 5o 6o")
        assert int(eng.table[g]) == M("Rb Rc Re Ro")
        assert eng.deck[g, 10:].tolist() == stock
    assert eng.to_act.tolist() == [1, 0]
    assert eng.dealer.tolist() == [0, 1]


@pytest.mark.parametrize(("players", "deals"), [(2, 6), (3, 4), (4, 3)])
def test_redeals_of_three_cards_in_deal_order(players, deals):
    eng = EscobaEngine(1, Rules(num_players=players))
    deck = list(range(39, -1, -1))
    dealer = players - 1
    eng.reset(0, dealer=dealer, deck=deck)
    seen_deals = 1
    pos = 0
    while True:
        # Freshly dealt: each seat holds deck[pos + j + P * r] for r = 0, 1, 2 (j: offset after dealer).
        for seat in range(players):
            j = (seat - dealer - 1) % players
            want = sum(1 << deck[pos + j + players * r] for r in range(3))
            assert int(eng.hands[0, seat]) == want
        assert int(eng.to_act[0]) == 0  # the seat after the dealer starts every deal
        pos = int(eng.stock_pos[0])
        for _ in range(3 * players):
            assert int(eng.round_index[0]) == 0
            eng.step(np.array([eng.legal_actions(0)[0]]))
            while eng.pending[0] >= 0:
                eng.step(np.array([eng.legal_actions(0)[0]]))
        if eng.round_index[0] == 1:
            break
        seen_deals += 1
        assert int(eng.stock_pos[0]) == pos + 3 * players
    assert seen_deals == deals
    assert pos == 40


def test_first_dealer_comes_from_the_seed_and_player_after_dealer_starts():
    eng = EscobaEngine(64, Rules(num_players=3))
    eng.reset(11)
    assert set(eng.dealer.tolist()) == {0, 1, 2}
    assert (eng.to_act == (eng.dealer + 1) % 3).all()
    again = EscobaEngine(64, Rules(num_players=3))
    again.reset(11)
    assert (again.dealer == eng.dealer).all()


# ---------------------------------------------------------------------------------------------
# Initial table of fifteen


@pytest.mark.parametrize("dealer", [0, 1])
def test_initial_table_of_fifteen_goes_to_the_dealer_as_one_escoba(dealer):
    eng = start_script(Rules(), dealer, TABLE_A, ROUND_A)  # 1 + 2 + 3 + 9 = 15
    assert int(eng.table[0]) == 0
    assert int(eng.piles[0, dealer]) == M(TABLE_A)
    assert int(eng.piles[0, 1 - dealer]) == 0
    assert eng.escobas[0].tolist() == [int(dealer == 0), int(dealer == 1)]
    assert int(eng.last_capturer[0]) == dealer
    assert int(eng.to_act[0]) == 1 - dealer
    assert conserved(eng).all()


def _reset_with_table(table: str, rules: Rules, dealer: int = 0) -> EscobaEngine:
    t = ids(table)
    p = rules.num_players
    rest = [c for c in range(40) if c not in t]
    eng = EscobaEngine(1, rules)
    eng.reset(0, dealer=dealer, deck=rest[:3 * p] + t + rest[3 * p:])
    return eng


@pytest.mark.parametrize("table", ["Ro 5c Cc 6e", "7o So 7c Sc", "Rb Re 5o 5c", "5o Ro 6b Cc"])
def test_initial_table_of_two_fifteens_scores_two_escobas(table):
    eng = _reset_with_table(table, Rules(num_players=3), dealer=2)  # 30 = 15 + 15
    assert int(eng.table[0]) == 0
    assert int(eng.piles[0, 2]) == M(table)
    assert eng.escobas[0].tolist() == [0, 0, 2]
    assert int(eng.last_capturer[0]) == 2


@pytest.mark.parametrize("table", ["Ro Rc Sb 2c", "Co Cc Ce 3o", "Ro Rc 7o 3c"])
def test_initial_table_of_thirty_that_does_not_split_stays(table):
    # 10+10+8+2, 9+9+9+3, 10+10+7+3: no two cards make 15.
    eng = _reset_with_table(table, Rules())
    assert int(eng.table[0]) == M(table)
    assert eng.escobas[0].tolist() == [0, 0]
    assert eng.piles[0].tolist() == [0, 0]
    assert int(eng.last_capturer[0]) == -1


@pytest.mark.parametrize("table", ["5o 4c 6e 2b", "Ro 5c 1e 1b", "1o 1c 1e 1b", "Ro Rc Re Rb"])
def test_initial_table_not_fifteen_stays_even_if_part_of_it_makes_fifteen(table):
    eng = _reset_with_table(table, Rules())
    assert int(eng.table[0]) == M(table)
    assert eng.escobas[0].tolist() == [0, 0]
    assert int(eng.last_capturer[0]) == -1


def test_initial_fifteen_off_leaves_the_table():
    eng = start_script(Rules(initial_fifteen=False), 1, TABLE_A, ROUND_A)
    assert int(eng.table[0]) == M(TABLE_A)
    assert eng.escobas[0].tolist() == [0, 0]
    assert eng.piles[0].tolist() == [0, 0]
    assert int(eng.last_capturer[0]) == -1
    two_fifteens = _reset_with_table("Ro 5c Cc 6e", Rules(initial_fifteen=False))
    assert int(two_fifteens.table[0]) == M("Ro 5c Cc 6e")
    assert two_fifteens.escobas[0].tolist() == [0, 0]


def test_initial_fifteen_off_the_first_card_can_capture_from_the_table():
    eng = start_script(Rules(initial_fifteen=False), 1, TABLE_A, ROUND_A)
    # Seat 0 plays 3c onto 1o 2c 3e Cb: 3 needs 12 = 1+2+9 or 3+9 -> two options.
    eng.step(np.array([C("3c")]))
    assert int(eng.pending[0]) == C("3c")
    assert int(eng.to_act[0]) == 0
    assert int(eng.legal[0]) == M("1o 2c 3e")  # Cb is in both options: no decision
    info = eng.step(np.array([C("3e")]))
    assert int(info.captured[0]) == M("3c 3e Cb")
    assert int(eng.table[0]) == M("1o 2c")


# ---------------------------------------------------------------------------------------------
# A turn (docs/rules.md §4)


def test_round_a_turn_by_turn():
    eng = start_script(Rules(), 1, TABLE_A, ROUND_A, single_round=True)
    assert int(eng.hands[0, 0]) == M("3c Sb 7c")
    assert int(eng.hands[0, 1]) == M("5e 7o 2o")
    assert int(eng.legal[0]) == M("3c Sb 7c")
    assert int(eng.stock_pos[0]) == 10
    play(eng, ROUND_A[:2])
    assert int(eng.table[0]) == M("3c 5e")
    # Seat 0 holds 7c, which could take 3c+5e, and Sb, which cannot: both are legal.
    assert capture_options(C("7c"), int(eng.table[0])) == [M("3c 5e")]
    assert capture_options(C("Sb"), int(eng.table[0])) == []
    assert int(eng.legal[0]) == M("Sb 7c")
    play(eng, ["Sb"])
    # 7o with 3c 5e Sb: options {Sb} and {3c, 5e} (the rule book's example).
    info = eng.step(np.array([C("7o")]))
    assert int(info.captured[0]) == 0 and int(info.actor[0]) == 1
    assert int(eng.pending[0]) == C("7o")
    assert int(eng.to_act[0]) == 1
    assert int(eng.legal[0]) == M("3c 5e Sb")
    assert int(eng.hands[0, 1]) == M("2o")
    assert int(eng.table[0]) == M("3c 5e Sb")
    assert conserved(eng).all() and int(eng.card_count()[0]) == 40
    with pytest.raises(ValueError):
        eng.step(np.array([C("2o")]))  # a hand card is not a take action
    info = eng.step(np.array([C("5e")]))  # only {3c, 5e} contains 5e: it executes
    assert int(info.captured[0]) == M("7o 3c 5e")
    assert int(info.escoba[0]) == 0
    assert int(eng.pending[0]) == -1
    assert int(eng.table[0]) == M("Sb")
    assert int(eng.to_act[0]) == 0
    assert int(eng.legal[0]) == M("7c")
    # A card with an option must capture: 7c takes Sb (there is no discard action for it).
    play(eng, ["7c>Sb!", "2o"])
    # Hands empty, stock not: three more cards each, seat 0 first.
    assert int(eng.hands[0, 0]) == M("6o 1c 2e")
    assert int(eng.hands[0, 1]) == M("Ce Rc 4b")
    assert int(eng.stock_pos[0]) == 16
    assert int(eng.to_act[0]) == 0
    assert int(eng.table[0]) == M("2o")
    infos = play(eng, ROUND_A[6:35])
    assert not any(bool(i.round_over[0]) for i in infos)
    assert int(eng.table[0]) == M("4c")
    assert int(eng.last_capturer[0]) == 0  # 5b>Rb
    last = play(eng, ROUND_A[35:])[-1]
    # 6b is a discard; seat 0, the last capturer, takes 4c 6b: no escoba for that.
    assert bool(last.round_over[0])
    assert int(last.captured[0]) == 0 and int(last.escoba[0]) == 0
    assert int(eng.table[0]) == 0
    assert int(eng.piles[0, 0]) == M(PILE_A0)
    assert int(eng.piles[0, 1]) == M(PILE_A1)
    assert eng.escobas[0].tolist() == [2, 3]  # seat 1: the initial fifteen, 3b, Cc
    # cards 21-19 -> seat 0; oros 5-5 (2o 3o 4o 5o So / 1o 6o 7o Co Ro) -> nobody;
    # velo -> seat 1; sevens 3-1 (7c 7e 7b / 7o) -> seat 0; escobas 2 and 3.
    assert {k: v[0].tolist() for k, v in last.round_categories.items()} == {
        "cards": [1, 0], "oros": [0, 0], "velo": [0, 1], "sevens": [1, 0], "escobas": [2, 3]}
    assert last.round_points[0].tolist() == [4, 4]
    assert last.scores[0].tolist() == [4, 4]
    # single round: over, 4-4 is a tie, nobody wins.
    assert bool(last.game_over[0]) and bool(eng.done[0])
    assert int(eng.winner[0]) == -1 and int(last.winner[0]) == -1
    assert not bool(last.truncated[0])
    assert int(eng.legal[0]) == 0


@pytest.mark.parametrize("sevens_rule", ["most_sevens", "most_sevens_tiebreak", "primera"])
def test_round_a_points_under_every_sevens_rule(sevens_rule):
    # seat 0's primera: 5o 15 + 7c 21 + 7e 21 + 7b 21 = 78; seat 1's: 7o 21 + 6c 18 + 6e 18 + 4b 14
    # = 71. Seat 0 has 3 sevens: it wins the sevens point under every rule.
    eng = start_script(Rules(sevens_rule=sevens_rule), 1, TABLE_A, ROUND_A, single_round=True)
    last = play(eng, ROUND_A)[-1]
    assert last.round_points[0].tolist() == [4, 4]
    assert last.round_categories["sevens"][0].tolist() == [1, 0]


def test_round_c_ties_in_cards_oros_and_sevens():
    eng = start_script(Rules(), 1, TABLE_A, ROUND_C, single_round=True)
    last = play(eng, ROUND_C)[-1]
    assert int(eng.piles[0, 0]) == M(PILE_C0)
    assert int(eng.piles[0, 1]) == M(PILE_C1)
    # cards 20-20, oros 5-5 (2o 3o 4o 5o Co / 1o 6o 7o So Ro), sevens 2-2 (7c 7e / 7o 7b):
    # only the velo (seat 1) and the escobas (2 and 3) score.
    assert {k: v[0].tolist() for k, v in last.round_categories.items()} == {
        "cards": [0, 0], "oros": [0, 0], "velo": [0, 1], "sevens": [0, 0], "escobas": [2, 3]}
    assert last.round_points[0].tolist() == [2, 4]
    assert int(eng.winner[0]) == 1


def test_round_c_most_sevens_tiebreak_goes_to_the_fives():
    # sevens 2-2, sixes 2-2 (6e 6b / 6o 6c), aces 2-2 (1c 1b / 1o 1e), fives 3-1 (5c 5o 5b / 5e).
    eng = start_script(Rules(sevens_rule="most_sevens_tiebreak"), 1, TABLE_A, ROUND_C, single_round=True)
    last = play(eng, ROUND_C)[-1]
    assert last.round_categories["sevens"][0].tolist() == [1, 0]
    assert last.round_points[0].tolist() == [3, 4]


def test_round_c_primera_seventy_six_beats_seventy_five():
    # seat 0: 5o 15 + 7c 21 + 7e 21 + 6b 18 = 75; seat 1: 7o 21 + 6c 18 + 1e 16 + 7b 21 = 76.
    eng = start_script(Rules(sevens_rule="primera"), 1, TABLE_A, ROUND_C, single_round=True)
    last = play(eng, ROUND_C)[-1]
    assert last.round_categories["sevens"][0].tolist() == [0, 1]
    assert last.round_points[0].tolist() == [2, 5]


def test_round_c_bonus_sweeps_changes_nothing_without_a_sweep():
    eng = start_script(Rules(bonus_sweeps=True), 1, TABLE_A, ROUND_C, single_round=True)
    assert play(eng, ROUND_C)[-1].round_points[0].tolist() == [2, 4]


def test_prefer_single_takes_the_single_card():
    eng = start_script(Rules(prefer_single=True), 1, TABLE_A, ROUND_A)
    play(eng, ROUND_A[:3])
    # 7o with 3c 5e Sb: only {Sb} is allowed, so it executes at once.
    info = eng.step(np.array([C("7o")]))
    assert int(info.captured[0]) == M("7o Sb")
    assert int(eng.pending[0]) == -1
    assert int(eng.table[0]) == M("3c 5e")


def _deal_with(hand0: str, table: str, dealer: int = 1, rules: Rules | None = None) -> EscobaEngine:
    """Return a 2-player engine where seat 0 (first to play) holds ``hand0`` over ``table``."""
    h0, t = ids(hand0), ids(table)
    rest = [c for c in range(40) if c not in h0 + t]
    eng = EscobaEngine(1, Rules() if rules is None else rules)
    eng.reset(0, dealer=dealer, hands=[h0, rest[:3]], table=t, stock=rest[3:])
    return eng


def test_prefer_single_with_two_single_options_still_asks():
    table = "Ro Rc 4c 6b"  # 30 but no two cards make 15: stays
    eng = _deal_with("5o 1e 1b", table, rules=Rules(prefer_single=True))
    eng.step(np.array([C("5o")]))
    assert int(eng.pending[0]) == C("5o")
    assert int(eng.legal[0]) == M("Ro Rc")
    with pytest.raises(ValueError):
        eng.step(np.array([C("4c")]))
    info = eng.step(np.array([C("Rc")]))
    assert int(info.captured[0]) == M("5o Rc")
    assert int(eng.table[0]) == M("Ro 4c 6b")


def test_without_prefer_single_every_option_is_offered():
    eng = _deal_with("5o 1e 1b", "Ro Rc 4c 6b")
    eng.step(np.array([C("5o")]))
    assert int(eng.legal[0]) == M("Ro Rc 4c 6b")
    info = eng.step(np.array([C("6b")]))  # only {4c, 6b} holds 6b
    assert int(info.captured[0]) == M("5o 4c 6b")
    assert int(eng.table[0]) == M("Ro Rc")
    assert int(eng.to_act[0]) == 1


def test_three_options_are_narrowed_one_table_card_at_a_time():
    # Round E, play 8: seat 1 plays 3e on 3b 1o Sc So Ce. 3 needs 12:
    # {3b, Ce}, {3b, 1o, Sc}, {3b, 1o, So}. 3b is in all of them, so it is never offered.
    eng = start_script(Rules(num_players=3), 2, TABLE_E, ROUND_E)
    play(eng, ROUND_E[:7])
    assert int(eng.table[0]) == M("3b 1o Sc So Ce")
    eng.step(np.array([C("3e")]))
    assert int(eng.legal[0]) == M("1o Sc So Ce")
    before = eng.clone()
    with pytest.raises(ValueError):
        eng.step(np.array([C("3b")]))
    np.testing.assert_array_equal(eng.legal, before.legal)
    info = eng.step(np.array([C("1o")]))  # {3b 1o Sc} and {3b 1o So} remain
    assert int(info.captured[0]) == 0
    assert int(eng.pending[0]) == C("3e") and int(eng.to_act[0]) == 1
    assert int(eng.taken[0]) == M("1o")
    assert int(eng.legal[0]) == M("Sc So")
    info = eng.step(np.array([C("So")]))
    assert int(info.captured[0]) == M("3e 3b 1o So")
    assert int(eng.table[0]) == M("Sc Ce")
    assert int(eng.to_act[0]) == 2
    assert int(eng.piles[0, 1]) == M("Cc 6b 3e 3b 1o So")


def test_a_card_without_option_is_laid_on_the_table():
    eng = _deal_with("2b 1e 1b", "Ro Rc Re 6b")
    info = eng.step(np.array([C("2b")]))  # 2 needs 13: 10, 6, 16, 20 -> nothing
    assert int(info.captured[0]) == 0
    assert int(eng.table[0]) == M("Ro Rc Re 6b 2b")
    assert int(eng.piles[0, 0]) == 0


# ---------------------------------------------------------------------------------------------
# Rounds with more players


def test_round_d_partnerships_pool_captures_and_escobas():
    rules = Rules(num_players=4, partnerships=True)
    eng = start_script(rules, 3, TABLE_D, ROUND_D, single_round=True)
    last = play(eng, ROUND_D)[-1]
    for seat in range(4):
        assert int(eng.piles[0, seat]) == M(PILES_D[seat])
    assert eng.escobas[0].tolist() == [1, 1, 1, 0]
    piles, esc = eng.side_totals()
    assert int(piles[0, 0]) == M(PILES_D[0]) | M(PILES_D[2])
    assert int(piles[0, 1]) == M(PILES_D[1]) | M(PILES_D[3])
    assert esc[0].tolist() == [2, 1]
    # team 0: 27 cards, 9 oros, velo (seat 2), 3 sevens (7c / 7b 7o), 2 escobas = 6;
    # team 1: 13 cards, 1 oro, 1 seven, 1 escoba = 1.
    assert {k: v[0].tolist() for k, v in last.round_categories.items()} == {
        "cards": [1, 0], "oros": [1, 0], "velo": [1, 0], "sevens": [1, 0], "escobas": [2, 1]}
    assert last.round_points[0].tolist() == [6, 1]
    assert last.scores[0].tolist() == [6, 1]
    assert int(eng.winner[0]) == 0


def test_round_d_without_partnerships_every_seat_scores_alone():
    eng = start_script(Rules(num_players=4), 3, TABLE_D, ROUND_D, single_round=True)
    last = play(eng, ROUND_D)[-1]
    # cards 14/11/13/2 -> seat 0; oros 2/1/7/0 -> seat 2; velo seat 2; sevens 1/1/2/0 -> seat 2.
    assert {k: v[0].tolist() for k, v in last.round_categories.items()} == {
        "cards": [1, 0, 0, 0], "oros": [0, 0, 1, 0], "velo": [0, 0, 1, 0], "sevens": [0, 0, 1, 0],
        "escobas": [1, 1, 1, 0]}
    assert last.round_points[0].tolist() == [2, 1, 4, 0]
    assert int(eng.winner[0]) == 2


def test_round_e_three_players_four_deals():
    eng = start_script(Rules(num_players=3), 2, TABLE_E, ROUND_E, single_round=True)
    assert int(eng.stock_pos[0]) == 13
    for k in range(4):
        assert int(eng.to_act[0]) == 0
        assert [int(h).bit_count() for h in eng.hands[0]] == [3, 3, 3]
        infos = play(eng, ROUND_E[9 * k: 9 * (k + 1)])
        if k < 3:
            assert int(eng.stock_pos[0]) == 22 + 9 * k
    last = infos[-1]
    for seat in range(3):
        assert int(eng.piles[0, seat]) == M(PILES_E[seat])
    assert eng.escobas[0].tolist() == [0, 1, 1]
    # cards 11/11/18 -> seat 2; oros 6/0/4 -> seat 0; velo seat 0; sevens 2/1/1 -> seat 0.
    assert {k: v[0].tolist() for k, v in last.round_categories.items()} == {
        "cards": [0, 0, 1], "oros": [1, 0, 0], "velo": [1, 0, 0], "sevens": [1, 0, 0],
        "escobas": [0, 1, 1]}
    assert last.round_points[0].tolist() == [3, 1, 2]


def test_round_e_primera_with_missing_suits():
    # Seat 0 (7o 7e) has no copas and seat 1 no oros: neither has a primera. Seat 2 has
    # 5o 15 + 7c 21 + 1e 16 + 1b 16 = 68, the only primera, and takes the point.
    eng = start_script(Rules(num_players=3, sevens_rule="primera"), 2, TABLE_E, ROUND_E,
                       single_round=True)
    last = play(eng, ROUND_E)[-1]
    assert last.round_categories["sevens"][0].tolist() == [0, 0, 1]
    assert last.round_points[0].tolist() == [2, 1, 3]


# ---------------------------------------------------------------------------------------------
# End of a round, dealer rotation and the game (docs/rules.md §5, §7)


def test_next_round_passes_the_deal_and_deals_from_the_seed():
    eng = start_script(Rules(), 1, TABLE_A, ROUND_A)
    last = play(eng, ROUND_A)[-1]
    assert bool(last.round_over[0]) and not bool(last.game_over[0])
    assert last.scores[0].tolist() == [4, 4]
    assert eng.scores[0].tolist() == [4, 4]
    assert int(eng.round_index[0]) == 1
    assert int(eng.dealer[0]) == 0
    assert int(eng.to_act[0]) == 1
    assert not bool(eng.done[0])
    deck = [int(c) for c in eng.deck[0]]
    assert sorted(deck) == list(range(40))
    assert int(eng.hands[0, 1]) == sum(1 << deck[i] for i in (0, 2, 4))
    assert int(eng.hands[0, 0]) == sum(1 << deck[i] for i in (1, 3, 5))
    # The new table is deck[6:10], on the table or (a fifteen) in the new dealer's pile.
    assert int(eng.table[0]) | int(eng.piles[0, 0]) == sum(1 << c for c in deck[6:10])
    assert int(eng.piles[0, 1]) == 0 and int(eng.escobas[0, 1]) == 0
    assert int(eng.card_count()[0]) == 40


@pytest.mark.parametrize("players", [2, 3, 4])
def test_dealer_rotates_every_round(players):
    eng = EscobaEngine(8, Rules(num_players=players), max_rounds=4)
    eng.reset(5)
    rng = np.random.default_rng(0)
    dealers = [eng.dealer.copy()]
    while not eng.done.all():
        info = eng.step(sample_actions(eng.legal, rng.random(8)))
        ended = info.round_over & ~info.game_over
        if ended.any():
            assert (eng.dealer[ended] == (dealers[-1][ended] + 1) % players).all()
            assert (eng.to_act[ended] == (eng.dealer[ended] + 1) % players).all()
            dealers[-1] = np.where(ended, eng.dealer, dealers[-1])
    assert (eng.round_index >= 1).all()


def test_game_ends_when_a_side_reaches_the_target_alone():
    eng = start_script(Rules(target_score=4), 1, TABLE_A, ROUND_C)
    last = play(eng, ROUND_C)[-1]  # 2-4
    assert bool(last.game_over[0]) and bool(eng.done[0])
    assert int(eng.winner[0]) == 1 and int(last.winner[0]) == 1
    assert not bool(eng.truncated[0])
    assert int(eng.legal[0]) == 0
    assert eng.scores[0].tolist() == [2, 4]


def test_game_goes_on_below_the_target():
    eng = start_script(Rules(target_score=5), 1, TABLE_A, ROUND_C)
    last = play(eng, ROUND_C)[-1]  # 2-4 < 5
    assert bool(last.round_over[0]) and not bool(last.game_over[0])
    assert int(eng.winner[0]) == -1
    assert int(eng.round_index[0]) == 1


def test_a_tie_for_the_highest_total_at_the_target_plays_another_round():
    eng = start_script(Rules(target_score=4), 1, TABLE_A, ROUND_A)
    last = play(eng, ROUND_A)[-1]  # 4-4: both reached 4, nobody leads
    assert bool(last.round_over[0]) and not bool(last.game_over[0])
    assert not bool(eng.done[0]) and int(eng.winner[0]) == -1
    assert int(eng.round_index[0]) == 1 and int(eng.dealer[0]) == 0
    assert eng.scores[0].tolist() == [4, 4]


def test_three_sides_highest_total_wins():
    eng = start_script(Rules(num_players=3, target_score=2), 2, TABLE_E, ROUND_E)
    last = play(eng, ROUND_E)[-1]  # 3-1-2: two sides reached 2, seat 0 has the most
    assert bool(last.game_over[0]) and int(eng.winner[0]) == 0


def test_partnership_game_is_won_by_a_team():
    eng = start_script(Rules(num_players=4, partnerships=True, target_score=6), 3, TABLE_D, ROUND_D)
    last = play(eng, ROUND_D)[-1]
    assert bool(last.game_over[0]) and int(eng.winner[0]) == 0
    assert eng.scores.shape == (1, 2)


def test_single_round_mode_ends_after_one_round():
    eng = start_script(Rules(), 1, TABLE_A, ROUND_C, single_round=True)
    last = play(eng, ROUND_C)[-1]
    assert bool(last.game_over[0]) and int(eng.winner[0]) == 1
    assert int(eng.round_index[0]) == 1


def test_max_rounds_truncates_a_game_without_winner():
    eng = start_script(Rules(), 1, TABLE_A, ROUND_C, max_rounds=1)
    last = play(eng, ROUND_C)[-1]  # 2-4, target 21 not reached
    assert bool(last.game_over[0]) and bool(last.truncated[0])
    assert bool(eng.done[0]) and bool(eng.truncated[0])
    assert int(eng.winner[0]) == -1 and int(last.winner[0]) == -1
    # A win in the last allowed round is a win, not a truncation.
    eng = start_script(Rules(target_score=4), 1, TABLE_A, ROUND_C, max_rounds=1)
    last = play(eng, ROUND_C)[-1]
    assert bool(last.game_over[0]) and not bool(last.truncated[0])
    assert int(eng.winner[0]) == 1
    # A tie at the target in the last allowed round is cut.
    eng = start_script(Rules(target_score=4), 1, TABLE_A, ROUND_A, max_rounds=1)
    last = play(eng, ROUND_A)[-1]
    assert bool(last.truncated[0]) and int(eng.winner[0]) == -1


def test_finished_games_ignore_their_actions():
    eng = start_script(Rules(), 1, TABLE_A, ROUND_C, num_games=1, single_round=True)
    play(eng, ROUND_C)
    before = eng.clone()
    info = eng.step(np.array([99]))  # not even a card: ignored
    assert int(info.actor[0]) == -1 and int(info.captured[0]) == 0
    np.testing.assert_array_equal(eng.piles, before.piles)
    np.testing.assert_array_equal(eng.scores, before.scores)


def test_every_card_ends_in_exactly_one_pile():
    for players in (2, 3, 4):
        eng = EscobaEngine(128, Rules(num_players=players), single_round=True)
        eng.reset(players)
        rng = np.random.default_rng(players)
        while not eng.done.all():
            eng.step(sample_actions(eng.legal, rng.random(128)))
        assert (eng.table == 0).all()
        assert (np.bitwise_or.reduce(eng.piles, axis=1) == np.uint64((1 << 40) - 1)).all()
        assert (np.bitwise_count(eng.piles).sum(axis=1) == 40).all()
        assert (eng.last_capturer >= 0).all()


def test_last_play_escoba_cannot_change_a_forty_card_round():
    # Same seeds and choices with the option on and off: identical games (see module docstring).
    runs = []
    for flag in (True, False):
        eng = EscobaEngine(256, Rules(last_play_escoba=flag), max_rounds=2)
        eng.reset(2024)
        rng = np.random.default_rng(7)
        history = []
        while not eng.done.all():
            info = eng.step(sample_actions(eng.legal, rng.random(256)))
            history.append((info.escoba.copy(), info.round_points.copy()))
        runs.append((history, eng.scores.copy()))
    assert len(runs[0][0]) == len(runs[1][0])
    for (e1, p1), (e2, p2) in zip(runs[0][0], runs[1][0], strict=True):
        np.testing.assert_array_equal(e1, e2)
        np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
