"""evaluate.py and train.py on a real Ray cluster: a head and a second node started by ``ray start`` on
127.0.0.1 (``tests/ray_cluster.py``), joined with ``--ray-address`` as a user with a cluster does.

The programs run as subprocesses (the drivers), so an in-process Ray instance of another test never
becomes this cluster's driver; the cluster has token authentication with its own token, its own
temp dirs, and is stopped at the end whatever happened, by killing its own processes only.

Each node has one CPU: two rollout actors (or two tournament tasks at once) cannot both run on the
head, so the second node does work in every run. Killing that node in the middle of a run must end
the program with one line and exit 1, keep the finished work, and ``--resume`` must finish with the
numbers of an uninterrupted run.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.helpers import journal_blocks
from tests.ray_cluster import HANG_S, RayCluster

pytest.importorskip("ray")
pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = RayCluster(tmp_path_factory.mktemp("ray_cluster"))
    try:
        c.start_head()
        c.add_node("node1")
        c.settle()
        yield c
    finally:
        c.stop()


def _start(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *cmd], cwd=cwd, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**env, "PYTHONPATH": str(ROOT)})


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    p = _start(cmd, cwd, env)
    try:
        out, err = p.communicate(timeout=HANG_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, err
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _wait(p: subprocess.Popen, ready, what: str, timeout: float = HANG_S) -> None:
    end = time.monotonic() + timeout
    while not ready():
        assert p.poll() is None, (what, p.communicate())
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


def _finish(p: subprocess.Popen, timeout: float = HANG_S) -> str:
    """Return the stderr of ``p`` once it has ended (killed if it outlives ``timeout``: a hang)."""
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"the program hung after the node died ({timeout} s)")
    return err


def _one_line(err: str) -> str:
    """Return the program's only line on stderr (the assertion shows all of it if there are others)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"one line expected on stderr, got {len(lines)}:\n{err}"
    return lines[0]


# ---------------------------------------------------------------------------------------- evaluate.py

EVAL = [str(ROOT / "evaluate.py"), "--agents", "greedy", "expert", "--no-plot", "--no-progress",
        "--seed", "3"]


def _results(prefix: Path) -> dict:
    res = json.loads(prefix.with_name(prefix.name + ".json").read_text())
    res.pop("timing")  # wall and CPU seconds: what two runs of the same config differ in,
    res.pop("sittings")  # with when each part started
    for k in ("workers", "backend"):  # how it ran, not what it computed
        res["config"].pop(k)
    return res


def _csvs(prefix: Path) -> list[bytes]:
    return [prefix.with_name(prefix.name + s).read_bytes() for s in ("_pairs.csv", "_ratings.csv")]


def _journaled(journal: Path) -> int:
    return journal_blocks(journal)


def test_evaluate_on_the_cluster_gives_the_local_results_and_survives_a_lost_node(cluster, tmp_path):
    env = cluster.driver_env()
    size = ["--rounds", "1200", "--block-deals", "30"]  # 40 blocks of 60 rounds
    _run([*EVAL, *size, "--workers", "1", "--out", "local/r"], tmp_path, env)
    on_ray = ["--backend", "ray", "--ray-address", cluster.address]
    _run([*EVAL, *size, *on_ray, "--out", "ray/r"], tmp_path, env)
    assert _results(tmp_path / "ray/r") == _results(tmp_path / "local/r")
    assert _csvs(tmp_path / "ray/r") == _csvs(tmp_path / "local/r")  # byte for byte

    # the second node dies in the middle of the run
    journal = tmp_path / "cut/r.journal.jsonl"
    p = _start([*EVAL, *size, *on_ray, "--out", "cut/r"], tmp_path, env)
    _wait(p, lambda: _journaled(journal) >= 3, "3 journaled blocks")
    cluster.kill("node1")
    err = _finish(p)
    cluster.add_node("node2")  # a replacement joins
    cluster.settle()  # and the dead one is no longer counted alive: the resume's blocks land on live nodes
    if p.returncode != 0:  # a block was running on the node (always, so far): the run stops
        assert p.returncode == 1, err
        line = _one_line(err)
        assert line.startswith("evaluate.py: error: a Ray worker died") and "--resume" in line
        kept = _journaled(journal)
        assert 3 <= kept < 40 and f"{kept} of 40 blocks finished" in line
        assert not (tmp_path / "cut/r.json").exists()
        # the same command with --resume finishes the run
        _run([*EVAL, *size, *on_ray, "--out", "cut/r", "--resume"], tmp_path, env)
    assert not journal.exists()  # either way: the results hold everything
    assert _results(tmp_path / "cut/r") == _results(tmp_path / "local/r")
    assert _csvs(tmp_path / "cut/r") == _csvs(tmp_path / "local/r")


OUTSIDE = (
    "import json, os, sys\n"
    "from agents.spec.registry import make_agent\n"
    "\n"
    "def make(rules, seed=0):\n"
    "    # the copies of this module the process could import: those Ray shipped with the job\n"
    "    shipped = [p for p in sys.path if 'py_modules_files' in p\n"
    "               and os.path.isfile(os.path.join(p, 'outside_r.py'))]\n"
    "    with open({log!r}, 'a') as f:\n"
    "        f.write(json.dumps(shipped) + '\\n')\n"
    "    return make_agent('greedy', rules=rules, seed=seed)\n"
)


