"""Guards of the run journal: a resume reuses finished blocks only when every setting that shapes them
is the same (a block of other settings holds other deals, seeds or games)."""

from __future__ import annotations

import dataclasses

import pytest

from agents.tournament import TournamentConfig, run_tournament
from agents.tournament.journal import Journal, run_key
from escoba_env import Rules

BASE = TournamentConfig(agents=("random", "greedy"), deals=6, block_deals=2, seed=5)
BASE3 = dataclasses.replace(BASE, agents=("random", "greedy", "expert"), rules=Rules(num_players=3))

CHANGES = {
    "block_deals": {"block_deals": 3},
    "deals": {"deals": 8},
    "seed": {"seed": 6},
    "agents": {"agents": ("random", "expert")},
    "vs": {"vs": "expert"},
    "rules": {"rules": Rules(target_score=15)},
    "games": {"games": True},
    "duplicate": {"duplicate": False},
    "orders": {"orders": 2},
}
"""One change of each setting that determines a run's blocks."""


@pytest.mark.parametrize("setting", sorted(CHANGES))
def test_a_setting_that_shapes_the_blocks_changes_the_run_key(setting):
    """The run key differs when one setting that shapes the blocks differs (block size included)."""
    before = BASE3 if setting == "orders" else BASE  # a second order of play needs three sides
    after = dataclasses.replace(before, **CHANGES[setting])
    assert run_key(before, record=False) != run_key(after, record=False)


def test_how_a_run_is_played_leaves_the_run_key_alone():
    """Workers, backend and confidence change how a run is played, not its blocks: the same key."""
    other = dataclasses.replace(BASE, workers=3, backend="ray", confidence=0.9)
    assert run_key(other, record=False) == run_key(BASE, record=False)


def test_a_journal_is_not_resumed_with_another_block_size(tmp_path):
    """Blocks of 2 deals do not line up with blocks of 3: a journal written with one block size is
    refused when a run with the other resumes it, and kept as it was."""
    run = run_tournament(BASE)
    journal = Journal(tmp_path / "r.journal.jsonl", run_key(BASE, record=False))
    journal.start(resume=False)
    journal.add(run.blocks[0][0])
    journal.close()
    written = journal.path.read_bytes()
    other = dataclasses.replace(BASE, block_deals=3)
    with pytest.raises(ValueError, match="other settings"):
        Journal(journal.path, run_key(other, record=False)).load()
    assert journal.path.read_bytes() == written
    assert len(Journal(journal.path, journal.key).load()) == 1
