"""What the three environment faces share: configuration, reset options, rewards, spaces, moves.

The PettingZoo env (``escoba_v0``) and the Gymnasium single-agent env (``single_agent``) are thin
adapters over the one-game executor ``Game``; the batched vector env (``selfplay_vector``) over one
``EscobaEngine``. Everything they
must agree on lives here, once: how constructor arguments become a ``Rules`` and engine options,
how ``reset(options=...)`` is validated, how rewards are computed from an engine step, what the
observation space is, and how the ``legal_moves`` info is listed.

Rewards (``reward=``):

- ``"game"`` (default): when a game ends with a winner, every seat of the winning side gets +1
  and every other seat -1 (with 3 or 4 independent players this is +1 for the winner and -1 for
  each of the others, so it is not zero-sum). A game cut by ``max_rounds`` gives 0 to all, and so
  does a single-round episode (``episode="round"``) whose round points are tied at the top.
  Nothing is paid before the end of the game.
- ``"round_points"``: at the end of every round, each seat gets its side's points for that round
  minus the highest round points among the other sides. With two sides (two players, or 2v2) this
  is the zero-sum point difference; with three or four sides only the best side can score above 0.
  Nothing is paid during a round.

Partners share: both seats of a team always get the same reward.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from ..executors.engine import EscobaEngine
from ..executors.game import Game, GameStep
from ..executors.observation import obs_size, scalar_offsets, score_cap
from ..executors.step_info import StepInfo
from ..rulebook.capture import capture_options
from ..rulebook.cards import FULL_DECK, NUM_CARDS, card_name, cards_of, parse_card
from ..rulebook.rules import Rules, check_max_rounds, check_rules
from ..rulebook.rules import check_seed as _check_seed_int

PLACEHOLDER_ACTION = 0
"""The one action a finished game's learner mask offers (Gymnasium faces); the next step ignores it."""
EPISODES = ("game", "round")
REWARDS = ("game", "round_points")
RESET_OPTIONS = ("dealer", "deck", "hands", "table", "stock")
# PettingZoo's api_test calls reset(options={"options": 1}) to probe the signature; that one key
# is accepted and ignored so that the conformance test can run while typos still raise.
_IGNORED_OPTIONS = ("options",)


def make_rules(rules: Rules | None, rule_options: Mapping[str, Any]) -> Rules:
    """Return the Rules given either as a ``Rules`` object or as keyword options (not both)."""
    if rules is not None:
        check_rules(rules)
        if rule_options:
            raise ValueError(
                f"give the rules either as rules=Rules(...) or as keyword options, not both "
                f"(got rules and {sorted(rule_options)})"
            )
        return rules
    return Rules.from_dict(dict(rule_options))


def check_face_options(legal_moves_info: Any, render_mode: str | None, render_modes: list[str]) -> None:
    """Raise TypeError / ValueError for a non-bool ``legal_moves_info`` or an unknown ``render_mode``;
    return None."""
    if not isinstance(legal_moves_info, bool):
        raise TypeError(f"legal_moves_info must be a bool, got {legal_moves_info!r}")
    if render_mode is not None and render_mode not in render_modes:
        raise ValueError(f"render_mode must be None or one of {render_modes}, got {render_mode!r}")


def check_config(episode: str, reward: str, max_rounds: int | None) -> None:
    """Raise ValueError unless ``episode``, ``reward`` and ``max_rounds`` are valid; return None."""
    if episode not in EPISODES:
        raise ValueError(f"episode must be one of {EPISODES}, got {episode!r}")
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
    check_max_rounds(max_rounds)


def make_engine(num_games: int, rules: Rules, episode: str, reward: str,
                max_rounds: int | None) -> EscobaEngine:
    """Return a new engine configured for the given episode kind and truncation."""
    check_config(episode, reward, max_rounds)
    return EscobaEngine(num_games, rules, single_round=episode == "round", max_rounds=max_rounds)


def make_game(rules: Rules, episode: str, reward: str, max_rounds: int | None) -> Game:
    """Return a new one-game executor configured for the given episode kind and truncation."""
    check_config(episode, reward, max_rounds)
    return Game(rules, single_round=episode == "round", max_rounds=max_rounds)


def _int(x: Any) -> int:
    """Return a Game's int field as is, or game 0 of an engine's array field."""
    return x if type(x) is int else x.item(0)


def check_seed(seed: Any) -> int | None:
    """Return ``seed`` as an int (or None): a face's ``reset`` takes None or ``rules.check_seed``'s range."""
    return None if seed is None else _check_seed_int(seed)


def as_action(action: Any, num_cards: int = NUM_CARDS) -> int:
    """Return ``action`` as a card id 0..num_cards-1, or -1 if it is not an integer in that range."""
    if type(action) is int:  # the common case, checked first
        return action if 0 <= action < num_cards else -1
    if isinstance(action, (bool, np.bool_)):
        return -1
    try:
        a = operator.index(action)
    except TypeError:
        return -1
    return a if 0 <= a < num_cards else -1


