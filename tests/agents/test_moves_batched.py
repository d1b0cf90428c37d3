"""The batched move enumeration (standard rules) gives exactly the moves of the one-row-at-a-time loop."""

from __future__ import annotations

import numpy as np
import pytest

from agents.moves import _enumerate_moves_loop, enumerate_moves, subset_options
from agents.worlds import obs_layout, observation_masks
from escoba_env import EscobaVectorEnv, Rules, capture_options
from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.capture import option_summary


@pytest.mark.parametrize("rules", [Rules(), Rules(num_players=4, partnerships=True)])
def test_batched_moves_equal_the_loop_in_played_games(rules):
    env = EscobaVectorEnv(64, rules=rules)
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(5)
    phases = 0
    for _ in range(120):
        o = obs["observation"]
        planes = observation_masks(o, rules)
        phase = o[:, obs_layout(rules).scalars["capture_phase"]] > 0.5
        phases += int(phase.sum())
        got = enumerate_moves(o, rules, planes)
        want = _enumerate_moves_loop(planes, phase, False, False)
        for field in ("row", "card", "option", "start"):
            assert getattr(got, field).dtype == getattr(want, field).dtype
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, *_ = env.step(acts)
    assert phases > 0  # capture choices were exercised too


def test_subset_options_equal_capture_options_on_crowded_tables():
    """Tables of up to 24 cards: unions beyond 12 cards take the one-by-one path, the rest the batch."""
    rng = np.random.default_rng(11)
    tables, cards = [], []
    while len(tables) < 400:
        size = int(rng.integers(2, 25))
        chosen = rng.choice(40, size + 1, replace=False)
        table = sum(1 << int(c) for c in chosen[1:])
        tables.append(table)
        cards.append(int(chosen[0]))
    table = np.array(tables, np.uint64)
    card = np.array(cards, np.int64)
    count, union, _ = option_summary(table, 15 - (card // 4 + 1))
    multi = np.flatnonzero(count >= 2)
    assert np.bitwise_count(union[multi]).max() > 12 and np.bitwise_count(union[multi]).min() <= 12
    pair, opt = subset_options(table[multi], card[multi], union[multi])
    for j, i in enumerate(multi.tolist()):
        assert opt[pair == j].tolist() == capture_options(cards[i], tables[i])


def test_empty_hand_and_bad_capture_choice_are_still_refused():
    rules = Rules()
    env = EscobaVectorEnv(2, rules=rules)
    obs, _ = env.reset(seed=0)
    o = obs["observation"].copy()
    o[1, :40] = 0.0  # plane 0: the observer's hand
    with pytest.raises(ValueError, match="row 1: the observer has no card to play"):
        enumerate_moves(o, rules)


def test_capture_choice_without_two_options_is_refused():
    """A capture choice whose named cards leave fewer than two options is an error, as in the loop."""
    rules = Rules()
    env = EscobaVectorEnv(256, rules=rules)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(3)
    cap = obs_layout(rules).scalars["capture_phase"]
    while not (obs["observation"][:, cap] > 0.5).any():
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, *_ = env.step(acts)
    o = obs["observation"].copy()
    i = int(np.flatnonzero(o[:, cap] > 0.5)[0])
    enumerate_moves(o[i:i + 1], rules)  # a real capture choice: fine
    w = obs_layout(rules).width
    table, taken = PLANE["table"], PLANE["taken"]
    named = o.copy()
    named[i, taken * w:(taken + 1) * w] = o[i, table * w:(table + 1) * w]  # "named" every table card
    with pytest.raises(ValueError, match="a capture choice needs at least two remaining options"):
        enumerate_moves(named[i:i + 1], rules)
    pending = PLANE["pending"]
    o[i, pending * w:(pending + 1) * w] = 0.0  # a capture choice without its card
    with pytest.raises(ValueError, match="row 0: the observer has no card to play"):
        enumerate_moves(o[i:i + 1], rules)
