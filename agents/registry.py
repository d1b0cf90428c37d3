"""Build agents from short spec strings: ``make_agent("search:sims=200", rules=..., seed=...)``.

A spec is ``name`` or ``name:key=value,key=value``. Known names and their parameters:

=============  ===========================================================================
spec           agent
=============  ===========================================================================
random         uniform over legal actions
greedy         takes the most valuable capture, else discards the least valuable card
expert         card-counting heuristic (sweep risk, sevens/velo/oros, partners)
search         determinized Monte Carlo (PIMC); ``sims`` rollouts per decision, ...
oracle         CHEATING, upper-bound reference: the search seeing all hidden cards
endgame        ``base`` (expert) playing the exact 2-player endgame once the stock is empty
checkpoint     ``checkpoint:path/to/model.pt``: a neural agent trained by ``train.py``
sb3            ``sb3:path/to/model.zip``: a Stable-Baselines3 model (``agents.outside``)
python         ``python:module:factory``: your own agent, ``factory(rules=, seed=)``
openspiel-     ``openspiel-ismcts:sims=N``: OpenSpiel's IS-MCTS bot (extra ``[openspiel]``,
ismcts         ``agents.ismcts``)
hybrid         search (``sims``, default 1000) before the stock runs out, the exact endgame after it
neural-2p      the shipped 2-player neural agent (``agents/pretrained/escoba_2p.pt``); ``neural`` is
               the same agent
neural-2p-     ``neural-2p-plain``: the same network before its endgame fine-tune
plain          (``agents/pretrained/escoba_2p_plain.pt``)
neural-2v2     the shipped 2v2 partnership agent (``agents/pretrained/escoba_2v2.pt``)
neural-3p      the shipped 3-player agent (``agents/pretrained/escoba_3p.pt``)
neural-solo    network-only 2-player agent: a midgame network while the stock lasts, an endgame network
               once it is empty (``agents/pretrained/escoba_2p_solo.pt``, ``agents.solo``)
strong-2v2     the strongest 2v2 agent (beats an expert team): search with 1,000 rollouts; 2v2 only
strong-3p      the strongest 3-player agent (beats two experts): the same search; 3 players only
guided         search whose rollouts the table's shipped network plays (``agents.guided``)
=============  ===========================================================================

Every shipped network has a name (``neural-2p``, ``neural-2p-plain``, ``neural-solo``, ``neural-2v2``,
``neural-3p``) whose
file is found in the installed ``agents`` package, so the names work from any folder and from a
wheel. ``DEFAULT_OPPONENTS`` is the one table of each table size's default opponent, used by the
terminal game and the web arena (``default_opponent``).

An unknown name or a bad parameter raises ``ValueError`` listing what exists. ``checkpoint:PATH``
is delegated to ``agents.neural`` (``load_checkpoint_agent(path, rules=, seed=, **params)`` if it
defines one, else ``NeuralAgent.from_checkpoint``; extra parameters: ``checkpoint:model.pt,device=cpu,
deterministic=false``); without that module it raises a clear "not available yet" error. Other
modules may add names with ``register``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from escoba_env.rules import Rules

from .base import Agent, RandomAgent
from .expert import ExpertAgent
from .greedy import GreedyAgent
from .search import OracleAgent, SearchAgent


@dataclass
class AgentSpec:
    """A registered agent: its factory, accepted parameters (name -> type) and help line."""

    name: str
    factory: Callable[..., Agent]
    params: dict[str, type] = field(default_factory=dict)
    help: str = ""


REGISTRY: dict[str, AgentSpec] = {}

CHECKPOINT_DIRS = ("pretrained", "checkpoints", "")
"""Folders of the ``agents`` package searched for the shipped checkpoint (``*.pt``), in order."""
SHIPPED_CHECKPOINT: str | None = None
"""A checkpoint path (relative to the repository root) that overrides the search, or None."""


def register(name: str, factory: Callable[..., Agent], params: dict[str, type] | None = None,
             help: str = "") -> None:
    """Register ``factory(rules=, seed=, **params)`` under ``name`` (replacing any previous one)."""
    REGISTRY[name] = AgentSpec(name, factory, dict(params or {}), help)


def _optional_int(text: str) -> int | None:
    """Return None for 'none'/'round', else the int."""
    return None if text.lower() in ("none", "round") else int(text)


register("random", RandomAgent, {}, "uniform over legal actions")
register("greedy", GreedyAgent, {}, "takes the most valuable capture, else discards its least valuable card")
register("expert", ExpertAgent, {"decided": float, "partner": float},
         "card-counting heuristic: avoids sweepable tables, values velo/sevens/oros, plays with partners")
MAX_SIMS = 100_000
"""The largest ``sims`` a spec may ask for (about 2 s a move; a larger one only exhausts memory)."""


def _sims(text: str) -> int:
    """Return the rollouts per decision written in ``text``: an int up to MAX_SIMS (the agent checks >= 1)."""
    v = int(text) if len(text) <= 12 else MAX_SIMS + 1  # no 4,300-digit int conversion
    if v > MAX_SIMS:
        raise ValueError(text)
    return v


_sims.__name__ = f"an int from 1 to {MAX_SIMS:,}"
_SEARCH_PARAMS = {"sims": _sims, "epsilon": float, "rollout": str, "threat": str, "horizon": _optional_int,
                  "max_rows": int}
register("search", SearchAgent, _SEARCH_PARAMS,
         f"determinized Monte Carlo search (PIMC); sims = rollouts per decision (default "
         f"{SearchAgent.DEFAULT_SIMS})")
register("oracle", OracleAgent, _SEARCH_PARAMS,
         "CHEATING, upper-bound reference: the search seeing the other hands and the stock "
         "(needs the engine)")


def _endgame(rules: Rules | None = None, seed: int | None = None, base: str = "expert") -> Agent:
    """Return ``base`` wrapped so that it plays 2-player endgames exactly (``agents.endgame``)."""
    from .endgame import EndgameAgent

    if base.partition(":")[0] == "endgame":
        raise ValueError("endgame's base cannot itself be an endgame agent")
    return EndgameAgent(make_agent(base, rules=rules, seed=seed), rules=rules, seed=seed)


register("endgame", _endgame, {"base": str},
         "base agent (default expert) that plays the 2-player endgame (empty stock: every card known) "
         "exactly, by minimax")


def _hybrid(rules: Rules | None = None, seed: int | None = None, sims: int | None = None) -> Agent:
    """Return the search-then-exact-endgame agent (``agents.hybrid``)."""
    from .hybrid import HybridAgent

    return HybridAgent(rules, seed, sims=HybridAgent.DEFAULT_SIMS if sims is None else sims)


register("hybrid", _hybrid, {"sims": _sims},
         "search (sims rollouts, default 1000) while the stock lasts, the exact 2-player endgame after it: "
         "the strongest agent under 50 ms a move")


def _guided(rules: Rules | None = None, seed: int | None = None, **params: Any) -> Agent:
    """Return the search with network-played rollouts (``agents.guided``; imports torch)."""
    from .guided import GuidedSearchAgent

    return GuidedSearchAgent(rules, seed, **params)


register("guided", _guided, {"sims": _sims, "net_steps": int, "threat": str, "horizon": _optional_int,
                             "checkpoint": str},
         "search whose rollouts the table's shipped network plays (2v2, 3 players; default 200 sims)")


def _load_checkpoint(path: str | None = None, rules: Rules | None = None, seed: int | None = None,
                     **params: Any) -> Agent:
    """Return the neural agent stored at ``path`` (delegates to ``agents.neural``)."""
    if not path:
        raise ValueError("checkpoint needs a file: checkpoint:path/to/model.pt")
    if not os.path.isfile(path):
        raise ValueError(f"checkpoint file not found: {path!r}")
    try:
        neural = importlib.import_module("agents.neural")
    except ModuleNotFoundError as e:
        if e.name != "agents.neural":
            raise
        raise ValueError("checkpoint agents are not available: the module agents/neural.py is "
                         "missing") from None
    loader = getattr(neural, "load_checkpoint_agent", None)
    if loader is None and hasattr(neural, "NeuralAgent"):
        loader = neural.NeuralAgent.from_checkpoint
    if loader is None:
        raise ValueError("agents.neural offers no checkpoint loader (load_checkpoint_agent or "
                         "NeuralAgent.from_checkpoint)")
    return loader(path, rules=rules, seed=seed, **params)


def shipped_checkpoint(rules: Rules | None = None) -> Path | None:
    """Return the path of the shipped neural agent's checkpoint, or None while there is none.

    With ``rules``, the shipped agent of that table (``SHIPPED_CHECKPOINTS``, keyed by players and
    partnerships) if there is one; else ``SHIPPED_CHECKPOINT`` if set and present, else the first
    ``*.pt`` file (by name) in ``agents/pretrained``, ``agents/checkpoints`` and ``agents`` itself,
    so a checkpoint committed later is picked up without a change here.
    """
    root = Path(__file__).resolve().parent
    if rules is not None:
        named = SHIPPED_CHECKPOINTS.get((rules.num_players, rules.partnerships))
        if named and package_file(named).is_file():
            return package_file(named)
    if SHIPPED_CHECKPOINT:
        path = Path(SHIPPED_CHECKPOINT)
        path = path if path.is_absolute() else root.parent / path
        if path.is_file():
            return path
    for sub in CHECKPOINT_DIRS:
        found = sorted((root / sub).glob("*.pt")) if (root / sub).is_dir() else []
        if found:
            return found[0]
    return None


def _outside(loader: str) -> Callable[..., Agent]:
    """Return a factory that imports ``agents.outside`` (and its libraries) only when used."""
    def factory(**kwargs: Any) -> Agent:
        from . import outside

        return getattr(outside, loader)(**kwargs)

    factory.__name__ = loader
    return factory


def _bool(text: str) -> bool:
    """Return the bool written as true/false, 1/0, yes/no."""
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


_bool.__name__ = "bool (true/false)"
register("checkpoint", _load_checkpoint, {"path": str, "device": str, "deterministic": _bool},
         "a neural agent trained by train.py: checkpoint:path/to/model.pt")


register("sb3", _outside("load_sb3"), {"path": str, "algo": str, "deterministic": _bool},
         "a Stable-Baselines3 model file: sb3:path/to/model.zip (MaskablePPO; algo=ppo or a2c)")
register("python", _outside("load_python"), {"target": str},
         "your own agent: python:module:factory, factory(rules=, seed=) returns it")


def _ismcts(rules: Rules | None = None, seed: int | None = None, **params: Any) -> Agent:
    """Return OpenSpiel's IS-MCTS agent (``agents.ismcts``; imports OpenSpiel)."""
    try:
        from .ismcts import ISMCTSAgent

        return ISMCTSAgent(rules=rules, seed=seed, **params)
    except ImportError as e:
        raise ValueError(f"openspiel-ismcts needs OpenSpiel: pip install 'escoba-env[openspiel]' "
                         f"({e})") from None


