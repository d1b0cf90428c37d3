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

from . import engine_compiled
from .capture import CARD_VALUES, FIFTEEN, joker_summary, plain_summary, single_summary
from .cards import FULL_DECK, JOKER_MASK, NUM_CARDS, card_name, names_of
from .deal_rules import explicit_decks, shuffled_decks
from .engine_deal import deal_hands, start_round
from .rules import Rules, check_max_rounds, check_rules, check_seed
from .scoring import score_round_batch, side_escobas, side_piles
from .step_info import REPORTED, StepInfo

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_U63 = np.uint64(63)
_I63 = np.int64(63)
_I2 = np.int64(2)
_STD = np.uint64(FULL_DECK)
_JM = np.uint64(JOKER_MASK)


def _take_clip(a, indices, out=None):
    """``np.take`` without the bounds check's buffering (the indices are valid)."""
    return np.take(a, indices, out=out, mode="clip")


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
    out = engine_compiled.sample(legal, uniforms)  # the same picks, compiled (None: not here)
    if out is not None:
        return out
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
    ``compiled``: step with the compiled kernel (True), the NumPy code (False), or as ``ESCOBA_ENGINE``
    says (None: compiled when Numba is installed; ``escoba_env.engine_compiled``). Both give the same results.

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
                 max_rounds: int | None = None, autoreset: bool = False, compiled: bool | None = None):
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games must be a positive int, got {num_games!r}")
        check_max_rounds(max_rounds)
        self.rules = check_rules(rules)
        self.compiled = engine_compiled.use_compiled(compiled)
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
        self._clear_games(self._rows)
        self.dealer[:] = dealers
        self._deal_round(self._rows, decks if explicit is None else explicit)

    def reset_games(self, games: np.ndarray) -> None:
        """Start the next episode (a fresh game, new deals) in the given game slots."""
        games = np.asarray(games, np.int64)
        if games.size == 0:
            return
        self.episode[games] += 1
        self._clear_games(games)
        self._deal_round(games, draw_dealer=True)

    def _clear_games(self, games):
        """Reset the game-level state of ``games`` (scores, round counter, hands, pending)."""
        self.scores[games] = 0
        self.round_index[games] = 0
        self.done[games] = False
        self.truncated[games] = False
        self.winner[games] = -1
        self.hands[games] = 0
        self.pending[games] = -1
        self.taken[games] = 0
        self.taken_value[games] = 0

    def _deal_round(self, games, decks=None, draw_dealer=False):
        """Deal a whole new round in ``games`` (docs/rules.md §3; ``escoba_env.engine_deal``)."""
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

    def _zeros(self, key, shape, dtype, fill=0):
        """Return a shared read-only array of ``fill`` (what a step reports where nothing happened)."""
        z = self._zero_cache.get(key)
        if z is None:
            z = np.full(shape, fill, dtype)
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
        if self.compiled:
            return engine_compiled.step(self, actions, active)
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
                captured[g], escoba[g] = self._step_active(g, a[g])
        else:
            actor = self.to_act.copy()
            captured, escoba = self._step_active(self._rows, a)
        scores = self.scores.copy()
        out = self._round_out
        if out is None:
            round_over = self._zeros("b", n, bool)
            winner = self._zeros("m1", n, np.int64, -1)
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

    def _step_active(self, g, a):
        """Step the games ``g`` (all unfinished) with actions ``a``; return (captured, escoba).

        Masks are int64/uint64 0 / all-ones words made by arithmetic shifts, so most choices are
        one bitwise operation (no ``np.where``). Per-seat state (N, P) is updated column by column
        through one-hot seat masks (the card played is in exactly one hand), with no gathers. With
        every game active, results are written straight into the state arrays (``out=``). The
        steps: take the played card from the hand, name the table card (or stop), summarise the
        capture options left, resolve (choice pending, card to the table, or capture), pass the
        turn; a seat that played its last card triggers the next deal or the round end.
        """
        full = len(g) == self.num_games
        sel = slice(None) if full else g
        if full:  # state used whole (views, no gathers or scatters)
            hands, played, piles, escobas = self.hands, self.played, self.piles, self.escobas
        else:
            hands, played, piles, escobas = self.hands[g], self.played[g], self.piles[g], self.escobas[g]
        seat = self.to_act[sel]
        pending = self.pending[sel]
        action_bit = _ONE << a.view(np.uint64)
        playing = pending >> _I63  # -1 where the action plays a card from hand, 0 where it names one
        seat_masks = self._seat_masks(seat)
        hands_empty = self._play_from_hand(g, full, hands, played, seat_masks, action_bit, playing)
        card = np.maximum(pending, a & playing)  # the card played this turn
        table = self.table[sel]
        taken, taken_value, stop = self._name_table_card(sel, a, action_bit, playing, pending)
        count, union, inter, joker_games, can_stop = self._options_left(table, taken, taken_value, card,
                                                                        playing, stop)
        choosing = (1 - count) >> _I63  # -1 where several options remain: the seat chooses on
        gained, escoba = self._resolve(g, full, table, card, taken, inter, count, choosing, piles,
                                       escobas, seat_masks, hands_empty)
        if not full:
            self.hands[g], self.played[g], self.piles[g], self.escobas[g] = hands, played, piles, escobas
        lc = self.last_capturer[sel]
        captures = ~(choosing | ((count - 1) >> _I63))  # -1 where exactly one option executed
        self._store(g, full, "last_capturer", np.bitwise_xor, lc, (lc ^ seat) & captures)
        self._store(g, full, "pending", np.subtract, (card + 1) & choosing, 1)
        self._store(g, full, "taken", np.bitwise_and, taken, choosing.view(np.uint64))
        self._store(g, full, "taken_value", np.bitwise_and, taken_value, choosing)
        self._pass_turn(g, full, seat, card, union, inter, choosing, joker_games, can_stop)
        turn_over = np.flatnonzero(hands_empty & (choosing == 0))
        if turn_over.size:
            self._after_last_card(g[turn_over])
        return gained, escoba

    def _store(self, g, full, name, ufunc, *args):
        """Return ``ufunc(*args)``, stored into state array ``name`` (rows ``g``; in place when ``full``)."""
        if full:
            return ufunc(*args, out=getattr(self, name))
        r = ufunc(*args)
        getattr(self, name)[g] = r
        return r

    def _seat_masks(self, seat):
        """Return one uint64 all-ones/zero mask per seat: where ``seat`` is that seat (1-D arrays)."""
        if self.num_players == 2:
            second = np.negative(seat).view(np.uint64)
            return (~second, second)
        return [np.negative((seat == k).astype(np.uint64)) for k in range(self.num_players)]

    def _play_from_hand(self, g, full, hands, played, seat_masks, action_bit, playing):
        """Move the played card (where the action plays one) from the hand to ``played``; return
        where every hand is now empty."""
        play_bit = action_bit & playing.view(np.uint64)
        keep = ~play_bit
        for k, m in enumerate(seat_masks):
            hands[:, k] &= keep
            played[:, k] |= play_bit & m
        sel = slice(None) if full else g
        return self._store(g, full, "hand_count", np.add, self.hand_count[sel], playing) == 0

    def _name_table_card(self, sel, a, action_bit, playing, pending):
        """Return (taken, taken_value, stop): the table cards named so far with this action's, their
        values, and (jokers) where the action is the pending card's own id, "stop"."""
        naming = ~playing
        if self._jokers:  # a named joker adds no value
            stop = a == pending
            not_stop = ~np.negative(stop.astype(np.int64))
            taken = self.taken[sel] | (action_bit & (naming & not_stop).view(np.uint64))
            taken_value = self.taken_value[sel] + (CARD_VALUES[a] & naming & not_stop)
            return taken, taken_value, stop
        taken = self.taken[sel] | (action_bit & naming.view(np.uint64))
        taken_value = self.taken_value[sel] + (((a >> _I2) + 1) & naming)
        return taken, taken_value, None

    def _options_left(self, table, taken, taken_value, card, playing, stop):
        """Return (count, union, intersection) of the capture options that hold ``taken``, and, with
        jokers, the games where a joker is involved and where "stop" is legal there (else None)."""
        target = (FIFTEEN - 1) - (card >> _I2) - taken_value
        if self._jokers:  # jokers leave the plain summary; garbage target where a joker is played
            np.maximum(target, 0, out=target)
            count, union, inter = plain_summary(table & ~taken & _STD, target)
        else:
            count, union, inter = plain_summary(table & ~taken, target)
        if self.rules.prefer_single:
            s_count, s_union, s_inter = single_summary(table, target)
            use_single = (playing != 0) & (s_count > 0)
            count = np.where(use_single, s_count, count)
            union = np.where(use_single, s_union, union)
            inter = np.where(use_single, s_inter, inter)
        if not self._jokers:
            return count, union, inter, None, None
        joker_games = np.flatnonzero((card >= NUM_CARDS) | ((table & _JM) != _ZERO))
        if not joker_games.size:
            return count, union, inter, None, None
        jg = joker_games
        j_count, j_union, j_inter, can_stop = joker_summary(
            table[jg], taken[jg], taken_value[jg], card[jg], playing[jg] != 0, self.rules.prefer_single,
            self._jokers)
        j_count[stop[jg]] = 1  # a legal stop: the option taken | inter executes
        count[jg], union[jg], inter[jg] = j_count, j_union, j_inter
        return count, union, inter, joker_games, can_stop

    def _resolve(self, g, full, table, card, taken, inter, count, choosing, piles, escobas, seat_masks,
                 hands_empty):
        """Put the card on the table (no option), or execute the one option left; return the cards
        captured (played card included) and the escobas (0/1) per game."""
        to_table = (count - 1) >> _I63  # -1 where the card cannot capture
        captures = ~(choosing | to_table)  # -1 where exactly one option: it executes
        captures_u = captures.view(np.uint64)
        card_bit = _ONE << card.view(np.uint64)
        take = (taken | inter) & captures_u
        on_table = table | (card_bit & to_table.view(np.uint64))
        new_table = self._store(g, full, "table", np.bitwise_and, on_table, ~take)
        gained = (take | card_bit) & captures_u
        for k, m in enumerate(seat_masks):
            piles[:, k] |= gained & m
        escoba = ((new_table - _ONE) >> _U63).view(np.int64) & captures  # 1: the capture swept the table
        if not self.rules.last_play_escoba:
            sel = slice(None) if full else g
            escoba &= ~(hands_empty & (self.stock_pos[sel] >= self._nc))
        for k, m in enumerate(seat_masks):
            escobas[:, k] += escoba & m.view(np.int64)
        return gained, escoba

    def _pass_turn(self, g, full, seat, card, union, inter, choosing, joker_games, can_stop):
        """Set the seat to act and its legal actions: the same seat naming cards while a choice is
        open (with jokers, maybe "stop"), else the next seat playing from its hand."""
        if self.num_players == 2:
            nxt = self._store(g, full, "to_act", np.bitwise_xor, seat, ~choosing & 1)  # seat: a view
        else:
            nxt = np.where(choosing != 0, seat, self._next_seat[seat])
            self.to_act[slice(None) if full else g] = nxt
        still_choosing = choosing != 0
        legal = self._store(g, full, "legal", _take_clip, self.hands.reshape(-1), g * self.num_players + nxt)
        np.copyto(legal, union & ~inter, where=still_choosing)
        if joker_games is not None:  # a pending choice that may stop at the option taken | inter
            jg = joker_games
            stop_ok = np.negative((can_stop & still_choosing[jg]).astype(np.uint64))
            legal[jg] |= (_ONE << card[jg].view(np.uint64)) & stop_ok
        if not full:
            self.legal[g] = legal

    def _after_last_card(self, g):
        """Deal three more cards (with jokers, the last short deal), or end the round, in games ``g``."""
        stock_empty = self.stock_pos[g] >= self._nc
        if stock_empty.any():
            ended = g[stock_empty]
            deal = g[~stock_empty]
            new_round, new_game = self._end_round(ended)
            if new_round.size:
                start_round(self, new_round, draw_dealer=new_game)
                deal = np.concatenate([deal, new_round])
        else:
            deal = g
        if deal.size:
            deal_hands(self, deal)
            self.legal[deal] = self.hands.reshape(-1)[deal * self.num_players + self.to_act[deal]]

    def _end_round(self, g):
        """Finish the round in games ``g`` (last capturer takes the table, scoring, game end).

        Returns the games that go on to another round (their dealer has already moved on) and
        which of them start a new game (with ``autoreset``), as a bool array or False. The step's
        report is left in ``_round_out`` (and ``_final`` for games restarted by autoreset).
        """
        p = self.num_players
        lc = self.last_capturer[g]
        has = lc >= 0
        if has.any():
            gh = g[has]
            self.piles.reshape(-1)[gh * p + lc[has]] |= self.table[gh]
            self.table[gh] = 0
        side_piles, side_esc = self.side_totals(g)
        res = score_round_batch(side_piles, side_esc, self.rules)
        sc = self.scores[g] + res["points"]
        self.scores[g] = sc
        rows = np.stack([res[k] for k in REPORTED], axis=1)
        best = sc.max(axis=1)
        unique = (sc == best[:, None]).sum(axis=1) == 1
        ri = self.round_index[g] + 1
        self.round_index[g] = ri
        if self.single_round:
            finished = np.ones(len(g), bool)
            won = unique
        else:
            won = (best >= self.rules.target_score) & unique
            finished = won.copy()
        cut = np.zeros(len(g), bool)
        if self.max_rounds is not None:
            cut = ~finished & (ri >= self.max_rounds)
            finished |= cut
        self._round_out = (g, rows, finished)
        if not finished.any():
            self.dealer[g] = self._next_seat[self.dealer[g]]
            return g, False
        winner = np.where(won & finished, sc.argmax(axis=1), -1)
        self.winner[g] = winner
        self.truncated[g] = cut
        self.done[g] = finished
        cont = g[~finished]
        self.dealer[cont] = self._next_seat[self.dealer[cont]]
        fin = g[finished]
        self.legal[fin] = 0
        if self.autoreset:
            self._final = (sc[finished], winner[finished], cut[finished])
            self.episode[fin] += 1
            self._clear_games(fin)
            return np.concatenate([cont, fin]), np.arange(len(g)) >= len(cont)
        return cont, False

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
