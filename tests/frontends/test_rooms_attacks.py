"""Rooms attacked: records of a deal in play, a broken room beside healthy ones, floods, hostile frames."""

from __future__ import annotations

import json
import logging
import time

import pytest

pytest.importorskip("starlette")

from tests.frontends.rooms_support import (  # noqa: E402
    Person,
    close_all,
    finish_game,
    open_room,
    play_people,
    receive_json,
    rooms_client,
    tokens_of,
    watch_token,
)

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
RULES = {"target_score": 6}


def _rooms(tc):
    return tc.app.state.rooms.rooms


def _replays(tc) -> list[str]:
    return [f["name"] for f in tc.get("/api/files").json()["replays"]]


def _hello(tc, ws, token, what="the answer to hello") -> dict:
    ws.send_json({"type": "hello", "token": token})
    return receive_json(tc, ws, what)


# ---------------------------------------------------------------------- records never reveal a deal


@pytest.mark.parametrize("served", [False, True])
def test_a_record_is_never_served_while_another_room_can_deal_its_cards(tmp_path, served):
    """The duplicate design: room A's finished record, room B on the same deal, seats shifted.

    On the code before this check, ``/api/files`` listed A's record and ``/api/replays`` served it
    (every hand and the stock) while B's people were playing those cards.
    """
    with rooms_client(tmp_path, roots=[tmp_path], serve_records=served) as tc:
        deal = [{"seed": 5, "game_id": 0}]
        a = open_room(tc, rules=RULES, seats=["human:ana", "greedy"], deals=deal, record=True)
        b = open_room(tc, rules=RULES, seats=["greedy", "human:bea"], deals=deal, record=True)
        rooms = _rooms(tc)
        ra, rb = rooms.rooms[a["room"]["id"]], rooms.rooms[b["room"]["id"]]
        rooms.join(ra, 0)
        finish_game(rooms, ra)
        (name,) = ra.records
        file = f"0/records/{name}"
        assert (tmp_path / "records" / name).is_file()
        assert file not in _replays(tc)
        for url in ("/api/replays", "/api/replays/frames"):
            r = tc.get(url, params={"file": file})
            assert r.status_code == 403 and "not shown" in r.json()["error"], r.text
        # Once B is over too, the record is served only if the operator said so.
        rooms.join(rb, 1)
        finish_game(rooms, rb)
        assert (file in _replays(tc)) is served
        r = tc.get("/api/replays", params={"file": file})
        assert r.status_code == (200 if served else 403), r.text


def test_a_several_deal_room_shows_no_record_and_no_seed_until_it_is_over(tmp_path):
    """Game 1 of a ``9:0 9:1`` room: its record named seed 9, and the engine then deals game 2 from it.

    On the code before this check the spectator was sent game 1's record (seed included) and the file
    was served while game 2 was played.
    """
    with rooms_client(tmp_path, roots=[tmp_path], serve_records=True) as tc:
        ans = open_room(tc, rules=RULES, seats=["human:ana", "greedy"], record=True,
                        deals=[{"seed": 9, "game_id": 0}, {"seed": 9, "game_id": 1}])
        rooms = _rooms(tc)
        room = rooms.rooms[ans["room"]["id"]]
        rooms.join(room, 0)
        finish_game(rooms, room)
        assert room.status == "playing" and room.game_index == 1 and len(room.records) == 1
        watched = rooms.message(room, -1)
        assert "finished" not in watched and "seed" not in json.dumps(watched)
        assert "not shown yet" in watched["finished_note"]
        file = f"0/records/{room.records[0]}"
        assert file not in _replays(tc)
        assert tc.get("/api/replays", params={"file": file}).status_code == 403
        finish_game(rooms, room)
        assert room.status == "over"
        assert [(r["seed"], r["game_id"]) for r in rooms.message(room, -1)["finished"]] == \
            [rooms.key.engine_deal((9, 0)), rooms.key.engine_deal((9, 1))]
        assert file in _replays(tc) and tc.get("/api/replays", params={"file": file}).status_code == 200


# ---------------------------------------------------------------------- rooms are isolated


