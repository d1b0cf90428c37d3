"""Short functions and imports at the top (issue 63): no function of the library (``escoba_env``,
``agents``, ``escoba_arena``) is over ``MAX_LINES`` lines, and an import inside a function is there only
for an optional dependency, with the extra that brings it named in a comment on its line.

The optional dependencies come from ``pyproject.toml``'s ``[project.optional-dependencies]``: each
distribution's import name (``IMPORT_NAMES`` where it differs from the distribution's), and the extras
that bring it, ``escoba-env[...]`` self-references followed (the umbrella extras ``UMBRELLAS`` are not
accepted as a name: they say nothing about why). A lazy import of one of the project's own modules is
an optional import too when that module, at its top level (its packages' ``__init__`` and the modules
it imports there, transitively), imports an optional dependency: ``from ..nets.loader import ...``
inside a function keeps the registry usable without torch, and its comment names ``[agents]``. A lazy
import defers something: one whose optional dependencies its module already imports at its top is
moved there. Any other import inside a function (the standard library, NumPy, a torch-free module of
ours) belongs at the top of its module.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from tests.project.test_import_cycles import imports_of, module_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: tomli is pytest's own dependency there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("escoba_env", "agents", "escoba_arena")
MAX_LINES = 80
UMBRELLAS = frozenset({"all", "dev"})
"""Extras that gather the others: naming one says nothing about which dependency a lazy import needs."""

IMPORT_NAMES = {"pillow": ("PIL",), "open-spiel": ("open_spiel", "pyspiel"), "dm-tree": ("tree",)}
"""Distribution name -> its import names, where they differ from the name with ``-`` read as ``_``."""

SELF = "escoba-env"
EXTRA_COMMENT = re.compile(r"\[([A-Za-z0-9_-]+)\]")


def _requirement_name(requirement: str) -> tuple[str, list[str]]:
    """Return a requirement's distribution name and the extras it names (``pkg[a,b]>=1`` -> pkg, [a, b])."""
    m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement)
    assert m, requirement
    return m.group(1), [e.strip() for e in (m.group(2) or "").split(",") if e.strip()]


def import_names(distribution: str) -> tuple[str, ...]:
    """Return the top-level import names of a distribution (``IMPORT_NAMES``, else its name with ``_``)."""
    return IMPORT_NAMES.get(distribution.lower(), (distribution.replace("-", "_"),))


def extras_of(pyproject: dict) -> dict[str, set[str]]:
    """Return {extra: the import names it brings}, its ``escoba-env[...]`` references followed."""
    declared = pyproject["project"]["optional-dependencies"]
    direct: dict[str, set[str]] = {}
    refs: dict[str, list[str]] = {}
    for extra, requirements in declared.items():
        direct[extra], refs[extra] = set(), []
        for requirement in requirements:
            name, named = _requirement_name(requirement)
            if name == SELF:
                refs[extra] += named
            else:
                direct[extra].update(import_names(name))

    def closure(extra: str, seen: frozenset[str] = frozenset()) -> set[str]:
        out = set(direct[extra])
        for ref in refs[extra]:
            if ref not in seen:
                out |= closure(ref, seen | {extra})
        return out

    return {extra: closure(extra) for extra in declared}


def load_extras(root: Path = ROOT) -> dict[str, set[str]]:
    """Return ``extras_of`` the project's ``pyproject.toml``."""
    return extras_of(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")))


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int, int]]:
    """Return (name, first line, length in lines) of every function of ``source`` over ``limit`` lines,
    its decorators not counted."""
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > limit]


def inline_imports(source: str) -> list[ast.Import | ast.ImportFrom]:
    """Return every ``import`` statement of ``source`` that sits inside a function, in line order."""
    found = {id(sub): sub for node in ast.walk(ast.parse(source))
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
             for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))}
    return sorted(found.values(), key=lambda n: n.lineno)


def _is_type_checking(node: ast.stmt) -> bool:
    """Return whether ``node`` is an ``if TYPE_CHECKING:`` block (nothing in it runs)."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def top_level_imports(source: str) -> list[ast.Import | ast.ImportFrom]:
    """Return the import statements that run when ``source`` is imported: its module body, through
    ``if``/``try``/``with`` blocks, not inside functions or ``if TYPE_CHECKING:``."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo = list(ast.parse(source).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.ClassDef)) and not _is_type_checking(node):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo += getattr(node, field, [])
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body
    return out


def _optional_names(node: ast.Import | ast.ImportFrom, optional: set[str]) -> set[str]:
    """Return the optional import names that an absolute import statement imports directly."""
    if isinstance(node, ast.ImportFrom):
        return {node.module.split(".")[0]} & optional if node.level == 0 and node.module else set()
    return {a.name.split(".")[0] for a in node.names} & optional


