"""Guards of the rooms: behaviours no test caught when a fault was planted (issue 67).

Each test is written against what a client, a page or a restarted server sees (an answer, a message,
a record, a journal read back), not against the lines of ``escoba_arena.web``, so that it holds
across a rewrite of the rooms. Everything runs in-process on loopback, with a fake clock where time
matters.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

pytest.importorskip("starlette")

from escoba_arena.web.lobby import Arena  # noqa: E402
from escoba_arena.web.room_conns import ABORT_KEY, CLOSE_SECONDS  # noqa: E402
from escoba_arena.web.room_load import DAMAGED  # noqa: E402
from escoba_arena.web.room_options import RoomOptions  # noqa: E402
from escoba_arena.web.rooms import Rooms  # noqa: E402
from escoba_arena.web.rooms_routes import RoomHub  # noqa: E402
from tests.frontends.arena_support import client  # noqa: E402
from tests.frontends.rooms_support import (  # noqa: E402
    finish_game,
    leave_and_take_over,
    open_room,
    play_until,
    receive_json,
    rooms_client,
    tokens_of,
    watch_token,
)

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
DEALS = [{"seed": 5, "game_id": 0}, {"seed": 5, "game_id": 1}]
"""Two fixed deals: a room that plays two games."""


def _rooms(directory=None, warnings: list[str] | None = None) -> tuple[Rooms, list[float]]:
    """Return a server's rooms on a fake clock (``now[0]``), keeping their journal in ``directory``."""
    now = [100.0]
    return Rooms(Arena([]), directory, clock=lambda: now[0],
                 warn=warnings.append if warnings is not None else None), now


def _hello(tc, ws, token: str) -> dict:
    """Say hello with ``token`` on ``ws``; return the server's first answer."""
    ws.send_json({"type": "hello", "token": token})
    return receive_json(tc, ws, "the answer to a hello")


# ---------------------------------------------------------------------- per-client room caps


def test_a_client_may_hold_exactly_its_room_cap():
    """``per_client`` open rooms are allowed to one address and the next is refused (429, naming the
    cap); another address is not held up by it."""
    with rooms_client(per_client=3, waiting_per_client=50) as tc:
        codes = [tc.post("/api/rooms", json={"seats": ["human", "greedy"]}) for _ in range(4)]
        assert [r.status_code for r in codes] == [201, 201, 201, 429]
        assert "3 rooms open, the most one client may have" in codes[-1].json()["error"]
        from starlette.testclient import TestClient

        other = TestClient(tc.app, client=("127.0.0.7", 50000))
        assert other.post("/api/rooms", json={"seats": ["human", "greedy"]}).status_code == 201


def test_a_client_may_hold_exactly_its_cap_of_waiting_rooms():
    """``waiting_per_client`` rooms waiting for their people are allowed to one address, and the next is
    refused (429) while its open-room cap is far away."""
    with rooms_client(per_client=50, waiting_per_client=2) as tc:
        codes = [tc.post("/api/rooms", json={"seats": ["human", "greedy"]}) for _ in range(3)]
        assert [r.status_code for r in codes] == [201, 201, 429]
        assert "2 rooms waiting for their people" in codes[-1].json()["error"]


# ---------------------------------------------------------------------- what a message may be


def test_a_message_over_4_kib_is_refused_and_one_of_4_kib_is_read():
    """A page's message is at most 4096 bytes: a ping of exactly 4096 is answered, one of 4097 is
    refused with 413 (and the connection goes on)."""
    with rooms_client() as tc:
        token = tokens_of(open_room(tc, seats=["human", "human"]))[0]
        with tc.websocket_connect("/api/rooms/ws") as ws:
            assert _hello(tc, ws, token)["type"] == "state"
            head = '{"type": "ping", "pad": "'
            for size, want in ((4096, "pong"), (4097, "error"), (4096, "pong")):
                ws.send_text(head + "x" * (size - len(head) - 2) + '"}')
                m = receive_json(tc, ws, f"the answer to a message of {size} bytes")
                assert m["type"] == want, (size, m)
                if want == "error":
                    assert m["status"] == 413 and "at most 4096 bytes" in m["message"], m


@pytest.mark.parametrize("depth, refused", [(4, False), (5, True), (8, True)])
def test_a_message_nested_deeper_than_4_levels_is_refused(depth, refused):
    """A page's message nests at most 4 levels (the object itself is the first): a ping 4 deep is
    answered, 5 or 8 deep is refused with 400 "nested too deep"."""
    with rooms_client() as tc:
        token = tokens_of(open_room(tc, seats=["human", "human"]))[0]
        with tc.websocket_connect("/api/rooms/ws") as ws:
            assert _hello(tc, ws, token)["type"] == "state"
            ws.send_text('{"type": "ping", "x": ' + "[" * (depth - 1) + "0" + "]" * (depth - 1) + "}")
            m = receive_json(tc, ws, f"the answer to a message {depth} deep")
        if refused:
            assert m["type"] == "error" and m["status"] == 400 and "nested too deep" in m["message"], m
        else:
            assert m["type"] == "pong", m


