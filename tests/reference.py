"""A tiny, obviously-correct reference of one Escoba game (docs/rules.md §1-7, §11), for cross-checking.

Plain Python sets of card ids and ``itertools.combinations``; it shares nothing with the engine's
tables. A card id is ``4 * (value - 1) + suit`` (suit 0 oros). The reference follows the same
play/take decision scheme as the engine (docs/rules.md §10) so that the two can be compared
action by action: an action plays a card from hand, or, while a capture with several options is
pending, names one table card of the capture.

The variants of docs/rules.md §11 follow the project's reading (see ``escoba_env.executors.engine``): jokers
(ids 40, 41) wild for 1..10, checked by trying every subset; the last short deal one card at a time,
empty-handed seats skipped; escoba de mesa with its tie-break as a plain ``max`` over tuples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

VELO = 24
PRIMERA = {7: 21, 6: 18, 1: 16, 5: 15, 4: 14, 3: 13, 2: 12, 8: 10, 9: 10, 10: 10}
TIEBREAK_ORDER = (7, 6, 1, 5, 4, 3, 2)
CATEGORIES = ("cards", "oros", "velo", "sevens", "escobas")


def value(card: int) -> int:
    """Return the capture value (1..10) of a card id (0 for a joker, whose value is wild)."""
    return 0 if card >= 40 else card // 4 + 1


def can_make(cards: Iterable[int], total: int) -> bool:
    """Return True if ``cards`` (jokers wild for 1..10 each) can sum to exactly ``total``."""
    cards = list(cards)
    jokers = sum(1 for c in cards if c >= 40)
    rest = total - sum(value(c) for c in cards)
    return jokers <= rest <= 10 * jokers


def suit(card: int) -> int:
    """Return the suit (0 oros, 1 copas, 2 espadas, 3 bastos) of a card id; -1 for a joker."""
    return -1 if card >= 40 else card % 4


def all_subsets_with_sum(cards: Iterable[int], target: int) -> list[frozenset[int]]:
    """Return every non-empty subset of ``cards`` whose values sum to ``target``."""
    pool = sorted(cards)
    out = []
    for k in range(1, len(pool) + 1):
        if sum(sorted(value(c) for c in pool)[:k]) > target:
            break  # even the k smallest cards are too much, so every larger k is too
        for combo in combinations(pool, k):
            if sum(value(c) for c in combo) == target:
                out.append(frozenset(combo))
    return out


def capture_options(card: int, table: Iterable[int], prefer_single: bool = False) -> list[frozenset[int]]:
    """Return the legal captures of ``card`` on ``table`` (docs/rules.md §4, §11) as sets of table cards."""
    table = list(table)
    if card < 40 and all(c < 40 for c in table):
        options = all_subsets_with_sum(table, 15 - value(card))
    else:  # jokers: try every non-empty subset
        options = [frozenset(s) for k in range(1, len(table) + 1) for s in combinations(table, k)
                   if can_make((*s, card), 15)]
    if prefer_single and any(len(o) == 1 for o in options):
        options = [o for o in options if len(o) == 1]
    return options


def _strict_best(metric: Sequence) -> int | None:
    """Return the index of the strictly highest entry, or None on a tie for the highest."""
    best = max(metric)
    at_best = [i for i, m in enumerate(metric) if m == best]
    return at_best[0] if len(at_best) == 1 else None


def primera(pile: set[int]) -> int | None:
    """Return a pile's primera (sum over suits of its best card's primera value), None if a suit misses."""
    total = 0
    for s in range(4):
        in_suit = [PRIMERA[value(c)] for c in pile if suit(c) == s]
        if not in_suit:
            return None
        total += max(in_suit)
    return total


def score(piles: Sequence[set[int]], escobas: Sequence[int], rules) -> dict[str, list[int]]:
    """Return each category's points per side and their sum under ``"points"`` (docs/rules.md §6)."""
    n = len(piles)
    cats = {k: [0] * n for k in CATEGORIES}
    w = _strict_best([len(p) for p in piles])
    if w is not None:
        cats["cards"][w] = 1
    oros = [sum(1 for c in p if suit(c) == 0) for p in piles]
    w = _strict_best(oros)
    if w is not None:
        cats["oros"][w] = 2 if rules.bonus_sweeps and oros[w] == 10 else 1
    for i, p in enumerate(piles):
        if VELO in p:
            cats["velo"][i] = 1
    sevens = [sum(1 for c in p if value(c) == 7) for p in piles]
    if rules.sevens_rule == "most_sevens":
        w = _strict_best(sevens)
    elif rules.sevens_rule == "most_sevens_tiebreak":
        w = _strict_best([tuple(sum(1 for c in p if value(c) == v) for v in TIEBREAK_ORDER) for p in piles])
    elif rules.sevens_rule == "primera":
        prim = [primera(p) for p in piles]
        have = [x for x in prim if x is not None]
        w = _strict_best([-1 if x is None else x for x in prim]) if have else None
    else:
        raise ValueError(rules.sevens_rule)
    if w is not None:
        cats["sevens"][w] = 2 if rules.bonus_sweeps and sevens[w] == 4 else 1
    cats["escobas"] = list(escobas)
    cats["points"] = [sum(cats[k][i] for k in CATEGORIES) for i in range(n)]
    return cats


