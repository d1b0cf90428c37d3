"""agents.nets.tablenet: the move network of the 3-player and 2v2 tables, read from the observation only."""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.moves import best_per_row, move_actions
from agents.nets.loader import load_checkpoint_agent
from agents.nets.neural import NeuralAgent, load_checkpoint, save_checkpoint
from agents.nets.shipped import MOVE_CHECKPOINTS, package_file, shipped_checkpoint
from agents.nets.solo import EndgameNet
from agents.nets.tablenet import (
    TableNetAgent,
    last_input_names,
    move_checkpoint_dict,
    table_input_names,
    table_inputs,
)
from agents.search.pimc import SearchAgent
from agents.spec.registry import make_agent
from agents.training.distill import collect_labels, save_labels
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from tests.helpers import C, M, record_recipe, replay_recipe, set_position

THREE = Rules(num_players=3)
TEAMS = Rules(num_players=4, partnerships=True)
STOCK = "Ro Rc Re Rb 2c 2e"


def _cards(row: np.ndarray) -> int:
    return int(sum(1 << int(c) for c in np.flatnonzero(row)))


def _three_player_position() -> EscobaEngine:
    """3 players, seat 0 to act with 7o 5c 1e; seat 1 holds 3e 4c 1b, seat 2 holds 6e 6b 3c; table
    6c 2o; seat 0's pile 1o 1c, seat 2's pile 7c; six cards in the stock; every other card is seat
    1's pile; seat 2 captured last."""
    e = EscobaEngine(1, THREE, single_round=True)
    e.reset(seed=0, dealer=2)
    hands, table = [M("7o 5c 1e"), M("3e 4c 1b"), M("6e 6b 3c")], M("6c 2o")
    piles = [M("1o 1c"), 0, M("7c")]
    stock = [C(c) for c in STOCK.split()]
    used = hands[0] | hands[1] | hands[2] | table | piles[0] | piles[2] | M(STOCK)
    piles[1] = sum(1 << c for c in range(40) if not (used >> c) & 1)
    deck = [c for c in range(40) if c not in stock] + stock
    return set_position(e, hands, table, piles, deck, 34, dealer=2, last_capturer=2)


def _obs(e: EscobaEngine) -> tuple[np.ndarray, np.ndarray]:
    return encode(e, e.to_act[:1], np.array([0])), action_masks(e, e.to_act[:1], np.array([0]))


def _col(rules: Rules, name: str) -> int:
    return table_input_names(rules).index(name)


def test_table_inputs_of_a_hand_made_three_player_position():
    obs, mask = _obs(_three_player_position())
    moves, x, member = table_inputs(obs, THREE, mask)
    names = table_input_names(THREE)
    assert x.shape == (3, len(names)) and len(set(names)) == len(names)
    assert moves.card.tolist() == [C("1e"), C("5c"), C("7o")]
    blocks = {
        b: x[:, 40 * i : 40 * i + 40] for i, b in enumerate(("hand", "unseen", "table", "card", "captured"))
    }
    unseen = M("3e 4c 1b 6e 6b 3c " + STOCK)  # both other hands and the stock, not told apart
    for i in range(3):
        assert _cards(blocks["unseen"][i]) == unseen
    discard, five, seven = 0, 1, 2  # 1e and 5c are laid on the table; 7o takes 6c 2o: an escoba
    assert _cards(blocks["captured"][seven]) == M("7o 6c 2o") and _cards(blocks["table"][seven]) == 0
    assert _cards(blocks["table"][five]) == M("6c 2o 5c") and _cards(blocks["captured"][five]) == 0

    def at(move: int, name: str) -> float:
        return float(x[move, _col(THREE, name)])

    # side 0's pile after the escoba: 1o 1c 7o 6c 2o (5 cards, 3 oros, one seven, the velo)
    assert [at(seven, f"side0_{c}") for c in ("cards", "oros", "sevens", "velo")] == pytest.approx(
        [5 / 40, 3 / 10, 1 / 4, 1]
    )
    assert at(seven, "side0_escobas") == 1 and at(five, "side0_escobas") == 0
    assert [at(five, f"side2_{c}") for c in ("cards", "oros", "sevens", "velo")] == pytest.approx(
        [1 / 40, 0, 1 / 4, 0]
    )
    # the last capturer: the observer after a capture, seat 2 after a discard
    assert [at(seven, f"last_seat{r}") for r in range(3)] == [1, 0, 0]
    assert [at(five, f"last_seat{r}") for r in range(3)] == [0, 0, 1]
    assert (at(seven, "escoba"), at(seven, "discard"), at(discard, "discard")) == (1, 0, 1)
    assert at(five, "my_hand_size") == pytest.approx(2 / 3)
    assert (
        at(five, "seat1_hand_size"),
        at(five, "seat2_hand_size"),
        at(five, "stock_size"),
    ) == pytest.approx((1, 1, 6 / 30))
    # cards in play: the hand after, the 12 unseen and the table (cards, oros, sevens, velo)
    assert [at(seven, f"live_{c}") for c in ("cards", "oros", "sevens", "velo")] == pytest.approx(
        [14 / 40, 1 / 10, 0, 0]
    )
    # seat 1's pile holds the other 20 cards, 6 oros and 2 sevens: the oros are won, not the cards
    # (20 of 40 is not more than half) nor the sevens (2 of 4)
    assert (at(five, "side1_has_cards"), at(five, "side1_has_oros"), at(five, "side1_has_sevens")) == (
        0,
        1,
        0,
    )
    # side 0 cannot pass 20 cards (2 in its pile, 17 in play); the velo, still in hand, is anyone's
    assert (
        at(five, "side0_can_cards") == 0
        and at(five, "side2_can_velo") == 1
        and at(five, "side1_can_sevens") == 1
    )
    # 6c 2o 5c (13): the next seat's hand is 3 of the 12 unseen cards; 4c, the four kings and 2c 2e
    # capture (7 of 12), the two deuces sweep
    share = x[five, _col(THREE, "unseen_capture_share") : _col(THREE, "unseen_capture_share") + 4]
    np.testing.assert_allclose(share, [7 / 12, 2 / 12, 1 - 10 / 220, 1 - 120 / 220], rtol=1e-6)
    assert member.tolist() == [[a == c for a in range(40)] for c in (C("1e"), C("5c"), C("7o"))]


