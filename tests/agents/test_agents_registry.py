"""Building agents from spec strings (agents.spec.registry)."""

from __future__ import annotations

import pytest

from agents import ExpertAgent, GreedyAgent, OracleAgent, RandomAgent, SearchAgent
from agents.spec.registry import (
    REGISTRY,
    UnknownName,
    canonical_spec,
    help_text,
    make_agent,
    parse_spec,
    read_specs,
    register,
)
from agents.spec.values import UNSET, AgentSpec, Choice, File, Flag, Int, Number, Param, Text
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


@pytest.mark.parametrize("spec, closest", [("grredy", "greedy"), ("exprt", "expert"),
                                            ("serch:sims=3", "search"), ("neural2p", "neural-2p")])
def test_an_unknown_agent_is_one_short_line_naming_the_closest(spec, closest):
    """Not the list of every agent (a 2,500-character line once): the closest names, on one line."""
    with pytest.raises(UnknownName) as err:
        make_agent(spec)
    msg = str(err.value)
    assert f"unknown agent '{spec.split(':')[0]}'" in msg and f"did you mean {closest}" in msg
    assert "\n" not in msg and len(msg) < 120
    with pytest.raises(UnknownName, match=r"^unknown agent 'alphazero'$"):
        make_agent("alphazero")  # nothing close: nothing suggested


@pytest.mark.parametrize("spec, closest", [("search:simz=3", "sims"), ("expert:decide=0.3", "decided")])
def test_an_unknown_parameter_names_the_closest(spec, closest):
    with pytest.raises(UnknownName, match=f"has no parameter .*; did you mean {closest}\\?$"):
        make_agent(spec)


def test_a_command_says_where_the_names_are_listed():
    with pytest.raises(UnknownName) as err:
        read_specs(["greedy", "grredy"], "escoba-evaluate")
    assert str(err.value) == ("unknown agent 'grredy'; did you mean greedy? (escoba-evaluate --help lists "
                              "them)")
    with pytest.raises(UnknownName, match=r"did you mean greedy\?\)? \(escoba-play --help lists them\)$"):
        read_specs(["search:policy=grredy"], "escoba-play")  # nested: the same, inside the outer error


