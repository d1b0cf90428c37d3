"""The policy oracle: a CHEATING label teacher that plays each move out in the true deal with a policy.

Tried and not shipped (its labels did not make a stronger network than the search's). Each legal move
is played out once from the true state by a fair agent (``policy``) for every seat and valued at the
empty stock by ``leaf``; its labels average, over the deals an observation allows, to that policy's
own move values (approximate policy iteration). From a checkout::

    python -m agents.training.distill --out runs/labels/po.npz --labels 30000 --values \\
        --teacher python:lab.policy_oracle:make --behaviour neural-solo
"""

from __future__ import annotations

from agents.base import Agent
from agents.search.pimc import LEAVES, OracleAgent
from agents.spec.registry import make_agent
from escoba_env.rulebook.rules import Rules


class PolicyOracleAgent(OracleAgent):
    """CHEATING teacher for labels: every legal move played out in the true deal by ``policy``.

    Each move is followed, from a copy of the true engine state (``state=(engine, games)``, as the
    oracle), by ``policy`` (a fair agent; ``make`` gives it ``neural-solo``)
    playing every seat from its own observation, until the stock runs out; there ``leaf``
    (``"net"``, default: ``neural-solo``'s endgame network; ``"exact"``: the solver; ``"none"``: play
    on to the end) values the rest of the round. With a deterministic policy one rollout per move
    (``sims=1``, the default) is exact for the true deal, so a move's value is what it is worth
    against that policy in that deal: labels whose average over the deals an observation allows is
    the policy's own move value (its Q), the teacher of approximate policy iteration
    (``agents.training.distill --teacher python:lab.policy_oracle:make --values``). Never a fair opponent.
    """

    name = "policy-oracle"

    def __init__(self, policy: Agent, rules=None, seed=None, sims: int = 1, leaf: str | None = "net",
                 max_rows: int = 200_000):
        leaf = None if leaf in (None, "none") else leaf
        if leaf not in LEAVES:
            raise ValueError(f"leaf must be one of exact, net, none; got {leaf!r}")
        if policy is None:
            raise ValueError("the policy oracle needs a rollout policy: a fair agent")
        super().__init__(rules, seed, sims=sims, max_rows=max_rows, leaf=leaf, policy=policy)
        self.name = f"policy-oracle(cheating):policy={policy.name},sims={self.sims},leaf={leaf}"


def make(rules: Rules | None = None, seed: int | None = None) -> PolicyOracleAgent:
    """Return the policy oracle whose rollouts ``neural-solo`` plays, valued by its endgame network
    (the ``python:lab.policy_oracle:make`` agent spec)."""
    policy = make_agent("neural-solo", rules=rules, seed=seed)
    policy.name = "neural-solo"  # named by its spec, not by the file it loaded
    return PolicyOracleAgent(policy, rules=rules, seed=seed)
