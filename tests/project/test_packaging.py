"""The core install is light: the environment needs NumPy, Gymnasium and PettingZoo only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_core_dependencies_are_numpy_gymnasium_pettingzoo_only():
    deps = _pyproject()["project"]["dependencies"]
    names = sorted(d.split(">")[0].split("<")[0].split("=")[0].strip() for d in deps)
    assert names == ["gymnasium", "numpy", "pettingzoo"]


def test_torch_and_the_tools_come_as_extras():
    extras = _pyproject()["project"]["optional-dependencies"]
    assert any(d.startswith("torch") for d in extras["agents"])
    assert "escoba-env[agents]" in extras["train"]
    assert any("all" in d for d in extras["dev"])


def test_importing_escoba_env_imports_no_heavy_dependency():
    code = ("import sys, escoba_env\n"
            "from escoba_env import escoba_v0, single_agent, selfplay_vector, engine\n"
            "escoba_v0.env().reset(seed=0)\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'matplotlib', 'tqdm', 'openskill', 'tensorboard', 'agents', 'ray'})\n"
            "print(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
