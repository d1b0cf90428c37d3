"""The Starlette app of the web arena: a JSON API under ``/api`` and the static pages.

Every request is validated; a bad one gets a 4xx with ``{"error": "<what is wrong>"}`` (a short
message, and nothing in the server log), and any other error is a JSON 500 (``errors``): every
answer, errors included, is JSON or a page with the security headers. Bodies are read with limits
(``guard.read_json``); ``guard.HostOriginGuard`` answers only loopback or allowed host names and
refuses cross-origin POSTs. Games live in memory (``lobby.Arena``); a request that moves bots waits
in a thread of its own (``BOT_THREADS``, at most ``BOT_REQUESTS_PER_CLIENT`` of them per client)
while the bots think in the bot pool's worker processes (``bot_pool``), so a slow bot never holds up
the event loop or another user's file listing.
Files are read only under the data directories the server was started with (``files.DataRoots``).
Every HTTP answer carries ``SECURITY_HEADERS``: the pages run only the scripts and styles the
package ships (no inline script), are never framed, and send no Referer.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agents.spec.registry import REGISTRY
from escoba_env.rulebook.rules import SEVENS_RULES, Rules

from .allow import CAPS, NEURAL
from .bot_pool import BotPool
from .errors import error_answer, http_error, json_errors
from .files import load_results, matching_replays, read_replay_lines
from .guard import (
    MAX_BODY,
    MAX_GAME_BODY,
    ApiError,
    HostOriginGuard,
    check_list,
    read_json,
    short_repr,
)
from .lobby import IDLE_SECONDS, MAX_GAMES, Arena, shipped_checkpoint
from .replay import replay_frames
from .room_conns import ExposeAbort, client_key
from .rooms_routes import RoomOptions, lifespan_for, make_hub, room_routes

LOG = logging.getLogger("escoba_arena.web")
STATIC = Path(__file__).with_name("static")
BOT_THREADS = 16
"""Threads for requests that move bots (each waits there for the bot pool); file reads use others."""
BOT_REQUESTS_PER_CLIENT = 2
"""Requests that move bots (new game, move, rematch) one client may have under way at a time."""
MAX_CAPTURE = 40
"""The longest capture list a move may send (the whole deck)."""


CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
"""The Content-Security-Policy of every answer: same-origin scripts, styles, images and connections
(WebSockets included) only, no inline script or style, no framing. ``data:`` is the empty favicon."""
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
)
"""Headers added to every HTTP answer (pages, static files, the API, errors, refusals)."""


class SecurityHeaders:
    """ASGI middleware: add ``SECURITY_HEADERS`` to every HTTP answer (replacing any of the same name).

    It is the outermost layer of the app: an exception nothing else answered becomes a JSON 500 here,
    with the headers, rather than the server's plain-text page without them.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        names = {name for name, _ in SECURITY_HEADERS}
        started = False

        async def send_with_headers(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": kept + list(SECURITY_HEADERS)}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # a bug past every handler: one traceback in the log, a JSON 500
            LOG.exception("error in %s", scope.get("path", "?"))
            if started:
                raise
            answer = error_answer(500, f"internal error: {type(exc).__name__}")
            await answer(scope, receive, send_with_headers)


def _query(request: Request, key: str) -> str:
    v = request.query_params.get(key)
    if v is None:
        raise ApiError(400, f"missing query parameter {key!r}")
    return v


def _arena(request: Request) -> Arena:
    """Return the arena of the app serving ``request``."""
    return request.app.state.arena


def _client(request: Request) -> str:
    """Return the quota key of the client of ``request`` (behind a trusted proxy: the one it names)."""
    hub = request.app.state.rooms
    return client_key(hub.client_of(request.client.host if request.client else None, request.headers))


async def _in_bot_thread(request: Request, fn):
    """Return ``fn()`` run in one of the app's bot threads (``BOT_THREADS``); 429 past the client's share."""
    key, busy = _client(request), request.app.state.bot_requests
    if busy[key] >= BOT_REQUESTS_PER_CLIENT:
        raise ApiError(429, f"this address has {busy[key]} requests moving bots under way, the most one "
                            "client may have; try again when they are answered")
    busy[key] += 1
    try:
        return await anyio.to_thread.run_sync(fn, limiter=request.app.state.bot_threads)
    finally:
        busy[key] -= 1
        if busy[key] <= 0:
            del busy[key]


async def _locked_answer(arena: Arena, gid: str, game) -> dict:
    """Return the view of ``game``, waiting (without holding a thread) for a move in progress, bots
    included, so that the view is whole."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + arena.bot_timeout * 4 + 5
    while not game.lock.acquire(blocking=False):
        if loop.time() > deadline:
            raise ApiError(409, "the game is busy with a move")
        await asyncio.sleep(0.01)
    try:
        return arena.answer(gid, game)
    finally:
        game.lock.release()


def _finished(game, what: str) -> None:
    if not game.done:
        raise ApiError(409, f"{what} is available once the game is over (it shows every hand)")


@json_errors
async def info(request: Request) -> Response:
    arena = _arena(request)
    agents = [{"name": s.name, "params": [p for p in s.params if p in CAPS[s.name]], "help": s.help}
              for s in REGISTRY.values() if s.name in CAPS]
    return JSONResponse({"agents": agents, "neural": shipped_checkpoint() is not None,
                         "default_rules": Rules().to_dict(), "sevens_rules": list(SEVENS_RULES),
                         "allowed": sorted(arena.allow.extra), "alias": NEURAL,
                         "files": await anyio.to_thread.run_sync(arena.roots.listing)})


@json_errors
async def create(request: Request) -> Response:
    arena = _arena(request)
    body = await read_json(request, MAX_GAME_BODY)
    client = _client(request)
    gid, game = await _in_bot_thread(request, lambda: arena.new_game(body, client))
    return JSONResponse(arena.answer(gid, game), status_code=201)


@json_errors
async def show(request: Request) -> Response:
    arena, gid = _arena(request), request.path_params["gid"]
    return JSONResponse(await _locked_answer(arena, gid, arena.game(gid)))


@json_errors
async def move(request: Request) -> Response:
    arena, gid = _arena(request), request.path_params["gid"]
    game = arena.game(gid)
    body = await read_json(request, MAX_GAME_BODY)
    if not isinstance(body, dict) or set(body) - {"card", "capture"}:
        raise ApiError(400, "a move is {\"card\": id, \"capture\": [table card ids]}")
    card, capture = body.get("card"), body.get("capture", [])
    if isinstance(card, bool) or not isinstance(card, int):
        raise ApiError(400, f"card must be a card id (an integer), got {short_repr(card)}")
    check_list(capture, "capture", MAX_CAPTURE)
    if not all(isinstance(c, int) and not isinstance(c, bool) for c in capture):
        raise ApiError(400, "capture must be a list of card ids (integers)")

    def run() -> dict:
        if not game.lock.acquire(blocking=False):
            raise ApiError(409, "the previous move of this game is still being played")
        try:
            if game.done:
                raise ApiError(409, "the game is over")
            if not game.moves():
                raise ApiError(409, "it is not your turn")
            game.play(card, capture)
            return arena.answer(gid, game)
        finally:
            game.lock.release()

    return JSONResponse(await _in_bot_thread(request, run))


@json_errors
async def rematch(request: Request) -> Response:
    arena, gid = _arena(request), request.path_params["gid"]
    game = arena.game(gid)
    await read_json(request, MAX_GAME_BODY)
    # A copy of a running game would deal its hidden cards: only a finished game is replayed.
    _finished(game, "a rematch")
    settings = dict(arena.settings[gid])
    client = _client(request)
    gid2, game2 = await _in_bot_thread(request, lambda: arena.new_game(settings, client))
    return JSONResponse(arena.answer(gid2, game2), status_code=201)


def _finished_record(request: Request) -> dict:
    """Return the replay record of the finished game named in ``request`` (409 before its end)."""
    game = _arena(request).game(request.path_params["gid"])
    _finished(game, "the replay")
    try:
        return game.replay_record()
    except ValueError as exc:
        raise ApiError(409, str(exc)) from None


@json_errors
async def game_replay(request: Request) -> Response:
    rec = _finished_record(request)
    headers = {"Content-Disposition": 'attachment; filename="escoba_replay.jsonl"'}
    return Response(json.dumps(rec, separators=(",", ":")) + "\n", media_type="application/x-ndjson",
                    headers=headers)


@json_errors
async def game_frames(request: Request) -> Response:
    rec = _finished_record(request)
    return JSONResponse(await anyio.to_thread.run_sync(replay_frames, rec, "this game"))


@json_errors
async def files(request: Request) -> Response:
    return JSONResponse(await anyio.to_thread.run_sync(_arena(request).roots.listing))


@json_errors
async def replay_games(request: Request) -> Response:
    name = _query(request, "file")
    path = _arena(request).roots.resolve(name, ".jsonl")
    out = []
    for k, line in enumerate(await anyio.to_thread.run_sync(read_replay_lines, path)):
        try:
            rec = json.loads(line)
            out.append({"game": k, "seats": rec["seats"], "game_id": rec["game_id"],
                        "rotation": rec["rotation"], "rounds": len(rec["rounds"]),
                        "final_scores": rec["final_scores"], "winner": rec["winner"]})
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ApiError(422, f"{name}:{k + 1}: not a replay record ({type(exc).__name__})") from None
    return JSONResponse({"file": name, "games": out})


@json_errors
async def replay_file_frames(request: Request) -> Response:
    name = _query(request, "file")
    k = request.query_params.get("game", "0")
    if not k.isdigit() or len(k) > 9:
        raise ApiError(400, f"game must be a game number in the file, got {k!r}")
    lines = await anyio.to_thread.run_sync(read_replay_lines, _arena(request).roots.resolve(name, ".jsonl"))
    if int(k) >= len(lines):
        raise ApiError(404, f"{name} has {len(lines)} games; there is no game {k}")
    frames = await anyio.to_thread.run_sync(replay_frames, lines[int(k)], f"{name}:{int(k) + 1}")
    return JSONResponse(frames)


@json_errors
async def replay_upload(request: Request) -> Response:
    body = await read_json(request, MAX_BODY)
    if not isinstance(body, dict):
        raise ApiError(400, "send one replay record (a JSON object)")
    return JSONResponse(await anyio.to_thread.run_sync(replay_frames, body, "uploaded replay"))


@json_errors
async def results(request: Request) -> Response:
    arena, name = _arena(request), _query(request, "file")
    data = await anyio.to_thread.run_sync(load_results, arena.roots.resolve(name, ".json"))
    replays = await anyio.to_thread.run_sync(matching_replays, arena.roots, data)
    return JSONResponse({"file": name, "results": data, "replays": replays})


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


async def not_found(request: Request) -> Response:
    return error_answer(404, f"no API endpoint {request.method} {request.url.path}")


API_ROUTES = [
    Route("/api/info", info),
    Route("/api/files", files),
    Route("/api/games", create, methods=["POST"]),
    Route("/api/games/{gid}", show),
    Route("/api/games/{gid}/move", move, methods=["POST"]),
    Route("/api/games/{gid}/rematch", rematch, methods=["POST"]),
    Route("/api/games/{gid}/replay", game_replay),
    Route("/api/games/{gid}/frames", game_frames),
    Route("/api/replays", replay_games),
    Route("/api/replays/frames", replay_file_frames),
    Route("/api/replays/frames", replay_upload, methods=["POST"]),
    Route("/api/results", results),
]
"""The JSON API: every handler reads the app's ``Arena`` from ``request.app.state.arena``."""


def create_app(roots: list[str | Path] | None = None, bot_timeout: float = 10.0,
               allowed_hosts: Iterable[str] | None = None, allow_agents: Iterable[str] = (),
               max_games: int = MAX_GAMES, idle_seconds: float = IDLE_SECONDS,
               rooms: RoomOptions | None = None, bot_pool: BotPool | None = None) -> Starlette:
    """Return the arena app serving replays and results under ``roots`` (default: none).

    ``allowed_hosts`` are Host names answered besides the loopback ones (``["*"]``: any; None:
    the Host check is off, for tests); ``allow_agents`` are specs allowed as written besides the
    built-in allow-list; ``bot_timeout`` is the time budget of one bot move, in seconds;
    ``rooms``: where and how rooms are kept (``rooms_routes``; default: in memory only);
    ``bot_pool``: where bots think (default: the process's shared ``bot_pool.BotPool``).
    """
    arena = Arena(list(roots or []), bot_timeout, allow=allow_agents, max_games=max_games,
                  idle_seconds=idle_seconds, pool=bot_pool)
    hub = make_hub(arena, rooms)
    records = hub.rooms.records_dir
    if records is not None:
        # A record holds every hand and the seed: never served while its deal may still be dealt.
        arena.roots.gate = hub.rooms.record_withheld
        if not hub.options.serve_records:
            arena.roots.private.append(records.resolve())
    routes = [
        *room_routes(hub),
        Route("/", index),
        *API_ROUTES,
        Route("/api/{rest:path}", not_found, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        Mount("/", StaticFiles(directory=STATIC), name="static"),
    ]
    # Outermost: the guard's refusals and any error carry the headers too.
    middleware = [Middleware(SecurityHeaders), Middleware(ExposeAbort)]
    if allowed_hosts is not None:
        middleware.append(Middleware(HostOriginGuard, allowed=list(allowed_hosts)))
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan_for(hub),
                    exception_handlers={HTTPException: http_error})
    app.state.arena = arena
    app.state.bot_threads = anyio.CapacityLimiter(BOT_THREADS)
    app.state.bot_requests = Counter()
    app.state.rooms = hub
    return app
