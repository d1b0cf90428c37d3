"""The rooms' journal: a damaged line costs at most what it held, one warning line per damaged room."""

from __future__ import annotations

import json
import shutil
import zlib

import pytest

from escoba_arena.web.guard import ApiError
from escoba_arena.web.journal import Journal, encode
from escoba_arena.web.lobby import Arena
from escoba_arena.web.rooms import Rooms
from tests.frontends.rooms_support import leave_and_take_over, play_until


def _rooms(directory, warnings: list[str] | None = None) -> tuple[Rooms, list[float]]:
    now = [100.0]
    warn = (warnings.append if warnings is not None else None)
    return Rooms(Arena([]), directory, clock=lambda: now[0], warn=warn), now


def _play(rooms: Rooms, room, moves: int) -> None:
    for _ in range(moves):
        game = room.game
        play_until(rooms, room, game.state.to_act)
        s = game.state.to_act
        if s in game.humans:
            mv = game.view_for(s)["moves"][0]
            rooms.play(room, s, mv["card"], mv["options"][0])
        else:
            from escoba_env.rulebook.cards import cards_of

            _, card, capture = game.bot_move()
            rooms.play(room, s, card, cards_of(capture))


@pytest.fixture(scope="module")
def journal_dir(tmp_path_factory):
    """A journal with every kind of line: A (open, join, move, takeover), B (healthy), C (expire, drop)."""
    d = tmp_path_factory.mktemp("rooms")
    rooms, now = _rooms(d)
    a, ta, wa = rooms.open({"seats": ["human", "human"], "seed": 1})
    b, tb, wb = rooms.open({"seats": ["human", "human"], "seed": 2})
    c, tc, wc = rooms.open({"seats": ["human", "greedy"], "seed": 3})
    for room in (a, b):
        rooms.join(room, 0)
        rooms.join(room, 1)
    _play(rooms, a, 3)
    leave_and_take_over(rooms, a, 1, now)
    _play(rooms, a, 3)
    _play(rooms, b, 5)
    rooms.close(c, "closed by the test")
    rooms.forget(c.rid)
    rooms.journal.close()
    state = {"a": (a.rid, [*ta.values(), wa], a.game.moves_played),
             "b": (b.rid, [*tb.values(), wb], b.game.view_for(0)), "c": (c.rid, [*tc.values(), wc])}
    return d, state


def _lines(d) -> list[bytes]:
    return (d / "rooms.journal").read_bytes().splitlines(keepends=True)


def _first(lines: list[bytes], kind: str, rid: str) -> int:
    for k, raw in enumerate(lines):
        entry = json.loads(raw.split(b" ", 1)[1])
        if entry["e"] == kind and entry["room"] == rid:
            return k
    raise AssertionError(f"no {kind} line of room {rid}")


def _status(rooms: Rooms, token: str) -> int:
    try:
        rooms.lookup(token)
    except ApiError as exc:
        return exc.status
    return 200


@pytest.mark.parametrize("kind,room", [("open", "a"), ("join", "a"), ("move", "a"), ("takeover", "a"),
                                       ("expire", "c"), ("drop", "c")])
def test_a_flipped_byte_in_any_kind_of_line_costs_at_most_its_room(journal_dir, tmp_path, kind, room):
    """One flipped byte in a room's "open" line used to lose the room and print 225 warning lines."""
    src, state = journal_dir
    shutil.copy(src / "rooms.journal", tmp_path / "rooms.journal")
    shutil.copy(src / "deal.key", tmp_path / "deal.key")  # the journal's deals are dealt with its key
    lines = _lines(tmp_path)
    rid, tokens = state[room][0], state[room][1]
    k = _first(lines, kind, rid)
    line = bytearray(lines[k])
    at = 9 + (len(line) - 10) // 2  # the middle of the JSON
    line[at] ^= 0x01
    lines[k] = bytes(line)
    (tmp_path / "rooms.journal").write_bytes(b"".join(lines))
    warnings: list[str] = []
    rooms, _ = _rooms(tmp_path, warnings)
    rooms.load()
    assert len(warnings) == 1 and f"line {k + 1}" in warnings[0], warnings
    # The healthy room is whole.
    brid, btokens, bview = state["b"]
    assert rooms.rooms[brid].game.view_for(0) == bview
    assert all(_status(rooms, t) == 200 for t in btokens)
    # The damaged room goes on, or its links say why it is gone; never a server error.
    codes = {_status(rooms, t) for t in tokens}
    if kind == "open":
        assert rid not in rooms.rooms and codes <= {410, 403} and 410 in codes
        assert "lost" in warnings[0]
    elif kind in ("join", "move"):
        assert rooms.rooms[rid].expired and codes == {410} and "closed" in warnings[0]
    elif kind == "takeover":  # the bot's moves still apply; the seat passes to the bot again later
        assert rooms.rooms[rid].game.moves_played == state["a"][2] and codes == {200}
    elif kind == "expire":  # the drop that follows still applies
        assert rid not in rooms.rooms and codes == {403}
    else:  # the room comes back closed
        assert rooms.rooms[rid].expired and codes == {410}


def test_a_line_whose_checksum_is_wrong_is_never_applied_even_when_its_json_is_valid(tmp_path):
    """Planted change: a line whose checksum is wrong but whose JSON is valid is replayed."""
    j = Journal(tmp_path / "j")
    j.append({"e": "join", "room": "r", "seat": 0})
    j.close()
    text = json.dumps({"e": "join", "room": "r", "seat": 1}, separators=(",", ":"), sort_keys=True)
    with open(tmp_path / "j", "a") as fh:
        fh.write(f"{(zlib.crc32(text.encode()) + 1) % 2**32:08x} {text}\n")
    got = [(line.number, line.entry) for line in Journal(tmp_path / "j").lines()]
    assert got == [(1, {"e": "join", "room": "r", "seat": 0}), (2, None)]


def test_after_a_crash_mid_write_the_next_entry_starts_on_its_own_line(tmp_path):
    """Planted change: after a crash mid-write, the next entry is glued to the cut line and lost."""
    (tmp_path / "j").write_bytes(encode({"e": "a", "room": "r"}) + encode({"e": "b", "room": "r"})[:15])
    j = Journal(tmp_path / "j")
    j.append({"e": "c", "room": "r"})
    j.close()
    entries = [line.entry for line in Journal(tmp_path / "j").lines()]
    assert entries == [{"e": "a", "room": "r"}, None, {"e": "c", "room": "r"}]