register("openspiel-ismcts", _ismcts, {"sims": int, "uct_c": float, "rollouts": int},
         "OpenSpiel's IS-MCTS bot on the python_escoba game; sims = simulations per decision (default 100)")
_FIRST_PARAM = {"checkpoint": "path", "sb3": "path", "python": "target"}
"""Specs whose first parameter is written bare (a file or a module:factory)."""
SHIPPED_CHECKPOINTS = {(2, False): "agents/pretrained/escoba_2p.pt",
                       (4, True): "agents/pretrained/escoba_2v2.pt",
                       (3, False): "agents/pretrained/escoba_3p.pt"}
"""The shipped neural agent of each table, (players, partnerships) -> path from the repository root
(the model card is ``agents/pretrained/README.md``)."""
DEFAULT_OPPONENT_TABLES = ((2, False),)
"""Tables whose shipped network is the terminal game's default opponent (it beats ``expert`` there).
The 2v2 and 3-player networks tie or trail ``expert``; those tables face ``STRONG_AGENTS`` instead."""


SOLO_CHECKPOINT = "agents/pretrained/escoba_2p_solo.pt"
"""The phase-gated network-only 2-player agent (``neural-solo``; model card)."""


def _shipped(players: int, partnerships: bool, file: str | None = None) -> Callable[..., Agent]:
    """Return a factory of the shipped neural agent of that table (``checkpoint`` with a fixed path)."""
    path = str(package_file(file or SHIPPED_CHECKPOINTS[players, partnerships]))

    def factory(rules: Rules | None = None, seed: int | None = None, **params: Any) -> Agent:
        """Return the shipped agent (it refuses other rules with a ValueError naming the difference)."""
        return _load_checkpoint(path, rules=rules, seed=seed, **params)

    return factory


