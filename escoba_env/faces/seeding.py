"""Seeds of the Gymnasium faces: which single-env seed plays slot k, and the keyed draws of an episode.

Every deal of a game slot is a hash of ``(seed, slot, episode, round)`` (``deal_rules``), so the
game of slot ``k`` of a batch reset with ``seed`` is the game a single env deals from
``slot_seed(seed, k)`` as slot 0 (``slot_seed(seed, 0) == seed``). The other random choices of an
episode are keyed the same way, never drawn from a generator shared by the batch:
``episode_keys(seeds, episodes, m)`` gives ``m`` 64-bit keys per (slot seed, episode): key 0 draws
the learner's seat (``key % num_players``) when the seat is drawn, key ``1 + j`` is the seed of the
``j``-th distinct opponent object for that episode. ``stream_uniforms`` turns a (seed, call index)
pair into one uniform draw, so an opponent can play several slots' streams in one NumPy call.
"""

from __future__ import annotations

import numpy as np

from ..rulebook.deal_rules import splitmix64_inplace
from ..rulebook.rules import check_seed

_M64 = (1 << 64) - 1
_SLOT_MUL = 0xD1B54A32D192ED03  # the deal hash's game multiplier: slot k's seed is seed ^ (k * this)
_EPISODE_SALT = np.uint64(0x6A09E667F3BCC909)
_KEY_STEP = np.uint64(0x9E3779B97F4A7C15)
_STREAM_SALT = np.uint64(0xBB67AE8584CAA73B)


def slot_seed(seed: int, slot: int) -> int:
    """Return the seed with which a single env plays slot ``slot`` of a batch reset with ``seed``."""
    seed = check_seed(seed)
    if isinstance(slot, bool) or not isinstance(slot, (int, np.integer)) or slot < 0:
        raise ValueError(f"slot must be a non-negative int, got {slot!r}")
    return seed ^ ((int(slot) * _SLOT_MUL) & _M64)


def slot_seeds(seed: int, slots: np.ndarray) -> np.ndarray:
    """Return ``slot_seed(seed, k)`` for every ``k`` of ``slots``, uint64."""
    k = np.asarray(slots).astype(np.uint64)
    k *= np.uint64(_SLOT_MUL)
    k ^= np.uint64(check_seed(seed))
    return k


def episode_keys(seeds: np.ndarray, episodes: np.ndarray, count: int) -> np.ndarray:
    """Return uint64 keys (K, count) of the episodes ``episodes`` (K,) of the slot seeds ``seeds`` (K,)."""
    h = np.asarray(seeds).astype(np.uint64)
    h ^= _EPISODE_SALT
    h = splitmix64_inplace(h)
    e = np.asarray(episodes).astype(np.uint64)
    e *= _KEY_STEP
    h ^= e
    h = splitmix64_inplace(h)
    return splitmix64_inplace(h[:, None] + np.arange(1, count + 1, dtype=np.uint64)[None, :] * _KEY_STEP)


def stream_uniforms(seeds: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """Return one float64 in [0, 1) per row: draw number ``calls[i]`` of the stream seeded ``seeds[i]``."""
    h = np.asarray(seeds).astype(np.uint64)
    h ^= _STREAM_SALT
    h = splitmix64_inplace(h)
    c = np.asarray(calls).astype(np.uint64)
    c += np.uint64(1)
    c *= _KEY_STEP
    h += c
    h = splitmix64_inplace(h)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
