"""What the docs tests share: the repository root, the resolver of the qualified names pages cite,
and the seating figure of a pair on a committed card (which pages quote)."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def resolve(dotted: str) -> object:
    """Return the object named ``dotted`` (a module, then attributes); raise if anything is missing."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def pair_on_card(card: dict, a: str, b: str, third: str) -> tuple[float, float]:
    """Return the mean and standard error, paired over deals, of ``a``'s points per round minus
    ``b``'s on ``card``'s lineups of the three agents (both orders averaged per deal)."""
    pd, cols = card["per_deal"], []
    for lu, x in zip(pd["lineups"], pd["points_per_round"], strict=True):
        if set(lu) == {a, b, third}:
            cols.append([row[lu.index(a)] - row[lu.index(b)] for row in x])
    d = np.mean(cols, axis=0)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))
