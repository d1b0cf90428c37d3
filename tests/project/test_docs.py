"""The Python examples in docs/*.md run, and print what the page says they print."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCKS = [(p, i, b) for p in sorted(DOCS.glob("*.md"))
          for i, b in enumerate(re.findall(r"```python\n(.*?)```", p.read_text(encoding="utf-8"), re.S))]


def test_the_docs_have_python_examples():
    assert {p.name for p, _, _ in BLOCKS} >= {"observation.md", "rules.md"}


@pytest.mark.parametrize(("path", "index", "code"), BLOCKS, ids=[f"{p.stem}-{i}" for p, i, _ in BLOCKS])
def test_doc_example_runs_and_prints_its_commented_output(path, index, code):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"{path.name} block {index}", "exec"), {"__name__": "__doc_example__"})
    # Trailing "# text" lines after the last statement are the output the page promises.
    expected = []
    for line in reversed(code.rstrip().splitlines()):
        if not line.startswith("# "):
            break
        expected.insert(0, line[2:])
    if expected:
        assert [s.rstrip() for s in out.getvalue().splitlines()] == expected
