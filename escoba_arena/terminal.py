"""Play Escoba in a terminal against bots: ``python -m escoba_arena.terminal`` (or ``escoba-play``).

You sit at seat 0 (``--seat``); every other seat is a bot built from an agent spec of the
``agents`` registry (``--opponent expert``, ``--opponent random greedy`` for one per seat, ...).
The default opponent is the table's entry of ``agents.nets.shipped.DEFAULT_OPPONENTS`` (the web arena's
too): ``neural-2p`` at 2 players, ``strong-2v2`` (4 players with partnerships) and ``strong-3p`` (3
players), when it plays the chosen rules; otherwise ``expert`` (the message at the start says which
one you face).

On your turn the screen shows the score, the table (with its sum), every side's capture pile
summary, how many cards each hand holds and your hand, numbered. Type the card's number or its
name (``7o`` or ``7♦``, ``Rc`` or ``K♥``). When the card can capture in more than one way the
options are listed by number and you pick one; the program then gives the engine the play and
take actions of that move. ``?`` shows help, ``q`` or end-of-file (Ctrl-D) quits.

Bad input never ends the game: it gets a one-line message and the prompt again. A bad command
line gets one line on stderr and exit status 2; output closed early (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from agents.base import Agent
from agents.external.llm import LLMError
from agents.nets.shipped import DEFAULT_OPPONENTS, FALLBACK_OPPONENT, table_name
from agents.programs import missing_extra
from agents.spec.registry import Spec, help_text, make_agent, read_specs
from agents.spec.shipped_agents import default_opponent
from escoba_env.executors.game import Game, GameStep, capture_action
from escoba_env.faces.cli import (
    OneLineParser,
    add_rules_arguments,
    rules_from_args,
    seconds,
    seed_arg,
)
from escoba_env.faces.cli import non_negative_int as _non_negative
from escoba_env.faces.cli import positive_int as _positive
from escoba_env.rulebook.capture import capture_options
from escoba_env.rulebook.cards import (
    JOKER_MASK,
    NUM_CARDS,
    OROS,
    SEVENS,
    VELO,
    card_name,
    cards_of,
    mask_value,
    move_words,
    parse_card,
)
from escoba_env.rulebook.rules import Rules

def prog() -> str:
    """Return the name the program's usage and errors go by: the console script's, or the module's."""
    return "escoba-play" if os.path.basename(sys.argv[0]) == "escoba-play" else "python -m escoba_arena.terminal"

# ANSI colours per suit (oros gold, copas red, espadas blue, bastos green); jokers magenta.
_SUIT_COLOUR = ("33", "31", "34", "32")
_JOKER_COLOUR = "35;1"
_CATEGORY_LABELS = (("cards", "most cards"), ("oros", "most oros"), ("velo", "velo (7 of oros)"),
                    ("sevens", "sevens"), ("escobas", "escobas"))

HELP = """\
How to play: on your turn type the number of a card in your hand (1, 2, 3) or its name.
  Names: rank 1-7, S (sota, 8), C (caballo, 9), R (rey, 10), then suit o (oros), c (copas),
  e (espadas), b (bastos): 7o is the velo, Rc the rey de copas.
  French names (with --french): A = 1, J = sota (8), Q = caballo (9),
  K = rey (10); ♦ = oros, ♥ = copas, ♠ = espadas, ♣ = bastos. So 7♦ is the velo, K♥ = Rc.
  A card that sums to 15 with table cards must capture; if it can capture in several ways you
  choose the option by number (b goes back to the card choice). A card that cannot capture is
  laid on the table. Capturing every table card is an escoba (1 point).
  With --jokers, the jokers *1 and *2 are wild: worth whatever value 1-10 completes 15, in your
  hand or on the table (type *1 or joker1). With --mesa-deal the dealer takes fifteens as the
  table is turned up.
Commands: ? help · q quit (Ctrl-D quits too)."""


class Quit(Exception):
    """The player asked to stop (``q`` or end of input)."""


