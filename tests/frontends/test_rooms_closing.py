"""How a room closes, word for word: a room whose background work failed, and an idle room.

The pages are told why (one ``closed`` message), their connections end with the room's close code, the
log has one line, and the room's links answer 410 with the same reason afterwards. The mutation run of
``escoba_arena/web/rooms_routes.py`` found that the tests read these only in part (``"could not go on"
in message``), so a changed reason, a lost close code or a second log line went unseen.
"""

from __future__ import annotations

import logging
import time

import pytest

pytest.importorskip("starlette")
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from escoba_arena.web.guard import ApiError  # noqa: E402
from escoba_arena.web.rooms_routes import CLOSED_CLOSE, FAILED_CLOSE, RoomFailure  # noqa: E402
from tests.frontends.rooms_support import open_room, receive_json, rooms_client, tokens_of  # noqa: E402


def _hello(tc, ws, token) -> dict:
    ws.send_json({"type": "hello", "token": token})
    return receive_json(tc, ws, "the answer to hello")


def _closed_with(tc, ws) -> tuple[dict, int]:
    """Return the ``closed`` message a page is sent and its connection's close code."""
    m = receive_json(tc, ws, "the room's closed message")
    while m["type"] != "closed":
        m = receive_json(tc, ws, "the room's closed message")
    with pytest.raises(WebSocketDisconnect) as gone:
        ws.receive_json()
    return m, gone.value.code


def _log_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("escoba_arena")]


@pytest.mark.parametrize("fault", ["plain", "room failure", "api error", "close fails"])
def test_a_failed_room_tells_its_pages_why_closes_them_with_4500_and_logs_one_line(caplog, monkeypatch,
                                                                                   fault):
    with rooms_client(tick=0.05) as tc:
        ans = open_room(tc, seats=["human", "human"], seed=1)
        hub = tc.app.state.rooms
        room = hub.rooms.rooms[ans["room"]["id"]]
        cause = OSError(28, "No space left\n\t on   device " + "x" * 300)
        what = ("OSError: [Errno 28] No space left on device " + "x" * 300)[:200]
        exc = {"plain": cause, "room failure": RoomFailure(cause), "close fails": cause,
               "api error": ApiError(503, "the journal\n is  full")}[fault]
        if fault == "api error":
            what = "the journal is full"
        if fault == "close fails":  # the journal, say, is the failure: the room still closes
            def refuse(room, why):
                raise OSError("the journal cannot be written")

            monkeypatch.setattr(hub.rooms, "close", refuse)
        caplog.set_level(logging.WARNING, logger="escoba_arena.web.rooms")
        with tc.websocket_connect("/api/rooms/ws") as ws:
            assert _hello(tc, ws, tokens_of(ans)[0])["type"] == "state"
            tc.portal.call(hub.fail_room, room, exc)
            m, code = _closed_with(tc, ws)
        reason = f"the server could not go on with it ({what})"
        assert m == {"type": "closed", "message": f"This room is closed: {reason}."}
        assert code == FAILED_CLOSE
        assert room.expired == reason
        assert _log_lines(caplog) == [f"rooms: room {room.rid} closed: {what}"]
        tc.portal.call(hub.fail_room, room, RuntimeError("again"))  # closed already: nothing more
        assert room.expired == reason and len(_log_lines(caplog)) == 1
        with tc.websocket_connect("/api/rooms/ws") as ws:
            e = _hello(tc, ws, tokens_of(ans)[1])
            assert e["type"] == "error" and e["status"] == 410 and reason in e["message"]


