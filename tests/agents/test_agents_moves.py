"""Move-level view of decisions (agents.moves): moves match the engine's legal actions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.moves import enumerate_moves, lowest_card, masks_to_uint64, move_actions
from escoba_env import EscobaEngine, Rules, capture_options
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import action_masks, encode
from escoba_env.rulebook.cards import mask_values
from tests.helpers import C, M

RULE_SETS = [Rules(), Rules(num_players=3), Rules(num_players=4, partnerships=True),
             Rules(prefer_single=True)]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), which=st.integers(0, len(RULE_SETS) - 1))
def test_moves_are_exactly_the_legal_moves(seed, which):
    rules = RULE_SETS[which]
    e = EscobaEngine(8, rules, single_round=True)
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    while not e.done.all():
        live = np.nonzero(~e.done)[0]
        obs = encode(e, e.to_act[live], live)
        masks = action_masks(e, e.to_act[live], live)
        moves = enumerate_moves(obs, rules)
        legal = masks_to_uint64(masks)
        for i, g in enumerate(live):
            sl = slice(moves.start[i], moves.start[i + 1])
            cards, options = moves.card[sl], moves.option[sl]
            if e.pending[g] < 0:
                assert set(cards.tolist()) == {c for c in range(40) if int(legal[i]) >> c & 1}
                for c in set(cards.tolist()):
                    expect = capture_options(c, int(e.table[g]), rules) or [0]
                    assert sorted(int(o) for o in options[cards == c]) == expect
            else:
                assert (cards == e.pending[g]).all() and len(cards) >= 2
                assert all(int(o) & int(e.taken[g]) == int(e.taken[g]) for o in options)
        # Every move maps to a legal action.
        for k in range(int(moves.count.max())):
            pick = moves.start[:-1] + np.minimum(k, moves.count - 1)
            acts = move_actions(moves, pick, obs, masks)
            assert all(masks[i, a] == 1 for i, a in enumerate(acts))
        e.step(np.where(e.done, 0, sample_actions(e.legal, rng.random(8))))


def test_a_capture_choice_names_a_card_of_the_chosen_option():
    # 7o in hand, table 3o 5c So: options {So} and {3o, 5c}.
    e = EscobaEngine(1, Rules(), single_round=True)
    named = "7o 1c 1e 2c 2e 2b 3o 5c So Rb".split()
    e.reset(seed=0, dealer=1, hands=[[C(x) for x in named[:3]], [C(x) for x in named[3:6]]],
            table=[C(x) for x in named[6:]],
            stock=[c for c in range(40) if c not in [C(x) for x in named]])
    e.step(np.array([C("7o")]))
    assert e.pending[0] == C("7o")
    obs, masks = encode(e, np.array([0])), action_masks(e, np.array([0]))
    moves = enumerate_moves(obs, Rules())
    assert sorted(int(o) for o in moves.option) == sorted([M("So"), M("3o 5c")])
    for k, o in enumerate(moves.option):
        a = int(move_actions(moves, np.array([k]), obs, masks)[0])
        assert int(o) >> a & 1


def test_mask_helpers():
    assert mask_values(np.array([M("7o Rb 1c"), 0], np.uint64)).tolist() == [18, 0]
    assert lowest_card(np.array([M("Rb 3e"), 0], np.uint64)).tolist() == [C("3e"), -1]