class RefGame:
    """One Escoba game, move by move, in plain Python.

    Rounds after the first need a deck from outside (``new_round(deck)``) because the reference
    does not reproduce the engine's shuffle; ``needs_deck`` is True while one is awaited.
    """

    def __init__(self, rules, dealer: int, deck: Sequence[int], single_round: bool = False,
                 max_rounds: int | None = None):
        self.rules = rules
        self.p = rules.num_players
        self.single_round = single_round
        self.max_rounds = max_rounds
        self.scores = [0] * self.num_sides
        self.round_index = 0
        self.dealer = dealer
        self.done = False
        self.truncated = False
        self.winner: int | None = None
        self.needs_deck = False
        self.last_round: dict[str, list[int]] | None = None
        self.new_round(deck, rotate=False)

    @property
    def num_sides(self) -> int:
        """Return the number of scoring sides."""
        return 2 if self.rules.partnerships else self.p

    def side(self, seat: int) -> int:
        """Return the side of a seat."""
        return seat % 2 if self.rules.partnerships else seat

    def order(self) -> list[int]:
        """Return the seats in dealing order: the one after the dealer first."""
        return [(self.dealer + 1 + i) % self.p for i in range(self.p)]

    def new_round(self, deck: Sequence[int], rotate: bool = True) -> None:
        """Deal a round from ``deck`` (top first), after passing the deal on if ``rotate``."""
        assert sorted(deck) == list(range(40 + self.rules.jokers))
        if rotate:
            self.dealer = (self.dealer + 1) % self.p
        self.needs_deck = False
        deck = list(deck)
        self.hands: list[set[int]] = [set() for _ in range(self.p)]
        self.piles: list[set[int]] = [set() for _ in range(self.p)]
        self.played: list[set[int]] = [set() for _ in range(self.p)]
        self.escobas = [0] * self.p
        self.last_capturer: int | None = None
        self.pending: int | None = None
        self.options: list[frozenset[int]] = []
        self.taken: set[int] = set()
        self.stock = deck
        self._deal_three()
        turned = self.stock[:4]
        self.stock = self.stock[4:]
        self.table = set(turned)
        if self.rules.mesa_deal:
            self.table = set()
            for c in turned:
                self.table.add(c)
                groups = [set(s) for k in range(1, len(self.table) + 1)
                          for s in combinations(sorted(self.table), k) if can_make(s, 15)]
                if groups:
                    best = max(groups, key=lambda s: (len(s), VELO in s, sum(value(x) == 7 for x in s),
                                                      sum(suit(x) == 0 for x in s),
                                                      -sum(1 << x for x in s)))
                    self.table -= best
                    self.piles[self.dealer] |= best
                    self.escobas[self.dealer] += not self.table
                    self.last_capturer = self.dealer
        elif self.rules.jokers and self.rules.initial_fifteen:
            four = sorted(self.table)
            two = any(can_make(a, 15) and can_make([c for c in four if c not in a], 15)
                      for k in (1, 2) for a in combinations(four, k))
            n_esc = 2 if two else int(can_make(four, 15))
            if n_esc:
                self.piles[self.dealer] |= self.table
                self.escobas[self.dealer] += n_esc
                self.table = set()
                self.last_capturer = self.dealer
        elif self.rules.initial_fifteen:
            vals = [value(c) for c in self.table]
            n_esc = 0
            if sum(vals) == 15:
                n_esc = 1
            elif sum(vals) == 30 and any(sum(pair) == 15 for pair in combinations(vals, 2)):
                n_esc = 2
            if n_esc:
                self.piles[self.dealer] |= self.table
                self.escobas[self.dealer] += n_esc
                self.table = set()
                self.last_capturer = self.dealer
        self.to_act = (self.dealer + 1) % self.p

    def _deal_three(self) -> None:
        """Deal three cards a seat, or (jokers) what is left of a short stock, one card a seat."""
        for _ in range(3):
            for seat in self.order():
                if self.stock:
                    self.hands[seat].add(self.stock.pop(0))

    def legal(self) -> set[int]:
        """Return the legal actions of the seat to act."""
        if self.done or self.needs_deck:
            return set()
        if self.pending is None:
            return set(self.hands[self.to_act])
        remaining = [o for o in self.options if self.taken <= o]
        union = set().union(*remaining)
        inter = set.intersection(*(set(o) for o in remaining))
        # Jokers only: an option holding no other remaining one is taken by the pending card's id.
        stop = {self.pending} if any(o == inter for o in remaining) else set()
        return (union - inter) | stop

    def step(self, action: int) -> dict:
        """Apply one action; return what happened (captured cards, escoba, round points)."""
        assert action in self.legal(), (action, self.legal())
        seat = self.to_act
        info = {"actor": seat, "captured": set(), "escoba": 0, "round_over": False}
        if self.pending is None:
            self.hands[seat].discard(action)
            self.played[seat].add(action)
            options = capture_options(action, self.table, self.rules.prefer_single)
            if not options:
                self.table.add(action)
            elif len(options) == 1:
                self._capture(seat, action, options[0], info)
            else:
                self.pending, self.options, self.taken = action, options, set()
                return info
        elif action == self.pending:  # stop: the smallest remaining option
            remaining = [o for o in self.options if self.taken <= o]
            smallest = frozenset.intersection(*remaining)
            card = self.pending
            self.pending, self.options, self.taken = None, [], set()
            self._capture(seat, card, smallest, info)
        else:
            self.taken.add(action)
            remaining = [o for o in self.options if self.taken <= o]
            if len(remaining) > 1:
                return info
            card = self.pending
            self.pending, self.options, self.taken = None, [], set()
            self._capture(seat, card, remaining[0], info)
        self.to_act = (seat + 1) % self.p
        while any(self.hands) and not self.hands[self.to_act]:  # skip empty hands (short deal)
            self.to_act = (self.to_act + 1) % self.p
        if not any(self.hands):
            if self.stock:
                self._deal_three()
            else:
                self._end_round(info)
        return info

    def _capture(self, seat: int, card: int, option: frozenset[int], info: dict) -> None:
        self.table -= option
        gained = set(option) | {card}
        self.piles[seat] |= gained
        self.last_capturer = seat
        info["captured"] = gained
        last_play = not any(self.hands) and not self.stock
        if not self.table and (self.rules.last_play_escoba or not last_play):
            self.escobas[seat] += 1
            info["escoba"] = 1

    def side_piles(self) -> tuple[list[set[int]], list[int]]:
        """Return the capture piles and escobas pooled per side."""
        piles: list[set[int]] = [set() for _ in range(self.num_sides)]
        esc = [0] * self.num_sides
        for seat in range(self.p):
            piles[self.side(seat)] |= self.piles[seat]
            esc[self.side(seat)] += self.escobas[seat]
        return piles, esc

    def _end_round(self, info: dict) -> None:
        self.leftover = set(self.table)
        if self.last_capturer is not None:
            self.piles[self.last_capturer] |= self.table
            self.table = set()
        piles, esc = self.side_piles()
        result = score(piles, esc, self.rules)
        self.last_round = result
        for i in range(self.num_sides):
            self.scores[i] += result["points"][i]
        self.round_index += 1
        info["round_over"] = True
        info["round"] = result
        best = max(self.scores)
        unique = self.scores.count(best) == 1
        if self.single_round:
            self.done = True
            self.winner = self.scores.index(best) if unique else None
        elif best >= self.rules.target_score and unique:
            self.done = True
            self.winner = self.scores.index(best)
        elif self.max_rounds is not None and self.round_index >= self.max_rounds:
            self.done = True
            self.truncated = True
        if not self.done:
            self.needs_deck = True


