"""The card weights of the heuristics: roughly what one card is worth in points of a 2-player round.

The one home of these numbers. The greedy agent's capture values, the expert's base weights, the
search's default rollout policy, the neural network's move features and the trainer's shaping
potential all derive from ``CARD_WEIGHTS``; where one of them deliberately departs from it, it says
so by name where it does. The functions that weigh cards with them (capture values, the sweep threat,
the discard) are written once, in ``agents.heuristic.strategy``.

=========  ======  ==================================================================
term       weight  why
=========  ======  ==================================================================
escoba     1.0     one point, certain
velo       0.6     one point, certain (the velo also counts as a seven and an oro)
seven      0.3     the sevens point goes to whoever holds 3 of 4
oro        0.1     the oros point needs 6 of 10
card       0.05    the cards point needs 21 of 40
=========  ======  ==================================================================

Weights add up over what a card is: the velo is worth velo + seven + oro + card (1.05).
"""

from __future__ import annotations

CARD_WEIGHTS = {"escoba": 1.0, "velo": 0.6, "seven": 0.3, "oro": 0.1, "card": 0.05}
"""Points-per-item weights (module docstring): an escoba, the velo, a seven, an oro, any card."""
JOKER_WILDNESS = 0.3
"""Jokers variant (docs/rules.md §11): what a joker is worth beyond ``card`` for being wild. Taking
a table joker gains it, spending or discarding one's own costs it (greedy, expert, search rollouts)."""
