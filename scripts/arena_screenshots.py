"""Take the README's screenshots of the web arena: ``python scripts/arena_screenshots.py``.

Runs a small tournament with saved replays in a temporary directory, starts ``escoba-arena`` on it,
and drives headless Chromium (Playwright, the system ``chromium``) through the three pages: a game
against the shipped neural agent after its first round, a replay at its first capture, and the
results page. Writes ``docs/figures/arena_{play,replay,results}.png`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    """Take the three screenshots; return the exit status."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "figures"), help="folder of the PNG files")
    p.add_argument("--chromium", default=shutil.which("chromium"), help="the Chromium executable")
    p.add_argument("--seed", type=int, default=21, help="seed of the game shown")
    args = p.parse_args()
    if not args.chromium:
        print("arena_screenshots: error: no chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "--agents", "random", "greedy", "expert",
                        "--rounds", "40", "--out", str(data / "tournament"), "--save-replays",
                        str(data / "replays"), "--workers", "1"], check=True, capture_output=True, cwd=ROOT)
        server = subprocess.Popen([sys.executable, "-m", "escoba_arena.web", "--port", "0", "--data", tmp],
                                  stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            url = server.stdout.readline().split()[2]
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']")
                page.fill("input[name=seed]", str(args.seed))
                page.click("#new-game")
                page.wait_for_selector("#game:not(.hidden)")
                # Play the first card each turn until the first round is over, then a few more moves.
                extra = 0
                while extra < 3:
                    page.wait_for_selector("body:not([data-busy='1'])", state="attached")
                    if page.is_visible("#round-table"):
                        extra += 1
                    page.locator("#hand .card.playable").first.click()
                    if page.is_visible("#options"):
                        page.locator("#options button.option").first.click()
                page.wait_for_selector("body:not([data-busy='1'])", state="attached")
                page.screenshot(path=str(out / "arena_play.png"), full_page=True)
                page.goto(f"{url}replay.html?file=0/replays/01_random_vs_expert.jsonl&game=0")
                page.wait_for_selector("body[data-frame='0']")
                while not page.locator("#table-before .card.hl").count():
                    page.click("#next")
                page.screenshot(path=str(out / "arena_replay.png"), full_page=True)
                page.goto(f"{url}results.html?file=0/tournament.json")
                page.wait_for_selector("#pairs tr.pair")
                page.screenshot(path=str(out / "arena_results.png"), full_page=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"wrote {out / 'arena_play.png'}, arena_replay.png, arena_results.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