def test_an_outside_agent_in_the_driver_s_folder_travels_to_the_cluster_s_workers(cluster, tmp_path):
    """``python:MODULE:make`` from the folder the command runs in, with no PYTHONPATH naming it, plays
    on both nodes with the results of a local run, and each node's workers hold the copy Ray's runtime
    env ships (py_modules), in that node's own folder: what a node that does not share the driver's
    disk imports. (On one machine Ray also puts the driver's folder on its workers' path, so the
    workers here could import either copy; the test checks that the shipped one is there.)"""
    user = tmp_path / "user"
    user.mkdir()
    log = tmp_path / "imported.jsonl"
    source = OUTSIDE.format(log=str(log))
    (user / "outside_r.py").write_text(source)
    env = cluster.driver_env()
    cmd = [str(ROOT / "evaluate.py"), "--agents", "random", "--vs", "python:outside_r:make", "--no-plot",
           "--no-progress", "--seed", "3", "--rounds", "16", "--block-deals", "2"]
    _run([*cmd, "--workers", "1", "--out", "local/r"], user, env)
    _run([*cmd, "--backend", "ray", "--ray-address", cluster.address, "--out", "ray/r"], user, env)
    assert _results(user / "ray/r") == _results(user / "local/r")
    shipped = {p for line in log.read_text().splitlines() for p in json.loads(line)}
    # one copy per node, under that node's temp dir, byte for byte the user's file
    nodes = {name for name in cluster.nodes for p in shipped
             if Path(p).is_relative_to(cluster.temp_dir(name))}
    assert len(nodes) == 2 and len(shipped) == 2, shipped
    assert all((Path(p) / "outside_r.py").read_text() == source for p in shipped)


# ------------------------------------------------------------------------------------------- train.py

PER = 16 * 8
"""Env steps per update of the tiny runs."""


def _train(name: str, updates: int, *extra: str) -> list[str]:
    return [str(ROOT / "train.py"), "--runs-dir", "runs", "--run-name", name, "--num-envs", "16",
            "--num-steps", "8", "--hidden", "16", "--num-minibatches", "2", "--eval-interval", "0",
            "--no-progress", "--no-tensorboard", "--seed", "7", "--snapshot-interval", str(2 * PER),
            "--no-anneal-lr", "--workers", "2", "--total-steps", str(updates * PER), *extra]


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from agents.nets.neural import load_checkpoint

    return load_checkpoint(str(path))["model"]


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _updates_logged(run: Path) -> int:
    """Return how many updates ``metrics.csv`` has rows of (the steps it names; the header is not one)."""
    try:
        with open(run / "metrics.csv") as f:
            return len({row[0] for row in csv.reader(f) if row and row[0].isdigit()})
    except FileNotFoundError:
        return 0


def test_train_on_the_cluster_survives_a_lost_node_and_resumes_to_the_local_weights(cluster, tmp_path):
    """The run on the cluster, cut by the node's death and resumed there, ends with the weights of an
    uninterrupted run of local worker processes: Ray actors compute the same updates, nothing of the
    completed updates is lost, and the resume is exact."""
    env = cluster.driver_env()
    ray_args = ("--backend", "ray", "--ray-address", cluster.address)
    ckpt = Path("checkpoints/latest.pt")

    # the second node (one of the two rollout actors) dies in the middle of a long run
    # node1, or the node that replaced it in the evaluate test (a node the cluster killed never counts,
    # even while its processes are still going on a loaded machine: the unpacking of a list that still
    # held it ended this test with "too many values to unpack")
    workers = cluster.live_workers()
    assert len(workers) == 1, (workers, cluster.nodes, cluster.dead)
    victim = workers[0]
    cluster.settle()  # a node the evaluate test killed is no longer counted alive (no actor lands there)
    p = _start(_train("cut", 10_000, *ray_args), tmp_path, env)
    _wait(p, lambda: _updates_logged(tmp_path / "runs/cut") >= 2, "2 updates")
    cluster.kill(victim)
    err = _finish(p)
    assert p.returncode == 1, err
    line = _one_line(err)
    # the actor's death, or (depending on which call meets it first) a lost object of that node
    assert line.startswith(("train.py: error: a Ray rollout actor died",
                            "train.py: error: Ray lost a rollout actor or its data")) and "checkpoint" in line
    from agents.nets.neural import load_checkpoint

    cut = load_checkpoint(str(tmp_path / "runs/cut" / ckpt))
    done = int(cut["update"])
    assert done >= 2 and cut["global_step"] == done * PER  # the last completed update, nothing lost

    cluster.add_node("spare")
    cluster.settle()
    _run([str(ROOT / "train.py"), "--resume", str(tmp_path / "runs/cut" / ckpt), "--total-steps",
          str((done + 2) * PER)], tmp_path, env)
    _run(_train("whole", done + 2), tmp_path, env)  # uninterrupted, local worker processes
    resumed, whole = (_weights(tmp_path / "runs" / n / ckpt) for n in ("cut", "whole"))
    assert _same(resumed, whole)


def test_a_cluster_that_is_not_there_is_one_line_at_once_and_nothing_is_written(tmp_path):
    """Before the check Ray retried the connection for minutes, then evaluate.py left a journal and
    train.py a run folder that refused the corrected command."""
    from tests.ray_cluster import free_port

    nowhere = ("--backend", "ray", "--ray-address", f"127.0.0.1:{free_port()}")
    for cmd, status in (([*EVAL, "--rounds", "10", *nowhere, "--out", "res/r"], 1),
                        (_train("r", 2, *nowhere), 2)):
        p = _start(cmd, tmp_path, dict(os.environ))
        err = _finish(p)  # no retry for minutes: the program's own 10 s connection check answers
        assert p.returncode == status, err
        line = _one_line(err)
        prog = Path(cmd[0]).name
        assert line.startswith(f"{prog}: error: cannot reach the Ray cluster at {nowhere[-1]} ("), line
    assert list(tmp_path.iterdir()) == []  # no journal, no results, no run folder
