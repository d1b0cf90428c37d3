"""Replays: every game of a tournament as one JSON line, and a checker that re-plays them.

``evaluate.py --save-replays DIR`` writes one file per lineup, ``DIR/<lineup>.jsonl``, one line per
game (each seat rotation of a deal is its own game), in deal order. A line holds:

- ``format`` (``"escoba-replay/1"``), ``seed``, ``game_id`` (the engine game id: the deal),
  ``rotation``, ``rules`` (``Rules.to_dict()``), ``mode`` (``"rounds"`` or ``"games"``),
  ``max_rounds``;
- ``lineup`` (agent specs by lineup position), ``seats`` (the agent at each seat);
- ``rounds``: per round the ``dealer``, the ``deck`` (``rules.num_cards`` card ids: 40, or 41/42
  with jokers; top first: hands, then the table, then the stock), every ``action`` with its
  ``actor`` seat, the cards ``captured`` by it (played card included) and whether it was an
  ``escoba``, then the round's ``points`` and ``categories`` per side and the cumulative
  ``scores``;
- ``final_scores``, ``winner`` (side, -1 none) and ``truncated``.

``check_replay`` re-plays a line through a fresh engine (from its seed and game id) and verifies
every deal, actor, capture, escoba, round score and the result; ``check_replays`` does it for a
file or a directory of files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.rulebook.cards import cards_of
from escoba_env.rulebook.rules import Rules

from .play import CATEGORIES

FORMAT = "escoba-replay/1"


class ReplayError(ValueError):
    """A replay that the engine does not reproduce (or that is not a replay at all)."""


def replay_lines(game_dicts: list[dict], *, seed: int, specs: tuple[str, ...], rotation: np.ndarray,
                 rules: Rules, games: bool, max_rounds: int | None) -> Iterator[str]:
    """Yield one JSON line per game of a block (see the module docstring)."""
    for g, rot in zip(game_dicts, rotation, strict=True):
        line = {"format": FORMAT, "seed": int(seed), "game_id": g["game_id"], "rotation": int(rot),
                "rules": rules.to_dict(), "mode": "games" if games else "rounds",
                "max_rounds": max_rounds if games else None, "lineup": list(specs),
                "seats": [specs[k] for k in g["seat_positions"]],
                "rounds": g["rounds"], "final_scores": g["final_scores"], "winner": g["winner"],
                "truncated": g["truncated"]}
        yield json.dumps(line, separators=(",", ":"))


def _expect(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ReplayError(f"{where}: {what}")


def check_replay(line: str | dict, where: str = "replay") -> int:
    """Return the number of actions verified; raise ReplayError at the first mismatch."""
    try:
        rec = json.loads(line) if isinstance(line, str) else line
    except json.JSONDecodeError as exc:
        raise ReplayError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise ReplayError(f"{where}: not an {FORMAT} record")
    try:
        rules = Rules.from_dict(rec["rules"])
        games = rec["mode"] == "games"
        engine = EscobaEngine(1, rules, single_round=not games,
                              max_rounds=rec["max_rounds"] if games else None)
        engine.reset(int(rec["seed"]), game_ids=[int(rec["game_id"])])
        n_actions = 0
        for i, rnd in enumerate(rec["rounds"]):
            at = f"{where}, round {i}"
            _expect(not engine.done[0], at, "the game was already over")
            _expect([int(c) for c in engine.deck[0]] == rnd["deck"], at,
                    "the deck differs from the engine's deal")
            _expect(int(engine.dealer[0]) == rnd["dealer"], at,
                    f"dealer {rnd['dealer']}, engine says {int(engine.dealer[0])}")
            info = None
            for j, act in enumerate(rnd["actions"]):
                a_at = f"{at}, action {j}"
                _expect(info is None or not info.round_over[0], a_at, "the round was already over")
                _expect(int(engine.to_act[0]) == act["actor"], a_at,
                        f"actor {act['actor']}, engine says seat {int(engine.to_act[0])} is to act")
                try:
                    info = engine.step(np.array([act["action"]], np.int64))
                except ValueError as exc:
                    raise ReplayError(f"{a_at}: {exc}") from None
                got = cards_of(int(info.captured[0]))
                _expect(got == sorted(act["captured"]), a_at,
                        f"captured {act['captured']}, engine says {got}")
                _expect(int(info.escoba[0]) == int(act["escoba"]), a_at,
                        f"escoba {act['escoba']}, engine says {int(info.escoba[0])}")
                n_actions += 1
            _expect(info is not None and bool(info.round_over[0]), at,
                    "the recorded actions do not end the round")
            _expect([int(x) for x in info.round_points[0]] == rnd["points"], at,
                    f"points {rnd['points']}, engine says {info.round_points[0].tolist()}")
            for c in CATEGORIES:
                _expect([int(x) for x in info.round_categories[c][0]] == rnd["categories"][c], at,
                        f"{c} points {rnd['categories'][c]}, engine says "
                        f"{info.round_categories[c][0].tolist()}")
            _expect([int(x) for x in info.scores[0]] == rnd["scores"], at,
                    f"scores {rnd['scores']}, engine says {info.scores[0].tolist()}")
        _expect(bool(engine.done[0]), where, "the game is not over after the recorded rounds")
        _expect(engine.scores[0].tolist() == rec["final_scores"], where, "final scores differ")
        _expect(int(engine.winner[0]) == rec["winner"], where,
                f"winner {rec['winner']}, engine says {int(engine.winner[0])}")
        _expect(bool(engine.truncated[0]) == rec["truncated"], where, "truncation flag differs")
    except (KeyError, TypeError, IndexError) as exc:
        raise ReplayError(f"{where}: malformed replay ({type(exc).__name__}: {exc})") from None
    except ValueError as exc:
        if isinstance(exc, ReplayError):
            raise
        raise ReplayError(f"{where}: {exc}") from None
    return n_actions


def check_replays(path: str | Path) -> tuple[int, int]:
    """Return (games, actions) verified in a replay file or a directory of ``*.jsonl`` files."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise ReplayError(f"{path}: no *.jsonl replay files")
    elif path.is_file():
        files = [path]
    else:
        raise ReplayError(f"{path}: no such file or directory")
    games = actions = 0
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for k, line in enumerate(fh, start=1):
                if line.strip():
                    actions += check_replay(line, f"{f}:{k}")
                    games += 1
    if games == 0:
        raise ReplayError(f"{path}: no games in the replay file(s)")
    return games, actions


