"""The analyst's side of a curator: a :class:`~dpwidgets.Session` whose data stays with the curator.

``Session.connect(url, token=...)`` returns a :class:`RemoteSession`. It has the interface every
widget uses: the datasets (the curator's views, named ``"<dataset>/<view>"``), their public
shape, schema, unit and facts, and their public stand-ins, which it downloads once; previews
run here, on those stand-ins, for free; a release is one HTTP request, refused or answered by
the curator. Costs are computed here with the same specs (so a widget shows them without a round
trip) and charged there. The budget shown is the curator's ledger for this analyst, re-read on
every refresh of the meter.

Each release carries an idempotency key; a request that fails on the network is retried with the
same key, so a retry is never charged twice, whatever happened to the first attempt.
"""

from __future__ import annotations

import base64
import io
import threading
import time
import uuid

import numpy as np

from ..catalog import Entry
from ..door import Description, check_idempotency_key, notify
from ..engine.errors import DPWidgetsError, ParameterError, PrivacyPolicyError, ReleaseFailed
from ..families.synth.params import domain_values
from ..mechanism import Release, same_value
from ..persistence import BudgetExceededError, LedgerView, Spend
from ..persistence.store import decode_output
from ..session import FACTORIES, Session

__all__ = ["RemoteSession", "CuratorUnavailable"]


class CuratorUnavailable(DPWidgetsError, ConnectionError):
    """The curator could not be reached (or refused the token)."""


def _no_data():
    raise PrivacyPolicyError("the data stays with the curator: releases run there")


class _NoStore:
    def close(self) -> None:
        pass


class RemoteLedger(LedgerView):
    """The curator's ledger for this analyst on one dataset (read over HTTP)."""

    def __init__(self, session: RemoteSession, dataset: str):
        self._session, self.dataset = session, dataset
        self.persistent = True

    def summary(self, recent: int = 0) -> dict:
        out = dict(self._session._budgets()[self.dataset])
        spends = [Spend(**{k: v for k, v in s.items() if k in Spend.__dataclass_fields__})
                  for s in out.get("recent", [])]
        out["recent"] = spends[-recent:] if recent else []
        return out

    def close(self) -> None:
        pass


def _on_the_wire(value):
    """A parameter as JSON carries it: arrays and tuples as lists, numpy scalars as numbers,
    a privacy vector (a digest string carrying its array) as its budgets."""
    array = getattr(value, "array", None)
    if isinstance(value, str) and isinstance(array, np.ndarray):
        return array.tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _on_the_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_on_the_wire(v) for v in value]
    return value


class _RemoteLedgers:
    """The ledger port of the local catalogue a :class:`RemoteSession` keeps: each dataset's
    budget is the curator's, read over HTTP (:class:`RemoteLedger`)."""

    lease = wait = 0.0  # releases are the curator's: no attempt is made here

    def __init__(self, session: RemoteSession):
        self.session = session

    def open(self, held: Entry, total_epsilon) -> RemoteLedger:
        return RemoteLedger(self.session, held.budget)

    def failed_before(self, idempotency_key: str) -> bool:
        return False


