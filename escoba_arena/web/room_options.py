"""How a server keeps its rooms (``RoomOptions``) and what a room's WebSocket message may be.

Every limit has a default here or in ``room_table``; the command line sets them (``cli``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.websockets import WebSocketDisconnect

from .guard import MAX_DEPTH, ApiError, json_depth
from .room_table import (
    BURST,
    CONNECTIONS_PER_LINK,
    HELLO_SECONDS,
    MAX_CONNECTIONS,
    MAX_MESSAGE_BYTES,
    MAX_ROOMS,
    PENDING_PER_CLIENT,
    RATE,
    ROOM_IDLE_SECONDS,
    ROOMS_PER_CLIENT,
    ROOMS_PER_MINUTE,
    TAKEOVER_SECONDS,
    UNJOINED_SECONDS,
    WAITING_PER_CLIENT,
)

STRIKES = 50
"""Refused messages in a row (rate limit) after which a connection is closed."""
CLIENT_SHARE = 10
"""One client holds at most 1/CLIENT_SHARE of the server's connections, unless the operator says."""


@dataclass
class RoomOptions:
    """How a server keeps rooms: ``directory`` (journal, records, deal key; None: memory only, no records)."""

    directory: str | Path | None = None
    takeover_seconds: float = TAKEOVER_SECONDS
    idle_seconds: float = ROOM_IDLE_SECONDS
    tick: float = 1.0
    """Seconds between two checks for people who left and idle rooms."""
    rate: float = RATE
    """Messages a second a token may send, in bursts of ``burst``."""
    burst: float = BURST
    unjoined_seconds: float = UNJOINED_SECONDS
    """A room nobody has joined this long after it was opened is closed."""
    max_rooms: int = MAX_ROOMS
    per_client: int = ROOMS_PER_CLIENT
    """Open rooms (waiting or playing) one client may hold."""
    waiting_per_client: int = WAITING_PER_CLIENT
    """Rooms waiting for their people one client may hold."""
    rooms_per_minute: float = ROOMS_PER_MINUTE
    """Rooms one client may open a minute (after a burst of ``room_table.ROOM_BURST``)."""
    per_link: int = CONNECTIONS_PER_LINK
    """WebSocket connections one link may hold at a time."""
    max_connections: int = MAX_CONNECTIONS
    """WebSocket connections the server holds at a time."""
    connections_per_client: int | None = None
    """WebSocket connections one client may hold (None: a tenth of ``max_connections``)."""
    pending_per_client: int = PENDING_PER_CLIENT
    """WebSocket connections one client may hold that have not said hello yet."""
    hello_seconds: float = HELLO_SECONDS
    """A connection that has not said hello within this time is closed."""
    trusted_proxies: list[str] = field(default_factory=list)
    """Addresses of reverse proxies whose ``X-Forwarded-For`` names the client (for the quotas)."""
    strikes: int = STRIKES
    """Refused messages in a row (rate limit) after which a connection is closed."""
    serve_records: bool = False
    """Let the data folders list and serve the records folder (each record once its deal is over)."""

    def client_connections(self) -> int:
        """Return the WebSocket connections one client may hold."""
        if self.connections_per_client is not None:
            return int(self.connections_per_client)
        return max(1, self.max_connections // CLIENT_SHARE)


class BinaryFrame(Exception):
    """A connection sent a binary frame."""


async def receive_text(ws: Any) -> str:
    """Return the next text message of ``ws``; WebSocketDisconnect when it goes, BinaryFrame for bytes."""
    message = await ws.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    text = message.get("text")
    if text is None:
        raise BinaryFrame
    return text


def parse_message(text: str) -> Any:
    """Return a page's message as JSON; ApiError 413 (too long) or 400 (not JSON, nested too deep)."""
    if len(text) > MAX_MESSAGE_BYTES:
        raise ApiError(413, f"a message is at most {MAX_MESSAGE_BYTES} bytes")
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError):
        raise ApiError(400, "a message must be JSON") from None
    if json_depth(msg, MAX_DEPTH) > 4:
        raise ApiError(400, "the message is nested too deep")
    return msg


def error_message(exc: ApiError) -> str:
    """Return the ``{"type": "error"}`` message of a refusal."""
    return json.dumps({"type": "error", "status": exc.status, "message": exc.message})


__all__ = ["STRIKES", "BinaryFrame", "RoomOptions", "error_message", "parse_message",
           "receive_text"]
