"""The one-game executor: one Escoba game on plain Python ints, no NumPy call on its step path.

The batched engine (``engine.EscobaEngine``) steps N games as NumPy arrays; a NumPy call on a
one-element array costs more than a whole rule, so the faces that step one game at a time (the
PettingZoo env ``escoba_v0``, the Gymnasium ``SingleAgentEscobaEnv``, the terminal game) run on
``Game`` instead. Both executors read the same rule book: capture tables and option summaries
(``capture``), deal hashing, the initial fifteen and the mesa turn-up (``deal``), scoring
(``scoring``). A differential test (tests/engine/test_game_differential.py) pins them equal step by step
on random play of every rules configuration, deals included: the same ``(seed, game_id)`` deals
the same game as slot ``game_id`` of an engine reset with that seed.

Public API::

    g = Game(rules=Rules(...), single_round=False, max_rounds=None)
    g.reset(seed=0, game_id=0, episode=0, dealer=None, deck=None, hands=None, table=None, stock=None)
    g.legal                 # int mask of the legal actions (0 once the game is over)
    g.legal_actions()       # the same as a sorted list of card ids
    step = g.step(action)   # a GameStep: actor, captured, escoba, round_over, round_points, ...
    g.clone()               # an independent copy (search, what-if analysis)
    g.observe(seat)         # float32 observation of ``seat`` (observation.py layout), bit-for-bit
                            # the batched engine's
    g.to_engine()           # a one-game EscobaEngine holding the same state

State, read-only (card sets are int masks, bit c = card id c; per-seat lists by absolute seat):
``hands``, ``table``, ``piles``, ``played``, ``escobas`` (this round), ``scores`` (per side),
``deck`` and ``stock_pos`` (the stock is ``deck[stock_pos:]``), ``dealer``, ``to_act``,
``last_capturer`` (-1: nobody), ``pending`` (-1, or the played card while a capture choice is
open), ``taken`` and ``taken_value`` (table cards named so far and their values), ``round_index``,
``done``, ``truncated``, ``winner`` (side, -1 none). Actions follow the play/take scheme of the
batched engine (see its module docstring), jokers' "stop" action included.

``reset`` takes the batched engine's deal options: ``dealer`` (a seat), ``deck`` (all
``rules.num_cards`` ids, top first) or ``hands``/``table``/``stock``; later rounds are dealt from the
seed. Bad input raises ValueError and changes nothing; so does an illegal action in ``step``.
"""

from __future__ import annotations

import numpy as np

from ..rulebook.capture import FIFTEEN, VALUE_OF, joker_summary_of, single_summary_of, summary_of
from ..rulebook.cards import JOKER_MASK, NUM_CARDS, card_name, cards_of, names_of
from ..rulebook.deal_rules import explicit_decks, initial_fifteen_of, mesa_turn_up, shuffled_deck
from ..rulebook.rules import Rules, check_max_rounds, check_rules, check_seed
from ..rulebook.scoring import round_awards
from .engine import EscobaEngine
from .observation import encode_state, mask_array

__all__ = ["Game", "GameStep"]



def capture_action(legal: int, taken: int, card: int, capture: int) -> int:
    """Return the next action that carries out the capture ``capture`` of the pending ``card``.

    During a capture choice (``legal`` the legal-action mask, ``taken`` the table cards named so
    far) this names a table card of ``capture`` that is still offered; with jokers an option nested
    in a larger one is taken by the played card's own id ("stop"). Raises ValueError if
    ``capture`` is not among the remaining options.
    """
    offered = legal & capture & ~taken
    if offered:
        return (offered & -offered).bit_length() - 1
    if legal >> card & 1:
        return card
    raise ValueError("the chosen capture is not among the remaining options")


