#!/usr/bin/env python3
"""Benchmark Escoba agents against each other (tournaments with duplicate deals, CIs and ratings).

Thin entry point; the work is in ``agents.tournament``. Run ``python evaluate.py --help``.
"""

from __future__ import annotations

from escoba_arena.commands import evaluate as main

if __name__ == "__main__":
    raise SystemExit(main())