# ---------------------------------------------------------------------- what a page may load


CSP = {"default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "img-src": "'self' data:",
       "connect-src": "'self'", "form-action": "'self'", "base-uri": "'none'", "frame-ancestors": "'none'"}
"""The whole Content-Security-Policy: pages talk (fetch, WebSocket) to their own origin only."""


@pytest.mark.parametrize("method, path", [("GET", "/room.html"), ("GET", "/room.js"), ("GET", "/"),
                                          ("GET", "/api/info"), ("POST", "/api/rooms"),
                                          ("GET", "/no-such-page.html")])
def test_pages_may_connect_to_their_own_origin_only(method, path):
    """Every answer's policy is exactly ``CSP``: ``connect-src 'self'`` (no ``*``, no other host or scheme)
    keeps a page's script from sending a seat's token or view anywhere but this server."""
    r = client().request(method, path, json={"seats": "nonsense"} if method == "POST" else None)
    csp = r.headers.get("content-security-policy", "")
    got = dict((d.strip().split(" ", 1) + [""])[:2] for d in csp.split(";") if d.strip())
    assert got == CSP, (path, csp)


# ---------------------------------------------------------------------- spectators


def test_the_spectator_link_holds_at_most_per_link_connections():
    """Spectators are counted like seats: with ``per_link=2`` a third page on the spectator link is
    refused (429), and once one of the two goes a new one is let in."""
    with rooms_client(per_link=2) as tc:
        watch = watch_token(open_room(tc, seats=["human", "human"]))
        with tc.websocket_connect("/api/rooms/ws") as w1:
            with tc.websocket_connect("/api/rooms/ws") as w2:
                assert _hello(tc, w1, watch)["seat"] == -1 and _hello(tc, w2, watch)["seat"] == -1
                with tc.websocket_connect("/api/rooms/ws") as w3:
                    m = _hello(tc, w3, watch)
                    assert m["type"] == "error" and m["status"] == 429, m
                    assert "open in 2 places" in m["message"], m
        # Both went: the link is free again (the server sees them go a moment later).
        deadline, m = time.monotonic() + 10, {}
        while time.monotonic() < deadline:
            with tc.websocket_connect("/api/rooms/ws") as w4, tc.websocket_connect("/api/rooms/ws") as w5:
                m = _hello(tc, w4, watch), _hello(tc, w5, watch)
                if all(x["type"] == "state" for x in m):
                    break
            time.sleep(0.05)
        assert all(x["type"] == "state" for x in m), m


# ---------------------------------------------------------------------- takeovers, journal, records


def test_takeover_bots_play_as_bots_seated_there_from_the_start():
    """Each takeover bot plays its seat as a bot of that spec seated there from the start would: a room
    of three whose people at seats 1 and 2 are replaced by ``random`` before the first move plays the
    very moves of a room with ``random`` bots at seats 1 and 2, on the same deal (seat 0 playing alike
    in both). Takeover bots given one seed between them would make the same random choices at both
    seats, unlike the bots they stand for."""
    rooms, now = _rooms()
    people, _, _ = rooms.open({"seats": ["human", "human", "human"], "rules": {"num_players": 3},
                               "seed": 11, "takeover": "random"})
    for seat in (0, 1, 2):
        rooms.join(people, seat)
    rooms.leave(people, 2)
    rooms.leave(people, 1)
    now[0] += rooms.takeover_seconds + 1
    assert rooms.gone_seats(people) == [1, 2]  # both away past the limit: both replaced
    rooms.take_over(people, 2)
    rooms.take_over(people, 1)
    bots, _, _ = rooms.open({"seats": ["human", "random", "random"], "rules": {"num_players": 3}, "seed": 11})
    rooms.join(bots, 0)
    for room in (people, bots):
        assert room.game.moves_played == 0
        finish_game(rooms, room)
    assert [t["seat"] for t in people.takeovers] == [2, 1]
    assert people.game.rounds == bots.game.rounds


@pytest.mark.parametrize("other", [0, 2], ids=["the-game-before", "a-game-past-the-last"])
def test_a_journaled_move_of_another_game_of_the_room_is_not_applied(tmp_path, other):
    """A move entry tagged with another game of the same room (the finished one, or one past the room's
    last) is never played in the current game, even when it is legal there: reading the journal back
    closes the room with one warning line, and the current game is left as it was."""
    rooms, _ = _rooms(tmp_path)
    room, _, _ = rooms.open({"seats": ["human", "greedy"], "deals": DEALS})
    rooms.join(room, 0)
    finish_game(rooms, room)
    assert room.game_index == 1 and not room.game.done  # the second game is under way
    play_until(rooms, room, 0)
    played = room.game.moves_played
    mv = room.game.view_for(0)["moves"][0]
    rooms.journal.append({"e": "move", "room": room.rid, "game": other, "seat": 0, "card": mv["card"],
                          "capture": sorted(mv["options"][0])})
    rooms.journal.close()
    warnings: list[str] = []
    back, _ = _rooms(tmp_path, warnings)
    assert back.load() == 1
    again = back.rooms[room.rid]
    assert again.game_index == 1 and again.game.moves_played == played
    assert again.expired == DAMAGED
    assert len(warnings) == 1 and "a move of a game that is not being played" in warnings[0], warnings
    back.journal.close()


