"""The value types of agent spec parameters (``search:sims=200,horizon=none``): each turns the text of
one value into what the agent takes, or raises ValueError; its ``__name__`` is what the registry's
error message says it expected."""

from __future__ import annotations

MAX_SIMS = 100_000
"""The largest ``sims`` a spec may ask for (about 2 s a move; a larger one only exhausts memory)."""


def optional_int(text: str) -> int | None:
    """Return None for 'none'/'round', else the int."""
    return None if text.lower() in ("none", "round") else int(text)


def as_sims(text: str) -> int:
    """Return the rollouts per decision written in ``text``: an int up to MAX_SIMS (the agent checks >= 1)."""
    v = int(text) if len(text) <= 12 else MAX_SIMS + 1  # no 4,300-digit int conversion
    if v > MAX_SIMS:
        raise ValueError(text)
    return v


as_sims.__name__ = f"an int from 1 to {MAX_SIMS:,}"


def as_bool(text: str) -> bool:
    """Return the bool written as true/false, 1/0, yes/no."""
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


as_bool.__name__ = "bool (true/false)"
