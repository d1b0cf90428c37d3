"""Layering: ``escoba_env`` imports nothing of ``agents`` or ``escoba_arena``, not even lazily; no
package of the library (``escoba_env``, ``agents``, ``escoba_arena``) imports the repository's
``lab/``, which may import the library; no module imports another module's ``_private`` name; and
no module is over 600 lines.

For ``escoba_env``, two checks: every module's source is scanned (``import``/``from`` statements
anywhere, relative imports that climb out of the package, and module names given as strings to
``importlib`` or ``__import__``), and a fresh interpreter that imports every ``escoba_env`` module
ends with neither package loaded. Plugin lookups through ``importlib.metadata.entry_points`` are not
imports of ours and stay allowed. The library's sources are scanned the same way for the lab.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / "escoba_env"
ABOVE = ("agents", "escoba_arena")
DYNAMIC = {"import_module", "__import__", "find_spec", "spec_from_file_location"}


LIBRARY = ("escoba_env", "agents", "escoba_arena")
LAB = ("lab",)


def _forbidden_imports(source: str, above: tuple[str, ...] = ABOVE, one_package: bool = True) -> list[str]:
    """Return a description of every import of the packages ``above`` (default ``agents``,
    ``escoba_arena``) in ``source``; ``one_package``: also every relative import that climbs out of a
    one-level package (``escoba_env``)."""
    def _above(name: str) -> bool:
        return name.split(".")[0] in above

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if _above(a.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level > 1 and one_package:
                found.append(f"line {node.lineno}: relative import out of the package (level {node.level})")
            elif node.level == 0 and node.module and _above(node.module):
                found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in DYNAMIC:
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _above(arg.value):
                        found.append(f"line {node.lineno}: {name}({arg.value!r})")
    return found


def _env_modules() -> list[Path]:
    return sorted(ENV.rglob("*.py"))


def test_the_scan_finds_every_kind_of_import():
    # The checker itself must catch each form it claims to; otherwise the real test proves nothing.
    bad = ["import agents", "import agents.registry as r", "from agents.base import Agent",
           "from escoba_arena import terminal", "from .. import agents",
           "def f():\n    from agents import make_agent", "importlib.import_module('agents.neural')",
           "import_module('escoba_arena.terminal')", "__import__('agents')",
           "importlib.util.find_spec('agents')"]
    for src in bad:
        assert _forbidden_imports(src), src
    good = ["from .rules import Rules", "import numpy", "x = 'agents'", "self.agents = []",
            "from importlib.metadata import entry_points\nentry_points(group='escoba_env.opponents')"]
    for src in good:
        assert not _forbidden_imports(src), src


def test_escoba_env_sources_import_nothing_above_them():
    assert len(_env_modules()) >= 15  # the package is where it should be
    problems = {str(p.relative_to(ROOT)): bad for p in _env_modules()
                if (bad := _forbidden_imports(p.read_text(encoding="utf-8")))}
    assert problems == {}


@pytest.mark.parametrize("above", ABOVE)
def test_escoba_env_sources_never_name_the_packages_above(above):
    # Belt and braces for strings built elsewhere: no module name of theirs appears as a string.
    for p in _env_modules():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value != above and not node.value.startswith(above + "."), (p, node.value)


def test_importing_every_escoba_env_module_loads_neither_agents_nor_arena():
    names = ["escoba_env." + ".".join(p.relative_to(ENV).with_suffix("").parts)
             for p in _env_modules() if p.name != "__init__.py"]
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module(name)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {ABOVE!r}))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True, capture_output=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def _library_modules() -> list[Path]:
    return sorted(p for pkg in LIBRARY for p in (ROOT / pkg).rglob("*.py"))


def test_the_lab_scan_finds_every_kind_of_import():
    bad = ["import lab", "import lab.guided as g", "from lab.guided import GuidedSearchAgent",
           "def f():\n    from lab import playout", "importlib.import_module('lab.policy_oracle')"]
    for src in bad:
        assert _forbidden_imports(src, LAB, one_package=False), src
    for src in ["from .labels import x", "import labels", "x = 'lab'", "from agents import lab_notes",
                "from ..tournament import cli"]:
        assert not _forbidden_imports(src, LAB, one_package=False), src


def test_the_library_never_imports_the_lab():
    assert (ROOT / "lab" / "README.md").is_file()  # the lab is where it should be
    problems = {str(p.relative_to(ROOT)): bad for p in _library_modules()
                if (bad := _forbidden_imports(p.read_text(encoding="utf-8"), LAB, one_package=False))}
    assert problems == {}


def _module_name(path: Path) -> str:
    """Return the dotted module name of a library file (a package's ``__init__`` is the package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Return every ``_private`` name ``source`` (the module ``module``) takes from another module of
    the library: ``from X import _name`` and ``X._name`` where ``X`` is a library module it imported."""
    package = module if is_package else module.rpartition(".")[0]
    found, aliases = [], {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] not in LIBRARY:
                continue
            for a in node.names:
                if _is_private(a.name) and f"{target}.{a.name}" != module:
                    found.append(f"line {node.lineno}: from {target} import {a.name}")
                aliases[a.asname or a.name] = f"{target}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in LIBRARY:
                    aliases[a.asname or a.name.split(".")[0]] = a.asname and a.name or a.name.split(".")[0]
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and _is_private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in aliases):
            found.append(f"line {node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_the_private_name_scan_finds_every_kind_of_use():
    bad = {"from .solo import _bits": "agents.tablenet", "from agents.solo import _SLOT": "agents.tablenet",
           "from ..tournament.report import _clean": "agents.bench.card",
           "def f():\n    from ..tournament.cli import _SIGNALS": "agents.bench.card",
           "from . import solo\nsolo._pile(x)": "agents.tablenet",
           "import agents.solo as s\ns._bits(x)": "agents.tablenet"}
    for src, module in bad.items():
        assert _private_imports(src, module), src
    good = {"from .solo import card_bits": "agents.tablenet", "from numpy import _core": "agents.solo",
            "from ray import _private": "agents.raycluster", "from .x import __version__": "agents.y",
            "self._bits(x)": "agents.solo", "from . import solo\nsolo.card_bits(x)": "agents.tablenet"}
    for src, module in good.items():
        assert not _private_imports(src, module), src


def test_no_module_imports_another_modules_private_names():
    assert len(_library_modules()) >= 60
    problems = {}
    for p in _library_modules():
        bad = _private_imports(p.read_text(encoding="utf-8"), _module_name(p), p.name == "__init__.py")
        if bad:
            problems[str(p.relative_to(ROOT))] = bad
    assert problems == {}


MAX_LINES = 600
"""No module of the library is longer: a reader finds a thing in a module named for it."""


@pytest.mark.parametrize("package", LIBRARY)
def test_no_library_module_is_over_600_lines(package):
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / package).rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
