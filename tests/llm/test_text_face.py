"""The text face: prompts built from the observation alone, every legal full move, and the parser."""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env.executors.game import Game
from escoba_env.executors.observation import encode_state
from escoba_env.faces import text
from escoba_env.faces.common import legal_moves as face_moves
from escoba_env.rulebook.cards import (
    MAX_CARDS,
    card_name,
    card_words,
    move_words,
    parse_card,
    parse_card_words,
)
from escoba_env.rulebook.rules import Rules


def C(name: str) -> int:
    return parse_card(name)


def M(*names: str) -> int:
    return sum(1 << C(n) for n in names)


def test_card_and_move_words_are_the_rule_books_names_spanish_by_default():
    assert card_words(C("7o")) == "7 de oros"
    assert card_words(C("Sc")) == "sota de copas"
    assert card_words(C("1b")) == "as de bastos"
    assert card_words(C("Re"), french=True) == "king of spades"
    assert card_words(40) == "joker 1"
    assert move_words(C("7o"), M("3c", "5b")) == "7 de oros takes 3 de copas + 5 de bastos"
    assert move_words(C("7o"), 0) == "7 de oros to the table"
    assert move_words(C("7o"), M("Co"), french=True) == "7 of diamonds takes queen of diamonds"


@pytest.mark.parametrize("french", [False, True])
def test_every_card_name_reads_back(french):
    for c in range(MAX_CARDS):
        assert parse_card_words(card_words(c, french)) == c
        assert parse_card_words(card_words(c, french).upper()) == c
        assert parse_card_words(card_name(c, french)) == c
    assert parse_card_words("12 de copas") == C("Rc") and parse_card_words("10 de oros") == C("So")
    with pytest.raises(ValueError, match="unknown card"):
        parse_card_words("13 de oros")


def _state(opponent_hand: int, stock: list[int]) -> np.ndarray:
    """Return seat 0's observation of a hand-made position whose hidden cards are given."""
    rules = Rules()
    hands = [M("7o", "3c", "Rb"), opponent_hand]
    piles = [M("1o", "4e"), M("5c", "Sb")]
    played = [M("1o"), M("5c")]
    table = M("3e", "5b", "So")
    del stock  # the stock order is not part of an observation: that is the point of the test
    return encode_state(rules, 0, hands, piles, played, table, -1, 0, [1, 0], [4, 9], 30, 1, 1)


def test_a_hidden_card_swap_leaves_the_prompt_identical():
    a = _state(M("2o", "6c", "Ce"), [C("7b"), C("1c")])
    b = _state(M("7b", "1c", "2e"), [C("2o"), C("6c")])  # other hidden cards, other stock
    assert text.prompt(a, Rules()) == text.prompt(b, Rules())
    words = text.prompt(a, Rules())
    for hidden in ("2 de oros", "6 de copas", "caballo de espadas", "7 de bastos"):
        assert hidden not in words


def test_the_prompt_shows_the_position_and_numbers_every_full_move():
    p = text.prompt(_state(M("2o", "6c", "Ce"), []), Rules())
    assert "Your hand: 3 de copas + 7 de oros + rey de bastos." in p
    assert "Table: 3 de espadas + 5 de bastos + sota de oros." in p
    assert "Scores: you 4, your opponent 9 (target 21)." in p
    assert "you: 2 cards, 1 oros, 0 sevens, 1 escoba" in p
    assert "Played from hand this round: you: as de oros; your opponent: 5 de copas." in p
    moves = p.split("Your legal moves:\n")[1].splitlines()
    assert moves == ["1. 3 de copas to the table", "2. 7 de oros takes 3 de espadas + 5 de bastos",
                     "3. 7 de oros takes sota de oros", "4. rey de bastos takes 5 de bastos"]
    assert "Cards left in the stock: 27." in p and "Last capture this round: your opponent." in p


@pytest.mark.parametrize("rules", [Rules(), Rules(num_players=4, partnerships=True), Rules(num_players=3),
                                   Rules(num_players=4),
                                   Rules(prefer_single=True), Rules(jokers=2, mesa_deal=True)])
