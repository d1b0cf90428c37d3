"""Text rendering of one game of an engine: table, the hand of the seat to act, piles, scores.

Used by the ``"ansi"`` and ``"human"`` render modes of the env faces. Cards are shown with their
Spanish short names (``7o``, ``Rc``) or, with ``french=True``, French names with suit symbols
(``7♦``, ``K♥``). The jokers of the jokers variant (ids 40, 41) are ``*1`` and ``*2`` in both
(a joker has no suit; a one-column ``*`` keeps columns aligned where a 🃏 glyph is two columns wide
in most terminals). Only the hand of the seat to act is shown (a hot-seat view for a human at the
table); other hands appear as card counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium

from ..executors.engine import EscobaEngine
from ..executors.step_info import StepInfo
from ..rulebook.cards import JOKER_MASK, OROS, SEVENS, VELO, card_name, card_words, move_words, names_of
from .render_rgb import render_rgb


def _names(mask: int, french: bool) -> str:
    return names_of(int(mask), french) if int(mask) else "(none)"


def player_names(num_players: int) -> list[str]:
    """Return the default agent names ``player_0`` ... ``player_{n-1}``."""
    return [f"player_{i}" for i in range(num_players)]


def side_names(engine: EscobaEngine, names: Sequence[str]) -> list[str]:
    """Return a display name per scoring side (a player, or ``team 0 (player_0+player_2)``)."""
    if engine.rules.partnerships:
        return [f"team {s} ({names[s]}+{names[s + 2]})" for s in range(2)]
    return list(names)


def _pile_summary(mask: int, escobas: int) -> str:
    parts = [f"{mask.bit_count()} cards", f"{(mask & OROS).bit_count()} oros",
             f"{(mask & SEVENS).bit_count()} sevens"]
    if mask >> VELO & 1:
        parts.append("velo")
    jokers = (mask & JOKER_MASK).bit_count()
    if jokers:
        parts.append(f"{jokers} joker" + ("s" if jokers > 1 else ""))
    if escobas:
        parts.append(f"{escobas} escoba" + ("s" if escobas > 1 else ""))
    return ", ".join(parts)


def describe_step(engine: EscobaEngine, action: int, played: int, info: StepInfo, game: int = 0,
                  french: bool = False, names: Sequence[str] | None = None) -> str:
    """Return a one-line description of the step that ``info`` reports for ``game``.

    ``action`` is the action taken and ``played`` the card played this turn (the action itself,
    or the pending card when the action named a table card).
    """
    was_take = action != played
    names = player_names(engine.num_players) if names is None else names
    actor = int(info.actor[game])
    who = names[actor] if actor >= 0 else "nobody"
    captured = int(info.captured[game])
    if captured or not (was_take or int(engine.pending[game]) >= 0 and int(engine.to_act[game]) == actor):
        # a whole move: the one phrasing of every front-end (escoba_env.rulebook.cards.move_words)
        text = f"{who}: {move_words(played, captured & ~(1 << played), french)}"
        if int(info.escoba[game]):
            text += " (escoba!)"
    else:  # naming a table card, or a card with several captures waiting for the choice
        text = f"{who} {'names' if was_take else 'plays'} {card_words(int(action), french)}"
        if not was_take:
            text += ", choosing which cards to take"
    if bool(info.round_over[game]):
        sides = side_names(engine, names)
        pts = ", ".join(f"{sides[s]} {int(v)}" for s, v in enumerate(info.round_points[game]))
        text += f"; round over: {pts}"
    return text


def render_text(engine: EscobaEngine, game: int = 0, french: bool = False,
                names: Sequence[str] | None = None, last: str | None = None) -> str:
    """Return a multi-line text picture of one game: scores, table, piles, the hand to act."""
    names = player_names(engine.num_players) if names is None else names
    p = engine.num_players
    sides = side_names(engine, names)
    scores = ", ".join(f"{sides[s]} {int(v)}" for s, v in enumerate(engine.scores[game]))
    rules = engine.rules
    stock = rules.num_cards - int(engine.stock_pos[game])
    variant = f" · {rules.jokers} joker" + ("s" if rules.jokers > 1 else "") if rules.jokers else ""
    variant += " · escoba de mesa" if rules.mesa_deal else ""
    lines = [
        f"Round {int(engine.round_index[game]) + (0 if engine.done[game] else 1)} · dealer "
        f"{names[int(engine.dealer[game])]} · stock {stock} · target {rules.target_score}{variant}",
        f"Scores: {scores}",
    ]
    if last:
        lines.append(f"Last: {last}")
    lines.append(f"Table: {_names(int(engine.table[game]), french)}")
    for seat in range(p):
        lines.append(f"  {names[seat]}: hand {int(engine.hands[game, seat]).bit_count()} · captured "
                     f"{_pile_summary(int(engine.piles[game, seat]), int(engine.escobas[game, seat]))}")
    if bool(engine.done[game]):
        if bool(engine.truncated[game]):
            lines.append(f"Game over: cut after {int(engine.round_index[game])} rounds, no winner")
        elif int(engine.winner[game]) >= 0:
            lines.append(f"Game over: {sides[int(engine.winner[game])]} wins")
        else:
            lines.append("Game over: tied, no winner")
        return "\n".join(lines)
    seat = int(engine.to_act[game])
    lines.append(f"{names[seat]} to act · hand: {_names(int(engine.hands[game, seat]), french)}")
    pending = int(engine.pending[game])
    if pending >= 0:
        lines.append(f"  capture choice for {card_name(pending, french)}: taken so far "
                     f"{_names(int(engine.taken[game]), french)}")
    lines.append(f"  legal: {_names(int(engine.legal[game]), french)}")
    return "\n".join(lines)



class _OneStep:
    """A ``Game.step`` report seen as a batch of one (the fields ``describe_step`` reads)."""

    def __init__(self, st):
        self.actor, self.captured, self.escoba = [st.actor], [st.captured], [st.escoba]
        self.round_over, self.round_points = [st.round_over], [st.round_points]


def render_face(engine, render_mode: str | None, last: tuple | None, french: bool, names) -> str | None:
    """Render game 0 for an env face: return the text (``"ansi"``), print it (``"human"``), or warn.

    ``last`` is the face's record ``(action, game_step)`` of the latest ``Game.step``, or None.
    """
    if render_mode is None:
        gymnasium.logger.warn("You are calling render method without specifying any render mode.")
        return None
    line = None
    if last is not None:
        a, st = last
        line = describe_step(engine, a, st.card, _OneStep(st), 0, french, names)
    if render_mode == "rgb_array":
        return render_rgb(engine, None, 0, french, names, line)
    text = render_text(engine, 0, french, names, line)
    if render_mode == "ansi":
        return text
    print(text + "\n")
    return None
