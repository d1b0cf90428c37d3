"""agents.nets.solo's move inputs where the hands differ in size, at every phase of a deal, checked by
hand and against counts made here from the true game state; and the midgame network's inputs and
choices unchanged when the hidden cards (the other hand and the stock) are dealt differently."""

from __future__ import annotations

import copy
import math
from itertools import combinations

import numpy as np
import pytest
import torch

from agents.heuristic.endgame import endgame_rows
from agents.nets.neural import NeuralAgent
from agents.nets.solo import (
    ENDGAME_INPUTS,
    MIDGAME_INPUTS,
    MIDGAME_SETS,
    EndgameNet,
    SoloAgent,
    endgame_inputs,
    midgame_input_names,
    midgame_inputs,
)
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from tests.agents.test_solo import PLAIN
from tests.helpers import C, M, set_position

MID = {name: i for i, name in enumerate(MIDGAME_INPUTS)}
END = {name: i for i, name in enumerate(ENDGAME_INPUTS)}
REPLIES = ("unseen_capture_share", "unseen_sweep_share", "p_other_captures", "p_other_sweeps",
           "reply_cards", "reply_oros", "reply_sevens", "reply_velo")
END_REPLIES = ("reply_captures", "reply_sweeps", "reply_cards", "reply_oros", "reply_sevens", "reply_velo")
STOCK = "Ro Rc Re Rb 2c 2e"


def _cards(mask: int) -> list[int]:
    return [c for c in range(40) if int(mask) >> c & 1]


def _mask_of(row: np.ndarray) -> int:
    return int(sum(1 << int(c) for c in np.flatnonzero(row)))


def _obs(e: EscobaEngine, games=None):
    g = np.arange(e.num_games) if games is None else np.asarray(games)
    return encode(e, e.to_act[g], g), action_masks(e, e.to_act[g], g)


def _position(hands: list[str], table: str, pile0: str, stock: str, dealer: int) -> EscobaEngine:
    """Return seat 0 to act at a hand-made position; cards named nowhere are seat 1's pile."""
    e = EscobaEngine(1, Rules(), single_round=True)
    e.reset(seed=0, dealer=dealer)
    stock_ids = [C(c) for c in stock.split()]
    used = M(hands[0]) | M(hands[1]) | M(table) | M(pile0) | M(stock)
    deck = [c for c in range(40) if c not in stock_ids] + stock_ids
    return set_position(e, [M(hands[0]), M(hands[1])], M(table), [M(pile0), ((1 << 40) - 1) & ~used],
                        deck, 40 - len(stock_ids), dealer=dealer)


def _row(moves, card: str) -> int:
    (i,) = np.flatnonzero(moves.card == C(card))
    return int(i)


def test_midgame_inputs_when_the_other_hand_holds_one_card_less():
    # Seat 1 led this deal: seat 0 holds 3 cards, seat 1 two (3e 4c). Unseen: 3e 4c and the stock's six.
    e = _position(["7o 5c 1e", "3e 4c"], "6c 2o", "1o 1c", STOCK, dealer=0)
    obs, mask = _obs(e)
    moves, x, _ = midgame_inputs(obs, Rules(), mask)
    five = _row(moves, "5c")
    assert _mask_of(x[five, 40:80]) == M("3e 4c " + STOCK)
    assert x[:, MID["my_hand_size"]].tolist() == pytest.approx([2 / 3] * 3)
    assert x[:, MID["other_hand_size"]].tolist() == pytest.approx([2 / 3] * 3)  # 1.0 is seat 0's own 3
    assert x[:, MID["stock_size"]].tolist() == pytest.approx([6 / 30] * 3)
    # 5c laid on 6c 2o (13 in all): 4c takes 6c 5c, each rey takes 5c, 2c and 2e take all three
    # (sweeps); 3e takes nothing. 7 and 2 of the 8 unseen cards. A 2-card hand from the 8 always
    # holds a capturing card (only one does not) and holds a sweeping one with 1 - C(6,2)/C(8,2).
    got = x[five, [MID[k] for k in REPLIES]]
    np.testing.assert_allclose(got, [7 / 8, 2 / 8, 1.0, 1 - 15 / 28, 4 / 40, 1 / 10, 0, 0], rtol=1e-6)
    one = _row(moves, "1e")  # on 6c 2o 1e (9) nothing unseen reaches fifteen
    np.testing.assert_allclose(x[one, [MID[k] for k in REPLIES]], 0, atol=0)


