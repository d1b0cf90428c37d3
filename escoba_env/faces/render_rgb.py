"""Picture of one game as an RGB array (the ``"rgb_array"`` render mode), drawn with Pillow.

The frame shows the scores, the table, the viewer's hand face up, every other hand as face-down
card backs (only its size is public), each seat's capture pile (cards, oros, sevens, velo,
escobas) and the latest move. The viewer is the seat to act (the hot-seat view of the text
render) or the seat given; no other hand is ever drawn face up. Pillow is an optional
dependency: ``pip install escoba-env[render]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..executors.engine import EscobaEngine
from ..rulebook.cards import OROS, SEVENS, VELO, card_name, card_suit, cards_of, is_joker

WIDTH, HEIGHT = 720, 480
CARD_W, CARD_H = 44, 64
_FELT = (28, 94, 56)
_SUIT_COLOURS = ((196, 140, 0), (190, 30, 45), (40, 70, 160), (30, 120, 40))  # oros copas espadas bastos
_JOKER_COLOUR = (120, 40, 150)


def _pillow():
    try:
        from PIL import Image, ImageDraw, ImageFont  # the [render] extra
    except ImportError:
        raise ImportError("render_mode='rgb_array' needs Pillow: pip install escoba-env[render]") from None
    return Image, ImageDraw, ImageFont


def _card(draw, x: int, y: int, card: int, french: bool, font) -> None:
    draw.rounded_rectangle((x, y, x + CARD_W, y + CARD_H), 6, fill=(250, 248, 240), outline=(20, 20, 20))
    colour = _JOKER_COLOUR if is_joker(card) else _SUIT_COLOURS[card_suit(card)]
    centre = (x + CARD_W // 2, y + CARD_H // 2)
    draw.text(centre, card_name(card, french), fill=colour, font=font, anchor="mm")


def _back(draw, x: int, y: int) -> None:
    draw.rounded_rectangle((x, y, x + CARD_W, y + CARD_H), 6, fill=(150, 30, 30), outline=(240, 240, 240))


def _row(draw, x: int, y: int, cards: Sequence[int], french: bool, font) -> None:
    for i, c in enumerate(cards):
        _card(draw, x + i * (CARD_W + 6), y, c, french, font)


def render_rgb(engine: EscobaEngine, viewer: int | None = None, game: int = 0, french: bool = False,
               names: Sequence[str] | None = None, last: str | None = None) -> np.ndarray:
    """Return a (480, 720, 3) uint8 picture of ``game`` seen by ``viewer`` (default: the seat to act)."""
    Image, ImageDraw, ImageFont = _pillow()
    p = engine.num_players
    names = [f"player_{i}" for i in range(p)] if names is None else list(names)
    viewer = int(engine.to_act[game]) if viewer is None else int(viewer)
    img = Image.new("RGB", (WIDTH, HEIGHT), _FELT)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(16)
    small = ImageFont.load_default(13)
    white = (245, 245, 245)
    side = [f"team {s}" for s in range(2)] if engine.rules.partnerships else names
    score = "   ".join(f"{side[s]}: {int(engine.scores[game, s])}" for s in range(engine.rules.num_sides))
    stock = engine.rules.num_cards - int(engine.stock_pos[game])
    round_no = int(engine.round_index[game]) + (0 if engine.done[game] else 1)
    draw.text((12, 10), f"Round {round_no} · stock {stock} · target {engine.rules.target_score}"
              f"     Scores  {score}", fill=white, font=font)
    if last:
        draw.text((12, 34), f"Last: {last}", fill=(230, 230, 160), font=small)
    draw.text((12, 62), "Table", fill=white, font=font)
    _row(draw, 12, 84, cards_of(int(engine.table[game])), french, font)
    # Seat panels: capture piles and hand sizes; the viewer's hand face up at the bottom.
    y = 170
    for seat in range(p):
        pile, esc = int(engine.piles[game, seat]), int(engine.escobas[game, seat])
        text = (f"{names[seat]}{' (you)' if seat == viewer else ''}: captured {pile.bit_count()} cards, "
                f"{(pile & OROS).bit_count()} oros, {(pile & SEVENS).bit_count()} sevens"
                f"{', velo' if pile >> VELO & 1 else ''}, {esc} escoba{'s' if esc != 1 else ''}")
        draw.text((12, y), text, fill=white, font=small)
        if seat != viewer:
            for i in range(int(engine.hands[game, seat]).bit_count()):
                _back(draw, 520 + i * 20, y - 4)
        y += 56 if seat != viewer else 30
    if bool(engine.done[game]):
        w = int(engine.winner[game])
        result = "no winner" if w < 0 else f"{side[w]} wins"
        draw.text((12, HEIGHT - 40), f"Game over: {result}", fill=(255, 220, 120), font=font)
    else:
        title = f"Hand of {names[viewer]}"
        pending = int(engine.pending[game])
        if pending >= 0:
            taken = cards_of(int(engine.taken[game]))
            title += (f" · capturing with {card_name(pending, french)}, taken so far: "
                      f"{' '.join(card_name(c, french) for c in taken) or 'none'}")
        draw.text((12, HEIGHT - 100), title, fill=white, font=font)
        _row(draw, 12, HEIGHT - 76, cards_of(int(engine.hands[game, viewer])), french, font)
    return np.asarray(img, dtype=np.uint8)
