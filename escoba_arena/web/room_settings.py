"""A new room's settings, checked: the rules, each seat a person or an allow-listed bot, the deals.

``parse_settings`` turns a request body into the settings a room is opened with (and that the
journal keeps), or raises ``ApiError`` 400 naming the first bad field.
"""

from __future__ import annotations

import secrets
from typing import Any

from .guard import ApiError, check_list, short_repr
from .lobby import MAX_ROUNDS, SEED_BITS, Arena, request_rules
from .room_table import DEFAULT_TAKEOVER, HUMAN, MAX_DEALS, PSEUDONYM


def seat_of_text(text: str) -> dict:
    """Return the seat a text names: ``human``, ``human:NAME`` (a person and their pseudonym), or a spec."""
    if text == HUMAN:
        return {"kind": HUMAN}
    if text.startswith(HUMAN + ":"):
        return {"kind": HUMAN, "name": text[len(HUMAN) + 1:]}
    return {"kind": "bot", "spec": text}


def parse_settings(arena: Arena, body: Any, can_record: bool) -> dict:
    """Return the validated settings of a new room (ApiError 400 on the first bad field)."""
    rules = request_rules(body, {"rules", "seats", "record", "takeover", "max_rounds", "deals", "seed"})
    p = rules.num_players
    seats_in = check_list(body.get("seats", [HUMAN] * p), "seats", 4)
    if len(seats_in) != p:
        raise ApiError(400, f"give one seat per player: {p} seats, got {len(seats_in)}")
    seats, names = [], set()
    for k, s in enumerate(seats_in):
        if isinstance(s, str):
            s = seat_of_text(s)
        if (not isinstance(s, dict) or set(s) - {"kind", "spec", "name"}
                or s.get("kind") not in (HUMAN, "bot")):
            raise ApiError(400, f"seat {k} must be \"human\", \"human:NAME\", an agent spec, or "
                                "{\"kind\": \"human\"|\"bot\", \"spec\": ..., \"name\": ...}")
        if s["kind"] == HUMAN:
            name = s.get("name") or f"p{k}-{secrets.token_hex(3)}"
            if not isinstance(name, str) or not PSEUDONYM.fullmatch(name):
                raise ApiError(400, f"seat {k}: a pseudonym is 1-24 letters, digits, '_' or '-', "
                                    f"got {short_repr(name, 40)}")
            if name in names:
                raise ApiError(400, f"seat {k}: pseudonym {name!r} is used twice")
            names.add(name)
            seats.append({"kind": HUMAN, "spec": HUMAN, "name": name})
        else:
            spec = arena.resolve_spec(s.get("spec"))
            seats.append({"kind": "bot", "spec": spec, "name": spec})
    if not any(s["kind"] == HUMAN for s in seats):
        raise ApiError(400, "a room needs at least one human seat (bots alone: use evaluate.py)")
    record = body.get("record", False)
    if not isinstance(record, bool):
        raise ApiError(400, f"record must be true or false, got {short_repr(record)}")
    if record and not can_record:
        raise ApiError(400, "this server keeps no records: start it with --rooms-dir DIR to record rooms")
    takeover = arena.resolve_spec(body.get("takeover", DEFAULT_TAKEOVER))
    max_rounds = body.get("max_rounds")
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, int)
                                   or not 1 <= max_rounds <= MAX_ROUNDS):
        raise ApiError(400, f"max_rounds must be an integer from 1 to {MAX_ROUNDS}, "
                            f"got {short_repr(max_rounds)}")
    deals = body.get("deals")
    fixed = deals is not None
    top = 2**SEED_BITS - 1
    if fixed:
        check_list(deals, "deals", MAX_DEALS)
        if not deals:
            raise ApiError(400, "deals must list at least one deal")
        out = []
        for k, d in enumerate(deals):
            ok = isinstance(d, dict) and set(d) == {"seed", "game_id"} and all(
                isinstance(d[x], int) and not isinstance(d[x], bool) and 0 <= d[x] <= top
                for x in ("seed", "game_id"))
            if not ok:
                raise ApiError(400, f"deal {k} must be {{\"seed\": int, \"game_id\": int}} "
                                    f"(each 0 to 2**64-1), got {short_repr(d)}")
            out.append((d["seed"], d["game_id"]))
        deals = out
    else:
        seed = body.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                 or not 0 <= seed <= top):
            raise ApiError(400, f"seed must be an integer from 0 to {top}, got {short_repr(seed)}")
        # A drawn seed has 64 random bits, as for games: the deal cannot be found from a view.
        deals = [(secrets.randbits(SEED_BITS) if seed is None else seed, 0)]
    return {"rules": rules.to_dict(), "seats": seats, "record": record, "takeover": takeover,
            "max_rounds": max_rounds, "deals": [list(d) for d in deals], "fixed_deals": fixed}


__all__ = ["parse_settings", "seat_of_text"]
