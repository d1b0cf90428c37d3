"""Build agents from short spec strings: ``make_agent("search:sims=200", rules=..., seed=...)``.

A spec is ``name`` or ``name:key=value,key=value``. ``available()`` lists every name with its
parameters and help line (``evaluate.py --list``; the table in ``docs/agents.md``).

The shipped names (``neural-*``, ``strong-*``) are registered by ``agents.opponents``, which the
``agents`` package imports. An unknown name or a bad parameter raises ``ValueError`` listing what
exists. ``checkpoint:PATH`` is loaded by ``agents.loader.load_checkpoint_agent`` (a plain or a
phase-gated network; ``checkpoint:model.pt,device=cpu,deterministic=false``). Other modules may add
names with ``register``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from escoba_env.rules import Rules

from .base import Agent, RandomAgent
from .endgame import EndgameAgent
from .expert import ExpertAgent
from .greedy import GreedyAgent
from .guided import GuidedSearchAgent
from .hybrid import HybridAgent
from .llm import LLMAgent
from .search import OracleAgent, PolicyOracleAgent, SearchAgent
from .spec_values import as_bool, as_sims, optional_int


@dataclass
class AgentSpec:
    """A registered agent: its factory, accepted parameters (name -> type) and help line."""

    name: str
    factory: Callable[..., Agent]
    params: dict[str, type] = field(default_factory=dict)
    help: str = ""


REGISTRY: dict[str, AgentSpec] = {}


def register(name: str, factory: Callable[..., Agent], params: dict[str, type] | None = None,
             help: str = "") -> None:
    """Register ``factory(rules=, seed=, **params)`` under ``name`` (replacing any previous one)."""
    REGISTRY[name] = AgentSpec(name, factory, dict(params or {}), help)


register("random", RandomAgent, {}, "uniform over legal actions")
register("greedy", GreedyAgent, {}, "takes the most valuable capture, else discards its least valuable card")
register("expert", ExpertAgent, {"decided": float, "partner": float},
         "card-counting heuristic: avoids sweepable tables, values velo/sevens/oros, plays with partners")
_SEARCH_PARAMS = {"sims": as_sims, "epsilon": float, "rollout": str, "threat": str, "horizon": optional_int,
                  "max_rows": int}


def _rollout_policy(cls: type[Agent], default: str | None = None) -> Callable[..., Agent]:
    """Return a factory of ``cls`` whose ``policy`` parameter (an agent spec, ``default`` if not given)
    is built into that agent."""
    def factory(rules: Rules | None = None, seed: int | None = None, policy: str | None = default,
                **params: Any) -> Agent:
        if policy is not None:
            params["policy"] = make_agent(policy, rules=rules, seed=seed)
            params["policy"].name = policy  # named by its spec, not by the file it loaded
        return cls(rules=rules, seed=seed, **params)
    factory.__doc__ = f"Return a ``{cls.__name__}``; ``policy`` (an agent spec) plays its rollouts."
    return factory


register("search", _rollout_policy(SearchAgent), {**_SEARCH_PARAMS, "leaf": str, "policy": str},
         f"determinized Monte Carlo search (PIMC); sims = rollouts per decision (default "
         f"{SearchAgent.DEFAULT_SIMS}); policy = a fair agent spec that plays the rollouts (default greedy)")
register("oracle", OracleAgent, _SEARCH_PARAMS,
         "CHEATING, upper-bound reference: the search seeing the other hands and the stock "
         "(needs the engine)")
register("policy-oracle", _rollout_policy(PolicyOracleAgent, "neural-solo"),
         {"policy": str, "sims": as_sims, "leaf": str, "max_rows": int},
         "CHEATING teacher for labels: each legal move played out in the true deal by policy (default "
         "neural-solo) for every seat, valued at the empty stock by leaf (net, exact or none; needs the "
         "engine)")


def _endgame(rules: Rules | None = None, seed: int | None = None, base: str = "expert") -> Agent:
    """Return ``base`` wrapped so that it plays 2-player endgames exactly (``agents.endgame``)."""
    if base.partition(":")[0] == "endgame":
        raise ValueError("endgame's base cannot itself be an endgame agent")
    return EndgameAgent(make_agent(base, rules=rules, seed=seed), rules=rules, seed=seed)


register("endgame", _endgame, {"base": str},
         "base agent (default expert) that plays the 2-player endgame (empty stock: every card known) "
         "exactly, by minimax")


register("hybrid", _rollout_policy(HybridAgent), {"sims": as_sims, "leaf": str, "policy": str},
         "search (sims rollouts, default 1000) while the stock lasts, the exact 2-player endgame after it: "
         "the strongest agent under 50 ms a move")
register("guided", GuidedSearchAgent, {"sims": as_sims, "net_steps": int, "threat": str,
                                       "horizon": optional_int, "checkpoint": str},
         "search whose rollouts the table's shipped network plays (2v2, 3 players; default 200 sims)")


def checkpoint_agent(path: str | None = None, rules: Rules | None = None, seed: int | None = None,
                     **params: Any) -> Agent:
    """Return the network agent stored at ``path`` (``agents.loader``; imports torch)."""
    if not path:
        raise ValueError("checkpoint needs a file: checkpoint:path/to/model.pt")
    if not os.path.isfile(path):
        raise ValueError(f"checkpoint file not found: {path!r}")
    from .loader import load_checkpoint_agent

    return load_checkpoint_agent(path, rules=rules, seed=seed, **params)


def _outside(loader: str) -> Callable[..., Agent]:
    """Return a factory that imports ``agents.outside`` (and its libraries) only when used."""
    def factory(**kwargs: Any) -> Agent:
        from . import outside

        return getattr(outside, loader)(**kwargs)

    factory.__name__ = loader
    return factory


register("checkpoint", checkpoint_agent, {"path": str, "device": str, "deterministic": as_bool,
                                          "symmetric": as_bool},
         "a neural agent trained by train.py: checkpoint:path/to/model.pt (symmetric=true: a move "
         "network's values averaged over the plain suits' permutations)")
register("sb3", _outside("load_sb3"), {"path": str, "algo": str, "deterministic": as_bool},
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
register("llm", LLMAgent, {"model": str, "base_url": str, "temperature": float, "max_retries": int,
                           "timeout": float, "key_env": str, "concurrency": int, "attempts": int,
                           "backoff": float, "max_tokens": int, "french": as_bool},
         "a language model at an OpenAI-compatible endpoint: llm:model=NAME,base_url=URL (the key from "
         "$OPENAI_API_KEY or key_env=VAR; pip install 'escoba-env[llm]')")
_FIRST_PARAM = {"checkpoint": "path", "sb3": "path", "python": "target"}
"""Specs whose first parameter is written bare (a file or a module:factory)."""


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
