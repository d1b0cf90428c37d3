"""The compiled rollouts against the NumPy ones: the same actions, the same rollout values, bit for bit.

``agents.search.rollout_compiled`` reproduces ``strategy.rollout_policy`` (``policy_actions``) and the
whole of ``pimc.rollout_values`` for the default policy (``rollout_kernel``). Here both run on the same
positions of real play (random and policy moves mixed), at 2, 3 and 4 players, 2v2, prefer-single and
escoba de mesa, every threat model: every action and every value must be equal (values as float64
bits). The reference runs with ``ESCOBA_ENGINE=numpy`` (NumPy policy, NumPy engine).
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.moves import enumerate_moves
from agents.search.pimc import ROLLOUT_WEIGHTS, rollout_actions, rollout_values
from agents.worlds import deal_hidden, take_games, worlds_from_observations
from escoba_env import EscobaEngine, Rules
from escoba_env.executors import engine_compiled
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import action_masks, encode

pytestmark = pytest.mark.skipif(not engine_compiled.available(), reason="Numba is not installed ([fast])")

RULES = {
    "2p": Rules(),
    "3p": Rules(num_players=3),
    "4p": Rules(num_players=4),
    "2v2": Rules(num_players=4, partnerships=True),
    "prefer single, mesa": Rules(prefer_single=True, mesa_deal=True),
}


def _positions(rules: Rules, games: int, seed: int):
    """Yield engines of ``games`` single-round games at successive turns of mixed random/policy play."""
    e = EscobaEngine(games, rules, single_round=True)
    e.reset(seed)
    mix = np.random.default_rng(seed)
    while not e.done.all():
        yield e
        a = rollout_actions(e, mix)
        a = np.where(mix.random(games) < 0.4, sample_actions(e.legal, mix.random(games)), a)
        e.step(a)


@pytest.mark.parametrize("name", sorted(RULES))
@pytest.mark.parametrize("threat", ["count", "peek", "none"])
def test_compiled_policy_plays_the_numpy_policys_actions(name, threat, monkeypatch):
    checked = 0
    for e in _positions(RULES[name], 200, 7):
        fast = rollout_actions(e, np.random.default_rng(0), threat=threat)
        monkeypatch.setenv(engine_compiled.ENV_VAR, "numpy")
        slow = rollout_actions(e, np.random.default_rng(0), threat=threat)
        monkeypatch.delenv(engine_compiled.ENV_VAR)
        live = ~e.done
        assert np.array_equal(fast[live], slow[live]), f"{name}, {threat}"
        checked += int(live.sum())
    assert checked > 2000


def _rollout_inputs(e: EscobaEngine, live: np.ndarray, rules: Rules):
    """Return (worlds engine, card, option, seat) of every legal move of the seats to act in ``live``."""
    obs = encode(e, e.to_act[live], live)
    moves = enumerate_moves(obs, rules)
    worlds = worlds_from_observations(obs, rules, np.random.default_rng(1), 1)
    row = np.repeat(np.arange(len(live)), moves.count)
    sim = take_games(worlds, row, single_round=True)
    return sim, moves.card, moves.option, np.zeros(len(row), np.int64)


@pytest.mark.parametrize("name", sorted(RULES))
@pytest.mark.parametrize("threat", ["count", "peek", "none"])
def test_compiled_rollouts_give_the_numpy_rollouts_values(name, threat, monkeypatch):
    rules = RULES[name]
    compared = 0
    for t, e in enumerate(_positions(rules, 60, 11)):
        live = np.flatnonzero(~e.done & (e.pending < 0))
        if t % 3 or not live.size:
            continue
        sim, card, option, me = _rollout_inputs(e, live, rules)
        copy = np.arange(sim.num_games)
        fast = rollout_values(take_games(sim, copy), card, option, me, None, threat=threat)
        monkeypatch.setenv(engine_compiled.ENV_VAR, "numpy")
        rng = np.random.default_rng(0)
        slow = rollout_values(take_games(sim, copy), card, option, me, rng, threat=threat)
        monkeypatch.delenv(engine_compiled.ENV_VAR)
        assert fast.tobytes() == slow.tobytes(), f"{name}, {threat}, turn {t}"
        compared += len(fast)
    assert compared > 300 and ROLLOUT_WEIGHTS["sweep"] > 0


def test_compiled_worlds_deal_the_numpy_worlds_hidden_cards(monkeypatch):
    # deal_hidden: a stable sort of the hidden cards by their uniforms, ties included, every deck size
    # and table; the compiled decks and hands equal the NumPy ones.
    rng = np.random.default_rng(0)
    for t in range(120):
        n, nc, p = 40, (40, 41, 42)[t % 3], (2, 3, 4)[t % 3]
        unseen = rng.integers(0, 2**nc, n, dtype=np.uint64) & rng.integers(0, 2**nc, n, dtype=np.uint64)
        left = np.bitwise_count(unseen).astype(np.int64)
        sizes = np.zeros((n, p), np.int64)
        for s in range(1, p):
            sizes[:, s] = np.clip(left - sizes[:, 1:s].sum(axis=1), 0, 3)
        uniforms = rng.random((n, nc))
        uniforms[:, ::5] = 0.5  # ties: the lower id first
        own = rng.integers(0, 2**20, n, dtype=np.uint64)
        fast = deal_hidden(unseen, uniforms, sizes, own)
        monkeypatch.setenv(engine_compiled.ENV_VAR, "numpy")
        slow = deal_hidden(unseen, uniforms, sizes, own)
        monkeypatch.delenv(engine_compiled.ENV_VAR)
        assert all(np.array_equal(x, y) for x, y in zip(fast, slow, strict=True)), t


def test_first_same_world_points_each_world_at_the_first_that_deals_alike():
    # Late in a round few hidden cards are left, so many of a decision's worlds deal the same hands and
    # stock: the search plays those once (pimc.SearchAgent._compiled_values). Each world must point at
    # the first world of its own observation that deals exactly as it does, and nothing else.
    from agents.worlds_compiled import first_same_world

    rules = Rules()
    checked = merged = 0
    for t, e in enumerate(_positions(rules, 30, 5)):
        live = np.flatnonzero(~e.done & (e.pending < 0))
        if t % 4 or not live.size:
            continue
        counts = np.random.default_rng(t).integers(1, 40, len(live))
        obs = encode(e, e.to_act[live], live)
        w = worlds_from_observations(obs, rules, np.random.default_rng(t), counts)
        same = np.empty(w.num_games, np.int64)
        first_same_world(w.hands, w.deck, w.stock_pos, counts, same)
        block = np.repeat(np.arange(len(live)), counts)
        deal = [(w.hands[i].tobytes(), w.deck[i, w.stock_pos[i]:].tobytes()) for i in range(w.num_games)]
        for i in range(w.num_games):
            earlier = [j for j in range(i) if block[j] == block[i] and deal[j] == deal[i]]
            assert same[i] == (earlier[0] if earlier else i), (t, i)
        checked += w.num_games
        merged += int((same != np.arange(w.num_games)).sum())
    assert checked > 1000 and merged > 100


@pytest.mark.parametrize("spec", ["search", "oracle"])
def test_search_values_with_worlds_played_once_equal_the_numpy_search(spec, monkeypatch):
    # Worlds dealt alike are played once on the compiled path; the move values (float64 bits) and the
    # moves must be those of the NumPy search, which plays every world. The oracle's worlds are all
    # copies of the true state: every world after the first is a twin.
    from agents.search.pimc import OracleAgent, SearchAgent

    rules = Rules()
    cls = SearchAgent if spec == "search" else OracleAgent
    compared = 0
    for t, e in enumerate(_positions(rules, 40, 3)):
        live = np.flatnonzero(~e.done & (e.pending < 0))
        if t % 5 or not live.size:
            continue
        obs, masks = encode(e, e.to_act[live], live), action_masks(e, e.to_act[live], live)
        state = (e, live)
        fast_agent = cls(rules, seed=t, sims=60)
        fast = fast_agent.act_batch(obs, masks, state)
        monkeypatch.setenv(engine_compiled.ENV_VAR, "numpy")
        slow_agent = cls(rules, seed=t, sims=60)
        slow = slow_agent.act_batch(obs, masks, state)
        monkeypatch.delenv(engine_compiled.ENV_VAR)
        assert np.array_equal(fast, slow), t
        assert fast_agent.last_move_values.tobytes() == slow_agent.last_move_values.tobytes(), t
        compared += len(live)
    assert compared > 100


def test_compiled_rollouts_refuse_an_illegal_move_or_mismatched_params_and_change_nothing():
    """The kernel steps each game as it picks its action (no separate legality pass over the batch):
    a move that is not legal in its world, or params that disagree with the arrays' sizes, must still
    raise before any out-of-bounds write, and the caller's engine must stay as it was."""
    from agents.search.rollout_compiled import compiled_rollout_values, rollout_kernel
    from escoba_env.executors.engine_compiled import arrays, params

    rules = Rules()
    e = next(p for t, p in enumerate(_positions(rules, 8, 3)) if t == 4)
    live = np.flatnonzero(~e.done & (e.pending < 0))
    sim, card, option, me = _rollout_inputs(e, live, rules)
    before = [a.copy() for a in arrays(sim)]
    bad = card.copy()
    bad[-1] = int(np.flatnonzero([not (int(sim.legal[-1]) >> c) & 1 for c in range(40)])[0])
    with pytest.raises(ValueError, match="a rollout played an illegal action"):
        compiled_rollout_values(sim, bad, option, me, ROLLOUT_WEIGHTS, "count")
    assert all(np.array_equal(a, b) for a, b in zip(arrays(sim), before, strict=True))
    good = compiled_rollout_values(sim, card, option, me, ROLLOUT_WEIGHTS, "count")
    three = params(EscobaEngine(1, Rules(num_players=3), single_round=True), single_round=True)
    out = np.empty(len(card))
    with pytest.raises(ValueError, match="disagree with their params"):
        rollout_kernel(*arrays(sim), three, np.uint64(sim.seed), np.arange(len(card)), card,
                       np.asarray(option, np.uint64), me, 0, *_kernel_weights(), out)
    assert np.array_equal(good, compiled_rollout_values(sim, card, option, me, ROLLOUT_WEIGHTS, "count"))


