"""Building agents from spec strings (agents.registry)."""

from __future__ import annotations

import pytest

from agents import ExpertAgent, GreedyAgent, OracleAgent, RandomAgent, SearchAgent, make_agent
from agents.registry import REGISTRY, parse_spec
from escoba_env import Rules


@pytest.mark.parametrize("spec, cls", [("random", RandomAgent), ("greedy", GreedyAgent),
                                       ("expert", ExpertAgent), ("search", SearchAgent),
                                       ("oracle", OracleAgent)])
def test_registry_builds_every_named_agent(spec, cls):
    agent = make_agent(spec, rules=Rules(num_players=3), seed=1)
    assert type(agent) is cls
    assert agent.rules == Rules(num_players=3)


def test_registry_parses_key_value_parameters():
    agent = make_agent("search:sims=37,epsilon=0.25,horizon=4", seed=0)
    assert (agent.sims, agent.epsilon, agent.horizon) == (37, 0.25, 4)
    assert agent.name == "search:sims=37"
    assert make_agent("search:horizon=round").horizon is None
    assert parse_spec(" expert : decided=0.5 ") == ("expert", {"decided": "0.5"})


def test_unknown_agent_lists_what_exists():
    with pytest.raises(ValueError) as err:
        make_agent("alphazero")
    msg = str(err.value)
    assert "unknown agent 'alphazero'" in msg
    for name in ("random", "greedy", "expert", "search", "oracle", "checkpoint"):
        assert f"  {name} (" in msg
    assert "CHEATING" in msg


@pytest.mark.parametrize("spec, match", [
    ("search:sims=many", "bad value 'many' for parameter 'sims'"),
    ("search:depth=3", "no parameter 'depth'.*sims"),
    ("search:sims", "expected key=value"),
    ("search:sims=0", "sims must be a positive int"),
    ("greedy:x=1", "no parameter 'x'.*none"),
    ("", "non-empty"),
])
def test_bad_parameters_are_clear_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        make_agent(spec)


def test_checkpoint_needs_an_existing_file(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        make_agent(f"checkpoint:{tmp_path / 'missing.pt'}")
    with pytest.raises(ValueError, match="needs a file"):
        make_agent("checkpoint:")


def test_registry_help_labels_the_oracle_as_cheating():
    assert "CHEATING" in REGISTRY["oracle"].help and "upper-bound" in REGISTRY["oracle"].help


def test_registry_agents_are_seeded():
    a, b = make_agent("random", seed=4), make_agent("random", seed=4)
    assert a.rng.random() == b.rng.random()