def package_file(path: str) -> Path:
    """Return where ``path`` (written from the repository root, ``agents/pretrained/...``) lies in the
    installed ``agents`` package, whichever folder the program runs from."""
    return Path(__file__).resolve().parent.joinpath(*Path(path).parts[1:])


register("neural-2p", _shipped(2, False), {"device": str, "deterministic": _bool},
         "the shipped neural agent of the 2-player game (agents/pretrained/escoba_2p.pt)")
register("neural-2p-plain", _shipped(2, False, "agents/pretrained/escoba_2p_plain.pt"),
         {"device": str, "deterministic": _bool},
         "the shipped 2-player network before its endgame fine-tune, without endgame features "
         "(agents/pretrained/escoba_2p_plain.pt)")
register("neural", _shipped(2, False), {"device": str, "deterministic": _bool},
         "the same agent as neural-2p (the web arena's name for it)")
register("neural-2v2", _shipped(4, True), {"device": str, "deterministic": _bool},
         "the shipped neural agent of the 4-player partnership game (agents/pretrained/escoba_2v2.pt)")
register("neural-3p", _shipped(3, False), {"device": str, "deterministic": _bool},
         "the shipped neural agent of the 3-player game (agents/pretrained/escoba_3p.pt)")
register("neural-solo", _shipped(2, False, SOLO_CHECKPOINT), {"device": str, "deterministic": _bool},
         "network-only 2-player agent: a midgame network while the stock lasts, an endgame network once "
         "it is empty (agents/pretrained/escoba_2p_solo.pt)")


