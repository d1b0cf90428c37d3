"""One turn of the batched engine, in every game at once: play a card or name a table card, then capture.

``play_turn(eng, games, actions)`` is the body of ``EscobaEngine.step`` (``escoba_env.executors.engine``)
for the unfinished games it steps, in the order of the rule book (docs/rules.md §4, §5): take the
played card from the hand (``play_from_hand``), name a table card or stop (``name_table_card``),
summarise the capture options left (``options_left``), resolve them (a choice still pending, the card
to the table, or the one option left executed: ``resolve``), and pass the turn with the new legal
mask (``pass_turn``). A seat that played its last card triggers the next deal or the round's end
(``escoba_env.executors.engine_round``). Each function works on the engine's arrays for the games
given, as ``engine_deal``'s do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..rulebook.capture import CARD_VALUES, FIFTEEN, joker_summary, plain_summary, single_summary
from ..rulebook.cards import FULL_DECK, JOKER_MASK, NUM_CARDS
from .engine_round import after_last_card

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_U63 = np.uint64(63)
_I63 = np.int64(63)
_I2 = np.int64(2)
_STD = np.uint64(FULL_DECK)
_JM = np.uint64(JOKER_MASK)


def take_clip(a: np.ndarray, indices: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Return ``np.take`` without the bounds check's buffering (the indices are valid)."""
    return np.take(a, indices, out=out, mode="clip")