def test_a_takeover_bot_that_cannot_be_built_is_refused_when_the_room_opens(tmp_path):
    """On the code before this check the spec was only checked (201) and failed when a person left."""
    with rooms_client(roots=[tmp_path]) as tc:
        r = tc.post("/api/rooms", json={"seats": ["human", "greedy"], "takeover": "checkpoint:path=0/x.pt"})
        assert r.status_code == 400 and "cannot build" in r.json()["error"], r.text
        assert _rooms(tc).rooms == {}


def test_a_failing_room_is_closed_alone_with_one_log_line_and_the_others_go_on(caplog):
    """Room A's takeover bot fails when its person leaves; room B, opened after it, is taken over.

    On the code before this check the background loop raised every tick with a traceback, and B's
    seat was never taken over (its people waited for ever).
    """
    with rooms_client(takeover_seconds=0.2, tick=0.05) as tc:
        a = open_room(tc, seats=["human", "human"], seed=1)
        b = open_room(tc, seats=["human", "greedy"], seed=2)
        rooms = _rooms(tc)
        room_a = rooms.rooms[a["room"]["id"]]
        room_a.takeover = "no-such-agent"  # as a bot whose file went away since the room opened
        caplog.set_level(logging.WARNING, logger="escoba_arena.web.rooms")
        with tc.websocket_connect("/api/rooms/ws") as stays:
            _hello(tc, stays, tokens_of(a)[0], "seat 0 of room A's first state")
            with tc.websocket_connect("/api/rooms/ws") as goes, tc.websocket_connect("/api/rooms/ws") as gb:
                _hello(tc, goes, tokens_of(a)[1], "seat 1 of room A's first state")
                _hello(tc, gb, tokens_of(b)[0], "room B's first state")
            # Both people left: A's takeover fails, B's goes on to the end with its bots.
            m = receive_json(tc, stays, "room A's pages to be told it is closed")
            while m["type"] != "closed":
                m = receive_json(tc, stays, "room A's pages to be told it is closed")
            assert "could not go on" in m["message"]
        room_b = rooms.rooms[b["room"]["id"]]
        deadline = time.monotonic() + 20
        while room_b.status != "over" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert room_b.status == "over", "waited 20 s for room B's takeover bot to finish its game"
        assert room_b.seats[0].replaced == "greedy"
        lines = [r.getMessage() for r in caplog.records if r.name.startswith("escoba_arena")]
        assert len(lines) == 1 and room_a.rid in lines[0] and "\n" not in lines[0], lines
        assert not any(r.exc_info for r in caplog.records)
        with tc.websocket_connect("/api/rooms/ws") as ws:
            e = _hello(tc, ws, tokens_of(a)[0])
            assert e["status"] == 410 and "could not go on" in e["message"]


# The last move is a person's, then a bot's.
@pytest.mark.parametrize("seats", [["human", "human"], ["human", "greedy"]])
def test_a_record_that_cannot_be_written_closes_its_room_only(tmp_path, caplog, seats):
    """The last move of a recording room whose record cannot be written (a full disk).

    Before, the exception left the mover's connection handler (or the bots' task) with a traceback
    and the room stuck.
    """
    with rooms_client(tmp_path) as tc:
        rooms = _rooms(tc)
        real = rooms.write_record

        def write_record(room, again=True):
            if room.rid == broken["room"]["id"]:
                raise OSError(28, "No space left on device")
            return real(room, again)

        rooms.write_record = write_record
        broken = open_room(tc, rules={"target_score": 2}, seats=seats, seed=3, record=True)
        healthy = open_room(tc, rules={"target_score": 2}, seats=seats, seed=3, record=True)
        caplog.set_level(logging.WARNING, logger="escoba_arena.web.rooms")
        for person in play_people(tc, tokens_of(broken)):
            last = person.messages[-1]
            assert last["type"] == "closed" and "No space left" in last["message"], last
        play_people(tc, tokens_of(healthy))
        assert rooms.rooms[healthy["room"]["id"]].status == "over"
        lines = [r.getMessage() for r in caplog.records if r.name.startswith("escoba_arena")]
        assert len(lines) == 1 and broken["room"]["id"] in lines[0], lines


# ---------------------------------------------------------------------- fair shares


def _client(app, address: str):
    from starlette.testclient import TestClient

    return TestClient(app, client=(address, 50000))


