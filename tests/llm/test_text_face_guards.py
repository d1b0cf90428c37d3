"""Guards of the text face and of TextArena: behaviours no test caught when a fault was planted.

Each test is written against what a player (a language model) sees and what its answer does, not
against the lines of ``escoba_env.faces.text``, so that it holds across a rewrite of the parser.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from escoba_env import Rules, capture_options
from escoba_env.executors.game import Game
from escoba_env.faces import text


def _position(rules: Rules, seed: int, moves: int) -> Game:
    """Return a game dealt from ``seed`` after ``moves`` decisions, each the lowest legal action."""
    g = Game(rules)
    g.reset(seed)
    for _ in range(moves):
        g.step(min(g.legal_actions()))
    return g


def test_an_answer_of_zero_is_not_a_move_number():
    """Moves are numbered from 1: an answer of 0 (bare, or on a final-answer line) names no move and
    is refused, as is one past the last number; 1 and the last number are the first and last move."""
    g = _position(Rules(), 4, 3)
    moves = text.legal_moves(g.observe(g.to_act), g.rules)
    assert len(moves) >= 2
    assert text.parse_answer("1", moves) == moves[0]
    assert text.parse_answer(str(len(moves)), moves) == moves[-1]
    for answer in ("0", "Answer: 0", str(len(moves) + 1)):
        with pytest.raises(text.IllegalAnswer):
            text.parse_answer(answer, moves)


def test_textarena_refuses_an_answer_of_zero_and_plays_nothing():
    """TextArena counts an answer of 0 as an invalid move: the same player is asked again and the
    position is unchanged."""
    pytest.importorskip("textarena")
    from escoba_env.faces.textarena_env import EscobaTextArenaEnv

    env = EscobaTextArenaEnv(single_round=True, error_allowance=3)
    env.reset(num_players=2, seed=5)
    player, _ = env.get_observation()
    hands = list(env.game.hands)
    done, _ = env.step("0")
    again, messages = env.get_observation()
    assert not done and again == player and list(env.game.hands) == hands
    assert "1" in messages[-1][1]  # the reason names the numbers that are moves


def _capture_choice(rules: Rules) -> Game:
    """Return a game in the middle of a capture choice where a table card is named already and some
    option of the played card does not hold it (found by playing seeded random games)."""
    rng = np.random.default_rng(0)
    for seed in range(400):
        g = Game(rules, single_round=True)
        g.reset(seed)
        while not g.done:
            if g.pending >= 0 and g.taken:
                options = capture_options(g.pending, g.table, rules)
                if any(o & g.taken != g.taken for o in options) and \
                        sum(o & g.taken == g.taken for o in options) >= 2:
                    return g
            g.step(int(rng.choice(g.legal_actions())))
    raise AssertionError("no capture choice with a named card found")


@pytest.mark.parametrize("rules", [Rules(), Rules(jokers=2), Rules(num_players=4, partnerships=True)],
                         ids=["2p", "jokers", "2v2"])
def test_a_capture_choice_offers_only_the_options_holding_the_cards_named(rules):
    """During a capture choice the moves offered are the options of the played card that hold every
    table card named so far: an option without them cannot be carried out any more."""
    g = _capture_choice(rules)
    seat = g.to_act
    obs = g.observe(seat)
    moves = text.legal_moves(obs, rules)
    options = capture_options(g.pending, g.table, rules)
    assert [(m.card, m.taken) for m in moves] == [(g.pending, o) for o in options if o & g.taken == g.taken]
    assert len(moves) < len(options)
    listed = text.describe(obs, rules).split("legal moves:")[-1]
    assert len(re.findall(r"^\d+\. ", listed, flags=re.M)) == len(moves)
    for m in moves:  # each one offered is carried out as offered
        h = g.clone()
        while h.pending >= 0 and not h.done:
            h.step(text.move_action(m, h.observe(seat), h.action_mask(seat), rules))
        assert h.piles[seat] & ~g.piles[seat] == m.taken | 1 << m.card


def test_at_2v2_the_prompt_shows_each_teams_captures():
    """At 2v2 partners pool their captures: the prompt gives each team's pile (both partners' cards),
    not the pile of the seat to act alone."""
    rules = Rules(num_players=4, partnerships=True)
    rng = np.random.default_rng(1)
    g = Game(rules, single_round=True)
    g.reset(2)
    checked = 0
    while not g.done and checked < 12:
        seat = g.to_act
        own, partner = g.piles[seat], g.piles[(seat + 2) % 4]
        others = g.piles[(seat + 1) % 4] | g.piles[(seat + 3) % 4]
        if g.pending < 0 and partner:
            words = text.prompt(g.observe(seat), rules)
            ours = re.search(r"your team\W+(\d+) cards", words)
            theirs = re.search(r"the other team\W+(\d+) cards", words)
            assert ours and theirs, words
            assert int(ours.group(1)) == (own | partner).bit_count()
            assert int(theirs.group(1)) == others.bit_count()
            checked += 1
        g.step(int(rng.choice(g.legal_actions())))
    assert checked >= 3


def _first_hand(seed: int | None) -> str:
    """Return the hand line of the first position TextArena shows after ``reset(seed=seed)``."""
    from escoba_env.faces.textarena_env import EscobaTextArenaEnv

    env = EscobaTextArenaEnv(single_round=True)
    env.reset(num_players=2, seed=seed)
    _, messages = env.get_observation()
    words = "\n".join(m for _, m, _ in messages)
    return re.findall(r"^Your hand: .*$", words, flags=re.M)[-1]


def test_textarena_deals_from_the_seed_given_to_reset():
    """``reset(seed=...)`` fixes the deal: the same seed deals the same game, other seeds other games
    (a seed that is ignored deals every game alike)."""
    pytest.importorskip("textarena")
    hands = [_first_hand(s) for s in range(6)]
    assert hands == [_first_hand(s) for s in range(6)]
    assert len(set(hands)) == 6


# ---------------------------------------------------------------------- found by mutation testing
# (scripts/mutation.sh escoba_env/faces/text.py tests/llm: edits that no test noticed)


def test_a_reask_states_the_answer_format_of_the_prompt():
    """The message that sends an answer back repeats the format the prompt asked for: a move number from
    1 to N when moves are listed (the default), the move written out when they are not."""
    assert text.reask("no move found", 5) == ("That is not a legal move: no move found. End your reply "
                                              "with a final line `Answer: N` with N from 1 to 5.")
    assert text.reask("no move found", 5, listed=False) == (
        "That is not a legal move: no move found. End your reply with a final line `Answer: ` and the move "
        "written out.")


def test_a_forfeit_lays_the_lowest_discard_even_when_a_lower_card_must_capture():
    """A forfeited decision lays the lowest card that goes to the table, not the lowest card (which may
    capture); only when every card captures does it play the lowest card's first option."""
    moves = [text.Move(0, 1 << 13), text.Move(0, 1 << 20), text.Move(5, 0), text.Move(9, 0)]
    assert text.forfeit_move(moves) == text.Move(5, 0)
    assert text.forfeit_move(moves[:2] + [text.Move(3, 1 << 11)]) == text.Move(0, 1 << 13)


