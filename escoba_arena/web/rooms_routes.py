"""The rooms' web face: ``POST /api/rooms`` opens a room, ``/api/rooms/ws`` is every seat's WebSocket.

Protocol (JSON text messages). The page opens the WebSocket and sends ``{"type": "hello",
"token": T}`` (the token travels in the message, never in a URL the server logs: the links carry it
after ``#``). The server answers ``{"type": "state", ...}`` at once and after every change in the
room (``Rooms.message``: the room, and only that seat's view), ``{"type": "error", "status",
"message"}`` for a refused message, and ``{"type": "closed", "message"}`` before it closes a
room's connections (the room expired). The seat sends ``{"type": "move", "card": id,
"capture": [ids]}``; ``{"type": "ping"}`` is answered with ``{"type": "pong"}``.

Every message is checked: its size (the server refuses a larger frame before reading it: uvicorn's
``ws_max_size``, set by the command line to ``MAX_MESSAGE_BYTES``), that it is text (a binary frame
closes the connection with code 1003), its JSON, the token's rate (``rooms.RATE``), that the
token's seat is the one to act. Connections are capped in all (``max_connections``) and per link
(``per_link``). A change of who is connected is sent to the room's pages at once. Bots move in
worker threads; a background task hands the seat of a person who left to a bot, and closes idle
rooms and rooms nobody joined. Each room's background work fails alone: the failing room is closed
with a message to its pages, logged in one line, and the other rooms go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from escoba_env.rulebook.cards import cards_of

from .game import AgentFailure
from .guard import MAX_DEPTH, MAX_GAME_BODY, ApiError, json_depth, read_json, short_message
from .lobby import Arena
from .room_table import (
    BURST,
    CONNECTIONS_PER_LINK,
    MAX_CONNECTIONS,
    MAX_MESSAGE_BYTES,
    MAX_ROOMS,
    RATE,
    ROOM_IDLE_SECONDS,
    ROOMS_PER_CLIENT,
    TAKEOVER_SECONDS,
    UNJOINED_SECONDS,
    WAITING_PER_CLIENT,
    Room,
)
from .rooms import Rooms

LOG = logging.getLogger("escoba_arena.web.rooms")
HELLO_SECONDS = 10.0
"""A connection that has not said hello within this time is closed."""
STRIKES = 50
"""Refused messages in a row (rate limit) after which a connection is closed."""
BINARY_CLOSE = 1003
"""The close code of a connection that sent a binary frame (the protocol is JSON text)."""
FAILED_CLOSE = 4500
"""The close code of a room closed because its background work failed."""


class BinaryFrame(Exception):
    """A connection sent a binary frame."""


class RoomFailure(Exception):
    """A room's own work failed (not the request's fault): the room is closed."""

    def __init__(self, cause: BaseException):
        super().__init__(f"{type(cause).__name__}: {cause}")


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
    unjoined_seconds: float = UNJOINED_SECONDS
    """A room nobody has joined this long after it was opened is closed."""
    max_rooms: int = MAX_ROOMS
    per_client: int = ROOMS_PER_CLIENT
    """Open rooms (waiting or playing) one client may hold."""
    waiting_per_client: int = WAITING_PER_CLIENT
    """Rooms waiting for their people one client may hold."""
    per_link: int = CONNECTIONS_PER_LINK
    """WebSocket connections one link may hold at a time."""
    max_connections: int = MAX_CONNECTIONS
    """WebSocket connections the server holds at a time."""
    trusted_proxies: list[str] = field(default_factory=list)
    """Addresses of reverse proxies whose ``X-Forwarded-For`` names the client (for the quotas)."""
    strikes: int = STRIKES
    """Refused messages in a row (rate limit) after which a connection is closed."""
    serve_records: bool = False
    """Let the data folders list and serve the records folder (each record once its deal is over)."""


def client_address(peer: str | None, headers, trusted: list[str]) -> str:
    """Return the address a request comes from: the peer, or the address a trusted proxy forwarded."""
    peer = peer or ""
    if peer in trusted:
        forwarded = headers.get("x-forwarded-for", "").split(",")[-1].strip()
        with contextlib.suppress(ValueError):
            return str(ipaddress.ip_address(forwarded))
    return peer


class RoomHub:
    """The rooms of a server and their open connections; drives bots and takeovers."""

    def __init__(self, arena: Arena, options: RoomOptions | None = None):
        self.options = options or RoomOptions()
        o = self.options
        self.rooms = Rooms(arena, o.directory, takeover_seconds=o.takeover_seconds,
                           idle_seconds=o.idle_seconds, unjoined_seconds=o.unjoined_seconds,
                           max_rooms=o.max_rooms, per_client=o.per_client,
                           waiting_per_client=o.waiting_per_client, per_link=o.per_link, rate=o.rate,
                           burst=o.burst)
        self.loaded = self.rooms.load()
        self.sockets = 0
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
        """Stop the background work and close the journal."""
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
        if not conns:
            return
        cache = self.rooms.messages(room, [seat for _, seat in conns])
        await asyncio.gather(*(self._send(ws, cache[seat]) for ws, seat in conns))

    @staticmethod
    async def _send(ws: WebSocket, text: str) -> None:
        with contextlib.suppress(Exception):  # a connection that went away is dropped by its handler
            await ws.send_text(text)

    async def drive(self, room: Room) -> None:
        """Let the bots of ``room`` move one at a time, each move shown at once, until a person acts."""
        try:
            await self._drive(room)
        except Exception as exc:  # this room's failure (a record that cannot be written): it alone stops
            await self.fail_room(room, exc)

    async def _drive(self, room: Room) -> None:
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
                await self.play(room, seat, card, cards_of(capture), True)
                await self.broadcast(room)

    async def play(self, room: Room, seat: int, card: int, capture: list[int], bot: bool = False) -> None:
        """Play one move and finish the game it ends (ValueError if illegal: nothing changes).

        With a journal (an fsync) or records (files) it runs in a worker thread, in one hop; in
        memory it is a few microseconds of engine work, done on the loop without a thread's hand-off.
        """
        def step() -> None:
            self.rooms.play(room, seat, card, capture, bot)  # ValueError: an illegal move, nothing changed
            try:
                self.rooms.after_move(room)
            except Exception as exc:  # a record that cannot be written: the room's failure, not the move's
                raise RoomFailure(exc) from exc

        if self.rooms.journal is None:
            step()
        else:
            await self.in_thread(step)

    async def fail_room(self, room: Room, exc: BaseException) -> None:
        """Close ``room`` because its background work failed: one log line, a message to its pages."""
        what = exc.message if isinstance(exc, ApiError) else \
            str(exc) if isinstance(exc, RoomFailure) else f"{type(exc).__name__}: {exc}"
        what = self.rooms.arena.scrub(" ".join(str(what).split()))[:200]
        if room.expired:
            return
        LOG.warning("rooms: room %s closed: %s", room.rid, what)
        with contextlib.suppress(Exception):  # closing is best effort: the journal may be the failure
            self.rooms.close(room, f"the server could not go on with it ({what})")
        room.expired = room.expired or f"the server could not go on with it ({what})"
        await self.close_room(room, FAILED_CLOSE)

    async def close_room(self, room: Room, code: int) -> None:
        """Tell every page of ``room`` why it is closed, and close their connections with ``code``."""
        msg = json.dumps({"type": "closed", "message": f"This room is closed: {room.expired}."})
        for ws, _ in list(self.conns.get(room.rid, ())):
            await self._send(ws, msg)
            with contextlib.suppress(Exception):
                await ws.close(code=code)

    async def close_connections(self, code: int = 1001) -> None:
        """Close every connection of every room (the server is stopping, or a test gave up waiting)."""
        for conns in list(self.conns.values()):
            for ws, _ in list(conns):
                with contextlib.suppress(Exception):
                    await ws.close(code=code)

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.options.tick)
            try:
                await self.reap_once()
            except Exception:  # a bug here must not stop the checks: logged, and the next tick runs
                LOG.exception("rooms: background check failed")

    async def reap_once(self) -> None:
        """Hand the seats of people who left to bots; close idle rooms and rooms nobody joined.

        Each room on its own: one that fails is closed (``fail_room``) and the others go on.
        """
        rooms = self.rooms
        for room in list(rooms.rooms.values()):
            if not rooms.gone_seats(room):
                continue
            try:
                async with self.lock(room.rid):
                    for seat in rooms.gone_seats(room):
                        await self.in_thread(rooms.take_over, room, seat)
                    await self.broadcast(room)
            except Exception as exc:
                await self.fail_room(room, exc)
                continue
            self.spawn(self.drive(room))
        for room, why in rooms.due_to_close():
            try:
                async with self.lock(room.rid):
                    rooms.close(room, why)
                    await self.close_room(room, 4410)
            except Exception as exc:
                await self.fail_room(room, exc)

    # ------------------------------------------------------------------ endpoints

    async def open_room(self, request: Request) -> Response:
        """``POST /api/rooms``: open a room; answer its links (201), or the refusal."""
        client = client_address(request.client.host if request.client else None, request.headers,
                                self.options.trusted_proxies)
        try:
            body = await read_json(request, MAX_GAME_BODY)
            settings, bots = await self.in_thread(self.rooms.prepare, body)
            room, tokens, watch = self.rooms.admit(settings, bots, client)
        except ApiError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        self.ensure_running()
        links = [{"seat": s, "name": room.seats[s].name, "link": f"/room.html#t={t}"}
                 for s, t in sorted(tokens.items())]
        return JSONResponse({"room": room.info(), "links": links, "watch": f"/room.html#t={watch}"},
                            status_code=201)

    async def socket(self, ws: WebSocket) -> None:
        """``/api/rooms/ws``: one page's connection, from hello until it goes."""
        self.sockets += 1
        try:
            await ws.accept()
            if self.sockets > self.options.max_connections:
                await self._refuse(ws, ApiError(503, "the server holds as many connections as it may; "
                                                     "try again later"))
                return
            await self._connection(ws)
        finally:
            self.sockets -= 1

    async def _refuse(self, ws: WebSocket, exc: ApiError, code: int | None = None) -> None:
        await self._send(ws, json.dumps({"type": "error", "status": exc.status, "message": exc.message}))
        with contextlib.suppress(Exception):
            await ws.close(code=code or 4000 + exc.status)

    async def _connection(self, ws: WebSocket) -> None:
        self.ensure_running()
        try:
            room, seat = await self._hello(ws)
        except (WebSocketDisconnect, asyncio.TimeoutError):
            return
        except BinaryFrame:
            await self._refuse(ws, ApiError(400, "messages are JSON text, not binary"), BINARY_CLOSE)
            return
        except ApiError as exc:
            await self._refuse(ws, exc)
            return
        conn = (ws, seat)
        joined = False
        try:
            async with self.lock(room.rid):
                started = self.rooms.join(room, seat)
                self.conns.setdefault(room.rid, set()).add(conn)
                joined = True
                await self.broadcast(room)
            if started:
                self.spawn(self.drive(room))
            await self._serve(ws, room, seat)
        except ApiError as exc:  # the link is open in too many places
            await self._refuse(ws, exc)
        finally:
            # Leaving is plain bookkeeping done with no await: a handler the server cancels (the
            # socket went, the server stops) must still leave its seat, or the seat stays
            # "connected" for ever and never passes to the takeover bot. Waiting for the room's lock
            # here was such an await, and a cancelled wait skipped the leave. The others are told
            # by a task of its own.
            if joined:
                self.conns.get(room.rid, set()).discard(conn)
                self.rooms.leave(room, seat)
                self.spawn(self._presence(room))

    async def _presence(self, room: Room) -> None:
        """Show the room's pages who is connected now (a person left)."""
        async with self.lock(room.rid):
            if not room.expired:
                await self.broadcast(room)

    async def _serve(self, ws: WebSocket, room: Room, seat: int) -> None:
        """Answer one connection's messages until it goes (or is closed for too many refusals)."""
        strikes = 0
        try:
            while True:
                text = await receive_text(ws)
                error = await self.handle(room, seat, text)
                if error is not None:
                    strikes = strikes + 1 if error.status == 429 else 0
                    await self._send(ws, json.dumps({"type": "error", "status": error.status,
                                                     "message": error.message}))
                    if strikes >= self.options.strikes:
                        await ws.close(code=4429)
                        return
                else:
                    strikes = 0
        except BinaryFrame:
            await self._refuse(ws, ApiError(400, "messages are JSON text, not binary"), BINARY_CLOSE)
        except (WebSocketDisconnect, RuntimeError):
            pass

    async def _hello(self, ws: WebSocket) -> tuple[Room, int]:
        text = await asyncio.wait_for(receive_text(ws), HELLO_SECONDS)
        msg = _parse(text)
        if not isinstance(msg, dict) or msg.get("type") != "hello":
            raise ApiError(400, "say {\"type\": \"hello\", \"token\": \"...\"} first")
        return self.rooms.lookup(msg.get("token"))

    async def handle(self, room: Room, seat: int, text: str) -> ApiError | None:
        """Handle one message of a connection of ``seat``; return the refusal, if any."""
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
            try:
                card, capture = self.rooms.check_move(room, seat, msg)
                await self.play(room, seat, card, capture)
            except ApiError as exc:
                return exc
            except ValueError as exc:
                return ApiError(400, str(exc))
            except RoomFailure as exc:
                await self.fail_room(room, exc)
                return None
            await self.broadcast(room)
        self.spawn(self.drive(room))
        return None

    async def _send_to(self, room: Room, seat: int, msg: dict) -> None:
        for ws, s in list(self.conns.get(room.rid, ())):
            if s == seat:
                await self._send(ws, json.dumps(msg))
                return


async def receive_text(ws: WebSocket) -> str:
    """Return the next text message of ``ws``; WebSocketDisconnect when it goes, BinaryFrame for bytes."""
    message = await ws.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    text = message.get("text")
    if text is None:
        raise BinaryFrame
    return text


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
