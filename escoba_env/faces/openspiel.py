"""Escoba as an OpenSpiel game: ``pyspiel.load_game("python_escoba")`` (optional extra ``[openspiel]``).

Importing this module registers the game with OpenSpiel; nothing else in ``escoba_env`` imports it,
so OpenSpiel is needed only by code that uses it. Every algorithm of OpenSpiel that works on a
Python game (IS-MCTS, MCCFR, NFSP, ...) then runs on Escoba.

Game parameters: every ``Rules`` field (``num_players``, ``partnerships``, ``target_score``,
``sevens_rule``, ``bonus_sweeps``, ``prefer_single``, ``last_play_escoba``, ``initial_fifteen``,
``jokers``, ``mesa_deal``), ``episode`` (``"round"``, default: one round; or ``"game"``: rounds
until a side wins) and ``max_rounds`` (``"game"`` only, default 100: a game still undecided after
that many rounds ends as a draw, every return 0).

- **Chance** is the deal, one card at a time in the rules' deal order: first the first dealer (a
  chance node over the seats, uniform), then, for each deal, three rounds of one card to each
  seat starting after the dealer, then (first deal of a round) the four table cards; with jokers
  the last, short deal gives the cards left one at a time. Each outcome is a card id, uniform over
  the cards not dealt yet, so the game is exact and ``max_chance_outcomes`` is the deck size.
  Until every card of a deal is out, the executor's state (and so ``observation_tensor``) still
  shows the previous position; the information state string shows each card as it comes.
- **Decisions** are the envs' ``Discrete(40 + jokers)`` actions: play card ``c``; during a capture
  choice the same player names table cards one at a time (consecutive decisions by one player).
- **Returns** are the envs' rewards: ``episode="round"``: the side's round points minus the best
  other side's; ``episode="game"``: +1 for the winning side, -1 for the others. With two sides (2
  players, or 2v2 partnerships) the game is ``ZERO_SUM``, otherwise ``GENERAL_SUM``.
- ``observation_tensor(p)`` is the envs' observation vector of seat ``p``
  (``escoba_env.executors.observation``); ``information_state_tensor(p)`` is that vector followed by the
  current round's events one-hot (each card dealt, shown only to its receiver, and each action),
  so it has perfect recall within a round (earlier rounds survive only as the scores);
  ``information_state_string(p)`` is the whole history as ``p`` saw it (perfect recall).
- ``resample_from_infostate(p, sampler)`` deals the cards ``p`` cannot see (other hands, and
  stock) at random again, consistently with everything ``p`` has seen; ``state_from_world`` starts
  a game at a position given by an engine (the IS-MCTS agent's root, ``agents.search.ismcts``).

The state runs on the one-game executor ``escoba_env.executors.game.Game`` (Python ints), behind the small
``_Core`` seam.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import pyspiel
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise ImportError("escoba_env.faces.openspiel needs OpenSpiel: pip install 'escoba-env[openspiel]' "
                      "(open-spiel==2.0.2)") from e

from ..executors.engine import EscobaEngine
from ..executors.game import Game
from ..executors.observation import obs_size
from ..rulebook.cards import card_name, cards_of, names_of
from ..rulebook.rules import Rules

SHORT_NAME = "python_escoba"
EPISODES = ("round", "game")
_DEFAULT_RULES = Rules()
_DEFAULTS: dict[str, Any] = {**_DEFAULT_RULES.to_dict(), "episode": "round", "max_rounds": 100}

# History event kinds, kept beside OpenSpiel's own history (who received each chance card).
_DEALER, _CARD, _TABLE, _MOVE, _TAKE, _ROOT = range(6)


def _game_type(utility) -> pyspiel.GameType:
    """Return the GameType of Escoba with the given utility kind."""
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="Escoba (escoba-env)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=utility,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=4,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=dict(_DEFAULTS),
    )


def rules_from_params(params: dict[str, Any]) -> tuple[Rules, str, int]:
    """Return (rules, episode, max_rounds) from OpenSpiel game parameters; ValueError if bad."""
    unknown = sorted(set(params) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown python_escoba parameter(s) {unknown}; known: {sorted(_DEFAULTS)}")
    p = {**_DEFAULTS, **params}
    episode, max_rounds = p.pop("episode"), p.pop("max_rounds")
    if episode not in EPISODES:
        raise ValueError(f"episode must be one of {EPISODES}, got {episode!r}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"max_rounds must be a positive int, got {max_rounds!r}")
    return Rules.from_dict(p), episode, max_rounds


_GAME_FIELDS = ("hands", "piles", "played", "escobas", "scores")
_GAME_SCALARS = ("hand_count", "table", "stock_pos", "dealer", "to_act", "last_capturer", "pending", "taken",
                 "taken_value", "legal", "round_index", "winner")


def _game_from_engine(engine: EscobaEngine, game: int, single_round: bool, max_rounds: int | None) -> Game:
    """Return a one-game executor holding game ``game`` of ``engine``."""
    g = Game(engine.rules, single_round=single_round, max_rounds=max_rounds)
    for name in _GAME_FIELDS:
        setattr(g, name, [int(x) for x in getattr(engine, name)[game].tolist()])
    for name in _GAME_SCALARS:
        setattr(g, name, int(getattr(engine, name)[game]))
    g.deck = [int(c) for c in engine.deck[game].tolist()]
    g.done, g.truncated, g.started = bool(engine.done[game]), bool(engine.truncated[game]), True
    return g


class _Core:
    """The seam between the OpenSpiel state and an executor: the one-game executor ``Game``.

    The executor deals its own shuffles; ``play`` undoes any deal a step made, so that the cards
    come from the OpenSpiel chance nodes instead (``start_round`` and ``deal_hands``).
    """

    __slots__ = ("g",)

    def __init__(self, g: Game):
        self.g = g

    @classmethod
    def new(cls, rules: Rules, episode: str, max_rounds: int) -> _Core:
        """Return a core for a new game (nothing dealt yet)."""
        return cls(Game(rules, single_round=episode == "round",
                        max_rounds=None if episode == "round" else max_rounds))

    def clone(self) -> _Core:
        """Return an independent copy."""
        return _Core(self.g.clone())

    def hands(self) -> list[int]:
        """Return every seat's hand mask."""
        return self.g.hands

    def public_mask(self) -> int:
        """Return the cards on the table, in capture piles or pending (seen by every seat)."""
        g = self.g
        m = g.table | (1 << g.pending if g.pending >= 0 else 0)
        for x in g.piles:
            m |= x
        return m

    def start_round(self, dealer: int, deck: list[int]) -> None:
        """Deal a new round from ``deck`` (top first) with ``dealer``, keeping scores and round count."""
        g = self.g
        scores, rounds = g.scores[:], g.round_index
        g.reset(0, dealer=dealer, deck=deck)
        g.scores, g.round_index = scores, rounds

    def deal_hands(self, cards: list[int]) -> None:
        """Deal ``cards`` (deal order) as the next stock cards of the round (every hand is empty)."""
        g = self.g
        nc = g.num_cards
        gone = self.public_mask()
        chosen = set(cards)
        stock = [c for c in range(nc) if not gone >> c & 1 and c not in chosen]
        # The deck's stock part is rewritten (the dealt cards first) and the deck stays a permutation.
        g.deck = [c for c in range(nc) if gone >> c & 1] + list(cards) + stock
        assert len(cards) + len(stock) == nc - g.stock_pos, "stock size mismatch"
        g.deal_hands()
        g.legal = g.hands[g.to_act]

    def replace_hand(self, seat: int, mask: int) -> None:
        """Set ``seat``'s hand (resampling hidden cards); the legal mask follows if it acts."""
        g = self.g
        g.hands[seat] = mask
        if g.to_act == seat and g.pending < 0 and not g.done:
            g.legal = mask

    def play(self, action: int) -> str:
        """Apply one decision; return what comes next: "move", "deal", "round" or "over"."""
        g = self.g
        pos, rnd = g.stock_pos, g.round_index
        g.step(action)
        if g.done:
            return "over"
        p = g.num_players
        if g.round_index != rnd:  # the executor dealt a round of its own: clear it
            g.hands, g.piles, g.played, g.escobas = [0] * p, [0] * p, [0] * p, [0] * p
            g.table = g.legal = g.hand_count = g.stock_pos = 0
            g.last_capturer = -1
            return "round"
        if g.stock_pos != pos:  # the executor dealt hands of its own (every hand was empty)
            g.hands = [0] * p
            g.hand_count = g.legal = 0
            g.stock_pos = pos
            return "deal"
        return "move"