def test_the_answer_inputs_of_a_hand_made_three_player_position():
    """``answers=True`` adds, per move, what each unseen card would take on the table it leaves, and
    the chance the seat after the next holds a card that captures / sweeps there."""
    obs, mask = _obs(_three_player_position())
    _, base, _ = table_inputs(obs, THREE, mask)
    _, x, _ = table_inputs(obs, THREE, mask, answers=True)
    names = last_input_names(THREE, "answers")
    assert x.shape == (3, len(names)) == (3, len(table_input_names(THREE)) + 160 + 2)
    assert len(set(names)) == len(names) and names[:200] == table_input_names(THREE)[:200]
    assert np.array_equal(x[:, :200], base[:, :200]) and np.array_equal(x[:, 360:-2], base[:, 200:])
    five, seven = 1, 2

    def block(move: int, name: str) -> dict[str, float]:
        i = names.index(f"{name}[0]")
        return {c: float(v) for c, v in zip(("1o 1c 1e 1b 2o 2c 2e 2b 3o 3c 3e 3b 4o 4c 4e 4b 5o 5c 5e 5b "
                                             "6o 6c 6e 6b 7o 7c 7e 7b So Sc Se Sb Co Cc Ce Cb Ro Rc Re "
                                             "Rb").split(), x[move, i:i + 40], strict=True) if v}

    # 6c 2o 5c (13) left: 4c takes 6c 5c, each king takes 5c, each deuce sweeps all three
    assert block(five, "answer_cards") == pytest.approx(
        {"4c": 0.3, "Ro": 0.2, "Rc": 0.2, "Re": 0.2, "Rb": 0.2, "2c": 0.4, "2e": 0.4})
    assert block(five, "answer_sweeps") == {"2c": 1.0, "2e": 1.0}
    assert block(five, "answer_oros") == pytest.approx({"Ro": 0.25, "2c": 0.25, "2e": 0.25})
    assert block(five, "answer_sevens_velo") == {}
    for name in ("answer_cards", "answer_sweeps", "answer_oros"):
        assert block(seven, name) == {}  # the escoba leaves nothing to take
    holds = x[five, [names.index("seat2_holds_capture"), names.index("seat2_holds_sweep")]]
    np.testing.assert_allclose(holds, [1 - 10 / 220, 1 - 120 / 220], rtol=1e-6)
    assert len(last_input_names(TEAMS, "answers")) == len(table_input_names(TEAMS)) + 160 + 4
    with pytest.raises(ValueError, match="unknown last-deal inputs"):
        last_input_names(TEAMS, "cards")


def _play(eng: EscobaEngine, agent, rng: np.random.Generator, check=None) -> int:
    """Play every game of ``eng`` to its end, ``agent`` in every seat (None: random legal actions);
    ``check(obs, masks, acts)`` after every step's choice."""
    steps = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs, masks = encode(eng, eng.to_act[live], live), action_masks(eng, eng.to_act[live], live)
        acts = (
            agent.act_batch(obs, masks)
            if agent is not None
            else np.array([rng.choice(np.flatnonzero(r)) for r in masks])
        )
        assert masks[np.arange(live.size), acts].all()
        if check is not None:
            check(obs, masks, acts)
        full = np.zeros(eng.num_games, np.int64)
        full[live] = acts
        eng.step(full)
        steps += live.size
    return steps