def test_midgame_inputs_when_the_other_hand_is_empty():
    # Last card of a deal with six cards left in the stock: seat 1 has played its three.
    e = _position(["5c", ""], "6c 2o", "1o 1c", STOCK, dealer=0)
    obs, mask = _obs(e)
    moves, x, _ = midgame_inputs(obs, Rules(), mask)
    assert moves.card.tolist() == [C("5c")]
    assert (x[0, MID["my_hand_size"]], x[0, MID["other_hand_size"]]) == (0, 0)
    # On 6c 2o 5c the four reyes and both deuces capture, the deuces sweep; an empty hand holds none.
    np.testing.assert_allclose(x[0, [MID[k] for k in REPLIES]], [1, 2 / 6, 0, 0, 4 / 40, 1 / 10, 0, 0],
                               rtol=1e-6)


def _table_subsets(table: list[int]) -> dict[int, list[tuple[int, ...]]]:
    """Return every non-empty subset of the table cards by the sum of its values."""
    out: dict[int, list[tuple[int, ...]]] = {}
    for k in range(1, len(table) + 1):
        for s in combinations(table, k):
            out.setdefault(sum(c // 4 + 1 for c in s), []).append(s)
    return out


def _answers(cards: list[int], table: list[int]) -> list[tuple[bool, bool, list[float]]]:
    """Per card: whether it captures on ``table``, whether it sweeps it, and the cards / 40, oros /
    10, sevens / 4 and velo of itself and every table card in any of its options."""
    subsets = _table_subsets(table)
    total = sum(c // 4 + 1 for c in table)
    out = []
    for c in cards:
        options = subsets.get(15 - (c // 4 + 1), [])
        if not options:
            out.append((False, False, [0.0] * 4))
            continue
        took = {c, *(t for s in options for t in s)}
        out.append((True, total + c // 4 + 1 == 15,
                    [len(took) / 40, sum(t % 4 == 0 for t in took) / 10, sum(t // 4 == 6 for t in took) / 4,
                     float(C("7o") in took)]))
    return out


def _hidden_reference(unseen: list[int], table: list[int], hand: int) -> list[float]:
    """The midgame reply inputs of a hand of ``hand`` cards drawn from ``unseen``, by counting."""
    ans = _answers(unseen, table)
    n = len(unseen)
    caps = sum(a[0] for a in ans)
    sweeps = sum(a[1] for a in ans)

    def some(k: int) -> float:  # P(a hand of `hand` of the n cards holds one of k marked ones)
        return 1 - math.comb(n - k, hand) / math.comb(n, hand)

    best = [max([a[2][j] for a in ans], default=0.0) for j in range(4)]
    return [caps / n, sweeps / n, some(caps), some(sweeps), *best]


def _endgame_reference(other: list[int], table: list[int]) -> list[float]:
    """The endgame reply inputs of the other hand: capturing cards / 3, a sweep, the most taken."""
    ans = _answers(other, table)
    best = [max([a[2][j] for a in ans], default=0.0) for j in range(4)]
    return [sum(a[0] for a in ans) / 3, float(any(a[1] for a in ans)), *best]


def test_inputs_match_the_true_state_at_every_decision_of_whole_rounds():
    # Random play over whole rounds: every deal, capture choices and the empty-stock endgame. The
    # expected values come from the engine's own hands and stock, never from the observation.
    n = 12
    eng = EscobaEngine(n, Rules(), single_round=True)
    eng.reset(seed=21)
    rng = np.random.default_rng(4)
    seen = {"first deal": 0, "later deals": 0, "endgame": 0, "capture choice": 0, "unequal hands": 0,
            "empty other hand": 0}
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs, masks = _obs(eng, live)
        late = endgame_rows(obs, Rules())
        for phase, inputs, cols in ((False, midgame_inputs, MID), (True, endgame_inputs, END)):
            rows = np.flatnonzero(late == phase)
            if rows.size == 0:
                continue
            moves, x, _ = inputs(obs[rows], Rules(), masks[rows])
            for m in range(len(moves.card)):
                g = int(live[rows[moves.row[m]]])
                seat = int(eng.to_act[g])
                other = int(eng.hands[g, 1 - seat])
                stock = sum(1 << int(c) for c in eng.deck[g, int(eng.stock_pos[g]):])
                card, option = int(moves.card[m]), int(moves.option[m])
                table = int(eng.table[g])
                table_after = table & ~option if option else table | (1 << card)
                mine_after = int(eng.hands[g, seat]) & ~(1 << card)
                k_other = bin(other).count("1")
                assert _mask_of(x[m, 0:40]) == mine_after
                assert _mask_of(x[m, 80:120]) == table_after
                assert x[m, cols["my_hand_size"]] == pytest.approx(bin(mine_after).count("1") / 3)
                assert x[m, cols["other_hand_size"]] == pytest.approx(k_other / 3)
                if phase:
                    assert stock == 0 and _mask_of(x[m, 40:80]) == other
                    got = x[m, [END[k] for k in END_REPLIES]]
                    want = _endgame_reference(_cards(other), _cards(table_after))
                else:
                    assert _mask_of(x[m, 40:80]) == other | stock
                    assert x[m, MID["stock_size"]] == pytest.approx(bin(stock).count("1") / 30)
                    got = x[m, [MID[k] for k in REPLIES]]
                    want = _hidden_reference(_cards(other | stock), _cards(table_after), k_other)
                    seen["first deal" if bin(stock).count("1") == 30 else "later deals"] += 1
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
                seen["endgame"] += phase
                seen["capture choice"] += int(eng.pending[g]) >= 0
                seen["unequal hands"] += k_other != bin(int(eng.hands[g, seat])).count("1")
                seen["empty other hand"] += k_other == 0
        step = np.zeros(n, np.int64)
        step[live] = [rng.choice(np.flatnonzero(r)) for r in masks]
        eng.step(step)
    assert min(seen.values()) > 10, seen


def _redeal_hidden(eng: EscobaEngine, rng: np.random.Generator) -> EscobaEngine:
    """Return a copy of ``eng`` whose every game has the other hand and the stock dealt anew from
    the same cards (same sizes): what the seat to act cannot see, changed."""
    out = copy.deepcopy(eng)
    for g in range(eng.num_games):
        if eng.done[g]:
            continue
        other = 1 - int(eng.to_act[g])
        pos = int(eng.stock_pos[g])
        pool = _cards(int(eng.hands[g, other])) + [int(c) for c in eng.deck[g, pos:]]
        k = bin(int(eng.hands[g, other])).count("1")
        new = [pool[i] for i in rng.permutation(len(pool))]
        out.hands[g, other] = sum(1 << c for c in new[:k])
        out.deck[g, pos:] = np.array(new[k:], np.int8)
    return out


@pytest.mark.parametrize("inputs", MIDGAME_SETS)
def test_the_midgame_network_sees_and_plays_the_same_whatever_the_hidden_cards(monkeypatch, inputs):
    torch.manual_seed(0)
    agent = SoloAgent(NeuralAgent.from_checkpoint(PLAIN), EndgameNet([32, 32]),
                      midgame=EndgameNet([64, 64], len(midgame_input_names(inputs))), midgame_inputs=inputs)
    n = 16
    eng = EscobaEngine(n, Rules(), single_round=True)
    eng.reset(seed=8)
    rng = np.random.default_rng(1)
    checked = changed = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done & (eng.stock_pos < 40))
        if live.size:
            obs, masks = _obs(eng, live)
            moves, x, _ = midgame_inputs(obs, Rules(), masks, inputs=inputs)
            acts = agent.act_batch(obs, masks)
            for _ in range(2):  # two other deals of the hidden cards at every position
                other = _redeal_hidden(eng, rng)
                changed += sum(int(other.hands[g, 1 - eng.to_act[g]]) != int(eng.hands[g, 1 - eng.to_act[g]])
                               for g in live)
                o2, m2 = _obs(other, live)
                assert np.array_equal(obs, o2) and np.array_equal(masks, m2)
                moves2, x2, _ = midgame_inputs(o2, Rules(), m2, inputs=inputs)
                assert np.array_equal(moves.option, moves2.option) and np.array_equal(x, x2)
                assert np.array_equal(agent.act_batch(o2, m2), acts)
            checked += live.size
        live = np.flatnonzero(~eng.done)
        step = np.zeros(n, np.int64)
        _, masks = _obs(eng, live)
        step[live] = [rng.choice(np.flatnonzero(r)) for r in masks]
        eng.step(step)
    assert checked > 16 * 25 and changed > checked