@pytest.mark.parametrize("spec, match", [
    ("search:sims=many", "bad value 'many' for parameter 'sims'"),
    ("search:depth=3", "no parameter 'depth'.*sims"),
    ("search:sims", "expected key=value"),
    ("search:sims=0", "bad value '0' for parameter 'sims'.*an integer from 1 to 100,000"),
    ("search:sims=0400000", "an integer from 1 to 100,000"),
    ("search:sims=" + "9" * 5000, "bad value"),
    ("endgame:base=endgame:base=greedy", "an agent spec other than endgame"),
    ("expert:decided=nan", "a number from 0 to 100"),
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


@pytest.mark.parametrize("spelled, canonical", [
    ("search", "search"), ("search:sims=400", "search"), ("search:sims=0400", "search"),
    (" search : sims = 0400 ", "search"), ("search:epsilon=0.10,sims=200", "search:sims=200,epsilon=0.1"),
    ("search:horizon=round", "search"), ("search:horizon=4,threat=PEEK", "search:threat=peek,horizon=4"),
    ("hybrid:policy=neural-solo,leaf=net,sims=0200", "hybrid:sims=200,leaf=net,policy=neural-solo"),
    ("endgame:base=expert", "endgame"), ("endgame:base=search:sims=400", "endgame:base=search"),
    ("expert:decided=0.20,partner=1.0", "expert:partner=1"), ("strong-3p:sims=1000", "strong-3p"),
    ("openspiel-ismcts:sims=100,uct_c=2,rollouts=1", "openspiel-ismcts"),
    ("checkpoint:runs/x.pt,device=cpu,deterministic=no", "checkpoint:runs/x.pt,deterministic=false"),
    ("checkpoint:path=runs/x.pt", "checkpoint:runs/x.pt"), ("python:mymod:make", "python:mymod:make"),
    ("neural-2p:deterministic=1", "neural-2p"),
])
def test_a_spec_has_one_canonical_form(spelled, canonical):
    """Defaults dropped, parameters in the registry's order, values written one way; a spec already
    written canonically is its own canonical form (so it keeps its seeds)."""
    assert canonical_spec(spelled) == canonical
    assert canonical_spec(canonical) == canonical


def test_the_canonical_form_refuses_what_make_agent_refuses():
    for bad in ("nobody", "search:depth=3", "search:sims=0", "greedy:x=1"):
        with pytest.raises(ValueError):
            canonical_spec(bad)


def test_every_parameter_is_typed_and_every_description_is_one_short_line():
    for entry in REGISTRY.values():
        assert entry.help and "\n" not in entry.help and len(entry.help) <= 100, entry.name
        assert all(isinstance(p, Param) for p in entry.params.values()), entry.name
    for bad in ({"sims": int}, {"bad key": Int()}):
        with pytest.raises(ValueError, match="cannot register"):
            register("toy-bad", GreedyAgent, bad, "a toy")
    with pytest.raises(ValueError, match="one-line"):
        register("toy-bad", GreedyAgent, {}, "two\nlines")
    assert "toy-bad" not in REGISTRY


def test_declared_defaults_are_the_agents_own():
    """A canonical spec drops a value equal to the declared default: it must be what the agent takes."""
    import inspect

    assert make_agent("search").sims == 400 and make_agent("hybrid").search.sims == 1000
    assert make_agent("strong-3p", rules=Rules(num_players=3)).search.sims == 1000
    assert type(make_agent("endgame").base) is ExpertAgent
    for name, cls in (("search", SearchAgent), ("oracle", OracleAgent), ("expert", ExpertAgent)):
        signature = inspect.signature(cls)
        for key, param in REGISTRY[name].params.items():
            if key in signature.parameters and param.default is not UNSET:
                assert signature.parameters[key].default == param.default, (name, key)


@pytest.mark.parametrize("param, good, bad", [
    (Int(1, 10, limit=5), {"05": "5", "+3": "3"}, ["0", "11", "x", "1.5", "9" * 13]),
    (Int(1, 9, none=("none", "round")), {"ROUND": "none", "2": "2"}, ["-1"]),
    (Number(0.0, 1.0), {"0.50": "0.5", "1": "1", "-0": "0", "1e-1": "0.1"}, ["nan", "inf", "2", "x"]),
    (Choice(("a", "b")), {"A": "a"}, ["c", ""]),
    (Flag(), {"Yes": "true", "0": "false"}, ["maybe"]),
    (Text(), {" x ": "x"}, [" "]),
    (File(), {"a/b.pt": "a/b.pt"}, [""]),
    (AgentSpec(exclude=("endgame",)), {" greedy ": "greedy"}, ["endgame", "endgame:base=x", "", ":x"]),
])
def test_parameter_types_read_bound_and_write_one_form(param, good, bad):
    for text, canonical in good.items():
        assert param.canonical(text) == canonical
    for text in bad:
        with pytest.raises(ValueError):
            param.canonical(text)


def test_served_bounds_are_tighter_and_free_text_is_never_served():
    sims = REGISTRY["search"].params["sims"]
    assert sims.canonical("5000") == "5000" and sims.served("2000") == "2000"
    with pytest.raises(ValueError):
        sims.served("2001")
    assert "2,000" in sims.expected(served=True) and "100,000" in sims.expected()
    assert not Text().requestable and Text(limit=("cpu",)).requestable
    assert not REGISTRY["python"].params["target"].requestable


def test_the_agent_lists_come_from_the_registry_with_their_descriptions():
    register("toy-listed", GreedyAgent, {"level": Int(0, 9)}, "a toy agent for this test")
    try:
        text = help_text()
        assert "  toy-listed" in text and "a toy agent for this test" in text and "parameters: level" in text
        for entry in REGISTRY.values():
            assert f"  {entry.usage()} " in text and entry.help in text
        assert "  checkpoint:PATH " in text and "  python:MODULE:FACTORY " in text
    finally:
        REGISTRY.pop("toy-listed")


def test_policy_and_base_are_agent_specs():
    """Every parameter that names another agent is declared as one (the arena checks it as a spec)."""
    for name, key in (("search", "policy"), ("hybrid", "policy"), ("endgame", "base")):
        assert isinstance(REGISTRY[name].params[key], AgentSpec)
    assert not REGISTRY["python"].from_request and not REGISTRY["sb3"].from_request
    assert REGISTRY["search"].from_request and REGISTRY["checkpoint"].from_request


def test_the_leaderboard_describes_its_agents_with_the_registry_s_descriptions():
    from pathlib import Path

    from agents.bench.leaderboard import LEADERBOARD_DIR, load_cards, render

    root = Path(__file__).resolve().parents[2]
    cards = load_cards(root / LEADERBOARD_DIR)
    page = render(cards)
    for _, card in cards:
        assert f"- `{card['agent']}`: {REGISTRY[card['agent']].help}\n" in page


def test_the_package_front_lists_the_registered_names():
    from agents import Agent, available, make_agent  # noqa: F401  (the names the front keeps)

    assert available() == list(REGISTRY)
    assert {"random", "greedy", "expert", "search", "neural-2p"} <= set(available())
