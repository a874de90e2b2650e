"""The privacy ledger: a persistent, process-safe record of the budget spent on each dataset.

The ledger is the product's safety catch: persistent, shared by every process that opens the
same database, never exceedable, never reset, and losing nothing on a crash.

Which database
--------------
One :class:`PrivacyLedger` class, one accounting implementation, two databases:

* **SQLite** (a file path, the default): one curator, or one analyst's notebooks, on one
  machine. Every process opening the same file shares its budgets; nothing to run or manage.
  Do not put the file on a network share: SQLite's locking is only as good as the file
  system's, and several machines need a server. A new file is created readable and writable
  by its owner only (mode 0600; SQLite gives its journal the same mode): it holds the release
  store's secret and every released output.
* **PostgreSQL** (a ``postgresql://`` or ``postgres://`` URL): several curator replicas, on
  several machines, charging one set of budgets. Needs ``psycopg`` (``pip install
  'dpwidgets[curator]'``). The tables live in the schema ``dpwidgets_ledger`` of the URL's
  database, created on first use (the user needs the CREATE privilege on the database once).

The databases are reached through :mod:`dpwidgets.persistence.backend`'s interface; how each
holds its locks is described there.

Joint spends
------------
A curator may give each analyst a cap of their own on a dataset besides the dataset's cap:
``dataset_ledger.spend(eps, label, key=k, jointly=[analyst_ledger])`` charges both in one
transaction on one database, or neither (see :meth:`PrivacyLedger.spend`):

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
>>> data = PrivacyLedger(path, dataset="visits", total_epsilon=1.0)
>>> alice = PrivacyLedger(path, dataset="visits/alice", total_epsilon=0.3)
>>> data.spend(0.2, "histogram", key="r1", jointly=[alice])
True
>>> data.spend(0.2, "histogram", key="r1", jointly=[alice])  # a retry: free
False
>>> data.spend(0.2, "roc", key="r2", jointly=[alice])  # doctest: +ELLIPSIS
Traceback (most recent call last):
dpwidgets.engine.errors.BudgetExceededError: privacy budget of dataset 'visits/alice' exceeded: ...
>>> round(data.spent, 6), round(alice.spent, 6)
(0.2, 0.2)

Composition
-----------
Spends on the whole dataset add up (sequential composition; Dwork and Roth 2014, Thm. 3.16).
A release over disjoint parts of the data declares them with ``partition=`` and ``parts=``:
within one partition, an individual belongs to exactly one part, so what that partition costs
is the largest total over its parts (parallel composition; McSherry 2009, Thm. 4). Parts of
*different* partitions may overlap, so different partitions add up. The ledger therefore
charges

    spent = sum(whole-dataset spends) + sum over partitions of max over parts (spends on part),

which bounds the privacy loss of every individual and is never exceeded.

Accounting is O(1) in the number of spends: the ledger keeps running totals, exact rational
numbers, in the database (see :mod:`dpwidgets.persistence.totals`).

The ledger's parts
------------------
:class:`PrivacyLedger` itself is the accounting core: it opens the database, runs every
transaction (repairing stale totals), and checks and records each spend against every cap it
must fit. Each other concern is a mixin in a module of its own, running in the core's
transactions on its backend:

* :class:`~dpwidgets.persistence.datasets.Datasets`: how a dataset is found by its names and
  fingerprints, and an old file migrated;
* :class:`~dpwidgets.persistence.totals.Totals`: the running totals, what a spend makes of
  them, and their rebuild from the spends;
* :class:`~dpwidgets.persistence.journal.Journal`: the reads (``spent``, ``remaining``,
  ``summary()``, ``recent()``, ``cost_of()``, ...);
* :class:`~dpwidgets.persistence.claims.Claims`: the claims on idempotency keys (``claim()``,
  ``renew()``, ``finish()``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

from ..engine.errors import BudgetExceededError
from ..engine.validation import check_epsilon
from .claims import Claims
from .datasets import Datasets, normalise_name
from .journal import Journal
from .paths import is_postgres_url
from .postgres import PostgresBackend
from .sqlite import SQLiteBackend
from .totals import Totals, _Stale

__all__ = ["PrivacyLedger"]

# Relative slack when comparing a new total with the cap, so that spending exactly what
# ``remaining`` reports (itself rounded to a float) is allowed; far below any meaningful epsilon.
_TOLERANCE = 1e-9


def _parts_json(parts: tuple[str, ...] | None) -> str | None:
    return json.dumps(list(parts)) if parts is not None else None


def _where(partition: str | None, parts: tuple[str, ...] | None) -> str:
    return "" if partition is None else f" on parts {list(parts or ())} of {partition!r}"


class PrivacyLedger(Datasets, Totals, Journal, Claims):
    """Budget accounting for one dataset, persisted in SQLite or PostgreSQL.

    Parameters
    ----------
    path : str or path-like, optional
        A ``postgresql://`` (or ``postgres://``) URL for a ledger in a PostgreSQL database
        (several curator replicas; see the module docstring). Anything else is a SQLite file
        (created if missing; ``~`` expanded, symlinks resolved; a file with more than one hard
        link, a ``file:`` URI and an empty path are refused), ``":memory:"`` for a throw-away
        ledger (teaching mode), or ``None`` for :func:`default_ledger_path`.
    dataset : str
        The name the spends are keyed by. Every process opening the same database and dataset
        shares one budget. Names are compared normalised (see
        :func:`~dpwidgets.persistence.datasets.normalise_name`).
    total_epsilon : float, optional
        The cap. Required the first time a dataset is recorded. When the dataset is found by
        its recorded name, a given cap must equal the recorded one (a cap cannot be changed
        by reopening); when it is found through an alias (another spelling of the name, or
        the fingerprint) the recorded cap silently wins.
    timeout : float
        Seconds to wait for another process's transaction before giving up.
    fingerprint : str, optional
        A fingerprint of the data's content. A dataset recorded under another name with the
        same fingerprint is the same data: this ledger then binds to its budget.

    Attributes
    ----------
    dataset : str
        The recorded (canonical) name of the dataset whose budget this ledger charges.
    requested_name : str
        The name asked for.
    alias_of : str or None
        ``dataset`` when it differs from ``requested_name``, else ``None``.
    persistent : bool
        ``False`` for a ``":memory:"`` ledger.
    path : str
        The resolved file path, ``":memory:"``, or the PostgreSQL URL without its password
        and options.
    total_epsilon : float
        The cap.

    Raises
    ------
    ValueError
        On a bad path or URL, a bad name or cap, a cap that differs from the recorded one, a
        new dataset without a cap, or a name and a fingerprint that find two different
        datasets.
    ConnectionError
        The PostgreSQL server cannot be reached or refuses the login (the message never
        holds the password).

    Examples
    --------
    >>> ledger = PrivacyLedger(":memory:", dataset="demo", total_epsilon=1.0)
    >>> ledger.spend(0.25, label="histogram")
    True
    >>> round(ledger.remaining, 6)
    0.75
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        dataset: str,
        total_epsilon: float | None = None,
        timeout: float = 60.0,
        fingerprint: str | None = None,
    ):
        if not isinstance(dataset, str) or not dataset or not normalise_name(dataset):
            raise ValueError(f"dataset must be a non-empty string, got {dataset!r}")
        if fingerprint is not None and (not isinstance(fingerprint, str) or not fingerprint):
            raise ValueError("fingerprint must be a non-empty string or None")
        if total_epsilon is not None:
            total_epsilon = check_epsilon(total_epsilon, "total_epsilon")
        self.requested_name = dataset
        self._lock = threading.RLock()
        self._timeout = float(timeout)
        self._db = PostgresBackend(path, timeout) if is_postgres_url(path) else SQLiteBackend(path, timeout)
        self.path = self._db.path
        self.persistent = self._db.persistent
        try:
            self._transaction(
                lambda: self._open_dataset(dataset, total_epsilon, fingerprint), write=True
            )
            self._db.after_open()
        except BaseException:
            self._db.close()
            raise

    @property
    def _conn(self):
        """The database connection (``sqlite3`` or ``psycopg``)."""
        return self._db.conn

    # -- transactions ---------------------------------------------------------------------
    def _transaction(self, body: Callable, *, write: bool, lock: Sequence[str] = ()):
        """Run ``body()`` in one transaction; a write transaction first locks ``lock``'s totals.

        A deadlock or serialization failure (PostgreSQL; none is expected) rolls everything
        back and runs ``body`` again, for up to ``timeout`` seconds.
        """
        db = self._db
        deadline = time.monotonic() + self._timeout
        delay = 1e-3
        with self._lock:
            while True:
                db.begin(write)
                try:
                    if write:
                        db.lock(lock)
                    result = body()
                    db.commit()
                    return result
                except BaseException as exc:
                    with contextlib.suppress(Exception):
                        db.rollback()
                    if not db.retryable(exc) or time.monotonic() >= deadline:
                        raise
                time.sleep(delay * random.uniform(0.5, 1.5))
                delay = min(2 * delay, 0.1)

    def _repair(self, dataset: str) -> None:
        """Rebuild the running totals of a dataset that has spends they miss."""
        self._transaction(lambda: self._rebuild(dataset), write=True, lock=[dataset])

    def _read(self, body):
        """Run a read-only ``body()`` on a consistent snapshot, rebuilding stale totals."""
        try:
            return self._transaction(body, write=False)
        except _Stale as stale:
            self._repair(stale.dataset)
            return self._transaction(body, write=False)

    def _write(self, body, datasets: Sequence[str]):
        """Run ``body()`` in a write transaction holding the totals of ``datasets``."""
        for _ in datasets:
            try:
                return self._transaction(body, write=True, lock=datasets)
            except _Stale as stale:
                # Spends recorded by an older writer: rebuild the totals once, then charge.
                self._repair(stale.dataset)
        return self._transaction(body, write=True, lock=datasets)

    # -- writing --------------------------------------------------------------------------
    @staticmethod
    def _check_parts(partition, parts) -> tuple[str | None, tuple[str, ...] | None]:
        if partition is None and parts is None:
            return None, None
        if not isinstance(partition, str) or not partition:
            raise ValueError("partition must be a non-empty string naming a partition of the data")
        if parts is None or isinstance(parts, str):
            raise ValueError("parts must be a list of the part names the release touches")
        parts = tuple(str(p) for p in parts)
        if not parts:
            raise ValueError("parts must name at least one part")
        if len(set(parts)) != len(parts):
            raise ValueError("parts must not repeat a part")
        return partition, parts

    def _joint(self, jointly) -> list[PrivacyLedger]:
        """This ledger and the ``jointly`` ones, checked: one database, distinct datasets."""
        if isinstance(jointly, PrivacyLedger):
            jointly = (jointly,)
        ledgers = [self, *jointly]
        for other in ledgers[1:]:
            if not isinstance(other, PrivacyLedger):
                raise ValueError(
                    f"jointly must list PrivacyLedger objects, got {type(other).__name__}"
                )
            if not self._db.same_database(other._db):
                raise ValueError(
                    f"a joint spend charges every ledger in one transaction, so they must be "
                    f"in one database: dataset {other.dataset!r} is in {other.path}, dataset "
                    f"{self.dataset!r} in {self.path}. Open both on the same file or URL."
                )
        names = [ledger.dataset for ledger in ledgers]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(
                    f"a joint spend names the budget of dataset {name!r} twice (two ledgers, "
                    f"or two aliases, of one dataset); charge each budget once"
                )
        return ledgers

    def _recorded(
        self,
        dataset: str,
        key: str,
        epsilon: float,
        partition: str | None,
        parts: tuple[str, ...] | None,
    ) -> bool:
        """Whether ``key`` is recorded for ``dataset``; a ValueError if for another release."""
        row = self._db.execute(
            "SELECT epsilon, partition, parts FROM spends WHERE dataset = ? AND key = ?",
            (dataset, key),
        ).fetchone()
        if row is None:
            return False
        recorded_parts = tuple(json.loads(row[2])) if row[2] is not None else None
        same = (
            row[0] == epsilon
            and row[1] == partition
            and (recorded_parts is None) == (parts is None)
            and sorted(recorded_parts or ()) == sorted(parts or ())
        )
        if not same:
            raise ValueError(
                f"idempotency key {key!r} is already recorded for another spend "
                f"(epsilon={row[0]:.6g}{_where(row[1], recorded_parts)}); it cannot "
                f"be reused for epsilon={epsilon:.6g}{_where(partition, parts)}. A "
                f"key names one release: use a new key for a new one."
            )
        return True

    def spend(
        self,
        epsilon: float,
        label: str = "release",
        *,
        partition: str | None = None,
        parts: Iterable[str] | None = None,
        key: str | None = None,
        jointly: Iterable[PrivacyLedger] = (),
    ) -> bool:
        """Record a spend of ``epsilon``, or raise :class:`BudgetExceededError`.

        Parameters
        ----------
        epsilon : float
            The privacy cost of the release (> 0).
        label : str
            What was released, shown in the meter and in error messages.
        partition, parts : str and list of str, optional
            Declare a release over disjoint parts of the data: each named part of the named
            partition is charged ``epsilon`` (parallel composition; see the module docstring).
        key : str, optional
            An idempotency key: if a spend with this key is already recorded, nothing is
            charged and ``False`` is returned. Used to replay cached releases for free and to
            retry safely after a crash. A key names one release: reusing it with another
            epsilon, partition or parts is an error.
        jointly : iterable of PrivacyLedger, optional
            Other budgets the same release must also fit in, e.g. an analyst's own cap on this
            dataset beside the dataset's cap. Every ledger is charged the same spend (same
            epsilon, label, partition, parts and key) in one transaction: all of them or none.
            They must be in this ledger's database (the same SQLite file, or the same
            PostgreSQL server and database) and charge distinct datasets. A ``partition``
            name must mean the same partition of the same data in every one of them. With a
            ``key``, each ledger records it at most once: a retry charges only the ledgers
            that have not recorded it yet (normally none).

        Returns
        -------
        bool
            ``True`` if a new spend was recorded (on at least one ledger), ``False`` if
            ``key`` was already recorded (on every ledger).

        Raises
        ------
        BudgetExceededError
            The spend would exceed the cap of a ledger (the error's ``dataset``,
            ``remaining`` and ``total`` are that ledger's); nothing was recorded anywhere.
        ValueError
            A bad argument, ``key`` recorded with another epsilon, partition or parts, or
            ``jointly`` ledgers in another database or charging the same dataset twice.
        """
        epsilon, label, partition, parts, ledgers = self._spend_args(
            epsilon, label, partition, parts, key, jointly
        )

        def body() -> bool:
            return self._spend_in(ledgers, epsilon, label, partition, parts, key)

        return self._write(body, [ledger.dataset for ledger in ledgers])

    def _spend_args(self, epsilon, label, partition, parts, key, jointly):
        """The checked arguments of a spend: (epsilon, label, partition, parts, ledgers)."""
        epsilon = check_epsilon(epsilon)
        if not isinstance(label, str):
            raise ValueError(f"label must be a string, got {label!r}")
        partition, parts = self._check_parts(partition, parts)
        if key is not None and not isinstance(key, str):
            raise ValueError(f"key must be a string or None, got {type(key).__name__}")
        return epsilon, label, partition, parts, self._joint(jointly)

    def _spend_in(self, ledgers, epsilon, label, partition, parts, key) -> bool:
        """The spend, inside a write transaction holding the totals of ``ledgers``; whether a
        new spend was recorded on at least one of them."""
        # Check every budget first, then write: a refusal leaves nothing to roll back
        # (the transaction would undo it anyway).
        charges = []
        for ledger in ledgers:
            dataset = ledger.dataset
            if key is not None and self._recorded(dataset, key, epsilon, partition, parts):
                continue
            before, whole, parallel, new_parts, new_max = self._charge(
                dataset, epsilon, partition, parts
            )
            if float(whole + parallel) > ledger.total_epsilon * (1 + _TOLERANCE):
                raise BudgetExceededError(
                    dataset,
                    requested=epsilon,
                    remaining=float(max(Fraction(0), Fraction(ledger.total_epsilon) - before)),
                    total=ledger.total_epsilon,
                    label=label,
                )
            charges.append((dataset, before, whole, parallel, new_parts, new_max))
        now = time.time()
        for charge in charges:
            self._record(charge, epsilon, label, partition, parts, key, now)
        return bool(charges)

    def _record(self, charge: tuple, epsilon, label, partition, parts, key, now) -> None:
        """Insert one spend and update its dataset's totals; ``charge`` is the dataset and
        what :meth:`_charge` computed for it."""
        dataset, before, whole, parallel, new_parts, new_max = charge
        after = whole + parallel
        spend_id = self._db.insert_id(
            "INSERT INTO spends (dataset, epsilon, label, created, partition, parts, key, "
            "spent_after, charged) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                dataset,
                epsilon,
                label,
                now,
                partition,
                _parts_json(parts),
                key,
                str(after),
                float(after - before),
            ),
        )
        self._store_totals(dataset, spend_id, whole, parallel, partition, new_parts, new_max)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> PrivacyLedger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"PrivacyLedger({self.path!r}, dataset={self.dataset!r}, "
            f"spent={self.spent:.6g}, total_epsilon={self.total_epsilon:.6g})"
        )
