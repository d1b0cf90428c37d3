"""The core install is light: the environment needs NumPy, Gymnasium and PettingZoo only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
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
            "from escoba_env import escoba_v0\n"
            "from escoba_env.faces import single_agent, selfplay_vector\n"
            "from escoba_env.executors import engine\n"
            "escoba_v0.env().reset(seed=0)\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'matplotlib', 'tqdm', 'openskill', 'tensorboard', 'agents', 'ray'})\n"
            "print(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


_NOT_COPIED = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "runs", "results",
                                     "replays", "site", ".venv", "venv", ".pytest_cache", ".ruff_cache")


def _copy_or_stub(source: str, target: str) -> None:
    """Copy a file, except a weights file, written empty: the file list is the same, the build faster."""
    if source.endswith(".pt"):
        Path(target).touch()
    else:
        shutil.copy2(source, target)


def test_the_wheel_holds_the_library_and_no_lab():
    """Build the wheel as ``.ci/wheel_smoke.sh`` does (from a copy of the checkout, its weights files
    empty, so the build leaves nothing in the checkout) and read its file list: the shipped networks
    are there, the lab and its superseded weights are not."""
    pytest.importorskip("setuptools")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT, src, ignore=_NOT_COPIED, copy_function=_copy_or_stub)
        pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        built = subprocess.run([*pip, "-w", str(Path(tmp) / "dist"), str(src)], capture_output=True,
                               text=True, timeout=240)
        assert built.returncode == 0, built.stderr[-2000:]
        (wheel,) = (Path(tmp) / "dist").glob("escoba_env-*.whl")
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
            opponents = z.read(entry_points).decode().split("[escoba_env.opponents]")[1].split("\n[")[0]
    tops = {n.split("/")[0] for n in names}
    assert {"escoba_env", "agents", "escoba_arena"} <= tops
    assert not [t for t in tops if t not in ("escoba_env", "agents", "escoba_arena") and not t.endswith(
        ".dist-info")], tops  # no lab/, tests/, scripts/
    assert "agents/pretrained/escoba_2p_solo.pt" in names and "agents/pretrained/escoba_3p_move.pt" in names
    assert not [n for n in names if n.endswith("_v1.pt")]  # superseded weights stay in lab/weights
    declared = {line.split("=")[0].strip() for line in opponents.splitlines() if "=" in line}
    assert not declared & {"guided", "policy-oracle", "neural-2v2-move-v1", "neural-3p-move-v1"}