def test_an_idle_room_closes_its_pages_with_4410_and_its_reason():
    with rooms_client(idle_seconds=0.3, tick=0.05) as tc:
        ans = open_room(tc, seats=["human", "human"], seed=2)
        room = tc.app.state.rooms.rooms.rooms[ans["room"]["id"]]
        with tc.websocket_connect("/api/rooms/ws") as ws:
            assert _hello(tc, ws, tokens_of(ans)[0])["type"] == "state"
            m, code = _closed_with(tc, ws)
        reason = "it expired after 0.005 minutes without activity"
        assert m == {"type": "closed", "message": f"This room is closed: {reason}."}
        assert code == CLOSED_CLOSE and room.expired == reason
        with tc.websocket_connect("/api/rooms/ws") as ws:
            e = _hello(tc, ws, tokens_of(ans)[1])
            assert e["status"] == 410 and reason in e["message"]


def test_a_room_failure_names_its_cause():
    assert str(RoomFailure(ValueError("bad deal"))) == "ValueError: bad deal"
    assert str(RoomFailure(KeyError("k"))) == "KeyError: 'k'"


def _hold_lock(tc, rid):
    """Take room ``rid``'s lock in the server's event loop (as a move would); return it."""
    hub = tc.app.state.rooms

    async def take():
        lock = hub.lock(rid)
        await lock.acquire()
        return lock

    return tc.portal.call(take)


def _release(tc, lock) -> None:
    async def release():
        lock.release()

    tc.portal.call(release)


def test_a_takeover_waits_for_its_rooms_lock():
    """A takeover changes the room's state: it waits while a move of the room holds the lock."""
    with rooms_client(takeover_seconds=0.1, tick=0.05) as tc:
        ans = open_room(tc, seats=["human", "human"], seed=3)
        room = tc.app.state.rooms.rooms.rooms[ans["room"]["id"]]
        with tc.websocket_connect("/api/rooms/ws") as stays:
            _hello(tc, stays, tokens_of(ans)[0])
            with tc.websocket_connect("/api/rooms/ws") as goes:
                _hello(tc, goes, tokens_of(ans)[1])
                lock = _hold_lock(tc, room.rid)  # before the person goes: no takeover can come first
            deadline = time.monotonic() + 10
            while room.seats[1].left_at is None and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.6)  # the person is away past 0.1 s, and the check ran several times
            assert not room.seats[1].replaced, "the takeover did not wait for the room's lock"
            _release(tc, lock)
            deadline = time.monotonic() + 20
            while not room.seats[1].replaced and time.monotonic() < deadline:
                time.sleep(0.02)
            assert room.seats[1].replaced


def test_an_expiry_waits_for_its_rooms_lock(caplog):
    """... and closes a room without pages quietly (nothing to tell, nothing logged)."""
    caplog.set_level(logging.WARNING, logger="escoba_arena")
    with rooms_client(idle_seconds=0.1, tick=0.05) as tc:
        hub = tc.app.state.rooms

        async def open_held():  # the room and its lock in one turn of the loop: no expiry between
            room, _, _ = hub.rooms.open({"seats": ["human", "human"], "seed": 4})
            lock = hub.lock(room.rid)
            await lock.acquire()
            return room, lock

        room, lock = tc.portal.call(open_held)
        time.sleep(0.6)
        assert not room.expired, "the expiry did not wait for the room's lock"
        _release(tc, lock)
        deadline = time.monotonic() + 20
        while not room.expired and time.monotonic() < deadline:
            time.sleep(0.02)
        assert room.expired == "it expired after 0.00166667 minutes without activity"
        time.sleep(0.2)
    assert _log_lines(caplog) == []


def test_a_stopping_server_closes_the_pages_with_1001():
    with rooms_client() as tc:
        ans = open_room(tc, seats=["human", "human"], seed=5)
        with tc.websocket_connect("/api/rooms/ws") as ws:
            _hello(tc, ws, tokens_of(ans)[0])
            tc.portal.call(tc.app.state.rooms.close_connections)
            with pytest.raises(WebSocketDisconnect) as gone:
                while True:
                    ws.receive_json()
            assert gone.value.code == 1001


