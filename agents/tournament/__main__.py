"""``python -m agents.tournament``: the tournament command line (the same as ``escoba-evaluate``)."""

from __future__ import annotations

from agents.commands import evaluate

raise SystemExit(evaluate())
