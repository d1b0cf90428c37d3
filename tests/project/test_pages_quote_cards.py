"""Pages that quote committed results quote them exactly: docs/benchmark.md, README and CHANGELOG give
the seating figures of the committed cards and every committed best response with its figure and
curve, and the model card (``agents/pretrained/README.md``) gives its networks' full-card figures.

Moved here from ``tests/bench/test_bench.py``, ``tests/bench/test_bench_outside.py`` and
``tests/bench/test_bench_pins.py``: they pin pages and committed files, not behaviour."""

from __future__ import annotations

import json

import pytest

from agents.bench import deal_set_digest
from agents.bench.cli import main
from agents.bench.leaderboard import EXPECTED, LEADERBOARD_DIR, load_cards, seating_pairs
from tests.project.doc_support import ROOT, pair_on_card


def test_the_docs_quote_the_seating_figures_of_the_committed_cards():
    rows = [c for _, c in load_cards(ROOT / LEADERBOARD_DIR)
            if c["protocol"] == "bench-v1" and c["table"] == "3p" and not c["quick"]]
    pairs = {(r["a"], r["b"], r["third"]): r for r in seating_pairs(rows)}
    r = pairs["search", "strong-3p", "expert"]  # both full cards are committed
    assert not r["same_seating"]
    for doc in ("docs/benchmark.md", "README.md", "CHANGELOG.md"):
        text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
        assert f"{r['on_a']:+.3f}" in text and f"{abs(r['on_b']):.3f}" in text, doc


def test_the_docs_quote_the_bench_v2_seating_figures_of_the_committed_cards():
    cards = {c["agent"]: c for _, c in load_cards(ROOT / LEADERBOARD_DIR)
             if c["protocol"] == "bench-v2" and c["quick"]}
    on_search, _ = pair_on_card(cards["search"], "search", "strong-3p", "expert")
    on_strong, _ = pair_on_card(cards["strong-3p"], "search", "strong-3p", "expert")
    text = " ".join((ROOT / "docs/benchmark.md").read_text(encoding="utf-8").split())
    assert f"{on_search:+.3f}" in text and f"{on_strong:+.3f}" in text


def test_the_docs_quote_the_bench_v2_full_cards_seating_figures():
    """All seven full bench-v2 cards are in; the pairs two of them share are those among `expert`
    and the panel (a non-panel agent meets them on its own card only), twelve (pair, third)
    figures, each on both of the pair's cards: none changes sign, and the page quotes them."""
    from agents.bench.protocol import protocol

    cards = {c["agent"]: c for _, c in load_cards(ROOT / LEADERBOARD_DIR)
             if c["protocol"] == "bench-v2" and not c["quick"]}
    assert set(cards) == set(EXPECTED["3p"])
    text = " ".join((ROOT / "docs/benchmark.md").read_text(encoding="utf-8").split())
    on_search, _ = pair_on_card(cards["search"], "search", "strong-3p", "expert")
    on_strong, _ = pair_on_card(cards["strong-3p"], "search", "strong-3p", "expert")
    assert f"is {on_search:+.3f} on `search`'s card and {on_strong:+.3f} on `strong-3p`'s" in text
    pairs = seating_pairs(list(cards.values()))
    shared = {q["a"] for q in pairs} | {q["b"] for q in pairs} | {q["third"] for q in pairs}
    assert shared == {"expert", *protocol("v2").table("3p").panel} and len(pairs) == 12
    gaps = []
    for q in pairs:
        x, y = (pair_on_card(cards[k], q["a"], q["b"], q["third"])[0] for k in (q["a"], q["b"]))
        assert (x > 0) == (y > 0), (q, x, y)  # "no pair changes sign"
        gaps.append(abs(x - y))
    assert f"the largest gap between a pair's two full cards is {max(gaps):.3f}" in text


