"""A rollout worker: one shard of the games, its opponents, and a CPU copy of the policy.

``RolloutWorker`` plays games ``lo..hi-1`` of the run's ``num_envs`` on its own
``EscobaVectorEnv`` (its engine deals with the global game ids, so the union of the shards deals
exactly the games one unsharded env would) and writes each step into rollout buffers of shape
``(num_steps, hi - lo, ...)``: in the trainer's own process these are slices of the trainer's
buffers, in worker processes slices of the same buffers in shared memory, in Ray actors private
arrays sent back once per rollout. Nothing is pickled per step.

**Transitions and returns.** A seat's trajectory is the sequence of its own decisions in one game
(two decisions in a row when it names table cards). The reward of a decision is everything paid to
that seat (``rewards[:, seat]``, times ``reward_scale``, plus the shaping, see ``league.potential``)
from that decision up to its next one. The worker also returns the truncated games' final values and
each learner seat's bootstrap value, so that the learner runs GAE over all shards at once.

**Randomness.** Rollout ``u`` of worker ``k`` draws its actions and opponents from generators seeded
by ``(seed, u, k)``: no generator state lives in a worker, so a run is exactly reproducible for a
given worker count, and a resumed run may change the count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from escoba_env.executors.observation import action_masks, encode, obs_size
from escoba_env.faces.selfplay_vector import EscobaVectorEnv
from escoba_env.rulebook.rules import Rules

from ..nets.neural import PolicyValueNet, sample_masked
from ..spec.registry import make_agent
from .config import Config
from .league import (
    EXPERT,
    FIXED,
    GREEDY,
    HEURISTICS,
    LEARNER,
    PRIVILEGED_PLANES,
    SNAP0,
    draw_opponents,
    potential,
    privileged,
)
from .ppo import ValueNet, new_critic, new_net

LEAGUE_KEYS = ("controller", "kind", "learner_seat", "ep_ret", "ep_len")
"""Per-game league state: who plays each seat, opponent kind, a learner seat, episode return and length."""


def make_buffers(cfg: Config, rules: Rules, num_features: int, num_games: int, shared: bool = False
                 ) -> dict[str, torch.Tensor]:
    """Return zeroed CPU rollout buffers (num_steps, num_games, ...), in shared memory if ``shared``."""
    t, n, a, p = cfg.num_steps, num_games, rules.num_cards, rules.num_players
    npriv = PRIVILEGED_PLANES * a if cfg.critic == "oracle" else 0
    bufs = {
        "obs": torch.zeros((t, n, obs_size(rules)), dtype=torch.float32),
        "mask": torch.zeros((t, n, a), dtype=torch.int8),
        "priv": torch.zeros((t, n, npriv), dtype=torch.float32),
        "act": torch.zeros((t, n), dtype=torch.int64),
        "logp": torch.zeros((t, n), dtype=torch.float32),
        "feat": torch.zeros((t, n, a, num_features), dtype=torch.float32),
        "values": torch.zeros((t, n), dtype=torch.float32),
        "actor": torch.zeros((t, n), dtype=torch.int64),
        "learner": torch.zeros((t, n), dtype=torch.bool),
        "rewards": torch.zeros((t, n, p), dtype=torch.float32),
        "dones": torch.zeros((t, n), dtype=torch.bool),
    }
    if shared:
        for v in bufs.values():
            v.share_memory_()
    return bufs


def per_game_keys(cfg: Config, rules: Rules) -> tuple[str, ...]:
    """Return the names of the engine's per-game state arrays (those whose length is the game count)."""
    shapes = []
    for n in (1, 2):
        eng = EscobaVectorEnv(n, rules=rules, episode=cfg.episode, reward=cfg.reward,
                              max_rounds=cfg.max_rounds).engine
        shapes.append({k: v.shape for k, v in vars(eng).items() if isinstance(v, np.ndarray) and k[0] != "_"})
    return tuple(k for k, s in shapes[0].items() if s[:1] == (1,) and shapes[1][k][:1] == (2,))


def initial_state(cfg: Config, rules: Rules, rng: np.random.Generator) -> dict[str, Any]:
    """Return the state of all ``num_envs`` games at the start of a run: freshly dealt, opponents drawn."""
    env = EscobaVectorEnv(cfg.num_envs, rules=rules, episode=cfg.episode, reward=cfg.reward,
                          max_rounds=cfg.max_rounds)
    env.reset(seed=cfg.seed)
    eng = env.engine
    engine = {k: v.copy() for k, v in vars(eng).items() if isinstance(v, np.ndarray) and k[0] != "_"}
    engine["seed"] = int(eng.seed)
    ctrl, kind, seat = draw_opponents(rng, cfg, rules, np.zeros(0, np.int64), cfg.num_envs)
    league = {"controller": ctrl, "kind": kind, "learner_seat": seat,
              "ep_ret": np.zeros(cfg.num_envs, np.float64), "ep_len": np.zeros(cfg.num_envs, np.int64)}
    return {"engine": engine, "league": league}


