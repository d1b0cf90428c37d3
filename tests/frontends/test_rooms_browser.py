"""Rooms in real browsers: separate browser contexts (separate people) play whole games by clicking.

Headless Chromium driven by Playwright, as in ``test_arena_browser``; skipped without them unless
``ARENA_BROWSER_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agents.tournament.replay import check_replay
from tests.frontends.arena_support import ROOT
from tests.frontends.test_arena_browser import _need, browser  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
def rooms_server(tmp_path_factory):
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
        import websockets  # noqa: F401
    except ImportError:
        _need(False, "the [web] extra is not installed")
    rooms = tmp_path_factory.mktemp("rooms")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "escoba_arena.web", "--port", "0", "--rooms-dir", str(rooms)]
    proc = subprocess.Popen(cmd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        proc.stdout.readline()
        line = proc.stdout.readline()
        assert line.startswith("Escoba arena: http://127.0.0.1:"), (line, proc.stderr.read())
        yield line.split()[2].rstrip("/"), rooms
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("players,seats", [(3, ["human", "greedy", "human"]), (4, ["human"] * 4)],
                         ids=["2-people-and-a-bot", "4-people"])
def test_people_in_separate_browsers_play_a_whole_game_by_clicking(browser, rooms_server, players, seats):  # noqa: F811
    url, rooms = rooms_server
    host = browser.new_context(viewport={"width": 1280, "height": 900})
    hp = host.new_page()
    hp.set_default_timeout(15_000)
    hp.goto(url + "/rooms.html")
    hp.wait_for_selector("body[data-ready='1']")
    hp.select_option("select[name=num_players]", str(players))
    hp.fill("input[name=target_score]", "4")
    for s, spec in enumerate(seats):
        hp.fill(f"input[name=seat{s}]", spec if spec != "human" else f"human:b{players}s{s}")
    hp.check("input[name=record]")
    hp.click("#open-room")
    hp.wait_for_selector("#opened:not(.hidden)")
    assert "records its games" in hp.inner_text("#record-note")
    links = hp.locator("tr.seat-link a").evaluate_all("els => els.map(e => e.href)")
    assert len(links) == seats.count("human")
    contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in links]
    pages = []
    for ctx, link in zip(contexts, links, strict=True):
        p = ctx.new_page()
        p.set_default_timeout(15_000)
        p.goto(link)
        pages.append(p)
    for p in pages:
        p.wait_for_selector("body[data-status='playing'], body[data-status='over']")
    # Each person sees their own hand only: the pages' hands never share a card.
    hands = [set(p.locator("#hand .card").evaluate_all("els => els.map(e => e.dataset.card)")) for p in pages]
    assert all(not (a & b) for i, a in enumerate(hands) for b in hands[i + 1:])
    clicks = 0
    for _ in range(2000):
        if all(p.get_attribute("body", "data-status") == "over" for p in pages):
            break
        for p in pages:
            if p.get_attribute("body", "data-turn") == "1" and p.locator("#hand .card.playable").count():
                p.locator("#hand .card.playable").first.click()
                if p.is_visible("#options"):
                    p.locator("#options button.option").first.click()
                clicks += 1
        pages[0].wait_for_timeout(20)
    assert all(p.get_attribute("body", "data-status") == "over" for p in pages), "the game did not end"
    assert clicks > 10 and "Game over" in pages[0].inner_text("#game-over")
    recs = [json.loads(f.read_text()) for f in (rooms / "records").glob("*.jsonl")]
    mine = [r for r in recs if r["seats"] == [s if s != "human" else f"human:b{players}s{k}"
                                              for k, s in enumerate(seats)]]
    assert len(mine) == 1 and check_replay(mine[0]) > 0
    for c in [host, *contexts]:
        c.close()
