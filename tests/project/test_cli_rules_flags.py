"""One Rules-flags builder (``escoba_env.faces.cli.add_rules_arguments``) for every program, same flag
names."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from escoba_env import Rules
from escoba_env.faces.cli import add_rules_arguments, rules_from_args

ROOT = Path(__file__).resolve().parents[2]
RULES_FLAGS = ("--players", "--partnerships", "--target-score", "--sevens-rule", "--bonus-sweeps",
               "--prefer-single", "--last-play-escoba", "--initial-fifteen", "--jokers", "--mesa-deal")
# Programs that take rules: their files must build the flags with add_rules_arguments.
PROGRAMS = ("agents/tournament/cli.py", "agents/training/cli.py", "agents/training/distill.py",
            "escoba_arena/terminal.py", "benchmarks/bench_agents.py", "benchmarks/bench_engine.py",
            "benchmarks/bench_envs.py", "benchmarks/bench_gym_vector.py",
            "benchmarks/bench_train.py", "benchmarks/strength.py")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_rules_arguments(p)
    return p


def test_the_builder_has_one_flag_per_rules_field_with_the_defaults():
    actions = add_rules_arguments(argparse.ArgumentParser())
    assert [a.option_strings[0] for a in actions] == list(RULES_FLAGS)
    assert len(actions) == len(Rules().to_dict())
    assert rules_from_args(_parser().parse_args([])) == Rules()


def test_the_flags_round_trip_to_rules():
    args = _parser().parse_args(["--players", "4", "--partnerships", "--target-score", "31", "--sevens-rule",
                                 "primera", "--bonus-sweeps", "--prefer-single", "--no-last-play-escoba",
                                 "--no-initial-fifteen", "--jokers", "2", "--mesa-deal"])
    assert rules_from_args(args) == Rules(num_players=4, partnerships=True, target_score=31,
                                          sevens_rule="primera", bonus_sweeps=True, prefer_single=True,
                                          last_play_escoba=False, initial_fifteen=False, jokers=2,
                                          mesa_deal=True)


def test_invalid_combinations_are_a_value_error():
    with pytest.raises(ValueError, match="partnerships"):
        rules_from_args(_parser().parse_args(["--players", "3", "--partnerships"]))


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # a bare call or a module's (``cli.add_rules_arguments``: the benchmarks import the module so that they
    # also run against an older checkout's layout)
    return ({n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            | {n.func.attr for n in ast.walk(tree)
               if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)})


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_program_builds_its_rules_flags_with_the_shared_builder(program):
    assert "add_rules_arguments" in _calls(ROOT / program)


def _string_flags(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in RULES_FLAGS}


def test_no_program_spells_a_rules_flag_of_its_own():
    # The flag names live in escoba_env/faces/cli.py only; a second definition would drift from it.
    sources = [p for d in ("escoba_env", "agents", "escoba_arena", "benchmarks", "scripts")
               for p in (ROOT / d).rglob("*.py")] + [ROOT / "train.py", ROOT / "evaluate.py"]
    owners = {str(p.relative_to(ROOT)) for p in sources if _string_flags(p)}
    assert owners == {"escoba_env/faces/cli.py"}


@pytest.mark.parametrize("module", ["agents.tournament.cli", "agents.training.cli", "agents.training.distill",
                                    "escoba_arena.terminal"])
def test_every_parser_offers_the_same_rules_flags(module):
    parser = __import__(module, fromlist=["build_parser"]).build_parser()
    offered = {s for a in parser._actions for s in a.option_strings}
    assert set(RULES_FLAGS) <= offered
