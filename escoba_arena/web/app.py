"""The Starlette app of the web arena: a JSON API under ``/api`` and the static pages.

Every request is validated; a bad one gets a 4xx with ``{"error": "<what is wrong>"}``. Games live
in memory (at most ``MAX_GAMES``, the oldest dropped first). Files are read only under the data
directories the server was started with (``files.DataRoots``).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agents.registry import REGISTRY, make_agent, parse_spec
from agents.tournament.replay import ReplayError
from escoba_env.rules import SEVENS_RULES, Rules

from .files import DataRoots, load_results, matching_replays, read_replay_lines
from .game import AgentFailure, WebGame
from .replay import replay_frames

LOG = logging.getLogger("escoba_arena.web")
STATIC = Path(__file__).with_name("static")
MAX_GAMES = 100
MAX_BODY = 8 * 1024 * 1024
MAX_SPEC = 200
NEURAL = "neural"
"""The spec alias of the shipped neural agent (``checkpoint:<agents/pretrained/escoba_2p.pt>``)."""
FALLBACK = "expert"


class ApiError(Exception):
    """A request the API refuses: ``status`` and a message for the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def shipped_checkpoint() -> Path | None:
    """Return the shipped neural agent's checkpoint (``agents/pretrained/escoba_2p.pt``), or None."""
    import agents

    path = Path(agents.__file__).with_name("pretrained") / "escoba_2p.pt"
    return path if path.is_file() else None


