"""The terminal game under hostile input: huge numbers, odd flags, closed pipes, absurd bot budgets."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from escoba_arena import terminal as play
from escoba_arena.terminal import HELP, main


def _game(argv: list[str], answers: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    rc = main(["--no-color", *argv], stdin=io.StringIO("".join(a + "\n" for a in answers)),
              stdout=out)
    return rc, out.getvalue()


def test_a_4301_digit_number_is_bad_input_not_the_end_of_the_game():
    rc, text = _game(["--opponent", "random", "--seed", "1"], ["1" * 4301, "1" * 5000, "²", "q"])
    assert rc == 0
    assert "There is no card 111111111111... in your hand: type 1-3 or a card name." in text
    assert "Unknown card '²'" in text
    assert text.endswith("Game abandoned. Bye.\n")


def test_a_huge_capture_choice_number_is_bad_input_too():
    from tests.frontends.test_play import run_game

    rc, text, _ = run_game(["--opponent", "expert", "--seed", "3", "--target-score", "1"],
                           on_capture=["9" * 4400, "b"])
    assert rc == 0 and "Choose a capture by its number, 1 to " in text and "Game over" in text


@pytest.mark.parametrize(("argv", "message"), [
    (["--delay", "inf"], "argument --delay: must be a number of seconds from 0 to 60, got 'inf'"),
    (["--delay", "nan"], "argument --delay: must be a number of seconds from 0 to 60"),
    (["--delay", "-1"], "argument --delay: must be a number of seconds from 0 to 60"),
    (["--seed", str(2**64)], "argument --seed: must be an integer from 0 to 2**64-1"),
    (["--seed", "9" * 5000], "argument --seed: must be an integer from 0 to 2**64-1"),
    (["--max-rounds", "9" * 5000], "argument --max-rounds: must be a positive integer"),
    (["--opponent", "search:sims=1000000000000"], "expected an integer from 1 to 100,000"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_flags_get_one_line_on_stderr_and_status_2(argv, message):
    res = subprocess.run([sys.executable, "-m", "escoba_arena.terminal", "--no-color", *argv], input="",
                         text=True, capture_output=True, timeout=120)
    assert res.returncode == 2
    (line,) = res.stderr.splitlines()
    assert line.startswith("python -m escoba_arena.terminal: error: ") and message in line, line


def test_output_closed_early_ends_quietly():
    cmd = f"yes 1 | {sys.executable} -m escoba_arena.terminal --opponent random --seed 2 | head -1"
    proc = subprocess.run(cmd,
                          shell=True, text=True, capture_output=True, timeout=120)
    assert proc.stdout.startswith("Escoba · 2 players") and len(proc.stdout.splitlines()) == 1
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr


def test_the_default_opponent_is_named_at_the_start_and_the_help_explains_french_names(monkeypatch):
    monkeypatch.setattr(play, "default_opponent", lambda rules: ("greedy", None))
    rc, text = _game(["--seed", "1"], ["q"])
    assert rc == 0
    assert text.splitlines()[0] == "Opponent: greedy (the default; --opponent to choose another)"
    for name in ("J = sota (8)", "Q = caballo (9)", "K = rey (10)", "♦ = oros", "♥ = copas", "♠ = espadas",
                 "♣ = bastos"):
        assert name in HELP


def test_opponent_help_lists_every_built_in_agent():
    text = play.build_parser().format_help()
    for name in ("random", "greedy", "expert", "search", "oracle", "endgame", "checkpoint"):
        assert name in text


def test_search_budgets_are_bounded_in_the_registry():
    from agents.spec.registry import make_agent
    from agents.spec.values import MAX_SIMS

    assert make_agent(f"search:sims={MAX_SIMS}").sims == MAX_SIMS
    for bad in (MAX_SIMS + 1, 10**12, "9" * 5000):
        with pytest.raises(ValueError, match="expected an integer from 1 to 100,000"):
            make_agent(f"search:sims={bad}")
    with pytest.raises(ValueError) as e:
        make_agent("nonsense")
    assert "training issue" not in str(e.value)
