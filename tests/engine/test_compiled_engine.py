"""Differential test: the compiled engine step against the NumPy one, state by state.

Two engines of every rules configuration (2, 3, 4 players, 2v2, jokers 1 and 2, mesa, prefer-single,
every sevens rule, bonus sweeps, no initial fifteen, no last-play escoba, other targets; whole games,
single rounds, max_rounds, autoreset), one stepping with NumPy and one compiled, are dealt the same
games and take the same random legal actions, a random subset of the games stepped now and then
(``active``). After every step they must hold the same state (every per-game array), report the same
``StepInfo`` (round points and categories included), give every seat the same observation and
both reward kinds the same rewards. Also: the same error for an illegal action (and nothing
changed), the choice of step (argument, ``ESCOBA_ENGINE``), ``sample_actions`` compiled and not.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from escoba_env import EscobaEngine, Rules
from escoba_env.executors import engine_compiled
from escoba_env.executors.engine import sample_actions
from escoba_env.executors.observation import encode
from escoba_env.executors.step_info import REPORTED
from escoba_env.faces.common import step_rewards
from tests.helpers import EXECUTOR_CONFIGS

pytestmark = pytest.mark.skipif(not engine_compiled.available(), reason="Numba is not installed ([fast])")

CONFIGS = {
    **EXECUTOR_CONFIGS,  # and autoreset, other scoring and deal combinations:
    "prefer single, autoreset": (Rules(prefer_single=True), {"autoreset": True}),
    "1 joker, primera, bonus sweeps": (Rules(jokers=1, sevens_rule="primera", bonus_sweeps=True), {}),
    "mesa, autoreset, max_rounds 3": (Rules(mesa_deal=True), {"autoreset": True, "max_rounds": 3}),
    "mesa, 2 jokers, 2v2, prefer single": (
        Rules(mesa_deal=True, jokers=2, num_players=4, partnerships=True, prefer_single=True), {}),
    "2 jokers, 2 players, tiebreak, no last-play escoba, autoreset": (
        Rules(jokers=2, sevens_rule="most_sevens_tiebreak", last_play_escoba=False), {"autoreset": True}),
}
STATE = engine_compiled.kernels().EngineArrays._fields if engine_compiled.available() else ()
REPORT = ("actor", "captured", "escoba", "round_over", "round_points", "scores", "game_over", "truncated",
          "winner")


def _same_step(a: EscobaEngine, b: EscobaEngine, ia, ib, where: str) -> None:
    for name in STATE:
        assert np.array_equal(getattr(a, name), getattr(b, name)), f"{where}: state {name}"
    for name in REPORT:
        x, y = getattr(ia, name), getattr(ib, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), f"{where}: StepInfo.{name}"
    for k in REPORTED[1:]:
        assert np.array_equal(ia.round_categories[k], ib.round_categories[k]), f"{where}: category {k}"
    for kind in ("game", "round_points"):
        same = np.array_equal(step_rewards(a, ia, kind), step_rewards(b, ib, kind))
        assert same, f"{where}: {kind} rewards"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_compiled_step_equals_the_numpy_step(name):
    rules, kw = CONFIGS[name]
    n = 48
    a = EscobaEngine(n, rules, compiled=False, **kw)
    b = EscobaEngine(n, rules, compiled=True, **kw)
    rng = np.random.default_rng(sorted(CONFIGS).index(name))
    rounds = 0
    for t in range(1000):
        if a.done.all():
            seed = int(rng.integers(2**63))
            a.reset(seed, game_ids=np.arange(n) * 3 + 1)
            b.reset(seed, game_ids=np.arange(n) * 3 + 1)
        actions = sample_actions(a.legal, rng.random(n))
        active = rng.random(n) < 0.8 if t % 4 == 0 else None
        ia, ib = a.step(actions, active), b.step(actions, active)
        _same_step(a, b, ia, ib, f"{name}, step {t}")
        rounds += int(ia.round_over.sum())
        if t % 10 == 0:
            for seat in range(rules.num_players):
                seats = np.full(n, seat)
                assert np.array_equal(encode(a, seats), encode(b, seats)), f"{name}, step {t}, seat {seat}"
    assert rounds >= 20  # the round ends, scoring and new deals were compared many times


def test_an_illegal_action_raises_the_numpy_error_and_changes_nothing():
    a, b = EscobaEngine(6, Rules(), compiled=False), EscobaEngine(6, Rules(), compiled=True)
    a.reset(5)
    b.reset(5)
    actions = sample_actions(a.legal, np.full(6, 0.5))
    actions[3] = int(np.flatnonzero([not (int(a.legal[3]) >> c) & 1 for c in range(40)])[0])
    before = {k: getattr(b, k).copy() for k in STATE}
    errors = []
    for eng in (a, b):
        with pytest.raises(ValueError) as err:
            eng.step(actions)
        errors.append(str(err.value))
    assert errors[0] == errors[1] and "game 3" in errors[0]
    assert all(np.array_equal(getattr(b, k), before[k]) for k in STATE)
    for bad in (actions[:5], actions.astype(float), [1.5] * 6):
        with pytest.raises(ValueError, match="actions must be 6 ints"):
            b.step(bad)


def test_state_arrays_of_the_wrong_size_are_refused_not_read():
    e = EscobaEngine(4, Rules(), compiled=True)
    e.reset(1)
    e.hands = e.hands[:3]
    with pytest.raises(ValueError, match="one row per game"):
        e.step(sample_actions(e.legal, np.zeros(4)))


def test_the_argument_then_escoba_engine_choose_the_step(monkeypatch):
    monkeypatch.setenv(engine_compiled.ENV_VAR, "numpy")
    assert not EscobaEngine(1).compiled and EscobaEngine(1, compiled=True).compiled
    monkeypatch.setenv(engine_compiled.ENV_VAR, "compiled")
    assert EscobaEngine(1).compiled and not EscobaEngine(1, compiled=False).compiled
    monkeypatch.setenv(engine_compiled.ENV_VAR, "auto")
    assert EscobaEngine(1).compiled
    monkeypatch.setenv(engine_compiled.ENV_VAR, "fast")
    with pytest.raises(ValueError, match="ESCOBA_ENGINE must be one of auto, numpy, compiled"):
        EscobaEngine(1)
    with pytest.raises(ValueError, match="compiled must be None, True or False"):
        EscobaEngine(1, compiled="yes")
    monkeypatch.delenv(engine_compiled.ENV_VAR)
    monkeypatch.setattr(engine_compiled, "available", lambda: False)
    assert not EscobaEngine(1).compiled
    with pytest.raises(ImportError, match=r"pip install 'escoba-env\[fast\]'"):
        EscobaEngine(1, compiled=True)


def test_sample_actions_picks_the_same_cards_compiled_and_not(monkeypatch):
    rng = np.random.default_rng(3)
    for _ in range(20):
        legal = rng.integers(0, 2**42, 500, dtype=np.uint64) & rng.integers(0, 2**42, 500, dtype=np.uint64)
        legal[::11] |= np.uint64(1 << 63)
        legal[::7] = 0
        u = rng.random(500)
        monkeypatch.setenv(engine_compiled.ENV_VAR, "compiled")
        fast = sample_actions(legal, u)
        monkeypatch.setenv(engine_compiled.ENV_VAR, "numpy")
        assert np.array_equal(fast, sample_actions(legal, u))
        assert (fast[::7] == 64).all()
    assert os.environ[engine_compiled.ENV_VAR] == "numpy"
