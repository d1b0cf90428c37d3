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
from .journal import Journal, Line

LOST = "this room was lost: its entry in the server's journal is damaged"
DAMAGED = "the server's journal of this room is damaged; it cannot go on"


def replay_journal(rooms, journal: Journal) -> list[str]:
    """Apply ``journal`` to ``rooms`` (a ``Rooms``); return one warning line per damaged room."""
    notes: dict[str, str] = {}  # room id -> its one line
    closed: set[str] = set()
    orphans: list[Line] = []  # damaged lines that name no room
    loose: list[str] = []
    where = f"escoba-arena: rooms journal {journal.path.name}"
    for line in journal.lines():
        rid = line.room
        if line.entry is None:
            for h in line.hashes:
                if h not in rooms.by_token:
                    rooms.lost[h] = LOST
            if rid is None:
                orphans.append(line)
            elif rid in rooms.rooms:
                notes.setdefault(rid, f"{where}: line {line.number} (room {rid}) is damaged; skipped, "
                                      "the room goes on")
            else:
                notes.setdefault(rid, f"{where}: line {line.number} (room {rid}) is damaged; the room is "
                                      "lost")
            continue
        if rid in closed or (rid is not None and rid in notes and rid not in rooms.rooms):
            continue  # a room already lost or closed: its later entries say nothing new
        try:
            rooms.replay(line.entry)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError, ApiError) as exc:
            why = exc.message if isinstance(exc, ApiError) else f"{type(exc).__name__}: {exc}"
            why = " ".join(str(why).split())[:120]
            kind = str(line.entry.get("e"))[:20]
            if rid in rooms.rooms:
                rooms.rooms[rid].expired = DAMAGED
                closed.add(rid)
                first = notes.get(rid, "").split(";")[0] or f"{where}: room {rid}"
                notes[rid] = f"{first}; its {kind} entry at line {line.number} does not apply ({why}); " \
                             "the room is closed"
            elif rid is not None:
                cause = (f"line {orphans.pop(0).number} is damaged" if orphans
                         else f"its {kind} entry at line {line.number} does not apply ({why})")
                notes[rid] = f"{where}: room {rid}: {cause}; the room is lost"
            else:
                loose.append(f"{where}: line {line.number} does not apply ({why}); skipped")
    loose += [f"{where}: line {o.number} is damaged; skipped" for o in orphans]
    return [*notes.values(), *loose]


__all__ = ["DAMAGED", "LOST", "replay_journal"]
