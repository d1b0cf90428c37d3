"""The Starlette app of the web arena: a JSON API under ``/api`` and the static pages.

Every request is validated; a bad one gets a 4xx with ``{"error": "<what is wrong>"}``. Games live
in memory (``lobby.Arena``). Files are read only under the data directories the server was started
with (``files.DataRoots``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agents.registry import REGISTRY
from agents.tournament.replay import ReplayError
from escoba_env.rules import SEVENS_RULES, Rules

from .files import load_results, matching_replays, read_replay_lines
from .lobby import ApiError, Arena, shipped_checkpoint
from .replay import replay_frames

LOG = logging.getLogger("escoba_arena.web")
STATIC = Path(__file__).with_name("static")
MAX_BODY = 8 * 1024 * 1024


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _json_body(request: Request) -> Any:
    # Requiring a JSON content type makes a cross-site form or script POST need a CORS preflight,
    # which this server never grants: other web pages cannot drive it.
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise ApiError(415, f"send the request body as application/json, not {kind or 'no content type'}")
    body = await request.body()
    if len(body) > MAX_BODY:
        raise ApiError(413, f"request body larger than {MAX_BODY // 2**20} MB")
    try:
        return json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the request body is not JSON ({exc})") from None


def _handler(fn):
    """Wrap an endpoint so that ApiError and bad input become JSON 4xx answers."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except ApiError as exc:
            return _error(exc.status, exc.message)
        except FileNotFoundError as exc:
            return _error(404, str(exc))
        except ReplayError as exc:
            return _error(422, " ".join(str(exc).split()))
        except ValueError as exc:
            return _error(400, " ".join(str(exc).split()))
        except Exception as exc:  # a bug: logged, answered as JSON, the server goes on
            LOG.exception("error in %s", request.url.path)
            return _error(500, f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}")

    endpoint.__name__ = fn.__name__
    return endpoint


def _query(request: Request, key: str) -> str:
    v = request.query_params.get(key)
    if v is None:
        raise ApiError(400, f"missing query parameter {key!r}")
    return v


