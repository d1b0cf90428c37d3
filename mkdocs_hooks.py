"""MkDocs hook: ``docs/model_card.md`` shows the model card shipped with the networks
(``agents/pretrained/README.md``), its figure links (``../../docs/...``) made relative to ``docs/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CARD = Path(__file__).resolve().parent / "agents" / "pretrained" / "README.md"
MARK = "<!-- model card -->"


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Return the page's Markdown, with the model card in place of its mark on ``model_card.md``."""
    if page.file.src_uri != "model_card.md":
        return markdown
    card = CARD.read_text(encoding="utf-8").replace("](../../docs/", "](")
    return markdown.replace(MARK, card)
