"""Rooms in real browsers: separate browser contexts (separate people) play whole games by clicking,
on desktop windows and on phones 390 px wide.

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
from escoba_env.rulebook.cards import SUIT_NAMES, card_words
from tests.frontends.arena_support import ROOT
from tests.frontends.test_arena_browser import _need, browser, csp_watch  # noqa: F401  (the fixture)

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 2}
"""A phone held upright (390 CSS pixels wide), as study participants use."""


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


def side_names(seat_names: list[str], partnerships: bool) -> list[str]:
    """Return the pages' name of each scoring side: the seat's name, or ``"a + c"`` for a 2v2 team."""
    if not partnerships:
        return list(seat_names)
    return [" + ".join(seat_names[q] for q in range(len(seat_names)) if q % 2 == s) for s in range(2)]


class Pages:
    """The browser contexts (people) of one test, each page watched for CSP refusals; closes them all."""

    def __init__(self, browser):  # noqa: F811
        self.browser, self.contexts, self.refused = browser, [], []

    def open(self, link: str | None = None, **context):
        """Return a new person's page (a context of its own), at ``link`` if given."""
        ctx = self.browser.new_context(**(context or {"viewport": {"width": 1280, "height": 900}}))
        self.contexts.append(ctx)
        pg = ctx.new_page()
        pg.set_default_timeout(15_000)
        self.refused += [csp_watch(pg)]
        if link:
            pg.goto(link)
        return pg

    def refusals(self) -> list[str]:
        return [t for r in self.refused for t in r]

    def close(self) -> None:
        for c in self.contexts:
            c.close()


@pytest.fixture
def people(browser):  # noqa: F811
    ps = Pages(browser)
    yield ps
    ps.close()
    assert not ps.refusals(), f"a page's CSP refused: {ps.refusals()}"


def open_room(people: Pages, url: str, seats: list[str], target: int = 4, partnerships: bool = False,
              record: bool = False):
    """Open a room on the Rooms page; return (host page, seat links, spectator link)."""
    hp = people.open(url + "/rooms.html")
    hp.wait_for_selector("body[data-ready='1']")
    hp.select_option("select[name=num_players]", str(len(seats)))
    if partnerships:
        hp.check("input[name=partnerships]")
    hp.fill("input[name=target_score]", str(target))
    for s, spec in enumerate(seats):
        hp.fill(f"input[name=seat{s}]", spec)
    if record:
        hp.check("input[name=record]")
    hp.click("#open-room")
    hp.wait_for_selector("#opened:not(.hidden)")
    links = hp.locator("tr.seat-link a").evaluate_all("els => els.map(e => e.href)")
    return hp, links, hp.get_attribute("#watch", "href")


def play_until_over(pages, tap: bool = False, check=None) -> int:
    """Play the first legal card on every page whose turn it is until the room is over; return the
    number of moves made (``check(page)`` runs after each)."""
    clicks = 0
    for _ in range(2000):
        if all(p.get_attribute("body", "data-status") == "over" for p in pages):
            return clicks
        for p in pages:
            if p.get_attribute("body", "data-turn") == "1" and p.locator("#hand .card.playable").count():
                card = p.locator("#hand .card.playable").first
                card.tap() if tap else card.click()
                if p.is_visible("#options"):
                    p.locator("#options button.option").first.click()
                clicks += 1
                if check is not None:
                    check(p)
        pages[0].wait_for_timeout(20)
    raise AssertionError("the game did not end: waited for every page to show the room over")


def per_side(sides: list[str], values: list[int]) -> str:
    """Return ``"ana 3, bea 1"``: the pages' way of giving one number per side."""
    return ", ".join(f"{x} {v}" for x, v in zip(sides, values, strict=True))


def expected_outcome(winner: int, my_side: int, sides: list[str], partnerships: bool) -> str:
    """Return what the game-over banner says about the winner to a reader of side ``my_side``."""
    if not partnerships:
        return "you win" if winner == my_side else f"{sides[winner]} wins"
    return f"your side ({sides[winner]}) wins" if winner == my_side else f"the side {sides[winner]} wins"


