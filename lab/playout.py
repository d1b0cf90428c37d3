"""Counter inputs of ``neural-solo``'s midgame network: what the observer's hand could take after each
unseen card's greedy reply. Tried and not shipped (no shipped network reads them).

The *playout* input set is the library's ``"answers"`` midgame set
(``agents.nets.solo.MIDGAME_ANSWER_INPUTS``) with three more 40-card blocks after its nine
(``COUNTER_BLOCKS``, ``counter_blocks``): for every unseen card played on the table a move leaves as the
``greedy`` agent would play it (``greedy_replies``), what the best card of the observer's remaining hand
could then take. ``playout_inputs`` computes the whole set; ``load_playout_agent`` plays a checkpoint whose
midgame network reads it (``midgame_inputs: "playout"``), which the library's loader refuses::

    python evaluate.py --vs python:lab.last_deal_split:answers_then_playout_at_6 --agents hybrid
"""

from __future__ import annotations

import os

import numpy as np

from agents.heuristic.greedy import GREEDY_WEIGHTS
from agents.heuristic.strategy import CAPTURE_BONUS, Weights, capture_value
from agents.moves import Moves, bit, subset_options
from agents.nets.move_inputs import card_answers, card_bits, positions_after_moves
from agents.nets.solo import MIDGAME_ANSWER_INPUTS, SoloAgent, midgame_input_names, midgame_inputs
from escoba_env.rulebook.capture import option_summary
from escoba_env.rulebook.rules import Rules

_ZERO = np.uint64(0)
COUNTER_BLOCKS = ("counter_cards", "counter_sweeps", "counter_points")
"""The three 40-card blocks of the *counter inputs* (``counter_blocks``): for each unseen card, what
the observer's remaining hand could take after a seat played it greedily on the table the move leaves."""
MIDGAME_PLAYOUT_INPUTS = (MIDGAME_ANSWER_INPUTS[:360]
                          + tuple(f"{b}[{c}]" for b in COUNTER_BLOCKS for c in range(40))
                          + MIDGAME_ANSWER_INPUTS[360:])
"""The midgame net's inputs with the answer and the counter inputs (``playout_inputs``): the nine
40-card blocks of ``MIDGAME_ANSWER_INPUTS``, the three ``COUNTER_BLOCKS``, then its scalars."""


def greedy_replies(tables: np.ndarray, cards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(table_after, took)`` of ``cards[i]`` played on ``tables[i]`` (standard rules) as the
    ``greedy`` agent would play it with that card: the capture option of the highest
    ``GreedyAgent.move_scores`` score (ties to more cards taken, then to the lowest option, as
    ``capture_options`` orders them), or a discard when the card has no option."""
    cbit = bit(cards)
    count, union, _ = option_summary(tables, 15 - (cards // 4 + 1))
    taken = np.where(count > 0, union, _ZERO)  # one option: the union is it
    multi = np.flatnonzero(count >= 2)
    if multi.size:
        pair, opt = subset_options(tables[multi], cards[multi], union[multi])
        took = opt | cbit[multi][pair]
        # the greedy agent's score of a capture (the same float operations, so the same ties)
        escoba = (tables[multi][pair] & ~opt) == _ZERO
        score = CAPTURE_BONUS + capture_value(escoba, took, Weights.of(GREEDY_WEIGHTS, joker=False))
        order = np.lexsort((-np.bitwise_count(took).astype(np.float64), -score, pair))  # stable
        first = order[np.r_[True, pair[order][1:] != pair[order][:-1]]]
        taken[multi[pair[first]]] = opt[first]
    took = count > 0
    return np.where(took, tables & ~taken, tables | cbit), took


def counter_blocks(unseen: np.ndarray, hands: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Return float32 (M, 120), the three ``COUNTER_BLOCKS`` of each move: for every unseen card (by
    id), played greedily (``greedy_replies``) on the table the move leaves, what the best card of
    the observer's remaining hand ``hands`` could then take (``agents.nets.move_inputs.card_answers``): the
    most cards / 10, whether one sweeps, and the most oros / 4 + sevens / 4 + velo; zeros for a card
    that is not unseen, and where the hand is empty or no card of it captures."""
    m = len(unseen)
    r, u = np.nonzero(card_bits(unseen))
    table2, _ = greedy_replies(tables[r], u.astype(np.int64))
    p, _, sweep, pile = card_answers(hands[r], table2)  # p: the (row, unseen card) pair of each hand card
    best = np.zeros((len(r), 3), np.float32)
    np.maximum.at(best[:, 0], p, pile[:, 0] * 4.0)
    np.maximum.at(best[:, 1], p, sweep.astype(np.float32))
    np.maximum.at(best[:, 2], p, pile[:, 1] * 2.5 + pile[:, 2] + pile[:, 3])
    blocks = np.zeros((m, 3, 40), np.float32)
    blocks[r, :, u] = best
    return blocks.reshape(m, 120)


def playout_inputs(obs: np.ndarray, rules: Rules, masks: np.ndarray) -> tuple[Moves, np.ndarray, np.ndarray]:
    """Return ``(moves, inputs, member)`` of 2-player observations while the stock lasts, with the
    inputs ``MIDGAME_PLAYOUT_INPUTS``: the answer set's with ``counter_blocks`` after its card blocks."""
    moves, x, member = midgame_inputs(obs, rules, masks, inputs="answers")
    a = positions_after_moves(obs, rules, masks)
    counter = counter_blocks(a["unseen"], a["hand_after"], a["table_after"])
    return moves, np.concatenate([x[:, :360], counter, x[:, 360:]], axis=1), member


class PlayoutSoloAgent(SoloAgent):
    """``neural-solo``'s agent whose midgame network may read the playout inputs (``"playout"``)."""

    @staticmethod
    def midgame_names(inputs: str) -> tuple[str, ...]:
        """Return the input names of ``inputs``: the library's sets, or ``"playout"``."""
        return MIDGAME_PLAYOUT_INPUTS if inputs == "playout" else midgame_input_names(inputs)

    def midgame_features(self, obs, rules, masks):
        """Return the midgame network's ``(moves, inputs, member)``, the playout set included."""
        if self.midgame_inputs == "playout":
            return playout_inputs(obs, rules, masks)
        return super().midgame_features(obs, rules, masks)


def load_playout_agent(path: str | os.PathLike, rules: Rules | None = None, seed: int | None = None
                       ) -> PlayoutSoloAgent:
    """Return the agent of a phase-gated checkpoint whose midgame network may read the playout inputs;
    ValueError naming the file when it is missing."""
    if not os.path.isfile(path):
        raise ValueError(f"checkpoint file not found: {str(path)!r}")
    return PlayoutSoloAgent.from_checkpoint(path, rules=rules, seed=seed)
