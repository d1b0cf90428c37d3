"""What every answer of the web arena tells the browser: CSP, no Referer, no framing; pages with no
inline script or style; the Spanish suit drawings shipped with the package, with no outside asset."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

import pytest

from tests.frontends.arena_support import ROOT, client

STATIC = ROOT / "escoba_arena" / "web" / "static"
PAGES = sorted(p.name for p in STATIC.glob("*.html"))
SUITS = ("oros", "copas", "espadas", "bastos")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")


def _guarded():
    """Return a client of an app with the Host and Origin guard on, as the CLI serves it."""
    c = client(allowed_hosts=[])
    c.base_url = "http://127.0.0.1:8765"
    return c


def _check_headers(r, what: str) -> None:
    csp = r.headers.get("content-security-policy", "")
    directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";") if d.strip())
    assert directives.get("frame-ancestors") == "'none'", (what, csp)
    assert directives.get("script-src") == "'self'", (what, csp)  # no 'unsafe-inline', no eval
    assert directives.get("default-src") == "'none'", (what, csp)
    assert "unsafe" not in csp, (what, csp)
    assert r.headers.get("referrer-policy") == "no-referrer", what
    assert r.headers.get("x-content-type-options") == "nosniff", what
    assert r.headers.get("x-frame-options") == "DENY", what


@pytest.mark.parametrize("path, status", [("/", 200), *((f"/{p}", 200) for p in PAGES), ("/arena.css", 200),
                                          ("/room.js", 200), ("/suits/oros.svg", 200), ("/api/info", 200),
                                          ("/api/nothing", 404), ("/api/games/nope", 404),
                                          ("/no-such-file.html", 404)])
def test_every_answer_carries_the_security_headers(path, status):
    r = _guarded().get(path)
    assert r.status_code == status, path
    _check_headers(r, path)


def test_refusals_of_the_host_guard_carry_them_too():
    c = _guarded()
    r = c.post("/api/games", json={"opponents": ["greedy"]}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    _check_headers(r, "a cross-origin POST")
    r = c.get("/room.html", headers={"Host": "evil.example"})
    assert r.status_code == 400
    _check_headers(r, "a foreign Host")
    r = c.post("/api/rooms", json={"seats": "nonsense"})
    assert r.status_code == 400
    _check_headers(r, "a refused room")


def test_one_header_of_each_name():
    r = client().get("/room.html")
    names = [k.lower() for k, _ in r.headers.multi_items()]
    for name in ("content-security-policy", "referrer-policy", "x-frame-options"):
        assert names.count(name) == 1, name


@pytest.mark.parametrize("page", PAGES)
def test_pages_hold_no_inline_script_style_or_handler(page):
    html = (STATIC / page).read_text()
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, flags=re.S | re.I)
    assert scripts and all(re.search(r'\bsrc="/[\w.]+\.js"', attrs) and not body.strip()
                           for attrs, body in scripts), page
    assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=|javascript:", html, flags=re.I), page
    # Only the package's own files: no address of another site.
    assert not re.search(r'(src|href)="(https?:)?//', html), page
    assert 'name="viewport"' in html, page  # phones lay the page out at their own width


def test_scripts_never_write_inline_styles_or_evaluate_strings():
    for js in STATIC.glob("*.js"):
        found = re.search(r"\beval\(|new Function|innerHTML|\"style\"|\.style\.", js.read_text())
        assert not found, (js.name, found)


def test_suit_drawings_are_shipped_svg_with_nothing_from_outside():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["escoba_arena.web"]
    for f in STATIC.rglob("*"):
        if f.is_file():
            rel = f.relative_to(STATIC.parent).as_posix()
            assert any(fnmatch(rel, p) for p in patterns), f"{rel} is not in package-data"
    for suit in SUITS:
        svg = (STATIC / "suits" / f"{suit}.svg").read_text()
        assert svg.lstrip().startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
        without_ns = svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert not re.search(r"<script|href=|url\(|https?:", without_ns, flags=re.I), suit
    r = client().get("/suits/copas.svg")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")


def test_page_card_names_follow_the_engines_names():
    from escoba_env.rulebook.cards import RANK_NAMES, SUIT_NAMES

    js = (STATIC / "common.js").read_text()
    assert f"const SUITS = {list(SUIT_NAMES)!r};".replace("'", '"') in js
    assert f"const RANKS = {list(RANK_NAMES)!r};".replace("'", '"') in js
    assert "/suits/${SUITS[id & 3]}.svg" in js
    assert all((STATIC / "suits" / f"{s}.svg").is_file() for s in SUIT_NAMES)


def test_no_file_of_the_pages_is_missing():
    """Every script, style and image a page names is served."""
    c = client()
    for page in PAGES:
        for ref in re.findall(r'(?:src|href)="(/[\w./-]+\.(?:js|css|svg))"', (STATIC / page).read_text()):
            assert c.get(ref).status_code == 200, (page, ref)
    assert Path(STATIC / "suits").is_dir()
