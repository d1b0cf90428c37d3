"""Which agents a request may name: the arena's allow-list of agent specs.

A request names its opponents by agent spec (``search:sims=400``). ``AllowList.check`` turns a
spec into its canonical form or refuses it (``Refused``):

- the registry's built-in agents, with their numeric parameters capped (``CAPS``);
- the arena's alias ``neural`` (the shipped 2-player network) and the shipped networks;
- ``checkpoint:<folder>/<path>.pt``: a checkpoint under the arena's data folders, named like its
  files (``0/models/x.pt`` is ``models/x.pt`` under the first ``--data`` folder). Absolute
  paths, ``..``, symbolic links that lead out, and any character outside ``[A-Za-z0-9._/-]`` are
  refused with one message that never depends on whether a file exists;
- specs the operator allows exactly as written (``--allow-agent SPEC``).

Everything else (``sb3:``, ``python:``, agents registered by other modules, unknown parameters) is
refused. A canonical spec holds no server path, so it is also what seats and replays show;
``AllowList.build`` makes the agent from it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from agents.registry import REGISTRY, make_agent, parse_spec
from escoba_env.rules import Rules

MAX_SPEC = 200
"""The longest spec a request may send (characters)."""
MAX_SIMS = 2000
"""The most rollouts (``sims``) a request may ask of a search agent: well under a second a move."""
NEURAL = "neural"
"""The arena's alias of the shipped 2-player neural agent."""
NEURAL_FILE = "agents/pretrained/escoba_2p.pt"
"""The shipped 2-player network, from the repository root."""
_NAME = re.compile(r"[A-Za-z0-9._/-]+")
_CHECKPOINT_REFUSED = ("a checkpoint must be a .pt file under the arena's data folders, written "
                       "checkpoint:<folder index>/<path> (the folders are listed in /api/info)")


class Refused(ValueError):
    """A spec the arena does not build: the message is short and safe to show the client."""


def _capped(high: int, low: int = 1) -> Callable[[str], str]:
    def check(text: str) -> str:
        if not text.isdigit() or len(text) > 9 or not low <= int(text) <= high:
            raise Refused(f"must be an integer from {low} to {high:,}")
        return str(int(text))

    return check


def _finite(low: float, high: float) -> Callable[[str], str]:
    def check(text: str) -> str:
        try:
            v = float(text)
        except ValueError:
            raise Refused(f"must be a number from {low:g} to {high:g}") from None
        if not (math.isfinite(v) and low <= v <= high):
            raise Refused(f"must be a number from {low:g} to {high:g}")
        return repr(v)

    return check