def test_one_client_flooding_cannot_lock_another_out():
    """2,000 POSTs from one address used to fill every room of the server (503 for everyone)."""
    with rooms_client(max_rooms=20) as tc:
        flood, other = _client(tc.app, "127.0.0.2"), _client(tc.app, "127.0.0.3")
        codes = [flood.post("/api/rooms", json={"seats": ["human", "greedy"]}).status_code for _ in range(30)]
        assert codes == [201] * 10 + [429] * 20, codes
        r = flood.post("/api/rooms", json={"seats": ["human", "greedy"]})
        assert "waiting for their people" in r.json()["error"]
        assert other.post("/api/rooms", json={"seats": ["human", "greedy"]}).status_code == 201


def test_a_named_proxy_forwards_the_client_and_no_one_else_can():
    with rooms_client(trusted_proxies=["127.0.0.9"]) as tc:
        proxy, direct = _client(tc.app, "127.0.0.9"), _client(tc.app, "127.0.0.5")

        def post(c, forwarded):
            return c.post("/api/rooms", json={"seats": ["human", "greedy"]},
                          headers={"x-forwarded-for": forwarded}).status_code

        assert [post(proxy, "10.0.0.1") for _ in range(11)] == [201] * 10 + [429]
        assert post(proxy, "10.0.0.2") == 201  # another client behind the same proxy
        # A client that is not the proxy cannot pick its address: all its rooms are its own.
        assert [post(direct, f"10.0.1.{k}") for k in range(11)] == [201] * 10 + [429]


def test_rooms_nobody_joined_close_after_minutes_and_their_links_say_so():
    with rooms_client(unjoined_seconds=0.3, tick=0.05) as tc:
        ans = open_room(tc, seats=["human", "human"])
        joined = open_room(tc, seats=["human", "human"])
        with tc.websocket_connect("/api/rooms/ws") as ws:
            _hello(tc, ws, tokens_of(joined)[0])
            rid = ans["room"]["id"]
            deadline = time.monotonic() + 10
            while not _rooms(tc).rooms[rid].expired and time.monotonic() < deadline:
                time.sleep(0.02)
        with tc.websocket_connect("/api/rooms/ws") as ws:
            e = _hello(tc, ws, tokens_of(ans)[0])
            assert e["status"] == 410 and "nobody joined" in e["message"], e
        assert not _rooms(tc).rooms[joined["room"]["id"]].expired


def test_dropped_rooms_stay_dropped_and_a_restart_never_exceeds_the_cap(tmp_path, capsys):
    """On the code before this check a restart brought back every room ever dropped for space."""
    with rooms_client(tmp_path, max_rooms=3) as tc:
        answers = [open_room(tc, seats=["human", "greedy"]) for _ in range(3)]
        rooms = _rooms(tc)
        rooms.close(rooms.rooms[answers[0]["room"]["id"]], "closed by the test")
        answers.append(open_room(tc, seats=["human", "greedy"]))  # the closed room makes way
        assert len(rooms.rooms) == 3 and answers[0]["room"]["id"] not in rooms.rooms
        assert tc.post("/api/rooms", json={"seats": ["human", "greedy"]}).status_code == 503
    with rooms_client(tmp_path, max_rooms=3) as tc:
        assert tc.app.state.rooms.loaded == 3
    capsys.readouterr()
    with rooms_client(tmp_path, max_rooms=2) as tc:  # the operator lowered the cap
        assert tc.app.state.rooms.loaded == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rooms in play" in err[0], err


# ---------------------------------------------------------------------- WebSocket bounds


