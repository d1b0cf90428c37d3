"""The rooms' journal: an append-only, fsynced log of everything that changes a room.

Each entry is one line, ``<crc32 of the JSON, 8 hex digits> <JSON>``, written and fsynced before
the change is shown to anyone: a room opened (its settings and the SHA-256 of its tokens, never a
token), a seat taken, a move, a takeover by a bot, an expiry. On start the server reads the journal
back (``Journal.lines``) and replays it: rooms in progress go on where they were, and their links
still work. A line that is cut short (the server died while writing it) or whose checksum does not
match is never applied, even if its JSON still parses; the rooms' loader reports one line per damaged
room and the server never stops on it.

The journal holds the rooms' seeds (it is the server's memory): keep its folder private.
"""

from __future__ import annotations

import json
import os
import re
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

ROOM_CLUE = re.compile(rb'"room":"([A-Za-z0-9_-]{1,40})"')
"""Where a damaged line probably names its room (a clue to whom the damage belongs, never trusted)."""
HASH_CLUE = re.compile(rb"[0-9a-f]{64}")
"""The token hashes a damaged line may hold: their links then say the room was lost."""


class Line(NamedTuple):
    """One journal line: its number, its entry (None if damaged), its room, the hashes of a damaged line."""

    number: int
    entry: dict | None
    room: str | None
    hashes: tuple[str, ...]


def encode(entry: dict) -> bytes:
    """Return the journal line of ``entry`` (checksum, space, compact JSON, newline)."""
    text = json.dumps(entry, separators=(",", ":"), sort_keys=True)
    return f"{zlib.crc32(text.encode()):08x} {text}\n".encode()


class Journal:
    """Append-only journal at ``path``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._terminate_last_line()
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _terminate_last_line(self) -> None:
        """End a line cut short by a crash, so that the next entry starts on a line of its own."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())

    def append(self, entry: dict) -> None:
        """Append one entry and fsync it before returning."""
        data = encode(entry)
        with self.lock:
            os.write(self.fd, data)
            os.fsync(self.fd)

    def lines(self) -> Iterator[Line]:
        """Yield every line of the journal in order: its entry, or None (with clues) if it is damaged.

        A damaged line is one whose checksum does not match its text (a flipped byte, a line cut
        short): its JSON is never trusted, even when it still parses.
        """
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                line = raw.rstrip(b"\n")
                if not line:
                    continue
                entry = decode(line)
                if entry is not None:
                    room = entry.get("room")
                    yield Line(n, entry, room if isinstance(room, str) else None, ())
                else:
                    clue = ROOM_CLUE.search(line)
                    yield Line(n, None, clue.group(1).decode() if clue else None,
                               tuple(h.decode() for h in HASH_CLUE.findall(line)))

    def close(self) -> None:
        """Close the journal's file."""
        os.close(self.fd)


def decode(line: bytes) -> dict | None:
    """Return the entry of one journal line (no newline), or None if its checksum or JSON is bad."""
    crc, _, text = line.partition(b" ")
    try:
        if len(crc) != 8 or int(crc, 16) != zlib.crc32(text):
            return None
        entry = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("e"), str) else None