@pytest.mark.parametrize("rules", [THREE, TEAMS], ids=["3p", "2v2"])
def test_batched_inputs_equal_row_by_row_and_the_agent_plays_its_best_move(rules):
    torch.manual_seed(0)
    agent = TableNetAgent(EndgameNet([16], len(table_input_names(rules))), rules)
    eng = EscobaEngine(12, rules, single_round=True)
    eng.reset(seed=3)

    def check(obs, masks, acts):
        moves, x, member = table_inputs(obs, rules, masks)
        for i in range(len(obs)):
            _, xi, mi = table_inputs(obs[i : i + 1], rules, masks[i : i + 1])
            lo, hi = moves.start[i], moves.start[i + 1]
            assert np.array_equal(x[lo:hi], xi) and np.array_equal(member[lo:hi], mi)
        with torch.no_grad():
            v = agent.net(torch.from_numpy(x)).numpy()
        assert np.array_equal(acts, move_actions(moves, best_per_row(moves, v), obs, masks))

    assert _play(eng, agent, np.random.default_rng(0), check) > 12 * 10


@pytest.mark.parametrize("rules", [THREE, TEAMS], ids=["3p", "2v2"])
def test_swapping_hidden_cards_changes_neither_inputs_nor_choice(rules):
    """The hidden cards (other hands and stock order) are shuffled among themselves: the observation,
    the inputs and the chosen action stay the same."""
    torch.manual_seed(1)
    n = len(table_input_names(rules))
    agent = TableNetAgent(EndgameNet([32, 32], n), rules, symmetric=True, last=EndgameNet([16], n))
    answering = TableNetAgent(EndgameNet([32, 32], n), rules, symmetric=True, last_inputs="answers",
                              last=EndgameNet([16], len(last_input_names(rules, "answers"))))
    rng = np.random.default_rng(7)
    eng = EscobaEngine(16, rules, single_round=True)
    eng.reset(seed=21)
    checked, late = 0, 0
    for _ in range(40):  # to the end of the round: the last deal is checked too
        live = np.flatnonzero(~eng.done)
        if not live.size:
            break
        seat = eng.to_act[live]
        obs, masks = encode(eng, seat, live), action_masks(eng, seat, live)
        other = EscobaEngine(eng.num_games, rules, single_round=True)
        other.__dict__.update(
            {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in eng.__dict__.items()}
        )
        for g, s in zip(live, seat, strict=True):
            others = [t for t in range(rules.num_players) if t != s]
            hidden = [c for t in others for c in range(40) if int(other.hands[g, t]) >> c & 1]
            hidden += [int(c) for c in other.deck[g, other.stock_pos[g] :]]
            perm = list(rng.permutation(hidden))
            for t in others:
                n = bin(int(other.hands[g, t])).count("1")
                other.hands[g, t] = sum(1 << int(c) for c in perm[:n])
                perm = perm[n:]
            other.deck[g, other.stock_pos[g] :] = perm
        assert (other.card_count() == 40).all()
        obs2, masks2 = encode(other, seat, live), action_masks(other, seat, live)
        assert np.array_equal(obs, obs2) and np.array_equal(masks, masks2)
        for answers in (False, True):
            assert np.array_equal(table_inputs(obs, rules, masks, answers=answers)[1],
                                  table_inputs(obs2, rules, masks2, answers=answers)[1])
        for a in (agent, answering):
            assert np.array_equal(a.act_batch(obs, masks), a.act_batch(obs2, masks2))
        checked += live.size
        late += int((other.stock_pos[live] == len(other.deck[0])).sum())
        full = np.zeros(eng.num_games, np.int64)
        full[live] = agent.act_batch(obs, masks)
        eng.step(full)
    assert checked > 100 and late > 50


