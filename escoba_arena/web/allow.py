"""Which agents a request may name: the arena's allow-list of agent specs, derived from the registry.

A request names its opponents by agent spec (``search:sims=400``). ``AllowList.check`` turns a
spec into its canonical form (``agents.spec.registry.canonical_spec``, data names for files) or refuses it
(``Refused``):

- every agent of the registry but those it marks ``from_request=False`` (``sb3``, ``python``, ...),
  with the parameters a request may set (``CAPS``) checked against the bounds the registry declares
  (``served``: ``sims`` at most 2,000, ...). Free text parameters are never taken from a request;
- a parameter that names another agent (``search:policy=``, ``endgame:base=``: the registry's
  ``AgentSpec`` type) is checked as a spec of its own, recursively, by these same rules;
- a file parameter (``checkpoint:<folder>/<path>.pt``) names a checkpoint under the arena's data
  folders, named like its files (``0/models/x.pt`` is ``models/x.pt`` under the first ``--data``
  folder). Absolute paths, ``..``, symbolic links that lead out, and any character outside
  ``[A-Za-z0-9._/-]`` are refused with one message that never depends on whether a file exists;
- specs the operator allows (``--allow-agent SPEC``, read once when the list is made), in their canonical
  form only: an agent marked ``from_request=False`` is built from a request only when the request names
  that exact spec (for a language model, the exact ``base_url`` the operator gave).

A canonical spec holds no server path, so it is also what seats and replays show;
``AllowList.build`` makes the agent from it, checking it again in the same pass (a room's journal is
read back under the allow-list of the server that reads it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import agents
from agents.spec.registry import REGISTRY, Spec, entry_of, make_agent, read_spec, write_spec
from agents.spec.values import AgentSpec, File, Param
from escoba_env.rulebook.rules import Rules

MAX_SPEC = 200
"""The longest spec a request may send (characters)."""
MAX_DEPTH = 3
"""How deep a request may nest agent specs (``endgame:base=hybrid:policy=greedy`` is 3)."""
NEURAL = "neural"
"""The arena's alias of the shipped 2-player neural agent."""
NEURAL_FILE = "agents/pretrained/escoba_2p.pt"
"""The shipped 2-player network, from the repository root."""
_NAME = re.compile(r"[A-Za-z0-9._/-]+")
_CHECKPOINT_REFUSED = ("a checkpoint must be a .pt file under the arena's data folders, written "
                       "checkpoint:<folder index>/<path> (the folders are listed in /api/info)")


class Refused(ValueError):
    """A spec the arena does not build: the message is short and safe to show the client."""


class _Caps(Mapping):
    """The registry seen by requests: every agent a request may name -> the parameters it may set."""

    def __getitem__(self, name: str) -> dict[str, Param]:
        entry = REGISTRY.get(name)
        if entry is None or not entry.from_request:
            raise KeyError(name)
        return {k: p for k, p in entry.params.items() if p.requestable}

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, e in REGISTRY.items() if e.from_request])

    def __len__(self) -> int:
        return sum(e.from_request for e in REGISTRY.values())


CAPS: Mapping[str, dict[str, Param]] = _Caps()
"""Every agent a request may name -> its parameters a request may set, each with its bounds (read from
the registry when asked, so an agent registered later is covered)."""


def _read(text: str | Spec) -> Spec | str:
    """Return ``text`` read into a ``Spec``, or as it is if the registry cannot read it (an operator's spec
    the registry no longer reads is compared as written)."""
    try:
        return read_spec(text)
    except ValueError:
        return text


def _canonical(text: str | Spec) -> str:
    """Return the canonical form of ``text`` (``text`` itself if the registry cannot read it)."""
    spec = _read(text)
    return spec.canonical if isinstance(spec, Spec) else spec.strip()


def _text(spec: Spec | str) -> str:
    """Return what the registry reads: a ``Spec``'s canonical text, or the text."""
    return spec.canonical if isinstance(spec, Spec) else spec


def _short(text: str, n: int = 60) -> str:
    """Return ``repr(text)``, cut to about ``n`` characters: messages never echo long input."""
    r = repr(text)
    return r if len(r) <= n else r[: n - 4] + "...'"


def repo_root() -> Path:
    """Return the repository root (the folder that holds ``agents/``)."""
    return Path(agents.__file__).resolve().parent.parent


