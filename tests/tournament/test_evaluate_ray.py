"""The Ray backend of evaluate.py gives exactly the local backend's numbers (on a local Ray instance)."""

from __future__ import annotations

import ray

from agents.tournament import analysis
from agents.tournament.runner import TournamentConfig, run_tournament
from escoba_env import Rules


def test_ray_backend_equals_local_backend():
    kw = {"agents": ("random", "greedy", "expert"), "deals": 30, "block_deals": 10, "seed": 4,
          "rules": Rules(num_players=3), "games": False}
    local = run_tournament(TournamentConfig(**kw, workers=2))
    if ray.is_initialized():  # an earlier test's instance (RLlib's) must not become this test's cluster
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_tournament(TournamentConfig(**kw, backend="ray"))
        assert ray.is_initialized()  # an instance started by the caller is left running
    finally:
        ray.shutdown()
    assert analysis.pair_stats(remote) == analysis.pair_stats(local)
    assert analysis.fit_ratings(remote) == analysis.fit_ratings(local)
    for a, b in zip(remote.blocks, local.blocks, strict=True):
        assert [x.block for x in a] == [x.block for x in b]