def _parents(module: str) -> list[str]:
    """Return ``module`` and the packages above it (``a.b.c`` -> a.b.c, a.b, a): importing it runs each."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


class Project:
    """The library's modules, read once: what each imports at its top level, and which optional
    dependencies importing it pulls in."""

    def __init__(self, root: Path = ROOT, extras: dict[str, set[str]] | None = None):
        self.root = root
        self.extras = load_extras(root) if extras is None else extras
        self.optional = set().union(*self.extras.values())
        self.files = module_files(root)
        self.known = set(self.files)
        self._needs: dict[str, set[str]] = {}

    def resolve(self, module: str, nodes: list[ast.Import | ast.ImportFrom]) -> set[str]:
        """Return the project modules that ``nodes`` (statements of ``module``) import."""
        source = ast.unparse(ast.Module(body=list(nodes), type_ignores=[]))
        return imports_of(module, source, self.known, self.files[module].name == "__init__.py")

    def needs(self, module: str) -> set[str]:
        """Return the optional import names that importing ``module`` pulls in, transitively."""
        if module not in self._needs:
            self._needs[module] = set()  # a module being read needs nothing more of itself
            out: set[str] = set()
            for mod in _parents(module):
                if mod in self.files and mod != module:
                    out |= self.needs(mod)
            nodes = top_level_imports(self.files[module].read_text(encoding="utf-8"))
            for node in nodes:
                out |= _optional_names(node, self.optional)
            for target in self.resolve(module, nodes):
                out |= self.needs(target)
            self._needs[module] = out
        return self._needs[module]

    def accepted_extras(self, names: set[str]) -> set[str]:
        """Return the extras (umbrellas left out) that bring one of the import names ``names``."""
        return {extra for extra, brought in self.extras.items() if brought & names and extra not in UMBRELLAS}

    def bad_inline_import(self, module: str, node: ast.Import | ast.ImportFrom, lines: list[str]) -> str:
        """Return why the inline import ``node`` of ``module`` is not allowed, or '' when it is."""
        needed = _optional_names(node, self.optional)
        for target in self.resolve(module, [node]):
            needed |= self.needs(target)
        if not needed:
            return "imports no optional dependency: move it to the top of the module"
        if not needed - self.needs(module):
            return f"its module imports {', '.join(sorted(needed))} at its top already: move it there"
        statement = lines[node.lineno - 1:node.end_lineno]
        named = {m for line in statement if "#" in line for m in EXTRA_COMMENT.findall(line.split("#", 1)[1])}
        accepted = self.accepted_extras(needed)
        if not named & accepted:
            return (f"needs {', '.join(sorted(needed))}: name its extra in a comment "
                    f"({', '.join(sorted(accepted))})")
        return ""

    def offenders(self, packages: tuple[str, ...] = LIBRARY) -> list[str]:
        """Return one line per function over ``MAX_LINES`` and per inline import not allowed."""
        out = []
        for module, path in sorted(self.files.items()):
            if not module.startswith(packages):
                continue
            source = path.read_text(encoding="utf-8")
            where = path.relative_to(self.root).as_posix()
            out += [f"{where}:{line} {name} is {n} lines" for name, line, n in long_functions(source)]
            lines = source.splitlines()
            for node in inline_imports(source):
                why = self.bad_inline_import(module, node, lines)
                if why:
                    out.append(f"{where}:{node.lineno} `{lines[node.lineno - 1].strip()}` {why}")
        return out


def test_the_extras_are_read_from_pyproject():
    extras = load_extras()
    assert {"torch", "tqdm", "matplotlib", "openskill"} <= extras["agents"]
    assert "torch" in extras["train"] and "tensorboard" in extras["train"]
    assert {"PIL"} == extras["render"] and {"open_spiel", "pyspiel"} == extras["openspiel"]
    assert "stable_baselines3" in extras["examples"] and "escoba_env" not in set().union(*extras.values())
    assert not {"numpy", "gymnasium", "pettingzoo"} & set().union(*extras.values())


P = "agents"  # the planted trees' package (one the project's scan reads), kept out of path citations


def _at(path: str, line: int) -> str:
    """Return how an offender's place is written (the file and the line, joined by a colon)."""
    return f"{path}:{line}"


def _plant(tmp_path: Path, files: dict[str, str]) -> Project:
    """Return a ``Project`` over a small tree of ``files`` under ``tmp_path`` with a made-up pyproject."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return Project(tmp_path, extras={"agents": {"torch", "tqdm"}, "render": {"PIL"}, "all": {"torch", "PIL"}})


def test_the_checker_catches_a_long_function_and_a_needless_inline_import(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    project = _plant(tmp_path, {
        f"{P}/__init__.py": "",
        f"{P}/big.py": f"def big():\n{body}    return 0\n\ndef fine():\n{body[:-12]}\n",
        f"{P}/lazy.py": ("def f():\n    import json\n    from .plain import g\n"
                           "    import torch  # the [agents] extra\n"),
        f"{P}/plain.py": "import numpy\n\ndef g():\n    pass\n",
    })
    found = project.offenders(("agents",))
    assert found[0].split(" ", 1) == [_at(f"{P}/big.py", 1), f"big is {MAX_LINES + 2} lines"]
    assert [line.split(" `")[0] for line in found[1:]] == [_at(f"{P}/lazy.py", 2), _at(f"{P}/lazy.py", 3)]
    assert all("move it to the top" in line for line in found[1:])


def test_the_checker_wants_the_right_extra_named(tmp_path):
    project = _plant(tmp_path, {
        f"{P}/__init__.py": "",
        f"{P}/nets.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import PIL\n\n"
                           "import torch\n"),
        f"{P}/gate.py": "from . import nets\n",
        f"{P}/user.py": ("def a():\n    import torch\n"
                           "def b():\n    import torch  # the [all] extra\n"
                           "def c():\n    import torch  # the [render] extra\n"
                           "def d():\n    from .gate import nets  # the [agents] extra\n"
                           "def e():\n    from PIL import Image  # the [render] extra\n"
                           "def f():\n    from torch.utils import (  # the [agents] extra\n        data)\n"),
        f"{P}/eager.py": "import torch\n\ndef g():\n    from .gate import nets  # the [agents] extra\n",
    })
    assert project.needs("agents.gate") == {"torch"}
    assert [line.split(" `")[0] for line in project.offenders(("agents",))] == [
        _at(f"{P}/eager.py", 4), *(_at(f"{P}/user.py", n) for n in (2, 4, 6))]


def _current_offenders() -> list[str]:
    """Return the library's offenders (collected once per test run)."""
    return Project().offenders()


def test_no_long_function_and_no_needless_inline_import_in_the_library():
    offenders = _current_offenders()
    assert not offenders, "\n".join(["", *offenders])
