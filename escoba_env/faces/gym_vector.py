"""A Gymnasium ``VectorEnv``: N learner games against fixed opponents on the batched engine.

``EscobaGymVectorEnv(num_envs, opponents="random", seat=0, **config)`` is what
``gymnasium.make_vec("escoba_env/Escoba-v0", num_envs=N, vectorization_mode="vector_entry_point")``
returns: slot ``g`` is one game in which the caller plays the learner's seat and the opponents play
the others, exactly as ``SingleAgentEscobaEnv`` does for one game (same observations, masks,
rewards, ``opponents`` and config keywords; ``opponents`` may also be spec strings, see
``escoba_env.faces.opponent_specs``). Every ``step`` takes one action per slot, for the learner, and returns
when the learner is to act again in every slot.

- observations: a Dict of batched arrays, ``observation`` float32 (N, obs_size) and
  ``action_mask`` int8 (N, W) (``batch_space`` of the single-agent space);
- rewards float32 (N,), terminations and truncations bool (N,);
- ``action_masks()`` returns the learner's legal actions, bool (N, W), for masked PPO;
- ``seat``: the learner's seat (int), or None to draw it for every episode of every slot.

Autoreset (``autoreset_mode=``, shown in ``metadata["autoreset_mode"]``, an ``AutoresetMode``):

- ``NEXT_STEP`` (default, Gymnasium's own default, which every standard vector wrapper supports,
  including the observation wrappers): a game that ends returns its final observation with
  ``terminations``/``truncations`` set; the next ``step`` ignores that slot's action, starts the
  slot's next game (opponents play until the learner's first turn) and returns its first
  observation with reward 0 and both flags False. ``infos["winner"]`` (side, -1 for none; mask
  ``infos["_winner"]``) and ``infos["rounds"]`` come with the final step.

  The final observation has no legal move, yet the learner must still send an action for it. So that
  a masked sampler never sees an empty row, that row of ``obs["action_mask"]`` and of
  ``action_masks()`` offers exactly one action, the placeholder ``PLACEHOLDER_ACTION`` (0, the
  single-agent env's final observation offers the same), which the next step ignores: the mask stays
  a statement about the state it comes with (a finished game offers no choice), and ``Categorical``
  over ``-inf``-masked logits gives it log-prob 0 and entropy 0 (no policy gradient). Every ``step``
  also returns ``infos["autoreset"]``, bool (N,) (mask ``_autoreset``, all True): True in the slots
  whose action this step ignored because it started their next game. Those transitions are not the
  learner's: drop them before training (as Gymnasium's docs do for this mode), or use ``SAME_STEP``.
- ``SAME_STEP`` (the classic CleanRL loop, no step is wasted): a game that ends is replaced at once,
  the returned row is the next game's first observation while reward and flags are those of the
  game that ended. As in ``SyncVectorEnv``, ``infos["final_obs"]`` is an object array (N,) holding
  the learner's final observation dict there (None elsewhere, mask ``infos["_final_obs"]``) and
  ``infos["final_info"]`` holds ``winner``, ``scores``, ``rounds`` and the ended game's ``seat``
  (mask ``_final_info``), while ``infos["seat"]`` is the seat of the returned (next game's) row.
  ``final_obs`` is the true final state (its ``action_mask`` is all zeros: it is for bootstrapping
  values, never for sampling); every returned row is a live game, so no action is ever ignored.
  Gymnasium's observation wrappers refuse this mode (they cannot transform ``final_obs``).

Every ``infos`` holds ``seat`` (N,) and, where a round ended during the step, ``round_points`` and
``scores`` (N, S) (masks ``_round_points``, ``_scores``) and ``round_categories`` (a dict of
category -> (N, S), mask ``_round_categories``): the keys of every face (docs/observation.md, "Infos").

Seeds (``escoba_env.faces.seeding``): slot ``k`` of ``reset(seed=s)`` plays exactly the game that the
single-agent env plays after ``reset(seed=seeding.slot_seed(s, k))`` (``slot_seed(s, 0) == s``),
and the slot's next episodes are that env's next ``reset()`` calls: the same deals, learner seat
and opponent moves, for any opponent whose randomness is its own ``reset(seed)``. Each episode's
seat and opponent seeds are keyed by (slot seed, episode), never drawn from a generator the batch
shares. ``reset()`` without a seed starts every slot's next episode. Opponents with
``act_streams`` (``"random"``) play every slot's own stream in one NumPy call; other agents with
``act_batch`` are called once per opponent turn for all their slots, unless the call draws from
their generator ``rng`` (a stochastic agent, such as ``search``): such an agent then plays one slot
at a time, each from that slot's generator (a Python loop over those slots). Agents without
``act_batch`` get one ``act`` call per slot. The engine step itself never loops over games.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ..executors.observation import action_masks, encode
from ..executors.step_info import REPORTED
from ..rulebook.rules import Rules
from . import common
from .common import PLACEHOLDER_ACTION
from .opponent_specs import make_opponents
from .seeding import episode_keys, slot_seeds

__all__ = ["PLACEHOLDER_ACTION", "EscobaGymVectorEnv"]
CATEGORIES = REPORTED[1:]


class EscobaGymVectorEnv(gymnasium.vector.VectorEnv):
    """N learner-vs-opponents Escoba games as a Gymnasium ``VectorEnv`` (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int, opponents: Any = "random", seat: int | None = 0,
                 rules: Rules | None = None, *, episode: str = "game", reward: str = "game",
                 max_rounds: int | None = None, render_mode: str | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, **rule_options: Any):
        modes = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
        mode = next((m for m in modes if autoreset_mode in (m, m.value, m.name, m.name.lower())), None)
        if mode is None:
            raise ValueError(f"autoreset_mode must be AutoresetMode.NEXT_STEP or SAME_STEP, "
                             f"got {autoreset_mode!r}")
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if render_mode is not None:
            raise ValueError(f"the vector env does not render: render_mode must be None, got {render_mode!r}")
        self.rules = common.make_rules(rules, rule_options)
        p = self.rules.num_players
        if seat is not None and (isinstance(seat, bool) or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat < p):
            raise ValueError(f"seat must be None (random) or a seat in 0..{p - 1}, got {seat!r}")
        self.engine = common.make_engine(int(num_envs), self.rules, episode, reward, max_rounds)
        self.reward_kind = reward
        self.opponents = make_opponents(opponents, self.rules, p - 1)
        self._callers: list[Any] = []
        rel = [-1]  # relative seat -> index of its opponent object among the distinct ones
        for o in self.opponents:
            same = [k for k, c in enumerate(self._callers) if c is o]
            if not same:
                self._callers.append(o)
            rel.append(same[0] if same else len(self._callers) - 1)
        self._caller_of_rel = np.asarray(rel, np.int64)
        self.num_envs = n = int(num_envs)
        resettable = common.distinct_resettable(self._callers)
        # caller j's seed is key 1 + (its place among the resettable opponents), as in the single env
        self._key_col = [1 + next((i for i, r in enumerate(resettable) if r is c), -1) for c in self._callers]
        self._num_keys = 1 + len(resettable)
        self._opp_seed = np.zeros((n, len(self._callers)), np.uint64)
        self._opp_calls = np.zeros((n, len(self._callers)), np.int64)
        self._slot_gens: dict[tuple[int, int], np.random.Generator] = {}
        self._stochastic: set[int] = set()
        self._probe = np.random.default_rng(0)
        self._base: int | None = None
        self.render_mode = None
        self.seat_option = None if seat is None else int(seat)
        self.single_observation_space = common.observation_space(self.rules)
        self.single_action_space = spaces.Discrete(self.rules.num_cards)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.seats = np.full(n, 0 if seat is None else int(seat), np.int64)
        self._rows = np.arange(n)
        self._started = False
        self._autoreset = np.zeros(n, bool)

    # ------------------------------------------------------------------ helpers

    def _observe(self, games: np.ndarray | None = None) -> dict[str, np.ndarray]:
        g = self._rows if games is None else games
        seats = self.seats[g]
        obs = {"observation": encode(self.engine, seats, g),
               "action_mask": action_masks(self.engine, seats, g)}
        if games is None:
            self._placeholder(obs["action_mask"])
        return obs

    def _placeholder(self, masks: np.ndarray) -> np.ndarray:
        """Offer ``PLACEHOLDER_ACTION`` alone in the rows of the games waiting for their NEXT_STEP reset."""
        if self._autoreset.any():
            masks[self._autoreset] = 0
            masks[self._autoreset, PLACEHOLDER_ACTION] = 1
        return masks

    def _start_episodes(self, games: np.ndarray) -> None:
        """Key the new episodes of ``games``: the learner's seat and each opponent's stream."""
        if not games.size:
            return
        keys = episode_keys(slot_seeds(self._base, games), self.engine.episode[games], self._num_keys)
        if self.seat_option is None:
            self.seats[games] = (keys[:, 0] % np.uint64(self.rules.num_players)).astype(np.int64)
        for j, col in enumerate(self._key_col):
            if col > 0:
                self._opp_seed[games, j] = keys[:, col]
        self._opp_calls[games] = 0
        if self._slot_gens:
            fresh = set(games.tolist())
            self._slot_gens = {kj: v for kj, v in self._slot_gens.items() if kj[0] not in fresh}

    def _collect(self, info, rewards: np.ndarray, rounds: dict[str, np.ndarray]) -> None:
        """Add the learner's rewards of one engine step; keep the latest round end per slot."""
        if not info.round_over.any():
            return
        rewards += common.step_rewards(self.engine, info, self.reward_kind)[self._rows, self.seats]
        ended = info.round_over
        rounds["over"] |= ended
        rounds["points"][ended] = info.round_points[ended]
        rounds["scores"][ended] = info.scores[ended]
        for k in CATEGORIES:
            rounds[k][ended] = info.round_categories[k][ended]

    def _play_opponents(self, rewards: np.ndarray, rounds: dict[str, np.ndarray]) -> None:
        """Let the opponents act, turn by turn over the whole batch, until the learner is to act."""
        eng, p = self.engine, self.rules.num_players
        while True:
            waiting = ~eng.done & (eng.to_act != self.seats)
            if not waiting.any():
                return
            who = self._caller_of_rel[(eng.to_act - self.seats) % p]
            actions = np.zeros(self.num_envs, np.int64)
            for k, agent in enumerate(self._callers):
                g = np.flatnonzero(waiting & (who == k))
                if g.size:
                    actions[g] = self._opponent_actions(k, agent, g)
            self._collect(eng.step(actions, waiting), rewards, rounds)

    def _opponent_actions(self, j: int, agent: Any, g: np.ndarray) -> np.ndarray:
        """Return opponent ``j``'s actions in slots ``g``, each slot's draws from that slot's own stream."""
        eng = self.engine
        seats = eng.to_act[g]
        obs, masks = encode(eng, seats, g), action_masks(eng, seats, g)
        needs = getattr(agent, "needs_state", False)
        if callable(getattr(agent, "act_streams", None)):  # keyed streams: one call for every slot
            out = agent.act_streams(obs, masks, self._opp_seed[g, j], self._opp_calls[g, j],
                                    (eng, g) if needs else None)
            self._opp_calls[g, j] += 1
            return np.asarray(out, np.int64)
        batched = callable(getattr(agent, "act_batch", None))
        swap = isinstance(getattr(agent, "rng", None), np.random.Generator)
        if batched and j not in self._stochastic:
            # One call for the batch unless the agent draws from its generator (then it is stochastic).
            saved, before = (agent.rng, self._probe.bit_generator.state) if swap else (None, None)
            if swap:
                agent.rng = self._probe
            try:
                out = np.asarray(agent.act_batch(obs, masks, (eng, g) if needs else None), np.int64)
            finally:
                if swap:
                    agent.rng = saved
            if not swap or self._probe.bit_generator.state == before:
                return out
            self._stochastic.add(j)
        saved = agent.rng if swap else None
        out = np.empty(g.size, np.int64)
        try:  # a stochastic agent plays one slot at a time, from that slot's generator
            for i, k in enumerate(g.tolist()):
                if swap:
                    agent.rng = self._slot_gen(k, j)
                st = (eng, g[i:i + 1]) if needs else None
                out[i] = agent.act_batch(obs[i:i + 1], masks[i:i + 1], st)[0] if batched \
                    else agent.act(obs[i], masks[i], state=st)
        finally:
            if swap:
                agent.rng = saved
        return out

    def _slot_gen(self, slot: int, j: int) -> np.random.Generator:
        """Return opponent ``j``'s generator in ``slot`` this episode (what its ``reset(seed)`` makes)."""
        gen = self._slot_gens.get((slot, j))
        if gen is None:
            gen = self._slot_gens[(slot, j)] = np.random.default_rng(int(self._opp_seed[slot, j]))
        return gen

    # ------------------------------------------------------------------ Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start a new game in every slot; return the learner's observations and infos."""
        seed = common.check_seed(seed)
        kwargs = common.parse_reset_options(options)
        if seed is None and self._base is not None and not kwargs:
            self.engine.reset_games(self._rows)  # every slot's next episode, as a single env's reset()
        else:
            base = seed if seed is not None else int(np.random.default_rng().integers(2**63))
            self.engine.reset(base, **kwargs)
            self._base = base
        self._start_episodes(self._rows)
        for j, o in enumerate(self._callers):
            if self._key_col[j] > 0:
                o.reset(int(self._opp_seed[0, j]))  # slot 0's seed: the object's own stream, if used
        self._play_opponents(np.zeros(self.num_envs, np.float32), self._no_rounds())
        self._started = True
        self._autoreset[:] = False
        return self._observe(), {"seat": self.seats.copy(), "_seat": np.ones(self.num_envs, bool)}

    def _no_rounds(self) -> dict[str, np.ndarray]:
        s = self.rules.num_sides
        shape = (self.num_envs, s)
        return {"over": np.zeros(self.num_envs, bool), "points": np.zeros(shape, np.int64),
                "scores": np.zeros(shape, np.int64), **{k: np.zeros(shape, np.int64) for k in CATEGORIES}}

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Play one learner action per slot and the opponents' replies; return the vector 5-tuple.

        Raises ValueError, changing nothing, if an action is illegal (or before ``reset``); with
        ``NEXT_STEP`` the actions of slots whose game ended at the previous step are not checked.
        """
        if not self._started:
            raise ValueError("call reset() before step()")
        eng = self.engine
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_envs} ints (one per slot), got shape {a.shape} "
                             f"and dtype {a.dtype}")
        rewards = np.zeros(self.num_envs, np.float32)
        rounds = self._no_rounds()
        restart = self._autoreset.copy()
        if restart.any():  # NEXT_STEP: these slots start their next game; their actions are ignored
            self._restart(np.flatnonzero(restart))
            self._collect(eng.step(a, ~restart), rewards, rounds)
        else:
            self._collect(eng.step(a), rewards, rounds)
        self._play_opponents(rewards, rounds)
        done = eng.done.copy()
        truncations = done & eng.truncated
        terminations = done & ~truncations
        infos: dict[str, Any] = {"seat": self.seats.copy(), "_seat": np.ones(self.num_envs, bool)}
        if self.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP:
            infos.update(autoreset=restart, _autoreset=np.ones(self.num_envs, bool))
        if rounds["over"].any():
            over = rounds["over"]
            cats = {k: rounds[k] for k in CATEGORIES} | {f"_{k}": over for k in CATEGORIES}
            infos.update(round_points=rounds["points"], _round_points=over, scores=rounds["scores"],
                         _scores=over.copy(), round_categories=cats, _round_categories=over.copy())
        if not done.any():
            self._autoreset = done
            return self._observe(), rewards, terminations, truncations, infos
        idx = np.flatnonzero(done)
        final = {"winner": np.where(done, eng.winner, -1), "_winner": done,
                 "rounds": np.where(done, eng.round_index, 0), "_rounds": done}
        if self.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP:
            self._autoreset = done
            infos.update(final)
            return self._observe(), rewards, terminations, truncations, infos
        last = self._observe(idx)
        final_obs = np.full(self.num_envs, None, object)
        for k, g in enumerate(idx):
            final_obs[g] = {key: v[k] for key, v in last.items()}
        scores = np.zeros((self.num_envs, self.rules.num_sides), np.int64)
        scores[idx] = eng.scores[idx]
        infos.update(final_obs=final_obs, _final_obs=done, _final_info=done,
                     final_info={**final, "scores": scores, "_scores": done,
                                 "seat": infos["seat"], "_seat": done})
        self._restart(idx)
        infos["seat"] = self.seats.copy()  # the seat of the returned rows (a new game's seat is redrawn)
        return self._observe(), rewards, terminations, truncations, infos

    def _restart(self, idx: np.ndarray) -> None:
        """Start the next game in slots ``idx`` and play the opponents up to the learner's turn."""
        self.engine.reset_games(idx)
        self._start_episodes(idx)
        self._autoreset = np.zeros(self.num_envs, bool)
        self._play_opponents(np.zeros(self.num_envs, np.float32), self._no_rounds())

    def action_masks(self) -> np.ndarray:
        """Return the learner's legal actions, bool (N, W) (a NEXT_STEP final row: the placeholder)."""
        if not self._started:
            return np.zeros((self.num_envs, self.rules.num_cards), bool)
        return self._placeholder(action_masks(self.engine, self.seats, self._rows)).astype(bool)