def table_name(players: int, partnerships: bool) -> str:
    """Return a table's name as messages write it: '3 players', '4 players with partnerships'."""
    return f"{players} players" + (" with partnerships" if partnerships else "")


def _strong(players: int, partnerships: bool) -> Callable[..., Agent]:
    """Return a factory of the strongest shipped agent of that table (``STRONG_AGENTS``)."""
    name = STRONG_AGENTS[players, partnerships]

    def factory(rules: Rules | None = None, seed: int | None = None, sims: int | None = None) -> Agent:
        """Return the agent; rules of another table raise a ValueError naming both tables."""
        from .hybrid import HybridAgent

        rules = Rules() if rules is None else rules
        if (rules.num_players, rules.partnerships) != (players, partnerships):
            raise ValueError(f"{name} plays {table_name(players, partnerships)}, not "
                             f"{table_name(rules.num_players, rules.partnerships)}")
        agent = HybridAgent(rules, seed, sims=HybridAgent.DEFAULT_SIMS if sims is None else sims)
        agent.name = f"{name}:sims={agent.search.sims}"
        return agent

    return factory


STRONG_AGENTS = {(4, True): "strong-2v2", (3, False): "strong-3p"}
"""The strongest shipped agent of each table other than 2 players, (players, partnerships) -> spec:
PIMC search with 1,000 rollouts (``hybrid``, which has no exact endgame at these tables); it beats
two ``expert`` seats where the networks do not (model card, ``agents/pretrained/README.md``)."""
for (_players, _teams), _name in STRONG_AGENTS.items():
    register(_name, _strong(_players, _teams), {"sims": _sims},
             f"the strongest agent of {table_name(_players, _teams)} (beats expert): search with 1,000 "
             f"rollouts (hybrid); refuses other tables")


