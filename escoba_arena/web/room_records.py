"""A room's records: the replay of each finished game, and who may read one, and when.

A finished game of a recording room is written atomically as one ``escoba-replay/1`` record (the
format of ``evaluate.py --save-replays``), re-checked by the engine first. A record holds every hand
and the deal's seed, so it must never reach anyone who is still to play that deal:

- a record is withheld while its own room is open (a room of several deals deals the next game
  from the same seed), and while any open room can still deal the same ``(seed, game_id)`` (the
  duplicate design opens one room per seat rotation on the same deals);
- the arena's data folders never list or serve the records folder unless the operator says so
  (``--serve-records``), and then only the records that ``withheld`` lets through.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .room_table import HUMAN, Room

MAX_RECORD_BYTES = 64 << 20
"""The longest record line read to learn its room and deal (the arena's largest file)."""


def game_record(room: Room, labels: list[str]) -> dict:
    """Return the record of the game ``room`` has just finished (every hand: keep it from players)."""
    meta = {"room": {"id": room.rid, "game": room.game_index + 1, "games": len(room.deals),
                     "fixed_deals": room.fixed_deals,
                     "humans": [k for k, s in enumerate(room.seats) if s.kind == HUMAN],
                     "takeovers": [t for t in room.takeovers if t["game"] == room.game_index + 1]}}
    return room.game.record(labels, meta)


def record_path(directory: Path, room: Room) -> Path:
    """Return the file of the game ``room`` has just finished."""
    return directory / f"room-{room.rid}-g{room.game_index + 1:03d}.jsonl"


def withheld(record: dict, rooms: Iterable[Room]) -> str | None:
    """Return why ``record`` may not be shown now (its deal may still be dealt to someone), or None."""
    meta = record.get("room")
    rid = meta.get("id") if isinstance(meta, dict) else None
    deal = (record.get("seed"), record.get("game_id"))
    for room in rooms:
        if room.rid == rid and room.live:
            return "its room is still open: its records are shown once the room is over"
        if deal in room.deals_ahead():
            return "a room still open can deal the same cards: it is shown once that room is over"
    return None


def record_head(path: Path) -> dict | None:
    """Return the room and deal of a record file (``seed``, ``game_id``, ``room``), or None if unreadable."""
    try:
        with open(path, "rb") as fh:
            rec = json.loads(fh.readline(MAX_RECORD_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict):
        return None
    meta = rec.get("room")
    return {"seed": rec.get("seed"), "game_id": rec.get("game_id"),
            "room": {"id": meta.get("id")} if isinstance(meta, dict) else None}


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, fsynced, then renamed."""
    fd, tmp = tempfile.mkstemp(prefix="." + path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


__all__ = ["game_record", "record_head", "record_path", "withheld", "write_atomic"]
