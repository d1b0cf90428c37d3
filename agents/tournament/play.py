"""Play one block of deals of one lineup on the batched engine, with duplicate seat rotations.

A *lineup* is the tuple of agents that sit at one table, one per scoring side (with partnerships
an agent plays both seats of its team). Lineup position ``k`` is one of those agents; the same
agent object may fill several positions (then it is called once per step for all of them).

With duplicate deals, each deal ``d`` is played once per rotation ``r`` in ``0..S-1``: rotation
``r`` gives side ``s`` to lineup position ``(s + r) % S``, and all rotations of a deal share the
engine's game id, hence the same cards, dealer and stock in every round (the engine shuffles round
``i`` of a game by a hash of ``(seed, game id, episode, i)``; a whole game to the target score is
dealt the same way as long as the rotations last). Without duplicate deals, deal ``d`` is played
once, in rotation ``d % S`` (seats still balanced over deals).

``play_block`` returns per game slot the totals of each lineup position's side (points and the
category points of every round, rounds played), from which ``agents.tournament.analysis``
computes everything else. With ``record=True`` it also returns each game as a replay (a dict; see
``agents.tournament.replay``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.observation import action_masks, encode
from escoba_env.rulebook.cards import cards_of
from escoba_env.rulebook.rules import Rules

from ..base import Agent

CATEGORIES = ("cards", "oros", "velo", "sevens", "escobas")
"""Category points recorded per round (the engine's ``StepInfo.round_categories`` keys)."""


@dataclass
class Block:
    """Results of one block of deals of one lineup; arrays are indexed by game slot."""

    lineup: int
    """Index of the lineup in the tournament."""
    block: int
    """Index of the block of deals."""
    deal: np.ndarray
    """(n,) deal id (engine game id) of each slot."""
    rotation: np.ndarray
    """(n,) seat rotation of each slot."""
    points: np.ndarray
    """(n, K) points of each lineup position's side, summed over the slot's rounds."""
    categories: np.ndarray
    """(n, len(CATEGORIES), K) category points of each lineup position's side, summed over rounds."""
    rounds: np.ndarray
    """(n,) rounds played in the slot."""
    truncated: np.ndarray
    """(n,) True where a game was cut by ``max_rounds`` without a winner."""
    replays: list[dict] | None = field(default=None, repr=False)
    """One dict per game slot when recorded."""
    usage: dict[str, dict] | None = field(default=None, repr=False)
    """Per language-model agent spec, what it spent on this block (``agents.external.llm.Usage.to_dict``)."""


def distinct_agents(agents: Sequence[Agent]) -> tuple[list[Agent], np.ndarray]:
    """Return the distinct agent objects and, per given agent, its index among them.

    An agent object given more than once is then called once per step for all its games.
    """
    callers: list[Agent] = []
    index = []
    for a in agents:
        same = [k for k, c in enumerate(callers) if c is a]
        if not same:
            callers.append(a)
        index.append(same[0] if same else len(callers) - 1)
    return callers, np.asarray(index, np.int64)


def agent_actions(engine: EscobaEngine, agents: Sequence[Agent], who: np.ndarray) -> np.ndarray:
    """Return one action per game: game ``g``'s seat to act is played by ``agents[who[g]]``.

    Each agent is called once, with the observations of all its games (``act_batch``); the oracle
    (``needs_state``) also gets ``state=(engine, games)``. Finished games get action 0.
    """
    actions = np.zeros(engine.num_games, np.int64)
    live = ~engine.done
    for k, agent in enumerate(agents):
        g = np.nonzero(live & (who == k))[0]
        if g.size == 0:
            continue
        seats = engine.to_act[g]
        state = (engine, g) if agent.needs_state else None
        actions[g] = agent.act_batch(encode(engine, seats, g), action_masks(engine, seats, g), state)
    return actions


def slot_layout(deal_ids: np.ndarray, sides: int, duplicate: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return (deal id, rotation) of every game slot of a block."""
    deal_ids = np.asarray(deal_ids, np.int64)
    if duplicate:
        return np.repeat(deal_ids, sides), np.tile(np.arange(sides), len(deal_ids))
    return deal_ids.copy(), deal_ids % sides


def seat_positions(rules: Rules, rotation: np.ndarray) -> np.ndarray:
    """Return the lineup position at each seat (n, P) for the given rotations."""
    seat_side = np.array([rules.side_of(s) for s in range(rules.num_players)])
    return (seat_side[None, :] + np.asarray(rotation)[:, None]) % rules.num_sides


def play_block(agents: list[Agent], rules: Rules, deal_ids: np.ndarray, seed: int, *,
               games: bool = False, duplicate: bool = True, max_rounds: int | None = None,
               record: bool = False, lineup: int = 0, block: int = 0) -> Block:
    """Return the results of playing ``deal_ids`` with ``agents`` (one per lineup position)."""
    sides = rules.num_sides
    if len(agents) != sides:
        raise ValueError(f"a lineup needs one agent per side ({sides}), got {len(agents)}")
    deal, rotation = slot_layout(deal_ids, sides, duplicate)
    n = len(deal)
    seat_pos = seat_positions(rules, rotation)  # (n, P)
    pos_side = (np.arange(sides)[None, :] - rotation[:, None]) % sides  # (n, K)
    engine = EscobaEngine(n, rules, single_round=not games, max_rounds=max_rounds if games else None)
    engine.reset(int(seed), game_ids=deal)
    callers, caller_of_pos = distinct_agents(agents)
    rows = np.arange(n)
    points = np.zeros((n, sides), np.int64)
    cats = np.zeros((n, len(CATEGORIES), sides), np.int64)
    rounds = np.zeros(n, np.int64)
    log = _Recorder(engine) if record else None
    while not engine.done.all():
        actor = engine.to_act
        who = caller_of_pos[seat_pos[rows, actor]]
        actions = agent_actions(engine, callers, who)
        info = engine.step(actions)
        if info.round_over.any():
            rounds += info.round_over
            points += info.round_points
            for i, c in enumerate(CATEGORIES):
                cats[:, i] += info.round_categories[c]
        if log is not None:
            log.step(actions, info)
    pos_points = np.take_along_axis(points, pos_side, axis=1)
    pos_cats = np.take_along_axis(cats, pos_side[:, None, :], axis=2)
    result = Block(lineup, block, deal, rotation, pos_points, pos_cats, rounds, engine.truncated.copy())
    if log is not None:
        result.replays = log.games(seat_pos, pos_side)
    return result


class _Recorder:
    """Keeps the action log of a batch (arrays per step) and turns it into one replay per game."""

    def __init__(self, engine: EscobaEngine):
        self.engine = engine
        self.actor, self.action, self.captured, self.escoba = [], [], [], []
        # Round starts: (step index, games, decks, dealers); round ends: (step, games, points, cats, scores).
        self.starts = [(0, np.arange(engine.num_games), engine.deck.copy(), engine.dealer.copy())]
        self.ends = []

    def step(self, actions: np.ndarray, info) -> None:
        t = len(self.actor)
        self.actor.append(info.actor.copy())
        self.action.append(actions.copy())
        self.captured.append(np.asarray(info.captured).copy())
        self.escoba.append(np.asarray(info.escoba).copy())
        if info.round_over.any():
            g = np.nonzero(info.round_over)[0]
            cats = {c: info.round_categories[c][g].copy() for c in CATEGORIES}
            self.ends.append((t, g, info.round_points[g].copy(), cats, info.scores[g].copy()))
            cont = g[~info.game_over[g]]
            if cont.size:
                e = self.engine
                self.starts.append((t + 1, cont, e.deck[cont].copy(), e.dealer[cont].copy()))

    def games(self, seat_pos: np.ndarray, pos_side: np.ndarray) -> list[dict]:
        """Return one replay dict per game slot (serialisation only: loops over games here)."""
        e = self.engine
        n = e.num_games
        actor = np.stack(self.actor)
        action = np.stack(self.action)
        captured = np.stack(self.captured)
        escoba = np.stack(self.escoba)
        starts: list[list] = [[] for _ in range(n)]
        ends: list[list] = [[] for _ in range(n)]
        for t, g, decks, dealers in self.starts:
            for j, gg in enumerate(g):
                starts[gg].append((t, decks[j], int(dealers[j])))
        for t, g, pts, cats, scores in self.ends:
            for j, gg in enumerate(g):
                ends[gg].append((t, pts[j], {c: cats[c][j] for c in CATEGORIES}, scores[j]))
        out = []
        for g in range(n):
            rounds = []
            for (t0, deck, dealer), (t1, pts, cats, scores) in zip(starts[g], ends[g], strict=True):
                steps = [t for t in range(t0, t1 + 1) if actor[t, g] >= 0]
                rounds.append({
                    "dealer": dealer,
                    "deck": [int(c) for c in deck],
                    "actions": [{"actor": int(actor[t, g]), "action": int(action[t, g]),
                                 "captured": cards_of(int(captured[t, g])), "escoba": int(escoba[t, g])}
                                for t in steps],
                    "points": [int(x) for x in pts],
                    "categories": {c: [int(x) for x in v] for c, v in cats.items()},
                    "scores": [int(x) for x in scores],
                })
            out.append({
                "game_id": int(e.game_ids[g]),
                "seat_positions": [int(x) for x in seat_pos[g]],
                "side_of_position": [int(x) for x in pos_side[g]],
                "rounds": rounds,
                "final_scores": [int(x) for x in e.scores[g]],
                "winner": int(e.winner[g]),
                "truncated": bool(e.truncated[g]),
            })
        return out
