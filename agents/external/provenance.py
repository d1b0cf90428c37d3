"""What a ``python:`` agent's factory reads, and where its module is imported from.

``agents.external.python_factory`` builds ``python:module:factory`` agents with the folder the command runs
from importable (``cwd_importable``) and notes, per target, the files the factory opened for reading
(``opened_files``, Python's audit events) with their SHA-256 (``LOADED``): the weights that
``agents.spec.fingerprint`` puts into a card's and a journal's fingerprint of the agent.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOADED: dict[str, dict[str, str]] = {}
"""Per ``python:`` target built in this process, the files its factory opened: {path: sha256}."""

_RECORDING: list[set[str]] = []
_HOOKED = False
_SKIP_SUFFIXES = (".py", ".pyc", ".so", ".pth")


def file_sha256(path: str | Path) -> str | None:
    """Return the SHA-256 of a file's bytes (None if there is no such file)."""
    p = Path(path)
    if not p.is_file():
        return None
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cwd_importable() -> None:
    """Make the folder the command runs from importable (as ``python -m`` does), at the end of
    ``sys.path`` so that it never shadows an installed module."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)


def _hook(event: str, args: tuple) -> None:
    if not _RECORDING or event != "open" or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
    if "r" in mode and "+" not in mode:
        _RECORDING[-1].add(os.fsdecode(args[0]))


@contextmanager
def opened_files() -> Iterator[set[str]]:
    """Collect the paths opened for reading inside the ``with`` block (Python's audit events)."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED = True
    seen: set[str] = set()
    _RECORDING.append(seen)
    try:
        yield seen
    finally:
        _RECORDING.remove(seen)


def weight_files(paths: set[str]) -> dict[str, str]:
    """Return {path: sha256} of the data files among ``paths`` (not Python's own or its libraries')."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    out = {}
    for p in sorted(paths):
        real = os.path.realpath(p)
        if p.endswith(_SKIP_SUFFIXES) or any(real.startswith(r + os.sep) for r in roots):
            continue
        sha = file_sha256(real)
        if sha is not None:
            out[p] = sha
    return out