def make_bot(spec: str | Spec, rules: Rules, seed: int) -> Agent:
    """Return the agent that ``spec`` names for ``rules``, built by ``agents.spec.registry``."""
    return make_agent(spec, rules=rules, seed=seed)


# ---------------------------------------------------------------------- display


class Style:
    """Card names and ANSI colour for one terminal."""

    def __init__(self, colour: bool, french: bool = False):
        self.colour = colour
        self.french = french

    def paint(self, text: str, code: str) -> str:
        """Return ``text`` wrapped in the ANSI ``code`` (unchanged without colour)."""
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def bold(self, text: str) -> str:
        """Return ``text`` in bold (when colour is on)."""
        return self.paint(text, "1")

    def dim(self, text: str) -> str:
        """Return ``text`` dimmed (when colour is on)."""
        return self.paint(text, "2")

    def card(self, c: int) -> str:
        """Return the name of card ``c`` in its suit colour (the velo in bold)."""
        name = card_name(c, self.french)
        if c >= NUM_CARDS:
            return self.paint(name, _JOKER_COLOUR)
        code = _SUIT_COLOUR[c % 4] + (";1" if c == VELO else "")
        return self.paint(name, code)

    def cards(self, mask: int) -> str:
        """Return the cards of ``mask`` separated by spaces, or a dash for none."""
        return " ".join(self.card(c) for c in cards_of(int(mask))) if int(mask) else self.dim("-")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


