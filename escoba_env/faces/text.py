"""The text face: one seat's observation as text for a language model, and its answer protocol.

``messages(observation, rules)`` returns the chat messages of one decision: a system message with
the rules in brief for the configured ``Rules`` (variants included) and the answer protocol, and a
user message with the position: the own hand, the table, what each side has captured that is
public (cards, oros, sevens, the velo, escobas), scores and target, the cards each player has
played this round, and (``listed=True``, the default) every legal *full move* numbered from 1
("7 de oros takes 3 de copas + 5 de bastos"). With ``listed=False`` the moves are not listed: the
model works them out from the rules and writes its move out. ``reasoning=True`` lets the model
reason before its final line. ``prompt`` is the same text as one string.

Everything is read from the observation vector alone (``escoba_env.executors.observation``), so the text
cannot hold what the observation does not: no other hand, no stock order. The observation keeps
the cards each player has played this round but not their order, so the text lists them as sets.

A full move is a ``Move``: the card played and the table cards it takes. The environments' actions
are finer (play the card, then name table cards one at a time when it has several options):
``move_action`` returns the action that carries a chosen move out at the current decision, and
during a capture choice ``legal_moves`` lists the options of the pending card still open.

The answer protocol (``ANSWER_FORMS``, docs/llm.md): ``read_answer(answer, moves)`` accepts a final
line ``Answer: N`` or ``Answer: <the move written out>`` after any reasoning, a bare number or a bare
move, and nothing picked out of prose; it returns the ``Move`` and the form it was written in, or
raises ``IllegalAnswer`` with a reason that can be sent back to the model (``reask``). A decision
whose answers all fail is settled by the failure policy (``ON_FAIL``): ``forfeit`` plays
``forfeit_move`` (the lowest legal discard) and counts a forfeit; ``random`` plays a seeded random
legal move (``random_move``). The ``llm`` agent and the TextArena environment share all of it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..executors.game import Game
from ..executors.observation import NUM_PLANES, PLANE, obs_size, scalar_offsets
from ..rulebook.capture import capture_options
from ..rulebook.cards import (
    JOKER_MASK,
    OROS,
    SEVENS,
    VELO,
    WORD_NAMES,
    card_words,
    cards_of,
    cards_words,
    move_words,
    parse_card,
)
from ..rulebook.rules import Rules
from .cli import add_rules_arguments, rules_from_args


class IllegalAnswer(ValueError):
    """An answer that names no legal move; its message says why (one line, for the model)."""


@dataclass(frozen=True)
class Move:
    """A full move: play ``card`` and take the table cards of mask ``taken`` (0: to the table)."""

    card: int
    taken: int

    def words(self, french: bool = False) -> str:
        """Return the move in words: ``"7 de oros takes 3 de copas + 5 de bastos"``."""
        return move_words(self.card, self.taken, french)


@dataclass(frozen=True)
class View:
    """One observation decoded: card masks and counts, seats and sides relative to the observer."""

    hand: int
    table: int
    piles: tuple[int, ...]
    """Capture pile of each relative side (partners' piles pooled)."""
    played: tuple[int, ...]
    """Cards played from hand this round by each relative seat."""
    pending: int
    """The card whose capture is being chosen (-1: a play decision)."""
    taken: int
    """Table cards named so far during a capture choice."""
    escobas: tuple[int, ...]
    scores: tuple[int, ...]
    hand_sizes: tuple[int, ...]
    stock: int
    dealer: int
    last_capturer: int
    """Relative seat of the last capture this round (-1: nobody yet)."""


def _mask(bits: np.ndarray) -> int:
    """Return the card mask of a 0/1 plane."""
    return sum(1 << int(i) for i in np.flatnonzero(bits > 0.5))


def _one_hot(block: np.ndarray) -> int:
    """Return the index of the 1 of a one-hot block (-1: none)."""
    return int(block.argmax()) if block.max() > 0.5 else -1


def read_observation(observation: np.ndarray, rules: Rules) -> View:
    """Return the decoded observation of one seat (a vector of ``obs_size(rules)``)."""
    obs = np.asarray(observation, np.float32).reshape(-1)
    if obs.shape[0] != obs_size(rules):
        raise ValueError(f"an observation for these rules has {obs_size(rules)} entries, got {obs.shape[0]}")
    w, p, sides = rules.num_cards, rules.num_players, rules.num_sides
    planes = [_mask(obs[k * w:(k + 1) * w]) for k in range(NUM_PLANES)]
    s = scalar_offsets(rules)
    seat_piles = [planes[PLANE["piles"] + r] for r in range(p)]
    piles = tuple(seat_piles[j] | seat_piles[j + 2] for j in range(2)) if rules.partnerships \
        else tuple(seat_piles)
    sizes = tuple(int(round(float(x) * 3)) for x in obs[s["hand_sizes"]: s["hand_sizes"] + p])
    pending = planes[PLANE["pending"]]
    return View(
        hand=planes[PLANE["hand"]], table=planes[PLANE["table"]], piles=piles,
        played=tuple(planes[PLANE["played"] + r] for r in range(p)),
        pending=pending.bit_length() - 1 if obs[s["capture_phase"]] > 0.5 else -1,
        taken=planes[PLANE["taken"]],
        escobas=tuple(int(round(float(x))) for x in obs[s["escobas"]: s["escobas"] + sides]),
        scores=tuple(int(round(float(x) * rules.target_score))
                     for x in obs[s["scores"]: s["scores"] + sides]),
        hand_sizes=sizes, stock=planes[PLANE["unseen"]].bit_count() - sum(sizes[1:]),
        dealer=_one_hot(obs[s["dealer"]: s["dealer"] + p]),
        last_capturer=_one_hot(obs[s["last_capturer"]: s["last_capturer"] + p]))


def legal_moves(observation: np.ndarray, rules: Rules) -> list[Move]:
    """Return every legal full move of the seat to act, in hand order then option order.

    A play decision: each hand card with each of its capture options (or to the table when it has
    none). A capture choice: the options of the pending card that hold the cards named so far.
    """
    v = read_observation(observation, rules)
    if v.pending >= 0:
        options = capture_options(v.pending, v.table, rules)
        return [Move(v.pending, o) for o in options if o & v.taken == v.taken]
    if not v.hand:
        raise ValueError("the observer has no card to play (is it the seat to act?)")
    return [Move(c, o) for c in cards_of(v.hand) for o in (capture_options(c, v.table, rules) or [0])]


def move_action(move: Move, observation: np.ndarray, action_mask: np.ndarray, rules: Rules) -> int:
    """Return the action that carries ``move`` out at this decision (its card, or during a capture
    choice the lowest still-legal table card of the move; with jokers the pending card's own id, the
    "stop" action, when the move is exactly the cards named so far)."""
    legal = _mask(np.asarray(action_mask))
    v = read_observation(observation, rules)
    if v.pending < 0:
        if not legal >> move.card & 1:
            raise ValueError(f"{move.words()} is not legal here")
        return move.card
    left = move.taken & legal & ~v.taken
    if left:
        return (left & -left).bit_length() - 1
    if legal >> move.card & 1:
        return move.card
    raise ValueError(f"{move.words()} is not legal here")


# ------------------------------------------------------------------------------------- the text

def seat_names(rules: Rules) -> list[str]:
    """Return the name of each relative seat in the text (``"you"`` first, then in playing order)."""
    if rules.num_players == 2:
        return ["you", "your opponent"]
    if rules.partnerships:
        return ["you", "the opponent after you", "your partner", "the opponent before you"]
    if rules.num_players == 3:
        return ["you", "the player after you", "the player before you"]
    return ["you", "the player after you", "the player opposite you", "the player before you"]


def side_names(rules: Rules) -> list[str]:
    """Return the name of each relative side (``"you"`` / ``"your team"`` first)."""
    return ["your team", "the other team"] if rules.partnerships else seat_names(rules)


_SEVENS_TEXT = {
    "most_sevens": "most sevens (a tie: nobody)",
    "most_sevens_tiebreak": "most sevens (a tie: most sixes, then aces, fives, fours, threes, twos)",
    "primera": "the best primera: over the four suits, the sum of each suit's best card (7 = 21, "
               "6 = 18, as = 16, 5 = 15, 4 = 14, 3 = 13, 2 = 12, face cards 10); a side missing a suit "
               "has none",
}


def rules_brief(rules: Rules, french: bool = False) -> str:
    """Return the rules of ``rules`` in brief, as the system message gives them."""
    deck = ("a French-suited 40-card deck (diamonds, hearts, spades, clubs; ace to 7, jack, queen, king)"
            if french else "the Spanish 40-card deck (oros, copas, espadas, bastos; as to 7, sota, caballo, "
            "rey)")
    faces = "jack 8, queen 9, king 10" if french else "sota 8, caballo 9, rey 10"
    ace = "ace" if french else "as"
    coins = "diamonds" if french else "oros"
    players = {2: "2 players", 3: "3 players", 4: "4 players"}[rules.num_players]
    if rules.partnerships:
        players += " in two teams of 2 (partners sit opposite and pool their captures)"
    lines = [
        f"You are playing Escoba, the card game of fifteens, with {players} and {deck}.",
        f"Capture values: {ace} 1, 2 to 7 their number, {faces}.",
        "On your turn you play one card from your hand. If it and some table cards add up to exactly "
        "15, you must take those table cards (you choose which set when several make 15); a card "
        "that makes no 15 is laid on the table. Taking every card on the table is an escoba.",
    ]
    if rules.prefer_single:
        lines.append("House rule: a card that can take a single table card may only take single cards.")
    if rules.jokers:
        lines.append(f"The deck has {rules.jokers} wild joker(s): a joker takes any value from 1 to 10 that "
                     "completes a fifteen, when played and when on the table.")
    deal = ("the table is turned up one card at a time and the dealer takes each fifteen as it forms"
            if rules.mesa_deal else
            "four cards go face up on the table" + (" (if they make 15, or two 15s, the dealer takes "
                                                     "them as escobas)" if rules.initial_fifteen else ""))
    lines.append(f"Each player gets 3 cards and {deal}; when every hand is empty, 3 more each until "
                 "the stock runs out. At the end of the round the table goes to whoever captured last "
                 "(not an escoba)" + (", and emptying the table with the round's last card is an escoba."
                                      if rules.last_play_escoba else "."))
    bonus = (f" All ten {coins}, or all four sevens, score 2 instead of 1." if rules.bonus_sweeps else "")
    velo = f"the 7 of {coins}" if french else "the 7 de oros (the velo)"
    lines.append(f"Each round scores 1 point for most cards, 1 for most {coins}, 1 for {velo}, 1 for "
                 f"{_SEVENS_TEXT[rules.sevens_rule]}, and 1 per escoba.{bonus} The first side to reach "
                 f"{rules.target_score} points at the end of a round wins.")
    return "\n".join(lines)


ANSWER_PROTOCOL = "escoba-answer/1"
"""The version of the prompt's answer protocol and its parser (recorded with a model's results)."""
MOVES_MODES = ("listed", "hidden")
"""``listed``: the prompt numbers every legal move; ``hidden``: rules and position only, moves written out."""
ON_FAIL = ("forfeit", "random")
"""What a decision whose answers all fail plays: the lowest legal discard (a forfeit) or a random move."""
_EXAMPLE = {False: ("7 de oros takes 3 de copas + 5 de bastos", "7 de oros to the table"),
            True: ("7 of diamonds takes 3 of hearts + 5 of clubs", "7 of diamonds to the table")}


def answer_format(listed: bool = True, reasoning: bool = False, french: bool = False) -> str:
    """Return the answer protocol as the system message states it, for the prompt's harness settings."""
    take, table = _EXAMPLE[french]
    if listed:
        what = ("`Answer: N`, where N is the number of the move you choose from your legal moves "
                "(for example `Answer: 2`)")
    else:
        what = ("`Answer: ` and the move you choose written out: the card you play, then `takes` and "
                "the table cards it takes joined by ` + `, or the card then `to the table` (for "
                f"example `Answer: {take}` or `Answer: {table}`). Your legal moves are not listed: "
                "work them out from the rules")
    if reasoning:
        return (f"You may think it through first, as briefly or as long as you like. Then end your reply "
                f"with a final line {what}. Only that final line is read.")
    return f"Reply with one line only: {what}."


def reask(reason: str, n: int, listed: bool = True) -> str:
    """Return the message that sends an answer back: why it names no legal move, and the format again."""
    how = (f"`Answer: N` with N from 1 to {n}" if listed else "`Answer: ` and the move written out")
    return f"That is not a legal move: {reason}. End your reply with a final line {how}."


def forfeit_move(moves: Sequence[Move]) -> Move:
    """Return the move a forfeited decision plays: the lowest card laid on the table (the lowest legal
    discard), or when every card must capture, the first listed move (the lowest card's first option)."""
    discards = [m for m in moves if not m.taken]
    return min(discards or moves, key=lambda m: m.card)  # card ids ascend with the value; min keeps the first


def random_move(moves: Sequence[Move], draw: float) -> Move:
    """Return the legal move that a uniform ``draw`` in [0, 1) picks (the ``random`` failure policy)."""
    return moves[min(int(draw * len(moves)), len(moves) - 1)]


def _captures(mask: int, escobas: int, french: bool) -> str:
    """Return what a capture pile shows publicly: cards, oros, sevens, the velo, escobas."""
    coins = "diamonds" if french else "oros"
    parts = [f"{(mask & ~JOKER_MASK).bit_count() + (mask & JOKER_MASK).bit_count()} cards",
             f"{(mask & OROS).bit_count()} {coins}", f"{(mask & SEVENS).bit_count()} sevens"]
    if mask >> VELO & 1:
        parts.append("the velo" if not french else "the 7 of diamonds")
    parts.append(f"{escobas} escoba" + ("" if escobas == 1 else "s"))
    return ", ".join(parts)


def describe(observation: np.ndarray, rules: Rules, french: bool = False,
             moves: Sequence[Move] | None = None, listed: bool = True) -> str:
    """Return the position of the seat to act, with its legal full moves numbered from 1 (``listed``)."""
    v = read_observation(observation, rules)
    moves = legal_moves(observation, rules) if moves is None else moves
    seats, sides = seat_names(rules), side_names(rules)
    score = ", ".join(f"{sides[j]} {v.scores[j]}" for j in range(rules.num_sides))
    dealer = seats[v.dealer] if v.dealer >= 0 else "unknown"
    lines = [f"Scores: {score} (target {rules.target_score}).",
             f"Dealer: {dealer}. Cards left in the stock: {v.stock}."]
    lines.append("Captured this round: " + "; ".join(
        f"{sides[j]}: {_captures(v.piles[j], v.escobas[j], french)}" for j in range(rules.num_sides)) + ".")
    lines.append("Played from hand this round: " + "; ".join(
        f"{seats[r]}: {cards_words(v.played[r], french)}" for r in range(rules.num_players)) + ".")
    last = seats[v.last_capturer] if v.last_capturer >= 0 else "nobody yet"
    lines.append(f"Last capture this round: {last}.")
    others = ", ".join(f"{seats[r]} {v.hand_sizes[r]}" for r in range(1, rules.num_players))
    lines.append(f"Cards in hand: {others}.")
    lines.append("")
    lines.append(f"Table: {cards_words(v.table, french)}.")
    if v.pending >= 0:
        lines.append(f"You played {card_words(v.pending, french)} and must now choose what it takes"
                     + (f" (named so far: {cards_words(v.taken, french)})" if v.taken else "") + ".")
    lines.append(f"Your hand: {cards_words(v.hand, french)}.")
    if listed:
        lines.append("")
        lines.append("Your legal moves:")
        lines.extend(f"{i}. {m.words(french)}" for i, m in enumerate(moves, 1))
    return "\n".join(lines)


def messages(observation: np.ndarray, rules: Rules, french: bool = False, moves: Sequence[Move] | None = None,
             listed: bool = True, reasoning: bool = False) -> list[dict[str, str]]:
    """Return the chat messages of one decision: the rules and answer protocol, then the position."""
    return [{"role": "system", "content": rules_brief(rules, french) + "\n\n"
             + answer_format(listed, reasoning, french)},
            {"role": "user", "content": describe(observation, rules, french, moves, listed)}]


def prompt(observation: np.ndarray, rules: Rules, french: bool = False, listed: bool = True,
           reasoning: bool = False) -> str:
    """Return the whole text of one decision (the system message, a blank line, the position)."""
    return "\n\n".join(m["content"] for m in messages(observation, rules, french, None, listed, reasoning))


# ---------------------------------------------------------------------------------- the parser

_CARD_PATTERN = re.compile(
    r"(?<!\w)(?i:" + "|".join(sorted((re.escape(k) for k in WORD_NAMES), key=len, reverse=True)) + r")(?!\w)"
    r"|(?<![\w*])(?:[1-7]|1[0-2]|[SCRAJQK])[oceb♦♥♠♣](?!\w)|\*[12]")
"""Full card names (any case) or short names (``7o``, ``Rc``, ``K♥``: face letters in upper case, so
that words like "so" are not read as cards)."""
_FINAL = re.compile(r"^(?:final\s+)?answer\s*:\s*(.*)$", re.I)
_NUMBER = re.compile(r"^#?\s*(\d{1,9})$")
_LISTED_LINE = re.compile(r"^(\d{1,9})[.)]\s+(.+)$")
_CONNECTORS = re.compile(r"^(?:\s|[+,&]|\b(?:takes?|captures?|and|to|on|the|table)\b)*$", re.I)
"""What a move written out may hold besides card names."""
ANSWER_FORMS = ("answer_number", "answer_move", "number", "move")
"""The forms ``read_answer`` accepts, as its second result names them (the table in docs/llm.md)."""


def _cards_in(text: str) -> list[int]:
    """Return the cards named in ``text``, in order: full names or short names."""
    out = []
    for m in _CARD_PATTERN.finditer(text):
        name = m.group(0)
        card = WORD_NAMES.get(name.lower())
        out.append(card if card is not None else parse_card(name))
    return out


def _written_move(text: str, moves: Sequence[Move], french: bool, listed: bool = True) -> Move:
    """Return the legal move ``text`` writes out (card names and connectors only); IllegalAnswer else."""
    n = len(moves)
    cards = _cards_in(text)
    if not cards or not _CONNECTORS.match(_CARD_PATTERN.sub(" ", text)):
        raise IllegalAnswer("no move found in the answer (reasoning, if any, goes before a final line "
                            "'Answer: ...')")
    played, taken = cards[0], 0
    for c in cards[1:]:
        taken |= 1 << c
    for m in moves:
        if m.card == played and m.taken == taken:
            return m
    with_card = [i for i, m in enumerate(moves, 1) if m.card == played]
    said = move_words(played, taken, french) if played not in cards[1:] else card_words(played, french)
    if not with_card:
        raise IllegalAnswer(f"{card_words(played, french)} cannot be played now" + (
            f": choose one number from 1 to {n}" if listed else ": it is not in your hand"))
    if not listed:
        raise IllegalAnswer(f"'{said}' is not a legal move: {card_words(played, french)} takes a set of "
                            "table cards that adds up to 15 with it, and must take one when it can")
    numbers = ", ".join(str(i) for i in with_card)
    raise IllegalAnswer(f"'{said}' is not a legal move; the legal moves with {card_words(played, french)} "
                        f"are number(s) {numbers}")


def _payload(text: str, moves: Sequence[Move], french: bool, listed: bool) -> tuple[Move, bool]:
    """Return the move an answer's payload names and whether it was a number."""
    n = len(moves)
    text = text.strip().strip(".!\"'").strip()
    if text.startswith(("[", "(")) and text.endswith(("]", ")")):
        text = text[1:-1].strip()
    number, line = _NUMBER.match(text), _LISTED_LINE.match(text)
    if (number or line) and not listed:
        raise IllegalAnswer("the moves are not numbered: write the move out, e.g. 'Answer: "
                            f"{_EXAMPLE[french][0]}'")
    k = int((number or line).group(1)) if number or line else 0
    if (number or line) and not 1 <= k <= n:
        raise IllegalAnswer(f"{k} is not the number of a move: choose one from 1 to {n}")
    if number:
        return moves[k - 1], True
    if line:  # the listed line copied whole: "4. 6 de oros takes as de bastos + sota de copas"
        try:
            same = _written_move(line.group(2), moves, french) == moves[k - 1]
        except IllegalAnswer:
            same = False
        if not same:
            raise IllegalAnswer(f"move {k} is {moves[k - 1].words(french)}, not '{line.group(2)}'")
        return moves[k - 1], True
    return _written_move(text, moves, french, listed), False


def read_answer(answer: str, moves: Sequence[Move], french: bool = False,
                listed: bool = True) -> tuple[Move, str]:
    """Return the move ``answer`` names and its form (``ANSWER_FORMS``); raise ``IllegalAnswer`` with
    the reason when it names none or an illegal one (the answer protocol: module docstring)."""
    if not isinstance(answer, str):
        raise IllegalAnswer("the answer is not text")
    text = answer.strip()
    if text.startswith("[") and text.endswith("]"):  # TextArena's wrapper brackets an answer
        text = text[1:-1]
    lines = [ln.replace("**", "").replace("`", "").strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        raise IllegalAnswer("the answer is empty")
    final = _FINAL.match(lines[-1])
    if final is None and len(lines) > 1:
        raise IllegalAnswer("the reply does not end with a final line 'Answer: ...'")
    move, number = _payload(final.group(1) if final else lines[0], moves, french, listed)
    return move, ("answer_" if final else "") + ("number" if number else "move")


def parse_answer(answer: str, moves: Sequence[Move], french: bool = False, listed: bool = True) -> Move:
    """Return the move that ``answer`` names (``read_answer`` without the form)."""
    return read_answer(answer, moves, french, listed)[0]


# ------------------------------------------------------------------------------- the command

def position_after(seed: int, moves: int, rules: Rules | None = None) -> tuple[np.ndarray, Rules]:
    """Return the observation of the seat to act after ``moves`` full moves of a game dealt from
    ``seed``, each the last legal move listed (a fixed line of play, for examples), and the rules."""
    rules = Rules() if rules is None else rules
    g = Game(rules)
    g.reset(seed)
    for _ in range(moves):
        seat = g.to_act
        move = legal_moves(g.observe(seat), rules)[-1]
        g.step(move_action(move, g.observe(seat), g.action_mask(seat), rules))
        while g.pending >= 0:
            g.step(move_action(move, g.observe(seat), g.action_mask(seat), rules))
    return g.observe(g.to_act), rules


def main(argv: list[str] | None = None) -> int:
    """Print the prompt of a real position: ``python -m escoba_env.faces.text --seed 7 --moves 5``."""
    p = argparse.ArgumentParser(prog="python -m escoba_env.faces.text",
                                description="Print the text face's prompt (system message, a blank line, "
                                            "the position) of the seat to act in a dealt game.")
    p.add_argument("--seed", type=int, default=0, help="seed of the deal")
    p.add_argument("--moves", type=int, default=0, help="full moves played first (each the last one listed)")
    p.add_argument("--french", action="store_true", help="French-suited card names")
    p.add_argument("--moves-hidden", action="store_true", help="the prompt of moves=hidden (no moves listed)")
    p.add_argument("--reasoning", action="store_true", help="the prompt of reasoning=on")
    add_rules_arguments(p)
    args = p.parse_args(argv)
    obs, rules = position_after(args.seed, args.moves, rules_from_args(args))
    print(prompt(obs, rules, args.french, not args.moves_hidden, args.reasoning))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