def illegal_action_message(state: Game | EscobaEngine, action: Any, who: str, french: bool = False) -> str:
    """Return the error text for an illegal ``action`` of ``who``, naming the legal actions.

    ``state`` is a ``Game`` or a one-game engine.
    """
    legal = _int(state.legal)
    nc = state.rules.num_cards
    a = as_action(action, nc)
    what = card_name(a, french) if a >= 0 else f"not a card id 0..{nc - 1}"
    phase = "name a table card to take" if _int(state.pending) >= 0 else "play a card from hand"
    ids = cards_of(legal)
    return (f"illegal action {action!r} ({what}) for {who}, who must {phase}; legal actions are "
            f"{ids} ({' '.join(card_name(c, french) for c in ids)})")


def _card_list(name: str, value: Any) -> list[int]:
    """Return ``value`` as a list of card ids (names like ``"7o"`` are parsed)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"reset option {name!r} must be a list of card ids, got {value!r}")
    out = []
    for c in value:
        if isinstance(c, str):
            out.append(parse_card(c))
        elif isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
            raise ValueError(f"reset option {name!r} holds {c!r}; cards are ids 0..39 (jokers 40, 41) "
                             "or names like '7o'")
        else:
            out.append(int(c))
    return out


def reset_engine(engine, seed: Any, options: Mapping[str, Any] | None,
                 np_random: np.random.Generator | None) -> np.random.Generator:
    """Reset ``engine`` for a face's ``reset(seed, options)``; return the face's new generator.

    A given seed deals from that seed (so every face deals the same game) and seeds the
    generator; without one, the engine seed is drawn from ``np_random`` (or a fresh generator).
    Bad seeds, options or deals raise ValueError before anything changes.
    """
    seed = check_seed(seed)
    kwargs = parse_reset_options(options)
    if seed is not None:
        rng = np.random.default_rng(seed)
        engine_seed = seed
    else:
        rng = np_random if np_random is not None else np.random.default_rng()
        engine_seed = int(rng.integers(2**63))
    engine.reset(engine_seed, **kwargs)
    return rng


def parse_reset_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the engine ``reset`` keyword arguments for a ``reset(options=...)`` mapping.

    Known keys: ``dealer`` (a seat), ``deck`` (all ``rules.num_cards`` card ids, top first), or
    ``hands`` (one list of 3 ids per seat), ``table`` (4 ids) and ``stock`` (the rest, top
    first). Card names such as ``"7o"`` are accepted wherever an id is. Unknown keys raise
    ValueError; the engine checks the deal itself (each card once, right sizes) and raises
    ValueError too.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"reset options must be a dict, got {type(options).__name__}")
    unknown = sorted(str(k) for k in options if k not in RESET_OPTIONS and k not in _IGNORED_OPTIONS)
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; known options: {', '.join(RESET_OPTIONS)}")
    kw: dict[str, Any] = {}
    if "dealer" in options:
        d = options["dealer"]
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise ValueError(f"reset option 'dealer' must be a seat number, got {d!r}")
        kw["dealer"] = int(d)
    if "deck" in options:
        kw["deck"] = _card_list("deck", options["deck"])
    if "hands" in options:
        hands = options["hands"]
        if isinstance(hands, (str, bytes)) or not hasattr(hands, "__iter__"):
            raise ValueError(f"reset option 'hands' must be one list of card ids per seat, got {hands!r}")
        kw["hands"] = [_card_list("hands", h) for h in hands]
    for key in ("table", "stock"):
        if key in options:
            kw[key] = _card_list(key, options[key])
    return kw


def step_rewards(engine: EscobaEngine, info: StepInfo, reward: str,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Return float32 rewards (N, num_players), one column per seat, for one engine step.

    See the module docstring for the two reward kinds; ``engine`` gives the seats' sides.
    """
    n, p = engine.num_games, engine.num_players
    if out is None:
        out = np.empty((n, p), np.float32)
    seat_side = engine.side_of_seat
    if not info.round_over.any():  # rewards come at round ends only (a game ends with a round)
        out.fill(0.0)
    elif reward == "game":
        paid = info.game_over & ~info.truncated & (info.winner >= 0)
        np.multiply(np.where(seat_side[None, :] == info.winner[:, None], 1.0, -1.0),
                    paid[:, None], out=out, casting="unsafe")
    else:
        pts = info.round_points
        s = pts.shape[1]
        others = np.where(np.eye(s, dtype=bool)[None, :, :], np.iinfo(np.int64).min, pts[:, None, :])
        diff = pts - others.max(axis=2)  # own side minus the best other side, per side
        np.copyto(out, diff[:, seat_side], casting="unsafe")
    return out


def game_step_rewards(rules: Rules, step, reward: str) -> list[float]:
    """Return the rewards per seat of one ``Game.step`` (``step_rewards`` for the one-game executor)."""
    p = rules.num_players
    if not step.round_over:
        return [0.0] * p
    if reward == "game":
        if step.game_over and not step.truncated and step.winner >= 0:
            return [1.0 if rules.side_of(i) == step.winner else -1.0 for i in range(p)]
        return [0.0] * p
    pts = step.round_points
    diff = [x - max(y for t, y in enumerate(pts) if t != s) for s, x in enumerate(pts)]
    return [float(diff[rules.side_of(i)]) for i in range(p)]


