"""The greedy agent: takes the capture worth the most right now, else discards its least valuable card.

Value of what a capture takes (the played card included), with the card weights of
``agents.heuristic.weights`` (``GREEDY_WEIGHTS``: ``CARD_WEIGHTS`` plus ``joker`` = ``JOKER_WILDNESS``,
roughly points per card in a 2-player round).

With jokers, a joker counts as a card (0.05) plus ``joker`` for its wildness: taking a table
joker is worth ``joker`` more (it can no longer serve the opponent), spending one's own joker
in a capture costs ``joker`` (it could have captured later), and discarding a joker has weight
``card + joker`` (it would hand the next player a wild card), so the greedy agent keeps its
jokers for captures.

Any capture is preferred to a discard (``CAPTURE_BONUS``). With no capture, the agent discards the
card of least weight (the same card weights, no escoba), ties broken toward the highest capture
value (a low card combines into more captures later), then the lowest card id. Equal captures are
broken toward more cards taken, then enumeration order (lowest card id). It reads only the
observation and is deterministic (its generator is never used). The pieces (capture value, the
discard's weight) are the strategy's, written once in ``agents.heuristic.strategy``.
"""

from __future__ import annotations

import numpy as np

from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.capture import CARD_VALUES
from escoba_env.rulebook.cards import NUM_CARDS

from ..base import Agent
from ..moves import best_per_row, bit, enumerate_moves, last_play, move_actions
from ..worlds import observation_masks
from .strategy import CAPTURE_BONUS, Weights, capture_value, joker_count, played_weight
from .weights import CARD_WEIGHTS, JOKER_WILDNESS

GREEDY_WEIGHTS = {**CARD_WEIGHTS, "joker": JOKER_WILDNESS}
"""Weights of the greedy agent's capture value (see the module docstring)."""


class GreedyAgent(Agent):
    """Maximises the immediate value of the capture; otherwise discards the least valuable card."""

    name = "greedy"

    def __init__(self, rules=None, seed=None, weights: dict[str, float] | None = None):
        self.weights = {**GREEDY_WEIGHTS, **({} if weights is None else weights)}
        super().__init__(rules, seed)

    def act_batch(self, observations, action_masks, state=None):
        """Return the greedy action (int64) for each observation."""
        obs = np.asarray(observations, np.float32)
        planes = observation_masks(obs, self.rules)
        moves = enumerate_moves(obs, self.rules, planes)
        score, tiebreak = self.move_scores(moves, planes, last_play(obs, self.rules, planes)[moves.row])
        chosen = best_per_row(moves, score, tiebreak)
        return move_actions(moves, chosen, obs, action_masks, planes)

    def move_scores(self, moves, planes, is_last) -> tuple[np.ndarray, np.ndarray]:
        """Return (score, tiebreak) per move: ``CAPTURE_BONUS`` + capture value, or -card weight
        (``agents.heuristic.strategy``); tiebreak: cards taken, or the discarded card's capture value."""
        w = Weights.of(self.weights, joker=self.rules.jokers > 0)
        table = planes[moves.row, PLANE["table"]]
        capture = moves.option != 0
        taken = moves.option | bit(moves.card)
        escoba = capture & ((table & ~moves.option) == 0)
        if not self.rules.last_play_escoba:
            escoba &= ~is_last
        # Jokers: what the capture takes is weighed as plain cards, then the wildness of the table
        # jokers taken is gained and that of a joker spent lost (module docstring).
        value = capture_value(escoba, taken, w._replace(joker=0.0))
        if w.joker:
            value = value + w.joker * (joker_count(moves.option) - (moves.card >= NUM_CARDS))
        score = np.where(capture, CAPTURE_BONUS + value, -played_weight(moves.card, False, w))
        n_taken = np.bitwise_count(taken).astype(np.float64)
        tiebreak = np.where(capture, n_taken, CARD_VALUES[moves.card])
        return score, tiebreak
