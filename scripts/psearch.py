"""The model card's screening names of ``hybrid:sims=N,leaf=net,policy=neural-solo``: ``python:psearch:psN``.

The model card's seed-31 rows of "Search with the network's own rollouts" were measured under these
names before the registry took ``policy``. ``evaluate.py`` derives each agent's seed from the spec's
text, so these names, not the registry spec, give those rows' exact digits. Each factory builds the
registry's agent (the same moves for the same seed). Run from the repository root::

    PYTHONPATH=scripts python evaluate.py --vs python:psearch:ps200 --agents hybrid --rounds 500 \\
        --seed 31 --workers 1
"""

from __future__ import annotations

from agents.registry import make_agent


def _screen(sims: int):
    def factory(rules=None, seed=None):
        return make_agent(f"hybrid:sims={sims},leaf=net,policy=neural-solo", rules=rules, seed=seed)
    factory.__doc__ = f"``hybrid:sims={sims},leaf=net,policy=neural-solo``."
    return factory


ps100 = _screen(100)
ps200 = _screen(200)
ps400 = _screen(400)
