"""The observation layout is written once (``escoba_env.executors.observation.LAYOUT``) and shown in three
places, each built from it: the docstring of ``observation`` and of ``escoba_v0`` (at import, so
``help()`` shows the tables) and docs/observation.md (by the MkDocs hook). Their tables' numbers are
the encoder's offsets, and no source file carries a typed copy of a row."""

from __future__ import annotations

import importlib.util
import re

import pytest

from escoba_env.executors import observation
from escoba_env.executors.observation import (
    LAYOUT,
    LAYOUT_MARK,
    NUM_PLANES,
    NUM_SCALARS,
    OBS_SIZE,
    PLANE,
    SCALARS,
    layout_doc,
    layout_tables,
)
from escoba_env.faces import escoba_v0
from tests.project.doc_support import ROOT

PAGE = "docs/observation.md"
SOURCES = ("escoba_env/executors/observation.py", "escoba_env/faces/escoba_v0.py", PAGE)


def _hooks():
    """Return the MkDocs hooks module (``mkdocs_hooks.py`` at the repository root)."""
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "mkdocs_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _spans(table: str) -> list[tuple[int, int, str]]:
    """Return (first, last, name) of each row of a generated table: its first range and its `name`."""
    rows = re.findall(r"^\| (\d+)(?:-(\d+))? \|.*?`(\w+)` \|", table, re.M)
    return [(int(a), int(b or a), name) for a, b, name in rows]


def test_the_tables_give_the_encoder_s_offsets_contiguous_to_the_end():
    planes, scalars = layout_tables()
    spans = _spans(scalars)
    assert [(name, a) for a, _, name in spans] == list(SCALARS.items())
    assert list(SCALARS.values()) == [520, 524, 528, 529, 533, 537, 541, 542, 545]  # the networks' inputs
    ends = [a for a, _, _ in spans[1:]] + [OBS_SIZE]
    assert all(b + 1 == nxt for (_, b, _), nxt in zip(spans, ends, strict=True))
    firsts = [(a, name) for a, _, name in _spans(planes)]
    assert [a for a, _ in firsts] == [0, 1, 5, 6, 10, 11, 12] == list(PLANE.values())
    assert [name for _, name in firsts] == list(PLANE)
    # the 40-card indices column: plane group k of n planes is 40 k .. 40 (k + n) - 1
    indices = [(int(a), int(b)) for a, b in re.findall(r"^\| [\d-]+ \| (\d+)-(\d+) \|", planes, re.M)]
    assert indices == [(40 * PLANE[name], 40 * (PLANE[name] + n) - 1) for name, n, _ in LAYOUT["planes"]]
    assert (NUM_PLANES, NUM_SCALARS) == (13, 26)


@pytest.mark.parametrize("module", [observation, escoba_v0], ids=["observation", "escoba_v0"])
def test_each_docstring_shows_the_generated_layout_and_its_headings(module):
    doc = module.__doc__
    assert LAYOUT_MARK not in doc
    assert doc.count(layout_doc()) == 1
    for heading in ("Card planes (W entries", f"Scalars, from index `{NUM_PLANES} * W`",
                    f"`{NUM_PLANES} * jokers` higher"):
        assert heading in doc


def test_the_observation_docstring_s_sizes_are_the_layout_s():
    doc = observation.__doc__
    assert f"``{NUM_PLANES} * W + {NUM_SCALARS}``" in doc and f"``OBS_SIZE`` ({OBS_SIZE})" in doc


def test_the_pettingzoo_docstring_s_worked_indices_are_the_layout_s():
    doc = " ".join(escoba_v0.__doc__.split())
    velo = 24  # 7 of oros
    assert f"index {velo} is the velo (7 of oros) in the own hand" in doc
    assert f"index {PLANE['table'] * 40 + velo} the velo on the table" in doc
    assert f"indices {SCALARS['scores']}-{SCALARS['scores'] + 3} is `score_cap / target_score`" in doc
    assert (f"(plane {PLANE['pending']}), the cards named so far (plane {PLANE['taken']}) and flag "
            f"{SCALARS['capture_phase']}") in doc
    assert f"({OBS_SIZE},) float32" in doc


def test_the_docs_page_gets_both_tables_from_the_hook():
    raw = (ROOT / PAGE).read_text(encoding="utf-8")
    hooks = _hooks()
    assert all(raw.count(mark) == 1 for mark in hooks.LAYOUT_MARKS)
    shown = hooks.page_markdown("observation.md", raw)
    assert not any(mark in shown for mark in hooks.LAYOUT_MARKS)
    planes, scalars = layout_tables()
    at = [shown.index(part) for part in ("### Card planes", planes, "### Scalars", scalars)]
    assert at == sorted(at)
    assert hooks.page_markdown("rules.md", raw) == raw  # other pages pass through


def test_no_source_carries_a_typed_copy_of_the_layout():
    """Each row's content is written once, in ``LAYOUT``: none of the three places spells one out."""
    contents = [c for part in LAYOUT.values() for _, _, c in part if len(c) > 20]  # not "own hand"
    assert len(contents) >= 12
    for rel in SOURCES:
        text = " ".join((ROOT / rel).read_text(encoding="utf-8").split())
        if rel.endswith("observation.py"):  # the one place: the data, not its docstring
            text = text[:text.index("from __future__")]
        assert [c for c in contents if c in text] == [], rel


def test_the_site_documents_escoba_v0_with_its_imported_docstring():
    """mkdocstrings reads docstrings from the source; the Griffe extension hands it the imported one."""
    griffe = pytest.importorskip("griffe")
    ext = _hooks().ImportedDocstrings()
    mod = griffe.load("escoba_env.faces.escoba_v0", extensions=griffe.load_extensions(ext))
    assert LAYOUT_MARK not in mod.docstring.value and layout_doc() in mod.docstring.value
    plain = griffe.load("escoba_env.faces.escoba_v0")
    assert LAYOUT_MARK in plain.docstring.value  # without it the page would show the mark
