"""Gymnasium registration: ``import escoba_env`` registers the id ``escoba_env/Escoba-v0``.

``gymnasium.make("escoba_env/Escoba-v0", **kwargs)`` returns ``SingleAgentEscobaEnv`` (one learner
seat against fixed opponents) and ``gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=N,
vectorization_mode="vector_entry_point", **kwargs)`` returns ``EscobaGymVectorEnv`` (N such games on
the batched engine). The keywords are those of the two classes: every ``Rules`` field (or
``rules=Rules(...)``), ``opponents`` (default ``"random"``: a spec string, an agent object or a
list of ``num_players - 1`` of them; spec strings are resolved by ``escoba_env.faces.opponent_specs``),
``seat``, ``episode``, ``reward``, ``max_rounds``, and for the single-agent env ``render_mode``,
``french``, ``illegal_action``, ``illegal_reward`` and ``legal_moves_info``.

Version history:

- ``Escoba-v0`` (escoba-env 0.2.0): the first registered version; its observations, actions and
  rewards are those of ``SingleAgentEscobaEnv`` and of the PettingZoo ``escoba_v0`` at the same
  version (the ``legal_moves`` info is opt-in, ``legal_moves_info=True``).
"""

from __future__ import annotations

from typing import Any

import gymnasium

from .common import make_rules
from .opponent_specs import make_opponents
from .single_agent import SingleAgentEscobaEnv

ENV_ID = "escoba_env/Escoba-v0"


def make_single_agent(opponents: Any = "random", seat: int | None = 0, **kwargs: Any) -> gymnasium.Env:
    """Return a ``SingleAgentEscobaEnv`` whose opponents may be given as spec strings."""
    rules = kwargs.pop("rules", None)
    rules = make_rules(rules, {k: kwargs.pop(k) for k in list(kwargs) if k not in _ENV_OPTIONS})
    opps = make_opponents(opponents, rules, rules.num_players - 1)
    return SingleAgentEscobaEnv(opps, seat, rules, **kwargs)


_ENV_OPTIONS = ("episode", "reward", "max_rounds", "render_mode", "french", "illegal_action",
                "illegal_reward", "legal_moves_info")
"""The single-agent env's own keywords; every other keyword is a ``Rules`` field (checked there)."""


def register() -> None:
    """Register ``escoba_env/Escoba-v0`` with Gymnasium (once; later calls do nothing)."""
    if ENV_ID in gymnasium.registry:
        return
    gymnasium.register(ENV_ID, entry_point="escoba_env.faces.registration:make_single_agent",
                       vector_entry_point="escoba_env.faces.gym_vector:EscobaGymVectorEnv")
