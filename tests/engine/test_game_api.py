"""The one-game executor's own contract: bad input, clone, views, deals, no NumPy on its step path.

Its rules are pinned to the batched engine by tests/engine/test_game_differential.py and, here, to the
independent brute-force reference (tests/reference.py) on a few random games per variant.
"""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest

from escoba_env import Rules, escoba_v0
from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.game import Game
from escoba_env.executors.observation import encode_one
from escoba_env.rulebook.cards import parse_cards
from escoba_env.rulebook.deal_rules import (
    INITIAL_FIFTEEN,
    groups_making_15,
    hash_key,
    hash_keys,
    initial_fifteen_escobas,
    mesa_turn_up,
    mesa_turn_up_batch,
    shuffled_deck,
    shuffled_decks,
)
from tests.reference import RefGame, can_make, compare_state


def M(text: str) -> int:
    return sum(1 << c for c in parse_cards(text))


def _state(g: Game) -> tuple:
    return tuple((k, v[:] if isinstance(v, list) else v) for k, v in sorted(vars(g).items()))


# ---------------------------------------------------------------------- deals


@pytest.mark.parametrize("nc", [40, 41, 42])
def test_one_game_deal_hash_equals_the_batched_one(nc):
    counters = [(0, 0, 0, 0), (7, 3, 2, 5), (2**63 + 5, 1000, 9, 1), (-1, 12, 0, 3)]
    for seed, gid, ep, rnd in counters:
        row = hash_keys(seed, [gid], [ep], [rnd], nc)[0].tolist()
        assert hash_key(seed, gid, ep, rnd, nc) == row
        for p in (2, 3, 4):
            decks, dealers = shuffled_decks(seed, [gid], [ep], [rnd], p, nc)
            assert shuffled_deck(seed, gid, ep, rnd, p, nc) == (decks[0].tolist(), int(dealers[0]))


def test_game_deals_what_the_engine_slot_deals():
    eng = EscobaEngine(5, Rules(num_players=3))
    eng.reset(99)
    for gid in range(5):
        g = Game(Rules(num_players=3))
        g.reset(99, game_id=gid)
        assert g.deck == eng.deck[gid].tolist() and g.dealer == int(eng.dealer[gid])
        assert g.hands == eng.hands[gid].tolist() and g.table == int(eng.table[gid])


def test_initial_fifteen_table_matches_brute_force():
    rng = random.Random(5)
    for _ in range(3000):
        cards = rng.sample(range(42), 4)
        # brute force: every split of the four cards into two non-empty groups, jokers wild
        two = any(can_make([c for j, c in enumerate(cards) if s >> j & 1], 15)
                  and can_make([c for j, c in enumerate(cards) if not s >> j & 1], 15) for s in range(1, 15))
        expect = 2 if two else int(can_make(cards, 15))
        assert initial_fifteen_escobas(cards) == expect, cards
    assert initial_fifteen_escobas(parse_cards("1o 2o 5o 7o")) == 1
    assert initial_fifteen_escobas(parse_cards("Ro 5o Sc 7c")) == 2
    assert initial_fifteen_escobas(parse_cards("Ro 5o Sc 6c")) == 0
    assert INITIAL_FIFTEEN[10 * 1331 + 5 * 121 + 8 * 11 + 7] == 2
    assert groups_making_15(parse_cards("Ro 5o 1c 2c"))[0b0011]


def test_mesa_turn_up_one_game_and_batch_agree():
    rng = random.Random(8)
    rows = [rng.sample(range(42), 4) for _ in range(2000)]
    taken, esc, table = mesa_turn_up_batch(np.array(rows))
    for i, cards in enumerate(rows):
        assert mesa_turn_up(cards) == (int(taken[i]), int(esc[i]), int(table[i])), cards
    # 7o then 8c: 7o + 8c = 15 is taken at once (an escoba); then 5c and Rb make the next one.
    assert mesa_turn_up(parse_cards("7o Sc 5c Rb")) == (M("7o Sc 5c Rb"), 2, 0)


# ---------------------------------------------------------------------- bad input


def test_bad_input_raises_and_changes_nothing():
    g = Game()
    with pytest.raises(ValueError, match="call reset"):
        g.step(0)
    g.reset(4)
    before = _state(g)
    for seed in (1.5, True):
        with pytest.raises(TypeError, match="seed must be an int"):
            g.reset(seed=seed)
        assert _state(g) == before
    for kwargs, match in [({"game_id": -1}, "game_id"), ({"episode": "x"}, "episode"),
                          ({"dealer": 2}, "dealer must be a seat"),
                          ({"deck": list(range(39))}, "deck must have 40"),
                          ({"deck": [0] * 40}, "each of the 40 cards once"),
                          ({"hands": [[0, 1, 2]], "table": [3, 4, 5, 6], "stock": []}, "one list per seat")]:
        with pytest.raises(ValueError, match=match):
            g.reset(**{"seed": 1, **kwargs})
        assert _state(g) == before
    illegal = next(c for c in range(40) if not g.legal >> c & 1)
    for bad in (illegal, 40, -1, 2.0, None, True, "1"):
        with pytest.raises(ValueError, match="illegal action"):
            g.step(bad)
        assert _state(g) == before
    with pytest.raises(ValueError, match="must be None or a positive int"):
        Game(max_rounds=0)
    with pytest.raises(ValueError, match="escoba_env.Rules"):
        Game(rules={"num_players": 2})


