"""Hypothesis properties of random engine games (docs/rules.md §4-7).

- the 40 cards (41 or 42 with jokers, docs/rules.md §11) are conserved at every step;
- every masked action is accepted, every unmasked one is rejected and changes nothing;
- a round's points are its categories plus escobas, each category awarded to one side at most;
- cumulative scores are the sum of round points, and games end exactly as §7 says.

Every property runs over the variants too: jokers 0/1/2 and escoba de mesa are drawn with the rest.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from tests.helpers import assert_same_state, state_arrays

ONE = np.uint64(1)


@st.composite
def rules_strategy(draw) -> Rules:
    players = draw(st.sampled_from([2, 3, 4]))
    return Rules(
        num_players=players,
        partnerships=players == 4 and draw(st.booleans()),
        target_score=draw(st.sampled_from([1, 5, 11, 21])),
        sevens_rule=draw(st.sampled_from(["most_sevens", "most_sevens_tiebreak", "primera"])),
        bonus_sweeps=draw(st.booleans()),
        prefer_single=draw(st.booleans()),
        last_play_escoba=draw(st.booleans()),
        initial_fifteen=draw(st.booleans()),
        jokers=draw(st.sampled_from([0, 0, 1, 2])),
        mesa_deal=draw(st.booleans()),
    )


def _stock_masks(eng: EscobaEngine) -> np.ndarray:
    in_stock = np.arange(eng.rules.num_cards)[None, :] >= eng.stock_pos[:, None]
    bits = np.where(in_stock, ONE << eng.deck.astype(np.uint64), np.uint64(0))
    return np.bitwise_or.reduce(bits, axis=1)


def assert_cards_conserved(eng: EscobaEngine) -> None:
    """Hands, table, piles, stock and the pending card hold each of the 40 (+ jokers) cards once."""
    nc = eng.rules.num_cards
    pend = np.where(eng.pending >= 0, ONE << np.maximum(eng.pending, 0).astype(np.uint64), np.uint64(0))
    parts = np.concatenate(
        [eng.hands, eng.table[:, None], eng.piles, _stock_masks(eng)[:, None], pend[:, None]], axis=1)
    union = np.bitwise_or.reduce(parts, axis=1)
    total = np.bitwise_count(parts).sum(axis=1)
    assert (union == np.uint64((1 << nc) - 1)).all()
    assert (total == nc).all()
    assert (eng.card_count() == nc).all()


def check_round_report(eng_rules: Rules, info, escobas_before: np.ndarray, actor_side: np.ndarray) -> None:
    """Check the categories of the rounds that ended in this step."""
    ended = info.round_over
    cats = info.round_categories
    total = cats["cards"] + cats["oros"] + cats["velo"] + cats["sevens"] + cats["escobas"]
    np.testing.assert_array_equal(info.round_points, total)
    np.testing.assert_array_equal(info.round_points[~ended], 0)
    top = 2 if eng_rules.bonus_sweeps else 1
    for k in ("cards", "velo"):
        assert set(np.unique(cats[k])) <= {0, 1}
        assert (cats[k].sum(axis=1) <= 1).all()
    for k in ("oros", "sevens"):
        assert set(np.unique(cats[k])) <= set(range(top + 1))
        assert ((cats[k] > 0).sum(axis=1) <= 1).all()
    # The round's escobas: those before this step plus this step's, pooled per side.
    rows = np.nonzero(ended)[0]
    esc = escobas_before[rows].copy()
    esc[np.arange(len(rows)), actor_side[rows]] += info.escoba[rows]
    np.testing.assert_array_equal(cats["escobas"][rows], esc)


def _side_escobas(eng: EscobaEngine) -> np.ndarray:
    return eng.side_totals()[1]


@settings(max_examples=30, deadline=None)
@given(rules_strategy(), st.integers(0, 2**31 - 1))
def test_random_games_keep_every_invariant(rules, seed):
    n = 12
    eng = EscobaEngine(n, rules, max_rounds=3)
    eng.reset(seed)
    rng = np.random.default_rng(seed)
    side = eng.side_of_seat
    round_sum = np.zeros((n, rules.num_sides), np.int64)
    assert_cards_conserved(eng)
    step = 0
    while not eng.done.all():
        actions = sample_actions(eng.legal, rng.random(n))
        if step % 7 == 0:
            _check_every_action(eng, actions, rng)
        escobas_before = _side_escobas(eng)
        actor_side = side[eng.to_act]
        info = eng.step(actions)
        step += 1
        assert_cards_conserved(eng)
        check_round_report(rules, info, escobas_before, actor_side)
        round_sum += info.round_points
        np.testing.assert_array_equal(info.scores, round_sum)
        np.testing.assert_array_equal(eng.scores, round_sum)
        _check_game_end(rules, eng, info)
    assert (eng.round_index <= 3).all()


def _check_game_end(rules: Rules, eng: EscobaEngine, info) -> None:
    sc = info.scores
    best = sc.max(axis=1)
    unique = (sc == best[:, None]).sum(axis=1) == 1
    reached = (best >= rules.target_score) & unique
    ended = info.round_over
    # A round that ends with a sole leader at or above the target ends the game, with that winner.
    assert (info.game_over[ended & reached]).all()
    won = ended & reached
    np.testing.assert_array_equal(info.winner[won], sc[won].argmax(axis=1))
    # Otherwise the game goes on, unless max_rounds cuts it (no winner).
    cut = ended & ~reached & info.game_over
    assert (info.truncated[cut]).all() and (eng.round_index[cut] == 3).all()
    assert (info.winner[cut] == -1).all()
    assert not info.game_over[~ended].any()
    assert not info.truncated[ended & reached].any()


def _check_every_action(eng: EscobaEngine, actions: np.ndarray, rng: np.random.Generator) -> None:
    """For one random unfinished game, every legal action steps and every other raises."""
    live = np.nonzero(~eng.done)[0]
    g = int(rng.choice(live))
    legal = int(eng.legal[g])
    assert legal != 0
    mask = eng.legal_action_mask()[g]
    nc = eng.rules.num_cards
    assert mask.tolist() == [(legal >> c) & 1 for c in range(nc)]
    before = state_arrays(eng)
    for a in [*range(-1, 43), 64]:
        trial = actions.copy()
        trial[g] = a
        if 0 <= a < nc and legal >> a & 1:
            other = eng.clone()
            other.step(trial)
            # The game moved: the card left the hand (a play) or was named (a take).
            if other.round_index[g] != eng.round_index[g]:
                pass  # the round ended and a new one was dealt: checked by the reference tests
            elif eng.pending[g] < 0:
                assert not int(other.hands[g, eng.to_act[g]]) >> a & 1
                assert int(other.played[g, eng.to_act[g]]) >> a & 1
            elif a == eng.pending[g]:  # jokers: stop at the option held in the others
                assert int(other.pending[g]) == -1 and int(other.piles[g, eng.to_act[g]]) >> a & 1
            else:
                assert int(other.taken[g]) >> a & 1 or int(other.piles[g, eng.to_act[g]]) >> a & 1
        else:
            try:
                eng.step(trial)
            except ValueError as err:
                assert "illegal action" in str(err)
            else:
                raise AssertionError(f"action {a} accepted in game {g} (legal {eng.legal_actions(g)})")
            assert_same_state(before, eng)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([2, 3, 4]), st.integers(0, 2**31 - 1), st.sampled_from([0, 1, 2]), st.booleans())
def test_full_games_to_the_target(players, seed, jokers, mesa_deal):
    rules = Rules(num_players=players, target_score=21, jokers=jokers, mesa_deal=mesa_deal)
    n = 16
    eng = EscobaEngine(n, rules)
    eng.reset(seed)
    rng = np.random.default_rng(seed)
    totals = np.zeros((n, rules.num_sides), np.int64)
    while not eng.done.all():
        info = eng.step(sample_actions(eng.legal, rng.random(n)))
        totals += info.round_points
        _check_game_end(rules, eng, info)
    np.testing.assert_array_equal(eng.scores, totals)
    best = totals.max(axis=1)
    assert (best >= 21).all()
    assert ((totals == best[:, None]).sum(axis=1) == 1).all()
    np.testing.assert_array_equal(eng.winner, totals.argmax(axis=1))
    assert not eng.truncated.any()


def test_sample_actions_picks_the_kth_legal_card():
    legal = np.array([(1 << 3) | (1 << 10) | (1 << 39)] * 3 + [1 << 0], np.uint64)
    got = sample_actions(legal, np.array([0.0, 0.34, 0.99, 0.5]))
    assert got.tolist() == [3, 10, 39, 0]
