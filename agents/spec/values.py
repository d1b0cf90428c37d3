"""The types of agent spec parameters (``search:sims=200,horizon=none``): how each one reads its text,
writes it in one canonical form and bounds it.

A registry entry declares its parameters with these types (``agents.spec.registry.register``): ``Int``,
``Number``, ``Choice``, ``Flag``, ``Text``, ``File`` and ``AgentSpec`` (a parameter that names another
agent). ``read`` turns a value's text into what the agent's factory takes, or raises ValueError;
``canonical`` writes it in one form (tournament seeds and the web arena's allow-list use it);
``served`` is the same under the tighter bounds a request to a server may ask for, and
``requestable`` says whether a request may set the parameter at all (a ``Text`` only with a list of
allowed values: free text may name a file, a module or a variable of the server).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

MAX_SIMS = 100_000
"""The largest ``sims`` a spec may ask for (about 2 s a move; a larger one only exhausts memory)."""
_INT = re.compile(r"[+-]?[0-9]{1,12}")  # no 4,300-digit int conversion


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""The default of a parameter without a declared default (a canonical spec never drops it)."""


@dataclass(frozen=True, kw_only=True)
class Param:
    """A parameter of an agent: the value the agent takes when the spec omits it (``default``), the
    word for it in usage lines (``metavar``, bare first parameters only) and a short help."""

    default: Any = UNSET
    metavar: str = ""
    doc: str = ""

    def read(self, text: str) -> Any:
        """Return the value written in ``text`` (ValueError if it is not one)."""
        return text.strip()

    def canonical(self, text: str) -> str:
        """Return ``text`` in the parameter's one written form."""
        return str(self.read(text))

    def served(self, text: str) -> str:
        """Return the canonical form of a value a request sent, ValueError if it is out of its bounds."""
        return self.canonical(text)

    def expected(self, served: bool = False) -> str:
        """Return what a value must be, for error messages."""
        return "a value"

    def is_default(self, text: str) -> bool:
        """Return whether ``text`` is the value the agent takes anyway (a canonical spec drops it)."""
        return self.default is not UNSET and self.read(text) == self.default

    @property
    def requestable(self) -> bool:
        """Whether a request to a server may set this parameter."""
        return True


@dataclass(frozen=True)
class Int(Param):
    """An int from ``low`` to ``high`` (``limit``: the most a request may ask); ``none``: words for None."""

    low: int = 0
    high: int = 10**9
    limit: int | None = None
    none: tuple[str, ...] = ()

    def read(self, text: str) -> int | None:
        t = text.strip().lower()
        if t in self.none:
            return None
        if not _INT.fullmatch(t) or not self.low <= int(t) <= self.high:
            raise ValueError(text)
        return int(t)

    def canonical(self, text: str) -> str:
        v = self.read(text)
        return self.none[0] if v is None else str(v)

    def served(self, text: str) -> str:
        v = self.read(text)
        if v is not None and self.limit is not None and v > self.limit:
            raise ValueError(text)
        return self.canonical(text)

    def expected(self, served: bool = False) -> str:
        high = self.limit if served and self.limit is not None else self.high
        return f"an integer from {self.low:,} to {high:,}" + "".join(f" or {w}" for w in self.none)


@dataclass(frozen=True)
class Number(Param):
    """A finite number from ``low`` to ``high``."""

    low: float = -math.inf
    high: float = math.inf

    def read(self, text: str) -> float:
        v = float(text.strip()) if len(text) <= 40 else math.nan
        if not (math.isfinite(v) and self.low <= v <= self.high):
            raise ValueError(text)
        return v

    def canonical(self, text: str) -> str:
        r = repr(self.read(text) + 0.0)  # -0.0 is 0
        return r[:-2] if r.endswith(".0") else r

    def expected(self, served: bool = False) -> str:
        return f"a number from {self.low:g} to {self.high:g}"


@dataclass(frozen=True)
class Choice(Param):
    """One of ``options`` (any case; written in lower case)."""

    options: tuple[str, ...] = ()

    def read(self, text: str) -> str:
        if text.strip().lower() not in self.options:
            raise ValueError(text)
        return text.strip().lower()

    def expected(self, served: bool = False) -> str:
        return f"one of {', '.join(self.options)}"


@dataclass(frozen=True)
class Flag(Param):
    """A bool written true/false, 1/0, yes/no or on/off (written true or false)."""

    def read(self, text: str) -> bool:
        t = text.strip().lower()
        if t in ("1", "true", "yes", "on"):
            return True
        if t in ("0", "false", "no", "off"):
            return False
        raise ValueError(text)

    def canonical(self, text: str) -> str:
        return "true" if self.read(text) else "false"

    def expected(self, served: bool = False) -> str:
        return "true or false"


@dataclass(frozen=True)
class Text(Param):
    """Free text; a request may send only one of ``limit`` (none: a request cannot set it)."""

    limit: tuple[str, ...] = ()

    def read(self, text: str) -> str:
        if not text.strip():
            raise ValueError(text)
        return text.strip()

    def served(self, text: str) -> str:
        if self.read(text) not in self.limit:
            raise ValueError(text)
        return self.read(text)

    def expected(self, served: bool = False) -> str:
        return f"one of {', '.join(self.limit)}" if served else "a non-empty text"

    @property
    def requestable(self) -> bool:
        return bool(self.limit)


@dataclass(frozen=True)
class File(Text):
    """A file of the machine: a server takes only files under its data folders, by their data names."""

    required: bool = True

    def expected(self, served: bool = False) -> str:
        return "a file"

    @property
    def requestable(self) -> bool:
        return True


@dataclass(frozen=True)
class AgentSpec(Param):
    """Another agent's spec, ``exclude``: names refused. The registry builds it into that agent before
    the factory is called, writes it canonically at every depth, and the arena checks it as a spec."""

    exclude: tuple[str, ...] = ()

    def read(self, text: str) -> str:
        name = text.partition(":")[0].strip()
        if not name or name in self.exclude:
            raise ValueError(text)
        return text.strip()

    def expected(self, served: bool = False) -> str:
        return "an agent spec" + (f" other than {', '.join(self.exclude)}" if self.exclude else "")