def test_the_prompt_asks_for_reasoning_only_when_reasoning_is_on():
    """``prompt`` is reasoning=off unless told: the one-line answer format; with reasoning=True the
    system message invites reasoning before the final line."""
    obs, rules = text.position_after(22, 12)
    plain, thinking = text.prompt(obs, rules), text.prompt(obs, rules, reasoning=True)
    assert text.answer_format() in plain and text.answer_format(reasoning=True) not in plain
    assert text.answer_format(reasoning=True) in thinking
    assert plain == text.prompt(obs, rules, reasoning=False)


def test_an_answer_naming_a_card_not_in_hand_is_sent_back_with_the_number_range():
    """Naming a card that cannot be played tells the model the range of move numbers (listed moves); an
    answer with no move in it reminds the model of the final line ``Answer: ...``."""
    g = _position(Rules(), 4, 3)
    moves = text.legal_moves(g.observe(g.to_act), g.rules)
    hand = {m.card for m in moves}
    absent = next(c for c in range(40) if c not in hand)
    with pytest.raises(text.IllegalAnswer) as e:
        text.parse_answer(text.card_words(absent), moves)
    assert str(e.value).endswith(f"cannot be played now: choose one number from 1 to {len(moves)}")
    with pytest.raises(text.IllegalAnswer) as e:
        text.parse_answer("I am not sure", moves)
    assert "a final line 'Answer: ...'" in str(e.value)