class EscobaGame(pyspiel.Game):
    """Escoba as an OpenSpiel game (see the module docstring for the parameters)."""

    def __init__(self, params: dict[str, Any] | None = None):
        params = dict(params or {})
        self.rules, self.episode, self.max_rounds = rules_from_params(params)
        nc, sides = self.rules.num_cards, self.rules.num_sides
        two_sides = sides == 2
        utility = pyspiel.GameType.Utility.ZERO_SUM if two_sides else pyspiel.GameType.Utility.GENERAL_SUM
        if self.episode == "round":
            # A side's points: at most 6 for the categories (with bonus sweeps), 2 escobas from the
            # first table, and one escoba per card played from hand (nc - 4 of them).
            bound = float(nc + 4)
            rounds = 1
        else:
            bound = 1.0
            rounds = self.max_rounds
        # Per round: nc chance cards, nc - 4 plays, at most one take per table card captured plus
        # one joker "stop" per capture (< 2 nc); plus the first dealer.
        self.round_length = 4 * nc
        info = pyspiel.GameInfo(
            num_distinct_actions=nc,
            max_chance_outcomes=nc,
            num_players=self.rules.num_players,
            min_utility=-bound,
            max_utility=bound,
            utility_sum=0.0 if two_sides else None,
            max_game_length=1 + rounds * self.round_length,
        )
        super().__init__(_game_type(utility), info, {**_DEFAULTS, **params})

    def new_initial_state(self) -> EscobaState:
        """Return the state before the first chance node (the first dealer)."""
        return EscobaState(self)

    def state_from_world(self, engine: EscobaEngine, game: int = 0) -> EscobaState:
        """Return a state at the position of ``engine``'s game ``game`` (a decision point).

        The state's history starts there (its information state strings begin with the position
        as each seat sees it); the engine's stock order is ignored (the stock is dealt by chance).
        """
        if engine.rules != self.rules:
            raise ValueError("the engine's rules differ from the game's")
        if engine.done[game]:
            raise ValueError(f"game {game} of the engine is over")
        one = _game_from_engine(engine, game, self.episode == "round",
                                None if self.episode == "round" else self.max_rounds)
        state = EscobaState(self)
        state._set_root(_Core(one))
        return state

    def make_py_observer(self, iig_obs_type=None, params=None):
        """Return the observer: the envs' observation, or the information state (perfect recall)."""
        if params:
            raise ValueError(f"python_escoba observers take no parameters, got {params}")
        if iig_obs_type is not None and iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER:
            raise ValueError("python_escoba observes one player's view (private_info SINGLE_PLAYER) only")
        return _Observer(self, iig_obs_type is not None and iig_obs_type.perfect_recall)