class AllowList:
    """The agent specs a request may name, for data folders ``roots`` and operator specs ``extra``."""

    def __init__(self, roots: Sequence[str | Path] = (), extra: Iterable[str | Spec] = ()):
        self.roots = [Path(r).resolve() for r in roots]
        extra = list(extra)
        self.extra = {str(s).strip() for s in extra}
        self._operator = {_canonical(e) for e in extra}  # read once: a request may spell them otherwise

    def operator_spec(self, spec: str) -> str | None:
        """Return the canonical form of ``spec`` if it is one the operator allowed, else None."""
        mine = _canonical(spec)
        return mine if spec in self.extra or mine in self._operator else None

    def check(self, spec: Any, depth: int = 1) -> str:
        """Return the canonical form of ``spec``; raise Refused (a short message) if it is not allowed."""
        return self._allow(spec, depth)[0]

    def build(self, spec: str, rules: Rules, seed: int | None) -> Any:
        """Return the agent of a spec that ``check`` accepts (data names become the real paths)."""
        return make_agent(self._allow(spec)[1], rules=rules, seed=seed)

    def registry_spec(self, spec: str) -> str:
        """Return the registry spec of a spec ``check`` accepts: data names made paths, nested specs too."""
        return _text(self._allow(spec)[1])

    def _allow(self, spec: Any, depth: int = 1) -> tuple[str, Spec | str]:
        """Return (the canonical form of ``spec``, what the registry builds: its ``Spec`` as read, or its
        text with data names made paths); raise Refused (a short message) if it is not allowed."""
        if not isinstance(spec, str) or not spec.strip() or len(spec) > MAX_SPEC:
            raise Refused(f"an opponent is an agent spec string of at most {MAX_SPEC} characters, "
                          f"got {_short(spec) if isinstance(spec, str) else type(spec).__name__}")
        spec = spec.strip()
        mine = _read(spec)
        canonical = mine.canonical if isinstance(mine, Spec) else spec
        if spec in self.extra or canonical in self._operator:
            return canonical, mine
        name = spec.partition(":")[0].strip()
        if name not in CAPS:
            raise Refused(f"agent {_short(name, 40)} is not allowed here (allowed: {', '.join(CAPS)}; "
                          "an operator may allow more with --allow-agent)")
        try:
            entry, raw = entry_of(spec)
        except ValueError as exc:
            raise Refused(str(exc).split("\n")[0]) from None
        params, values, built = CAPS[name], {}, {}
        for key, text in raw.items():
            param = params.get(key)
            if param is None:
                raise Refused(f"agent {name!r} takes no parameter {_short(key, 30)} here "
                              f"(parameters: {', '.join(params) or 'none'})")
            values[key], built[key] = self._value(name, key, param, text, depth)
            if param.is_default(values[key]):
                del values[key], built[key]
        for key, param in params.items():
            if isinstance(param, File) and param.required and key not in raw:
                raise Refused(_CHECKPOINT_REFUSED)
        built = {k: built[k] for k in entry.params if k in built}
        return write_spec(entry, values), entry.name + "".join(
            f"{',' if i else ':'}{k}={v}" for i, (k, v) in enumerate(built.items()))

    def _value(self, name: str, key: str, param: Param, text: str, depth: int) -> tuple[str, str]:
        """Return (the canonical text, the registry's text) of a parameter a request sets; Refused if it
        may not (out of the bounds a request may ask, a file outside the data folders, too deep)."""
        if isinstance(param, File):
            shown = self.data_name(text)
            return shown, str(self.path_of(shown))
        if isinstance(param, AgentSpec) and depth >= MAX_DEPTH:
            raise Refused(f"agent specs nest at most {MAX_DEPTH} deep here")
        try:  # another agent's spec is checked as a spec; read refuses the names it excludes
            if isinstance(param, AgentSpec):
                shown, inner = self._allow(text, depth + 1)
                return param.read(shown), _text(inner)
            return param.served(text), param.served(text)
        except Refused:
            raise
        except ValueError:
            raise Refused(f"parameter {key!r} of agent {name!r} must be {param.expected(True)}") from None

    def data_name(self, name: str) -> str:
        """Return the data-folder name of a checkpoint (``<index>/<path>.pt``); Refused if it is not one.

        The refusal is the same for every name outside the folders, whether or not a file is there.
        """
        idx, _, rel = name.partition("/")
        parts = rel.split("/")
        if (not _NAME.fullmatch(name) or not idx.isdigit() or len(idx) > 3 or int(idx) >= len(self.roots)
                or not rel.endswith(".pt") or any(p in ("", ".", "..") for p in parts)):
            raise Refused(_CHECKPOINT_REFUSED)
        root = self.roots[int(idx)]
        if not (root / rel).resolve().is_relative_to(root):  # a symbolic link leading out
            raise Refused(_CHECKPOINT_REFUSED)
        return f"{int(idx)}/{rel}"

    def path_of(self, name: str) -> Path:
        """Return the file of a data-folder name that ``data_name`` accepted."""
        idx, _, rel = self.data_name(name).partition("/")
        return (self.roots[int(idx)] / rel).resolve()