@pytest.mark.parametrize("french", [False, True])
def test_a_number_answer_to_unlisted_moves_is_sent_back_with_an_example_in_the_decks_words(french):
    """With moves not listed a number names no move: the answer is refused with an example written in
    the deck's own words (Spanish or French suits), never read as a move number."""
    g = _position(Rules(), 4, 3)
    moves = text.legal_moves(g.observe(g.to_act), g.rules)
    assert text.parse_answer("1", moves, french) == moves[0]  # listed by default
    with pytest.raises(text.IllegalAnswer) as e:
        text.parse_answer("1", moves, french, listed=False)
    example = "7 of diamonds takes" if french else "7 de oros takes"
    assert "the moves are not numbered" in str(e.value) and example in str(e.value)


def test_position_after_plays_whole_moves_under_the_rules_given():
    """``position_after`` deals under the rules it is given (default: the standard game) and leaves the
    seat to act at a play decision, even after a move whose capture is chosen card by card with the as
    de oros (card 0) pending (seed 8, sixth move)."""
    obs, rules = text.position_after(8, 6)
    assert rules == Rules()
    assert text.read_observation(obs, rules).pending == -1
    three = Rules(num_players=3)
    obs3, rules3 = text.position_after(8, 6, three)
    assert rules3 == three and obs3.shape == _first_observation(three).shape
    g = Game(three)
    g.reset(8)
    for _ in range(6):
        seat = g.to_act
        move = text.legal_moves(g.observe(seat), three)[-1]
        while True:
            g.step(text.move_action(move, g.observe(seat), g.action_mask(seat), three))
            if g.pending < 0:
                break
    np.testing.assert_array_equal(obs3, g.observe(g.to_act))


def _first_observation(rules: Rules) -> np.ndarray:
    """Return the first observation of a game under ``rules``."""
    g = Game(rules)
    g.reset(0)
    return g.observe(g.to_act)


COMMANDS = [([], 0, 0, Rules(), False, True, False),
            (["--seed", "8", "--moves", "6", "--french", "--moves-hidden", "--reasoning"], 8, 6, Rules(),
             True, False, True),
            (["--seed", "3", "--moves", "2", "--players", "4", "--partnerships"], 3, 2,
             Rules(num_players=4, partnerships=True), False, True, False)]
"""Command lines of ``python -m escoba_env.faces.text`` and the seed, moves, rules, french, listed and
reasoning they name."""


@pytest.mark.parametrize("argv, seed, moves, rules, french, listed, reasoning", COMMANDS)
def test_the_command_prints_the_prompt_of_the_position_it_names(argv, seed, moves, rules, french, listed,
                                                                 reasoning, capsys):
    """``python -m escoba_env.faces.text`` prints exactly ``prompt`` of the position its options name (seed
    0 and no moves by default; --french, --moves-hidden and --reasoning each change the prompt)."""
    obs, _ = text.position_after(seed, moves, rules)
    assert text.main(argv) == 0
    assert capsys.readouterr().out == text.prompt(obs, rules, french, listed, reasoning) + "\n"


