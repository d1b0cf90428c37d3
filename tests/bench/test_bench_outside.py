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
    load_cards,
    render,
    seating_pairs,
    summary,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_summary_of_no_card_is_its_format_alone():
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
