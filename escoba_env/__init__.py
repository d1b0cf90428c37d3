"""escoba-env: a vectorized NumPy engine and RL environments for the card game Escoba."""

from __future__ import annotations

from .executors.engine import EscobaEngine
from .executors.step_info import StepInfo

# escoba_v0 and the two env classes are the faces (they import gymnasium and pettingzoo);
# importing escoba_v0 registers "escoba/escoba-v0" with PettingZoo's registry.
from .faces import escoba_v0
from .faces.gym_vector import EscobaGymVectorEnv
from .faces.registration import register as _register
from .faces.selfplay_vector import EscobaVectorEnv
from .faces.single_agent import SingleAgentEscobaEnv
from .rulebook.capture import capture_options
from .rulebook.cards import card_name, cards_of, mask_of, parse_card
from .rulebook.rules import Rules
from .rulebook.scoring import score_round

_register()  # gymnasium.make("escoba_env/Escoba-v0"); see escoba_env.faces.registration

__version__ = "0.4.0"
"""The version of escoba-env: the one constant (``pyproject.toml`` reads it for the distribution)."""

__all__ = [
    "EscobaEngine",
    "EscobaGymVectorEnv",
    "EscobaVectorEnv",
    "Rules",
    "SingleAgentEscobaEnv",
    "StepInfo",
    "__version__",
    "capture_options",
    "card_name",
    "escoba_v0",
    "cards_of",
    "mask_of",
    "parse_card",
    "score_round",
]
