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
token's seat is the one to act. Connections are capped in all (``max_connections``), per client
and per client before hello (``room_conns.SocketCounts``), and per link (``per_link``); a socket
that has not said hello within ``hello_seconds`` is closed.

Nothing waits on a peer. Each connection has its own outbox and writer (``room_conns.Outbox``): a
change of a room puts one message in each of its connections' outboxes and goes on; a page that does
not read is closed with ``SLOW_CLOSE`` once its outbox is full. A room's lock is held only while its
state changes (and while its journal line is written), never across a network send or a bot's
thinking: bots think in the bot pool's worker processes (``bot_pool``), one move of a room at a
time. The background task that hands the seat of a person who left to a bot, and closes idle rooms
and rooms nobody joined, only looks: each room's takeover or closing is a task of its own, so no
room can hold up another's. Each room's background work fails alone: the failing room is closed with
a message to its pages, logged in one line, and the other rooms go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from escoba_env.rulebook.cards import cards_of

from .errors import json_errors
from .game import AgentFailure
from .guard import MAX_GAME_BODY, ApiError, read_json, short_message
from .lobby import Arena
from .room_conns import ABORT_KEY, CLOSE_SECONDS, Outbox, SocketCounts, client_address, client_key
from .room_options import BinaryFrame, RoomOptions, error_message, parse_message, receive_text
from .room_table import Room
from .rooms import Rooms

LOG = logging.getLogger("escoba_arena.web.rooms")
BINARY_CLOSE = 1003
"""The close code of a connection that sent a binary frame (the protocol is JSON text)."""
FAILED_CLOSE = 4500
"""The close code of a room closed because its background work failed."""
CLOSED_CLOSE = 4410
"""The close code of the connections of a room that closed (idle, nobody joined)."""


class RoomFailure(Exception):
    """A room's own work failed (not the request's fault): the room is closed."""

    def __init__(self, cause: BaseException):
        super().__init__(f"{type(cause).__name__}: {cause}")


