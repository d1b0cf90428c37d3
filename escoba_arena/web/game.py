"""One browser game: a human seat against bots, on a one-game engine, and what the human may see.

``WebGame`` drives an ``EscobaEngine`` batch of one behind three calls: ``moves()`` (the human's
legal cards and their capture options), ``play(card, capture)`` and ``view()``. ``view()`` is the
only thing the browser receives: the human's hand, the table, public counts and the public log of
moves; never another hand, the deck or the stock order. Bots run in a thread with a time limit: a
bot that raises or runs out of time ends the game with a message and leaves the server running.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from escoba_env.capture import capture_options
from escoba_env.cards import JOKER_MASK, OROS, SEVENS, VELO, cards_of, mask_of
from escoba_env.engine import EscobaEngine, StepInfo
from escoba_env.observation import action_masks, encode
from escoba_env.rules import Rules

CATEGORIES = ("cards", "oros", "velo", "sevens", "escobas")
"""Category points of a round, in the engine's ``StepInfo.round_categories`` keys."""
REPLAY_FORMAT = "escoba-replay/1"
HUMAN_SPEC = "human"


class AgentFailure(RuntimeError):
    """A bot raised, returned an illegal action or ran past its time limit."""


def call_with_timeout(fn: Callable[[], Any], timeout: float, what: str, limit: float | None = None) -> Any:
    """Return ``fn()`` run in a daemon thread; raise AgentFailure if it raises or exceeds ``timeout`` s.

    ``limit`` is the time limit the message names (default ``timeout``: a move's limit may be
    spread over several calls).
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - any bot failure is reported, never raised here
            box["error"] = exc

    t = threading.Thread(target=run, name=f"bot {what}", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise AgentFailure(f"{what} took longer than {timeout if limit is None else limit:g} s")
    if "error" in box:
        exc = box["error"]
        raise AgentFailure(f"{what} failed: {type(exc).__name__}: {' '.join(str(exc).split())}")
    return box["value"]


def _side_summary(mask: int, escobas: int) -> dict:
    return {"count": mask.bit_count(), "oros": (mask & OROS).bit_count(),
            "sevens": (mask & SEVENS).bit_count(), "velo": bool(mask >> VELO & 1),
            "jokers": (mask & JOKER_MASK).bit_count(), "escobas": escobas}


class WebGame:
    """A game between the human at ``seat`` and ``bots`` (seat -> agent) on a one-game engine."""

    def __init__(self, rules: Rules, bots: dict[int, Any], specs: dict[int, str], seat: int, seed: int,
                 *, max_rounds: int | None = None, labels: dict[int, str] | None = None,
                 bot_timeout: float = 30.0, note: str | None = None, dealer: int | None = None,
                 deck: list[int] | None = None):
        self.rules, self.bots, self.specs, self.seat, self.seed = rules, bots, specs, seat, seed
        self.max_rounds, self.bot_timeout, self.note = max_rounds, bot_timeout, note
        p = rules.num_players
        labels = labels or {}
        self.names = ["You" if s == seat else labels.get(s, f"{specs[s]} #{s}") for s in range(p)]
        self.engine = EscobaEngine(1, rules, max_rounds=max_rounds)
        self.engine.reset(seed, dealer=dealer, deck=deck)
        self.scripted = deck is not None or dealer is not None
        self.log: list[dict] = []
        self.rounds: list[dict] = []
        self.error: str | None = None
        self.lock = threading.Lock()
        self._new_round()
        self._run_bots()

    # ------------------------------------------------------------------ state

    @property
    def done(self) -> bool:
        """True once the game is over (or ended by a failing bot)."""
        return bool(self.engine.done[0]) or self.error is not None

    def _side_mask(self, piles, side: int) -> int:
        r = self.rules
        out = 0
        for q in range(r.num_players):
            if r.side_of(q) == side:
                out |= int(piles[q])
        return out

    def _new_round(self) -> None:
        """Record the round just dealt (for the replay) and log its public start."""
        eng = self.engine
        dealer = int(eng.dealer[0])
        self.rounds.append({"dealer": dealer, "deck": [int(c) for c in eng.deck[0]], "actions": []})
        pile = int(eng.piles[0, dealer])
        self.log.append({"type": "deal", "round": int(eng.round_index[0]) + 1, "dealer": dealer,
                         "taken": cards_of(pile), "escobas": int(eng.escobas[0, dealer])})

    def moves(self) -> dict[int, list[list[int]]]:
        """Return the human's legal cards -> capture options (lists of table cards; [[]] = lay it down)."""
        eng = self.engine
        if self.done or int(eng.to_act[0]) != self.seat:
            return {}
        table = int(eng.table[0])
        return {c: [cards_of(o) for o in capture_options(c, table, self.rules)] or [[]]
                for c in cards_of(int(eng.legal[0]))}

    # ------------------------------------------------------------------ moves

    def _step(self, action: int) -> StepInfo:
        eng = self.engine
        actor = int(eng.to_act[0])
        info = eng.step(np.array([action], np.int64))
        self.rounds[-1]["actions"].append({"actor": actor, "action": int(action),
                                           "captured": cards_of(int(info.captured[0])),
                                           "escoba": int(info.escoba[0])})
        return info

    def _execute(self, seat: int, card: int, capture: int) -> None:
        """Play ``card`` taking ``capture`` as play/take actions on the engine, and log it."""
        eng = self.engine
        table_before = int(eng.table[0])
        last_capturer = int(eng.last_capturer[0])
        piles = [int(x) for x in eng.piles[0]]
        escobas = [int(x) for x in eng.escobas[0]]
        info = self._step(card)
        while int(eng.pending[0]) >= 0:
            offered = int(eng.legal[0]) & capture & ~int(eng.taken[0])
            if offered:
                info = self._step(cards_of(offered)[0])
            elif int(eng.legal[0]) >> card & 1:
                info = self._step(card)  # jokers: an option nested in another is taken by the card itself
            else:
                raise RuntimeError("the chosen capture is not among the remaining options")
        captured = int(info.captured[0])
        self.log.append({"type": "move", "seat": seat, "card": card,
                         "captured": cards_of(captured & ~(1 << card)), "escoba": int(info.escoba[0]),
                         "table_before": cards_of(table_before)})
        if not bool(info.round_over[0]):
            return
        # The round ended with this move: the cards left on the table go to the last capturer.
        piles[seat] |= captured
        escobas[seat] += int(info.escoba[0])
        last = seat if captured else last_capturer
        left = (table_before | (1 << card)) & ~captured
        if left:
            self.log.append({"type": "last_cards", "seat": last, "cards": cards_of(left)})
            if last >= 0:
                piles[last] |= left
        r = self.rules
        sides = [_side_summary(mask_of(c for q in range(r.num_players) if r.side_of(q) == s
                                       for c in cards_of(piles[q])),
                               sum(escobas[q] for q in range(r.num_players) if r.side_of(q) == s))
                 for s in range(r.num_sides)]
        rnd = self.rounds[-1]
        rnd["points"] = [int(x) for x in info.round_points[0]]
        rnd["categories"] = {c: [int(x) for x in info.round_categories[c][0]] for c in CATEGORIES}
        rnd["scores"] = [int(x) for x in info.scores[0]]
        self.log.append({"type": "round_over", "points": rnd["points"], "categories": rnd["categories"],
                         "scores": rnd["scores"], "sides": sides})
        if bool(info.game_over[0]):
            self.log.append({"type": "game_over", "winner": int(info.winner[0]),
                             "truncated": bool(info.truncated[0]), "scores": rnd["scores"]})
        else:
            self._new_round()

    def play(self, card: int, capture: list[int]) -> None:
        """Play the human's ``card`` taking ``capture`` (one of its options), then let the bots move.

        Raises ValueError (and changes nothing) when it is not the human's turn, the card is not a
        legal card or the capture is not one of its options.
        """
        if self.done:
            raise ValueError("the game is over")
        if int(self.engine.to_act[0]) != self.seat:
            raise ValueError("it is not your turn")
        moves = self.moves()
        if card not in moves:
            raise ValueError(f"card {card} is not a legal card to play now (legal: {sorted(moves)})")
        want = sorted(capture)
        if want not in [sorted(o) for o in moves[card]]:
            raise ValueError(f"{want} is not a capture option of card {card} (options: {moves[card]})")
        self._execute(self.seat, card, mask_of(want))
        self._run_bots()

    def _bot_move(self, seat: int) -> tuple[int, int]:
        """Return the (card, capture mask) the bot at ``seat`` plays, found on a copy of the engine."""
        bot, spec = self.bots[seat], self.specs[seat]
        sim = self.engine.clone()
        seats, games = np.array([seat]), np.array([0])
        card = -1
        deadline = time.monotonic() + self.bot_timeout
        while True:
            obs = encode(sim, seats, games)
            mask = action_masks(sim, seats, games)
            state = (sim.clone(), games) if getattr(bot, "needs_state", False) else None
            left = max(0.01, deadline - time.monotonic())
            a = call_with_timeout(lambda o=obs, m=mask, s=state: bot.act_batch(o, m, s)[0], left,
                                  f"bot {spec!r} at seat {seat}", self.bot_timeout)
            try:
                a = int(a)
            except (TypeError, ValueError):
                raise AgentFailure(f"bot {spec!r} at seat {seat} returned {a!r}, not an action") from None
            if not (0 <= a < mask.shape[1] and mask[0, a]):
                raise AgentFailure(f"bot {spec!r} at seat {seat} returned the illegal action {a}")
            if card < 0:
                card = a
            info = sim.step(np.array([a], np.int64))
            if int(sim.pending[0]) < 0 or int(sim.to_act[0]) != seat or bool(sim.done[0]):
                break
        return card, int(info.captured[0]) & ~(1 << card)

    def _run_bots(self) -> None:
        """Let the bots move until it is the human's turn or the game is over."""
        eng = self.engine
        while self.error is None and not bool(eng.done[0]) and int(eng.to_act[0]) != self.seat:
            seat = int(eng.to_act[0])
            try:
                card, capture = self._bot_move(seat)
            except AgentFailure as exc:
                self.error = f"{exc}; the game was stopped"
                self.log.append({"type": "error", "message": self.error})
                return
            self._execute(seat, card, capture)

    # ------------------------------------------------------------------ views

    def view(self) -> dict:
        """Return what the human's seat may see: own hand, table, public counts and the public log."""
        eng, r = self.engine, self.rules
        p = r.num_players
        sides = [_side_summary(self._side_mask(eng.piles[0], s),
                               sum(int(eng.escobas[0, q]) for q in range(p) if r.side_of(q) == s))
                 for s in range(r.num_sides)]
        moves = self.moves()
        return {
            "rules": r.to_dict(), "seat": self.seat, "names": self.names,
            "side_names": self.side_names(), "my_side": r.side_of(self.seat),
            "round": int(eng.round_index[0]) + 1, "dealer": int(eng.dealer[0]),
            "to_act": -1 if self.done else int(eng.to_act[0]),
            "your_turn": bool(moves), "hand": cards_of(int(eng.hands[0, self.seat])),
            "table": cards_of(int(eng.table[0])),
            "hand_counts": [int(eng.hands[0, q]).bit_count() for q in range(p)],
            "stock": r.num_cards - int(eng.stock_pos[0]), "scores": [int(x) for x in eng.scores[0]],
            "sides": sides,
            "moves": [{"card": c, "options": o} for c, o in moves.items()],
            "done": self.done, "winner": int(eng.winner[0]) if bool(eng.done[0]) else -1,
            "truncated": bool(eng.truncated[0]), "error": self.error, "note": self.note,
            "replayable": bool(eng.done[0]) and not self.scripted, "log": self.log,
        }

    def side_names(self) -> list[str]:
        """Return the display name of each scoring side."""
        r = self.rules
        if not r.partnerships:
            return list(self.names)
        mine = r.side_of(self.seat)
        return [("Your team" if s == mine else "Their team") + " (" + " + ".join(
            self.names[q] for q in range(r.num_players) if r.side_of(q) == s) + ")" for s in range(2)]

    def replay_record(self) -> dict:
        """Return the finished game as one ``escoba-replay/1`` record (as ``evaluate.py`` writes them).

        Raises ValueError while the game is not over: the record holds every deck.
        """
        eng = self.engine
        if not bool(eng.done[0]):
            raise ValueError("the replay is available once the game is over (it shows every hand)")
        if self.scripted:
            raise ValueError("a scripted game (explicit deck or dealer) cannot be written as a replay: "
                             "it is not dealt from its seed")
        seats = [HUMAN_SPEC if s == self.seat else self.specs[s] for s in range(self.rules.num_players)]
        return {"format": REPLAY_FORMAT, "seed": int(self.seed), "game_id": 0, "rotation": 0,
                "rules": self.rules.to_dict(), "mode": "games", "max_rounds": self.max_rounds,
                "lineup": seats, "seats": seats, "rounds": self.rounds,
                "final_scores": [int(x) for x in eng.scores[0]], "winner": int(eng.winner[0]),
                "truncated": bool(eng.truncated[0])}
