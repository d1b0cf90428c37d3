"""The notebooks run top to bottom (quick mode, ``ESCOBA_QUICK=1``) and are committed without outputs.

Each notebook is executed in a fresh Jupyter kernel by ``nbclient`` (what ``nbmake`` uses), from
the ``notebooks/`` folder, exactly as a reader would run it; a cell that raises fails the test.
``pytest --nbmake notebooks/`` runs them the same way (set ``ESCOBA_QUICK=1`` for the short mode).
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_tutorial_notebooks_are_all_there():
    names = [p.name for p in NOTEBOOKS]
    assert names == ["01_quickstart.ipynb", "02_train_and_evaluate.ipynb", "03_rules_variants.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert dirty == [], f"{path.name}: cells {dirty} hold outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom_in_quick_mode(path, monkeypatch):
    monkeypatch.setenv("ESCOBA_QUICK", "1")
    # The kernel imports the project from the checkout even where it is not pip-installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
