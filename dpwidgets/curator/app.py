"""The curator over HTTP: a FastAPI app serving a :class:`~dpwidgets.curator.door.Curator`.

Every answer is decided in this order: who (``Authorization: Bearer <token>``; 401), what they
may touch (a dataset they have a cap on, a mechanism the owner allows; 403), whether the request
is well formed (400, naming the argument; facts about the data, domains and the unit cannot be
passed), the cost and the budget (409, naming what is left) -- all before the data is read and
with nothing charged -- then the release. Every release, replay and refusal is written to the
audit log: a bad request gets a 4xx naming the problem, and an unexpected failure a 500 with a
fixed message (never the exception's text), both audited.

Requests are bounded on the bytes actually received (:class:`~dpwidgets.curator.guard.Guard`, a
pure ASGI middleware around the app: a chunked body without ``Content-Length`` is counted as it
arrives and cut off past :data:`~dpwidgets.curator.guard.MAX_BODY`), labels are short printable
strings, and the parameters cannot name the request's own fields
(:mod:`dpwidgets.curator.routes.checks`).

Timing: a release's running time depends on the data. A dataset with ``respond_after`` in the
configuration answers its releases no earlier than that many seconds after the request arrived,
padded up to the next multiple if the run takes longer (see the curator's documentation).

Serve it on the loopback and put TLS in front of it with a reverse proxy (see the README).

This module composes the app: the curator in ``app.state``, the guard, the routers of
:mod:`dpwidgets.curator.routes` (one per concern: health, datasets, budget, releases, audit)
under ``/v1``, and the exception handlers of :mod:`dpwidgets.curator.routes.errors`.
"""


from __future__ import annotations

from fastapi import FastAPI

from .door import Curator
from .guard import MAX_BODY, Guard
from .routes import audit, budget, datasets, health, releases
from .routes.errors import HANDLERS

__all__ = ["create_app"]

API = "/v1"
#: The routers, in the order their routes are listed in the OpenAPI document.
ROUTERS = (health.router, datasets.router, budget.router, releases.router, audit.router)

DESCRIPTION = """\
A differential-privacy curator: analysts send requests for DP releases on datasets the data
owner declared; the data never leaves the service.

**Exposed:** the public description of each dataset you hold a cap on (schema, domains, the
privacy unit, declared facts; never its row count unless the owner declared it), a stand-in
generated from the public schema, what a release would cost, your budget and spends, your DP
releases (each charged to your cap and the dataset's before the data is read, replayed for
free with the same parameters) and their downloads, and, to the data owner only, the audit log.

**Not exposed:** records, true counts or any statistic computed without noise; the ledger or
the audit log to analysts; anything about a refused request's data (a refusal reads nothing and
charges nothing). Every release and every refused or failed request is written to the audit
log.

Authenticate with `Authorization: Bearer <token>` (`dpwidgets curator add-analyst`). Bodies are
at most 1 MiB. Serve over TLS only (a reverse proxy in front); a release's response time can
reveal the data unless the owner sets `respond_after` on the dataset.
"""


def create_app(curator: Curator) -> FastAPI:
    """The FastAPI application (run it with uvicorn; ``dpwidgets curator serve`` does)."""
    app = FastAPI(title="dpwidgets curator", version="1", docs_url=f"{API}/docs",
                  openapi_url=f"{API}/openapi.json", description=DESCRIPTION)
    app.state.curator = curator  # what every route reaches (routes.access.Served)
    app.add_middleware(Guard, curator=curator, limit=MAX_BODY)
    for router in ROUTERS:
        app.include_router(router, prefix=API)
    for exception, handler in HANDLERS:
        app.add_exception_handler(exception, handler)
    return app
