"""The web arena in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

The server runs as ``python -m escoba_arena.web --port 0`` in a subprocess; what the pages show is
checked against the engine. Without Playwright or Chromium the tests are skipped, unless
``ARENA_BROWSER_REQUIRED=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from agents.tournament.replay import check_replay
from escoba_env.executors.engine import EscobaEngine
from escoba_env.rulebook.cards import SUIT_NAMES, cards_of
from escoba_env.rulebook.rules import Rules
from tests.frontends.arena_support import ROOT, client, run_evaluate

REQUIRED = os.environ.get("ARENA_BROWSER_REQUIRED") == "1"
CHROMIUM = os.environ.get("ARENA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


def _need(ok: bool, why: str) -> None:
    if not ok:
        if REQUIRED:
            pytest.fail(f"browser tests required but {why}")
        pytest.skip(why)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("arena_web")
    run_evaluate(out, "--agents", "random", "greedy", "--games", "2", "--target-score", "4")
    return out


@pytest.fixture(scope="module")
def server(data):
    """Start the arena CLI on a free port; yield its URL."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        _need(False, "the [web] extra is not installed")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "escoba_arena.web", "--port", "0", "--data", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("Escoba arena: http://127.0.0.1:"), (line, proc.stderr.read())
        yield line.split()[2]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "playwright is not installed (pip install -e '.[webtest]')")
    _need(CHROMIUM is not None, "no chromium executable (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def csp_watch(pg) -> list[str]:
    """Return a list that collects what the page's Content-Security-Policy refused (it stays empty)."""
    refused: list[str] = []
    pg.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    pg.on("pageerror", lambda e: refused.append(str(e)) if "Content Security Policy" in str(e) else None)
    return refused


@pytest.fixture
def page(browser, server):
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    pg.set_default_timeout(15_000)
    refused = csp_watch(pg)
    yield pg
    pg.close()
    assert not refused, f"the page's CSP refused: {refused}"


def _cards(page, selector: str) -> list[int]:
    return [int(x) for x in page.locator(selector).evaluate_all("els => els.map(e => e.dataset.card)")]


def _settle(page) -> None:
    page.wait_for_selector("body:not([data-busy='1'])", state="attached")


def _start(page, server: str, seed: int, target: int, opponent: str) -> None:
    page.goto(server)
    page.wait_for_selector("body[data-ready='1']")
    page.fill("input[name=target_score]", str(target))
    page.fill("input[name=opponents]", opponent)
    page.fill("input[name=seed]", str(seed))
    page.click("#new-game")
    page.wait_for_selector("#game:not(.hidden)")
    _settle(page)


def test_play_a_whole_game_by_clicking(page, server):
    _start(page, server, seed=3, target=9, opponent="greedy")
    shown = []  # (hand, table) at each of the human's decisions, as the page showed them
    new_deals = 0  # decisions where the human's last move was made under an earlier deal
    for _ in range(400):
        _settle(page)
        if page.is_visible("#game-over"):
            break
        shown.append((_cards(page, "#hand .card"), _cards(page, "#table .card")))
        # The recent-moves strip holds only moves made on the table of the current deal.
        log = page.evaluate("view.log")
        deal = max(i for i, e in enumerate(log) if e["type"] == "deal")
        mine = [i for i, e in enumerate(log) if e["type"] == "move" and e["seat"] == 0]
        since_deal = sum(e["type"] == "move" for e in log[deal:])
        strip = page.locator("#last-move .move").count()
        assert strip <= since_deal
        if mine and mine[-1] < deal:
            new_deals += 1
            assert strip == min(4, since_deal)
        page.locator("#hand .card.playable").first.click()
        if page.is_visible("#options"):
            page.locator("#options button.option").first.click()
    assert page.is_visible("#game-over") and "Final score" in page.inner_text("#game-over")
    gid = page.evaluate("document.body.dataset.game")
    rec = json.loads(page.request.get(f"{server}api/games/{gid}/replay").text())
    assert new_deals >= 1 and len(rec["rounds"]) > 1
    # At 1280x900, from the top of the page: it says the game ended, the banner and Rematch are in view.
    page.evaluate("window.scrollTo(0, 0)")
    assert page.inner_text("#status").startswith(f"Game over · Round {len(rec['rounds'])} · ")
    for sel in ("#game-over", "#rematch"):
        box = page.locator(sel).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 900, (sel, box)
    assert "ESCOBA!." not in page.inner_text("#log")
    check_replay(rec)  # the engine re-plays the recorded game exactly
    # What the page showed at each decision is the engine's position then.
    eng = EscobaEngine(1, Rules.from_dict(rec["rules"]))
    eng.reset(rec["seed"], game_ids=[0])
    positions = []
    for rnd in rec["rounds"]:
        for a in rnd["actions"]:
            if a["actor"] == 0 and int(eng.pending[0]) < 0:
                positions.append((cards_of(int(eng.hands[0, 0])), cards_of(int(eng.table[0]))))
            eng.step([a["action"]])
    assert shown == positions and len(shown) > 10
    scores = [int(x) for x in page.locator("#scores td.score").all_inner_texts()]
    assert scores == rec["final_scores"] == [int(x) for x in eng.scores[0]]
    last = rec["rounds"][-1]
    row = page.locator("#round-table tr[data-cat='sevens'] td").all_inner_texts()
    assert [int(x) for x in row[1:]] == last["categories"]["sevens"]
    total = page.locator("#round-table tr[data-cat='total'] th").all_inner_texts()
    assert [int(x) for x in total[1:]] == last["scores"]
    watch = page.get_attribute("#watch", "href")
    assert page.get_attribute("#save", "href") == f"/api/games/{gid}/replay"
    # A rematch deals the same cards again.
    page.click("#rematch")
    page.wait_for_selector("#game-over.hidden", state="attached")
    _settle(page)
    assert (_cards(page, "#hand .card"), _cards(page, "#table .card")) == shown[0]
    # The finished game opens in the replay viewer.
    page.goto(server.rstrip("/") + watch)
    page.wait_for_selector("body[data-frame='0']")
    assert "seats: human, greedy" in page.inner_text("#meta")
    n = len(rec["rounds"][0]["actions"])
    assert page.inner_text("#pos") == f"round 1/{len(rec['rounds'])} · move 0/{n}"


def test_a_2v2_game_shows_three_bot_seats_and_the_teams(page, server):
    page.goto(server)
    page.wait_for_selector("body[data-ready='1']")
    page.locator("select[name=num_players]").select_option(index=2)
    page.check("input[name=partnerships]")
    page.fill("input[name=opponents]", "greedy")
    page.fill("input[name=seat]", "1")
    page.fill("input[name=seed]", "9")
    page.click("#new-game")
    page.wait_for_selector("#game:not(.hidden)")
    _settle(page)
    gid = page.evaluate("document.body.dataset.game")
    v = page.request.get(f"{server}api/games/{gid}").json()["view"]
    seats = page.locator("#opponents .seat").evaluate_all("els => els.map(e => Number(e.dataset.seat))")
    assert seats == [0, 2, 3] and v["seat"] == 1
    for s in seats:
        assert page.locator(f"#opponents .seat[data-seat='{s}'] .card.back").count() == v["hand_counts"][s]
    assert _cards(page, "#hand .card") == v["hand"] and _cards(page, "#table .card") == v["table"]
    sides = page.locator("#scores tr[data-side] td:first-child").all_inner_texts()
    assert sides == ["Their team (greedy #0 + greedy #2)", "Your team (You + partner greedy)"]


def _multi_option_seed() -> tuple[int, dict]:
    """Return a seed whose first human turn (against greedy, default rules) has a card with 2+ captures."""
    c = client()
    for seed in range(300):
        v = c.post("/api/games", json={"seed": seed, "opponents": ["greedy"],
                                       "rules": {"target_score": 3}}).json()["view"]
        multi = [m for m in v["moves"] if len(m["options"]) > 1]
        if multi:
            return seed, multi[0]
    raise AssertionError("no seed with a multi-option capture")


def test_choose_one_of_several_captures_by_clicking(page, server):
    seed, move = _multi_option_seed()
    _start(page, server, seed=seed, target=3, opponent="greedy")
    page.click(f"#hand .card[data-card='{move['card']}']")
    buttons = page.locator("#options button.option")
    assert buttons.count() == len(move["options"])
    shown = [[int(x) for x in b.locator(".card").evaluate_all("els => els.map(e => e.dataset.card)")]
             for b in buttons.all()]
    assert shown == move["options"]
    buttons.nth(1).click()
    _settle(page)
    gid = page.evaluate("document.body.dataset.game")
    log = page.request.get(f"{server}api/games/{gid}").json()["view"]["log"]
    mine = next(e for e in log if e["type"] == "move" and e["seat"] == 0)
    assert mine["card"] == move["card"] and mine["captured"] == sorted(move["options"][1])


def test_open_a_replay_and_step_through_it(page, server, data):
    name = "0/replays/00_random_vs_greedy.jsonl"
    rec = json.loads((data / "replays" / "00_random_vs_greedy.jsonl").read_text().splitlines()[1])
    page.goto(f"{server}replay.html?file={name}&game=1")
    page.wait_for_selector("body[data-frame='0']")
    eng = EscobaEngine(1, Rules.from_dict(rec["rules"]))
    eng.reset(rec["seed"], game_ids=[rec["game_id"]])
    actions = rec["rounds"][0]["actions"]
    first_capture = next(i for i, a in enumerate(actions) if a["captured"])
    for i in range(first_capture + 1):
        page.click("#next")
        before = cards_of(int(eng.table[0]))
        eng.step([actions[i]["action"]])
    page.wait_for_selector(f"body[data-frame='{first_capture + 1}']")
    assert _cards(page, "#table .card") == cards_of(int(eng.table[0]))
    for s in range(2):
        assert _cards(page, f"#hands .seat[data-seat='{s}'] .card") == cards_of(int(eng.hands[0, s]))
    # The capture is highlighted on the table it was taken from.
    assert _cards(page, "#table-before > .card:not(.played)") == before
    assert _cards(page, "#table-before .card.played") == [actions[first_capture]["action"]]
    taken = [c for c in actions[first_capture]["captured"] if c != actions[first_capture]["action"]]
    assert _cards(page, "#table-before .card.hl") == taken
    # One seat's view hides the other hand.
    page.locator("#seatview").select_option(index=1)  # seat 0
    assert page.locator("#hands .seat[data-seat='1'] .card.back").count() == int(eng.hands[0, 1]).bit_count()
    assert _cards(page, "#hands .seat[data-seat='0'] .card") == cards_of(int(eng.hands[0, 0]))
    page.click("#prev")
    page.wait_for_selector(f"body[data-frame='{first_capture}']")
    # Jump to round 2: its deal is the engine's.
    for a in actions[first_capture + 1:]:
        eng.step([a["action"]])
    page.locator("#round").select_option(index=1)
    page.wait_for_selector("body[data-round='1'][data-frame='0']")
    assert _cards(page, "#table .card") == cards_of(int(eng.table[0]))
    assert page.inner_text("#pos").startswith(f"round 2/{len(rec['rounds'])}")
    # A local file opens too (its first game).
    page.set_input_files("#upload", str(data / "replays" / "00_random_vs_greedy.jsonl"))
    page.wait_for_selector("#meta:has-text('rotation 0')")
    assert "seats: random, greedy" in page.inner_text("#meta")


def test_open_a_results_page(page, server, data):
    res = json.loads((data / "res.json").read_text())
    page.goto(f"{server}results.html?file=0/res.json")
    page.wait_for_selector("#pairs tr.pair")
    cells = page.locator("#pairs tr.pair").first.locator("td").all_inner_texts()
    p = res["pairs"][0]
    assert cells[:3] == [p["a"], p["b"], str(p["games"])]
    assert cells[3] == f"{p['diff']['mean']:+.3f} [{p['diff']['lo']:+.3f}, {p['diff']['hi']:+.3f}]"
    w = p["win_rate"]
    assert cells[4] == f"{w['rate']:.3f} [{w['lo']:.3f}, {w['hi']:.3f}]"
    # On a narrow window the pairs table scrolls inside the page rather than widening it.
    page.set_viewport_size({"width": 480, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size({"width": 1280, "height": 900})
    ranks = page.locator("#ratings tr.rating").all()
    assert [r.locator("td").nth(1).inner_text() for r in ranks] == [x["agent"] for x in res["ratings"]]
    assert ranks[0].locator("td").nth(2).inner_text() == f"{res['ratings'][0]['mu']:.2f}"
    page.click("#replays a")
    page.wait_for_selector("body[data-frame='0']")
    assert "random, greedy" in page.inner_text("#meta")


def test_the_pages_fit_a_phone_and_draw_spanish_suits(browser, server):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    pg = ctx.new_page()
    pg.set_default_timeout(15_000)
    refused = csp_watch(pg)

    def width() -> int:  # a phone lays out a page wider than its screen at the page's width
        return pg.evaluate("document.documentElement.scrollWidth")

    _start(pg, server, seed=3, target=3, opponent="greedy")
    assert width() <= 390
    pg.locator("#hand .card.playable").first.tap()
    if pg.is_visible("#options"):
        pg.locator("#options button.option").first.tap()
    _settle(pg)
    assert width() <= 390
    gid = pg.evaluate("document.body.dataset.game")
    v = pg.request.get(f"{server}api/games/{gid}").json()["view"]
    suits = pg.locator("#table .card img.suit").evaluate_all(
        "els => els.map(e => new URL(e.src).pathname.split('/').pop())")
    assert suits == [f"{SUIT_NAMES[c % 4]}.svg" for c in v["table"]]
    labels = pg.locator("#table .card").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert all(x.endswith(" de " + SUIT_NAMES[c % 4]) for x, c in zip(labels, v["table"], strict=True))
    replay = "replay.html?file=0/replays/00_random_vs_greedy.jsonl&game=1"
    for path in (replay, "results.html?file=0/res.json", "rooms.html"):
        pg.goto(server + path)
        pg.wait_for_selector("body[data-ready='1']")
        assert width() <= 390, path
    ctx.close()
    assert not refused, refused


def test_page_text_legend_small_cards_and_no_stale_error(page, server):
    _start(page, server, seed=4, target=3, opponent="greedy")
    assert page.inner_text("#legend") == "(S sota = 8, C caballo = 9, R rey = 10)"
    # The registry's agent list: each agent once, with its one-line description.
    names = page.locator("#agent-list li code").all_inner_texts()
    assert len(names) == len(set(names)) and {"neural", "greedy"} <= set(names), names
    assert "takes the most valuable capture" in page.inner_text("#agent-list")
    # Suit drawings stay inside the small cards of the recent-moves strip.
    page.locator("#hand .card.playable").first.click()
    _settle(page)
    fits = page.locator("#last-move .card .suit").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().right <= e.parentNode.getBoundingClientRect().right)")
    assert fits and all(fits)
    # A server error, then a form the browser itself refuses: the old error is cleared.
    page.fill("input[name=opponents]", "nonsense")
    page.click("#new-game")
    page.wait_for_selector("#message:not(.hidden)")
    assert "nonsense" in page.inner_text("#message")
    page.fill("input[name=opponents]", "greedy")
    page.fill("input[name=target_score]", "0")
    page.click("#new-game")
    page.wait_for_selector("#message.hidden", state="attached")
