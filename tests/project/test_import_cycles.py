"""No import cycle among the project's modules, lazy imports (inside functions) included.

The graph is read from the sources with ``ast``: a node is a module of ``agents``, ``escoba_env`` or
``escoba_arena``, or a top-level script; an edge is any ``import``/``from ... import`` statement
anywhere in a module (module level or inside a function), or a module name given as a string to
``importlib.import_module``. ``from package import name`` points at ``package.name`` when that is a
module, else at the package. A cycle is a strongly connected component of two or more modules, or a
module importing itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agents", "escoba_env", "escoba_arena")
SCRIPT_DIRS = ("", "scripts", "benchmarks", "examples")


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Return {dotted module name: file} of the packages and the top-level scripts under ``root``."""
    mods: dict[str, Path] = {}
    for pkg in PACKAGES:
        for p in sorted((root / pkg).rglob("*.py")):
            parts = p.relative_to(root).with_suffix("").parts
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    for d in SCRIPT_DIRS:
        for p in sorted((root / d).glob("*.py")):
            if d or p.name not in ("mkdocs_hooks.py",):
                mods[f"<{p.relative_to(root)}>"] = p
    return mods


def imports_of(name: str, source: str, known: set[str], is_package: bool = False) -> set[str]:
    """Return the known modules that the module ``name`` (source ``source``) imports anywhere."""
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:  # a name inside a module: the module itself
            target = target.rpartition(".")[0]
        if target:
            found.add(target)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here.split(".")[: len(here.split(".")) - (node.level - 1)] if here else []
                base = ".".join([*up, *([base] if base else [])])
            for a in node.names:
                full = f"{base}.{a.name}"
                add(full if full in known else base)
        elif isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                target = node.args[0].value
                if isinstance(target, str) and not target.startswith("."):
                    add(target)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Return {module: modules it imports} over ``module_files(root)``."""
    files = module_files(root)
    known = set(files)
    return {m: imports_of(m, p.read_text(encoding="utf-8"), known, p.name == "__init__.py")
            for m, p in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the import cycles of ``graph``: its strongly connected components of 2+ modules and the
    modules that import themselves (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in graph.get(v, ()):
                    out.append(sorted(comp))
    return sorted(out)


def test_the_graph_sees_every_kind_of_import():
    known = {"p", "p.a", "p.b", "p.c", "p.sub", "p.sub.d", "q"}
    src = ("import q\nfrom . import a\nfrom .b import thing\n"
           "def f():\n    from .sub.d import x\n"
           "def g():\n    import importlib\n    importlib.import_module('p.c')\n")
    assert imports_of("p.x", src, known) == {"q", "p.a", "p.b", "p.sub.d", "p.c"}
    assert imports_of("p.sub", "from .. import a\nfrom . import d", known, is_package=True) == {"p.a",
                                                                                               "p.sub.d"}


def test_the_cycle_finder_finds_direct_long_and_lazy_cycles():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    known = {"x", "y"}
    lazy = {"x": imports_of("x", "def f():\n    import y\n", known),
            "y": imports_of("y", "from x import thing\n", known)}
    assert cycles(lazy) == [["x", "y"]]


def test_the_project_has_no_import_cycle():
    graph = import_graph()
    assert {"agents.spec.registry", "agents.nets.neural", "escoba_env.executors.engine",
            "escoba_arena.web.app", "<train.py>"} <= set(graph)
    assert "agents.base" in graph["agents.spec.registry"]  # edges are read
    assert cycles(graph) == []
