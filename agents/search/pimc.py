"""Determinized Monte Carlo search (PIMC) and its cheating twin, the oracle.

**search** (``SearchAgent``) decides each move like this:

1. enumerate the legal moves (card, capture) from the observation (``agents.moves``);
2. sample ``W = ceil(sims / M)`` *worlds* per decision with ``M`` legal moves: the unseen cards
   dealt at random to the other hands (at their observed sizes) and to the stock
   (``agents.worlds.worlds_from_observations``, which reads only the observation);
3. copy every world once per move, play the move, then let a fast default policy play every seat
   to the end of the round; all rollouts of all decisions in the batch are one ``EscobaEngine``
   batch stepped together (split in blocks of at most ``max_rows`` games);
4. score each rollout by the round's points of the agent's side minus the mean of the other
   sides, average per move over the worlds (the same worlds for every move, so the comparison is
   paired) and play the best move.

So ``sims`` is the number of rollouts per decision (rounded up to a multiple of ``M``). A
decision with one legal move is played without search. During a capture choice the search is run
again over the options still open (the chosen move's card is already played).

The default policy (``rollout_actions``) is a vectorised greedy on the engine state, one batched
call per step for every rollout: capture the most valuable option (escoba first), else discard the
least valuable card, and avoid leaving a table total the next seat can sweep, judged by card
counting from what the acting seat can see (``threat="count"``; ``"peek"`` uses the world's
next hand, ``"none"`` any sweepable total). With probability ``epsilon`` it plays a uniformly random
legal action instead; ``rollout="random"`` uses uniform random rollouts. ``horizon=H`` stops each
rollout ``H`` turns after the move and scores the round with ``expected_points`` (a cheaper,
lower-variance estimate; the default ``None`` plays to the end of the round). ``leaf`` (2 players)
stops each rollout at the first turn with an empty stock, where a 2-player world hides nothing,
and takes that endgame's value for the seat to act: ``"exact"`` the minimax value
(``agents.heuristic.endgame.solve``, about 0.8 ms a position), ``"net"`` the value of the best move as
``neural-solo``'s endgame network scores it (about 0.07 ms); the default ``None`` plays the greedy
policy to the end of the round. Greedy rollouts value a midgame move as if both sides played the
endgame greedily; with a leaf, as if they played it (near) perfectly, as ``hybrid`` and
``neural-solo`` do. With ``policy`` (a fair agent; in the registry ``policy=SPEC``, e.g.
``search:policy=neural-solo``) that agent plays every seat of every rollout instead of the greedy
policy, each seat from its own observation of the sampled world (one ``act_batch`` over every live
rollout per step; ``epsilon``, ``rollout`` and ``threat`` then do nothing).

Parameters (all settable from the registry, ``search:sims=400,threat=count,...``): ``sims``
(default ``SearchAgent.DEFAULT_SIMS`` = 400), ``epsilon`` (0), ``rollout`` ("greedy"), ``threat``
("count"), ``horizon`` (None), ``leaf`` (None), ``policy`` (None), ``max_rows`` (200000 games per
engine batch, a memory bound).

**oracle** (``OracleAgent``): the same search, but CHEATING: its worlds are copies of the true
engine state, so it sees the other hands and the stock order. It is an upper-bound reference,
never a fair opponent. It declares ``needs_state = True`` and must be given
``state=(engine, games)`` (the true engine and the game slot of each observation row).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from math import comb

import numpy as np

from escoba_env.executors.engine import EscobaEngine, sample_actions
from escoba_env.executors.observation import action_masks, encode
from escoba_env.rulebook.capture import CARD_VALUES, FIFTEEN, half_keys, makes_fifteen, plain_summary
from escoba_env.rulebook.cards import JOKER_MASK, MAX_CARDS, NUM_CARDS, OROS, SEVENS, mask_values

from ..base import Agent
from ..heuristic.expert import hold_probability
from ..heuristic.weights import CARD_WEIGHTS, JOKER_WILDNESS
from ..moves import (
    Moves,
    card_weights,
    enumerate_moves,
    lowest_card,
    move_actions,
)
from ..worlds import capture_summary, observation_masks, take_games, worlds_from_observations

SWEEP_PENALTY = 1.0
"""The rollout policy's penalty per unit of probability that the next player sweeps the table left."""
ROLLOUT_WEIGHTS = {**CARD_WEIGHTS, "sweep": SWEEP_PENALTY, "joker": JOKER_WILDNESS}
"""Weights of the default rollout policy: the greedy capture values (``agents.heuristic.weights``), ``sweep``
and (jokers variant) ``joker``, the wildness of a joker."""
THREATS = ("count", "peek", "none")
LEAVES = (None, "exact", "net")
"""Rollout leaves at the empty stock (2 players): none (play to the end of the round), the exact
minimax value (``agents.heuristic.endgame``) or ``neural-solo``'s endgame network's value."""

