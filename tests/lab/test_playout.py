"""lab.playout: the counter inputs (each unseen card's greedy reply, then what the observer's hand could
take), bit for bit what they were in the library, and the agent that plays a network reading them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.heuristic.endgame import endgame_rows
from agents.heuristic.greedy import GreedyAgent
from agents.moves import best_per_row, enumerate_moves, move_actions
from agents.nets.neural import NeuralAgent, load_checkpoint, save_checkpoint
from agents.nets.solo import MIDGAME_INPUTS, EndgameNet, midgame_inputs, solo_checkpoint_dict
from agents.worlds import observation_masks
from escoba_env import EscobaEngine, Rules
from lab.playout import (
    COUNTER_BLOCKS,
    MIDGAME_PLAYOUT_INPUTS,
    PlayoutSoloAgent,
    counter_blocks,
    greedy_replies,
    load_playout_agent,
    playout_inputs,
)
from tests.agents.test_solo import PLAIN
from tests.agents.test_solo_inputs import _answers, _cards, _table_subsets
from tests.agents.test_solo_inputs import _obs as _obs_of
from tests.agents.test_solo_midgame import _midgame_position, _obs
from tests.helpers import C, M, set_position
from tests.project.test_pinned_digests import TABLES, positions, sha


def test_the_playout_inputs_are_pinned():
    """The digest the library's ``midgame_inputs(..., inputs="playout")`` gave before it moved here."""
    obs, masks = positions(TABLES["2p"])
    rows = ~endgame_rows(obs, Rules())
    moves, x, member = playout_inputs(obs[rows][:300], Rules(), masks[rows][:300])
    assert x.shape[1] == len(MIDGAME_PLAYOUT_INPUTS) == 560
    assert sha(x, member, moves.row, moves.card, moves.option, moves.start) == "bdb2e075db3daca5"


def test_greedy_replies_play_each_card_as_the_greedy_agent_would():
    # An 8 (sota) needs 7: on 7o 3o 4c 5c 2e it may take the velo, 3o 4c or 5c 2e; greedy takes the
    # velo (0.6 + 0.3 + 0.1 against 0.1 or nothing). On 3c 3e 4c 4e its four options tie, and the
    # lowest mask (3c 4c) is taken. A 2 there takes nothing (no 13): it is laid on the table; a 1
    # would sweep all four (14).
    tables = np.array([M("7o 3o 4c 5c 2e"), M("3c 3e 4c 4e"), M("3c 3e 4c 4e"), M("3c 3e 4c 4e"),
                       M("5c 2e")], np.uint64)
    cards = np.array([C("Sc"), C("So"), C("2b"), C("1b"), C("Sb")])
    after, took = greedy_replies(tables, cards)
    assert after.tolist() == [M("3o 4c 5c 2e"), M("3e 4e"), M("3c 3e 4c 4e 2b"), 0, 0]
    assert took.tolist() == [True, True, False, True, True]
    # the same choices as the greedy agent's with that one card in hand
    for table, card, left in zip(tables.tolist(), cards.tolist(), after.tolist(), strict=True):
        e = EscobaEngine(1, Rules(), single_round=True)
        e.reset(seed=0, dealer=1)
        pile = sum(1 << c for c in range(40) if not ((table | 1 << card | M("1o")) >> c) & 1)
        e = set_position(e, [1 << card, M("1o")], table, [pile, 0], list(range(40)), 40, dealer=1)
        obs, _ = _obs(e)
        planes = observation_masks(obs, Rules())
        moves = enumerate_moves(obs, Rules(), planes)
        score, tiebreak = GreedyAgent(Rules()).move_scores(moves, planes, np.zeros(len(moves.card), bool))
        chosen = best_per_row(moves, score, tiebreak)[0]
        assert int(moves.option[chosen]) == table & ~left & ~(1 << card), (table, card)


def test_the_midgame_counter_inputs_of_a_hand_made_position():
    obs, mask = _obs(_midgame_position())
    _, answers, _ = midgame_inputs(obs, Rules(), mask, inputs="answers")
    moves, x, _ = playout_inputs(obs, Rules(), mask)
    assert x.shape == (3, len(MIDGAME_PLAYOUT_INPUTS)) == (3, 560)
    assert MIDGAME_PLAYOUT_INPUTS[360] == "counter_cards[0]"
    assert MIDGAME_PLAYOUT_INPUTS[480:] == MIDGAME_INPUTS[200:]
    # the counter blocks sit between the answer blocks and the scalars, which are unchanged
    np.testing.assert_array_equal(x[:, :360], answers[:, :360])
    np.testing.assert_array_equal(x[:, 480:], answers[:, 360:])
    five, seven = 1, 2  # moves in card order: 1e, 5c, 7o
    cards, sweeps, points = (x[:, 360 + 40 * i: 400 + 40 * i] for i in range(3))
    # After 5c (table 6c 2o 5c), with 7o 1e left in hand: 4c takes 6c 5c and leaves 2o, which
    # neither takes; a king takes 5c and 7o then sweeps 6c 2o (3 cards; 2 oros, a seven, the
    # velo); 2c and 2e sweep themselves (nothing left to take); 3e is laid (6c 2o 5c 3e): 7o
    # takes 6c 2o or 5c 3e (5 cards with itself); 1b is laid (6c 2o 5c 1b = 14): 1e sweeps it
    # all, 5 cards.
    want = {"Ro": (0.3, 1, 1.75), "Rc": (0.3, 1, 1.75), "Re": (0.3, 1, 1.75), "Rb": (0.3, 1, 1.75),
            "3e": (0.5, 0, 1.75), "1b": (0.5, 1, 1.75)}
    for c in range(40):
        name = next((k for k in want if C(k) == c), None)
        got = (cards[five, c], sweeps[five, c], points[five, c])
        np.testing.assert_allclose(got, want.get(name, (0, 0, 0)), rtol=1e-6, err_msg=str(name))
    # After 7o sweeps, each unseen card is laid on the empty table: 5c takes a king and sweeps
    # (2 cards; Ro is an oro); nothing else answers.
    for c in range(40):
        king = c // 4 == 9
        np.testing.assert_allclose((cards[seven, c], sweeps[seven, c], points[seven, c]),
                                   (0.2, 1, 0.25 if c == C("Ro") else 0) if king else (0, 0, 0), rtol=1e-6)
    assert COUNTER_BLOCKS == ("counter_cards", "counter_sweeps", "counter_points")
    # an empty hand answers nothing
    assert not counter_blocks(np.array([M("Rc 3e")], np.uint64), np.zeros(1, np.uint64),
                              np.array([M("5c")], np.uint64)).any()


