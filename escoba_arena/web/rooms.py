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

import hashlib
import json
import os
import re
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.tournament.replay import FORMAT, check_replay
from escoba_env.capture import capture_options
from escoba_env.cards import cards_of, mask_of
from escoba_env.rules import Rules

from .game import AgentFailure, WebGame, _side_summary
from .guard import ApiError, check_list, short_repr
from .lobby import MAX_ROUNDS, SEED_BITS, Arena, request_rules
from .one_game import OneGame

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
_NAME = re.compile(r"[A-Za-z0-9_-]{1,24}")


def token_hash(token: str) -> str:
    """Return the SHA-256 (hex) of a token: what the server keeps instead of the token."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class RoomGame(WebGame):
    """One game of a room: ``humans`` are the seats played by people, the rest by ``bots``.

    Unlike ``WebGame`` no bot moves by itself: the room asks for one bot move at a time
    (``bot_move``) and plays it with ``play_bot``, so that every move is shown at once.
    """

    def __init__(self, rules: Rules, bots: dict[int, Any], specs: dict[int, str], humans: set[int],
                 seed: int, game_id: int, names: list[str], *, max_rounds: int | None = None,
                 bot_timeout: float = 10.0):
        self.rules, self.bots, self.specs, self.humans = rules, dict(bots), dict(specs), set(humans)
        self.seed, self.game_id = int(seed), int(game_id)
        self.seat = -1
        self.max_rounds, self.bot_timeout, self.note = max_rounds, bot_timeout, None
        self.names = list(names)
        self.state = OneGame(rules, max_rounds)
        self.state.game.reset(self.seed, game_id=self.game_id)
        self.scripted = False
        self.log: list[dict] = []
        self.rounds: list[dict] = []
        self.error: str | None = None
        self.moves_played = 0
        self.deal_entries: list[int] = []
        self._new_round()

    def _run_bots(self) -> None:  # the room drives the bots, one move at a time
        """Do nothing: see ``bot_move``."""

    def bot_to_act(self) -> int:
        """Return the bot seat to act, or -1 (a person is to act, or the game is over)."""
        if self.done or self.state.to_act in self.humans:
            return -1
        return self.state.to_act

    def bot_move(self) -> tuple[int, int, int]:
        """Return (seat, card, capture mask) of the bot to act; call it off the event loop."""
        seat = self.bot_to_act()
        card, capture = self._bot_move(seat)
        return seat, card, capture

    def moves_for(self, seat: int) -> dict[int, list[list[int]]]:
        """Return the legal cards -> capture options of ``seat`` (empty unless it is to act)."""
        st = self.state
        if self.done or seat < 0 or st.to_act != seat:
            return {}
        return {c: [cards_of(o) for o in capture_options(c, st.table, self.rules)] or [[]]
                for c in cards_of(st.legal)}

    def apply(self, seat: int, card: int, capture: list[int]) -> None:
        """Play ``card`` taking ``capture`` for ``seat``; ValueError (nothing changes) if not legal."""
        if self.done:
            raise ValueError("the game is over")
        if self.state.to_act != seat:
            raise ValueError("it is not this seat's turn")
        moves = self.moves_for(seat)
        if card not in moves:
            raise ValueError(f"card {card} is not a legal card to play now (legal: {sorted(moves)})")
        want = sorted(capture)
        if want not in [sorted(o) for o in moves[card]]:
            raise ValueError(f"{short_repr(want)} is not a capture option of card {card} "
                             f"(options: {moves[card]})")
        self._execute(seat, card, mask_of(want))
        self.moves_played += 1

    def fail(self, message: str) -> None:
        """Stop the game with ``message`` (a bot failed)."""
        self.error = f"{message}; the game was stopped"
        self.log.append({"type": "error", "message": self.error})

    def view_for(self, seat: int) -> dict:
        """Return what ``seat`` may see (``-1``: a spectator): never another hand or the stock order."""
        st, r = self.state, self.rules
        p = r.num_players
        piles, escobas = st.piles(), st.escobas()
        sides = [_side_summary(self._side_mask(piles, s),
                               sum(escobas[q] for q in range(p) if r.side_of(q) == s))
                 for s in range(r.num_sides)]
        moves = self.moves_for(seat) if seat in self.humans else {}
        return {
            "rules": r.to_dict(), "seat": seat, "names": self.names, "side_names": self.team_names(),
            "my_side": r.side_of(seat) if seat >= 0 else -1,
            "round": len(self.rounds), "dealer": self.rounds[-1]["dealer"],
            "to_act": -1 if self.done else st.to_act, "your_turn": bool(moves),
            "hand": cards_of(st.hand(seat)) if seat >= 0 else [], "table": cards_of(st.table),
            "hand_counts": [st.hand(q).bit_count() for q in range(p)], "stock": st.stock_left,
            "scores": st.scores(), "sides": sides,
            "moves": [{"card": c, "options": o} for c, o in moves.items()],
            "done": self.done, "winner": st.winner if st.done else -1, "truncated": st.truncated,
            "error": self.error, "moves_played": self.moves_played,
            "log": self.log[self._log_start():], "log_start": self._log_start(),
        }

    def _log_start(self) -> int:
        """Return where the log shown starts: the deal of the previous round (a message stays small)."""
        deals = self.deal_entries
        return deals[-2] if len(deals) >= 2 else 0

    def _new_round(self) -> None:
        self.deal_entries.append(len(self.log))
        super()._new_round()

    def team_names(self) -> list[str]:
        """Return the display name of each scoring side (the seats' names)."""
        r = self.rules
        return [" + ".join(self.names[q] for q in range(r.num_players) if r.side_of(q) == s)
                for s in range(r.num_sides)]

    def record(self, labels: list[str], extra: dict) -> dict:
        """Return the finished game as one ``escoba-replay/1`` record; ValueError before the end."""
        st = self.state
        if not st.done:
            raise ValueError("the record is available once the game is over")
        return {"format": FORMAT, "seed": self.seed, "game_id": self.game_id, "rotation": 0,
                "rules": self.rules.to_dict(), "mode": "games", "max_rounds": self.max_rounds,
                "lineup": list(labels), "seats": list(labels), "rounds": self.rounds,
                "final_scores": st.scores(), "winner": st.winner, "truncated": st.truncated, **extra}


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
        rules = request_rules(body, {"rules", "seats", "record", "takeover", "max_rounds", "deals", "seed"})
        p = rules.num_players
        seats_in = check_list(body.get("seats", [HUMAN] * p), "seats", 4)
        if len(seats_in) != p:
            raise ApiError(400, f"give one seat per player: {p} seats, got {len(seats_in)}")
        seats, names = [], set()
        for k, s in enumerate(seats_in):
            if isinstance(s, str):
                s = {"kind": HUMAN} if s == HUMAN else {"kind": "bot", "spec": s}
            if (not isinstance(s, dict) or set(s) - {"kind", "spec", "name"}
                    or s.get("kind") not in (HUMAN, "bot")):
                raise ApiError(400, f"seat {k} must be \"human\", an agent spec, or "
                                    "{\"kind\": \"human\"|\"bot\", \"spec\": ..., \"name\": ...}")
            if s["kind"] == HUMAN:
                name = s.get("name") or f"p{k}-{secrets.token_hex(3)}"
                if not isinstance(name, str) or not _NAME.fullmatch(name):
                    raise ApiError(400, f"seat {k}: a pseudonym is 1-24 letters, digits, '_' or '-', "
                                        f"got {short_repr(name, 40)}")
                if name in names:
                    raise ApiError(400, f"seat {k}: pseudonym {name!r} is used twice")
                names.add(name)
                seats.append({"kind": HUMAN, "spec": HUMAN, "name": name})
            else:
                spec = self.arena.resolve_spec(s.get("spec"))
                seats.append({"kind": "bot", "spec": spec, "name": spec})
        if not any(s["kind"] == HUMAN for s in seats):
            raise ApiError(400, "a room needs at least one human seat (bots alone: use evaluate.py)")
        record = body.get("record", False)
        if not isinstance(record, bool):
            raise ApiError(400, f"record must be true or false, got {short_repr(record)}")
        if record and self.records_dir is None:
            raise ApiError(400, "this server keeps no records: start it with --rooms-dir DIR to record rooms")
        takeover = self.arena.resolve_spec(body.get("takeover", DEFAULT_TAKEOVER))
        max_rounds = body.get("max_rounds")
        if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, int)
                                       or not 1 <= max_rounds <= MAX_ROUNDS):
            raise ApiError(400, f"max_rounds must be an integer from 1 to {MAX_ROUNDS}, "
                                f"got {short_repr(max_rounds)}")
        deals = body.get("deals")
        fixed = deals is not None
        top = 2**SEED_BITS - 1
        if fixed:
            check_list(deals, "deals", MAX_DEALS)
            if not deals:
                raise ApiError(400, "deals must list at least one deal")
            out = []
            for k, d in enumerate(deals):
                ok = isinstance(d, dict) and set(d) == {"seed", "game_id"} and all(
                    isinstance(d[x], int) and not isinstance(d[x], bool) and 0 <= d[x] <= top
                    for x in ("seed", "game_id"))
                if not ok:
                    raise ApiError(400, f"deal {k} must be {{\"seed\": int, \"game_id\": int}} "
                                        "(each 0 to 2**64-1)")
                out.append((d["seed"], d["game_id"]))
            deals = out
        else:
            seed = body.get("seed")
            if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                     or not 0 <= seed <= top):
                raise ApiError(400, f"seed must be an integer from 0 to {top}, got {short_repr(seed)}")
            # A drawn seed has 64 random bits, as for games: the deal cannot be found from a view.
            deals = [(secrets.randbits(SEED_BITS) if seed is None else seed, 0)]
        return {"rules": rules.to_dict(), "seats": seats, "record": record, "takeover": takeover,
                "max_rounds": max_rounds, "deals": [list(d) for d in deals], "fixed_deals": fixed}

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
