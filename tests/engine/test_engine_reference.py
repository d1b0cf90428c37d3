"""Cross-check: random games played action by action in the engine and in tests/reference.py.

The reference is a plain-Python implementation of docs/rules.md §1-7 that shares nothing with the
engine but the deck order (read from ``engine.deck`` at each new round, since the reference does
not reproduce the engine's shuffle). After every step the two must agree on everything public.
"""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaEngine, Rules
from escoba_env.executors.engine import sample_actions
from tests.reference import CATEGORIES, RefGame, compare_state, value


def play_against_reference(rules: Rules, seed: int, num_games: int, *, single_round: bool = False,
                           max_rounds: int | None = None, **reset_kw) -> dict[str, int]:
    """Play random games in both implementations, comparing every step; return some counts."""
    eng = EscobaEngine(num_games, rules, single_round=single_round, max_rounds=max_rounds)
    eng.reset(seed, **reset_kw)
    refs = [RefGame(rules, int(eng.dealer[g]), [int(c) for c in eng.deck[g]], single_round=single_round,
                    max_rounds=max_rounds) for g in range(num_games)]
    rng = np.random.default_rng(seed)
    counts = {"steps": 0, "takes": 0, "escobas": 0, "rounds": 0, "fifteens": 0, "empty_end": 0,
              "nobody": 0, "joker_takes": 0, "stops": 0}
    counts["fifteens"] += sum(sum(r.escobas) for r in refs)
    compare_state(eng, refs)
    while not eng.done.all():
        actions = sample_actions(eng.legal, rng.random(num_games))
        infos = [None if ref.done else ref.step(int(actions[g])) for g, ref in enumerate(refs)]
        counts["takes"] += int((eng.pending >= 0).sum())
        counts["joker_takes"] += int(((eng.pending >= 0) & (actions >= 40)).sum())
        counts["stops"] += int(((eng.pending >= 0) & (actions == eng.pending)).sum())
        info = eng.step(actions)
        counts["steps"] += 1
        for g, (ref, ri) in enumerate(zip(refs, infos, strict=True)):
            if ri is None:
                assert int(info.actor[g]) == -1
                continue
            assert int(info.actor[g]) == ri["actor"]
            assert int(info.captured[g]) == sum(1 << c for c in ri["captured"])
            assert int(info.escoba[g]) == ri["escoba"]
            counts["escobas"] += ri["escoba"]
            assert bool(info.round_over[g]) == ri["round_over"]
            if ri["round_over"]:
                counts["rounds"] += 1
                if not rules.jokers:
                    # 220 card points are no multiple of 15: the table is never empty at the end.
                    assert ref.leftover and sum(value(c) for c in ref.leftover) % 15 == 10
                    assert ref.last_capturer is not None
                counts["empty_end"] += not ref.leftover
                counts["nobody"] += ref.last_capturer is None
                assert info.round_points[g].tolist() == ri["round"]["points"]
                for k in CATEGORIES:
                    assert info.round_categories[k][g].tolist() == ri["round"][k], k
                assert bool(info.game_over[g]) == ref.done
                assert bool(info.truncated[g]) == ref.truncated
                assert int(info.winner[g]) == (-1 if ref.winner is None else ref.winner)
                if ref.needs_deck:
                    ref.new_round([int(c) for c in eng.deck[g]])
                    counts["fifteens"] += sum(ref.escobas)
            else:
                assert info.round_points[g].tolist() == [0] * ref.num_sides
                assert not bool(info.game_over[g])
            assert info.scores[g].tolist() == ref.scores
        compare_state(eng, refs)
    return counts


