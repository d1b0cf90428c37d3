"""Outside agents reproduce: a ``python:`` module in the current folder is found without
``PYTHONPATH`` (and sent to Ray workers), and cards and journals name its code and weights."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.bench.cli import main
from agents.spec.fingerprint import outside_runtime_env, spec_fingerprint
from agents.tournament.journal import run_key
from agents.tournament.runner import TournamentConfig

AGENT = '''import numpy as np
from pathlib import Path


class Scaled:
    def __init__(self, w):
        self.w = w

    def act_batch(self, observations, action_masks, state=None):
        legal = np.asarray(action_masks) > 0
        return np.argmax(np.where(legal, self.w[: legal.shape[1]], -np.inf), axis=1)


def make(rules=None, seed=None):
    return Scaled(np.load(Path(__file__).with_name("{name}_w.npy")))
'''


@pytest.fixture
def in_folder(tmp_path, monkeypatch):
    """Run from ``tmp_path`` with ``sys.path`` and ``sys.modules`` restored afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("outside_"):
            del sys.modules[name]


def _write_agent(folder: Path, name: str, seed: int = 0) -> Path:
    (folder / f"{name}.py").write_text(AGENT.replace("{name}", name))
    np.save(folder / f"{name}_w.npy", np.random.default_rng(seed).random(64))
    return folder / f"{name}_w.npy"


def test_a_card_names_the_outside_agent_s_code_and_weights(tiny3, in_folder):
    weights = _write_agent(in_folder, "outside_a")
    spec = "python:outside_a:make"
    assert main(["card", spec, "--version", "t0", "--out", "card.json", "--workers", "1", "--no-progress",
                 "--timing-deals", "0"]) == 0
    code = json.loads((in_folder / "card.json").read_text())["agent_code"][spec]
    assert code["module"] == "outside_a" and code["files"] == 1
    assert code["sha256"] == hashlib.sha256(b"outside_a.py\0" + (in_folder / "outside_a.py").read_bytes()
                                            ).hexdigest()
    assert list(code["weights"].values()) == [hashlib.sha256(weights.read_bytes()).hexdigest()]
    assert Path(next(iter(code["weights"]))).name == "outside_a_w.npy"
    # other weights or other code: another fingerprint, so a journal of the first does not resume
    config = TournamentConfig(agents=("random",), vs=spec, deals=4)
    key = run_key(config, record=False)
    np.save(weights, np.zeros(64))
    from agents.spec.registry import make_agent

    make_agent(spec)  # builds it again, as a resumed run does, reading the new weights
    assert run_key(config, record=False) != key
    key = run_key(config, record=False)
    (in_folder / "outside_a.py").write_text((in_folder / "outside_a.py").read_text() + "\n# v2\n")
    assert run_key(config, record=False) != key


def test_nested_and_parameterised_files_are_fingerprinted(tmp_path):
    f = tmp_path / "net.pt"
    f.write_bytes(b"weights")
    sha = hashlib.sha256(b"weights").hexdigest()
    assert spec_fingerprint(f"checkpoint:{f},device=cpu") == {f"checkpoint:{f}": {"sha256": sha}}
    assert spec_fingerprint(f"search:policy=checkpoint:{f}") == {f"checkpoint:{f}": {"sha256": sha}}
    assert spec_fingerprint("expert") == {}
    numpy_fp = spec_fingerprint("python:numpy:zeros")["python:numpy:zeros"]
    assert numpy_fp["package"] == "numpy" and numpy_fp["version"] == np.__version__


def test_a_module_of_the_current_folder_travels_to_ray_workers(in_folder):
    _write_agent(in_folder, "outside_b")
    pkg = in_folder / "outside_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bot.py").write_text(AGENT.replace("{name}", "outside_b"))
    specs = ["python:outside_b:make", "greedy", "search:policy=python:outside_pkg.bot:make"]
    env = outside_runtime_env(specs)
    assert env == {"runtime_env": {"py_modules": sorted([str(pkg), str(in_folder / "outside_b.py")])}}
    assert outside_runtime_env(["python:numpy:zeros", "expert"]) == {}  # installed: nothing to send


class _FakeRay:
    """Just enough of ``ray`` for ``_run_ray``: tasks run at once, in this process."""

    class exceptions:  # noqa: N801 - the name ray gives it
        RayTaskError = type("RayTaskError", (Exception,), {})
        RayError = type("RayError", (Exception,), {})

    def __init__(self):
        self.init_options: dict = {}

    def is_initialized(self) -> bool:
        return False

    def init(self, **options) -> None:
        self.init_options = options

    def remote(self, **options):
        return lambda f: type("R", (), {"remote": staticmethod(f)})

    def wait(self, pending, num_returns=1):
        return pending[:1], pending[1:]

    def get(self, ref):
        return ref

    def shutdown(self) -> None:
        pass


def test_a_ray_job_carries_the_outside_modules_to_its_workers(in_folder, monkeypatch):
    """Ray takes local ``py_modules`` only for the whole job: ``ray.init`` (local) and ``join``
    (a cluster) get them; a Ray worker on another node would not find the module otherwise."""
    from contextlib import nullcontext

    import agents.tournament.raycluster as raycluster
    from agents.tournament import runner

    _write_agent(in_folder, "outside_c")
    fake = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(raycluster, "loopback_only", nullcontext)
    config = TournamentConfig(agents=("random",), vs="python:outside_c:make", deals=2, backend="ray")
    done = []
    runner._run_ray(runner.make_tasks(config)[:1], config, lambda i, b: done.append(i))
    assert done == [0]
    assert fake.init_options["runtime_env"] == {"py_modules": [str(in_folder / "outside_c.py")]}
    joined = {}
    monkeypatch.setattr(raycluster, "join", lambda ray, address, **kw: joined.update(kw, address=address))
    config = TournamentConfig(agents=("random",), vs="python:outside_c:make", deals=2, backend="ray",
                              ray_address="10.0.0.1:6379")
    runner._run_ray(runner.make_tasks(config)[:1], config, lambda i, b: None)
    assert joined == {"address": "10.0.0.1:6379",
                      "runtime_env": {"py_modules": [str(in_folder / "outside_c.py")]}}


def test_a_card_s_version_is_the_checkout_s_not_a_stale_editable_install_s(tmp_path, monkeypatch):
    """An editable install keeps the version it was installed at in its metadata (0.2.0 after the
    checkout moved to 0.3.0: cards played so said 0.2.0); from a checkout the version is the
    checkout's ``escoba_env.__version__`` (what its pyproject.toml reads), elsewhere the installed
    distribution's."""

    from agents.bench.card import project_version
    from agents.tournament import report

    root = Path(__file__).resolve().parents[2]
    init = (root / "escoba_env" / "__init__.py").read_text()
    want = re.search(r'^__version__ = "([^"]+)"', init, re.M).group(1)
    monkeypatch.setattr(report.metadata, "version", lambda name: "0.0.1")
    assert project_version() == want == report.versions()["escoba-env"]
    assert report.escoba_version(tmp_path) == "0.0.1"  # no checkout: the installed version
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9.9"\n')
    assert report.escoba_version(tmp_path) == "0.0.1"  # another project's pyproject is not ours
