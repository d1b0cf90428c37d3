"""The installed commands ``escoba-evaluate`` and ``escoba-train`` (and ``python -m agents.tournament``,
``python -m agents.training``, ``evaluate.py``, ``train.py``): each imports its program only when run,
so a missing extra (torch for training) ends with one line naming it, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from .extras import missing_extra, program_name


def _run(prog: str, load: Callable[[], Callable[..., int]], argv: Sequence[str] | None) -> int:
    """Import the program with ``load()`` and run it on ``argv``; a missing extra is one line, status 1."""
    try:
        main = load()
        return int(main(None if argv is None else list(argv)) or 0)
    except ImportError as exc:
        line = missing_extra(exc)
        if line is None:
            raise
        print(f"{prog}: error: {line}", file=sys.stderr)
        return 1


def evaluate(argv: Sequence[str] | None = None) -> int:
    """Run the tournament command line (``agents.tournament.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        from .tournament.cli import main
        return main
    return _run(program_name("evaluate.py"), load, argv)


def train(argv: Sequence[str] | None = None) -> int:
    """Run the training command line (``agents.training.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        from .training.cli import main
        return main
    return _run(program_name("train.py"), load, argv)


def bench(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark command line (``agents.bench.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        from .bench.cli import main
        return main
    return _run("escoba-bench", load, argv)
