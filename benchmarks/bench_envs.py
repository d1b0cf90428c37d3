"""Env-face throughput: uniformly random legal play, steps per second, all in one run.

AEC envs are driven the way PettingZoo's own ``performance_benchmark`` drives them: ``env.last()``
then ``env.step(action)`` with a random legal action picked from the observation's
``action_mask``; every ``step`` call counts (including the ``None`` steps of finished agents; an
Escoba game has two of them in a few hundred steps). Printed in the same run, for scale:

- PettingZoo's ``leduc_holdem_v4`` (needs ``rlcard`` and ``pygame``: ``pip install rlcard pygame``);
- an empty AEC game (two agents, a 40-action mask, games of 200 steps) under the same standard
  wrappers as ``escoba_v0.env()``: the ceiling that wrapper overhead alone sets;
- ``escoba_v0.env()`` and ``escoba_v0.raw_env()``;
- the single-agent Gymnasium env against a random opponent (learner steps only; the opponent and
  the learner pick random legal actions the way the AEC loop does, ``np.flatnonzero`` of the mask);
- ``EscobaVectorEnv`` with observations, at each of ``--batches`` (default 256, 1024, 4096 and
  16384 games; random legal actions drawn with the engine's sampler; steps = actions applied =
  batch x batched steps).

``--jokers 1|2`` and ``--mesa-deal`` measure the Escoba envs with those variants (docs/rules.md §11).
Run on one core of an otherwise idle machine: ``taskset -c 1 python benchmarks/bench_envs.py``.
The CPU-time column (steps per CPU-second of this process) is the figure to trust when something
else shares the machine; ``--repeat N`` runs every benchmark N times and keeps the best.
``--profile NAME`` prints a cProfile of one benchmark instead.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import random
import sys
import time
from collections.abc import Callable

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

from escoba_env import EscobaVectorEnv, Rules, SingleAgentEscobaEnv, escoba_v0  # noqa: E402
from escoba_env.executors.engine import sample_actions  # noqa: E402
from escoba_env.faces.cli import (  # noqa: E402
    OneLineParser,
    add_rules_arguments,
    guarded_main,
    int_list,
    positive_float,
    positive_int,
    rules_from_args,
)


class EmptyGame(AECEnv):
    """Two agents alternate for 200 steps; nothing happens. Measures the AEC and wrapper overhead."""

    metadata = {"render_modes": [], "name": "empty_v0", "is_parallelizable": False}

    def __init__(self, length: int = 200):
        super().__init__()
        self.possible_agents = ["player_0", "player_1"]
        self.length = length
        self._obs_space = spaces.Dict({"observation": spaces.Box(0, 1, (546,), np.float32),
                                       "action_mask": spaces.Box(0, 1, (40,), np.int8)})
        self._act_space = spaces.Discrete(40)
        self._obs = {"observation": np.zeros(546, np.float32), "action_mask": np.ones(40, np.int8)}

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def observe(self, agent):
        return self._obs

    def reset(self, seed=None, options=None):
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = "player_0"
        self.t = 0

    def step(self, action):
        if self.terminations[self.agent_selection]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[self.agent_selection] = 0.0
        self.t += 1
        if self.t >= self.length:
            self.terminations = dict.fromkeys(self.agents, True)
        self.agent_selection = "player_1" if self.agent_selection == "player_0" else "player_0"

    def close(self):
        pass


def wrapped_empty() -> AECEnv:
    """Return the empty game under the wrappers of ``escoba_v0.env()``."""
    e = wrappers.TerminateIllegalWrapper(EmptyGame(), illegal_reward=-1)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    return wrappers.OrderEnforcingWrapper(e)


def leduc() -> AECEnv:
    """Return PettingZoo's leduc_holdem_v4 env (ImportError without rlcard/pygame)."""
    from pettingzoo.classic import leduc_holdem_v4

    return leduc_holdem_v4.env()


def run_aec(make: Callable[[], AECEnv], seconds: float) -> tuple[int, float, float]:
    """Return (steps, wall seconds, CPU seconds) of random play through last()/step()."""
    env = make()
    env.reset(seed=0)
    rng = random.Random(0)
    steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        for _ in range(1000):
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                action = None
            else:
                legal = np.flatnonzero(obs["action_mask"])
                action = int(legal[rng.randrange(len(legal))])
            env.step(action)
            steps += 1
            if not env.agents:
                env.reset()
        if time.perf_counter() - t0 > seconds:
            return steps, time.perf_counter() - t0, time.process_time() - c0


