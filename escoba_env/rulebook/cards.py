"""Card ids, names and card masks (docs/rules.md §1, §11).

A card id is ``4 * (value - 1) + suit`` with suit 0 oros, 1 copas, 2 espadas, 3 bastos, so the four
cards of one capture value form one 4-bit nibble of a 40-bit mask. The jokers of the jokers variant
(docs/rules.md §11) are ids 40 and 41 (bits 40 and 41 of a mask), named ``"*1"`` and ``"*2"``; they have
no suit and no fixed value. A set of cards is a Python ``int`` (public API) or a ``numpy.uint64``
(engine).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

NUM_CARDS = 40
"""Cards of the standard deck (the jokers variant adds ``Rules.jokers`` more: ``Rules.num_cards``)."""
JOKERS = (40, 41)
MAX_CARDS = 42
"""Largest deck (two jokers): every card id is below this."""
JOKER_NAMES = ("*1", "*2")
NUM_VALUES = 10
SUITS = ("o", "c", "e", "b")
SUIT_NAMES = ("oros", "copas", "espadas", "bastos")
FRENCH_SUITS = ("♦", "♥", "♠", "♣")
# Printed rank of each capture value 1..10 (sota, caballo, rey are printed 10, 11, 12).
RANK_NAMES = ("1", "2", "3", "4", "5", "6", "7", "S", "C", "R")
FRENCH_RANK_NAMES = ("A", "2", "3", "4", "5", "6", "7", "J", "Q", "K")

FULL_DECK = (1 << NUM_CARDS) - 1
OROS = sum(1 << (4 * v) for v in range(NUM_VALUES))  # bits 0, 4, ..., 36
VELO = 24  # the seven of oros
SEVENS = 0xF << (4 * 6)
JOKER_MASK = 0b11 << NUM_CARDS  # bits 40, 41
ALL_CARDS = (1 << MAX_CARDS) - 1


def is_joker(card: int) -> bool:
    """Return True if ``card`` is a joker id (40 or 41)."""
    return check_card(card) >= NUM_CARDS


def value_nibble(value: int) -> int:
    """Return the mask of the four cards of capture value ``value`` (1..10)."""
    return 0xF << (4 * (value - 1))


def card_value(card: int) -> int:
    """Return the capture value (1..10) of card id ``card``; a joker has none (ValueError)."""
    if check_card(card) >= NUM_CARDS:
        raise ValueError(f"card {card_name(card)} is a joker: it has no fixed value")
    return int(card) // 4 + 1


def card_suit(card: int) -> int:
    """Return the suit index (0 oros, 1 copas, 2 espadas, 3 bastos) of ``card``; jokers: ValueError."""
    if check_card(card) >= NUM_CARDS:
        raise ValueError(f"card {card_name(card)} is a joker: it has no suit")
    return int(card) % 4


def make_card(value: int, suit: int) -> int:
    """Return the id of the card of capture value ``value`` (1..10) and suit index ``suit``."""
    if not 1 <= value <= NUM_VALUES or not 0 <= suit < 4:
        raise ValueError(f"no card with value {value!r} and suit {suit!r}")
    return 4 * (value - 1) + suit


def card_name(card: int, french: bool = False) -> str:
    """Return the short name of ``card``: ``"7o"`` (Spanish), ``"7♦"`` (French), ``"*1"`` (a joker)."""
    if check_card(card) >= NUM_CARDS:
        return JOKER_NAMES[int(card) - NUM_CARDS]
    v, s = divmod(int(card), 4)
    if french:
        return FRENCH_RANK_NAMES[v] + FRENCH_SUITS[s]
    return RANK_NAMES[v] + SUITS[s]


_RANK_ALIASES = {
    **{str(v): v for v in range(1, 8)},
    "A": 1,
    "S": 8,
    "J": 8,
    "10": 8,
    "C": 9,
    "Q": 9,
    "11": 9,
    "R": 10,
    "K": 10,
    "12": 10,
}
_SUIT_ALIASES = {
    **{s: i for i, s in enumerate(SUITS)},
    **{s: i for i, s in enumerate(FRENCH_SUITS)},
    "♢": 0,
    "♡": 1,
    "♤": 2,
    "♧": 3,
}

_JOKER_ALIASES = {"*1": 40, "*2": 41, "joker1": 40, "joker2": 41}


def parse_card(text: str) -> int:
    """Return the id of a card named like ``"7o"``, ``"Rc"``, ``"7♦"``, ``"Q♥"`` or ``"*1"``/``"joker1"``."""
    if not isinstance(text, str):
        raise ValueError(f"a card name must be a string, got {text!r}")
    t = text.strip()
    if t.lower() in _JOKER_ALIASES:
        return _JOKER_ALIASES[t.lower()]
    if len(t) >= 2:
        rank, suit = t[:-1].upper(), t[-1].lower() if t[-1].isascii() else t[-1]
        if rank in _RANK_ALIASES and suit in _SUIT_ALIASES:
            return 4 * (_RANK_ALIASES[rank] - 1) + _SUIT_ALIASES[suit]
    raise ValueError(
        f"unknown card {text!r}: expected rank 1-7, S, C, R (or A, J, Q, K) followed by suit "
        "o, c, e, b (or ♦, ♥, ♠, ♣), e.g. '7o' or '7♦'; jokers are '*1' and '*2'"
    )


def parse_cards(text: str | Iterable[str]) -> list[int]:
    """Return the ids of cards given as a space-separated string or an iterable of names."""
    names = text.split() if isinstance(text, str) else list(text)
    return [parse_card(n) for n in names]


def mask_of(cards: Iterable[int]) -> int:
    """Return the card mask of the card ids in ``cards`` (duplicates are an error)."""
    m = 0
    for c in cards:
        bit = 1 << check_card(c)
        if m & bit:
            raise ValueError(f"card {card_name(int(c))} ({int(c)}) appears twice")
        m |= bit
    return m


def cards_of(mask: int) -> list[int]:
    """Return the card ids in ``mask``, ascending."""
    mask = check_mask(mask)
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def names_of(mask: int, french: bool = False) -> str:
    """Return the cards of ``mask`` as a space-separated string of short names."""
    return " ".join(card_name(c, french) for c in cards_of(mask))


def mask_value(mask: int) -> int:
    """Return the sum of the capture values of the cards in ``mask``; jokers (no fixed value) count 0."""
    return sum(c // 4 + 1 for c in cards_of(mask) if c < NUM_CARDS)


def mask_values(masks) -> np.ndarray:
    """Return the sum of the capture values of each uint64 card mask (batched ``mask_value``; int64)."""
    masks = np.asarray(masks, np.uint64)
    total = np.zeros(masks.shape, np.int64)
    for v in range(1, NUM_VALUES + 1):
        total += v * np.bitwise_count((masks >> np.uint64(4 * (v - 1))) & np.uint64(0xF)).astype(np.int64)
    return total


def check_mask(mask: int, num_cards: int = MAX_CARDS, what: str = "a card mask") -> int:
    """Return ``mask`` as an int; TypeError unless an int, ValueError unless bits 0..num_cards-1."""
    if isinstance(mask, (bool, np.bool_)) or not isinstance(mask, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(mask).__name__} {mask!r}")
    mask = int(mask)
    if mask < 0 or mask >> num_cards:
        raise ValueError(f"{mask:#x} is not a card mask of the {num_cards}-card deck "
                         f"(bits 0..{num_cards - 1})")
    return mask


def check_card(card: int) -> int:
    """Return ``card`` as an int card id in 0..41 (TypeError if not an int, ValueError if out of range)."""
    if isinstance(card, (bool, np.bool_)) or not isinstance(card, (int, np.integer)):
        raise TypeError(f"a card id must be an int in 0..41, got {type(card).__name__} {card!r}")
    if not 0 <= int(card) < MAX_CARDS:
        raise ValueError(f"card id {int(card)} is out of range 0..41 (40, 41 are the jokers)")
    return int(card)


# ---------------------------------------------------------------- the words of the front-ends
# One vocabulary for every front-end (the text face, the ANSI render, escoba-play, the web arena):
# a card's full name and the phrasing of a move. Spanish by default, French-suited with ``french``.

SPANISH_RANK_WORDS = ("as", "2", "3", "4", "5", "6", "7", "sota", "caballo", "rey")
FRENCH_RANK_WORDS = ("ace", "2", "3", "4", "5", "6", "7", "jack", "queen", "king")
FRENCH_SUIT_WORDS = ("diamonds", "hearts", "spades", "clubs")
JOKER_WORDS = ("joker 1", "joker 2")


def card_words(card: int, french: bool = False) -> str:
    """Return the full name of ``card``: ``"7 de oros"``, ``"sota de copas"`` (Spanish, the default),
    ``"7 of diamonds"`` (``french``) or ``"joker 1"``."""
    if check_card(card) >= NUM_CARDS:
        return JOKER_WORDS[int(card) - NUM_CARDS]
    v, s = divmod(int(card), 4)
    if french:
        return f"{FRENCH_RANK_WORDS[v]} of {FRENCH_SUIT_WORDS[s]}"
    return f"{SPANISH_RANK_WORDS[v]} de {SUIT_NAMES[s]}"


def cards_words(mask: int, french: bool = False) -> str:
    """Return the full names of the cards of ``mask`` joined by ``" + "`` (``"nothing"`` when empty)."""
    return " + ".join(card_words(c, french) for c in cards_of(mask)) or "nothing"


def move_words(card: int, taken: int, french: bool = False) -> str:
    """Return the one phrasing of a move: ``"7 de oros takes 3 de copas + 5 de bastos"``, or
    ``"7 de oros to the table"`` when it takes nothing (``taken`` is a card mask)."""
    if not check_mask(taken):
        return f"{card_words(card, french)} to the table"
    return f"{card_words(card, french)} takes {cards_words(taken, french)}"


# Ranks written in digits: 1-7, the printed 10, 11, 12 of the face cards, and 8, 9 (their values; no
# Spanish card is printed 8 or 9). "10" is the sota, as printed, never the rey's value.
_RANK_DIGITS = (("1",), ("2",), ("3",), ("4",), ("5",), ("6",), ("7",), ("8", "10"), ("9", "11"), ("12",))


def _word_names() -> dict[str, int]:
    """Return every full name (Spanish, French, the rank in digits) in lower case -> card id."""
    out = {w: NUM_CARDS + i for i, w in enumerate(JOKER_WORDS)}
    out.update({w.replace(" ", ""): i for w, i in list(out.items())})
    for c in range(NUM_CARDS):
        v, s = divmod(c, 4)
        ranks = {SPANISH_RANK_WORDS[v], FRENCH_RANK_WORDS[v], *_RANK_DIGITS[v]}
        for r in ranks:
            out[f"{r} de {SUIT_NAMES[s]}"] = c
            out[f"{r} of {FRENCH_SUIT_WORDS[s]}"] = c
    return out


WORD_NAMES = _word_names()
"""Every full card name this module writes or reads (lower case) -> card id: ``"7 de oros"``,
``"rey de copas"``, ``"12 de copas"`` (the printed rank), ``"king of hearts"``, ``"joker 1"``."""


def parse_card_words(text: str) -> int:
    """Return the id of a card given by its full name (any case, extra spaces) or its short name."""
    if not isinstance(text, str):
        raise ValueError(f"a card name must be a string, got {text!r}")
    key = " ".join(text.lower().split())
    if key in WORD_NAMES:
        return WORD_NAMES[key]
    try:
        return parse_card(text)
    except ValueError:
        raise ValueError(f"unknown card {text!r}: expected a name like '7 de oros', 'rey de copas', "
                         "'7 of diamonds' or a short name like '7o'") from None
