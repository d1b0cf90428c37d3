"""PIMC search whose rollouts are played by the table's shipped network (network-guided search).

``GuidedSearchAgent`` is ``agents.search.pimc.SearchAgent`` with one change: in every rollout, every
seat plays the argmax of a ``PolicyValueNet`` (by default the table's shipped checkpoint,
``agents.nets.shipped.SHIPPED_CHECKPOINTS``) instead of the greedy default policy. All rollouts of a
batch step together, so each rollout step is one ``encode`` + ``move_features`` + forward pass over
every live rollout game. With ``net_steps=K`` the network plays only the first ``K`` engine steps of
each rollout and the greedy policy the rest (cheaper). The worlds are sampled from the observation
alone (``agents.worlds``), so the network only ever sees observations of sampled worlds.

Tried and not shipped (weaker than the plain search for its cost). From a checkout, the agent spec
``python:lab.guided:make`` plays it with its defaults; ``GuidedSearchAgent(rules, seed, sims=N,
net_steps=K, checkpoint=PATH)`` sets the rest.
"""

from __future__ import annotations

import os

import numpy as np

from agents.nets.neural import NeuralAgent
from agents.nets.shipped import SHIPPED_CHECKPOINTS, shipped_checkpoint, table_name
from agents.search.pimc import SearchAgent, rollout_actions
from escoba_env.executors.observation import action_masks, encode
from escoba_env.rulebook.rules import Rules


def table_checkpoint(rules: Rules) -> str:
    """Return the path of the shipped network of ``rules``' table, or raise ValueError if none exists."""
    path = shipped_checkpoint(rules)
    if path is None:
        tables = ", ".join(table_name(p, t) for p, t in SHIPPED_CHECKPOINTS)
        raise ValueError(f"no shipped network for {table_name(rules.num_players, rules.partnerships)}; "
                         f"shipped tables: {tables}")
    return str(path)


class GuidedSearchAgent(SearchAgent):
    """PIMC search (``sims`` rollouts per decision) with network-played rollouts (module docs)."""

    name = "guided"
    DEFAULT_SIMS = 200

    def __init__(self, rules: Rules | None = None, seed: int | None = None, sims: int = DEFAULT_SIMS,
                 checkpoint: str | None = None, net_steps: int | None = None, threat: str = "count",
                 horizon: int | None = None, max_rows: int = 200_000):
        rules = Rules() if rules is None else rules
        bad = isinstance(net_steps, bool) or not isinstance(net_steps, (int, np.integer, type(None)))
        if bad or (net_steps is not None and net_steps < 1):
            raise ValueError(f"net_steps must be None (whole rollout) or a positive int, got {net_steps!r}")
        path = table_checkpoint(rules) if checkpoint is None else checkpoint
        if not os.path.isfile(path):
            raise ValueError(f"checkpoint file not found: {path!r}")
        self.net = NeuralAgent.from_checkpoint(path, rules=rules, seed=seed)
        self.net_steps = None if net_steps is None else int(net_steps)
        super().__init__(rules, seed, sims=sims, threat=threat, horizon=horizon, max_rows=max_rows)
        self.name = f"guided:sims={self.sims}" + ("" if net_steps is None else f",net_steps={self.net_steps}")

    def _rollout_policy(self):
        """Return the rollout policy: the network's argmax for the first ``net_steps`` steps, then greedy."""
        step = [0]

        def policy(engine) -> np.ndarray:
            k = step[0]
            step[0] += 1
            if self.net_steps is not None and k >= self.net_steps:
                return rollout_actions(engine, self.rng, 0.0, "greedy", threat=self.threat)
            live = np.nonzero(~engine.done)[0]
            actions = np.zeros(engine.num_games, np.int64)
            if live.size:
                seats = engine.to_act[live]
                obs, masks = encode(engine, seats, live), action_masks(engine, seats, live)
                actions[live] = self.net.act_batch(obs, masks)
            return actions

        return policy


def make(rules: Rules | None = None, seed: int | None = None) -> GuidedSearchAgent:
    """Return the guided search with its defaults (the ``python:lab.guided:make`` agent spec)."""
    return GuidedSearchAgent(rules, seed)
