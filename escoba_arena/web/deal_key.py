"""The server's deal key: a room's seed names a deal only together with a secret that stays on the server.

A room plays deals ``(seed, game_id)``. The engine deals from an *engine seed*, and the room's
engine seed is the HMAC-SHA256 of the seed and the game id under the server's 256-bit secret
(``DealKey.engine_seed``). So:

- the same ``(seed, game_id)`` deals the same cards in every room of one server, and after a restart
  (duplicate studies, replays by the operator);
- without the secret, no seed, record or view tells a deal: a record names its own game's engine seed
  (which deals that game and no other), and a seed found by trying small ones names nothing.

The secret is made once, from ``secrets``, and kept in ``<rooms-dir>/deal.key`` (created with mode
0600, never rewritten); a server without a rooms folder draws a new one each time it starts. It is
never written anywhere else, never logged and never sent.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

KEY_BYTES = 32
"""The secret's size: 256 bits."""
KEY_FILE = "deal.key"
"""The secret's file in the rooms folder."""
_DOMAIN = b"escoba-room-deal/1"


class DealKeyError(ValueError):
    """The deal key file cannot be used (unreadable, or not a key this server wrote)."""


class DealKey:
    """A server's secret for its rooms' deals (``load`` reads or makes it; ``DealKey()`` draws one)."""

    def __init__(self, secret: bytes | None = None):
        self._secret = secrets.token_bytes(KEY_BYTES) if secret is None else bytes(secret)
        if len(self._secret) != KEY_BYTES:
            raise DealKeyError(f"a deal key is {KEY_BYTES} bytes")

    def __repr__(self) -> str:
        return "DealKey(<secret>)"

    @classmethod
    def load(cls, directory: str | Path) -> DealKey:
        """Return the key kept in ``directory`` (made once, mode 0600); DealKeyError if it cannot be used."""
        path = Path(directory) / KEY_FILE
        try:
            if not path.exists():
                _create(path)
            data = path.read_bytes()
        except OSError as exc:
            raise DealKeyError(f"cannot make or read the rooms' deal key {path}: {exc.strerror or exc}") \
                from None
        if len(data) != KEY_BYTES:
            raise DealKeyError(f"{path} is not a deal key ({len(data)} bytes, not {KEY_BYTES}); the rooms "
                               "of its journal cannot be dealt again without the key that made them")
        return cls(data)

    def engine_seed(self, seed: int, game_id: int) -> int:
        """Return the engine seed (64 bits) that deals the room deal ``(seed, game_id)`` on this server."""
        msg = _DOMAIN + b" " + str(int(seed)).encode() + b" " + str(int(game_id)).encode()
        return int.from_bytes(hmac.new(self._secret, msg, hashlib.sha256).digest()[:8], "big")

    def engine_deal(self, deal: tuple[int, int]) -> tuple[int, int]:
        """Return what the engine is given for the room deal ``(seed, game_id)``: (engine seed, game id)."""
        seed, game_id = deal
        return self.engine_seed(seed, game_id), int(game_id)


def _create(path: Path) -> None:
    """Write a new secret to ``path`` whole or not at all (mode 0600); a key already there is kept."""
    fd, tmp = tempfile.mkstemp(prefix=".deal-key-", dir=path.parent)  # mkstemp makes it 0600
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
        os.close(fd)
        fd = -1
        with contextlib.suppress(FileExistsError):  # another server made it first: theirs is the key
            os.link(tmp, path)
    finally:
        if fd >= 0:
            os.close(fd)
        os.unlink(tmp)


__all__ = ["KEY_BYTES", "KEY_FILE", "DealKey", "DealKeyError"]
