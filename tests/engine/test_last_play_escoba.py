"""The last-play escoba, where it can happen: with a joker, the very last card of a round sweeping
the table (the forty suited cards sum to 220, no multiple of 15, so without jokers the table is
never empty after the last play). Pinned on the batched engine, the one-game ``Game`` and the
plain-Python reference, with the rule on and off."""

from __future__ import annotations

import numpy as np
import pytest

from escoba_env import EscobaEngine, Rules
from escoba_env.executors.game import Game
from tests.helpers import M
from tests.reference import RefGame

# An explicit deal: 40 suited cards in the order of a seeded permutation, then the joker (id 40),
# dealt last: the short last deal gives it alone to seat 1 (dealer 0), the last card of the round.
DECK = [int(c) for c in np.random.default_rng(4).permutation(40)] + [40]


def _choose(legal: list[int], pending: int) -> int:
    """The lowest legal action; during a capture choice the lowest table card (never "stop"), so
    the capture ends with the option holding every table card named, the whole table if it is one."""
    named = [a for a in legal if a != pending]
    return min(named or legal)


def _play_engine(rules: Rules):
    eng = EscobaEngine(1, rules, single_round=True)
    eng.reset(0, dealer=0, deck=DECK)
    trace = []
    while not eng.done[0]:
        legal = [c for c in range(41) if int(eng.legal[0]) >> c & 1]
        table = int(eng.table[0])
        info = eng.step(np.array([_choose(legal, int(eng.pending[0]))], np.int64))
        trace.append((int(info.actor[0]), table, len(legal), int(info.captured[0]), int(info.escoba[0])))
    return trace, info.round_points[0].tolist(), info.round_categories["escobas"][0].tolist()


def _play_game(rules: Rules):
    game = Game(rules, single_round=True)
    game.reset(0, dealer=0, deck=DECK)
    trace = []
    while not game.done:
        legal = [c for c in range(41) if game.legal >> c & 1]
        table = game.table
        st = game.step(_choose(legal, game.pending))
        trace.append((st.actor, table, len(legal), st.captured, st.escoba))
    return trace, list(st.round_points), list(st.round_categories["escobas"])


def _play_reference(rules: Rules):
    ref = RefGame(rules, 0, DECK, single_round=True)
    trace = []
    while not ref.done:
        legal = sorted(ref.legal())
        table = sum(1 << c for c in ref.table)
        info = ref.step(_choose(legal, -1 if ref.pending is None else ref.pending))
        took = sum(1 << c for c in info["captured"])
        trace.append((info["actor"], table, len(legal), took, info["escoba"]))
    return trace, info["round"]["points"], info["round"]["escobas"]


@pytest.mark.parametrize("flag, points, escobas", [(True, [1, 4], [0, 2]), (False, [1, 3], [0, 1])])
def test_a_joker_sweeping_with_the_last_card_is_an_escoba_only_under_the_rule(flag, points, escobas):
    rules = Rules(jokers=1, last_play_escoba=flag)
    runs = [_play_engine(rules), _play_game(rules), _play_reference(rules)]
    assert runs[0] == runs[1] == runs[2]  # every action, capture and escoba, and the round's score
    trace, got_points, got_escobas = runs[0]
    assert (got_points, got_escobas) == (points, escobas)
    # The last play: seat 1's joker, alone in its hand, on 2e 4o 4e (10). Wild for 1..10, it has
    # several options, so table cards are named: one of 2e 4o 4e, then 4o or 4e, then after 2e 4o
    # either 4e (the whole table, the joker as a 5) or the joker's own id, "stop" (2e 4o, as a 9).
    t = M("2e 4o 4e")
    last = (1, t, 2, M("2e 4o 4e *1"), int(flag))
    assert trace[-4:] == [(1, t, 1, 0, 0), (1, t, 3, 0, 0), (1, t, 2, 0, 0), last]
    # Seat 1's other escoba came earlier; everything before the last play is the same either way.
    assert sum(x[4] for x in trace[:-1]) == 1
    assert _play_engine(Rules(jokers=1, last_play_escoba=not flag))[0][:-1] == trace[:-1]
