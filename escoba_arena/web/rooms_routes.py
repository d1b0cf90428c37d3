"""The rooms' web face: ``POST /api/rooms`` opens a room, ``/api/rooms/ws`` is every seat's WebSocket.

Protocol (JSON text messages). The page opens the WebSocket and sends ``{"type": "hello",
"token": T}`` (the token travels in the message, never in a URL the server logs: the links carry it
after ``#``). The server answers ``{"type": "state", ...}`` at once and after every change in the
room (``Rooms.message``: the room, and only that seat's view), ``{"type": "error", "status",
"message"}`` for a refused message, and ``{"type": "closed", "message"}`` before it closes a
room's connections (the room expired). The seat sends ``{"type": "move", "card": id,
"capture": [ids]}``; ``{"type": "ping"}`` is answered with ``{"type": "pong"}``.

Every message is checked: its size, its JSON, the token's rate (``rooms.RATE``), that the token's
seat is the one to act. Bots move in worker threads; a background task hands the seat of a person
who left to a bot, and expires idle rooms.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from escoba_env.cards import cards_of

from .game import AgentFailure
from .guard import MAX_DEPTH, MAX_GAME_BODY, ApiError, json_depth, read_json, short_message
from .lobby import Arena
from .room_table import BURST, RATE, ROOM_IDLE_SECONDS, TAKEOVER_SECONDS, Room
from .rooms import Rooms

LOG = logging.getLogger("escoba_arena.web.rooms")
MAX_MESSAGE_BYTES = 4096
"""The largest WebSocket message a seat may send."""
HELLO_SECONDS = 10.0
"""A connection that has not said hello within this time is closed."""
STRIKES = 50
"""Refused messages in a row (rate limit) after which a connection is closed."""


@dataclass
class RoomOptions:
    """How a server keeps rooms: ``directory`` (journal and records; None: memory only, no records)."""

    directory: str | Path | None = None
    takeover_seconds: float = TAKEOVER_SECONDS
    idle_seconds: float = ROOM_IDLE_SECONDS
    tick: float = 1.0
    """Seconds between two checks for people who left and idle rooms."""
    rate: float = RATE
    """Messages a second a token may send, in bursts of ``burst``."""
    burst: float = BURST


class RoomHub:
    """The rooms of a server and their open connections; drives bots and takeovers."""

    def __init__(self, arena: Arena, options: RoomOptions | None = None):
        self.options = options or RoomOptions()
        o = self.options
        self.rooms = Rooms(arena, o.directory, takeover_seconds=o.takeover_seconds,
                           idle_seconds=o.idle_seconds, rate=o.rate, burst=o.burst)
        self.loaded = self.rooms.load()
        self.conns: dict[str, set[tuple[WebSocket, int]]] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        self.limiter = anyio.CapacityLimiter(8)
        self.reaper: asyncio.Task | None = None
        self.pending: set[asyncio.Task] = set()
        self.started = False

    def lock(self, rid: str) -> asyncio.Lock:
        if rid not in self.locks:
            self.locks[rid] = asyncio.Lock()
        return self.locks[rid]

    def ensure_running(self) -> None:
        """Start the background check, and the bots of rooms read back from the journal (once)."""
        if self.reaper is None or self.reaper.done():
            self.reaper = asyncio.get_running_loop().create_task(self._reap())
        if not self.started:
            self.started = True
            for room in list(self.rooms.rooms.values()):
                if room.game is not None and room.game.bot_to_act() >= 0:
                    self.spawn(self.drive(room))

    def spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def stop(self) -> None:
        for t in [self.reaper, *self.pending]:
            if t is not None:
                t.cancel()
        if self.rooms.journal is not None:
            self.rooms.journal.close()

    async def in_thread(self, fn, *args):
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    # ------------------------------------------------------------------ pushing state

    async def broadcast(self, room: Room) -> None:
        """Send every connection of ``room`` its own state message (caller holds the room's lock)."""
        conns = list(self.conns.get(room.rid, ()))
        cache: dict[int, str] = {}
        for _, seat in conns:
            if seat not in cache:
                cache[seat] = json.dumps(self.rooms.message(room, seat), separators=(",", ":"))
        await asyncio.gather(*(self._send(ws, cache[seat]) for ws, seat in conns))

    @staticmethod
    async def _send(ws: WebSocket, text: str) -> None:
        with contextlib.suppress(Exception):  # a connection that went away is dropped by its handler
            await ws.send_text(text)

    async def drive(self, room: Room) -> None:
        """Let the bots of ``room`` move one at a time, each move shown at once, until a person acts."""
        while True:
            async with self.lock(room.rid):
                game = room.game
                if game is None or room.expired or game.bot_to_act() < 0:
                    return
                try:
                    seat, card, capture = await self.in_thread(game.bot_move)
                except AgentFailure as exc:
                    game.fail(str(exc))
                    self.rooms.after_move(room)
                    await self.broadcast(room)
                    return
                await self.in_thread(self.rooms.play, room, seat, card, cards_of(capture), True)
                await self.in_thread(self.rooms.after_move, room)
                await self.broadcast(room)

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.options.tick)
            try:
                await self.reap_once()
            except Exception:  # a bug here must not stop the checks: logged, and the next tick runs
                LOG.exception("rooms: background check failed")

    async def reap_once(self) -> None:
        """Hand the seats of people who left to bots; expire idle rooms."""
        rooms = self.rooms
        for room in list(rooms.rooms.values()):
            gone = rooms.gone_seats(room)
            if gone:
                async with self.lock(room.rid):
                    for seat in rooms.gone_seats(room):
                        await self.in_thread(rooms.take_over, room, seat)
                    await self.broadcast(room)
                self.spawn(self.drive(room))
        for room in rooms.idle_rooms():
            async with self.lock(room.rid):
                rooms.expire(room)
                msg = json.dumps({"type": "closed", "message": f"This room is closed: {room.expired}."})
                for ws, _ in list(self.conns.get(room.rid, ())):
                    await self._send(ws, msg)
                    with contextlib.suppress(Exception):
                        await ws.close(code=4410)

    # ------------------------------------------------------------------ endpoints

    async def open_room(self, request: Request) -> Response:
        try:
            body = await read_json(request, MAX_GAME_BODY)
            room, tokens, watch = await self.in_thread(self.rooms.open, body)
        except ApiError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        self.ensure_running()
        links = [{"seat": s, "name": room.seats[s].name, "link": f"/room.html#t={t}"}
                 for s, t in sorted(tokens.items())]
        return JSONResponse({"room": room.info(), "links": links, "watch": f"/room.html#t={watch}"},
                            status_code=201)

    async def socket(self, ws: WebSocket) -> None:
        await ws.accept()
        self.ensure_running()
        try:
            room, seat = await self._hello(ws)
        except (WebSocketDisconnect, asyncio.TimeoutError):
            return
        except ApiError as exc:
            await self._send(ws, json.dumps({"type": "error", "status": exc.status, "message": exc.message}))
            with contextlib.suppress(Exception):
                await ws.close(code=4000 + exc.status)
            return
        conn = (ws, seat)
        joined = False
        try:
            async with self.lock(room.rid):
                self.conns.setdefault(room.rid, set()).add(conn)
                started = self.rooms.join(room, seat)
                joined = True
                await self.broadcast(room)
            if started:
                self.spawn(self.drive(room))
            await self._serve(ws, room, seat)
        finally:
            # Leaving is plain bookkeeping done with no await: a handler the server cancels (the
            # socket went, the server stops) must still leave its seat, or the seat stays
            # "connected" for ever and never passes to the takeover bot. Waiting for the room's lock
            # here was such an await, and a cancelled wait skipped the leave.
            if joined:
                self.conns.get(room.rid, set()).discard(conn)
                self.rooms.leave(room, seat)

    async def _serve(self, ws: WebSocket, room: Room, seat: int) -> None:
        """Answer one connection's messages until it goes (or is closed for too many refusals)."""
        strikes = 0
        try:
            while True:
                text = await ws.receive_text()
                error = await self._message(room, seat, text)
                if error is not None:
                    strikes = strikes + 1 if error.status == 429 else 0
                    await self._send(ws, json.dumps({"type": "error", "status": error.status,
                                                     "message": error.message}))
                    if strikes >= STRIKES:
                        await ws.close(code=4429)
                        return
                else:
                    strikes = 0
        except (WebSocketDisconnect, RuntimeError):
            pass

    async def _hello(self, ws: WebSocket) -> tuple[Room, int]:
        text = await asyncio.wait_for(ws.receive_text(), HELLO_SECONDS)
        msg = _parse(text)
        if not isinstance(msg, dict) or msg.get("type") != "hello":
            raise ApiError(400, "say {\"type\": \"hello\", \"token\": \"...\"} first")
        return self.rooms.lookup(msg.get("token"))

    async def _message(self, room: Room, seat: int, text: str) -> ApiError | None:
        """Handle one message of a connection; return the refusal, if any."""
        if not self.rooms.allow_message(room, seat):
            return ApiError(429, "too many messages: slow down")
        try:
            msg = _parse(text)
        except ApiError as exc:
            return exc
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "ping":
            await self._send_to(room, seat, {"type": "pong"})
            return None
        if kind != "move":
            return ApiError(400, "a message is {\"type\": \"move\", ...} or {\"type\": \"ping\"}")
        async with self.lock(room.rid):
            if room.expired:
                return ApiError(410, f"this room is closed: {room.expired}")
            try:
                card, capture = self.rooms.check_move(room, seat, msg)
                await self.in_thread(self.rooms.play, room, seat, card, capture)
            except ApiError as exc:
                return exc
            except ValueError as exc:
                return ApiError(400, str(exc))
            await self.in_thread(self.rooms.after_move, room)
            await self.broadcast(room)
        self.spawn(self.drive(room))
        return None

    async def _send_to(self, room: Room, seat: int, msg: dict) -> None:
        for ws, s in list(self.conns.get(room.rid, ())):
            if s == seat:
                await self._send(ws, json.dumps(msg))
                return


def _parse(text: str):
    if len(text) > MAX_MESSAGE_BYTES:
        raise ApiError(413, f"a message is at most {MAX_MESSAGE_BYTES} bytes")
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError):
        raise ApiError(400, "a message must be JSON") from None
    if json_depth(msg, MAX_DEPTH) > 4:
        raise ApiError(400, "the message is nested too deep")
    return msg


def room_routes(hub: RoomHub) -> list:
    """Return the rooms' routes (they go before the arena's catch-all ``/api/...`` route)."""
    return [Route("/api/rooms", hub.open_room, methods=["POST"]),
            WebSocketRoute("/api/rooms/ws", hub.socket)]


def make_hub(arena: Arena, options: RoomOptions | None) -> RoomHub:
    """Return the server's rooms (reading back the journal of ``options.directory``)."""
    return RoomHub(arena, options)


def lifespan_for(hub: RoomHub):
    """Return a Starlette lifespan that stops the rooms' background work at shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        hub.ensure_running()
        try:
            yield
        finally:
            await hub.stop()

    return lifespan


__all__ = ["RoomHub", "RoomOptions", "lifespan_for", "make_hub", "room_routes", "short_message"]