class Arena:
    """The server's state: data roots, games in memory, bot time limit."""

    def __init__(self, roots: list[str | Path], bot_timeout: float = 30.0):
        self.roots = DataRoots(roots)
        self.bot_timeout = float(bot_timeout)
        self.games: OrderedDict[str, WebGame] = OrderedDict()
        self.settings: dict[str, dict] = {}
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ agents

    def resolve_spec(self, spec: Any) -> str:
        """Return the registry spec for a browser spec; ApiError for an unknown or unsafe one."""
        if not isinstance(spec, str) or not spec.strip() or len(spec) > MAX_SPEC:
            raise ApiError(400, f"an opponent is an agent spec string (at most {MAX_SPEC} characters), "
                                f"got {spec!r}")
        spec = spec.strip()
        if spec == NEURAL or spec.startswith(NEURAL + ","):
            path = shipped_checkpoint()
            if path is None:
                raise ApiError(400, "the shipped neural agent (agents/pretrained/escoba_2p.pt) is missing")
            return f"checkpoint:{path}" + spec[len(NEURAL):]
        try:
            name, raw = parse_spec(spec)
        except ValueError as exc:
            raise ApiError(400, " ".join(str(exc).split())) from None
        if name == "checkpoint":
            # Only checkpoints under the data directories (or the shipped one) may be loaded.
            path = Path(raw.get("path", "")).resolve()
            shipped = shipped_checkpoint()
            inside = any(path.is_relative_to(r) for r in self.roots.roots)
            if not (inside or (shipped is not None and path == shipped.resolve())):
                raise ApiError(400, f"checkpoint {raw.get('path')!r} is not under the server's data "
                                    "directories; use 'neural' for the shipped agent")
        return spec

    def make_bots(self, rules: Rules, seat: int, opponents: list[str], seed: int
                  ) -> tuple[dict[int, Any], dict[int, str], dict[int, str], str | None]:
        """Return (bots, specs, labels, note) for every seat but ``seat``."""
        p = rules.num_players
        seats = [s for s in range(p) if s != seat]
        note = None
        if not opponents:
            opponents = [NEURAL]
        if len(opponents) not in (1, len(seats)):
            raise ApiError(400, f"give 1 opponent spec or {len(seats)} (one per bot seat), "
                                f"got {len(opponents)}")
        shown = list(opponents) * (len(seats) if len(opponents) == 1 else 1)
        bots, specs, labels = {}, {}, {}
        for s, given in zip(seats, shown, strict=True):
            spec = self.resolve_spec(given)
            try:
                bot = make_agent(spec, rules=rules, seed=seed + s)
            except Exception as exc:  # any agent's constructor: a clear 400, never a server error
                reason = " ".join(str(exc).split())
                if given.strip() != NEURAL:
                    raise ApiError(400, f"cannot build opponent {given!r}: {reason}") from None
                note = f"the shipped neural agent does not play these rules ({reason}); playing {FALLBACK}"
                given, spec = FALLBACK, FALLBACK
                bot = make_agent(spec, rules=rules, seed=seed + s)
            bots[s], specs[s] = bot, spec
            if getattr(bot, "needs_state", False):
                cheat = f"{given} sees every hand and the stock (a cheating reference, not a fair opponent)"
                note = cheat if note is None else f"{note}; {cheat}"
            label = given.split(":", 1)[0].split(",", 1)[0]
            partner = rules.partnerships and rules.side_of(s) == rules.side_of(seat)
            labels[s] = f"partner {label}" if partner else f"{label} #{s}"
        return bots, specs, labels, note

    # ------------------------------------------------------------------ games

    def new_game(self, body: Any) -> tuple[str, WebGame]:
        """Create a game from a validated request body; return (id, game)."""
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        known = {"rules", "opponents", "seat", "seed", "max_rounds"}
        unknown = sorted(set(body) - known)
        if unknown:
            raise ApiError(400, f"unknown field(s) {unknown}; known: {sorted(known)}")
        rules_d = body.get("rules", {})
        if not isinstance(rules_d, dict):
            raise ApiError(400, "rules must be a JSON object of Rules options")
        try:
            rules = Rules.from_dict(rules_d)
        except (ValueError, TypeError) as exc:
            raise ApiError(400, f"bad rules: {' '.join(str(exc).split())}") from None
        seat = _int_field(body, "seat", 0, 0, rules.num_players - 1)
        seed = body.get("seed")
        seed = secrets.randbelow(2**31) if seed is None else _int_field(body, "seed", 0, 0, 2**62)
        max_rounds = body.get("max_rounds")
        if max_rounds is not None:
            max_rounds = _int_field(body, "max_rounds", 1, 1, 10_000)
        opponents = body.get("opponents", [])
        if isinstance(opponents, str):
            opponents = [opponents]
        if not isinstance(opponents, list):
            raise ApiError(400, "opponents must be a list of agent specs")
        bots, specs, labels, note = self.make_bots(rules, seat, opponents, seed)
        try:
            game = WebGame(rules, bots, specs, seat, seed, max_rounds=max_rounds, labels=labels,
                           bot_timeout=self.bot_timeout, note=note)
        except AgentFailure as exc:  # pragma: no cover - WebGame reports bot failures in its view
            raise ApiError(502, str(exc)) from None
        gid = secrets.token_urlsafe(9)
        with self.lock:
            self.games[gid] = game
            self.settings[gid] = {"rules": rules.to_dict(), "opponents": opponents, "seat": seat,
                                  "seed": seed, "max_rounds": max_rounds}
            while len(self.games) > MAX_GAMES:
                old, _ = self.games.popitem(last=False)
                self.settings.pop(old, None)
        return gid, game

    def answer(self, gid: str, game: WebGame, view: dict | None = None) -> dict:
        """Return the JSON answer about game ``gid``: its settings and the human's view.

        The seed fixes every deal, so it is shown only once the game is over.
        """
        view = game.view() if view is None else view
        settings = dict(self.settings[gid])
        if not view["done"]:
            settings.pop("seed")
        return {"id": gid, "settings": settings, "view": view}

    def game(self, gid: str) -> WebGame:
        """Return the game ``gid``; ApiError 404 if there is none."""
        with self.lock:
            game = self.games.get(gid)
        if game is None:
            raise ApiError(404, f"no game {gid!r} (games are kept in memory while the server runs)")
        return game


def _int_field(body: dict, key: str, default: int, low: int, high: int) -> int:
    v = body.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ApiError(400, f"{key} must be an integer from {low} to {high}, got {v!r}")
    return v


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