def _mask(cards: Iterable[int]) -> int:
    return sum(1 << c for c in cards)


def compare_state(eng, refs: list[RefGame]) -> None:
    """Assert that every game of the batched engine ``eng`` agrees with its reference in ``refs``."""
    for g, ref in enumerate(refs):
        where = f"game {g}, round {ref.round_index}"
        assert bool(eng.done[g]) == ref.done, where
        assert eng.scores[g].tolist() == ref.scores, where
        assert int(eng.round_index[g]) == ref.round_index, where
        if ref.done:
            assert int(eng.legal[g]) == 0, where
            assert int(eng.winner[g]) == (-1 if ref.winner is None else ref.winner), where
            assert bool(eng.truncated[g]) == ref.truncated, where
            assert eng.piles[g].tolist() == [_mask(p) for p in ref.piles], where
            continue
        assert int(eng.dealer[g]) == ref.dealer, where
        assert eng.hands[g].tolist() == [_mask(h) for h in ref.hands], where
        assert int(eng.table[g]) == _mask(ref.table), where
        assert eng.piles[g].tolist() == [_mask(p) for p in ref.piles], where
        assert eng.escobas[g].tolist() == ref.escobas, where
        assert int(eng.to_act[g]) == ref.to_act, where
        assert int(eng.legal[g]) == _mask(ref.legal()), where
        assert int(eng.pending[g]) == (-1 if ref.pending is None else ref.pending), where
        assert int(eng.taken[g]) == _mask(ref.taken), where
        assert eng.played[g].tolist() == [_mask(p) for p in ref.played], where
        assert int(eng.last_capturer[g]) == (-1 if ref.last_capturer is None else ref.last_capturer), where
        assert eng.deck[g, int(eng.stock_pos[g]):].tolist() == ref.stock, where
