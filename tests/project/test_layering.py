"""Layering: the library's layers import only downwards, not even lazily; no package of the library
(``escoba_env``, ``agents``, ``escoba_arena``) imports the repository's ``lab/``, which may import the
library; no module imports another module's ``_private`` name; and no module is over 600 lines.

The layers, lowest first (``LAYERS``): ``escoba_env.rulebook`` (the rules as data and pure functions),
``escoba_env.executors`` (the engines that run them), ``escoba_env.faces`` (the envs and the other ways
to play), the ``escoba_env`` package itself (its public names), ``agents``, ``escoba_arena``. A module
may import its own layer and the layers below, never one above; with ``no_cycles`` below, no circle
either (``tests/project/test_import_cycles.py`` checks modules, this file the layers).

The graph comes from ``tests/project/test_import_cycles.py`` (``import``/``from`` statements anywhere,
relative ones resolved, and module names given to ``importlib.import_module``). For ``escoba_env`` and
``agents``, two more checks: every module's source is scanned for the packages above it (also relative
imports that climb out of ``escoba_env`` and names given as strings to ``__import__`` or ``find_spec``),
and a fresh interpreter that imports every ``escoba_env`` module ends with neither ``agents`` nor
``escoba_arena`` loaded. Plugin lookups through ``importlib.metadata.entry_points`` are not imports of
ours and stay allowed. The library's sources are scanned the same way for the lab.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.project.test_import_cycles import cycles, import_graph

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / "escoba_env"
ABOVE = ("agents", "escoba_arena")
DYNAMIC = {"import_module", "__import__", "find_spec", "spec_from_file_location"}

LAYERS = ("escoba_env.rulebook", "escoba_env.executors", "escoba_env.faces", "escoba_env", "agents",
          "escoba_arena")
"""The library's layers, lowest first: a module imports nothing of a layer after its own."""


LIBRARY = ("escoba_env", "agents", "escoba_arena")
LAB = ("lab",)


def layer_of(module: str) -> int | None:
    """Return the index in ``LAYERS`` of the layer that holds ``module`` (its longest matching prefix),
    or None for a module outside the library (a script)."""
    best = None
    for i, layer in enumerate(LAYERS):
        inside = module == layer or module.startswith(layer + ".")
        if inside and (best is None or len(layer) > len(LAYERS[best])):
            best = i
    return best


def upward_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Return {module: the modules of a higher layer it imports} over an import graph."""
    out = {}
    for module, targets in graph.items():
        here = layer_of(module)
        if here is None:
            continue
        bad = sorted(t for t in targets if (there := layer_of(t)) is not None and there > here)
        if bad:
            out[module] = bad
    return out


def layer_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Return the graph of the layers: an edge where a module of one imports a module of another."""
    out: dict[str, set[str]] = {layer: set() for layer in LAYERS}
    for module, targets in graph.items():
        here = layer_of(module)
        if here is None:
            continue
        out[LAYERS[here]] |= {LAYERS[t] for t in map(layer_of, targets) if t is not None and t != here}
    return out


def _write_tree(root: Path, files: dict[str, str]) -> None:
    """Write a fake library under ``root``: dotted module name (``pkg.__init__`` for a package) -> source."""
    for module, text in files.items():
        path = root.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


CLEAN_TREE = {
    "escoba_env.__init__": "from .faces.env import Env\nfrom .rulebook.rules import Rules\n",
    "escoba_env.rulebook.__init__": "",
    "escoba_env.rulebook.rules": "import numpy\n",
    "escoba_env.rulebook.cards": "from .rules import x\n",
    "escoba_env.executors.__init__": "",
    "escoba_env.executors.engine": "from ..rulebook.cards import y\n",
    "escoba_env.faces.__init__": "",
    "escoba_env.faces.env": "from ..executors import engine\nfrom ..rulebook.rules import Rules\n",
    "agents.__init__": "from escoba_env.faces.env import Env\nimport escoba_env\n",
    "escoba_arena.__init__": "from agents import x\nfrom escoba_env.executors.engine import E\n",
}