class ReplayWriter:
    """Writes the games of each lineup to ``DIR/<lineup>.jsonl`` in deal order as blocks arrive."""

    def __init__(self, directory: str | Path, lineup_specs: list[tuple[str, ...]], *, seed: int,
                 rules: Rules, games: bool, max_rounds: int | None):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.specs = lineup_specs
        self.kw = {"seed": seed, "rules": rules, "games": games, "max_rounds": max_rounds}
        self.paths = replay_paths(directory, lineup_specs)
        for p in self.paths:
            p.write_text("", encoding="utf-8")
        self.next = [0] * len(lineup_specs)
        self.pending: list[dict] = [{} for _ in lineup_specs]

    def add(self, block) -> None:
        """Store a finished block and flush every block of its lineup that is now in order."""
        li = block.lineup
        self.pending[li][block.block] = block
        with open(self.paths[li], "a", encoding="utf-8") as fh:
            while self.next[li] in self.pending[li]:
                b = self.pending[li].pop(self.next[li])
                for line in replay_lines(b.replays, specs=self.specs[li], rotation=b.rotation, **self.kw):
                    fh.write(line + "\n")
                b.replays = None  # written: do not keep every game in memory
                self.next[li] += 1


def replay_paths(directory: str | Path, lineup_specs: list[tuple[str, ...]]) -> list[Path]:
    """Return the replay file of each lineup in ``directory``."""
    return [Path(directory) / f"{i:02d}_{_slug(s)}.jsonl" for i, s in enumerate(lineup_specs)]


def _slug(specs: tuple[str, ...]) -> str:
    """Return a file-name-safe name for a lineup."""
    keep = "".join(c if c.isalnum() or c in "=._-" else "-" for c in "_vs_".join(specs))
    return keep[:120]
