"""``python -m agents.training``: the training command line (the same as ``escoba-train``)."""

from __future__ import annotations

from agents.programs import REQUIRES, program_name, run_program


def _load():
    from agents.training.cli import main  # the [train] extra
    return main


raise SystemExit(run_program(REQUIRES["train"], program_name("train.py"), _load, None))
