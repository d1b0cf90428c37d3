"""A user's own comparison outside a checkout (a wheel install), the published summary the package
ships, ``escoba-bench list``, and the 3-player leaderboard read from bench-v2 once it has cards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.bench import leaderboard
from agents.bench.cli import main
from agents.bench.leaderboard import (
    EXPECTED,
    LEADERBOARD_DIR,
    PUBLISHED,
    load_cards,
    render,
    seating_pairs,
    summary,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_summary_is_that_of_the_published_cards(capsys):
    assert main(["summary", "--check"]) == 0, "published.json is stale: run escoba-bench summary"
    assert "ok:" in capsys.readouterr().out
    rows = json.loads(PUBLISHED.read_text())["cards"]
    assert len(rows) == len(list((ROOT / LEADERBOARD_DIR).glob("*.json")))
    assert all("per_deal" not in r for r in rows)  # a summary: what a row shows, no per-deal points
    assert summary([]) == {"format": "escoba-bench-published/1", "cards": []}


@pytest.fixture
def wheel(tmp_path, monkeypatch):
    """Run as from a wheel install: no checkout around the package, in an empty folder of the user."""
    monkeypatch.setattr(leaderboard, "checkout_root", lambda: None)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _my_card(folder: Path) -> Path:
    """A card of the user's own agent (a committed card under another name)."""
    text = (ROOT / LEADERBOARD_DIR / "bench-v1-2p-neural-2p-plain-quick.json").read_text()
    folder.mkdir()
    path = folder / "bench-v1-2p-mine-quick.json"
    path.write_text(text.replace('"neural-2p-plain"', '"python:mine:make"'))
    return path


