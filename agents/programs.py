"""How every installed command starts: its extras checked first, its help without them.

Each command (``escoba-evaluate``, ``escoba-train``, ``escoba-bench``: ``escoba_arena.commands``; ``python
-m agents.tournament``, ``python -m agents.training``) starts through ``run_program``: it checks, before
the program is imported, that the libraries it needs are installed (``REQUIRES``; found without
importing them) and otherwise ends with one line naming the missing library and the extra that
installs it (``missing_extra``), status 1, having written nothing. ``--help`` (``-h``) works without
any extra: a program whose module imports a missing library is loaded for its help with that library
stubbed (the stubs are never run; the process ends after the help).

A leaf module (standard library only) that imports no program, so the programs import it (for
``missing_extra`` and ``program_name``) and the commands import them, with no circle.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
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


def program_name(default: str) -> str:
    """Return the name the running program goes by: its console script's (``escoba-...``) or ``default``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name.startswith("escoba-") else default


_TOOLS = (("tqdm", "agents"), ("openskill", "agents"), ("matplotlib", "agents"))
REQUIRES: dict[str, tuple[tuple[str, str], ...]] = {
    "evaluate": _TOOLS,  # torch only for neural agents: building one names the extra then
    "train": (("torch", "agents"), *_TOOLS, ("tensorboard", "train")),
    "bench": _TOOLS,
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


def run_program(requires: Sequence[tuple[str, str]], prog: str, load: Callable[[], Callable[..., int]],
                argv: Sequence[str] | None) -> int:
    """Check the (module, extra) pairs ``requires``, import the program with ``load()``, run it on ``argv``;
    return its exit status.

    A missing extra is one line on stderr and status 1, before anything runs (``--help`` still works).
    """
    extra_of = dict(requires)
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
