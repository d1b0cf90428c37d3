"""agents.search.hybrid: the search before the stock runs out, the exact endgame after it."""

from __future__ import annotations

import numpy as np
import pytest

from agents.heuristic.endgame import endgame_rows
from agents.search.hybrid import HybridAgent
from agents.spec.registry import make_agent
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode


def play_along(rules: Rules, games: int, seed: int, sims: int):
    """Yield (obs, masks, hybrid actions, search actions on the non-endgame rows, endgame agent's actions)."""
    hybrid = make_agent(f"hybrid:sims={sims}", rules=rules, seed=3)
    search = make_agent(f"search:sims={sims}", rules=rules, seed=3)
    exact = make_agent("endgame", rules=rules, seed=3)
    assert isinstance(hybrid, HybridAgent) and hybrid.name == f"hybrid:sims={sims}"
    eng = EscobaEngine(games, rules, single_round=True)
    eng.reset(seed=seed)
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs, masks = encode(eng, eng.to_act[live], live), action_masks(eng, eng.to_act[live], live)
        acts = hybrid.act_batch(obs, masks)
        eg = endgame_rows(obs, rules)
        searched = search.act_batch(obs[~eg], masks[~eg]) if (~eg).any() else np.zeros(0, np.int64)
        yield obs, masks, acts, eg, searched, exact.act_batch(obs, masks)
        full = np.zeros(eng.num_games, np.int64)
        full[live] = acts
        eng.step(full)


def test_hybrid_searches_before_the_endgame_and_solves_it_exactly():
    endgames = 0
    for _, masks, acts, eg, searched, exact in play_along(Rules(), games=6, seed=4, sims=30):
        assert masks[np.arange(len(acts)), acts].all()
        # before the endgame: the very search (same seed, same rows, so the same sampled worlds)
        assert np.array_equal(acts[~eg], searched)
        # at an empty stock: the endgame agent's choice (a minimax-best action, the expert's on ties)
        assert np.array_equal(acts[eg], exact[eg])
        endgames += int(eg.sum())
    assert endgames >= 30


def test_hybrid_is_the_search_alone_with_three_players():
    for _, _, acts, eg, searched, _ in play_along(Rules(num_players=3), games=2, seed=1, sims=20):
        assert not eg.any() and np.array_equal(acts, searched)


def test_hybrid_is_reproducible_after_reset():
    rules = Rules()
    eng = EscobaEngine(8, rules, single_round=True)
    eng.reset(seed=2)
    obs, masks = encode(eng, eng.to_act), action_masks(eng, eng.to_act)
    agent = HybridAgent(rules, seed=5, sims=20)
    first = agent.act_batch(obs, masks)
    agent.reset(5)
    assert np.array_equal(agent.act_batch(obs, masks), first)


def test_hybrid_refuses_bad_input():
    with pytest.raises(ValueError, match="sims"):
        make_agent("hybrid:sims=0")
    with pytest.raises(ValueError, match="sims"):
        make_agent("hybrid:sims=lots")
    agent = make_agent("hybrid", rules=Rules(jokers=1))
    assert agent.search.sims == HybridAgent.DEFAULT_SIMS
    e = EscobaEngine(1, Rules(), single_round=True)
    e.reset(seed=0)
    with pytest.raises(ValueError, match="rules"):
        agent.act_batch(encode(e, e.to_act), action_masks(e, e.to_act))
    with pytest.raises(ValueError, match="no legal action"):
        make_agent("hybrid").act_batch(encode(e, e.to_act), np.zeros((1, 40), np.int8))
