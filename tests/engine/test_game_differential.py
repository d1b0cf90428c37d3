"""Differential test: the one-game executor (``Game``) and the batched engine, state by state.

Random play over every rules configuration: a batch of ``EscobaEngine`` games and one ``Game`` per
slot, dealt from the same seed (``Game.reset(seed, game_id=slot, episode=...)``), take the same
random legal actions. After every step they must agree on hands, table, piles, cards played,
escobas, scores, deck and stock position, dealer, seat to act, last capturer, pending choice,
named cards, legal mask, round counter, end of game, truncation and winner; on what the step
reported (actor, captured cards, escoba, round end, round points and categories, scores, winner);
on the rewards of both reward kinds; and on the observation of every seat, bit for bit. A
finished game starts its next episode in both (new deals from the same counters).

At least 10^5 steps per configuration in the fast tests; the slow one plays 10^5 more per
configuration from another seed (``-m slow`` alone; CI runs both).

This is the check of the executor contract (``escoba_env.executors``): every batched executor in
``BATCHED_EXECUTORS`` is played against ``Game`` here, so a new one (a compiled or accelerator
engine) is added to that table and is done when it passes.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from escoba_env import Rules
from escoba_env.executors.engine import EscobaEngine
from escoba_env.executors.game import Game
from escoba_env.executors.observation import encode, obs_size
from escoba_env.faces.common import game_step_rewards, step_rewards

BATCHED_EXECUTORS = {"numpy": EscobaEngine}
"""The batched executors held to ``Game``, by name (``escoba_env.executors``' contract)."""

# Every Rules field away from its default at least once, jokers 1 and 2, mesa, 2/3/4 players and
# 2v2, whole games (to the target or cut by max_rounds) and single rounds.
CONFIGS = {
    "standard": (Rules(), {}),
    "3 players, primera, max_rounds 2": (Rules(num_players=3, sevens_rule="primera"), {"max_rounds": 2}),
    "4 players, sevens tiebreak, bonus sweeps, target 11": (
        Rules(num_players=4, sevens_rule="most_sevens_tiebreak", bonus_sweeps=True, target_score=11), {}),
    "2v2, no initial fifteen, no last-play escoba": (
        Rules(num_players=4, partnerships=True, initial_fifteen=False, last_play_escoba=False), {}),
    "prefer single": (Rules(prefer_single=True), {}),
    "1 joker": (Rules(jokers=1), {}),
    "2 jokers, 3 players, prefer single": (Rules(jokers=2, num_players=3, prefer_single=True), {}),
    "mesa": (Rules(mesa_deal=True), {}),
    "mesa, 2 jokers, 2v2": (Rules(mesa_deal=True, jokers=2, num_players=4, partnerships=True), {}),
    "single rounds, 4 players, 1 joker": (Rules(num_players=4, jokers=1), {"single_round": True}),
}


def _engine_state(eng: EscobaEngine) -> list[tuple]:
    """Return every game's state as a tuple of Python values (one ``tolist`` per array)."""
    cols = [eng.hands.tolist(), eng.table.tolist(), eng.piles.tolist(), eng.played.tolist(),
            eng.escobas.tolist(), eng.scores.tolist(), eng.deck.tolist(), eng.stock_pos.tolist(),
            eng.dealer.tolist(), eng.to_act.tolist(), eng.last_capturer.tolist(), eng.pending.tolist(),
            eng.taken.tolist(), eng.taken_value.tolist(), eng.legal.tolist(), eng.round_index.tolist(),
            eng.done.tolist(), eng.truncated.tolist(), eng.winner.tolist(), eng.hand_count.tolist()]
    return list(zip(*cols, strict=True))


def _game_state(g: Game) -> tuple:
    return (g.hands, g.table, g.piles, g.played, g.escobas, g.scores, g.deck, g.stock_pos, g.dealer,
            g.to_act, g.last_capturer, g.pending, g.taken, g.taken_value, g.legal, g.round_index,
            g.done, g.truncated, g.winner, g.hand_count)


def _compare(eng: EscobaEngine, games: list[Game], buf: np.ndarray, where: str) -> None:
    for i, (e, g) in enumerate(zip(_engine_state(eng), games, strict=True)):
        assert e == _game_state(g), f"{where}, game {i}"
    for seat in range(eng.num_players):
        for i, g in enumerate(games):
            g.observe(seat, buf[i])
        assert np.array_equal(encode(eng, np.full(len(games), seat)), buf), f"{where}, seat {seat}"


def _compare_step(eng: EscobaEngine, info, steps: list, where: str) -> None:
    rules = eng.rules
    rewards = {k: step_rewards(eng, info, k).tolist() for k in ("game", "round_points")}
    for i, st in enumerate(steps):
        w = f"{where}, game {i}"
        assert (int(info.actor[i]), int(info.captured[i]), int(info.escoba[i]), bool(info.round_over[i]),
                info.scores[i].tolist(), bool(info.game_over[i]), bool(info.truncated[i]),
                int(info.winner[i])) == (st.actor, st.captured, st.escoba, st.round_over, st.scores,
                                         st.game_over, st.truncated, st.winner), w
        if st.round_over:
            assert info.round_points[i].tolist() == st.round_points, w
            assert {k: v[i].tolist() for k, v in info.round_categories.items()} == st.round_categories, w
        for kind, r in rewards.items():
            assert r[i] == game_step_rewards(rules, st, kind), f"{w}, {kind} rewards"


def _play(rules: Rules, options: dict, min_steps: int, seed: int, batch: int = 64,
          executor: type = EscobaEngine) -> int:
    """Play until ``min_steps`` Game steps have been compared; return the number of steps."""
    eng = executor(batch, rules, **options)
    eng.reset(seed)
    games = [Game(rules, **options) for _ in range(batch)]
    for i, g in enumerate(games):
        g.reset(seed, game_id=i)
    buf = np.empty((batch, obs_size(rules)), np.float32)
    rng = random.Random(seed)
    _compare(eng, games, buf, "after reset")
    steps = 0
    t = 0
    while steps < min_steps:
        actions = []
        for g in games:
            legal = g.legal_actions()
            actions.append(legal[rng.randrange(len(legal))])
        info = eng.step(np.array(actions))
        reports = [g.step(a) for g, a in zip(games, actions, strict=True)]
        steps += batch
        t += 1
        where = f"step {t}"
        _compare_step(eng, info, reports, where)
        _compare(eng, games, buf, where)
        over = [i for i, g in enumerate(games) if g.done]
        if over:
            eng.reset_games(np.array(over))
            for i in over:
                games[i].reset(seed, game_id=i, episode=int(eng.episode[i]))
            _compare(eng, games, buf, f"{where}, next episode")
    return steps


@pytest.mark.parametrize("executor", list(BATCHED_EXECUTORS))
@pytest.mark.parametrize("name", list(CONFIGS))
def test_game_matches_engine(name, executor):
    rules, options = CONFIGS[name]
    assert _play(rules, options, 100_000, seed=13, executor=BATCHED_EXECUTORS[executor]) >= 100_000


@pytest.mark.slow
@pytest.mark.parametrize("executor", list(BATCHED_EXECUTORS))
def test_game_matches_engine_more_seeds(executor):
    # 10^5 more steps per configuration from another seed and wider batches (about a minute).
    for rules, options in CONFIGS.values():
        steps = _play(rules, options, 100_000, seed=2026, batch=128, executor=BATCHED_EXECUTORS[executor])
        assert steps >= 100_000
