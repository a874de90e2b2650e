"""The app's exception handlers: what FastAPI itself refuses, answered and audited like a route.

A request FastAPI cannot read (a body that is not JSON, a missing body) or cannot route (404,
405) never reaches a route, so no route audits it: these handlers do, and answer in the
routes' shape, ``{"error": ...}``. A refusal a route already audited
(:func:`~dpwidgets.curator.routes.access.deny`) is answered without a second row. A 401 carries
``WWW-Authenticate: Bearer``.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .access import refuse, who_of

__all__ = ["HANDLERS", "http_error", "invalid_request"]


async def invalid_request(request: Request, exc: RequestValidationError):
    """400 naming where the request is malformed (FastAPI's validation)."""
    where = ", ".join(".".join(str(p) for p in e.get("loc", ())) for e in exc.errors())
    message = f"malformed request: {where or 'body'}"
    request.app.state.curator.audit.record(
        analyst=who_of(request), dataset=None, mechanism=None, params=None, epsilon=None,
        outcome="bad request", status=400,
        message=f"{request.method} {request.url.path[:200]}: {message}")
    return refuse(400, message)


async def http_error(request: Request, exc: StarletteHTTPException):
    """An HTTP error (FastAPI's HTTPException is a Starlette one), audited unless its route
    audited it."""
    detail = exc.detail
    if exc.status_code == 400 and detail == "There was an error parsing the body":
        detail = "request body: not valid JSON (or nested too deeply to parse)"
    if not getattr(exc, "audited", False):
        request.app.state.curator.audit.record(
            analyst=who_of(request), dataset=None, mechanism=None, params=None,
            epsilon=None, status=exc.status_code, outcome="bad request",
            message=f"{request.method} {request.url.path[:200]}: {detail}")
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
    return JSONResponse({"error": detail}, status_code=exc.status_code, headers=headers)


#: ``(exception class, handler)`` for ``app.add_exception_handler``.
HANDLERS = ((RequestValidationError, invalid_request), (StarletteHTTPException, http_error))