@pytest.mark.parametrize(("module", "source", "target"), [
    ("escoba_env.rulebook.cards", "from ..executors.engine import E\n", "escoba_env.executors.engine"),
    ("escoba_env.rulebook.cards", "def f():\n    from escoba_env.faces import env\n", "escoba_env.faces.env"),
    ("escoba_env.rulebook.cards", "import escoba_env\n", "escoba_env"),
    ("escoba_env.executors.engine", "def f():\n    from ..faces.env import Env\n", "escoba_env.faces.env"),
    ("escoba_env.faces.env", "import importlib\nimportlib.import_module('agents')\n", "agents"),
    ("agents", "def f():\n    import escoba_arena\n", "escoba_arena"),
])
def test_the_layer_check_finds_an_import_that_climbs(tmp_path, module, source, target):
    # The checker itself must catch each climb; otherwise the real test proves nothing.
    _write_tree(tmp_path, CLEAN_TREE)
    assert upward_imports(import_graph(tmp_path)) == {}
    assert cycles(layer_graph(import_graph(tmp_path))) == []
    key = module if module in CLEAN_TREE else f"{module}.__init__"
    _write_tree(tmp_path, {key: CLEAN_TREE[key] + source})
    assert target in upward_imports(import_graph(tmp_path))[module]
    assert cycles(layer_graph(import_graph(tmp_path))) != []  # a climb closes a circle of layers


def test_each_layer_imports_only_its_own_and_the_layers_below():
    graph = import_graph()
    for layer in LAYERS[:3]:
        assert any(layer_of(m) == LAYERS.index(layer) for m in graph), layer  # the layer is where it says
    assert upward_imports(graph) == {}


def test_the_layers_form_no_circle():
    layers = layer_graph(import_graph())
    assert "escoba_env.rulebook" in layers["escoba_env.executors"]  # edges are read
    assert cycles(layers) == []


def _forbidden_imports(source: str, above: tuple[str, ...] = ABOVE,
                       package: str | None = "escoba_env") -> list[str]:
    """Return a description of every import of the packages ``above`` (default ``agents``,
    ``escoba_arena``) in ``source``; ``package``: the dotted package the source sits in, to also report
    every relative import that climbs out of its top-level package (None: skip that check)."""
    def _above(name: str) -> bool:
        return name.split(".")[0] in above

    depth = len(package.split(".")) if package else None  # the levels a relative import may climb
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if _above(a.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level and depth is not None and node.level > depth:
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


def _package_of(path: Path) -> str:
    """Return the dotted package a library file sits in."""
    return ".".join(path.relative_to(ROOT).parts[:-1])


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
    assert _forbidden_imports("from ... import agents", package="escoba_env.rulebook")
    good = ["from .rules import Rules", "import numpy", "x = 'agents'", "self.agents = []",
            "from importlib.metadata import entry_points\nentry_points(group='escoba_env.opponents')"]
    for src in good:
        assert not _forbidden_imports(src), src
    assert not _forbidden_imports("from ..rulebook.rules import Rules", package="escoba_env.faces")


def test_escoba_env_sources_import_nothing_above_them():
    assert len(_env_modules()) >= 15  # the package is where it should be
    problems = {str(p.relative_to(ROOT)): bad for p in _env_modules()
                if (bad := _forbidden_imports(p.read_text(encoding="utf-8"), package=_package_of(p)))}
    assert problems == {}


def test_agents_sources_import_nothing_of_the_arena():
    files = sorted((ROOT / "agents").rglob("*.py"))
    assert len(files) >= 40
    problems = {str(p.relative_to(ROOT)): bad for p in files
                if (bad := _forbidden_imports(p.read_text(encoding="utf-8"), ("escoba_arena",),
                                              _package_of(p)))}
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
        assert _forbidden_imports(src, LAB, None), src
    for src in ["from .labels import x", "import labels", "x = 'lab'", "from agents import lab_notes",
                "from ..tournament import cli"]:
        assert not _forbidden_imports(src, LAB, None), src


def test_the_library_never_imports_the_lab():
    assert (ROOT / "lab" / "README.md").is_file()  # the lab is where it should be
    problems = {str(p.relative_to(ROOT)): bad for p in _library_modules()
                if (bad := _forbidden_imports(p.read_text(encoding="utf-8"), LAB, None))}
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
    bad = {"from .solo import _bits": "agents.nets.tablenet",
           "from agents.nets.solo import _SLOT": "agents.nets.tablenet",
           "from ..tournament.report import _clean": "agents.bench.card",
           "def f():\n    from ..tournament.cli import _SIGNALS": "agents.bench.card",
           "from . import solo\nsolo._pile(x)": "agents.nets.tablenet",
           "import agents.nets.solo as s\ns._bits(x)": "agents.nets.tablenet"}
    for src, module in bad.items():
        assert _private_imports(src, module), src
    good = {"from .solo import card_bits": "agents.nets.tablenet",
            "from numpy import _core": "agents.nets.solo",
            "from ray import _private": "agents.tournament.raycluster",
            "from .x import __version__": "agents.y", "self._bits(x)": "agents.nets.solo",
            "from . import solo\nsolo.card_bits(x)": "agents.nets.tablenet"}
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