def hand(page) -> list[int]:
    return [int(x) for x in page.locator("#hand .card").evaluate_all("els => els.map(e => e.dataset.card)")]


def no_sideways_scroll(page) -> bool:
    """Return True if the page is no wider than the phone (a phone widens its layout to fit a wider page)."""
    return page.evaluate("document.documentElement.scrollWidth") <= PHONE["viewport"]["width"]


@pytest.mark.parametrize("seats,partnerships", [(["human", "greedy", "human"], False), (["human"] * 4, True)],
                         ids=["2-people-and-a-bot", "4-people-2v2"])
def test_people_in_separate_browsers_play_a_whole_game_by_clicking(people, rooms_server, seats, partnerships):
    url, rooms = rooms_server
    n = len(seats)
    names = [f"b{n}s{k}" if spec == "human" else spec for k, spec in enumerate(seats)]
    labels = [f"human:{x}" if s == "human" else s for x, s in zip(names, seats, strict=True)]
    hp, links, _ = open_room(people, url, labels, partnerships=partnerships, record=True)
    assert "records its games" in hp.inner_text("#record-note")
    humans = [k for k, s in enumerate(seats) if s == "human"]
    assert len(links) == len(humans)
    pages = [people.open(link) for link in links]
    for p in pages:
        p.wait_for_selector("body[data-status='playing'], body[data-status='over']")
    # Each person sees their own hand only: the pages' hands never share a card.
    hands = [set(hand(p)) for p in pages]
    assert all(not (a & b) for i, a in enumerate(hands) for b in hands[i + 1:])
    clicks = play_until_over(pages)
    recs = [json.loads(f.read_text()) for f in (rooms / "records").glob("*.jsonl")]
    mine = [r for r in recs if r["seats"] == labels]
    assert clicks > 10 and len(mine) == 1 and check_replay(mine[0]) > 0
    rec = mine[0]
    # The game-over banner names the winner (the winning side at 2v2), for each reader.
    sides = side_names(names, partnerships)
    final = per_side(sides, rec["final_scores"])
    for seat, p in zip(humans, pages, strict=True):
        said = expected_outcome(rec["winner"], seat % 2 if partnerships else seat, sides, partnerships)
        assert p.inner_text("#game-over") == f"Game over: {said}. Final score: {final}.", seat
    # Each round summary names the sides: in the log and in the last round's table.
    rounds = [t for t in pages[0].locator("#log div").all_inner_texts() if t.startswith("Round over:")]
    last = rec["rounds"][-1]
    points, totals = per_side(sides, last["points"]), per_side(sides, last["scores"])
    assert rounds[0] == f"Round over: points {points}; total {totals}."
    assert pages[0].locator("#round-table tr").first.locator("th").all_inner_texts()[1:] == sides


