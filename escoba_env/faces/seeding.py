"""Seeds of the Gymnasium faces: which single-env seed plays slot k, and the keyed draws of an episode.

Every deal of a game slot is a hash of ``(seed, slot, episode, round)`` (``deal_rules``), so the
game of slot ``k`` of a batch reset with ``seed`` is the game a single env deals from
``slot_seed(seed, k)`` as slot 0 (``slot_seed(seed, 0) == seed``). The other random choices of an
episode are keyed the same way, never drawn from a generator shared by the batch:
``episode_keys(seeds, episodes, m)`` gives ``m`` 64-bit keys per (slot seed, episode): key 0 draws
the learner's seat (``key % num_players``) when the seat is drawn, key ``1 + j`` is the seed of the
``j``-th distinct opponent object for that episode. ``stream_uniforms`` turns a (seed, call index)
pair into one uniform draw, so an opponent can play several slots' streams in one NumPy call;
``stream_keys`` gives the pair's key, from which an agent that draws more per call (the search
agents) derives as many streams as it needs (``sub_keys``, ``KeyedStreams``).
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


def stream_keys(seeds: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """Return the uint64 key of call number ``calls[i]`` of the stream seeded ``seeds[i]``, per row.

    ``stream_uniforms`` is the key as a uniform draw; an agent that needs more draws for one call
    derives them from the key (``KeyedStreams``).
    """
    return sub_keys(seeds, int(_STREAM_SALT), calls)


def stream_uniforms(seeds: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """Return one float64 in [0, 1) per row: draw number ``calls[i]`` of the stream seeded ``seeds[i]``."""
    return _unit(stream_keys(seeds, calls))


def _unit(h: np.ndarray) -> np.ndarray:
    """Return uint64 hashes as float64 in [0, 1) (their top 53 bits)."""
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def sub_keys(keys: np.ndarray, salt: int, index: np.ndarray) -> np.ndarray:
    """Return the uint64 key of sub-stream ``index[i]`` of kind ``salt`` under ``keys[i]``, per row."""
    h = np.asarray(keys).astype(np.uint64)
    h ^= np.uint64(salt)
    h = splitmix64_inplace(h)
    i = np.asarray(index).astype(np.uint64)
    i += np.uint64(1)
    i *= _KEY_STEP
    h += i
    return splitmix64_inplace(h)


class KeyedStreams:
    """Uniform draws for a batch of rows, row ``i`` from its own stream keyed ``keys[i]``.

    ``random(n)`` and ``random((n, w))`` answer like ``numpy.random.Generator.random`` (what the
    search agents call), but draw ``t`` of row ``i`` is a hash of ``(keys[i], t)``: a row's draws never
    depend on the other rows of its batch. ``at(step)`` restarts the count at ``step * PER_STEP``, so
    that a loop's draws at step ``step`` are the same whether or not earlier steps drew.
    """

    PER_STEP = 8

    def __init__(self, keys: np.ndarray):
        self.keys = np.asarray(keys, np.uint64)
        self.drawn = 0

    def at(self, step: int) -> None:
        """Place the count at the first draw of loop step ``step``."""
        self.drawn = int(step) * self.PER_STEP

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Return float64 draws in [0, 1), shape ``(len(keys),)`` or ``(len(keys), w)``."""
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        if shape[0] != len(self.keys) or len(shape) > 2:
            raise ValueError(f"keyed streams draw ({len(self.keys)},) or ({len(self.keys)}, w), not {shape}")
        w = shape[1] if len(shape) == 2 else 1
        counts = self.drawn + np.arange(w, dtype=np.uint64)
        self.drawn += w
        h = self.keys[:, None] + (counts[None, :] + np.uint64(1)) * _KEY_STEP
        return _unit(splitmix64_inplace(h)).reshape(shape)
