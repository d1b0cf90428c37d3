"""The committed benchmark data agree with each other and with the code that makes them: every expected
full card is in, the shipped panel references and published summary are those the cards give, the
leaderboard page is generated from the cards, the cards keep their fingerprints, and no bench-v2
figure depends on the seating.

Moved here from ``tests/bench/test_bench.py``, ``tests/bench/test_bench_outside.py`` and
``tests/llm/test_llm_cards.py``: they pin committed files, not behaviour."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.bench.cli import main
from agents.bench.leaderboard import (
    LEADERBOARD_DIR,
    PAGE,
    PUBLISHED,
    load_cards,
    render,
    seating_pairs,
    summary,
    validate,
)
from agents.bench.protocol import protocol
from agents.spec.fingerprint import spec_fingerprint
from tests.project.doc_support import ROOT, pair_on_card


def test_the_leaderboard_page_is_generated_from_the_card_files():
    cards = load_cards(ROOT / LEADERBOARD_DIR)
    assert cards, "benchmarks/leaderboard holds no card"
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    assert page == render(cards), "docs/leaderboard.md is stale: run escoba-bench leaderboard"
    for path, c in cards:
        assert f"`{c['agent']}`" in page
        assert path.name.startswith(f"{c['protocol']}-{c['table']}-")


def test_the_shipped_summary_is_that_of_the_published_cards(capsys):
    assert main(["summary", "--check"]) == 0, "published.json is stale: run escoba-bench summary"
    assert "ok:" in capsys.readouterr().out
    rows = json.loads(PUBLISHED.read_text())["cards"]
    assert len(rows) == len(list((ROOT / LEADERBOARD_DIR).glob("*.json")))
    assert all("per_deal" not in r for r in rows)  # a summary: what a row shows, no per-deal points


def test_published_cards_keep_their_fingerprints_and_page():
    """Only llm specs gained a fingerprint: every published card's agent_code is what it was."""
    for path, card in load_cards(ROOT / LEADERBOARD_DIR):
        assert spec_fingerprint(card["agent"]) == card.get("agent_code", {}), path  # older cards: none kept
    published = json.loads((ROOT / "agents/bench/data/published.json").read_text())
    assert summary(load_cards(ROOT / LEADERBOARD_DIR))["cards"] == published["cards"]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_every_baseline_and_shipped_agent_has_its_full_card_committed(version):
    """The protocol's promise: a full (not quick) card of every expected agent at every table of the
    version (bench-v2: 3 players), played from a clean checkout, validated and on the leaderboard
    page (which reads bench-v2 at 3 players)."""
    from agents.bench.leaderboard import EXPECTED, todo
    from agents.bench.protocol import protocol

    rows = todo(ROOT / LEADERBOARD_DIR, version=version)
    tables = protocol(version).tables
    expected = {(table, agent) for table, names in EXPECTED.items() if table in tables for agent in names}
    assert {(r["table"], r["agent"]) for r in rows} == expected
    missing = [f"{r['table']} {r['agent']} ({r['state']})" for r in rows if r["state"] != "done"]
    assert not missing, f"full cards missing: {missing}"
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    for r in rows:
        card = json.loads(Path(r["path"]).read_text(encoding="utf-8"))
        validate(card, r["path"].name)
        assert not card["quick"] and card["table"] == r["table"] and card["agent"] == r["agent"]
        assert card["git"]["dirty"] is False, f"{r['path'].name} was played from a modified tree"
        assert card["protocol"] == f"bench-{version}"
        assert f"`{r['agent']}`" in page
    if version == "v2":  # every v2 card is in: the 3-player table reads bench-v2, not bench-v1
        assert "## bench-v2, 3p\n" in page and "## bench-v1, 3p\n" not in page


@pytest.mark.parametrize("table", ["2p", "2v2", "3p"])
def test_the_shipped_panel_reference_is_fitted_from_the_committed_cards(table, tmp_path):
    # the anchored ratings of the leaderboard rerun from the panel members' full cards in the repository
    shipped = ROOT / "agents" / "bench" / "data" / f"bench-v1-{table}-panel.json"
    if not shipped.exists():
        members = protocol("v1").table(table).panel
        cards = load_cards(ROOT / LEADERBOARD_DIR)
        have = {c["agent"] for _, c in cards
                if c["protocol"] == "bench-v1" and c["table"] == table and not c["quick"]}
        assert not set(members) <= have, f"every {table} panel member has its full card: ship its reference"
        pytest.skip(f"the {table} panel members' full cards are not all played yet")
    out = tmp_path / "ref.json"
    lb = str(ROOT / LEADERBOARD_DIR)
    assert main(["panel", "--table", table, "--from-cards", lb, "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(shipped.read_text())


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_the_bench_v2_panel_reference_is_fitted_from_the_committed_cards(quick, tmp_path):
    from agents.bench.card import panel_reference_path
    from agents.bench.protocol import protocol

    shipped = panel_reference_path("v2", "3p", quick)
    cards = [c for _, c in load_cards(ROOT / LEADERBOARD_DIR)
             if c["protocol"] == "bench-v2" and c["quick"] == quick]
    members = set(protocol("v2").table("3p").panel)
    if not shipped.exists():
        have = {c["agent"] for c in cards}
        assert not members <= have, "every panel member has its v2 card: ship its reference"
        pytest.skip("the bench-v2 panel members' cards are not all played yet")
    out = tmp_path / "ref.json"
    args = ["panel", "--version", "v2", "--table", "3p", "--from-cards", str(ROOT / LEADERBOARD_DIR),
            "--out", str(out)]
    assert main([*args, *(["--quick"] if quick else [])]) == 0
    assert json.loads(out.read_text()) == json.loads(shipped.read_text())


V2_CARDS = sorted(p.name for p in (ROOT / LEADERBOARD_DIR).glob("bench-v2-3p-*.json"))


@pytest.mark.skipif(not V2_CARDS, reason="no bench-v2 card is committed yet")
def test_no_bench_v2_figure_depends_on_the_seating():
    """Under bench-v1 a pair's two cards seat it in opposite orders and can disagree in sign (search
    vs strong-3p: +0.329 on one, -0.382 on the other). Under bench-v2 both cards play both orders:
    every pair's figure on one card agrees with its figure on the other, within their sampling error
    (a two-sided test at 5% for the family, Bonferroni over the pairs), and both are the pooled
    figure of the two seatings."""
    from statistics import NormalDist

    checked = 0
    for quick in (True, False):
        rows = [c for _, c in load_cards(ROOT / LEADERBOARD_DIR)
                if c["protocol"] == "bench-v2" and c["quick"] == quick]
        pairs = seating_pairs(rows)
        assert all(q["seating"] == "both" for q in pairs)
        cards = {c["agent"]: c for c in rows}
        z = NormalDist().inv_cdf(1 - 0.05 / (2 * max(len(pairs), 1)))
        for q in pairs:
            (ma, sa), (mb, sb) = (pair_on_card(cards[x], q["a"], q["b"], q["third"])
                                  for x in (q["a"], q["b"]))
            assert (ma, mb) == pytest.approx((q["on_a"], q["on_b"]), abs=1e-9)
            assert abs(ma - mb) <= z * (sa * sa + sb * sb) ** 0.5, (quick, q)
            checked += 1
    assert checked or len(V2_CARDS) < 2
