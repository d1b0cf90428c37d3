"""``python -m agents.training``: the training command line (the same as ``escoba-train``)."""

from __future__ import annotations

from agents.commands import train

raise SystemExit(train())
