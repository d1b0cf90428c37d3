"""Every qualified name the pages cite resolves: a backticked ``agents.…``, ``escoba_env.…`` or
``escoba_arena.…`` in README.md or a page of docs/ (the reading map's steps among them), and every
``::: name`` the API pages document, is a module or something defined in one, so a page that cites
code by name follows the code when it moves (an entry-point group names the group pyproject declares)."""

from __future__ import annotations

import re

import pytest

from tests.project.doc_support import ROOT, resolve

PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
CODE_SPAN = re.compile(r"`([^`\n]+)`")
QUALIFIED = re.compile(r"(?<![\w./:-])((?:agents|escoba_env|escoba_arena)(?:\.\w+)+)(?![\w/-])")
API_BLOCK = re.compile(r"^::: ([\w.]+)", re.M)
ENTRY_GROUPS = set(re.findall(r'^\[project\.entry-points\."([^"]+)"\]',
                              (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M))


def cited_names(text: str) -> set[str]:
    """Return the qualified names of the project's code that ``text`` cites: in code spans, and the
    targets of mkdocstrings' ``:::`` blocks."""
    spans = CODE_SPAN.findall(text)
    return {n for s in spans for n in QUALIFIED.findall(s)} | set(API_BLOCK.findall(text))


def _citations() -> list[tuple[str, str]]:
    """Return (qualified name, first page citing it) for every name the pages cite."""
    first: dict[str, str] = {}
    for page in PAGES:
        for name in sorted(cited_names((ROOT / page).read_text(encoding="utf-8"))):
            first.setdefault(name, page)
    return sorted(first.items())


CITED = _citations()


def test_the_pages_cite_code_by_name():
    names = {n for n, _ in CITED}
    assert len(names) >= 80
    assert {"agents.training.ppo.compute_gae", "agents.training.trainer.Trainer.run",
            "escoba_env.faces.escoba_v0"} <= names


@pytest.mark.parametrize(("name", "page"), CITED, ids=[n for n, _ in CITED])
def test_each_cited_name_resolves(name, page):
    if name in ENTRY_GROUPS:
        return
    resolve(name)  # raises, naming what is missing, if the module or an attribute is gone


def test_the_reader_finds_each_form_and_a_stale_name_fails():
    text = ("`agents.training.ppo.compute_gae`, `python -m escoba_env.faces.text --seed 2`, "
            "`escoba_env/faces/text.py`, `from agents import make_agent`, `python:lab.M:F`, "
            "`escoba_arena.rooms.no_such_name`\n\n::: escoba_env.faces.escoba_v0\n")
    assert cited_names(text) == {"agents.training.ppo.compute_gae", "escoba_env.faces.text",
                                 "escoba_arena.rooms.no_such_name", "escoba_env.faces.escoba_v0"}
    assert "escoba_env.opponents" in ENTRY_GROUPS
    with pytest.raises(AttributeError):
        resolve("escoba_env.executors.observation.NO_SUCH_TABLE")
    with pytest.raises(ModuleNotFoundError):
        resolve("escoba_env_gone.observation")
