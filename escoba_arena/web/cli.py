"""The command line of the web arena: ``escoba-arena`` / ``python -m escoba_arena.web``.

Bad input (a missing directory, a port out of range, a non-loopback ``--host`` without
``--public``, the ``[web]`` extra not installed) ends with one line on stderr and exit status 2; a
port already in use with status 1. Never a traceback.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Sequence
from pathlib import Path

from agents.spec.registry import read_specs
from agents.tournament.records import records_results
from agents.tournament.replay import ReplayError
from escoba_env.faces.cli import OneLineParser

from .bot_pool import BotPool
from .deal_key import DealKeyError
from .guard import is_loopback
from .room_records import write_atomic
from .room_table import (
    BURST,
    CONNECTIONS_PER_LINK,
    HELLO_SECONDS,
    MAX_CONNECTIONS,
    MAX_MESSAGE_BYTES,
    PENDING_PER_CLIENT,
    RATE,
    ROOM_BURST,
    ROOMS_PER_CLIENT,
    ROOMS_PER_MINUTE,
    UNJOINED_SECONDS,
    WAITING_PER_CLIENT,
)

PROG = "escoba-arena"
PUBLIC_WARNING = (
    "WARNING: --public: the arena answers every machine that can reach {where}. It protects: no code "
    "runs from a request (agents are allow-listed), no hidden card leaks before a game ends, memory "
    "and request sizes are bounded. It does NOT protect: there are no accounts or passwords, and no "
    "TLS (traffic is plain HTTP). Put a reverse proxy with TLS and authentication in front of it."
)


class _Parser(OneLineParser):
    """The project's one-line parser (``escoba_env.faces.cli.OneLineParser``: a misspelt option or choice
    is named), with argparse's plain help layout and its errors named ``escoba-arena``."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", argparse.HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print the error as one line and exit with status 2."""
        self.exit(2, f"{PROG}: error: {message} (see --help)\n")


def _port(text: str) -> int:
    """Return ``text`` as a TCP port 0-65535 (0: any free port)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, got {text!r}")
    return int(text)


def _number(text: str, top: float, unit: str = "") -> float:
    """Return ``text`` as a number in (0, ``top``]; ArgumentTypeError naming ``unit`` otherwise."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number{unit and ' of ' + unit}, got {text!r}") from None
    if not 0 < v <= top:
        raise argparse.ArgumentTypeError(f"must be in (0, {top:g}]{unit and ' ' + unit}, got {text!r}")
    return v


