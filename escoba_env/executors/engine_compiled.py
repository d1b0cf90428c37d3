"""The compiled step of the batched engine: which engines use it, and the call that runs it.

``EscobaEngine.step`` has two implementations that give the same results, bit for bit (the same
states, reports, observations and rewards; tests/engine run on both): the NumPy one in
``escoba_env.executors.engine`` (the reference, a fixed number of NumPy calls per step) and a compiled one,
``escoba_env.executors.engine_kernels``, a loop over games compiled by Numba (``pip install
"escoba-env[fast]"``; ``[agents]`` brings it too). An engine uses the compiled step when Numba is
installed, unless told otherwise:

- ``EscobaEngine(..., compiled=False)`` (or ``True``: an ImportError without Numba);
- the environment variable ``ESCOBA_ENGINE``: ``numpy`` (never compiled), ``compiled`` (always;
  an error without Numba), ``auto`` or unset (compiled when Numba is installed). The argument wins.

The compiled functions are cached on disk (Numba's ``cache=True``: ``__pycache__`` beside the
module, or Numba's user-wide cache directory when that is read-only; ``NUMBA_CACHE_DIR`` moves
it), so only the first process after an install pays the compilation (docs/speed.md).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from typing import Any

import numpy as np

from .step_info import REPORTED, StepInfo

ENV_VAR = "ESCOBA_ENGINE"
"""The environment variable that picks the step: ``numpy``, ``compiled`` or ``auto`` (the default)."""
CHOICES = ("auto", "numpy", "compiled")
_SEVENS_RULES = {"most_sevens": 0, "most_sevens_tiebreak": 1, "primera": 2}
_NO_ACTIVE = np.zeros(0, bool)


@functools.cache
def available() -> bool:
    """Return whether Numba is installed (the ``[fast]`` extra), so the compiled step can run."""
    return importlib.util.find_spec("numba") is not None


def use_compiled(compiled: bool | None = None) -> bool:
    """Return whether a new engine steps with the compiled kernel (``compiled``, else ``ESCOBA_ENGINE``).

    Raises ImportError when the compiled step is asked for and Numba is missing, ValueError for an
    ``ESCOBA_ENGINE`` value other than those of ``CHOICES``.
    """
    if compiled is None:
        choice = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
        if choice not in CHOICES:
            raise ValueError(f"{ENV_VAR} must be one of {', '.join(CHOICES)}, got {choice!r}")
        if choice == "auto":
            return available()
        compiled = choice == "compiled"
    if not isinstance(compiled, bool):
        raise ValueError(f"compiled must be None, True or False, got {compiled!r}")
    if compiled and not available():
        raise ImportError("the compiled engine needs Numba: pip install 'escoba-env[fast]' "
                          f"(or {ENV_VAR}=numpy for the NumPy engine)")
    return compiled


def sample(legal: np.ndarray, uniforms: Any) -> np.ndarray | None:
    """Return ``engine.sample_actions(legal, uniforms)`` from the compiled kernel, or None where the
    NumPy code runs instead: no Numba, ``ESCOBA_ENGINE=numpy``, or other than one float64 uniform per
    mask of a 1-D uint64 ``legal`` (other dtypes round differently)."""
    if not use_compiled_default():
        return None
    u = np.asarray(uniforms)
    if u.dtype != np.float64 or u.shape != legal.shape or legal.ndim != 1:
        return None
    out = np.empty(len(legal), np.int64)
    kernels().sample_legal(np.ascontiguousarray(legal), np.ascontiguousarray(u), out)
    return out


def use_compiled_default() -> bool:
    """Return whether the compiled code runs where nothing says otherwise (``ESCOBA_ENGINE``, Numba)."""
    choice = os.environ.get(ENV_VAR, "auto").strip().lower()
    return choice != "numpy" and available()


@functools.cache
def kernels() -> Any:
    """Return the module of compiled kernels (``executors.engine_kernels``), imported on first use."""
    from . import engine_kernels  # the [fast] extra (Numba)

    return engine_kernels


def params(engine, *, single_round: bool = False) -> np.ndarray:
    """Return the int64 ``params`` (``engine_kernels.RULE_FIELDS``) of an engine's rules and settings;
    ``single_round=True``: those of its copy that plays to the end of the round (``worlds.take_games``
    with ``single_round=True``: no cut, no autoreset)."""
    r = engine.rules
    one = single_round or bool(engine.single_round)
    return _params(r.num_players, r.num_sides, r.num_cards, r.jokers, r.prefer_single, r.last_play_escoba,
                   r.initial_fifteen, r.mesa_deal, _SEVENS_RULES[r.sevens_rule], r.bonus_sweeps,
                   r.target_score, r.partnerships, one,
                   -1 if single_round or engine.max_rounds is None else int(engine.max_rounds),
                   False if single_round else bool(engine.autoreset))


@functools.lru_cache(maxsize=256)
def _params(*values) -> np.ndarray:
    out = np.array(values, np.int64)
    out.flags.writeable = False
    return out


def arrays(engine) -> Any:
    """Return the engine's state arrays as one ``engine_kernels.EngineArrays``."""
    k = kernels()
    return k.EngineArrays(*(getattr(engine, name) for name in k.EngineArrays._fields))


