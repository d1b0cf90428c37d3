"""What a first run on a fresh Ray cluster costs: start-up, first tournament, first training update.

Starts a two-node Ray cluster on this machine (``tests/ray_cluster.py``: a head and a second node,
one CPU each, on 127.0.0.1), then times, as a user's commands run (subprocesses):

- the cluster's start-up (``ray start`` of both nodes until both are alive);
- ``evaluate.py`` on 1,200 deals of greedy vs expert (blocks of 30 deals), locally with one worker
  and on the cluster (``--backend ray --ray-address``), each a fresh process;
- ``train.py`` for one update of a tiny network (16 envs x 8 steps, 2 rollout workers), locally
  (worker processes) and on the cluster (Ray actors), each a fresh process.

Prints the seconds of each and the load average before and after. The cluster is stopped at the end.

    nice python benchmarks/bench_ray_startup.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ray_cluster import RayCluster  # noqa: E402

EVAL = [str(ROOT / "evaluate.py"), "--agents", "greedy", "expert", "--no-plot", "--no-progress",
        "--seed", "3", "--rounds", "1200", "--block-deals", "30"]
TRAIN = [str(ROOT / "train.py"), "--runs-dir", "runs", "--num-envs", "16", "--num-steps", "8",
         "--hidden", "16", "--num-minibatches", "2", "--eval-interval", "0", "--no-progress",
         "--no-tensorboard", "--seed", "7", "--no-anneal-lr", "--workers", "2", "--total-steps", "128"]


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Return the wall seconds of a command (a fresh Python process); raise if it fails."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *cmd], cwd=cwd, env={**env, "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed: {p.stderr.strip()[-500:]}")
    return time.perf_counter() - t0


def main() -> None:
    """Run the measurements and print them."""
    print(f"load average before: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = RayCluster(work / "cluster")
        (work / "cluster").mkdir()
        rows = []
        try:
            t0 = time.perf_counter()
            cluster.start_head()
            cluster.add_node("node1")
            cluster.settle()
            rows.append(("cluster start-up (head + 1 node)", time.perf_counter() - t0))
            env = cluster.driver_env()
            ray = ["--backend", "ray", "--ray-address", cluster.address]
            for what, cmd in (("evaluate.py, local, 1 worker", [*EVAL, "--workers", "1", "--out", "l/r"]),
                              ("evaluate.py, on the cluster", [*EVAL, *ray, "--out", "c/r"]),
                              ("train.py, 1 update, local workers", [*TRAIN, "--run-name", "l"]),
                              ("train.py, 1 update, on the cluster", [*TRAIN, *ray, "--run-name", "c"])):
                rows.append((what, timed(cmd, work, env)))
        finally:
            cluster.stop()
    for what, s in rows:
        print(f"{what:<40} {s:7.1f} s")
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
