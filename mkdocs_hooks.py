"""MkDocs hooks: ``docs/model_card.md`` shows the model card shipped with the networks
(``agents/pretrained/README.md``), its figure links (``../../docs/...``) made relative to ``docs/``;
``docs/observation.md`` shows the observation layout's tables, built from the one layout the encoder
uses (``escoba_env.executors.observation.LAYOUT``); and, as a Griffe extension (``mkdocs.yml``), a module
whose docstring gets those tables at import is documented with its docstring as imported."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import griffe

from escoba_env.executors.observation import LAYOUT_MARK, layout_tables

CARD = Path(__file__).resolve().parent / "agents" / "pretrained" / "README.md"
MARK = "<!-- model card -->"
LAYOUT_MARKS = ("<!-- observation planes -->", "<!-- observation scalars -->")


def page_markdown(src_uri: str, markdown: str) -> str:
    """Return the Markdown of page ``src_uri`` with its generated parts in place of their marks."""
    if src_uri == "model_card.md":
        card = CARD.read_text(encoding="utf-8").replace("](../../docs/", "](")
        return markdown.replace(MARK, card)
    if src_uri == "observation.md":
        for mark, table in zip(LAYOUT_MARKS, layout_tables(), strict=True):
            markdown = markdown.replace(mark, table)
    return markdown


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Return the page's Markdown as the site shows it (``page_markdown``)."""
    return page_markdown(page.file.src_uri, markdown)


class ImportedDocstrings(griffe.Extension):
    """Document a module whose docstring carries the layout mark with its ``__doc__`` as imported."""

    def on_module_instance(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        """Replace the docstring read from the source by the imported one, tables in place; return None."""
        if mod.docstring is not None and LAYOUT_MARK in mod.docstring.value:
            mod.docstring.value = inspect.cleandoc(importlib.import_module(mod.path).__doc__ or "")