class GameStep:
    """What one ``Game.step`` did.

    ``actor`` (seat), ``card`` (the card played this turn: the action, or the pending card when
    the action named a table card), ``captured`` (cards that went to the actor's pile, played card
    included; 0 if none), ``escoba`` (0/1), ``round_over``, ``round_points`` and
    ``round_categories`` (per side, of the round that ended; None otherwise), ``scores`` (per side,
    after the step), ``game_over``, ``truncated``, ``winner`` (side, -1 none).
    """

    __slots__ = ("actor", "card", "captured", "escoba", "round_over", "round_points",
                 "round_categories", "scores", "game_over", "truncated", "winner")

    def __init__(self, actor, card, captured, escoba, round_over, round_points, round_categories,
                 scores, game_over, truncated, winner):
        self.actor, self.card, self.captured, self.escoba = actor, card, captured, escoba
        self.round_over, self.round_points, self.round_categories = round_over, round_points, round_categories
        self.scores, self.game_over, self.truncated, self.winner = scores, game_over, truncated, winner

    def __repr__(self) -> str:
        return "GameStep(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class Game:
    """One Escoba game on Python ints (see the module docstring)."""

    def __init__(self, rules: Rules | None = None, *, single_round: bool = False,
                 max_rounds: int | None = None):
        check_max_rounds(max_rounds)
        self.rules = check_rules(rules)
        r = self.rules
        self.single_round = bool(single_round)
        self.max_rounds = None if max_rounds is None else int(max_rounds)
        self.num_players = p = r.num_players
        self.num_sides = r.num_sides
        self.num_cards = r.num_cards
        self._jokers = r.jokers
        self._prefer_single = r.prefer_single
        self._last_play_escoba = r.last_play_escoba
        self._next = [(i + 1) % p for i in range(p)]
        self.seed = 0
        self.game_id = 0
        self.episode = 0
        self.hands = [0] * p
        self.hand_count = 0
        self.table = 0
        self.piles = [0] * p
        self.played = [0] * p
        self.escobas = [0] * p
        self.scores = [0] * self.num_sides
        self.deck: list[int] = []
        self.stock_pos = 0
        self.dealer = 0
        self.to_act = 0
        self.last_capturer = -1
        self.pending = -1
        self.taken = 0
        self.taken_value = 0
        self.legal = 0
        self.round_index = 0
        self.done = True
        self.truncated = False
        self.winner = -1
        self.started = False

    # ------------------------------------------------------------------ reset and dealing

    def reset(self, seed: int = 0, *, game_id: int = 0, episode: int = 0, dealer: int | None = None,
              deck=None, hands=None, table=None, stock=None) -> None:
        """Start a new game: deals from ``(seed, game_id, episode)`` or the explicit first deal; return None.

        ``(seed, game_id, episode)`` deal what slot ``game_id`` of a batched engine reset with ``seed``
        deals in its ``episode``-th game.
        """
        seed = check_seed(seed)
        if isinstance(game_id, (bool, np.bool_)) or not isinstance(game_id, (int, np.integer)) or game_id < 0:
            raise ValueError(f"game_id must be a non-negative int, got {game_id!r}")
        if isinstance(episode, (bool, np.bool_)) or not isinstance(episode, (int, np.integer)) or episode < 0:
            raise ValueError(f"episode must be a non-negative int, got {episode!r}")
        p = self.num_players
        first, drawn = shuffled_deck(int(seed), int(game_id), int(episode), 0, p, self.num_cards)
        if dealer is not None:
            if isinstance(dealer, (bool, np.bool_)) or not isinstance(dealer, (int, np.integer)) \
                    or not 0 <= dealer < p:
                raise ValueError(f"dealer must be a seat in 0..{p - 1}, got {dealer!r}")
            drawn = int(dealer)
        explicit = explicit_decks(1, p, self.num_cards, drawn, deck, hands, table, stock)
        if explicit is not None:
            first = explicit[0].tolist()
        self.seed, self.game_id, self.episode = int(seed), int(game_id), int(episode)
        self.scores = [0] * self.num_sides
        self.round_index = 0
        self.done = self.truncated = False
        self.winner = -1
        self.hands = [0] * p
        self.pending, self.taken, self.taken_value = -1, 0, 0
        self.dealer = drawn
        self.started = True
        self._start_round(first)
        self.deal_hands()
        self.legal = self.hands[self.to_act]

    def _start_round(self, deck: list[int] | None = None) -> None:
        """Shuffle (or take ``deck``), lay the table (initial fifteen or mesa turn-up), clear piles."""
        p = self.num_players
        if deck is None:
            deck, _ = shuffled_deck(self.seed, self.game_id, self.episode, self.round_index, p,
                                    self.num_cards)
        self.deck = deck
        self.piles = [0] * p
        self.played = [0] * p
        self.escobas = [0] * p
        self.last_capturer = -1
        self.stock_pos = 0
        d = self.dealer
        tcards = deck[3 * p: 3 * p + 4]
        if self.rules.mesa_deal:  # replaces the initial-fifteen check
            gained, n_esc, table = mesa_turn_up(tcards)
        else:
            table = (1 << tcards[0]) | (1 << tcards[1]) | (1 << tcards[2]) | (1 << tcards[3])
            gained = n_esc = 0
            if self.rules.initial_fifteen:
                n_esc = initial_fifteen_of(tcards)
                if n_esc:
                    gained, table = table, 0
        if gained:
            self.piles[d] |= gained
            self.escobas[d] += n_esc
            self.last_capturer = d
        self.table = table
        self.to_act = self._next[d]

    def deal_hands(self) -> None:
        """Give three stock cards to each seat, starting after the dealer (with jokers, the short deal)."""
        p, nc, deck, pos = self.num_players, self.num_cards, self.deck, self.stock_pos
        seat = self.dealer
        if nc - pos < 3 * p:  # jokers only: the 1 or 2 cards left, one a seat
            for j in range(nc - pos):
                seat = self._next[seat]
                self.hands[seat] |= 1 << deck[pos + j]
            self.hand_count = nc - pos
            self.stock_pos = nc
            return
        hands = self.hands
        for j in range(pos, pos + p):
            seat = self._next[seat]
            hands[seat] = (1 << deck[j]) | (1 << deck[j + p]) | (1 << deck[j + 2 * p])
        self.stock_pos = pos + (3 * p + 4 if pos == 0 else 3 * p)
        self.hand_count = 3 * p

    # ------------------------------------------------------------------ stepping

    def legal_actions(self) -> list[int]:
        """Return the legal action ids, ascending (empty once the game is over)."""
        return cards_of(self.legal)

    def illegal_message(self, action) -> str:
        """Return the error text for an illegal ``action``, naming the legal actions."""
        nc = self.num_cards
        ok = isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)) \
            and 0 <= action < nc
        what = card_name(int(action)) if ok else f"out of range 0..{nc - 1}"
        phase = "take a table card" if self.pending >= 0 else "play a card from hand"
        return (f"illegal action {action!r} ({what}): seat {self.to_act} must {phase}; legal actions are "
                f"{self.legal_actions()} ({names_of(self.legal)})")

    def step(self, action: int) -> GameStep:
        """Apply ``action`` for the seat to act; return what happened (illegal: ValueError, no change)."""
        if not self.started:
            raise ValueError("the game was never started: call reset() first")
        if self.done:
            raise ValueError("the game is over: call reset() to start another")
        if type(action) is not int:
            if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
                raise ValueError(self.illegal_message(action))
            action = int(action)
        if not (0 <= action < self.num_cards and self.legal >> action & 1):
            raise ValueError(self.illegal_message(action))
        seat, pending, table = self.to_act, self.pending, self.table
        bit = 1 << action
        stop = False
        if pending < 0:  # play a card from hand
            card = action
            self.hands[seat] ^= bit
            self.played[seat] |= bit
            self.hand_count -= 1
            taken = taken_value = 0
        else:  # name a table card (or, with jokers, stop at the named and forced cards)
            card = pending
            taken, taken_value = self.taken, self.taken_value
            if action == pending:
                stop = True
            else:
                taken |= bit
                taken_value += VALUE_OF[action]
        can_stop = False
        if self._jokers and (card >= NUM_CARDS or table & JOKER_MASK):
            count, union, inter, can_stop = joker_summary_of(table, taken, taken_value, card, pending < 0,
                                                             self._prefer_single, self._jokers)
            if stop:
                count = 1
        else:
            target = FIFTEEN - VALUE_OF[card] - taken_value
            count = 0
            if self._prefer_single and pending < 0:
                count, union, inter = single_summary_of(table, target)
            if not count:
                count, union, inter = summary_of(table & ~taken, target)
        if count > 1:  # a capture choice: the same seat names table cards
            self.pending, self.taken, self.taken_value = card, taken, taken_value
            self.legal = (union & ~inter) | ((1 << card) if can_stop else 0)
            return GameStep(seat, card, 0, 0, False, None, None, self.scores[:], False, False, -1)
        captured = escoba = 0
        if count == 0:  # the card goes to the table
            self.table = table | (1 << card)
        else:  # exactly one option: it executes
            take = taken | inter
            self.table = table = table & ~take
            captured = take | (1 << card)
            self.piles[seat] |= captured
            if not table and (self._last_play_escoba or self.hand_count or self.stock_pos < self.num_cards):
                escoba = 1
                self.escobas[seat] += 1
            self.last_capturer = seat
        self.pending, self.taken, self.taken_value = -1, 0, 0
        self.to_act = nxt = self._next[seat]
        if self.hand_count:
            self.legal = self.hands[nxt]
            return GameStep(seat, card, captured, escoba, False, None, None, self.scores[:], False, False, -1)
        return self._after_last_card(seat, card, captured, escoba)

    def _after_last_card(self, seat: int, card: int, captured: int, escoba: int) -> GameStep:
        """Deal three more cards, or end the round (and maybe the game); return the step's report."""
        if self.stock_pos < self.num_cards:
            self.deal_hands()
            self.legal = self.hands[self.to_act]
            return GameStep(seat, card, captured, escoba, False, None, None, self.scores[:], False, False, -1)
        awards = self._end_round()
        scores = self.scores[:]
        if not self.done:
            self._start_round()
            self.deal_hands()
            self.legal = self.hands[self.to_act]
        points = awards.pop("points")
        return GameStep(seat, card, captured, escoba, True, points, awards, scores, self.done,
                        self.truncated, self.winner)

    def _end_round(self) -> dict[str, list[int]]:
        """Finish the round: the last capturer takes the table, score it, end the game or move the dealer."""
        lc = self.last_capturer
        if lc >= 0:
            self.piles[lc] |= self.table
            self.table = 0
        piles, esc = self.side_totals()
        awards = round_awards(piles, esc, self.rules)
        self.scores = scores = [s + x for s, x in zip(self.scores, awards["points"], strict=True)]
        best = max(scores)
        unique = scores.count(best) == 1
        self.round_index += 1
        if self.single_round:
            finished, won = True, unique
        else:
            won = finished = best >= self.rules.target_score and unique
        cut = False
        if self.max_rounds is not None and not finished and self.round_index >= self.max_rounds:
            cut = finished = True
        if not finished:
            self.dealer = self._next[self.dealer]
            return awards
        self.winner = scores.index(best) if won else -1
        self.truncated = cut
        self.done = True
        self.legal = 0
        return awards

    def side_totals(self) -> tuple[list[int], list[int]]:
        """Return (piles, escobas) per side, pooling partners."""
        if self.rules.partnerships:
            p, e = self.piles, self.escobas
            return [p[0] | p[2], p[1] | p[3]], [e[0] + e[2], e[1] + e[3]]
        return self.piles[:], self.escobas[:]

    # ------------------------------------------------------------------ views

    def clone(self) -> Game:
        """Return an independent copy of the game."""
        other = object.__new__(Game)
        d = other.__dict__
        for k, v in self.__dict__.items():
            d[k] = v[:] if type(v) is list else v
        return other

    def stock(self) -> list[int]:
        """Return the stock's card ids, top first (hidden information: never part of an observation)."""
        return self.deck[self.stock_pos:]

    def observe(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """Return the float32 observation of ``seat`` (the layout of ``observation``; the engine's bits)."""
        return encode_state(self.rules, seat, self.hands, self.piles, self.played, self.table, self.pending,
                            self.taken, self.escobas, self.scores, self.stock_pos, self.dealer,
                            self.last_capturer, out)

    def action_mask(self, seat: int) -> np.ndarray:
        """Return the int8 action mask (W,) of ``seat``: the legal actions if it is to act, else zeros."""
        return mask_array(self.legal if seat == self.to_act else 0, self.num_cards)

    def to_engine(self):
        """Return a one-game ``EscobaEngine`` holding this game's state (for code written for the engine)."""
        e = EscobaEngine(1, self.rules, single_round=self.single_round, max_rounds=self.max_rounds)
        self.write_engine(e)
        return e

    def write_engine(self, e) -> None:
        """Copy this game's state into slot 0 of the one-game ``EscobaEngine`` ``e``; return None."""
        e.seed = self.seed
        e.game_ids[0], e.episode[0] = self.game_id, self.episode
        e.hands[0], e.piles[0], e.played[0] = self.hands, self.piles, self.played
        e.escobas[0], e.scores[0] = self.escobas, self.scores
        e.hand_count[0], e.table[0], e.stock_pos[0] = self.hand_count, self.table, self.stock_pos
        if self.deck:
            e.deck[0] = self.deck
        e.dealer[0], e.to_act[0], e.last_capturer[0] = self.dealer, self.to_act, self.last_capturer
        e.pending[0], e.taken[0], e.taken_value[0] = self.pending, self.taken, self.taken_value
        e.legal[0], e.round_index[0] = self.legal, self.round_index
        e.done[0], e.truncated[0], e.winner[0] = self.done, self.truncated, self.winner
