"""Helpers of the rooms tests: a rooms app, simulated people on WebSockets, a server in a process."""

from __future__ import annotations

import random
import threading

import pytest

from tests.frontends.arena_support import client

FAST = {"rate": 1000.0, "burst": 1000.0}
"""Rate settings for simulated people who answer at machine speed (the limit has its own test)."""


def rooms_client(directory=None, **options):
    """Return a TestClient on an arena whose rooms keep their journal and records in ``directory``."""
    pytest.importorskip("starlette")
    from escoba_arena.web.rooms_routes import RoomOptions

    return client(rooms=RoomOptions(directory=directory, **{**FAST, **options}))


def tokens_of(answer: dict) -> list[str]:
    """Return the seat tokens of a POST /api/rooms answer, in seat order (from the links' ``#t=``)."""
    return [x["link"].split("#t=", 1)[1] for x in answer["links"]]


def watch_token(answer: dict) -> str:
    return answer["watch"].split("#t=", 1)[1]


class Person(threading.Thread):
    """A simulated person on one WebSocket: says hello, then plays a random legal move when to act.

    ``stop_after`` moves: it leaves (closes the socket) once it has made that many moves.
    Every message received is kept in ``messages``.
    """

    def __init__(self, tc, token: str, seed: int = 0, stop_after: int | None = None, until: str = "over"):
        super().__init__(daemon=True)
        self.tc, self.token, self.rng = tc, token, random.Random(seed)
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


def play_people(tc, tokens: list[str], timeout: float = 60.0, **kw) -> list[Person]:
    """Run one Person per token until the room is over; return them (fails on a stuck game)."""
    people = [Person(tc, t, seed=i, **kw) for i, t in enumerate(tokens)]
    for p in people:
        p.start()
    for p in people:
        p.join(timeout)
        assert not p.is_alive(), "a person is still waiting: the game is stuck"
        assert p.error is None, repr(p.error)
    return people
