"""Reproducible deals and independent games: determinism, batch independence."""
# ruff: noqa: NPY002  (these tests disturb the legacy global generator on purpose)

from __future__ import annotations

import random

import numpy as np
import pytest

from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from tests.helpers import state_arrays

FIELDS = ("actor", "captured", "escoba", "round_over", "round_points", "scores", "game_over",
          "truncated")


def _policy_uniforms(game_ids: np.ndarray, step: int) -> np.ndarray:
    """Return a uniform in [0, 1) per game that depends only on (game id, step)."""
    out = np.empty(len(game_ids))
    for i, gid in enumerate(game_ids):
        out[i] = np.random.default_rng([int(gid), step, 99]).random()
    return out


def _run(eng: EscobaEngine, uniforms_of_step, disturb=None) -> list[dict[str, np.ndarray]]:
    """Play the batch to the end; return every state and report array after every step."""
    trace = [state_arrays(eng)]
    step = 0
    while not eng.done.all():
        if disturb is not None:
            disturb(step)
        info = eng.step(sample_actions(eng.legal, uniforms_of_step(step)))
        snap = state_arrays(eng)
        for f in FIELDS:
            snap["info_" + f] = np.array(getattr(info, f), copy=True)
        for k, v in info.round_categories.items():
            snap["cat_" + k] = np.array(v, copy=True)
        trace.append(snap)
        step += 1
    return trace


def _assert_same_trace(a, b) -> None:
    assert len(a) == len(b)
    for sa, sb in zip(a, b, strict=True):
        assert sa.keys() == sb.keys()
        for k in sa:
            np.testing.assert_array_equal(sa[k], sb[k], err_msg=k)


@pytest.mark.parametrize("rules", [Rules(), Rules(num_players=3), Rules(num_players=4, partnerships=True)])
def test_same_seed_gives_identical_batches(rules):
    traces = []
    for _ in range(2):
        eng = EscobaEngine(16, rules, max_rounds=2)
        eng.reset(123)
        rng = np.random.default_rng(5)
        traces.append(_run(eng, lambda step, rng=rng: rng.random(16)))
    _assert_same_trace(*traces)


def test_different_seeds_give_different_deals():
    a, b = EscobaEngine(32), EscobaEngine(32)
    a.reset(1)
    b.reset(2)
    assert (a.deck != b.deck).any(axis=1).all()
    # And within one batch, different game ids get different deals.
    assert len({bytes(row) for row in a.deck}) == 32


def test_same_game_id_in_two_slots_gets_the_same_deals():
    eng = EscobaEngine(3)
    eng.reset(9, game_ids=[5, 5, 6])
    assert (eng.deck[0] == eng.deck[1]).all()
    assert (eng.deck[0] != eng.deck[2]).any()
    assert eng.dealer[0] == eng.dealer[1]


@pytest.mark.parametrize("rules", [Rules(), Rules(num_players=3, prefer_single=True),
                                   Rules(num_players=4, partnerships=True)])
def test_a_game_is_the_same_whatever_else_is_in_its_batch(rules):
    ids = np.array([0, 1, 2, 3, 4, 5])
    batch = EscobaEngine(len(ids), rules, max_rounds=3)
    batch.reset(42, game_ids=ids)
    batch_trace = _run(batch, lambda step: _policy_uniforms(ids, step))
    for i in (0, 3, 5):
        solo = EscobaEngine(1, rules, max_rounds=3)
        solo.reset(42, game_ids=[i])
        solo_trace = _run(solo, lambda step, i=i: _policy_uniforms(np.array([i]), step))
        # The solo game's steps are the batch's first len(solo_trace) steps, row i.
        assert len(solo_trace) <= len(batch_trace)
        for snap_solo, snap_batch in zip(solo_trace, batch_trace, strict=False):
            for k, v in snap_solo.items():
                if k in ("game_ids", "_rows") or snap_batch[k].shape[:1] != (len(ids),):
                    continue  # not a per-game array
                np.testing.assert_array_equal(v[0], snap_batch[k][i], err_msg=f"game {i}: {k}")
        # After the solo game ended, the batch's row i no longer changes.
        last = len(solo_trace) - 1
        for snap in batch_trace[last:]:
            for k in ("scores", "winner", "piles", "done", "truncated"):
                np.testing.assert_array_equal(snap[k][i], batch_trace[last][k][i])


