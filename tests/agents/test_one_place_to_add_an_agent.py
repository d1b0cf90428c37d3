"""One place to add an agent: a toy agent registered with one ``register`` call plays through
``escoba-evaluate``, ``gymnasium.make(..., opponents=...)`` and ``escoba-bench card --quick``, and the
help lists, the arena's allow-list and the one Gymnasium entry point know it without another edit."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from agents.base import Agent
from agents.spec.registry import REGISTRY, canonical_spec, help_text, register
from agents.spec.values import Int

ROOT = Path(__file__).resolve().parents[2]


class Toy(Agent):
    """Plays its highest legal card (``level`` only shows that a parameter reaches it)."""

    name = "toy"

    def __init__(self, rules=None, seed=None, level: int = 0):
        self.level = level
        super().__init__(rules, seed)

    def act_batch(self, observations, action_masks, state=None):
        masks = np.asarray(action_masks) > 0
        return (masks.shape[1] - 1 - np.argmax(masks[:, ::-1], axis=1)).astype(np.int64)


@pytest.fixture
def toy():
    """The one call that adds an agent."""
    register("toy", Toy, {"level": Int(0, 9, limit=5, default=0)}, "plays its highest legal card")
    yield "toy"
    REGISTRY.pop("toy", None)


def test_a_registered_agent_plays_a_tournament_through_escoba_evaluate(toy, tmp_path, capsys):
    from agents.tournament.cli import build_parser, main

    assert "\n  toy " in build_parser().format_help() and "plays its highest legal card" in help_text()
    out = tmp_path / "ev"
    assert main(["--agents", "toy:level=03", "greedy", "--rounds", "4", "--block-deals", "2", "--workers",
                 "1", "--no-progress", "--no-plot", "--out", str(out)]) == 0
    result = json.loads((tmp_path / "ev.json").read_text())
    assert "toy:level=03" in json.dumps(result["pairs"])
    assert canonical_spec("toy:level=03") == "toy:level=3" and canonical_spec("toy:level=0") == "toy"


def _fake_distribution(tmp_path: Path) -> None:
    """Install pyproject's ``escoba_env.opponents`` entry points as a distribution's metadata."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    from escoba_env.faces.opponent_specs import GROUP

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    info = tmp_path / "escoba_registry_entry-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: escoba-registry-entry\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("\n".join([f"[{GROUP}]"] + [f"{k} = {v}" for k, v in
                                                                         declared.items()]) + "\n")


def test_a_registered_agent_is_a_gymnasium_opponent_by_name(toy, tmp_path, monkeypatch):
    _fake_distribution(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = gymnasium.make("escoba_env/Escoba-v0", opponents="toy:level=2")
    opponent = env.unwrapped.opponents[0]
    assert isinstance(opponent, Toy) and opponent.level == 2
    obs, _ = env.reset(seed=1)
    for _ in range(200):
        obs, _, done, cut, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        if done or cut:
            break
    assert done or cut


def test_a_registered_agent_gets_a_quick_card(toy, tmp_path, monkeypatch):
    from agents.bench.cli import main
    from agents.bench.protocol import PROTOCOLS, Protocol, TableSpec

    tables = {"2p": TableSpec("2p", 2, False, ("random", "greedy"), deals=8, quick_deals=4, block_deals=2)}
    monkeypatch.setitem(PROTOCOLS, "t-toy", Protocol("t-toy", tables))
    out = tmp_path / "card.json"
    assert main(["card", "toy", "--version", "t-toy", "--quick", "--out", str(out), "--workers", "1",
                 "--no-progress"]) == 0
    card = json.loads(out.read_text())
    assert card["agent"] == "toy" and card["quick"] is True and len(card["opponents"]) == 2


def test_a_registered_agent_is_allow_listed_with_its_declared_bounds(toy):
    pytest.importorskip("starlette")
    from escoba_arena.web.allow import CAPS, AllowList, Refused

    assert "toy" in CAPS and "level" in CAPS["toy"]
    allow = AllowList([])
    assert allow.check("toy:level=05") == "toy:level=5" and allow.check("toy:level=0") == "toy"
    with pytest.raises(Refused, match="from 0 to 5"):
        allow.check("toy:level=6")


def test_every_agent_list_names_a_registered_agent_with_its_description(toy):
    from agents.tournament.cli import build_parser as evaluate_parser
    from escoba_arena.terminal import build_parser as play_parser

    for parser in (evaluate_parser(), play_parser()):
        text = parser.format_help()
        assert "\n  toy " in text and "plays its highest legal card" in text and "parameters: level" in text
    pytest.importorskip("starlette")
    from tests.frontends.arena_support import client

    agents = {a["name"]: a for a in client().get("/api/info").json()["agents"]}
    assert agents["toy"] == {"name": "toy", "params": ["level"], "help": "plays its highest legal card"}
