"""Reading the rooms' journal back at start: each damaged line or stale entry costs at most its room.

``replay_journal`` applies every intact entry in order (``Rooms.replay``) and returns the warnings,
one line per damaged room:

- a damaged line of a room that goes on (a seat taken, a takeover, an expiry) is skipped; the room's
  later entries are still applied;
- when one of a room's entries no longer applies (a move after a damaged move), the room is closed
  with a message its links show, and its later entries are skipped;
- a damaged opening line loses the room: the links whose token hash the line still holds answer
  that the room was lost, and the room's later entries are skipped without a line each.
"""

from __future__ import annotations

from .guard import ApiError
from .journal import Journal

LOST = "this room was lost: its entry in the server's journal is damaged"
DAMAGED = "the server's journal of this room is damaged; it cannot go on"


def replay_journal(rooms, journal: Journal) -> list[str]:
    """Apply ``journal`` to ``rooms`` (a ``Rooms``); return one warning line per damaged room."""
    where = f"escoba-arena: rooms journal {journal.path.name}"
    notes: dict[str, str] = {}  # room id -> its one line
    stopped: set[str] = set()  # rooms lost or closed: their later entries are skipped quietly
    orphans: list[int] = []  # damaged lines whose room is unknown (its id may be the damaged part)
    for line in journal.lines():
        rid = line.room
        if line.entry is None:
            if line.hashes:  # an opening line: its room is lost, and its links say so
                for h in line.hashes:
                    rooms.lost.setdefault(h, LOST)
                key = rid or f"line {line.number}"
                notes.setdefault(key, f"{where}: line {line.number} (the opening of room {rid}) is damaged; "
                                      "the room is lost")
                stopped.add(key)
            elif rid in rooms.rooms:
                notes.setdefault(rid, f"{where}: line {line.number} (room {rid}) is damaged; skipped, the "
                                      "room goes on")
            else:
                orphans.append(line.number)
            continue
        if rid in stopped:
            continue
        try:
            rooms.replay(line.entry)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError, ApiError) as exc:
            why = exc.message if isinstance(exc, ApiError) else f"{type(exc).__name__}: {exc}"
            what = (f"its {str(line.entry.get('e'))[:20]} entry at line {line.number} does not apply "
                    f"({' '.join(str(why).split())[:120]})")
            if rid not in notes and orphans:
                what = f"line {orphans.pop(0)} is damaged; {what}"
            head = notes[rid].split("; ")[0] if rid in notes else f"{where}: room {rid}"
            if rid in rooms.rooms:
                rooms.rooms[rid].expired = DAMAGED
                notes[rid] = f"{head}; {what}; the room is closed"
            else:
                notes[rid] = f"{head}; {what}; the room is lost"
            stopped.add(rid)
    return [*notes.values(), *(f"{where}: line {n} is damaged; skipped" for n in orphans)]


__all__ = ["DAMAGED", "LOST", "replay_journal"]
