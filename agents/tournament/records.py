"""A tournament's statistics from replay records: the games people played in the arena's rooms.

``records_run(paths)`` reads ``escoba-replay/1`` lines (room records, or ``evaluate.py
--save-replays`` files), re-checks every one with the engine, and turns them into the
``TournamentRun`` that ``analysis`` and ``report`` take, so that a report of people's games prints
and writes exactly what a tournament does: points per round per pair with intervals paired over
deals (where the same deal, ``(seed, game_id)``, was played more than once: duplicate play), win
rates, and OpenSkill ratings that put people and bots on one scale.

- An *entrant* is what sits on one scoring side: a seat's label (``human:<pseudonym>`` or a bot
  spec); a 2v2 side with two different labels is one entrant ``a+b``.
- A *lineup* is the set of entrants of one game; each game is one slot of its lineup.
- Every record must have the same rules and mode (a report compares like with like).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from escoba_env.rulebook.rules import Rules

from . import analysis, report
from .play import CATEGORIES, Block
from .replay import ReplayError, check_replay
from .runner import TournamentConfig, TournamentRun

MAX_RECORDS = 1_000_000


def replay_files(paths: Iterable[str | Path]) -> list[Path]:
    """Return the ``*.jsonl`` files of ``paths`` (files, or folders searched recursively), sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(x for x in p.rglob("*.jsonl") if x.is_file())
        elif p.is_file():
            out.append(p)
        else:
            raise ReplayError(f"{p}: no such file or directory")
    if not out:
        raise ReplayError(f"no *.jsonl replay files in {', '.join(map(str, paths))}")
    return out


def read_records(paths: Iterable[str | Path]) -> list[dict]:
    """Return every record of the files, each re-checked by the engine (ReplayError at the first bad one)."""
    recs = []
    for f in replay_files(paths):
        with open(f, encoding="utf-8") as fh:
            for k, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                where = f"{f}:{k}"
                check_replay(line, where)
                recs.append(json.loads(line))
                if len(recs) > MAX_RECORDS:
                    raise ReplayError(f"more than {MAX_RECORDS:,} records")
    if not recs:
        raise ReplayError("the replay files hold no games")
    return recs


def side_labels(rec: dict, rules: Rules) -> list[str]:
    """Return the entrant of each side of a record (its seats' labels, ``+``-joined when they differ)."""
    out = []
    for s in range(rules.num_sides):
        names: list[str] = []
        for q in range(rules.num_players):
            if rules.side_of(q) == s and rec["seats"][q] not in names:
                names.append(rec["seats"][q])
        out.append("+".join(names))
    return out


def records_run(records: list[dict], confidence: float = 0.95) -> TournamentRun:
    """Return the ``TournamentRun`` of a list of checked records (module docstring)."""
    rules = Rules.from_dict(records[0]["rules"])
    mode = records[0]["mode"]
    for k, r in enumerate(records):
        if r["rules"] != records[0]["rules"] or r["mode"] != mode:
            raise ReplayError(f"record {k + 1} has other rules or another mode than the first; "
                              "report one set of rules at a time")
    sides = [side_labels(r, rules) for r in records]
    entrants = sorted({x for s in sides for x in s})
    if len(entrants) < 2:
        raise ReplayError(f"every game has the same entrant ({entrants[0]}): nothing to compare")
    index = {e: i for i, e in enumerate(entrants)}
    deal_keys = sorted({(int(r["seed"]), int(r["game_id"])) for r in records})
    deal_of = {d: i for i, d in enumerate(deal_keys)}
    lineups: list[tuple[int, ...]] = []
    slots: dict[tuple[int, ...], list] = {}
    for rec, labels in zip(records, sides, strict=True):
        key = tuple(sorted(index[x] for x in labels))
        if key not in slots:
            slots[key] = []
            lineups.append(key)
        # Lineup position k is the side whose entrant is key[k] (equal entrants in side order).
        free = list(range(rules.num_sides))
        pos_side = []
        for e in key:
            s = next(s for s in free if index[labels[s]] == e)
            free.remove(s)
            pos_side.append(s)
        pts = [sum(rnd["points"][s] for rnd in rec["rounds"]) for s in pos_side]
        cats = [[sum(rnd["categories"][c][s] for rnd in rec["rounds"]) for s in pos_side] for c in CATEGORIES]
        slots[key].append((deal_of[(int(rec["seed"]), int(rec["game_id"]))], pos_side[0], pts, cats,
                           len(rec["rounds"]), bool(rec["truncated"])))
    blocks = []
    for li, key in enumerate(lineups):
        rows = slots[key]
        blocks.append([Block(lineup=li, block=0, deal=np.array([r[0] for r in rows], np.int64),
                             rotation=np.array([r[1] for r in rows], np.int64),
                             points=np.array([r[2] for r in rows], np.float64),
                             categories=np.array([r[3] for r in rows], np.float64),
                             rounds=np.array([r[4] for r in rows], np.int64),
                             truncated=np.array([r[5] for r in rows], bool))])
    repeated = len(deal_keys) < len(records)
    max_rounds = max((r["max_rounds"] or 0) for r in records) or 100
    config = TournamentConfig(agents=tuple(entrants), rules=rules, deals=len(deal_keys),
                              games=mode == "games", duplicate=repeated, seed=0, max_rounds=max_rounds,
                              confidence=confidence)
    return TournamentRun(config, lineups, blocks)


def records_results(paths: Iterable[str | Path], confidence: float = 0.95) -> tuple[str, dict]:
    """Return (the printed table, the results dict in ``evaluate.py``'s JSON format) of replay files."""
    paths = list(paths)
    records = read_records(paths)
    run = records_run(records, confidence)
    pairs, agents, ratings = analysis.pair_stats(run), analysis.agent_stats(run), analysis.fit_ratings(run)
    results = report.results_dict(run, pairs, agents, ratings)
    takeovers = sum(len((r.get("room") or {}).get("takeovers", [])) for r in records)
    results["seeds"] = {"seed": None, "deals": "from the records: a deal is a record's (seed, game_id); "
                                               "games of the same deal are paired"}
    results["source"] = {"kind": "replay records", "records": len(records), "deals": run.config.deals,
                         "takeovers": takeovers}
    head = (f"{len(records)} recorded games, {run.config.deals} distinct deals"
            f"{' (repeated deals paired)' if run.config.duplicate else ''}"
            f"{f', {takeovers} seat(s) taken over by a bot' if takeovers else ''}")
    text = head + "\n" + report.table(run, pairs, agents, ratings).split("\n", 1)[1]
    return text, results
