"""lab.solo_pg: PPO fine-tuning of neural-solo's midgame network by duplicate play."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from agents.heuristic.expert import ExpertAgent
from agents.nets.solo import SoloAgent, midgame_inputs
from agents.spec.registry import make_agent
from escoba_env import EscobaEngine
from escoba_env.executors.observation import action_masks, encode
from lab import solo_pg
from lab.solo_pg import (
    Decisions,
    _frozen,
    advantages,
    duplicate_returns,
    play,
    ppo_update,
    segment_log_softmax,
)
from tests.agents.test_solo import ROOT


@pytest.fixture(scope="module")
def solo() -> SoloAgent:
    return make_agent("neural-solo", seed=0)


def test_segment_log_softmax_is_the_log_softmax_of_each_decision():
    logits = torch.tensor([1.0, 2.0, 0.5, -3.0, 4.0, 4.0])
    seg = torch.tensor([0, 0, 0, 1, 2, 2])
    got = segment_log_softmax(logits, seg, 3)
    want = torch.cat([torch.log_softmax(logits[:3], 0), torch.zeros(1), torch.log_softmax(logits[4:], 0)])
    assert torch.allclose(got, want)
    assert got[3] == 0.0  # a decision of one move is certain


def test_duplicate_returns_add_the_two_games_of_a_deal():
    assert duplicate_returns(np.array([2.0, -1.0, 0.0, 3.0])).tolist() == [1.0, 1.0, 3.0, 3.0]


def test_advantages_compare_games_against_the_same_opponent():
    returns = np.array([1.0, 1.0, 3.0, 3.0, 5.0, 5.0, 7.0, 7.0])
    opponent = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    adv = advantages(returns, opponent, np.array([0, 2, 4, 6]))
    assert np.allclose(adv, [-1.0, 1.0, -1.0, 1.0])  # each opponent's mean removed, then scaled


def test_a_learner_against_its_copy_wins_nothing_on_any_duplicate_deal(solo):
    diff = play(_frozen(solo, "learner"), [_frozen(solo, "copy")], np.zeros(12, np.int64), seed=4)
    pairs = diff.reshape(-1, 2)
    assert np.abs(pairs).sum() > 0  # the rounds were played and scored
    assert np.array_equal(pairs[:, 0], -pairs[:, 1])  # same deal, seats swapped, same play


def _reference(learner, opponent, deals: int, seed: int) -> np.ndarray:
    """Each seat's agent acts for itself (the tournament's way): the learner's round point
    difference per game, game 2d with the learner in seat 0 and 2d + 1 in seat 1."""
    n = 2 * deals
    eng = EscobaEngine(n, learner.rules, single_round=True)
    eng.reset(seed, game_ids=np.repeat(np.arange(deals), 2))
    seat = np.tile([0, 1], deals)
    points = np.zeros((n, 2))
    while not eng.done.all():
        live = np.flatnonzero(~eng.done)
        act = np.zeros(n, np.int64)
        for who, agent in ((True, learner), (False, opponent)):
            rows = live[(eng.to_act[live] == seat[live]) == who]
            if rows.size:
                act[rows] = agent.act_batch(encode(eng, eng.to_act[rows], rows),
                                            action_masks(eng, eng.to_act[rows], rows))
        points += eng.step(act).round_points
    return points[np.arange(n), seat] - points[np.arange(n), 1 - seat]


def test_argmax_play_is_the_agents_own_play(solo):
    expert = ExpertAgent(solo.rules, seed=0)
    got = play(solo, [expert], np.zeros(10, np.int64), seed=9)
    assert np.array_equal(got, _reference(solo, expert, 10, 9))


def test_each_deal_meets_its_own_opponent(solo):
    expert, copy = ExpertAgent(solo.rules, seed=0), _frozen(solo, "copy")
    got = play(solo, [copy, expert], np.array([1, 0, 1]), seed=5)
    assert np.array_equal(got[[0, 1, 4, 5]], _reference(solo, expert, 3, 5)[[0, 1, 4, 5]])
    assert got[2] == -got[3]


def test_sampled_decisions_are_recorded_with_their_probabilities(solo):
    rec = Decisions()
    play(solo, [ExpertAgent(solo.rules, seed=0)], np.zeros(8, np.int64), seed=3, tau=0.05,
         rng=np.random.default_rng(0), record=rec)
    d = rec.stacked()
    k = len(d["count"])
    assert k > 40 and (d["count"] >= 2).all() and d["start"][-1] == len(d["x"])
    assert ((d["chosen"] >= 0) & (d["chosen"] < d["count"])).all()
    assert set(d["game"].tolist()) <= set(range(16))
    with torch.no_grad():
        seg = torch.from_numpy(np.repeat(np.arange(k), d["count"]))
        logp = segment_log_softmax(solo.midgame(torch.from_numpy(d["x"])).double() / 0.05, seg, k)
    assert np.allclose(logp.numpy()[d["start"][:-1] + d["chosen"]], d["logp"], atol=1e-4)
    assert (d["logp"] <= 0).all() and (d["logp"] < -1e-3).any()  # some draws were not certain


def test_a_vanishing_temperature_plays_the_argmax(solo):
    expert = ExpertAgent(solo.rules, seed=0)
    cold = play(solo, [expert], np.zeros(6, np.int64), seed=11, tau=1e-9, rng=np.random.default_rng(1))
    assert np.array_equal(cold, play(solo, [expert], np.zeros(6, np.int64), seed=11))


def test_the_recorded_inputs_are_those_of_the_observed_position(solo):
    """The first decision of game 0 is seat 0's first play: its inputs are midgame_inputs of that
    observation."""
    rec = Decisions()
    play(solo, [ExpertAgent(solo.rules, seed=0)], np.zeros(1, np.int64), seed=2, tau=0.05,
         rng=np.random.default_rng(0), record=rec)
    eng = EscobaEngine(2, solo.rules, single_round=True)
    eng.reset(2, game_ids=np.zeros(2, np.int64))
    games = np.flatnonzero(eng.to_act == np.array([0, 1]))
    obs, masks = encode(eng, eng.to_act[games], games), action_masks(eng, eng.to_act[games], games)
    moves, x, _ = midgame_inputs(obs, solo.rules, masks)
    first = [i for i, g in enumerate(games) if moves.count[i] > 1]
    d = rec.stacked()
    for j, i in enumerate(first):
        assert d["game"][j] == games[i]
        assert np.array_equal(d["x"][d["start"][j]:d["start"][j + 1]], x[moves.start[i]:moves.start[i + 1]])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_an_update_moves_the_chosen_moves_probability_with_the_advantage(solo, sign):
    learner = _frozen(solo, "learner")
    rec = Decisions()
    play(learner, [ExpertAgent(solo.rules, seed=0)], np.zeros(6, np.int64), seed=8, tau=0.05,
         rng=np.random.default_rng(2), record=rec)
    d = rec.stacked()
    k = len(d["count"])
    seg = torch.from_numpy(np.repeat(np.arange(k), d["count"]))

    def chosen_logp() -> float:
        with torch.no_grad():
            lp = segment_log_softmax(learner.midgame(torch.from_numpy(d["x"])) / 0.05, seg, k)
        return float(lp[torch.from_numpy(d["start"][:-1] + d["chosen"])].mean())

    before = chosen_logp()
    opt = torch.optim.Adam(learner.midgame.parameters(), lr=1e-4)
    stats = ppo_update(learner.midgame, opt, d, np.full(k, sign), 0.05, epochs=2, batch=64, clip=0.2,
                       rng=np.random.default_rng(0))
    after = chosen_logp()
    assert (after - before) * sign > 0
    assert set(stats) == {"loss", "clip", "entropy"} and stats["entropy"] > 0


def test_the_command_writes_a_checkpoint_that_plays_with_its_curve(tmp_path, capsys):
    out = tmp_path / "pg.pt"
    code = solo_pg.main(["--iterations", "2", "--pairs", "6", "--eval-pairs", "4", "--eval-every", "1",
                         "--lr", "1e-3", "--opponents", "self", "expert", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert text.count("eval it") == 3 and "it 2:" in text
    ckpt = torch.load(out, weights_only=True)
    how = ckpt["midgame_training"]
    assert how["method"] == "ppo" and [c["iteration"] for c in how["curve"]] == [0, 1, 2]
    assert how["opponents"] == ["self", "expert"] and how["curve"][0]["vs_start"] == 0.0
    agent = make_agent(f"checkpoint:{out}", seed=0)
    assert isinstance(agent, SoloAgent)
    shipped = make_agent("neural-solo", seed=0).midgame.state_dict()
    assert any(not torch.equal(v, shipped[k]) for k, v in agent.midgame.state_dict().items())
    from lab import plot_solo_pg as plot

    png = tmp_path / "curve.png"
    assert plot.main(["--checkpoint", str(out), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shipped_file = tmp_path / "shipped.png"
    shipped_ckpt = os.path.join(ROOT, "agents", "pretrained", "escoba_2p_solo.pt")
    assert plot.main(["--checkpoint", shipped_ckpt, "--out", str(shipped_file)]) == 2
    assert "no solo_pg curve" in capsys.readouterr().err and not shipped_file.exists()


def test_bad_arguments_are_refused_and_change_nothing(tmp_path, capsys):
    out = tmp_path / "taken.pt"
    out.write_bytes(b"mine")
    assert solo_pg.main(["--out", str(out), "--iterations", "1"]) == 2
    assert out.read_bytes() == b"mine"
    assert "already exists" in capsys.readouterr().err
    assert solo_pg.main(["--opponents", "self", "expert", "--weights", "1"]) == 2
    assert "2 --opponents" in capsys.readouterr().err
    new = tmp_path / "new.pt"
    assert solo_pg.main(["--init", "neural-2p-plain", "--out", str(new)]) == 2
    assert "midgame network" in capsys.readouterr().err and not new.exists()
    assert solo_pg.main(["--init", str(tmp_path / "missing.pt"), "--out", str(new)]) == 2
    assert "checkpoint not found" in capsys.readouterr().err and not new.exists()
    assert solo_pg.main(["--opponents", "no-such-agent", "--out", str(new)]) == 2
    assert "unknown agent" in capsys.readouterr().err and not new.exists()


def test_an_interrupted_run_keeps_its_last_evaluated_network(tmp_path, capsys, monkeypatch):
    calls = []

    def interrupt(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return {"loss": 0.0, "clip": 0.0, "entropy": 0.0}

    monkeypatch.setattr(solo_pg, "ppo_update", interrupt)
    out = tmp_path / "pg.pt"
    code = solo_pg.main(["--iterations", "3", "--pairs", "4", "--eval-pairs", "4", "--eval-every", "1",
                         "--out", str(out)])
    assert code == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds the last evaluated network" in err
    assert [c["iteration"] for c in torch.load(out, weights_only=True)["midgame_training"]["curve"]] == [0, 1]


@pytest.mark.slow
def test_a_terminated_run_ends_with_one_line_and_keeps_its_network(tmp_path):
    out = tmp_path / "pg.pt"
    proc = subprocess.Popen([sys.executable, "-m", "lab.solo_pg", "--iterations", "100000",
                             "--pairs", "4", "--eval-pairs", "4", "--eval-every", "1", "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert out.exists(), "no evaluation was written"
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
    assert proc.returncode == 143
    assert err.count("\n") == 1 and "terminated" in err and "holds the last evaluated network" in err
    assert torch.load(out, weights_only=True)["midgame_training"]["method"] == "ppo"
