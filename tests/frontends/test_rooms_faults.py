"""Small bugs the rooms tests must catch: each test's docstring names the planted change it fails on."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from escoba_arena.web.guard import ApiError  # noqa: E402
from escoba_arena.web.lobby import Arena  # noqa: E402
from escoba_arena.web.rooms import Rooms  # noqa: E402
from escoba_env.rulebook.cards import cards_of  # noqa: E402
from tests.frontends.rooms_support import (  # noqa: E402
    close_all,
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


def _rooms(**kw) -> tuple[Rooms, list[float]]:
    now = [100.0]
    return Rooms(Arena([]), clock=lambda: now[0], **kw), now


def test_the_person_whose_seat_a_bot_took_cannot_move_for_it():
    """Planted change: the 409 for a seat a bot has taken over removed (``Rooms.check_move``)."""
    rooms, now = _rooms()
    room, _, _ = rooms.open({"seats": ["human", "human"], "seed": 3})
    rooms.join(room, 0)
    rooms.join(room, 1)
    leave_and_take_over(rooms, room, 1, now)
    play_until(rooms, room, 1)
    mv = room.game.moves_for(1)
    card = next(iter(mv))
    with pytest.raises(ApiError) as refused:
        rooms.check_move(room, 1, {"type": "move", "card": card, "capture": mv[card][0]})
    assert refused.value.status == 409 and "took this seat" in refused.value.message


def test_the_spectators_rate_bucket_refills():
    """Planted change: the spectator's bucket never refilled (locked out after ``BURST`` messages)."""
    rooms, now = _rooms(rate=2.0, burst=3.0)
    room, _, _ = rooms.open({"seats": ["human", "human"], "seed": 1})
    assert [rooms.allow_message(room, -1) for _ in range(4)] == [True] * 3 + [False]
    now[0] += 1.0
    assert [rooms.allow_message(room, -1) for _ in range(3)] == [True, True, False]


def test_the_next_game_of_a_several_deal_room_keeps_the_bot_that_took_a_seat():
    """Planted change: the next game hands the seat back to the person who left (the room stalls)."""
    rooms, now = _rooms()
    room, _, _ = rooms.open({"seats": ["human", "human"],
                             "deals": [{"seed": 4, "game_id": 0}, {"seed": 4, "game_id": 1}]})
    rooms.join(room, 0)
    rooms.join(room, 1)
    leave_and_take_over(rooms, room, 1, now)
    finish_game(rooms, room)
    assert room.game_index == 1 and room.status == "playing"
    assert 1 not in room.game.humans and room.game.bots[1] is room.bots[1]
    finish_game(rooms, room)  # never waits for the person who left
    assert room.status == "over"


ANA = {"kind": "human", "name": "ana"}


@pytest.mark.parametrize("seats", [[ANA, ANA], ["human:ana", "human:ana"], ["human:ana", ANA]])
def test_two_seats_cannot_share_a_pseudonym(seats):
    """Planted change: the duplicate-pseudonym check removed (records could not tell the seats apart)."""
    with rooms_client() as tc:
        r = tc.post("/api/rooms", json={"seats": seats})
        assert r.status_code == 400 and "used twice" in r.json()["error"], r.text


@pytest.mark.parametrize("deal", [{"seed": 2**64, "game_id": 0}, {"seed": 0, "game_id": 2**64},
                                  {"seed": -1, "game_id": 0}])
def test_a_deal_outside_64_bits_is_refused_when_the_room_opens(deal):
    """Planted change: a deal seed above 2^64 accepted at creation (the game then fails when people join)."""
    with rooms_client() as tc:
        r = tc.post("/api/rooms", json={"seats": ["human", "greedy"], "deals": [deal]})
        assert r.status_code == 400 and "deal 0" in r.json()["error"], r.text


def test_an_evicted_rooms_links_are_forgotten():
    """Planted change: an evicted room's watch token left in the token table (a 500, and it grows)."""
    rooms, _ = _rooms(max_rooms=1)
    first, tokens, watch = rooms.open({"seats": ["human", "greedy"], "seed": 1})
    rooms.close(first, "closed by the test")
    rooms.open({"seats": ["human", "greedy"], "seed": 2})
    assert first.rid not in rooms.rooms and len(rooms.by_token) == 2
    for token in [watch, *tokens.values()]:
        with pytest.raises(ApiError) as refused:
            rooms.lookup(token)
        assert refused.value.status == 403


