"""Rooms: several people, and bots, at one table, each in their own browser.

A host opens a room (``Rooms.open``): the rules, and each seat a person or an allow-listed bot
spec (the arena's ``AllowList``, as for games). The host gets one link per human seat, each with an
unguessable seat token (``secrets.token_urlsafe(32)``: 256 bits), and a spectator link. Only the
SHA-256 of a token is kept (in memory and in the journal): a token never appears in a log, a
journal or a replay, and the links are shown to the host once.

- Whoever presents a seat token takes that seat and sees only that seat's view
  (``RoomGame.view_for``); a spectator sees only public information while a game runs, and the
  whole record (every hand) once it is over.
- The game starts when every human seat has been taken; a move is accepted only from the token of
  the seat to act (``Room.check_move``), and at most ``RATE`` messages a second per token.
- A person with no connection for ``takeover_seconds`` (default 60) while the game runs is replaced
  by a bot (the room's ``takeover`` spec); the room, the log and the record say so.
- A room may play a fixed list of deals (``deals``: ``(seed, game_id)`` pairs, as an
  ``evaluate.py`` run deals them), one game per deal, for duplicate studies.
- A finished game of a room that opted in to recording is written atomically as one
  ``escoba-replay/1`` record (the format of ``evaluate.py --save-replays``), re-checked by the
  engine first; seats carry pseudonyms (``human:<name>``), never tokens.
- A room nobody has touched for ``idle_seconds`` expires: its pages say so, its tokens stop working.

Room state changes only on the server's event loop; bots think in worker threads (the routes in
``rooms_routes`` drive them). Everything that changes a room is first appended to the journal
(``journal.Journal``) when the server has one, so that rooms survive a restart.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.tournament.replay import check_replay
from escoba_env.rules import Rules

from .game import AgentFailure
from .guard import ApiError, check_list, short_repr
from .lobby import SEED_BITS, Arena
from .room_game import RoomGame
from .room_settings import parse_settings
from .room_table import (
    BURST,
    HUMAN,
    MAX_ROOMS,
    RATE,
    ROOM_IDLE_SECONDS,
    TAKEOVER_SECONDS,
    TOKEN_BYTES,
    Room,
    Seat,
    token_hash,
)


class Rooms:
    """Every room of a server: opening, seats, moves, takeovers, expiry, records and the journal."""

    def __init__(self, arena: Arena, directory: str | Path | None = None, *,
                 takeover_seconds: float = TAKEOVER_SECONDS, idle_seconds: float = ROOM_IDLE_SECONDS,
                 max_rooms: int = MAX_ROOMS, clock: Callable[[], float] = time.monotonic,
                 warn: Callable[[str], None] | None = None, rate: float = RATE, burst: float = BURST):
        from .journal import Journal

        self.arena = arena
        self.takeover_seconds, self.idle_seconds = float(takeover_seconds), float(idle_seconds)
        self.max_rooms, self.clock = int(max_rooms), clock
        self.rate, self.burst = float(rate), float(burst)
        self.rooms: dict[str, Room] = {}
        self.by_token: dict[str, tuple[str, int]] = {}
        self.dir = None if directory is None else Path(directory)
        self.records_dir = None if self.dir is None else self.dir / "records"
        self.warn = warn or (lambda line: print(line, file=__import__("sys").stderr, flush=True))
        self.journal = None
        if self.dir is not None:
            self.records_dir.mkdir(parents=True, exist_ok=True)
            self.journal = Journal(self.dir / "rooms.journal", warn=self.warn)

    # ------------------------------------------------------------------ opening

    def parse(self, body: Any) -> dict:
        """Return the validated settings of a new room (ApiError 400 on the first bad field)."""
        return parse_settings(self.arena, body, self.records_dir is not None)

    def open(self, body: Any) -> tuple[Room, dict[int, str], str]:
        """Open a room from a request body; return (room, seat -> token, spectator token).

        Builds the bots (slow for networks: call it off the event loop).
        """
        settings = self.parse(body)
        self._make_space()
        tokens = {s: secrets.token_urlsafe(TOKEN_BYTES) for s, x in enumerate(settings["seats"])
                  if x["kind"] == HUMAN}
        watch = secrets.token_urlsafe(TOKEN_BYTES)
        rid = secrets.token_urlsafe(9)
        hashes = {s: token_hash(t) for s, t in tokens.items()}
        entry = {"e": "open", "room": rid, "settings": settings,
                 "tokens": {str(s): h for s, h in hashes.items()}, "watch": token_hash(watch)}
        room = self.create(entry)
        if self.journal is not None:
            self.journal.append(entry)
        return room, tokens, watch

    def _make_space(self) -> None:
        if len(self.rooms) < self.max_rooms:
            return
        for rid in [r for r, room in self.rooms.items() if room.expired or room.status == "over"]:
            self.forget(rid)
            if len(self.rooms) < self.max_rooms:
                return
        raise ApiError(503, f"the server holds {self.max_rooms} rooms in play; try again later")

    def forget(self, rid: str) -> None:
        room = self.rooms.pop(rid, None)
        if room is None:
            return
        for s in room.seats:
            if s.token:
                self.by_token.pop(s.token, None)
        self.by_token.pop(room.watch_token, None)

    def create(self, entry: dict) -> Room:
        """Make the room of an ``open`` entry (a new room, or one read back from the journal)."""
        st = entry["settings"]
        rules = Rules.from_dict(st["rules"])
        seats = [Seat(x["kind"], x["spec"], x["name"], entry["tokens"].get(str(k)))
                 for k, x in enumerate(st["seats"])]
        room = Room(entry["room"], rules, seats, [tuple(d) for d in st["deals"]], st["fixed_deals"],
                    st["record"], st["takeover"], st["max_rounds"], entry["watch"], self.clock())
        room.last_use = self.clock()
        for k, s in enumerate(seats):
            if s.kind != HUMAN:
                room.bots[k] = self._build(s.spec, rules, room.deals[0][0], k)
        self.rooms[room.rid] = room
        for k, s in enumerate(seats):
            if s.token:
                self.by_token[s.token] = (room.rid, k)
        self.by_token[room.watch_token] = (room.rid, -1)
        return room

    def _build(self, spec: str, rules: Rules, seed: int, seat: int) -> Any:
        try:
            return self.arena.allow.build(spec, rules, (seed + seat) % 2**SEED_BITS)
        except Exception as exc:  # any agent's constructor: a clear 400, never a server error
            raise ApiError(400, f"cannot build bot {spec!r}: {self.arena.scrub(' '.join(str(exc).split()))}"
                           ) from None

    def load(self) -> int:
        """Replay the journal: rooms in progress go on where they were; return the rooms read back.

        A bad line, or an entry that no longer applies, is reported with one line and skipped.
        """
        if self.journal is None:
            return 0
        journal, self.journal = self.journal, None  # nothing read back is journaled again
        try:
            for entry in journal.read():
                try:
                    self._replay(entry)
                except Exception as exc:  # a bad entry never stops the server
                    what = f"{entry.get('e')} of room {str(entry.get('room'))[:16]}"
                    self.warn(f"escoba-arena: rooms journal entry ({what}) does not apply "
                              f"({type(exc).__name__}: {' '.join(str(exc).split())[:120]}); skipped")
        finally:
            self.journal = journal
        now = self.clock()
        for room in self.rooms.values():
            room.last_use = now
            for s in room.seats:
                if s.kind == HUMAN and s.taken:
                    s.left_at = now  # after a restart everyone gets the whole delay to come back
        return len(self.rooms)

    def _replay(self, entry: dict) -> None:
        kind = entry["e"]
        if kind == "open":
            if entry["room"] in self.rooms:
                raise ValueError("opened twice")
            self.create(entry)
            return
        room = self.rooms[entry["room"]]
        if kind == "join":
            room.seats[entry["seat"]].taken = True
            self.maybe_start(room)
        elif kind == "move":
            if room.game is None or entry["game"] != room.game_index:
                raise ValueError("a move of a game that is not being played")
            self.play(room, entry["seat"], entry["card"], entry["capture"], bot=True)
            self.after_move(room)
        elif kind == "takeover":
            self.take_over(room, entry["seat"])
        elif kind == "expire":
            self.expire(room)
        else:
            raise ValueError(f"unknown entry {kind[:20]!r}")

    # ------------------------------------------------------------------ who is who

    def lookup(self, token: Any) -> tuple[Room, int]:
        """Return (room, seat) of a token (seat -1: the spectator); ApiError 403/410 otherwise."""
        if not isinstance(token, str) or not 20 <= len(token) <= 100:
            raise ApiError(403, "not a room token")
        hit = self.by_token.get(token_hash(token))
        if hit is None:
            raise ApiError(403, "this token does not open any room here")
        room = self.rooms[hit[0]]
        if room.expired:
            raise ApiError(410, f"this room is closed: {room.expired}")
        room.last_use = self.clock()
        return room, hit[1]

    def allow_message(self, room: Room, seat: int) -> bool:
        """Take one message from the seat's token bucket (``RATE``/s, bursts of ``BURST``)."""
        now = self.clock()
        if seat >= 0:
            s = room.seats[seat]
            if s.bucket < 0:
                s.bucket, s.bucket_at = self.burst, now
            s.bucket = min(self.burst, s.bucket + (now - s.bucket_at) * self.rate)
            s.bucket_at = now
            if s.bucket < 1.0:
                return False
            s.bucket -= 1.0
            return True
        b = room.watch_bucket
        level = min(self.burst, b.get("level", self.burst) + (now - b.get("at", now)) * self.rate)
        b["at"] = now
        if level < 1.0:
            b["level"] = level
            return False
        b["level"] = level - 1.0
        return True

    def join(self, room: Room, seat: int) -> bool:
        """Mark a connection to ``seat``; return True if that started the game."""
        if seat < 0:
            return False
        s = room.seats[seat]
        s.connections += 1
        s.left_at = None
        first = not s.taken
        if first:
            s.taken = True
            if self.journal is not None:
                self.journal.append({"e": "join", "room": room.rid, "seat": seat})
        return self.maybe_start(room)

    def leave(self, room: Room, seat: int) -> None:
        if seat < 0:
            return
        s = room.seats[seat]
        s.connections = max(0, s.connections - 1)
        if s.connections == 0:
            s.left_at = self.clock()

    def maybe_start(self, room: Room) -> bool:
        if room.game is not None or room.expired or not all(room.seats[h].taken for h in room.humans):
            return False
        self._start_game(room)
        return True

    def _start_game(self, room: Room) -> None:
        seed, gid = room.deals[room.game_index]
        humans = {k for k, s in enumerate(room.seats) if s.kind == HUMAN and s.replaced is None}
        bots = room.bots
        specs = {k: (s.replaced or s.spec) for k, s in enumerate(room.seats) if k not in humans}
        names = [self.display(s) for s in room.seats]
        room.game = RoomGame(room.rules, bots, specs, humans, seed, gid, names, max_rounds=room.max_rounds,
                             bot_timeout=self.arena.bot_timeout)
        now = self.clock()
        for s in room.seats:
            if s.kind == HUMAN and s.connections == 0 and s.left_at is None:
                s.left_at = now

    @staticmethod
    def display(s: Seat) -> str:
        if s.kind == HUMAN:
            return s.name + (f" (now {s.replaced})" if s.replaced else "")
        return s.spec

    # ------------------------------------------------------------------ moves

    def check_move(self, room: Room, seat: int, msg: Any) -> tuple[int, list[int]]:
        """Return (card, capture) of a move message from ``seat``; ApiError if it may not move now."""
        if seat < 0:
            raise ApiError(403, "a spectator cannot move")
        if not isinstance(msg, dict) or set(msg) - {"type", "card", "capture", "seat"}:
            raise ApiError(400, "a move is {\"type\": \"move\", \"card\": id, \"capture\": [table card ids]}")
        if "seat" in msg and msg["seat"] != seat:
            raise ApiError(403, "this token acts only for its own seat")
        card, capture = msg.get("card"), msg.get("capture", [])
        if isinstance(card, bool) or not isinstance(card, int):
            raise ApiError(400, f"card must be a card id (an integer), got {short_repr(card)}")
        check_list(capture, "capture", 40)
        if not all(isinstance(c, int) and not isinstance(c, bool) for c in capture):
            raise ApiError(400, "capture must be a list of card ids (integers)")
        game = room.game
        if game is None:
            raise ApiError(409, "the game has not started: it starts once every person has joined")
        if game.done:
            raise ApiError(409, "the game is over")
        if room.seats[seat].replaced:
            raise ApiError(409, f"a bot ({room.seats[seat].replaced}) took this seat when you were away")
        if game.state.to_act != seat:
            raise ApiError(409, "it is not your turn")
        return card, capture

    def play(self, room: Room, seat: int, card: int, capture: list[int], bot: bool = False) -> None:
        """Play one move (journaled first); ValueError if it is not legal (nothing changes)."""
        room.game.apply(seat, card, capture)  # checks legality; only then is it journaled
        if self.journal is not None:
            self.journal.append({"e": "move", "room": room.rid, "game": room.game_index, "seat": seat,
                                 "card": card, "capture": sorted(capture)})
        room.last_use = self.clock()

    def after_move(self, room: Room) -> bool:
        """Finish a game that just ended (record, next deal); return True if a new game started."""
        game = room.game
        if game is None or not game.done:
            return False
        if len(room.results) <= room.game_index:
            room.results.append({"game": room.game_index + 1, "scores": game.state.scores(),
                                 "winner": game.state.winner if not game.error else -1,
                                 "error": game.error})
            if not game.error:
                room.finished.append(self.game_record(room))
                if room.record:
                    self.write_record(room, again=self.journal is not None)
        if room.game_index + 1 < len(room.deals):
            room.game_index += 1
            room.game = None
            self._start_game(room)
            return True
        return False

    def take_over(self, room: Room, seat: int) -> None:
        """Give ``seat`` (a person who left) to the room's takeover bot; the log and record say so."""
        s = room.seats[seat]
        game = room.game
        bot = self._build(room.takeover, room.rules, room.deals[room.game_index][0], seat)
        s.replaced = room.takeover
        room.bots[seat] = bot
        entry = {"seat": seat, "name": s.name, "spec": room.takeover, "game": room.game_index + 1,
                 "round": len(game.rounds), "move": game.moves_played}
        room.takeovers.append(entry)
        game.humans.discard(seat)
        game.bots[seat], game.specs[seat] = bot, room.takeover
        game.names[seat] = self.display(s)
        game.log.append({"type": "takeover", "seat": seat, "spec": room.takeover,
                         "message": f"{s.name} left; {room.takeover} plays this seat from now on"})
        if self.journal is not None:
            self.journal.append({"e": "takeover", "room": room.rid, "seat": seat})

    def gone_seats(self, room: Room) -> list[int]:
        """Return the human seats of a running game whose person has been away past the limit."""
        game = room.game
        if game is None or game.done or room.expired:
            return []
        now = self.clock()
        return [k for k, s in enumerate(room.seats)
                if s.kind == HUMAN and not s.replaced and s.connections == 0 and s.left_at is not None
                and now - s.left_at > self.takeover_seconds]

    def idle_rooms(self) -> list[Room]:
        now = self.clock()
        return [r for r in self.rooms.values() if not r.expired and now - r.last_use > self.idle_seconds]

    def expire(self, room: Room) -> None:
        room.expired = f"it expired after {self.idle_seconds / 60:g} minutes without activity"
        if self.journal is not None:
            self.journal.append({"e": "expire", "room": room.rid})

    # ------------------------------------------------------------------ views and records

    def message(self, room: Room, seat: int) -> dict:
        """Return the state message for ``seat`` (-1: spectator)."""
        out: dict[str, Any] = {"type": "state", "room": room.info(), "seat": seat}
        game = room.game
        out["view"] = None if game is None else game.view_for(seat)
        if seat < 0 and room.results:
            # The spectator sees every hand of the games that are over.
            out["finished"] = room.finished
        return out

    def labels(self, room: Room) -> list[str]:
        return [s.label for s in room.seats]

    def game_record(self, room: Room) -> dict:
        game = room.game
        meta = {"room": {"id": room.rid, "game": room.game_index + 1, "games": len(room.deals),
                         "fixed_deals": room.fixed_deals,
                         "humans": [k for k, s in enumerate(room.seats) if s.kind == HUMAN],
                         "takeovers": [t for t in room.takeovers if t["game"] == room.game_index + 1]}}
        return game.record(self.labels(room), meta)

    def write_record(self, room: Room, again: bool = True) -> Path:
        """Write the finished game of ``room`` as one replay line, atomically; return the path.

        ``again=False`` (reading the journal back) keeps a record already written.
        """
        rec = room.finished[-1]
        path = self.records_dir / f"room-{room.rid}-g{room.game_index + 1:03d}.jsonl"
        if not again and path.exists():
            room.records.append(path.name)
            return path
        check_replay(rec, f"room {room.rid} game {room.game_index + 1}")
        write_atomic(path, json.dumps(rec, separators=(",", ":")) + "\n")
        room.records.append(path.name)
        return path


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


__all__ = ["AgentFailure", "Room", "RoomGame", "Rooms", "Seat", "token_hash", "write_atomic"]
