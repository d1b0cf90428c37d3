"""The installed commands (``escoba-evaluate``, ``escoba-train``, ``escoba-bench``, ``escoba-arena``,
``escoba-play``; also ``python -m agents.tournament``, ``python -m agents.training``, ``evaluate.py``,
``train.py``).

Each command checks, before it starts, that the libraries it needs are installed (``REQUIRES``;
found without importing them) and otherwise ends with one line naming the missing library and the
extra that installs it, status 1, having written nothing. ``--help`` (``-h``) works without any
extra: a program whose module imports a missing library is loaded for its help with that library
stubbed (the stubs are never run; the process ends after the help). Programs are imported only when run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Sequence

from .extras import missing_extra, program_name

_TOOLS = (("tqdm", "agents"), ("openskill", "agents"), ("matplotlib", "agents"))
REQUIRES: dict[str, tuple[tuple[str, str], ...]] = {
    "evaluate": _TOOLS,  # torch only for neural agents: building one names the extra then
    "train": (("torch", "agents"), *_TOOLS, ("tensorboard", "train")),
    "bench": _TOOLS,
    "arena": (("starlette", "web"), ("uvicorn", "web"), ("httpx", "web"), ("websockets", "web")),
    "play": (),  # the core alone: the networks' torch is optional (a fallback bot plays)
}
"""Command -> the (top-level module, extra that installs it) pairs it needs before it starts."""


def missing_modules(modules: Sequence[str]) -> list[str]:
    """Return the modules of ``modules`` that cannot be found (nothing is imported)."""
    out = []
    for m in modules:
        try:
            if importlib.util.find_spec(m) is None:
                out.append(m)
        except (ImportError, ValueError):
            out.append(m)
    return out


class _StubMeta(type):
    """A class that stands for anything: attributes, calls, items and operators give itself back."""

    def __getattr__(cls, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return cls

    def __call__(cls, *args, **kwargs):
        return cls

    def __getitem__(cls, key):
        return cls

    def __or__(cls, other):
        return cls

    __ror__ = __mul__ = __rmul__ = __add__ = __radd__ = __truediv__ = __or__


class _Stub(metaclass=_StubMeta):
    """What a stubbed module's names are while a program is loaded for its ``--help``."""


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the given missing top-level modules (and their submodules) as stubs."""

    def __init__(self, names: Sequence[str]):
        self.names = set(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda name: _Stub  # type: ignore[method-assign]
        return module

    def exec_module(self, module) -> None:
        """Run nothing: a stub has no code."""


def _wants_help(argv: Sequence[str] | None) -> bool:
    args = sys.argv[1:] if argv is None else list(argv)
    return any(a in ("-h", "--help") for a in args)


def _run(command: str, prog: str, load: Callable[[], Callable[..., int]], argv: Sequence[str] | None) -> int:
    """Check the extra of ``command``, import the program with ``load()`` and run it on ``argv``.

    A missing extra is one line on stderr and status 1, before anything runs (``--help`` still works).
    """
    extra_of = dict(REQUIRES[command])
    missing = missing_modules(list(extra_of))
    if missing and _wants_help(argv):
        sys.meta_path.insert(0, _StubFinder(missing))
    elif missing:
        extra = extra_of[missing[0]]
        print(f'{prog}: error: {missing[0]} is missing; it comes with the [{extra}] extra: '
              f'pip install "escoba-env[{extra}]"', file=sys.stderr)
        return 1
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
    return _run("evaluate", program_name("evaluate.py"), load, argv)


def train(argv: Sequence[str] | None = None) -> int:
    """Run the training command line (``agents.training.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        from .training.cli import main
        return main
    return _run("train", program_name("train.py"), load, argv)


def bench(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark command line (``agents.bench.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        from .bench.cli import main
        return main
    return _run("bench", "escoba-bench", load, argv)


def arena(argv: Sequence[str] | None = None) -> int:
    """Run the web arena's command line (``escoba_arena.web.cli``); return the exit status."""
    def load() -> Callable[..., int]:
        from escoba_arena.web.cli import main
        return main
    return _run("arena", "escoba-arena", load, argv)


def play(argv: Sequence[str] | None = None) -> int:
    """Run the terminal game (``escoba_arena.terminal``); return the exit status."""
    def load() -> Callable[..., int]:
        from escoba_arena.terminal import main
        return main
    return _run("play", "escoba-play", load, argv)