@functools.lru_cache(maxsize=64)
def _quiet(n: int, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return shared read-only arrays (no round ended, zero points, winner -1) of a step ending no round."""
    out = (np.zeros(n, bool), np.zeros((n, s), np.int64), np.full(n, -1, np.int64))
    for x in out:
        x.flags.writeable = False
    return out


_LOCAL = threading.local()


def _report_buffers(n: int, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return this thread's scratch for the reports of rounds that end in one step of ``n`` games, and
    the shuffle's (``SORT_SCRATCH`` words).

    Reused from step to step (a fresh one would be fresh pages for the OS to clear every step); what
    a step reports is copied out of it.
    """
    key = (n, s)
    cache = getattr(_LOCAL, "buffers", None)
    if cache is None:
        cache = _LOCAL.buffers = {}
    bufs = cache.get(key)
    if bufs is None:
        if len(cache) >= 8:
            cache.clear()
        bufs = cache[key] = (np.empty((n, len(REPORTED), s), np.int64), np.empty((n, 8), np.int64),
                             np.empty(kernels().SORT_SCRATCH, np.uint64))
    return bufs


def step(engine, actions, active: np.ndarray | None) -> StepInfo:
    """Step ``engine`` with the compiled kernel; return the ``StepInfo`` the NumPy step returns.

    ``active`` has been checked by the caller. An illegal action raises the NumPy step's
    ValueError (``EscobaEngine.check_actions``) and changes nothing.
    """
    n, s = engine.num_games, engine.num_sides
    a = np.asarray(actions)
    if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
        engine.check_actions(a, active)  # raises, naming what is wrong
    a = np.ascontiguousarray(a, np.int64)
    actor = np.empty(n, np.int64)
    captured = np.empty(n, np.uint64)
    escoba = np.empty(n, np.int64)
    rows, meta, buf = _report_buffers(n, s)
    bad, ended = kernels().step_games(*arrays(engine), params(engine), np.uint64(engine.seed), a,
                                      _NO_ACTIVE if active is None else active, actor, captured, escoba,
                                      rows, meta, buf)
    if bad >= 0:
        engine.check_actions(a, active)  # raises for game `bad`, the first illegal one
        raise AssertionError(f"the compiled step refused game {bad}'s legal action")
    if bad == -2:
        raise ValueError("the engine's state arrays do not all hold one row per game")
    scores = engine.scores.copy()
    if ended == 0:
        round_over, points, winner = _quiet(n, s)
        cats = {k: points for k in REPORTED[1:]}
        return StepInfo(actor, captured, escoba, round_over, points, cats, scores, round_over, round_over,
                        winner)
    meta = meta[:ended]
    g = meta[:, 0].copy()
    rows = rows[:ended].copy()
    scores[g] = meta[:, 4:4 + s]  # the scores the round ended with (autoreset clears a finished game's)
    round_over = np.zeros(n, bool)
    round_over[g] = True
    game_over = np.zeros(n, bool)
    game_over[g] = meta[:, 1] != 0
    winner = np.full(n, -1, np.int64)
    winner[g] = meta[:, 2]
    truncated = np.zeros(n, bool)
    truncated[g] = meta[:, 3] != 0
    return StepInfo(actor, captured, escoba, round_over, None, None, scores, game_over, truncated, winner,
                    report=(n, s, g, rows))