class MaskRandom:
    """A uniform random opponent that picks its action exactly as ``run_aec`` does for every seat."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def reset(self, seed: int) -> None:
        self.rng.seed(seed)

    def act(self, observation, action_mask, state=None) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.randrange(len(legal))])


def run_single(seconds: float, rules: Rules) -> tuple[int, float, float]:
    """Return (learner steps, wall, CPU) of the single-agent env against a random opponent."""
    env = SingleAgentEscobaEnv(MaskRandom(0), rules=rules)
    env.reset(seed=0)
    rng = random.Random(0)
    steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        for _ in range(500):
            legal = np.flatnonzero(env.action_masks())
            _, _, term, trunc, _ = env.step(int(legal[rng.randrange(len(legal))]))
            steps += 1
            if term or trunc:
                env.reset()
        if time.perf_counter() - t0 > seconds:
            return steps, time.perf_counter() - t0, time.process_time() - c0


def run_vector(batch: int, seconds: float, rules: Rules) -> tuple[int, float, float]:
    """Return (actions applied, wall, CPU) of the vector env with observations at ``batch`` games."""
    env = EscobaVectorEnv(batch, rules=rules)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    uniforms = rng.random((64, batch))
    for i in range(10):  # warm-up
        env.step(sample_actions(env.engine.legal, uniforms[i]))
    steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        for i in range(64):
            env.step(sample_actions(env.engine.legal, uniforms[i]))
            steps += batch
        if time.perf_counter() - t0 > seconds:
            return steps, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    """Parse arguments, run every benchmark (or profile one) and print a table."""
    ap = OneLineParser(prog="bench_envs.py", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=positive_float, default=3.0, help="time per benchmark (default 3)")
    ap.add_argument("--batches", type=int_list, default="256,1024,4096,16384",
                    help="vector env batch sizes, comma-separated (default 256,1024,4096,16384)")
    ap.add_argument("--batch", type=positive_int, help="one vector env batch size (overrides --batches)")
    ap.add_argument("--repeat", type=positive_int, default=1,
                    help="runs per benchmark, best kept (default 1)")
    ap.add_argument("--profile", choices=["raw", "env", "single", "vector"],
                    help="print a cProfile of one benchmark instead of the table")
    add_rules_arguments(ap.add_argument_group("rules (defaults: escoba_env.Rules, docs/rules.md)"))
    args = ap.parse_args()
    rules = rules_from_args(args)
    batches = [args.batch] if args.batch else args.batches
    benches: dict[str, Callable[[], tuple[int, float, float]]] = {
        "leduc_holdem_v4 env() (PettingZoo)": lambda: run_aec(leduc, args.seconds),
        "empty AEC game, standard wrappers": lambda: run_aec(wrapped_empty, args.seconds),
        "escoba_v0.env()": lambda: run_aec(lambda: escoba_v0.env(rules=rules), args.seconds),
        "escoba_v0.raw_env()": lambda: run_aec(lambda: escoba_v0.raw_env(rules=rules), args.seconds),
        "SingleAgentEscobaEnv vs random": lambda: run_single(args.seconds, rules),
    }
    for b in batches:
        benches[f"EscobaVectorEnv, batch {b}, with obs"] = (
            lambda b=b: run_vector(b, args.seconds, rules))
    if args.profile:
        key = {"raw": "escoba_v0.raw_env()", "env": "escoba_v0.env()",
               "single": "SingleAgentEscobaEnv vs random"}.get(args.profile)
        key = key or f"EscobaVectorEnv, batch {batches[-1]}, with obs"
        prof = cProfile.Profile()
        prof.runcall(benches[key])
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    variant = (f", jokers={args.jokers}" if args.jokers else "") + (", mesa_deal" if args.mesa_deal else "")
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{affinity} core(s) usable, {args.seconds:g} s per benchmark, best of {args.repeat}"
          f"{variant or ', standard rules'}")
    print(f"{'benchmark':46s} {'steps/s':>12s} {'steps/CPU-s':>12s}")
    for name, fn in benches.items():
        try:
            runs = [fn() for _ in range(args.repeat)]
        except ImportError as e:
            print(f"{name:46s} {'skipped':>12s}  ({e}; pip install rlcard pygame)")
            continue
        wall = max(steps / w for steps, w, _ in runs)
        cpu = max(steps / c for steps, _, c in runs)
        print(f"{name:46s} {wall:12,.0f} {cpu:12,.0f}")


if __name__ == "__main__":
    raise SystemExit(guarded_main("bench_envs.py", main))