def play_turn(eng: Any, g: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step the games ``g`` (all unfinished) of engine ``eng`` with actions ``a``; return (captured, escoba).

    Masks are int64/uint64 0 / all-ones words made by arithmetic shifts, so most choices are
    one bitwise operation (no ``np.where``). Per-seat state (N, P) is updated column by column
    through one-hot seat masks (the card played is in exactly one hand), with no gathers. With
    every game active, results are written straight into the state arrays (``out=``). The
    steps: take the played card from the hand, name the table card (or stop), summarise the
    capture options left, resolve (choice pending, card to the table, or capture), pass the
    turn; a seat that played its last card triggers the next deal or the round end.
    """
    full = len(g) == eng.num_games
    sel = slice(None) if full else g
    if full:  # state used whole (views, no gathers or scatters)
        hands, played, piles, escobas = eng.hands, eng.played, eng.piles, eng.escobas
    else:
        hands, played, piles, escobas = eng.hands[g], eng.played[g], eng.piles[g], eng.escobas[g]
    seat = eng.to_act[sel]
    pending = eng.pending[sel]
    action_bit = _ONE << a.view(np.uint64)
    playing = pending >> _I63  # -1 where the action plays a card from hand, 0 where it names one
    seat_masks = seat_masks_of(eng, seat)
    hands_empty = play_from_hand(eng, g, full, hands, played, seat_masks, action_bit, playing)
    card = np.maximum(pending, a & playing)  # the card played this turn
    table = eng.table[sel]
    taken, taken_value, stop = name_table_card(eng, sel, a, action_bit, playing, pending)
    count, union, inter, joker_games, can_stop = options_left(eng, table, taken, taken_value, card, playing,
                                                              stop)
    choosing = (1 - count) >> _I63  # -1 where several options remain: the seat chooses on
    gained, escoba = resolve(eng, g, full, table, card, taken, inter, count, choosing, piles, escobas,
                             seat_masks, hands_empty)
    if not full:
        eng.hands[g], eng.played[g], eng.piles[g], eng.escobas[g] = hands, played, piles, escobas
    lc = eng.last_capturer[sel]
    captures = ~(choosing | ((count - 1) >> _I63))  # -1 where exactly one option executed
    store(eng, g, full, "last_capturer", np.bitwise_xor, lc, (lc ^ seat) & captures)
    store(eng, g, full, "pending", np.subtract, (card + 1) & choosing, 1)
    store(eng, g, full, "taken", np.bitwise_and, taken, choosing.view(np.uint64))
    store(eng, g, full, "taken_value", np.bitwise_and, taken_value, choosing)
    pass_turn(eng, g, full, seat, card, union, inter, choosing, joker_games, can_stop)
    turn_over = np.flatnonzero(hands_empty & (choosing == 0))
    if turn_over.size:
        after_last_card(eng, g[turn_over])
    return gained, escoba


def store(eng: Any, g: np.ndarray, full: bool, name: str, ufunc: Callable[..., np.ndarray], *args: Any
          ) -> np.ndarray:
    """Return ``ufunc(*args)``, stored into state array ``name`` (rows ``g``; in place when ``full``)."""
    if full:
        return ufunc(*args, out=getattr(eng, name))
    r = ufunc(*args)
    getattr(eng, name)[g] = r
    return r


def seat_masks_of(eng: Any, seat: np.ndarray) -> Sequence[np.ndarray]:
    """Return one uint64 all-ones/zero mask per seat: where ``seat`` is that seat (1-D arrays)."""
    if eng.num_players == 2:
        second = np.negative(seat).view(np.uint64)
        return (~second, second)
    return [np.negative((seat == k).astype(np.uint64)) for k in range(eng.num_players)]


def play_from_hand(eng: Any, g: np.ndarray, full: bool, hands: np.ndarray, played: np.ndarray,
                   seat_masks: Sequence[np.ndarray], action_bit: np.ndarray, playing: np.ndarray
                   ) -> np.ndarray:
    """Move the played card (where the action plays one) from the hand to ``played``; return
    where every hand is now empty."""
    play_bit = action_bit & playing.view(np.uint64)
    keep = ~play_bit
    for k, m in enumerate(seat_masks):
        hands[:, k] &= keep
        played[:, k] |= play_bit & m
    sel = slice(None) if full else g
    return store(eng, g, full, "hand_count", np.add, eng.hand_count[sel], playing) == 0


def name_table_card(eng: Any, sel: slice | np.ndarray, a: np.ndarray, action_bit: np.ndarray,
                    playing: np.ndarray, pending: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Return (taken, taken_value, stop): the table cards named so far with this action's, their
    values, and (jokers) where the action is the pending card's own id, "stop"."""
    naming = ~playing
    if eng._jokers:  # a named joker adds no value
        stop = a == pending
        not_stop = ~np.negative(stop.astype(np.int64))
        taken = eng.taken[sel] | (action_bit & (naming & not_stop).view(np.uint64))
        taken_value = eng.taken_value[sel] + (CARD_VALUES[a] & naming & not_stop)
        return taken, taken_value, stop
    taken = eng.taken[sel] | (action_bit & naming.view(np.uint64))
    taken_value = eng.taken_value[sel] + (((a >> _I2) + 1) & naming)
    return taken, taken_value, None


def options_left(eng: Any, table: np.ndarray, taken: np.ndarray, taken_value: np.ndarray, card: np.ndarray,
                 playing: np.ndarray, stop: np.ndarray | None) -> tuple[Any, ...]:
    """Return (count, union, intersection) of the capture options that hold ``taken``, and, with
    jokers, the games where a joker is involved and where "stop" is legal there (else None)."""
    target = (FIFTEEN - 1) - (card >> _I2) - taken_value
    if eng._jokers:  # jokers leave the plain summary; garbage target where a joker is played
        np.maximum(target, 0, out=target)
        count, union, inter = plain_summary(table & ~taken & _STD, target)
    else:
        count, union, inter = plain_summary(table & ~taken, target)
    if eng.rules.prefer_single:
        s_count, s_union, s_inter = single_summary(table, target)
        use_single = (playing != 0) & (s_count > 0)
        count = np.where(use_single, s_count, count)
        union = np.where(use_single, s_union, union)
        inter = np.where(use_single, s_inter, inter)
    if not eng._jokers:
        return count, union, inter, None, None
    joker_games = np.flatnonzero((card >= NUM_CARDS) | ((table & _JM) != _ZERO))
    if not joker_games.size:
        return count, union, inter, None, None
    jg = joker_games
    j_count, j_union, j_inter, can_stop = joker_summary(
        table[jg], taken[jg], taken_value[jg], card[jg], playing[jg] != 0, eng.rules.prefer_single,
        eng._jokers)
    j_count[stop[jg]] = 1  # a legal stop: the option taken | inter executes
    count[jg], union[jg], inter[jg] = j_count, j_union, j_inter
    return count, union, inter, joker_games, can_stop


def resolve(eng: Any, g: np.ndarray, full: bool, table: np.ndarray, card: np.ndarray, taken: np.ndarray,
            inter: np.ndarray, count: np.ndarray, choosing: np.ndarray, piles: np.ndarray,
            escobas: np.ndarray, seat_masks: Sequence[np.ndarray], hands_empty: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Put the card on the table (no option), or execute the one option left; return the cards
    captured (played card included) and the escobas (0/1) per game."""
    to_table = (count - 1) >> _I63  # -1 where the card cannot capture
    captures = ~(choosing | to_table)  # -1 where exactly one option: it executes
    captures_u = captures.view(np.uint64)
    card_bit = _ONE << card.view(np.uint64)
    take = (taken | inter) & captures_u
    on_table = table | (card_bit & to_table.view(np.uint64))
    new_table = store(eng, g, full, "table", np.bitwise_and, on_table, ~take)
    gained = (take | card_bit) & captures_u
    for k, m in enumerate(seat_masks):
        piles[:, k] |= gained & m
    escoba = ((new_table - _ONE) >> _U63).view(np.int64) & captures  # 1: the capture swept the table
    if not eng.rules.last_play_escoba:
        sel = slice(None) if full else g
        escoba &= ~(hands_empty & (eng.stock_pos[sel] >= eng._nc))
    for k, m in enumerate(seat_masks):
        escobas[:, k] += escoba & m.view(np.int64)
    return gained, escoba


def pass_turn(eng: Any, g: np.ndarray, full: bool, seat: np.ndarray, card: np.ndarray, union: np.ndarray,
              inter: np.ndarray, choosing: np.ndarray, joker_games: np.ndarray | None,
              can_stop: np.ndarray | None) -> None:
    """Set the seat to act and its legal actions: the same seat naming cards while a choice is
    open (with jokers, maybe "stop"), else the next seat playing from its hand."""
    if eng.num_players == 2:
        nxt = store(eng, g, full, "to_act", np.bitwise_xor, seat, ~choosing & 1)  # seat: a view
    else:
        nxt = np.where(choosing != 0, seat, eng._next_seat[seat])
        eng.to_act[slice(None) if full else g] = nxt
    still_choosing = choosing != 0
    legal = store(eng, g, full, "legal", take_clip, eng.hands.reshape(-1), g * eng.num_players + nxt)
    np.copyto(legal, union & ~inter, where=still_choosing)
    if joker_games is not None:  # a pending choice that may stop at the option taken | inter
        jg = joker_games
        stop_ok = np.negative((can_stop & still_choosing[jg]).astype(np.uint64))
        legal[jg] |= (_ONE << card[jg].view(np.uint64)) & stop_ok
    if not full:
        eng.legal[g] = legal
