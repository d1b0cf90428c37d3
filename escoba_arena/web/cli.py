"""The command line of the web arena: ``escoba-arena`` / ``python -m escoba_arena.web``.

Bad input (a missing directory, a port out of range, the ``[web]`` extra not installed) ends with
one line on stderr and exit status 2; a port already in use with status 1. Never a traceback.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

PROG = "escoba-arena"


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print the error as one line and exit with status 2."""
        self.exit(2, f"{PROG}: error: {message} (see --help)\n")


def _port(text: str) -> int:
    """Return ``text`` as a TCP port 0-65535 (0: any free port)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not 0 < v <= 3600:
        raise argparse.ArgumentTypeError(f"must be in (0, 3600] seconds, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the web arena."""
    p = _Parser(prog=PROG, description="A web arena for Escoba: play the bots, watch replays, read "
                "tournament results in a browser.",
                epilog="example: escoba-arena --data results/ --data replays/ --port 8765")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("--data", action="append", default=[], metavar="DIR",
                   help="a directory whose replays (*.jsonl) and evaluate.py results (*.json) the pages "
                        "may open; repeat for several (default: ./results and ./replays if they exist)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--bot-timeout", type=_seconds, default=30.0, metavar="SECONDS",
                   help="a bot that takes longer for one move stops its game (default 30)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Start the server; return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        import uvicorn

        from .app import create_app
    except ImportError as exc:
        print(f"{PROG}: error: the web arena needs the [web] extra ({exc.name} is missing): "
              'pip install "escoba-env[web]"', file=sys.stderr)
        return 2
    roots = list(args.data) or [d for d in ("results", "replays") if Path(d).is_dir()]
    for d in roots:
        if not Path(d).is_dir():
            print(f"{PROG}: error: --data {d!r} is not a directory", file=sys.stderr)
            return 2
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
    except OSError as exc:
        print(f"{PROG}: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    allowed = ["127.0.0.1", "localhost", "[::1]", "::1"] if loopback else None
    server = uvicorn.Server(uvicorn.Config(create_app(roots, args.bot_timeout, allowed), log_level="warning"))
    # uvicorn shuts down cleanly on SIGINT/SIGTERM, then raises the signal again: end with one line.
    previous = (signal.signal(signal.SIGINT, signal.default_int_handler),
                signal.signal(signal.SIGTERM, _terminated))
    try:
        print(f"Escoba arena: http://{host}:{port}/  (Ctrl-C stops it)", flush=True)
        if roots:
            print("Data: " + ", ".join(str(Path(d).resolve()) for d in roots), flush=True)
        if args.open:
            import threading
            import webbrowser

            threading.Timer(1.0, webbrowser.open, [f"http://{host}:{port}/"]).start()
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        print(f"{PROG}: stopped (Ctrl-C)", file=sys.stderr)
        return 130
    except _Terminated:
        print(f"{PROG}: stopped (SIGTERM)", file=sys.stderr)
        return 143
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
        sock.close()
    return 0


class _Terminated(Exception):
    """The process got SIGTERM."""


def _terminated(signum, frame) -> None:
    raise _Terminated
