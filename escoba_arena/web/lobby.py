"""The games a server holds and how a browser's request becomes one: rules, seats, opponents.

``Arena`` validates a new-game request (rules, seat, seed, opponents by agent spec), builds the
bots through ``agents.registry`` and keeps the games in memory (at most ``MAX_GAMES``, the oldest
dropped first). A spec may load a checkpoint only from the shipped agent or the data directories.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from agents.registry import default_opponent, make_agent, parse_spec
from escoba_env.rules import Rules

from .files import DataRoots
from .game import AgentFailure, WebGame

MAX_GAMES = 100
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
                given = spec = default_opponent(rules)[0]  # the table's default, as in escoba-play
                note = f"the shipped neural agent does not play these rules ({reason}); playing {spec}"
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
