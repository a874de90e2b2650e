"""Who is asking and what they may touch: the first checks of every route, and the refusals.

Every router reaches the curator through :data:`Served` (``request.app.state.curator``, a
FastAPI dependency that never refuses: the routes check the token themselves, after FastAPI has
read and validated the request, so a malformed request is a 400 whoever sends it). Then, in
each route, :func:`analyst` answers who (401 without a valid bearer token) and
:func:`held_dataset` whether the dataset is theirs (403). A refusal is written to the audit log
before it is raised (:func:`deny`): the app's handler for HTTP errors
(:mod:`dpwidgets.curator.routes.errors`) does not record it twice.
"""

from __future__ import annotations

from typing import Annotated, Any, NoReturn

from fastapi import Depends, Header, HTTPException, Request
from fastapi.responses import JSONResponse

from ...session import Session
from ..door import Curator

__all__ = ["Auth", "Served", "analyst", "analyst_named", "curator_of", "deny", "held_dataset",
           "refuse", "who_of"]

#: The ``Authorization`` header (``Bearer <token>``), as a route's parameter.
Auth = Annotated[str | None, Header()]


async def curator_of(request: Request) -> Curator:
    """The curator the app serves (``app.state.curator``, set by ``create_app``)."""
    return request.app.state.curator


#: The curator, as a route's parameter (``curator: Served``).
Served = Annotated[Curator, Depends(curator_of)]


def refuse(status: int, message: str, **extra) -> JSONResponse:
    """An error answer: ``{"error": message, **extra}`` with this status."""
    return JSONResponse({"error": message, **extra}, status_code=status)


def _token_of(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None


def analyst_named(curator: Curator, authorization: str | None) -> str | None:
    """The analyst a valid ``Authorization`` header names, or ``None`` (for audit rows)."""
    found = curator.analysts.who(_token_of(authorization))
    return None if found is None else found[0]


def who_of(request: Request) -> str | None:
    """The analyst a request's valid bearer token names, or ``None``."""
    return analyst_named(request.app.state.curator, request.headers.get("authorization"))


def deny(curator: Curator, status: int, message: str, *, who=None, dataset=None,
         mechanism=None, params=None, outcome: str | None = None) -> NoReturn:
    """Audit a refusal, then raise it (the HTTPException handler does not audit again)."""
    curator.audit.record(analyst=who, dataset=dataset, mechanism=mechanism, params=params,
                         epsilon=None, status=status, message=message,
                         outcome=outcome or {401: "unauthorised", 403: "forbidden",
                                             404: "not found"}.get(status, "bad request"))
    exc = HTTPException(status, message)
    exc.audited = True
    raise exc


def analyst(curator: Curator, authorization: str | None) -> tuple[str, dict, Session]:
    """``(name, record, door)`` of the analyst the bearer token names; 401 (audited) for a
    missing, unknown, revoked or expired token."""
    found = curator.analysts.lookup(_token_of(authorization))
    if found is None:
        deny(curator, 401, "missing or unknown bearer token")
    name, record, refusal = found
    if refusal is not None:
        deny(curator, 401, f"this bearer token was {refusal}; ask the data owner for a new one",
             who=name, outcome=refusal)
    return name, record, curator.door(name, record)


def held_dataset(curator: Curator, door: Session, who: str, dataset: Any) -> str:
    """``dataset`` if the analyst's door holds it (they have a cap on it); else 403 (audited,
    naming the datasets they do hold)."""
    if not isinstance(dataset, str) or dataset not in door.datasets:
        shown = str(dataset)[:200]
        deny(curator, 403, f"dataset {shown!r} is not one of yours; yours: {door.datasets}",
             who=who, dataset=shown)
    return dataset