def _choice(*options: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text.lower() not in options:
            raise Refused(f"must be one of {', '.join(options)}")
        return text.lower()

    return check


def _horizon(text: str) -> str:
    return "none" if text.lower() in ("none", "round") else _capped(100)(text)


_BOOL = _choice("true", "false", "1", "0", "yes", "no", "on", "off")
_CPU = _choice("cpu")
_SEARCH = {"sims": _capped(MAX_SIMS), "epsilon": _finite(0.0, 1.0), "rollout": _choice("greedy", "random"),
           "threat": _choice("count", "peek", "none"), "horizon": _horizon, "max_rows": _capped(200_000)}
_NET = {"device": _CPU, "deterministic": _BOOL}
CAPS: dict[str, dict[str, Callable[[str], str]]] = {
    "random": {}, "greedy": {},
    "expert": {"decided": _finite(0.0, 100.0), "partner": _finite(0.0, 100.0)},
    "search": _SEARCH, "oracle": _SEARCH,
    "endgame": {"base": str},  # checked as a spec of its own
    "hybrid": {"sims": _capped(MAX_SIMS)},
    "openspiel-ismcts": {"sims": _capped(MAX_SIMS), "uct_c": _finite(0.0, 100.0), "rollouts": _capped(10)},
    "neural-2v2": _NET, "neural-3p": _NET, "neural-solo": _NET, "neural-2p": _NET,
    "strong-2v2": {"sims": _capped(MAX_SIMS)}, "strong-3p": {"sims": _capped(MAX_SIMS)},
    "checkpoint": {"path": str, **_NET},
    NEURAL: _NET,
}
"""The built-in agents a request may name -> their parameters and each one's check (its canonical
text, or Refused). A name of the list that the registry lacks is refused as unknown."""


def _short(text: str, n: int = 60) -> str:
    """Return ``repr(text)``, cut to about ``n`` characters: messages never echo long input."""
    r = repr(text)
    return r if len(r) <= n else r[: n - 4] + "...'"


def repo_root() -> Path:
    """Return the repository root (the folder that holds ``agents/``)."""
    import agents

    return Path(agents.__file__).resolve().parent.parent


class AllowList:
    """The agent specs a request may name, for data folders ``roots`` and operator specs ``extra``."""

    def __init__(self, roots: Sequence[str | Path] = (), extra: Iterable[str] = ()):
        self.roots = [Path(r).resolve() for r in roots]
        self.extra = {str(s).strip() for s in extra}

    def check(self, spec: Any) -> str:
        """Return the canonical form of ``spec``; raise Refused (a short message) if it is not allowed."""
        if not isinstance(spec, str) or not spec.strip() or len(spec) > MAX_SPEC:
            raise Refused(f"an opponent is an agent spec string of at most {MAX_SPEC} characters, "
                          f"got {_short(spec) if isinstance(spec, str) else type(spec).__name__}")
        spec = spec.strip()
        if spec in self.extra:
            return spec
        try:
            name, raw = parse_spec(spec)
        except ValueError as exc:
            raise Refused(str(exc).split("\n")[0]) from None
        if name not in CAPS or (name != NEURAL and name not in REGISTRY):
            known = ", ".join(n for n in CAPS if n == NEURAL or n in REGISTRY)
            raise Refused(f"agent {_short(name, 40)} is not allowed here (allowed: {known}; "
                          "an operator may allow more with --allow-agent)")
        params = CAPS[name]
        out = []
        for key, value in raw.items():
            if key not in params:
                raise Refused(f"agent {name!r} takes no parameter {_short(key, 30)} here "
                              f"(parameters: {', '.join(params) or 'none'})")
            if name == "endgame" and key == "base":
                value = self.check(value)
                if value.partition(":")[0] == "endgame":
                    raise Refused("endgame's base cannot itself be an endgame agent")
            elif key in ("path", "checkpoint"):
                value = self.data_name(value)
            else:
                try:
                    value = params[key](value)
                except Refused as exc:
                    raise Refused(f"parameter {key!r} of agent {name!r} {exc}") from None
            out.append(f"{key}={value}")
        if name == "checkpoint" and "path" not in raw:
            raise Refused(_CHECKPOINT_REFUSED)
        return name + (":" + ",".join(out) if out else "")

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

    def build(self, spec: str, rules: Rules, seed: int | None) -> Any:
        """Return the agent of a spec that ``check`` accepted (data names become the real paths)."""
        if spec in self.extra:
            return make_agent(spec, rules=rules, seed=seed)
        return make_agent(self.registry_spec(spec), rules=rules, seed=seed)

    def registry_spec(self, spec: str) -> str:
        """Return the registry spec of a canonical spec: aliases expanded, data names made paths."""
        name, raw = parse_spec(self.check(spec))
        if name == NEURAL:
            if "neural-2p" in REGISTRY:
                name = "neural-2p"
            else:
                name, raw = "checkpoint", {"path": str(repo_root() / NEURAL_FILE), **raw}
        else:
            if name == "endgame" and "base" in raw:
                raw["base"] = self.registry_spec(raw["base"])
            for key in ("path", "checkpoint"):
                if key in raw:
                    raw[key] = str(self.path_of(raw[key]))
        return name + (":" + ",".join(f"{k}={v}" for k, v in raw.items()) if raw else "")
