"""One browser game: a human seat against bots, on a one-game engine, and what the human may see.

``WebGame`` drives one game (``one_game.OneGame``) behind three calls: ``moves()`` (the human's
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

from escoba_env.executors.game import capture_action
from escoba_env.rulebook.capture import capture_options
from escoba_env.rulebook.cards import JOKER_MASK, OROS, SEVENS, VELO, cards_of, mask_of, move_words
from escoba_env.rulebook.rules import Rules

from .one_game import OneGame, Step

REPLAY_FORMAT = "escoba-replay/1"
HUMAN_SPEC = "human"


class AgentFailure(RuntimeError):
    """A bot raised, returned an illegal action or ran past its time limit."""


def call_with_timeout(fn: Callable[[], Any], timeout: float, what: str, limit: float | None = None,
                      cancel: Callable[[], None] | None = None) -> Any:
    """Return ``fn()`` run in a daemon thread; raise AgentFailure if it raises or exceeds ``timeout`` s.

    ``limit`` is the time limit the message names (default ``timeout``: a move's limit may be
    spread over several calls); ``cancel`` is called when the time runs out (``Agent.cancel``: a
    language model's requests are hung up on).
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # any bot failure is reported, never raised in the server
            box["error"] = exc

    t = threading.Thread(target=run, name=what, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        if cancel is not None:
            cancel()
        raise AgentFailure(f"{what} took longer than {timeout if limit is None else limit:g} s")
    if "error" in box:
        exc = box["error"]
        raise AgentFailure(f"{what} failed: {type(exc).__name__}: {' '.join(str(exc).split())}")
    return box["value"]


def side_summary(mask: int, escobas: int) -> dict:
    """Return the public summary of a captured pile: cards, oros, sevens, velo, jokers, escobas."""
    return {"count": mask.bit_count(), "oros": (mask & OROS).bit_count(),
            "sevens": (mask & SEVENS).bit_count(), "velo": bool(mask >> VELO & 1),
            "jokers": (mask & JOKER_MASK).bit_count(), "escobas": escobas}


class WebGame:
    """A game between the human at ``seat`` and ``bots`` (seat -> agent)."""

    def __init__(self, rules: Rules, bots: dict[int, Any], specs: dict[int, str], seat: int, seed: int,
                 *, max_rounds: int | None = None, labels: dict[int, str] | None = None,
                 bot_timeout: float = 30.0, note: str | None = None, dealer: int | None = None,
                 deck: list[int] | None = None):
        self.rules, self.bots, self.specs, self.seat, self.seed = rules, bots, specs, seat, seed
        self.max_rounds, self.bot_timeout, self.note = max_rounds, bot_timeout, note
        p = rules.num_players
        labels = labels or {}
        self.names = ["You" if s == seat else labels.get(s, f"{specs[s]} #{s}") for s in range(p)]
        self.state = OneGame(rules, max_rounds)
        self.state.reset(seed, dealer=dealer, deck=deck)
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
        return self.state.done or self.error is not None

    def _side_mask(self, piles, side: int) -> int:
        r = self.rules
        out = 0
        for q in range(r.num_players):
            if r.side_of(q) == side:
                out |= int(piles[q])
        return out

    def _new_round(self) -> None:
        """Record the round just dealt (for the replay) and log its public start."""
        st = self.state
        dealer = st.dealer
        self.rounds.append({"dealer": dealer, "deck": st.deck(), "actions": []})
        self.log.append({"type": "deal", "round": st.round_index + 1, "dealer": dealer,
                         "taken": cards_of(st.piles()[dealer]), "escobas": st.escobas()[dealer]})

    def moves(self) -> dict[int, list[list[int]]]:
        """Return the human's legal cards -> capture options (lists of table cards; [[]] = lay it down)."""
        st = self.state
        if self.done or st.to_act != self.seat:
            return {}
        table = st.table
        return {c: [cards_of(o) for o in capture_options(c, table, self.rules)] or [[]]
                for c in cards_of(st.legal)}

    # ------------------------------------------------------------------ moves

    def _step(self, action: int) -> Step:
        actor = self.state.to_act
        info = self.state.step(action)
        self.rounds[-1]["actions"].append({"actor": actor, "action": int(action),
                                           "captured": cards_of(info.captured), "escoba": info.escoba})
        return info

    def _execute(self, seat: int, card: int, capture: int) -> None:
        """Play ``card`` taking ``capture`` as play/take actions on the engine, and log it."""
        st = self.state
        table_before = st.table
        last_capturer = st.last_capturer
        piles = st.piles()
        escobas = st.escobas()
        info = self._step(card)
        while st.pending >= 0:
            info = self._step(capture_action(st.legal, st.taken, card, capture))
        captured = info.captured
        self.log.append({"type": "move", "seat": seat, "card": card,
                         "captured": cards_of(captured & ~(1 << card)), "escoba": info.escoba,
                         "words": move_words(card, captured & ~(1 << card)),  # the one phrasing
                         "table_before": cards_of(table_before)})
        if not info.round_over:
            return
        # The round ended with this move: the cards left on the table go to the last capturer.
        piles[seat] |= captured
        escobas[seat] += info.escoba
        last = seat if captured else last_capturer
        left = (table_before | (1 << card)) & ~captured
        if left:
            self.log.append({"type": "last_cards", "seat": last, "cards": cards_of(left)})
            if last >= 0:
                piles[last] |= left
        r = self.rules
        sides = [side_summary(mask_of(c for q in range(r.num_players) if r.side_of(q) == s
                                       for c in cards_of(piles[q])),
                               sum(escobas[q] for q in range(r.num_players) if r.side_of(q) == s))
                 for s in range(r.num_sides)]
        rnd = self.rounds[-1]
        rnd["points"], rnd["categories"], rnd["scores"] = info.points, info.categories, info.scores
        self.log.append({"type": "round_over", "points": rnd["points"], "categories": rnd["categories"],
                         "scores": rnd["scores"], "sides": sides})
        if info.game_over:
            self.log.append({"type": "game_over", "winner": info.winner, "truncated": info.truncated,
                             "scores": rnd["scores"]})
        else:
            self._new_round()

    def play(self, card: int, capture: list[int]) -> None:
        """Play the human's ``card`` taking ``capture`` (one of its options), then let the bots move.

        Raises ValueError (and changes nothing) when it is not the human's turn, the card is not a
        legal card or the capture is not one of its options.
        """
        if self.done:
            raise ValueError("the game is over")
        if self.state.to_act != self.seat:
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
        """Return the (card, capture mask) the bot at ``seat`` plays, found on a copy of the game."""
        bot, spec = self.bots[seat], self.specs[seat]
        sim = self.state.clone()
        card = -1
        deadline = time.monotonic() + self.bot_timeout
        while True:
            obs, mask = sim.observe(seat)
            state = sim.agent_state() if getattr(bot, "needs_state", False) else None
            left = max(0.01, deadline - time.monotonic())
            a = call_with_timeout(lambda o=obs, m=mask, s=state: bot.act_batch(o, m, s)[0], left,
                                  f"bot {spec!r} at seat {seat}", self.bot_timeout,
                                  getattr(bot, "cancel", None))
            try:
                a = int(a)
            except (TypeError, ValueError):
                raise AgentFailure(f"bot {spec!r} at seat {seat} returned {a!r}, not an action") from None
            if not (0 <= a < mask.shape[1] and mask[0, a]):
                raise AgentFailure(f"bot {spec!r} at seat {seat} returned the illegal action {a}")
            if card < 0:
                card = a
            info = sim.step(a)
            if sim.pending < 0 or sim.to_act != seat or sim.done:
                break
        return card, info.captured & ~(1 << card)

    def _run_bots(self) -> None:
        """Let the bots move until it is the human's turn or the game is over."""
        st = self.state
        while self.error is None and not st.done and st.to_act != self.seat:
            seat = st.to_act
            try:
                card, capture = self._bot_move(seat)
            except AgentFailure as exc:
                self.error = f"{exc}; the game was stopped"
                self.log.append({"type": "error", "message": self.error})
                return
            self._execute(seat, card, capture)

    # ------------------------------------------------------------------ views

    def side_summaries(self) -> list[dict]:
        """Return each side's public pile summary (counts, oros, sevens, velo, jokers, escobas)."""
        st, r = self.state, self.rules
        piles, escobas = st.piles(), st.escobas()
        return [side_summary(self._side_mask(piles, s),
                             sum(escobas[q] for q in range(r.num_players) if r.side_of(q) == s))
                for s in range(r.num_sides)]

    def view(self) -> dict:
        """Return what the human's seat may see: own hand, table, public counts and the public log."""
        st, r = self.state, self.rules
        p = r.num_players
        sides = self.side_summaries()
        moves = self.moves()
        return {
            "rules": r.to_dict(), "seat": self.seat, "names": self.names,
            "side_names": self.side_names(), "my_side": r.side_of(self.seat),
            # The round dealt last (once the game is over the engine has moved past it).
            "round": len(self.rounds), "dealer": self.rounds[-1]["dealer"],
            "to_act": -1 if self.done else st.to_act,
            "your_turn": bool(moves), "hand": cards_of(st.hand(self.seat)),
            "table": cards_of(st.table),
            "hand_counts": [st.hand(q).bit_count() for q in range(p)],
            "stock": st.stock_left, "scores": st.scores(),
            "sides": sides,
            "moves": [{"card": c, "options": o} for c, o in moves.items()],
            "done": self.done, "winner": st.winner if st.done else -1,
            "truncated": st.truncated, "error": self.error, "note": self.note,
            "replayable": st.done and not self.scripted, "log": self.log,
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
        st = self.state
        if not st.done:
            raise ValueError("the replay is available once the game is over (it shows every hand)")
        if self.scripted:
            raise ValueError("a scripted game (explicit deck or dealer) cannot be written as a replay: "
                             "it is not dealt from its seed")
        seats = [HUMAN_SPEC if s == self.seat else self.specs[s] for s in range(self.rules.num_players)]
        return {"format": REPLAY_FORMAT, "seed": int(self.seed), "game_id": 0, "rotation": 0,
                "rules": self.rules.to_dict(), "mode": "games", "max_rounds": self.max_rounds,
                "lineup": seats, "seats": seats, "rounds": self.rounds,
                "final_scores": st.scores(), "winner": st.winner, "truncated": st.truncated}
