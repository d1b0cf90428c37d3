"""Slot k of ``make_vec(...).reset(seed=s)`` is the game ``gymnasium.make(...).reset(seed=slot_seed(s, k))``.

Stepped side by side, action for action, across episode resets (NEXT_STEP: the vector env's restart
is the single env's ``reset()``), for stochastic opponents (``random``, ``search`` at low sims), a
deterministic one, ``seat=None`` and a fixed seat. Fails on a vector env whose opponents draw from
one generator shared by the batch (the game diverged at the first random opponent move).
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import escoba_env  # noqa: F401  (registers the id)
from escoba_env.faces.seeding import slot_seed

ID = "escoba_env/Escoba-v0"
SEED = 2024


def _side_by_side(spec: str, seat: int | None, num_envs: int = 3, episodes: int = 2, **config) -> set[int]:
    """Step the vector env and one single env per slot together; return the learner seats seen."""
    kw = dict(opponents=spec, seat=seat, episode="round", **config)
    vec = gymnasium.make_vec(ID, num_envs=num_envs, vectorization_mode="vector_entry_point", **kw)
    singles = [gymnasium.make(ID, **kw).unwrapped for _ in range(num_envs)]
    vobs, vinfo = vec.reset(seed=SEED)
    sobs = [env.reset(seed=slot_seed(SEED, k)) for k, env in enumerate(singles)]
    done = np.zeros(num_envs, bool)
    finished = np.zeros(num_envs, np.int64)
    seats: set[int] = set()
    rng = np.random.default_rng(0)
    for _ in range(400):
        for k in range(num_envs):
            obs, info = sobs[k]
            np.testing.assert_array_equal(vobs["observation"][k], obs["observation"], err_msg=f"slot {k}")
            np.testing.assert_array_equal(vobs["action_mask"][k], obs["action_mask"], err_msg=f"slot {k}")
            assert vinfo["seat"][k] == info["seat"], f"slot {k}: seat"
            seats.add(int(info["seat"]))
        if (finished >= episodes).all():
            return seats
        actions = np.array([rng.choice(np.flatnonzero(vobs["action_mask"][k])) for k in range(num_envs)])
        vobs, vrew, vterm, vtrunc, vinfo = vec.step(actions)
        for k, env in enumerate(singles):
            if done[k]:
                sobs[k] = env.reset()
                done[k] = False
                continue
            obs, rew, term, trunc, info = env.step(int(actions[k]))
            sobs[k] = (obs, info)
            assert (vrew[k], vterm[k], vtrunc[k]) == (rew, term, trunc), f"slot {k}"
            done[k] = term or trunc
            finished[k] += done[k]
    raise AssertionError(f"episodes did not end in 400 steps: {finished}")


@pytest.mark.parametrize("spec", ["random", "search:sims=4", "greedy"])
@pytest.mark.parametrize("seat", [None, 1])
def test_every_slot_plays_the_single_env_game_of_its_seed(spec, seat):
    if spec.startswith("search"):  # the slowest opponent: two slots, an episode reset in each
        _side_by_side(spec, seat, num_envs=2, episodes=1)
    else:
        _side_by_side(spec, seat)


def test_one_random_opponent_object_playing_two_seats_matches_too():
    _side_by_side("random", None, num_players=3)


def test_slot_zero_is_the_single_env_seed_itself():
    assert slot_seed(SEED, 0) == SEED
    with pytest.raises(ValueError, match="slot"):
        slot_seed(SEED, -1)
