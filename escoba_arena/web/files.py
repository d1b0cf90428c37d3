"""The files the arena may open: replays (``*.jsonl``) and results (``*.json``) under its data roots.

A file is named by its root's index and its path relative to that root (``0/replays/x.jsonl``); any
name that resolves outside every root (``..``, an absolute path, a symbolic link leading out) is
refused with ValueError, so the server never reads a file it was not started with. Files under a
``private`` folder (the rooms' records, unless the operator serves them) are neither listed nor
read, and a ``gate`` may withhold a file for now (a room record whose deal is still in play):
``PermissionError``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

MAX_FILES = 500
"""At most this many files are listed (the newest first)."""
MAX_BYTES = 64 * 1024 * 1024
"""Files larger than this are refused (a replay of 1,000 games is about 3 MB)."""
RESULTS_FORMAT = "escoba-evaluation/1"


class DataRoots:
    """The directories given at start; resolves file names safely inside them."""

    def __init__(self, roots: list[str | Path]):
        self.roots = [Path(r).resolve() for r in roots]
        self.private: list[Path] = []
        """Folders whose files are never listed or read (the rooms' records unless served)."""
        self.gate: Callable[[Path], str | None] | None = None
        """Returns why a file may not be read now, or None."""

    def refusal(self, path: Path) -> str | None:
        """Return why the file ``path`` (resolved) may not be listed or read, or None."""
        if any(path.is_relative_to(p) for p in self.private):
            return "it is in a private folder of the server (the rooms' records)"
        return None if self.gate is None else self.gate(path)

    def resolve(self, name: str, suffix: str) -> Path:
        """Return the path of file ``name`` (``<root index>/<relative path>``); ValueError if not allowed."""
        if not isinstance(name, str) or "/" not in name:
            raise ValueError(f"a file name is <root index>/<path>, got {name!r}")
        idx, _, rel = name.partition("/")
        if not idx.isdigit() or int(idx) >= len(self.roots):
            raise ValueError(f"no data directory {idx!r} (the server has {len(self.roots)})")
        if "\x00" in rel or rel.startswith("/") or "\\" in rel:
            raise ValueError(f"bad file name {name!r}")
        root = self.roots[int(idx)]
        path = (root / rel).resolve()
        if not path.is_relative_to(root):
            raise ValueError(f"{name!r} is outside the data directories")
        if path.suffix != suffix:
            raise ValueError(f"{name!r} is not a {suffix} file")
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {name!r}")
        why = self.refusal(path)
        if why is not None:
            raise PermissionError(f"{name!r} is not shown: {why}")
        if path.stat().st_size > MAX_BYTES:
            raise ValueError(f"{name!r} is larger than {MAX_BYTES // 2**20} MB")
        return path

    def name_of(self, path: Path) -> str | None:
        """Return the arena name of ``path`` if it lies under a root, else None."""
        path = path.resolve()
        for i, root in enumerate(self.roots):
            if path.is_relative_to(root):
                return f"{i}/{path.relative_to(root).as_posix()}"
        return None

    def listing(self) -> dict:
        """Return the replay and results files under the roots: {"replays": [...], "results": [...]}."""
        out: dict[str, list[dict]] = {"replays": [], "results": []}
        for kind, pattern in (("replays", "*.jsonl"), ("results", "*.json")):
            # Keyed by the file itself: a symbolic link to a file in a root, or nested roots, list it once.
            found: dict[Path, None] = {}
            for root in self.roots:
                if root.is_dir():
                    found.update((p.resolve(), None) for p in root.rglob(pattern) if p.is_file()
                                 and p.resolve().is_relative_to(root))
            shown = [p for p in found if self.refusal(p) is None]
            for p in sorted(shown, key=lambda p: p.stat().st_mtime, reverse=True)[:MAX_FILES]:
                name = self.name_of(p)
                if name is not None:
                    out[kind].append({"name": name, "size": p.stat().st_size})
        return out


def read_replay_lines(path: Path) -> list[str]:
    """Return the non-empty lines of a replay file."""
    with open(path, encoding="utf-8") as fh:
        return [line for line in fh if line.strip()]


def load_results(path: Path) -> dict:
    """Return an ``evaluate.py`` results file; ValueError if it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise ValueError(f"{path.name}: not an {RESULTS_FORMAT} results file")
    for key in ("config", "pairs", "ratings", "agents"):
        if key not in data:
            raise ValueError(f"{path.name}: results file without {key!r}")
    return data


def matching_replays(roots: DataRoots, results: dict) -> list[dict]:
    """Return the replay files under the roots of the run ``results`` (same seed, rules, lineup)."""
    cfg = results.get("config", {})
    seed = results.get("seeds", {}).get("seed")
    lineups = [list(lu) for lu in cfg.get("lineups", [])]
    out = []
    for entry in roots.listing()["replays"]:
        try:
            path = roots.resolve(entry["name"], ".jsonl")
            with open(path, encoding="utf-8") as fh:
                first = json.loads(fh.readline())
        except (OSError, ValueError):
            continue
        if (isinstance(first, dict) and first.get("seed") == seed and first.get("rules") == cfg.get("rules")
                and first.get("mode") == cfg.get("mode") and first.get("lineup") in lineups):
            out.append({"name": entry["name"], "lineup": first["lineup"]})
    return out
