"""docs/training.md's reading map of one PPO update cites names, not positions: each step is a function or
class defined in the module its qualified name gives, and the code names its description quotes are in
its source. No page cites a source file by line numbers (an edit above them would break the page)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess

import pytest

from tests.project.doc_support import ROOT, resolve

ROW = re.compile(r"^\| (\d+) \| `((?:agents|escoba_env)(?:\.\w+)+)` \| (.+) \|$", re.M)
IDENT = re.compile(r"[A-Za-z_]\w*")
# a source file cited by position: "trainer.py lines 396-495", "trainer.py:396", "...#L396"
LINE_CITATION = re.compile(r"\.(?:py|md)`?\)?,? (?:lines?|L) ?\d+|\.py:\d+\b|#L\d+\b")
HERE = "tests/project/test_reading_map.py"  # its own examples of a line citation


def reading_map() -> list[tuple[int, str, str]]:
    """Return the rows (step, qualified name, description) of the page's reading map."""
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    section = text.split("## Reading one update", 1)[1].split("\n## ", 1)[0]
    return [(int(step), name, what) for step, name, what in ROW.findall(section)]


def split_name(dotted: str) -> tuple[str, str]:
    """Return (module, qualified name in it) of ``dotted``: its longest importable prefix, and the rest."""
    parts = dotted.split(".")
    for k in range(len(parts) - 1, 0, -1):
        try:
            importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        return ".".join(parts[:k]), ".".join(parts[k:])
    raise ModuleNotFoundError(dotted)


def definition(source: str, qualname: str) -> ast.AST | None:
    """Return the ``def`` or ``class`` node of ``qualname`` (``Class.method`` too) in ``source``, or None."""
    body = ast.parse(source).body
    node = None
    for part in qualname.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


def names_in(node: ast.AST) -> set[str]:
    """Return every identifier the code of ``node`` uses: names, attributes, arguments, fields, keys."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.keyword) and n.arg:
            out.add(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and IDENT.fullmatch(n.value):
            out.add(n.value)
    return out


def quoted_names(description: str) -> list[str]:
    """Return the code names (backticked identifiers) of a row's description."""
    return [t for t in re.findall(r"`([^`]+)`", description) if IDENT.fullmatch(t)]


ROWS = reading_map()


def test_the_map_walks_one_update_through_the_trainer_and_ppo():
    assert [step for step, _, _ in ROWS] == list(range(1, len(ROWS) + 1))
    assert len(ROWS) >= 8
    modules = {split_name(name)[0] for _, name, _ in ROWS}
    assert {"agents.training.ppo", "agents.training.trainer"} <= modules
    assert ROWS[0][1] == "agents.training.trainer.Trainer.run"


@pytest.mark.parametrize(("step", "name", "what"), ROWS, ids=[name for _, name, _ in ROWS])
def test_each_step_is_defined_where_its_name_says_and_its_description_is_in_its_source(step, name, what):
    module, qualname = split_name(name)
    obj = resolve(name)
    # defined in that module under that name: not a re-export, not an alias
    assert (obj.__module__, obj.__qualname__) == (module, qualname), name
    source = (ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    node = definition(source, qualname)
    assert node is not None, f"no def or class {qualname} in {module}"
    quoted = quoted_names(what)
    assert quoted, f"step {step}: its description quotes no code name to check it against"
    assert set(quoted) <= names_in(node), (name, sorted(set(quoted) - names_in(node)))


def test_the_checks_see_methods_fields_and_a_description_that_no_longer_fits():
    source = ("import x\n\n\n@dec\nclass A:\n    field: int\n\n    def f(self, n):\n"
              "        return self.cfg.target_kl + g(key='obs')\n\n\ndef g():\n    pass\n")
    node = definition(source, "A.f")
    assert node.name == "f" and definition(source, "A").name == "A" and definition(source, "h") is None
    assert {"target_kl", "cfg", "n", "obs", "g", "key"} <= names_in(node)
    assert "anneal_lr" not in names_in(node)  # a description naming what the code lost fails
    assert quoted_names("epochs, early stop on `target_kl`, buffers `(T, N, ...)`") == ["target_kl"]
    assert split_name("agents.training.ppo.RolloutBatch.rows") == ("agents.training.ppo", "RolloutBatch.rows")
    with pytest.raises(AttributeError):
        resolve("agents.training.ppo.no_such_step")


def _pages() -> list[str]:
    """Return the repository's tracked Markdown, notebooks and Python files (docstrings cite too)."""
    out = subprocess.run(["git", "ls-files", "*.md", "*.ipynb", "*.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return [f for f in out if f != HERE and (ROOT / f).is_file()]


def test_no_page_cites_a_source_file_by_line_numbers():
    pages = _pages()
    assert {"README.md", "docs/training.md", "agents/training/ppo.py"} <= set(pages)
    cited = {f: LINE_CITATION.findall((ROOT / f).read_text(encoding="utf-8")) for f in pages}
    assert {f: c for f, c in cited.items() if c} == {}


def test_the_line_citation_pattern_finds_each_form():
    for text in ("`agents/training/trainer.py` lines 396-495", "trainer.py line 12", "see ppo.py:113",
                 "blob/main/agents/training/ppo.py#L113", "rules.md, line 4"):
        assert LINE_CITATION.search(text), text
    for text in ("`agents.training.ppo.compute_gae`", "3 lines of ppo.py", "the py: 12 lines"):
        assert not LINE_CITATION.search(text), text
