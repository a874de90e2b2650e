"""The release pipeline of a local door: decide, replay, charge, run sealed, store, tell.

A :class:`ReleasePipeline` answers every question a :class:`~dpwidgets.session.Session` is asked
about a mechanism on one of its datasets, in the order the session's module docstring gives:

* :meth:`~ReleasePipeline.decide`: everything decided without the data -- the canonical
  parameters, the owner's facts and policy, the exact cost (:func:`~dpwidgets.catalog.decide`);
  :meth:`~ReleasePipeline.cost`, :meth:`~ReleasePipeline.release_key`,
  :meth:`~ReleasePipeline.preview_key`, :meth:`~ReleasePipeline.is_cached` and
  :meth:`~ReleasePipeline.check_budget` answer from it alone;
* :meth:`~ReleasePipeline.preview`: the mechanism on the public stand-in (free);
* :meth:`~ReleasePipeline.release`: a replay of what was paid for, else (analyst mode) the
  charge *before* the data is read (:meth:`~ReleasePipeline.charge`), the sealed run
  (:meth:`~ReleasePipeline.run_sealed`) or the teaching run
  (:meth:`~ReleasePipeline.run_teaching`), the stored output, and the event that tells the
  door's observers.

It holds no dataset and no budget of its own: it finds entries in the door's
:class:`~dpwidgets.registry.Registry`, charges the door's :class:`~dpwidgets.budgets.Budgets`
and keeps outputs in the door's :class:`~dpwidgets.door.StorePort`.
"""

from __future__ import annotations

import json
import math
import time
import uuid
import warnings
from collections.abc import Callable

import numpy as np

from . import catalog
from .budgets import Budgets
from .catalog import FAILED, Entry
from .door import Attempt, StorePort, check_idempotency_key
from .engine.errors import ParameterError, ReleaseFailed, ReleaseRefused
from .engine.validation import check_epsilon, check_rng
from .mechanism import MECHANISMS, Mechanism, Release
from .persistence import BudgetExceededError
from .persistence.store import canonical
from .registry import Registry

__all__ = ["ReleasePipeline"]


def _asked_for(exc: BudgetExceededError, name: str) -> BudgetExceededError:
    """The ledger's refusal, naming the dataset the request asked for (a table's view
    ``"visits/items"``), not only the budget it is charged to."""
    if getattr(exc, "asked", None) is not None:
        return exc
    return BudgetExceededError(exc.dataset, exc.requested, exc.remaining, exc.total, exc.label,
                               asked=name)