def test_outside_a_checkout_a_new_card_is_compared_with_the_published_leaderboard(wheel, capsys):
    _my_card(wheel / "mycards")
    assert main(["leaderboard", "--dir", "mycards", "--page", "mine.md"]) == 0
    assert sorted(p.name for p in wheel.iterdir()) == ["mine.md", "mycards"]  # only where the user said
    page = (wheel / "mine.md").read_text()
    assert "`python:mine:make` *(yours)*" in page
    assert "`neural-2p-plain` |" in page and "`strong-3p` |" in page  # the published rows beside it
    assert "`mycards/*.json` and the published leaderboard" in page
    assert "benchmarks/leaderboard" not in page
    # without --dir or --page: the published leaderboard, on the terminal, nothing written
    capsys.readouterr()
    assert main(["leaderboard"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Leaderboard") and "`expert`" in out and "(yours)" not in out
    assert sorted(p.name for p in wheel.iterdir()) == ["mine.md", "mycards"]


def test_outside_a_checkout_todo_says_it_is_for_the_repository_s_own_leaderboard(wheel, capsys):
    assert main(["todo"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "escoba-env's own leaderboard" in err[0] and "escoba-bench card" in err[0]
    assert main(["summary"]) == 1
    assert "checkout" in capsys.readouterr().err
    assert not list(wheel.iterdir())


def test_list_shows_the_tables_panels_and_agents(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "bench-v1" in out and "bench-v2" in out and "both orders of play" in out
    assert "panel: expert, search, neural-3p, strong-3p" in out
    assert "neural-3p-move" in out and "python:MODULE:FACTORY" in out
    assert "8baa0ffc930bfb2aa7834065d2abc8132094d86fe8487cce1d3bfc7b6d82ea80" in out


def test_in_a_checkout_the_page_is_the_repository_s_from_any_folder(tmp_path, monkeypatch, capsys):
    read = []
    monkeypatch.setattr(leaderboard, "load_cards", lambda d: read.append(Path(d)) or [])
    monkeypatch.setattr(leaderboard, "render", lambda cards, source, published:
                        (ROOT / "docs" / "leaderboard.md").read_text() if source == "benchmarks/leaderboard"
                        and published is None else "")
    monkeypatch.chdir(tmp_path)
    assert main(["leaderboard", "--check"]) == 0
    assert read == [ROOT / LEADERBOARD_DIR]
    assert "ok: " in capsys.readouterr().out and not list(tmp_path.iterdir())


def test_the_three_player_table_reads_bench_v2_once_every_agent_has_its_card():
    v1 = [(p, c) for p, c in load_cards(ROOT / LEADERBOARD_DIR)
          if c["table"] == "3p" and c["quick"] and c["protocol"] == "bench-v1"]
    assert {c["agent"] for _, c in v1} == set(EXPECTED["3p"])

    def as_v2(card):
        c = json.loads(json.dumps(card))
        c["protocol"] = "bench-v2"
        return c

    page = render(v1)
    assert "## bench-v1, 3p (quick" in page and "bench-v2 has no quick cards of this table yet" in page
    # one v2 card is not the v2 leaderboard: v1 stays shown, and the page says what v2 still lacks
    first = v1[0][1]["agent"]
    page = render([*v1, (Path("x.json"), as_v2(v1[0][1]))])
    assert "## bench-v1, 3p (quick" in page and "## bench-v2, 3p" not in page
    assert f"1 so far (`{first}`), still to play: " in page
    assert all(f"`{a}`" in page.split("still to play: ")[1].split("\n")[0]
               for a in EXPECTED["3p"] if a != first)
    # a user's own v2 card is shown in its version's table, marked incomplete, beside the published rows
    published_v1 = [r for r in leaderboard.load_published() if r["protocol"] == "bench-v1"]
    page = render([(Path("x.json"), as_v2(v1[0][1]))], published=published_v1)
    assert "## bench-v2, 3p (quick subset: not the benchmark) (incomplete" in page
    # every expected agent's v2 card: the page reads bench-v2
    page = render([*v1, *((Path(f"{i}.json"), as_v2(c)) for i, (_, c) in enumerate(v1))])
    assert "## bench-v2, 3p (quick" in page and "## bench-v1, 3p" not in page
    assert ("Shown: bench-v2. Older versions' cards of this table stay readable in "
            f"`benchmarks/leaderboard/` (bench-v1: {len(v1)})") in page
    assert "each lineup in both orders of play" in page


def test_bench_v2_pairs_are_seated_both_ways_on_both_cards(tiny3, tmp_path):
    rows = []
    for spec in ("greedy", "expert"):
        out = tmp_path / f"{spec}.json"
        assert main(["card", spec, "--version", "t0", "--table", "3p", "--out", str(out), "--workers", "1",
                     "--no-progress", "--timing-deals", "0"]) == 0
        rows.append(json.loads(out.read_text()))
    pairs = seating_pairs(rows)
    seatings = [(q["a"], q["b"], q["third"], q["seating"]) for q in pairs]
    assert seatings == [("greedy", "expert", "random", "both")]


V2_CARDS = sorted(p.name for p in (ROOT / LEADERBOARD_DIR).glob("bench-v2-3p-*.json"))


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


def _pair_on_card(card: dict, a: str, b: str, third: str) -> tuple[float, float]:
    """Return the mean and standard error, paired over deals, of ``a``'s points per round minus
    ``b``'s on ``card``'s lineups of the three agents (both orders averaged per deal)."""
    import numpy as np

    pd, cols = card["per_deal"], []
    for lu, x in zip(pd["lineups"], pd["points_per_round"], strict=True):
        if set(lu) == {a, b, third}:
            cols.append([row[lu.index(a)] - row[lu.index(b)] for row in x])
    d = np.mean(cols, axis=0)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


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
            (ma, sa), (mb, sb) = (_pair_on_card(cards[x], q["a"], q["b"], q["third"])
                                  for x in (q["a"], q["b"]))
            assert (ma, mb) == pytest.approx((q["on_a"], q["on_b"]), abs=1e-9)
            assert abs(ma - mb) <= z * (sa * sa + sb * sb) ** 0.5, (quick, q)
            checked += 1
    assert checked or len(V2_CARDS) < 2


def test_the_docs_quote_the_bench_v2_seating_figures_of_the_committed_cards():
    cards = {c["agent"]: c for _, c in load_cards(ROOT / LEADERBOARD_DIR)
             if c["protocol"] == "bench-v2" and c["quick"]}
    on_search, _ = _pair_on_card(cards["search"], "search", "strong-3p", "expert")
    on_strong, _ = _pair_on_card(cards["strong-3p"], "search", "strong-3p", "expert")
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
    on_search, _ = _pair_on_card(cards["search"], "search", "strong-3p", "expert")
    on_strong, _ = _pair_on_card(cards["strong-3p"], "search", "strong-3p", "expert")
    assert f"is {on_search:+.3f} on `search`'s card and {on_strong:+.3f} on `strong-3p`'s" in text
    pairs = seating_pairs(list(cards.values()))
    shared = {q["a"] for q in pairs} | {q["b"] for q in pairs} | {q["third"] for q in pairs}
    assert shared == {"expert", *protocol("v2").table("3p").panel} and len(pairs) == 12
    gaps = []
    for q in pairs:
        x, y = (_pair_on_card(cards[k], q["a"], q["b"], q["third"])[0] for k in (q["a"], q["b"]))
        assert (x > 0) == (y > 0), (q, x, y)  # "no pair changes sign"
        gaps.append(abs(x - y))
    assert f"the largest gap between a pair's two full cards is {max(gaps):.3f}" in text


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
