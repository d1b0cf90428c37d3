"""The batched Escoba engine: N independent games as NumPy arrays, stepped all at once.

State is a structure of arrays; a set of cards is a 40-bit (42 with jokers) mask in a ``uint64``. One ``step``
takes one action per game and costs a fixed number of NumPy calls whatever N is: no Python loop
runs over games. Actions are card ids (``Discrete(rules.num_cards)``), with the play/take scheme:

- while no capture is pending, action ``c`` plays card ``c`` from the hand of the seat to act;
- if ``c`` has several capture options, the same seat then names table cards one at a time
  (action ``t`` takes table card ``t``); the legal mask offers only cards that are in some
  remaining option and not in all of them, and the capture executes as soon as one option remains;
- with jokers only, one option can hold another: while a choice is pending, action ``c`` (the
  pending card's own id) is legal when the cards named so far plus those in every remaining
  option are an option, and takes exactly that option ("stop"; see ``capture``).

This module holds the state, reset and ``step``'s checks and report; the step itself is split along
the turn: ``engine_turn`` (play a card or name a table card, capture, pass the turn), ``engine_round``
(after the last card: the next deal, or the round's and the game's end) and ``engine_deal`` (dealing).
What any executor must offer is in ``escoba_env.executors``' docstring (the executor contract).

Deals are reproducible: the shuffle of round ``r`` of episode ``e`` in game slot ``g`` is a
counter-based hash of ``(seed, game_id, e, r)``, so a game's deals never depend on the rest of
its batch.

Variants (docs/rules.md §11, ``Rules.jokers`` and ``Rules.mesa_deal``):

- Jokers are card ids 40 and 41 (mask bits 40, 41); the deck, the actions and the masks have
  ``rules.num_cards`` = 40 + jokers entries. A joker is wild for any value 1..10, played or on
  the table (``capture.joker_summary``); the play/take scheme is unchanged and a joker can be named
  as a taken card. In the initial-fifteen check the four table cards "sum to 15" if the jokers
  can take values that make 15, and make "two fifteens" if they split into two groups that can
  each make 15 (checked first: the dealer takes two escobas when the jokers allow it). After the
  six (4, 3) full deals the stock holds ``jokers`` cards: they are dealt one at a time in the
  usual order (first the seat after the dealer) as far as they go. A seat with an empty hand is
  skipped while others hold cards; since the short deal fills the first seats after the dealer,
  the usual rotation does exactly that. With jokers 220 is no longer the total of the values, so a
  round can end with an empty table (``last_play_escoba`` matters) or with nobody having
  captured (the table cards then go to nobody). The jokers count for "most cards" only.
  The shuffle hashes ``num_cards + 1`` positions, the dealer's key last (so jokers=0 deals are
  those of the 40-card scheme, and a joker deck is a different shuffle of the same counters).
- Escoba de mesa: the four table cards are turned one at a time (deck order). After each turn,
  if the table holds a group of cards summing to 15 (jokers wild; it holds the card just
  turned), the dealer captures it at once: an escoba if it takes every card on the table, and the
  dealer becomes last capturer. When several groups are possible the dealer takes (the project's
  reading; docs/rules.md is silent) the group with the most cards, then the one holding the velo,
  then the most sevens, then the most oros, then the lowest card mask. This replaces the
  initial-fifteen check whatever ``initial_fifteen`` says.
"""

from __future__ import annotations

import numpy as np

from ..rulebook.cards import NUM_CARDS, card_name, names_of
from ..rulebook.deal_rules import explicit_decks, shuffled_decks
from ..rulebook.rules import Rules, check_max_rounds, check_rules, check_seed
from ..rulebook.scoring import side_escobas, side_piles
from .engine_deal import deal_hands, start_round
from .engine_round import clear_games
from .engine_turn import play_turn
from .step_info import REPORTED, StepInfo

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_I63 = np.int64(63)


def unpack_mask(masks: np.ndarray, n: int = NUM_CARDS) -> np.ndarray:
    """Return a uint8 array (..., n) of the bits of uint64 card masks, bit 0 first."""
    masks = np.ascontiguousarray(masks, np.uint64)
    b = np.unpackbits(masks.view(np.uint8).reshape(*masks.shape, 8), axis=-1, bitorder="little")
    return b[..., :n]


