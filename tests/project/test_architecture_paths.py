"""The architecture page matches the tree: every path its "where a change goes" table and its layout
block name exists, so a newcomer who follows the page lands on a real folder or module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
NAME_COLUMN = 30
"""Width of the layout block's name column (the names, then the description)."""


def section(text: str, heading: str) -> str:
    """Return the text of the ``## heading`` section of a Markdown page (up to the next ``## ``)."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def table_paths(text: str) -> list[str]:
    """Return every repository path (a backticked name with a ``/``, not a spec or a URL) in the rows of
    the "Where a change goes" table."""
    rows = [line for line in section(text, "Where a change goes").splitlines() if line.startswith("| ")]
    paths = []
    for row in rows:
        for name in re.findall(r"`([^`\s]+)`", row):
            if "/" in name and ":" not in name and not name.startswith("escoba_env/Escoba"):
                paths.append(name)
    return paths


def layout_paths(text: str) -> list[str]:
    """Return the path of every name in the layout block's name column, its folder given by the indent
    (two spaces a level): ``NAME/`` a folder, ``NAME.EXT`` a file, a bare ``NAME`` a module ``NAME.py``."""
    block = section(text, "Layout").split("```")[1]
    folders: list[str] = []
    paths = []
    for line in block.splitlines()[1:]:
        column = line[:NAME_COLUMN].rstrip()
        if not column.strip():
            continue  # a description carried on
        assert len(line) <= NAME_COLUMN or line[NAME_COLUMN - 1] == " ", f"name column overflows: {line!r}"
        depth = (len(column) - len(column.lstrip())) // 2
        folders = folders[:depth]
        for name in column.strip().split(", "):
            parent = "/".join(folders)
            if name.endswith("/"):
                paths.append(f"{parent}/{name}" if parent else name)
            elif "." in name:
                paths.append(f"{parent}/{name}" if parent else name)
            else:
                paths.append(f"{parent}/{name}.py")
        last = column.strip().split(", ")[-1]
        if last.endswith("/"):
            folders.append(last.rstrip("/"))
    return paths


def test_the_readers_find_what_they_claim_to():
    text = """## Where a change goes

| you add | it goes in | checked |
|---|---|---|
| a thing | `agents/heuristic/` and `escoba_env/faces/cli.py`, spec `python:lab.M:F` | `tests/agents/` |

## Layout

```
escoba_env/                   the library
  rulebook/                   rules
    rules, cards              the options
                              and more
  __init__.py                 its names
train.py, evaluate.py         programs
```
"""
    assert table_paths(text) == ["agents/heuristic/", "escoba_env/faces/cli.py", "tests/agents/"]
    assert layout_paths(text) == ["escoba_env/", "escoba_env/rulebook/", "escoba_env/rulebook/rules.py",
                                  "escoba_env/rulebook/cards.py", "escoba_env/__init__.py", "train.py",
                                  "evaluate.py"]


def test_the_page_names_the_homes_of_the_six_changes():
    table = section(PAGE.read_text(encoding="utf-8"), "Where a change goes")
    for change in ("an agent", "a rule variant", "a face", "an executor", "a training algorithm",
                   "a benchmark table"):
        assert f"\n| {change}" in table, change


@pytest.mark.parametrize("reader", [table_paths, layout_paths])
def test_every_path_the_page_names_exists(reader):
    paths = reader(PAGE.read_text(encoding="utf-8"))
    assert len(paths) >= 20
    missing = [p for p in paths if not (ROOT / p).exists() or p.endswith("/") and not (ROOT / p).is_dir()]
    assert missing == []
