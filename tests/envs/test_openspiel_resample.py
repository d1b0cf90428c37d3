"""OpenSpiel ``resample_from_infostate`` at every kind of node: legal worlds, the player's view kept.

Random histories are walked node by node; at every node (each chance node of a round's first deal,
its table cards included, later deals, decisions, capture choices, a second round) every seat
resamples the world, and each resampled world is checked: replayed from the start on a fresh state
every chance outcome is one of the cards not dealt yet (a legal deal, each card once), every decision
is legal, and everything the seat saw (information state and observation, its hand, the legal
actions when it acts) is unchanged, while only cards hidden from it moved.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from escoba_env.faces import openspiel as eos  # noqa: E402


def node_kind(s) -> str:
    """Return the kind of node ``s`` is at (for the coverage counts)."""
    later = "2nd round " if s._core.g.round_index > 0 else ""
    if s._phase == "dealer":
        return "dealer"
    if s._phase == "deal":
        if not s._round_start:
            return later + "later deal"
        if len(s._dealt) < len(s._plan) - 4:
            return later + "first deal: hands"
        return later + "first deal: table"
    return later + ("capture choice" if s._core.g.pending >= 0 else "decision")


def replay_checked(game, history: list[int]):
    """Replay ``history`` on a fresh state, asserting each action is a legal outcome or decision."""
    s = game.new_initial_state()
    for a in history:
        if s.is_chance_node():
            assert a in {c for c, _ in s.chance_outcomes()}, f"chance outcome {a} is not dealable"
        else:
            assert a in s.legal_actions(), f"decision {a} is illegal"
        s.apply_action(a)
    return s


def view(s, p: int) -> tuple:
    """Return everything seat ``p`` observes of ``s``."""
    acting = s.current_player() == p
    return (s.information_state_string(p), tuple(s.information_state_tensor(p)), s.observation_string(p),
            tuple(s.observation_tensor(p)), s._core.hands()[p], s.current_player(),
            tuple(s.legal_actions()) if acting else ())


def seen_by(s, p: int) -> int:
    """Return the mask of cards seat ``p`` has seen this round (own hand, public cards, its deal cards)."""
    m = s._core.public_mask() | s._core.hands()[p]
    for kind, who, a in s.round_events():
        if kind == eos._TABLE or (kind == eos._CARD and who == p):
            m |= 1 << a
    return m


def check_resample(game, s, p: int, sampler) -> bool:
    """Resample ``s`` for ``p`` and check the world; return whether a hidden card moved."""
    r = s.resample_from_infostate(p, sampler)
    assert len(r.history()) == len(s.history())
    # Replaying the resampled history from scratch: a legal deal and legal play throughout.
    again = replay_checked(game, r.history())
    assert again.history() == r.history() and str(again) == str(r)
    # Within a round each card is dealt exactly once (hands, table, later deals).
    dealt = [a for kind, _, a in r.round_events() if kind in (eos._CARD, eos._TABLE)]
    assert len(dealt) == len(set(dealt)), f"a card dealt twice: {sorted(dealt)}"
    assert view(r, p) == view(s, p)
    seen = seen_by(s, p)
    moved = False
    for (k1, w1, a1), (k2, w2, a2) in zip(s._events, r._events, strict=True):
        assert (k1, w1) == (k2, w2)
        if a1 != a2:  # only a card dealt to another seat, hidden from p, can change
            assert k1 == eos._CARD and w1 != p and not seen >> a1 & 1 and not seen >> a2 & 1
            moved = True
    return moved


CONFIGS = [
    pytest.param({"episode": "game", "target_score": 30, "max_rounds": 2}, 4, id="2p-two-rounds"),
    pytest.param({"num_players": 3}, 4, id="3p"),
    pytest.param({"num_players": 4, "partnerships": True}, 3, id="2v2"),
    pytest.param({"jokers": 2, "mesa_deal": True}, 5, id="2p-jokers"),
]


@pytest.mark.parametrize("params,walks", CONFIGS)
def test_resample_at_every_node_is_a_legal_world_that_the_player_cannot_tell_apart(params, walks):
    game = eos.load_game(**params)
    n = game.num_players()
    rng = np.random.default_rng(2024)
    sampler = pyspiel.UniformProbabilitySampler(7, 0.0, 1.0)
    kinds, moved, checked = Counter(), 0, 0
    for _ in range(walks):
        s = game.new_initial_state()
        while not s.is_terminal():
            kind = node_kind(s)
            kinds[kind] += 1
            if kind != "dealer":
                for p in range(n):
                    moved += check_resample(game, s, p, sampler)
                    checked += 1
            if s.is_chance_node():
                outcomes = s.chance_outcomes()
                s.apply_action(outcomes[rng.integers(len(outcomes))][0])
            else:
                legal = s.legal_actions()
                s.apply_action(legal[rng.integers(len(legal))])
            if s._core.g.round_index > 1:
                break
    for kind in ("first deal: hands", "first deal: table", "later deal", "decision", "capture choice"):
        assert kinds[kind] > 0, (kind, kinds)
    if "max_rounds" in params:
        assert kinds["2nd round first deal: table"] > 0 and kinds["2nd round decision"] > 0
    assert checked >= 800  # several thousand resampled worlds over the four configurations
    assert moved >= checked // 2  # the worlds do vary: hidden cards move in most resamples


def test_resample_in_the_middle_of_the_table_deal_keeps_the_table_cards():
    """Two table cards out, two to come: the table cards are seen, never dealt to a hand again."""
    game = eos.load_game()
    s = game.new_initial_state()
    s.apply_action(1)  # dealer 1: seat 0 receives first
    deal = list(range(6)) + [20, 21]  # hands 0..5 (alternating seats), then two table cards
    for c in deal:
        s.apply_action(c)
    assert node_kind(s) == "first deal: table" and len(s._dealt) == 8
    table = {20, 21}
    hands1 = {1, 3, 5}  # dealt to seat 1 (0 got 0, 2, 4)
    seen_moved = Counter()
    for i in range(300):
        r = s.resample(0, np.random.default_rng(i))
        got = {who: set() for who in (-1, 0, 1)}
        for kind, who, a in r.round_events():
            if kind in (eos._CARD, eos._TABLE):
                got[who].add(a)
        assert got[-1] == table and got[0] == {0, 2, 4}
        assert len(got[1]) == 3 and not got[1] & (table | {0, 2, 4})
        seen_moved[frozenset(got[1]) == frozenset(hands1)] += 1
        replay_checked(game, r.history())
    assert seen_moved[False] > 250  # seat 1's cards are redrawn from the 37 unseen ones
