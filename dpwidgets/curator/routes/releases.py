"""Releases: what one would cost, whether it is a free replay, the release, and its download.

* ``POST /cost`` and ``POST /cached`` answer from the request and the ledger alone (the data is
  not read, nothing is charged).
* ``POST /releases`` runs one: the body is checked
  (:func:`~dpwidgets.curator.routes.checks.request_of`) before the door charges the analyst's
  cap and the dataset's, then reads the data. ``Idempotency-Key`` makes a retry free; while
  another attempt with the key runs, the answer is 503 with ``Retry-After``. A dataset with
  ``respond_after`` answers on its time grid (:func:`pad`), refusals and failures too.
* ``GET /releases/{budget}/{key}`` downloads a stored release of a budget the analyst holds.

A refused or failed release answers with its kind (``BudgetExceededError`` names what is left),
and every answer, 200 or not, is written to the audit log.
"""

from __future__ import annotations

import base64
import math
import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from ...catalog import guarantee as guarantee_text
from ...engine.errors import PrivacyPolicyError, ReleaseFailed, ReleaseRefused
from ...export import export_bytes, sidecar
from ...mechanism import MECHANISMS
from ...persistence import BudgetExceededError
from ...persistence.store import encode_output
from ..door import Curator, ReleaseInProgress
from .access import Auth, Served, analyst, deny, refuse
from .checks import asked, request_of, run_and_label

__all__ = ["answer", "guarantee_of", "pad", "router"]

router = APIRouter()

IdemKey = Annotated[str | None, Header()]
JSONBody = Annotated[Any, Body()]

_STATUS = {409: "over budget", 403: "forbidden", 400: "bad request", 422: "failed"}


def answer(curator: Curator, who, body, exc: Exception, key=None) -> JSONResponse:
    """A refused or failed request's answer, audited: 409 over budget, 403 a mechanism the
    owner forbids, 400 a bad request, 422 a failure on the data."""
    name, mech, params = asked(body)
    status = (409 if isinstance(exc, BudgetExceededError) else
              403 if isinstance(exc, PrivacyPolicyError) else
              400 if isinstance(exc, ReleaseRefused | HTTPException) else 422)
    curator.audit.record(analyst=who, dataset=name, mechanism=mech, params=params,
                         epsilon=None, outcome=_STATUS[status], status=status, message=str(exc),
                         key=key)
    extra = ({"budget": exc.dataset, "requested": exc.requested, "remaining": exc.remaining,
              "total": exc.total, "label": exc.label}
             if isinstance(exc, BudgetExceededError) else {})
    return refuse(status, str(exc), kind=type(exc).__name__, **extra)


@router.post("/cost")
def cost(body: JSONBody, curator: Served, authorization: Auth = None):
    # What the release would charge (nothing is read or charged). No docstring: it would
    # become the route's description in the OpenAPI document.
    who, _, door = analyst(curator, authorization)
    try:
        name, mech, params = request_of(curator, body, who, door)
        return {"epsilon": door.cost(name, mech, **params)}
    except ReleaseRefused as exc:
        return answer(curator, who, body, exc)


@router.post("/cached")
def cached(body: JSONBody, curator: Served, authorization: Auth = None):
    # Whether the release would be a free replay (nothing is read or charged).
    who, _, door = analyst(curator, authorization)
    try:
        name, mech, params = request_of(curator, body, who, door)
        run, _ = run_and_label(body)
        return {"cached": door.is_cached(name, mech, run=run, **params)}
    except ReleaseRefused as exc:
        return answer(curator, who, body, exc)


def pad(curator: Curator, request: Request, name: str | None) -> None:
    """Hold a release's answer until the next multiple of the dataset's ``respond_after``
    since the request arrived (timing: see :mod:`dpwidgets.curator.app`)."""
    ds = curator.config.datasets.get((name or "").partition("/")[0])
    quantum = getattr(ds, "respond_after", None)
    if not quantum:
        return
    arrived = request.scope.get("state", {}).get("arrived", time.monotonic())
    elapsed = time.monotonic() - arrived
    time.sleep(max(1, math.ceil(elapsed / quantum)) * quantum - elapsed)


