"""The expert agent: a card-counting heuristic in the spirit of the usual strategy advice for Escoba.

It scores every legal move (card, capture) from the observation alone and plays the best one:

``score = gain(move) - threat(table left) + partner_chance(table left) + end_of_round(table left)``

- **Card counting.** The unseen cards (other hands and stock: observation plane 10) are counted by
  value. For a value ``v`` with ``n_v`` unseen cards, the next player (hand of ``h`` cards out of
  ``u`` unseen) holds at least one with probability ``q_v = 1 - C(u - n_v, h) / C(u, h)``; with an
  empty stock this is exact (in 2-player games the unseen cards *are* the opponent's hand).
- **Gain** of a capture: ``escoba`` + the weighted value of what it takes (``EXPERT_WEIGHTS``:
  velo, sevens, oros, card count; sixes too under the tie-break and primera sevens rules). A
  category already decided (one side is out of reach of the others, counted from the capture
  piles) has its weight cut to ``DECIDED``: the velo, sevens and oros matter while they can still
  swing a point.
- **Threat**: what the next player can take from the table this move leaves, for each value ``v``
  (an escoba when ``sum(table) + v = 15``, plus the weighted cards of the capture), weighted by the
  chance that ``v`` is their best card in hand. So when it cannot capture, the expert leaves a
  table total that no unseen card can sweep (below 5, above 14, or needing a value whose cards are
  all seen), or that few can, avoids exposing sevens and the velo, and avoids setting up escobas.
- **Partners** (4 players, ``partnerships=True``): captures are counted per team, the partner is
  never a threat, and the expected gain of the partner (who plays after the next opponent) on the
  table left is added with weight ``PARTNER`` when the opponent is unlikely to capture, so the
  expert does not spoil a table its partner can use.
- **End of round**: on the last play, the cards left on the table go to the last capturer, counted
  for or against the expert's side.
- **Jokers** (docs/rules.md §11, ``rules.jokers`` > 0): a joker counts as a card for "most cards" and is
  wild. Taking a table joker is worth ``joker`` more than a plain card (the opponent can no longer
  use it); playing one's own joker costs ``joker_hold`` (a joker in hand captures almost any table
  later), in a capture as in a discard. The threat counts the joker as an eleventh "value" the next
  player may hold (wild: it sweeps a table whose other cards are worth 5 to 14 with one joker
  left there, ...), and a table joker left behind makes the next player's captures and sweeps
  likelier, so the expert is reluctant to leave a joker on the table and likes to capture it.
  Capture options with jokers come from ``agents.worlds.capture_summary``. With the short last
  deal, a next player with an empty hand is skipped: the threat is that of the next seat that
  still holds cards (none when that seat is the partner).

Ties go to the move taking more cards, then enumeration order. Deterministic; reads only the
observation. The pieces (capture value, the opponent's gains per value class, card counting, the
expected best capture) are the strategy's, written once in ``agents.heuristic.strategy``; this module holds
what only the expert does (decided categories, who acts next, partners, the end of the round).
"""

from __future__ import annotations

import numpy as np

from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.cards import NUM_CARDS, OROS, SEVENS
from escoba_env.rulebook.rules import Rules
from escoba_env.rulebook.scoring import side_piles

from ..base import Agent
from ..moves import Moves, best_per_row, bit, enumerate_moves, move_actions
from ..worlds import observation_masks, observation_scalars
from .strategy import HOLD, Weights, capture_value, card_weights, class_counts, expected_best, opponent_gains
from .weights import CARD_WEIGHTS, JOKER_WILDNESS

JOKER_HOLD = 0.3
"""The expert's own weight of keeping a joker in hand (jokers only; module docstring)."""
EXPERT_WEIGHTS = {**CARD_WEIGHTS, "six": 0.0, "joker": JOKER_WILDNESS, "joker_hold": JOKER_HOLD}
"""Base weights of the expert: ``agents.heuristic.weights.CARD_WEIGHTS``, plus sixes (weight under other
sevens rules) and, with jokers only, ``joker`` and ``joker_hold`` (module docstring)."""
DECIDED = 0.2
"""Factor applied to the weight of a category that is already decided."""
PARTNER = 0.5
"""Weight of the partner's expected gain on the table left (partnerships only)."""