def test_step_after_the_end_raises():
    g = Game(single_round=True)
    g.reset(3)
    while not g.done:
        g.step(g.legal_actions()[0])
    assert g.legal == 0 and g.legal_actions() == []
    with pytest.raises(ValueError, match="game is over"):
        g.step(0)


def test_raw_env_step_before_reset_is_a_clear_error():
    env = escoba_v0.raw_env()
    with pytest.raises(ValueError, match="call reset"):
        env.step(0)


# ---------------------------------------------------------------------- clone and views


def test_clone_is_independent():
    g = Game(Rules(num_players=3))
    g.reset(11)
    c = g.clone()
    snap = _state(c)
    while not g.done and g.round_index == 0:
        g.step(g.legal_actions()[-1])
    assert _state(c) == snap
    c.step(c.legal_actions()[0])
    assert c.hands != g.hands or c.table != g.table


def test_explicit_deal_and_views():
    g = Game()
    g.reset(0, dealer=1, hands=[parse_cards("7o 1c 4b"), parse_cards("2e 3e 4e")],
            table=parse_cards("3o 5c Sb 2c"), stock=[c for c in range(40) if c not in
                                                      parse_cards("7o 1c 4b 2e 3e 4e 3o 5c Sb 2c")])
    assert g.to_act == 0 and g.dealer == 1
    assert g.legal == M("7o 1c 4b") and g.table == M("3o 5c Sb 2c")
    st = g.step(parse_cards("7o")[0])  # 7o: 3o + 5c, or Sb: a choice
    assert st.captured == 0 and g.pending == parse_cards("7o")[0] and g.to_act == 0
    assert g.legal == M("3o 5c Sb")
    st = g.step(parse_cards("Sb")[0])
    assert st.captured == M("7o Sb") and st.escoba == 0 and g.table == M("3o 5c 2c")
    assert g.piles == [M("7o Sb"), 0] and g.to_act == 1 and g.last_capturer == 0
    eng = g.to_engine()
    assert int(eng.table[0]) == g.table and eng.hands[0].tolist() == g.hands
    obs = g.observe(1)
    assert obs.dtype == np.float32 and obs.flags.writeable and obs.shape == (546,)
    np.testing.assert_array_equal(obs, encode_one(eng, 1))
    assert g.action_mask(0).sum() == 0 and g.action_mask(1).sum() == 3
    assert g.stock() == g.deck[g.stock_pos:] and len(g.stock()) == 40 - 10


# ---------------------------------------------------------------------- the reference


@pytest.mark.parametrize(("rules", "kw"), [
    (Rules(), {"max_rounds": 2}),
    (Rules(num_players=4, partnerships=True, prefer_single=True), {"max_rounds": 1}),
    (Rules(num_players=3, sevens_rule="primera", bonus_sweeps=True), {"single_round": True}),
    (Rules(jokers=2, prefer_single=True), {"max_rounds": 2}),
    (Rules(num_players=3, jokers=1, mesa_deal=True, last_play_escoba=False), {"max_rounds": 2}),
], ids=str)
def test_game_matches_reference(rules, kw):
    rng = random.Random(17)
    for gid in range(6):
        g = Game(rules, **kw)
        g.reset(31, game_id=gid)
        ref = RefGame(rules, g.dealer, g.deck, **kw)
        while not g.done:
            compare_state(g.to_engine(), [ref])
            a = g.legal_actions()[rng.randrange(len(g.legal_actions()))]
            ri = ref.step(a)
            st = g.step(a)
            assert (st.actor, st.escoba, st.round_over) == (ri["actor"], ri["escoba"], ri["round_over"])
            if st.round_over:
                assert st.round_points == ri["round"]["points"]
                if ref.needs_deck:
                    ref.new_round(g.deck)
        compare_state(g.to_engine(), [ref])


# ---------------------------------------------------------------------- no NumPy on the step path


def test_step_path_makes_no_numpy_call():
    calls: list[str] = []

    def spy(frame, event, arg):
        if event == "call" and "numpy" in frame.f_code.co_filename:
            calls.append(frame.f_code.co_name)
        elif event == "c_call":
            owner = getattr(arg, "__self__", None)
            mod = (getattr(arg, "__module__", None) or type(owner).__module__ or "")
            if mod.startswith("numpy") or isinstance(owner, np.ndarray | np.generic):
                calls.append(arg.__name__)

    for rules in (Rules(), Rules(jokers=2, mesa_deal=True, num_players=3, prefer_single=True)):
        g = Game(rules, max_rounds=2)
        g.reset(5)
        rng = random.Random(0)
        sys.setprofile(spy)
        try:
            while not g.done:  # whole rounds: plays, captures, deals, round ends, the game end
                legal = g.legal_actions()
                g.step(legal[rng.randrange(len(legal))])
        finally:
            sys.setprofile(None)
        assert g.round_index == 2
        assert calls == []


def test_capture_action_names_an_offered_card_then_stops_with_the_played_card():
    from escoba_env.executors.game import capture_action

    bits = lambda *cs: sum(1 << c for c in cs)  # noqa: E731
    # an offered card of the chosen option is named, lowest id first
    assert capture_action(bits(3, 5, 8), 0, 40, bits(5, 8, 9)) == 5
    # nothing of the option is offered any more, the played card's own id ("stop") is: it is taken
    assert capture_action(bits(3, 40), bits(5), 40, bits(5)) == 40
    with pytest.raises(ValueError, match="not among the remaining options"):
        capture_action(bits(3), 0, 40, bits(5))
