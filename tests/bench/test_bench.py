"""The benchmark protocol: frozen deal sets (pinned digests), report cards, the leaderboard, bad input."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from agents.bench import PROTOCOLS, Protocol, TableSpec, deal_set_digest, protocol
from agents.bench import card as card_mod
from agents.bench.card import card_config
from agents.bench.cli import main
from agents.bench.leaderboard import LEADERBOARD_DIR, load_cards, render, seating_pairs, validate
from agents.spec.registry import make_agent
from agents.tournament.runner import lineups as tournament_lineups
from escoba_env import EscobaEngine

ROOT = Path(__file__).resolve().parents[2]

PINNED_V1 = {
    # table: (seed, full-set digest, quick-subset digest); a change here needs a new protocol version
    "2p": (None, "c648d611443767a4f67a8e594f7414459406a1088c5e4724ca6c7c1a79e912ba",
           "66100ebeff4b0d4809d5c5795f93e14ddf861d1ad8edbb03d131102c356442a6"),
    "3p": (None, "d35413b077a6b6e1240709d84b030539308d23fa883faa53693217eee8fcf45d",
           "6082af2b28a4671fdfd192ec6a81c0e4026242b7cb75cb0ee4b9c7363db45e63"),
    "2v2": (None, "59fa10086d88abc06dce622cdba7053f583780362353c3327e502c9cfb6b37ad",
            "60f33cbb27e839d39aaa54ccc27d5ede5d9b910ec8bd6ce1dab76058b955779c"),
}
PANEL_V1 = {"2p": ("random", "greedy", "expert", "search", "neural-solo", "hybrid"),
            "3p": ("expert", "search", "neural-3p", "strong-3p"),
            "2v2": ("expert", "search", "neural-2v2", "strong-2v2")}


def _interrupt_task(monkeypatch, n: int):
    """Make the ``n``-th tournament task from now raise KeyboardInterrupt (Ctrl-C while that block
    plays); return the real ``run_task`` to put back."""
    import agents.tournament.runner as runner

    real_run = runner.run_task
    calls = {"n": 0}

    def stop(task):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real_run(task)

    monkeypatch.setattr(runner, "run_task", stop)
    return real_run


@pytest.mark.parametrize("table", ["2p", "3p", "2v2"])
def test_v1_deal_sets_and_panels_are_frozen(table):
    p = protocol("v1")
    t = p.table(table)
    _, full, quick = PINNED_V1[table]
    assert t.digests == (full, quick)  # the constants the package ships and checks against
    assert deal_set_digest("v1", table) == full
    assert deal_set_digest("v1", table, t.quick_deals) == quick
    assert t.panel == PANEL_V1[table]
    assert (t.deals, t.quick_deals, t.block_deals) == (5000, 500, 100)
    # the seed comes from the published string, recomputed here by hand
    text = f"escoba-env bench-v1 {table}".encode()
    assert p.seed(table) == int(hashlib.sha256(text).hexdigest()[:16], 16) >> 1


def test_the_digest_is_of_the_dealt_cards():
    """Dealing the set by hand with the engine and hashing it gives the digest; another seed does not."""
    from escoba_env.executors.engine import EscobaEngine

    p = protocol("bench-v1")
    e = EscobaEngine(20, p.table("2p").rules(), single_round=True)
    e.reset(p.seed("2p"), game_ids=np.arange(20))
    h = hashlib.sha256(e.deck.astype(np.int16).tobytes() + e.dealer.astype(np.int16).tobytes()).hexdigest()
    assert h == deal_set_digest("v1", "2p", 20)
    assert sorted(e.deck[0].tolist()) == list(range(40))  # each deal is a whole deck
    e.reset(p.seed("2p") + 1, game_ids=np.arange(20))
    assert hashlib.sha256(e.deck.astype(np.int16).tobytes()
                          + e.dealer.astype(np.int16).tobytes()).hexdigest() != h


@pytest.fixture
def tiny(monkeypatch):
    """A tiny protocol version ``t0`` (random and greedy, a few deals) so that cards play in seconds."""
    t0 = Protocol("t0", {
        "2p": TableSpec("2p", 2, False, ("random", "greedy"), deals=8, quick_deals=4, block_deals=2),
        "3p": TableSpec("3p", 3, False, ("random", "greedy"), deals=4, quick_deals=2, block_deals=2),
    })
    monkeypatch.setitem(PROTOCOLS, "t0", t0)
    return t0


def test_a_card_holds_the_protocol_and_its_headline_is_the_mean_margin(tiny, tmp_path, capsys):
    out = tmp_path / "card.json"
    assert main(["card", "expert", "--version", "t0", "--out", str(out), "--workers", "1",
                 "--no-progress", "--timing-deals", "1"]) == 0
    card = json.loads(out.read_text())
    validate(card)
    assert card["protocol"] == "bench-t0" and card["table"] == "2p" and card["agent"] == "expert"
    assert card["benchmark"] is True and card["quick"] is False
    assert card["deal_set"]["digest"] == deal_set_digest("t0", "2p")
    assert card["deal_set"]["deals"] == 8 and card["deal_set"]["rotations"] == 2
    assert [o["opponent"] for o in card["opponents"]] == ["random", "greedy"]
    # 2 players, single rounds, equal rounds per deal: the margin is the mean of the two paired diffs
    diffs = [o["diff"]["mean"] for o in card["opponents"]]
    assert card["headline"]["mean"] == pytest.approx(sum(diffs) / 2, abs=1e-12)
    assert card["headline"]["lo"] < card["headline"]["mean"] < card["headline"]["hi"]
    # the per-deal points give each opponent's diff again
    pd = card["per_deal"]
    for lu, x, o in zip(pd["lineups"], pd["points_per_round"], card["opponents"], strict=True):
        x = np.asarray(x)
        assert lu[0] == "expert" and lu[1] == o["opponent"]
        assert x.shape == (8, 2)
        assert (x[:, 0] - x[:, 1]).mean() == pytest.approx(o["diff"]["mean"], abs=1e-5)
    t = card["decision_time"]
    assert t["decisions"] > 0 and t["p95_ms"] >= 0 and t["mean_ms"] > 0
    for key in ("project_version", "versions", "git", "machine"):
        assert key in card
    text = capsys.readouterr().out
    assert "headline margin" in text and "bench-t0 2p card of expert" in text


def test_a_quick_card_says_it_is_not_the_benchmark(tiny, tmp_path):
    out = tmp_path / "q.json"
    assert main(["card", "greedy", "--version", "t0", "--quick", "--out", str(out), "--workers", "1",
                 "--no-progress", "--timing-deals", "0"]) == 0
    card = json.loads(out.read_text())
    assert card["quick"] is True and card["benchmark"] is False and "not the benchmark" in card["note"]
    assert card["deal_set"]["deals"] == 4
    assert [o["opponent"] for o in card["opponents"]] == ["random"]  # a panel member never plays itself
    # greedy is a panel member: its mirror match counts 0, so the margin is half its one diff
    assert card["headline"]["mean"] == pytest.approx(card["opponents"][0]["diff"]["mean"] / 2, abs=1e-12)
    validate(card)


def test_a_three_player_card_margin_is_computed_from_the_points(tiny, tmp_path):
    out = tmp_path / "c3.json"
    assert main(["card", "expert", "--version", "t0", "--table", "3p", "--out", str(out), "--workers", "1",
                 "--no-progress", "--timing-deals", "0"]) == 0
    card = json.loads(out.read_text())
    pd = card["per_deal"]
    # lineups of 3 sides: expert with each multiset of the 2-member panel covering it (AAB is not
    # possible with --vs; the opponents are every choice of 2 from random, greedy)
    assert all(lu[0] == "expert" for lu in pd["lineups"])
    per_lineup = []
    for x in pd["points_per_round"]:
        x = np.asarray(x)
        per_lineup.append(x[:, 0] - x[:, 1:].mean(axis=1))
    assert card["headline"]["mean"] == pytest.approx(float(np.mean(np.mean(per_lineup, axis=0))), abs=1e-5)


def test_rating_on_the_panel_scale_holds_the_panel_fixed(tiny, tmp_path, monkeypatch):
    out = tmp_path / "card.json"
    assert main(["card", "expert", "--version", "t0", "--out", str(out), "--workers", "1",
                 "--no-progress", "--timing-deals", "0"]) == 0
    card = json.loads(out.read_text())
    assert card["rating"]["anchored"] is False
    ref = {"random": {"mu": 10.0, "sigma": 1.0}, "greedy": {"mu": 30.0, "sigma": 1.0}}
    r = card_mod.anchored_rating(card["per_deal"], "expert", ref)
    assert r["anchored"] is True
    assert r["panel"] == ref  # the panel never moves
    free = card_mod.anchored_rating(card["per_deal"], "expert", None)
    assert free["mu"] == pytest.approx(card["rating"]["mu"])
    assert r["mu"] != pytest.approx(free["mu"])


def test_bad_input_is_one_line_and_nonzero(tiny, tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["card", "greedy", "--version", "v9", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown benchmark version 'v9'" in err[0] and "bench-v1" in err[0]
    # a spec that does not fit the table size: the 3-player network at the 2-player table
    assert main(["card", "neural-3p", "--table", "2p", "--out", str(out), "--workers", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "neural-3p" in err[0] and not out.exists()
    assert main(["card", "no-such-agent", "--version", "t0", "--out", str(out)]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    # an existing output is refused, untouched, unless --overwrite
    out.write_text("mine")
    assert main(["card", "greedy", "--version", "t0", "--out", str(out), "--workers", "1",
                 "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already exists" in err[0] and "--overwrite" in err[0]
    assert out.read_text() == "mine"
    assert main(["card", "greedy", "--version", "t0", "--out", str(out), "--workers", "1", "--no-progress",
                 "--timing-deals", "0", "--overwrite"]) == 0
    assert json.loads(out.read_text())["agent"] == "greedy"


def test_an_interrupted_card_keeps_its_blocks_and_resumes_exactly(tiny, tmp_path, monkeypatch, capsys):
    ref = tmp_path / "ref.json"
    assert main(["card", "expert", "--version", "t0", "--out", str(ref), "--workers", "1", "--no-progress",
                 "--timing-deals", "0"]) == 0
    out = tmp_path / "cut.json"
    import agents.tournament.runner as runner

    real_run = _interrupt_task(monkeypatch, 4)
    capsys.readouterr()
    assert main(["card", "expert", "--version", "t0", "--out", str(out), "--workers", "1", "--no-progress",
                 "--timing-deals", "0"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "3 of 8 blocks finished" in err[0] and "--resume" in err[0]
    assert not out.exists()  # never half a card
    journal = tmp_path / "cut.journal.jsonl"
    assert journal.exists()
    # without --resume an unfinished run is not thrown away
    monkeypatch.setattr(runner, "run_task", real_run)
    assert main(["card", "expert", "--version", "t0", "--out", str(out), "--workers", "1",
                 "--no-progress"]) == 1
    assert "--resume" in capsys.readouterr().err
    played = []
    monkeypatch.setattr(runner, "run_task", lambda t: played.append((t.lineup, t.block)) or real_run(t))
    assert main(["card", "expert", "--version", "t0", "--out", str(out), "--workers", "1", "--no-progress",
                 "--timing-deals", "0", "--resume"]) == 0
    assert len(played) == 5  # only the missing blocks
    a, b = json.loads(ref.read_text()), json.loads(out.read_text())
    for key in ("headline", "opponents", "per_deal", "rating", "deal_set"):
        assert a[key] == b[key]
    assert not journal.exists()


def _fake(agent, lineups, points):
    return {"agent": agent, "per_deal": {"lineups": lineups, "points_per_round": points}}


def test_the_seating_table_tells_a_pair_s_two_seatings_apart():
    # x's card plays (x, p, q): p plays right after x. p's card (p, x, q) seats q right after x,
    # the other order; q's card (q, x, p) seats p right after x again, the same order as x's card.
    x = _fake("x", [["x", "p", "q"]], [[[3, 1, 0], [1, 2, 0]]])
    p = _fake("p", [["p", "x", "q"]], [[[0, 2, 1], [4, 0, 0]]])
    q = _fake("q", [["q", "x", "p"]], [[[0, 1, 0], [2, 0, 1]]])
    rows = {(r["a"], r["b"], r["third"]): r for r in seating_pairs([x, p, q])}
    assert set(rows) == {("x", "p", "q"), ("x", "q", "p"), ("p", "q", "x")}
    xp = rows["x", "p", "q"]
    assert (xp["on_a"], xp["on_b"], xp["same_seating"]) == (0.5, -1.0, False)
    xq = rows["x", "q", "p"]
    assert (xq["on_a"], xq["on_b"], xq["same_seating"]) == (2.0, -0.5, True)
    assert rows["p", "q", "x"]["same_seating"] is False
    # the card's stored lineups are in seat order because a card's lineups are increasing entrant
    # indices (the stored list is the sorted entrants): pin that assumption
    cfg = card_config("greedy", "v1", "3p")
    assert all(list(lu) == sorted(lu) for lu in tournament_lineups(cfg))


def test_a_tampered_card_does_not_validate(tmp_path):
    cards = load_cards(ROOT / LEADERBOARD_DIR)
    card = json.loads(json.dumps(cards[0][1]))
    card["deal_set"]["digest"] = "0" * 64
    with pytest.raises(ValueError, match="digest"):
        validate(card, "x")
    card = json.loads(json.dumps(cards[0][1]))
    card["opponents"] = card["opponents"][1:]
    with pytest.raises(ValueError, match="panel"):
        validate(card, "x")
    card = json.loads(json.dumps(cards[0][1]))
    card["protocol"] = "bench-v7"
    with pytest.raises(ValueError, match="unknown benchmark version"):
        validate(card, "x")
    bad = tmp_path / "lb"
    bad.mkdir()
    (bad / "half.json").write_text('{"format": ')
    assert main(["leaderboard", "--dir", str(bad), "--page", str(tmp_path / "p.md")]) == 1
    assert not (tmp_path / "p.md").exists()


def test_panel_reference_from_the_members_cards(tiny, tmp_path):
    d = tmp_path / "cards"
    for a in ("random", "greedy"):
        assert main(["card", a, "--version", "t0", "--out", str(d / f"{a}.json"), "--workers", "1",
                     "--no-progress", "--timing-deals", "0"]) == 0
    ref = tmp_path / "ref.json"
    # t0's cards validate against t0 (the tiny protocol is registered), so the folder loads
    assert main(["panel", "--version", "t0", "--from-cards", str(d), "--out", str(ref)]) == 0
    data = json.loads(ref.read_text())
    assert {r["agent"] for r in data["ratings"]} == {"random", "greedy"}
    assert data["ratings"][0]["agent"] == "greedy"  # greedy beats random
    assert math.isfinite(data["ratings"][0]["mu"])


def test_a_best_response_is_trained_against_the_frozen_agent_only(tiny, tmp_path, capsys):
    out = tmp_path / "ex.json"
    args = ["exploit", "greedy", "--version", "t0", "--steps", "4096", "--num-envs", "64", "--evals", "2",
            "--eval-deals", "4", "--runs-dir", str(tmp_path / "runs"), "--out", str(out), "--workers", "1",
            "--no-progress", "--also", "random"]
    assert main(args) == 0
    data = json.loads(out.read_text())
    assert data["format"] == "escoba-bench-exploit/1" and data["agent"] == "greedy"
    assert data["training"]["steps"] == 4096
    assert data["deal_set"]["digest"] == deal_set_digest("t0", "2p")
    b = data["bound"]
    assert b["lo"] <= b["mean"] <= b["hi"]
    assert "best response trained for 4,096 steps" in data["statement"]
    assert set(data["also"]) == {"random"}
    assert [r["step"] for r in data["curve"]][0] == 0 and len(data["curve"]) >= 2
    assert (tmp_path / "ex.png").stat().st_size > 0
    # the league held the frozen agent only: the run's config says so
    import torch

    ckpt = torch.load(data["training"]["checkpoint"], map_location="cpu", weights_only=False)
    cfg = ckpt["config"]
    assert cfg["fixed_opponent"] == "greedy" and cfg["opp_fixed"] == 1.0
    assert cfg["opp_self"] == cfg["opp_snapshot"] == cfg["opp_greedy"] == cfg["opp_expert"] == 0.0
    capsys.readouterr()
    # an existing result and an existing run are refused, one line each
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already exists" in err[0]
    out.unlink()
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already holds a run" in err[0] and "--resume" in err[0]
    # a finished response resumed with another output plays again without training: same figure
    again = tmp_path / "again.json"
    assert main([*[x if x != str(out) else str(again) for x in args], "--resume"]) == 0
    data2 = json.loads(again.read_text())
    assert data2["training"]["steps"] == 4096 and data2["bound"] == data["bound"]
    assert data2["also"] == data["also"]
    # an agent that sees the hidden cards is no opponent to respond to
    assert main(["exploit", "oracle", "--version", "t0", "--steps", "10", "--out", str(tmp_path / "o.json"),
                 "--runs-dir", str(tmp_path / "runs")]) == 1
    assert "hidden cards" in capsys.readouterr().err


def test_a_best_response_can_start_from_a_shipped_network(tiny, tmp_path, capsys):
    import torch

    from agents.bench.exploit import exploit_config
    from agents.nets.shipped import PLAIN_CHECKPOINT, package_file
    from agents.training.trainer import Trainer

    # the learner's first weights are the shipped network's, not a fresh network's
    cfg = exploit_config("greedy", "t0", "2p", 4096, runs_dir=str(tmp_path / "r0"), num_envs=64,
                         init="neural-2p-plain")
    plain = torch.load(package_file(PLAIN_CHECKPOINT), map_location="cpu", weights_only=True)
    state = Trainer(cfg).net.state_dict()
    shipped = plain["model"]
    assert set(state) == set(shipped) and all(torch.equal(state[k], shipped[k]) for k in state)
    fresh = Trainer(exploit_config("greedy", "t0", "2p", 4096, runs_dir=str(tmp_path / "r1"),
                                   num_envs=64)).net.state_dict()
    assert not all(torch.equal(fresh[k], shipped[k]) for k in fresh)
    out = tmp_path / "ex.json"
    assert main(["exploit", "greedy", "--version", "t0", "--steps", "4096", "--num-envs", "64", "--evals",
                 "2", "--eval-deals", "4", "--runs-dir", str(tmp_path / "runs"), "--out", str(out),
                 "--workers", "1", "--no-progress", "--init", "neural-2p-plain", "--lr", "1e-4"]) == 0
    data = json.loads(out.read_text())
    assert data["training"]["init"] == "neural-2p-plain" and data["training"]["learning_rate"] == 1e-4
    assert torch.load(data["training"]["checkpoint"], map_location="cpu",
                      weights_only=False)["config"]["learning_rate"] == 1e-4
    assert "4,096 steps from neural-2p-plain's weights" in data["statement"]
    assert "-from-neural-2p-plain-lr0.0001" in data["training"]["checkpoint"]
    capsys.readouterr()
    # an unknown network, a missing file and another table's network: one line each, nothing written
    for init, msg in (("neural-9p", "--init must be one of"), ("neural-2v2", "players"),
                      ("checkpoint:" + str(tmp_path / "no.pt"), "no file")):
        o = tmp_path / f"bad-{len(msg)}.json"
        assert main(["exploit", "greedy", "--version", "t0", "--steps", "10", "--out", str(o),
                     "--runs-dir", str(tmp_path / "runs2"), "--init", init]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], (init, err)
        assert not o.exists()
    assert main(["exploit", "greedy", "--version", "t0", "--steps", "10", "--out", str(tmp_path / "lr.json"),
                 "--runs-dir", str(tmp_path / "runs2"), "--lr", "0"]) == 1
    assert "--lr must be above 0" in capsys.readouterr().err


def test_the_trainer_refuses_a_fixed_weight_without_an_agent():
    from agents.training.config import Config, check_config

    with pytest.raises(ValueError, match="fixed_opponent"):
        check_config(Config(opp_fixed=1.0))
    with pytest.raises(ValueError, match="eval_opponents"):
        check_config(Config(eval_opponents=("search",)))
    check_config(Config(opp_fixed=1.0, fixed_opponent="search", eval_opponents=("search",)))


def test_a_card_finished_in_two_sittings_says_what_each_played(tiny, tmp_path, monkeypatch, capsys):
    """A journal can be resumed on another day, commit or machine: the card lists every sitting with
    its source and the blocks it played, and its timing says how many blocks it did not time."""
    import agents.tournament.report as report
    import agents.tournament.runner as runner

    out = tmp_path / "card.json"
    journal = tmp_path / "card.journal.jsonl"
    args = ["card", "expert", "--version", "t0", "--out", str(out), "--workers", "1", "--no-progress",
            "--timing-deals", "0"]
    monkeypatch.setattr(report, "git_state", lambda: {"commit": "first", "dirty": False})
    real_run = _interrupt_task(monkeypatch, 4)
    assert main(args) == 130
    monkeypatch.setattr(runner, "run_task", real_run)
    monkeypatch.setattr(report, "git_state", lambda: {"commit": "second", "dirty": True})
    assert main([*args, "--resume"]) == 0
    card = json.loads(out.read_text())
    first, second = card["sittings"]
    assert (first["git"]["commit"], first["blocks_before"], first["blocks_played"]) == ("first", 0, 3)
    assert (second["git"]["commit"], second["blocks_before"], second["blocks_played"]) == ("second", 3, 5)
    assert first["machine"] == second["machine"] == card["machine"] and first["started"] <= second["started"]
    assert card["timing"]["blocks"] == 8 and card["timing"]["blocks_resumed"] == 3
    assert card["git"]["commit"] == "second"  # the source of the sitting that finished it
    validate(card)

    # A journal of an earlier version (no sitting notes) still resumes: its blocks are counted as
    # played before the first noted sitting.
    out.unlink()
    _interrupt_task(monkeypatch, 4)
    assert main(args) == 130
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(x for x in lines if not x.startswith('{"sitting":')))
    monkeypatch.setattr(runner, "run_task", real_run)
    assert main([*args, "--resume"]) == 0
    (only,) = json.loads(out.read_text())["sittings"]
    assert (only["blocks_before"], only["blocks_played"]) == (3, 5)
    capsys.readouterr()


def test_a_card_names_the_source_it_started_from(tiny, tmp_path, monkeypatch):
    """A card plays for hours: the commit it records is the one its process loaded, not whatever the
    checkout holds when the file is written (a fake git state that changes once play starts)."""
    from tests.helpers import git_state_that_changes_once_play_starts

    started = git_state_that_changes_once_play_starts(monkeypatch)
    out = tmp_path / "card.json"
    assert main(["card", "greedy", "--version", "t0", "--out", str(out), "--workers", "1",
                 "--no-progress", "--timing-deals", "0"]) == 0
    assert started and json.loads(out.read_text())["git"] == {"commit": "before", "dirty": False}


def test_every_baseline_and_shipped_agent_has_a_card_or_a_reason_not_to():
    """``escoba-bench todo`` lists ``EXPECTED``: every registry name that plays a table is expected
    there or named in ``NOT_CARDED`` with its reason, so a newly shipped agent cannot be forgotten."""
    from agents.bench.leaderboard import EXPECTED, NOT_CARDED
    from agents.spec.registry import make_agent, names

    for table, expected in EXPECTED.items():
        rules = protocol("v1").table(table).rules()
        assert set(protocol("v1").table(table).panel) <= set(expected)
        for name in names():
            try:
                make_agent(name, rules=rules)
            except (ValueError, TypeError, ImportError):
                assert name not in expected, f"{name} is expected at {table} but does not play there"
                continue
            assert name in expected or name in NOT_CARDED, f"{name} plays {table}: a card or a reason"
    assert not set(NOT_CARDED) - set(names())


def test_todo_lists_what_is_missing_and_runs_it(tiny, tmp_path, monkeypatch, capsys):
    from agents.bench import leaderboard
    from agents.tournament import runner

    monkeypatch.setitem(leaderboard.EXPECTED, "2p", ("greedy", "expert"))
    cards, page = tmp_path / "lb", tmp_path / "page.md"
    args = ["todo", "--version", "t0", "--table", "2p", "--dir", str(cards), "--page", str(page),
            "--workers", "1", "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "greedy           missing" in out and "0 of 2 full cards done" in out
    assert "CPU-hours left" not in out  # no quick card to take a rate from
    assert (f"next: escoba-bench card greedy --version t0 --table 2p --out "
            f"{cards / 'bench-t0-2p-greedy.json'}") in out
    # an interrupted card shows as started, with its finished blocks
    real_run = runner.run_task

    def stop_at_the_second(task, calls=[]):  # noqa: B006 - the list counts calls
        calls.append(task)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run(task)

    monkeypatch.setattr(runner, "run_task", stop_at_the_second)
    assert main(["card", "greedy", "--version", "t0", "--out", str(cards / "bench-t0-2p-greedy.json"),
                 "--workers", "1", "--no-progress"]) != 0
    monkeypatch.setattr(runner, "run_task", real_run)
    capsys.readouterr()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "greedy           started: 1 of 4 blocks in its journal" in out and "--resume" in out
    # with a quick card, the CPU time its blocks took estimates what the missing blocks will take
    quick = cards / "bench-t0-2p-expert-quick.json"
    quick.write_text(json.dumps({"timing": {"cpu_s": 7200.0}}))
    rows = {r["agent"]: r for r in leaderboard.todo(cards, "t0", tables=("2p",))}
    from agents.bench.card import card_config
    from agents.tournament.runner import make_tasks

    per_block = 7200.0 / len(make_tasks(card_config("expert", "t0", "2p", quick=True)))
    assert rows["expert"]["cpu_s_left"] == pytest.approx(per_block * rows["expert"]["total"])
    assert rows["greedy"]["cpu_s_left"] is None
    assert main(args) == 0
    out = capsys.readouterr().out
    hours = per_block * rows["expert"]["total"] / 3600
    assert f"expert           missing (about {hours:.1f} CPU-hours left)" in out
    assert f"about {hours:.1f} CPU-hours left at the CPU time per game of their quick cards (1 with" in out
    quick.unlink()
    # --run finishes it from its journal, plays the other, and writes the page once, at the end: a
    # page rewritten between cards would be a modified tree in the next card's provenance
    from agents.bench import card as card_module

    real_card, pages = card_module.run_card, []

    def spy(*a, **kw):
        pages.append(page.exists())
        return real_card(*a, **kw)

    monkeypatch.setattr(card_module, "run_card", spy)
    assert main([*args, "--run"]) == 0
    assert pages == [False, False] and page.exists()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "2 of 2 full cards done" in out
    assert page.read_text() == render(load_cards(cards), str(cards))  # the page names the --dir given
    assert sorted(p.name for p in cards.iterdir()) == ["bench-t0-2p-expert.json", "bench-t0-2p-greedy.json"]


_CANDIDATES = {"2p": ("random", "greedy", "expert", "neural-solo", "neural-2p", "neural-2p-plain"),
               "2v2": ("random", "greedy", "expert", "neural-2v2", "neural-2v2-move")}


@pytest.mark.parametrize("table", sorted(_CANDIDATES))
def test_cards_of_two_deterministic_agents_agree_on_their_pair(table):
    """Two agents that ignore their seeds play the same games in each other's cards (same deals, both
    seats; at 2v2 each agent plays both seats of its team), so each card's difference is the other's
    with the sign flipped: a check of the cards' seat rotations and signs on the files the
    leaderboard keeps (2 players and 2v2, full and quick)."""
    from escoba_env.executors.observation import action_masks, encode

    rules = protocol("v1").table(table).rules()
    e = EscobaEngine(12, rules, single_round=True)
    e.reset(seed=5)
    obs, masks = encode(e, e.to_act), action_masks(e, e.to_act)
    deterministic = set()
    for name in _CANDIDATES[table]:
        acts = [make_agent(name, rules=rules, seed=s).act_batch(obs, masks) for s in (0, 1, 2)]
        if all(np.array_equal(acts[0], a) for a in acts[1:]):
            deterministic.add(name)
    assert "random" not in deterministic and {"greedy", "expert"} <= deterministic
    diffs = {}
    for _, c in load_cards(ROOT / LEADERBOARD_DIR):
        if c["table"] == table and c["agent"] in deterministic:
            for o in c["opponents"]:
                diffs[c["quick"], c["agent"], o["opponent"]] = o["diff"]["mean"]
    pairs = [(q, a, b) for (q, a, b) in diffs if (q, b, a) in diffs and a < b]
    assert pairs, "no two deterministic agents' cards face each other"
    for q, a, b in pairs:
        assert diffs[q, a, b] == pytest.approx(-diffs[q, b, a], abs=1e-9), (q, a, b)
