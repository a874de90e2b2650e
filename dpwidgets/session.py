"""The session: the local door between widgets and confidential data.

A :class:`Session` implements the door's protocol (:class:`dpwidgets.door.Door`) for the
datasets in this process. It is composed of a ledger port (:class:`~dpwidgets.door.LedgerPort`:
one :class:`~dpwidgets.persistence.ledger.PrivacyLedger` per dataset by default, a curator's
joint ledgers for an analyst's door) and a store port (the outputs already paid for). Widgets
and notebooks never hold confidential records: they ask the door to
:meth:`~Session.preview` a mechanism on the public stand-in (free) or to
:meth:`~Session.release` it on the data (charged once). Every mechanism is a declared spec
(:class:`~dpwidgets.mechanism.Mechanism`, in each family's ``spec`` module under
:mod:`dpwidgets.families`); the door only reads specs.

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

How it is built
---------------
A session is a facade over three parts, one module each: its
:class:`~dpwidgets.registry.Registry` (the datasets it holds and its tables' public
declarations), its :class:`~dpwidgets.budgets.Budgets` (their ledgers, opened through the ledger
port) and its :class:`~dpwidgets.releasing.ReleasePipeline` (the steps above). Every public
method is one of theirs, asked on the session's behalf.

Examples: ``README.md`` ("Modes and the budget") and ``CONTRIBUTING.md``. A curator's datasets:
:meth:`Session.connect`.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from . import catalog
from . import families as _families  # noqa: F401  (registers the built-in mechanisms)
from .budgets import Budgets
from .catalog import UNITS, Entry, fingerprint, table_stand_in
from .declarations import python_literal  # noqa: F401 (its old home)
from .door import Description, LedgerFiles, LedgerPort, StorePort, notify
from .engine.errors import DPWidgetsError, ParameterError, PrivacyPolicyError, ReleaseFailed
from .engine.validation import check_rng
from .families.diagnostics.spec import MODELS, OUTCOMES, model_predictions
from .mechanism import (
    MECHANISMS,
    Fact,
    Mechanism,
    Overdraft,
    Release,
    register_mechanism,
)
from .persistence import PrivacyLedger
from .persistence.store import ReleaseStore
from .registry import Registry
from .releasing import ReleasePipeline

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
    >>> session = Session(seed=0)  # teaching: the default mode
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
        generator = check_rng(rng) if rng is not None else np.random.default_rng(seed)
        self.warn_fraction = float(warn_fraction)
        self._listeners: list[Callable[[Session, dict], None]] = []
        self.last_refusal = ""
        self._meter = None
        self._lock = threading.RLock()
        self._registry = Registry()
        self._budgets = Budgets(ledgers or LedgerFiles(self.ledger_path))
        # Sealed runs go through this session's _run_sealed, looked up at each run.
        self._releases = ReleasePipeline(
            self._registry, self._budgets, store, teaching=mode == "teaching", rng=generator,
            lock=self._lock, notify=self._notify,
            sealed=lambda ds, mech, p, epsilon: self._run_sealed(ds, mech, p, epsilon))
        # The parts' tables under the names code reading a session's internals knows.
        self._datasets, self._tables = self._registry.entries, self._registry.tables
        self._ledgers, self._overdrafts = self._budgets.ledgers, self._budgets.overdrawn
        self._ledger_port = self._budgets.port

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

    @property
    def rng(self) -> np.random.Generator:
        """The generator of teaching runs and of previews (never of an analyst release)."""
        return self._releases.rng

    @rng.setter
    def rng(self, rng: np.random.Generator) -> None:
        self._releases.rng = rng

    @property
    def _store(self) -> StorePort | None:
        """The release store (opened next to the ledger when the first dataset is held)."""
        return self._releases.store

    # -- datasets --------------------------------------------------------------------------
    @property
    def datasets(self) -> list[str]:
        """The names of the datasets, in the order they were added."""
        return self._registry.names

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
        held = self._registry.dataset_entry(
            name, data, total_epsilon=total_epsilon, stand_in=stand_in, description=description,
            privacy_unit=privacy_unit, facts=facts, allow_mechanisms=allow_mechanisms)
        self.hold(held, total_epsilon)

    def hold(self, held: Entry, total_epsilon: float | None = None) -> None:
        """Make a dataset its owner already checked releasable here: open its ledger through
        the ledger port (``total_epsilon`` ``None``: the recorded cap).

        ``held`` is a :class:`~dpwidgets.catalog.Entry` made from the owner's declarations
        (:func:`~dpwidgets.catalog.entry`, :func:`~dpwidgets.tables.view_entries`): what
        :meth:`add_dataset` and :meth:`add_table` hold, and a curator its views."""
        self._registry.refuse_taken(held.name)
        ledger = self._budgets.open(held, total_epsilon)
        with self._lock:
            if self._releases.store is None:
                self._releases.store = ReleaseStore(self.ledger_path)
            self._registry.add(held)
            self._budgets.add(held.name, ledger)
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
        unit_column = _renamed("unit", "unit_column", unit, unit_column, None)
        entries, declared = self._registry.table_entries(
            name, source, columns=columns, unit_column=unit_column, max_rows=max_rows,
            table=table, total_epsilon=total_epsilon, description=description,
            allow_mechanisms=allow_mechanisms, teaching=self.teaching, views=views)
        for held in entries:
            self.hold(held, total_epsilon)
        self._registry.declare(name, declared)
        return [h.name for h in entries]

    def declaration(self, dataset: str | None = None) -> str | None:
        """The ``add_table(...)`` call that declared a table view's table, as Python source
        (``session.add_table(...)``): the source's path and the owner's public declarations
        only -- schema, person column, bounds, views, facts, totals -- never a row of data.
        What the code a widget offers to copy starts with, so that it runs as it is in a fresh
        kernel. ``None`` for a dataset added with :meth:`add_dataset` (its data is the
        user's to add). A table declared on an in-memory DataFrame names it ``frame``."""
        return self._registry.declaration(dataset)

    def _dataset(self, name: str | None) -> Entry:
        return self._registry.get(name)

    def describe(self, dataset: str | None = None) -> Description:
        """The owner's public declarations about a dataset (:class:`~dpwidgets.door.Description`):
        shape, schema, privacy unit, facts, domains. Never a number read from the data."""
        return self._registry.describe(dataset)

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
        return self._budgets.ledger(self._dataset(dataset).name)

    def spent(self, dataset: str | None = None) -> float:
        """Epsilon charged to a dataset's ledger (teaching overdrafts not included), to 12
        significant digits (0.3 after 0.1 + 0.2, not 0.30000000000000004)."""
        return self._budgets.spent(self._dataset(dataset).name)

    def remaining(self, dataset: str | None = None) -> float:
        """Epsilon still available on a dataset's ledger, to 12 significant digits (0.2
        after 0.8 of 1, not 0.19999999999999996): a release of exactly this much passes the
        ledger's exact cap check, one of more does not."""
        return self._budgets.remaining(self._dataset(dataset).name)

    def overdrafts(self, dataset: str | None = None) -> list[Overdraft]:
        """Teaching-mode runs past the cap (what analyst mode would have refused)."""
        return self._budgets.overdrafts(self._dataset(dataset).name)

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
        return self._releases.decide(ds, mechanism, params, release=release)

    def cost(self, dataset: str | None, mechanism: str | None = None, **params) -> float:
        """What a release with these parameters would charge (before any cache hit), in the
        order of :meth:`release`: ``cost(dataset, mechanism, **params)``.

        The old order ``cost(mechanism, dataset)`` still works for a deprecation period (a
        DeprecationWarning): a first argument that names a mechanism and no dataset is one;
        a name that is both is refused, because the call would be ambiguous."""
        dataset, mechanism = self._releases.order(dataset, mechanism)
        return self._releases.cost(dataset, mechanism, params)

    def check_release(self, dataset: str | None, mechanism: str, **params) -> float:
        """Refuse a request as :meth:`release` would, before anything is read or charged
        (parameters, declared facts, the owner's policy, the cost's range); else return its
        cost. What a curator's client asks itself before a round trip."""
        return self._releases.cost(dataset, mechanism, params, release=True)

    def release_key(self, dataset: str | None, mechanism: str, **params) -> str:
        """The cache key of a release (it includes the data's fingerprint; stays in Python)."""
        return self._releases.release_key(dataset, mechanism, params)

    def preview_key(self, dataset: str | None, mechanism: str, **params) -> str:
        """A key naming a preview by its canonical parameters (the same for two requests that
        would preview the same thing): what a widget caches previews by. Public: it holds no
        fingerprint and no secret, so a curator's session computes it the same way."""
        return self._releases.preview_key(dataset, mechanism, params)

    def is_cached(self, dataset: str | None, mechanism: str, **params) -> bool:
        """Whether a release with these parameters would be a free replay."""
        return self._releases.is_cached(dataset, mechanism, params)

    def check_budget(self, dataset: str | None, epsilon: float, label: str) -> None:
        """Refuse, before anything is charged, a group of releases costing ``epsilon`` in all
        (a widget making a DP fit and then a diagnostic of it for one click). Teaching mode
        never refuses (runs past the cap are overdrafts)."""
        self._releases.check_budget(dataset, epsilon, label)

    # -- preview and release ---------------------------------------------------------------
    def preview(self, dataset: str | None, mechanism: str, *, rng=None, **params) -> Release:
        """Run a mechanism on the public stand-in: free, never touches the data.

        The result is a :class:`Release` with ``preview=True``; its ``result`` holds the
        engine's full result (the stand-in is public, so its secret state may be drawn)."""
        return self._releases.preview(dataset, mechanism, params, rng)

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
        return self._releases.release(dataset, mechanism, params, label=label, run=run,
                                      idempotency_key=idempotency_key)

    def release_with_key(self, idempotency_key: str | None, dataset: str | None,
                         mechanism: str, **kwargs) -> Release:
        """Deprecated: :meth:`release` with ``idempotency_key=`` (a DeprecationWarning)."""
        warnings.warn("release_with_key(key, ...) is deprecated: write release(..., "
                      "idempotency_key=key)", DeprecationWarning, stacklevel=2)
        return self.release(dataset, mechanism, idempotency_key=idempotency_key, **kwargs)

    def _run_sealed(self, ds: Entry, mech: Mechanism, p: dict, epsilon: float):
        """A sealed run on the data (:meth:`~dpwidgets.releasing.ReleasePipeline.run_sealed`)."""
        return self._releases.run_sealed(ds, mech, p, epsilon)

    def close(self) -> None:
        """Close the ledgers' and the release store's database connections."""
        self._budgets.close()
        self._releases.close()

    def __repr__(self) -> str:
        return (f"Session(mode={self.mode!r}, ledger={self.ledger_path!r}, "
                f"budgets={{{self._budgets.summary()}}})")
