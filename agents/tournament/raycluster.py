"""How both Ray backends (``evaluate.py`` and ``train.py --backend ray``) join a cluster or start Ray.

- ``join(ray, address)``: connect this process, as the driver, to the running cluster at ``address``
  (``HOST:PORT`` of its head, or ``auto``). A ``HOST:PORT`` that does not accept a TCP connection
  within ``CONNECT_TIMEOUT_S`` ends with one ``ValueError`` line; Ray itself would retry for many
  minutes. A loopback address (a cluster bound to 127.0.0.1 on this machine) is used as given: on
  Linux Ray would turn it into the machine's network address, where such a cluster does not listen,
  and retry that for ever.
- ``loopback_only()``: a Ray instance started inside binds every port to 127.0.0.1 only.
- ``leave(ray)``: disconnect this driver without a word from Ray once the program has said how the run
  ended (a fault is one line: nothing of Ray's may follow it on stderr).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CONNECT_TIMEOUT_S = 10.0
"""Seconds a cluster's head gets to accept the driver's first TCP connection."""

_RAY_CLUSTER_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextmanager
def loopback_only() -> Iterator[None]:
    """Make Ray keep 127.0.0.1 as this process's node address inside the block (nothing reachable from
    outside for an instance started inside).

    On Linux Ray turns ``127.0.0.1`` into the machine's address and a node it starts listens on every
    interface; with clusters switched off (what Ray does on macOS and Windows, read from this
    variable by its processes and from ``ray_constants`` by ``ray.init``) the node is 127.0.0.1 and
    so is every server's address.
    """
    from ray._private import ray_constants  # the [ray] extra

    old_env, old_flag = os.environ.get(_RAY_CLUSTER_VAR), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[_RAY_CLUSTER_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_flag
        if old_env is None:
            os.environ.pop(_RAY_CLUSTER_VAR, None)
        else:
            os.environ[_RAY_CLUSTER_VAR] = old_env


def head_address(address: str) -> tuple[str, int] | None:
    """Return (host, port) of a ``HOST:PORT`` address, None for ``auto`` and ``ray://`` addresses;
    raise ValueError for anything else."""
    if address == "auto" or address.startswith("ray://"):
        return None
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--ray-address {address!r}: expected HOST:PORT of the cluster's head (ray start "
                         "--head prints it), or auto")
    return host, int(port)


def is_loopback(host: str) -> bool:
    """Return True if ``host`` names this machine's loopback interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_reachable(address: str) -> None:
    """Raise ValueError (one line) unless ``address`` is ``auto``, a ``ray://`` address, or the
    ``HOST:PORT`` of something that accepts a TCP connection within ``CONNECT_TIMEOUT_S``; return None.

    The programs call it before they write anything, so a mistyped address changes nothing."""
    hp = head_address(address)
    if hp is None:
        return
    try:
        socket.create_connection(hp, timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ValueError(f"cannot reach the Ray cluster at {address} ({why}): is its head running "
                         "(ray start --head) and the address right?") from None


def join(ray: Any, address: str, runtime_env: dict | None = None) -> None:
    """Connect this process to the Ray cluster at ``address`` as its driver (``runtime_env``: the
    job's, e.g. the ``py_modules`` of outside agents); return None.

    Raise ValueError (one line) if the head does not accept a connection within ``CONNECT_TIMEOUT_S``.
    """
    check_reachable(address)
    hp = head_address(address)
    options = {"address": address, "log_to_driver": False, "logging_level": "error",
               **({"runtime_env": runtime_env} if runtime_env else {})}
    if hp is not None and is_loopback(hp[0]):
        with loopback_only():
            ray.init(**options)
    else:
        ray.init(**options)


def leave(ray: Any) -> None:
    """Disconnect this process from Ray (``ray.shutdown``; a joined cluster keeps running), with Ray's
    own error messages silenced first; return None.

    When a worker or a node dies, the driver reports it in one line and stops, abandoning the other
    workers' tasks; while Ray disconnects (or the interpreter exits) it would log, on stderr, an
    "Unhandled error" for each abandoned task that failed, and its error-listener thread the connection
    it loses: timing-dependent lines after the program's own, more of them on a loaded machine.
    """
    os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"  # read by Ray each time it would report one
    logging.getLogger("ray").setLevel(logging.CRITICAL)
    ray.shutdown()
