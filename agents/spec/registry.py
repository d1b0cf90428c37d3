"""Every agent by name: ``make_agent("search:sims=200", rules=..., seed=...)`` builds one from its spec.

A spec is ``name`` or ``name:key=value,...`` (``checkpoint:PATH``, ``python:MODULE:FACTORY``: the first
parameter bare). ``register(name, factory, params, description)`` declares a name once: its factory, its
parameters typed with bounds and defaults (``agents.spec.values``), a one-line description. The rest
derives from it: every agent list (``help_text``), the Gymnasium opponents (``OPPONENTS``, the one entry
point of ``escoba_env.opponents``), the web arena's allow-list (``from_request=False``: never from a
request unless its operator allows that spec), the leaderboard's descriptions and tournament seeds
(``canonical_spec``: ``search``, ``search:sims=400``, ``search:sims=0400`` are one agent, one seed).
``agents.spec.shipped_agents`` registers the shipped networks (the ``agents`` package imports it).

A spec is read once where it enters (a command line, a config file, a request) into a ``Spec``
(``read_spec``): its text as written, its canonical text, its name and its parameters read (another
agent's spec as a ``Spec``). Every layer after that (duplicate checks, seeds, fingerprints, journal keys,
workers, ``make_agent``) takes the value and parses nothing again. A name it does not know is one line
naming the closest ones (``UnknownName``: "unknown agent 'grredy'; did you mean greedy?").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from escoba_env.faces.cli import did_you_mean
from escoba_env.faces.text import MOVES_MODES, ON_FAIL
from escoba_env.rulebook.rules import Rules

from ..base import Agent, RandomAgent
from ..external.llm import MAX_TOKENS, MAX_VOTES, LLMAgent
from ..external.sb3_model import SB3_ALGOS
from ..heuristic.expert import DECIDED, PARTNER, ExpertAgent
from ..heuristic.greedy import GreedyAgent
from ..search.hybrid import HybridAgent
from ..search.pimc import THREATS, OracleAgent, SearchAgent
from . import builders
from .values import MAX_SIMS, AgentSpec, Choice, File, Flag, Int, Number, Param, Text

MAX_SERVED_SIMS = 2000  # the most rollouts a request to a server may ask: well under a second a move
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


@dataclass(frozen=True)
class Entry:
    """A registered agent: its factory, parameters (name -> type, in canonical order), one-line help."""

    name: str
    factory: Callable[..., Agent]
    params: dict[str, Param] = field(default_factory=dict)
    help: str = ""
    from_request: bool = True
    bare: str | None = None  # the parameter written bare after the name: checkpoint:PATH

    def usage(self) -> str:
        """Return how the name is written: ``search``, ``checkpoint:PATH``."""
        return self.name if self.bare is None else f"{self.name}:{self.params[self.bare].metavar or 'VALUE'}"


REGISTRY: dict[str, Entry] = {}


def register(name: str, factory: Callable[..., Agent], params: dict[str, Param] | None = None,
             help: str = "", *, from_request: bool = True, bare: str | None = None) -> None:
    """Register ``factory(rules=, seed=, **params)`` under ``name`` (replacing any previous one)."""
    params = dict(params or {})
    untyped = [k for k, p in params.items() if not isinstance(p, Param) or not _NAME.fullmatch(k)]
    if not _NAME.fullmatch(name) or untyped or "\n" in help or bare not in (None, next(iter(params), None)):
        raise ValueError(f"cannot register agent {name!r}: a name of letters, digits and ._-, parameters "
                         f"typed by agents.spec.values (not {untyped}), a one-line help, bare the first")
    REGISTRY[name] = Entry(name, factory, params, " ".join(help.split()), from_request, bare)


def names() -> list[str]:
    """Return every registered agent name, in registration order."""
    return list(REGISTRY)


def help_text() -> str:
    """Return the agent list of help texts: each name with its description, then its parameters."""
    lines = []
    for e in REGISTRY.values():
        lines.append(f"  {e.usage():<23} {e.help}")
        params = [k for k in e.params if k != e.bare]
        if params:
            lines.append(f"{'':26}parameters: {', '.join(params)}")
    return "\n".join(lines)


class UnknownName(ValueError):
    """An agent or parameter name the registry does not know: the message names the closest ones
    (``listed``: it lists every name instead, none being close)."""

    def __init__(self, message: str, listed: bool = False) -> None:
        super().__init__(message)
        self.listed = listed


class Spec(str):
    """An agent spec read once (``read_spec``): the text as written, which it is (so every table, file,
    journal key and replay shows it, and compares it, exactly as the text), carrying what reading it
    found. Immutable; picklable without parsing again (a worker process or a Ray node builds from it).

    ``canonical``: its one written form (``canonical_spec``: seeds and duplicate checks use it, so
    ``search`` and ``search:sims=400`` are one agent); ``name``: the registry name; ``params``: the
    parameters given, read (another agent's spec as a ``Spec``), in the registry's order."""

    canonical: str
    name: str
    params: tuple[tuple[str, Any], ...]

    def __new__(cls, text: str, canonical: str, name: str, params: tuple[tuple[str, Any], ...] = ()) -> Spec:
        self = super().__new__(cls, text)
        for key, val in (("canonical", str(canonical)), ("name", str(name)), ("params", tuple(params))):
            object.__setattr__(self, key, val)
        return self

    def __setattr__(self, key: str, val: Any) -> None:
        raise AttributeError(f"a Spec is immutable: cannot set {key!r}")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"a Spec is immutable: cannot delete {key!r}")

    def __reduce__(self) -> tuple[Any, tuple]:
        return Spec, (str(self), self.canonical, self.name, self.params)

    @property
    def text(self) -> str:
        """Return the text as written (a plain ``str``)."""
        return str(self)

    def get(self, key: str, default: Any = None) -> Any:
        """Return the value read of parameter ``key`` (``default`` when the spec does not give it)."""
        return dict(self.params).get(key, default)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Return (name, raw parameters) of a spec string ``name[:key=value,...]``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent spec must be a non-empty string, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    bare, raw = getattr(REGISTRY.get(name), "bare", None), {}
    if bare and rest and "=" not in rest.split(",")[0]:
        raw[bare], _, rest = rest.partition(",")  # checkpoint:path/to/model.pt[,key=value...]
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"bad parameter {item!r} in agent spec {spec!r}: expected key=value")
        raw[key.strip()] = value.strip()
    return name, raw


def unknown_agent(name: str, spec: str = "") -> UnknownName:
    """Return the error of an agent name the registry does not know (naming the closest names)."""
    where = f" in spec {spec.strip()!r}" if spec.strip() not in ("", name) else ""
    return UnknownName(f"unknown agent {name!r}{where}{did_you_mean(name, REGISTRY)}")


def entry_of(spec: str) -> tuple[Entry, dict[str, str]]:
    """Return the registry entry of ``spec`` and its raw parameters; ValueError if either is unknown."""
    name, raw = parse_spec(spec)
    if name not in REGISTRY:
        raise unknown_agent(name, spec)
    entry, unknown = REGISTRY[name], [k for k in raw if k not in REGISTRY[name].params]
    if unknown:
        closest = did_you_mean(unknown[0], entry.params)
        listing = "" if closest else f" (parameters: {', '.join(entry.params) or 'none'})"
        raise UnknownName(f"agent {name!r} has no parameter {unknown[0]!r}{closest}{listing}", not closest)
    return entry, raw


def value(entry: Entry, key: str, text: str, how: str = "read") -> Any:
    """Return ``entry``'s parameter ``key`` written ``text``: read (``how="read"``; another agent's spec
    as its text), ``"canonical"`` (its one written form) or ``"spec"`` (read; another agent's spec as a
    ``Spec``)."""
    param = entry.params[key]
    try:  # another agent's spec is read, and written canonically, at every depth
        out = getattr(param, "read" if how == "spec" else how)(text)
        if isinstance(param, AgentSpec) and how != "read":
            inner = read_spec(out)
            return inner if how == "spec" else inner.canonical
        return out
    except ValueError as exc:
        nested = f" ({str(exc).splitlines()[0]})" if isinstance(param, AgentSpec) and str(exc) != text else ""
        message = (f"bad value {text!r} for parameter {key!r} of agent {entry.name!r}: expected "
                   f"{param.expected()}{nested}")
        if isinstance(exc, UnknownName):
            raise UnknownName(message, exc.listed) from None
        raise ValueError(message) from None


def write_spec(entry: Entry, values: dict[str, str]) -> str:
    """Return the spec of ``entry`` with canonical ``values``, in declaration order, the bare one bare."""
    parts = [f"{k}={values[k]}" for k in entry.params if k in values]
    if entry.bare in values and not {",", "="} & set(values[entry.bare]):
        parts[0] = values[entry.bare]  # declared first (register)
    return entry.name + (":" + ",".join(parts) if parts else "")


def read_spec(spec: str | Spec) -> Spec:
    """Return ``spec`` read into a ``Spec`` (a ``Spec`` as it is): parsed once, each parameter read and
    written canonically; ValueError (one line) for what ``make_agent`` refuses to read."""
    if isinstance(spec, Spec):
        return spec
    entry, raw = entry_of(spec)
    read = {k: value(entry, k, text, "spec") for k, text in raw.items()}
    shown = {k: v.canonical if isinstance(v, Spec) else value(entry, k, raw[k], "canonical")
             for k, v in read.items()}
    canonical = write_spec(entry, {k: v for k, v in shown.items() if not entry.params[k].is_default(v)})
    return Spec(spec, canonical, entry.name, tuple((k, read[k]) for k in entry.params if k in read))


def read_specs(texts: Iterable[str | Spec], prog: str) -> tuple[Spec, ...]:
    """Return each of ``texts`` read (``read_spec``) for the command ``prog``: an unknown name's error
    ends by saying where the names are listed, ``(PROG --help lists them)``."""
    try:
        return tuple(read_spec(t) for t in texts)
    except UnknownName as exc:
        raise (exc if exc.listed else UnknownName(f"{exc} ({prog} --help lists them)", True)) from None


def canonical_spec(spec: str | Spec) -> str:
    """Return the one written form of ``spec``: defaults dropped, parameters in the registry's order,
    values written one way (``search:sims=0400`` -> ``search``); ValueError as ``make_agent``."""
    return read_spec(spec).canonical


def make_agent(spec: str | Spec, rules: Rules | None = None, seed: int | None = None) -> Agent:
    """Return a new agent built from ``spec`` (a text, read once, or a ``Spec``) for ``rules``, seeded;
    a parameter that names another agent reaches the factory as that agent, built first and named by its
    spec."""
    spec = read_spec(spec)
    entry = REGISTRY.get(spec.name)
    if entry is None:  # read before its name was unregistered
        raise unknown_agent(spec.name, spec.text)
    rules = Rules() if rules is None else rules
    kwargs = dict(spec.params)
    for key, inner in kwargs.items():
        if isinstance(inner, Spec):
            kwargs[key] = make_agent(inner, rules=rules, seed=seed)
            kwargs[key].name = inner.text
    try:
        return entry.factory(rules=rules, seed=seed, **kwargs)
    except TypeError as e:
        raise ValueError(f"cannot build agent {spec.text!r}: {e}") from None


class _Opponents:
    """The registry as one Gymnasium opponent entry point: it resolves every registered name."""

    names = staticmethod(names)
    __call__ = staticmethod(make_agent)


OPPONENTS = _Opponents()
SIMS = Int(1, MAX_SIMS, limit=MAX_SERVED_SIMS, doc="rollouts per decision")  # replace(SIMS, default=N)
_SEARCH = {"sims": replace(SIMS, default=SearchAgent.DEFAULT_SIMS), "epsilon": Number(0.0, 1.0, default=0.0),
           "rollout": Choice(default="greedy", options=("greedy", "random")),
           "threat": Choice(default="count", options=THREATS),
           "horizon": Int(1, 1000, limit=100, none=("none", "round"), default=None),
           "max_rows": Int(1, 10**8, limit=200_000, default=200_000)}
_ROLLOUTS = {"leaf": Choice(options=("exact", "net"), doc="how a rollout values the 2-player endgame"),
             "policy": AgentSpec(doc="a fair agent that plays the rollouts (default: greedy play)")}
NET_PARAMS = {"device": Text(default="cpu", limit=("cpu",)), "deterministic": Flag(default=True)}

register("random", RandomAgent, {}, "uniform over the legal moves")
register("greedy", GreedyAgent, {}, "takes the most valuable capture, else discards its least valuable card")
register("expert", ExpertAgent, {"decided": Number(0.0, 100.0, default=DECIDED),
                                 "partner": Number(0.0, 100.0, default=PARTNER)},
         "card-counting heuristic: avoids sweepable tables, values velo, sevens, oros")
register("search", SearchAgent, {**_SEARCH, **_ROLLOUTS},
         "determinized Monte Carlo search (PIMC); sims rollouts a decision, default 400")
register("oracle", OracleAgent, _SEARCH,
         "CHEATING, upper-bound reference: the search seeing every hand and the stock")
register("endgame", builders.endgame, {"base": AgentSpec(default="expert", exclude=("endgame",))},
         "base (default expert) playing the 2-player endgame (empty stock) exactly")
register("hybrid", HybridAgent, {"sims": replace(SIMS, default=HybridAgent.DEFAULT_SIMS), **_ROLLOUTS},
         "search while the stock lasts (default 1,000 rollouts), then the exact endgame")
register("checkpoint", builders.checkpoint_agent,
         {"path": File(metavar="PATH"), **NET_PARAMS, "symmetric": Flag(doc="mean over suit permutations")},
         "a network trained by escoba-train, from its checkpoint file", bare="path")
register("sb3", builders.sb3, {"path": File(metavar="PATH"), "deterministic": Flag(default=True),
                               "algo": Choice(default=SB3_ALGOS[0], options=SB3_ALGOS)},
         "a Stable-Baselines3 model file (MaskablePPO; algo=ppo or a2c)", from_request=False, bare="path")
register("python", builders.python, {"target": Text(metavar="MODULE:FACTORY")},
         "your own agent: module.factory(rules=, seed=) returns it", from_request=False, bare="target")
register("openspiel-ismcts", builders.ismcts, {"sims": replace(SIMS, default=100), "uct_c": Number(
    0.0, 100.0, default=2.0), "rollouts": Int(1, 100, limit=10, default=1)},
         "OpenSpiel's IS-MCTS bot (the [openspiel] extra); sims a decision, default 100")
register("llm", LLMAgent, {
    "model": Text(doc="the model name the endpoint serves"),
    "base_url": Text(doc="the API root, ending in /v1"),
    "temperature": Number(0.0, 2.0, default=0.0), "max_retries": Int(0, 20, default=2),
    "timeout": Number(0.001, 3600.0, default=60.0, doc="seconds a request may take"),
    "key_env": Text(default="OPENAI_API_KEY", doc="the environment variable holding the key"),
    "concurrency": Int(1, 1024, default=8), "attempts": Int(1, 20, default=4),
    "backoff": Number(0.0, 60.0, default=1.0),
    "max_tokens": Int(1, 10**6, none=("none",), default=None,
                      doc=f"cap on an answer's tokens, sent with every request (none: "
                          f"{MAX_TOKENS['off']} with reasoning off, {MAX_TOKENS['on']} on)"),
    "french": Flag(default=False),
    "moves": Choice(default="listed", options=MOVES_MODES, doc="listed: the legal moves numbered; hidden: "
                    "rules and position only, the move written out"),
    "on_fail": Choice(default="forfeit", options=ON_FAIL, doc="when every answer fails: the lowest legal "
                      "discard, counted a forfeit, or a seeded random move, counted a fallback"),
    "votes": Int(1, MAX_VOTES, default=1, doc="samples a question; the move most of them name is played"),
    "reasoning": Choice(default="off", options=tuple(MAX_TOKENS), doc="off: one line; on: reasoning, then "
                        "a final line 'Answer: ...'")},
         "a language model at an OpenAI-compatible endpoint (the [llm] extra): llm:model=NAME,base_url=URL",
         from_request=False)
