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
- A room may play a fixed list of deals (``deals``: ``(seed, game_id)`` pairs), one game per deal,
  for duplicate studies. A deal reaches the engine keyed by the server's secret (``deal_key``):
  the same pair deals the same cards in every room of this server, and no one without the secret
  can tell the cards from a seed, a record or a view. A record names its engine seed, which deals
  its own game and no other.
- A finished game of a room that opted in to recording is written atomically as one
  ``escoba-replay/1`` record (``room_records``); seats carry pseudonyms (``human:<name>``), never
  tokens. No record is shown while its deal may still be dealt to someone.
- A room nobody has touched for ``idle_seconds``, or nobody joined within ``unjoined_seconds``,
  expires: its pages say so, its tokens stop working. One client (address; IPv6 by /64) may hold
  at most ``per_client`` open rooms, ``waiting_per_client`` of them waiting for their people, and
  open ``rooms_per_minute``; at the cap an unjoined room of the biggest holder makes way
  (``room_quota``).
- A room whose background work fails (a takeover bot that cannot be built, a record that cannot be
  written) is closed with a message to its pages; the other rooms go on (``close``).

Room state changes only on the server's event loop; bots think in the worker processes of the bot
pool (``bot_pool``; the routes in ``rooms_routes`` drive them). Everything that changes a room is
first appended to the journal (``journal.Journal``) when the server has one, so that rooms survive
a restart.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from agents.tournament.replay import check_replay
from escoba_env.rulebook.rules import Rules

from .bot_pool import pooled
from .deal_key import DealKey
from .game import AgentFailure
from .guard import ApiError, check_list, short_repr
from .journal import Journal
from .lobby import SEED_BITS, Arena
from .room_conns import client_key
from .room_game import RoomGame
from .room_load import replay_journal
from .room_quota import ROOMS_PER_MINUTE, RoomQuota
from .room_records import game_record, record_head, record_path, withheld, write_atomic
from .room_settings import parse_settings
from .room_table import (
    BURST,
    CONNECTIONS_PER_LINK,
    HUMAN,
    MAX_ROOMS,
    RATE,
    ROOM_IDLE_SECONDS,
    ROOMS_PER_CLIENT,
    TAKEOVER_SECONDS,
    TOKEN_BYTES,
    UNJOINED_SECONDS,
    WAITING_PER_CLIENT,
    Room,
    Seat,
    token_hash,
)