class TerminalGame:
    """One game between a human at ``human`` and ``bots`` (seat -> agent), over text streams."""

    def __init__(self, rules: Rules, bots: dict[int, Any], human: int, labels: dict[int, str],
                 style: Style, inp: TextIO, out: TextIO, seed: int, max_rounds: int | None = None,
                 delay: float = 0.0):
        self.rules = rules
        self.bots = bots
        self.human = human
        self.style = style
        self.inp = inp
        self.out = out
        self.seed = seed
        self.delay = delay
        self.game = Game(rules, max_rounds=max_rounds)
        p = rules.num_players
        self.names = [("You" if s == human else labels[s]) for s in range(p)]
        if rules.partnerships:
            mine = rules.side_of(human)
            self.side_names = [
                ("Your team" if s == mine else "Their team")
                + " (" + " + ".join(self.names[q] for q in range(p) if rules.side_of(q) == s) + ")"
                for s in range(2)]
        else:
            self.side_names = list(self.names)

    # ------------------------------------------------------------------ i/o

    def say(self, text: str = "") -> None:
        """Write a line of output."""
        self.out.write(text + "\n")
        self.out.flush()

    def ask(self, prompt: str) -> str:
        """Return the next input line (stripped); raise Quit at end of input or on ``q``."""
        self.out.write(prompt)
        self.out.flush()
        line = self.inp.readline()
        if not line:
            self.say()
            raise Quit
        text = line.strip()
        if text.lower() in ("q", "quit", "exit"):
            raise Quit
        return text

    # ------------------------------------------------------------------ game loop

    def run(self) -> int:
        """Play the game to its end (or until the player quits); return the exit status 0."""
        game = self.game
        game.reset(self.seed)
        self.say(self.style.bold("Escoba") + f" · {self._rules_line()} · seed {self.seed}")
        self._announce_round()
        try:
            while not game.done:
                seat = game.to_act
                move = self._human_move() if seat == self.human else self._bot_move(seat)
                self._execute(seat, *move)
        except Quit:
            self.say("Game abandoned. Bye.")
            return 0
        self._game_over()
        return 0

    def _rules_line(self) -> str:
        r = self.rules
        parts = [f"{r.num_players} players" + (" in 2 teams" if r.partnerships else ""),
                 f"to {r.target_score}", f"sevens: {r.sevens_rule.replace('_', ' ')}"]
        defaults = Rules()
        for name in ("bonus_sweeps", "prefer_single", "last_play_escoba", "initial_fifteen"):
            if getattr(r, name) != getattr(defaults, name):
                parts.append(("" if getattr(r, name) else "no ") + name.replace("_", " "))
        if r.jokers:
            parts.append(_plural(r.jokers, "joker"))
        if r.mesa_deal:
            parts.append("escoba de mesa")
        return ", ".join(parts)

    def _announce_round(self) -> None:
        """Print who deals, and the dealer's initial fifteen if there was one."""
        game, st = self.game, self.style
        dealer = game.dealer
        self.say()
        self.say(st.bold(f"── Round {game.round_index + 1} ──") + f" {self.names[dealer]} "
                 + ("deal." if dealer == self.human else "deals."))
        pile = game.piles[dealer]
        if pile:
            n = game.escobas[dealer]
            takes = "take" if dealer == self.human else "takes"
            if self.rules.mesa_deal:
                # Escoba de mesa: the dealer took each fifteen as the table was turned up.
                self.say(f"Turning up the table, {self.names[dealer]} {takes} {st.cards(pile)}"
                         + (f" ({_plural(n, 'escoba')})." if n else "."))
            else:
                self.say(f"The table adds up to {15 * n}: {self.names[dealer]} {takes} {st.cards(pile)} "
                         f"({_plural(n, 'escoba')}).")

    def show(self) -> None:
        """Print the scores, table, capture piles, hand sizes and the human's numbered hand."""
        game, st = self.game, self.style
        scores = " · ".join(f"{self.side_names[s]} {v}" for s, v in enumerate(game.scores))
        stock = self.rules.num_cards - game.stock_pos
        table = game.table
        self.say()
        self.say(f"Score:  {scores}  (target {self.rules.target_score}) · stock {stock}")
        jokers = (table & JOKER_MASK).bit_count()
        tsum = (f" (sum {mask_value(table)}" + (f" + {_plural(jokers, 'joker')}" if jokers else "") + ")"
                if table else "")
        self.say(f"Table:  {st.cards(table)}{tsum}")
        for s in range(self.rules.num_sides):
            self.say(f"  {self.side_names[s]} captured: {self._pile_summary(s)}")
        others = [f"{self.names[q]} {game.hands[q].bit_count()}"
                  for q in range(self.rules.num_players) if q != self.human]
        self.say(f"  cards in hand: {', '.join(others)}")
        hand = cards_of(game.hands[self.human])
        self.say("Your hand: " + "  ".join(f"{i}) {st.card(c)}" for i, c in enumerate(hand, 1)))

    def _side_mask(self, piles: list[int], side: int) -> int:
        m = 0
        for q in range(self.rules.num_players):
            if self.rules.side_of(q) == side:
                m |= int(piles[q])
        return m

    def _pile_summary(self, side: int) -> str:
        game = self.game
        pile = self._side_mask(game.piles, side)
        esc = sum(game.escobas[q] for q in range(self.rules.num_players)
                  if self.rules.side_of(q) == side)
        parts = [_plural(pile.bit_count(), "card"), f"{(pile & OROS).bit_count()} oros",
                 _plural((pile & SEVENS).bit_count(), "seven")]
        if pile >> VELO & 1:
            parts.append(self.style.card(VELO) + " velo")
        if pile & JOKER_MASK:
            parts.append(_plural((pile & JOKER_MASK).bit_count(), "joker"))
        if esc:
            parts.append(self.style.bold(_plural(esc, "escoba")))
        return ", ".join(parts)

    # ------------------------------------------------------------------ moves

    def moves(self) -> dict[int, list[int]]:
        """Return the legal moves of the seat to act: card -> its capture options ([0] = discard)."""
        table = self.game.table
        out: dict[int, list[int]] = {}
        for c in cards_of(self.game.legal):
            out[c] = capture_options(c, table, self.rules) or [0]
        return out

    def _human_move(self) -> tuple[int, int]:
        """Return the (card, capture mask) the human chooses, asking until the input is valid."""
        st = self.style
        self.show()
        moves = self.moves()
        hand = cards_of(self.game.hands[self.human])
        while True:
            nums = "1" if len(hand) == 1 else f"1-{len(hand)}"
            text = self.ask(f"Your move [{nums} or a card name, ? help, q quit]: ")
            if text in ("?", "h", "help"):
                self.say(HELP)
                continue
            if not text:
                continue
            card = self._parse_hand_choice(text, hand)
            if card is None:
                continue
            options = moves[card]
            if len(options) == 1:
                return card, options[0]
            self.say(f"{st.card(card)} can capture in {len(options)} ways:")
            for i, o in enumerate(options, 1):
                self.say(f"  {i}) {st.cards(o)}" + (f"  {st.bold('escoba!')}"
                                                   if o == self.game.table else ""))
            choice = self._ask_option(len(options))
            if choice is not None:
                return card, options[choice]

    def _parse_hand_choice(self, text: str, hand: list[int]) -> int | None:
        """Return the hand card that ``text`` names (a number or a card name), or None after a message."""
        if text.isascii() and text.isdigit():
            k = int(text) if len(text) <= 3 else 0  # never convert a 4,301-digit number
            if 1 <= k <= len(hand):
                return hand[k - 1]
            self.say(f"There is no card {text[:12]}{'...' if len(text) > 12 else ''} in your hand: "
                     f"type 1-{len(hand)} or a card name.")
            return None
        try:
            card = parse_card(text)
        except ValueError:
            shown = text if len(text) <= 20 else text[:20] + "..."
            self.say(f"Unknown card {shown!r}: type 1-{len(hand)}, a name like 7o or Rc, or ? for help.")
            return None
        if card not in hand:
            self.say(f"{self.style.card(card)} is not in your hand.")
            return None
        return card

    def _ask_option(self, n: int) -> int | None:
        """Return the 0-based capture option chosen, or None to choose another card."""
        while True:
            text = self.ask(f"Which capture? [1-{n}, b back]: ").lower()
            if text in ("b", "back"):
                return None
            if text in ("?", "h", "help"):
                self.say(HELP)
                continue
            if text.isascii() and text.isdigit() and len(text) <= 3 and 1 <= int(text) <= n:
                return int(text) - 1
            self.say(f"Choose a capture by its number, 1 to {n} (or b to choose another card).")

    def _bot_move(self, seat: int) -> tuple[int, int]:
        """Return the (card, capture mask) the bot at ``seat`` plays (it may name several cards)."""
        # The bot acts through play/take actions; replay them on a copy to find its whole move.
        bot = self.bots[seat]
        sim = self.game.clone()
        games = np.array([0])
        card = -1
        while True:
            obs = sim.observe(seat)[None]
            mask = sim.action_mask(seat)[None]
            state = (sim.to_engine(), games) if getattr(bot, "needs_state", False) else None
            a = int(bot.act_batch(obs, mask, state)[0])
            if card < 0:
                card = a
            info = sim.step(a)
            if sim.pending < 0 or sim.to_act != seat or sim.done:
                break
        captured = info.captured & ~(1 << card)
        return card, captured

    def _execute(self, seat: int, card: int, capture: int) -> None:
        """Play ``card`` taking ``capture`` as play/take actions on the game, and report it."""
        game, st = self.game, self.style
        table_before = game.table
        last_capturer = game.last_capturer
        piles_before = game.piles[:]
        escobas_before = game.escobas[:]
        info = game.step(card)
        while game.pending >= 0:
            info = game.step(capture_action(game.legal, game.taken, card, capture))
        captured = info.captured
        if captured and captured & ~(1 << card) != capture:
            raise RuntimeError("the game captured other cards than the chosen option")
        who = self.names[seat]
        you = seat == self.human
        if captured:
            last_capturer = seat
        text = f"{who}: {move_words(card, capture, st.french)}"  # the one phrasing of every front-end
        if info.escoba:
            text += " · " + st.bold(st.paint("ESCOBA!", "35"))
        self.say(("> " if you else "  ") + text)
        if not you and self.delay:
            time.sleep(self.delay)
        if info.round_over:
            left = (table_before | (1 << card)) & ~captured
            self._round_over(info, left, last_capturer, piles_before, escobas_before, seat, captured)

    def _round_over(self, info: GameStep, left: int, last_capturer: int, piles_before: list[int],
                    escobas_before: list[int], seat: int, captured: int) -> None:
        """Print the end of a round: the last table cards, each category, the round and total points."""
        st, r = self.style, self.rules
        piles = piles_before[:]
        piles[seat] |= captured
        if left:
            if last_capturer >= 0:
                piles[last_capturer] |= left
                self.say(f"  The last table cards {st.cards(left)} go to {self.names[last_capturer]} "
                         "(last capture).")
            else:
                self.say(f"  Nobody captured: {st.cards(left)} go to nobody.")
        self.say()
        self.say(st.bold("Round over."))
        width = max(len(n) for n in self.side_names)
        for s in range(r.num_sides):
            m = self._side_mask(piles, s)
            self.say(f"  {self.side_names[s]:<{width}}  {_plural(m.bit_count(), 'card')}, "
                     f"{(m & OROS).bit_count()} oros, {_plural((m & SEVENS).bit_count(), 'seven')}"
                     + (", velo" if m >> VELO & 1 else ""))
        cats = info.round_categories
        for key, label in _CATEGORY_LABELS:
            pts = cats[key]
            got = [f"{self.side_names[s]} {v}" for s, v in enumerate(pts) if v]
            self.say(f"  {label:<17} {', '.join(got) if got else 'nobody'}")
        pts = ", ".join(f"{self.side_names[s]} {int(v)}" for s, v in enumerate(info.round_points))
        tot = ", ".join(f"{self.side_names[s]} {int(v)}" for s, v in enumerate(info.scores))
        self.say(f"  points this round: {pts}")
        self.say(st.bold(f"  total: {tot}") + f" (target {r.target_score})")
        if not info.game_over:
            self._announce_round()

    def _game_over(self) -> None:
        game, st = self.game, self.style
        self.say()
        winner = game.winner
        if game.truncated:
            self.say(st.bold(f"Game over: cut after {_plural(game.round_index, 'round')}, no winner."))
        elif winner < 0:
            self.say(st.bold("Game over: no winner."))
        elif winner == self.rules.side_of(self.human):
            self.say(st.bold(st.paint(f"Game over: {self.side_names[winner]} win!", "32")))
        else:
            self.say(st.bold(f"Game over: {self.side_names[winner]} "
                             f"{'win' if self.rules.partnerships else 'wins'}."))
        tot = ", ".join(f"{self.side_names[s]} {int(v)}" for s, v in enumerate(game.scores))
        self.say(f"Final score: {tot}")