def test_game_ids_fix_the_deals_not_the_slot():
    a = EscobaEngine(4)
    a.reset(3, game_ids=[10, 11, 12, 13])
    b = EscobaEngine(2)
    b.reset(3, game_ids=[12, 10])
    assert (b.deck[0] == a.deck[2]).all() and (b.deck[1] == a.deck[0]).all()
    assert b.dealer.tolist() == [a.dealer[2], a.dealer[0]]


def test_reset_games_gives_new_deals_and_leaves_other_slots_alone():
    eng = EscobaEngine(4)
    eng.reset(8)
    rng = np.random.default_rng(0)
    for _ in range(10):
        eng.step(sample_actions(eng.legal, rng.random(4)))
    before = state_arrays(eng)
    eng.reset_games(np.array([1, 3]))
    assert eng.episode.tolist() == [0, 1, 0, 1]
    for g in (0, 2):
        for k in ("deck", "hands", "table", "piles", "scores", "to_act", "stock_pos"):
            np.testing.assert_array_equal(before[k][g], getattr(eng, k)[g])
    first = EscobaEngine(4)
    first.reset(8)
    for g in (1, 3):
        assert (eng.deck[g] != first.deck[g]).any()
        assert eng.scores[g].tolist() == [0, 0]
        assert int(eng.round_index[g]) == 0 and not bool(eng.done[g])
        assert int(eng.stock_pos[g]) == 10
        assert int(eng.to_act[g]) == (int(eng.dealer[g]) + 1) % 2
        assert int(eng.card_count()[g]) == 40
    # reset_games is itself reproducible.
    again = EscobaEngine(4)
    again.reset(8)
    again.reset_games(np.array([1, 3]))
    np.testing.assert_array_equal(again.deck[[1, 3]], eng.deck[[1, 3]])
    np.testing.assert_array_equal(again.dealer[[1, 3]], eng.dealer[[1, 3]])


def test_global_random_state_changes_nothing():
    def disturb(step):
        np.random.seed(step * 7 + 1)
        random.seed(step)
        np.random.random(3)
        random.random()

    traces = []
    for d in (None, disturb):
        eng = EscobaEngine(8, Rules(num_players=3), max_rounds=2)
        np.random.seed(1)
        random.seed(1)
        eng.reset(77)
        rng = np.random.default_rng(3)
        traces.append(_run(eng, lambda step, rng=rng: rng.random(8), disturb=d))
    _assert_same_trace(*traces)


def test_the_engine_never_draws_from_the_global_generators():
    np.random.seed(4)
    random.seed(4)
    np_state = np.random.get_state()[1].copy()
    py_state = random.getstate()
    eng = EscobaEngine(8, max_rounds=2)
    eng.reset(5)
    eng.reset_games(np.array([2]))
    rng = np.random.default_rng(0)
    while not eng.done.all():
        eng.step(sample_actions(eng.legal, rng.random(8)))
    assert (np.random.get_state()[1] == np_state).all()
    assert random.getstate() == py_state


def test_autoreset_restarts_like_reset_games_and_reports_the_final_state():
    rules = Rules(target_score=5)
    auto = EscobaEngine(6, rules, autoreset=True)
    manual = EscobaEngine(6, rules)
    auto.reset(31)
    manual.reset(31)
    rng = np.random.default_rng(2)
    finished = 0
    for _ in range(400):
        actions = sample_actions(manual.legal, rng.random(6))
        info_m = manual.step(actions)
        info_a = auto.step(actions)
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(info_a, f), getattr(info_m, f), err_msg=f)
        np.testing.assert_array_equal(info_a.winner, info_m.winner)
        over = np.nonzero(info_m.game_over)[0]
        finished += len(over)
        assert (info_m.winner[over] >= 0).all()
        if over.size:
            manual.reset_games(over)
        for k in ("deck", "hands", "table", "piles", "scores", "dealer", "to_act", "legal", "episode",
                  "round_index", "done"):
            np.testing.assert_array_equal(getattr(auto, k), getattr(manual, k), err_msg=k)
    assert finished >= 6
