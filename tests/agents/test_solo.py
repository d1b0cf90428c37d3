"""agents.nets.solo: the network-only 2-player agent (plain network, then an endgame network at an empty
stock)."""

from __future__ import annotations

import importlib
import importlib.util
import os

import numpy as np
import pytest
import torch

import agents.heuristic.endgame
import agents.search.pimc
from agents.heuristic.endgame import EndgameAgent
from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.nets.loader import load_checkpoint_agent
from agents.nets.neural import NeuralAgent, save_checkpoint
from agents.nets.solo import ENDGAME_INPUTS, EndgameNet, SoloAgent, endgame_inputs, solo_checkpoint_dict
from agents.spec.registry import make_agent
from agents.tournament.duplicate import play_duplicate
from agents.training.distill import collect_labels, save_labels
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from tests.helpers import C, M, set_position

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAIN = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_plain.pt")
SHIPPED = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_solo.pt")


def _position(hands: list[str], table: str, pile0: str, last_capturer: int = -1) -> EscobaEngine:
    """Return a 1-game engine at an empty stock, seat 0 to act; cards named nowhere are seat 1's pile."""
    e = EscobaEngine(1, Rules(), single_round=True)
    e.reset(seed=0, dealer=1)
    used = M(table) | M(pile0) | M(hands[0]) | M(hands[1])
    return set_position(e, [M(h) for h in hands], M(table), [M(pile0), ((1 << 40) - 1) & ~used],
                        np.arange(40), 40, dealer=1, last_capturer=last_capturer)


def _obs(e: EscobaEngine) -> tuple[np.ndarray, np.ndarray]:
    return encode(e, e.to_act[:1], np.array([0])), action_masks(e, e.to_act[:1], np.array([0]))


def _agent(seed: int = 0) -> SoloAgent:
    """Return a solo agent: the shipped plain network and a seeded untrained endgame network."""
    torch.manual_seed(seed)
    return SoloAgent(NeuralAgent.from_checkpoint(PLAIN), EndgameNet([32, 32]))