def shard_state(state: dict[str, Any], keys: tuple[str, ...], lo: int, hi: int) -> dict[str, Any]:
    """Return games ``lo..hi-1`` of a whole-run state (``keys``: the engine's per-game arrays)."""
    engine = {k: (v[lo:hi].copy() if k in keys else v) for k, v in state["engine"].items()}
    return {"engine": engine, "league": {k: v[lo:hi].copy() for k, v in state["league"].items()}}


def merge_states(parts: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    """Return the whole-run state of the shards ``parts`` (in game order)."""
    engine = {k: (np.concatenate([p["engine"][k] for p in parts]) if k in keys else v)
              for k, v in parts[0]["engine"].items()}
    league = {k: np.concatenate([p["league"][k] for p in parts]) for k in LEAGUE_KEYS}
    return {"engine": engine, "league": league}


class RolloutWorker:
    """Plays a shard of the games with the current policy and the league; see the module docstring."""

    def __init__(self, cfg: Config, rules: Rules, index: int, lo: int, hi: int, state: dict[str, Any],
                 buffers: dict[str, torch.Tensor], net: PolicyValueNet | None = None,
                 critic: ValueNet | None = None):
        """Start the shard from ``state`` (of these games); ``net``/``critic``: share the learner's (CPU)."""
        self.cfg, self.rules, self.index, self.lo, self.hi = cfg, rules, index, lo, hi
        self.n, self.p = hi - lo, rules.num_players
        self.net = new_net(cfg, rules) if net is None else net
        self.critic = critic
        if self.critic is None and cfg.critic == "oracle":
            self.critic = new_critic(cfg, rules)
        self.pool: list[PolicyValueNet | None] = [None] * cfg.max_snapshots
        self.heuristics = {GREEDY: HEURISTICS["greedy"](rules), EXPERT: HEURISTICS["expert"](rules)}
        if cfg.fixed_opponent is not None:
            self.heuristics[FIXED] = make_agent(cfg.fixed_opponent, rules=rules, seed=cfg.seed + index)
        self.env = EscobaVectorEnv(self.n, rules=rules, episode=cfg.episode, reward=cfg.reward,
                                   max_rounds=cfg.max_rounds)
        self.env.reset(seed=cfg.seed)  # then overwritten by the shard's state
        self.keys = per_game_keys(cfg, rules)
        self.use_buffers(buffers)
        self.load_state(state)
        self.rng = np.random.default_rng(0)
        self.gen = torch.Generator()

    # ------------------------------------------------------------------------------ state

    def use_buffers(self, buffers: dict[str, torch.Tensor]) -> None:
        """Write the next rollouts into ``buffers`` (overlapped, two sets alternate); return None."""
        self.b = buffers
        self.np = {k: v.numpy() for k, v in buffers.items()}

    def load_state(self, state: dict[str, Any]) -> None:
        """Set the engine and league state of the shard's games; return None."""
        eng = self.env.engine
        for k, v in state["engine"].items():
            if k == "seed":
                eng.seed = int(v)
            elif k in self.keys:
                cur = getattr(eng, k)
                if v.shape != cur.shape:
                    raise ValueError(f"engine state {k!r} has shape {v.shape}, expected {cur.shape} (resume "
                                     f"needs the same num_envs and rules)")
                cur[...] = v
        lg = state["league"]
        if lg["controller"].shape != (self.n, self.p):
            raise ValueError("resume needs the same num_envs and rules as the checkpoint")
        self.controller, self.kind, self.learner_seat = (lg[k].copy() for k in LEAGUE_KEYS[:3])
        self.ep_ret, self.ep_len = lg["ep_ret"].copy(), lg["ep_len"].copy()
        self._obs = encode(eng, eng.to_act)
        self._mask = action_masks(eng, eng.to_act)

    def state(self) -> dict[str, Any]:
        """Return a copy of the shard's engine and league state (see ``load_state``)."""
        eng = self.env.engine
        engine = {k: v.copy() for k, v in vars(eng).items() if isinstance(v, np.ndarray) and k[0] != "_"}
        engine["seed"] = int(eng.seed)
        return {"engine": engine, "league": {k: getattr(self, k).copy() for k in LEAGUE_KEYS}}

    def set_weights(self, net: dict[str, torch.Tensor], critic: dict[str, torch.Tensor] | None) -> None:
        """Copy the learner's weights into the worker's policy (and critic); return None."""
        self.net.load_state_dict(net)
        if critic is not None:
            self.critic.load_state_dict(critic)

    def set_snapshot(self, slot: int, weights: dict[str, torch.Tensor]) -> None:
        """Put a frozen copy of the learner with ``weights`` into league slot ``slot``; return None."""
        snap = new_net(self.cfg, self.rules)
        snap.load_state_dict(weights)
        snap.eval()
        for q in snap.parameters():
            q.requires_grad_(False)
        self.pool[slot] = snap

    def _assign(self, idx: np.ndarray) -> None:
        """Draw an opponent and a learner side for the games starting in slots ``idx``; return None."""
        if len(idx) == 0:
            return
        filled = np.flatnonzero([m is not None for m in self.pool])
        ctrl, kind, side = draw_opponents(self.rng, self.cfg, self.rules, filled, len(idx))
        self.controller[idx], self.kind[idx], self.learner_seat[idx] = ctrl, kind, side
        self.ep_ret[idx] = 0.0
        self.ep_len[idx] = 0

    # ---------------------------------------------------------------------------- rollout

    def _sample(self, net: PolicyValueNet, obs: np.ndarray, mask: np.ndarray, feat: np.ndarray | None
                ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return (obs, features, actions, logits, values) sampled from ``net`` for a batch (``feat``: its
        move features when already computed); called under ``rollout``'s ``no_grad``."""
        o = torch.from_numpy(obs)
        f = net.features(obs) if feat is None else feat
        f = None if f is None else torch.from_numpy(f)
        logits, v = net(o, torch.from_numpy(mask), f)
        return o, f, sample_masked(logits, torch.rand(logits.shape, generator=self.gen)), logits, v

    def _policy_step(self, net: PolicyValueNet, obs: np.ndarray, mask: np.ndarray,
                     feat: np.ndarray | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return (obs, features, actions, log-probs, values) sampled from ``net`` for a batch (``feat``:
        its move features when already computed); called under ``rollout``'s ``no_grad``."""
        o, f, a, logits, v = self._sample(net, obs, mask, feat)
        logp = torch.log_softmax(logits, -1).gather(1, a[:, None]).squeeze(1)
        return o, f, a, logp, v

    def _opponent_actions(self, code: int, rows: np.ndarray, actions: np.ndarray,
                          feat: np.ndarray | None = None) -> None:
        """Fill ``actions[rows]`` with the moves of the opponent ``code``; return None."""
        obs, mask = self._obs[rows], self._mask[rows]
        if code in self.heuristics:
            actions[rows] = self.heuristics[code].act_batch(obs, mask)
        else:
            # a snapshot's log-probs are not stored: its actions only
            actions[rows] = self._sample(self.pool[code - SNAP0], obs, mask, feat)[2].numpy()

    def _shared_features(self, code: np.ndarray) -> Callable[[np.ndarray], np.ndarray | None]:
        """Compute the move features of every game the learner or a snapshot plays this step in one call;
        return a function giving those of some of these games (a call per network cost ~8 per step)."""
        need = (code == LEARNER) | (code >= SNAP0)
        if not self.net.uses_features or not need.any():
            return lambda rows: None
        rows_all = np.flatnonzero(need)
        feat = self.net.features(self._obs[rows_all])
        pos = np.cumsum(need) - 1
        return lambda rows: feat if len(rows) == len(rows_all) else feat[pos[rows]]

    def _learner_step(self, t: int, li: np.ndarray | None, to_act: np.ndarray, actions: np.ndarray,
                      feat: np.ndarray | None = None) -> None:
        """Act for the learner's games ``li`` (None: all) at step ``t`` and store them; return None."""
        b, eng = self.b, self.env.engine
        sel = slice(None) if li is None else li
        o, f, a, logp, v = self._policy_step(self.net, self._obs[sel], self._mask[sel], feat)
        if li is None:
            b["obs"][t].copy_(o)
            if f is not None:
                b["feat"][t].copy_(f)
            b["mask"][t].copy_(torch.from_numpy(self._mask))
            b["act"][t].copy_(a)
            b["logp"][t].copy_(logp)
        else:
            arr = self.np  # numpy's fancy assignment: a third of the time of torch's index_put
            arr["obs"][t, li] = o.numpy()
            if f is not None:
                arr["feat"][t, li] = f.numpy()
            arr["mask"][t, li] = self._mask[li]
            arr["act"][t, li] = a.numpy()
            arr["logp"][t, li] = logp.numpy()
        if self.critic is not None:
            pr = torch.from_numpy(privileged(eng, to_act[sel], None if li is None else li))
            b["priv"][t, sel if li is None else torch.from_numpy(li)] = pr
            v = self.critic(o, pr)
        self.np["values"][t, sel] = v.numpy()
        actions[sel] = a.numpy()

    @torch.no_grad()
    def rollout(self, update: int) -> dict[str, Any]:
        """Play ``num_steps`` steps of rollout ``update`` in every game of the shard; return its results.

        The buffers hold the steps; the result holds ``trunc`` ({step: (global games, final values
        (K, P))}), ``finished`` (kinds, learner returns and lengths of the episodes that ended),
        ``boot`` (N, P: each learner seat's value of the final state, 0 elsewhere) and ``state``.
        """
        seeds = np.random.SeedSequence([self.cfg.seed, update, self.index]).spawn(3)
        self.rng = np.random.default_rng(seeds[0])
        self.gen.manual_seed(int(seeds[1].generate_state(1, np.uint64)[0] >> np.uint64(1)))
        if FIXED in self.heuristics:  # the frozen agent's draws, a function of the update too (resume)
            self.heuristics[FIXED].reset(int(seeds[2].generate_state(1, np.uint64)[0] >> np.uint64(1)))
        cfg, eng, n, arr = self.cfg, self.env.engine, self.n, self.np
        rows = np.arange(n)
        trunc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        finished: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        phi = potential(eng) if cfg.shaping else None
        for t in range(cfg.num_steps):
            to_act = eng.to_act.copy()
            code = self.controller[rows, to_act]
            is_l = code == LEARNER
            arr["actor"][t] = to_act
            arr["learner"][t] = is_l
            actions = np.zeros(n, np.int64)
            if is_l.all():
                self._learner_step(t, None, to_act, actions)
            else:
                arr["values"][t] = 0.0
                li = np.flatnonzero(is_l)
                feat = self._shared_features(code)
                if len(li):
                    self._learner_step(t, li, to_act, actions, feat(li))
                for c in np.unique(code[~is_l]):
                    rc = np.flatnonzero(code == c)
                    self._opponent_actions(int(c), rc, actions, feat(rc) if c >= SNAP0 else None)
            obs, rew, _, _, infos = self.env.step(actions)
            arr["rewards"][t] = rew * cfg.reward_scale
            done = infos["_final"]
            if cfg.shaping:
                # potential after the step: 0 for a game that ended (the engine already dealt the next)
                phi_next = potential(eng)
                arr["rewards"][t] += cfg.shaping * cfg.reward_scale * (np.where(done[:, None], 0.0, phi_next)
                                                                       - phi)
                phi = phi_next
            arr["dones"][t] = done
            self.ep_ret += rew[rows, self.learner_seat]
            self.ep_len += 1
            if done.any():
                idx = infos["final_index"]
                tr = infos["final_info"]["truncated"]
                if tr.any():
                    trunc[t] = (idx[tr] + self.lo, self._final_values(infos["final_obs"][tr]))
                finished.append((self.kind[idx].copy(), self.ep_ret[idx].copy(), self.ep_len[idx].copy()))
                self._assign(idx)
            # the env's own arrays, rewritten in place by the next env.step: every use of them in a
            # step (a slice, a copy into the buffers) comes before that step, so no copy is needed
            self._obs, self._mask = obs["observation"], obs["action_mask"]
        return {"trunc": trunc, "finished": finished, "boot": self._bootstrap(), "state": self.state()}

    def _final_values(self, final_obs: np.ndarray) -> np.ndarray:
        """Return the values (K, P) of the seats' final observations (K, P, OBS) of truncated games."""
        fo = torch.from_numpy(final_obs.reshape(-1, final_obs.shape[-1]))
        if self.critic is not None:  # a game ends at a round end: no hands, no stock
            vals = self.critic(fo, torch.zeros((len(fo), self.b["priv"].shape[-1])))
        else:
            vals = self.net.values(fo)
        return vals.numpy().reshape(-1, self.p)

    def _bootstrap(self) -> np.ndarray:
        """Return the value (N, P) of each learner seat's view of the current state (0 elsewhere)."""
        g, s = np.nonzero(self.controller == LEARNER)
        out = np.zeros((self.n, self.p), np.float32)
        if len(g):
            o = torch.from_numpy(encode(self.env.engine, s, g))
            if self.critic is not None:
                out[g, s] = self.critic(o, torch.from_numpy(privileged(self.env.engine, s, g))).numpy()
            else:
                out[g, s] = self.net.values(o).numpy()
        return out
