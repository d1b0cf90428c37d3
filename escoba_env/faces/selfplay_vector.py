"""A batched self-play env: N Escoba games stepped at once on the batched engine.

``EscobaVectorEnv(num_envs, **config)`` takes the configuration of ``escoba_v0`` (every ``Rules``
field or ``rules=Rules(...)``, ``episode``, ``reward``, ``max_rounds``). Every game is played by
the caller for every seat (self-play): each step takes one action per game, for the seat to act
in that game.

- ``reset(seed=None, options=None) -> (obs, infos)``;
- ``step(actions) -> (obs, rewards, terminations, truncations, infos)``.

``obs`` is a dict of batched arrays, each row the view of the seat to act in that game:

- ``observation``: float32 (N, obs_size), the seat-relative vector of ``escoba_v0`` for the seat
  to act (``obs_size = observation.obs_size(rules)``: 546 for the 40-card deck, ``13 W + 26``
  with ``W = rules.num_cards = 40 + jokers``);
- ``action_mask``: int8 (N, W), its legal actions;
- ``to_act``: int64 (N,), the seat that acts next in each game.

``rewards`` is float32 (N, num_players), one column per seat (absolute seat numbers), computed as
in ``escoba_v0`` (``reward="game"``: +1/-1 at the end of a game; ``"round_points"``: round point
difference at every round end; partners share). ``terminations`` and ``truncations`` are bool
(N,): a game ended (won, or a single-round episode over), or was cut by ``max_rounds``.

Auto-reset (Gymnasium's "same step" convention): a game that ends during ``step`` is replaced by a
new game in the same step, so the returned ``obs`` row is already the first state of the next
game, while its final step's reward, termination and truncation are those of the game that ended.
What the caller needs about the finished games is in ``infos``:

- ``infos["_final"]``: bool (N,), True for the games that ended this step (and were reset);
- ``infos["final_index"]``: int64 (K,), ``numpy.nonzero(infos["_final"])[0]``;
- ``infos["final_obs"]``: float32 (K, num_players, obs_size): for each finished game, the final
  state seen by every seat (``final_obs[k, s]`` is seat ``s``'s observation), for bootstrapping
  on truncation;
- ``infos["final_info"]``: dict of (K,) or (K, S) arrays: ``winner`` (side, -1 for none),
  ``truncated``, ``scores`` (final, per side), ``rounds`` (rounds played) and ``length`` (steps of
  the episode).

Every step's ``infos`` also holds ``actor`` (N,) (the seat that acted), ``round_over`` (N,),
``round_points`` (N, S) and ``scores`` (N, S) (cumulative per side, before any reset), as the
engine reports them. Sides are seats, or seat % 2 with partnerships.

Deals: ``reset(seed=s)`` deals game ``g`` from ``(s, g)``, so game 0 is the game that
``escoba_v0`` and the single-agent env deal with ``reset(seed=s)``; each auto-reset starts the
next episode of that slot, dealt from ``(s, g, episode)``. ``reset()`` without a seed draws one
from the env's generator (seeded by the last seeded reset, else from the OS). Options are those
of ``escoba_v0`` and apply to every game (a ``deck`` may also be one row of W per game).

Not a ``gymnasium.vector.VectorEnv`` (it is the self-play trainer's env): every seat is the caller's,
so rewards are (N, num_players) and ``obs`` carries ``to_act``; ``final_obs`` holds every seat's view
as one array (K, P, obs_size) with ``final_index`` rather than Gymnasium's object array; the arrays
are reused buffers; Gymnasium's vector wrappers do not apply. ``metadata["autoreset_mode"]`` is
``AutoresetMode.SAME_STEP``. For Gymnasium's vector API (a learner against fixed opponents) use
``gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=N, vectorization_mode="vector_entry_point")``
(``escoba_env.faces.gym_vector``).

Speed: the returned ``obs`` arrays and ``rewards`` are preallocated buffers that the next
``step`` or ``reset`` overwrites; copy what you keep, and treat them as read-only (the encoder
never rewrites the observation entries that are always 0 for the env's rules). ``step`` costs a
fixed number of NumPy calls, whatever N is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from ..executors.observation import action_masks, encode, obs_size
from ..rulebook.rules import Rules, check_seed
from . import common


def _deck_rows(options: Any) -> list | None:
    """Return the rows of a one-deck-per-game ``deck`` option, or None for anything else."""
    if not isinstance(options, dict) or "deck" not in options:
        return None
    deck = options["deck"]
    if isinstance(deck, np.ndarray) and deck.ndim == 2:
        return list(deck)
    if isinstance(deck, (list, tuple)) and deck and all(
            isinstance(r, (list, tuple, np.ndarray)) for r in deck):
        return list(deck)
    return None


class EscobaVectorEnv:
    """N self-play Escoba games on one batched engine, with auto-reset (see the module docstring)."""

    metadata = {"name": "escoba_vector_v0", "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, rules: Rules | None = None, *, episode: str = "game",
                 reward: str = "game", max_rounds: int | None = None, **rule_options: Any):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.rules = common.make_rules(rules, rule_options)
        self.engine = common.make_engine(int(num_envs), self.rules, episode, reward, max_rounds)
        self.episode, self.reward_kind, self.max_rounds = episode, reward, max_rounds
        n, p, s = int(num_envs), self.rules.num_players, self.rules.num_sides
        self.num_envs, self.num_players, self.num_sides = n, p, s
        nc, size = self.rules.num_cards, obs_size(self.rules)
        self.obs_size = size
        self.single_observation_space = common.observation_space(self.rules)
        self.single_action_space = spaces.Discrete(nc)
        low, high = common.observation_bounds(self.rules)
        self.observation_space = spaces.Dict({
            "observation": spaces.Box(np.broadcast_to(low, (n, size)),
                                      np.broadcast_to(high, (n, size)), dtype=np.float32),
            "action_mask": spaces.Box(0, 1, (n, nc), np.int8),
            "to_act": spaces.Box(0, p - 1, (n,), np.int64),
        })
        self.action_space = spaces.MultiDiscrete(np.full(n, nc))
        self._obs = np.zeros((n, size), np.float32)
        self._mask = np.zeros((n, nc), np.int8)
        self._to_act = np.zeros(n, np.int64)
        self._rewards = np.zeros((n, p), np.float32)
        self._length = np.zeros(n, np.int64)
        self._seat_grid = np.arange(p, dtype=np.int64)
        self._no_final = self._final_infos(np.zeros(0, np.int64), None)
        self._np_random: np.random.Generator | None = None

    def _observe(self) -> dict[str, np.ndarray]:
        eng = self.engine
        np.copyto(self._to_act, eng.to_act)
        encode(eng, self._to_act, out=self._obs, clean=True)
        action_masks(eng, self._to_act, out=self._mask)
        return {"observation": self._obs, "action_mask": self._mask, "to_act": self._to_act}

    def _final_infos(self, idx: np.ndarray, info) -> dict[str, Any]:
        """Return the final-observation and final-info entries for the finished games ``idx``."""
        eng, k, p, s = self.engine, len(idx), self.num_players, self.num_sides
        if k:
            obs = encode(eng, np.tile(self._seat_grid, k), np.repeat(idx, p)).reshape(k, p, self.obs_size)
            scores, winner = info.scores[idx], info.winner[idx]
        else:
            obs = np.zeros((0, p, self.obs_size), np.float32)
            scores, winner = np.zeros((0, s), np.int64), np.zeros(0, np.int64)
        final = np.zeros(self.num_envs, bool)
        final[idx] = True
        return {
            "_final": final,
            "final_index": idx,
            "final_obs": obs,
            "final_info": {
                "winner": winner,
                "truncated": eng.truncated[idx].copy(),
                "scores": scores,
                "rounds": eng.round_index[idx].copy(),
                "length": self._length[idx].copy(),
            },
        }

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start a new game in every slot; return ``(obs, infos)``.

        Bad seeds (``escoba_env.rulebook.rules.check_seed``), options or deals raise before anything changes.
        """
        if seed is not None:
            seed = check_seed(seed)
        rows = _deck_rows(options)
        if rows is None:
            self._np_random = common.reset_engine(self.engine, seed, options, self._np_random)
        else:  # one deck per game: each row read like a single deck, then dealt as one (N, W) array
            decks = [common.parse_reset_options({"deck": r})["deck"] for r in rows]
            kw = common.parse_reset_options({k: v for k, v in options.items() if k != "deck"})
            if seed is None:
                rng = self._np_random if self._np_random is not None else np.random.default_rng()
                engine_seed = int(rng.integers(2**63))
            else:
                rng, engine_seed = np.random.default_rng(seed), seed
            self.engine.reset(engine_seed, deck=decks, **kw)
            self._np_random = rng
        self._length[:] = 0
        return self._observe(), {}

    def step(self, actions: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray,
                                                 np.ndarray, dict[str, Any]]:
        """Apply one action per game (for its seat to act); return obs, rewards, terms, truncs, infos.

        Raises ValueError, changing nothing, if any action is illegal.
        """
        if self.engine.done.item(0):  # a new engine's games are all over; reset starts them (and
            # an env never leaves a finished game between steps: auto-reset replaces it)
            raise RuntimeError("EscobaVectorEnv.step called before reset(): call reset() first")
        eng = self.engine
        info = eng.step(actions)
        common.step_rewards(eng, info, self.reward_kind, out=self._rewards)
        self._length += 1
        over = info.game_over
        truncations = info.truncated.copy()
        terminations = over & ~truncations
        infos: dict[str, Any] = {
            "actor": info.actor,
            "round_over": info.round_over,
            "round_points": info.round_points,
            "scores": info.scores,
        }
        if over.any():
            idx = np.flatnonzero(over)
            infos.update(self._final_infos(idx, info))
            eng.reset_games(idx)
            self._length[idx] = 0
        else:
            infos.update(self._no_final)
        return self._observe(), self._rewards, terminations, truncations, infos

    def close(self) -> None:
        """Release nothing (no process or window is held); return None."""