MAX_LOST = 10_000
"""Links of rooms gone while the server runs whose reason is remembered (for a 410 that says why)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Rooms:
    """Every room of a server: opening, seats, moves, takeovers, expiry, records and the journal."""

    def __init__(self, arena: Arena, directory: str | Path | None = None, *,
                 takeover_seconds: float = TAKEOVER_SECONDS, idle_seconds: float = ROOM_IDLE_SECONDS,
                 unjoined_seconds: float = UNJOINED_SECONDS, max_rooms: int = MAX_ROOMS,
                 per_client: int = ROOMS_PER_CLIENT, waiting_per_client: int = WAITING_PER_CLIENT,
                 per_link: int = CONNECTIONS_PER_LINK, clock: Callable[[], float] = time.monotonic,
                 warn: Callable[[str], None] | None = None, rate: float = RATE, burst: float = BURST,
                 rooms_per_minute: float = ROOMS_PER_MINUTE):
        self.arena = arena
        self.takeover_seconds, self.idle_seconds = float(takeover_seconds), float(idle_seconds)
        self.unjoined_seconds = float(unjoined_seconds)
        self.max_rooms, self.clock = int(max_rooms), clock
        self.per_link = per_link
        self.quota = RoomQuota(per_client, waiting_per_client, rooms_per_minute, clock=clock)
        self.rate, self.burst = float(rate), float(burst)
        self.rooms: dict[str, Room] = {}
        self.by_token: dict[str, tuple[str, int]] = {}
        self.heads: dict[tuple[Path, int], dict] = {}
        """(record file, its mtime) -> its room and deal: a listing does not read every record again."""
        self.lost: OrderedDict[str, str] = OrderedDict()
        """Token hash -> why its room is gone (its journal entry was damaged, it made way for another)."""
        self.dir = None if directory is None else Path(directory)
        self.records_dir = None if self.dir is None else self.dir / "records"
        self.warn = warn or (lambda line: print(line, file=sys.stderr, flush=True))
        self.journal = None
        self.key = DealKey()
        """The secret that turns a room's deal into the engine's (``deal_key``): kept with the journal."""
        if self.dir is not None:
            self.records_dir.mkdir(parents=True, exist_ok=True)
            self.key = DealKey.load(self.dir)
            self.journal = Journal(self.dir / "rooms.journal")

    # ------------------------------------------------------------------ opening

    def parse(self, body: Any) -> dict:
        """Return the validated settings of a new room (ApiError 400 on the first bad field)."""
        return parse_settings(self.arena, body, self.records_dir is not None)

    def prepare(self, body: Any) -> tuple[dict, dict[int, Any]]:
        """Return the settings of a new room and its bots, every agent spec built (ApiError 400).

        The takeover bot is built too, and dropped: a spec that cannot be built is refused now,
        not when a person leaves. Slow for networks: call it off the event loop.
        """
        settings = self.parse(body)
        rules, seed = Rules.from_dict(settings["rules"]), self.key.engine_seed(*settings["deals"][0])
        bots = {k: self._build(s["spec"], rules, seed, k) for k, s in enumerate(settings["seats"])
                if s["kind"] != HUMAN}
        self._build(settings["takeover"], rules, seed, 0)
        return settings, bots

    def admit(self, settings: dict, bots: dict[int, Any], client: str = ""
              ) -> tuple[Room, dict[int, str], str]:
        """Open a room of checked settings for ``client`` (an address); return (room, tokens, watch).

        ApiError 429 past the client's quotas, 503 when the server is full of rooms in play.
        """
        key = client_key(client)
        self.quota.check(self, key)
        self.quota.make_space(self, key)
        tokens = {s: secrets.token_urlsafe(TOKEN_BYTES) for s, x in enumerate(settings["seats"])
                  if x["kind"] == HUMAN}
        watch = secrets.token_urlsafe(TOKEN_BYTES)
        rid = secrets.token_urlsafe(9)
        entry = {"e": "open", "room": rid, "settings": settings, "client": key,
                 "tokens": {str(s): token_hash(t) for s, t in tokens.items()}, "watch": token_hash(watch)}
        room = self.create(entry, bots)
        if self.journal is not None:
            self.journal.append(entry)
        return room, tokens, watch

    def open(self, body: Any, client: str = "") -> tuple[Room, dict[int, str], str]:
        """Open a room from a request body; return (room, seat -> token, spectator token)."""
        return self.admit(*self.prepare(body), client)

    def forget(self, rid: str, why: str | None = None) -> None:
        """Drop a room and its tokens (journaled: a restart does not bring it back); with ``why``, its
        links answer 410 with it (while the server runs)."""
        room = self.rooms.pop(rid, None)
        if room is None:
            return
        for h in [s.token for s in room.seats if s.token] + [room.watch_token]:
            self.by_token.pop(h, None)
            if why is not None:
                self.lost[h] = why
        while len(self.lost) > MAX_LOST:
            self.lost.popitem(last=False)
        if self.journal is not None:
            self.journal.append({"e": "drop", "room": rid})

    def create(self, entry: dict, bots: dict[int, Any] | None = None) -> Room:
        """Make the room of an ``open`` entry (a new room, or one read back from the journal)."""
        st = entry["settings"]
        rules = Rules.from_dict(st["rules"])
        seats = [Seat(x["kind"], x["spec"], x["name"], entry["tokens"].get(str(k)))
                 for k, x in enumerate(st["seats"])]
        deals = [tuple(d) for d in st["deals"]]
        room = Room(entry["room"], rules, seats, deals, st["fixed_deals"],
                    st["record"], st["takeover"], st["max_rounds"], entry["watch"], self.clock(),
                    client=str(entry.get("client", "")),
                    engine_deals=[self.key.engine_deal(d) for d in deals])
        room.last_use = self.clock()
        for k, s in enumerate(seats):
            if s.kind != HUMAN:
                room.bots[k] = self._build(s.spec, rules, room.engine_deals[0][0], k) if bots is None \
                    else bots[k]
        self.rooms[room.rid] = room
        for k, s in enumerate(seats):
            if s.token:
                self.by_token[s.token] = (room.rid, k)
        self.by_token[room.watch_token] = (room.rid, -1)
        return room

    def _build(self, spec: str, rules: Rules, seed: int, seat: int) -> Any:
        """Return the bot of ``spec`` for ``seat``, as the bot pool holds it; ApiError 400 if it cannot be."""
        try:
            return pooled(self.arena.allow.build(spec, rules, (seed + seat) % 2**SEED_BITS))
        except Exception as exc:  # any agent's constructor: a clear 400, never a server error
            raise ApiError(400, f"cannot build bot {spec!r}: {self.arena.scrub(' '.join(str(exc).split()))}"
                           ) from None

    def load(self) -> int:
        """Replay the journal: rooms in progress go on where they were; return the rooms read back.

        A damaged line, or an entry that no longer applies, costs at most its room: one warning
        line per damaged room (``room_load``).
        """
        if self.journal is None:
            return 0
        journal, self.journal = self.journal, None  # nothing read back is journaled again
        try:
            for line in replay_journal(self, journal):
                self.warn(line)
        finally:
            self.journal = journal
        now = self.clock()
        for room in self.rooms.values():
            room.last_use = now
            for s in room.seats:
                if s.kind == HUMAN and s.taken:
                    s.left_at = now  # after a restart everyone gets the whole delay to come back
        return len(self.rooms)

    def replay(self, entry: dict) -> None:
        """Apply one journal entry read back (KeyError, ValueError, ApiError if it does not apply)."""
        kind = entry["e"]
        if kind == "open":
            if entry["room"] in self.rooms:
                raise ValueError("opened twice")
            self.quota.make_space(self)
            self.create(entry)
            return
        room = self.rooms[entry["room"]]
        if kind == "join":
            room.seats[entry["seat"]].taken = True
            self.maybe_start(room)
        elif kind == "move":
            if room.game is None or entry["game"] != room.game_index:
                raise ValueError("a move of a game that is not being played")
            self.play(room, entry["seat"], entry["card"], entry["capture"])
            self.after_move(room)
        elif kind == "takeover":
            self.take_over(room, entry["seat"])
        elif kind == "expire":
            self.close(room, str(entry.get("why") or self.idle_reason()))
        elif kind == "drop":
            self.forget(room.rid)
        else:
            raise ValueError(f"unknown entry {str(kind)[:20]!r}")

    # ------------------------------------------------------------------ who is who

    def lookup(self, token: Any) -> tuple[Room, int]:
        """Return (room, seat) of a token (seat -1: the spectator); ApiError 403/410 otherwise."""
        if not isinstance(token, str) or not 20 <= len(token) <= 100:
            raise ApiError(403, "not a room token")
        h = token_hash(token)
        hit = self.by_token.get(h)
        if hit is None:
            if h in self.lost:
                raise ApiError(410, self.lost[h])
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
        """Mark a connection to ``seat``; return True if that started the game.

        ApiError 429 if the link already holds ``per_link`` connections.
        """
        held = room.watchers if seat < 0 else room.seats[seat].connections
        if held >= self.per_link:
            raise ApiError(429, f"this link is open in {held} places already, the most one link may be")
        if seat < 0:
            room.watchers += 1
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
        """Mark a connection to ``seat`` gone (the takeover clock starts when a seat has none)."""
        if seat < 0:
            room.watchers = max(0, room.watchers - 1)
            return
        s = room.seats[seat]
        s.connections = max(0, s.connections - 1)
        if s.connections == 0:
            s.left_at = self.clock()

    def maybe_start(self, room: Room) -> bool:
        """Start the room's game if every person has joined; return True if it started now."""
        if room.game is not None or room.expired or not all(room.seats[h].taken for h in room.humans):
            return False
        self._start_game(room)
        return True

    def _start_game(self, room: Room) -> None:
        seed, gid = room.engine_deals[room.game_index]
        humans = {k for k, s in enumerate(room.seats) if s.kind == HUMAN and s.replaced is None}
        bots = room.bots
        specs = {k: (s.replaced or s.spec) for k, s in enumerate(room.seats) if k not in humans}
        names = [self.display(s) for s in room.seats]
        room.game = RoomGame(room.rules, bots, specs, humans, seed, gid, names, max_rounds=room.max_rounds,
                             bot_timeout=self.arena.bot_timeout, pool=self.arena.pool, client=room.client)
        now = self.clock()
        for s in room.seats:
            if s.kind == HUMAN and s.connections == 0 and s.left_at is None:
                s.left_at = now

    @staticmethod
    def display(s: Seat) -> str:
        """Return the name a seat is shown with (a person replaced by a bot says so)."""
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
        if room.expired:
            raise ApiError(410, f"this room is closed: {room.expired}")
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

    def play(self, room: Room, seat: int, card: int, capture: list[int]) -> None:
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
                room.finished.append(game_record(room, self.labels(room)))
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
        bot = self._build(room.takeover, room.rules, room.engine_deals[room.game_index][0], seat)
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

    def idle_reason(self) -> str:
        """Return why a room without activity was closed."""
        return f"it expired after {self.idle_seconds / 60:g} minutes without activity"

    def due_to_close(self) -> list[tuple[Room, str]]:
        """Return the open rooms to close now, and why: idle too long, or nobody joined in time."""
        now, out = self.clock(), []
        for room in list(self.rooms.values()):
            if room.expired:
                continue
            if now - room.last_use > self.idle_seconds:
                out.append((room, self.idle_reason()))
            elif not any(s.taken for s in room.seats) and now - room.created > self.unjoined_seconds:
                out.append((room, f"nobody joined it within {self.unjoined_seconds / 60:g} minutes"))
        return out

    def close(self, room: Room, why: str) -> None:
        """Close ``room`` (its tokens answer 410 with ``why``); journaled."""
        room.expired = why
        if self.journal is not None:
            self.journal.append({"e": "expire", "room": room.rid, "why": why})

    # ------------------------------------------------------------------ views and records

    def message(self, room: Room, seat: int) -> dict:
        """Return the state message for ``seat`` (-1: spectator)."""
        out: dict[str, Any] = {"type": "state", "room": room.info(), "seat": seat}
        game = room.game
        out["view"] = None if game is None else game.view_for(seat)
        out.update(self._finished(room, seat))
        return out

    def messages(self, room: Room, seats: Iterable[int]) -> dict[int, str]:
        """Return the state message of each of ``seats`` as JSON text (what ``message`` holds).

        What every seat is sent alike (the room, the public part of the view) is encoded once, and
        each seat's own part (its hand, its moves) is joined to it: a move is shown to four people
        for little more than the cost of one message.
        """
        head = '{"type":"state","room":' + _dumps(room.info())
        game = room.game
        shared = None if game is None else _dumps(game.view_shared())[:-1]
        out = {}
        for seat in set(seats):
            view = "null" if game is None else shared + "," + _dumps(game.view_personal(seat))[1:]
            rest = self._finished(room, seat)
            out[seat] = (f'{head},"seat":{seat},"view":{view}'
                         + ("," + _dumps(rest)[1:-1] if rest else "") + "}")
        return out

    def _finished(self, room: Room, seat: int) -> dict:
        if seat >= 0 or not room.results:
            return {}
        # The spectator sees every hand of the games that are over, once no one can be dealt them.
        why = next((w for rec in room.finished if (w := withheld(rec, self.rooms.values()))), None)
        if why is None:
            return {"finished": room.finished}
        return {"finished_note": f"The finished games' hands are not shown yet: {why}."}

    def labels(self, room: Room) -> list[str]:
        """Return each seat's name in records: ``human:<pseudonym>`` or the bot spec."""
        return [s.label for s in room.seats]

    def write_record(self, room: Room, again: bool = True) -> Path:
        """Write the finished game of ``room`` as one replay line, atomically; return the path.

        ``again=False`` (reading the journal back) keeps a record already written.
        """
        rec = room.finished[-1]
        path = record_path(self.records_dir, room)
        if not again and path.exists():
            room.records.append(path.name)
            return path
        check_replay(rec, f"room {room.rid} game {room.game_index + 1}")
        write_atomic(path, json.dumps(rec, separators=(",", ":")) + "\n")
        room.records.append(path.name)
        return path

    def record_withheld(self, path: Path) -> str | None:
        """Return why the file ``path`` may not be listed or read now (a room record), or None."""
        if self.records_dir is None or not path.resolve().is_relative_to(self.records_dir.resolve()):
            return None
        try:
            key = (path, path.stat().st_mtime_ns)
        except OSError:
            return "it cannot be read"
        head = self.heads.get(key)
        if head is None:
            head = record_head(path)
            if head is None:
                return "it cannot be read as a record"
            self.heads[key] = head
        return withheld(head, list(self.rooms.values()))


__all__ = ["AgentFailure", "Room", "RoomGame", "Rooms", "Seat", "client_key", "token_hash", "write_atomic"]
