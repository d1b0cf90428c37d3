"""agents.nets.solo's midgame network: move values while the stock lasts, read from the observation only."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import os
import shutil
import subprocess

import numpy as np
import pytest
import torch

from agents.heuristic.endgame import EndgameAgent
from agents.heuristic.expert import ExpertAgent
from agents.heuristic.greedy import GreedyAgent
from agents.moves import best_per_row, move_actions
from agents.nets.loader import load_checkpoint_agent
from agents.nets.neural import NeuralAgent, load_checkpoint, save_checkpoint
from agents.nets.solo import (
    MIDGAME_ANSWER_INPUTS,
    MIDGAME_INPUTS,
    EndgameNet,
    SoloAgent,
    endgame_inputs,
    midgame_input_names,
    midgame_inputs,
    solo_checkpoint_dict,
)
from agents.search.pimc import SearchAgent
from agents.spec.registry import make_agent
from agents.training.distill import collect_labels, save_labels
from escoba_env import EscobaEngine, Rules
from escoba_env.executors.observation import action_masks, encode
from tests.agents.test_solo import PLAIN, ROOT
from tests.helpers import C, M, record_recipe, replay_recipe, set_position

STOCK = "Ro Rc Re Rb 2c 2e"


def _midgame_position() -> EscobaEngine:
    """Seat 0 holds 7o 5c 1e, seat 1 holds 3e 4c 1b; table 6c 2o; seat 0's pile 1o 1c; six cards in
    the stock; every other card is seat 1's pile."""
    e = EscobaEngine(1, Rules(), single_round=True)
    e.reset(seed=0, dealer=1)
    hands, table, pile0 = [M("7o 5c 1e"), M("3e 4c 1b")], M("6c 2o"), M("1o 1c")
    stock = [C(c) for c in STOCK.split()]
    used = hands[0] | hands[1] | table | pile0 | M(STOCK)
    rest = [c for c in range(40) if not (used >> c) & 1]
    deck = [c for c in range(40) if c not in stock] + stock
    return set_position(e, hands, table, [pile0, sum(1 << c for c in rest)], deck, 34, dealer=1)


def _obs(e: EscobaEngine) -> tuple[np.ndarray, np.ndarray]:
    return encode(e, e.to_act[:1], np.array([0])), action_masks(e, e.to_act[:1], np.array([0]))


def _cards(row: np.ndarray) -> int:
    return int(sum(1 << int(c) for c in np.flatnonzero(row)))


