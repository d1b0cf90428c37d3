"""One browser game: a human seat against bots, on a one-game engine, and what the human may see.

``WebGame`` drives one game (``one_game.OneGame``) behind three calls: ``moves()`` (the human's
legal cards and their capture options), ``play(card, capture)`` and ``view()``. ``view()`` is the
only thing the browser receives: the human's hand, the table, public counts and the public log of
moves; never another hand, the deck or the stock order. Bots run in a thread with a time limit: a
bot that raises or runs out of time ends the game with a message and leaves the server running.
"""

from __future__ import annotations

import threading
from typing import Any

from escoba_env.executors.game import capture_action
from escoba_env.rulebook.capture import capture_options
from escoba_env.rulebook.cards import JOKER_MASK, OROS, SEVENS, VELO, cards_of, mask_of, move_words
from escoba_env.rulebook.rules import Rules

from .bot_pool import BotPool, Job, pooled, shared_pool
from .bot_worker import AgentFailure, move_seed
from .one_game import OneGame, Step

REPLAY_FORMAT = "escoba-replay/1"
HUMAN_SPEC = "human"


def side_summary(mask: int, escobas: int) -> dict:
    """Return the public summary of a captured pile: cards, oros, sevens, velo, jokers, escobas."""
    return {"count": mask.bit_count(), "oros": (mask & OROS).bit_count(),
            "sevens": (mask & SEVENS).bit_count(), "velo": bool(mask >> VELO & 1),
            "jokers": (mask & JOKER_MASK).bit_count(), "escobas": escobas}


class WebGame:
    """A game between the human at ``seat`` and ``bots`` (seat -> agent)."""

    game_id = 0
    """The engine's game id of the deal (the arena's own games deal game 0 of their seed)."""

    def __init__(self, rules: Rules, bots: dict[int, Any], specs: dict[int, str], seat: int, seed: int,
                 *, max_rounds: int | None = None, labels: dict[int, str] | None = None,
                 bot_timeout: float = 30.0, note: str | None = None, dealer: int | None = None,
                 deck: list[int] | None = None, pool: BotPool | None = None, client: str = ""):
        self.rules, self.specs, self.seat, self.seed = rules, specs, seat, seed
        self.bots = {s: pooled(b) for s, b in bots.items()}
        self.pool, self.client = pool or shared_pool(), client
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

    def bot_job(self, seat: int) -> Job:
        """Return the job of the bot move at ``seat``: a copy of the game, and the move's own seed."""
        rnd = len(self.rounds), len(self.rounds[-1]["actions"])
        return Job(self.bots[seat], self.state.clone(), seat,
                   move_seed(self.seed, self.game_id, seat, *rnd), self.bot_timeout,
                   f"bot {self.specs[seat]!r} at seat {seat}", self.client)

    def _bot_move(self, seat: int) -> tuple[int, int]:
        """Return the (card, capture mask) the bot at ``seat`` plays, found in a worker of the pool."""
        return self.pool.decide(self.bot_job(seat))

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
