"""The curator over HTTP: a FastAPI app serving a :class:`~dpwidgets.curator.door.Curator`.

Every answer is decided in this order: who (``Authorization: Bearer <token>``; 401), what they
may touch (a dataset they have a cap on, a mechanism the owner allows; 403), whether the request
is well formed (400, naming the argument; facts about the data, domains and the unit cannot be
passed), the cost and the budget (409, naming what is left) -- all before the data is read and
with nothing charged -- then the release. Every request is written to the audit log.

Serve it on the loopback and put TLS in front of it with a reverse proxy (see the README).
"""


import base64
import io
import math
from typing import Annotated, Any

import numpy as np

from ..engine.budget import BudgetExceededError
from ..engine.errors import (
    ParameterError,
    PrivacyPolicyError,
    ReleaseFailed,
    ReleaseRefused,
)
from ..export import release_table, sidecar
from ..mechanism import MECHANISMS
from ..store import encode_output
from .door import Curator, ReleaseInProgress

__all__ = ["create_app"]

API = "/v1"
MAX_BODY = 1 << 20  # a release request is parameters, never data
_MAX_DEPTH = 8


def _check_params(value: Any, where: str, depth: int = 0) -> None:
    """Refuse what JSON lets through but no parameter needs: NaN and infinities, giant lists,
    deep nesting (400, naming the argument)."""
    if depth > _MAX_DEPTH:
        raise ParameterError(f"{where}: nested too deeply")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParameterError(f"{where}: must be a finite number, got {value!r}")
    if isinstance(value, list):
        if len(value) > 100_000:
            raise ParameterError(f"{where}: a list of at most 100,000 values")
        for i, v in enumerate(value):
            _check_params(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_params(v, f"{where}.{k}", depth + 1)


def create_app(curator: Curator):
    """The FastAPI application (run it with uvicorn; ``dpwidgets curator serve`` does)."""
    from fastapi import Body, FastAPI, Header, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, PlainTextResponse, Response

    Auth = Annotated[str | None, Header()]
    IdemKey = Annotated[str | None, Header()]
    app = FastAPI(title="dpwidgets curator", version="1", docs_url=f"{API}/docs",
                  openapi_url=f"{API}/openapi.json")
    app.state.curator = curator

    def refuse(status: int, message: str, **extra) -> JSONResponse:
        return JSONResponse({"error": message, **extra}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        where = ", ".join(".".join(str(p) for p in e.get("loc", ())) for e in exc.errors())
        return refuse(400, f"malformed request: {where or 'body'}")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=headers)

    @app.middleware("http")
    async def _limit(request: Request, call_next):
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > MAX_BODY):
            return refuse(400, f"request body: at most {MAX_BODY} bytes")
        return await call_next(request)

    def analyst(authorization: str | None):
        token = None
        if authorization and authorization.lower().startswith("bearer "):
            token = authorization[7:].strip()
        found = curator.analysts.who(token)
        if found is None:
            curator.audit.record(analyst=None, dataset=None, mechanism=None, params=None,
                                 epsilon=None, outcome="unauthorised", status=401)
            raise HTTPException(401, "missing or unknown bearer token")
        name, record = found
        return name, record, curator.door(name, record)

    def view(door, name: str, who: str, dataset: Any):
        if not isinstance(dataset, str) or dataset not in door.datasets:
            curator.audit.record(analyst=who, dataset=str(dataset)[:200], mechanism=None,
                                 params=None, epsilon=None, outcome="forbidden", status=403)
            raise HTTPException(403, f"dataset {str(dataset)[:200]!r} is not one of yours; "
                                     f"yours: {door.datasets}")
        return dataset

    def describe(door, name: str) -> dict:
        held = door._dataset(name)
        ds, _ = curator.config.view(name)
        return {"name": name, "shape": list(held.shape),
                "columns": list(held.columns) if held.columns else None,
                "dtypes": list(held.dtypes) if held.dtypes else None,
                "unit": held.unit, "unit_rows": held.unit_rows, "facts": held.facts,
                "domains": held.domains,
                "ranges": None if held.ranges is None else [
                    None if r is None else list(r) for r in held.ranges],
                "description": held.description, "budget": ds.name,
                "mechanisms": sorted(ds.mechanisms)}

    @app.get(f"{API}/health")
    def health():
        return {"status": "ok"}

    @app.get(f"{API}/datasets")
    def datasets(authorization: Auth = None):
        who, _, door = analyst(authorization)
        return {"analyst": who, "datasets": [describe(door, n) for n in door.datasets]}

    @app.get(f"{API}/datasets/{{dataset:path}}/stand_in")
    def stand_in(dataset: str, authorization: Auth = None):
        who, _, door = analyst(authorization)
        name = view(door, dataset, who, dataset)
        buf = io.BytesIO()
        np.save(buf, door.stand_in(name), allow_pickle=False)
        return Response(buf.getvalue(), media_type="application/octet-stream")

    @app.get(f"{API}/budget")
    def budget(authorization: Auth = None):
        who, _, door = analyst(authorization)
        out = {}
        for name in door.datasets:
            ledger = door.ledger(name)
            if ledger.shared.dataset in out:
                continue
            summary = ledger.summary(recent=50)
            summary["recent"] = [s.__dict__ | {"parts": list(s.parts) if s.parts else None}
                                 for s in summary["recent"]]
            out[ledger.shared.dataset] = summary
        return {"analyst": who, "budgets": out}

    def request_of(body: dict, who: str, door) -> tuple[str, str, dict]:
        if not isinstance(body, dict):
            raise ParameterError("the body must be a JSON object")
        unknown = set(body) - {"dataset", "mechanism", "params", "run", "label"}
        if unknown:
            raise ParameterError(f"unknown field(s) {sorted(unknown)}")
        name = view(door, body.get("dataset"), who, body.get("dataset"))
        mech = body.get("mechanism")
        ds, _ = curator.config.view(name)
        if not isinstance(mech, str) or mech not in MECHANISMS:
            raise ParameterError(f"mechanism must be one of {sorted(ds.mechanisms)}")
        if mech not in ds.mechanisms:
            raise PrivacyPolicyError(f"the data owner does not allow {mech!r} on {ds.name!r}; "
                                     f"allowed: {sorted(ds.mechanisms)}. Nothing was charged.")
        params = body.get("params", {})
        if not isinstance(params, dict):
            raise ParameterError("params must be a JSON object of the mechanism's parameters")
        _check_params(params, "params")
        declared = set(MECHANISMS[mech].facts) | {"unit", "unit_rows", "domains"}
        claimed = sorted(declared & set(params))
        if claimed:
            raise ParameterError(
                f"{claimed} are facts about the data, declared by its owner; a request cannot "
                f"pass them (the curator fills them in). Nothing was charged.")
        return name, mech, params

    def answer(who, name, mech, params, exc: Exception, key=None):
        status = (409 if isinstance(exc, BudgetExceededError) else
                  403 if isinstance(exc, PrivacyPolicyError) else
                  400 if isinstance(exc, ReleaseRefused | HTTPException) else 422)
        outcome = {409: "over budget", 403: "forbidden", 400: "bad request",
                   422: "failed"}[status]
        curator.audit.record(analyst=who, dataset=name, mechanism=mech, params=params,
                             epsilon=None, outcome=outcome, status=status, message=str(exc),
                             key=key)
        extra = ({"budget": exc.dataset, "requested": exc.requested, "remaining": exc.remaining,
                  "total": exc.total, "label": exc.label}
                 if isinstance(exc, BudgetExceededError) else {})
        return refuse(status, str(exc), kind=type(exc).__name__, **extra)

    @app.post(f"{API}/cost")
    def cost(body: Annotated[Any, Body()], authorization: Auth = None):
        who, _, door = analyst(authorization)
        try:
            name, mech, params = request_of(body, who, door)
            return {"epsilon": door.cost(mech, name, **params)}
        except ReleaseRefused as exc:
            return answer(who, body.get("dataset") if isinstance(body, dict) else None,
                          None, None, exc)

    @app.post(f"{API}/cached")
    def cached(body: Annotated[Any, Body()], authorization: Auth = None):
        who, _, door = analyst(authorization)
        try:
            name, mech, params = request_of(body, who, door)
            run = body.get("run", 0)
            return {"cached": door.is_cached(name, mech, run=run, **params)}
        except ReleaseRefused as exc:
            return answer(who, None, None, None, exc)

    @app.post(f"{API}/releases")
    def release(body: Annotated[Any, Body()], authorization: Auth = None,
                idempotency_key: IdemKey = None):
        who, _, door = analyst(authorization)
        name = mech = params = None
        if idempotency_key is not None and not (0 < len(idempotency_key) <= 200):
            return refuse(400, "Idempotency-Key: 1 to 200 characters")
        try:
            name, mech, params = request_of(body, who, door)
            run, label = body.get("run", 0), body.get("label")
            r = door.release_with_key(idempotency_key, name, mech, run=run, label=label,
                                      **params)
        except (ReleaseRefused, ReleaseFailed) as exc:
            return answer(who, name, mech, params, exc, idempotency_key)
        except ReleaseInProgress as exc:  # another attempt with this key runs: retry later
            return JSONResponse({"error": str(exc)}, status_code=503,
                                headers={"Retry-After": "1"})
        curator.audit.record(analyst=who, dataset=name, mechanism=mech, params=r.params,
                             epsilon=r.epsilon, outcome="released" if r.charged else "replayed",
                             status=200, key=idempotency_key)
        skeleton, blob = encode_output(r.output)
        return {"dataset": name, "budget": r.dataset, "mechanism": r.mechanism,
                "label": r.label, "params": sidecar(r)["parameters"], "epsilon": r.epsilon,
                "charged": r.charged, "time": r.time, "key": r.key, "guarantee": r.guarantee,
                "output": skeleton, "blob": base64.b64encode(blob).decode()}

    @app.get(f"{API}/releases/{{budget}}/{{key}}")
    def download(budget: str, key: str, format: str = "json",
                 authorization: Auth = None):
        who, _, door = analyst(authorization)
        if not any(door.ledger(n).shared.dataset == budget for n in door.datasets):
            raise HTTPException(403, "not one of your datasets")
        row = curator.store.get(budget, key)
        if row is None:
            raise HTTPException(404, "no such release")
        row = {**row, "dataset": budget, "key": key}
        if format == "json":
            return sidecar(row)
        frame = release_table(row["output"])
        if format == "csv":
            return PlainTextResponse(frame.to_csv(index=False), media_type="text/csv")
        if format == "parquet":
            buf = io.BytesIO()
            frame.to_parquet(buf, index=False)
            return Response(buf.getvalue(), media_type="application/vnd.apache.parquet")
        raise HTTPException(400, "format: 'json' (the sidecar), 'csv' or 'parquet'")

    @app.get(f"{API}/audit")
    def audit(format: str = "jsonl", authorization: Auth = None):
        _, record, _ = analyst(authorization)
        if record.get("role") != "owner":
            raise HTTPException(403, "the audit log is the data owner's")
        if format not in ("csv", "jsonl"):
            raise HTTPException(400, "format: 'csv' or 'jsonl'")
        return PlainTextResponse(curator.audit.export(format),
                                 media_type="text/csv" if format == "csv" else "text/plain")

    return app
