"""Helpers of the rooms tests: a rooms app, simulated people on WebSockets, a server in a process."""

from __future__ import annotations

import contextlib
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from escoba_env.rulebook.cards import cards_of
from tests.frontends.arena_support import ROOT, client

if TYPE_CHECKING:
    from escoba_arena.web.rooms import Rooms

FAST = {"rate": 1000.0, "burst": 1000.0}
"""Rate settings for simulated people who answer at machine speed (the limit has its own test)."""


def rooms_client(directory=None, roots=(), allow_agents=(), **options):
    """Return a TestClient on an arena whose rooms keep their journal and records in ``directory``."""
    pytest.importorskip("starlette")
    from escoba_arena.web.rooms_routes import RoomOptions

    return client(roots, rooms=RoomOptions(directory=directory, **{**FAST, **options}),
                  allow_agents=allow_agents)


class SeatToken(str):
    """A seat's token, that knows its seat (-1: the spectator's): a Person checks what it is sent."""

    seat: int

    def __new__(cls, token: str, seat: int) -> SeatToken:
        out = super().__new__(cls, token)
        out.seat = seat
        return out


def tokens_of(answer: dict) -> list[SeatToken]:
    """Return the seat tokens of a POST /api/rooms answer, in seat order (from the links' ``#t=``)."""
    return [SeatToken(x["link"].split("#t=", 1)[1], x["seat"]) for x in answer["links"]]


def watch_token(answer: dict) -> SeatToken:
    """Return the spectator's token of a POST /api/rooms answer."""
    return SeatToken(answer["watch"].split("#t=", 1)[1], -1)


def close_all(tc) -> None:
    """Close every room connection of the server (a test that gave up waiting unblocks its people)."""
    tc.portal.call(tc.app.state.rooms.close_connections)


class Person(threading.Thread):
    """A simulated person on one WebSocket: says hello, then plays a random legal move when to act.

    ``stop_after`` moves: it leaves (closes the socket) once it has made that many moves.
    Every message received is kept in ``messages``.
    """

    def __init__(self, tc, token: str, seed: int = 0, stop_after: int | None = None, until: str = "over"):
        super().__init__(daemon=True)
        self.tc, self.token, self.rng = tc, token, random.Random(seed)
        self.seat = getattr(token, "seat", None)
        """The seat the token opens, if known: every state message must be that seat's."""
        self.stop_after, self.until = stop_after, until
        self.messages: list[dict] = []
        self.moves = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.tc.websocket_connect("/api/rooms/ws") as ws:
                ws.send_json({"type": "hello", "token": self.token})
                sent = (0, -1)
                while True:
                    m = ws.receive_json()
                    self.messages.append(m)
                    if m["type"] == "closed" or (m["type"] == "error" and m["status"] in (403, 410)):
                        return
                    if m["type"] != "state":
                        continue
                    got = (m["seat"], (m["view"] or {}).get("seat", m["seat"]))
                    if self.seat is not None and got != (self.seat, self.seat):
                        raise AssertionError(f"seat {self.seat} was sent the state of seat {got[0]} "
                                             f"(view of seat {got[1]})")
                    if m["room"]["status"] == self.until:
                        return
                    v = m["view"]
                    at = (m["room"]["game"], v["moves_played"]) if v else None
                    if self.stop_after is not None and self.moves >= self.stop_after:
                        return
                    if v and v["your_turn"] and at > sent:
                        mv = self.rng.choice(v["moves"])
                        sent = at
                        ws.send_json({"type": "move", "card": mv["card"],
                                      "capture": self.rng.choice(mv["options"])})
                        self.moves += 1
        except BaseException as exc:  # reported by the test
            self.error = exc

    @property
    def last(self) -> dict:
        return [m for m in self.messages if m["type"] == "state"][-1]


def describe(p: Person) -> str:
    """Return who ``p`` is and the last thing it was sent (for a failure message)."""
    last = p.messages[-1] if p.messages else None
    if last and last.get("type") == "state":
        v = last["view"] or {}
        last = (f"state: room {last['room']['status']}, to act {v.get('to_act')}, "
                f"moves played {v.get('moves_played')}")
    return f"seat {p.seat} ({p.moves} moves made; last message: {str(last)[:160]})"


