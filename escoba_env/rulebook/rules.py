"""The rules configuration (docs/rules.md §2, §4, §6, §7, §9): one frozen object that validates itself."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np


def _is_int(x: Any) -> bool:
    """Return True for Python and NumPy integers (not bools)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


SEVENS_RULES = ("most_sevens", "most_sevens_tiebreak", "primera")

SEED_LIMIT = 2**64
"""Seeds are ints with ``0 <= seed < SEED_LIMIT`` (the engine hashes them as 64-bit words)."""


def check_int(x: Any, what: str) -> int:
    """Return ``x`` as an int; raise TypeError unless it is a Python or NumPy int (not a bool)."""
    if not _is_int(x):
        raise TypeError(f"{what} must be an int, got {type(x).__name__} {x!r}")
    return int(x)


def check_seed(seed: Any) -> int:
    """Return ``seed`` as an int; the one seed check of every part of ``escoba_env``.

    A seed is an int (Python or NumPy, not a bool: TypeError otherwise) with
    ``0 <= seed < 2**64`` (ValueError otherwise: larger seeds would wrap around to the same deals).
    """
    if not _is_int(seed):
        raise TypeError(f"seed must be an int in 0..2**64-1, got {type(seed).__name__} {seed!r}")
    if not 0 <= int(seed) < SEED_LIMIT:
        raise ValueError(f"seed must be an int in 0..2**64-1, got {seed!r}")
    return int(seed)


def check_max_rounds(max_rounds: Any) -> int | None:
    """Return ``max_rounds`` (None or a positive int) as given; raise ValueError otherwise."""
    if max_rounds is not None and (not _is_int(max_rounds) or max_rounds < 1):
        raise ValueError(f"max_rounds must be None or a positive int, got {max_rounds!r}")
    return None if max_rounds is None else int(max_rounds)


def check_rules(rules: Any) -> Rules:
    """Return ``rules``, or ``Rules()`` for None; raise ValueError for anything but a ``Rules``."""
    if rules is None:
        return Rules()
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be an escoba_env.Rules, got {type(rules).__name__}")
    return rules


@dataclass(frozen=True)
class Rules:
    """Every rule option of docs/rules.md (§9); field names follow the rule book."""

    num_players: int = 2
    """2, 3 or 4 seats."""
    partnerships: bool = False
    """4 players only: seats 0+2 and 1+3 pool captures and escobas."""
    target_score: int = 21
    """A game ends after the round in which a side reaches this total (and one side leads)."""
    sevens_rule: str = "most_sevens"
    """``"most_sevens"``, ``"most_sevens_tiebreak"`` or ``"primera"`` (docs/rules.md §6)."""
    bonus_sweeps: bool = False
    """All ten oros score 2 for oros; all four sevens score 2 for sevens."""
    prefer_single: bool = False
    """A played card that can take a single table card may only take single cards."""
    last_play_escoba: bool = True
    """Emptying the table with the last card of the round is an escoba."""
    initial_fifteen: bool = True
    """A first table of 15 (or two fifteens) goes to the dealer as escoba(s)."""
    jokers: int = 0
    """0, 1 or 2 wild jokers (ids 40 and 41, docs/rules.md §11); actions and masks grow to 40 + jokers."""
    mesa_deal: bool = False
    """Escoba de mesa (docs/rules.md §11): table cards are turned one at a time and the dealer takes each
    fifteen as it forms (this replaces the ``initial_fifteen`` check)."""

    def __post_init__(self) -> None:
        for name in ("partnerships", "bonus_sweeps", "prefer_single", "last_play_escoba",
                     "initial_fifteen", "mesa_deal"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Rules.{name} must be True or False, got {getattr(self, name)!r}")
        if not _is_int(self.num_players) or self.num_players not in (2, 3, 4):
            raise ValueError(f"Rules.num_players must be 2, 3 or 4, got {self.num_players!r}")
        object.__setattr__(self, "num_players", int(self.num_players))
        if self.partnerships and self.num_players != 4:
            raise ValueError(
                f"Rules.partnerships needs exactly 4 players (2 teams of 2), got num_players="
                f"{self.num_players}"
            )
        if not _is_int(self.target_score) or self.target_score < 1:
            raise ValueError(f"Rules.target_score must be a positive int, got {self.target_score!r}")
        object.__setattr__(self, "target_score", int(self.target_score))
        if not _is_int(self.jokers) or self.jokers not in (0, 1, 2):
            raise ValueError(f"Rules.jokers must be 0, 1 or 2, got {self.jokers!r}")
        object.__setattr__(self, "jokers", int(self.jokers))
        if not isinstance(self.sevens_rule, str):
            raise TypeError(f"Rules.sevens_rule must be a str (one of {', '.join(SEVENS_RULES)}), "
                            f"got {type(self.sevens_rule).__name__} {self.sevens_rule!r}")
        if self.sevens_rule not in SEVENS_RULES:
            raise ValueError(
                f"Rules.sevens_rule must be one of {', '.join(SEVENS_RULES)}; got {self.sevens_rule!r}"
            )

    @property
    def num_sides(self) -> int:
        """Return the number of scoring sides (2 with partnerships, else one per player)."""
        return 2 if self.partnerships else self.num_players

    def side_of(self, seat: int) -> int:
        """Return the scoring side of ``seat``."""
        return seat % 2 if self.partnerships else seat

    @property
    def num_cards(self) -> int:
        """Return the deck size and the action-space size: 40 plus the jokers."""
        return 40 + self.jokers

    @property
    def deals_per_round(self) -> int:
        """Return how many deals a round has (6, 4 or 3; one more, short, with jokers)."""
        return -(-(self.num_cards - 4) // (3 * self.num_players))

    def to_dict(self) -> dict[str, Any]:
        """Return the options as a plain dict (for checkpoints and result files)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Rules:
        """Return the Rules described by ``d``; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown rules option(s) {unknown}; known: {sorted(names)}")
        return cls(**d)