def test_a_game_record_lists_the_takeovers_of_that_game_only(tmp_path):
    """A room of two games where a person is replaced in each game: the record of each game lists the
    takeover made in it, and none of the other game's."""
    rooms, now = _rooms(tmp_path)
    room, _, _ = rooms.open({"seats": [{"kind": "human", "name": "ana"}, {"kind": "human", "name": "eva"}],
                             "deals": DEALS, "record": True, "takeover": "greedy"})
    rooms.join(room, 0)
    rooms.join(room, 1)
    leave_and_take_over(rooms, room, 1, now)
    finish_game(rooms, room)
    assert room.game_index == 1
    leave_and_take_over(rooms, room, 0, now)
    finish_game(rooms, room)
    recs = [json.loads((tmp_path / "records" / name).read_text()) for name in room.records]
    assert [r["room"]["game"] for r in recs] == [1, 2]
    assert [[(t["game"], t["seat"], t["name"]) for t in r["room"]["takeovers"]] for r in recs] == \
        [[(1, 1, "eva")], [(2, 0, "ana")]]


class _DeafSocket:
    """A page's socket that never reads (``send_text`` waits for ever) or is gone (it raises)."""

    def __init__(self, gone: bool):
        self.gone, self.aborted, self.closed = gone, 0, False
        self.scope = {ABORT_KEY: self.abort}
        self.headers: dict = {}

    def abort(self) -> None:
        self.aborted += 1

    async def accept(self) -> None:
        return None

    async def send_text(self, text: str) -> None:
        if self.gone:
            raise ConnectionResetError("the peer went")
        await asyncio.Event().wait()

    async def close(self, code: int = 1000) -> None:
        self.closed = True


@pytest.mark.parametrize("gone", [False, True])
def test_a_refused_socket_that_does_not_read_or_went_is_dropped_within_the_close_time(gone):
    """A socket refused at the door (here: the server holds its connections already) whose refusal
    cannot be written is dropped (its TCP connection aborted) within ``CLOSE_SECONDS``, and the server
    counts it gone; no test refused a page that does not read before (mutation testing, issue 67)."""
    async def main() -> _DeafSocket:
        hub = RoomHub(Arena([]), RoomOptions(max_connections=0))
        ws = _DeafSocket(gone)
        try:
            await asyncio.wait_for(hub.socket(ws), CLOSE_SECONDS + 5)
            assert hub.sockets == 0
        finally:
            await hub.stop()
        return ws

    ws = asyncio.run(main())
    assert ws.aborted == 1 and not ws.closed


def test_a_message_that_is_not_a_move_or_a_ping_is_refused_with_the_forms_it_may_take():
    """An object of another type, a JSON list or a number is refused (400, the two forms named) and the
    connection goes on; before, no test sent one (mutation testing, issue 67)."""
    with rooms_client() as tc:
        ans = open_room(tc, seats=["human", "human"], seed=1)
        with tc.websocket_connect("/api/rooms/ws") as ws:
            _hello(tc, ws, tokens_of(ans)[0])
            for bad in ({"type": "chat"}, [1, 2], 7):
                ws.send_json(bad)
                m = receive_json(tc, ws, f"the answer to {bad!r}")
                while m["type"] == "state":
                    m = receive_json(tc, ws, f"the answer to {bad!r}")
                assert m == {"type": "error", "status": 400,
                             "message": 'a message is {"type": "move", ...} or {"type": "ping"}'}, bad
            ws.send_json({"type": "ping"})
            m = receive_json(tc, ws, "the pong")
            while m["type"] == "state":
                m = receive_json(tc, ws, "the pong")
            assert m == {"type": "pong"}


def test_a_move_waits_for_its_own_rooms_lock_and_for_no_other():
    """A move waits while its room is busy (its lock held: a takeover, a join) and not for another room;
    no test held a room's lock while a move came before (mutation testing, issue 67)."""
    async def main() -> None:
        hub = RoomHub(Arena([]), RoomOptions())
        a, _, _ = hub.rooms.open({"seats": ["human", "human"], "seed": 1})
        b, _, _ = hub.rooms.open({"seats": ["human", "human"], "seed": 2})
        for room in (a, b):
            hub.rooms.join(room, 0)
            hub.rooms.join(room, 1)

        def move_of(room):
            seat = next(s for s in (0, 1) if room.game.moves_for(s))
            card, options = next(iter(room.game.moves_for(seat).items()))
            return seat, json.dumps({"type": "move", "card": card, "capture": options[0]})

        try:
            async with hub.lock(a.rid):
                assert await asyncio.wait_for(hub.handle(b, *move_of(b)), 5) is None
                task = asyncio.get_running_loop().create_task(hub.handle(a, *move_of(a)))
                for _ in range(20):
                    await asyncio.sleep(0)
                assert not task.done()
            assert await asyncio.wait_for(task, 5) is None
        finally:
            await hub.stop()

    asyncio.run(main())
