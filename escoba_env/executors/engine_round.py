"""The end of a hand in the batched engine: the next deal, or the round's end with its scoring and the
game's end (docs/rules.md §3, §6, §7).

``after_last_card(eng, games)`` runs in the games whose seats have all played their last card: it
deals three more cards each (``engine_deal``) or, when the stock is empty, ends the round
(``end_round``: the table to the last capturer, the round scored, the game won, cut or going on, the
next dealer) and deals the next one. ``clear_games`` resets the game-level state of a new game.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..rulebook.scoring import score_round_batch
from .engine_deal import deal_hands, start_round
from .step_info import REPORTED


def clear_games(eng: Any, games: np.ndarray) -> None:
    """Reset the game-level state of ``games`` (scores, round counter, hands, pending)."""
    eng.scores[games] = 0
    eng.round_index[games] = 0
    eng.done[games] = False
    eng.truncated[games] = False
    eng.winner[games] = -1
    eng.hands[games] = 0
    eng.pending[games] = -1
    eng.taken[games] = 0
    eng.taken_value[games] = 0


def after_last_card(eng: Any, g: np.ndarray) -> None:
    """Deal three more cards (with jokers, the last short deal), or end the round, in games ``g``."""
    stock_empty = eng.stock_pos[g] >= eng._nc
    if stock_empty.any():
        ended = g[stock_empty]
        deal = g[~stock_empty]
        new_round, new_game = end_round(eng, ended)
        if new_round.size:
            start_round(eng, new_round, draw_dealer=new_game)
            deal = np.concatenate([deal, new_round])
    else:
        deal = g
    if deal.size:
        deal_hands(eng, deal)
        eng.legal[deal] = eng.hands.reshape(-1)[deal * eng.num_players + eng.to_act[deal]]


def end_round(eng: Any, g: np.ndarray) -> tuple[np.ndarray, np.ndarray | bool]:
    """Finish the round in games ``g`` (last capturer takes the table, scoring, game end).

    Returns the games that go on to another round (their dealer has already moved on) and
    which of them start a new game (with ``autoreset``), as a bool array or False. The step's
    report is left in ``_round_out`` (and ``_final`` for games restarted by autoreset).
    """
    p = eng.num_players
    lc = eng.last_capturer[g]
    has = lc >= 0
    if has.any():
        gh = g[has]
        eng.piles.reshape(-1)[gh * p + lc[has]] |= eng.table[gh]
        eng.table[gh] = 0
    side_piles, side_esc = eng.side_totals(g)
    res = score_round_batch(side_piles, side_esc, eng.rules)
    sc = eng.scores[g] + res["points"]
    eng.scores[g] = sc
    rows = np.stack([res[k] for k in REPORTED], axis=1)
    best = sc.max(axis=1)
    unique = (sc == best[:, None]).sum(axis=1) == 1
    ri = eng.round_index[g] + 1
    eng.round_index[g] = ri
    if eng.single_round:
        finished = np.ones(len(g), bool)
        won = unique
    else:
        won = (best >= eng.rules.target_score) & unique
        finished = won.copy()
    cut = np.zeros(len(g), bool)
    if eng.max_rounds is not None:
        cut = ~finished & (ri >= eng.max_rounds)
        finished |= cut
    eng._round_out = (g, rows, finished)
    if not finished.any():
        eng.dealer[g] = eng._next_seat[eng.dealer[g]]
        return g, False
    winner = np.where(won & finished, sc.argmax(axis=1), -1)
    eng.winner[g] = winner
    eng.truncated[g] = cut
    eng.done[g] = finished
    cont = g[~finished]
    eng.dealer[cont] = eng._next_seat[eng.dealer[cont]]
    fin = g[finished]
    eng.legal[fin] = 0
    if eng.autoreset:
        eng._final = (sc[finished], winner[finished], cut[finished])
        eng.episode[fin] += 1
        clear_games(eng, fin)
        return np.concatenate([cont, fin]), np.arange(len(g)) >= len(cont)
    return cont, False
