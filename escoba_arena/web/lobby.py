"""The games a server holds and how a browser's request becomes one: rules, seats, opponents.

``Arena`` validates a new-game request (rules, seat, seed, opponents by agent spec), builds the
bots of the specs its ``allow.AllowList`` accepts and keeps the games in memory: at most
``max_games``, the least recently used dropped first, and none idle for longer than
``idle_seconds``; a dropped game answers 410. Server-drawn seeds have 64 random bits.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from agents.spec.shipped_agents import default_opponent
from escoba_env.rulebook.rules import Rules

from .allow import MAX_SPEC, NEURAL, NEURAL_FILE, AllowList, Refused, repo_root
from .bot_pool import BotPool, shared_pool
from .files import DataRoots
from .game import AgentFailure, WebGame
from .guard import ApiError, check_list, short_repr

__all__ = ["MAX_SPEC", "ApiError", "Arena", "shipped_checkpoint"]

MAX_GAMES = 500
"""The most games kept in memory; past it the least recently used one is dropped."""
IDLE_SECONDS = 3600.0
"""A game nobody has touched for this long is dropped."""
MAX_GONE = 10_000
"""How many dropped game ids are remembered, to answer 410 rather than 404."""
MAX_TARGET_SCORE = 100
"""The highest ``target_score`` a request may ask for."""
MAX_ROUNDS = 100
"""The highest ``max_rounds`` a request may ask for."""
SEED_BITS = 64
"""Seeds drawn by the server have this many random bits (``secrets``): the deal hash's whole space."""


def shipped_checkpoint() -> Path | None:
    """Return the shipped neural agent's checkpoint (``agents/pretrained/escoba_2p.pt``), or None."""
    path = repo_root() / NEURAL_FILE
    return path if path.is_file() else None


