"""Command-line pieces shared by the project's programs: argparse types and the rules flags."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..rulebook.rules import SEVENS_RULES, Rules, check_seed


class DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """Help formatter that writes every option's default after its help (unless the help already
    names one), keeping descriptions and epilogs as written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        """Return the help of ``action`` with `` (default: X)`` appended where it says none."""
        text = action.help or ""
        if ("default" in text.lower() or action.default in (None, argparse.SUPPRESS)
                or not action.option_strings or isinstance(action, argparse._StoreConstAction)
                or action.default is False and action.nargs == 0):
            return text
        d = action.default
        shown = " ".join(map(str, d)) if isinstance(d, (list, tuple)) else str(d)
        return f"{text} (default: {shown.replace('%', '%%')})"


def did_you_mean(word: str, options: Iterable[str], n: int = 3) -> str:
    """Return ``"; did you mean X?"`` naming the (up to ``n``) ``options`` closest to ``word``, or ``""``."""
    close = difflib.get_close_matches(word, list(options), n=n, cutoff=0.6)
    if not close:
        return ""
    return f"; did you mean {close[0] if len(close) == 1 else ', '.join(close[:-1]) + ' or ' + close[-1]}?"


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (``PROG: error: ... (see --help)``, exit 2)
    that name the closest option to a misspelt one and the closest choice to a misspelt value (Python
    3.14's ``suggest_on_error``, written the same way on older Pythons), and whose help shows every
    default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        if sys.version_info >= (3, 14):
            kwargs.setdefault("suggest_on_error", True)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print the error as one line and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """Return the namespace of ``args``; an unknown option is an error naming the closest known one."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            known = [o for p in self._parsers() for a in p._actions for o in a.option_strings]
            typed = [e.partition("=")[0] for e in extras if e.startswith("-")]
            hint = next(filter(None, (did_you_mean(t, known, n=1) for t in typed)), "")
            self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return ns

    def _parsers(self) -> list[argparse.ArgumentParser]:
        """Return this parser and its sub-commands' parsers (whose options an unknown one may mean)."""
        subs = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
        return [self, *(p for a in subs for p in a.choices.values())]

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """Raise argparse's error for a value outside ``action.choices``, naming the closest choice."""
        choices = action.choices
        if sys.version_info < (3, 14) and choices is not None and value not in choices:
            close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
            maybe = f", maybe you meant {close[0]!r}?" if close else ""
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{maybe} (choose from "
                                                 f"{', '.join(map(str, choices))})")
        super()._check_value(action, value)


def guarded_main(prog: str, main: Callable[[], int | None]) -> int:
    """Run ``main()`` and return its exit status; bad input and faults end with one line, no traceback.

    A ValueError, TypeError, OSError or RuntimeError (bad input, a missing file) prints
    ``PROG: error: ...`` on stderr and returns 1; Ctrl-C returns 130; an output closed early
    (``| head``) returns 1 quietly.
    """
    try:
        return int(main() or 0)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, TypeError, OSError, RuntimeError) as exc:
        print(f"{prog}: error: {' '.join(str(exc).split()) or type(exc).__name__}", file=sys.stderr)
        return 1


def positive_float(text: str) -> float:
    """Return ``text`` as a finite positive number (an argparse type)."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0.0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return v


def int_list(text: str) -> list[int]:
    """Return a comma-separated list of positive ints (an argparse type)."""
    return [positive_int(x.strip()) for x in text.split(",")]


def seconds(text: str) -> float:
    """Return ``text`` as a finite number of seconds from 0 to 60 (an argparse type)."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0.0 <= v <= 60.0:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be a number of seconds from 0 to 60, got {text!r}")
    return v


def seed_arg(text: str) -> int:
    """Return ``text`` as a seed, an int from 0 to 2**64-1 (an argparse type; ``rules.check_seed``)."""
    try:
        return check_seed(int(text) if len(text) <= 30 else -1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to 2**64-1, got {text!r}") from None


def _int_at_least(text: str, low: int, what: str) -> int:
    """Return ``text`` as an int >= ``low``, else raise argparse's type error naming ``what``."""
    try:
        v = int(text) if len(text) <= 30 else None  # a 4,300-digit string is no count anyone means
    except ValueError:
        v = None
    if v is None or v < low:
        raise argparse.ArgumentTypeError(f"must be a {what} integer, got {text!r}")
    return v


def positive_int(text: str) -> int:
    """Return ``text`` as a positive int (an argparse type)."""
    return _int_at_least(text, 1, "positive")


def non_negative_int(text: str) -> int:
    """Return ``text`` as a non-negative int (an argparse type)."""
    return _int_at_least(text, 0, "non-negative")


def add_rules_arguments(group: Any, partnerships_help: str = "",
                        target_help: str = "") -> list[argparse.Action]:
    """Add one flag per ``Rules`` field to an argparse parser or group (defaults: ``Rules()``); return them.

    Every program that takes rules uses this (``rules_from_args`` reads them back), so the flags are
    named the same everywhere: ``--players``, ``--partnerships``, ``--target-score`` and so on.
    """
    d = Rules()
    actions = [
        group.add_argument("--players", type=int, default=d.num_players, choices=(2, 3, 4),
                           help="number of players"),
        group.add_argument("--partnerships", action=argparse.BooleanOptionalAction, default=d.partnerships,
                           help=partnerships_help or "4 players in two teams: seats 0+2 and 1+3"),
        group.add_argument("--target-score", type=positive_int, default=d.target_score, metavar="N",
                           help=target_help or f"points that win a game (default {d.target_score})"),
        group.add_argument("--sevens-rule", choices=SEVENS_RULES, default=d.sevens_rule,
                           help="how the sevens point is awarded"),
        group.add_argument("--bonus-sweeps", action=argparse.BooleanOptionalAction, default=d.bonus_sweeps,
                           help="all ten oros / all four sevens score 2"),
        group.add_argument("--prefer-single", action=argparse.BooleanOptionalAction, default=d.prefer_single,
                           help="a card that can take a single table card may only take single cards"),
        group.add_argument("--last-play-escoba", action=argparse.BooleanOptionalAction,
                           default=d.last_play_escoba,
                           help="emptying the table with the round's last card is an escoba"),
        group.add_argument("--initial-fifteen", action=argparse.BooleanOptionalAction,
                           default=d.initial_fifteen,
                           help="a first table of 15 goes to the dealer as escoba(s)"),
        group.add_argument("--jokers", type=int, default=d.jokers, choices=(0, 1, 2),
                           help="wild jokers in the deck (ids 40, 41; docs/rules.md §11)"),
        group.add_argument("--mesa-deal", action=argparse.BooleanOptionalAction, default=d.mesa_deal,
                           help="escoba de mesa: the dealer takes fifteens as the table is turned up"),
    ]
    for action in actions:  # the default in the help text itself: a program may suppress action.default
        if "default" not in (action.help or ""):
            d = action.default
            shown = ("yes" if d else "no") if isinstance(d, bool) else d
            action.help = f"{action.help} (default: {shown})"
    return actions


def rules_from_args(args: argparse.Namespace) -> Rules:
    """Return the ``Rules`` named by the flags of ``add_rules_arguments`` (ValueError if invalid)."""
    return Rules(num_players=args.players, partnerships=args.partnerships, target_score=args.target_score,
                 sevens_rule=args.sevens_rule, bonus_sweeps=args.bonus_sweeps,
                 prefer_single=args.prefer_single, last_play_escoba=args.last_play_escoba,
                 initial_fifteen=args.initial_fifteen, jokers=args.jokers, mesa_deal=args.mesa_deal)
