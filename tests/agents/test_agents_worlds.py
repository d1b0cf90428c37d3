"""Worlds rebuilt from observations (agents.worlds): public facts kept, hidden cards resampled."""

from __future__ import annotations

import numpy as np
import pytest

from agents.worlds import observation_masks, take_games, worlds_from_observations
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import PLANE, encode

RULES = [Rules(), Rules(num_players=3), Rules(num_players=4), Rules(num_players=4, partnerships=True),
         Rules(prefer_single=True)]


def _positions(rules: Rules, n: int = 40, plies: int = 0, seed: int = 0) -> EscobaEngine:
    e = EscobaEngine(n, rules, single_round=True)
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        # Stop a game before its round ends, at a different point per game.
        e.step(sample_actions(e.legal, rng.random(n)))
    return e


@pytest.mark.parametrize("rules", RULES, ids=lambda r: f"{r.num_players}p-{r.partnerships}-{r.prefer_single}")
def test_a_world_shows_its_observer_exactly_the_observation(rules):
    rng = np.random.default_rng(1)
    for plies in (0, 7, 19, 30):
        e = _positions(rules, plies=plies, seed=plies)
        live = np.nonzero(~e.done)[0]
        obs = encode(e, e.to_act[live], live)
        w = worlds_from_observations(obs, rules, rng, 3)
        assert w.num_games == 3 * len(live)
        again = encode(w, np.zeros(w.num_games, np.int64))
        assert np.array_equal(again, np.repeat(obs, 3, axis=0))
        assert np.array_equal(w.legal, np.repeat(e.legal[live], 3))
        assert (w.card_count() == 40).all()


def test_hidden_cards_are_dealt_only_from_the_unseen_cards():
    rules = Rules(num_players=3)
    e = _positions(rules, plies=10)
    obs = encode(e, e.to_act)
    unseen = observation_masks(obs)[:, PLANE["unseen"]]
    w = worlds_from_observations(obs, rules, np.random.default_rng(0), 5)
    hidden = np.bitwise_or.reduce(w.hands[:, 1:], axis=1)
    stock = np.array([np.bitwise_or.reduce(np.uint64(1) << w.deck[g, w.stock_pos[g]:].astype(np.uint64))
                      if w.stock_pos[g] < 40 else np.uint64(0) for g in range(w.num_games)])
    assert np.array_equal(hidden | stock, np.repeat(unseen, 5))
    assert not (hidden & stock).any()


def test_worlds_resample_the_hidden_cards():
    e = _positions(Rules(), n=1, plies=2)
    w = worlds_from_observations(encode(e, e.to_act), Rules(), np.random.default_rng(0), 50)
    assert len(set(w.hands[:, 1].tolist())) > 10
    assert len(set(w.hands[:, 0].tolist())) == 1  # the observer's own hand is known


def test_worlds_depend_only_on_the_observation_and_the_generator():
    # Same public state, opponent's hand and stock swapped around: identical worlds.
    a = _positions(Rules(), n=1, plies=4)
    b = a.clone()
    opp = 1 - int(a.to_act[0])
    hand = int(b.hands[0, opp])
    low = hand & -hand
    stock_card = int(b.deck[0, b.stock_pos[0]])
    b.hands[0, opp] = (hand ^ low) | (1 << stock_card)
    b.deck[0, b.stock_pos[0]] = low.bit_length() - 1
    assert (b.card_count() == 40).all()
    oa, ob = encode(a, a.to_act), encode(b, b.to_act)
    assert np.array_equal(oa, ob)
    wa = worlds_from_observations(oa, Rules(), np.random.default_rng(3), 4)
    wb = worlds_from_observations(ob, Rules(), np.random.default_rng(3), 4)
    for name in ("hands", "table", "piles", "deck", "stock_pos", "legal"):
        assert np.array_equal(getattr(wa, name), getattr(wb, name)), name


def test_worlds_play_to_the_end_of_the_round():
    rules = Rules(num_players=4, partnerships=True)
    e = _positions(rules, plies=9)
    w = worlds_from_observations(encode(e, e.to_act), rules, np.random.default_rng(0), 2)
    rng = np.random.default_rng(1)
    while not w.done.all():
        w.step(sample_actions(w.legal, rng.random(w.num_games)))
    assert (w.card_count() == 40).all()


def test_worlds_reject_observations_of_other_rules():
    e = _positions(Rules(num_players=3), n=2)
    with pytest.raises(ValueError, match="other rules"):
        worlds_from_observations(encode(e, e.to_act), Rules(), np.random.default_rng(0))


def test_take_games_copies_are_independent_of_the_source():
    e = _positions(Rules(), n=4, plies=3)
    before = e.hands.copy()
    c = take_games(e, np.array([2, 2, 0]), single_round=True)
    assert c.num_games == 3 and np.array_equal(c.hands, e.hands[[2, 2, 0]])
    rng = np.random.default_rng(0)
    while not c.done.all():
        c.step(sample_actions(c.legal, rng.random(3)))
    assert np.array_equal(e.hands, before)
    e.step(sample_actions(e.legal, rng.random(4)))  # the source still steps its own batch
