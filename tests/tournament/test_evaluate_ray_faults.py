"""The Ray backend's local instance listens on 127.0.0.1 only, and a killed Ray worker ends the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.tournament.runner import TournamentConfig, run_tournament
from tests.helpers import journal_blocks
from tests.ray_cluster import with_descendants

ray = pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]


def _listening(pids: list[int]) -> list[str]:
    """Return the local addresses of the TCP sockets that ``pids`` listen on (from /proc)."""
    inodes = set()
    for p in pids:
        for fd in Path(f"/proc/{p}/fd").glob("*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    addrs = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            f = row.split()
            if f[3] == "0A" and f[9] in inodes:  # 0A: LISTEN
                ip = f[1].split(":")[0]
                addrs.append(ip)
    return addrs


_LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


@pytest.mark.slow
def test_a_local_ray_instance_listens_on_loopback_only():
    seen = {}

    def probe(block) -> None:
        if not seen:
            seen["node"] = ray._private.worker.global_worker.node.node_ip_address
            seen["addrs"] = _listening(with_descendants([os.getpid()]))

    assert not ray.is_initialized()
    cfg = TournamentConfig(agents=("random", "greedy"), deals=4, block_deals=2, backend="ray", workers=1)
    run_tournament(cfg, on_block=probe)
    assert not ray.is_initialized()  # the instance it started is stopped
    assert seen["node"] == "127.0.0.1"
    assert len(seen["addrs"]) >= 3  # the GCS, the raylet, the driver's worker ...
    assert set(seen["addrs"]) <= _LOOPBACK  # before the fix they listened on every interface
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ  # put back as it was


def _cmdline(pid: int) -> bytes:
    """Return a process's command line (empty once it has gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.slow
def test_a_killed_ray_worker_ends_the_run_with_one_line(tmp_path):
    p = subprocess.Popen([sys.executable, str(ROOT / "evaluate.py"), "--backend", "ray", "--workers", "2",
                          "--agents", "greedy", "expert", "--rounds", "4000", "--block-deals", "40",
                          "--no-plot", "--no-progress", "--out", "res/t"], cwd=tmp_path,
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    journal = tmp_path / "res" / "t.journal.jsonl"
    try:
        end = time.monotonic() + 120
        while journal_blocks(journal) < 1:
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < end
            time.sleep(0.05)
        tasks: list[int] = []
        while not tasks:  # a worker between two blocks is titled ray::IDLE: look again until one runs
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < end, "no Ray worker running a block"
            tasks = [c for c in with_descendants([p.pid]) if _cmdline(c).startswith(b"ray::_indexed")]
            time.sleep(0.02)
        os.kill(tasks[0], signal.SIGKILL)
        _, err = p.communicate(timeout=60)  # Ray retried the task elsewhere; now the run stops
        assert p.returncode == 1
        (line,) = err.strip().splitlines()
        assert line.startswith("evaluate.py: error: a Ray worker died") and "--resume" in line
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


@pytest.mark.parametrize("address", ["nohost", "host:", ":6379", "host:port", "host:70000"])
def test_a_malformed_ray_address_is_one_line_and_nothing_is_written(tmp_path, capsys, address):
    from agents.tournament.cli import main

    assert main(["--agents", "random", "greedy", "--rounds", "2", "--backend", "ray", "--ray-address",
                 address, "--no-progress", "--no-plot", "--out", str(tmp_path / "r")]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"evaluate.py: error: --ray-address {address!r}: expected HOST:PORT of the cluster's "
                    "head (ray start --head prints it), or auto")
    assert list(tmp_path.iterdir()) == []


def test_loopback_addresses_are_kept_and_others_are_not():
    from agents.tournament.raycluster import head_address, is_loopback

    assert head_address("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert head_address("[::1]:6379") == ("::1", 6379)
    assert head_address("auto") is None and head_address("ray://10.0.0.5:10001") is None
    assert [is_loopback(h) for h in ("127.0.0.1", "127.0.1.1", "localhost", "::1", "10.0.0.5", "head")] == \
        [True, True, True, True, False, False]