def request_rules(body: Any, known: set[str]) -> Rules:
    """Return the rules of a request body (a JSON object with only the ``known`` fields); ApiError 400
    for anything else, and for a target score above ``MAX_TARGET_SCORE`` (a game that never ends)."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
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
    if rules.target_score > MAX_TARGET_SCORE:
        raise ApiError(400, f"target_score must be at most {MAX_TARGET_SCORE}, "
                            f"got {short_repr(rules.target_score)}")
    return rules


class Arena:
    """The server's state: data roots, allowed agents, games in memory (LRU, idle expiry), bot time limit."""

    def __init__(self, roots: list[str | Path], bot_timeout: float = 10.0, allow: Iterable[str] = (),
                 max_games: int = MAX_GAMES, idle_seconds: float = IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic, pool: BotPool | None = None):
        self.roots = DataRoots(roots)
        self.pool = pool or shared_pool()
        """Where the bots of every game and room think (``bot_pool``)."""
        self.allow = AllowList(roots, allow)
        self.bot_timeout = float(bot_timeout)
        self.max_games, self.idle_seconds, self.clock = int(max_games), float(idle_seconds), clock
        self.games: OrderedDict[str, WebGame] = OrderedDict()
        self.settings: dict[str, dict] = {}
        self.last_use: dict[str, float] = {}
        self.gone: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ agents

    def resolve_spec(self, spec: Any) -> str:
        """Return the canonical spec of a requested opponent; ApiError 400 if it is not allowed."""
        try:
            return self.allow.check(spec)
        except Refused as exc:
            raise ApiError(400, str(exc)) from None

    def scrub(self, text: str) -> str:
        """Return ``text`` with the server's folders written as data-folder indexes (no server path)."""
        for i, root in enumerate(self.roots.roots):
            text = text.replace(str(root) + "/", f"{i}/").replace(str(root), str(i))
        return text.replace(str(repo_root()) + "/", "")

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
            spec = given = self.resolve_spec(given)
            bot_seed = (seed + s) % 2**SEED_BITS
            try:
                bot = self.allow.build(spec, rules, bot_seed)
            except Exception as exc:  # any agent's constructor: a clear 400, never a server error
                reason = self.scrub(" ".join(str(exc).split()))
                if spec != NEURAL:
                    raise ApiError(400, f"cannot build opponent {spec!r}: {reason}") from None
                given = spec = default_opponent(rules)[0]  # the table's default, as in escoba-play
                note = f"the shipped neural agent does not play these rules ({reason}); playing {spec}"
                bot = self.allow.build(spec, rules, bot_seed)
            bots[s], specs[s] = bot, spec
            if getattr(bot, "needs_state", False):
                cheat = f"{given} sees every hand and the stock (a cheating reference, not a fair opponent)"
                note = cheat if note is None else f"{note}; {cheat}"
            label = given.split(":", 1)[0].split(",", 1)[0]
            partner = rules.partnerships and rules.side_of(s) == rules.side_of(seat)
            labels[s] = f"partner {label}" if partner else f"{label} #{s}"
        return bots, specs, labels, note

    # ------------------------------------------------------------------ games

    def new_game(self, body: Any, client: str = "") -> tuple[str, WebGame]:
        """Create a game from a validated request body for ``client`` (a quota key); return (id, game)."""
        rules = request_rules(body, {"rules", "opponents", "seat", "seed", "max_rounds"})
        seat = _int_field(body, "seat", 0, 0, rules.num_players - 1)
        seed = body.get("seed")
        # A drawn seed has 64 random bits: finding the deal from what a player sees costs 2**64 tries.
        top = 2**SEED_BITS - 1
        seed = secrets.randbits(SEED_BITS) if seed is None else _int_field(body, "seed", 0, 0, top)
        max_rounds = body.get("max_rounds")
        if max_rounds is not None:
            max_rounds = _int_field(body, "max_rounds", 1, 1, MAX_ROUNDS)
        opponents = body.get("opponents", [])
        if isinstance(opponents, str):
            opponents = [opponents]
        opponents = [self.resolve_spec(o) for o in check_list(opponents, "opponents", 3)]
        bots, specs, labels, note = self.make_bots(rules, seat, opponents, seed)
        try:
            game = WebGame(rules, bots, specs, seat, seed, max_rounds=max_rounds, labels=labels,
                           bot_timeout=self.bot_timeout, note=note, pool=self.pool, client=client)
        except AgentFailure as exc:  # pragma: no cover - WebGame reports bot failures in its view
            raise ApiError(502, str(exc)) from None
        gid = secrets.token_urlsafe(12)
        with self.lock:
            self._expire()
            self.games[gid] = game
            self.last_use[gid] = self.clock()
            self.settings[gid] = {"rules": rules.to_dict(), "opponents": opponents, "seat": seat,
                                  "seed": seed, "max_rounds": max_rounds}
            while len(self.games) > self.max_games:
                self._drop(next(iter(self.games)), f"it was dropped to make room (the server keeps the "
                                                   f"{self.max_games} most recently used games)")
        return gid, game

    def _drop(self, gid: str, why: str) -> None:
        """Forget game ``gid``, remembering why (caller holds the lock)."""
        self.games.pop(gid, None)
        self.settings.pop(gid, None)
        self.last_use.pop(gid, None)
        self.gone[gid] = why
        while len(self.gone) > MAX_GONE:
            self.gone.popitem(last=False)

    def _expire(self) -> None:
        """Drop the games idle for longer than ``idle_seconds`` (caller holds the lock)."""
        now = self.clock()
        while self.games:
            gid = next(iter(self.games))
            if now - self.last_use[gid] <= self.idle_seconds:
                break
            self._drop(gid, f"it expired after {self.idle_seconds / 60:g} minutes without a request")

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
        """Return the game ``gid`` and mark it used; ApiError 410 if it was dropped, 404 if it never was."""
        with self.lock:
            self._expire()
            game = self.games.get(gid)
            if game is not None:
                self.games.move_to_end(gid)
                self.last_use[gid] = self.clock()
            gone = self.gone.get(gid)
        if game is None and gone is not None:
            raise ApiError(410, f"game {gid!r} is gone: {gone}")
        if game is None:
            raise ApiError(404, f"no game {short_repr(gid, 40)} (games are kept in memory while the "
                                "server runs)")
        return game


def _int_field(body: dict, key: str, default: int, low: int, high: int) -> int:
    v = body.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ApiError(400, f"{key} must be an integer from {low} to {high}, got {short_repr(v)}")
    return v
