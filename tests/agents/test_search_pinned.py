"""The search agent's decisions are pinned: a faster rollout policy must play exactly the same moves.

The benchmark cards in ``benchmarks/leaderboard`` and the teacher labels of the shipped networks were
made with the search agents; a change to their rollout policy that moved a single decision would make
those figures irreproducible. These digests were taken from the straightforward implementation before
it was optimised (``rollout_actions`` at every step of random games, under every rule set that changes
its code path and every ``threat``; ``SearchAgent`` decisions and move values at 2p, 3p and 2v2).
A deliberate change of the policy changes a digest here and needs new benchmark figures.

Every digest is checked on both paths, each with the other disabled: the NumPy code
(``ESCOBA_ENGINE=numpy``) and the compiled engine step and rollouts (``ESCOBA_ENGINE=compiled``, skipped
without Numba).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from agents.search.pimc import SearchAgent, rollout_actions
from escoba_env import EscobaEngine, Rules
from escoba_env.executors import engine_compiled
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import action_masks, encode

RULES = {
    "2p": Rules(),
    "3p": Rules(num_players=3),
    "2v2": Rules(num_players=4, partnerships=True),
    "jokers": Rules(jokers=2),
    "jokers-3p": Rules(num_players=3, jokers=2),
    "mesa": Rules(mesa_deal=True),
}

STEPS = [
    "numpy",
    pytest.param("compiled", marks=pytest.mark.skipif(not engine_compiled.available(),
                                                      reason="Numba is not installed (the [fast] extra)")),
]


@pytest.fixture(params=STEPS)
def step(request, monkeypatch):
    """Run the test with ``ESCOBA_ENGINE`` set to one path (the other disabled); return its name."""
    monkeypatch.setenv(engine_compiled.ENV_VAR, request.param)
    return request.param


ROLLOUT_DIGESTS = {
    ('2p', 'count', 0.0): '3a4d9a77d882e023',
    ('2p', 'count', 0.2): 'e09ac0abbe4e1f4a',
    ('2p', 'peek', 0.0): 'c6344c900a429425',
    ('2p', 'peek', 0.2): '02ce48e504665d3d',
    ('2p', 'none', 0.0): '59b4d71a844a8516',
    ('2p', 'none', 0.2): '3862959eb7dbc81a',
    ('2v2', 'count', 0.0): 'd53069e07d044a46',
    ('2v2', 'count', 0.2): '660a4ca136e680cc',
    ('2v2', 'peek', 0.0): 'f2441db2684596e5',
    ('2v2', 'peek', 0.2): '210bfae65ed56969',
    ('2v2', 'none', 0.0): '2b94ad06f3096123',
    ('2v2', 'none', 0.2): '83a4ea0eefadc48f',
    ('3p', 'count', 0.0): '50e0d2ced0b96dc4',
    ('3p', 'count', 0.2): '16650e97cd89fb67',
    ('3p', 'peek', 0.0): '118715bb22d4f8d1',
    ('3p', 'peek', 0.2): 'e292ca97845b6c52',
    ('3p', 'none', 0.0): '84a3ec24d7eabc6e',
    ('3p', 'none', 0.2): '69a25af082012934',
    ('jokers', 'count', 0.0): 'e4d8ca38465da7ac',
    ('jokers', 'count', 0.2): '2c8e0d60ad0beaac',
    ('jokers', 'peek', 0.0): '2041bb05c82b8bb6',
    ('jokers', 'peek', 0.2): 'c7fc36b10134aefb',
    ('jokers', 'none', 0.0): '79b14a4c1c5cfc82',
    ('jokers', 'none', 0.2): '12611902689c4b82',
    ('jokers-3p', 'count', 0.0): '8c263ff3ef306153',
    ('jokers-3p', 'count', 0.2): 'f81096eb2ff0b161',
    ('jokers-3p', 'peek', 0.0): '6952718d9f67e802',
    ('jokers-3p', 'peek', 0.2): '662e410b219f5f5e',
    ('jokers-3p', 'none', 0.0): '8c21365e3e18c176',
    ('jokers-3p', 'none', 0.2): '25e7787acf7a8af0',
    ('mesa', 'count', 0.0): '8f1d2bf3a13ad24b',
    ('mesa', 'count', 0.2): '4df7fb4d99409f73',
    ('mesa', 'peek', 0.0): '291d9e52983795cf',
    ('mesa', 'peek', 0.2): '9a7bf2ee3ffe9bcc',
    ('mesa', 'none', 0.0): 'ffb27b29d113dc9c',
    ('mesa', 'none', 0.2): '70f4e99fd4ded2cb',
}


def _rollout_digest(rules: Rules, threat: str, epsilon: float) -> str:
    """Play 300 single-round games with a mix of random and policy moves; hash every policy action."""
    e = EscobaEngine(300, rules, single_round=True)
    e.reset(seed=4)
    rng, mix = np.random.default_rng(1), np.random.default_rng(2)
    h = hashlib.sha256()
    while not e.done.all():
        a = rollout_actions(e, rng, epsilon=epsilon, threat=threat)
        live = ~e.done
        h.update(np.where(live, a, -1).astype(np.int64).tobytes())
        # Half the moves random, so the positions are varied (not only the policy's own lines).
        a = np.where(mix.random(e.num_games) < 0.5, sample_actions(e.legal, mix.random(e.num_games)), a)
        e.step(a)
    return h.hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(RULES))
@pytest.mark.parametrize("threat", ["count", "peek", "none"])
def test_rollout_policy_actions_are_pinned(name, threat, step):
    for eps in (0.0, 0.2):
        assert _rollout_digest(RULES[name], threat, eps) == ROLLOUT_DIGESTS[name, threat, eps]


SEARCH_DIGESTS = {
    '2p': '1203a0fd6fa0ee65',
    '3p': 'b1f814333a9f9e3f',
    '2v2': 'e91c0f3a3d437489',
    'jokers': '14a08a644fc83a80',
}


def _search_digest(rules: Rules, sims: int) -> str:
    """Search decisions and move values at every turn of 8 games played by the search agent itself."""
    e = EscobaEngine(8, rules, single_round=True)
    e.reset(seed=9)
    agent = SearchAgent(rules, seed=3, sims=sims)
    h = hashlib.sha256()
    while not e.done.all():
        live = np.nonzero(~e.done)[0]
        seats = e.to_act[live]
        a = agent.act_batch(encode(e, seats, live), action_masks(e, seats, live))
        h.update(a.astype(np.int64).tobytes())
        h.update(np.nan_to_num(agent.last_move_values, nan=-99.0).round(12).tobytes())
        actions = np.zeros(e.num_games, np.int64)
        actions[live] = a
        e.step(actions, active=~e.done)
    return h.hexdigest()[:16]


@pytest.mark.parametrize("name", ["2p", "3p", "2v2", "jokers"])
def test_search_decisions_and_values_are_pinned(name, step):
    assert _search_digest(RULES[name], 60) == SEARCH_DIGESTS[name]
