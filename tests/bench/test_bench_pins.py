"""The benchmark cannot drift: pinned digests refuse an engine that deals otherwise, journals refuse
other deals, block sizes and agent code, bench-v2 seats every 3-player lineup both ways, and the
exploit statement and the ``todo`` estimate say what they measure."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.bench import deal_set_digest, protocol
from agents.bench.card import card_config
from agents.bench.cli import main
from agents.bench.protocol import check_deals, pinned_digest
from agents.tournament.journal import Journal, run_key
from agents.tournament.runner import TournamentConfig, lineups, make_tasks
from escoba_env import EscobaEngine, Rules

PINNED_V2_3P = ("8baa0ffc930bfb2aa7834065d2abc8132094d86fe8487cce1d3bfc7b6d82ea80",
                "1d78013ae2575f39ca02263053f5817d3160608cc6a67efdd62d33c2ecc164e6")


@pytest.fixture
def shifted(monkeypatch):
    """An engine that deals differently: every ``reset`` seed shifted by one."""
    real = EscobaEngine.reset

    def reset(self, seed=None, *args, **kwargs):
        return real(self, None if seed is None else int(seed) + 1, *args, **kwargs)

    monkeypatch.setattr(EscobaEngine, "reset", reset)


def test_v2_is_pinned_and_plays_as_many_games_as_v1_at_three_players():
    v1, v2 = protocol("v1").table("3p"), protocol("v2").table("3p")
    assert v2.digests == PINNED_V2_3P
    assert deal_set_digest("v2", "3p") == PINNED_V2_3P[0]
    assert deal_set_digest("v2", "3p", v2.quick_deals) == PINNED_V2_3P[1]
    assert v2.panel == v1.panel and v2.orders == 2 and v1.orders == 1
    assert list(protocol("v2").tables) == ["3p"]  # 2p and 2v2 have no seating order to fix
    for spec in ("greedy", "expert"):  # a newcomer and a panel member
        for quick in (False, True):
            n1, n2 = (len(lineups(card_config(spec, v, "3p", quick=quick)))
                      * (t.quick_deals if quick else t.deals) for v, t in (("v1", v1), ("v2", v2)))
            assert n2 == n1, (spec, quick)  # both orders, half the deals each


def test_v2_plays_every_lineup_in_both_cyclic_orders():
    c = card_config("greedy", "v2", "3p")
    ent = c.entrants
    seatings = [tuple(ent[i] for i in lu) for lu in lineups(c)]
    assert len(seatings) == 12 and len(set(seatings)) == 12
    for a, b, x in seatings:
        assert a == "greedy" and (a, x, b) in seatings  # the other order of play, same three agents
    # and every seat rotation of each: every deal is played from every seat
    assert c.rules.num_sides == 3 and c.duplicate
    # a lineup with one opponent twice has one order of play only
    two = TournamentConfig(agents=("random",), vs="greedy", rules=Rules(num_players=3), orders=2)
    assert lineups(two) == [(0, 1, 1)]
    rr = TournamentConfig(agents=("random", "greedy"), rules=Rules(num_players=3), orders=2)
    assert lineups(rr) == [(0, 0, 1), (0, 1, 1)]


def test_the_pinned_digests_are_the_protocol_constants_not_today_s_engine(shifted):
    """With an engine that deals otherwise, the pinned constants stay and the check names both."""
    pinned = "66100ebeff4b0d4809d5c5795f93e14ddf861d1ad8edbb03d131102c356442a6"
    assert pinned_digest("v1", "2p", quick=True) == pinned
    got = deal_set_digest("v1", "2p", 500)
    assert got != pinned_digest("v1", "2p", quick=True)
    with pytest.raises(ValueError) as e:
        check_deals("v1", "2p", quick=True)
    assert got in str(e.value) and pinned_digest("v1", "2p", quick=True) in str(e.value)


def test_an_engine_that_deals_otherwise_is_refused_before_the_card_plays(shifted, tmp_path, monkeypatch,
                                                                         capsys):
    import agents.tournament.runner as runner

    monkeypatch.setattr(runner, "run_task", lambda t: pytest.fail("a block was played"))
    monkeypatch.setattr(runner, "prepare_agents", lambda c: pytest.fail("agents were built"))
    out = tmp_path / "c.json"
    assert main(["card", "random", "--table", "2p", "--quick", "--out", str(out), "--workers", "1",
                 "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert pinned_digest("v1", "2p", quick=True) in err[0] and deal_set_digest("v1", "2p", 500) in err[0]
    assert not list(tmp_path.iterdir())  # no card, no journal
    # the digest command says so too, and fails
    assert main(["digest"]) == 1
    text = capsys.readouterr()
    assert "DIFFERS from the pinned" in text.out and "otherwise than the protocol pins" in text.err


def test_the_digest_command_checks_the_pinned_digests(capsys):
    assert main(["digest", "--version", "v2"]) == 0
    out = capsys.readouterr().out
    assert PINNED_V2_3P[0] in out and PINNED_V2_3P[1] in out and "matches the pinned" in out


def test_a_resume_across_different_deals_is_refused(tiny3, tmp_path, monkeypatch, capsys):
    import agents.tournament.runner as runner

    real_run = runner.run_task
    calls = []

    def stop(task):
        calls.append(task)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_run(task)

    monkeypatch.setattr(runner, "run_task", stop)
    out = tmp_path / "cut.json"
    args = ["card", "expert", "--version", "t0", "--out", str(out), "--workers", "1", "--no-progress",
            "--timing-deals", "0"]
    assert main(args) == 130
    monkeypatch.setattr(runner, "run_task", real_run)
    journal = tmp_path / "cut.journal.jsonl"
    before = journal.read_text()
    real_reset = EscobaEngine.reset
    monkeypatch.setattr(EscobaEngine, "reset", lambda self, seed=None, *a, **k:
                        real_reset(self, None if seed is None else int(seed) + 1, *a, **k))
    capsys.readouterr()
    assert main([*args, "--resume"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other settings" in err[0] and "deal" in err[0]
    assert journal.read_text() == before and not out.exists()
    monkeypatch.setattr(EscobaEngine, "reset", real_reset)
    assert main([*args, "--resume"]) == 0


def _journal_with(config: TournamentConfig, path) -> None:
    j = Journal(path, run_key(config, record=False))
    j.start(False)
    j.close()


def test_a_journal_made_with_another_block_size_does_not_resume(tmp_path):
    """Planted change caught: ``block_deals`` left out of ``run_key``'s data, so that a journal made
    with ``--block-deals 2`` resumed under ``--block-deals 4`` (its blocks mixed or duplicated)."""
    a = TournamentConfig(agents=("random", "greedy"), deals=8, block_deals=2, seed=3)
    b = TournamentConfig(agents=("random", "greedy"), deals=8, block_deals=4, seed=3)
    path = tmp_path / "run.journal.jsonl"
    _journal_with(a, path)
    assert Journal(path, run_key(a, record=False)).load() == []
    with pytest.raises(ValueError, match="other settings"):
        Journal(path, run_key(b, record=False)).load()


def test_the_journal_key_holds_the_dealt_cards_and_the_orders(monkeypatch):
    a = TournamentConfig(agents=("random", "greedy"), rules=Rules(num_players=3), deals=4, seed=3)
    key = run_key(a, record=False)
    assert run_key(TournamentConfig(agents=("random", "greedy"), rules=Rules(num_players=3), deals=4, seed=3,
                                    orders=2), record=False) != key
    real = EscobaEngine.reset
    monkeypatch.setattr(EscobaEngine, "reset", lambda self, seed=None, *x, **k:
                        real(self, None if seed is None else int(seed) + 1, *x, **k))
    assert run_key(a, record=False) != key


def test_exploit_concedes_only_where_the_lower_bound_is_above_zero():
    """Planted change caught: the statement tested the mean instead of the lower bound, so an
    interval holding 0 was printed as "concedes at least"."""
    from agents.bench.exploit import statement

    text = statement("expert", {"mean": 0.05, "lo": -0.02, "hi": 0.12}, 1000)
    assert "concedes" not in text and "no exploitation established" in text
    text = statement("expert", {"mean": 0.05, "lo": 0.01, "hi": 0.09}, 1000)
    assert "expert concedes at least +0.010" in text


def test_todo_counts_only_the_timed_blocks_of_a_resumed_quick_card(tiny3, tmp_path, monkeypatch):
    """Planted change caught: the CPU rate of a quick card finished in two sittings divided its
    sitting's CPU time by all its blocks (``blocks_resumed`` ignored), underestimating the time
    left."""
    from agents.bench import leaderboard

    monkeypatch.setitem(leaderboard.EXPECTED, "2p", ("expert",))
    quick = card_config("expert", "t0", "2p", quick=True)
    total_quick = len(make_tasks(quick))
    (tmp_path / "bench-t0-2p-expert-quick.json").write_text(json.dumps(
        {"timing": {"cpu_s": 60.0, "blocks": total_quick, "blocks_resumed": total_quick - 1}}))
    row = leaderboard.todo(tmp_path, "t0", tables=("2p",))[0]
    assert row["state"] == "missing"
    assert row["cpu_s_left"] == pytest.approx(60.0 * row["total"])  # one timed block took 60 s


def test_a_card_records_the_orders_and_the_seat_order_of_its_lineups(tiny3, tmp_path):
    out = tmp_path / "c3.json"
    assert main(["card", "random", "--version", "t0", "--table", "3p", "--out", str(out), "--workers", "1",
                 "--no-progress", "--timing-deals", "0"]) == 0
    card = json.loads(out.read_text())
    assert card["deal_set"]["orders"] == 2
    from agents.bench.leaderboard import validate

    validate(card)
    card["deal_set"].pop("orders")  # a card of one order of play is not this protocol's
    with pytest.raises(ValueError, match="1 orders of play, the protocol plays 2"):
        validate(card)
    assert card["per_deal"]["lineups"] == [["random", "greedy", "expert"], ["random", "expert", "greedy"]]
    x = np.asarray(card["per_deal"]["points_per_round"])
    assert x.shape == (2, 4, 3)


def test_the_leaderboard_checks_cards_against_the_pinned_digests(shifted):
    """Under an engine that deals otherwise the committed cards still validate (the pinned constants
    are the reference), and a card made with that engine is refused, naming both digests."""
    from pathlib import Path

    from agents.bench.leaderboard import validate

    root = Path(__file__).resolve().parents[2] / "benchmarks" / "leaderboard"
    card = json.loads((root / "bench-v1-2p-greedy-quick.json").read_text())
    validate(card, "committed")
    card["deal_set"]["digest"] = deal_set_digest("v1", "2p", 500)  # what the changed engine gives
    with pytest.raises(ValueError) as e:
        validate(card, "changed")
    assert card["deal_set"]["digest"] in str(e.value) and pinned_digest("v1", "2p", True) in str(e.value)


def _result(agent: str, mean: float, half: float, steps: int = 10, init: str | None = None) -> dict:
    return {"protocol": "bench-v1", "table": "2p", "agent": agent,
            "bound": {"mean": mean, "lo": mean - half, "hi": mean + half},
            "training": {"init": init, "learning_rate": 1e-4, "seed": 1, "steps": steps, "num_envs": 8}}


def test_the_best_of_several_responses_is_corrected_for_the_choice():
    from agents.bench.exploit import best_bound, best_statement
    from agents.tournament.stats import z_value

    one = best_bound([_result("expert", 0.2, 0.05)])
    assert one["runs"] == 1 and one["lo"] == pytest.approx(0.15)  # a single run keeps its bound
    runs = [_result("expert", 0.2, 0.05), _result("expert", 0.1, 0.05, steps=20),
            _result("expert", 0.0, 0.05, init="neural-2p")]
    b = best_bound([*runs, runs[0]])  # a run replayed against another agent (--also) counts once
    assert b["runs"] == 3 and b["mean"] == 0.2
    assert b["lo"] == pytest.approx(0.2 - z_value(1 - 0.05 / 3) * 0.05 / z_value(0.95))
    assert 0 < b["lo"] < 0.15
    assert f"expert concedes at least {b['lo']:+.3f}" in best_statement(b)
    assert "no exploitation" in best_statement(best_bound([_result("expert", 0.05, 0.04)] * 1 + [
        _result("expert", 0.0, 0.04, steps=k) for k in range(30)]))
    with pytest.raises(ValueError, match="several agents"):
        best_bound([_result("expert", 0.1, 0.01), _result("greedy", 0.1, 0.01)])


def test_todo_estimates_a_new_version_s_cards_from_an_earlier_version_s_quick_card(tiny3, tmp_path,
                                                                                    monkeypatch):
    """bench-v2 has no quick cards yet: its cards are estimated at the CPU time per game of the same
    agent's quick card under another version with the same table and panel."""
    from agents.bench import PROTOCOLS, Protocol, TableSpec, leaderboard
    from agents.bench.card import default_out

    t0 = PROTOCOLS["t0"].tables["3p"]
    monkeypatch.setitem(PROTOCOLS, "t9", Protocol("t9", {"3p": TableSpec("3p", 3, False, t0.panel, deals=8,
                                                                         quick_deals=4, block_deals=2)}))
    monkeypatch.setitem(leaderboard.EXPECTED, "3p", ("search",))
    quick9 = card_config("search", "t9", "3p", quick=True)
    games9 = sum(k.hi - k.lo for k in make_tasks(quick9)) * 3
    default_out("search", "t9", "3p", True, tmp_path).write_text(json.dumps({"timing": {"cpu_s": 30.0}}))
    for quick in (False, True):
        row = leaderboard.todo(tmp_path, "t0", quick=quick, tables=("3p",))[0]
        games0 = sum(k.hi - k.lo for k in make_tasks(card_config("search", "t0", "3p", quick=quick))) * 3
        assert row["cpu_s_left"] == pytest.approx(30.0 / games9 * games0), quick


def test_a_v2_panel_reference_counts_both_orders_of_play_once_each(tiny3, tmp_path, monkeypatch):
    from agents.bench import card as card_mod

    cards = []
    for spec in ("random", "greedy", "expert"):
        out = tmp_path / f"{spec}.json"
        assert main(["card", spec, "--version", "t0", "--table", "3p", "--out", str(out), "--workers", "1",
                     "--no-progress", "--timing-deals", "0"]) == 0
        cards.append(json.loads(out.read_text()))
    fed = []
    real = card_mod.feed
    monkeypatch.setattr(card_mod, "feed", lambda model, r, matches, fixed=frozenset(): fed.append(matches)
                        or real(model, r, matches, fixed))
    card_mod.panel_from_cards(cards, "t0", "3p", False)
    orders = sorted(tuple(lu) for lu, _ in fed[0])
    assert orders == [("random", "expert", "greedy"), ("random", "greedy", "expert")]  # each order once