def test_finished_rooms_make_way_for_new_ones_at_the_cap():
    """Planted change: finished rooms never evicted (503 for everyone once the cap is reached)."""
    rooms, _ = _rooms(max_rooms=2)
    done, _, _ = rooms.open({"seats": ["human", "greedy"], "seed": 1})
    rooms.join(done, 0)
    finish_game(rooms, done)
    assert done.status == "over"
    rooms.open({"seats": ["human", "greedy"], "seed": 2})
    rooms.open({"seats": ["human", "greedy"], "seed": 3})
    assert done.rid not in rooms.rooms and len(rooms.rooms) == 2
    with pytest.raises(ApiError) as full:
        rooms.open({"seats": ["human", "greedy"], "seed": 4})
    assert full.value.status == 503


def test_a_move_on_a_connection_of_a_closed_room_is_refused_and_not_journaled(tmp_path):
    """Planted change: a move on a still-open connection of an expired room accepted and journaled."""
    with rooms_client(tmp_path) as tc:
        ans = open_room(tc, seats=["human", "human"], seed=5)
        room = tc.app.state.rooms.rooms.rooms[ans["room"]["id"]]
        with tc.websocket_connect("/api/rooms/ws") as a, tc.websocket_connect("/api/rooms/ws") as b:
            a.send_json({"type": "hello", "token": tokens_of(ans)[0]})
            receive_json(tc, a, "seat 0's first state")
            b.send_json({"type": "hello", "token": tokens_of(ans)[1]})
            views = [receive_json(tc, ws, "the state once both joined")["view"] for ws in (a, b)]
            tc.app.state.rooms.rooms.close(room, "closed by the test")  # the connections stay open
            ws, view = (a, views[0]) if views[0]["your_turn"] else (b, views[1])
            mv = view["moves"][0]
            ws.send_json({"type": "move", "card": mv["card"], "capture": mv["options"][0]})
            e = receive_json(tc, ws, "the refusal of a move in a closed room")
            assert e["status"] == 410 and "closed by the test" in e["message"], e
    assert '"e":"move"' not in (tmp_path / "rooms.journal").read_text()


def test_strikes_count_refusals_in_a_row_and_close_the_connection_with_4429():
    """Planted change: a non-429 refusal no longer resets the strike count (and no test saw a 4429 close)."""
    from starlette.websockets import WebSocketDisconnect

    with rooms_client(rate=1.0, burst=1.0, strikes=3) as tc:
        now = [0.0]
        tc.app.state.rooms.rooms.clock = lambda: now[0]
        ans = open_room(tc, seats=["human", "human"])
        with tc.websocket_connect("/api/rooms/ws") as ws:
            ws.send_json({"type": "hello", "token": tokens_of(ans)[0]})
            receive_json(tc, ws, "the first state")
            now[0] += 1.0  # the hello took the burst's one message; this refills it

            def send(msg) -> dict:
                ws.send_json(msg)
                return receive_json(tc, ws, f"the answer to {msg}")

            assert send({"type": "ping"}) == {"type": "pong"}
            assert [send({"type": "ping"})["status"] for _ in range(2)] == [429, 429]  # two strikes
            now[0] += 1.0
            assert send({"type": "nonsense"})["status"] == 400  # a refusal of another kind: no strike
            assert [send({"type": "ping"})["status"] for _ in range(2)] == [429, 429]  # still open
            assert send({"type": "ping"})["status"] == 429  # the third in a row
            with pytest.raises(WebSocketDisconnect) as closed:
                receive_json(tc, ws, "the close after three strikes")
            assert closed.value.code == 4429


def test_every_connection_is_sent_its_own_seats_view_at_once():
    """Planted change: every connection given the first connection's view (a hand leak).

    Fails within seconds naming the seat (the people of ``rooms_support`` check it too).
    """
    with rooms_client() as tc:
        ans = open_room(tc, rules={"num_players": 3}, seats=["human", "human", "human"], seed=6)
        hub = tc.app.state.rooms
        socks = []
        try:
            for token in [*tokens_of(ans), watch_token(ans)]:
                ws = tc.websocket_connect("/api/rooms/ws").__enter__()
                socks.append((token.seat, ws))
                ws.send_json({"type": "hello", "token": token})
            room = hub.rooms.rooms[ans["room"]["id"]]
            for seat, ws in socks:
                m = receive_json(tc, ws, f"seat {seat}'s state")
                while m["view"] is None:  # the states sent before the last person joined
                    m = receive_json(tc, ws, f"seat {seat}'s state once the game started")
                got = (m["seat"], m["view"]["seat"])
                assert got == (seat, seat), f"seat {seat} was sent the state of seat {got}"
                want = [] if seat < 0 else cards_of(room.game.state.hand(seat))
                assert sorted(m["view"]["hand"]) == sorted(want), f"seat {seat} was sent another hand"
        finally:
            close_all(tc)
            for _, ws in socks:
                ws.__exit__(None, None, None)