def test_a_phone_seat_page_keeps_the_token_out_of_sight_shows_who_left_and_names_the_winner(
        people, rooms_server):
    url, _ = rooms_server
    hp, links, watch = open_room(people, url, ["human:ana", "human:bea"], target=3)
    ana, bea = (people.open(link, **PHONE) for link in links)
    for p, link in ((ana, links[0]), (bea, links[1])):
        p.wait_for_selector("body[data-status='playing']")
        # The token has left the address bar (and this history entry); the page says how to come back.
        assert "#t=" not in p.url and p.url.endswith("/room.html")
        assert "open your link again" in p.inner_text("#rejoin")
        p.click("#rejoin summary")
        assert p.inner_text("#my-link") == link
    # A reload keeps the seat (the token waits in this tab's sessionStorage), still out of sight.
    ana.reload()
    ana.wait_for_selector("body[data-status='playing']")
    assert ana.inner_text("#room-status").startswith("You are seat 0 (ana).") and "#t=" not in ana.url
    # The spectator's link is taken out of the address bar too.
    sp = people.open(watch)
    sp.wait_for_selector("body[data-status='playing']")
    assert "#t=" not in sp.url and sp.inner_text("#room-status").startswith("You are watching")
    # Cards: the Spanish suit drawn from the package's SVG, named as the engine names them.
    cards = hand(ana)
    assert ana.locator("#hand .card").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))") == \
        [card_words(c) for c in cards]  # the one vocabulary: "as de copas", "sota de oros"
    srcs = ana.locator("#hand .card img.suit").evaluate_all(
        "els => els.map(e => [new URL(e.src).pathname, e.complete && e.naturalWidth > 0])")
    assert srcs == [[f"/suits/{SUIT_NAMES[c % 4]}.svg", True] for c in cards]
    assert no_sideways_scroll(ana) and no_sideways_scroll(bea)
    # bea closes her tab: ana's page says so at once (long before a bot would take the seat).
    bea.context.close()
    ana.wait_for_selector("#people tr[data-seat='1'].away", timeout=10_000)
    assert ana.inner_text("#away").startswith("bea has left the table.")
    assert "away" in ana.inner_text("#opponents .seat[data-seat='1'] .label")
    # She opens her link again: back in her seat, and ana's page shows her back.
    bea = people.open(links[1], **PHONE)
    bea.wait_for_selector("body[data-status='playing']")
    ana.wait_for_selector("#away.hidden", state="attached", timeout=10_000)
    assert ana.inner_text("#people tr[data-seat='1'] .presence") == "here"

    def fits(p):
        assert no_sideways_scroll(p), "the page scrolls sideways at 390 px"

    play_until_over([ana, bea], tap=True, check=fits)
    scores = [int(x) for x in ana.locator("#scores td.score").all_inner_texts()]
    w = scores.index(max(scores))
    for seat, p in enumerate((ana, bea)):
        said = "you win" if seat == w else f"{['ana', 'bea'][w]} wins"
        final = per_side(["ana", "bea"], scores)
        assert p.inner_text("#game-over") == f"Game over: {said}. Final score: {final}.", seat
        assert no_sideways_scroll(p)
    sp.wait_for_selector("body[data-status='over']")
    assert sp.inner_text("#game-over").startswith(f"Game over: {['ana', 'bea'][w]} wins.")


def test_a_page_without_its_token_says_how_to_get_in_and_each_outcome_reads_right(people, rooms_server):
    url, _ = rooms_server
    pg = people.open(url + "/room.html", **PHONE)
    pg.wait_for_selector("body[data-ready='1']")
    assert "Open your link again" in pg.inner_text("#message")
    base = {"error": None, "side_names": ["ana", "bea", "carl"], "rules": {"partnerships": False}}
    team = {**base, "side_names": ["ana + carl", "bea + dani"], "rules": {"partnerships": True}}
    cases = [({**base, "winner": 1, "scores": [3, 21, 9]}, 1, "you win"),
             ({**base, "winner": 1, "scores": [3, 21, 9]}, -1, "bea wins"),
             ({**base, "winner": -1, "scores": [7, 7, 2]}, 0, "a tie at 7"),
             ({**base, "winner": -1, "scores": [7, 5, 2]}, 0, "no winner (the round limit ended it)"),
             ({**base, "winner": -1, "scores": [7, 5, 2], "error": "bot failed"}, 0, "the game was stopped"),
             ({**team, "winner": 0, "scores": [21, 4]}, 0, "your side (ana + carl) wins"),
             ({**team, "winner": 0, "scores": [21, 4]}, 1, "the side ana + carl wins"),
             ({**team, "winner": 1, "scores": [4, 21]}, -1, "the side bea + dani wins")]
    for view, side, said in cases:
        assert pg.evaluate("([v, s]) => outcome(v, s)", [view, side]) == said, (view, side)
    # A multi-deal room lists its games so far, each winner named.
    room = {"results": [{"game": 1, "winner": 1, "scores": [3, 21, 9], "error": None},
                        {"game": 2, "winner": -1, "scores": [0, 0, 0], "error": "bot failed"}]}
    assert pg.evaluate("([r, n]) => gamesSoFar(r, n)", [room, base["side_names"]]) == \
        "game 1: bea won (ana 3, bea 21, carl 9) · game 2: stopped (ana 0, bea 0, carl 0)"
