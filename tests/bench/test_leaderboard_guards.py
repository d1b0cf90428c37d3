"""Guards of the leaderboard's to-do list: which quick card estimates the CPU time a missing card needs."""

from __future__ import annotations

import json

import pytest

from agents.bench import PROTOCOLS, Protocol, TableSpec, leaderboard
from agents.bench.card import card_config, default_out
from agents.tournament.runner import make_tasks

CPU = {"t0": 100.0, "t1": 900.0}
"""CPU seconds of each version's quick card (a rate per game nine times higher in t1)."""


@pytest.fixture
def two_versions(monkeypatch):
    """Two tiny protocol versions whose 2-player tables have the same panel (t0 registered first)."""
    for v in CPU:
        table = TableSpec("2p", 2, False, ("random", "greedy"), deals=8, quick_deals=4, block_deals=2)
        monkeypatch.setitem(PROTOCOLS, v, Protocol(v, {"2p": table}))
    monkeypatch.setitem(leaderboard.EXPECTED, "2p", ("expert",))


def _games(config) -> int:
    """Return the games a card of ``config`` plays (deals of every task, one game a side)."""
    return sum(t.hi - t.lo for t in make_tasks(config)) * config.rules.num_sides


@pytest.mark.parametrize("version", sorted(CPU))
def test_the_current_versions_quick_card_is_preferred_over_an_older_ones(two_versions, tmp_path, version):
    """With quick cards of the same agent in two versions of a table with the same panel, the to-do list
    estimates a missing card of a version at the CPU time per game of that version's quick card, never
    at another version's."""
    for v, cpu in CPU.items():
        default_out("expert", v, "2p", True, tmp_path).write_text(json.dumps({"timing": {"cpu_s": cpu}}))
    (row,) = leaderboard.todo(tmp_path, version, tables=("2p",))
    assert row["state"] == "missing"
    per_game = CPU[version] / _games(card_config("expert", version, "2p", quick=True))
    assert row["cpu_s_left"] == pytest.approx(per_game * _games(card_config("expert", version, "2p")))
