"""Fingerprints of what an agent spec loads from outside the project: code and weights, as hashes.

Two cards under one spec are the same agent only if they ran the same code with the same weights.
For every ``python:module:factory``, ``checkpoint:PATH`` and ``sb3:PATH`` a spec names (nested
specs included, ``search:policy=checkpoint:x.pt``), ``spec_fingerprint`` returns:

- ``python:``: the installed distribution's name and version when the module belongs to one, else
  the SHA-256 of the module's source (every ``.py`` file of its top-level package, or its one
  file), plus the SHA-256 of every other file the factory opened for reading while it built the
  agent (its weights), outside the Python installation;
- ``checkpoint:`` / ``sb3:``: the SHA-256 of the file;
- ``llm:``: the model's name and the harness settings its answers were given under (``LLMAgent.harness``:
  the answer protocol's version, moves listed or hidden, the failure policy, votes, reasoning,
  max_tokens, temperature, re-asks), so that cards of one model under other settings never read as
  one agent. The URL and the key are not part of it.

A tournament journal's key and a report card both hold it, and the journal's key also holds
``dealt_digest``, the hash of the deals today's engine deals for the run's seed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.rulebook.rules import Rules

from ..external.provenance import LOADED, cwd_importable, file_sha256
from .registry import Spec, make_agent, read_spec

FILE_SPECS = ("checkpoint", "sb3")
"""Registry names whose first parameter is a file path."""

def module_fingerprint(module: str) -> dict:
    """Return the fingerprint of a ``python:`` spec's module: its distribution's name and version,
    or the SHA-256 of its source files."""
    cwd_importable()
    top = module.split(".")[0]
    dists = metadata.packages_distributions().get(top)
    if dists:
        return {"module": module, "package": dists[0], "version": metadata.version(dists[0])}
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        found = None
    if found is None or not found.origin and not found.submodule_search_locations:
        return {"module": module, "sha256": None}
    if found.submodule_search_locations:
        base = Path(list(found.submodule_search_locations)[0])
        files = sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)
    else:
        base = Path(found.origin).parent
        files = [Path(found.origin)]
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(base).as_posix().encode() + b"\0")
        h.update(f.read_bytes())
    return {"module": module, "sha256": h.hexdigest(), "files": len(files)}


def spec_fingerprint(spec: str | Spec) -> dict[str, dict]:
    """Return {outside part of ``spec``: its fingerprint} (module docstring); {} for a spec that
    loads nothing from outside the project (or that the registry cannot read)."""
    try:
        spec = read_spec(spec)
    except ValueError:
        return {}
    out: dict[str, dict] = {}
    name, params = spec.name, dict(spec.params)
    if name == "python" and params.get("target"):
        target = params["target"]
        fp = module_fingerprint(target.rpartition(":")[0] or target)
        if LOADED.get(target):
            fp["weights"] = dict(LOADED[target])
        out[f"python:{target}"] = fp
    elif name == "llm":
        out[f"llm:{params.get('model', '')}"] = llm_fingerprint(spec)
    elif name in FILE_SPECS and params.get("path"):
        path = params["path"]
        if name == "sb3" and not os.path.isfile(path) and not path.endswith(".zip"):
            path += ".zip"
        out[f"{name}:{params['path']}"] = {"sha256": file_sha256(path)}
    for inner in params.values():  # another agent's spec: what it loads is part of this one
        if isinstance(inner, Spec):
            out.update(spec_fingerprint(inner))
    return out


def llm_fingerprint(spec: str | Spec) -> dict:
    """Return an ``llm:`` spec's model and harness settings ({} when the spec cannot be built)."""
    try:
        agent = make_agent(spec)
    except ValueError:
        return {}
    return {"model": agent.model, "harness": agent.harness}


def dealt_digest(rules: Rules, seed: int, deals: int) -> str:
    """Return the SHA-256 of the decks and dealers that today's engine deals for game ids
    ``0 .. deals - 1`` under ``seed`` (first rounds)."""
    engine = EscobaEngine(int(deals), rules, single_round=True)
    engine.reset(int(seed), game_ids=np.arange(int(deals)))
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(engine.deck, dtype=np.int16).tobytes())
    h.update(np.ascontiguousarray(engine.dealer, dtype=np.int16).tobytes())
    return h.hexdigest()


def outside_modules(spec: str | Spec) -> list[str]:
    """Return the source paths (a top-level package's folder or a module's file) of the
    ``python:`` modules ``spec`` names that no installed distribution provides."""
    out = []
    for part, fp in spec_fingerprint(spec).items():
        if not part.startswith("python:") or "package" in fp:
            continue
        cwd_importable()
        top = fp["module"].split(".")[0]
        try:
            found = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if found is not None and found.submodule_search_locations:
            out.append(str(list(found.submodule_search_locations)[0]))
        elif found is not None and found.origin:
            out.append(str(found.origin))
    return out


def outside_runtime_env(specs: Iterable[str | Spec]) -> dict:
    """Return ``{"runtime_env": {"py_modules": [...]}}`` for Ray tasks that build ``specs`` when
    some ``python:`` module comes from outside the installed packages (else ``{}``)."""
    paths = sorted({p for s in specs for p in outside_modules(s)})
    return {"runtime_env": {"py_modules": paths}} if paths else {}
