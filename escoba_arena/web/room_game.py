"""One game of a room (``RoomGame``): people and bots at one table, each seat shown only its own view.

Unlike the single-player ``WebGame`` no bot moves by itself: the room asks for one bot move at a
time (``bot_job``: the pool computes it) and plays it, so that every move is shown to every
connection at once. ``seed`` is the engine's seed of the deal (the room keys its deals: ``deal_key``).
"""

from __future__ import annotations

from typing import Any

from agents.tournament.replay import FORMAT
from escoba_env.rulebook.capture import capture_options
from escoba_env.rulebook.cards import cards_of, mask_of
from escoba_env.rulebook.rules import Rules

from .bot_pool import BotPool, pooled, shared_pool
from .game import WebGame
from .guard import short_repr
from .one_game import OneGame


class RoomGame(WebGame):
    """One game of a room: ``humans`` are the seats played by people, the rest by ``bots``.

    Unlike ``WebGame`` no bot moves by itself: the room asks for one bot move at a time
    (``bot_job``, ``bot_move``) and plays it with ``apply``, so that every move is shown at once.
    """

    def __init__(self, rules: Rules, bots: dict[int, Any], specs: dict[int, str], humans: set[int],
                 seed: int, game_id: int, names: list[str], *, max_rounds: int | None = None,
                 bot_timeout: float = 10.0, pool: BotPool | None = None, client: str = ""):
        self.rules, self.specs, self.humans = rules, dict(specs), set(humans)
        self.bots = {s: pooled(b) for s, b in bots.items()}
        self.pool, self.client = pool or shared_pool(), client
        self.seed, self.game_id = int(seed), int(game_id)
        self.seat = -1
        self.max_rounds, self.bot_timeout, self.note = max_rounds, bot_timeout, None
        self.names = list(names)
        self.rules_dict = rules.to_dict()
        """The rules as a dict, made once: every view of every seat carries them."""
        self.state = OneGame(rules, max_rounds)
        self.state.game.reset(self.seed, game_id=self.game_id)
        self.scripted = False
        self.log: list[dict] = []
        self.rounds: list[dict] = []
        self.error: str | None = None
        self.moves_played = 0
        self.deal_entries: list[int] = []
        self._new_round()

    def _run_bots(self) -> None:  # the room drives the bots, one move at a time
        """Do nothing: see ``bot_move``."""

    def bot_to_act(self) -> int:
        """Return the bot seat to act, or -1 (a person is to act, or the game is over)."""
        if self.done or self.state.to_act in self.humans:
            return -1
        return self.state.to_act

    def bot_move(self) -> tuple[int, int, int]:
        """Return (seat, card, capture mask) of the bot to act, waiting in this thread for the pool."""
        seat = self.bot_to_act()
        card, capture = self._bot_move(seat)
        return seat, card, capture

    def moves_for(self, seat: int) -> dict[int, list[list[int]]]:
        """Return the legal cards -> capture options of ``seat`` (empty unless it is to act)."""
        st = self.state
        if self.done or seat < 0 or st.to_act != seat:
            return {}
        return {c: [cards_of(o) for o in capture_options(c, st.table, self.rules)] or [[]]
                for c in cards_of(st.legal)}

    def apply(self, seat: int, card: int, capture: list[int]) -> None:
        """Play ``card`` taking ``capture`` for ``seat``; ValueError (nothing changes) if not legal."""
        if self.done:
            raise ValueError("the game is over")
        if self.state.to_act != seat:
            raise ValueError("it is not this seat's turn")
        moves = self.moves_for(seat)
        if card not in moves:
            raise ValueError(f"card {card} is not a legal card to play now (legal: {sorted(moves)})")
        want = sorted(capture)
        if want not in [sorted(o) for o in moves[card]]:
            raise ValueError(f"{short_repr(want)} is not a capture option of card {card} "
                             f"(options: {moves[card]})")
        self._execute(seat, card, mask_of(want))
        self.moves_played += 1

    def fail(self, message: str) -> None:
        """Stop the game with ``message`` (a bot failed)."""
        self.error = f"{message}; the game was stopped"
        self.log.append({"type": "error", "message": self.error})

    def view_for(self, seat: int) -> dict:
        """Return what ``seat`` may see (``-1``: a spectator): never another hand or the stock order."""
        return {**self.view_shared(), **self.view_personal(seat)}

    def view_shared(self) -> dict:
        """Return the part of every seat's view that is the same for all: public information only."""
        st, r = self.state, self.rules
        p = r.num_players
        return {
            "rules": self.rules_dict, "names": self.names, "side_names": self.team_names(),
            "round": len(self.rounds), "dealer": self.rounds[-1]["dealer"],
            "to_act": -1 if self.done else st.to_act, "table": cards_of(st.table),
            "hand_counts": [st.hand(q).bit_count() for q in range(p)], "stock": st.stock_left,
            "scores": st.scores(), "sides": self.side_summaries(),
            "done": self.done, "winner": st.winner if st.done else -1, "truncated": st.truncated,
            "error": self.error, "moves_played": self.moves_played,
            "log": self.log[self._log_start():], "log_start": self._log_start(),
        }

    def view_personal(self, seat: int) -> dict:
        """Return the part of the view that is ``seat``'s own: its hand and its legal moves."""
        moves = self.moves_for(seat) if seat in self.humans else {}
        return {"seat": seat, "my_side": self.rules.side_of(seat) if seat >= 0 else -1,
                "your_turn": bool(moves), "hand": cards_of(self.state.hand(seat)) if seat >= 0 else [],
                "moves": [{"card": c, "options": o} for c, o in moves.items()]}

    def _log_start(self) -> int:
        """Return where the log shown starts: the deal of the previous round (a message stays small)."""
        deals = self.deal_entries
        return deals[-2] if len(deals) >= 2 else 0

    def _new_round(self) -> None:
        self.deal_entries.append(len(self.log))
        super()._new_round()

    def team_names(self) -> list[str]:
        """Return the display name of each scoring side (the seats' names)."""
        r = self.rules
        return [" + ".join(self.names[q] for q in range(r.num_players) if r.side_of(q) == s)
                for s in range(r.num_sides)]

    def record(self, labels: list[str], extra: dict) -> dict:
        """Return the finished game as one ``escoba-replay/1`` record; ValueError before the end."""
        st = self.state
        if not st.done:
            raise ValueError("the record is available once the game is over")
        return {"format": FORMAT, "seed": self.seed, "game_id": self.game_id, "rotation": 0,
                "rules": self.rules.to_dict(), "mode": "games", "max_rounds": self.max_rounds,
                "lineup": list(labels), "seats": list(labels), "rounds": self.rounds,
                "final_scores": st.scores(), "winner": st.winner, "truncated": st.truncated, **extra}


__all__ = ["RoomGame"]
