"""The installed commands (``escoba-evaluate``, ``escoba-train``, ``escoba-bench``, ``escoba-arena``,
``escoba-play``; also ``evaluate.py`` and ``train.py``): the console scripts of ``pyproject.toml``.

The front-end layer holds them because two of them start front-ends (``escoba_arena.web``,
``escoba_arena.terminal``); the others start the agents' programs (``agents.tournament.cli``,
``agents.training.cli``, ``agents.bench.cli``). Each starts through ``agents.programs.run_program``: it
checks, before it starts, that the libraries it needs are installed (``REQUIRES``; found without
importing them) and otherwise ends with one line naming the missing library and the extra that
installs it, status 1, having written nothing. ``--help`` (``-h``) works without any extra: a program
whose module imports a missing library is loaded for its help with that library stubbed (the stubs
are never run; the process ends after the help). Training, which needs torch, is imported only when run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agents.bench.cli import main as bench_main
from agents.programs import REQUIRES as AGENT_REQUIRES
from agents.programs import program_name, run_program
from agents.tournament.cli import main as evaluate_main

from .terminal import main as play_main
from .web.cli import main as arena_main

REQUIRES: dict[str, tuple[tuple[str, str], ...]] = {
    **AGENT_REQUIRES,
    "arena": (("starlette", "web"), ("uvicorn", "web"), ("httpx", "web"), ("websockets", "web")),
    "play": (),  # the core alone: the networks' torch is optional (a fallback bot plays)
}
"""Command -> the (top-level module, extra that installs it) pairs it needs before it starts."""


def evaluate(argv: Sequence[str] | None = None) -> int:
    """Run the tournament command line (``agents.tournament.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        return evaluate_main
    return run_program(REQUIRES["evaluate"], program_name("evaluate.py"), load, argv)


def train(argv: Sequence[str] | None = None) -> int:
    """Run the training command line (``agents.training.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        from agents.training.cli import main  # the [train] extra
        return main
    return run_program(REQUIRES["train"], program_name("train.py"), load, argv)


def bench(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark command line (``agents.bench.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        return bench_main
    return run_program(REQUIRES["bench"], "escoba-bench", load, argv)


def arena(argv: Sequence[str] | None = None) -> int:
    """Run the web arena's command line (``escoba_arena.web.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        return arena_main
    return run_program(REQUIRES["arena"], "escoba-arena", load, argv)


def play(argv: Sequence[str] | None = None) -> int:
    """Run the terminal game (``escoba_arena.terminal``); return the exit status."""
    def load() -> Callable[..., int]:
        return play_main
    return run_program(REQUIRES["play"], "escoba-play", load, argv)