def _released(curator: Curator, who: str, name: str, mech: str, r, key) -> dict:
    """The audited answer to a release (charged) or a replay (free)."""
    curator.audit.record(analyst=who, dataset=name, mechanism=mech, params=r.params,
                         epsilon=r.epsilon, outcome="released" if r.charged else "replayed",
                         status=200, key=key)
    skeleton, blob = encode_output(r.output)
    return {"dataset": name, "budget": r.dataset, "mechanism": r.mechanism,
            "label": r.label, "params": sidecar(r)["parameters"], "epsilon": r.epsilon,
            "charged": r.charged, "time": r.time, "key": r.key, "guarantee": r.guarantee,
            "output": skeleton, "blob": base64.b64encode(blob).decode()}


@router.post("/releases")
def release(request: Request, body: JSONBody, curator: Served, authorization: Auth = None,
            idempotency_key: IdemKey = None):
    # The DP release, charged before the data is read (a retry with the same
    # Idempotency-Key is free).
    who, _, door = analyst(curator, authorization)
    name = None
    if idempotency_key is not None and not (0 < len(idempotency_key) <= 200
                                            and idempotency_key.isprintable()):
        deny(curator, 400, "Idempotency-Key: 1 to 200 printable characters", who=who,
             dataset=asked(body)[0], mechanism=asked(body)[1], params=asked(body)[2])
    try:
        try:
            name, mech, params = request_of(curator, body, who, door)
            run, label = run_and_label(body)
            r = door.release(name, mech, run=run, label=label,
                             idempotency_key=idempotency_key, **params)
        except (ReleaseRefused, ReleaseFailed) as exc:
            return answer(curator, who, body, exc, idempotency_key)
        except ReleaseInProgress as exc:  # another attempt with this key runs: retry later
            curator.audit.record(analyst=who, dataset=name, mechanism=mech, params=params,
                                 epsilon=None, outcome="in progress", status=503,
                                 message=str(exc), key=idempotency_key)
            return JSONResponse({"error": str(exc)}, status_code=503,
                                headers={"Retry-After": "1"})
    finally:
        # Every answer about a dataset with respond_after leaves on the quantum grid,
        # refusals and failures too (a failure ran on the data).
        pad(curator, request, name)
    return _released(curator, who, name, mech, r, idempotency_key)


def guarantee_of(door, budget: str, row: dict) -> str:
    """The guarantee of a stored release in words (the store keeps the output, not the text):
    the one its release stated, rebuilt from its mechanism, parameters and ε and a view of its
    budget (every view of one table shares the privacy unit and its bound)."""
    mech = MECHANISMS.get(row.get("mechanism"))
    views = [n for n in door.datasets if door.ledger(n).shared.dataset == budget]
    if mech is None or not views:
        return ""
    try:
        return guarantee_text(door.describe(views[0]), mech, row["params"], row["epsilon"],
                              sealed=True)
    except Exception:  # noqa: BLE001 -- a stored row of an older version: no text, not a 500
        return ""


@router.get("/releases/{budget}/{key}")
def download(budget: str, key: str, curator: Served, format: str = "json",
             file: str | None = None, authorization: Auth = None):
    """A stored release: its sidecar (``json``), its principal table or the table
    ``file`` the sidecar lists (``csv``, ``parquet``), or all of it (``zip``)."""
    who, _, door = analyst(curator, authorization)
    if not any(door.ledger(n).shared.dataset == budget for n in door.datasets):
        deny(curator, 403, "not one of your datasets", who=who, dataset=budget[:200])
    row = curator.store.get(budget, key)
    if row is None:
        deny(curator, 404, "no such release", who=who, dataset=budget[:200])
    row = {**row, "dataset": budget, "key": key,
           "guarantee": guarantee_of(door, budget, row)}
    try:
        content, media = export_bytes(row, format=format, file=file, stem=key[:16])
    except ValueError as exc:  # the format or the file name: public, the analyst's own
        deny(curator, 400, f"{exc}; format: 'json' (the sidecar), 'csv', 'parquet' or 'zip' "
                           "(every file and the sidecar)", who=who, dataset=budget[:200])
    return Response(content, media_type=media)
