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

The default policy (``rollout_actions``: ``agents.heuristic.strategy.rollout_policy`` on the arrays it reads
of the engine state) is a vectorised greedy, one batched call per step for every rollout: capture the
most valuable option (escoba first), else discard the least valuable card, and avoid leaving a
table total the next seat can sweep, judged by card counting from what the acting seat can see
(``threat="count"``; ``"peek"`` uses the world's next hand, ``"none"`` any sweepable total). With
probability ``epsilon`` it plays a uniformly random legal action instead; ``rollout="random"`` uses
uniform random rollouts. ``horizon=H`` stops each
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

from collections.abc import Callable
from math import comb

import numpy as np

from escoba_env.executors.engine import EscobaEngine, sample_actions
from escoba_env.executors.engine_compiled import use_compiled_default
from escoba_env.executors.observation import action_masks, encode
from escoba_env.faces.seeding import KeyedStreams, stream_keys, sub_keys
from escoba_env.rulebook.cards import MAX_CARDS, OROS, SEVENS

from ..base import Agent
from ..heuristic.endgame import check_solvable, solve
from ..heuristic.strategy import ROLLOUT_WEIGHTS, THREATS, Weights, rollout_policy
from ..moves import Moves, enumerate_moves, lowest_card, move_actions
from ..worlds import observation_masks, take_games, worlds_from_observations

LEAVES = (None, "exact", "net")
"""Rollout leaves at the empty stock (2 players): none (play to the end of the round), the exact
minimax value (``agents.heuristic.endgame``) or ``neural-solo``'s endgame network's value."""

_WORLDS, _ROLLOUTS = 0x5EA7C4_0001, 0x5EA7C4_0002  # sub-streams of a decision's key (act_streams)


def rollout_actions(engine: EscobaEngine, rng: np.random.Generator, epsilon: float = 0.0,
                    policy: str = "greedy", weights: dict[str, float] | None = None,
                    threat: str = "count") -> np.ndarray:
    """Return one default-policy action (int64) per game of ``engine`` (any value for finished games).

    ``policy="greedy"``: ``agents.heuristic.strategy.rollout_policy`` for the seat to act in every game, from
    what it reads of the engine: the seat's hand, the table, the pending card and legal actions, the
    next seat's hand (``threat="peek"``; its size for ``"count"``), the cards the seat cannot see (in
    no pile, not on the table, not in its hand: ``"count"``) and whether the stock holds cards.
    ``weights``: ``agents.heuristic.strategy.ROLLOUT_WEIGHTS`` by default. With probability ``epsilon`` a
    uniformly random legal action is played instead. ``policy="random"``: uniform over legal actions.

    Random draws from ``rng``, in this order: ``policy="random"``: ``n`` uniforms (one per game, the
    action: ``sample_actions``); ``"greedy"`` with ``epsilon > 0``: ``n`` uniforms (a game explores
    where its uniform is below ``epsilon``), then ``n`` more (the random action of every game,
    ``sample_actions``, kept where it explores); ``epsilon = 0``: none. ``tests/agents/test_search_pinned.py``
    and ``tests/agents/test_strategy_pinned.py`` pin every action.
    """
    if threat not in THREATS:
        raise ValueError(f"threat must be one of {THREATS}, got {threat!r}")
    n = engine.num_games
    legal = engine.legal
    if policy == "random":
        return sample_actions(legal, rng.random(n))
    w = ROLLOUT_WEIGHTS if weights is None else weights
    jokers = engine.rules.jokers > 0
    rows = np.arange(n)
    seat = engine.to_act
    hand = engine.hands[rows, seat]
    next_hand = unseen = None
    if threat != "none":
        nxt = seat + 1
        nxt[nxt == engine.num_players] = 0
        next_hand = engine.hands[rows, nxt]
    if threat == "count":
        seen = engine.table | hand
        for k in range(engine.num_players):
            seen = seen | engine.piles[:, k]
        unseen = np.uint64((1 << engine.rules.num_cards) - 1) & ~seen
    stock_left = engine.stock_pos < engine.rules.num_cards if threat == "count" else None
    if not jokers and use_compiled_default():  # the same actions, compiled (the [fast] extra)
        from .rollout_compiled import compiled_policy  # the [fast] extra (Numba)

        actions = compiled_policy(engine, w, threat)
    else:
        actions = rollout_policy(hand, engine.table, engine.pending, legal, Weights.of(w, jokers), w["sweep"],
                                 jokers, threat, next_hand, unseen, stock_left)
    if epsilon > 0:
        u_explore = rng.random(n)
        u_action = rng.random(n)
        actions = np.where(u_explore < epsilon, sample_actions(legal, u_action), actions)
    return actions


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


def compiled_rollouts(rules, policy, epsilon: float, horizon: int | None, leaf) -> bool:
    """Return whether ``rollout_values`` plays these rollouts compiled (``rollout_compiled``, the [fast]
    extra): the greedy policy, no draws (``epsilon`` 0), to the end of the round, no jokers."""
    return (isinstance(policy, str) and policy == "greedy" and epsilon == 0 and horizon is None
            and leaf is None and not rules.jokers and use_compiled_default())


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

    if compiled_rollouts(rules, policy, epsilon, horizon, leaf):
        from .rollout_compiled import compiled_rollout_values  # the [fast] extra (Numba)

        return compiled_rollout_values(engine, card, option, me, ROLLOUT_WEIGHTS, threat)

    def default(engine):
        return (policy(engine) if callable(policy)
                else rollout_actions(engine, rng, epsilon, policy, threat=threat))

    step = 0
    while not engine.done.all():
        if isinstance(rng, KeyedStreams):  # keyed draws: step t's are the same whoever else drew
            rng.at(step)
        step += 1
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
    check_solvable(rules)
    if kind == "exact":
        def values(obs, masks):
            return np.nanmax(solve(obs, rules), axis=1)
    else:
        from ..nets.solo import endgame_net_values  # the [agents] extra (torch)

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

    def _worlds(self, obs: np.ndarray, counts: np.ndarray, state, rows: np.ndarray, rng):
        """Return (engine with counts[i] worlds of row i, seat of the decider in each world)."""
        e = worlds_from_observations(obs, self.rules, rng, counts)
        return e, np.zeros(e.num_games, np.int64)

    def act_batch(self, observations, action_masks, state=None):
        """Return the searched action (int64) for each observation.

        Afterwards ``last_moves`` (``agents.moves.Moves``) holds every decision's moves and
        ``last_move_values`` their mean rollout values (points of the agent's side minus the
        others'; NaN for decisions with a single move), for analysis and teacher labels.
        """
        return self._decide(observations, action_masks, state, None)

    def act_streams(self, observations, action_masks, seeds, calls, state=None):
        """Return ``act_batch``'s actions with row ``i``'s draws keyed by call ``calls[i]`` of the stream
        seeded ``seeds[i]`` (``escoba_env.faces.seeding.stream_keys``): a row's search never depends on the
        other rows, so a batch of game slots is searched at once and each slot plays what one env
        alone would (the Gymnasium faces call this). With a rollout ``policy``, one row at a time."""
        keys = stream_keys(seeds, calls)
        if self.policy is not None:  # the policy draws from its own generator
            return self.act_keyed_rows(np.asarray(observations, np.float32), np.asarray(action_masks), keys,
                                       state, (self.policy,))
        return self._decide(observations, action_masks, state, keys)

    def _decide(self, observations, action_masks, state, keys):
        """Return the searched actions, drawing from the agent's generator (``keys`` None) or from
        streams keyed by one 64-bit key per row."""
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
                chosen[sel] = self._search(obs[sel], moves, sel, worlds[block == b], state,
                                           None if keys is None else keys[sel])
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

    def _compiled_values(self, eng: EscobaEngine, moves: Moves, move_idx: np.ndarray, world_idx: np.ndarray,
                         me: np.ndarray, worlds: np.ndarray, m: np.ndarray) -> np.ndarray:
        """Return ``rollout_values`` of rollout ``j`` (move ``move_idx[j]`` from world ``world_idx[j]`` of
        ``eng``; ``m[j]``: the moves of its decision), compiled (the [fast] extra): no draws, so the
        generator is not read, and a rollout whose world deals the same hidden cards as an earlier world
        of its decision is not played again but takes that one's value (the same game, the same bits)."""
        from ..worlds_compiled import first_same_world  # the [fast] extra (Numba)
        from .rollout_compiled import compiled_rollout_values  # the [fast] extra (Numba)

        same = np.empty(eng.num_games, np.int64)
        first_same_world(eng.hands, eng.deck, eng.stock_pos, np.ascontiguousarray(worlds, np.int64), same)
        twin = np.arange(len(world_idx)) + (same[world_idx] - world_idx) * m
        played = np.flatnonzero(twin == np.arange(len(world_idx)))
        values = np.empty(len(world_idx))
        move, world = move_idx[played], world_idx[played]
        values[played] = compiled_rollout_values(eng, moves.card[move], moves.option[move], me[world],
                                                 ROLLOUT_WEIGHTS, self.threat, world)
        return values[twin]

    def _search(self, obs: np.ndarray, moves: Moves, rows: np.ndarray, worlds: np.ndarray,
                state, keys: np.ndarray | None) -> np.ndarray:
        """Return the index of the best move of each of ``rows`` (flat move indices). The worlds and
        rollouts draw from the agent's generator, or (``keys``, one per row) from keyed streams."""
        m = moves.count[rows]
        world_start = np.concatenate([[0], np.cumsum(worlds)[:-1]])
        rng = self.rng
        if keys is not None:  # world w of row i: sub-stream w of the row's key
            rng = KeyedStreams(sub_keys(np.repeat(keys, worlds), _WORLDS,
                                        np.arange(int(worlds.sum())) - np.repeat(world_start, worlds)))
        eng, me = self._worlds(obs, worlds, state, rows, rng)
        n = worlds * m
        total = int(n.sum())
        row_of = np.repeat(np.arange(len(rows)), n)
        local = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
        w_local, m_local = local // m[row_of], local % m[row_of]
        world_idx = world_start[row_of] + w_local
        move_idx = moves.start[rows][row_of] + m_local
        policy = self._rollout_policy()
        if compiled_rollouts(self.rules, policy, self.epsilon, self.horizon, self._leaf_fn):
            values = self._compiled_values(eng, moves, move_idx, world_idx, me, worlds, m[row_of])
        else:
            sim = take_games(eng, world_idx, single_round=True)
            rng = self.rng if keys is None else KeyedStreams(sub_keys(keys[row_of], _ROLLOUTS, local))
            values = rollout_values(sim, moves.card[move_idx], moves.option[move_idx], me[world_idx],
                                    rng, self.epsilon, policy, self.threat, self.horizon, self._leaf_fn)
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

    def _worlds(self, obs, counts, state, rows, rng):
        if state is None:
            raise ValueError("the oracle (cheating reference) needs state=(engine, games) from the caller")
        engine, games = state
        games = np.asarray(games, np.int64)[rows]
        idx = np.repeat(games, counts)
        e = take_games(engine, idx, single_round=True)
        return e, engine.to_act[idx]
