"""Guards of outside agents: a ``python:`` agent with its own randomness plays the same games whatever
ran before (the tournament re-seeds every agent per block, the wrapped one included)."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from agents.tournament import TournamentConfig
from agents.tournament.runner import make_tasks, run_task
from escoba_env import EscobaEngine
from escoba_env.executors.observation import action_masks, encode

MODULE = '''
import numpy as np


class Dice:
    """Plays a uniformly random legal card, drawn from its own generator (re-seeded by reset)."""

    def __init__(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def reset(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, state=None):
        return int(self.rng.choice(np.flatnonzero(action_mask)))


def make(rules, seed=None):
    return Dice(seed)
'''
SPEC = "python:guard_dice_agent:make"


@pytest.fixture
def dice_module(tmp_path, monkeypatch):
    (tmp_path / "guard_dice_agent.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_resetting_a_python_agent_reseeds_the_agent_it_wraps(dice_module):
    """``reset(seed)`` of a ``python:`` agent re-seeds the user's agent: after it, the same choices
    as after the same reset before, however many moves were drawn in between."""
    eng = EscobaEngine(16)
    eng.reset(0)
    obs, masks = encode(eng, eng.to_act), action_masks(eng, eng.to_act)
    agent = make_agent(SPEC, seed=1)
    agent.reset(7)
    first = agent.act_batch(obs, masks)
    for _ in range(3):
        agent.act_batch(obs, masks)
    agent.reset(7)
    np.testing.assert_array_equal(agent.act_batch(obs, masks), first)
    agent.reset(8)
    assert not np.array_equal(agent.act_batch(obs, masks), first)


def test_a_python_agents_blocks_do_not_depend_on_the_blocks_played_before(dice_module):
    """A tournament block with a random ``python:`` agent gives the same numbers whether its blocks run
    in order or in reverse (as a resumed or parallel run takes them)."""
    config = TournamentConfig(agents=(SPEC, "greedy"), deals=8, block_deals=2, seed=3)
    tasks = make_tasks(config)
    assert len(tasks) >= 4
    forward = [run_task(t) for t in tasks]
    backward = [run_task(t) for t in reversed(tasks)][::-1]
    for a, b in zip(forward, backward, strict=True):
        assert (a.lineup, a.block) == (b.lineup, b.block)
        for k in ("deal", "rotation", "points", "categories", "rounds"):
            np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=f"block {a.block}: {k}")
