"""Exact values of the 2-player endgame: after the last deal every hidden card is known.

In a 2-player game (no partnerships) the observer's unseen cards are the other hand plus the
stock. Once the stock is empty (the last deal is out), the unseen cards *are* the opponent's hand,
so the rest of the round is a game of perfect information with at most 3 + 3 cards to play. It is
small enough to solve exactly: ``endgame_values`` expands every line of play with the batched
engine (every hand card, every capture choice) to the end of the round and backs the round's
point difference up by minimax.

The value of a position is ``points(observer's side) - points(opponent)`` for the round, the
quantity duplicate evaluation reports; the observer maximises it, the opponent minimises it.
Only the observation is read (the world is rebuilt by ``agents.worlds.worlds_from_observations``,
which at an empty stock in a 2-player game has exactly one consistent world), so this is
information the observer has, not a peek.

``EndgameAgent`` wraps another agent and plays the exact best action in these positions (the
wrapped agent elsewhere; registry spec ``endgame`` or ``endgame:base=NAME``). A ``moves`` network
can read these values as two extra move features (``agents.nets.features.endgame_features``,
``PolicyValueNet(endgame=True)``, ``train.py --endgame-features``).

Cost: the tree of a 3 + 3 card position holds up to a few thousand nodes (the capture choices
multiply it), all stepped as one engine batch per level. In training it roughly halves the
throughput (``python benchmarks/bench_train.py --endgame-features``).
"""

from __future__ import annotations

import numpy as np

from escoba_env.executors.engine import unpack_mask
from escoba_env.rulebook.rules import Rules

from ..base import Agent
from ..worlds import obs_layout, observation_scalars, take_games, worlds_from_observations


def _at_or_below(masks: np.ndarray) -> np.ndarray:
    """Return, per uint64 mask, the mask of every bit at or below its highest set bit (0 for 0)."""
    m = np.asarray(masks, np.uint64).copy()
    for shift in (1, 2, 4, 8, 16, 32):
        m |= m >> np.uint64(shift)
    return m


def check_solvable(rules: Rules) -> None:
    """Raise ValueError unless ``rules``' endgames can be solved exactly (2 players, no partnerships)."""
    if rules.num_players != 2 or rules.partnerships:
        raise ValueError(f"the exact endgame needs a 2-player game without partnerships, not {rules}")


def endgame_rows(obs: np.ndarray, rules: Rules) -> np.ndarray:
    """Return, per observation, whether it is a solvable endgame: 2 players, no partnerships, the
    stock empty (bool (K,)). The observer must be the seat to act."""
    obs = np.asarray(obs, np.float32)
    if rules.num_players != 2 or rules.partnerships or obs.shape[0] == 0:
        return np.zeros(obs.shape[0], bool)
    return observation_scalars(obs, rules)["stock"] == 0


