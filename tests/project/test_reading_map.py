"""docs/training.md's reading map of one PPO update names exact line ranges: each is the whole function."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"`((?:agents|escoba_env)/[\w/]+\.py)` lines (\d+)-(\d+) \(`([\w.]+)`\)")


def span(path: Path, dotted: str) -> tuple[int, int] | None:
    """Return (first line with decorators, last line) of the function or class ``dotted`` in ``path``."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    node = None
    for part in dotted.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno


def test_every_range_of_the_reading_map_is_exactly_its_function():
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    section = text.split("## Reading one update", 1)[1].split("\n## ", 1)[0]
    rows = ROW.findall(section)
    assert len(rows) >= 8
    assert {"agents/training/ppo.py", "agents/training/trainer.py"} <= {r[0] for r in rows}
    wrong = {name: (f"{path} {a}-{b}", span(ROOT / path, name)) for path, a, b, name in rows
             if span(ROOT / path, name) != (int(a), int(b))}
    assert wrong == {}


def test_the_span_reader_sees_decorators_and_methods(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import x\n\n\n@dec\nclass A:\n    def f(self):\n        return 1\n\n\ndef g():\n    pass\n")
    assert span(f, "A") == (4, 7) and span(f, "A.f") == (6, 7) and span(f, "g") == (10, 11)
    assert span(f, "h") is None