@pytest.mark.parametrize("french", [False, True])
def test_an_illegal_answer_is_explained_in_the_decks_own_words(french):
    """Every reason an answer is sent back names the cards in the words of the game's deck (Spanish or
    French suits): a card not in hand, a move that must capture, a card named as its own capture, a
    listed line copied with another move; listed moves get the number range, unlisted ones do not."""
    g = _position(Rules(), 4, 3)  # hand: the kings of oros (36) and espadas (38); both take the 5 de espadas
    moves = text.legal_moves(g.observe(g.to_act), g.rules)
    assert moves == [text.Move(36, 1 << 18), text.Move(38, 1 << 18)]
    king, ace, five = (text.card_words(c, french) for c in (36, 0, 18))
    discard = text.move_words(36, 0, french)
    cases = [(ace, True, f"{ace} cannot be played now: choose one number from 1 to 2"),
             (ace, False, f"{ace} cannot be played now: it is not in your hand"),
             (discard, False, f"'{discard}' is not a legal move: {king} takes a set of table cards that adds "
                              "up to 15 with it, and must take one when it can"),
             (f"{king} takes {king}", True, f"'{king}' is not a legal move; the legal moves with {king} are "
                                            "number(s) 1"),
             (f"1. {text.card_words(38, french)} takes {five}", True,
              f"move 1 is {moves[0].words(french)}, not '{text.card_words(38, french)} takes {five}'")]
    for answer, listed, why in cases:
        with pytest.raises(text.IllegalAnswer) as e:
            text.parse_answer(answer, moves, french, listed)
        assert str(e.value) == why, answer
    example = text.answer_format(False, False, french).split("(for example `")[1].split("`")[0]
    with pytest.raises(text.IllegalAnswer) as e:
        text.parse_answer("2", moves, french, listed=False)
    assert str(e.value) == f"the moves are not numbered: write the move out, e.g. '{example}'"


def test_only_a_whole_bracketed_answer_loses_its_brackets():
    """``(2)`` and ``[2]`` name move 2; an answer with one bracket only (``(12``, ``12)``) names nothing
    (its ends are not cut off to leave a number)."""
    g = _position(Rules(), 4, 3)
    moves = text.legal_moves(g.observe(g.to_act), g.rules)
    assert text.parse_answer("(2)", moves) == text.parse_answer("[2]", moves) == moves[1]
    for answer in ("(12", "12)", "[12", "12]"):
        with pytest.raises(text.IllegalAnswer):
            text.parse_answer(answer, moves)