def _reference_replies(unseen: int, table: int, hand: int) -> list[float]:
    """The hidden-reply features by brute force: every subset of the table, every unseen card."""
    cards = [c for c in range(40) if unseen >> c & 1]
    tab = [c for c in range(40) if table >> c & 1]
    total = sum(t // 4 + 1 for t in tab)
    caps = sweeps = 0
    best = [0.0, 0.0, 0.0, 0.0]
    for c in cards:
        v = c // 4 + 1
        options = [s for k in range(1, len(tab) + 1) for s in itertools.combinations(tab, k)
                   if sum(t // 4 + 1 for t in s) + v == 15]
        if not options:
            continue
        caps += 1
        sweeps += total + v == 15
        took = {c, *itertools.chain.from_iterable(options)}
        stats = [len(took) / 40, sum(t % 4 == 0 for t in took) / 10, sum(t // 4 == 6 for t in took) / 4,
                 float(C("7o") in took)]
        best = [max(a, b) for a, b in zip(best, stats, strict=True)]
    n = len(cards)

    def some(k: int) -> float:
        return 1 - math.comb(n - k, hand) / math.comb(n, hand)

    return [caps / n, sweeps / n, some(caps), some(sweeps), *best]


def test_midgame_inputs_of_a_hand_made_position():
    obs, mask = _obs(_midgame_position())
    moves, x, member = midgame_inputs(obs, Rules(), mask)
    assert x.shape == (3, len(MIDGAME_INPUTS)) == (3, 280)
    assert moves.card.tolist() == [C("1e"), C("5c"), C("7o")]
    names = ("hand", "unseen", "table", "card", "captured")
    blocks = {b: x[:, 40 * i: 40 * i + 40] for i, b in enumerate(names)}
    unseen = M("3e 4c 1b " + STOCK)  # the other hand and the stock, not told apart
    for i in range(3):
        assert _cards(blocks["unseen"][i]) == unseen
    five, seven = 1, 2  # moves in card order: 1e, 5c, 7o
    assert _cards(blocks["hand"][seven]) == M("5c 1e") and _cards(blocks["table"][seven]) == 0
    assert _cards(blocks["captured"][seven]) == M("7o 6c 2o")
    assert _cards(blocks["table"][five]) == M("6c 2o 5c") and _cards(blocks["captured"][five]) == 0
    # escoba difference, last me / other, escoba, discard, my hand size, other hand size, stock size
    np.testing.assert_allclose(x[seven, 208:216], [1, 1, 0, 1, 0, 2 / 3, 1, 6 / 30], rtol=1e-6)
    np.testing.assert_allclose(x[five, 208:216], [0, 0, 0, 0, 1, 2 / 3, 1, 6 / 30], rtol=1e-6)
    # the cards still in play are the hand, the unseen cards and the table
    np.testing.assert_allclose(x[seven, 216:220], [11 / 40, 1 / 10, 0, 0], rtol=1e-6)
    # On 6c 2o 5c (13) the unseen 4c, the four kings and 2c 2e capture, and the two deuces sweep:
    # 7 and 2 of 9 cards; a 3-card hand from them surely captures and sweeps with 1 - C(7,3)/C(9,3).
    np.testing.assert_allclose(x[five, 236:244], [7 / 9, 2 / 9, 1, 1 - 35 / 84, 4 / 40, 1 / 10, 0, 0],
                               rtol=1e-6)
    for i in range(3):
        ref = _reference_replies(unseen, _cards(blocks["table"][i]), 3)
        np.testing.assert_allclose(x[i, 236:244], ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(x[seven, 236:244], 0)  # nothing to answer on an empty table
    assert member.tolist() == [[a == c for a in range(40)] for c in (C("1e"), C("5c"), C("7o"))]


def test_the_midgame_answer_inputs_of_a_hand_made_position():
    obs, mask = _obs(_midgame_position())
    _, plain, _ = midgame_inputs(obs, Rules(), mask)
    moves, x, _ = midgame_inputs(obs, Rules(), mask, inputs="answers")
    assert x.shape == (3, len(MIDGAME_ANSWER_INPUTS)) == (3, 440)
    assert MIDGAME_ANSWER_INPUTS[200] == "answer_cards[0]"
    assert MIDGAME_ANSWER_INPUTS[360:] == MIDGAME_INPUTS[200:]
    # the answer blocks sit between the five card blocks and the scalars, which are unchanged
    np.testing.assert_array_equal(x[:, :200], plain[:, :200])
    np.testing.assert_array_equal(x[:, 360:], plain[:, 200:])
    five, seven = 1, 2  # moves in card order: 1e, 5c, 7o
    cards, sweeps, oros, sevens = (x[:, 200 + 40 * i: 240 + 40 * i] for i in range(4))
    # 7o takes 6c 2o and leaves an empty table: no unseen card takes anything
    for block in (cards, sweeps, oros, sevens):
        assert not block[seven].any()
    # On 6c 2o 5c (13): 4c takes 6c 5c (3 cards with itself); each king takes 5c (2 cards, Ro one
    # oro); 2c and 2e take the three and sweep (4 cards, 2o an oro); 3e and 1b take nothing.
    want_cards = {"4c": 0.3, "Ro": 0.2, "Rc": 0.2, "Re": 0.2, "Rb": 0.2, "2c": 0.4, "2e": 0.4}
    want_oros = {"Ro": 0.25, "2c": 0.25, "2e": 0.25}
    for c in range(40):
        name = next((k for k in want_cards if C(k) == c), None)
        assert cards[five, c] == pytest.approx(want_cards.get(name, 0.0))
        assert oros[five, c] == pytest.approx(want_oros.get(name, 0.0))
        assert sweeps[five, c] == (name in ("2c", "2e"))
    assert not sevens[five].any()  # no seven nor the velo among them
    # only unseen cards answer: the observer's own and the table's are zero
    assert not cards[five, C("7o")] and not cards[five, C("6c")]


def test_midgame_replies_match_brute_force_on_dealt_positions():
    eng = EscobaEngine(24, Rules(), single_round=True)
    eng.reset(seed=11)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(12):  # the first decisions of each round: the stock is never empty yet
        live = np.arange(24)
        obs, masks = encode(eng, eng.to_act, live), action_masks(eng, eng.to_act, live)
        moves, x, _ = midgame_inputs(obs, Rules(), masks)
        for m in range(len(moves.card)):
            hand = int(round(x[m, 214] * 3))
            ref = _reference_replies(_cards(x[m, 40:80]), _cards(x[m, 80:120]), hand)
            np.testing.assert_allclose(x[m, 236:244], ref, rtol=1e-5, atol=1e-6)
            checked += 1
        eng.step(np.array([rng.choice(np.flatnonzero(r)) for r in masks]))
    assert checked > 300


def test_each_phase_refuses_the_other_phases_positions():
    obs, mask = _obs(_midgame_position())
    with pytest.raises(ValueError, match="empty stock"):
        endgame_inputs(obs, Rules(), mask)
    e = _midgame_position()
    e.stock_pos[0] = 40  # the same position with the stock's cards in seat 1's pile
    e.piles[0, 1] |= M(STOCK)
    obs, mask = _obs(e)
    with pytest.raises(ValueError, match="cards left in the stock"):
        midgame_inputs(obs, Rules(), mask)
    with pytest.raises(ValueError, match="2-player"):
        midgame_inputs(np.zeros((1, obs.shape[1]), np.float32), Rules(num_players=3), mask)


def _script(name: str):
    path = os.path.join(ROOT, "scripts", name)
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _agent(seed: int = 0) -> SoloAgent:
    torch.manual_seed(seed)
    return SoloAgent(NeuralAgent.from_checkpoint(PLAIN), EndgameNet([32, 32]),
                     midgame=EndgameNet([32], len(MIDGAME_INPUTS)))


def test_with_a_midgame_net_the_plain_network_never_plays(monkeypatch):
    agent = _agent()

    def boom(*args, **kwargs):
        raise AssertionError("the plain network was asked")

    monkeypatch.setattr(agent.plain, "act_batch", boom)
    eng = EscobaEngine(32, Rules(), single_round=True)
    eng.reset(seed=5)
    early = 0
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        obs, masks = encode(eng, eng.to_act[live], live), action_masks(eng, eng.to_act[live], live)
        acts = agent.act_batch(obs, masks)
        assert masks[np.arange(live.size), acts].all()
        stock = eng.stock_pos[live] < 40
        if stock.any():  # the midgame net's best move, first action
            moves, x, _ = midgame_inputs(obs[stock], Rules(), masks[stock])
            with torch.no_grad():
                v = agent.midgame(torch.from_numpy(x)).numpy()
            want = move_actions(moves, best_per_row(moves, v), obs[stock], masks[stock])
            assert np.array_equal(acts[stock], want)
            early += int(stock.sum())
        full = np.zeros(eng.num_games, np.int64)
        full[live] = acts
        eng.step(full)
    assert early > 32 * 20


def test_a_checkpoint_with_a_midgame_net_round_trips_and_checks_its_shape(tmp_path):
    agent = _agent(seed=3)
    good = solo_checkpoint_dict(agent.plain, agent.endgame, midgame=agent.midgame)
    path = tmp_path / "mid.pt"
    save_checkpoint(path, good)
    loaded = make_agent(f"checkpoint:{path}", seed=1)
    assert isinstance(loaded, SoloAgent) and loaded.midgame is not None
    eng = EscobaEngine(16, Rules(), single_round=True)
    eng.reset(seed=9)
    obs, masks = encode(eng, eng.to_act, np.arange(16)), action_masks(eng, eng.to_act, np.arange(16))
    assert np.array_equal(agent.act_batch(obs, masks), loaded.act_batch(obs, masks))
    # no midgame entry: the plain network plays, as before
    plain_only = {k: v for k, v in good.items() if not k.startswith("midgame")}
    save_checkpoint(tmp_path / "plain.pt", plain_only)
    assert load_checkpoint_agent(tmp_path / "plain.pt").midgame is None
    bad = dict(good, midgame_net={"hidden": [32], "inputs": 313})
    save_checkpoint(tmp_path / "bad.pt", bad)
    with pytest.raises(ValueError, match="its midgame network reads 313 inputs, this code makes 280"):
        load_checkpoint_agent(tmp_path / "bad.pt")
    bad = dict(good, midgame_model={**good["midgame_model"], "mlp.0.weight": torch.zeros(32, 7)})
    save_checkpoint(tmp_path / "shape.pt", bad)
    with pytest.raises(ValueError, match="do not fit"):
        load_checkpoint_agent(tmp_path / "shape.pt")


def _solo_and_labels(tmp_path, labels: int, num_games: int, seed: int, sims: int) -> tuple:
    """Return (a phase-gated file of a small agent's plain and endgame networks, a file of
    ``search:sims=sims`` labels of expert and greedy positions)."""
    rules = Rules()
    base = _agent(seed=1)
    solo = tmp_path / "solo.pt"
    save_checkpoint(solo, solo_checkpoint_dict(base.plain, base.endgame))
    data = collect_labels(SearchAgent(rules, seed=0, sims=sims), [ExpertAgent(rules), GreedyAgent(rules)],
                          rules, labels, num_games=num_games, seed=seed, values=True)
    path = tmp_path / "mid.npz"
    save_labels(path, data, rules, teacher=f"search:sims={sims}")
    return solo, path


def test_a_midgame_net_on_the_larger_inputs_is_fitted_saved_and_played(tmp_path, capsys):
    inputs = "answers"
    rules = Rules()
    width = len(midgame_input_names(inputs))
    solo, labels = _solo_and_labels(tmp_path, 120, 32, 5, 24)
    out = tmp_path / f"{inputs}.pt"
    script = importlib.import_module("agents.training.solo_fit")
    args = [str(labels), "--phase", "midgame", f"--{inputs}", "--solo", str(solo), "--test", str(labels),
            "--epochs", "1", "--hidden", "16", "--loss", "adv", "--float16"]
    assert script.main([*args, "--out", str(out)]) == 0
    ck = load_checkpoint(out)
    assert ck["midgame_inputs"] == inputs and ck["midgame_net"] == {"hidden": [16], "inputs": width}
    agent = make_agent(f"checkpoint:{out}", seed=0)
    assert isinstance(agent, SoloAgent) and agent.midgame_inputs == inputs
    # it plays the best move of its net on those inputs
    eng = EscobaEngine(8, rules, single_round=True)
    eng.reset(seed=2)
    obs, masks = encode(eng, eng.to_act, np.arange(8)), action_masks(eng, eng.to_act, np.arange(8))
    moves, x, _ = midgame_inputs(obs, rules, masks, inputs=inputs)
    with torch.no_grad():
        values = agent.midgame(torch.from_numpy(x)).numpy()
    want = move_actions(moves, best_per_row(moves, values), obs, masks)
    assert np.array_equal(agent.act_batch(obs, masks), want)
    # a file whose input set and network disagree, or that names an unknown set, is refused
    for bad, match in (({**ck, "midgame_inputs": "plain"}, f"reads {width} inputs, this code makes 280"),
                       ({**ck, "midgame_inputs": "cards"}, "unknown midgame inputs 'cards'")):
        save_checkpoint(tmp_path / "bad.pt", bad)
        with pytest.raises(ValueError, match=match):
            load_checkpoint_agent(tmp_path / "bad.pt")
        os.remove(tmp_path / "bad.pt")
    with pytest.raises(ValueError, match=f"reads {width} inputs; the 'plain' midgame inputs are 280"):
        SoloAgent(agent.plain, agent.endgame, midgame=agent.midgame)
    # --answers is for the midgame and last-deal networks only
    assert script.main([str(labels), "--answers", "--epochs", "1"]) == 2
    assert "--answers is for --phase last or midgame" in capsys.readouterr().err


def test_a_midgame_fit_can_keep_one_deal_of_the_round(tmp_path, capsys):
    from agents.training.distill import load_labels
    from agents.worlds import observation_scalars

    rules = Rules()
    solo, labels = _solo_and_labels(tmp_path, 400, 8, 6, 16)
    stock = observation_scalars(load_labels(labels)[0]["obs"].astype(np.float32), rules)["stock"]
    assert 0 < (stock == 6).sum() < (stock > 0).sum()
    script = importlib.import_module("agents.training.solo_fit")
    out = tmp_path / "six.pt"
    assert script.main([str(labels), "--phase", "midgame", "--stock", "6", "--solo", str(solo), "--test",
                        str(labels), "--epochs", "1", "--hidden", "8", "--out", str(out)]) == 0
    assert f"{(stock == 6).sum()} training decisions" in capsys.readouterr().out
    how = load_checkpoint(out)["midgame_training"]
    assert how["stock"] == 6 and how["decisions"] == (stock == 6).sum()
    # another phase, or a stock size no decision has, is refused with one line and writes nothing
    refusals = ((["--phase", "endgame"], "--phase midgame"),
                (["--phase", "midgame", "--stock", "7"], "no decision taken with 7 cards in the stock"))
    for extra, message in refusals:
        args = [str(labels), "--stock", "6", *extra, "--solo", str(solo), "--epochs", "1",
                "--out", str(tmp_path / "bad.pt")]
        assert script.main(args) == 2 and message in capsys.readouterr().err
        assert not (tmp_path / "bad.pt").exists()


def test_train_script_fits_a_midgame_net_on_search_values(tmp_path, capsys):
    rules = Rules()
    base = _agent(seed=1)
    solo = tmp_path / "solo.pt"
    save_checkpoint(solo, solo_checkpoint_dict(base.plain, base.endgame))
    data = collect_labels(SearchAgent(rules, seed=0, sims=24), [ExpertAgent(rules), GreedyAgent(rules)],
                          rules, 200, num_games=32, seed=3, values=True)
    labels = tmp_path / "mid.npz"
    save_labels(labels, data, rules, teacher="search:sims=24")
    out = tmp_path / "solo_mid.pt"
    script = importlib.import_module("agents.training.solo_fit")
    args = [str(labels), "--phase", "midgame", "--solo", str(solo), "--test", str(labels), "--epochs", "2",
            "--hidden", "16", "--loss", "adv", "--out", str(out)]
    assert script.main(args) == 0
    assert "epoch 2/2: adv" in capsys.readouterr().out
    agent = make_agent(f"checkpoint:{out}")
    assert isinstance(agent, SoloAgent) and agent.midgame.net_config() == {"hidden": [16], "inputs": 280}
    ck, was = load_checkpoint(out), load_checkpoint(solo)
    for k, v in was["endgame_model"].items():  # the endgame network is the base checkpoint's
        assert torch.equal(ck["endgame_model"][k], v)
    how = ck["midgame_training"]
    assert how["solo"] == str(solo) and how["loss"] == "adv" and how["test"] == str(labels)
    assert [r["epoch"] for r in how["curve"]] == [1, 2] and all(r["regret"] >= 0 for r in how["curve"])
    plot = _script("plot_solo_curve.py")
    png = tmp_path / "curve.png"
    assert plot.main(["--checkpoint", str(out), "--agents", "expert", "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.main(["--checkpoint", str(solo), "--out", str(tmp_path / "none.png")]) == 2
    assert "records no held-out midgame curve" in capsys.readouterr().err
    before = out.read_bytes()
    assert script.main(args) == 2 and out.read_bytes() == before
    assert "already exists" in capsys.readouterr().err
    nov = tmp_path / "novalues.npz"
    save_labels(nov, {k: data[k] for k in ("obs", "mask", "action")}, rules, teacher="search")
    assert script.main([str(nov), "--phase", "midgame", "--solo", str(solo), "--epochs", "1"]) == 2
    assert "--teacher search --values" in capsys.readouterr().err
    endgame = collect_labels(EndgameAgent(ExpertAgent(rules)), [ExpertAgent(rules)], rules, 50, num_games=32,
                             seed=4, values=True)
    eg = tmp_path / "endgame.npz"
    save_labels(eg, endgame, rules, teacher="endgame")
    assert script.main([str(eg), "--phase", "midgame", "--solo", str(solo), "--epochs", "1"]) == 2
    assert "no decision taken while the stock lasts" in capsys.readouterr().err


REPRODUCE = os.path.join(ROOT, "scripts", "reproduce_neural_solo.sh")


def _bare_path(folder, **extra: str) -> str:
    """Return a PATH of one new folder holding only bash and mkdir (what the script runs besides
    Python), plus ``extra`` names linked to given files: no ``python`` nor ``python3`` on it."""
    folder.mkdir()
    for name in ("bash", "mkdir"):
        os.symlink(shutil.which(name), folder / name)
    for name, target in extra.items():
        os.symlink(target, folder / name)
    return str(folder)


def _fake_python(tmp_path):
    """Return (path, log) of a stand-in interpreter that logs its arguments and writes its --out file."""
    log = tmp_path / "calls.log"
    fake = tmp_path / "fake_python"
    fake.write_text(f"#!{shutil.which('bash')}\n"
                    f"printf '%s\\n' \"$*\" >> '{log}'\n"
                    'while [ $# -gt 0 ]; do [ "$1" = --out ] && : > "$2"; shift; done\n'
                    "exit 0\n")
    fake.chmod(0o755)
    return fake, log


def test_the_reproduction_script_runs_every_step_with_the_python_it_is_given(tmp_path):
    # No python on PATH: every step must go through $PYTHON (a bare `python` fails here).
    fake, log = _fake_python(tmp_path)
    env = {"PATH": _bare_path(tmp_path / "bin"), "PYTHON": str(fake), "HOME": str(tmp_path)}
    out = tmp_path / "solo"
    done = subprocess.run([shutil.which("bash"), REPRODUCE, str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    calls = log.read_text().splitlines()
    # 11 endgame label sets, 16 midgame ones, 9 DAgger ones; 3 trainings (endgame, probe, final)
    assert sum(c.startswith("-m agents.training.distill --no-progress --values --out ") for c in calls) == 36
    assert sum(c.startswith("-m agents.training.solo_fit ") for c in calls) == 3 and len(calls) == 39
    assert calls[-1].endswith(f"--out {out}/escoba_2p_solo.pt")
    assert done.stdout.splitlines()[-1] == f"wrote {out}/escoba_2p_solo.pt"
    # Started again: every file exists, nothing is run.
    again = subprocess.run([shutil.which("bash"), REPRODUCE, str(out)], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and len(log.read_text().splitlines()) == 39


def test_the_reproduction_script_adds_a_second_dagger_round_when_asked(tmp_path):
    fake, log = _fake_python(tmp_path)
    env = {"PATH": _bare_path(tmp_path / "bin"), "PYTHON": str(fake), "HOME": str(tmp_path),
           "ROUND2": "3x500"}
    out = tmp_path / "solo"
    done = subprocess.run([shutil.which("bash"), REPRODUCE, str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    calls = log.read_text().splitlines()[39:]  # after the 39 steps of the first agent
    assert len(calls) == 5 and done.stdout.splitlines()[-1] == f"wrote {out}/escoba_2p_solo_r2.pt"
    solo = f"checkpoint:{out}/escoba_2p_solo.pt"
    assert all(f"--behaviour {solo} expert greedy --weights 0.6 0.25 0.15" in c for c in calls[:4])
    assert "--labels 10000 --seed 9199" in calls[0]
    assert [c.split("--labels ")[1].split(" --teacher")[0] for c in calls[1:4]] == [
        "500 --seed 9201", "500 --seed 9202", "500 --seed 9203"]
    fit = calls[4]
    assert fit.startswith(f"-m agents.training.solo_fit {out}/labels/mid2_1.npz {out}/labels/mid2_2.npz "
                          f"{out}/labels/mid2_3.npz --phase midgame --solo {out}/escoba_2p_solo.pt --answers "
                          "--float16 --hidden 512 512 512 --epochs 6 --lr 3e-4")
    assert fit.endswith(f"--out {out}/escoba_2p_solo_r2.pt")
    # the plain inputs on request; a malformed ROUND2 or an unknown input set is refused
    # before any step
    cases = (({"ROUND2_INPUTS": "plain"}, None), ({"ROUND2": "3 x 500"}, "ROUND2 must be KxN"),
             ({"ROUND2_INPUTS": "playout"}, "ROUND2_INPUTS must be plain or answers"))
    for i, (extra, refused) in enumerate(cases):
        log.unlink(missing_ok=True)
        done = subprocess.run([shutil.which("bash"), REPRODUCE, str(tmp_path / f"other_{i}")], cwd=ROOT,
                              env={**env, **extra}, capture_output=True, text=True, timeout=60)
        if refused:
            assert done.returncode == 2 and refused in done.stderr and not log.exists()
        else:
            fit = log.read_text().splitlines()[-1]
            assert done.returncode == 0 and " --answers " not in fit


def test_the_reproduction_script_defaults_to_python3_on_path(tmp_path):
    fake, log = _fake_python(tmp_path)
    env = {"PATH": _bare_path(tmp_path / "bin", python3=str(fake)), "HOME": str(tmp_path)}
    done = subprocess.run([shutil.which("bash"), REPRODUCE, str(tmp_path / "solo")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(log.read_text().splitlines()) == 39


@pytest.mark.slow
def test_the_reproduction_script_runs_every_step_at_a_tiny_scale(tmp_path):
    """Every step the script runs, on its own arguments at a tiny scale: the steps are recorded from
    the script itself (``record_recipe``) and run in this process (``replay_recipe``), so the recipe is
    tested without an interpreter start per step; the tests above run the script with real paths."""
    out = tmp_path / "solo"
    env = {"PATH": _bare_path(tmp_path / "bin"), "HOME": str(tmp_path), "MID_CHUNK": "120", "MID_SIMS": "8",
           "EG_BIG": "60", "EG_FIRST": "60", "EG_SMALL": "80", "TEST_LABELS": "60", "EPOCHS": "1",
           "PROBE_EPOCHS": "1", "HIDDEN": "8", "ROUND2": "2x60", "ROUND2_TEST": "40", "ROUND2_HIDDEN": "8",
           "ROUND2_EPOCHS": "1"}
    steps = record_recipe(REPRODUCE, [str(out)], env, tmp_path / "record")
    assert len(steps) == 43
    replay_recipe(steps)
    agent = load_checkpoint_agent(out / "escoba_2p_solo.pt")
    assert isinstance(agent, SoloAgent) and agent.midgame.net_config() == {"hidden": [8], "inputs": 280}
    assert len(list((out / "labels").glob("mid_dag_*.npz"))) == 9
    second = load_checkpoint_agent(out / "escoba_2p_solo_r2.pt")  # the second DAgger round's network
    assert second.midgame_inputs == "answers"
    assert second.midgame.net_config() == {"hidden": [8], "inputs": 440}
    assert len(list((out / "labels").glob("mid2_*.npz"))) == 3
    # Started again on the same folder, it overwrites nothing and only redoes what is missing: the
    # final network's training (the second round's file exists).
    (out / "escoba_2p_solo.pt").unlink()
    again = record_recipe(REPRODUCE, [str(out)], env, tmp_path / "again")
    assert [s[s.index("--out") + 1] for s in again] == [str(out / "escoba_2p_solo.pt")]
    replay_recipe(again)
    assert isinstance(load_checkpoint_agent(out / "escoba_2p_solo.pt"), SoloAgent)