def test_a_binary_frame_closes_the_connection_with_a_code_and_no_traceback(caplog):
    """A binary frame used to log "KeyError: 'text'" and drop the connection without a close code."""
    from starlette.websockets import WebSocketDisconnect

    caplog.set_level(logging.DEBUG)
    with rooms_client() as tc:
        ans = open_room(tc, seats=["human", "greedy"])
        for before_hello in (True, False):
            with tc.websocket_connect("/api/rooms/ws") as ws:
                if not before_hello:
                    _hello(tc, ws, tokens_of(ans)[0])
                ws.send_bytes(b'{"type": "ping"}')
                m = receive_json(tc, ws, "the refusal of a binary frame")
                while m["type"] == "state":  # the bot's moves may come first
                    m = receive_json(tc, ws, "the refusal of a binary frame")
                assert m == {"type": "error", "status": 400, "message": "messages are JSON text, not binary"}
                with pytest.raises(WebSocketDisconnect) as closed:
                    receive_json(tc, ws, "the close of a connection that sent a binary frame")
                assert closed.value.code == 1003
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_connections_are_capped_per_link_and_in_all():
    from starlette.websockets import WebSocketDisconnect

    with rooms_client(per_link=2, max_connections=3, connections_per_client=10) as tc:
        ans = open_room(tc, seats=["human", "human"])
        t0 = tokens_of(ans)[0]
        with tc.websocket_connect("/api/rooms/ws") as a, tc.websocket_connect("/api/rooms/ws") as b:
            _hello(tc, a, t0)
            _hello(tc, b, t0)
            with tc.websocket_connect("/api/rooms/ws") as c:
                e = _hello(tc, c, t0, "the refusal of a third connection of one link")
                assert e["status"] == 429 and "2 places" in e["message"]
                with pytest.raises(WebSocketDisconnect) as closed:
                    receive_json(tc, c, "the close of the third connection")
                assert closed.value.code == 4429
            seat = _rooms(tc).rooms[ans["room"]["id"]].seats[0]
            assert seat.connections == 2  # the refused third never joined, so it never left either
            with tc.websocket_connect("/api/rooms/ws") as c, tc.websocket_connect("/api/rooms/ws") as d:
                e = receive_json(tc, d, "the refusal of a connection past the server's cap")
                assert e["status"] == 503
                with pytest.raises(WebSocketDisconnect) as closed:
                    receive_json(tc, d, "the close of a connection past the cap")
                assert closed.value.code == 4503
                assert _hello(tc, c, tokens_of(ans)[1])["type"] == "state"


# ---------------------------------------------------------------------- docs and API agree


def test_the_seat_forms_the_docs_show_are_taken_by_the_api(tmp_path):
    """``human:alice`` used to be refused by the API (400 "expected key=value"); only the page took it."""
    with rooms_client(tmp_path) as tc:
        ans = open_room(tc, rules={"num_players": 3}, seats=["human:alice", "human", "greedy"], record=True)
        seats = ans["room"]["seats"]
        assert [s["kind"] for s in seats] == ["human", "human", "bot"]
        assert seats[0]["name"] == "alice" and seats[1]["name"] and seats[2]["spec"] == "greedy"
        r = tc.post("/api/rooms", json={"seats": ["human:a b", "human"]})
        assert r.status_code == 400 and "pseudonym" in r.json()["error"]


# ---------------------------------------------------------------------- presence


def test_a_person_leaving_is_shown_to_the_others_at_once():
    """A person who closed their tab used to show "connected: yes" until the next move."""
    with rooms_client() as tc:
        ans = open_room(tc, seats=["human", "human"], seed=4)
        with tc.websocket_connect("/api/rooms/ws") as stays:
            _hello(tc, stays, tokens_of(ans)[0])
            with tc.websocket_connect("/api/rooms/ws") as goes:
                _hello(tc, goes, tokens_of(ans)[1])
                m = receive_json(tc, stays, "the state showing seat 1 connected")
                assert m["room"]["seats"][1]["connected"]
            m = receive_json(tc, stays, "the state showing that seat 1 left")
            assert m["type"] == "state" and not m["room"]["seats"][1]["connected"]


def test_a_waiting_test_fails_in_seconds_naming_the_seat_that_was_sent_another_view():
    """The people of the rooms tests check every state is their own seat's, and never hang.

    Planted bug this guards: every connection sent the first connection's view (a hand leak) used to
    be caught only by pytest's 600 s limit.
    """
    from tests.frontends.rooms_support import wait_people

    with rooms_client() as tc:
        hub = tc.app.state.rooms
        real = hub.rooms.messages
        hub.rooms.messages = lambda room, seats: {s: real(room, [0])[0] for s in seats}  # the planted bug
        ans = open_room(tc, seats=["human", "human"], seed=8)
        people = [Person(tc, t) for t in tokens_of(ans)]
        start = time.monotonic()
        for p in people:
            p.start()
        with pytest.raises(AssertionError, match="seat 1 was sent the state of seat 0"):
            wait_people(tc, people, timeout=20)
        assert time.monotonic() - start < 15
        watcher = Person(tc, watch_token(ans))
        watcher.start()
        with pytest.raises(AssertionError, match="seat -1 was sent the state of seat 0"):
            wait_people(tc, [watcher], timeout=20)
        close_all(tc)
