"""Layering: ``escoba_env`` imports nothing of ``agents`` or ``escoba_arena``, not even lazily.

Two checks: every module's source is scanned (``import``/``from`` statements anywhere, relative
imports that climb out of the package, and module names given as strings to ``importlib`` or
``__import__``), and a fresh interpreter that imports every ``escoba_env`` module ends with neither
package loaded. Plugin lookups through ``importlib.metadata.entry_points`` are not imports of ours
and stay allowed.
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


def _above(name: str) -> bool:
    """Return True when the dotted module ``name`` belongs to a package above ``escoba_env``."""
    return name.split(".")[0] in ABOVE


def _forbidden_imports(source: str) -> list[str]:
    """Return a description of every import of ``agents``/``escoba_arena`` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if _above(a.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level > 1:
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
