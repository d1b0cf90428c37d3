"""Tests for the terminal game ``python -m escoba_arena.terminal``, driven by scripted input."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

from escoba_arena import terminal as play
from escoba_arena.terminal import main
from escoba_env import Rules, parse_card
from escoba_env.rulebook.cards import mask_of, move_words, parse_cards

HAND = re.compile(r"^Your hand: (.*)$", re.M)
OPTION = re.compile(r"^  (\d+)\) (.*?)(  escoba!)?$")


class Player:
    """A scripted human: a stdin whose answers are computed from what the game printed so far.

    It plays the first card of its hand by name, and picks the last capture option when a card has
    several. ``on_move`` / ``on_capture`` are lists of extra answers (bad input) given once, before
    the first real answer of that kind of prompt.
    """

    def __init__(self, out: io.StringIO, on_move=(), on_capture=(), pick_last: bool = True):
        self.out = out
        self.pos = 0
        self.on_move = list(on_move)
        self.on_capture = list(on_capture)
        self.pick_last = pick_last
        self.chosen: list[tuple[str, str]] = []  # (card, option text) of each multi-option capture
        self.answers = 0
        self._card = ""

    def readline(self) -> str:
        text = self.out.getvalue()
        new, self.pos = text[self.pos:], len(text)
        prompt = new.rsplit("\n", 1)[-1]
        self.answers += 1
        if prompt.startswith("Which capture?"):
            if self.on_capture:
                return self.on_capture.pop(0) + "\n"
            block = text[text.rindex(" can capture in "):].splitlines()[1:]
            options = [m.group(2) for line in block if (m := OPTION.match(line))]
            k = len(options) if self.pick_last else 1
            self.chosen.append((self._card, options[k - 1]))
            return f"{k}\n"
        assert prompt.startswith("Your move"), f"unexpected prompt {prompt!r}"
        if self.on_move:
            return self.on_move.pop(0) + "\n"
        hand = HAND.findall(text)[-1]
        self._card = hand.split()[1]
        return self._card + "\n"


def run_game(argv: list[str], **player_kw) -> tuple[int, str, Player]:
    """Return (exit status, output, player) of one game on scripted input."""
    out = io.StringIO()
    player = Player(out, **player_kw)
    rc = main(["--no-color", *argv], stdin=player, stdout=out)
    return rc, out.getvalue(), player


def final_scores(text: str) -> list[int]:
    """Return the final scores printed at the end of a game."""
    line = re.search(r"^Final score: (.*)$", text, re.M).group(1)
    return [int(x) for x in re.findall(r" (\d+)(?:,|$)", line)]


def test_whole_two_player_game_against_expert_reaches_the_target():
    rc, text, player = run_game(["--opponent", "expert", "--seed", "3"])
    assert rc == 0
    assert "Game over: " in text
    scores = final_scores(text)
    assert len(scores) == 2 and max(scores) >= 21
    assert "Round 2" in text and "points this round" in text


def test_a_numbered_capture_choice_takes_exactly_the_chosen_option():
    rc, text, player = run_game(["--opponent", "expert", "--seed", "3"])
    assert rc == 0
    assert len(player.chosen) >= 2  # seed 3 offers several multi-option captures
    for card, option in player.chosen:
        assert f"> You: {move_words(parse_card(card), mask_of(parse_cards(option)))}" in text


def test_first_capture_option_can_be_chosen_too():
    rc, text, player = run_game(["--opponent", "greedy", "--seed", "3"], pick_last=False)
    assert rc == 0 and player.chosen
    for card, option in player.chosen:
        assert f"> You: {move_words(parse_card(card), mask_of(parse_cards(option)))}" in text


def test_three_player_game_with_one_spec_per_bot_seat():
    rc, text, _ = run_game(["--players", "3", "--opponent", "random", "greedy", "--target-score", "6",
                            "--seed", "11"])
    assert rc == 0
    assert "random #1" in text and "greedy #2" in text
    assert "Game over: " in text
    assert len(final_scores(text)) == 3


def test_partnership_game_names_the_partner_and_the_teams():
    rc, text, _ = run_game(["--players", "4", "--partnerships", "--opponent", "random", "--target-score",
                            "5", "--seed", "2"])
    assert rc == 0
    assert "Your team (You + partner random)" in text
    assert "Their team (random #1 + random #3)" in text
    assert len(final_scores(text)) == 2
    assert "Game over: " in text


def test_four_players_each_for_themselves_and_another_seat():
    rc, text, _ = run_game(["--players", "4", "--seat", "2", "--opponent", "random", "--target-score", "4",
                            "--seed", "5"])
    assert rc == 0
    assert "random #0" in text and "random #3" in text and "random #2" not in text
    assert len(final_scores(text)) == 4


def test_every_rules_option_reaches_the_game():
    rc, text, _ = run_game(["--opponent", "greedy", "--seed", "4", "--target-score", "3", "--sevens-rule",
                            "primera", "--bonus-sweeps", "--prefer-single", "--no-last-play-escoba",
                            "--no-initial-fifteen", "--max-rounds", "9"])
    assert rc == 0
    head = text.splitlines()[1] if text.startswith("Note:") else text.splitlines()[0]
    assert head == ("Escoba · 2 players, to 3, sevens: primera, bonus sweeps, prefer single, "
                    "no last play escoba, no initial fifteen · seed 4")
    assert "(target 3)" in text and "Game over" in text


def test_unknown_card_gets_a_message_and_a_new_prompt():
    rc, text, player = run_game(["--opponent", "random", "--seed", "1", "--target-score", "1"],
                                on_move=["xyz", "9z"])
    assert rc == 0
    assert "Unknown card 'xyz': type 1-3, a name like 7o or Rc, or ? for help." in text
    assert "Unknown card '9z'" in text
    assert "Game over" in text


def test_card_not_in_hand_and_out_of_range_number_get_messages():
    out = io.StringIO()
    main(["--no-color", "--opponent", "random", "--seed", "1"], stdin=io.StringIO(""),
         stdout=out)
    hand = HAND.findall(out.getvalue())[0].split()[1::2]
    absent = next(n for n in ("1o", "7o", "Rb", "5c", "Sc") if n not in hand)
    rc, text, _ = run_game(["--opponent", "random", "--seed", "1", "--target-score", "1"],
                           on_move=[absent, "4", "0"])
    assert rc == 0
    assert f"{absent} is not in your hand." in text
    assert "There is no card 4 in your hand: type 1-3 or a card name." in text
    assert "There is no card 0 in your hand" in text


def test_out_of_range_capture_choice_gets_a_message_and_back_returns_to_the_card():
    rc, text, player = run_game(["--opponent", "expert", "--seed", "3", "--target-score", "1"],
                                on_capture=["7", "0", "x", "b"])
    assert rc == 0
    msg = "Choose a capture by its number, 1 to 2 (or b to choose another card)."
    assert text.count(msg) == 3
    # The fourth answer, "b", brings back the card prompt.
    assert f"{msg}\nWhich capture? [1-2, b back]: Your move [" in text
    assert "Game over" in text


def test_help_is_shown_and_the_game_goes_on():
    rc, text, _ = run_game(["--opponent", "random", "--seed", "1", "--target-score", "1"], on_move=["?"])
    assert rc == 0
    assert "How to play:" in text and "Game over" in text


@pytest.mark.parametrize("stdin", ["", "q\n", "xyz\n"])
def test_end_of_input_or_quit_leaves_cleanly_with_status_0(stdin):
    out = io.StringIO()
    rc = main(["--no-color", "--opponent", "random", "--seed", "1"], stdin=io.StringIO(stdin), stdout=out)
    assert rc == 0
    assert out.getvalue().endswith("Game abandoned. Bye.\n")


def test_end_of_input_during_a_capture_choice_leaves_cleanly():
    out = io.StringIO()
    player = Player(out)

    class Stdin:
        def readline(self):
            if out.getvalue().rsplit("\n", 1)[-1].startswith("Which capture?"):
                return ""
            return player.readline()

    rc = main(["--no-color", "--opponent", "expert", "--seed", "3"], stdin=Stdin(), stdout=out)
    assert rc == 0
    lines = out.getvalue().splitlines()
    assert lines[-2].startswith("Which capture? [1-2, b back]: ")
    assert lines[-1] == "Game abandoned. Bye."


def test_french_names_and_colour():
    out = io.StringIO()
    args = ["--french", "--opponent", "random", "--seed", "1"]
    rc = main(["--color", *args], stdin=io.StringIO("1\n"), stdout=out)
    assert rc == 0
    text = out.getvalue()
    assert "\033[" in text
    assert any(s in text for s in "♦♥♠♣")
    plain = io.StringIO()
    main(["--no-color", *args], stdin=io.StringIO("1\n"), stdout=plain)
    assert "\033[" not in plain.getvalue()
    assert re.sub(r"\033\[[0-9;]*m", "", text) == plain.getvalue()


def test_french_card_names_are_accepted_as_input():
    out = io.StringIO()
    main(["--no-color", "--french", "--opponent", "random", "--seed", "1"], stdin=io.StringIO(""), stdout=out)
    first = HAND.findall(out.getvalue())[0].split()[1]  # a French name like 7♦
    out2 = io.StringIO()
    main(["--no-color", "--french", "--opponent", "random", "--seed", "1"], stdin=io.StringIO(first + "\n"),
         stdout=out2)
    from escoba_env.rulebook.cards import card_words

    assert f"> You: {card_words(parse_card(first), french=True)}" in out2.getvalue()


@pytest.mark.parametrize(("argv", "message"), [
    (["--players", "3", "--partnerships"], "partnerships needs exactly 4 players"),
    (["--seat", "2"], "--seat must be 0 to 1 with 2 players, got 2"),
    (["--opponent", "nonsense"], "nonsense"),
    (["--players", "3", "--opponent", "random", "random", "random"], "--opponent takes 1 spec or 2"),
    (["--opponent", "checkpoint:/no/such/file.pt"], "/no/such/file.pt"),
])
def test_bad_command_line_gives_one_error_line_and_status_2(argv, message):
    out = io.StringIO()
    rc = main(["--no-color", *argv], stdin=io.StringIO(""), stdout=out)
    assert rc == 2
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m escoba_arena.terminal: error: ")
    assert message in lines[0]


def test_default_opponent_falls_back_to_expert_without_a_checkpoint(monkeypatch, tmp_path):
    from agents.nets import shipped

    missing = tmp_path / "gone.pt"
    monkeypatch.setitem(shipped.DEFAULT_OPPONENTS, (2, False), f"checkpoint:{missing}")
    out = io.StringIO()
    main(["--no-color", "--seed", "1"], stdin=io.StringIO(""), stdout=out)
    first = out.getvalue().splitlines()[0]
    assert first == (f"Note: checkpoint:{missing} does not play these rules (checkpoint file not found: "
                     f"'{missing}'); playing expert.")
    assert "expert #1" in out.getvalue()


def test_default_opponent_is_the_shipped_network_when_it_fits_the_rules():
    assert play.default_opponent(Rules()) == ("neural-2p", None)
    spec, note = play.default_opponent(Rules(num_players=4))
    assert (spec, note) == ("expert", "no shipped agent plays 4 players; playing expert")
    spec, note = play.default_opponent(Rules(target_score=5))
    assert spec == "expert" and note.startswith("neural-2p does not play these rules (")
    rc, text, _ = run_game(["--seed", "1", "--max-rounds", "1"])
    assert rc == 0
    assert "neural-2p #1" in text and "Note:" not in text and "Game over" in text
    assert "Opponent: neural-2p (the default; --opponent to choose another)" in text


def _run_module(args: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "escoba_arena.terminal", *args], input=stdin, text=True,
                          capture_output=True, timeout=120)


def test_module_entry_point_quits_on_end_of_input_with_status_0():
    res = _run_module(["--no-color", "--opponent", "random", "--seed", "1"], stdin="2\n")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert "Your hand:" in res.stdout and res.stdout.endswith("Game abandoned. Bye.\n")


def test_a_cheating_opponent_is_announced_and_plays():
    rc, text, _ = run_game(["--opponent", "oracle:sims=8", "--seed", "2", "--max-rounds", "1"])
    assert rc == 0
    assert text.startswith("Note: oracle #1 cheats: it sees every hand and the stock")
    assert "Game over: cut after 1 round, no winner." in text


def test_the_escoba_play_command_runs_this_terminal_game():
    import re
    from pathlib import Path

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    scripts = re.search(r"^\[project\.scripts\]\n(.*?)^\[", pyproject, re.M | re.S).group(1)
    # It runs escoba_arena.terminal:main.
    assert 'escoba-play = "escoba_arena.commands:play"' in scripts.splitlines()
    find = re.search(r"^\[tool\.setuptools\.packages\.find\]\ninclude = (.*)$", pyproject, re.M).group(1)
    assert '"escoba_arena*"' in find
    assert play.main is main
