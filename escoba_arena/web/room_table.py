"""A room's table: its seats (``Seat``), its state (``Room``), and the limits every room shares.

Only the SHA-256 of a token is kept (``token_hash``): a token never appears in a log, a journal or
a replay.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads the limits below without loading the engine
    from escoba_env.rulebook.rules import Rules

    from .room_game import RoomGame

TOKEN_BYTES = 32
"""Seat tokens are ``secrets.token_urlsafe(TOKEN_BYTES)``: 256 random bits."""
TAKEOVER_SECONDS = 60.0
"""A person with no connection for this long, while the game runs, is replaced by a bot."""
ROOM_IDLE_SECONDS = 3600.0
"""A room without any message or connection for this long expires."""
UNJOINED_SECONDS = 600.0
"""A room that nobody has joined this long after it was opened expires."""
ROOMS_PER_CLIENT = 50
"""The most rooms one client (one address) may have open at a time, waiting or playing."""
WAITING_PER_CLIENT = 10
"""The most rooms one client may have waiting for their people at a time."""
CONNECTIONS_PER_LINK = 4
"""The most WebSocket connections one link (a seat's or the spectator's token) may hold at a time."""
MAX_CONNECTIONS = 2000
"""The most WebSocket connections the server holds at a time, said hello or not."""
MAX_MESSAGE_BYTES = 4096
"""The largest WebSocket message a page may send (a larger frame is refused before it is read)."""
MAX_ROOMS = 1000
"""The most rooms a server holds; past it, expired and finished rooms go first, then a new room is refused."""
MAX_DEALS = 200
"""The longest list of deals a room may play."""
HELLO_SECONDS = 5.0
"""A WebSocket that has not said hello within this time is closed."""
PENDING_PER_CLIENT = 16
"""Sockets one client may hold that have not said hello yet."""
ROOMS_PER_MINUTE = 30.0
"""Rooms one client may open a minute, once its burst (``ROOM_BURST``) is spent."""
ROOM_BURST = 10.0
"""Rooms one client may open at once."""
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
        """Return what anyone in the room may know about this seat."""
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
    """The record of every finished game (every hand): shown to the spectator once the room is over."""
    client: str = ""
    """Who opened the room: a short hash of the client's address (for the per-client quotas)."""
    watchers: int = 0
    """Open spectator connections."""
    rules_dict: dict = field(default_factory=dict, repr=False)
    """The rules as a dict (made once: every message carries them)."""
    engine_deals: list[tuple[int, int]] = field(default_factory=list, repr=False)
    """What the engine deals for each of ``deals``: (engine seed, game id), keyed by the server's secret."""

    def __post_init__(self) -> None:
        self.rules_dict = self.rules.to_dict()

    @property
    def humans(self) -> list[int]:
        """The seats played by people."""
        return [s for s, seat in enumerate(self.seats) if seat.kind == HUMAN]

    @property
    def status(self) -> str:
        """``waiting`` (for its people), ``playing``, ``over`` or ``expired`` (closed)."""
        if self.expired:
            return "expired"
        if self.game is None:
            return "waiting"
        if self.game.done and self.game_index >= len(self.deals) - 1:
            return "over"
        return "playing"

    @property
    def live(self) -> bool:
        """True while the room is waiting or playing (not over, not closed)."""
        return self.status in ("waiting", "playing")

    def deals_ahead(self) -> list[tuple[int, int]]:
        """Return the engine deals this room may still deal: the game in play (or waiting) and the next."""
        if not self.live:
            return []
        return self.engine_deals[self.game_index:]

    def info(self) -> dict:
        """Return what anyone in the room may know about it (no token, no seed before the end)."""
        return {"id": self.rid, "status": self.status, "seats": [s.public() for s in self.seats],
                "rules": self.rules_dict, "record": self.record, "takeover": self.takeover,
                "game": self.game_index + 1, "games": len(self.deals), "fixed_deals": self.fixed_deals,
                "results": self.results, "takeovers": self.takeovers, "expired": self.expired,
                "max_rounds": self.max_rounds,
                "record_note": ("This room records its games for research: each finished game is kept as "
                                "a replay, with seats named by pseudonym." if self.record else
                                "This room does not record its games.")}


__all__ = ["BURST", "CONNECTIONS_PER_LINK", "DEFAULT_TAKEOVER", "HELLO_SECONDS", "HUMAN", "MAX_CONNECTIONS",
           "MAX_DEALS", "MAX_MESSAGE_BYTES", "MAX_ROOMS", "PENDING_PER_CLIENT", "PSEUDONYM", "RATE",
           "ROOMS_PER_CLIENT", "ROOMS_PER_MINUTE", "ROOM_BURST", "ROOM_IDLE_SECONDS", "Room", "Seat",
           "TAKEOVER_SECONDS", "TOKEN_BYTES", "UNJOINED_SECONDS", "WAITING_PER_CLIENT", "token_hash"]
