"""A real Ray cluster of two nodes on this machine, bound to 127.0.0.1, for the cluster tests.

``RayCluster`` starts a head (``ray start --head``) and worker nodes (``ray start --address``), each
with its own ``--temp-dir`` and one CPU, every port either random or picked free here, and stops
them whatever happened. Every process of a node carries an environment variable naming that node
(``ESCOBA_RAY_NODE``), inherited by everything Ray starts there: a node is stopped by killing the
processes that carry its name, never by ``ray stop``, which would kill every Ray process of the
machine (other test runs' included).

On Linux ``ray start`` turns ``--node-ip-address 127.0.0.1`` into the machine's network address, and
the node's servers then listen on every interface; its switch for that (``ENABLE_RAY_CLUSTER`` off,
what Ray does on macOS and Windows) also refuses to start a second node. So ``ray start`` runs here
through a two-line wrapper that keeps the loopback address as given: the node's servers then listen
on 127.0.0.1 only, and the second node joins as on a real cluster.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.helpers import tagged_pids

RAY_START = (
    "import sys\n"
    "from ray._private import services\n"
    "services.resolve_ip_for_localhost = lambda host: host  # keep 127.0.0.1 (see tests/ray_cluster.py)\n"
    "from ray.scripts.scripts import main\n"
    "sys.argv = ['ray', 'start', *sys.argv[1:]]\n"
    "main()\n"
)

ALIVE = (
    "import sys, time, ray\n"
    "from agents.tournament.raycluster import join\n"
    "want, end = int(sys.argv[2]), time.monotonic() + float(sys.argv[3])\n"
    "join(ray, sys.argv[1])  # as evaluate.py and train.py join (loopback kept)\n"
    "while (n := sum(1 for x in ray.nodes() if x['Alive'])) != want and time.monotonic() < end:\n"
    "    time.sleep(0.2)\n"
    "print(n)\n"
    "sys.exit(0 if n == want else 1)\n"
)
"""A driver that waits until the head counts ``want`` nodes alive (argv: address, want, seconds)."""


HANG_S = 600.0
"""Seconds after which a wait on the cluster is a hang: far above what a loaded machine takes (the
node counts, a kill), so it never paces a test, it only stops one that is stuck."""


def free_port() -> int:
    """Return a TCP port of 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_pids(name: str) -> list[int]:
    """Return the processes whose environment has ``ESCOBA_RAY_NODE=name`` (from /proc)."""
    return tagged_pids("ESCOBA_RAY_NODE", name)


def with_descendants(pids: list[int]) -> list[int]:
    """Return ``pids`` and every process below them (from /proc/*/stat: field 4 is the parent)."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    out, todo = list(pids), list(pids)
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p and c not in out]
        out += kids
        todo += kids
    return out


class RayCluster:
    """A Ray head and worker nodes on 127.0.0.1, each with one CPU and its own temp dir."""

    def __init__(self, root: Path):
        """Pick the ports and the folders (under ``root``); start nothing yet."""
        self.root = root
        self.token = uuid.uuid4().hex[:8]
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[str] = []
        self.dead: set[str] = set()
        """The nodes this cluster killed (they never count as live, whatever /proc still shows)."""
        # token authentication, with a token of its own: a ~/.ray/auth_token written by anything else
        # on this machine is never read, and nothing without this token can join or submit work
        self.env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex + uuid.uuid4().hex,
                    "RAY_USAGE_STATS_ENABLED": "0"}

    def driver_env(self) -> dict[str, str]:
        """Return the environment of a program that joins this cluster (``--ray-address``)."""
        env = {**os.environ, **self.env}
        for var in ("RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
            env.pop(var, None)  # what another test's Ray may have left: another cluster, no clusters
        return env

    def _start(self, name: str, args: list[str]) -> None:
        temp = self.temp_dir(name)
        self.nodes.append(name)
        env = {**self.driver_env(), "ESCOBA_RAY_NODE": f"{self.token}-{name}"}
        log = self.root / f"{name}.log"
        with open(log, "w") as f:
            rc = subprocess.run([sys.executable, "-c", RAY_START, *args, "--num-cpus", "1",
                                 "--node-ip-address", "127.0.0.1", "--temp-dir", str(temp),
                                 "--object-store-memory", str(100 * 2**20),
                                 "--dashboard-agent-listen-port", str(free_port()),
                                 "--disable-usage-stats"],
                                env=env, stdout=f, stderr=subprocess.STDOUT, timeout=HANG_S).returncode
        if rc != 0:
            raise RuntimeError(f"ray start {name} failed ({rc}): {log.read_text()[-2000:]}")

    def temp_dir(self, name: str) -> Path:
        """Return node ``name``'s --temp-dir (short: Ray's socket paths must stay under 108 characters)."""
        return Path(f"/tmp/ray-{self.token}-{name}")

    def start_head(self) -> None:
        """Start the head node; return None."""
        self._start("head", ["--head", "--port", str(self.port), "--include-dashboard", "false",
                             "--dashboard-port", str(free_port()),
                             "--ray-client-server-port", str(free_port())])

    def add_node(self, name: str) -> None:
        """Start a worker node joining the head; return None once it is up."""
        self._start(name, ["--address", self.address])

    def pids(self, name: str) -> list[int]:
        """Return the processes of node ``name``: those that carry its name, and their descendants (a
        process that retitles itself, as Ray's agents and workers do, may lose its environment's text)."""
        return with_descendants(node_pids(f"{self.token}-{name}"))

    def live_workers(self) -> list[str]:
        """Return the names of the worker nodes (not the head) started and not killed."""
        return [n for n in self.nodes if n != "head" and n not in self.dead]

    def settle(self, timeout: float = HANG_S) -> None:
        """Wait until the head counts alive exactly the nodes that have processes; return None.

        A killed node stays "alive" for the head until its health checks fail (seconds, longer on a
        loaded machine): work placed on it meanwhile dies at once. A test that needs the cluster's
        nodes as they are now (a fresh run after a kill) settles first.
        """
        want = 1 + len(self.live_workers())
        r = subprocess.run([sys.executable, "-c", ALIVE, self.address, str(want), str(timeout)],
                           env=self.driver_env(), capture_output=True, text=True, timeout=timeout + 60,
                           cwd=Path(__file__).resolve().parents[1])
        if r.returncode != 0:
            raise RuntimeError(f"the head did not count {want} nodes alive in {timeout:g} s: "
                               f"{(r.stdout + r.stderr)[-2000:]}")

    def kill(self, name: str, timeout: float = HANG_S) -> None:
        """Kill every process of node ``name`` (the node dies as a machine would) and return once none
        is left; RuntimeError if one outlives ``timeout`` seconds (on a loaded machine a killed process
        can take seconds to go: the wait is a hang detector, not an estimate)."""
        self.dead.add(name)
        end = time.monotonic() + timeout
        while pids := self.pids(name):  # again: one may have just started
            if time.monotonic() > end:
                raise RuntimeError(f"node {name}: processes {pids} still alive {timeout:g} s after SIGKILL")
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill every node of the cluster, the worker nodes first; return None."""
        for name in reversed(self.nodes):
            try:
                self.kill(name, timeout=60)
            except RuntimeError:
                pass  # stopping: the rest still goes
            shutil.rmtree(self.temp_dir(name), ignore_errors=True)
        self.nodes = []