def _side_piles(planes: np.ndarray, partnerships: bool, p: int) -> np.ndarray:
    """Return capture piles per relative side (K, S) from the observation planes."""
    return side_piles(planes[:, PLANE["piles"]: PLANE["piles"] + p], partnerships)


def _live(counts: np.ndarray, total: int) -> np.ndarray:
    """Return, per row, whether a 'strictly most' category can still change hands (K,)."""
    remaining = total - counts.sum(axis=1)
    top = counts.max(axis=1)
    second = np.sort(counts, axis=1)[:, -2]
    decided = top > second + remaining  # the leader is out of reach
    return ~decided


def next_hand_sizes(hand_sizes: np.ndarray, stock: np.ndarray, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """Return, per row, (the hand size of the next opponent to act, that of the partner), from the
    relative seats' ``hand_sizes`` (K, 4) and the ``stock`` size: 0 where none acts next (the partner
    does, or the round ends), 3 where this play empties every hand and a new deal follows.

    The next to act is relative seat 1, or with an empty hand and an empty stock (the short last
    deal with jokers) the next seat that still holds cards. The partner's is 0 without partnerships."""
    p = rules.num_players
    h1 = hand_sizes[:, 1]
    nxt = np.ones(len(hand_sizes), np.int64)
    if rules.jokers and p > 2:
        later = hand_sizes[:, 1:p] > 0
        nxt = np.where(later.any(axis=1), 1 + later.argmax(axis=1), 1)
    h_at = np.take_along_axis(hand_sizes, nxt[:, None], axis=1)[:, 0]
    h_next = np.where(h_at > 0, h_at, np.where(stock > 0, 3, 0))
    if rules.partnerships:
        h_next = np.where(nxt == 2, 0, h_next)  # the partner acts next: no opponent threat
    h_next = np.where((h1 == 0) & (stock > 0), 3, h_next)
    if not rules.partnerships:
        return h_next, np.zeros_like(h_next)
    h2 = hand_sizes[:, 2]
    return h_next, np.where(h2 > 0, h2, np.where(stock > 0, 3, 0))


class ExpertAgent(Agent):
    """Card-counting heuristic: values captures, avoids leaving sweepable tables (see module docs)."""

    name = "expert"

    def __init__(self, rules=None, seed=None, weights: dict[str, float] | None = None,
                 decided: float = DECIDED, partner: float = PARTNER):
        self.weights = {**EXPERT_WEIGHTS, **({} if weights is None else weights)}
        self.decided = decided
        self.partner = partner
        super().__init__(rules, seed)

    def act_batch(self, observations, action_masks, state=None):
        """Return the expert's action (int64) for each observation."""
        obs = np.asarray(observations, np.float32)
        planes = observation_masks(obs, self.rules)
        moves = enumerate_moves(obs, self.rules, planes)
        score, tiebreak = self.move_scores(obs, planes, moves)
        chosen = best_per_row(moves, score, tiebreak)
        return move_actions(moves, chosen, obs, action_masks, planes)

    def row_weights(self, planes: np.ndarray) -> dict[str, np.ndarray]:
        """Return the per-row category weights (K,) after cutting decided categories."""
        r = self.rules
        w = self.weights
        side = _side_piles(planes, r.partnerships, r.num_players)
        f = self.decided
        live_sevens = _live(np.bitwise_count(side & np.uint64(SEVENS)).astype(np.int64), 4)
        live_oros = _live(np.bitwise_count(side & np.uint64(OROS)).astype(np.int64), 10)
        live_cards = _live(np.bitwise_count(side).astype(np.int64), r.num_cards)
        six = w["six"] if w["six"] else (0.1 if r.sevens_rule != "most_sevens" else 0.0)
        return {
            "velo": np.full(len(planes), w["velo"]),
            "seven": w["seven"] * np.where(live_sevens, 1.0, f),
            "six": six * np.where(live_sevens, 1.0, f),
            "oro": w["oro"] * np.where(live_oros, 1.0, f),
            "card": w["card"] * np.where(live_cards, 1.0, f),
        }

    def move_weights(self, planes: np.ndarray, row: np.ndarray) -> Weights:
        """Return the weights of each move (``row_weights`` of its observation row; jokers' wildness)."""
        rw = self.row_weights(planes)
        wj = self.weights["joker"] if self.rules.jokers else 0.0
        return Weights(self.weights["escoba"], *(rw[k][row] for k in ("velo", "seven", "oro", "card", "six")),
                       joker=wj)

    def move_scores(self, obs: np.ndarray, planes: np.ndarray, moves: Moves) -> tuple[np.ndarray, np.ndarray]:
        """Return (score, tiebreak) per move: gain - threat (+ the partner's chance) (+ the table left
        on the last play); tiebreak: the cards taken (see the module docstring)."""
        r = self.rules
        sc = observation_scalars(obs, r, planes)
        row = moves.row
        w = self.move_weights(planes, row)
        table = planes[row, PLANE["table"]]
        capture = moves.option != 0
        played = bit(moves.card)
        left = np.where(capture, table & ~moves.option, table | played)
        hand_sizes = sc["hand_sizes"][row]
        stock = sc["stock"][row]
        is_last = (stock == 0) & (hand_sizes.sum(axis=1) == np.where(sc["capture_phase"][row], 0, 1))
        score = self.gain(moves, capture, left, is_last, w)
        threat, partner_gain = self.threats(left, w, planes[row, PLANE["unseen"]],
                                            *next_hand_sizes(hand_sizes, stock, r))
        score = score - threat
        if r.partnerships and self.partner:
            score = score + partner_gain
        # Last play: the table goes to the last capturer (relative seat; -1 nobody).
        lc = np.where(capture, 0, sc["last_capturer"][row])
        lc_side = np.where(lc < 0, -1, lc % 2 if r.partnerships else lc)
        sign = np.where(lc_side == 0, 1.0, np.where(lc_side < 0, 0.0, -1.0))
        score = score + np.where(is_last, sign * card_weights(left, w), 0.0)
        tiebreak = np.bitwise_count(np.where(capture, moves.option | played, 0)).astype(np.float64)
        return score, tiebreak

    def gain(self, moves: Moves, capture: np.ndarray, left: np.ndarray, is_last: np.ndarray,
             w: Weights) -> np.ndarray:
        """Return the value of each move itself: its ``capture_value`` (0 for a discard), less the
        cost of playing one's own joker (jokers only)."""
        escoba = capture & (left == 0)
        if not self.rules.last_play_escoba:
            escoba &= ~is_last
        gain = np.where(capture, capture_value(escoba, moves.option | bit(moves.card), w), 0.0)
        if self.rules.jokers:
            # A played joker lands in a pile as a plain card (no denial value), and leaves the hand.
            own_joker = moves.card >= NUM_CARDS
            gain = gain - own_joker * (np.where(capture, w.joker, 0.0) + self.weights["joker_hold"])
        return gain

    def threats(self, left: np.ndarray, w: Weights, unseen: np.ndarray, h_next: np.ndarray,
                h_partner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return, per table left, (the next opponent's expected gain there, ``partner`` times the
        partner's expected gain times the chance that the opponent takes nothing: 0 without
        partnerships), counting the ``unseen`` cards by value class for hands of ``h_next`` and
        ``h_partner`` cards."""
        jokers = self.rules.jokers > 0
        u = np.bitwise_count(unseen).astype(np.int64)[:, None]
        n_v = class_counts(unseen, 11 if jokers else 10)
        per_row = Weights(*(x[:, None] if isinstance(x, np.ndarray) else x for x in w))
        gains = opponent_gains(left, per_row, jokers)
        threat, p_no_capture = expected_best(gains, HOLD[u, n_v, h_next[:, None]])
        if not self.rules.partnerships or not self.partner:
            return threat, np.zeros_like(threat)
        partner_gain, _ = expected_best(gains, HOLD[u, n_v, h_partner[:, None]])
        return threat, self.partner * p_no_capture * partner_gain