def _greedy_reply(card: int, table: list[int]) -> list[int]:
    """The table after the greedy agent plays ``card`` on ``table``, by listing its options: the
    one of most weight (escoba 1, velo 0.6, seven 0.3, oro 0.1, card 0.05), then of most cards,
    then the first by mask; a card with no option is laid."""
    options = _table_subsets(table).get(15 - (card // 4 + 1), [])
    options = sorted(options, key=lambda o: sum(1 << c for c in o))
    if not options:
        return [*table, card]

    def weight(o: tuple[int, ...]) -> tuple[float, int]:
        took = {card, *o}
        w = (1.0 * (len(o) == len(table)) + (0.6 * (C("7o") in took) + 0.3 * sum(t // 4 == 6 for t in took)
                                              + 0.1 * sum(t % 4 == 0 for t in took) + 0.05 * len(took)))
        return 10.0 + w, len(took)

    best = max(options, key=weight)  # max keeps the first of equal keys
    return [t for t in table if t not in best]


def test_counter_inputs_match_a_reference_at_every_midgame_decision_of_whole_rounds():
    # For every move and every unseen card (from the engine's true other hand and stock): the table
    # after that card's greedy reply, then the most the observer's remaining hand could take there.
    n = 12
    eng = EscobaEngine(n, Rules(), single_round=True)
    eng.reset(seed=23)
    rng = np.random.default_rng(5)
    blocks = 360  # the counter blocks' first column
    checked = answered = swept = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done & (eng.stock_pos < 40))
        if live.size:
            obs, masks = _obs_of(eng, live)
            moves, x, _ = playout_inputs(obs, Rules(), masks)
            for m in range(len(moves.card)):
                g = int(live[moves.row[m]])
                seat = int(eng.to_act[g])
                stock = sum(1 << int(c) for c in eng.deck[g, int(eng.stock_pos[g]):])
                unseen = int(eng.hands[g, 1 - seat]) | stock
                card, option = int(moves.card[m]), int(moves.option[m])
                table = int(eng.table[g])
                table_after = _cards(table & ~option if option else table | (1 << card))
                mine = _cards(int(eng.hands[g, seat]) & ~(1 << card))
                want = np.zeros((3, 40))
                for u in _cards(unseen):
                    ans = _answers(mine, _greedy_reply(u, table_after))
                    want[:, u] = [max([a[2][0] * 4 for a in ans], default=0.0),
                                  float(any(a[1] for a in ans)),
                                  max([a[2][1] * 2.5 + a[2][2] + a[2][3] for a in ans], default=0.0)]
                got = x[m, blocks:blocks + 120].reshape(3, 40)
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
                checked += 1
                answered += bool(want[0].any())
                swept += bool(want[1].any())
        live = np.flatnonzero(~eng.done)
        obs, masks = _obs_of(eng, live)
        step = np.zeros(n, np.int64)
        step[live] = [rng.choice(np.flatnonzero(r)) for r in masks]
        eng.step(step)
    assert checked > 300 and answered > 100 and swept > 10, (checked, answered, swept)


def test_a_playout_checkpoint_is_played_by_the_lab_and_refused_by_the_library(tmp_path):
    torch.manual_seed(0)
    plain = NeuralAgent.from_checkpoint(PLAIN)
    mid = EndgameNet([16], len(MIDGAME_PLAYOUT_INPUTS))
    path = tmp_path / "playout.pt"
    ckpt = solo_checkpoint_dict(plain, EndgameNet([16]), midgame=mid, midgame_inputs="playout")
    save_checkpoint(path, ckpt)
    agent = load_playout_agent(path, seed=0)
    assert isinstance(agent, PlayoutSoloAgent) and agent.midgame_inputs == "playout"
    obs, mask = _obs(_midgame_position())
    moves, x, _ = playout_inputs(obs, Rules(), mask)
    with torch.no_grad():
        best = best_per_row(moves, agent.midgame(torch.from_numpy(x)).numpy())
    assert agent.act_batch(obs, mask).tolist() == move_actions(moves, best, obs, mask).tolist()
    from agents.spec.registry import make_agent

    with pytest.raises(ValueError, match="unknown midgame inputs 'playout'"):
        make_agent(f"checkpoint:{path}")
    with pytest.raises(ValueError, match="checkpoint file not found"):
        load_playout_agent(tmp_path / "missing.pt")
    assert load_checkpoint(path)["midgame_inputs"] == "playout"
