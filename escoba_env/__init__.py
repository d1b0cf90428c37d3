"""escoba-env: a vectorized NumPy engine and RL environments for the card game Escoba."""

from __future__ import annotations

# escoba_v0 and the two env classes are the faces (they import gymnasium and pettingzoo);
# importing escoba_v0 registers "escoba/escoba-v0" with PettingZoo's registry.
from . import escoba_v0
from .capture import capture_options
from .cards import card_name, cards_of, mask_of, parse_card
from .engine import EscobaEngine
from .gym_vector import EscobaGymVectorEnv
from .registration import register as _register
from .rules import Rules
from .scoring import score_round
from .selfplay_vector import EscobaVectorEnv
from .single_agent import SingleAgentEscobaEnv
from .step_info import StepInfo

_register()  # gymnasium.make("escoba_env/Escoba-v0"); see escoba_env.registration

__version__ = "0.1.0"

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
