"""The curator's outermost layer: a pure ASGI middleware (:class:`Guard`) around its whole app.

It is not a route: it sees every request before FastAPI does, which is the only place where a
body can be bounded on the bytes actually received (a chunked body has no ``Content-Length``)
and where an exception no handler answered can still become an audited 500 with a fixed
message. The routes themselves are in :mod:`dpwidgets.curator.routes`.
"""

from __future__ import annotations

import json
import time

from .routes.access import analyst_named

__all__ = ["INTERNAL_ERROR", "MAX_BODY", "Guard"]

MAX_BODY = 1 << 20  # a release request is parameters, never data
INTERNAL_ERROR = ("internal error: the curator could not answer this request (recorded in the "
                  "audit log). Nothing was released.")


def _too_large(limit: int):
    """The body grew past ``limit`` bytes while being received: an HTTP 413 (Starlette's
    HTTPException, which FastAPI's body reader lets through unchanged)."""
    from starlette.exceptions import HTTPException

    class TooLarge(HTTPException):
        pass

    return TooLarge(413, f"request body: at most {limit} bytes")


class Guard:
    """A pure ASGI middleware around the whole app.

    * It counts the body's bytes as they are received, whatever the headers say (a chunked
      body has no ``Content-Length``), and answers 413 once past ``limit``; a body declaring a
      larger or malformed ``Content-Length`` is refused before a byte of it is read.
    * It notes when the request arrived (``scope["state"]["arrived"]``, for ``respond_after``).
    * Any exception no handler answered becomes a 500 with a fixed message
      (:data:`INTERNAL_ERROR`), recorded in the audit log with the exception's type (never its
      text: it may hold parameters or data).
    """

    def __init__(self, app, curator, limit: int = MAX_BODY):
        self.app, self.curator, self.limit = app, curator, limit

    def _audit(self, scope, status: int, outcome: str, message: str) -> None:
        auth = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
        self.curator.audit.record(
            analyst=analyst_named(self.curator, auth), dataset=None, mechanism=None,
            params=None, epsilon=None, outcome=outcome, status=status,
            message=f"{scope.get('method', '')} {scope.get('path', '')[:200]}: {message}")

    @staticmethod
    async def _send_json(send, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(data)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": data})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope.setdefault("state", {})["arrived"] = time.monotonic()
        too_large = f"request body: at most {self.limit} bytes"
        size = dict(scope.get("headers") or ()).get(b"content-length")
        if size is not None and (not size.isdigit() or int(size) > self.limit):
            status = 413 if size.isdigit() else 400
            self._audit(scope, status, "bad request",
                        too_large if status == 413 else "malformed Content-Length")
            return await self._send_json(
                send, status, {"error": too_large if status == 413 else
                               "malformed Content-Length header"})
        received = 0
        started = False

        async def bounded_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _too_large(self.limit)
            return message

        async def watched_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, watched_send)
        except Exception as exc:
            if getattr(exc, "status_code", None) == 413:  # read outside a route's handler
                self._audit(scope, 413, "bad request", too_large)
                if not started:
                    await self._send_json(send, 413, {"error": too_large})
                return
            self._audit(scope, 500, "error", f"internal error ({type(exc).__name__})")
            if started:
                raise
            await self._send_json(send, 500, {"error": INTERNAL_ERROR})
