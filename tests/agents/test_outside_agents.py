"""Outside policies as agents: sb3:PATH (a Stable-Baselines3 model) and python:module:factory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import escoba_env  # noqa: F401
from agents.base import Agent, RandomAgent
from agents.external.python_factory import FunctionAgent
from agents.external.sb3_model import SB3Agent
from agents.spec.registry import make_agent
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode

ROOT = Path(__file__).resolve().parents[2]

MODULE = '''
import numpy as np

class Highest:
    """Plays its highest legal card id, through act only."""
    def act(self, observation, action_mask, state=None):
        return int(np.flatnonzero(action_mask)[-1])

def make(rules, seed=None):
    return Highest()

def make_bad(rules, seed=None):
    return object()

def make_no_kwargs():
    return Highest()
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_escoba_agents.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def batch(n: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    eng = EscobaEngine(n)
    eng.reset(seed)
    return encode(eng, eng.to_act), action_masks(eng, eng.to_act)


def test_python_factory_agent_plays_through_act(user_module):
    agent = make_agent("python:my_escoba_agents:make", seed=1)
    assert isinstance(agent, FunctionAgent)
    obs, masks = batch()
    expected = [int(np.flatnonzero(m)[-1]) for m in masks]
    np.testing.assert_array_equal(agent.act_batch(obs, masks), expected)


def test_python_factory_returning_an_agent_is_used_as_is(user_module):
    (user_module / "my_random.py").write_text(
        "from agents.base import RandomAgent\n"
        "def make(rules, seed=None):\n    return RandomAgent(rules, seed)\n")
    assert type(make_agent("python:my_random:make", seed=3)) is RandomAgent


@pytest.mark.parametrize("spec, message", [
    ("python:", "python:module:factory"),
    ("python:my_escoba_agents", "python:module:factory"),
    ("python:no_such_module_xyz:make", "cannot import module 'no_such_module_xyz'"),
    ("python:my_escoba_agents:missing", "has no callable 'missing'"),
    ("python:my_escoba_agents:make_bad", "neither act_batch nor act"),
    ("python:my_escoba_agents:make_no_kwargs", "must accept rules= and seed="),
    ("sb3:", "needs a model file"),
    ("sb3:/no/such/model.zip", "sb3 model file not found"),
    ("sb3:/no/such/model.zip,algo=dqn", "algo.*one of maskable_ppo, ppo, a2c"),
])
def test_bad_outside_specs_raise_one_clear_value_error(user_module, spec, message):
    with pytest.raises(ValueError, match=message):
        make_agent(spec)


def test_a_file_that_is_not_an_sb3_model(tmp_path):
    bad = tmp_path / "model.zip"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="cannot read .* as an SB3 MaskablePPO model"):
        make_agent(f"sb3:{bad}")


@pytest.fixture(scope="module")
def sb3_model(tmp_path_factory) -> Path:
    from sb3_contrib import MaskablePPO

    path = tmp_path_factory.mktemp("sb3") / "tiny.zip"
    env = gymnasium.make("escoba_env/Escoba-v0", episode="round")
    model = MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.learn(64)
    model.save(path)
    return path


def test_sb3_model_plays_legal_moves_and_matches_its_own_predict(sb3_model):
    from sb3_contrib import MaskablePPO

    agent = make_agent(f"sb3:{sb3_model}", seed=0)
    assert isinstance(agent, SB3Agent) and isinstance(agent, Agent)
    obs, masks = batch(8, seed=5)
    acts = agent.act_batch(obs, masks)
    assert (masks[np.arange(8), acts] == 1).all()
    model = MaskablePPO.load(sb3_model)
    want, _ = model.predict({"observation": obs, "action_mask": masks}, action_masks=masks > 0,
                            deterministic=True)
    np.testing.assert_array_equal(acts, want)
    with pytest.raises(ValueError, match="as an SB3 PPO model"):
        make_agent(f"sb3:{sb3_model},algo=ppo")
    with pytest.raises(ValueError, match="expects observation shape"):
        make_agent(f"sb3:{sb3_model}", rules=Rules(jokers=2))


def test_a_plain_ppo_model_is_masked_by_the_adapter(tmp_path):
    from stable_baselines3 import PPO

    env = gymnasium.make("escoba_env/Escoba-v0", episode="round")
    model = PPO("MultiInputPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    model.save(tmp_path / "ppo")  # SB3 adds .zip; the spec may leave it out too
    obs, masks = batch(8, seed=6)
    for spec in (f"sb3:{tmp_path / 'ppo'},algo=ppo",
                 f"sb3:{tmp_path / 'ppo.zip'},algo=ppo,deterministic=false"):
        acts = make_agent(spec, seed=0).act_batch(obs, masks)
        assert (masks[np.arange(8), acts] == 1).all()


def _evaluate(args: list[str], cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(ROOT / "evaluate.py"), *args, "--no-progress", "--no-plot"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_evaluate_plays_an_sb3_model_and_a_python_agent(sb3_model, user_module):
    r = _evaluate(["--vs", f"sb3:{sb3_model}", "--agents", "python:my_escoba_agents:make", "--rounds", "10",
                   "--out", "res/out"], user_module, pythonpath=user_module)
    assert r.returncode == 0, r.stderr
    assert "python:my_escoba_agents:make" in r.stdout and "rating mu" in r.stdout


def test_evaluate_answers_a_bad_outside_spec_in_one_line(tmp_path):
    r = _evaluate(["--vs", "sb3:missing.zip", "--agents", "random", "--rounds", "4"], tmp_path)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "sb3 model file not found" in lines[0] and "Traceback" not in r.stderr