def _position_string(core: _Core, seat: int) -> str:
    """Return the public position plus ``seat``'s hand, as text (the observation string)."""
    g = core.g
    p = g.num_players
    rel = [(seat + j) % p for j in range(p)]
    hands = g.hands
    pend = g.pending
    parts = [
        f"p{seat} hand:{names_of(hands[seat]) or '-'} table:{names_of(g.table) or '-'}",
        "piles:" + "|".join(names_of(g.piles[r]) or "-" for r in rel),
        "played:" + "|".join(names_of(g.played[r]) or "-" for r in rel),
        "hand sizes:" + ",".join(str(hands[r].bit_count()) for r in rel),
        "escobas:" + ",".join(str(x) for x in g.escobas),
        "scores:" + ",".join(str(x) for x in g.scores),
        f"stock:{g.num_cards - g.stock_pos} dealer:{g.dealer} last:{g.last_capturer} to_act:{g.to_act}",
    ]
    if pend >= 0:
        parts.append(f"capturing with {card_name(pend)}, taken:{names_of(g.taken) or '-'}")
    return " ".join(parts)


class EscobaState(pyspiel.State):
    """One Escoba game (or round) in progress."""

    def __init__(self, game: EscobaGame):
        super().__init__(game)
        self._rules = game.rules
        self._core = _Core.new(game.rules, game.episode, game.max_rounds)
        self._phase = "dealer"  # "dealer", "deal" (chance cards), "move", "over"
        self._plan: list[int] = []  # receivers (seat, or -1 for the table) of the deal in progress
        self._dealt: list[int] = []  # cards of the deal in progress so far
        self._round_start = False  # the deal in progress starts a round (table cards, new deck)
        self._events: list[tuple[int, int, int]] = []  # (kind, seat, action) per history entry
        self._round_from = 0  # index in _events where the current round's events start
        self._roots: list[str] = []  # per seat: the starting position of a state_from_world

    # ------------------------------------------------------------------ OpenSpiel API

    def current_player(self) -> int:
        """Return the seat to act, or the chance / terminal player id."""
        if self._phase == "over":
            return pyspiel.PlayerId.TERMINAL
        if self._phase != "move":
            return pyspiel.PlayerId.CHANCE
        return self._core.g.to_act

    def _legal_actions(self, player: int) -> list[int]:
        """Return the legal actions of ``player`` (the seat to act), ascending."""
        return cards_of(self._core.g.legal)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Return the chance outcomes: the first dealer, or the next card, uniformly."""
        if self._phase == "dealer":
            p = self._rules.num_players
            return [(d, 1.0 / p) for d in range(p)]
        pool = self._pool()
        return [(c, 1.0 / len(pool)) for c in pool]

    def _pool(self) -> list[int]:
        """Return the cards not dealt yet (the deal in progress excluded)."""
        used = self._core.public_mask()
        for h in self._core.hands():
            used |= h
        for c in self._dealt:
            used |= 1 << c
        return [c for c in range(self._rules.num_cards) if not used >> c & 1]

    def _apply_action(self, action: int) -> None:
        """Apply a chance outcome or a decision."""
        if self._phase == "dealer":
            self._events.append((_DEALER, -1, action))
            self._core.g.dealer = action
            self._begin_deal(round_start=True)
        elif self._phase == "deal":
            who = self._plan[len(self._dealt)]
            self._events.append((_TABLE if who < 0 else _CARD, who, action))
            self._dealt.append(action)
            if len(self._dealt) == len(self._plan):
                self._finish_deal()
        else:
            seat = self._core.g.to_act
            self._events.append((_TAKE if self._core.g.pending >= 0 else _MOVE, seat, action))
            nxt = self._core.play(action)
            if nxt == "over":
                self._phase = "over"
            elif nxt == "round":
                self._begin_deal(round_start=True)
            elif nxt == "deal":
                self._begin_deal(round_start=False)

    def _begin_deal(self, round_start: bool) -> None:
        """Plan the receivers of the next deal (chance nodes follow)."""
        g = self._core.g
        p, dealer = self._rules.num_players, g.dealer
        if round_start:
            self._round_from = len(self._events)
            n = 3 * p
        else:
            n = min(3 * p, self._rules.num_cards - g.stock_pos)
        self._plan = [(dealer + 1 + j % p) % p for j in range(n)] + ([-1] * 4 if round_start else [])
        self._dealt = []
        self._round_start = round_start
        self._phase = "deal"

    def _finish_deal(self) -> None:
        """Hand the dealt cards to the engine; the seat after the dealer (or the next one) acts."""
        if self._round_start:
            rest = [c for c in range(self._rules.num_cards) if c not in set(self._dealt)]
            self._core.start_round(self._core.g.dealer, self._dealt + rest)
        else:
            self._core.deal_hands(self._dealt)
        self._plan, self._dealt = [], []
        self._phase = "move"

    def _action_to_string(self, player: int, action: int) -> str:
        """Return the action as card names: the dealer, a dealt card, a play or a take."""
        if player == pyspiel.PlayerId.CHANCE:
            if self._phase == "dealer":
                return f"Dealer:{action}"
            return f"Deal:{card_name(action)}"
        if self._core.g.pending >= 0:
            return f"Take:{card_name(action)}"
        return f"Play:{card_name(action)}"

    def is_terminal(self) -> bool:
        """Return True once the round (or the game) is over."""
        return self._phase == "over"

    def returns(self) -> list[float]:
        """Return each seat's return: the envs' reward for the episode (0 before the end)."""
        p = self._rules.num_players
        if self._phase != "over":
            return [0.0] * p
        g = self._core.g
        side = [self._rules.side_of(s) for s in range(p)]
        if self.get_game().episode == "game":
            w = g.winner
            if w < 0:
                return [0.0] * p
            return [1.0 if side[s] == w else -1.0 for s in range(p)]
        pts = g.scores
        best_other = [max(x for j, x in enumerate(pts) if j != i) for i in range(len(pts))]
        return [float(pts[side[s]] - best_other[side[s]]) for s in range(p)]

    def resample_from_infostate(self, player_id: int, probability_sampler) -> EscobaState:
        """Return a state ``player_id`` cannot tell from this one, the hidden cards dealt anew.

        The random permutation of the hidden cards is seeded by one draw of ``probability_sampler``.
        """
        seed = int(float(probability_sampler()) * (1 << 53))
        return self.resample(player_id, np.random.default_rng(seed))

    def resample(self, player: int, rng: np.random.Generator) -> EscobaState:
        """Return a state with the same history as ``player`` saw it, other hidden cards uniform.

        The cards ``player`` cannot see (other hands, the stock, cards of a deal in progress dealt
        to others) are permuted uniformly at random; every card ``player`` has seen stays put.
        """
        p = self._rules.num_players
        if not 0 <= player < p:
            raise ValueError(f"player must be a seat in 0..{p - 1}, got {player}")
        seen = self._core.public_mask() | self._core.hands()[player]
        for (kind, who, a) in self._events[self._round_from:]:
            if kind == _TABLE or (kind == _CARD and who == player):
                seen |= 1 << a
        hidden = [c for c in range(self._rules.num_cards) if not seen >> c & 1]
        sigma = dict(zip(hidden, rng.permutation(hidden).tolist(), strict=True))
        game = self.get_game()
        state = EscobaState(game)
        if self._roots:  # a state_from_world: start from its position, the hidden hands permuted
            core = self._root_core.clone()
            for s, h in enumerate(core.hands()):
                if s != player:
                    core.replace_hand(s, sum(1 << sigma.get(c, c) for c in cards_of(h)))
            state._set_root(core)
        # Replay the history; only cards dealt to other seats in this round can change.
        for i, (kind, _, a) in enumerate(self._events):
            if kind == _ROOT:
                continue
            state.apply_action(sigma.get(a, a) if kind == _CARD and i >= self._round_from else a)
        return state

    def _set_root(self, core: _Core) -> None:
        """Make this fresh state start at ``core``'s position (used by ``state_from_world``)."""
        self._core = core
        self._root_core = core.clone()
        self._phase = "move"
        self._events.append((_ROOT, -1, -1))
        self._roots = [_position_string(core, p) for p in range(self._rules.num_players)]

    def _infostate_string(self, player: int) -> str:
        """Return the whole history as ``player`` saw it (cards dealt to others hidden)."""
        out = [f"p{player}"]
        for kind, who, a in self._events:
            if kind == _ROOT:
                out.append("[" + self._roots[player] + "]")
            elif kind == _DEALER:
                out.append(f"dealer:{a}")
            elif kind == _TABLE:
                out.append(f"T<{card_name(a)}")
            elif kind == _CARD:
                out.append(f"{who}<{card_name(a) if who == player else '?'}")
            elif kind == _TAKE:
                out.append(f"{who}+{card_name(a)}")
            else:
                out.append(f"{who}:{card_name(a)}")
        return " ".join(out)

    def round_events(self) -> list[tuple[int, int, int]]:
        """Return the current round's events: (kind, seat, action) with kinds of this module."""
        return self._events[self._round_from:]

    def __str__(self) -> str:
        """Return the whole state (every hand: for debugging, not an observation)."""
        g = self._core.g
        hands = " ".join(f"{s}:{names_of(h) or '-'}" for s, h in enumerate(g.hands))
        return (f"phase:{self._phase} hands {hands} table:{names_of(g.table) or '-'} "
                f"scores:{g.scores} history:{self.history()}")


