"""search:leaf=...: rollouts that stop at the empty stock and take the 2-player endgame's value.

At a 2-player endgame decision the exact leaf makes every move's rollout value the move's minimax
value, so it is pinned there against ``agents.heuristic.endgame.solve``; the sign of a leaf taken with the
other seat to act is pinned with a hand-made leaf; the network leaf is checked against the exact
one on real endgames.
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.heuristic.endgame import solve
from agents.moves import enumerate_moves
from agents.search.pimc import SearchAgent, rollout_values
from agents.spec.registry import make_agent
from agents.worlds import observation_masks, take_games
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import PLANE, action_masks, encode
from tests.agents.test_endgame import endgame_positions, play_round

RULES = Rules()


def _per_action(agent: SearchAgent, k: int) -> np.ndarray:
    """Return (k, 40) the best move value per first action of the agent's last decisions."""
    moves = agent.last_moves
    out = np.full((k, 40), -np.inf)
    np.maximum.at(out, (moves.row, moves.card), agent.last_move_values)
    return out


def _no_pending(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Rows whose legal actions are hand cards (no capture choice under way)."""
    hand = observation_masks(obs, RULES)[:, PLANE["hand"]]
    legal = (masks.astype(np.uint64) << np.arange(40, dtype=np.uint64)).sum(axis=1).astype(np.uint64)
    return (legal & ~hand) == 0


def test_the_exact_leaf_gives_every_endgame_move_its_minimax_value():
    _, obs = endgame_positions(RULES, 120, 5)
    masks = np.array([np.isfinite(r).astype(np.int8) for r in solve(obs, RULES)])
    keep = _no_pending(obs, masks) & (masks.sum(axis=1) > 1)
    obs, masks = obs[keep], masks[keep]
    assert len(obs) > 100
    agent = SearchAgent(RULES, seed=0, sims=8, leaf="exact")
    agent.act_batch(obs, masks)
    got = _per_action(agent, len(obs))
    want = solve(obs, RULES)
    legal = masks > 0
    np.testing.assert_array_equal(got[legal], want[legal])


def test_a_leaf_value_counts_for_the_side_to_act_at_the_leaf():
    # Real rounds at the last turns before the last deal (the non-dealer's, then the dealer's): the
    # move, the reply if any, the last deal, the leaf, taken with the non-dealer to act.
    states = []

    def keep(eng, live, obs, masks):
        stock = eng.rules.num_cards - eng.stock_pos[live]
        hands = np.bitwise_count(eng.hands[live]).sum(axis=1)
        for i in np.flatnonzero((stock == 6) & (hands <= 2) & (eng.pending[live] < 0)):
            states.append(take_games(eng, live[i:i + 1], single_round=True))

    play_round(RULES, 60, 11, keep)
    assert len(states) > 20
    seen = []

    def leaf(engine, games):
        seen.append((engine.stock_pos[games].copy(), engine.to_act[games].copy(),
                     engine.pending[games].copy()))
        return np.full(len(games), 3.0)

    actors = set()
    for e in states:
        me = e.to_act.copy()
        obs = encode(e, me, np.zeros(1, np.int64))
        moves = enumerate_moves(obs, RULES, observation_masks(obs, RULES))
        sim = take_games(e, np.zeros(1, np.int64), single_round=True)
        v = rollout_values(sim, moves.card[:1], moves.option[:1], me, np.random.default_rng(0), leaf=leaf)
        stock, actor, pending = seen.pop()
        assert not seen
        assert stock[0] == RULES.num_cards and pending[0] < 0
        assert v[0] == (3.0 if actor[0] == me[0] else -3.0)
        actors.add(bool(actor[0] == me[0]))
    assert actors == {True, False}


def test_the_network_leaf_agrees_with_the_exact_one_on_real_endgames():
    _, obs = endgame_positions(RULES, 120, 5)
    masks = np.array([np.isfinite(r).astype(np.int8) for r in solve(obs, RULES)])
    keep = _no_pending(obs, masks) & (masks.sum(axis=1) > 1)
    obs, masks = obs[keep], masks[keep]
    exact = SearchAgent(RULES, seed=0, sims=8, leaf="exact")
    net = SearchAgent(RULES, seed=0, sims=8, leaf="net")
    exact.act_batch(obs, masks)
    picks = net.act_batch(obs, masks)
    a, b = exact.last_move_values, net.last_move_values
    ok = np.isfinite(a)
    assert np.corrcoef(a[ok], b[ok])[0, 1] > 0.9
    values = solve(obs, RULES)
    regret = np.nanmax(values, axis=1) - values[np.arange(len(obs)), picks]
    assert regret.mean() < 0.1


def test_hybrid_with_a_leaf_plays_legal_moves_and_is_named_by_it():
    agent = make_agent("hybrid:sims=50,leaf=net", rules=RULES, seed=1)
    assert agent.name == "hybrid:sims=50,leaf=net"
    assert make_agent("hybrid", rules=RULES, seed=1).name == "hybrid:sims=1000"
    eng = EscobaEngine(8, RULES, single_round=True)
    eng.reset(seed=3)
    while not eng.done.all():
        g = np.flatnonzero(~eng.done)
        obs, m = encode(eng, eng.to_act[g], g), action_masks(eng, eng.to_act[g], g)
        acts = np.zeros(8, np.int64)
        acts[g] = agent.act_batch(obs, m)
        assert m[np.arange(len(g)), acts[g]].all()
        eng.step(acts)


@pytest.mark.parametrize("spec, rules, message", [
    ("search:leaf=solver", RULES, "leaf.*one of exact, net"),
    ("search:leaf=exact", Rules(num_players=3), "2-player game"),
    ("hybrid:leaf=net", Rules(num_players=4, partnerships=True), "2-player game"),
    ("search:leaf=net", Rules(jokers=2), "without jokers"),
])
def test_a_leaf_that_cannot_be_computed_is_refused(spec, rules, message):
    with pytest.raises(ValueError, match=message):
        make_agent(spec, rules=rules, seed=0)