def observation_bounds(rules: Rules | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return the (low, high) float32 bounds of the observation vector of ``rules`` (observation.py).

    Finite and derived from the rules: a side makes at most ``W // 2`` escobas in a round (each
    takes the played card and a table card), and the observed score is at most
    ``score_cap(rules) / target_score`` (the target plus one round's most points); every other
    entry is in [0, 1].
    """
    rules = Rules() if rules is None else rules
    size = obs_size(rules)
    low = np.zeros(size, np.float32)
    high = np.ones(size, np.float32)
    offsets = scalar_offsets(rules)
    esc = offsets["escobas"]
    sc = offsets["scores"]
    high[esc:esc + 4] = float(rules.num_cards // 2)
    high[sc:sc + 4] = score_cap(rules) / rules.target_score
    return low, high


def observation_space(rules: Rules | None = None) -> spaces.Dict:
    """Return a new Dict space: ``observation`` float32 (obs_size,) and ``action_mask`` int8 (W,).

    W is ``rules.num_cards`` (40 for the standard deck, 40 + jokers with jokers).
    """
    rules = Rules() if rules is None else rules
    low, high = observation_bounds(rules)
    return spaces.Dict({
        "observation": spaces.Box(low=low, high=high, dtype=np.float32),
        "action_mask": spaces.Box(low=0, high=1, shape=(rules.num_cards,), dtype=np.int8),
    })


def legal_moves(engine: Game | EscobaEngine, game: int = 0) -> list[tuple[int, int]]:
    """Return the moves of the seat to act as ``(card, capture_mask)`` pairs of Python ints.

    Outside a capture choice: every legal card with each of its capture options (``capture_mask``
    is the set of table cards taken, 0 for a discard). During a capture choice: the remaining
    options of the pending card (those containing every table card named so far). Empty when the
    game is over. ``engine`` is a ``Game`` or a batched engine (then ``game`` picks the slot).
    """
    rules = engine.rules
    if isinstance(engine, Game):
        table, pending, taken, legal = engine.table, engine.pending, engine.taken, engine.legal
    else:
        table, pending = engine.table.item(game), engine.pending.item(game)
        taken, legal = engine.taken.item(game), engine.legal.item(game)
    if pending >= 0:
        return [(pending, o) for o in capture_options(pending, table, rules) if o & taken == taken]
    out: list[tuple[int, int]] = []
    # A card can capture only if 15 minus its value is a subset sum of the table's values: a
    # bitset of the reachable sums (below 15) skips capture_options for the cards that cannot.
    # With a joker on the table or in hand every card is asked.
    sums = 0x7FFF
    if table <= FULL_DECK and legal <= FULL_DECK:
        sums, t = 1, table
        while t:
            low = t & -t
            sums |= (sums << ((low.bit_length() - 1) // 4 + 1)) & 0x7FFF
            t ^= low
    while legal:
        low = legal & -legal
        legal ^= low
        c = low.bit_length() - 1
        opts = capture_options(c, table, rules) if sums >> (14 - c // 4) & 1 else None
        if opts:
            out.extend((c, o) for o in opts)
        else:
            out.append((c, 0))
    return out


def placeholder_mask(mask: np.ndarray) -> np.ndarray:
    """Return ``mask`` (one finished game's row, W) set in place to offer ``PLACEHOLDER_ACTION`` alone."""
    mask[:] = 0
    mask[PLACEHOLDER_ACTION] = 1
    return mask


def distinct_resettable(opponents: list[Any]) -> list[Any]:
    """Return the distinct opponent objects with a ``reset`` method, in order of first appearance."""
    out: list[Any] = []
    for o in opponents:
        if callable(getattr(o, "reset", None)) and not any(o is c for c in out):
            out.append(o)
    return out


def game_round_info(step: GameStep) -> dict[str, Any]:
    """Return ``round_info`` of a ``Game.step`` report that ended a round (fresh lists)."""
    return {"round_points": step.round_points[:], "scores": step.scores[:],
            "round_categories": {k: v[:] for k, v in step.round_categories.items()}}


def round_info(info: StepInfo, game: int = 0) -> dict[str, Any]:
    """Return the round-end info of one game: ``round_points``, ``scores`` (per side) and categories."""
    return {
        "round_points": info.round_points[game].tolist(),
        "scores": info.scores[game].tolist(),
        "round_categories": {k: v[game].tolist() for k, v in info.round_categories.items()},
    }


class EngineView:
    """Mixin of the faces that run a ``Game`` in ``self.game``: ``engine`` is a one-game engine copy.

    Code written for the batched engine (tests, the oracle agent) reads ``env.engine``; the copy is
    refreshed when read after the face set ``self._view_stale`` (every step and reset).
    """

    _view = None
    _view_stale = True

    @property
    def engine(self):
        """Return a one-game ``EscobaEngine`` holding the game's current state (do not modify it)."""
        if self._view is None:
            self._view = self.game.to_engine()
        elif self._view_stale:
            self.game.write_engine(self._view)
        self._view_stale = False
        return self._view