# ---------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``python -m escoba_arena.terminal``."""
    p = OneLineParser(
        prog=prog(), description="Play Escoba in the terminal against bots from the agent registry.",
        epilog="Example: escoba-play --players 4 --partnerships --opponent expert --seed 7 "
               f"(or python -m escoba_arena.terminal ...)\n\nagents:\n"
               f"{help_text()}\n")
    tables = "; ".join(f"{table_name(*t)}: {spec}" for t, spec in DEFAULT_OPPONENTS.items())
    p.add_argument("--opponent", "-o", nargs="+", metavar="SPEC",
                   help=f"agent spec of the bots, one for every bot seat or one per bot seat in seat order "
                        f"(partner included; the agents are listed below). Default: by table ({tables}) when "
                        f"it plays the rules, else {FALLBACK_OPPONENT}")
    p.add_argument("--seat", type=_non_negative, default=0, help="your seat, 0 to players-1 (default 0)")
    p.add_argument("--seed", type=seed_arg, help="seed of the deals and the bots (default: random; "
                   "the game prints it so you can replay it)")
    p.add_argument("--french", action="store_true",
                   help="French names (7♦, K♥; 7 of diamonds) instead of Spanish ones (7o, Rc; 7 de oros)")
    colour = p.add_mutually_exclusive_group()
    colour.add_argument("--no-color", dest="color", action="store_false", default=None,
                        help="no ANSI colours (default: colours on a terminal, unless NO_COLOR is set)")
    colour.add_argument("--color", dest="color", action="store_true", help="ANSI colours even when piped")
    p.add_argument("--delay", type=seconds, default=0.0, metavar="SECONDS",
                   help="pause after each bot move, 0 to 60 (default 0)")
    p.add_argument("--max-rounds", type=_positive, metavar="N",
                   help="stop a game still undecided after N rounds (default: play until a side wins)")
    add_rules_arguments(p.add_argument_group("rules (defaults: escoba_env.Rules, see docs/rules.md)"),
                        partnerships_help="4 players in two teams: seats 0+2 and 1+3 (your partner is a bot)")
    return p