FALLBACK_OPPONENT = "expert"
"""The opponent of a table with no shipped agent, or whose shipped agent does not play the rules."""
DEFAULT_OPPONENTS = {(2, False): "neural-2p", (4, True): "strong-2v2", (3, False): "strong-3p"}
"""The default opponent of each table, (players, partnerships) -> spec: the terminal game's and the web
arena's. At 2 players the shipped network (it beats ``expert``); at 2v2 and 3 players the strong
search, since those tables' networks tie or trail ``expert`` (model card)."""


def default_opponent(rules: Rules | None = None) -> tuple[str, str | None]:
    """Return (spec, note): the table's ``DEFAULT_OPPONENTS`` entry if it plays ``rules``, else
    ``FALLBACK_OPPONENT`` and a note saying why (a missing extra still raises ModuleNotFoundError)."""
    rules = Rules() if rules is None else rules
    table = (rules.num_players, rules.partnerships)
    spec = DEFAULT_OPPONENTS.get(table)
    if spec is None:
        return FALLBACK_OPPONENT, (f"no shipped agent plays {table_name(*table)}; playing "
                                   f"{FALLBACK_OPPONENT}")
    try:
        make_agent(spec, rules=rules, seed=0)
    except (ValueError, OSError) as exc:
        reason = " ".join(str(exc).split())
        return FALLBACK_OPPONENT, (f"{spec} does not play these rules ({reason}); playing "
                                   f"{FALLBACK_OPPONENT}")
    return spec, None


def names() -> list[str]:
    """Return every registered agent name, in registration order."""
    return list(REGISTRY)


_BARE_FORM = {"path": "PATH", "target": "MODULE:FACTORY"}


def names_help() -> str:
    """Return every registered name as one comma-separated phrase for ``--help`` texts (from the
    registry, so a new agent appears there by itself)."""
    return ", ".join(f"{n}:{_BARE_FORM[_FIRST_PARAM[n]]}" if n in _FIRST_PARAM else n for n in REGISTRY)


def available() -> str:
    """Return a multi-line description of every registered name and its parameters."""
    lines = []
    for spec in REGISTRY.values():
        params = ", ".join(spec.params) or "no parameters"
        lines.append(f"  {spec.name} ({params}): {spec.help}")
    return "\n".join(lines)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Return (name, raw parameters) of a spec string ``name[:key=value,...]``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent spec must be a non-empty string, got {spec!r}; known agents:\n"
                         f"{available()}")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if name in _FIRST_PARAM and rest and "=" not in rest.split(",")[0]:
        # checkpoint:path/to/model.pt[,key=value...], sb3:model.zip, python:module:factory
        path, _, rest = rest.partition(",")
        raw = {_FIRST_PARAM[name]: path}
    else:
        raw = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"bad parameter {item!r} in agent spec {spec!r}: expected key=value")
        raw[key.strip()] = value.strip()
    return name, raw


def make_agent(spec: str, rules: Rules | None = None, seed: int | None = None) -> Agent:
    """Return a new agent built from ``spec`` (see the module docstring) for ``rules``, seeded."""
    name, raw = parse_spec(spec)
    if name not in REGISTRY:
        raise ValueError(f"unknown agent {name!r} in spec {spec!r}; known agents:\n{available()}")
    entry = REGISTRY[name]
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in entry.params:
            known = ", ".join(entry.params) or "none"
            raise ValueError(f"agent {name!r} has no parameter {key!r} (parameters: {known})")
        try:
            kwargs[key] = entry.params[key](value)
        except ValueError:
            raise ValueError(f"bad value {value!r} for parameter {key!r} of agent {name!r}: expected "
                             f"{getattr(entry.params[key], '__name__', 'a value')}") from None
    rules = Rules() if rules is None else rules
    try:
        return entry.factory(rules=rules, seed=seed, **kwargs)
    except TypeError as e:
        raise ValueError(f"cannot build agent {spec!r}: {e}") from None
