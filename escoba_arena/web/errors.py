"""Every error of the web API is an error page: a short JSON answer with a status that fits.

``json_errors`` wraps an endpoint: a refusal (``ApiError``) keeps its status; a missing file is a
404, a refused one a 403, a replay the engine does not reproduce a 422, bad input a 400; these are
the client's errors and log nothing. Anything else is the server's bug: a 500 whose message names
the exception, with one traceback in the log, and the server goes on. ``http_error`` answers the
router's own refusals (no route, a method the route does not take) the same way. The security
headers are added to all of them by the app's outermost middleware.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agents.tournament.replay import ReplayError

from .guard import ApiError, short_message

LOG = logging.getLogger("escoba_arena.web")


def error_answer(status: int, message: str) -> JSONResponse:
    """Return the JSON error answer ``{"error": message}`` (one line, cut short) with ``status``."""
    return JSONResponse({"error": short_message(message)}, status_code=status)


def json_errors(fn: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """Return ``fn`` answering every exception it raises as a JSON error (see the module docstring)."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request)
        except ApiError as exc:
            return error_answer(exc.status, exc.message)
        except FileNotFoundError as exc:
            return error_answer(404, str(exc))
        except PermissionError as exc:
            return error_answer(403, str(exc))
        except ReplayError as exc:
            return error_answer(422, str(exc))
        except ValueError as exc:
            return error_answer(400, str(exc))
        except Exception as exc:  # a bug: logged, answered as JSON, the server goes on
            LOG.exception("error in %s", request.url.path)
            return error_answer(500, f"internal error: {type(exc).__name__}: {exc}")

    endpoint.__name__ = getattr(fn, "__name__", "endpoint")
    endpoint.__doc__ = fn.__doc__
    return endpoint


async def http_error(request: Request, exc: Exception) -> Response:
    """Answer an ``HTTPException`` of the router or the static files (404, 405) as a JSON error."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    headers = getattr(exc, "headers", None) or {}
    answer = error_answer(status, str(detail))
    answer.headers.update(headers)
    return answer


__all__ = ["error_answer", "http_error", "json_errors"]
