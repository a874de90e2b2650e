"""The curator over HTTP: a FastAPI app serving a :class:`~dpwidgets.curator.door.Curator`.

Every answer is decided in this order: who (``Authorization: Bearer <token>``; 401), what they
may touch (a dataset they have a cap on, a mechanism the owner allows; 403), whether the request
is well formed (400, naming the argument; facts about the data, domains and the unit cannot be
passed), the cost and the budget (409, naming what is left) -- all before the data is read and
with nothing charged -- then the release. Every release, replay and refusal is written to the
audit log: a bad request gets a 4xx naming the problem, and an unexpected failure a 500 with a
fixed message (never the exception's text), both audited.

Requests are bounded on the bytes actually received (:class:`_Guard`, a pure ASGI middleware
around the app: a chunked body without ``Content-Length`` is counted as it arrives and cut off
past :data:`MAX_BODY`), labels are short printable strings, and the parameters cannot name the
request's own fields.

Timing: a release's running time depends on the data. A dataset with ``respond_after`` in the
configuration answers its releases no earlier than that many seconds after the request arrived,
padded up to the next multiple if the run takes longer (see the curator's documentation).

Serve it on the loopback and put TLS in front of it with a reverse proxy (see the README).
"""


import base64
import inspect
import io
import json
import math
import time
from typing import Annotated, Any

import numpy as np

from ..catalog import guarantee as guarantee_text
from ..engine.errors import (
    ParameterError,
    PrivacyPolicyError,
    ReleaseFailed,
    ReleaseRefused,
)
from ..export import export_bytes, sidecar
from ..mechanism import MECHANISMS
from ..persistence import BudgetExceededError
from ..persistence.store import encode_output
from ..session import Session
from .door import Curator, ReleaseInProgress

__all__ = ["create_app"]

API = "/v1"
MAX_BODY = 1 << 20  # a release request is parameters, never data
MAX_LABEL = 200  # characters of a ledger label
_MAX_DEPTH = 8
_MAX_RUN = 2**53  # run is part of the cache key; far more than any analyst needs
_INTERNAL = ("internal error: the curator could not answer this request (recorded in the "
             "audit log). Nothing was released.")

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


def _too_large(limit: int):
    """The body grew past ``limit`` bytes while being received: an HTTP 413 (Starlette's
    HTTPException, which FastAPI's body reader lets through unchanged)."""
    from starlette.exceptions import HTTPException

    class TooLarge(HTTPException):
        pass

    return TooLarge(413, f"request body: at most {limit} bytes")


