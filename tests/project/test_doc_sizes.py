"""The product's documents stay a product's: the model card, README and CHANGELOG within their sizes,
the model card free of the dated experiment record (that is ``lab/JOURNAL.md``), one docs page per topic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "agents" / "pretrained" / "README.md"
LIMITS = {"agents/pretrained/README.md": 400, "README.md": 160}
SECTION_LIMIT = 120


def sections(text: str) -> dict[str, int]:
    """Return the line count of every ``##`` and ``###`` section of a Markdown text, by heading."""
    out: dict[str, int] = {}
    heading, lines = None, 0
    for line in text.splitlines():
        if re.match(r"#{2,3} ", line):
            if heading is not None:
                out[heading] = lines
            heading, lines = line, 0
        lines += 1
    if heading is not None:
        out[heading] = lines
    return out


@pytest.mark.parametrize("rel", sorted(LIMITS))
def test_the_document_is_within_its_size(rel):
    n = len((ROOT / rel).read_text(encoding="utf-8").splitlines())
    assert n <= LIMITS[rel], f"{rel} has {n} lines, more than {LIMITS[rel]}"


def test_every_changelog_section_is_within_its_size_and_unreleased_comes_first():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    big = {h: n for h, n in sections(text).items() if n > SECTION_LIMIT}
    assert not big, f"CHANGELOG sections over {SECTION_LIMIT} lines: {big}"
    versions = re.findall(r"^## (.+)$", text, re.M)
    assert versions[0] == "Unreleased"
    # The package's version (one constant, which pyproject.toml reads) is the last release's, or the next
    # one, which the Unreleased notes then announce.
    version = re.search(r'^__version__ = "([^"]+)"', (ROOT / "escoba_env" / "__init__.py").read_text(),
                        re.M).group(1)
    released = versions[1].split(" (")[0]
    unreleased = text[text.index("## Unreleased"):text.index(f"## {versions[1]}")]
    newer = tuple(map(int, version.split("."))) > tuple(map(int, released.split(".")))
    assert version == released or newer and f"({version})" in unreleased, (version, versions[1])


def test_the_section_counter_sees_an_oversized_section():
    text = "# T\n## A\n" + "x\n" * 130 + "## B\n### C\ny\n"
    assert sections(text) == {"## A": 131, "## B": 1, "### C": 2}


def test_the_model_card_is_product_text_and_the_journal_holds_the_record():
    card = CARD.read_text(encoding="utf-8")
    dated = re.findall(r"^#+ .*\b20\d\d-\d\d-\d\d\b.*$", card, re.M)
    assert not dated, f"dated sections belong in lab/JOURNAL.md: {dated}"
    from agents.nets import shipped

    files = {Path(f).name for f in [*shipped.SHIPPED_CHECKPOINTS.values(), shipped.PLAIN_CHECKPOINT,
                                    shipped.SOLO_CHECKPOINT, *shipped.MOVE_CHECKPOINTS.values()]}
    headings = " ".join(re.findall(r"^## .*$", card, re.M))
    missing = {f for f in files if f"`{f}`" not in headings}
    assert len(files) >= 7 and not missing, f"shipped networks without a card: {missing}"
    journal = (ROOT / "lab" / "JOURNAL.md").read_text(encoding="utf-8")
    assert len(re.findall(r"^## 20\d\d-\d\d-\d\d", journal, re.M)) >= 5


def test_one_docs_page_per_topic():
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert not {"train.md", "benchmarks.md"} & pages, "the twin pages are training.md, benchmark.md, speed.md"
    assert {"training.md", "benchmark.md", "speed.md", "architecture.md"} <= pages
