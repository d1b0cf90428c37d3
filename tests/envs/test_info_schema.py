"""One info schema: the single, vector, SB3 and PettingZoo faces report the same keys and values.

The same seeded game (a deterministic learner and ``greedy`` opponents, to 15 points so that it has
several rounds) is played on every face; at each round end every face reports ``round_points``,
``round_categories``, ``scores`` and ``seat``, at the game end also ``winner`` and ``rounds``, with
equal values. Fails on the faces as they were: the vector env had no ``round_categories``, the SB3
VecEnv no ``round_points``/``round_categories``, and no face but the vector env had ``rounds``.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import escoba_env  # noqa: F401  (registers the id)
from escoba_env import escoba_v0
from escoba_env.faces.opponent_specs import make_opponent

ID = "escoba_env/Escoba-v0"
CONFIG = {"target_score": 15, "opponents": "greedy", "seat": 0}
SEED = 5
ROUND_KEYS = {"round_points", "round_categories", "scores", "seat"}
GAME_KEYS = ROUND_KEYS | {"winner", "rounds"}


def _plain(x):
    """Return ``x`` with NumPy arrays and scalars as lists and ints (to compare faces)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items() if not k.startswith("_")}
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x.item() if isinstance(x, np.generic) else x


def _project(info: dict) -> dict:
    return {k: _plain(info[k]) for k in GAME_KEYS if k in info}


def _single() -> tuple[list[int], list[dict]]:
    env = gymnasium.make(ID, **CONFIG).unwrapped
    obs, _ = env.reset(seed=SEED)
    actions, ends = [], []
    while True:
        a = int(np.flatnonzero(obs["action_mask"])[0])
        actions.append(a)
        obs, _, term, trunc, info = env.step(a)
        if "round_points" in info:
            ends.append(_project(info))
        if term or trunc:
            return actions, ends


def _slot0(infos: dict) -> dict:
    """Return slot 0's project keys of a Gymnasium vector ``infos``."""
    out = {}
    for k in GAME_KEYS:
        if k in infos and infos[f"_{k}"][0]:
            v = infos[k]
            out[k] = {c: _plain(a[0]) for c, a in v.items() if not c.startswith("_")} if isinstance(v, dict) \
                else _plain(v[0])
    return out


def test_single_env_reports_every_key_at_round_and_game_ends():
    _, ends = _single()
    assert len(ends) >= 2, "the game should have several rounds"
    assert all(set(e) == ROUND_KEYS for e in ends[:-1])
    assert set(ends[-1]) == GAME_KEYS
    assert ends[-1]["rounds"] == len(ends)


def test_vector_env_reports_what_the_single_env_reports():
    actions, ends = _single()
    vec = gymnasium.make_vec(ID, num_envs=2, vectorization_mode="vector_entry_point", **CONFIG)
    vec.reset(seed=SEED)
    seen = []
    for a in actions:
        _, _, _, _, infos = vec.step(np.array([a, int(np.flatnonzero(vec.action_masks()[1])[0])]))
        got = _slot0(infos)
        if "round_points" in got:
            seen.append(got)
    assert seen == ends


def test_sb3_vec_env_reports_what_the_single_env_reports():
    pytest.importorskip("stable_baselines3")
    from escoba_env.faces.sb3 import EscobaSB3VecEnv

    actions, ends = _single()
    env = EscobaSB3VecEnv(2, **CONFIG)
    env.seed(SEED)
    env.reset()
    seen = []
    for a in actions:
        masks = env.action_masks()
        env.step_async(np.array([a, int(np.flatnonzero(masks[1])[0])]))
        _, _, _, infos = env.step_wait()
        if "round_points" in infos[0]:
            seen.append(_project(infos[0]))
    assert seen == ends


def test_pettingzoo_env_reports_what_the_single_env_reports():
    actions, ends = _single()
    env = escoba_v0.env(target_score=CONFIG["target_score"])
    env.reset(seed=SEED)
    greedy = make_opponent("greedy", env.unwrapped.rules)
    learner = iter(actions)
    seen = []
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(next(learner) if agent == "player_0" else greedy.act(obs["observation"], obs["action_mask"]))
        if "round_points" in env.infos["player_0"]:
            seen.append(_project(env.infos["player_0"]))
    assert seen == ends