def sample_actions(legal: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Return, per game, the legal card picked by ``uniforms`` in [0, 1) (uniform over legal ones).

    Games with no legal action get action 64 (never legal). The k-th set bit is found by
    clearing the k lowest ones: two passes over the batch, then passes over the few games that
    pick a later bit; the loop runs over bit ranks, never over games.
    """
    legal = np.asarray(legal, np.uint64)
    k = (uniforms * np.bitwise_count(legal)).astype(np.int64)
    # Clear the lowest set bit where k > 0, then again where k > 1 (masks by arithmetic shifts).
    m = legal ^ (legal & np.negative(legal) & (-k >> _I63).view(np.uint64))
    m ^= m & np.negative(m) & ((1 - k) >> _I63).view(np.uint64)
    far = np.flatnonzero(k > 2)
    if far.size:
        mf, kf = m[far], k[far]
        for i in range(2, int(kf.max())):
            mf = np.where(kf > i, mf & (mf - _ONE), mf)
        m[far] = mf
    return np.bitwise_count((m & np.negative(m)) - _ONE).astype(np.int64)




class EscobaEngine:
    """N independent Escoba games stepped at once (docs/rules.md §1-7).

    ``single_round=True`` ends a game after one round; ``max_rounds`` cuts (truncates) a game that
    has not ended after that many rounds; ``autoreset=True`` starts the next episode of a slot in
    the same step its game ends (the step's report still carries the final scores and winner).

    Public state arrays (read them, do not write them):

    - ``hands`` (N, P) uint64: each seat's hand;
    - ``table`` (N,) uint64; ``piles`` (N, P) uint64: each seat's captures this round;
    - ``played`` (N, P) uint64: the cards each seat has played from hand this round;
    - ``escobas`` (N, P): each seat's escobas this round; ``scores`` (N, S): cumulative per side;
    - ``deck`` (N, rules.num_cards) int8 and ``stock_pos`` (N,): the round's deck order and the next
      stock card (the stock is ``deck[g, stock_pos[g]:]``);
    - ``dealer``, ``to_act``, ``last_capturer`` (-1: nobody), ``pending`` (-1: no capture pending,
      else the played card), ``taken`` (table cards named so far), ``legal`` (legal action mask),
      ``round_index``, ``done``, ``truncated``, ``winner`` (side, -1 none); ``taken_value`` is the
      sum of the named cards' values (a joker counts 0).

    Card masks hold bits 0..39, and 40, 41 for the jokers of ``rules.jokers``.
    """

    def __init__(self, num_games: int, rules: Rules | None = None, *, single_round: bool = False,
                 max_rounds: int | None = None, autoreset: bool = False):
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games must be a positive int, got {num_games!r}")
        check_max_rounds(max_rounds)
        self.rules = check_rules(rules)
        self._nc = self.rules.num_cards
        self._jokers = self.rules.jokers
        self.num_games = int(num_games)
        self.single_round = bool(single_round)
        self.autoreset = bool(autoreset)
        self.max_rounds = max_rounds
        n, p, s = self.num_games, self.rules.num_players, self.rules.num_sides
        self.num_players, self.num_sides = p, s
        self.side_of_seat = np.array([self.rules.side_of(i) for i in range(p)])
        self.seed = 0
        self.game_ids = np.arange(n, dtype=np.int64)
        self.episode = np.zeros(n, np.int64)
        self.hands = np.zeros((n, p), np.uint64)
        self.hand_count = np.zeros(n, np.int64)
        self.table = np.zeros(n, np.uint64)
        self.piles = np.zeros((n, p), np.uint64)
        self.played = np.zeros((n, p), np.uint64)
        self.escobas = np.zeros((n, p), np.int64)
        self.scores = np.zeros((n, s), np.int64)
        self.deck = np.zeros((n, self._nc), np.int8)
        self.stock_pos = np.zeros(n, np.int64)
        self.dealer = np.zeros(n, np.int64)
        self.to_act = np.zeros(n, np.int64)
        self.last_capturer = np.full(n, -1, np.int64)
        self.pending = np.full(n, -1, np.int64)
        self.taken = np.zeros(n, np.uint64)
        self.taken_value = np.zeros(n, np.int64)
        self.legal = np.zeros(n, np.uint64)
        self.round_index = np.zeros(n, np.int64)
        self.done = np.ones(n, bool)
        self.truncated = np.zeros(n, bool)
        self.winner = np.full(n, -1, np.int64)
        self._rows = np.arange(n)
        self._next_seat = (np.arange(p) + 1) % p
        self._zero_cache: dict = {}
        self._round_out = None
        self._final = None

    # ------------------------------------------------------------------ reset and dealing

    @property
    def rows(self) -> np.ndarray:
        """Return the game indices 0..n-1 (one shared array: read it, never write to it)."""
        return self._rows

    def reset(self, seed: int = 0, *, game_ids=None, dealer=None, deck=None, hands=None,
              table=None, stock=None) -> None:
        """Start a new game in every slot.

        ``seed`` and ``game_ids`` (default ``0..N-1``) fix every deal. ``dealer`` (an int or one per
        game) fixes the first dealer, else it is drawn from the seed. An explicit first deal is
        either ``deck`` (``rules.num_cards`` ids, top first, or one row per game) or ``hands`` (one
        list of 3 ids per seat) with ``table`` (4 ids) and ``stock`` (the rest, top first:
        num_cards - 3P - 4 ids); later rounds are dealt
        from the seed. Bad input raises ``ValueError`` and changes nothing.
        """
        n = self.num_games
        seed = check_seed(seed)
        ids = np.arange(n, dtype=np.int64) if game_ids is None else np.asarray(game_ids, np.int64)
        if ids.shape != (n,) or (ids < 0).any():
            raise ValueError(f"game_ids must be {n} non-negative ints")
        episodes = np.zeros(n, np.int64)
        decks, drawn = shuffled_decks(int(seed), ids, episodes, episodes, self.num_players, self._nc)
        if dealer is None:
            dealers = drawn
        else:
            d = np.asarray(dealer)
            if d.ndim > 1 or (d.ndim == 1 and d.shape != (n,)):
                raise ValueError(f"dealer must be one seat or one seat per game ({n}), got {dealer!r}")
            d = np.broadcast_to(d, (n,))
            if not np.issubdtype(d.dtype, np.integer) or ((d < 0) | (d >= self.num_players)).any():
                raise ValueError(f"dealer must be a seat in 0..{self.num_players - 1}, got {dealer!r}")
            dealers = d.astype(np.int64).copy()
        explicit = explicit_decks(n, self.num_players, self._nc, dealers, deck, hands, table, stock)
        self.seed = int(seed)
        self.game_ids = ids
        self.episode = episodes
        clear_games(self, self._rows)
        self.dealer[:] = dealers
        self._deal_round(self._rows, decks if explicit is None else explicit)

    def reset_games(self, games: np.ndarray) -> None:
        """Start the next episode (a fresh game, new deals) in the given game slots."""
        games = np.asarray(games, np.int64)
        if games.size == 0:
            return
        self.episode[games] += 1
        clear_games(self, games)
        self._deal_round(games, draw_dealer=True)

    def _deal_round(self, games, decks=None, draw_dealer=False):
        """Deal a whole new round in ``games`` (docs/rules.md §3; ``escoba_env.executors.engine_deal``)."""
        start_round(self, games, decks, draw_dealer)
        deal_hands(self, games)
        self.legal[games] = self.hands[games, self.to_act[games]]

    # ------------------------------------------------------------------ stepping

    def legal_action_mask(self) -> np.ndarray:
        """Return the legal actions as a uint8 array (N, rules.num_cards); zeros for finished games."""
        return unpack_mask(self.legal, self._nc)

    def check_actions(self, actions, active=None) -> np.ndarray:
        """Return ``actions`` as an int64 array, or raise ValueError naming the first illegal one.

        Only unfinished games inside the optional bool mask ``active`` (N,) are checked.
        """
        a = np.asarray(actions)
        if a.shape != (self.num_games,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_games} ints (one per game), got shape "
                             f"{a.shape} and dtype {a.dtype}")
        a = np.ascontiguousarray(a, np.int64)
        # A shift by a negative (huge as uint64) or >= num_cards amount reads a zero bit: illegal.
        ok = (self.legal >> a.view(np.uint64)) & _ONE
        if ok.all():
            return a
        ok = ok.astype(bool) | self.done
        if active is not None:
            ok |= ~active
        if not ok.all():
            g = int(np.argmin(ok))
            in_range = 0 <= a[g] < self._nc
            what = card_name(int(a[g])) if in_range else f"out of range 0..{self._nc - 1}"
            phase = "take a table card" if self.pending[g] >= 0 else "play a card from hand"
            raise ValueError(
                f"illegal action {int(a[g])} ({what}) in game {g}: seat {int(self.to_act[g])} must "
                f"{phase}; legal actions are {self.legal_actions(g)} ({names_of(int(self.legal[g]))})"
            )
        return a

    def legal_actions(self, game: int = 0) -> list[int]:
        """Return the legal action ids of one game, ascending."""
        m = int(self.legal[game])
        return [c for c in range(self._nc) if m >> c & 1]

    def _zeros(self, key, shape, dtype):
        """Return a shared read-only zero array (what a step reports where nothing happened)."""
        z = self._zero_cache.get(key)
        if z is None:
            z = np.zeros(shape, dtype)
            z.flags.writeable = False
            self._zero_cache[key] = z
        return z

    def step(self, actions, active=None) -> StepInfo:
        """Apply one action per game (ignored for finished games) and return what happened.

        ``active``: an optional bool mask (N,); games outside it are left as they are and report
        like finished games (actor -1), so callers can step a subset of the batch.
        Raises ValueError, changing nothing, if any stepped game's action is illegal.
        """
        if active is not None:
            active = np.asarray(active)
            if active.shape != (self.num_games,) or active.dtype != np.bool_:
                raise ValueError(f"active must be a bool array of shape ({self.num_games},), got "
                                 f"shape {active.shape} and dtype {active.dtype}")
        a = self.check_actions(actions, active)
        n, s = self.num_games, self.num_sides
        self._round_out = None
        if active is not None or self.done.any():
            active = ~self.done if active is None else active & ~self.done
            g = np.nonzero(active)[0]
            actor = np.where(active, self.to_act, -1)
            captured = np.zeros(n, np.uint64)
            escoba = np.zeros(n, np.int64)
            if g.size:
                captured[g], escoba[g] = play_turn(self, g, a[g])
        else:
            actor = self.to_act.copy()
            captured, escoba = play_turn(self, self._rows, a)
        scores = self.scores.copy()
        out = self._round_out
        if out is None:
            round_over = self._zeros("b", n, bool)
            winner = self._minus_ones()
            round_points = self._zeros("p", (n, s), np.int64)
            cats = {k: round_points for k in REPORTED[1:]}
            return StepInfo(actor, captured, escoba, round_over, round_points, cats, scores,
                            round_over, round_over, winner)
        g, rows, finished = out
        round_over = np.zeros(n, bool)
        round_over[g] = True
        game_over = np.zeros(n, bool)
        game_over[g] = finished
        fin = g[finished]
        winner = np.full(n, -1, np.int64)
        truncated = np.zeros(n, bool)
        if fin.size:
            if self.autoreset:  # games restarted by autoreset report their final state
                final_scores, final_winner, final_cut = self._final
                scores[fin] = final_scores
                winner[fin] = final_winner
                truncated[fin] = final_cut
            else:
                winner[fin] = self.winner[fin]
                truncated[fin] = self.truncated[fin]
        return StepInfo(actor, captured, escoba, round_over, None, None, scores, game_over,
                        truncated, winner, report=(n, s, g, rows))

    def _minus_ones(self):
        """Return a shared read-only array of -1 (no winner this step)."""
        z = self._zero_cache.get("m1")
        if z is None:
            z = np.full(self.num_games, -1, np.int64)
            z.flags.writeable = False
            self._zero_cache["m1"] = z
        return z

    def side_totals(self, games=None):
        """Return (piles, escobas) per side, shape (len(games), S), pooling partners."""
        games = self._rows if games is None else games
        piles, esc = self.piles[games], self.escobas[games]  # indexed by an array: copies
        return side_piles(piles, self.rules.partnerships), side_escobas(esc, self.rules.partnerships)

    def clone(self) -> EscobaEngine:
        """Return an independent copy of the whole batch."""
        other = object.__new__(EscobaEngine)
        for k, v in self.__dict__.items():
            other.__dict__[k] = v.copy() if isinstance(v, np.ndarray) else v
        return other

    def card_count(self) -> np.ndarray:
        """Return, per game, how many distinct cards are in hands, table, piles, stock or pending.

        -1 marks a game where some card is in two places.
        """
        stock = np.zeros(self.num_games, np.uint64)
        pos = np.arange(self._nc)[None, :]
        in_stock = pos >= self.stock_pos[:, None]
        bits = np.where(in_stock, _ONE << self.deck.astype(np.uint64), _ZERO)
        stock = np.bitwise_or.reduce(bits, axis=1)
        pend = np.where(self.pending >= 0, _ONE << np.maximum(self.pending, 0).astype(np.uint64), _ZERO)
        allm = (np.bitwise_or.reduce(self.hands, axis=1) | self.table
                | np.bitwise_or.reduce(self.piles, axis=1) | stock | pend)
        total = (np.bitwise_count(self.hands).sum(axis=1) + np.bitwise_count(self.table)
                 + np.bitwise_count(self.piles).sum(axis=1) + np.bitwise_count(stock)
                 + (self.pending >= 0))
        return np.where(np.bitwise_count(allm) == total, total, -1)
