"""The run journal of evaluate.py: every finished block, appended and fsynced as it arrives.

``PREFIX.journal.jsonl`` sits next to the result files. Its first line is a header naming the
format and the *key* of the run (a hash of everything that determines the blocks: agent specs and
the fingerprints of the code and files they load (``agents.spec.fingerprint``: checkpoint and model
files, a ``python:`` agent's source and weights), rules, deals and the digest of the decks today's
engine deals for them, mode, seed, block size, orders of play, whether replays are recorded);
every further line is one finished block (its arrays as lists, with their dtypes, and its replays
when recorded). A block is written whole, flushed and fsynced before the next one is taken, so a
run killed at any moment keeps every block it finished; a torn last line (a kill in the middle of
a write) is ignored on reading. A run may also note each *sitting* (one process that played some
of the blocks: a journal can be resumed on another day, commit or machine) as a line
``{"sitting": {...}}`` when it starts; ``Journal.sittings`` holds the ones read back.

``evaluate.py --resume`` reads the journal back, plays only the blocks it lacks and ends with
numbers identical to an uninterrupted run (a block's result depends only on the config). The
journal is removed once the result files are written.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..spec.fingerprint import dealt_digest, spec_fingerprint
from .play import Block
from .report import machine
from .runner import TournamentConfig

FORMAT = "escoba-evaluation-journal/1"
_ARRAYS = ("deal", "rotation", "points", "categories", "rounds", "truncated")


def journal_path(prefix: Path) -> Path:
    """Return the journal file of the result files under ``prefix``."""
    return prefix.with_name(prefix.name + ".journal.jsonl")


def run_key(config: TournamentConfig, record: bool) -> str:
    """Return a hash of everything that determines a run's blocks (not workers, backend, confidence)."""
    # the same spec with other weights or code is another run; the same seed dealt otherwise too
    files = {spec: spec_fingerprint(spec) for spec in config.entrants}
    data = {"dealt": dealt_digest(config.rules, config.seed, config.deals), "orders": config.orders,
            "entrants": list(config.entrants), "vs": config.vs, "rules": config.rules.to_dict(),
            "deals": config.deals, "games": config.games, "duplicate": config.duplicate,
            "seed": int(config.seed), "max_rounds": config.max_rounds if config.games else None,
            "block_deals": config.block_deals, "record": bool(record), "files": files}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def block_to_dict(block: Block) -> dict:
    """Return a block as JSON-ready data (arrays as lists plus their dtypes)."""
    d = {"lineup": block.lineup, "block": block.block,
         "arrays": {k: getattr(block, k).tolist() for k in _ARRAYS},
         "dtypes": {k: str(getattr(block, k).dtype) for k in _ARRAYS}}
    if block.replays is not None:
        d["replays"] = block.replays
    if block.usage is not None:
        d["usage"] = block.usage
    return d


def block_from_dict(d: dict) -> Block:
    """Return the block that ``block_to_dict`` wrote."""
    arrays = {k: np.asarray(d["arrays"][k], dtype=d["dtypes"][k]) for k in _ARRAYS}
    return Block(lineup=int(d["lineup"]), block=int(d["block"]), replays=d.get("replays"),
                 usage=d.get("usage"), **arrays)


def new_sitting(source: dict, blocks_before: int) -> dict:
    """Return the note of a sitting that starts now: the source it loaded (``report.git_state()``),
    the machine, the start time (UTC) and how many blocks were finished before it."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return {"git": source, "machine": machine(), "started": started, "blocks_before": blocks_before}


def provenance(earlier: list[dict], sitting: dict, total: int) -> dict:
    """Return ``{"blocks", "blocks_resumed", "sittings"}`` of a run finished by ``sitting`` after the
    ``earlier`` sittings its journal noted, each sitting with the blocks it played (blocks before the
    first noted sitting were played by runs that noted none)."""
    sittings = [dict(s) for s in (*earlier, sitting)]
    for i, sit in enumerate(sittings):
        end = sittings[i + 1]["blocks_before"] if i + 1 < len(sittings) else total
        sit["blocks_played"] = end - sit["blocks_before"]
    return {"blocks": total, "blocks_resumed": sitting["blocks_before"], "sittings": sittings}


class Journal:
    """An append-only, fsynced journal of finished blocks (see the module docstring)."""

    def __init__(self, path: Path, key: str):
        self.path = Path(path)
        self.key = key
        self.sittings: list[dict] = []  # the sitting notes read by load()
        self._fh = None

    def load(self) -> list[Block]:
        """Return the blocks of an existing journal; raise ValueError if it belongs to another run."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ValueError(f"nothing to resume: {self.path} does not exist") from None
        lines = text.splitlines(keepends=True)
        try:
            head = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            head = None
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            raise ValueError(f"{self.path} is not an evaluate.py journal")
        if head.get("key") != self.key:
            raise ValueError(f"{self.path} belongs to a run with other settings (agents or the code and "
                             "files they load, rules, deals or how this engine deals them, seed, block "
                             "size, orders of play or replays differ): use the same options and code to "
                             "resume it, or --overwrite to start over")
        blocks: dict[tuple[int, int], Block] = {}
        self.sittings = []
        good = len(lines[0])
        for line in lines[1:]:
            if not line.endswith("\n"):
                break  # torn by a kill in the middle of a write: that block is played again
            try:
                d = json.loads(line)
                if isinstance(d, dict) and isinstance(d.get("sitting"), dict) and len(d) == 1:
                    self.sittings.append(d["sitting"])
                else:
                    b = block_from_dict(d)
                    blocks[(b.lineup, b.block)] = b
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{self.path}: a damaged block line ({exc})") from None
            good += len(line)
        if good < len(text):  # drop the torn tail so that the next append starts a clean line
            with open(self.path, "r+b") as fh:
                fh.truncate(len(text[:good].encode("utf-8")))
        return list(blocks.values())

    def start(self, resume: bool, sitting: dict | None = None) -> None:
        """Open the journal for appending (a new file with its header unless resuming); ``sitting``:
        a JSON-ready note of this process (source, machine, start) to keep beside its blocks."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume:
            self._fh = open(self.path, "a", encoding="utf-8")
        else:
            self._fh = open(self.path, "w", encoding="utf-8")
            self._write({"format": FORMAT, "key": self.key})
        if sitting is not None:
            self._write({"sitting": sitting})

    def add(self, block: Block) -> None:
        """Append one finished block and make it durable before returning."""
        self._write(block_to_dict(block))

    def _write(self, obj: dict) -> None:
        self._fh.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the file (it stays on disk)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def remove(self) -> None:
        """Close and delete the journal (once the result files hold everything)."""
        self.close()
        self.path.unlink(missing_ok=True)