def test_every_committed_best_response_is_in_the_docs_with_its_figure_and_curve():
    page = (ROOT / "docs" / "benchmark.md").read_text(encoding="utf-8")
    files = sorted((ROOT / "benchmarks" / "exploit").glob("exploit-*.json"))
    assert files
    for f in files:
        d = json.loads(f.read_text())
        assert d["format"] == "escoba-bench-exploit/1" and d["benchmark"]
        assert d["deal_set"]["digest"] == deal_set_digest("v1", d["table"]), f.name
        b = d["bound"]
        figure = f"{b['mean']:+.3f} [{b['lo']:+.3f}, {b['hi']:+.3f}]"
        rows = [r for r in page.splitlines() if r.startswith(f"| `{d['agent']}` |") and figure in r]
        assert rows, f"{f.name}: {figure} is not in docs/benchmark.md"
        for opp, r in d["also"].items():
            also = f"{r['diff']['mean']:+.3f} [{r['diff']['lo']:+.3f}, {r['diff']['hi']:+.3f}]"
            assert f"{also} against `{opp}`" in " ".join(page.split()), f"{f.name}: {opp} {also}"
        # the row names the run: a fresh response its steps, a started one its network and learning rate
        init, t = d["training"].get("init"), d["training"]
        cells = [[c.strip() for c in r.split("|")[1:-1]] for r in rows]
        if init is None:
            assert any(c[1] == f"{t['steps']:,}" for c in cells), f.name
        else:  # results written before --lr existed ran at the trainer's default
            from agents.training.config import Config

            lr = t.get("learning_rate", Config.learning_rate)
            assert any(c[1] == f"`{init}`" and float(c[2]) == lr
                       and c[3] == f"{t['wall_s']:.0f}" for c in cells), f.name
        assert all("concedes at least" in r for r in rows) == (b["lo"] > 0), f.name
        for r in rows:
            curve = r.split("(figures/")[1].split(")")[0]
            assert (ROOT / "docs" / "figures" / curve).is_file(), curve


def test_the_docs_claim_the_corrected_best_of_the_committed_responses(capsys):
    from pathlib import Path

    from agents.bench.exploit import best_bound

    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs" / "benchmark.md").read_text().split())
    results = [json.loads(p.read_text()) for p in (root / "benchmarks" / "exploit").glob("*.json")]
    for agent in ("expert", "neural-2p-plain"):
        b = best_bound([r for r in results if r["agent"] == agent and r["table"] == "2p"])
        assert b["lo"] > 0
        assert f"its {b['runs']} runs" in page or f"over its {b['runs']}" in page, agent
        assert f"at least **{b['lo']:+.3f}**" in page and f"best run {b['mean']:+.3f}" in page, agent
    assert main(["bound", "expert", "--table", "2p"]) == 0
    out = capsys.readouterr().out
    assert out.count(" steps, ") == 7 and "expert concedes at least +0.133" in out


def test_the_model_card_s_bounds_are_the_full_cards_largest_losses():
    """The model card's table of what each shipped agent concedes quotes, for every head-to-head row,
    the largest loss on the agent's own full card and its 95% lower limit."""
    import re

    text = (ROOT / "agents" / "pretrained" / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([\w-]+)` \| (2p|2v2) \| \+(\d\.\d{3}) \| `([\w-]+)` [^|]*?"
                      r"\+(\d\.\d{3}) \[\+(\d\.\d{3}), \+(\d\.\d{3})\]", text, re.M)
    assert len(rows) >= 5, "the bound table is missing from the model card"
    cards = {(c["table"], c["agent"]): c for _, c in load_cards(ROOT / LEADERBOARD_DIR) if not c["quick"]}
    for agent, table, bound, opponent, loss, lo, hi in rows:
        worst = min(cards[table, agent]["opponents"], key=lambda o: o["diff"]["mean"])
        d = worst["diff"]
        assert worst["opponent"] == opponent, (agent, worst["opponent"])
        assert (f"{-d['mean']:.3f}", f"{-d['hi']:.3f}", f"{-d['lo']:.3f}") == (loss, lo, hi), agent
        assert bound == lo, agent


@pytest.mark.parametrize(("agent", "heading"), [("neural-3p", "## `neural-2v2` and `neural-3p`:"),
                                               ("neural-3p-move", "## `neural-3p-move`:")])
def test_the_model_card_quotes_the_3p_networks_full_bench_v2_cards(agent, heading):
    """The model card's section of each 3-player network quotes its full bench-v2 card: the headline
    and the figure against `expert`, as the committed card gives them."""
    card = json.loads((ROOT / LEADERBOARD_DIR / f"bench-v2-3p-{agent}.json").read_text(encoding="utf-8"))
    assert card["protocol"] == "bench-v2" and not card["quick"]

    def ci(x):
        return f"{x['mean']:+.3f} [{x['lo']:+.3f}, {x['hi']:+.3f}]"

    vs_expert = next(o["diff"] for o in card["opponents"] if o["opponent"] == "expert")
    text = (ROOT / "agents/pretrained/README.md").read_text(encoding="utf-8")
    section = " ".join(text[text.index(heading):].split("\n## ")[0].split())
    quoted = section[section.index("full bench-v2 card"):]
    assert ci(card["headline"]) in quoted and f"{ci(vs_expert)} against `expert`" in quoted
