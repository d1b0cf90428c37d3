"""escoba-env: a vectorized NumPy engine and RL environments for the card game Escoba."""

from __future__ import annotations

from .capture import capture_options
from .cards import card_name, cards_of, mask_of, parse_card
from .engine import EscobaEngine, StepInfo
from .rules import Rules
from .scoring import score_round

__version__ = "0.1.0"

__all__ = [
    "EscobaEngine",
    "Rules",
    "StepInfo",
    "__version__",
    "capture_options",
    "card_name",
    "cards_of",
    "mask_of",
    "parse_card",
    "score_round",
]
