"""The installed commands ``escoba-evaluate`` and ``escoba-train`` (and ``python -m agents.tournament``,
``python -m agents.training``, ``evaluate.py``, ``train.py``): each imports its program only when run,
so a missing extra (torch for training) ends with one line naming it, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

EXTRAS = {"torch": "agents", "tqdm": "agents", "matplotlib": "agents", "openskill": "agents",
          "tensorboard": "train", "ray": "ray", "PIL": "render", "pyspiel": "openspiel",
          "starlette": "web", "uvicorn": "web", "httpx": "web", "playwright": "webtest",
          "stable_baselines3": "examples", "sb3_contrib": "examples"}
"""Optional libraries -> the extra of ``escoba-env`` that installs them (``pyproject.toml``)."""


def missing_extra(exc: BaseException | None) -> str | None:
    """Return the one line that names the extra a missing module comes with, or None unless ``exc`` (or
    the error that caused it) is the ImportError of an optional library:
    ``torch is missing; it comes with the [agents] extra: pip install "escoba-env[agents]"``."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ImportError):
            top = (exc.name or "").split(".")[0]
            extra = EXTRAS.get(top)
            if extra is not None:
                return (f'{top} is missing; it comes with the [{extra}] extra: '
                        f'pip install "escoba-env[{extra}]"')
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


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


def program_name(default: str) -> str:
    """Return the name the running program goes by: its console script's (``escoba-...``) or ``default``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name.startswith("escoba-") else default


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
