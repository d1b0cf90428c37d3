"""The terminal game and the web arena face the same default opponent at each table size: one table,
``agents.nets.shipped.DEFAULT_OPPONENTS``, read by both."""

from __future__ import annotations

import pytest

from agents.nets.shipped import DEFAULT_OPPONENTS, table_name
from agents.spec.shipped_agents import default_opponent
from escoba_arena import terminal
from escoba_env.rulebook.rules import Rules

TABLES = [Rules(), Rules(num_players=3), Rules(num_players=4, partnerships=True)]


@pytest.mark.parametrize("rules", TABLES, ids=lambda r: table_name(r.num_players, r.partnerships))
def test_the_arena_and_the_terminal_game_default_to_the_same_opponent(rules):
    pytest.importorskip("starlette")
    from tests.frontends.arena_support import client

    spec = DEFAULT_OPPONENTS[rules.num_players, rules.partnerships]
    assert terminal.default_opponent(rules) == (spec, None)
    body = {"seed": 1, "rules": {"num_players": rules.num_players, "partnerships": rules.partnerships}}
    r = client().post("/api/games", json=body)  # the page's default spec, "neural"
    assert r.status_code == 201, r.text
    names = r.json()["view"]["names"][1:]
    label = "neural" if spec == "neural-2p" else spec  # the arena labels the 2-player network "neural"
    assert names == [f"partner {label}" if rules.partnerships and s == 2 else f"{label} #{s}"
                     for s in range(1, rules.num_players)]


def test_a_table_without_a_shipped_agent_falls_back_to_expert_with_a_note():
    assert default_opponent(Rules(num_players=4)) == ("expert",
                                                      "no shipped agent plays 4 players; playing expert")
