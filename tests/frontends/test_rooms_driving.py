"""How the server drives a room's bots: after a restart, around a room that moved on, when a bot fails.

The mutation run of ``escoba_arena/web/rooms_routes.py`` left these unseen: a restarted server whose
journal leaves a bot to act at seat 0 (the check was ``bot_to_act() >= 0``, and ``> 0`` passed every
test), a bot's move that arrives after its room moved on (another move, the room closed), and the exact
words a failed bot move leaves in the game; the hub's own cap on threads for file work, and a page
joining its seat under the room's lock.
"""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

pytest.importorskip("starlette")

from escoba_arena.web.bot_worker import AgentFailure  # noqa: E402
from escoba_arena.web.lobby import Arena  # noqa: E402
from escoba_arena.web.rooms import Rooms  # noqa: E402
from tests.frontends.rooms_support import (  # noqa: E402
    open_room,
    play_until,
    receive_json,
    rooms_client,
    tokens_of,
)


def _wait(what: str, done, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.02)


def test_a_server_restarted_from_its_journal_moves_the_bot_to_act_at_seat_0(tmp_path):
    rooms = Rooms(Arena([]), tmp_path)
    room, _, _ = rooms.open({"seats": ["greedy", "human"], "seed": 4})
    rooms.join(room, 1)
    play_until(rooms, room, 0)
    assert room.game.bot_to_act() == 0
    played = room.game.moves_played
    rooms.journal.close()
    with rooms_client(tmp_path, tick=0.05) as tc:
        again = tc.app.state.rooms.rooms.rooms[room.rid]
        assert again.game.moves_played == played
        _wait("the bot at seat 0 to move", lambda: again.game.moves_played > played)
        assert again.game.error is None and not again.expired


class _Gate:
    """Stands in for the bot pool's ``decide_async`` (the pool is shared by every arena of the process:
    ``monkeypatch`` puts the real one back after the test): each decision waits until the test opens
    the gate, then is the real pool's answer (or ``fail``'s AgentFailure)."""

    def __init__(self, tc, monkeypatch, fail: str | None = None):
        self.tc, self.fail = tc, fail
        pool = tc.app.state.rooms.rooms.arena.pool
        self.real = pool.decide_async
        self.asked = 0
        self.event = tc.portal.call(self._event)
        monkeypatch.setattr(pool, "decide_async", self.decide_async)

    @staticmethod
    async def _event() -> asyncio.Event:
        return asyncio.Event()

    async def decide_async(self, job):
        self.asked += 1
        await self.event.wait()
        await asyncio.sleep(0.01)  # a real decision yields to the loop: a driver that loops cannot hang it
        if self.fail is not None:
            raise AgentFailure(self.fail)
        return await self.real(job)

    def open(self) -> None:
        self.tc.portal.call(self.event.set)


def _bot_to_act(tc, seed: int):
    """Open a room of a person (seat 0) and a bot (seat 1) and play until the bot is to act; return it."""
    hub = tc.app.state.rooms
    ans = open_room(tc, seats=["human", "greedy"], seed=seed)
    room = hub.rooms.rooms[ans["room"]["id"]]
    hub.rooms.join(room, 0)  # the game starts when the person comes
    game = room.game
    while game.bot_to_act() != 1:
        mv = game.view_for(0)["moves"][0]
        hub.rooms.play(room, 0, mv["card"], mv["options"][0])
    return room


def _bot_thinking(tc, gate: _Gate, seed: int):
    """``_bot_to_act``, then have the hub drive the bot; return the room once the bot is thinking (held
    at the gate)."""
    room = _bot_to_act(tc, seed)
    tc.portal.call(tc.app.state.rooms.drive_soon, room)
    _wait("the bot to be asked", lambda: gate.asked == 1)
    return room


def _under_lock(tc, room, fn) -> None:
    hub = tc.app.state.rooms

    async def run():
        async with hub.lock(room.rid):
            fn()

    tc.portal.call(run)


@pytest.mark.parametrize("meanwhile", ["its move was played", "its room closed"])
def test_a_bots_move_is_dropped_when_its_room_moved_on_while_it_thought(meanwhile, monkeypatch):
    with rooms_client(tick=0.05) as tc:
        hub = tc.app.state.rooms
        gate = _Gate(tc, monkeypatch)
        room = _bot_thinking(tc, gate, seed=11)
        game = room.game
        played, log = game.moves_played, len(game.log)
        card, options = max(game.moves_for(1).items())  # the bot's turn, played by someone else meanwhile
        moved = meanwhile == "its move was played"
        _under_lock(tc, room, (lambda: hub.rooms.play(room, 1, card, options[0])) if moved else
                    (lambda: hub.rooms.close(room, "closed by the test")))
        gate.open()
        _wait("the driver to stop", lambda: room.rid not in hub.driving)
        assert game.error is None  # the stale decision was neither played on top nor an error
        if moved:
            assert game.moves_played == played + 1 and not room.expired
            assert game.bot_to_act() == -1 and game.state.to_act == 0
        else:
            assert game.moves_played == played and len(game.log) == log
            assert room.expired == "closed by the test"