_NEG = -1e9
_U1 = np.uint64(1)
_NIB = np.uint64(0xF)
_CARD_IDS = np.arange(MAX_CARDS)
_BITS = _U1 << _CARD_IDS.astype(np.uint64)
_JOKERS = np.uint64(JOKER_MASK)
_NIBBLES = [np.uint64(0xF << (4 * v)) for v in range(10)]
# Capture-value sum of each 16-bit chunk of a card mask (chunks at bits 0, 16, 32).
_CHUNK_SUM = [np.array([sum((16 * k + i) // 4 + 1 for i in range(16) if m >> i & 1 and 16 * k + i < NUM_CARDS)
                        for m in range(1 << 16)], np.int64) for k in range(3)]
_M16 = np.uint64(0xFFFF)
_ZERO64 = np.uint64(0)


def table_sums(masks: np.ndarray) -> np.ndarray:
    """Return the capture-value sum of each uint64 card mask (three table look-ups)."""
    return (_CHUNK_SUM[0][masks & _M16] + _CHUNK_SUM[1][(masks >> np.uint64(16)) & _M16]
            + _CHUNK_SUM[2][(masks >> np.uint64(32)) & _M16])


def _take_priority(w: dict[str, float]) -> np.ndarray:
    """Return the priority of each card id (0..41) when naming table cards (most valuable, then highest)."""
    return (card_weights(_BITS, w["velo"], w["seven"], w["oro"], w["card"], w_joker=w.get("joker", 0.0))
            + CARD_VALUES * 1e-3)


def _sweepers(left: np.ndarray) -> np.ndarray:
    """Return, per table mask (jokers wild), the mask of every card id that would sweep it all."""
    s = mask_values(left)
    k = np.bitwise_count(left & _JOKERS).astype(np.int64)
    out = np.zeros(left.shape, np.uint64)
    for v in range(1, 11):
        out |= np.where(makes_fifteen(s + v, k), _NIBBLES[v - 1], _ZERO64)
    out |= np.where(makes_fifteen(s, k + 1), _JOKERS, _ZERO64)
    return np.where(left != 0, out, _ZERO64)


def rollout_actions(engine: EscobaEngine, rng: np.random.Generator, epsilon: float = 0.0,
                    policy: str = "greedy", weights: dict[str, float] | None = None,
                    threat: str = "count") -> np.ndarray:
    """Return one default-policy action (int64) per game of ``engine`` (any value for finished games).

    ``policy="greedy"``: for each card in hand, the value of its capture (``10`` + escoba + the
    weighted cards taken; with several options, the forced cards plus half the optional ones) or,
    for a discard, minus the card's weight; minus ``sweep`` times the probability that the next
    seat can sweep the table the move leaves. ``threat`` sets that probability: ``"count"`` from
    the cards the actor cannot see (hypergeometric, like the expert), ``"peek"`` from the next
    seat's actual hand in the engine (exact), ``"none"``: 1 for any sweepable total. In a capture
    choice it names the most valuable legal table card. With probability ``epsilon`` a uniformly
    random legal action is played instead. ``policy="random"``: uniform over legal actions.

    This is the inner loop of every search agent, so what depends only on the game (the table's
    capture keys, the unseen cards, the next hand's size) is computed once per game and gathered
    for its (up to three) cards, and the hypergeometric sweep probability and the capture-choice
    priority are table look-ups; ``tests/agents/test_search_pinned.py`` pins that every action
    is the one the straightforward per-card formula gives.
    """
    if threat not in THREATS:
        raise ValueError(f"threat must be one of {THREATS}, got {threat!r}")
    n = engine.num_games
    legal = engine.legal
    if policy == "random":
        return sample_actions(legal, rng.random(n))
    w = ROLLOUT_WEIGHTS if weights is None else weights
    rows = np.arange(n)
    seat = engine.to_act
    hand = engine.hands[rows, seat]
    table = engine.table
    # The (up to three) cards of each hand, then only the (game, card) pairs that exist.
    cards = np.empty((n, 3), np.int64)
    h = hand.copy()
    for j in range(3):
        cards[:, j] = lowest_card(h)
        h &= h - _U1
    r, j = np.nonzero(cards >= 0)
    c = cards[r, j]
    jokers = engine.rules.jokers > 0
    card_w = _card_weight_table(w)
    cw = card_w[c]
    w_joker = w.get("joker", 0.0) if jokers else 0.0  # no joker is ever in a mask without jokers

    def weigh(m):
        return card_weights(m, w["velo"], w["seven"], w["oro"], w["card"], w_joker=w_joker)

    if not jokers:
        v = c // 4 + 1
        # The table's capture keys once per game; union and intersection are only read where the
        # card captures (``gain`` below), so plain_summary's unmasked values serve.
        kl, kh = half_keys(table)
        count, union, inter = plain_summary(table[r], FIFTEEN - v, keys=(kl[r], kh[r]))
        capture = count > 0
        ts = table_sums(table)[r]
        escoba = capture & (ts + v == FIFTEEN)
        # Any option of a capture takes 15 - v of value, so the total left is known without the option.
        left_sum = np.where(capture, ts - (FIFTEEN - v), ts + v)
        need = FIFTEEN - left_sum
        sweepable = (need >= 1) & (need <= 10)  # an escoba leaves 0, which needs 15: not sweepable
    else:
        # Jokers are wild (docs/rules.md §11): the options come from capture_summary, and the table a
        # capture leaves is judged without its forced cards (exact when there is one option).
        count, union, inter = capture_summary(table[r], c)
        capture = count > 0
        tr = table[r]
        own_joker = c >= NUM_CARDS
        escoba = capture & (union == tr) & (inter == tr)
        left = np.where(capture, tr & ~inter, tr | (_U1 << c.astype(np.uint64)))
        sweep_cards = _sweepers(left)
        sweepable = sweep_cards != 0
        cw = cw + w.get("joker", 0.0) * own_joker * np.where(capture, -1.0, 1.0)
    if threat != "none":
        nxt = seat + 1
        nxt[nxt == engine.num_players] = 0
        opp_hand = engine.hands[rows, nxt]
        if not jokers:
            shift = (4 * np.clip(need - 1, 0, 9)).astype(np.uint64)
    if threat == "peek":
        # Inside a world the next seat's hand is known: a table it would sweep is avoided exactly.
        opp = opp_hand[r]
        p_sweep = sweepable & ((((opp >> shift) & _NIB) if not jokers else (opp & sweep_cards)) != 0)
    elif threat == "count":
        # What the actor can count: cards in no pile, not on the table and not in its own hand.
        seen = table | hand
        for k in range(engine.num_players):
            seen = seen | engine.piles[:, k]
        unseen_g = np.uint64((1 << engine.rules.num_cards) - 1) & ~seen
        unseen = unseen_g[r]
        u = np.bitwise_count(unseen_g)[r]
        n_need = np.bitwise_count(((unseen >> shift) & _NIB) if not jokers else (unseen & sweep_cards))
        h_opp = np.bitwise_count(opp_hand).astype(np.int64)
        h_opp = np.where(h_opp > 0, h_opp, np.where(engine.stock_pos < engine.rules.num_cards, 3, 0))
        p_sweep = sweepable * _SWEPT[u, n_need, h_opp[r]]
    else:
        p_sweep = sweepable * 1.0
    # A capture's value, on the capturing cards only (union and intersection are unset elsewhere).
    cap = np.nonzero(capture)[0]
    inter, union = inter[cap], union[cap]
    value = -cw
    value[cap] = 10.0 + w["escoba"] * escoba[cap] + weigh(inter) + 0.5 * weigh(union & ~inter) + cw[cap]
    score = np.full((n, 3), _NEG)
    score[r, j] = value - w["sweep"] * p_sweep
    # The best card of each hand, ties to the first (argmax over three columns).
    s0, s1, s2 = score[:, 0], score[:, 1], score[:, 2]
    second = s1 > s0
    third = s2 > np.where(second, s1, s0)
    actions = cards[rows, np.where(third, 2, second.astype(np.int64))]
    pend = np.nonzero(engine.pending >= 0)[0]
    if pend.size:
        actions[pend] = _most_valuable_take(legal[pend], w)
    if epsilon > 0:
        explore = rng.random(n) < epsilon
        actions = np.where(explore, sample_actions(legal, rng.random(n)), actions)
    return actions


_SWEPT = hold_probability(*np.meshgrid(np.arange(MAX_CARDS + 1), np.arange(MAX_CARDS + 1), np.arange(4),
                                       indexing="ij"))
"""``_SWEPT[u, k, h]``: the probability that a hand of ``h`` cards drawn from ``u`` unseen cards holds
one of the ``k`` that sweep (the expert's ``hold_probability``, the same float operations, tabulated)."""


@functools.cache
def _take_tables(key: tuple) -> tuple[list[np.ndarray], np.ndarray]:
    """Return (three 16-bit chunk tables mapping a card mask to the mask of its cards' ranks, the card
    id of each rank) for the capture-choice priority of weights ``dict(key)``: rank 0 is the most
    valuable card, ties to the lowest id (what ``argmax`` over the priorities picks)."""
    prio = _take_priority(dict(key)) + 1.0
    order = np.lexsort((np.arange(MAX_CARDS), -prio))
    rank = np.empty(MAX_CARDS, np.uint64)
    rank[order] = np.arange(MAX_CARDS, dtype=np.uint64)
    x = np.arange(1 << 16, dtype=np.uint64)
    chunks = []
    for k in range(3):
        t = np.zeros(1 << 16, np.uint64)
        for i in range(min(16, MAX_CARDS - 16 * k)):
            t |= ((x >> np.uint64(i)) & _U1) << rank[16 * k + i]
        chunks.append(t)
    return chunks, order


def _most_valuable_take(legal: np.ndarray, w: dict[str, float]) -> np.ndarray:
    """Return, per legal mask of a capture choice, its most valuable card (``_take_priority``; ties to
    the lowest id; 0 for an empty mask): three look-ups and the lowest set bit, for any number of masks."""
    (t0, t1, t2), order = _take_tables(tuple(sorted(w.items())))
    ranks = t0[legal & _M16] | t1[(legal >> np.uint64(16)) & _M16] | t2[(legal >> np.uint64(32)) & _M16]
    best = np.minimum(np.bitwise_count((ranks & (~ranks + _U1)) - _U1), MAX_CARDS - 1)
    return np.where(ranks != 0, order[best], 0)


_CARD_WEIGHT_CACHE: dict[tuple, np.ndarray] = {}


def _card_weight_table(w: dict[str, float]) -> np.ndarray:
    """Return the weight of each single card (velo, seven, oro, card) under weights ``w`` (cached)."""
    key = (w["velo"], w["seven"], w["oro"], w["card"])
    t = _CARD_WEIGHT_CACHE.get(key)
    if t is None:
        t = _CARD_WEIGHT_CACHE[key] = card_weights(_BITS, *key)
    return t


def _ahead_table(max_r: int = MAX_CARDS) -> np.ndarray:
    """Return T (max_r+1, 2*max_r+1): T[r, d + max_r] = P(d + 2X - r > 0) for X ~ Bin(r, 1/2)."""
    t = np.zeros((max_r + 1, 2 * max_r + 1))
    d = np.arange(-max_r, max_r + 1)
    for r in range(max_r + 1):
        pmf = np.array([comb(r, x) for x in range(r + 1)], np.float64) / 2.0**r
        shift = 2 * np.arange(r + 1) - r
        t[r] = ((d[:, None] + shift[None, :]) > 0) @ pmf
    return t


_AHEAD = _ahead_table()


def expected_points(engine: EscobaEngine, games: np.ndarray) -> np.ndarray:
    """Return a heuristic estimate (len(games), S) of each side's points for the current round.

    Escobas so far count fully; the velo counts for its holder (1/S each while nobody has it);
    cards, oros and sevens count with the probability that the side ends strictly first if each card
    not yet captured went to a uniformly random side (binomial model, pairwise for > 2 sides).
    """
    piles, esc = engine.side_totals(games)
    s = piles.shape[1]
    out = esc.astype(np.float64)
    has_velo = ((piles >> np.uint64(24)) & np.uint64(1)).astype(np.float64)
    out += np.where(has_velo.sum(axis=1, keepdims=True) > 0, has_velo, 1.0 / s)
    nc = engine.rules.num_cards
    for mask, total in ((np.uint64((1 << nc) - 1), nc), (np.uint64(OROS), 10), (np.uint64(SEVENS), 4)):
        c = np.bitwise_count(piles & mask).astype(np.int64)
        r = total - c.sum(axis=1)
        r_eff = r if s == 2 else np.rint(2 * r / s).astype(np.int64)
        p = np.ones(c.shape)
        for t in range(s):
            d = np.clip(c - c[:, t:t + 1], -MAX_CARDS, MAX_CARDS) + MAX_CARDS
            pt = _AHEAD[r_eff[:, None], d]
            p *= np.where(np.arange(s)[None, :] == t, 1.0, pt)
        out += p
    return out


def rollout_values(engine: EscobaEngine, card: np.ndarray, option: np.ndarray, me: np.ndarray,
                   rng: np.random.Generator, epsilon: float = 0.0, policy: str | Callable = "greedy",
                   threat: str = "count", horizon: int | None = None,
                   leaf: Callable[[EscobaEngine, np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Return, per game, the round's point difference for seat ``me`` after it plays the move
    (``card``, ``option``) and the default policy plays every seat to the end of the round.

    Every game must be a single-round engine with seat ``me`` to act. The difference is the points
    of ``me``'s side minus the mean of the other sides' points (for the whole round). With
    ``horizon`` (a number of turns after the move), a rollout stops there and the round's points
    are estimated by ``expected_points``. ``policy`` may also be a callable ``policy(engine)``
    returning one action per game (legal for every live game): it then plays every seat instead.
    With ``leaf`` (2 players), a rollout stops at the first turn with an empty stock and takes
    ``leaf(engine, games)``: the round's point difference for the seat to act in each of ``games``
    (its points minus the other side's), e.g. the exact endgame value.
    """
    rules = engine.rules
    s = rules.num_sides
    n = engine.num_games
    points = np.zeros((n, s))
    forcing = np.ones(n, bool)
    turns = np.zeros(n, np.int64)
    card = np.asarray(card, np.int64)
    option = np.asarray(option, np.uint64)
    leaf_value = np.full(n, np.nan) if leaf is not None else None

    def default(engine):
        return (policy(engine) if callable(policy)
                else rollout_actions(engine, rng, epsilon, policy, threat=threat))

    while not engine.done.all():
        if forcing.any():
            # The move being evaluated: its card, then the table cards of its capture option (with
            # jokers, the card's own id again, "stop", when the option is nested in a larger one).
            name = lowest_card(option & engine.legal)
            forced = np.where(engine.pending >= 0, np.where(name >= 0, name, card), card)
            actions = forced if forcing.all() else np.where(
                forcing, forced, default(engine))
        else:
            actions = default(engine)
        turn = ~engine.done & (engine.pending < 0) & ~forcing
        info = engine.step(actions)
        points += info.round_points
        forcing &= engine.pending >= 0
        if horizon is not None:
            turns += turn
            stop = np.nonzero((turns >= horizon) & ~engine.done & (engine.pending < 0))[0]
            if stop.size:
                points[stop] = expected_points(engine, stop)
                engine.done[stop] = True
        if leaf is not None:
            stop = np.nonzero(~engine.done & (engine.pending < 0) & ~forcing
                              & (engine.stock_pos >= rules.num_cards))[0]
            if stop.size:
                v = np.asarray(leaf(engine, stop), np.float64)
                same = engine.side_of_seat[engine.to_act[stop]] == engine.side_of_seat[np.asarray(me)[stop]]
                leaf_value[stop] = np.where(same, v, -v)
                engine.done[stop] = True
    side = engine.side_of_seat[np.asarray(me, np.int64)]
    own = np.take_along_axis(points, side[:, None], axis=1)[:, 0]
    out = own - (points.sum(axis=1) - own) / max(s - 1, 1)
    if leaf is not None:
        out = np.where(np.isnan(leaf_value), out, leaf_value)
    return out


def endgame_leaf(kind: str, rules) -> Callable[[EscobaEngine, np.ndarray], np.ndarray]:
    """Return ``leaf(engine, games)`` of ``rollout_values``: the value of each game's 2-player
    endgame for the seat to act, exact (``"exact"``: ``agents.heuristic.endgame.solve``) or as
    ``neural-solo``'s endgame network scores its best move (``"net"``). Read from that seat's
    observation; at an empty stock in a 2-player game it hides nothing."""
    from escoba_env.executors.observation import action_masks, encode

    from ..heuristic.endgame import check_solvable

    check_solvable(rules)
    if kind == "exact":
        from ..heuristic.endgame import solve

        def values(obs, masks):
            return np.nanmax(solve(obs, rules), axis=1)
    else:
        from ..nets.solo import endgame_net_values

        values = endgame_net_values(rules)

    def leaf(engine: EscobaEngine, games: np.ndarray) -> np.ndarray:
        seats = engine.to_act[games]
        return values(encode(engine, seats, games), action_masks(engine, seats, games))

    return leaf


class SearchAgent(Agent):
    """Determinized Monte Carlo search (PIMC) with ``sims`` rollouts per decision (module docs)."""

    name = "search"
    DEFAULT_SIMS = 400

    def __init__(self, rules=None, seed=None, sims: int = DEFAULT_SIMS, epsilon: float = 0.0,
                 rollout: str = "greedy", max_rows: int = 200_000, threat: str = "count",
                 horizon: int | None = None, leaf: str | None = None, policy: Agent | None = None):
        if leaf not in LEAVES:
            raise ValueError(f"leaf must be one of {', '.join(map(str, LEAVES))}, got {leaf!r}")
        if threat not in THREATS:
            raise ValueError(f"threat must be one of {', '.join(THREATS)}, got {threat!r}")
        if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer))
                                    or horizon < 1):
            raise ValueError(f"horizon must be None (end of round) or a positive int, got {horizon!r}")
        self.threat = threat
        self.horizon = None if horizon is None else int(horizon)
        if isinstance(sims, bool) or not isinstance(sims, (int, np.integer)) or sims < 1:
            raise ValueError(f"sims must be a positive int, got {sims!r}")
        if not 0.0 <= float(epsilon) <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        if rollout not in ("greedy", "random"):
            raise ValueError(f"rollout must be 'greedy' or 'random', got {rollout!r}")
        if max_rows < 1:
            raise ValueError(f"max_rows must be positive, got {max_rows!r}")
        self.sims = int(sims)
        self.epsilon = float(epsilon)
        self.rollout = rollout
        self.max_rows = int(max_rows)
        super().__init__(rules, seed)
        self.leaf = leaf
        self._leaf_fn = None if leaf is None else endgame_leaf(leaf, self.rules)
        self.policy = None if policy is None else self._check_policy(policy)
        self.name = (f"{type(self).name}:sims={self.sims}" + (f",leaf={leaf}" if leaf else "")
                     + (f",policy={policy.name}" if policy is not None else ""))

    def reset(self, seed: int | None = None) -> None:
        """Re-seed the agent and its rollout policy, if it has one."""
        super().reset(seed)
        if getattr(self, "policy", None) is not None:
            self.policy.reset(seed)

    def _check_policy(self, policy: Agent) -> Agent:
        """Return ``policy`` if it is a fair agent of these rules (it can play rollouts), else raise."""
        if not isinstance(policy, Agent) or policy.needs_state:
            name = getattr(policy, "name", policy)
            raise ValueError(f"the rollout policy must be a fair agent, not {name!r}")
        if policy.rules != self.rules:
            raise ValueError(f"the rollout policy plays {policy.rules}, not {self.rules}")
        return policy

    def _worlds(self, obs: np.ndarray, counts: np.ndarray, state, rows: np.ndarray):
        """Return (engine with counts[i] worlds of row i, seat of the decider in each world)."""
        e = worlds_from_observations(obs, self.rules, self.rng, counts)
        return e, np.zeros(e.num_games, np.int64)

    def act_batch(self, observations, action_masks, state=None):
        """Return the searched action (int64) for each observation.

        Afterwards ``last_moves`` (``agents.moves.Moves``) holds every decision's moves and
        ``last_move_values`` their mean rollout values (points of the agent's side minus the
        others'; NaN for decisions with a single move), for analysis and teacher labels.
        """
        obs = np.asarray(observations, np.float32)
        planes = observation_masks(obs, self.rules)
        moves = enumerate_moves(obs, self.rules, planes)
        self.last_moves = moves
        self.last_move_values = np.full(len(moves.card), np.nan)
        chosen = moves.start[:-1].copy()
        m = moves.count
        need = np.nonzero(m > 1)[0]
        if need.size:
            worlds = -(-self.sims // m[need])
            cost = worlds * m[need]
            # Blocks of decisions whose rollouts fit in max_rows games.
            block = np.cumsum(cost) // self.max_rows
            for b in np.unique(block):
                sel = need[block == b]
                chosen[sel] = self._search(obs[sel], moves, sel, worlds[block == b], state)
        return move_actions(moves, chosen, obs, action_masks, planes)

    def _rollout_policy(self):
        """Return the default policy of the rollouts: a ``rollout_actions`` policy name, or a callable
        (with ``policy``: that agent's action for the seat to act in every live game, from its own
        observation of the rollout's world)."""
        if self.policy is None:
            return self.rollout

        def play(engine: EscobaEngine) -> np.ndarray:
            live = np.flatnonzero(~engine.done)
            actions = np.zeros(engine.num_games, np.int64)
            if live.size:
                seats = engine.to_act[live]
                actions[live] = self.policy.act_batch(encode(engine, seats, live),
                                                      action_masks(engine, seats, live))
            return actions

        return play

    def _search(self, obs: np.ndarray, moves: Moves, rows: np.ndarray, worlds: np.ndarray,
                state) -> np.ndarray:
        """Return the index of the best move of each of ``rows`` (flat move indices)."""
        m = moves.count[rows]
        eng, me = self._worlds(obs, worlds, state, rows)
        world_start = np.concatenate([[0], np.cumsum(worlds)[:-1]])
        n = worlds * m
        total = int(n.sum())
        row_of = np.repeat(np.arange(len(rows)), n)
        local = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
        w_local, m_local = local // m[row_of], local % m[row_of]
        world_idx = world_start[row_of] + w_local
        move_idx = moves.start[rows][row_of] + m_local
        sim = take_games(eng, world_idx, single_round=True)
        values = rollout_values(sim, moves.card[move_idx], moves.option[move_idx], me[world_idx],
                                self.rng, self.epsilon, self._rollout_policy(), self.threat, self.horizon,
                                self._leaf_fn)
        # Mean value per move (every move of a row has the same number of worlds), argmax per row
        # with ties to the first move, without a Python loop.
        starts = np.cumsum(m) - m
        sums = np.bincount(starts[row_of] + m_local, weights=values, minlength=int(m.sum()))
        mean = sums / np.repeat(worlds, m)
        row_id = np.repeat(np.arange(len(rows)), m)
        self.last_move_values[moves.start[rows][row_id] + np.arange(len(mean)) - starts[row_id]] = mean
        order = np.lexsort((np.arange(len(mean)), -mean, row_id))
        return order[starts] - starts + moves.start[rows]


class OracleAgent(SearchAgent):
    """CHEATING, upper-bound reference: the search agent given the true hidden cards.

    Needs ``state=(engine, games)`` (``needs_state = True``): its rollouts start from copies of
    the true engine state (other hands and stock order included). Never a fair opponent.
    """

    name = "oracle"
    needs_state = True

    def __init__(self, rules=None, seed=None, sims: int = SearchAgent.DEFAULT_SIMS, epsilon: float = 0.0,
                 rollout: str = "greedy", max_rows: int = 200_000, threat: str = "count",
                 horizon: int | None = None, leaf: str | None = None, policy: Agent | None = None):
        super().__init__(rules, seed, sims, epsilon, rollout, max_rows, threat, horizon, leaf, policy)
        self.name = f"oracle(cheating):sims={self.sims}"

    def _worlds(self, obs, counts, state, rows):
        if state is None:
            raise ValueError("the oracle (cheating reference) needs state=(engine, games) from the caller")
        engine, games = state
        games = np.asarray(games, np.int64)[rows]
        idx = np.repeat(games, counts)
        e = take_games(engine, idx, single_round=True)
        return e, engine.to_act[idx]
