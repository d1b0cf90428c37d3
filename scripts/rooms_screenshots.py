"""Take the screenshots of docs/rooms.md: ``python scripts/rooms_screenshots.py``.

Starts ``escoba-arena --rooms-dir`` in a temporary folder and drives headless Chromium (Playwright,
the system ``chromium``): the host's rooms page with the links of a room of two people and a bot,
then one person's page a few moves into the game on a desktop window, and the other person's on a
phone 390 px wide. Writes ``docs/figures/rooms_{host,seat,phone}.png``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ready(pages) -> bool:
    """Return True a few moves in, with the phone's person to act and cards in hand (the figures)."""
    return (pages[0].locator("#log div").count() >= 8 and pages[1].get_attribute("body", "data-turn") == "1"
            and pages[1].locator("#hand .card").count() >= 2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "figures"), help="folder of the PNG files")
    p.add_argument("--chromium", default=shutil.which("chromium"), help="the Chromium executable")
    args = p.parse_args()
    if not args.chromium:
        print("rooms_screenshots: error: no chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "escoba_arena.web", "--port", "0", "--rooms-dir", tmp]
        server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            server.stdout.readline()
            url = server.stdout.readline().split()[2].rstrip("/")
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                host = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
                host.goto(url + "/rooms.html")
                host.wait_for_selector("body[data-ready='1']")
                host.select_option("select[name=num_players]", "3")
                host.fill("input[name=seat0]", "human:ana")
                host.fill("input[name=seat1]", "human:bea")
                host.fill("input[name=seat2]", "expert")
                host.check("input[name=record]")
                host.click("#open-room")
                host.wait_for_selector("#opened:not(.hidden)")
                host.screenshot(path=str(out / "rooms_host.png"))
                links = host.locator("tr.seat-link a").evaluate_all("els => els.map(e => e.href)")
                pages = []
                desktop = {"viewport": {"width": 1280, "height": 1000}}
                # One image pixel per CSS pixel: the figure shows the page at the phone's 390 px.
                phone = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
                for k, link in enumerate(links):
                    pg = browser.new_context(**(phone if k == 1 else desktop)).new_page()
                    pg.goto(link)
                    pages.append(pg)
                for pg in pages:
                    pg.wait_for_selector("body[data-status='playing']")
                for _ in range(200):
                    if ready(pages):
                        break
                    for pg in pages:
                        playable = pg.locator("#hand .card.playable")
                        if ready(pages):
                            break
                        if pg.get_attribute("body", "data-turn") == "1" and playable.count():
                            playable.first.click()
                            if pg.is_visible("#options"):
                                pg.locator("#options button.option").first.click()
                    pages[0].wait_for_timeout(150)
                pages[0].wait_for_timeout(500)
                pages[0].screenshot(path=str(out / "rooms_seat.png"))
                pages[1].evaluate("document.getElementById('room-status').scrollIntoView()")
                pages[1].screenshot(path=str(out / "rooms_phone.png"))
                browser.close()
        finally:
            server.terminate()
            server.wait(10)
    print(f"wrote {out / 'rooms_host.png'}, {out / 'rooms_seat.png'}, {out / 'rooms_phone.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
