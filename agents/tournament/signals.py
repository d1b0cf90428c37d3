"""How a command-line program that plays journaled blocks ends: SIGINT and SIGTERM raised in the main thread
like Ctrl-C, held back while a block is being journaled (``SIGNALS.held``), and every ending one line
(``run_program``). ``evaluate.py``, ``escoba-bench`` and the report card's play loop share it."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..programs import missing_extra
from .runner import one_line


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that the same cleanup runs."""


class Signals:
    """SIGINT / SIGTERM handlers that can hold an interrupt back while a block is being journaled.

    Python runs signal handlers in the main thread between bytecodes, so checking a flag here is
    enough: an interrupt that arrives while a block is written (and counted) is raised right after.
    """

    def __init__(self) -> None:
        self.holding = False
        self.pending: type[KeyboardInterrupt] | None = None

    def handler(self, signum: int, frame) -> None:
        """Raise KeyboardInterrupt (SIGINT) or Terminated (SIGTERM), or keep it for later."""
        exc = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        if self.holding:
            self.pending = exc
            return
        raise exc

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold interrupts back inside the block; raise a held one when it ends."""
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
            if self.pending is not None:
                exc, self.pending = self.pending, None
                raise exc


SIGNALS = Signals()


def run_program(prog: str, body: Callable[[list[str] | None], int], argv: list[str] | None) -> int:
    """Run a command-line program's ``body(argv)``; return its exit status.

    What a run of evaluate.py or escoba-bench must do however it ends: SIGINT and SIGTERM are
    caught (a journal write in progress finishes first, ``SIGNALS.held``) and reported as one line
    with status 130 or 143; any error is one line with status 1, never a traceback; a closed stdout
    (piped into ``head``) is not an error message.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    old = {}
    if main_thread:
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, SIGNALS.handler)
    try:
        return body(argv)
    except KeyboardInterrupt as exc:
        term = isinstance(exc, Terminated)
        note = getattr(exc, "escoba_note", "")
        print(f"{prog}: {'terminated' if term else 'interrupted'}{note}", file=sys.stderr)
        return 143 if term else 130
    except BrokenPipeError:  # stdout closed early (e.g. piped into head): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # one clear line, never a traceback
        line = missing_extra(exc) or one_line(exc)
        print(f"{prog}: error: {line}{getattr(exc, 'escoba_note', '')}", file=sys.stderr)
        return 1
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
