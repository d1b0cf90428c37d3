"""The rooms' journal: an append-only, fsynced log of everything that changes a room.

Each entry is one line, ``<crc32 of the JSON, 8 hex digits> <JSON>``, written and fsynced before
the change is shown to anyone: a room opened (its settings and the SHA-256 of its tokens, never a
token), a seat taken, a move, a takeover by a bot, an expiry. On start the server reads the journal
back (``Journal.read``) and replays it: rooms in progress go on where they were, and their links
still work. A line that is cut short (the server died while writing it) or whose checksum does not
match is reported with one line and skipped; the server never stops on it.

The journal holds the rooms' seeds (it is the server's memory): keep its folder private.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path


def encode(entry: dict) -> bytes:
    """Return the journal line of ``entry`` (checksum, space, compact JSON, newline)."""
    text = json.dumps(entry, separators=(",", ":"), sort_keys=True)
    return f"{zlib.crc32(text.encode()):08x} {text}\n".encode()


class Journal:
    """Append-only journal at ``path``; ``warn`` receives the one-line report of a bad entry."""

    def __init__(self, path: str | Path, warn: Callable[[str], None]):
        self.path = Path(path)
        self.warn = warn
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

    def read(self) -> Iterator[dict]:
        """Yield the journal's valid entries in order; each bad line is reported once and skipped."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                line = raw.rstrip(b"\n")
                if not line:
                    continue
                entry = self._decode(line)
                if entry is None:
                    self.warn(f"escoba-arena: rooms journal {self.path.name} line {n} is corrupt or cut "
                              "short; skipped")
                    continue
                yield entry

    @staticmethod
    def _decode(line: bytes) -> dict | None:
        crc, _, text = line.partition(b" ")
        try:
            if len(crc) != 8 or int(crc, 16) != zlib.crc32(text):
                return None
            entry = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            return None
        return entry if isinstance(entry, dict) and isinstance(entry.get("e"), str) else None

    def close(self) -> None:
        os.close(self.fd)
