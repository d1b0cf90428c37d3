"""``python -m agents.tournament``: the tournament command line (the same as ``escoba-evaluate``)."""

from __future__ import annotations

from agents.programs import REQUIRES, program_name, run_program
from agents.tournament.cli import main


def _load():
    return main


raise SystemExit(run_program(REQUIRES["evaluate"], program_name("evaluate.py"), _load, None))