def _bot_label(spec: Spec) -> str:
    return "neural" if spec.name == "checkpoint" else spec.name


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run the game with ``argv`` on the given streams (default: the process's); return the exit status."""
    try:
        return _main(argv, stdin, stdout)
    except BrokenPipeError:  # the output was closed (e.g. piped into head): stop quietly
        if stdout is None:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # Ctrl-C before the game started (e.g. while a bot loads)
        print("\nInterrupted. Bye.", file=sys.stderr if stdout is None else stdout)
        return 130
    except ImportError as exc:  # a bot needs an extra that is not installed (torch for the networks)
        line = missing_extra(exc)
        if line is None:
            raise
        print(f"{prog()}: error: {line}", file=sys.stderr if stdout is None else stdout)
        return 1


def _main(argv: Sequence[str] | None, stdin: TextIO | None, stdout: TextIO | None) -> int:
    args = build_parser().parse_args(argv)
    inp = sys.stdin if stdin is None else stdin
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stdout is None else stdout
    try:
        rules = rules_from_args(args)
    except ValueError as exc:
        print(f"{prog()}: error: {exc}", file=err)
        return 2
    p = rules.num_players
    if args.seat >= p:
        print(f"{prog()}: error: --seat must be 0 to {p - 1} with {p} players, got {args.seat}", file=err)
        return 2
    bot_seats = [s for s in range(p) if s != args.seat]
    seed = secrets.randbelow(2**31) if args.seed is None else args.seed
    colour = args.color
    if colour is None:
        colour = not os.environ.get("NO_COLOR") and hasattr(out, "isatty") and out.isatty()
    note = None
    try:
        if args.opponent is None:
            spec, note = default_opponent(rules)
            specs = list(read_specs([spec], prog())) * len(bot_seats)
        elif len(args.opponent) in (1, len(bot_seats)):  # each spec read once, for all its seats
            specs = list(read_specs(args.opponent, prog())) * (len(bot_seats) if len(args.opponent) == 1 else 1)
        else:
            raise ValueError(f"--opponent takes 1 spec or {len(bot_seats)} (one per bot seat), "
                             f"got {len(args.opponent)}")
        bots = {s: make_bot(spec, rules, seed + s) for s, spec in zip(bot_seats, specs, strict=True)}
    except (ValueError, OSError) as exc:
        print(f"{prog()}: error: {' '.join(str(exc).split())}", file=err)
        return 2
    labels = {}
    for s, spec in zip(bot_seats, specs, strict=True):
        label = _bot_label(spec)
        partner = rules.partnerships and rules.side_of(s) == rules.side_of(args.seat)
        labels[s] = f"partner {label}" if partner else f"{label} #{s}"
    if note:
        print(f"Note: {note}.", file=out)
    elif args.opponent is None:  # the default opponent is named, as the fallback's note does
        print(f"Opponent: {specs[0]} (the default; --opponent to choose another)", file=out)
    for s, bot in bots.items():
        if getattr(bot, "needs_state", False):
            print(f"Note: {labels[s]} cheats: it sees every hand and the stock (a reference, not a fair "
                  "opponent).", file=out)
    game = TerminalGame(rules, bots, args.seat, labels, Style(colour, args.french), inp, out, seed,
                        max_rounds=args.max_rounds, delay=max(0.0, args.delay))
    try:
        return game.run()
    except KeyboardInterrupt:
        out.write("\nInterrupted. Bye.\n")
        return 130
    except LLMError as exc:  # a language-model opponent's endpoint failed: one line, not a traceback
        print(f"{prog()}: error: {exc}", file=err)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