class RemoteSession:
    """An analyst-mode door on a curator's datasets (see the module docstring): a
    :class:`~dpwidgets.door.Door` over HTTP.

    It keeps a local catalogue of the curator's views (an analyst-mode
    :class:`~dpwidgets.Session` holding their public declarations and stand-ins, whose budgets
    are the curator's ledgers): descriptions, costs and previews are answered there, without a
    round trip; :meth:`release` and :meth:`is_cached` ask the curator.

    Parameters
    ----------
    url : str
        The curator's address, e.g. ``"http://127.0.0.1:8765"`` (``https://`` behind a proxy).
    token : str
        The analyst's bearer token (from the data owner's ``dpwidgets curator add-analyst``).
    seed, rng, warn_fraction
        As for :class:`~dpwidgets.Session`; ``seed``/``rng`` drive previews only.
    timeout : float
        Seconds to wait for an answer.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> session = Session.connect("http://127.0.0.1:8765", token=TOKEN)  # doctest: +SKIP
    >>> session.release("visits/items", "svt", epsilon=0.1, threshold=100.0, c=3)  # doctest: +SKIP
    """

    RETRIES = 3
    mode = "analyst"
    teaching = False

    def __init__(self, url: str, token: str, *, seed: int | None = None,
                 rng: np.random.Generator | None = None, warn_fraction: float = 0.8,
                 timeout: float = 120.0, transport=None):
        import httpx

        if not isinstance(token, str) or not token:
            raise ValueError("token= is the analyst's bearer token (a non-empty string)")
        self._catalogue = Session("analyst", ledger=":curator:", seed=seed, rng=rng,
                                  warn_fraction=warn_fraction, ledgers=_RemoteLedgers(self),
                                  store=_NoStore())
        self.url = self.ledger_path = url.rstrip("/")
        self._listeners: list = []
        self.last_refusal = ""
        self._meter = None
        self._catalogue.observe(self._relay)
        self._http = httpx.Client(base_url=f"{self.url}/v1", timeout=timeout,
                                  headers={"Authorization": f"Bearer {token}"},
                                  transport=transport)
        self._budget_cache: tuple[float, dict] | None = None
        self._budget_lock = threading.Lock()
        info = self._call("GET", "/datasets")
        self.analyst = info["analyst"]
        for d in info["datasets"]:
            stand_in = np.load(io.BytesIO(self._raw("GET", f"/datasets/{d['name']}/stand_in")),
                               allow_pickle=False)
            stand_in.setflags(write=False)
            held = Entry(d["name"], None, stand_in, f"curator:{self.url}:{d['name']}",
                         d["description"], tuple(d["columns"]) if d["columns"] else None,
                         tuple(d["dtypes"]) if d["dtypes"] else None, d["unit"],
                         dict(d["facts"]), frozenset(d["mechanisms"]),
                         unit_rows=int(d["unit_rows"]), load=_no_data, shape=tuple(d["shape"]),
                         domains=d.get("domains"), budget=d["budget"],
                         ranges=None if d.get("ranges") is None else tuple(
                             None if r is None else tuple(r) for r in d["ranges"]))
            self._catalogue.hold(held)

    # -- answered by the catalogue, without a round trip -----------------------------------
    @property
    def datasets(self) -> list[str]:
        """The curator's views this analyst may use, ``"<dataset>/<view>"``."""
        return self._catalogue.datasets

    @property
    def rng(self) -> np.random.Generator:
        """The generator of previews."""
        return self._catalogue.rng

    @property
    def warn_fraction(self) -> float:
        """The meter warns once this fraction of a budget is spent."""
        return self._catalogue.warn_fraction

    def describe(self, dataset: str | None = None) -> Description:
        """The owner's public declarations about a view, as the curator sent them."""
        return self._catalogue.describe(dataset)

    def size(self, dataset: str | None = None) -> int:
        return self._catalogue.size(dataset)

    def shape(self, dataset: str | None = None) -> tuple[int, ...]:
        return self._catalogue.shape(dataset)

    def columns(self, dataset: str | None = None) -> list[str] | None:
        return self._catalogue.columns(dataset)

    def unit(self, dataset: str | None = None) -> str:
        return self._catalogue.unit(dataset)

    def facts(self, dataset: str | None = None) -> dict:
        return self._catalogue.facts(dataset)

    def domains(self, dataset: str | None = None) -> dict | None:
        return self._catalogue.domains(dataset)

    def stand_in(self, dataset: str | None = None) -> np.ndarray:
        return self._catalogue.stand_in(dataset)

    def public_view(self, dataset: str | None = None) -> np.ndarray:
        """The stand-in: the data stays with the curator."""
        return self._catalogue.stand_in(dataset)

    def declaration(self, dataset: str | None = None) -> None:
        """``None``: a curator's tables are declared in its configuration."""
        return None

    def ledger(self, dataset: str | None = None) -> RemoteLedger:
        """The curator's ledger for this analyst on a view's budget."""
        return self._catalogue.ledger(dataset)

    def spent(self, dataset: str | None = None) -> float:
        return self._catalogue.spent(dataset)

    def remaining(self, dataset: str | None = None) -> float:
        return self._catalogue.remaining(dataset)

    def overdrafts(self, dataset: str | None = None) -> list:
        """Always empty: analyst mode refuses what a teaching session records as overdrafts."""
        return self._catalogue.overdrafts(dataset)

    def cost(self, dataset, mechanism=None, **params) -> float:
        """What the curator will charge (the same specs, computed here)."""
        return self._catalogue.cost(dataset, mechanism, **params)

    def preview(self, dataset, mechanism, *, rng=None, **params) -> Release:
        """A run on the downloaded public stand-in: free, never reaches the curator."""
        return self._catalogue.preview(dataset, mechanism, rng=rng, **params)

    def preview_key(self, dataset, mechanism, **params) -> str:
        return self._catalogue.preview_key(dataset, mechanism, **params)

    def check_budget(self, dataset, epsilon: float, label: str) -> None:
        """Refuse a group of releases this analyst's remaining budget cannot pay for."""
        self._catalogue.check_budget(dataset, epsilon, label)

    def opening_code(self, dataset: str | None = None) -> str:
        """How a script connects to this curator (the token is the analyst's to paste)."""
        return f"session = Session.connect({self.url!r}, token=TOKEN)  # your token"

    # -- events ----------------------------------------------------------------------------
    def observe(self, callback) -> None:
        """Call ``callback(session, event)`` after every release attempt (see
        :meth:`dpwidgets.Session.observe`)."""
        self._listeners.append(callback)

    def unobserve(self, callback) -> None:
        self._listeners = [c for c in self._listeners if c is not callback]

    def _relay(self, catalogue, event: dict) -> None:
        self._notify(event)

    def _notify(self, event: dict) -> None:
        notify(self, self._listeners, event)

    # -- plumbing ----------------------------------------------------------------------------
    def _raw(self, method: str, path: str, **kw) -> bytes:
        import httpx

        try:
            r = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise CuratorUnavailable(f"the curator at {self.url} did not answer: {exc}") from None
        if r.status_code == 401:
            raise CuratorUnavailable("the curator refused the token (401)")
        if r.status_code >= 400:
            self._refused(r)
        return r.content

    def _call(self, method: str, path: str, **kw):
        import json

        return json.loads(self._raw(method, path, **kw))

    def _refused(self, r) -> None:
        try:
            body = r.json()
        except ValueError:
            body = {"error": r.text[:500]}
        message = body.get("error", "refused")
        if r.status_code == 409 and "remaining" in body:
            exc = BudgetExceededError(str(body.get("budget", "")), float(body["requested"]),
                                      float(body["remaining"]), float(body["total"]),
                                      str(body.get("label", "")))
        elif r.status_code == 403:
            exc = PrivacyPolicyError(message)
        elif r.status_code == 422:
            exc = ReleaseFailed(message)
        elif r.status_code in (400, 404, 413):
            exc = ParameterError(message)
        else:
            exc = CuratorUnavailable(f"the curator answered {r.status_code}: {message}")
        raise exc

    def _budgets(self) -> dict:
        with self._budget_lock:
            now = time.monotonic()
            if self._budget_cache is None or now - self._budget_cache[0] > 0.25:
                self._budget_cache = (now, self._call("GET", "/budget")["budgets"])
            return self._budget_cache[1]

    # -- what differs from a local session ---------------------------------------------------
    @property
    def meter(self):
        """The budget meter: the curator's ledger for this analyst, re-read every 2 s (so
        releases from this analyst's other kernels show too)."""
        if self._meter is None:
            self._meter = FACTORIES["meter"](self)
            self._meter.follow(2.0)
        return self._meter

    def add_dataset(self, *args, **kwargs):
        """Refused: a curator's datasets are declared by its owner."""
        raise PrivacyPolicyError("a curator's datasets are declared by its owner, in the "
                                 "curator's configuration")

    add_table = add_dataset

    def _wire_params(self, held: Description, params: dict) -> dict:
        # Facts are the curator's to fill in: drop those equal to the declared ones (what a
        # widget passes back); any other value goes through and the curator refuses it.
        out = {k: v for k, v in params.items()
               if not (k in held.facts and same_value(v, held.facts[k]))}
        if held.domains is not None and isinstance(out.get("domains"), dict):
            given = out["domains"]
            try:
                same = all(np.array_equal(domain_values(given[a]), domain_values(held.domains[a]))
                           for a in given)
            except (KeyError, TypeError, ValueError):
                same = False
            if same:
                del out["domains"]
        return {k: _on_the_wire(v) for k, v in out.items()}

    def is_cached(self, dataset, mechanism, **params) -> bool:
        """Whether the curator holds this release already (a replay would be free)."""
        held = self.describe(dataset)
        run = params.pop("run", 0)
        body = {"dataset": held.name, "mechanism": mechanism,
                "params": self._wire_params(held, params), "run": run}
        return bool(self._call("POST", "/cached", json=body)["cached"])

    def release_key(self, dataset, mechanism, **params) -> str:
        raise PrivacyPolicyError("release keys are the curator's (they are keyed by its secret)")

    def release(self, dataset, mechanism, *, label=None, run=0, idempotency_key=None,
                **params) -> Release:
        """Ask the curator for a release (see :meth:`Session.release`); refusals raise the
        same exceptions, decided by the curator before it reads the data. A network failure
        is retried with the same idempotency key (``idempotency_key``, default a fresh one),
        so a retry is never charged twice."""
        held = self.describe(dataset)
        try:
            # The same checks the curator makes, here first: a bad request needs no round trip.
            self._catalogue.check_release(held.name, mechanism, **params)
            body = {"dataset": held.name, "mechanism": mechanism,
                    "params": self._wire_params(held, params), "run": run}
            if label is not None:
                body["label"] = label
            key = (uuid.uuid4().hex if idempotency_key is None
                   else check_idempotency_key(idempotency_key))
            for attempt in range(self.RETRIES):
                try:
                    r = self._call("POST", "/releases", json=body,
                                   headers={"Idempotency-Key": key})
                    break
                except CuratorUnavailable:
                    if attempt == self.RETRIES - 1:
                        raise
                    time.sleep(0.5 * (attempt + 1))
        except (DPWidgetsError, BudgetExceededError) as exc:
            if isinstance(exc, BudgetExceededError) and exc.asked is None:
                exc = BudgetExceededError(exc.dataset, exc.requested, exc.remaining, exc.total,
                                          exc.label, asked=held.name)  # the view asked for
            self._notify({"kind": "refused", "dataset": held.name, "message": str(exc)})
            raise exc from None
        blob = base64.b64decode(r["blob"]) if r["blob"] else None
        release = Release(
            r["budget"], r["mechanism"], r["label"], r["params"], float(r["epsilon"]),
            decode_output(r["output"], blob), charged=bool(r["charged"]), time=float(r["time"]),
            key=r["key"], guarantee=r["guarantee"],
        )
        self._budget_cache = None
        self._notify({"kind": "release", "dataset": held.name, "release": release})
        return release

    def download(self, release: Release, format: str = "csv", file: str | None = None
                 ) -> bytes:
        """A release as the curator stores it (:func:`dpwidgets.export.export_bytes`):
        ``"json"`` (the sidecar: provenance, guarantee, the whole output with its arrays
        referenced by file), ``"csv"``/``"parquet"`` (the principal table, or the sidecar's
        ``file``), ``"zip"`` (every file and the sidecar; unpacked,
        :func:`dpwidgets.export.load_release` reads it back). ``release.save(path)`` writes the
        same files locally."""
        params = {"format": format} if file is None else {"format": format, "file": file}
        return self._raw("GET", f"/releases/{release.dataset}/{release.key}", params=params)

    def close(self) -> None:
        """Close the connection to the curator."""
        self._http.close()

    def __repr__(self) -> str:
        return f"RemoteSession({self.url!r}, analyst={getattr(self, 'analyst', '?')!r})"