def solve(obs: np.ndarray, rules: Rules) -> np.ndarray:
    """Return float32 (K, W) exact minimax values of every legal action of endgame observations.

    ``obs`` (K, obs size) must all be endgame positions (``endgame_rows``) of the seat to act.
    Entry (i, a) is the round's point difference (observer minus opponent) after action ``a`` with
    best play by both sides; NaN for illegal actions. W = ``rules.num_cards``.
    """
    obs = np.asarray(obs, np.float32)
    k, w = obs.shape[0], rules.num_cards
    out = np.full((k, w), np.nan, np.float32)
    if k == 0:
        return out
    if not endgame_rows(obs, rules).all():
        raise ValueError("solve() needs 2-player observations with an empty stock")
    eng = worlds_from_observations(obs, rules, np.random.default_rng(0), 1)
    # Expand level by level: the nodes of level d + 1 are the games of one engine, one per edge
    # (parent node of level d, legal action); finished games keep their terminal value.
    #
    # A capture choice names table cards one at a time, and naming the same cards in another order
    # reaches the same capture. Inside the tree only increasing orders are expanded: naming, each
    # time, the lowest card of the wanted option that is still legal reaches every option, and that
    # sequence is increasing (a lower card of the option that was not legal was in every remaining
    # option, and stays so). A choice already under way at the root keeps all its names. With
    # jokers, the "stop" action (the played card's own id: take the cards named so far) is always
    # kept, whatever its id.
    terminal = [np.full(k, np.nan)]  # per level: the round's point difference at finished nodes
    actor = [eng.to_act.copy()]
    canonical = np.zeros(k, bool)  # the pending capture's play was made inside the tree
    edges = []  # per level: (parent index, action); edge i leads to node i of the next level
    while True:
        legal = np.where(eng.done, np.uint64(0), eng.legal)
        # (the played card's own id, the "stop" action of nested joker options, is never pruned)
        stop = np.uint64(1) << np.maximum(eng.pending, 0).astype(np.uint64)
        legal = np.where(canonical & (eng.pending >= 0), legal & ~(_at_or_below(eng.taken) & ~stop), legal)
        par, act = np.nonzero(unpack_mask(legal, w).astype(bool))
        if par.size == 0:
            break
        child = take_games(eng, par, single_round=True)
        was_pending = eng.pending[par] >= 0
        info = child.step(act)
        canonical = np.where(was_pending, canonical[par], True) & (child.pending >= 0)
        rp = info.round_points
        value = np.where(info.round_over, (rp[:, 0] - rp[:, 1]).astype(np.float64), np.nan)
        edges.append((par, act))
        eng = child
        terminal.append(value)
        actor.append(eng.to_act.copy())
    # Back up from the deepest level: a live node's value is the max (the observer, seat 0) or
    # the min (the opponent) of its children's values.
    # A live node without children is a dead end of a non-increasing naming order (its capture is
    # reached by another order): -inf for the observer, +inf for the opponent, so that the same
    # seat, choosing at the parent, never picks it.
    dead = np.where(actor[-1] == 0, -np.inf, np.inf)
    node_value = np.where(np.isnan(terminal[-1]), dead, terminal[-1])
    for depth in range(len(edges) - 1, -1, -1):
        par, act = edges[depth]
        v = node_value
        if depth == 0:
            out[par, act] = v
            break
        n_nodes = len(actor[depth])
        best_max = np.full(n_nodes, -np.inf)
        best_min = np.full(n_nodes, np.inf)
        np.maximum.at(best_max, par, v)
        np.minimum.at(best_min, par, v)
        backed = np.where(actor[depth] == 0, best_max, best_min)
        node_value = np.where(np.isnan(terminal[depth]), backed, terminal[depth])
    return out


def endgame_values(obs: np.ndarray, rules: Rules) -> np.ndarray:
    """Return float32 (K, W): exact action values on endgame rows (``solve``), NaN elsewhere."""
    obs = np.asarray(obs, np.float32)
    out = np.full((obs.shape[0], rules.num_cards), np.nan, np.float32)
    rows = np.nonzero(endgame_rows(obs, rules))[0]
    if rows.size:
        out[rows] = solve(obs[rows], rules)
    return out


class EndgameAgent(Agent):
    """Plays ``base`` except in 2-player endgames (empty stock), where it plays an exactly best
    action (ties: the one ``base`` picks if it is among them, else the lowest id).

    ``last_values`` holds the exact action values of the last ``act_batch`` (NaN outside endgames).
    """

    def __init__(self, base: Agent, rules: Rules | None = None, seed: int | None = None):
        self.base = base
        self.name = f"endgame+{base.name}"
        super().__init__(rules if rules is not None else base.rules, seed)

    def act_batch(self, observations, action_masks, state=None):
        """Return one action per row: the base agent's, overridden by the solver in endgames."""
        obs = np.asarray(observations, np.float32)
        masks = np.asarray(action_masks)
        if obs.shape[1] != obs_layout(self.rules).size:
            raise ValueError("observations do not match this agent's rules")
        actions = np.asarray(self.base.act_batch(obs, masks, state), np.int64).copy()
        rows = np.nonzero(endgame_rows(obs, self.rules) & (masks > 0).any(axis=1))[0]
        self.last_values = np.full(masks.shape, np.nan, np.float32)
        if rows.size:
            v = solve(obs[rows], self.rules)
            self.last_values[rows] = v
            best = np.nanmax(v, axis=1)
            is_best = v >= best[:, None] - 1e-9
            keep = is_best[np.arange(rows.size), actions[rows]]
            actions[rows] = np.where(keep, actions[rows], np.argmax(is_best, axis=1))
        return actions
