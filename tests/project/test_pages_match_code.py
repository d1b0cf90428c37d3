"""Pages that show what the code does are what it does: docs/llm.md's prompt is what the text face
prints and its table of answer forms is the parser's tested one, docs/agents.md's worked example runs
as a user runs it, and docs/rooms.md's list of probes names tests that exist.

Moved here from ``tests/llm/test_llm_frontends.py``, ``tests/llm/test_text_face.py``,
``tests/bench/test_bench_agent_code.py`` and ``tests/frontends/test_arena_probes.py``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from escoba_env.faces import text
from escoba_env.faces.text import main as text_main
from tests.llm.test_text_face import ACCEPTED, MOVES
from tests.project.doc_support import ROOT


def test_the_docs_prompt_is_what_the_command_prints():
    page = (ROOT / "docs/llm.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- prompt: python -m escoba_env\.faces\.text (.*?) -->\n```text\n(.*?)\n```", page,
                  re.S)
    assert m, "docs/llm.md lost its prompt block"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        text_main(m.group(1).split())
    assert buf.getvalue().rstrip("\n") == m.group(2)


def test_the_docs_table_of_answer_forms_is_the_tested_one():
    """Every example the docs' table gives is a row of ACCEPTED, read as the form the table names."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/llm.md").read_text(encoding="utf-8")
    table = page.split("<!-- answer forms -->")[1].split("\n\n")[0]
    rows = [r for r in table.splitlines() if r.startswith("| `")]
    assert len(rows) >= len(text.ANSWER_FORMS) + 1
    tested = {(a.replace("\n", " ⏎ "), f) for a, _, f in ACCEPTED}
    for row in rows:
        form = row.split("|")[1].strip().strip("`")
        examples = [e.strip().strip("`") for e in row.split("|")[2].split("; ")]
        assert form in text.ANSWER_FORMS + ("refused",), row
        for e in examples:
            if form == "refused":
                with pytest.raises(text.IllegalAnswer):
                    text.parse_answer(e.replace(" ⏎ ", "\n"), MOVES)
            else:
                assert (e, form) in tested, e


def test_the_worked_example_of_the_docs_runs_from_its_folder(tmp_path):
    """docs/agents.md's example, as a user runs it: the module sits in the current folder, which is
    on no PYTHONPATH (the console script's own folder is sys.path[0])."""
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    part = text[text.index("## Your own agent"):]
    code = re.search(r"```python\n(.*?)```", part, re.S).group(1)
    command = re.search(r"```bash\n(escoba-evaluate [^\n]*)\n", part).group(1).split()
    (tmp_path / "myagent.py").write_text(code)
    script = shutil.which("escoba-evaluate", path=os.path.dirname(sys.executable))
    argv = [script, *command[1:]] if script else [sys.executable, str(ROOT / "evaluate.py"), *command[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's code, not the agent's folder
    r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "python:myagent:make" in r.stdout
    result = json.loads((tmp_path / "results" / "myagent.json").read_text())
    assert "python:myagent:make" in json.dumps(result)


def test_the_docs_list_the_25_probes_and_each_test_they_name_exists():
    """docs/rooms.md lists every probe with its tests: a renamed or removed test is found here."""
    import re

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "rooms.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| .*$", text, flags=re.M)
    assert rows == [str(k) for k in range(1, 26)], rows
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", text)
    assert len(named) >= 25
    for path, name in named:
        assert re.search(rf"^def {name}\(", (root / path).read_text(encoding="utf-8"), flags=re.M), \
            f"docs/rooms.md names {path}::{name}, which does not exist"