def test_the_moves_are_the_games_moves_and_each_one_plays_as_listed(rules):
    rng = np.random.default_rng(5)
    g = Game(rules, single_round=True)
    g.reset(11)
    decisions = 0
    while not g.done:
        seat = g.to_act
        obs, mask = g.observe(seat), g.action_mask(seat)
        moves = text.legal_moves(obs, rules)
        assert [(m.card, m.taken) for m in moves] == face_moves(g)
        move = moves[rng.integers(len(moves))]
        table = g.table
        step = g.step(text.move_action(move, obs, mask, rules))
        while g.pending >= 0 and not g.done:
            step = g.step(text.move_action(move, g.observe(seat), g.action_mask(seat), rules))
        assert step.captured & table == move.taken  # the move listed is the move played
        decisions += 1
    assert decisions >= 18


def test_the_rules_brief_follows_the_variants():
    plain = text.rules_brief(Rules())
    assert "2 players" in plain and "21 points" in plain and "joker" not in plain
    v = text.rules_brief(Rules(num_players=4, partnerships=True, sevens_rule="primera", jokers=1,
                               prefer_single=True, bonus_sweeps=True, target_score=30, mesa_deal=True))
    for phrase in ("two teams of 2", "primera", "1 wild joker", "single table card", "score 2 instead",
                   "30 points", "turned up one card at a time"):
        assert phrase in v
    assert "diamonds" in text.rules_brief(Rules(), french=True)


MOVES = [text.Move(C("7o"), M("3e", "5b")), text.Move(C("7o"), M("So")), text.Move(C("3c"), 0)]


ACCEPTED = [  # the table of accepted forms in docs/llm.md, row by row: (answer, move index, form)
    ("Answer: 2", 1, "answer_number"), ("answer: 1", 0, "answer_number"),
    ("**Answer:** 3", 2, "answer_number"),
    ("Final answer: 2", 1, "answer_number"), ("Answer: [2]", 1, "answer_number"),
    ("The sota is worth 8, so 7 + 8 = 15 and move 1 takes two cards.\nMove 2 keeps the velo safe.\nAnswer: 2",
     1, "answer_number"),
    ("Answer: 2. 7 de oros takes sota de oros", 1, "answer_number"),
    ("Answer: 7 de oros takes sota de oros", 1, "answer_move"),
    ("I would keep the 3.\nAnswer: 3 de copas to the table", 2, "answer_move"),
    ("2", 1, "number"), (" 2. ", 1, "number"), ("[2]", 1, "number"), ("#3", 2, "number"),
    ("2. 7 de oros takes sota de oros", 1, "number"),
    ("7 de oros takes sota de oros", 1, "move"), ("7 DE OROS TAKES SOTA DE OROS!", 1, "move"),
    ("7 de oros takes 5 de bastos + 3 de espadas", 0, "move"), ("7o 3e 5b", 0, "move"), ("7♦ J♦", 1, "move"),
    ("3 de copas to the table", 2, "move"), ("7 of diamonds takes jack of diamonds", 1, "move"),
    ("[I would keep the 3.\nAnswer: 3]", 2, "answer_number"),  # TextArena's wrapper brackets a reply
]


@pytest.mark.parametrize("answer,index,form", ACCEPTED)
def test_the_parser_reads_a_final_answer_line_a_bare_number_or_a_bare_move(answer, index, form):
    assert text.read_answer(answer, MOVES) == (MOVES[index], form)
    assert text.parse_answer(answer, MOVES) == MOVES[index]


