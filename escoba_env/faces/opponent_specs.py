"""Opponents given by name: how the Gymnasium faces turn ``opponents="expert"`` into agent objects.

``escoba_env`` knows no agent beyond the uniform random one (``"random"``, built in here). Every
other spec string is resolved through the Python package entry points of the group
``escoba_env.opponents``, each of which loads a callable ``factory(spec, rules=Rules, seed=int |
None)`` that returns an agent: the entry point named like the spec's first word (``"expert"`` for
``"expert:decided=0.5"``), else one whose object lists the names it resolves with ``names()``. This
project declares one such entry point for its whole registry (``pyproject.toml``,
``agents = "agents.spec.registry:OPPONENTS"``), so ``pip install escoba-env`` makes every
``escoba-evaluate`` spec usable as an opponent; another package can add names either way. Nothing is
looked up until a spec string is given, and agent objects (anything with ``act(observation,
action_mask, state=None)``) are used as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

import numpy as np

from ..rulebook.rules import Rules
from .cli import did_you_mean
from .seeding import stream_uniforms

GROUP = "escoba_env.opponents"


class RandomOpponent:
    """Uniform over the legal actions, from its own keyed stream (``reset(seed)`` re-seeds it).

    Draw ``t`` after ``reset(seed)`` is ``seeding.stream_uniforms(seed, t)``: a counter, not a
    generator's state, so ``act_streams`` plays the streams of many game slots in one NumPy call
    and each slot's draws are exactly those a single env's opponent, reset with the same seed, makes.
    """

    name = "random"
    needs_state = False

    def __init__(self, rules: Rules | None = None, seed: int | None = None):
        self.rules = Rules() if rules is None else rules
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the stream (a fresh seed from the OS without one) and restart its counter."""
        self.seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) if seed is None \
            else int(seed) & ((1 << 64) - 1)
        self.calls = 0

    def act_streams(self, observations: np.ndarray, action_masks: np.ndarray, seeds: np.ndarray,
                    calls: np.ndarray, state: Any = None) -> np.ndarray:
        """Return one legal action per row, row ``i`` drawn as call ``calls[i]`` of stream ``seeds[i]``."""
        m = np.asarray(action_masks) > 0
        if not m.any(axis=1).all():
            raise ValueError("random opponent got a row with no legal action")
        k = (stream_uniforms(seeds, calls) * m.sum(axis=1)).astype(np.int64)
        return (np.cumsum(m, axis=1) <= k[:, None]).sum(axis=1).astype(np.int64)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray, state: Any = None) -> np.ndarray:
        """Return one uniformly drawn legal action per row of ``action_masks`` (the stream's next draws)."""
        k = np.asarray(action_masks).shape[0]
        calls = self.calls + np.arange(k)
        self.calls += k
        return self.act_streams(observations, action_masks, np.full(k, self.seed, np.uint64), calls)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, state: Any = None) -> int:
        """Return one legal action for a single mask."""
        return int(self.act_batch(observation[None], np.asarray(action_mask)[None])[0])

    def __repr__(self) -> str:
        return "RandomOpponent()"


def _lister(factory: Any) -> Any:
    """Return the ``names`` method of an entry point's object that lists the names it resolves, or None."""
    names = getattr(factory, "names", None)
    return names if callable(names) else None


def registered_names() -> list[str]:
    """Return the spec names the ``escoba_env.opponents`` entry point group resolves, sorted."""
    found = {"random"}
    for ep in entry_points(group=GROUP):
        names = _lister(ep.load())
        found |= {str(n) for n in names()} if names else {ep.name}
    return sorted(found)


def make_opponent(spec: Any, rules: Rules, seed: int | None = None) -> Any:
    """Return an agent for ``spec``: an agent object as is, ``"random"``, or a registered spec string."""
    if not isinstance(spec, str):
        if not callable(getattr(spec, "act", None)):
            raise TypeError(f"an opponent must be a spec string or an agent with an "
                            f"act(observation, action_mask, state=None) method, got {spec!r}")
        return spec
    name = spec.strip().partition(":")[0].strip()
    if name == "random" and spec.strip() == "random":
        return RandomOpponent(rules, seed)
    eps = entry_points(group=GROUP)
    found = next((ep.load() for ep in eps if ep.name == name), None)
    if found is None:  # an entry point that lists the names it resolves (a whole registry)
        found = next((f for f in (ep.load() for ep in eps) if _lister(f) and name in _lister(f)()), None)
    if found is None:
        raise ValueError(f"unknown opponent {name!r}{did_you_mean(name, registered_names())} (no entry point "
                         f"of the group {GROUP!r} resolves it: is the package that provides it installed? "
                         "registered_names() lists them)")
    return found(spec, rules=rules, seed=seed)


def make_opponents(opponents: Any, rules: Rules, num: int, seed: int | None = None) -> list[Any]:
    """Return ``num`` opponents from one spec/agent (shared by every seat) or a list of ``num``."""
    if isinstance(opponents, (list, tuple)):
        if len(opponents) != num:
            raise ValueError(f"opponents must be one agent/spec or a list of {num} (num_players - 1), "
                             f"got {len(opponents)}")
        return [make_opponent(o, rules, seed) for o in opponents]
    if isinstance(opponents, Sequence) and not isinstance(opponents, str):
        raise TypeError(f"opponents must be a spec string, an agent or a list, got {opponents!r}")
    one = make_opponent(opponents, rules, seed)
    return [one] * num
