"""Helpers of the web arena tests: a small evaluate.py run, the API client, hidden cards, card fields."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CARD_KEYS = {"hand", "table", "captured", "card", "options", "taken", "cards", "table_before"}
"""Every key under which an arena API response holds card ids."""


def client(roots=(), bot_timeout: float = 30.0, **kwargs):
    """Return a Starlette TestClient on a fresh arena app (skips without the [web] extra)."""
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    import warnings

    from starlette.testclient import TestClient

    from escoba_arena.web.app import create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TestClient(create_app(list(roots), bot_timeout=bot_timeout, **kwargs))


def run_evaluate(out: Path, *args: str) -> None:
    """Run ``evaluate.py`` with ``args``, writing ``out/res.json`` and the replays under ``out/replays``."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(ROOT / "evaluate.py"), *args, "--out", str(out / "res"),
                    "--save-replays", str(out / "replays"), "--workers", "1"],
                   check=True, capture_output=True, text=True, cwd=ROOT, timeout=120)


def hidden_cards(state, seat: int) -> set[int]:
    """Return the cards ``seat`` cannot see now in a ``OneGame``: the other hands and the stock."""
    from escoba_env.rulebook.cards import cards_of

    out = set()
    for q in range(state.rules.num_players):
        if q != seat:
            out |= set(cards_of(state.hand(q)))
    deck = state.deck()
    out |= set(deck[len(deck) - state.stock_left:])
    return out


def card_fields(obj) -> set[int]:
    """Return every card id that a response holds under a ``CARD_KEYS`` key (recursively)."""
    found: set[int] = set()

    def ids(v):
        if isinstance(v, bool):
            return
        if isinstance(v, int):
            found.add(v)
        elif isinstance(v, list):
            for x in v:
                ids(x)

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "categories":
                    continue  # points per side, keyed by category ("cards", ...)
                if k in CARD_KEYS:
                    ids(v)
                walk(v)
        elif isinstance(o, list):
            for x in o:
                walk(x)

    walk(obj)
    return found