def create_app(roots: list[str | Path] | None = None, bot_timeout: float = 30.0,
               allowed_hosts: list[str] | None = None) -> Starlette:
    """Return the arena app serving replays and results under ``roots`` (default: none).

    ``allowed_hosts`` (default: any) are the Host header names it answers; the command line gives
    the loopback names when it binds 127.0.0.1, so that a web page that rebinds its own domain name
    to this machine cannot call the API.
    """
    from starlette.concurrency import run_in_threadpool

    arena = Arena(list(roots or []), bot_timeout)

    @_handler
    async def info(request: Request) -> Response:
        agents = [{"name": s.name, "params": list(s.params), "help": s.help} for s in REGISTRY.values()]
        return JSONResponse({"agents": agents, "neural": shipped_checkpoint() is not None,
                             "default_rules": Rules().to_dict(), "sevens_rules": list(SEVENS_RULES),
                             "files": arena.roots.listing()})

    @_handler
    async def create(request: Request) -> Response:
        body = await _json_body(request)
        gid, game = await run_in_threadpool(arena.new_game, body)
        return JSONResponse(arena.answer(gid, game), status_code=201)

    @_handler
    async def show(request: Request) -> Response:
        gid = request.path_params["gid"]
        game = arena.game(gid)

        def run() -> dict:
            # Wait for a move in progress (bots included) so that the view is whole.
            if not game.lock.acquire(timeout=arena.bot_timeout + 5):
                raise ApiError(409, "the game is busy with a move")
            try:
                return arena.answer(gid, game)
            finally:
                game.lock.release()

        return JSONResponse(await run_in_threadpool(run))

    @_handler
    async def move(request: Request) -> Response:
        gid = request.path_params["gid"]
        game = arena.game(gid)
        body = await _json_body(request)
        if not isinstance(body, dict) or set(body) - {"card", "capture"}:
            raise ApiError(400, "a move is {\"card\": id, \"capture\": [table card ids]}")
        card, capture = body.get("card"), body.get("capture", [])
        if isinstance(card, bool) or not isinstance(card, int):
            raise ApiError(400, f"card must be a card id (an integer), got {card!r}")
        if not isinstance(capture, list) or not all(isinstance(c, int) and not isinstance(c, bool)
                                                    for c in capture):
            raise ApiError(400, f"capture must be a list of card ids, got {capture!r}")

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

        return JSONResponse(await run_in_threadpool(run))

    @_handler
    async def rematch(request: Request) -> Response:
        gid = request.path_params["gid"]
        arena.game(gid)
        await _json_body(request)
        gid2, game = await run_in_threadpool(arena.new_game, dict(arena.settings[gid]))
        return JSONResponse(arena.answer(gid2, game), status_code=201)

    @_handler
    async def game_replay(request: Request) -> Response:
        game = arena.game(request.path_params["gid"])
        try:
            rec = game.replay_record()
        except ValueError as exc:
            raise ApiError(409, str(exc)) from None
        headers = {"Content-Disposition": f'attachment; filename="escoba_{game.seed}.jsonl"'}
        return Response(json.dumps(rec, separators=(",", ":")) + "\n", media_type="application/x-ndjson",
                        headers=headers)

    @_handler
    async def game_frames(request: Request) -> Response:
        game = arena.game(request.path_params["gid"])
        try:
            rec = game.replay_record()
        except ValueError as exc:
            raise ApiError(409, str(exc)) from None
        return JSONResponse(await run_in_threadpool(replay_frames, rec, "this game"))

    @_handler
    async def files(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(arena.roots.listing))

    @_handler
    async def replay_games(request: Request) -> Response:
        name = _query(request, "file")
        path = arena.roots.resolve(name, ".jsonl")
        out = []
        for k, line in enumerate(await run_in_threadpool(read_replay_lines, path)):
            try:
                rec = json.loads(line)
                out.append({"game": k, "seats": rec["seats"], "game_id": rec["game_id"],
                            "rotation": rec["rotation"], "rounds": len(rec["rounds"]),
                            "final_scores": rec["final_scores"], "winner": rec["winner"]})
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ApiError(422, f"{name}:{k + 1}: not a replay record ({type(exc).__name__})") from None
        return JSONResponse({"file": name, "games": out})

    @_handler
    async def replay_file_frames(request: Request) -> Response:
        name = _query(request, "file")
        k = request.query_params.get("game", "0")
        if not k.isdigit():
            raise ApiError(400, f"game must be a game number in the file, got {k!r}")
        lines = await run_in_threadpool(read_replay_lines, arena.roots.resolve(name, ".jsonl"))
        if int(k) >= len(lines):
            raise ApiError(404, f"{name} has {len(lines)} games; there is no game {k}")
        return JSONResponse(await run_in_threadpool(replay_frames, lines[int(k)], f"{name}:{int(k) + 1}"))

    @_handler
    async def replay_upload(request: Request) -> Response:
        body = await _json_body(request)
        if not isinstance(body, dict):
            raise ApiError(400, "send one replay record (a JSON object)")
        return JSONResponse(await run_in_threadpool(replay_frames, body, "uploaded replay"))

    @_handler
    async def results(request: Request) -> Response:
        name = _query(request, "file")
        data = await run_in_threadpool(load_results, arena.roots.resolve(name, ".json"))
        replays = await run_in_threadpool(matching_replays, arena.roots, data)
        return JSONResponse({"file": name, "results": data, "replays": replays})

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def not_found(request: Request) -> Response:
        return _error(404, f"no API endpoint {request.method} {request.url.path}")

    routes = [
        Route("/", index),
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
        Route("/api/{rest:path}", not_found, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        Mount("/", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else []
    app = Starlette(routes=routes, middleware=middleware)
    app.state.arena = arena
    return app