def test_the_commands_usage_names_the_command_to_type(capsys):
    """``--help`` shows the usage as ``python -m escoba_env.faces.text`` (what a reader types), not the
    name of the file Python runs."""
    with pytest.raises(SystemExit) as e:
        text.main(["--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m escoba_env.faces.text [-h]")


def test_the_defaults_are_the_spanish_deck_listed_moves_and_no_reasoning():
    """Left unsaid, every function of the face speaks of the Spanish deck, lists the moves and asks for
    one line: a move's words, the rules brief, the answer format and the reasons an answer is refused."""
    g = _position(Rules(), 4, 3)
    moves = text.legal_moves(g.observe(g.to_act), g.rules)
    assert moves[0].words() == "rey de oros takes 5 de espadas" == moves[0].words(False)
    assert moves[0].words(True) == "king of diamonds takes 5 of spades"
    assert text.rules_brief(Rules()) == text.rules_brief(Rules(), False) != text.rules_brief(Rules(), True)
    obs, rules = g.observe(g.to_act), g.rules
    assert text.describe(obs, rules) == text.describe(obs, rules, False) != text.describe(obs, rules, True)
    assert text.answer_format() == text.answer_format(True, False, False)
    flags = ((True, False, False), (False, False, False), (True, True, False), (False, False, True))
    assert len({text.answer_format(*f) for f in flags}) == 4
    with pytest.raises(text.IllegalAnswer) as e:
        text.read_answer("as de oros", moves)
    assert str(e.value).startswith("as de oros cannot be played now")


def test_the_format_of_unlisted_moves_is_the_documented_one():
    """With moves hidden the system message asks for the move written out, in the words docs/llm.md
    documents (part of the answer protocol a model is prompted with)."""
    assert text.answer_format(listed=False) == (
        "Reply with one line only: `Answer: ` and the move you choose written out: the card you play, then "
        "`takes` and the table cards it takes joined by ` + `, or the card then `to the table` (for example "
        "`Answer: 7 de oros takes 3 de copas + 5 de bastos` or `Answer: 7 de oros to the table`). Your legal "
        "moves are not listed: work them out from the rules.")


def test_the_messages_speak_of_the_deck_and_list_the_moves_given():
    """``messages`` is the system message (rules brief and answer format, in the deck's words) and the
    position listing exactly the moves it is given."""
    obs, rules = text.position_after(22, 12)
    moves = text.legal_moves(obs, rules)
    system, user = text.messages(obs, rules, True, moves[:1])
    assert system == {"role": "system", "content": text.rules_brief(rules, True) + "\n\n"
                      + text.answer_format(True, False, True)}
    assert user == {"role": "user", "content": text.describe(obs, rules, True, moves[:1])}
    assert f"1. {moves[0].words(True)}" in user["content"] and "\n2. " not in user["content"]


def test_a_capture_is_named_lowest_card_first_and_an_illegal_move_is_refused():
    """During a capture choice ``move_action`` names the lowest table card of the move still to name;
    a move that is not legal at the decision (a card not in hand, a capture choice's card with nothing
    named) is a ValueError, never some action."""
    rules = Rules()
    g = Game(rules)
    g.reset(1)
    for _ in range(6):
        g.step(min(g.legal_actions()))
        while g.pending >= 0:
            g.step(min(g.legal_actions()))
    seat = g.to_act
    move = text.Move(16, (1 << 0) | (1 << 3) | (1 << 28))  # 5 de oros takes 2 aces + sota
    assert move in text.legal_moves(g.observe(seat), rules)
    with pytest.raises(ValueError, match="is not legal here"):
        text.move_action(text.Move(0, 0), g.observe(seat), g.action_mask(seat), rules)
    g.step(text.move_action(move, g.observe(seat), g.action_mask(seat), rules))
    assert g.pending == 16 and {0, 3, 28} <= set(np.flatnonzero(g.action_mask(seat)))
    assert text.move_action(move, g.observe(seat), g.action_mask(seat), rules) == 0
    with pytest.raises(ValueError, match="is not legal here"):
        text.move_action(text.Move(16, 0), g.observe(seat), g.action_mask(seat), rules)


def test_each_reason_to_send_an_answer_back_is_said_in_one_line():
    """What is not text, an empty reply and a reply that does not end in a final line each get their own
    reason; backticks around the final line (a model's markdown) are not part of it."""
    moves = text.legal_moves(*text.position_after(22, 12))
    for answer, why in ((None, "the answer is not text"), (" \n ", "the answer is empty"),
                        ("I think 2.\nmaybe 3", "the reply does not end with a final line 'Answer: ...'")):
        with pytest.raises(text.IllegalAnswer) as e:
            text.read_answer(answer, moves)
        assert str(e.value) == why
    assert text.read_answer("Let me see.\n`Answer: 2`", moves) == (moves[1], "answer_number")


PROMPT_TABLES = {
    "2p": Rules(),
    "3p-tiebreak": Rules(num_players=3, sevens_rule="most_sevens_tiebreak", initial_fifteen=False),
    "2v2": Rules(num_players=4, partnerships=True),
    "4p-primera": Rules(num_players=4, sevens_rule="primera", target_score=31),
    "house": Rules(prefer_single=True, jokers=2, bonus_sweeps=True, last_play_escoba=False),
    "mesa": Rules(mesa_deal=True, initial_fifteen=False, jokers=1),
}
"""Tables whose prompts are pinned: every table size, every scoring and house variant."""
PROMPT_DIGESTS = {"escoba-answer/1": {
    "2p": "26a06a493500de0b", "3p-tiebreak": "939e9e25bb2dc1af", "2v2": "6e92a5a4747b7761",
    "4p-primera": "903d63d0897f3f18", "house": "88bf3e5528a2a248", "mesa": "74fabcd9af3df28c",
    "capture-choice": "ba23858f0821ba01"}}
"""sha256 (16 hex digits) of each table's prompts, per answer protocol version."""


def _table_prompts(rules: Rules) -> list[str]:
    """Return the prompts of three positions of ``rules``: both decks, listed, and hidden with reasoning."""
    out = []
    for seed, moves in ((5, 0), (5, 7), (9, 19)):
        obs, _ = text.position_after(seed, moves, rules)
        for french in (False, True):
            out += [text.prompt(obs, rules, french, listed, not listed) for listed in (True, False)]
    return out


def _choice_prompts() -> list[str]:
    """Return the prompts of two capture choices: seed 1's seventh move (5 de oros) before and after
    naming a card, and seed 8's sixth move (the as de oros, card 0) in the line ``position_after`` plays."""
    g = _position(Rules(), 1, 0)
    for _ in range(6):
        g.step(min(g.legal_actions()))
        while g.pending >= 0:
            g.step(min(g.legal_actions()))
    g.step(16)
    first = g.observe(g.to_act)
    g.step(0)
    seen = [first, g.observe(g.to_act)]
    obs, rules = text.position_after(8, 5)
    h = _position(rules, 8, 0)
    for _ in range(5):
        move = text.legal_moves(h.observe(h.to_act), rules)[-1]
        seat = h.to_act
        h.step(text.move_action(move, h.observe(seat), h.action_mask(seat), rules))
        while h.pending >= 0:
            h.step(text.move_action(move, h.observe(seat), h.action_mask(seat), rules))
    np.testing.assert_array_equal(h.observe(h.to_act), obs)
    h.step(0)
    assert h.pending == 0
    seen.append(h.observe(h.to_act))
    return [text.prompt(o, g.rules, f) for o in seen for f in (False, True)]


@pytest.mark.parametrize("table", [*PROMPT_TABLES, "capture-choice"])
def test_the_prompt_a_model_sees_changes_only_with_the_answer_protocol(table):
    """The words of the prompt (rules brief, answer format, position, in both decks, at every table size
    and variant, at a capture choice) are part of what a model's results measure: they are pinned per
    ``ANSWER_PROTOCOL``. A deliberate change of the prompt comes with a new protocol version (and these
    digests recorded under it); an unintended one fails here."""
    texts = _choice_prompts() if table == "capture-choice" else _table_prompts(PROMPT_TABLES[table])
    got = hashlib.sha256("\n\x00\n".join(texts).encode()).hexdigest()[:16]
    assert text.ANSWER_PROTOCOL in PROMPT_DIGESTS, "a new answer protocol: record its prompt digests here"
    assert got == PROMPT_DIGESTS[text.ANSWER_PROTOCOL][table], (table, got)


def test_an_observation_that_cannot_be_read_is_refused_in_one_line():
    """An observation of the wrong length names both lengths; one whose seat holds no card (not the
    seat to act) has no legal moves to list: each is a ValueError saying so."""
    three = Rules(num_players=3, jokers=1)  # a deck of 41: another length than the default rules'
    size = len(_first_observation(three))
    assert size != len(_first_observation(Rules()))
    with pytest.raises(ValueError) as e:
        text.read_observation(np.zeros(size + 1, np.float32), three)
    assert str(e.value) == f"an observation for these rules has {size} entries, got {size + 1}"
    with pytest.raises(ValueError) as e:
        text.legal_moves(np.zeros(size, np.float32), three)
    assert str(e.value) == "the observer has no card to play (is it the seat to act?)"
