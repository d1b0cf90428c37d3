"""A package people can install and cite: the installed commands, names for the shipped networks, one
line for a missing extra, the training plan, the release files and a build without deprecations."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.spec.registry import OPPONENTS, REGISTRY, make_agent

ROOT = Path(__file__).resolve().parents[2]

BLOCK_TORCH = """
import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoTorch())
"""


def _without_torch(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """Run ``python args`` from ``tmp_path`` with a sitecustomize that makes torch unimportable."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCK_TORCH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, input=stdin, capture_output=True,
                          text=True, timeout=120)


HINT = 'torch is missing; it comes with the [agents] extra: pip install "escoba-env[agents]"'


@pytest.mark.parametrize("argv, prog", [
    (["-m", "escoba_arena.terminal", "--no-color", "--seed", "1"], "python -m escoba_arena.terminal"),
    (["-m", "agents.training", "--total-steps", "10"], "train.py"),
    (["-m", "agents.tournament", "--agents", "random", "neural-2p", "--rounds", "2"], "evaluate.py"),
])
def test_a_missing_torch_is_one_line_naming_the_extra(tmp_path, argv, prog):
    r = _without_torch(tmp_path, *argv)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    assert r.stderr.strip().splitlines() == [f"{prog}: error: {HINT}"]


def test_the_blocker_blocks_torch_and_leaves_the_core_working(tmp_path):
    r = _without_torch(tmp_path, "-c", "import escoba_env, agents.spec.registry\nimport torch")
    assert r.returncode == 1 and "No module named 'torch'" in r.stderr
    r = _without_torch(tmp_path, "-m", "agents.tournament", "--agents", "random", "greedy", "--rounds", "2",
                       "--no-plot", "--no-progress", "--workers", "1", "--out", "r/x")
    assert r.returncode == 0, r.stderr


def test_python_m_runs_the_tournament_and_the_trainer_help(tmp_path):
    for module, prog in (("agents.tournament", "evaluate.py"), ("agents.training", "train.py"),
                         ("agents.tournament.cli", "evaluate.py"), ("agents.training.cli", "train.py")):
        r = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and r.stdout.startswith(f"usage: {prog}"), (module, r.stdout[:200], r.stderr)
        assert "(default: " in r.stdout


def test_every_help_shows_the_defaults():
    from agents.tournament.cli import build_parser as evaluate_parser
    from agents.training.cli import build_parser as train_parser
    from escoba_arena.terminal import build_parser as play_parser

    ev = " ".join(evaluate_parser().format_help().split())
    assert "seed of the deals and the agents (default: 0)" in ev
    assert "level of the intervals (default: 0.95)" in ev
    assert "number of players (default: 2)" in ev and "(default: most_sevens)" in ev
    tr = " ".join(train_parser().format_help().split())
    assert "(default: 45000000)" in tr and "reproduces the shipped 2-player agent's first stage" in tr
    assert "number of players (default: 2)" in tr
    pl = " ".join(play_parser().format_help().split())
    assert "2 players: neural-2p; 4 players with partnerships: strong-2v2; 3 players: strong-3p" in pl
    assert "(default: 0.0)" in pl or "(default 0)" in pl


def test_every_registered_agent_is_a_gymnasium_opponent_entry_point():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    eps = project["entry-points"]["escoba_env.opponents"]
    assert eps == {"agents": "agents.spec.registry:OPPONENTS"}  # one entry point for the whole registry
    assert OPPONENTS.names() == list(REGISTRY)


@pytest.mark.parametrize("name, file", [("neural-2p", "escoba_2p.pt"), ("neural", "escoba_2p.pt"),
                                        ("neural-solo", "escoba_2p_solo.pt")])
def test_shipped_networks_load_by_name_from_any_folder(tmp_path, monkeypatch, name, file):
    from escoba_env.rulebook.rules import Rules

    monkeypatch.chdir(tmp_path)  # nothing relative to the checkout
    agent = make_agent(name, rules=Rules(), seed=0)
    assert agent is not None and (ROOT / "agents" / "pretrained" / file).is_file()


def test_the_release_files():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # One version constant: the distribution reads escoba_env.__version__ (none written twice).
    import escoba_env

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert setuptools["dynamic"]["version"] == {"attr": "escoba_env.__version__"}
    assert escoba_env.__version__ == "0.4.0" and project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"] and "MIT License" in (ROOT / "LICENSE").read_text()
    assert set(project["scripts"]) == {"escoba-arena", "escoba-play", "escoba-evaluate", "escoba-train",
                                      "escoba-bench"}
    assert project["urls"]["Source"].startswith("https://github.com/")
    assert "version: 0.3.0" in (ROOT / "CITATION.cff").read_text()
    assert "## 0.3.0" in (ROOT / "CHANGELOG.md").read_text()
    assert any(d.startswith("pydantic") for d in project["optional-dependencies"]["examples"])


def test_the_readme_is_short_and_ci_runs_its_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 160
    command = 'pip install -e ".[dev]" && python -m pytest'
    assert f"```bash\n{command}\n```" in readme
    assert f"\n{command}\n" in (ROOT / ".ci" / "run").read_text()