CONFIGS = [
    (Rules(), {"max_rounds": 3}),
    (Rules(num_players=3), {"max_rounds": 2}),
    (Rules(num_players=4), {"max_rounds": 2}),
    (Rules(num_players=4, partnerships=True, target_score=11), {}),
    (Rules(prefer_single=True, target_score=11), {}),
    (Rules(num_players=3, prefer_single=True, sevens_rule="most_sevens_tiebreak"), {"max_rounds": 2}),
    (Rules(sevens_rule="most_sevens_tiebreak"), {"single_round": True}),
    (Rules(sevens_rule="primera", bonus_sweeps=True), {"max_rounds": 2}),
    (Rules(num_players=4, sevens_rule="primera"), {"single_round": True}),
    (Rules(bonus_sweeps=True, last_play_escoba=False, target_score=6), {}),
    (Rules(initial_fifteen=False, num_players=4, partnerships=True, prefer_single=True), {"max_rounds": 2}),
    (Rules(num_players=3, target_score=30, initial_fifteen=False, bonus_sweeps=True), {"max_rounds": 2}),
    # docs/rules.md §11 variants
    (Rules(jokers=1), {"max_rounds": 3}),
    (Rules(jokers=2, target_score=11), {}),
    (Rules(jokers=2, prefer_single=True), {"max_rounds": 2}),
    (Rules(mesa_deal=True), {"max_rounds": 2}),
    (Rules(mesa_deal=True, jokers=2, initial_fifteen=False), {"max_rounds": 2}),
    (Rules(num_players=3, jokers=1), {"max_rounds": 2}),
    (Rules(num_players=3, jokers=2, mesa_deal=True, sevens_rule="primera"), {"max_rounds": 2}),
    (Rules(num_players=4, jokers=2, last_play_escoba=False), {"max_rounds": 2}),
    (Rules(num_players=4, jokers=1, mesa_deal=True), {"single_round": True}),
    (Rules(num_players=4, partnerships=True, jokers=2, mesa_deal=True, prefer_single=True),
     {"max_rounds": 2}),
    (Rules(num_players=4, partnerships=True, jokers=1), {"max_rounds": 2}),
]


@pytest.mark.parametrize(("rules", "kw"), CONFIGS, ids=lambda x: str(x) if isinstance(x, dict) else None)
def test_engine_matches_reference(rules, kw):
    counts = play_against_reference(rules, seed=1000 + CONFIGS.index((rules, kw)), num_games=48, **kw)
    assert counts["rounds"] >= 48
    assert counts["takes"] > 0  # the play/take scheme was exercised
    assert counts["escobas"] > 0


def test_engine_matches_reference_with_many_initial_fifteens():
    # Two-player single rounds over many seeds: about one deal in nine opens with a fifteen.
    counts = play_against_reference(Rules(), seed=77, num_games=400, single_round=True)
    assert counts["fifteens"] > 0
    assert counts["rounds"] == 400


def test_engine_matches_reference_with_many_variant_first_tables():
    # Single rounds over many seeds: joker initial fifteens, mesa captures, short last deals.
    jok = play_against_reference(Rules(jokers=2), seed=78, num_games=300, single_round=True)
    assert jok["fifteens"] > 0 and jok["joker_takes"] > 0 and jok["empty_end"] > 0
    assert jok["stops"] > 0  # an option held in another was taken with the pending card's id
    mesa = play_against_reference(Rules(jokers=2, mesa_deal=True), seed=79, num_games=300, single_round=True)
    assert mesa["fifteens"] > 0


@pytest.mark.parametrize("players", [2, 3, 4])
def test_engine_matches_reference_from_explicit_decks_and_dealers(players):
    rng = np.random.default_rng(players)
    decks = np.stack([rng.permutation(40) for _ in range(32)])
    dealers = rng.integers(0, players, 32)
    eng = EscobaEngine(32, Rules(num_players=players))
    eng.reset(0, deck=decks, dealer=dealers)
    assert (eng.deck == decks).all() and (eng.dealer == dealers).all()
    counts = play_against_reference(Rules(num_players=players), 5, 32, max_rounds=2, deck=decks,
                                    dealer=dealers)
    assert counts["rounds"] >= 32
