"""docs/rules.md says under each section where its rule lives in the code; every name cited exists."""

from __future__ import annotations

import re

import pytest

from tests.project.doc_support import ROOT, resolve

TEXT = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
MARK = "**In the code:**"
_NAME = re.compile(r"`(escoba_env(?:\.\w+)+)`")


def _sections() -> dict[str, str]:
    """Return the text of each numbered section (``## N. ...``, subsections included) by number."""
    parts = re.split(r"^## (\d+)\. .*$", TEXT, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _paragraphs(text: str) -> list[str]:
    """Return the "In the code" paragraphs of ``text``, each joined into one line."""
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.lstrip().startswith(MARK)]


CITED = sorted({n for p in _paragraphs(TEXT) for n in _NAME.findall(p)})


def test_every_numbered_section_says_where_its_rule_lives():
    sections = _sections()
    assert sorted(sections, key=int) == [str(i) for i in range(1, 12)]
    missing = [n for n, text in sections.items() if not any(_NAME.search(p) for p in _paragraphs(text))]
    assert missing == []


def test_the_variant_subsections_each_cite_their_code():
    jokers, mesa = re.split(r"^### .*$", _sections()["11"], flags=re.M)[1:]
    assert "joker_summary" in " ".join(_paragraphs(jokers))
    assert "mesa_turn_up" in " ".join(_paragraphs(mesa))


def test_the_citations_are_many_and_fully_qualified():
    assert len(CITED) >= 40
    # A bare or misspelt name would not be found by the pattern: no backticked escoba_env text is left over.
    for p in _paragraphs(TEXT):
        for token in re.findall(r"`([^`]*)`", p):
            assert not token.startswith("escoba_env") or _NAME.fullmatch(f"`{token}`"), token


@pytest.mark.parametrize("name", CITED)
def test_every_cited_name_exists(name):
    assert resolve(name) is not None


def test_resolve_rejects_a_name_that_does_not_exist():
    with pytest.raises(AttributeError):
        resolve("escoba_env.rulebook.deal_rules.no_such_function")
    with pytest.raises(AttributeError):
        resolve("escoba_env.executors.engine.EscobaEngine.no_such_step")