@pytest.mark.parametrize("answer,reason", [
    ("", "empty"), ("7", "7 is not the number of a move: choose one from 1 to 3"),
    ("I would rather not say.", "no move found in the answer"),
    ("You are the 2-player deck", "no move found in the answer"),  # once read as move 2
    ("You are the Spanish 40-", "no move found in the answer"),  # once read as 40
    ("So I think 2 is best", "no move found in the answer"),
    ("Move #3", "no move found in the answer"),
    ("I play 7 de oros, taking 5 de bastos and 3 de espadas.", "no move found in the answer"),
    ("Answer: 2 because it takes the sota", "no move found in the answer"),
    ("Answer: 2\nThat takes the sota.", "does not end with a final line 'Answer: ...'"),
    ("Let me think: 2 looks best.\n2", "does not end with a final line 'Answer: ...'"),
    ("1. 7 de oros takes sota de oros", "move 1 is 7 de oros takes 3 de espadas \\+ 5 de bastos, not"),
    ("rey de bastos takes 5 de bastos", "rey de bastos cannot be played now"),
    ("7 de oros takes 3 de espadas", "'7 de oros takes 3 de espadas' is not a legal move; the legal moves "
                                     "with 7 de oros are number\\(s\\) 1, 2"),
])
def test_the_parser_refuses_prose_and_says_why(answer, reason):
    with pytest.raises(text.IllegalAnswer, match=reason):
        text.parse_answer(answer, MOVES)


def test_with_moves_hidden_only_a_move_written_out_is_read():
    got = text.read_answer("Answer: 7 de oros takes sota de oros", MOVES, listed=False)
    assert got == (MOVES[1], "answer_move")
    assert text.read_answer("3 de copas to the table", MOVES, listed=False) == (MOVES[2], "move")
    for answer in ("2", "Answer: 2", "2. 7 de oros takes sota de oros"):
        with pytest.raises(text.IllegalAnswer, match="the moves are not numbered: write the move out"):
            text.read_answer(answer, MOVES, listed=False)
    with pytest.raises(text.IllegalAnswer, match="takes a set of table cards that adds up to 15"):
        text.read_answer("Answer: 7 de oros takes 3 de espadas", MOVES, listed=False)


def test_the_answer_protocol_is_stated_in_the_system_message():
    g = Game(Rules())
    g.reset(4)
    obs = g.observe(g.to_act)
    listed = text.messages(obs, Rules())
    assert "Reply with one line only: `Answer: N`" in listed[0]["content"]
    assert "Your legal moves:" in listed[1]["content"]
    hidden = text.messages(obs, Rules(), listed=False, reasoning=True)
    assert "Your legal moves:" not in hidden[1]["content"] and "Your hand:" in hidden[1]["content"]
    assert "think it through first" in hidden[0]["content"]
    assert "Only that final line is read" in hidden[0]["content"]
    assert "`Answer: 7 de oros to the table`" in hidden[0]["content"]
    french = text.messages(obs, Rules(), True, listed=False)[0]["content"]
    assert "`Answer: 7 of diamonds to the table`" in french


def test_a_forfeit_is_the_lowest_legal_discard():
    assert text.forfeit_move(MOVES) == MOVES[2]  # the only card laid on the table
    captures = [text.Move(C("5o"), M("Sc", "2c")), text.Move(C("7o"), M("So"))]
    assert text.forfeit_move(captures) == captures[0]  # every card must capture: the lowest card's first
    assert text.forfeit_move([text.Move(C("Rb"), 0), text.Move(C("2c"), 0)]) == text.Move(C("2c"), 0)
    assert text.random_move(MOVES, 0.0) == MOVES[0] and text.random_move(MOVES, 0.999) == MOVES[2]


@pytest.mark.parametrize("players,partnerships,names", [
    (2, False, ["you", "your opponent"]),
    (3, False, ["you", "the player after you", "the player before you"]),
    (4, False, ["you", "the player after you", "the player opposite you", "the player before you"]),
    (4, True, ["you", "the opponent after you", "your partner", "the opponent before you"]),
])
def test_every_seat_has_a_name_at_every_table(players, partnerships, names):
    rules = Rules(num_players=players, partnerships=partnerships)
    assert text.seat_names(rules) == names
    g = Game(rules)
    g.reset(4)
    p = text.prompt(g.observe(g.to_act), rules)
    assert all(n in p for n in names[1:])
