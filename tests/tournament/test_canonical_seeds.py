"""Tournament seeds come from the canonical spec, not its spelling: ``search``, ``search:sims=400`` and
``search:sims=0400`` are one agent with one seed, and a spec already written canonically keeps the seeds
it always had (so published figures keep their digits)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from agents.tournament.runner import TournamentConfig, agent_seed, run_tournament, seed_spec


def _text_seed(seed: int, specs: tuple[str, ...], block: int, position: int) -> int:
    """The seed as it was derived before: from the specs' text as written."""
    key = zlib.crc32("\x1f".join(specs).encode())
    ss = np.random.SeedSequence([seed, key, block, position])
    return int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1))


@pytest.mark.parametrize("spellings", [
    ("search", "search:sims=400", "search:sims=0400", " search : sims = 400 ", "search:horizon=round"),
    ("hybrid:sims=500,leaf=net", "hybrid:leaf=net,sims=0500", "hybrid:leaf=NET,sims=500"),
    ("endgame", "endgame:base=expert", "endgame:base=expert:decided=0.2"),
])
def test_every_spelling_of_an_agent_gets_one_seed(spellings):
    seeds = {agent_seed(7, (s, "greedy"), b, p) for s in spellings for b, p in ((0, 0), (3, 1))}
    assert len(seeds) == 2
    assert len({seed_spec(s) for s in spellings}) == 1


@pytest.mark.parametrize("specs", [("search", "greedy"), ("hybrid:sims=500,leaf=net", "expert"),
                                   ("search:sims=1600", "hybrid:sims=200,leaf=net,policy=neural-solo"),
                                   ("python:mymod:make", "checkpoint:runs/x.pt"), ("not-registered", "x")])
def test_a_spec_written_canonically_keeps_its_seed(specs):
    for block, position in ((0, 0), (2, 1)):
        assert agent_seed(11, specs, block, position) == _text_seed(11, specs, block, position)


def test_distinct_agents_keep_distinct_seeds():
    assert agent_seed(1, ("search:sims=200",), 0, 0) != agent_seed(1, ("search",), 0, 0)


def test_two_spellings_play_the_same_tournament():
    """A stochastic agent (epsilon-greedy rollouts) under two spellings: the same numbers."""
    def points(spec: str) -> list[np.ndarray]:
        config = TournamentConfig(agents=("greedy",), vs=spec, deals=4, block_deals=2, seed=3)
        return [b.points for blocks in run_tournament(config).blocks for b in blocks]

    a, b = points("search:sims=3,epsilon=0.5"), points("search:epsilon=0.50,sims=03,rollout=greedy")
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
