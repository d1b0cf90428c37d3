"""The installed commands meet a user where they are: ``--help`` without any extra, and one line
naming the missing extra before anything runs (nothing written).

Each case runs in a fresh interpreter whose ``sitecustomize`` hides every optional library (a
meta-path block), as a core-only ``pip install escoba-env`` would have them. Fails on the commands
as they were: ``escoba-train --help`` refused without torch, and ``escoba-evaluate`` played its games
before failing on a missing tqdm or openskill.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("torch", "tqdm", "matplotlib", "openskill", "tensorboard", "ray", "starlette", "uvicorn",
          "httpx", "websockets", "PIL", "stable_baselines3", "sb3_contrib", "pyspiel", "playwright")
BLOCK = f'''import sys
HIDDEN = {set(HIDDEN)!r}
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Hide())
'''


def _command(tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCK)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    code = (f"import sys\nfrom escoba_arena.commands import {name}\nsys.argv = ['escoba-{name}']\n"
            f"sys.exit({name}({list(args)!r}))\n")
    env = {"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("name", ["evaluate", "train", "bench", "arena", "play"])
def test_help_works_without_any_extra(tmp_path, name):
    out = _command(tmp_path, name, "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: escoba-{name}")


@pytest.mark.parametrize(("name", "args", "extra"), [
    ("evaluate", ("--agents", "random", "greedy", "--rounds", "2", "--no-progress"), "agents"),
    ("train", ("--total-steps", "1000"), "agents"),
    ("bench", ("card", "random", "--quick"), "agents"),
    ("arena", ("--port", "0"), "web"),
])
def test_a_missing_extra_is_one_line_before_anything_runs(tmp_path, name, args, extra):
    out = _command(tmp_path, name, *args)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"[{extra}] extra" in lines[0]
    assert lines[0].startswith(f"escoba-{name}: error:")
    assert list((tmp_path / "work").iterdir()) == [], "the command left files behind"
