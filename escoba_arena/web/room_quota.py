"""Fair shares of a server's rooms: per-client caps, a creation rate, and who makes way at the cap.

A client is counted by its address's key (``room_conns.client_key``: IPv6 by /64). One client may
hold ``per_client`` open rooms, ``waiting_per_client`` of them waiting for their people, and open
``per_minute`` rooms a minute, in bursts of ``ROOM_BURST`` (or ten seconds' worth if that is more).
When the server holds ``max_rooms``:

1. rooms that are over or closed make way first, the least recently used first;
2. then one room that nobody has joined yet, of the client holding the most such rooms, if that is
   more than the newcomer's own plus one: at the cap, whoever holds the most unjoined rooms yields
   to whoever holds fewer, so many addresses filling the server with empty rooms cannot lock out
   the next host; its links then say why it was closed;
3. otherwise the new room is refused (503).

Rooms in which someone has joined are never closed to make way. The ``rooms`` every method takes is
the server's ``rooms.Rooms`` (not imported here: it imports this module).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .guard import ApiError
from .room_table import ROOM_BURST, ROOMS_PER_MINUTE, Room

MAX_BUCKETS = 10_000
"""Clients whose creation rate is remembered (the fullest are forgotten first: they are back to a burst)."""
MADE_WAY = ("the server was full and nobody had joined this room: it was closed to make way for "
            "another host's room")


def unjoined(room: Room) -> bool:
    """True if ``room`` is open and nobody has joined any of its seats yet."""
    return room.live and room.game is None and not any(s.taken for s in room.seats)


class RoomQuota:
    """The per-client quotas of a server's rooms (see the module docstring)."""

    def __init__(self, per_client: int, waiting_per_client: int, per_minute: float = ROOMS_PER_MINUTE,
                 burst: float = ROOM_BURST, clock: Callable[[], float] | None = None):
        self.per_client, self.waiting_per_client = int(per_client), int(waiting_per_client)
        self.rate, self.burst = float(per_minute) / 60.0, max(float(burst), float(per_minute) / 6.0)
        self.clock = clock or time.monotonic
        self.buckets: dict[str, tuple[float, float]] = {}

    def check(self, rooms: Any, key: str) -> None:
        """Raise ApiError 429 if client ``key`` may not open one more room now (else count it)."""
        mine = [r for r in rooms.rooms.values() if r.client == key and r.live]
        if len(mine) >= self.per_client:
            raise ApiError(429, f"this address has {len(mine)} rooms open, the most one client may have; "
                                "try again once one is over")
        waiting = sum(r.game is None for r in mine)
        if waiting >= self.waiting_per_client:
            raise ApiError(429, f"this address has {waiting} rooms waiting for their people, the most one "
                                "client may have; try again once people have joined them")
        now = self.clock()
        level, at = self.buckets.get(key, (self.burst, now))
        level = min(self.burst, level + (now - at) * self.rate)
        if level < 1.0:
            raise ApiError(429, f"this address opened rooms faster than {self.rate * 60:g} a minute; "
                                f"try again in {(1.0 - level) / self.rate:.0f} s")
        self.buckets[key] = (level - 1.0, now)
        if len(self.buckets) > MAX_BUCKETS:
            full = sorted(self.buckets,
                          key=lambda k: self.buckets[k][0] + (now - self.buckets[k][1]) * self.rate)
            for k in full[-len(self.buckets) // 2:]:
                del self.buckets[k]

    def make_space(self, rooms: Any, key: str | None = None) -> None:
        """Make room for one more room of client ``key`` (None: reading the journal back); ApiError 503."""
        if len(rooms.rooms) < rooms.max_rooms:
            return
        done = sorted((r for r in rooms.rooms.values() if not r.live), key=lambda r: r.last_use)
        for room in done:
            rooms.forget(room.rid)
            if len(rooms.rooms) < rooms.max_rooms:
                return
        if key is not None and self._make_way(rooms, key):
            return
        raise ApiError(503, f"the server holds {rooms.max_rooms} rooms in play; try again later")

    @staticmethod
    def _make_way(rooms: Any, key: str) -> bool:
        """Close the oldest unjoined room of the client holding the most, if it holds more than ``key``
        plus one; return True if a room made way."""
        held: dict[str, list[Room]] = {}
        for room in rooms.rooms.values():
            if unjoined(room):
                held.setdefault(room.client, []).append(room)
        if not held:
            return False
        top = max(held, key=lambda k: (len(held[k]), -min(r.created for r in held[k])))
        if len(held[top]) <= len(held.get(key, [])) + 1:
            return False
        oldest = min(held[top], key=lambda r: r.created)
        rooms.close(oldest, MADE_WAY)
        rooms.forget(oldest.rid, MADE_WAY)
        return True


__all__ = ["ROOM_BURST", "MADE_WAY", "ROOMS_PER_MINUTE", "RoomQuota", "unjoined"]