class ReleasePipeline:
    """Validate, cost, replay, charge and run the releases of a door's datasets.

    Parameters
    ----------
    registry : Registry
        The door's datasets (the pipeline finds them by name there).
    budgets : Budgets
        Their ledgers, and the ledger port idempotent attempts are timed by.
    store : StorePort or None
        Where outputs paid for are kept (set before the first release).
    teaching : bool
        Whether the data is declared public (teaching runs, overdrafts) or confidential
        (charge first, sealed runs).
    rng : numpy.random.Generator
        The generator of previews and teaching runs (never of a sealed run).
    lock : threading.RLock
        Held from the look for a replay to the stored output, so that one process pays once.
    notify : callable
        Called with every ``"release"`` and ``"refused"`` event
        (:meth:`dpwidgets.door.Door.observe`).
    sealed : callable, optional
        How a sealed run is made, ``sealed(entry, mechanism, params, epsilon) -> (result,
        output)``: default :meth:`run_sealed`; a door passes its own hook.

    Examples
    --------
    A pipeline on its own, over a registry and budgets of one public dataset:

    >>> import threading
    >>> import numpy as np
    >>> from dpwidgets.budgets import Budgets
    >>> from dpwidgets.door import LedgerFiles
    >>> from dpwidgets.persistence import ReleaseStore
    >>> from dpwidgets.registry import Registry
    >>> from dpwidgets.releasing import ReleasePipeline
    >>> registry, budgets = Registry(), Budgets(LedgerFiles(":memory:"))
    >>> held = registry.dataset_entry("counts", np.full(8, 50.0), total_epsilon=1.0)
    >>> budgets.add(held.name, budgets.open(held, 1.0))
    >>> registry.add(held)
    >>> pipeline = ReleasePipeline(registry, budgets, ReleaseStore(":memory:"), teaching=True,
    ...                            rng=np.random.default_rng(0), lock=threading.RLock(),
    ...                            notify=lambda event: print(event["kind"]))
    >>> svt = {"epsilon": 0.5, "threshold": 40.0, "c": 1}
    >>> first = pipeline.release("counts", "svt", dict(svt))
    release
    >>> again = pipeline.release("counts", "svt", dict(svt))
    release
    >>> first.charged, again.charged, budgets.spent("counts")
    (True, False, 0.5)
    """

    def __init__(self, registry: Registry, budgets: Budgets, store: StorePort | None, *,
                 teaching: bool, rng: np.random.Generator, lock,
                 notify: Callable[[dict], None], sealed: Callable | None = None):
        self.registry, self.budgets, self.store = registry, budgets, store
        self.teaching, self.rng, self.lock, self.notify = teaching, rng, lock, notify
        self.sealed = sealed if sealed is not None else self.run_sealed

    # -- deciding without the data ---------------------------------------------------------
    def decide(self, ds: Entry, mechanism: str, params: dict, *, release: bool):
        """Everything decided before the data is read: (mechanism, canonical params, cost)
        (:func:`~dpwidgets.catalog.decide`)."""
        return catalog.decide(ds, mechanism, params, teaching=self.teaching, release=release)

    def order(self, dataset, mechanism) -> tuple:
        """``(dataset, mechanism)`` of a ``cost`` call, swapping the deprecated order
        (``cost(mechanism, dataset)``, with a DeprecationWarning for the caller's caller)."""
        def kinds(name):
            ok = isinstance(name, str)
            return ok and name in MECHANISMS, ok and name in self.registry

        first_mech, first_data = kinds(dataset)
        second_mech, second_data = kinds(mechanism)
        if first_mech and first_data and not (second_mech and not second_data):
            raise ParameterError(
                f"{dataset!r} names both a dataset and a mechanism, so cost({dataset!r}, "
                f"{mechanism!r}) is ambiguous: give the dataset another name")
        old = first_mech and not first_data
        if old:
            warnings.warn(
                f"cost(mechanism, dataset) is deprecated: write cost({mechanism!r}, "
                f"{dataset!r}, ...), in the order of release()", DeprecationWarning, stacklevel=3)
            return mechanism, dataset
        if mechanism is None:
            raise ParameterError("cost(dataset, mechanism, **params): name the mechanism")
        return dataset, mechanism

    def cost(self, dataset: str | None, mechanism: str, params: dict, *,
             release: bool = False) -> float:
        """What a request would charge (``release``: refused as a release would be)."""
        params.pop("run", None)
        return self.decide(self.registry.get(dataset), mechanism, params, release=release)[2]

    def key(self, ds: Entry, mechanism: str, params: dict, run: int) -> str:
        """The store's key of a release: a keyed hash of the request and the data's
        fingerprint (:meth:`~dpwidgets.door.StorePort.key`)."""
        blob = json.dumps(
            {"dataset": ds.ledger_name, "data": ds.fingerprint, "mechanism": mechanism,
             "params": canonical(params), "run": int(run)},
            sort_keys=True,
        )
        return self.store.key(blob)

    def release_key(self, dataset: str | None, mechanism: str, params: dict) -> str:
        """The key of a release with these parameters (``run`` among them, default 0)."""
        ds = self.registry.get(dataset)
        run = params.pop("run", 0)
        mech, p, _ = self.decide(ds, mechanism, params, release=False)
        return self.key(ds, mech.name, p, run)

    def preview_key(self, dataset: str | None, mechanism: str, params: dict) -> str:
        """A public key naming a preview by its canonical parameters (no fingerprint)."""
        ds = self.registry.get(dataset)
        params.pop("run", None)
        mech, p, _ = self.decide(ds, mechanism, params, release=False)
        return json.dumps({"dataset": ds.name, "mechanism": mech.name,
                           "params": canonical(p)}, sort_keys=True)

    def is_cached(self, dataset: str | None, mechanism: str, params: dict) -> bool:
        """Whether a release with these parameters would be a free replay."""
        ds = self.registry.get(dataset)
        key = self.release_key(ds.name, mechanism, params)
        return self.store.get(ds.ledger_name, key) is not None

    def check_budget(self, dataset: str | None, epsilon: float, label: str) -> None:
        """Refuse a group of releases costing ``epsilon`` in all that the budget cannot pay
        (never in teaching mode), before anything is charged."""
        ds = self.registry.get(dataset)
        epsilon = check_epsilon(epsilon)
        ledger = self.budgets.ledger(ds.name)
        remaining = ledger.remaining
        if self.teaching or epsilon <= remaining * (1 + 1e-12):
            return
        exc = BudgetExceededError(ds.ledger_name, epsilon, remaining, ledger.total_epsilon, label,
                                  asked=ds.name)
        self.notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
        raise exc

    # -- preview and release ---------------------------------------------------------------
    def preview(self, dataset: str | None, mechanism: str, params: dict, rng=None) -> Release:
        """The mechanism on the public stand-in, with ``rng`` or the pipeline's generator."""
        ds = self.registry.get(dataset)
        params.pop("run", None)
        mech, p, cost = self.decide(ds, mechanism, params, release=False)
        rng = check_rng(rng) if rng is not None else self.rng
        values = ds.values_for(mech, ds.stand_in)
        result = mech.run(values, p, rng)
        return Release(
            ds.ledger_name, mech.name, mech.label(p), p, cost, mech.outputs(result, p),
            charged=False, time=time.time(), result=result, preview=True,
            guarantee=catalog.guarantee(ds, mech, p, cost),
        )

    def release(self, dataset: str | None, mechanism: str, params: dict, *,
                label: str | None = None, run: int = 0,
                idempotency_key: str | None = None) -> Release:
        """A release on the data, charged once: :meth:`dpwidgets.session.Session.release`."""
        ds = self.registry.get(dataset)
        mech, p, epsilon = self._admit(ds, mechanism, params, label, run, idempotency_key)
        label = label or mech.label(p)
        key = self.key(ds, mech.name, p, run)
        guarantee = catalog.guarantee(ds, mech, p, epsilon, sealed=not self.teaching)
        with self.lock:
            cached, claim = self._pay(ds, epsilon, label, key, idempotency_key)
            if cached is not None:
                release = self._replay(ds, mech, cached, key, guarantee)
                self.notify({"kind": "release", "dataset": ds.name, "release": release})
                return release
            result, output, overdraft = self._run(ds, mech, p, epsilon, label, key, claim)
            release = self._keep(ds, mech, p, epsilon, label, key, claim, guarantee,
                                 result, output, overdraft)
        self.notify({"kind": "release", "dataset": ds.name, "release": release})
        return release

    def _admit(self, ds: Entry, mechanism: str, params: dict, label, run, idempotency_key):
        """The request's own checks, then :meth:`decide`; a refusal is told, then raised."""
        try:
            if idempotency_key is not None:
                check_idempotency_key(idempotency_key)
            if isinstance(run, bool) or not isinstance(run, int | np.integer) or run < 0:
                raise ParameterError(f"run must be an integer >= 0, got {run!r}")
            if label is not None and not isinstance(label, str):
                raise ParameterError(f"label must be a string, got {label!r}")
            # Nothing here reads the data: every refusal is decided from the request, the
            # declared facts and the public shape (a mechanism that must treat some records
            # specially does it inside its run, the same way for every record).
            return self.decide(ds, mechanism, params, release=True)
        except ReleaseRefused as exc:
            self.notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise

    def _pay(self, ds: Entry, epsilon: float, label: str, key: str, idempotency_key):
        """``(stored output or None, claim or None)``: a replay found in the store, else
        (analyst mode) the charge made before the data is read. With an idempotency key the
        charge is a claim, which may find the output another attempt with that key stored."""
        cached = self.store.get(ds.ledger_name, key)
        claim = None
        if cached is None and not self.teaching:
            try:
                claim = self.charge(ds, epsilon, label, key, idempotency_key)
            except BudgetExceededError as exc:
                raise _asked_for(exc, ds.name) from None
            cached = claim.stored if claim is not None else None
        return cached, claim

    def _replay(self, ds: Entry, mech: Mechanism, cached: dict, key: str,
                guarantee: str) -> Release:
        """The release a stored row records, charged nothing."""
        return Release(
            ds.ledger_name, mech.name, cached["label"], cached["params"],
            cached["epsilon"], cached["output"], charged=False, time=cached["time"],
            result=cached.get("result"), overdraft=cached.get("overdraft", False),
            key=key, guarantee=guarantee,
        )

    def _run(self, ds: Entry, mech: Mechanism, p: dict, epsilon: float, label: str, key: str,
             claim: Attempt | None):
        """``(result, output, overdraft)`` of a fresh run: a teaching run, or a sealed run whose
        failure ends the attempt's claim as failed."""
        if self.teaching:
            return self.run_teaching(ds, mech, p, epsilon, label, key)
        try:
            result, output = self.sealed(ds, mech, p, epsilon)
        except ReleaseFailed:
            if claim is not None:
                claim.failed()
            raise
        return result, output, False

    def _keep(self, ds: Entry, mech: Mechanism, p: dict, epsilon: float, label: str, key: str,
              claim: Attempt | None, guarantee: str, result, output, overdraft: bool) -> Release:
        """Store a fresh run's public output (the first stored wins) and make its release."""
        row = {"mechanism": mech.name, "label": label, "params": p, "epsilon": epsilon,
               "output": output, "time": time.time()}
        stored = self.store.put(ds.ledger_name, key, row)  # the first output stored wins
        if claim is not None:
            claim.done()
            output, row = stored["output"], stored
        if self.teaching:
            # In-process only: the engine result (with its secret state) is never persisted.
            row["result"], row["overdraft"] = result, overdraft
        return Release(
            ds.ledger_name, mech.name, label, p, epsilon, output, charged=True,
            time=row["time"], result=result if self.teaching else None,
            overdraft=overdraft, key=key, guarantee=guarantee,
        )

    # -- charging and running --------------------------------------------------------------
    def charge(self, ds: Entry, epsilon: float, label: str, key: str,
               idempotency_key: str | None = None) -> Attempt | None:
        """Analyst mode: charge before the data is read (a refusal reads nothing).

        Returns ``None``, or with an ``idempotency_key`` the attempt's claim on it:
        ``claim.stored`` (another attempt's output, to replay), ``claim.done()`` once the
        output is stored, ``claim.failed()`` if the run failed."""
        ledger = self.budgets.ledger(ds.name)
        if idempotency_key is not None:
            return Attempt(ledger, self.store, self.budgets.port, self.notify,
                           dataset=ds.name, budget=ds.ledger_name, store_key=key,
                           idempotency_key=idempotency_key).take(epsilon, label)
        # A key charged by a process whose output was lost is charged afresh: fresh noise
        # is never handed out for free.
        charge_key = f"{key}#{uuid.uuid4().hex}" if ledger.has_key(key) else key
        try:
            if not ledger.spend(epsilon, label, key=charge_key):
                # Another process charged this very key since has_key: pay for our own run.
                ledger.spend(epsilon, label, key=f"{key}#{uuid.uuid4().hex}")
        except BudgetExceededError as exc:
            exc = _asked_for(exc, ds.name)
            self.notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise exc from None
        return None

    def run_sealed(self, ds: Entry, mech: Mechanism, p: dict, epsilon: float):
        """Run on confidential data with fresh OS entropy; nothing it says gets out.

        The run is inside :func:`~dpwidgets.engine.mechanisms.floating_point_safe`: its noise
        is discrete Laplace on a power-of-two grid, so a released double cannot tell one
        input from its neighbour by its low bits (Mironov 2012; Canonne, Kamath & Steinke
        2020). Teaching runs and previews keep the fast continuous sampler."""
        from .engine.mechanisms import floating_point_safe  # the analyst path only

        failed = False
        with warnings.catch_warnings(), np.errstate(all="ignore"), floating_point_safe():
            warnings.simplefilter("ignore")
            try:
                values = ds.input_for(mech)
                result = mech.run(values, p, np.random.default_rng())
                output = mech.outputs(result, p)
                if mech.spent is not None and not math.isclose(
                    float(mech.spent(result, p)) * ds.unit_rows, epsilon, rel_tol=1e-9
                ):
                    failed = True
            except Exception:  # noqa: BLE001 -- whatever it was, it may carry data
                failed = True
        if failed:
            # Raised outside the handler: no __context__ chains the engine's own exception.
            self.notify({"kind": "refused", "dataset": ds.name, "message": FAILED})
            raise ReleaseFailed(FAILED)
        return result, output

    def run_teaching(self, ds: Entry, mech: Mechanism, p: dict, epsilon: float, label: str,
                     key: str):
        """Teaching mode: the data is public, so run first, then record (overdraft allowed)."""
        values = ds.input_for(mech)
        try:
            result = mech.run(values, p, self.rng)
        except (ValueError, TypeError) as exc:
            self.notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise
        output = mech.outputs(result, p)
        if mech.spent is not None and not math.isclose(
                float(mech.spent(result, p)) * ds.unit_rows, epsilon, rel_tol=1e-9):
            raise RuntimeError(f"{mech.name!r} spent a different epsilon than it was charged")
        ledger = self.budgets.ledger(ds.name)
        try:
            ledger.spend(epsilon, label, key=f"{key}#{uuid.uuid4().hex}")
            return result, output, False
        except BudgetExceededError:
            self.budgets.overdraw(ds.name, epsilon, label)
            return result, output, True

    def close(self) -> None:
        """Close the store's database connection (if a store was opened)."""
        if self.store is not None:
            self.store.close()