class RoomHub:
    """The rooms of a server and their open connections; drives bots and takeovers."""

    def __init__(self, arena: Arena, options: RoomOptions | None = None):
        self.options = options or RoomOptions()
        o = self.options
        self.rooms = Rooms(arena, o.directory, takeover_seconds=o.takeover_seconds,
                           idle_seconds=o.idle_seconds, unjoined_seconds=o.unjoined_seconds,
                           max_rooms=o.max_rooms, per_client=o.per_client,
                           waiting_per_client=o.waiting_per_client, per_link=o.per_link, rate=o.rate,
                           burst=o.burst, rooms_per_minute=o.rooms_per_minute)
        self.loaded = self.rooms.load()
        self.sockets = 0
        self.counts = SocketCounts(o.client_connections(), o.pending_per_client)
        self.conns: dict[str, set[tuple[Outbox, int]]] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        self.limiter = anyio.CapacityLimiter(8)
        """Threads for the journal and the records (file writes), never for waiting on a bot."""
        self.reaper: asyncio.Task | None = None
        self.pending: set[asyncio.Task] = set()
        self.driving: set[str] = set()
        """Rooms whose bots are being driven (one driver a room: one bot move of a room at a time)."""
        self.busy: set[str] = set()
        """Rooms with a takeover or a closing under way (the background check starts one at a time)."""
        self.started = False

    def lock(self, rid: str) -> asyncio.Lock:
        """Return room ``rid``'s lock (held while its state changes, never across a send)."""
        if rid not in self.locks:
            self.locks[rid] = asyncio.Lock()
        return self.locks[rid]

    def ensure_running(self) -> None:
        """Start the background check, and the bots of rooms read back from the journal (once)."""
        if self.reaper is None or self.reaper.done():
            self.reaper = asyncio.get_running_loop().create_task(self._reap())
        if not self.started:
            self.started = True
            self.rooms.arena.pool.warm()
            for room in list(self.rooms.rooms.values()):
                if room.game is not None and room.game.bot_to_act() >= 0:
                    self.drive_soon(room)

    def spawn(self, coro) -> asyncio.Task:
        """Run ``coro`` as a task of the hub (cancelled when the server stops)."""
        task = asyncio.get_running_loop().create_task(coro)
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)
        return task

    async def stop(self) -> None:
        """Stop the background work and close the journal."""
        for t in [self.reaper, *self.pending]:
            if t is not None:
                t.cancel()
        if self.rooms.journal is not None:
            self.rooms.journal.close()

    async def in_thread(self, fn, *args):
        """Return ``fn(*args)`` run in one of the hub's file threads."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    # ------------------------------------------------------------------ pushing state

    def broadcast(self, room: Room) -> None:
        """Put every connection of ``room`` its own state message in its outbox; never waits."""
        conns = list(self.conns.get(room.rid, ()))
        if not conns:
            return
        cache = self.rooms.messages(room, [seat for _, seat in conns])
        for box, seat in conns:
            box.put(cache[seat])

    def close_room(self, room: Room, code: int) -> None:
        """Tell every page of ``room`` why it is closed, and close their connections with ``code``."""
        msg = json.dumps({"type": "closed", "message": f"This room is closed: {room.expired}."})
        for box, _ in list(self.conns.get(room.rid, ())):
            box.put(msg)
            box.finish(code)

    async def close_connections(self, code: int = 1001) -> None:
        """Close every connection of every room (the server is stopping, or a test gave up waiting)."""
        for conns in list(self.conns.values()):
            for box, _ in list(conns):
                box.finish(code)

    # ------------------------------------------------------------------ bots

    def drive_soon(self, room: Room) -> None:
        """Have the bots of ``room`` move, if a driver is not at it already."""
        if room.rid not in self.driving:
            self.driving.add(room.rid)
            self.spawn(self.drive(room))

    async def drive(self, room: Room) -> None:
        """Let the bots of ``room`` move one at a time, each move shown at once, until a person acts."""
        try:
            await self._drive(room)
        except Exception as exc:  # this room's failure (a record that cannot be written): it alone stops
            self.driving.discard(room.rid)
            await self.fail_room(room, exc)
        except BaseException:
            self.driving.discard(room.rid)
            raise

    async def _drive(self, room: Room) -> None:
        pool = self.rooms.arena.pool
        while True:
            async with self.lock(room.rid):
                game = room.game
                if game is None or room.expired or game.bot_to_act() < 0:
                    self.driving.discard(room.rid)  # with no await since the check: a mover re-drives
                    return
                job = game.bot_job(game.bot_to_act())
                mark = (room.game_index, game.moves_played)
            try:  # the bot thinks with no lock held: the room's pages, joins and leaves go on
                card, capture = await pool.decide_async(job)
                failure = None
            except AgentFailure as exc:
                failure = str(exc)
            async with self.lock(room.rid):
                if room.game is not game or room.expired or (room.game_index, game.moves_played) != mark:
                    continue  # the room moved on (closed, taken over) while the bot thought
                if failure is not None:
                    game.fail(failure)
                    self.rooms.after_move(room)
                else:
                    await self.play(room, job.seat, card, cards_of(capture))
                self.broadcast(room)

    async def play(self, room: Room, seat: int, card: int, capture: list[int]) -> None:
        """Play one move and finish the game it ends (ValueError if illegal: nothing changes).

        With a journal (an fsync) or records (files) it runs in a worker thread, in one hop; in
        memory it is a few microseconds of engine work, done on the loop without a thread's hand-off.
        """
        def step() -> None:
            self.rooms.play(room, seat, card, capture)  # ValueError: an illegal move, nothing changed
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
        self.close_room(room, FAILED_CLOSE)

    # ------------------------------------------------------------------ the background check

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.options.tick)
            try:
                self.reap_once()
            except Exception:  # a bug here must not stop the checks: logged, and the next tick runs
                LOG.exception("rooms: background check failed")

    def reap_once(self) -> None:
        """Start a takeover for each room with a person away past the limit, and a closing for each idle
        room or room nobody joined; wait for none of them (each room's work is a task of its own)."""
        rooms = self.rooms
        for room in list(rooms.rooms.values()):
            if room.rid not in self.busy and rooms.gone_seats(room):
                self.busy.add(room.rid)
                self.spawn(self._take_over(room))
        for room, why in rooms.due_to_close():
            if room.rid not in self.busy:
                self.busy.add(room.rid)
                self.spawn(self._expire(room, why))
        self.forget_gone()

    def forget_gone(self) -> None:
        """Drop the lock and the connection set of each room the rooms no longer hold (made way, or
        evicted) once nothing can still take them (no connection, no background task, the lock free):
        a long-running server keeps one of each per live room only."""
        held = self.rooms.rooms
        for rid in [r for r in self.conns if r not in held and not self.conns[r]]:
            del self.conns[rid]
        for rid in [r for r, lock in self.locks.items()
                    if r not in held and r not in self.conns and r not in self.busy and r not in self.driving
                    and not lock.locked()]:
            del self.locks[rid]

    async def _take_over(self, room: Room) -> None:
        try:
            async with self.lock(room.rid):
                seats = self.rooms.gone_seats(room)
                for seat in seats:
                    await self.in_thread(self.rooms.take_over, room, seat)
                if seats:
                    self.broadcast(room)
        except Exception as exc:
            await self.fail_room(room, exc)
            return
        finally:
            self.busy.discard(room.rid)
        self.drive_soon(room)

    async def _expire(self, room: Room, why: str) -> None:
        try:
            async with self.lock(room.rid):
                if not room.expired:
                    await self.in_thread(self.rooms.close, room, why)
                    self.close_room(room, CLOSED_CLOSE)
        except Exception as exc:
            await self.fail_room(room, exc)
        finally:
            self.busy.discard(room.rid)

    # ------------------------------------------------------------------ endpoints

    def client_of(self, peer: str | None, headers) -> str:
        """Return the address of a request or socket: the peer, or what a trusted proxy forwarded."""
        return client_address(peer, headers, self.options.trusted_proxies)

    async def open_room(self, request: Request) -> Response:
        """``POST /api/rooms``: open a room; answer its links (201), or the refusal."""
        client = self.client_of(request.client.host if request.client else None, request.headers)
        body = await read_json(request, MAX_GAME_BODY)
        settings, bots = await self.in_thread(self.rooms.prepare, body)
        room, tokens, watch = self.rooms.admit(settings, bots, client)
        self.ensure_running()
        links = [{"seat": s, "name": room.seats[s].name, "link": f"/room.html#t={t}"}
                 for s, t in sorted(tokens.items())]
        return JSONResponse({"room": room.info(), "links": links, "watch": f"/room.html#t={watch}"},
                            status_code=201)

    async def socket(self, ws: WebSocket) -> None:
        """``/api/rooms/ws``: one page's connection, from hello until it goes."""
        peer = ws.client.host if getattr(ws, "client", None) else None
        key = client_key(self.client_of(peer, getattr(ws, "headers", {})))
        self.sockets += 1
        counted = hello = False
        try:
            await ws.accept()
            if self.sockets > self.options.max_connections:
                await self._refuse(ws, ApiError(503, "the server holds as many connections as it may; "
                                                     "try again later"))
                return
            why = self.counts.refusal(key)
            if why is not None:
                await self._refuse(ws, ApiError(429, why + "; try again later"))
                return
            counted = True
            self.ensure_running()
            try:
                room, seat = await self._hello(ws)
            except WebSocketDisconnect:
                return
            except asyncio.TimeoutError:
                await self._refuse(ws, ApiError(408, f"say hello within {self.options.hello_seconds:g} s"))
                return
            except BinaryFrame:
                await self._refuse(ws, ApiError(400, "messages are JSON text, not binary"), BINARY_CLOSE)
                return
            except ApiError as exc:
                await self._refuse(ws, exc)
                return
            self.counts.said_hello(key)
            hello = True
            await self._connection(ws, room, seat)
        finally:
            self.sockets -= 1
            if counted:
                self.counts.gone(key, waiting=not hello)

    async def _refuse(self, ws: WebSocket, exc: ApiError, code: int | None = None) -> None:
        """Send a socket with no outbox its refusal and close it (dropped if it cannot be written)."""
        async def say() -> None:
            await ws.send_text(error_message(exc))
            await ws.close(code=code or 4000 + exc.status)

        try:
            await asyncio.wait_for(say(), CLOSE_SECONDS)
        except Exception:  # the peer does not read, or went: drop it
            abort = getattr(ws, "scope", {}).get(ABORT_KEY)
            if abort is not None:
                abort()

    async def _hello(self, ws: WebSocket) -> tuple[Room, int]:
        text = await asyncio.wait_for(receive_text(ws), self.options.hello_seconds)
        msg = parse_message(text)
        if not isinstance(msg, dict) or msg.get("type") != "hello":
            raise ApiError(400, "say {\"type\": \"hello\", \"token\": \"...\"} first")
        room, seat = self.rooms.lookup(msg.get("token"))
        if not self.rooms.allow_message(room, seat):  # a hello is a message of its token: no join storms
            raise ApiError(429, "too many messages: slow down")
        return room, seat

    async def _connection(self, ws: WebSocket, room: Room, seat: int) -> None:
        """Serve a connection that said hello: join its seat, answer its messages, leave when it goes."""
        box = Outbox(ws)
        conn = (box, seat)
        joined = False
        try:
            async with self.lock(room.rid):
                started = self.rooms.join(room, seat)
                self.conns.setdefault(room.rid, set()).add(conn)
                joined = True
                self.broadcast(room)
            if started:
                self.drive_soon(room)
            await self._serve(ws, box, room, seat)
        except ApiError as exc:  # the link is open in too many places
            box.put(error_message(exc))
            box.finish(4000 + exc.status)
        finally:
            # Leaving is plain bookkeeping done with no await: a handler the server cancels (the
            # socket went, the server stops) must still leave its seat, or the seat stays
            # "connected" for ever and never passes to the takeover bot. The others are told by a
            # task of its own.
            if joined:
                self.conns.get(room.rid, set()).discard(conn)
                self.rooms.leave(room, seat)
                self.spawn(self._presence(room))
            self.spawn(self._after(box))

    @staticmethod
    async def _after(box: Outbox) -> None:
        """Let a closing connection's writer send its last messages and close; stop it otherwise."""
        if box.closing is not None and not box.dead:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(box.task), CLOSE_SECONDS * 2)
        await box.stop()

    async def _presence(self, room: Room) -> None:
        """Show the room's pages who is connected now (a person left)."""
        async with self.lock(room.rid):
            if not room.expired:
                self.broadcast(room)

    async def _serve(self, ws: WebSocket, box: Outbox, room: Room, seat: int) -> None:
        """Answer one connection's messages until it goes (or is closed for too many refusals)."""
        strikes = 0
        try:
            while not box.dead:
                text = await receive_text(ws)
                error = await self.handle(room, seat, text, box)
                if error is not None:
                    strikes = strikes + 1 if error.status == 429 else 0
                    box.put(error_message(error))
                    if strikes >= self.options.strikes:
                        box.finish(4429)
                        return
                else:
                    strikes = 0
        except BinaryFrame:
            box.put(error_message(ApiError(400, "messages are JSON text, not binary")))
            box.finish(BINARY_CLOSE)
        except (WebSocketDisconnect, RuntimeError):
            pass

    async def handle(self, room: Room, seat: int, text: str, box: Outbox | None = None) -> ApiError | None:
        """Handle one message of a connection of ``seat`` (outbox ``box``); return the refusal, if any."""
        if not self.rooms.allow_message(room, seat):
            return ApiError(429, "too many messages: slow down")
        try:
            msg = parse_message(text)
        except ApiError as exc:
            return exc
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "ping":
            if box is not None:
                box.put(json.dumps({"type": "pong"}))
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
            self.broadcast(room)
        self.drive_soon(room)
        return None


def room_routes(hub: RoomHub) -> list:
    """Return the rooms' routes (they go before the arena's catch-all ``/api/...`` route)."""
    return [Route("/api/rooms", json_errors(hub.open_room), methods=["POST"]),
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
