"""Replay frames: a recorded game re-played through the engine, one frame per action.

The record is first verified by ``agents.tournament.replay.check_replay`` (every deal, capture and
score); then a fresh engine re-plays it and each frame holds every hand, the table before and after
the action, the capture piles, the scores and the action itself, so that the page can step back and
forth and show any seat's view.
"""

from __future__ import annotations

import json

import numpy as np

from agents.tournament.replay import ReplayError, check_replay
from escoba_env.executors.engine import EscobaEngine
from escoba_env.rulebook.cards import cards_of
from escoba_env.rulebook.rules import Rules

MAX_ACTIONS = 20_000
"""A replay with more actions than this is refused (a long game has a few hundred)."""


def _snapshot(eng: EscobaEngine) -> dict:
    p = eng.num_players
    return {"hands": [cards_of(int(eng.hands[0, q])) for q in range(p)],
            "table": cards_of(int(eng.table[0])),
            "piles": [int(eng.piles[0, q]).bit_count() for q in range(p)],
            "escobas": [int(x) for x in eng.escobas[0]], "scores": [int(x) for x in eng.scores[0]],
            "stock": eng.rules.num_cards - int(eng.stock_pos[0]), "to_act": int(eng.to_act[0])}


def replay_frames(record: str | dict, where: str = "replay") -> dict:
    """Return {"meta", "rounds"} for one replay record; ReplayError if the engine does not reproduce it.

    ``rounds[i]`` holds the dealer, the dealer's initial take, ``frames`` (frame 0 is the deal;
    frame k is the position after action k, with that action's ``actor``, ``card``, ``take`` (a
    table card named during a capture choice), ``choosing`` (a capture choice is under way after
    it), ``captured``, ``escoba`` and ``table_before``) and the round's ``points``, ``categories``
    and ``scores``.
    """
    rec = json.loads(record) if isinstance(record, str) else record
    n = check_replay(rec, where)
    if n > MAX_ACTIONS:
        raise ReplayError(f"{where}: {n} actions, more than the {MAX_ACTIONS} the viewer shows")
    rules = Rules.from_dict(rec["rules"])
    games = rec["mode"] == "games"
    eng = EscobaEngine(1, rules, single_round=not games, max_rounds=rec["max_rounds"] if games else None)
    eng.reset(int(rec["seed"]), game_ids=[int(rec["game_id"])])
    rounds = []
    for rnd in rec["rounds"]:
        dealer = int(eng.dealer[0])
        frames = [dict(_snapshot(eng), action=None)]
        for act in rnd["actions"]:
            before = cards_of(int(eng.table[0]))
            pending = int(eng.pending[0])
            last_capturer = int(eng.last_capturer[0])
            info = eng.step(np.array([act["action"]], np.int64))
            snap = _snapshot(eng) if not bool(info.round_over[0]) else None
            if snap is None:
                # The round ended: show the final position of this round, not the next deal.
                snap = dict(frames[-1])
                snap["hands"] = [list(h) for h in snap["hands"]]
                snap["hands"][act["actor"]] = [c for c in snap["hands"][act["actor"]] if c != act["action"]]
                snap["table"] = []
                snap["scores"] = [int(x) for x in info.scores[0]]
                snap["escobas"] = list(snap["escobas"])
                snap["escobas"][act["actor"]] += int(info.escoba[0])
                snap["piles"] = list(snap["piles"])
                snap["piles"][act["actor"]] += len(act["captured"])
                left = len(before) + 1 - len(act["captured"])  # the played card was on the table too
                last = act["actor"] if act["captured"] else last_capturer
                if left and last >= 0:
                    snap["piles"][last] += left
                snap["left"] = left
            frames.append(dict(snap, action={"actor": act["actor"], "card": act["action"],
                                             "take": pending >= 0, "choosing": int(eng.pending[0]) >= 0,
                                             "captured": act["captured"], "escoba": act["escoba"],
                                             "table_before": before}))
        rounds.append({"dealer": dealer, "frames": frames, "points": rnd["points"],
                       "categories": rnd["categories"], "scores": rnd["scores"]})
    meta = {k: rec[k] for k in ("seed", "game_id", "rotation", "rules", "mode", "lineup", "seats",
                                "final_scores", "winner", "truncated")}
    return {"meta": meta, "rounds": rounds}
