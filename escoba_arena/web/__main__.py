"""``python -m escoba_arena.web``: start the web arena."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
