"""Guards of the text face and of TextArena: behaviours no test caught when a fault was planted.

Each test is written against what a player (a language model) sees and what its answer does, not
against the lines of ``escoba_env.faces.text``, so that it holds across a rewrite of the parser.
"""

from __future__ import annotations

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
