"""The rooms' connections: who a client is, how many sockets it holds, and a writer per connection.

- **Who.** A client is its address (``client_address``): the peer, or behind a proxy the operator
  trusts (``--trusted-proxy``) the last address of ``X-Forwarded-For``, the one that proxy wrote
  (what the client wrote before it is the client's own say, never trusted). Quotas count a client
  by ``client_key``: IPv4 addresses one by one, IPv6 addresses by their /64 network (one home or one
  host is given a whole /64), an IPv4 address mapped into IPv6 as the IPv4 address.
- **How many.** ``SocketCounts`` holds the sockets of each client: at most ``pending`` that have
  not said hello yet, and at most ``per_client`` in all, so that one client never holds more than
  that share of the server's ``max_connections``.
- **A writer per connection.** ``Outbox`` is a connection's bounded queue of messages and the one
  task that writes them: a room tells its pages of a change by putting a message in each outbox,
  never waiting for a peer. A page that does not read has its outbox fill up (``MAX_QUEUED``
  messages or ``MAX_QUEUED_BYTES``) and is closed with ``SLOW_CLOSE``; if even the close cannot be
  written within ``CLOSE_SECONDS`` its TCP connection is dropped (``ExposeAbort``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from .room_table import PENDING_PER_CLIENT

MAX_QUEUED = 64
"""Messages a connection's outbox holds before the connection is closed as too slow."""
MAX_QUEUED_BYTES = 1 << 20
"""Bytes a connection's outbox holds before the connection is closed as too slow."""
SLOW_CLOSE = 4008
"""The close code of a connection that did not read its messages (its outbox was full)."""
CLOSE_SECONDS = 1.0
"""How long a close may wait to be written before the connection is dropped."""
ABORT_KEY = "escoba.abort"
"""Where ``ExposeAbort`` puts a WebSocket's way to drop its TCP connection, in the ASGI scope."""


def client_address(peer: str | None, headers, trusted: list[str]) -> str:
    """Return the address a request comes from: the peer, or the address a trusted proxy forwarded.

    The proxy appends the address it saw to ``X-Forwarded-For``: the last entry is the only one
    that is not the client's own say.
    """
    peer = peer or ""
    if peer in trusted:
        forwarded = headers.get("x-forwarded-for", "").split(",")[-1].strip()
        with contextlib.suppress(ValueError):
            return str(ipaddress.ip_address(forwarded))
    return peer


def client_key(address: str) -> str:
    """Return the key a client's quotas are counted under: a short hash of its address, or of its
    IPv6 /64 network (an IPv4 address mapped into IPv6 counts as that IPv4 address)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        name = address
    else:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        name = str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else str(ip)
    return hashlib.sha256(("client " + name).encode("utf-8", "replace")).hexdigest()[:16]


class SocketCounts:
    """Each client's sockets: those waiting for their hello, and all of them."""

    def __init__(self, per_client: int, pending: int = PENDING_PER_CLIENT):
        self.per_client, self.pending = int(per_client), int(pending)
        self.all: Counter[str] = Counter()
        self.waiting: Counter[str] = Counter()

    def refusal(self, key: str) -> str | None:
        """Return why one more socket of client ``key`` is refused, or None (then count it as waiting)."""
        if self.waiting[key] >= self.pending:
            return (f"this address has {self.waiting[key]} connections that have not said hello, the most "
                    "one client may have")
        if self.all[key] >= self.per_client:
            return f"this address holds {self.all[key]} connections, the most one client may hold"
        self.all[key] += 1
        self.waiting[key] += 1
        return None

    def said_hello(self, key: str) -> None:
        """Count one socket of ``key`` as past its hello."""
        _down(self.waiting, key)

    def gone(self, key: str, waiting: bool) -> None:
        """Forget one socket of ``key`` (``waiting``: it never said hello)."""
        _down(self.all, key)
        if waiting:
            _down(self.waiting, key)


def _down(counter: Counter, key: str) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]


class ExposeAbort:
    """ASGI middleware: give each WebSocket's scope a way to drop its TCP connection at once.

    A peer that never reads leaves even the close frame unwritten (the server's send buffer is
    full); the rooms then drop the connection. The ASGI server's protocol object is reached through
    its ``send`` (uvicorn's has the transport); where there is none (a test client) nothing is added
    and the connection ends when its peer goes.
    """

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket":
            transport = getattr(getattr(send, "__self__", None), "transport", None)
            if transport is not None and callable(getattr(transport, "abort", None)):
                scope[ABORT_KEY] = transport.abort
        await self.app(scope, receive, send)


class Outbox:
    """One connection's queue of messages to send, and the task that sends them in order.

    ``put`` never waits: past ``MAX_QUEUED`` messages or ``MAX_QUEUED_BYTES`` the connection is closed
    with ``SLOW_CLOSE`` (``on_slow`` is told). ``finish(code)`` sends what is queued, then closes.
    """

    def __init__(self, ws: Any, on_slow: Callable[[], None] | None = None,
                 max_queued: int = MAX_QUEUED, max_bytes: int = MAX_QUEUED_BYTES):
        self.ws, self.on_slow = ws, on_slow
        self.max_queued, self.max_bytes = max_queued, max_bytes
        self.queue: deque[str] = deque()
        self.bytes = 0
        self.wake = asyncio.Event()
        self.closing: int | None = None
        self.dead = False
        self.task = asyncio.get_running_loop().create_task(self._write())

    def put(self, text: str) -> bool:
        """Queue ``text``; return False (and close the connection) if the peer is too slow to take it."""
        if self.dead or self.closing is not None:
            return False
        if len(self.queue) >= self.max_queued or self.bytes + len(text) > self.max_bytes:
            self.drop(SLOW_CLOSE)
            if self.on_slow is not None:
                self.on_slow()
            return False
        self.queue.append(text)
        self.bytes += len(text)
        self.wake.set()
        return True

    def finish(self, code: int) -> None:
        """Send what is queued, then close the connection with ``code``."""
        if not self.dead and self.closing is None:
            self.closing = code
            self.wake.set()

    def drop(self, code: int) -> None:
        """Close the connection now, dropping what is queued: the close is tried, then the TCP link."""
        if self.dead:
            return
        self.dead = True
        self.queue.clear()
        self.task.cancel()
        asyncio.get_running_loop().create_task(self._close(code))

    async def _close(self, code: int) -> None:
        try:
            await asyncio.wait_for(self.ws.close(code=code), CLOSE_SECONDS)
        except Exception:  # the close could not be written: drop the TCP connection
            abort = self.ws.scope.get(ABORT_KEY) if hasattr(self.ws, "scope") else None
            if abort is not None:
                abort()

    async def _write(self) -> None:
        try:
            while True:
                while not self.queue:
                    if self.closing is not None:
                        self.dead = True
                        await self._close(self.closing)
                        return
                    self.wake.clear()
                    await self.wake.wait()
                text = self.queue.popleft()
                self.bytes -= len(text)
                await self.ws.send_text(text)
        except asyncio.CancelledError:
            raise
        except Exception:  # the peer went: its handler sees the disconnect and leaves the room
            self.dead = True
            self.queue.clear()

    async def stop(self) -> None:
        """Stop the writer (the connection's handler is ending)."""
        self.dead = True
        self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task


__all__ = ["ABORT_KEY", "CLOSE_SECONDS", "MAX_QUEUED", "MAX_QUEUED_BYTES", "PENDING_PER_CLIENT",
           "SLOW_CLOSE", "ExposeAbort", "Outbox", "SocketCounts", "client_address", "client_key"]