class _Guard:
    """A pure ASGI middleware around the whole app.

    * It counts the body's bytes as they are received, whatever the headers say (a chunked
      body has no ``Content-Length``), and answers 413 once past ``limit``; a body declaring a
      larger or malformed ``Content-Length`` is refused before a byte of it is read.
    * It notes when the request arrived (``scope["state"]["arrived"]``, for ``respond_after``).
    * Any exception no handler answered becomes a 500 with a fixed message, recorded in the
      audit log with the exception's type (never its text: it may hold parameters or data).
    """

    def __init__(self, app, curator, limit: int = MAX_BODY):
        self.app, self.curator, self.limit = app, curator, limit

    def _audit(self, scope, status: int, outcome: str, message: str) -> None:
        headers = dict(scope.get("headers") or ())
        auth = headers.get(b"authorization", b"").decode("latin-1")
        found = self.curator.analysts.who(auth[7:].strip()
                                          if auth.lower().startswith("bearer ") else None)
        self.curator.audit.record(
            analyst=None if found is None else found[0], dataset=None, mechanism=None,
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
            await self._send_json(send, 500, {"error": _INTERNAL})


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


def create_app(curator: Curator):
    """The FastAPI application (run it with uvicorn; ``dpwidgets curator serve`` does)."""
    from fastapi import Body, FastAPI, Header, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, PlainTextResponse, Response
    from starlette.exceptions import HTTPException as StarletteHTTPException

    Auth = Annotated[str | None, Header()]
    IdemKey = Annotated[str | None, Header()]
    app = FastAPI(title="dpwidgets curator", version="1", docs_url=f"{API}/docs",
                  openapi_url=f"{API}/openapi.json", description=DESCRIPTION)
    app.state.curator = curator
    app.add_middleware(_Guard, curator=curator, limit=MAX_BODY)
    # Names a request's parameters cannot take: they would collide with the door's own
    # arguments (``run``, ``label``, ``dataset``, ``mechanism``, the idempotency key, ...).
    reserved = {"run", "label"}
    for method in (Session.cost, Session.is_cached, Session.release_key, Session.release):
        reserved |= {n for n, q in inspect.signature(method).parameters.items()
                     if q.kind is not inspect.Parameter.VAR_KEYWORD}

    def refuse(status: int, message: str, **extra) -> JSONResponse:
        return JSONResponse({"error": message, **extra}, status_code=status)

    def token_of(authorization: str | None) -> str | None:
        if authorization and authorization.lower().startswith("bearer "):
            return authorization[7:].strip()
        return None

    def who_of(request: Request) -> str | None:
        found = curator.analysts.who(token_of(request.headers.get("authorization")))
        return None if found is None else found[0]

    def deny(status: int, message: str, *, who=None, dataset=None, mechanism=None,
             params=None, outcome: str | None = None):
        """Audit a refusal, then raise it (the HTTPException handler does not audit again)."""
        curator.audit.record(analyst=who, dataset=dataset, mechanism=mechanism, params=params,
                             epsilon=None, status=status, message=message,
                             outcome=outcome or {401: "unauthorised", 403: "forbidden",
                                                 404: "not found"}.get(status, "bad request"))
        exc = HTTPException(status, message)
        exc.audited = True
        raise exc

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        where = ", ".join(".".join(str(p) for p in e.get("loc", ())) for e in exc.errors())
        message = f"malformed request: {where or 'body'}"
        curator.audit.record(analyst=who_of(request), dataset=None, mechanism=None,
                             params=None, epsilon=None, outcome="bad request", status=400,
                             message=f"{request.method} {request.url.path[:200]}: {message}")
        return refuse(400, message)

    @app.exception_handler(StarletteHTTPException)  # FastAPI's HTTPException is one too
    async def _http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail
        if exc.status_code == 400 and detail == "There was an error parsing the body":
            detail = "request body: not valid JSON (or nested too deeply to parse)"
        if not getattr(exc, "audited", False):
            curator.audit.record(
                analyst=who_of(request), dataset=None, mechanism=None, params=None,
                epsilon=None, status=exc.status_code, outcome="bad request",
                message=f"{request.method} {request.url.path[:200]}: {detail}")
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return JSONResponse({"error": detail}, status_code=exc.status_code, headers=headers)

    def analyst(authorization: str | None):
        found = curator.analysts.lookup(token_of(authorization))
        if found is None:
            deny(401, "missing or unknown bearer token")
        name, record, refusal = found
        if refusal is not None:
            deny(401, f"this bearer token was {refusal}; ask the data owner for a new one",
                 who=name, outcome=refusal)
        return name, record, curator.door(name, record)

    def view(door, name: str, who: str, dataset: Any):
        if not isinstance(dataset, str) or dataset not in door.datasets:
            shown = str(dataset)[:200]
            deny(403, f"dataset {shown!r} is not one of yours; yours: {door.datasets}",
                 who=who, dataset=shown)
        return dataset

    def describe(door, name: str) -> dict:
        ds, _ = curator.config.view(name)
        return {**door.describe(name).as_json(), "budget": ds.name,
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

    def asked(body) -> tuple[Any, Any, Any]:
        """What a request asked for, as sent (for the audit log: bounded there)."""
        if not isinstance(body, dict):
            return None, None, {"body": body if isinstance(body, str | int | float) else
                                type(body).__name__}
        ds, mech, params = body.get("dataset"), body.get("mechanism"), body.get("params")
        return (None if ds is None else str(ds)[:200],
                None if mech is None else str(mech)[:200],
                params if isinstance(params, dict) or params is None else {"params": params})

    def run_and_label(body: dict) -> tuple[int, str | None]:
        run, label = body.get("run", 0), body.get("label")
        if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run < _MAX_RUN:
            raise ParameterError(f"run must be an integer in [0, 2**53), got "
                                 f"{str(run)[:40]!r}. Nothing was charged.")
        if label is not None and (not isinstance(label, str) or not 0 < len(label) <= MAX_LABEL
                                  or not label.isprintable()):
            shown = (f"a string of {len(label)} characters" if isinstance(label, str)
                     else type(label).__name__)
            raise ParameterError(f"label must be a printable string of 1 to {MAX_LABEL} "
                                 f"characters, got {shown}. Nothing was charged.")
        return run, label

    def request_of(body: dict, who: str, door) -> tuple[str, str, dict]:
        if not isinstance(body, dict):
            raise ParameterError("the body must be a JSON object")
        unknown = set(body) - {"dataset", "mechanism", "params", "run", "label"}
        if unknown:
            raise ParameterError(f"unknown field(s) {sorted(str(k)[:50] for k in unknown)[:20]}")
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
        clash = sorted(reserved & set(params))
        if clash:
            raise ParameterError(
                f"params cannot name {clash}: they are fields of the request (run and label "
                f"go next to params) or the curator's own arguments. Nothing was charged.")
        run_and_label(body)
        declared = set(MECHANISMS[mech].facts) | {"unit", "unit_rows", "domains"}
        claimed = sorted(declared & set(params))
        if claimed:
            raise ParameterError(
                f"{claimed} are facts about the data, declared by its owner; a request cannot "
                f"pass them (the curator fills them in). Nothing was charged.")
        return name, mech, params

    def answer(who, body, exc: Exception, key=None):
        name, mech, params = asked(body)
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
            return {"epsilon": door.cost(name, mech, **params)}
        except ReleaseRefused as exc:
            return answer(who, body, exc)

    @app.post(f"{API}/cached")
    def cached(body: Annotated[Any, Body()], authorization: Auth = None):
        who, _, door = analyst(authorization)
        try:
            name, mech, params = request_of(body, who, door)
            run, _ = run_and_label(body)
            return {"cached": door.is_cached(name, mech, run=run, **params)}
        except ReleaseRefused as exc:
            return answer(who, body, exc)

    def pad(request: Request, name: str | None) -> None:
        """Hold a release's answer until the next multiple of the dataset's
        ``respond_after`` since the request arrived (timing: see the module docstring)."""
        ds = curator.config.datasets.get((name or "").partition("/")[0])
        quantum = getattr(ds, "respond_after", None)
        if not quantum:
            return
        arrived = request.scope.get("state", {}).get("arrived", time.monotonic())
        elapsed = time.monotonic() - arrived
        time.sleep(max(1, math.ceil(elapsed / quantum)) * quantum - elapsed)

    @app.post(f"{API}/releases")
    def release(request: Request, body: Annotated[Any, Body()], authorization: Auth = None,
                idempotency_key: IdemKey = None):
        who, _, door = analyst(authorization)
        name = None
        if idempotency_key is not None and not (0 < len(idempotency_key) <= 200
                                                and idempotency_key.isprintable()):
            deny(400, "Idempotency-Key: 1 to 200 printable characters", who=who,
                 dataset=asked(body)[0], mechanism=asked(body)[1], params=asked(body)[2])
        try:
            try:
                name, mech, params = request_of(body, who, door)
                run, label = run_and_label(body)
                r = door.release(name, mech, run=run, label=label,
                                 idempotency_key=idempotency_key, **params)
            except (ReleaseRefused, ReleaseFailed) as exc:
                return answer(who, body, exc, idempotency_key)
            except ReleaseInProgress as exc:  # another attempt with this key runs: retry later
                curator.audit.record(analyst=who, dataset=name, mechanism=mech, params=params,
                                     epsilon=None, outcome="in progress", status=503,
                                     message=str(exc), key=idempotency_key)
                return JSONResponse({"error": str(exc)}, status_code=503,
                                    headers={"Retry-After": "1"})
        finally:
            # Every answer about a dataset with respond_after leaves on the quantum grid,
            # refusals and failures too (a failure ran on the data).
            pad(request, name)
        curator.audit.record(analyst=who, dataset=name, mechanism=mech, params=r.params,
                             epsilon=r.epsilon, outcome="released" if r.charged else "replayed",
                             status=200, key=idempotency_key)
        skeleton, blob = encode_output(r.output)
        return {"dataset": name, "budget": r.dataset, "mechanism": r.mechanism,
                "label": r.label, "params": sidecar(r)["parameters"], "epsilon": r.epsilon,
                "charged": r.charged, "time": r.time, "key": r.key, "guarantee": r.guarantee,
                "output": skeleton, "blob": base64.b64encode(blob).decode()}

    @app.get(f"{API}/releases/{{budget}}/{{key}}")
    def download(budget: str, key: str, format: str = "json", file: str | None = None,
                 authorization: Auth = None):
        """A stored release: its sidecar (``json``), its principal table or the table
        ``file`` the sidecar lists (``csv``, ``parquet``), or all of it (``zip``)."""
        who, _, door = analyst(authorization)
        if not any(door.ledger(n).shared.dataset == budget for n in door.datasets):
            deny(403, "not one of your datasets", who=who, dataset=budget[:200])
        row = curator.store.get(budget, key)
        if row is None:
            deny(404, "no such release", who=who, dataset=budget[:200])
        row = {**row, "dataset": budget, "key": key,
               "guarantee": guarantee_of(door, budget, row)}
        try:
            content, media = export_bytes(row, format=format, file=file, stem=key[:16])
        except ValueError as exc:  # the format or the file name: public, the analyst's own
            deny(400, f"{exc}; format: 'json' (the sidecar), 'csv', 'parquet' or 'zip' (every "
                      "file and the sidecar)", who=who, dataset=budget[:200])
        return Response(content, media_type=media)

    @app.get(f"{API}/audit")
    def audit(format: str = "jsonl", authorization: Auth = None):
        who, record, _ = analyst(authorization)
        if record.get("role") != "owner":
            deny(403, "the audit log is the data owner's", who=who)
        if format not in ("csv", "jsonl"):
            deny(400, "format: 'csv' or 'jsonl'", who=who)
        return PlainTextResponse(curator.audit.export(format),
                                 media_type="text/csv" if format == "csv" else "text/plain")

    return app
