"""A room's table: its seats (``Seat``), its state (``Room``), and the limits every room shares.

Only the SHA-256 of a token is kept (``token_hash``): a token never appears in a log, a journal or
a replay.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from escoba_env.rules import Rules

from .room_game import RoomGame

TOKEN_BYTES = 32
"""Seat tokens are ``secrets.token_urlsafe(TOKEN_BYTES)``: 256 random bits."""
TAKEOVER_SECONDS = 60.0
"""A person with no connection for this long, while the game runs, is replaced by a bot."""
ROOM_IDLE_SECONDS = 3600.0
"""A room without any message or connection for this long expires."""
MAX_ROOMS = 1000
"""The most rooms a server holds; past it, expired and finished rooms go first, then a new room is refused."""
MAX_DEALS = 200
"""The longest list of deals a room may play."""
RATE = 10.0
"""Messages per second a token may send (a burst of ``BURST`` is allowed)."""
BURST = 20.0
DEFAULT_TAKEOVER = "greedy"
"""The bot that takes a seat whose person has left, unless the room names another."""
HUMAN = "human"
PSEUDONYM = re.compile(r"[A-Za-z0-9_-]{1,24}")
"""What a pseudonym may be: 1-24 letters, digits, underscores or hyphens."""


def token_hash(token: str) -> str:
    """Return the SHA-256 (hex) of a token: what the server keeps instead of the token."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()



@dataclass
class Seat:
    """One seat of a room: a person (``human``) or a bot ``spec``; people carry a pseudonym."""

    kind: str
    spec: str
    name: str
    token: str | None = None
    """The SHA-256 of the seat's token (people only)."""
    taken: bool = False
    connections: int = 0
    left_at: float | None = None
    replaced: str | None = None
    """The bot spec that took this person's seat, once they left."""
    bucket: float = -1.0
    """Tokens left in the rate bucket (-1: full, set on first use)."""
    bucket_at: float = 0.0

    @property
    def label(self) -> str:
        """The seat's name in records and reports: ``human:<pseudonym>`` or the bot spec."""
        return f"{HUMAN}:{self.name}" if self.kind == HUMAN else self.spec

    def public(self) -> dict:
        return {"kind": self.kind, "name": self.name, "spec": self.spec if self.kind != HUMAN else None,
                "taken": self.taken, "connected": self.connections > 0, "replaced": self.replaced}


@dataclass
class Room:
    """A table of people and bots that plays one game per deal (``deals``)."""

    rid: str
    rules: Rules
    seats: list[Seat]
    deals: list[tuple[int, int]]
    fixed_deals: bool
    record: bool
    takeover: str
    max_rounds: int | None
    watch_token: str
    created: float
    game_index: int = 0
    game: RoomGame | None = None
    results: list[dict] = field(default_factory=list)
    takeovers: list[dict] = field(default_factory=list)
    last_use: float = 0.0
    expired: str | None = None
    records: list[str] = field(default_factory=list)
    watch_bucket: dict = field(default_factory=dict)
    bots: dict = field(default_factory=dict)
    finished: list[dict] = field(default_factory=list)
    """The record of every finished game (every hand): shown to the spectator."""

    @property
    def humans(self) -> list[int]:
        return [s for s, seat in enumerate(self.seats) if seat.kind == HUMAN]

    @property
    def status(self) -> str:
        if self.expired:
            return "expired"
        if self.game is None:
            return "waiting"
        if self.game.done and self.game_index >= len(self.deals) - 1:
            return "over"
        return "playing"

    def info(self) -> dict:
        """Return what anyone in the room may know about it (no token, no seed before the end)."""
        return {"id": self.rid, "status": self.status, "seats": [s.public() for s in self.seats],
                "rules": self.rules.to_dict(), "record": self.record, "takeover": self.takeover,
                "game": self.game_index + 1, "games": len(self.deals), "fixed_deals": self.fixed_deals,
                "results": self.results, "takeovers": self.takeovers, "expired": self.expired,
                "max_rounds": self.max_rounds,
                "record_note": ("This room records its games for research: each finished game is kept as "
                                "a replay, with seats named by pseudonym." if self.record else
                                "This room does not record its games.")}


__all__ = ["BURST", "DEFAULT_TAKEOVER", "HUMAN", "MAX_DEALS", "MAX_ROOMS", "PSEUDONYM", "RATE",
           "ROOM_IDLE_SECONDS", "Room", "Seat", "TAKEOVER_SECONDS", "TOKEN_BYTES", "token_hash"]