def _seconds(text: str) -> float:
    """Return ``text`` as a number of seconds in (0, 3600]."""
    return _number(text, 3600, "seconds")


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the web arena."""
    p = _Parser(prog=PROG, description="A web arena for Escoba: play the bots, watch replays, read "
                "tournament results in a browser.",
                epilog="example: escoba-arena --data results/ --data replays/ --port 8765; "
                       "escoba-arena report DIR prints the statistics of recorded room games")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only); any address that is "
                        "not loopback needs --public")
    p.add_argument("--public", action="store_true",
                   help="allow binding an address other machines can reach (prints what is and is not "
                        "protected: no accounts, no TLS)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a Host name the server answers besides the loopback addresses and localhost "
                        "(repeat for several; '*' turns the Host check off, e.g. behind a proxy that "
                        "checks it)")
    p.add_argument("--allow-agent", action="append", default=[], metavar="SPEC",
                   help="an agent spec requests may name besides the allow-list, that exact spec in any "
                        "spelling (e.g. 'search:sims=20000' or 'sb3:models/ppo.zip'); the only way a request "
                        "reaches an agent never built from requests (sb3, python, a language model: "
                        "then only at the base_url given); repeat for several")
    p.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("--data", action="append", default=[], metavar="DIR",
                   help="a directory whose replays (*.jsonl) and evaluate.py results (*.json) the pages "
                        "may open; repeat for several (default: ./results and ./replays if they exist)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--bot-timeout", type=_seconds, default=10.0, metavar="SECONDS",
                   help="the time budget of one bot move: bots move in worker processes (--bot-workers), "
                        "off the server's event loop, and a bot that takes longer than this for one move "
                        "stops its game and its worker (default 10)")
    _add_room_arguments(p)
    return p


def _add_room_arguments(p: argparse.ArgumentParser) -> None:
    """Add the rooms' options to ``p``: where they keep their games, and the limits that keep one client,
    link or room from starving the others."""
    p.add_argument("--rooms-dir", metavar="DIR",
                   help="keep the rooms' journal (rooms survive a restart) and their recorded games "
                        "(DIR/records/*.jsonl) here; without it rooms live in memory and cannot record")
    p.add_argument("--takeover-seconds", type=_seconds, default=60.0, metavar="SECONDS",
                   help="a person away from a running room game this long is replaced by a bot (default 60)")
    p.add_argument("--room-idle-seconds", type=_seconds, default=3600.0, metavar="SECONDS",
                   help="a room without any activity this long is closed (default 3600)")
    p.add_argument("--room-unjoined-seconds", type=_seconds, default=UNJOINED_SECONDS, metavar="SECONDS",
                   help=f"a room nobody has joined this long after it was opened is closed "
                        f"(default {UNJOINED_SECONDS:g})")
    p.add_argument("--serve-records", action="store_true",
                   help="let the pages list and open the rooms' records (DIR/records) when a --data "
                        "folder holds them; each record is shown only once no open room can deal its "
                        "cards. Without it the records folder is never served")
    p.add_argument("--rooms-per-client", type=_count, default=ROOMS_PER_CLIENT, metavar="N",
                   help=f"the most open rooms (waiting or playing) one client address may hold "
                        f"(default {ROOMS_PER_CLIENT})")
    p.add_argument("--waiting-per-client", type=_count, default=WAITING_PER_CLIENT, metavar="N",
                   help=f"the most rooms one client address may hold waiting for their people "
                        f"(default {WAITING_PER_CLIENT}); a room nobody joins is closed after "
                        "--room-unjoined-seconds")
    p.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                   help="the address of a reverse proxy in front of the server: for requests from it, "
                        "the client is the last address of X-Forwarded-For (for the per-client "
                        "quotas); repeat for several")
    p.add_argument("--max-connections", type=_count, default=MAX_CONNECTIONS, metavar="N",
                   help=f"the most WebSocket connections the server holds at a time (default "
                        f"{MAX_CONNECTIONS}). A WebSocket message is at most {MAX_MESSAGE_BYTES} bytes: "
                        "a larger frame is refused before it is read")
    p.add_argument("--connections-per-link", type=_count, default=CONNECTIONS_PER_LINK, metavar="N",
                   help=f"the most WebSocket connections one room link (a seat's or the spectator's) may "
                        f"hold at a time (default {CONNECTIONS_PER_LINK})")
    p.add_argument("--connections-per-client", type=_count, default=None, metavar="N",
                   help="the most WebSocket connections one client address (IPv6: one /64) may hold "
                        "(default a tenth of --max-connections)")
    p.add_argument("--pending-per-client", type=_count, default=PENDING_PER_CLIENT, metavar="N",
                   help=f"the most WebSocket connections one client address may hold that have not said "
                        f"hello yet (default {PENDING_PER_CLIENT}); a connection says hello within "
                        f"{HELLO_SECONDS:g} s or is closed")
    p.add_argument("--message-rate", type=_rate, default=RATE, metavar="N",
                   help=f"the messages a second one room link may send, its hellos included (default "
                        f"{RATE:g}, in bursts of --message-burst)")
    p.add_argument("--message-burst", type=_rate, default=BURST, metavar="N",
                   help=f"the burst of --message-rate (default {BURST:g})")
    p.add_argument("--rooms-per-minute", type=_count, default=int(ROOMS_PER_MINUTE), metavar="N",
                   help=f"the most rooms one client address may open a minute, after a burst of "
                        f"{ROOM_BURST:g} or ten seconds' worth (default {ROOMS_PER_MINUTE:g})")
    p.add_argument("--bot-workers", type=_count, default=None, metavar="N",
                   help="the most bot moves computed at a time, server-wide, each in a worker process "
                        "that is stopped when its move runs past --bot-timeout (default: the CPUs, 2 to 4); "
                        "one client's bots use at most half of them")


def _rate(text: str) -> float:
    """Return ``text`` as a positive rate up to 1000000."""
    return _number(text, 1_000_000)


def _count(text: str) -> int:
    """Return ``text`` as a count 1-1000000."""
    if not text.isdigit() or not 1 <= int(text) <= 1_000_000:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 1000000, got {text!r}")
    return int(text)


def is_loopback_address(host: str) -> bool:
    """True if ``host`` (an address or ``localhost``) is reachable only from this machine."""
    return is_loopback(host)


def listen_socket(host: str, port: int) -> socket.socket:
    """Return a TCP socket bound to ``(host, port)``, made so that every connection gets TCP_NODELAY.

    asyncio sets TCP_NODELAY on accepted connections only when the listening socket's protocol is
    IPPROTO_TCP (not 0); without it each keep-alive answer waits for a delayed ACK (about 40 ms).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def report_main(argv: Sequence[str]) -> int:
    """``escoba-arena report DIR [...] [--out PREFIX]``: a tournament's table and JSON from replay records."""
    p = _Parser(prog=f"{PROG} report",
                description="Print what a tournament prints (points per round per pair with intervals "
                            "paired over repeated deals, win rates, OpenSkill ratings) for the games "
                            "recorded in rooms (or any replay files), people and bots on one scale.")
    p.add_argument("paths", nargs="+", metavar="DIR", help="a folder of *.jsonl records (searched "
                                                           "recursively) or a replay file")
    p.add_argument("--out", metavar="PREFIX",
                   help="also write PREFIX.json, in evaluate.py's results format (the Results page "
                        "opens it); an existing file is not overwritten")
    p.add_argument("--confidence", type=float, default=0.95, help="level of every interval (default 0.95)")
    args = p.parse_args(argv)
    if not 0.0 < args.confidence < 1.0:
        p.error(f"--confidence must be in (0, 1), got {args.confidence}")
    out = None if args.out is None else Path(args.out + ".json")
    if out is not None and out.exists():
        print(f"{PROG} report: error: {out} exists; not overwritten", file=sys.stderr)
        return 2
    try:
        text, results = records_results(args.paths, args.confidence)
    except (ReplayError, OSError, ValueError) as exc:
        print(f"{PROG} report: error: {' '.join(str(exc).split())[:400]}", file=sys.stderr)
        return 1
    print(text)
    if out is not None:
        write_atomic(out, json.dumps(results, indent=2, allow_nan=False) + "\n")
        print(f"wrote {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Start the server (or ``report``); return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        return report_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        import uvicorn  # noqa: F401 - the [web] extra: checked here, used in _serve

        from .app import create_app  # the [web] extra: the app is a Starlette one
        from .room_options import RoomOptions  # the [web] extra: it reads Starlette's WebSocket
    except ImportError as exc:
        print(f"{PROG}: error: the web arena needs the [web] extra ({exc.name} is missing): "
              'pip install "escoba-env[web]"', file=sys.stderr)
        return 2
    try:  # the operator's specs, read once here: a misspelt one is named now, not when a request misses it
        allow_agents = read_specs(args.allow_agent, PROG)
    except ValueError as exc:
        print(f"{PROG}: error: --allow-agent: {exc}", file=sys.stderr)
        return 2
    if not is_loopback_address(args.host) and not args.public:
        print(f"{PROG}: error: --host {args.host} can be reached from other machines; add --public to "
              "serve the arena to them (see --help)", file=sys.stderr)
        return 2
    if args.rooms_dir is not None:
        # Made first: the documented study command serves the rooms folder as a data folder too.
        try:
            Path(args.rooms_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"{PROG}: error: cannot make --rooms-dir {args.rooms_dir!r}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
    roots = list(args.data) or [d for d in ("results", "replays") if Path(d).is_dir()]
    for d in roots:
        if not Path(d).is_dir():
            print(f"{PROG}: error: --data {d!r} is not a directory", file=sys.stderr)
            return 2
    try:
        sock = listen_socket(args.host, args.port)
    except OSError as exc:
        print(f"{PROG}: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    allowed = list(args.allowed_host)
    if not is_loopback_address(args.host) and args.host not in ("0.0.0.0", "::"):
        allowed.append(args.host)  # the address itself, as a browser writes it in the Host header
    rooms = RoomOptions(directory=args.rooms_dir, takeover_seconds=args.takeover_seconds,
                        idle_seconds=args.room_idle_seconds, unjoined_seconds=args.room_unjoined_seconds,
                        per_client=args.rooms_per_client, waiting_per_client=args.waiting_per_client,
                        per_link=args.connections_per_link, max_connections=args.max_connections,
                        connections_per_client=args.connections_per_client,
                        pending_per_client=args.pending_per_client, rate=args.message_rate,
                        burst=args.message_burst,
                        rooms_per_minute=args.rooms_per_minute,
                        trusted_proxies=list(args.trusted_proxy), serve_records=args.serve_records)
    pool = BotPool(args.bot_workers)
    try:
        app = create_app(roots, args.bot_timeout, allowed, allow_agents=allow_agents, rooms=rooms,
                         bot_pool=pool)
    except DealKeyError as exc:
        pool.close()
        sock.close()
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    try:
        return _serve(app, args, sock, host, port, roots)
    finally:
        pool.close()


def _serve(app, args, sock: socket.socket, host: str, port: int, roots: list) -> int:
    """Run the server on ``sock`` until it is stopped; return the exit status."""
    import uvicorn  # the [web] extra (main checked it is there)

    if args.rooms_dir is not None:
        print(f"Rooms: journal and records in {Path(args.rooms_dir).resolve()} "
              f"({app.state.rooms.loaded} room(s) read back)", flush=True)
    # A WebSocket frame larger than a message may be is refused from its header, before it is read.
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws_max_size=MAX_MESSAGE_BYTES))
    # uvicorn shuts down cleanly on SIGINT/SIGTERM, then raises the signal again: end with one line.
    previous = (signal.signal(signal.SIGINT, signal.default_int_handler),
                signal.signal(signal.SIGTERM, _terminated))
    try:
        print(f"Escoba arena: http://{host}:{port}/  (Ctrl-C stops it)", flush=True)
        if not is_loopback_address(args.host):
            print(PUBLIC_WARNING.format(where=f"{host}:{port}"), file=sys.stderr, flush=True)
        if roots:
            print("Data: " + ", ".join(str(Path(d).resolve()) for d in roots), flush=True)
        if args.open:
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
