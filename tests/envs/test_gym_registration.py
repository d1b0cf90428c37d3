"""Gymnasium registration (escoba_env/Escoba-v0) and opponent spec strings through entry points."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import escoba_env
from agents.heuristic.greedy import GreedyAgent
from escoba_env import SingleAgentEscobaEnv
from escoba_env.faces.opponent_specs import GROUP, RandomOpponent, make_opponent, registered_names

ROOT = Path(__file__).resolve().parents[2]


def test_make_returns_the_single_agent_env_with_rules_and_options():
    env = gymnasium.make("escoba_env/Escoba-v0", num_players=3, target_score=15, reward="round_points",
                         seat=1, render_mode="ansi")
    assert env.spec.id == "escoba_env/Escoba-v0"
    inner = env.unwrapped
    assert isinstance(inner, SingleAgentEscobaEnv)
    assert inner.rules.num_players == 3 and inner.rules.target_score == 15
    assert inner.reward_kind == "round_points"
    assert all(isinstance(o, RandomOpponent) for o in inner.opponents) and len(inner.opponents) == 2
    obs, info = env.reset(seed=3)
    assert info["seat"] == 1 and obs["observation"].shape == (546,)
    assert "player_1 to act" in env.render()


def test_make_takes_a_rules_object():
    rules = escoba_env.Rules(num_players=4, partnerships=True)
    env = gymnasium.make("escoba_env/Escoba-v0", rules=rules, opponents=["random", GreedyAgent(), "random"])
    assert env.unwrapped.rules is rules and isinstance(env.unwrapped.opponents[1], GreedyAgent)
    vec = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=2, vectorization_mode="vector_entry_point",
                             rules=rules)
    assert vec.rules is rules
    with pytest.raises(ValueError, match="not both"):
        gymnasium.make("escoba_env/Escoba-v0", rules=rules, jokers=1)


def test_make_deals_what_the_class_deals():
    env = gymnasium.make("escoba_env/Escoba-v0", opponents=GreedyAgent())
    ref = SingleAgentEscobaEnv(GreedyAgent())
    obs, _ = env.reset(seed=8)
    expected, _ = ref.reset(seed=8)
    np.testing.assert_array_equal(obs["observation"], expected["observation"])


def test_check_env_passes_without_warnings():
    env = gymnasium.make("escoba_env/Escoba-v0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, skip_render_check=False)
    assert [str(w.message) for w in caught] == []


def test_bad_keywords_and_specs_raise_clear_errors():
    with pytest.raises(ValueError, match="colour"):
        gymnasium.make("escoba_env/Escoba-v0", colour="red")
    with pytest.raises(ValueError, match="unknown opponent 'nobody'"):
        gymnasium.make("escoba_env/Escoba-v0", opponents="nobody")
    with pytest.raises(TypeError, match="act"):
        gymnasium.make("escoba_env/Escoba-v0", opponents=42)
    with pytest.raises(ValueError, match="list of 2"):
        gymnasium.make("escoba_env/Escoba-v0", num_players=3, opponents=["random"])


def _fake_distribution(tmp_path: Path, entries: dict[str, str]) -> None:
    """Write an installed distribution's metadata that declares ``entries`` in the opponents group."""
    info = tmp_path / "fake_opponents-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-opponents\nVersion: 1.0\n")
    lines = [f"[{GROUP}]"] + [f"{k} = {v}" for k, v in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def test_spec_strings_resolve_through_the_entry_point_group(tmp_path, monkeypatch):
    (tmp_path / "fake_opponents.py").write_text(
        "from escoba_env.faces.opponent_specs import RandomOpponent\n"
        "def make(spec, rules, seed=None):\n"
        "    agent = RandomOpponent(rules, seed)\n"
        "    agent.spec = spec\n"
        "    return agent\n")
    _fake_distribution(tmp_path, {"fake": "fake_opponents:make"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "fake" in registered_names()
    env = gymnasium.make("escoba_env/Escoba-v0", opponents="fake:level=3")
    assert env.unwrapped.opponents[0].spec == "fake:level=3"


def test_the_project_declares_one_entry_point_that_resolves_every_registry_name(tmp_path, monkeypatch):
    """pyproject's one entry point lists every registry name; declared as installed, they resolve."""
    from agents.spec.registry import REGISTRY

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    assert declared == {"agents": "agents.spec.registry:OPPONENTS"}
    _fake_distribution(tmp_path, declared)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert set(REGISTRY) <= set(registered_names())
    opp = make_opponent("greedy", escoba_env.Rules())
    assert isinstance(opp, GreedyAgent)
    vec = gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=2, vectorization_mode="vector_entry_point",
                             opponents="expert")
    assert type(vec.opponents[0]).__name__ == "ExpertAgent"


def test_escoba_env_never_imports_agents():
    code = ("import sys, gymnasium, escoba_env\n"
            "env = gymnasium.make('escoba_env/Escoba-v0')\n"
            "env.reset(seed=0)\n"
            "v = gymnasium.make_vec('escoba_env/Escoba-v0', num_envs=2,\n"
            "                       vectorization_mode='vector_entry_point')\n"
            "v.reset(seed=0)\n"
            "print(sorted(m for m in sys.modules if m == 'agents' or m.startswith('agents.')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_entry_point_that_lists_its_names_resolves_them(tmp_path, monkeypatch):
    """An entry point whose object has ``names()`` resolves every name it lists, whatever its own name
    (how one entry point serves a whole registry); a name nobody lists is refused with the known names.

    Fails with make_opponent looking up only the entry point named like the spec's first word.
    """
    (tmp_path / "fake_zoo.py").write_text(
        "from escoba_env.faces.opponent_specs import RandomOpponent\n"
        "class Zoo:\n"
        "    def names(self):\n"
        "        return ['zebra']\n"
        "    def __call__(self, spec, rules, seed=None):\n"
        "        agent = RandomOpponent(rules, seed)\n"
        "        agent.spec = spec\n"
        "        return agent\n"
        "ZOO = Zoo()\n")
    _fake_distribution(tmp_path, {"zoo": "fake_zoo:ZOO"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "zebra" in registered_names()
    assert make_opponent("zebra:stripes=2", escoba_env.Rules()).spec == "zebra:stripes=2"
    with pytest.raises(ValueError, match="unknown opponent 'okapi'"):
        make_opponent("okapi", escoba_env.Rules())


def test_the_id_with_its_module_works_in_a_fresh_interpreter_without_importing_the_package():
    """``gymnasium.make("escoba_env:escoba_env/Escoba-v0")`` pasted alone works (Gymnasium imports the module
    named before the colon; Gymnasium 1.x has no plugin entry points that could register the bare id)."""
    code = ("import sys, gymnasium\n"
            "assert 'escoba_env' not in sys.modules\n"
            "env = gymnasium.make('escoba_env:escoba_env/Escoba-v0', opponents='random')\n"
            "obs, info = env.reset(seed=0)\n"
            "v = gymnasium.make_vec('escoba_env:escoba_env/Escoba-v0', num_envs=2,\n"
            "                      vectorization_mode='vector_entry_point')\n"
            "print(env.spec.id, type(v).__name__, obs['observation'].shape)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["escoba_env/Escoba-v0", "EscobaGymVectorEnv", "(546,)"]