def test_endgame_inputs_of_a_hand_made_position():
    # 7o takes 6c + 2o (8): an escoba; 5c finds no fifteen and is laid on the table.
    e = _position(["7o 5c", "3e"], "6c 2o", "1o 1c", last_capturer=1)
    obs, mask = _obs(e)
    moves, x, member = endgame_inputs(obs, Rules(), mask)
    assert x.shape == (2, len(ENDGAME_INPUTS)) == (2, 313)
    assert moves.card.tolist() == [C("5c"), C("7o")]  # cards in id order
    names = ("hand", "other", "table", "card", "captured")
    blocks = {b: x[:, 40 * i: 40 * i + 40] for i, b in enumerate(names)}

    def cards(row, block):
        return int(sum(1 << int(c) for c in np.flatnonzero(blocks[block][row])))

    disc, esc = 0, 1
    assert cards(esc, "hand") == M("5c") and cards(disc, "hand") == M("7o")
    assert cards(esc, "other") == cards(disc, "other") == M("3e")  # the unseen cards = the other hand
    assert cards(esc, "table") == 0 and cards(disc, "table") == M("6c 2o 5c")
    assert cards(esc, "card") == M("7o") and cards(esc, "captured") == M("7o 6c 2o")
    assert cards(disc, "captured") == 0
    # my pile cards, oros, sevens, velo; the other's; escoba difference; last me / other; escoba;
    # discard; hand sizes. Seat 1's pile: the 33 other cards, 7 oros and 3 sevens.
    np.testing.assert_allclose(x[esc, 200:215], [5 / 40, 3 / 10, 1 / 4, 1, 33 / 40, 7 / 10, 3 / 4, 0,
                                                 1, 1, 0, 1, 0, 1 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(x[disc, 200:215], [2 / 40, 1 / 10, 0, 0, 33 / 40, 7 / 10, 3 / 4, 0,
                                                  0, 0, 1, 0, 1, 1 / 3, 1 / 3], rtol=1e-6)
    # cards in play (hands and table): cards, oros, sevens, velo; then points won / still reachable
    # (cards, oros, sevens, velo) for me (won, reachable), then for the other
    np.testing.assert_allclose(x[esc, 215:235], [2 / 40, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1,
                                                 1, 1, 1, 0, 1, 1, 1, 0], rtol=1e-6)
    np.testing.assert_allclose(x[disc, 215:235], [5 / 40, 2 / 10, 1 / 4, 1, 0, 0, 0, 0, 0, 0, 0, 1,
                                                  1, 1, 1, 0, 1, 1, 1, 1], rtol=1e-6)
    # the other's answer: 3e takes nothing on either table left
    assert (x[:, 235:241] == 0).all()
    # per hand card (3 slots): present, value, oro, seven, captures, sweeps, options / 4, what the
    # union of its options holds (cards / 10, oros / 4, sevens / 4, velo), cards in every option / 10
    other_slot = [1, 0.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    np.testing.assert_allclose(x[:, 241:277], [other_slot + [0] * 24] * 2, rtol=1e-6)
    np.testing.assert_allclose(x[esc, 277:], [1, 0.5] + [0] * 34, rtol=1e-6)  # 5c on an empty table
    np.testing.assert_allclose(x[disc, 277:], [1, 0.7, 1, 1, 1, 0, 0.25, 0.2, 0.25, 0, 0, 0.2] + [0] * 24,
                               rtol=1e-6)  # 7o on 6c 2o 5c: takes 6c 2o
    assert member.tolist() == [[a == C("5c") for a in range(40)], [a == C("7o") for a in range(40)]]


def test_endgame_inputs_during_a_capture_choice_map_options_to_table_cards():
    # 5o on 4c 6e 1b Co 3b: ten is 4c + 6e, 1b + Co (caballo, 9) or 3b + 6e + 1b; 5o is played
    # and the player now names table cards.
    e = _position(["5o 3c", "2e"], "4c 6e 1b Co 3b", "")
    e.step(np.array([C("5o")]))
    obs, mask = _obs(e)
    assert set(np.flatnonzero(mask[0])) == {c for c in range(40) if M("4c 6e 1b Co 3b") >> c & 1}
    moves, x, member = endgame_inputs(obs, Rules(), mask)
    assert sorted(int(o) for o in moves.option) == sorted([M("4c 6e"), M("1b Co"), M("3b 6e 1b")])
    for opt, mem, row in zip(moves.option, member, x, strict=True):
        assert int(sum(1 << int(c) for c in np.flatnonzero(mem))) == int(opt)  # every card of it is legal
        assert int(sum(1 << int(c) for c in np.flatnonzero(row[160:200]))) == int(opt) | (1 << C("5o"))
    assert (x[:, 120 + C("5o")] == 1).all() and (x[:, 120:160].sum(axis=1) == 1).all()
    assert (x[:, 209] == 1).all()  # the player is the last to capture after any of them
    assert (x[:, 211] == 0).all()  # none sweeps (3b is left, or 1b Co, or 4c)


def test_endgame_inputs_refuse_a_position_with_cards_in_the_stock():
    e = EscobaEngine(1, Rules(), single_round=True)
    e.reset(seed=1)
    obs, mask = _obs(e)
    with pytest.raises(ValueError, match="empty stock"):
        endgame_inputs(obs, Rules(), mask)
    with pytest.raises(ValueError, match="2-player"):
        endgame_inputs(np.zeros((1, obs.shape[1]), np.float32), Rules(num_players=3), mask)


def test_before_the_endgame_the_agent_sees_the_same_inputs_whatever_the_hidden_cards():
    # Two copies of a deal, the second with a card of the other hand swapped into the stock and the
    # stock reversed: same observation, same action (the plain network plays: the stock is not empty).
    a, b = (EscobaEngine(1, Rules(), single_round=True) for _ in range(2))
    a.reset(seed=5)
    b.reset(seed=5)
    seat = int(a.to_act[0])
    other = int(a.hands[0, 1 - seat])
    pos = int(a.stock_pos[0])
    stock = [int(c) for c in a.deck[0, pos:]]
    out = other.bit_length() - 1
    b.hands[0, 1 - seat] = (other & ~(1 << out)) | (1 << stock[0])
    b.deck[0, pos:] = np.array((stock[1:] + [out])[::-1], np.int8)
    assert a.hands[0, 1 - seat] != b.hands[0, 1 - seat] and len(stock) == 30
    oa, ma = _obs(a)
    ob, mb = _obs(b)
    assert np.array_equal(oa, ob) and np.array_equal(ma, mb)
    agent = _agent()
    assert agent.act_batch(oa, ma)[0] == agent.act_batch(ob, mb)[0]


@pytest.fixture
def no_solver(monkeypatch):
    """Make the exact solver and the search raise if anything calls them."""
    def boom(*args, **kwargs):
        raise AssertionError("the solver or the search was called at decision time")

    for mod, name in ((agents.heuristic.endgame, "solve"), (agents.heuristic.endgame, "endgame_values"),
                      (agents.search.pimc.SearchAgent, "act_batch")):
        monkeypatch.setattr(mod, name, boom)


def test_the_agent_plays_whole_rounds_legally_without_solver_or_search(no_solver):
    agent = _agent()
    eng = EscobaEngine(32, Rules(), single_round=True)
    eng.reset(seed=3)
    endgame_decisions = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs, masks = encode(eng, eng.to_act[live], live), action_masks(eng, eng.to_act[live], live)
        acts = agent.act_batch(obs, masks)
        assert masks[np.arange(live.size), acts].all()
        endgame_decisions += int(agents.heuristic.endgame.endgame_rows(obs, Rules()).sum())
        full = np.zeros(eng.num_games, np.int64)
        full[live] = acts
        eng.step(full)
    assert endgame_decisions > 32  # the endgame network did play


def test_the_agent_is_deterministic(no_solver):
    a = play_duplicate([_agent(), ExpertAgent(Rules())], Rules(), deals=20, seed=7)
    b = play_duplicate([_agent(), ExpertAgent(Rules())], Rules(), deals=20, seed=7)
    assert a.diff == b.diff


def test_checkpoint_round_trip_through_the_checkpoint_spec(tmp_path):
    agent = _agent(seed=4)
    path = tmp_path / "solo.pt"
    save_checkpoint(path, solo_checkpoint_dict(agent.plain, agent.endgame))
    loaded = make_agent(f"checkpoint:{path}", seed=1)
    assert isinstance(loaded, SoloAgent) and isinstance(load_checkpoint_agent(path), SoloAgent)
    eng = EscobaEngine(64, Rules(), single_round=True)
    eng.reset(seed=2)
    while not eng.done.all():  # every decision of whole rounds, endgames included
        live = np.flatnonzero(~eng.done)
        obs, masks = encode(eng, eng.to_act[live], live), action_masks(eng, eng.to_act[live], live)
        acts = agent.act_batch(obs, masks)
        assert np.array_equal(acts, loaded.act_batch(obs, masks))
        full = np.zeros(eng.num_games, np.int64)
        full[live] = acts
        eng.step(full)
    with pytest.raises(ValueError, match="phase-gated"):
        NeuralAgent.from_checkpoint(path)
    with pytest.raises(ValueError, match="trained for other rules"):
        load_checkpoint_agent(path, rules=Rules(target_score=15))


def test_corrupt_or_mismatched_checkpoints_raise_clear_errors(tmp_path):
    agent = _agent()
    good = solo_checkpoint_dict(agent.plain, agent.endgame)
    path = tmp_path / "solo.pt"
    save_checkpoint(path, good)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(ValueError, match="corrupt"):
        load_checkpoint_agent(cut)
    bad = dict(good, endgame_model={**good["endgame_model"], "mlp.0.weight": torch.zeros(32, 7)})
    save_checkpoint(tmp_path / "shape.pt", bad)
    with pytest.raises(ValueError, match="do not fit"):
        load_checkpoint_agent(tmp_path / "shape.pt")
    save_checkpoint(tmp_path / "noweights.pt", {k: v for k, v in good.items() if k != "endgame_model"})
    with pytest.raises(ValueError, match="no endgame network"):
        load_checkpoint_agent(tmp_path / "noweights.pt")
    with pytest.raises(FileNotFoundError):
        load_checkpoint_agent(tmp_path / "missing.pt")


@pytest.mark.skipif(not os.path.exists(SHIPPED), reason="no shipped neural-solo checkpoint")
def test_the_shipped_agent_loads_and_refuses_other_tables(no_solver):
    agent = make_agent("neural-solo", seed=0)
    assert isinstance(agent, SoloAgent) and agent.midgame is not None  # no plain network at play
    assert os.path.getsize(SHIPPED) < 2_000_000
    assert play_duplicate([agent, GreedyAgent(Rules())], Rules(), deals=20, seed=1).diff[0] > 0
    with pytest.raises(ValueError):
        make_agent("neural-solo", rules=Rules(num_players=3))


def _train_script():
    return importlib.import_module("agents.training.solo_fit")


def test_train_script_fits_exports_and_never_overwrites(tmp_path, capsys):
    rules = Rules()
    data = collect_labels(EndgameAgent(ExpertAgent(rules)), [ExpertAgent(rules), GreedyAgent(rules)], rules,
                          300, num_games=64, seed=3, values=True)
    labels = tmp_path / "eg.npz"
    save_labels(labels, data, rules, teacher="endgame")
    out = tmp_path / "solo.pt"
    script = _train_script()
    args = [str(labels), "--test", str(labels), "--epochs", "2", "--hidden", "16", "--out", str(out)]
    assert script.main(args) == 0
    text = capsys.readouterr().out
    assert "epoch 2/2: mse" in text and "held-out: a best action in" in text
    assert isinstance(make_agent(f"checkpoint:{out}"), SoloAgent)
    before = out.read_bytes()
    assert script.main(args) == 2
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == before
    nov = tmp_path / "novalues.npz"
    save_labels(nov, {k: data[k] for k in ("obs", "mask", "action")}, rules, teacher="endgame")
    assert script.main([str(nov), "--epochs", "1"]) == 2
    assert "--values" in capsys.readouterr().err
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert script.main([str(labels), "--epochs", "1", "--out", str(blocker / "solo.pt")]) == 2
    assert "epoch" not in capsys.readouterr().out  # refused before any training
    assert blocker.read_text() == "not a folder"
