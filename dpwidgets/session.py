"""The session: the local door between widgets and confidential data.

A :class:`Session` implements the door's protocol (:class:`dpwidgets.door.Door`) for the
datasets in this process. It is composed of a ledger port (:class:`~dpwidgets.door.LedgerPort`:
one :class:`~dpwidgets.persistence.ledger.PrivacyLedger` per dataset by default, a curator's
joint ledgers for an analyst's door) and a store port (the outputs already paid for). Widgets and notebooks never hold confidential records: they ask the door to
:meth:`~Session.preview` a mechanism on the public stand-in (free) or to
:meth:`~Session.release` it on the data (charged once). Every mechanism is a declared spec
(:class:`~dpwidgets.mechanism.Mechanism`, one module per family in :mod:`dpwidgets.releases`);
the door only reads specs.

What a release does, in this order
----------------------------------
1. Decide everything that does not need the data: the canonical parameters (a
   :class:`~dpwidgets.engine.errors.ParameterError` names what is wrong), the facts about the
   data the data owner declared (an analyst cannot lower a declared sensitivity), the policy
   (broken variants, attacks and mechanisms the owner did not allow are refused in analyst
   mode), the exact cost and the guarantee.
2. Replay a release already paid for (same dataset content, mechanism, parameters, ``run``):
   free, in this process or any later one.
3. Analyst mode: charge the ledger *before* the data is read. A refused request never reads
   the data and never draws noise, so its answer and its timing say nothing about the data.
4. Run the mechanism with fresh OS entropy (never a seed) and floating-point-safe noise
   (:func:`~dpwidgets.engine.mechanisms.floating_point_safe`). Warnings and errors raised while
   it runs on confidential data never reach the caller: the caller gets
   :class:`~dpwidgets.engine.errors.ReleaseFailed`, whose message is fixed.
5. Keep only the declared public output fields, store them next to the ledger, tell observers
   (the budget meter).

If the process dies between the charge and the store, the ledger knows the key but no output
exists; the next request is charged again under a fresh key rather than handing out fresh
noise for free.

Modes
-----
``"teaching"``: the data is declared public. Widgets may draw it and the engine's secret state;
the ledger lives in memory only and records what each run would have cost; a run past the cap
is recorded as an overdraft (what analyst mode would refuse). ``"analyst"``: the data is
confidential; the ledger is a file shared by every process; ``seed``/``rng`` drive previews only.
The mode is fixed when the session is made.

Examples: ``README.md`` ("Modes and the budget") and ``CONTRIBUTING.md``. A curator's datasets:
:meth:`Session.connect`.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from . import catalog
from . import families as _families  # noqa: F401  (registers the built-in mechanisms)
from .catalog import FAILED, UNITS, Entry, fingerprint, table_stand_in
from .declarations import declaration_call, python_literal  # noqa: F401 (python_literal: its old home)
from .door import (
    Attempt,
    Description,
    LedgerFiles,
    LedgerPort,
    StorePort,
    check_idempotency_key,
    notify,
)
from .engine.errors import (
    DPWidgetsError,
    ParameterError,
    PrivacyPolicyError,
    ReleaseFailed,
    ReleaseRefused,
)
from .engine.validation import check_epsilon, check_rng
from .families.diagnostics.spec import MODELS, OUTCOMES, model_predictions
from .mechanism import (
    MECHANISMS,
    Fact,
    Mechanism,
    Overdraft,
    Release,
    register_mechanism,
)
from .persistence import BudgetExceededError, PrivacyLedger
from .persistence.store import ReleaseStore, canonical

__all__ = ["DPWidgetsError", "MECHANISMS", "MODELS", "OUTCOMES", "Fact", "Mechanism", "Overdraft",
           "ParameterError", "PrivacyPolicyError", "Release", "ReleaseFailed", "Session", "UNITS",
           "fingerprint", "model_predictions", "register_mechanism", "table_stand_in"]

Mode = Literal["teaching", "analyst"]

# What the door hands out but must not import: the budget meter (a widget; the door imports no
# UI code) and a curator's session (a Session subclass, whose module imports this one). The
# package's __init__, which sits above all three and runs before this module can be used, sets
# "meter" (session -> BudgetMeter, for Session.meter) and "remote" (url, token, **kwargs ->
# RemoteSession, for Session.connect).
FACTORIES: dict[str, Callable[..., Any]] = {}

_UNSET: Any = object()  # "not given", for the deprecated spellings


def _renamed(old: str, new: str, value, given, default) -> Any:
    """The value of a renamed keyword: ``new``'s (``given``), or ``old``'s (``value``) with a
    DeprecationWarning that says what to write instead (both given: refused)."""
    if value is _UNSET:
        return given
    if given != default:
        raise ValueError(f"give {new}= only ({old}= is its old name), not both")
    warnings.warn(f"{old}= is deprecated here: write {new}={value!r}", DeprecationWarning,
                  stacklevel=3)
    return value


def _asked_for(exc: BudgetExceededError, name: str) -> BudgetExceededError:
    """The ledger's refusal, naming the dataset the request asked for (a table's view
    ``"visits/items"``), not only the budget it is charged to."""
    if getattr(exc, "asked", None) is not None:
        return exc
    return BudgetExceededError(exc.dataset, exc.requested, exc.remaining, exc.total, exc.label,
                               asked=name)


def _round_dust(x: float) -> float:
    """A ledger total for a person to read: the exact sum rounded to 12 significant digits, so
    that 1 - 0.8 reads 0.2, not 0.19999999999999996. Only what is *reported*: the cap check
    stays exact (the ledger's, in fractions, with a relative slack of 1e-9 that admits
    spending exactly what this reports)."""
    return float(f"{float(x):.12g}")


def _check_total(total_epsilon) -> None:
    """A budget cap (``None``: the ledger's recorded one), checked before anything is read."""
    if total_epsilon is not None:
        try:
            check_epsilon(total_epsilon, "total_epsilon")
        except TypeError as exc:
            raise ValueError(str(exc)) from None
_ReleaseStore = ReleaseStore  # the name earlier releases of dpwidgets exported

class Session:
    """Owns the datasets and their privacy ledgers; the only way widgets reach data.

    Parameters
    ----------
    mode : {"teaching", "analyst"}
        Fixed for the session's life (see the module docstring).
    ledger : str or path-like, optional
        Analyst mode: the SQLite ledger file (default
        :func:`~dpwidgets.persistence.paths.default_ledger_path`); ``~`` is expanded and the path
        made absolute once. Teaching mode: in memory only (a file is refused).
    seed : int, optional
        Seeds the generator of teaching runs and of previews. Analyst releases never use it.
    rng : numpy.random.Generator, optional
        The generator to use instead of ``seed`` (same scope).
    warn_fraction : float
        The meter warns once this fraction of a budget is spent.
    ledgers : LedgerPort, optional
        How the budgets are opened (default: :class:`~dpwidgets.door.LedgerFiles` on
        ``ledger``); a curator composes its analysts' doors with its joint ledgers.
    store : StorePort, optional
        Where released outputs are kept (default: a
        :class:`~dpwidgets.persistence.store.ReleaseStore` next to the ledger).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> session = Session("teaching", seed=0)
    >>> session.add_dataset("scores", np.arange(10.0), total_epsilon=1.0)
    >>> release = session.release("scores", "svt", epsilon=0.5, threshold=5.0, c=1)
    >>> session.spent("scores")
    0.5
    """

    def __init__(
        self,
        mode: Mode = "teaching",
        ledger: str | os.PathLike | None = None,
        *,
        seed: int | None = None,
        rng: np.random.Generator | None = None,
        warn_fraction: float = 0.8,
        ledgers: LedgerPort | None = None,
        store: StorePort | None = None,
    ):
        if mode not in ("teaching", "analyst"):
            raise ValueError(f"mode must be 'teaching' or 'analyst', got {mode!r}")
        if rng is not None and seed is not None:
            raise ValueError("give either seed= or rng=, not both")
        if isinstance(warn_fraction, bool) or not isinstance(warn_fraction, int | float) or not (
            0.0 < warn_fraction <= 1.0
        ):
            raise ValueError(f"warn_fraction must be in (0, 1], got {warn_fraction!r}")
        self._mode: Mode = mode
        self.ledger_path = catalog.ledger_path(mode, ledger)
        if self.ledger_path != ":memory:" and "://" not in self.ledger_path:
            Path(self.ledger_path).parent.mkdir(parents=True, exist_ok=True)
        self.rng = check_rng(rng) if rng is not None else np.random.default_rng(seed)
        self.warn_fraction = float(warn_fraction)
        self._datasets: dict[str, Entry] = {}
        self._ledgers: dict[str, PrivacyLedger] = {}
        self._overdrafts: dict[str, list[Overdraft]] = {}
        self._listeners: list[Callable[[Session, dict], None]] = []
        self.last_refusal = ""
        self._meter = None
        self._lock = threading.RLock()
        self._store: StorePort | None = store
        self._ledger_port: LedgerPort = ledgers or LedgerFiles(self.ledger_path)
        self._tables: dict[str, dict] = {}  # add_table's public declarations, by table name

    @staticmethod
    def connect(url: str, *, token: str, **kwargs) -> Session:
        """A session on a curator's datasets (:class:`~dpwidgets.curator.client.RemoteSession`)."""
        return FACTORIES["remote"](url, token, **kwargs)

    @property
    def mode(self) -> Mode:
        """``"teaching"`` or ``"analyst"``, fixed at construction."""
        return self._mode

    @property
    def teaching(self) -> bool:
        """Whether the data is declared public."""
        return self._mode == "teaching"

    # -- datasets --------------------------------------------------------------------------
    @property
    def datasets(self) -> list[str]:
        """The names of the datasets, in the order they were added."""
        return list(self._datasets)

    def add_dataset(
        self,
        name: str,
        data,
        *,
        total_epsilon: float | None = 1.0,
        stand_in=None,
        description: str = "",
        privacy_unit: str = "row",
        facts: Mapping[str, Any] | None = None,
        allow_mechanisms: Iterable[str] = (),
        unit: Any = _UNSET,
    ) -> None:
        """Register a dataset (the data owner's call) and open its ledger.

        Parameters
        ----------
        name : str
            A name for this session. The ledger recognises the same data under another name (a
            content fingerprint is recorded with the budget), so a new name never resets it.
        data : array_like (1-D or 2-D) or pandas.DataFrame
            Query answers or item scores (SVT, top-c), histogram counts, a counting stream
            (1-D); a table of feature columns then the outcome (diagnostics); a series of
            histograms or of state streams (2-D); a DataFrame of numeric columns keeps its
            column names and dtypes as a public schema (synthetic data).
        total_epsilon : float, optional
            The budget cap; ``None`` when the ledger already records one.
        stand_in : array_like, DataFrame or {"continuous", "binary"}, optional
            A *public* stand-in of the same shape for previews; never derived from ``data``.
            Default for 1-D data: a Zipf profile of that length; a table must be given one
            (``"continuous"``/``"binary"`` build one from the public shape).
        description : str
            Shown in the meter.
        privacy_unit : {"row", "person"}
            The privacy unit. ``"row"`` (default): every guarantee protects one row, and says so.
            ``"person"``: the owner declares that each person contributes at most one row.
            (A table whose rows name their person: :meth:`add_table` with ``unit_column=``.)
        facts : mapping, optional
            Facts about the data that mechanisms rely on and an analyst may not lower:
            ``sensitivity``, ``monotonic``, ``threshold_sensitivity`` (SVT), ``cardinality``
            (dynamic histograms), ... Each is checked here, by its type (a bool, a finite number
            > 0, an integer >= 2, ...: :class:`~dpwidgets.mechanism.FactKind`; ``"false"`` is no
            bool), and against the data where it can be; a name no mechanism knows is refused
            (the error lists the known ones).
        allow_mechanisms : iterable of str
            Mechanisms registered outside dpwidgets that analysts may run on this dataset: a
            list of names (a string itself is refused).
        unit : {"row", "person"}
            Deprecated: the old name of ``privacy_unit`` (a DeprecationWarning says so).
        """
        privacy_unit = _renamed("unit", "privacy_unit", unit, privacy_unit, "row")
        if name in self._datasets:
            raise ValueError(f"dataset {name!r} is already in this session")
        _check_total(total_epsilon)
        held = catalog.entry(name, data, stand_in, description, privacy_unit, facts,
                             allow_mechanisms)
        self.hold(held, total_epsilon)

    def hold(self, held: Entry, total_epsilon: float | None = None) -> None:
        """Make a dataset its owner already checked releasable here: open its ledger through
        the ledger port (``total_epsilon`` ``None``: the recorded cap).

        ``held`` is a :class:`~dpwidgets.catalog.Entry` made from the owner's declarations
        (:func:`~dpwidgets.catalog.entry`, :func:`~dpwidgets.tables.view_entries`): what
        :meth:`add_dataset` and :meth:`add_table` hold, and a curator its views."""
        if held.name in self._datasets:
            raise ValueError(f"dataset {held.name!r} is already in this session")
        ledger = self._ledger_port.open(held, total_epsilon)
        held.ledger_name = ledger.dataset
        with self._lock:
            if self._store is None:
                self._store = ReleaseStore(self.ledger_path)
            self._datasets[held.name] = held
            self._ledgers[held.name] = ledger
            self._overdrafts[held.name] = []
        self._notify({"kind": "dataset", "dataset": held.name})

    def add_table(self, name: str, source, *, columns, unit_column: str | None = None,
                  max_rows: int = 1, table: str | None = None, total_epsilon: float = 1.0,
                  description: str = "", allow_mechanisms: Iterable[str] = (),
                  unit: Any = _UNSET, **views) -> list[str]:
        """Declare a table of records once -- a DataFrame, a CSV or Parquet file, a database
        table -- with its public schema (``columns``: kind and domain), the column naming the
        person each row belongs to (``unit_column``) and ``max_rows`` per person, and which
        columns feed which family (``items=``, ``time=``, ``snapshots=``,
        ``features=``/``outcome=``, ``attributes=``, ``rows=``, ``facts=``, ``totals=``,
        ``views=``; :func:`~dpwidgets.tables.declared_views`). Each view is a dataset
        ``"<name>/<view>"``; all share one budget. Nothing public is read from the data; views
        are queried by DuckDB (:mod:`dpwidgets.tables`). Returns the datasets.

        Every argument is checked when declared, before the source is read: ``unit_column`` a
        column name or ``None`` (one row per person), ``max_rows`` an integer in [1, 10000],
        ``total_epsilon`` a budget, ``rows`` an integer >= 2, ``allow_mechanisms`` a list of
        names, each view's ``facts`` of its type (:func:`~dpwidgets.catalog.check_facts`).
        ``unit=`` is the deprecated name of ``unit_column=`` (a DeprecationWarning says so).

        Previews run on a public stand-in of each view, built from the declarations alone.
        A counting view's stand-in sums to its declared public total -- ``totals={"items":
        20_000}`` or ``"total"`` in a ``views=`` spec (the owner's number: the rows the view
        counts, e.g. a published table size) -- else to ``rows=`` if declared, else to
        1,000,000 (Zipf over the items; Poisson counts per step). It is never derived from
        the data, and previews (an SVT threshold suggested on the stand-in, say) are only as
        realistic as this scale.

        Rows whose person is NULL are dropped inside the query engine before any view counts
        them: a row that names nobody cannot be bounded per person, and keeping them as one
        "unit" would let one added person change 2 ``max_rows`` rows. Rows outside a column's
        declared domain are dropped the same way."""
        from .tables import Table, declared_views, view_entries

        unit_column = _renamed("unit", "unit_column", unit, unit_column, None)
        catalog.check_allowed(allow_mechanisms)
        declared = {"source": source, "columns": columns, "unit_column": unit_column,
                    "max_rows": max_rows, "table": table, "total_epsilon": total_epsilon,
                    "description": description, "allow_mechanisms": list(allow_mechanisms),
                    **views}
        _check_total(total_epsilon)
        catalog.check_description(description)
        src = Table(source, columns, unit=unit_column, max_rows=max_rows, table=table,
                    distinct=views.pop("distinct", False))
        src.check_schema()
        entries = view_entries(name, src, declared_views(**views), load=self.teaching,
                               description=description, allowed=allow_mechanisms,
                               fingerprint=src.fingerprint())
        clash = [h.name for h in entries if h.name in self._datasets]
        if clash:
            raise ValueError(f"datasets {clash} are already in this session")
        for held in entries:
            self.hold(held, total_epsilon)
        self._tables[name] = declared
        return [h.name for h in entries]

    def declaration(self, dataset: str | None = None) -> str | None:
        """The ``add_table(...)`` call that declared a table view's table, as Python source
        (``session.add_table(...)``): the source's path and the owner's public declarations
        only -- schema, person column, bounds, views, facts, totals -- never a row of data.
        What the code a widget offers to copy starts with, so that it runs as it is in a fresh
        kernel. ``None`` for a dataset added with :meth:`add_dataset` (its data is the
        user's to add). A table declared on an in-memory DataFrame names it ``frame``."""
        held = self._dataset(dataset)
        declared = self._tables.get(held.budget) if held.budget else None
        return None if declared is None else declaration_call(held.budget, declared)

    def _dataset(self, name: str | None) -> Entry:
        if name is None:
            if not self._datasets:
                raise ValueError("this session has no dataset; call add_dataset() first")
            name = next(iter(self._datasets))
        try:
            return self._datasets[name]
        except (KeyError, TypeError):
            raise ValueError(f"unknown dataset {name!r}; this session has {self.datasets}") from None

    def describe(self, dataset: str | None = None) -> Description:
        """The owner's public declarations about a dataset (:class:`~dpwidgets.door.Description`):
        shape, schema, privacy unit, facts, domains. Never a number read from the data."""
        return Description.of(self._dataset(dataset))

    def opening_code(self, dataset: str | None = None) -> str:
        """The lines of Python that open this door on ``dataset`` again: the session, and a
        table view's :meth:`declaration` (so copied code runs as it is in a fresh kernel)."""
        declaration = None if dataset is None else self.declaration(dataset)
        if self.teaching:
            opening = ('session = Session("teaching")' if declaration else
                       'session = Session("teaching")  # then add the same public data')
        elif declaration:
            opening = f"session = Session(\"analyst\", ledger={self.ledger_path!r})"
        else:
            opening = (f"session = Session(\"analyst\", ledger={self.ledger_path!r})  # then "
                       f"add_dataset as its owner declared it")
        return opening + ("\n" + declaration if declaration else "")

    def size(self, dataset: str | None = None) -> int:
        """The public size (queries, items, cells; rows of a table) of a dataset."""
        return int(self._dataset(dataset).shape[0])

    def shape(self, dataset: str | None = None) -> tuple[int, ...]:
        """The public shape of a dataset."""
        return tuple(self._dataset(dataset).shape)

    def columns(self, dataset: str | None = None) -> list[str] | None:
        """The column names of a dataset added as a DataFrame (public schema), else None."""
        cols = self._dataset(dataset).columns
        return None if cols is None else list(cols)

    def unit(self, dataset: str | None = None) -> str:
        """The privacy unit the data owner declared: ``"row"`` or ``"person"``."""
        return self._dataset(dataset).unit

    def facts(self, dataset: str | None = None) -> dict:
        """The facts about the data its owner declared (public)."""
        return dict(self._dataset(dataset).facts)

    def domains(self, dataset: str | None = None) -> dict | None:
        """The attribute domains its owner declared for a table's columns (public), or None."""
        return self._dataset(dataset).domains

    def public_view(self, dataset: str | None = None) -> np.ndarray:
        """What a widget may draw: the data in teaching mode, the stand-in in analyst mode."""
        ds = self._dataset(dataset)
        return ds.data if self.teaching else ds.stand_in

    def stand_in(self, dataset: str | None = None) -> np.ndarray:
        """The dataset's public stand-in (read-only)."""
        return self._dataset(dataset).stand_in

    # -- budget ----------------------------------------------------------------------------
    def ledger(self, dataset: str | None = None) -> PrivacyLedger:
        """The privacy ledger of a dataset."""
        return self._ledgers[self._dataset(dataset).name]

    def spent(self, dataset: str | None = None) -> float:
        """Epsilon charged to a dataset's ledger (teaching overdrafts not included), to 12
        significant digits (0.3 after 0.1 + 0.2, not 0.30000000000000004)."""
        return _round_dust(self.ledger(dataset).spent)

    def remaining(self, dataset: str | None = None) -> float:
        """Epsilon still available on a dataset's ledger, to 12 significant digits (0.2
        after 0.8 of 1, not 0.19999999999999996): a release of exactly this much passes the
        ledger's exact cap check, one of more does not."""
        return _round_dust(self.ledger(dataset).remaining)

    def overdrafts(self, dataset: str | None = None) -> list[Overdraft]:
        """Teaching-mode runs past the cap (what analyst mode would have refused)."""
        return list(self._overdrafts[self._dataset(dataset).name])

    @property
    def meter(self):
        """The session's budget meter widget (created on first use).

        The view comes from ``FACTORIES`` (set by the package): the door itself never
        imports UI code."""
        if self._meter is None:
            self._meter = FACTORIES["meter"](self)
        return self._meter

    def observe(self, callback: Callable[[Session, dict], None]) -> None:
        """Call ``callback(session, event)`` after every dataset added and every release
        attempt (``event["kind"]`` is ``"dataset"``, ``"release"`` or ``"refused"``)."""
        self._listeners.append(callback)

    def unobserve(self, callback: Callable[[Session, dict], None]) -> None:
        """Stop calling ``callback``."""
        self._listeners = [c for c in self._listeners if c is not callback]

    def _notify(self, event: dict) -> None:
        notify(self, self._listeners, event)

    # -- deciding without the data ---------------------------------------------------------
    def _request(self, ds: Entry, mechanism: str, params: dict, *, release: bool):
        """Everything decided before the data is read: (mechanism, canonical params, cost)
        (:func:`~dpwidgets.catalog.decide`)."""
        return catalog.decide(ds, mechanism, params, teaching=self.teaching, release=release)

    def cost(self, dataset: str | None, mechanism: str | None = None, **params) -> float:
        """What a release with these parameters would charge (before any cache hit), in the
        order of :meth:`release`: ``cost(dataset, mechanism, **params)``.

        The old order ``cost(mechanism, dataset)`` still works for a deprecation period (a
        DeprecationWarning): a first argument that names a mechanism and no dataset is one;
        a name that is both is refused, because the call would be ambiguous."""
        dataset, mechanism = self._ordered(dataset, mechanism)
        params.pop("run", None)
        return self._request(self._dataset(dataset), mechanism, params, release=False)[2]

    def check_release(self, dataset: str | None, mechanism: str, **params) -> float:
        """Refuse a request as :meth:`release` would, before anything is read or charged
        (parameters, declared facts, the owner's policy, the cost's range); else return its
        cost. What a curator's client asks itself before a round trip."""
        params.pop("run", None)
        return self._request(self._dataset(dataset), mechanism, params, release=True)[2]

    def _ordered(self, dataset, mechanism) -> tuple:
        """``(dataset, mechanism)`` of a :meth:`cost` call, swapping the deprecated order."""
        def kinds(name):
            ok = isinstance(name, str)
            return ok and name in MECHANISMS, ok and name in self._datasets

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

    def release_key(self, dataset: str | None, mechanism: str, **params) -> str:
        """The cache key of a release (it includes the data's fingerprint; stays in Python)."""
        ds = self._dataset(dataset)
        run = params.pop("run", 0)
        mech, p, _ = self._request(ds, mechanism, params, release=False)
        return self._key(ds, mech.name, p, run)

    def preview_key(self, dataset: str | None, mechanism: str, **params) -> str:
        """A key naming a preview by its canonical parameters (the same for two requests that
        would preview the same thing): what a widget caches previews by. Public: it holds no
        fingerprint and no secret, so a curator's session computes it the same way."""
        ds = self._dataset(dataset)
        params.pop("run", None)
        mech, p, _ = self._request(ds, mechanism, params, release=False)
        return json.dumps({"dataset": ds.name, "mechanism": mech.name,
                           "params": canonical(p)}, sort_keys=True)

    def _key(self, ds: Entry, mechanism: str, params: dict, run: int) -> str:
        blob = json.dumps(
            {"dataset": ds.ledger_name, "data": ds.fingerprint, "mechanism": mechanism,
             "params": canonical(params), "run": int(run)},
            sort_keys=True,
        )
        return self._store.key(blob)

    def is_cached(self, dataset: str | None, mechanism: str, **params) -> bool:
        """Whether a release with these parameters would be a free replay."""
        ds = self._dataset(dataset)
        key = self.release_key(ds.name, mechanism, **params)
        return self._store.get(ds.ledger_name, key) is not None

    def check_budget(self, dataset: str | None, epsilon: float, label: str) -> None:
        """Refuse, before anything is charged, a group of releases costing ``epsilon`` in all
        (a widget making a DP fit and then a diagnostic of it for one click). Teaching mode
        never refuses (runs past the cap are overdrafts)."""
        ds = self._dataset(dataset)
        epsilon = check_epsilon(epsilon)
        ledger = self._ledgers[ds.name]
        remaining = ledger.remaining
        if self.teaching or epsilon <= remaining * (1 + 1e-12):
            return
        exc = BudgetExceededError(ds.ledger_name, epsilon, remaining, ledger.total_epsilon, label,
                                  asked=ds.name)
        self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
        raise exc

    # -- preview and release ---------------------------------------------------------------
    def preview(self, dataset: str | None, mechanism: str, *, rng=None, **params) -> Release:
        """Run a mechanism on the public stand-in: free, never touches the data.

        The result is a :class:`Release` with ``preview=True``; its ``result`` holds the
        engine's full result (the stand-in is public, so its secret state may be drawn)."""
        ds = self._dataset(dataset)
        params.pop("run", None)
        mech, p, cost = self._request(ds, mechanism, params, release=False)
        rng = check_rng(rng) if rng is not None else self.rng
        values = ds.values_for(mech, ds.stand_in)
        result = mech.run(values, p, rng)
        return Release(
            ds.ledger_name, mech.name, mech.label(p), p, cost, mech.outputs(result, p),
            charged=False, time=time.time(), result=result, preview=True,
            guarantee=catalog.guarantee(ds, mech, p, cost),
        )

    def release(
        self, dataset: str | None, mechanism: str, *, label: str | None = None, run: int = 0,
        idempotency_key: str | None = None, **params,
    ) -> Release:
        """Release a mechanism's DP output on a dataset, charging its ledger once.

        Parameters
        ----------
        dataset : str or None
            The dataset name (``None``: the first one added).
        mechanism : str
            A key of :data:`MECHANISMS`.
        label : str, optional
            The ledger label (default: derived from the parameters).
        run : int
            Part of the cache key: another ``run`` of the same parameters draws fresh noise
            (and is charged again).
        idempotency_key : str, optional
            Analyst mode: names this attempt (1 to 200 printable characters). A retry with the
            same key, in this process or another sharing the ledger, charges nothing and gets
            the one output the key paid for (:class:`~dpwidgets.door.Attempt`).
        **params
            The mechanism's parameters (``epsilon=`` always).

        Raises
        ------
        ParameterError, PrivacyPolicyError, BudgetExceededError
            Refusals (all :class:`~dpwidgets.engine.errors.ReleaseRefused`): nothing was read,
            drawn or charged.
        ReleaseFailed
            Analyst mode: the mechanism failed on the data (fixed message; cost charged).
        """
        ds = self._dataset(dataset)
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
            mech, p, epsilon = self._request(ds, mechanism, params, release=True)
        except ReleaseRefused as exc:
            self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise
        label = label or mech.label(p)
        key = self._key(ds, mech.name, p, run)
        guarantee = catalog.guarantee(ds, mech, p, epsilon, sealed=not self.teaching)
        with self._lock:
            cached = self._store.get(ds.ledger_name, key)
            claim = None
            if cached is None and not self.teaching:
                # Charge before the data is read. With an idempotency key the charge is a
                # claim, which may find the output another attempt with that key stored.
                try:
                    claim = self._charge(ds, epsilon, label, key, idempotency_key)
                except BudgetExceededError as exc:
                    raise _asked_for(exc, ds.name) from None
                cached = claim.stored if claim is not None else None
            if cached is not None:
                release = Release(
                    ds.ledger_name, mech.name, cached["label"], cached["params"],
                    cached["epsilon"], cached["output"], charged=False, time=cached["time"],
                    result=cached.get("result"), overdraft=cached.get("overdraft", False),
                    key=key, guarantee=guarantee,
                )
                self._notify({"kind": "release", "dataset": ds.name, "release": release})
                return release
            if self.teaching:
                result, output, overdraft = self._run_teaching(ds, mech, p, epsilon, label, key)
            else:
                try:
                    result, output = self._run_sealed(ds, mech, p, epsilon)
                except ReleaseFailed:
                    if claim is not None:
                        claim.failed()
                    raise
                overdraft = False
            row = {"mechanism": mech.name, "label": label, "params": p, "epsilon": epsilon,
                   "output": output, "time": time.time()}
            stored = self._store.put(ds.ledger_name, key, row)  # the first output stored wins
            if claim is not None:
                claim.done()
                output, row = stored["output"], stored
            if self.teaching:
                # In-process only: the engine result (with its secret state) is never persisted.
                row["result"], row["overdraft"] = result, overdraft
            release = Release(
                ds.ledger_name, mech.name, label, p, epsilon, output, charged=True,
                time=row["time"], result=result if self.teaching else None,
                overdraft=overdraft, key=key, guarantee=guarantee,
            )
        self._notify({"kind": "release", "dataset": ds.name, "release": release})
        return release

    def release_with_key(self, idempotency_key: str | None, dataset: str | None,
                         mechanism: str, **kwargs) -> Release:
        """Deprecated: :meth:`release` with ``idempotency_key=`` (a DeprecationWarning)."""
        warnings.warn("release_with_key(key, ...) is deprecated: write release(..., "
                      "idempotency_key=key)", DeprecationWarning, stacklevel=2)
        return self.release(dataset, mechanism, idempotency_key=idempotency_key, **kwargs)

    def _charge(self, ds: Entry, epsilon: float, label: str, key: str,
                idempotency_key: str | None = None) -> Attempt | None:
        """Analyst mode: charge before the data is read (a refusal reads nothing).

        Returns ``None``, or with an ``idempotency_key`` the attempt's claim on it:
        ``claim.stored`` (another attempt's output, to replay), ``claim.done()`` once the
        output is stored, ``claim.failed()`` if the run failed."""
        ledger = self._ledgers[ds.name]
        if idempotency_key is not None:
            return Attempt(ledger, self._store, self._ledger_port, self._notify,
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
            self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise exc from None

    def _run_sealed(self, ds: Entry, mech: Mechanism, p: dict, epsilon: float):
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
            self._notify({"kind": "refused", "dataset": ds.name, "message": FAILED})
            raise ReleaseFailed(FAILED)
        return result, output

    def _run_teaching(self, ds: Entry, mech: Mechanism, p: dict, epsilon: float, label: str,
                      key: str):
        """Teaching mode: the data is public, so run first, then record (overdraft allowed)."""
        values = ds.input_for(mech)
        try:
            result = mech.run(values, p, self.rng)
        except (ValueError, TypeError) as exc:
            self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise
        output = mech.outputs(result, p)
        if mech.spent is not None and not math.isclose(
                float(mech.spent(result, p)) * ds.unit_rows, epsilon, rel_tol=1e-9):
            raise RuntimeError(f"{mech.name!r} spent a different epsilon than it was charged")
        ledger = self._ledgers[ds.name]
        try:
            ledger.spend(epsilon, label, key=f"{key}#{uuid.uuid4().hex}")
            return result, output, False
        except BudgetExceededError:
            self._overdrafts[ds.name].append(Overdraft(epsilon, label, time.time()))
            return result, output, True

    def close(self) -> None:
        """Close the ledgers' and the release store's database connections."""
        for ledger in self._ledgers.values():
            ledger.close()
        if self._store is not None:
            self._store.close()

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{n}: {self._ledgers[n].spent:.3g}/{self._ledgers[n].total_epsilon:.3g}"
            for n in self._datasets
        )
        return f"Session(mode={self.mode!r}, ledger={self.ledger_path!r}, budgets={{{parts}}})"