def test_a_bot_reads_whose_turn_it_is_and_plays_its_move_under_its_rooms_lock(monkeypatch):
    """The driver takes the room's lock to see whose turn it is and again to play the bot's move (while
    the bot thinks, no lock is held): a move of the room in progress holds the bot back both times."""
    with rooms_client(tick=0.05) as tc:
        hub = tc.app.state.rooms
        gate = _Gate(tc, monkeypatch)
        room = _bot_to_act(tc, seed=15)
        game = room.game
        played = game.moves_played
        lock = _hold(tc, room)
        tc.portal.call(hub.drive_soon, room)
        time.sleep(0.3)
        assert gate.asked == 0, "the bot was asked while its room's lock was held"
        _free(tc, lock)
        _wait("the bot to be asked", lambda: gate.asked == 1)
        lock = _hold(tc, room)
        gate.open()
        time.sleep(0.3)
        assert game.moves_played == played, "the bot's move was played while its room's lock was held"
        _free(tc, lock)
        _wait("the bot's move", lambda: game.moves_played == played + 1)


def _hold(tc, room):
    hub = tc.app.state.rooms

    async def take():
        lock = hub.lock(room.rid)
        await lock.acquire()
        return lock

    return tc.portal.call(take)


def _free(tc, lock) -> None:
    tc.portal.call(lock.release)


def test_a_failed_bot_move_stops_the_game_with_the_pools_words_and_the_room_stays_open(monkeypatch):
    with rooms_client(tick=0.05) as tc:
        hub = tc.app.state.rooms
        gate = _Gate(tc, monkeypatch, fail="greedy (seat 1) failed: its worker process stopped")
        room = _bot_thinking(tc, gate, seed=13)
        game = room.game
        played = game.moves_played
        gate.open()
        _wait("the driver to stop", lambda: room.rid not in hub.driving)
        said = "greedy (seat 1) failed: its worker process stopped; the game was stopped"
        assert game.error == said and game.log[-1] == {"type": "error", "message": said}
        assert game.moves_played == played and not room.expired
        assert game.view_for(0)["to_act"] == -1 or game.bot_to_act() == -1


def test_the_hubs_file_work_runs_on_at_most_8_threads_at_once():
    """Journal and record writes go to the hub's own 8 threads: twelve at once (twelve rooms' moves on
    a slow disk) leave the rest of the server's threads free, instead of taking 12 of anyio's 40."""
    with rooms_client() as tc:
        hub = tc.app.state.rooms
        counts, lock, release = {"now": 0, "most": 0}, threading.Lock(), threading.Event()

        def write() -> None:
            with lock:
                counts["now"] += 1
                counts["most"] = max(counts["most"], counts["now"])
            release.wait(10)
            with lock:
                counts["now"] -= 1

        async def twelve() -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(12):
                    tg.start_soon(hub.in_thread, write)

        done = tc.portal.start_task_soon(twelve)
        _wait("eight writes to run", lambda: counts["now"] == 8)
        time.sleep(0.3)
        assert counts["most"] == 8
        release.set()
        done.result(10)
        assert counts == {"now": 0, "most": 8}


def test_a_page_joins_its_seat_under_its_rooms_lock():
    """Joining changes the room's state: a page that says hello while a move holds the room's lock
    joins (and is sent the room) only once the lock is free."""
    with rooms_client() as tc:
        hub = tc.app.state.rooms
        ans = open_room(tc, seats=["human", "human"], seed=14)
        room = hub.rooms.rooms[ans["room"]["id"]]

        async def take():
            lock = hub.lock(room.rid)
            await lock.acquire()
            return lock

        held = tc.portal.call(take)
        with tc.websocket_connect("/api/rooms/ws") as ws:
            ws.send_json({"type": "hello", "token": tokens_of(ans)[0]})
            time.sleep(0.4)
            assert room.seats[0].connections == 0, "the page joined while the room's lock was held"
            tc.portal.call(lambda: held.release())
            assert receive_json(tc, ws, "the room, once joined")["type"] == "state"
            assert room.seats[0].connections == 1