def _kernel_weights():
    from agents.heuristic.strategy import Weights, single_card_weights
    from agents.search.rollout_compiled import choice_ranks, weight_vector

    w = Weights.of(ROLLOUT_WEIGHTS, False)
    return weight_vector(w, ROLLOUT_WEIGHTS["sweep"]), single_card_weights(w), choice_ranks(w)


def test_the_compiled_step_refuses_a_short_shuffle_scratch():
    """``step_games`` takes the shuffle's scratch from its caller (it allocates nothing): one too short
    is refused (-2) before any game is stepped, not written past its end."""
    from escoba_env.executors import engine_kernels
    from escoba_env.executors.engine_compiled import arrays, params

    e = EscobaEngine(3, Rules(), compiled=True)
    e.reset(2)
    before = [a.copy() for a in arrays(e)]
    n = e.num_games
    args = (*arrays(e), params(e), np.uint64(e.seed), sample_actions(e.legal, np.zeros(n)), np.zeros(0, bool),
            np.empty(n, np.int64), np.empty(n, np.uint64), np.empty(n, np.int64),
            np.empty((n, 6, e.num_sides), np.int64), np.empty((n, 8), np.int64))
    assert engine_kernels.step_games(*args, np.empty(engine_kernels.SORT_SCRATCH - 1, np.uint64)) == (-2, 0)
    assert all(np.array_equal(a, b) for a, b in zip(arrays(e), before, strict=True))
    assert engine_kernels.step_games(*args, np.empty(engine_kernels.SORT_SCRATCH, np.uint64)) == (-1, 0)
