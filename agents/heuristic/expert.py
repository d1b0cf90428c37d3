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
observation.
"""

from __future__ import annotations

import numpy as np

from escoba_env.executors.observation import PLANE
from escoba_env.rulebook.capture import FIFTEEN, makes_fifteen, option_summary
from escoba_env.rulebook.cards import FULL_DECK, JOKER_MASK, NUM_CARDS, OROS, SEVENS, mask_values
from escoba_env.rulebook.scoring import side_piles

from ..base import Agent
from ..moves import best_per_row, bit, enumerate_moves, move_actions
from ..worlds import capture_summary, observation_masks, observation_scalars
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

_SIXES = np.uint64(0xF << 20)
_JOKERS = np.uint64(JOKER_MASK)
_STANDARD = np.uint64(FULL_DECK)
# Cards of each capture value 1..10, then the jokers (the eleventh "value" of the threat).
_VALUE_NIBBLES = np.array([0xF << (4 * v) for v in range(10)] + [0b11 << NUM_CARDS], np.uint64)
_PROBE_CARDS = np.array([4 * v for v in range(10)] + [NUM_CARDS])  # a card of each value, a joker


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


def hold_probability(u: np.ndarray, n: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Return P(a hand of ``h`` cards drawn from ``u`` unseen holds at least one of ``n`` cards)."""
    miss = np.ones(np.broadcast(u, n, h).shape)
    for i in range(3):
        num = np.clip(u - n - i, 0, None)
        den = np.maximum(u - i, 1)
        miss = np.where(i < h, miss * num / den, miss)
    return 1.0 - miss


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

    def move_scores(self, obs: np.ndarray, planes: np.ndarray, moves) -> tuple[np.ndarray, np.ndarray]:
        """Return (score, tiebreak) per move (see the module docstring)."""
        r = self.rules
        sc = observation_scalars(obs, r, planes)
        rw = self.row_weights(planes)
        row = moves.row
        wv, ws, wo, wc, w6 = (rw[k][row] for k in ("velo", "seven", "oro", "card", "six"))
        wj = self.weights["joker"] if r.jokers else 0.0

        def weigh(masks, rows_w=(wv, ws, wo, wc, w6)):
            v, s, o, c, x = rows_w
            out = (v * ((masks >> np.uint64(24)) & np.uint64(1))
                   + s * np.bitwise_count(masks & np.uint64(SEVENS))
                   + o * np.bitwise_count(masks & np.uint64(OROS)) + c * np.bitwise_count(masks)
                   + x * np.bitwise_count(masks & _SIXES))
            if wj:
                out = out + wj * np.bitwise_count(masks & _JOKERS)
            return out

        table = planes[row, PLANE["table"]]
        capture = moves.option != 0
        played = bit(moves.card)
        own_joker = moves.card >= NUM_CARDS
        left = np.where(capture, table & ~moves.option, table | played)
        hand_sizes = sc["hand_sizes"][row]
        stock = sc["stock"][row]
        phase = sc["capture_phase"][row]
        is_last = (stock == 0) & (hand_sizes.sum(axis=1) == np.where(phase, 0, 1))
        escoba = capture & (left == 0)
        if not r.last_play_escoba:
            escoba &= ~is_last
        gain = np.where(capture, self.weights["escoba"] * escoba + weigh(moves.option | played), 0.0)
        if r.jokers:
            # A played joker lands in a pile as a plain card (no denial value), and leaves the hand.
            gain = gain - own_joker * (np.where(capture, wj, 0.0) + self.weights["joker_hold"])

        # The next player to act: relative seat 1, or with an empty hand and an empty stock (the
        # short last deal with jokers) the next seat that still holds cards.
        p = r.num_players
        unseen = planes[row, PLANE["unseen"]]
        u = np.bitwise_count(unseen).astype(np.int64)
        h1 = hand_sizes[:, 1]
        nxt = np.ones(len(row), np.int64)
        if r.jokers and p > 2:
            later = hand_sizes[:, 1:p] > 0
            nxt = np.where(later.any(axis=1), 1 + later.argmax(axis=1), 1)
        h_at = np.take_along_axis(hand_sizes, nxt[:, None], axis=1)[:, 0]
        # A 0-card next player means this play empties every hand: a new deal, or the round's end.
        h_next = np.where(h_at > 0, h_at, np.where(stock > 0, 3, 0))
        if r.partnerships:
            h_next = np.where(nxt == 2, 0, h_next)  # the partner acts next: no opponent threat
        h_next = np.where((h1 == 0) & (stock > 0), 3, h_next)
        m = len(row)
        nv = 11 if r.jokers else 10
        values = np.arange(1, nv + 1)  # 11: a joker
        n_v = np.bitwise_count(unseen[:, None] & _VALUE_NIBBLES[None, :nv]).astype(np.int64)  # (m, nv)
        t_sum = mask_values(left)
        if r.jokers:
            count, union, inter = capture_summary(np.repeat(left, nv), np.tile(_PROBE_CARDS[:nv], m))
            k_left = np.bitwise_count(left & _JOKERS).astype(np.int64)[:, None]
            k_all = k_left + (values[None, :] == 11)
            worth = np.where(values[None, :] == 11, 0, values[None, :])  # class 11: a joker, 0 + wild
            sweeps = makes_fifteen(worth + t_sum[:, None], k_all)
        else:
            target = np.broadcast_to(FIFTEEN - values[None, :], (m, nv))
            count, union, inter = option_summary(np.repeat(left, nv), target.ravel())
            sweeps = t_sum[:, None] + values[None, :] == FIFTEEN
        count, union, inter = count.reshape(m, nv), union.reshape(m, nv), inter.reshape(m, nv)
        rep = (wv[:, None], ws[:, None], wo[:, None], wc[:, None], w6[:, None])
        sweep = (left != 0)[:, None] & sweeps
        own_card = wc[:, None] + np.where(values[None, :] == 7, ws[:, None], 0.0)
        opp_gain = np.where(count > 0,
                            self.weights["escoba"] * sweep + weigh(inter, rep)
                            + 0.5 * weigh(union & ~inter, rep) + own_card, 0.0)

        def expected_best(gains, hand):
            q = hold_probability(u[:, None], n_v, hand[:, None]) * (gains > 0)
            order = np.argsort(-gains, axis=1, kind="stable")
            g_sorted = np.take_along_axis(gains, order, axis=1)
            q_sorted = np.take_along_axis(q, order, axis=1)
            none_before = np.cumprod(np.concatenate([np.ones((m, 1)), 1 - q_sorted[:, :-1]], axis=1), axis=1)
            return (g_sorted * q_sorted * none_before).sum(axis=1), np.prod(1 - q, axis=1)

        threat, p_no_capture = expected_best(opp_gain, h_next)
        score = gain - threat
        if r.partnerships and self.partner:
            h2 = hand_sizes[:, 2]
            h_partner = np.where(h2 > 0, h2, np.where(stock > 0, 3, 0))
            partner_gain, _ = expected_best(opp_gain, h_partner)
            score = score + self.partner * p_no_capture * partner_gain
        # Last play: the table goes to the last capturer (relative seat; -1 nobody).
        lc = np.where(capture, 0, sc["last_capturer"][row])
        lc_side = np.where(lc < 0, -1, lc % 2 if r.partnerships else lc)
        sign = np.where(lc_side == 0, 1.0, np.where(lc_side < 0, 0.0, -1.0))
        score = score + np.where(is_last, sign * weigh(left), 0.0)
        tiebreak = np.bitwise_count(np.where(capture, moves.option | played, 0)).astype(np.float64)
        return score, tiebreak