class _Observer:
    """OpenSpiel observer: the envs' observation vector, or the information state tensor."""

    def __init__(self, game: EscobaGame, perfect_recall: bool):
        self.rules = game.rules
        self.perfect_recall = perfect_recall
        n_obs = obs_size(game.rules)
        # Information state: the observation, then one row per event of the current round
        # (W card columns + one column "a card dealt to someone else").
        self.width = game.rules.num_cards + 1
        self.rows = game.round_length
        size = n_obs + (self.rows * self.width if perfect_recall else 0)
        self.tensor = np.zeros(size, np.float32)
        self.dict = {"observation": self.tensor[:n_obs]}
        if perfect_recall:
            self.dict["round_events"] = self.tensor[n_obs:].reshape(self.rows, self.width)

    def set_from(self, state: EscobaState, player: int) -> None:
        """Fill ``tensor`` with ``player``'s view of ``state``."""
        self.tensor.fill(0.0)
        state._core.g.observe(player, out=self.dict["observation"])
        if self.perfect_recall:
            ev = self.dict["round_events"]
            hidden = self.width - 1
            for i, (kind, who, a) in enumerate(state.round_events()):
                if kind == _ROOT:
                    continue
                col = hidden if kind == _CARD and who != player else a
                if kind == _DEALER:
                    col = a
                ev[i, col] = 1.0

    def string_from(self, state: EscobaState, player: int) -> str:
        """Return ``player``'s view of ``state`` as text."""
        if self.perfect_recall:
            return state._infostate_string(player)
        return _position_string(state._core, player)


pyspiel.register_game(_game_type(pyspiel.GameType.Utility.ZERO_SUM), EscobaGame)


def load_game(**params: Any) -> EscobaGame:
    """Return ``pyspiel.load_game("python_escoba", params)`` (keywords: the game parameters)."""
    return pyspiel.load_game(SHORT_NAME, params)