def _suit_swap(perm: tuple[int, int, int]) -> np.ndarray:
    """Return the card-id map that permutes copas, espadas and bastos by ``perm`` (oros stays)."""
    suit = np.array((0, *perm))
    return 4 * (np.arange(40) // 4) + suit[np.arange(40) % 4]


@pytest.mark.parametrize("rules", [THREE, TEAMS], ids=["3p", "2v2"])
def test_a_symmetric_agent_plays_suit_permuted_deals_the_same_way(rules):
    """The same deals with the plain suits permuted (a position worth exactly the same): the symmetric
    agent values every move the same (up to float rounding) and plays the permuted move; the plain
    network, which training only pushes towards that symmetry, does not."""
    torch.manual_seed(2)
    net = EndgameNet([32, 32], len(table_input_names(rules)))
    sym, plain = TableNetAgent(net, rules, symmetric=True), TableNetAgent(net, rules)
    sigma = _suit_swap((3, 1, 2))
    decks = np.array([np.random.default_rng(s).permutation(40) for s in range(8)])
    eng, twin = EscobaEngine(8, rules, single_round=True), EscobaEngine(8, rules, single_round=True)
    eng.reset(seed=0, deck=decks, dealer=0)
    twin.reset(seed=0, deck=sigma[decks], dealer=0)
    plain_differs, decisions = 0.0, 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        seat = eng.to_act[live]
        obs, masks = encode(eng, seat, live), action_masks(eng, seat, live)
        obs2, masks2 = encode(twin, seat, live), action_masks(twin, seat, live)
        assert np.array_equal(masks2[:, sigma], masks)
        moves, x, _ = table_inputs(obs, rules, masks)
        moves2, x2, _ = table_inputs(obs2, rules, masks2)
        with torch.no_grad():
            for agent in (sym, plain):
                v, v2 = agent.move_values(torch.from_numpy(x)), agent.move_values(torch.from_numpy(x2))
                for i in range(len(live)):
                    a = np.sort(v[moves.start[i]:moves.start[i + 1]].numpy())
                    b = np.sort(v2[moves2.start[i]:moves2.start[i + 1]].numpy())
                    if agent is sym:
                        np.testing.assert_allclose(a, b, atol=1e-5)
                    else:
                        plain_differs = max(plain_differs, float(np.abs(a - b).max()))
        acts, acts2 = sym.act_batch(obs, masks), sym.act_batch(obs2, masks2)
        with torch.no_grad():
            v = sym.move_values(torch.from_numpy(x)).numpy()
        for i, (a, b) in enumerate(zip(acts, acts2, strict=True)):
            top = np.sort(v[moves.start[i]:moves.start[i + 1]])[::-1]
            if len(top) == 1 or top[0] - top[1] > 1e-4:  # a clear best move: the permuted one is played
                assert sigma[a] == b
        decisions += len(live)
        full, full2 = np.zeros(8, np.int64), np.zeros(8, np.int64)
        full[live], full2[live] = acts, sigma[acts]
        eng.step(full)
        twin.step(full2)
    assert decisions > 8 * 9 and plain_differs > 1e-3


@pytest.mark.parametrize("rules", [THREE, TEAMS], ids=["3p", "2v2"])
def test_the_answer_inputs_permute_with_the_plain_suits(rules):
    """Suit-permuted deals: the symmetric values over the answer inputs' nine 40-card blocks agree move
    for move; permuting only the first five blocks (the move network's) does not make them agree."""
    from agents.nets.solo import symmetric_values

    torch.manual_seed(3)
    net = EndgameNet([32, 32], len(last_input_names(rules, "answers")))
    sigma = _suit_swap((2, 3, 1))
    decks = np.array([np.random.default_rng(50 + s).permutation(40) for s in range(6)])
    eng, twin = EscobaEngine(6, rules, single_round=True), EscobaEngine(6, rules, single_round=True)
    eng.reset(seed=0, deck=decks, dealer=0)
    twin.reset(seed=0, deck=sigma[decks], dealer=0)
    five_blocks, rng = 0.0, np.random.default_rng(1)
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        seat = eng.to_act[live]
        obs, masks = encode(eng, seat, live), action_masks(eng, seat, live)
        obs2, masks2 = encode(twin, seat, live), action_masks(twin, seat, live)
        moves, x, _ = table_inputs(obs, rules, masks, answers=True)
        moves2, x2, _ = table_inputs(obs2, rules, masks2, answers=True)
        with torch.no_grad():
            for blocks in (9, 5):
                v = symmetric_values(net, torch.from_numpy(x), blocks).numpy()
                v2 = symmetric_values(net, torch.from_numpy(x2), blocks).numpy()
                for i in range(len(live)):
                    a = np.sort(v[moves.start[i]:moves.start[i + 1]])
                    b = np.sort(v2[moves2.start[i]:moves2.start[i + 1]])
                    if blocks == 9:
                        np.testing.assert_allclose(a, b, atol=1e-5)
                    else:
                        five_blocks = max(five_blocks, float(np.abs(a - b).max()))
        acts = np.array([rng.choice(np.flatnonzero(r)) for r in masks])
        full, full2 = np.zeros(6, np.int64), np.zeros(6, np.int64)
        full[live], full2[live] = acts, sigma[acts]
        eng.step(full)
        twin.step(full2)
    assert five_blocks > 1e-4


def test_a_last_deal_network_on_the_answer_inputs_is_a_checkpoint_entry(tmp_path):
    """``last_inputs="answers"`` makes the file's last-deal network read the answer inputs; a wrong
    entry, or a network of the other input count, is refused with a clear error."""
    base = NeuralAgent.from_checkpoint(str(package_file("agents/pretrained/escoba_2v2.pt")))
    table_n, answers_n = len(table_input_names(TEAMS)), len(last_input_names(TEAMS, "answers"))
    move = EndgameNet([8], table_n)
    good, bad, short = tmp_path / "good.pt", tmp_path / "bad.pt", tmp_path / "short.pt"
    cases = ((good, answers_n, "answers"), (bad, answers_n, "cards"), (short, table_n, "answers"))
    for path, n, inputs in cases:
        save_checkpoint(path, move_checkpoint_dict(base, move, last=EndgameNet([8], n), last_inputs=inputs))
    agent = make_agent(f"checkpoint:{good}", rules=TEAMS)
    assert agent.last_inputs == "answers" and agent.last.net_config()["inputs"] == answers_n
    eng = EscobaEngine(4, TEAMS, single_round=True)
    eng.reset(seed=2)
    assert _play(eng, agent, np.random.default_rng(0)) >= 4 * 36
    with pytest.raises(ValueError, match="unknown last_inputs 'cards'"):
        make_agent(f"checkpoint:{bad}", rules=TEAMS)
    with pytest.raises(ValueError, match=f"reads {table_n} inputs, this code makes {answers_n}"):
        make_agent(f"checkpoint:{short}", rules=TEAMS)
    with pytest.raises(ValueError, match="the last-deal network reads"):
        TableNetAgent(move, TEAMS, last=EndgameNet([8], table_n), last_inputs="answers")


def test_symmetric_play_is_a_checkpoint_entry_and_a_spec_parameter(tmp_path):
    """``move_play={"symmetric": True}`` makes a file play symmetrically; ``symmetric=`` overrides it;
    a malformed entry and the parameter on a network that is not a move network are refused."""
    base = NeuralAgent.from_checkpoint(str(package_file("agents/pretrained/escoba_2v2.pt")))
    net = EndgameNet([8], len(table_input_names(TEAMS)))
    files = {}
    for key, play in {"absent": None, "on": {"symmetric": True}, "bad": {"symmetric": "yes"}}.items():
        files[key] = tmp_path / f"{key}.pt"
        extra = {} if play is None else {"move_play": play}
        save_checkpoint(files[key], move_checkpoint_dict(base, net, **extra))
    assert not make_agent(f"checkpoint:{files['absent']}", rules=TEAMS).symmetric
    assert make_agent(f"checkpoint:{files['absent']},symmetric=true", rules=TEAMS).symmetric
    assert make_agent(f"checkpoint:{files['on']}", rules=TEAMS).symmetric
    assert not make_agent(f"checkpoint:{files['on']},symmetric=false", rules=TEAMS).symmetric
    with pytest.raises(ValueError, match="malformed move_play"):
        make_agent(f"checkpoint:{files['bad']}", rules=TEAMS)
    assert make_agent("neural-2v2-move:symmetric=true", rules=TEAMS).symmetric
    plain = package_file("agents/pretrained/escoba_2v2.pt")
    with pytest.raises(ValueError, match="symmetric applies to move networks"):
        make_agent(f"checkpoint:{plain},symmetric=true", rules=TEAMS)
    with pytest.raises(ValueError, match="no parameter 'symmetric'"):
        make_agent("neural-2v2:symmetric=true", rules=TEAMS)


@pytest.mark.parametrize("rules", [THREE, TEAMS], ids=["3p", "2v2"])
def test_the_last_deal_network_plays_once_the_stock_is_empty_and_the_move_network_before(rules):
    """An agent with a last-deal network plays, row by row, the move network's action while the stock
    lasts and the last-deal network's once it is empty: both phases occur in the batch."""
    from agents.worlds import observation_scalars

    n = len(table_input_names(rules))
    torch.manual_seed(4)
    move, last = EndgameNet([16], n), EndgameNet([16], n)
    both = TableNetAgent(move, rules, last=last)
    only_move, only_last = TableNetAgent(move, rules), TableNetAgent(last, rules)
    phases = set()

    def check(obs, masks, acts):
        late = observation_scalars(obs, rules)["stock"] == 0
        phases.update(late.tolist())
        expect = np.where(late, only_last.act_batch(obs, masks), only_move.act_batch(obs, masks))
        assert np.array_equal(acts, expect)

    eng = EscobaEngine(12, rules, single_round=True)
    eng.reset(seed=8)
    assert _play(eng, both, np.random.default_rng(0), check) > 12 * 10 and phases == {False, True}
    with pytest.raises(ValueError, match="last-deal network reads"):
        TableNetAgent(move, rules, last=EndgameNet([4], n + 1))


def test_a_move_checkpoint_round_trips_and_checks_what_it_holds(tmp_path):
    plain = NeuralAgent.from_checkpoint(shipped_checkpoint(THREE))
    torch.manual_seed(2)
    net = EndgameNet([16], len(table_input_names(THREE)))
    good = move_checkpoint_dict(plain, net, move_training={"note": "test"})
    path = tmp_path / "move3.pt"
    save_checkpoint(path, good)
    loaded = make_agent(f"checkpoint:{path}", rules=THREE, seed=1)
    assert isinstance(loaded, TableNetAgent) and loaded.rules == THREE
    eng = EscobaEngine(8, THREE, single_round=True)
    eng.reset(seed=4)
    obs, masks = encode(eng, eng.to_act, np.arange(8)), action_masks(eng, eng.to_act, np.arange(8))
    assert np.array_equal(TableNetAgent(net, THREE).act_batch(obs, masks), loaded.act_batch(obs, masks))
    with pytest.raises(ValueError, match="trained for other rules"):
        load_checkpoint_agent(path, rules=TEAMS)
    bad = dict(good, move_net={"hidden": [16], "inputs": 313})
    save_checkpoint(tmp_path / "bad.pt", bad)
    with pytest.raises(ValueError, match="its move network reads 313 inputs"):
        load_checkpoint_agent(tmp_path / "bad.pt")
    bad = dict(good, move_model={**good["move_model"], "mlp.0.weight": torch.zeros(16, 7)})
    save_checkpoint(tmp_path / "shape.pt", bad)
    with pytest.raises(ValueError, match="do not fit"):
        load_checkpoint_agent(tmp_path / "shape.pt")
    gone = {k: v for k, v in good.items() if k != "move_model"}
    save_checkpoint(tmp_path / "gone.pt", gone)
    with pytest.raises(ValueError, match="holds no move network"):
        TableNetAgent.from_checkpoint(tmp_path / "gone.pt")
    with pytest.raises(ValueError, match="without jokers"):
        TableNetAgent(net, Rules(num_players=3, jokers=2))
    with pytest.raises(ValueError, match="reads 274 inputs"):
        TableNetAgent(EndgameNet([8], 274), TEAMS)


@pytest.mark.slow
def test_solo_fit_trains_a_table_move_network_from_search_values(tmp_path, capsys):
    data = collect_labels(
        SearchAgent(TEAMS, seed=0, sims=16),
        [ExpertAgent(TEAMS), GreedyAgent(TEAMS)],
        TEAMS,
        200,
        num_games=4,  # few games at once, so that the 200 decisions reach the rounds' last deals
        seed=3,
        values=True,
    )
    labels = tmp_path / "teams.npz"
    save_labels(labels, data, TEAMS, teacher="search:sims=16")
    out = tmp_path / "move.pt"
    script = importlib.import_module("agents.training.solo_fit")
    args = [
        str(labels),
        "--phase",
        "table",
        "--test",
        str(labels),
        "--epochs",
        "2",
        "--hidden",
        "16",
        "--loss",
        "adv",
        "--out",
        str(out),
    ]
    assert script.main(args) == 0
    assert "epoch 2/2: adv" in capsys.readouterr().out
    agent = make_agent(f"checkpoint:{out}", rules=TEAMS)
    assert isinstance(agent, TableNetAgent)
    assert agent.net.net_config() == {"hidden": [16], "inputs": len(table_input_names(TEAMS))}
    how = load_checkpoint(out)["move_training"]
    assert how["plain"] == str(shipped_checkpoint(TEAMS)) and [r["epoch"] for r in how["curve"]] == [1, 2]
    eng = EscobaEngine(8, TEAMS, single_round=True)
    eng.reset(seed=2)
    assert _play(eng, agent, np.random.default_rng(0)) > 8 * 10
    from tests.agents.test_solo_midgame import _script

    png = tmp_path / "curve.png"
    assert (
        _script("plot_solo_curve.py").main(["--phase", "table", "--checkpoint", str(out), "--out", str(png)])
        == 0
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # with expert and the table's PPO network as lines
    before = out.read_bytes()
    assert script.main(args) == 2 and out.read_bytes() == before
    assert "already exists" in capsys.readouterr().err
    # --init: fine-tuning starts from the stored move network (its sizes, not --hidden's), so a
    # vanishing learning rate leaves its weights where they were.
    tuned = tmp_path / "tuned.pt"
    fine = [str(labels), "--phase", "table", "--epochs", "1", "--hidden", "32", "--lr", "1e-30",
            "--init", str(out), "--out", str(tuned)]
    assert script.main(fine) == 0
    start, end = load_checkpoint(out)["move_model"], load_checkpoint(tuned)["move_model"]
    assert all(torch.allclose(start[k], end[k]) for k in start)
    assert load_checkpoint(tuned)["move_training"]["init"] == str(out)
    assert not make_agent(f"checkpoint:{tuned}", rules=TEAMS).symmetric
    # --symmetric: the file plays its values averaged over the plain suits, and says so.
    sym = tmp_path / "sym.pt"
    assert script.main([*fine[:-1], str(sym), "--symmetric", "--test", str(labels)]) == 0
    assert load_checkpoint(sym)["move_play"] == {"symmetric": True}
    assert make_agent(f"checkpoint:{sym}", rules=TEAMS).symmetric
    capsys.readouterr()
    assert script.main([str(labels), "--symmetric", "--out", str(tmp_path / "eg.pt")]) == 2
    assert "--symmetric is for --phase table" in capsys.readouterr().err
    # --phase last: a last-deal network fitted to the empty-stock decisions only, started from --init's
    # move network, written beside --base's move network (kept unchanged).
    last = tmp_path / "last.pt"
    assert script.main([str(labels), "--phase", "last", "--base", str(sym), "--init", str(sym),
                        "--epochs", "1", "--symmetric", "--test", str(labels), "--out", str(last)]) == 0
    printed = capsys.readouterr().out
    from agents.worlds import observation_scalars

    empty = int((observation_scalars(data["obs"].astype(np.float32), TEAMS)["stock"] == 0).sum())
    assert 0 < empty < len(data["obs"]) and f"{empty} training decisions" in printed
    stored = load_checkpoint(last)
    assert all(torch.equal(stored["move_model"][k], load_checkpoint(sym)["move_model"][k])
               for k in stored["move_model"])
    assert stored["last_training"]["base"] == str(sym) and stored["last_net"]["hidden"] == [16]
    played = make_agent(f"checkpoint:{last}", rules=TEAMS)
    assert played.last is not None and played.symmetric
    # --answers: a fresh last-deal network on the larger input set, recorded in the file
    answering = tmp_path / "answers.pt"
    assert script.main([str(labels), "--phase", "last", "--answers", "--base", str(sym), "--hidden", "8",
                        "--epochs", "1", "--symmetric", "--test", str(labels), "--out", str(answering)]) == 0
    stored = load_checkpoint(answering)
    assert stored["last_inputs"] == "answers" and stored["last_net"] == {
        "hidden": [8], "inputs": len(last_input_names(TEAMS, "answers"))}
    assert make_agent(f"checkpoint:{answering}", rules=TEAMS).last_inputs == "answers"
    assert "last_inputs" not in load_checkpoint(last)
    # Inputs built a few decisions at a time are the inputs built all at once, moves and all; float16
    # storage keeps them to 4e-4 and a --float16 fit trains and says so in its file.
    eager = script.prepare([str(labels)], TEAMS, phase="last", answers=True, chunk=10**9)
    for chunked in (script.prepare([str(labels)], TEAMS, phase="last", answers=True, chunk=7),
                    script.prepare([str(labels)], TEAMS, phase="last", answers=True, chunk=7,
                                   x_dtype=np.float16)):
        assert chunked["x"].shape == eager["x"].shape and np.abs(chunked["x"] - eager["x"]).max() < 5e-4
        for k in ("obs", "mask", "values", "member", "labelled"):
            assert np.array_equal(chunked[k], eager[k]), k
        assert all(np.array_equal(getattr(chunked["moves"], f), getattr(eager["moves"], f))
                   for f in ("row", "card", "option", "start"))
    assert np.array_equal(script.prepare([str(labels)], TEAMS, phase="last", answers=True, chunk=7)["x"],
                          eager["x"])
    half = tmp_path / "half.pt"
    assert script.main([str(labels), "--phase", "last", "--answers", "--base", str(sym), "--hidden", "8",
                        "--epochs", "1", "--float16", "--test", str(labels), "--out", str(half)]) == 0
    assert load_checkpoint(half)["last_training"]["float16"] is True
    assert load_checkpoint(answering)["last_training"]["float16"] is False
    curve = tmp_path / "last.png"
    assert _script("plot_solo_curve.py").main(["--phase", "last", "--checkpoint", str(answering),
                                               "--out", str(curve)]) == 0
    assert curve.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # with expert and the move network as lines
    capsys.readouterr()
    assert script.main([str(labels), "--phase", "table", "--answers", "--out", str(tmp_path / "y.pt")]) == 2
    assert "--answers is for --phase last" in capsys.readouterr().err
    assert script.main([str(labels), "--phase", "table", "--base", str(sym),
                        "--out", str(tmp_path / "x.pt")]) == 2
    assert "--base is for --phase last" in capsys.readouterr().err
    gone = tmp_path / "gone.pt"
    assert script.main([str(labels), "--phase", "table", "--init", str(shipped_checkpoint(TEAMS)),
                        "--out", str(gone)]) == 2
    assert "holds no move network" in capsys.readouterr().err and not gone.exists()


REPRODUCE = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_table_net.sh"


def test_the_reproduction_script_rebuilds_a_tiny_network_and_resumes(tmp_path):
    env = {
        **os.environ,
        "CHUNKS": "1",
        "CHUNK": "60",
        "SIMS": "8",
        "TEST_LABELS": "30",
        "EPOCHS": "1",
        "HIDDEN": "8",
        "LAST": "2x20",  # two label files of 20
        "LAST_FLOAT16": "1",
        "LAST_EPOCHS": "1",
        "DAGGER": "40",
        "DAG_TEST_LABELS": "20",
        "LAST_INPUTS": "answers",  # the shipped 2v2 recipe
        "LAST_HIDDEN": "8 8",
    }
    out = tmp_path / "net"
    # every step the script runs, recorded from it and run in this process (tests/helpers.py)
    steps = record_recipe(str(REPRODUCE), ["2v2", str(out)], env, tmp_path / "record")
    assert len(steps) == 10
    replay_recipe(steps)
    ckpt = out / "move_2v2.pt"
    agent = load_checkpoint_agent(ckpt, rules=TEAMS)
    assert isinstance(agent, TableNetAgent) and agent.net.net_config()["hidden"] == [8]
    how = load_checkpoint(ckpt)["move_training"]
    assert how["labels"] == [str(out / "labels" / "mid_1.npz")] and how["test"] == str(
        out / "labels" / "test.npz"
    )
    last = load_checkpoint_agent(out / "move_2v2_last.pt", rules=TEAMS)
    assert last.last is not None and last.symmetric and last.net.net_config()["hidden"] == [8]
    assert last.last_inputs == "answers" and last.last.net_config()["hidden"] == [8, 8]
    how_last = load_checkpoint(out / "move_2v2_last.pt")["last_training"]
    assert how_last["labels"] == [str(out / "labels" / "last_1.npz"), str(out / "labels" / "last_2.npz")]
    assert how_last["float16"] is True
    # DAGGER: the move network fine-tuned on labels of its own play, and the last-deal network after it
    dag = load_checkpoint(out / "move_2v2_dag.pt")
    assert dag["move_training"]["labels"] == [str(out / "labels" / "dag_1.npz")]
    assert dag["move_training"]["init"] == str(ckpt) and dag["move_play"] == {"symmetric": True}
    assert how_last["base"] == str(out / "move_2v2_dag.pt") and how_last["init"] is None
    for key, value in dag["move_model"].items():
        assert torch.equal(load_checkpoint(out / "move_2v2_last.pt")["move_model"][key], value)
    # started again on the same folder, every step is skipped
    assert record_recipe(str(REPRODUCE), ["2v2", str(out)], env, tmp_path / "again") == []

    def refused(table: str, where, **extra: str) -> str:
        done = subprocess.run(["bash", str(REPRODUCE), table, str(where)], cwd=REPRODUCE.parents[1],
                              env={**env, **extra}, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2
        return done.stderr

    assert "TABLE must be 3p or 2v2" in refused("5p", out)
    assert "LAST_INPUTS must be table or answers" in refused("2v2", tmp_path / "other", LAST_INPUTS="cards")
    assert "LAST_FLOAT16 must be 0 or 1" in refused("2v2", tmp_path / "other", LAST_FLOAT16="yes")
    assert not (tmp_path / "other").exists()  # refused before anything is written


@pytest.mark.parametrize("spec, rules", [("neural-3p-move", THREE), ("neural-2v2-move", TEAMS)])
def test_the_shipped_move_networks_play_their_table_only(spec, rules):
    agent = make_agent(spec, rules=rules, seed=0)
    assert isinstance(agent, TableNetAgent) and agent.rules == rules
    eng = EscobaEngine(16, rules, single_round=True)
    eng.reset(seed=5)
    assert _play(eng, agent, np.random.default_rng(0)) >= 16 * 36
    eng.reset(seed=5)
    obs, masks = encode(eng, eng.to_act), action_masks(eng, eng.to_act)
    assert np.array_equal(
        agent.act_batch(obs, masks), make_agent(spec, rules=rules, seed=9).act_batch(obs, masks)
    )
    for other in (Rules(), THREE if rules == TEAMS else TEAMS):
        with pytest.raises(ValueError, match="trained for other rules"):
            make_agent(spec, rules=other)
    with pytest.raises(ValueError, match="no parameter"):
        make_agent(f"{spec}:sims=3", rules=rules)
    how = load_checkpoint(package_file(MOVE_CHECKPOINTS[rules.num_players, rules.partnerships]))[
        "move_training"
    ]
    assert how["loss"] == "adv" and how["decisions"] > 0 and how["curve"]