def test_the_hub_forgets_the_locks_and_connections_of_rooms_that_are_gone():
    """Rooms make way for new ones at the cap; the hub's lock and connection set of each room that went
    must go with it (before, both stayed for ever: one lock and one set per room a server ever had)."""
    with rooms_client(max_rooms=2, idle_seconds=0.1, tick=0.05) as tc:
        hub = tc.app.state.rooms
        opened = []
        for seed in range(6):
            ans = open_room(tc, seats=["human", "human"], seed=seed)
            opened.append(ans["room"]["id"])
            with tc.websocket_connect("/api/rooms/ws") as ws:  # the room gets a lock and a connection set
                _hello(tc, ws, tokens_of(ans)[0])
            deadline = time.monotonic() + 20
            while not hub.rooms.rooms[opened[-1]].expired and time.monotonic() < deadline:
                time.sleep(0.02)  # closed (idle): the next room makes it go
        time.sleep(0.3)  # a few checks of the background task
        kept = set(hub.rooms.rooms)
        assert len(kept) <= 2 and opened[-1] in kept
        assert set(hub.locks) <= kept and set(hub.conns) <= kept


def test_a_page_that_does_not_say_hello_first_or_says_it_too_often_is_told_exactly_that():
    with rooms_client(rate=1.0, burst=2.0) as tc:
        ans = open_room(tc, seats=["human", "human"], seed=6)
        with tc.websocket_connect("/api/rooms/ws") as ws:
            ws.send_json({"type": "ping"})
            m = receive_json(tc, ws, "the refusal of a first message that is not a hello")
            assert m == {"type": "error", "status": 400,
                         "message": 'say {"type": "hello", "token": "..."} first'}
        token = tokens_of(ans)[0]
        answers = []
        for _ in range(4):  # hellos of one token, faster than its rate: joins cannot storm a room
            with tc.websocket_connect("/api/rooms/ws") as ws:
                answers.append(_hello(tc, ws, token))
        refused = [m for m in answers if m["type"] == "error"]
        slow = {"type": "error", "status": 429, "message": "too many messages: slow down"}
        assert refused and all(m == slow for m in refused)


def test_the_answer_to_opening_a_room_lists_each_seat_with_its_name_and_link():
    with rooms_client() as tc:
        ans = open_room(tc, seats=[{"kind": "human", "name": "ana"}, "greedy", "human"],
                        rules={"num_players": 3}, seed=7)
        links = ans["links"]
        assert [(x["seat"], x["name"]) for x in links] == [(0, "ana"), (2, ans["room"]["seats"][2]["name"])]
        assert all(set(x) == {"seat", "name", "link"} for x in links)
        assert all(x["link"].startswith("/room.html#t=") for x in links)
        assert ans["watch"].startswith("/room.html#t=") and set(ans) == {"room", "links", "watch"}


def _wait_for(check, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_clients_socket_counts_go_back_to_zero_when_its_sockets_go():
    """Every socket is counted while it is open, as waiting until its hello; when it goes, with or without
    a hello, its counts go (before a mistake here, an address locked itself out after a few visits, or
    its waiting sockets were never counted against the limit)."""
    with rooms_client() as tc:
        ans = open_room(tc, seats=["human", "human"], seed=8)
        counts = tc.app.state.rooms.counts

        def totals():
            return sum(counts.all.values()), sum(counts.waiting.values())

        with tc.websocket_connect("/api/rooms/ws"):  # says no hello
            _wait_for(lambda: totals() == (1, 1))
            assert totals() == (1, 1)
            with tc.websocket_connect("/api/rooms/ws") as ws:
                assert _hello(tc, ws, tokens_of(ans)[0])["type"] == "state"
                assert totals() == (2, 1)
            _wait_for(lambda: totals()[0] == 1)
            assert totals() == (1, 1)  # the silent one is still waiting for its hello
        _wait_for(lambda: not counts.all)
        assert not counts.all and not counts.waiting