def wait_people(tc, people: list[Person], timeout: float, what: str = "the room to be over") -> None:
    """Wait for ``people`` to finish; on a failure or past ``timeout`` s, close every connection and fail.

    Fails at once when one of them failed (a seat sent another seat's view), naming the seat; never
    hangs: the server's connections are closed so that every person's thread ends.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p.is_alive() for p in people) \
            and not any(p.error for p in people):
        time.sleep(0.01)
    failed = [p for p in people if p.error is not None]
    waiting = [p for p in people if p.is_alive()]
    if waiting:
        close_all(tc)
        for p in waiting:
            p.join(5)
    assert not failed, f"{describe(failed[0])}: {failed[0].error!r}"
    assert not waiting, (f"waited {timeout:g} s for {what}; still waiting: "
                         + "; ".join(describe(p) for p in waiting))


def play_people(tc, tokens: list[str], timeout: float = 30.0, **kw) -> list[Person]:
    """Run one Person per token until the room is over; return them (fails in seconds on a stuck game)."""
    people = [Person(tc, t, seed=i, **kw) for i, t in enumerate(tokens)]
    for p in people:
        p.start()
    wait_people(tc, people, timeout)
    return people


def receive_json(tc, ws, what: str = "the server's next message", seconds: float = 10.0) -> dict:
    """Return the next message of a test WebSocket, or fail after ``seconds`` naming ``what`` was awaited.

    The wait runs in a thread; past the limit every server connection is closed, so nothing hangs.
    """
    box: dict = {}

    def get():
        try:
            box["m"] = ws.receive_json()
        except BaseException as exc:  # reported below
            box["e"] = exc

    t = threading.Thread(target=get, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        close_all(tc)
        t.join(5)
        raise AssertionError(f"waited {seconds:g} s for {what}")
    if "e" in box:
        raise box["e"]
    return box["m"]


def open_room(tc, **body) -> dict:
    """Return the answer of POST /api/rooms with ``body`` (fails unless 201)."""
    r = tc.post("/api/rooms", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def finish_game(rooms, room) -> None:
    """Play the room's current game to its end on the server's ``Rooms`` (people move at random)."""
    rng = random.Random(0)
    game = room.game
    while not game.done:
        seat = game.state.to_act
        if seat in game.humans:
            mv = rng.choice(game.view_for(seat)["moves"])
            rooms.play(room, seat, mv["card"], rng.choice(mv["options"]))
        else:
            s, card, capture = game.bot_move()
            from escoba_env.rulebook.cards import cards_of

            rooms.play(room, s, card, cards_of(capture))
    rooms.after_move(room)


class Server:
    """``python -m escoba_arena.web ARGS --port 0`` in ``cwd``; its address once it listens."""

    def __init__(self, args: list[str], cwd: Path):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "escoba_arena.web", *args, "--port", "0"],
                                     cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout], daemon=True).start()
        self.out: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=30)
            except queue.Empty:
                self.stop()
                raise AssertionError(f"waited 30 s for the server to start: {self.out}") from None
            self.out.append(line)
            if line.startswith("Escoba arena: http://"):
                self.url = line.split()[2].rstrip("/")
                self.port = int(self.url.rsplit(":", 1)[1])
                break
        import httpx

        for _ in range(200):  # the line comes just before the server listens
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/api/info", timeout=5).status_code == 200:
                    return
            time.sleep(0.05)
        raise AssertionError("waited 10 s for the server to answer /api/info")

    def memory(self, key: str) -> int:
        """Return the server's VmRSS or VmHWM (peak), in bytes."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {key} in /proc/{self.proc.pid}/status")

    def post(self, path: str, body: dict, **headers) -> dict:
        """Return the JSON answer of a POST (fails unless 2xx)."""
        import httpx

        r = httpx.post(self.url + path, json=body, headers=headers, timeout=30)
        assert r.is_success, r.text
        return r.json()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def leave_and_take_over(rooms: Rooms, room, seat: int, now: list[float]) -> None:
    """Leave ``seat`` and let the takeover time pass (on the fake clock ``now``); the bot takes it."""
    rooms.leave(room, seat)
    now[0] += rooms.takeover_seconds + 1
    assert rooms.gone_seats(room) == [seat]
    rooms.take_over(room, seat)


def play_until(rooms: Rooms, room, seat: int) -> None:
    """Play the room's game (people and bots) until ``seat`` is to act."""
    game = room.game
    while game.state.to_act != seat:
        s = game.state.to_act
        mv = game.view_for(s)["moves"][0] if s in game.humans else None
        if mv is None:
            _, card, capture = game.bot_move()
            rooms.play(room, s, card, cards_of(capture))
        else:
            rooms.play(room, s, mv["card"], mv["options"][0])
