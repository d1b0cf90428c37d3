"""The project stands on its own: every document a file cites is in the repository.

Scans every text file of the repository for citations of documents: upper-case names such as
``NOTES.md`` (which must exist somewhere in the repository), paths under the project's folders
(``docs/rules.md``, ``agents/pretrained/README.md``), relative Markdown links, and section numbers
of ``docs/rules.md`` (``docs/rules.md §11`` must be a section of that page).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", "build", "dist", "runs",
             "results", "replays", ".ipynb_checkpoints", ".venv", "venv"}
SUFFIXES = {".py", ".md", ".ipynb", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml"}

HERE = "tests/project/test_doc_citations.py"  # this file names the old documents on purpose

_UPPER_DOC = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9_-]*\.(?:md|rst|txt))\b")
_PATH = re.compile(r"(?<![\w/.-])((?:docs|agents|escoba_env|escoba_arena|benchmarks|notebooks|scripts|tests|"
                   r"lab|examples|\.ci)/[\w./-]*\w\.(?:md|ipynb|png|csv|log|py|sh|json|yml))\b")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_RULES_SECTION = re.compile(r"rules\.md\)? ?§(\d+)")
_RULES_ANCHOR = re.compile(r"rules\.md#([\w-]+)")


def _text_files() -> list[Path]:
    out = []
    for p in sorted(ROOT.rglob("*")):
        rel = p.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts[:-1]):
            continue
        if p.is_file() and (p.suffix in SUFFIXES or rel.as_posix() == ".ci/run"):
            out.append(p)
    return out


FILES = [p.relative_to(ROOT).as_posix() for p in _text_files()]
NAMES = {Path(f).name for f in FILES} | {p.name for p in ROOT.rglob("*") if p.is_file()}
RULES_TEXT = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
SECTIONS = {int(n) for n in re.findall(r"^## (\d+)\. ", RULES_TEXT, re.M)}


def _slug(heading: str) -> str:
    """Return the anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


ANCHORS = {_slug(h) for h in re.findall(r"^#+ (.*)$", RULES_TEXT, re.M)}


def bad_citations(rel: str) -> list[str]:
    """Return the citations in ``rel`` of documents (or rules sections) that the repository lacks."""
    path = ROOT / rel
    text = path.read_text(encoding="utf-8", errors="replace")
    bad = []
    for name in _UPPER_DOC.findall(text):
        if name not in NAMES:
            bad.append(name)
    for cited in _PATH.findall(text):
        if not (ROOT / cited).exists():
            bad.append(cited)
    if path.suffix in (".md", ".ipynb"):
        for link in _LINK.findall(text):
            target = link.split("#", 1)[0]
            if not target or re.match(r"^[a-z]+:", target):  # an anchor on the page, or a URL
                continue
            if not (path.parent / target).exists():
                bad.append(link)
    for n in _RULES_SECTION.findall(text):
        if int(n) not in SECTIONS:
            bad.append(f"docs/rules.md §{n}")
    for anchor in _RULES_ANCHOR.findall(text):
        if anchor not in ANCHORS:
            bad.append(f"rules.md#{anchor}")
    return bad


def test_the_scan_finds_the_project_files_and_what_a_bad_citation_looks_like(tmp_path):
    assert {"README.md", "docs/rules.md", "evaluate.py", "escoba_env/executors/engine.py"} <= set(FILES)
    assert SECTIONS == set(range(1, 12))
    assert "RULES.md" not in NAMES and "DESIGN.md" not in NAMES


@pytest.mark.parametrize("rel", [
    f for f in FILES if f != HERE])
def test_every_cited_document_is_in_the_repository(rel):
    assert bad_citations(rel) == []


def test_every_page_of_the_docs_site_exists_and_every_docs_page_is_in_it():
    yml = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = yml[yml.index("\nnav:"):]
    pages = set(re.findall(r":\s*([\w/-]+\.md)\s*$", nav, re.M))
    missing = sorted(p for p in pages if not (ROOT / "docs" / p).is_file())
    assert not missing, missing
    assert {p.name for p in (ROOT / "docs").glob("*.md")} == pages


def test_no_page_cites_a_program_that_does_not_exist():
    # the terminal game is escoba-play (escoba_arena/terminal.py); there is no play.py
    for rel in FILES:
        if rel.endswith(".md") and rel != HERE:
            text = (ROOT / rel).read_text(encoding="utf-8")
            assert not re.search(r"(?<![\w/.])play\.py\b", text), rel
