"""Bounded input and who may talk to the arena: a JSON body reader with limits, a Host/Origin guard.

- ``read_json(request)`` refuses a body larger than ``max_bytes`` from its Content-Length before
  reading it, and while streaming it (a chunked body is counted as it arrives); JSON nested deeper
  than ``max_depth`` is a 400; lists longer than a caller's limit are refused by ``check_list``.
- ``HostOriginGuard`` (ASGI middleware) answers only requests whose Host is a loopback address
  (all of 127.0.0.0/8 and ::1, and ``localhost``) or a name the operator allowed, and refuses a
  state-changing request (POST, PUT, PATCH, DELETE) or WebSocket handshake whose Origin is not the
  server itself.

Every refusal is an ``ApiError``: a status and a short message that never echoes long input.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from agents.tournament.raycluster import (
    is_loopback,  # one definition of loopback (cli.py imports it from here)
)

MAX_BODY = 8 * 1024 * 1024
"""The largest request body (an uploaded replay); game requests use ``MAX_GAME_BODY``."""
MAX_GAME_BODY = 64 * 1024
"""The largest body of a new-game or move request."""
MAX_DEPTH = 32
"""The deepest JSON nesting a request may send (a replay record nests 5 deep)."""
MAX_MESSAGE = 300
"""Error messages are cut to this many characters."""
MAX_DIGITS = 100
"""A JSON integer longer than this is never converted (Python refuses 4,300 digits with a ValueError;
the arena's largest number, a seed, has 20): it is read as a ``LongNumber`` that every check refuses."""
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class ApiError(Exception):
    """A request the API refuses: ``status`` and a message for the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, short_message(message)


class LongNumber:
    """A JSON integer of more than ``MAX_DIGITS`` digits, kept by its length: any field check refuses it
    (it is no ``int``) with a message that names the field and says what was sent."""

    __slots__ = ("digits",)

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"a {self.digits}-digit number"


def read_int(text: str) -> int | LongNumber:
    """Return a JSON integer literal as an int, or a ``LongNumber`` if it is longer than ``MAX_DIGITS``."""
    digits = len(text) - text.startswith("-")
    return LongNumber(digits) if digits > MAX_DIGITS else int(text)


def short_message(message: str) -> str:
    """Return ``message`` on one line, cut to ``MAX_MESSAGE`` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def short_repr(value: Any, n: int = 60) -> str:
    """Return ``repr(value)`` cut to about ``n`` characters (for messages about bad input)."""
    r = repr(value) if not isinstance(value, (list, dict)) or len(value) <= 8 else \
        f"a {type(value).__name__} of {len(value)} items"
    return r if len(r) <= n else r[: n - 3] + "..."


def json_depth(value: Any, limit: int) -> int:
    """Return the nesting depth of a parsed JSON value, stopping once it exceeds ``limit``."""
    depth, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            depth = max(depth, d)
            if depth > limit:
                return depth
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return depth


async def read_json(request: Any, max_bytes: int = MAX_BODY, max_depth: int = MAX_DEPTH) -> Any:
    """Return the JSON body of a Starlette ``request``; ApiError (413, 415, 400) when it is refused.

    The content type must be application/json: a cross-site form or script then needs a CORS
    preflight, which this server never grants.
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        got = short_repr(kind) if kind else "no content type"
        raise ApiError(415, f"send the request body as application/json, not {got}")
    too_big = ApiError(413, f"request body larger than {max_bytes:,} bytes")
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or len(length) > 18 or int(length) > max_bytes):
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise too_big
        chunks.append(chunk)
    body = b"".join(chunks)
    try:
        value = json.loads(body or b"{}", parse_int=read_int)
    except RecursionError:
        raise ApiError(400, f"the request body is JSON nested deeper than {max_depth} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the request body is not JSON ({short_message(str(exc))[:80]})") from None
    if json_depth(value, max_depth) > max_depth:
        raise ApiError(400, f"the request body is JSON nested deeper than {max_depth} levels")
    return value


def check_list(value: Any, what: str, limit: int) -> list:
    """Return ``value`` if it is a list of at most ``limit`` items; ApiError 400 otherwise."""
    if not isinstance(value, list):
        raise ApiError(400, f"{what} must be a list, got {short_repr(value)}")
    if len(value) > limit:
        raise ApiError(400, f"{what} has {len(value)} items; at most {limit}")
    return value


def split_host(host: str) -> str:
    """Return the name or address of a Host header or URL netloc, without port or brackets, lowercase."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")




class HostOriginGuard:
    """ASGI middleware: only allowed Host names, and no state-changing request from another origin.

    ``allowed`` are extra host names (loopback is always allowed); ``"*"`` in it turns the Host
    check off (a reverse proxy that checks names itself). A browser's POST carries ``Origin``; it
    must name an allowed host with the port of the request's Host. A request without Origin (curl, a
    script) is not a browser's cross-site request and passes.
    """

    def __init__(self, app: Any, allowed: Iterable[str] = ()):
        self.app = app
        self.allowed = {split_host(h) for h in allowed}
        self.any_host = "*" in self.allowed

    def host_allowed(self, host: str) -> bool:
        """True if a request with this Host header (name[:port]) is answered."""
        name = split_host(host)
        return bool(name) and (self.any_host or is_loopback(name) or name in self.allowed)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Refuse a request with a bad Host or a foreign Origin (JSON 400/403); pass the rest on."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        refusal = None
        if not self.host_allowed(host):
            refusal = (400, "this server does not answer for the host name in the request "
                            "(the operator may allow it with --allowed-host)")
        elif ((scope["type"] == "websocket" or scope.get("method", "GET") in UNSAFE_METHODS)
              and "origin" in headers):
            # A WebSocket is never subject to CORS: a foreign page's handshake is refused here.
            origin = urlsplit(headers["origin"])
            same = origin.netloc.lower() == host.strip().lower()
            named = not self.any_host and split_host(origin.netloc) in self.allowed
            if origin.scheme not in ("http", "https") or not (same or named):
                refusal = (403, "cross-origin request refused: send it from the arena's own page")
        if refusal is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4000 + refusal[0]})
            return
        body = json.dumps({"error": refusal[1]}).encode()
        await send({"type": "http.response.start", "status": refusal[0],
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
