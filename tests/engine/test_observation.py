"""The observation encoder: layout per rules, the batched and one-game paths agree, no stale entries."""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import (
    OBS_SIZE,
    SCALARS,
    action_mask_one,
    action_masks,
    encode,
    encode_one,
    obs_size,
    observer_planes,
    plane_slice,
    scalar_offsets,
)

RULES = {
    "2p": Rules(),
    "3p": Rules(num_players=3),
    "4p": Rules(num_players=4, target_score=9),
    "2v2": Rules(num_players=4, partnerships=True, target_score=6),
    "jokers=1": Rules(jokers=1),
    "jokers=2 mesa": Rules(jokers=2, mesa_deal=True, target_score=8),
    "2v2 jokers=2": Rules(num_players=4, partnerships=True, jokers=2),
    "3p mesa": Rules(num_players=3, mesa_deal=True),
}


def states(rules, games=16, steps=300, seed=0):
    """Yield an engine after each of ``steps`` random batched steps (finished games restart)."""
    eng = EscobaEngine(games, rules)
    eng.reset(seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield eng
        if eng.done.any():
            eng.reset_games(np.flatnonzero(eng.done))
        eng.step(sample_actions(eng.legal, rng.random(games)))


def reference(eng, seat, g):
    """Return the observation of ``seat`` in game ``g`` written out entry by entry from the state."""
    r = eng.rules
    w, p = r.num_cards, r.num_players
    v = np.zeros(obs_size(r), np.float32)

    def put(plane, mask):
        for c in range(w):
            v[plane * w + c] = (int(mask) >> c) & 1

    rel = [(seat + j) % p for j in range(p)]
    pending = int(eng.pending[g])
    pend = 1 << pending if pending >= 0 else 0
    put(0, eng.hands[g, seat])
    public = int(eng.hands[g, seat]) | int(eng.table[g]) | pend | int(eng.taken[g])
    for j, s in enumerate(rel):
        put(1 + j, eng.piles[g, s])
        put(6 + j, eng.played[g, s])
        public |= int(eng.piles[g, s]) | int(eng.played[g, s])
    put(5, eng.table[g])
    put(10, ((1 << w) - 1) & ~public)
    put(11, pend)
    put(12, eng.taken[g])
    o = scalar_offsets(r)
    for j in range(r.num_sides):
        side = r.side_of(rel[j])
        esc = sum(int(eng.escobas[g, s]) for s in range(p) if r.side_of(s) == side)
        v[o["escobas"] + j] = esc
        v[o["scores"] + j] = int(eng.scores[g, side]) / r.target_score
    v[o["stock"]] = (w - int(eng.stock_pos[g])) / w
    for j, s in enumerate(rel):
        v[o["hand_sizes"] + j] = int(eng.hands[g, s]).bit_count() / 3
        v[o["dealer"] + j] = int(eng.dealer[g]) == s
        v[o["last_capturer"] + j] = int(eng.last_capturer[g]) == s
    v[o["capture_phase"]] = pending >= 0
    v[o["num_players"] + p - 2] = 1
    v[o["partnerships"]] = r.partnerships
    return v


@pytest.mark.parametrize("name", RULES)
def test_batched_and_one_game_encodings_equal_the_entry_by_entry_reference(name):
    rules = RULES[name]
    rng = np.random.default_rng(1)
    for t, eng in enumerate(states(rules, steps=200)):
        seat = int(rng.integers(rules.num_players))
        batch = encode(eng, seat)
        masks = action_masks(eng, seat)
        g = int(rng.integers(eng.num_games))
        want = reference(eng, seat, g)
        np.testing.assert_array_equal(batch[g], want, err_msg=f"{name} step {t}")
        np.testing.assert_array_equal(encode_one(eng, seat, g), want, err_msg=f"{name} step {t}")
        legal = int(eng.legal[g]) if int(eng.to_act[g]) == seat else 0
        want_mask = [(legal >> c) & 1 for c in range(rules.num_cards)]
        assert masks[g].tolist() == want_mask and action_mask_one(eng, seat, g).tolist() == want_mask
        assert masks.dtype == np.int8 and action_mask_one(eng, seat, g).dtype == np.int8


@pytest.mark.parametrize("name", RULES)
def test_any_games_and_seats_and_a_reused_clean_buffer_give_the_same_rows(name):
    rules = RULES[name]
    rng = np.random.default_rng(2)
    buf = np.full((16, obs_size(rules)), 7.0, np.float32)  # garbage: the first write must clear it
    clean = False
    for eng in states(rules, steps=150, seed=3):
        encode(eng, eng.to_act, out=buf, clean=clean)
        clean = True
        np.testing.assert_array_equal(buf, encode(eng, eng.to_act))
        games = rng.integers(16, size=5)
        seats = rng.integers(rules.num_players, size=5)
        full = np.stack([encode(eng, s)[g] for g, s in zip(games, seats, strict=True)])
        np.testing.assert_array_equal(encode(eng, seats, games), full)
        np.testing.assert_array_equal(encode(eng, seats[:1], games[:1]), full[:1])
        planes = observer_planes(eng, seats, games)
        w = rules.num_cards
        bits = (planes[:, :, None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)
        np.testing.assert_array_equal(full[:, :13 * w], bits.reshape(5, -1).astype(np.float32))


@pytest.mark.parametrize("jokers", [0, 1, 2])
def test_layout_functions_follow_the_deck_width(jokers):
    rules = Rules(jokers=jokers)
    w = 40 + jokers
    assert obs_size(rules) == 13 * w + 26 == OBS_SIZE + 13 * jokers
    assert scalar_offsets(rules) == {k: v + 13 * jokers for k, v in SCALARS.items()}
    assert plane_slice("table", rules) == slice(5 * w, 6 * w)
    assert plane_slice("piles", rules, seat=2) == slice(3 * w, 4 * w)
    assert obs_size(w) == obs_size(rules) and scalar_offsets(None) == SCALARS


@pytest.mark.parametrize("name", ["2p", "jokers=1"])
def test_an_empty_selection_gives_empty_arrays(name):
    rules = RULES[name]
    eng = EscobaEngine(3, rules)
    eng.reset(0)
    none = np.zeros(0, np.int64)
    assert encode(eng, none, none).shape == (0, obs_size(rules))
    assert action_masks(eng, none, none).shape == (0, rules.num_cards)
    assert observer_planes(eng, none, none).shape == (0, 13)
