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
transaction on one database, or neither (see :meth:`PrivacyLedger.spend`).

Claims on idempotency keys (:meth:`PrivacyLedger.claim`) are described in
:mod:`dpwidgets.persistence.claims`.

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

Accounting is O(1) in the number of spends: the ledger keeps running totals (per dataset, per
part and the maximum per partition) in the database, updated in the spend's own transaction.
The totals are exact rational numbers (a float is a dyadic rational, so ``Fraction(x)`` is
exact), stored as text and rounded to a float once when read: ten spends of 0.1 make
``spent == 1.0`` exactly, as ``math.fsum`` would.

How a dataset is found by its names and fingerprints is described in
:mod:`dpwidgets.persistence.datasets`.
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
from .paths import is_postgres_url
from .postgres import PostgresBackend
from .records import Spend
from .sqlite import SQLiteBackend

__all__ = ["PrivacyLedger"]

# Relative slack when comparing a new total with the cap, so that spending exactly what
# ``remaining`` reports (itself rounded to a float) is allowed; far below any meaningful epsilon.
_TOLERANCE = 1e-9


def _fraction(text: str | None) -> Fraction:
    return Fraction(text) if text else Fraction(0)


def _parts_json(parts: tuple[str, ...] | None) -> str | None:
    return json.dumps(list(parts)) if parts is not None else None


def _where(partition: str | None, parts: tuple[str, ...] | None) -> str:
    return "" if partition is None else f" on parts {list(parts or ())} of {partition!r}"


class PrivacyLedger(Datasets, Claims):
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

    # -- running totals -------------------------------------------------------------------
    def _rebuild(self, dataset: str) -> None:
        """Recompute a dataset's totals from its spends (O(n), inside a write transaction).

        Runs when an old file is migrated, and when spends were inserted by a version of this
        code that kept no totals.
        """
        db = self._db
        db.execute("DELETE FROM part_totals WHERE dataset = ?", (dataset,))
        db.execute("DELETE FROM partition_max WHERE dataset = ?", (dataset,))
        whole = Fraction(0)
        part_totals: dict[tuple[str, str], Fraction] = {}
        maxima: dict[str, Fraction] = {}
        count = last_id = 0
        updates = []
        rows = db.execute(
            "SELECT id, epsilon, partition, parts, spent_after, charged FROM spends "
            "WHERE dataset = ? ORDER BY id",
            (dataset,),
        ).fetchall()
        previous = Fraction(0)
        for spend_id, epsilon, partition, parts, recorded, charged in rows:
            amount = Fraction(epsilon)
            if partition is None:
                whole += amount
            else:
                for part in json.loads(parts) if parts else ():
                    key = (partition, part)
                    part_totals[key] = part_totals.get(key, Fraction(0)) + amount
                    maxima[partition] = max(maxima.get(partition, Fraction(0)), part_totals[key])
            after = whole + sum(maxima.values(), Fraction(0))
            if recorded != str(after) or charged != float(after - previous):
                updates.append((str(after), float(after - previous), spend_id))
            previous = after
            count += 1
            last_id = spend_id
        db.executemany("UPDATE spends SET spent_after = ?, charged = ? WHERE id = ?", updates)
        db.executemany(
            db.insert("part_totals", ("dataset", "partition", "part", "total")),
            [(dataset, p, q, str(t)) for (p, q), t in part_totals.items()],
        )
        db.executemany(
            db.insert("partition_max", ("dataset", "partition", "max")),
            [(dataset, p, str(m)) for p, m in maxima.items()],
        )
        parallel = sum(maxima.values(), Fraction(0))
        db.execute(
            db.insert(
                "totals", ("dataset", "whole", "parallel", "count", "last_id"), replace=("dataset",)
            ),
            (dataset, str(whole), str(parallel), count, last_id),
        )

    def _totals(self, dataset: str | None = None) -> tuple[Fraction, Fraction, int]:
        """(whole, parallel, count) of a dataset (default: this one); inside a transaction.

        Raises ``_Stale`` if a spend was recorded without them (an older writer).
        """
        dataset = self.dataset if dataset is None else dataset
        row = self._db.execute(
            "SELECT whole, parallel, count, last_id, "
            "(SELECT max(id) FROM spends WHERE dataset = ?) FROM totals WHERE dataset = ?",
            (dataset, dataset),
        ).fetchone()
        if row is None or (row[4] or 0) != row[3]:
            raise _Stale(dataset)
        return Fraction(row[0]), Fraction(row[1]), row[2]

    def _charge(
        self,
        dataset: str,
        epsilon: float,
        partition: str | None,
        parts: tuple[str, ...] | None,
    ) -> tuple[Fraction, Fraction, Fraction, list[tuple[str, Fraction]], Fraction | None]:
        """What this spend would make of a dataset's totals (inside a transaction, writes
        nothing).

        Returns (spent before, whole after, parallel after, new totals of the parts touched,
        new maximum of the partition or None).
        """
        whole, parallel, _ = self._totals(dataset)
        before = whole + parallel
        amount = Fraction(epsilon)
        if partition is None:
            return before, whole + amount, parallel, [], None
        current = {}
        # In chunks: SQLite caps the number of bound parameters of one statement.
        for i in range(0, len(parts), 10_000):
            chunk = parts[i : i + 10_000]
            marks = ",".join("?" * len(chunk))
            current.update(
                self._db.execute(
                    f"SELECT part, total FROM part_totals WHERE dataset = ? AND partition = ? "
                    f"AND part IN ({marks})",
                    (dataset, partition, *chunk),
                ).fetchall()
            )
        row = self._db.execute(
            "SELECT max FROM partition_max WHERE dataset = ? AND partition = ?",
            (dataset, partition),
        ).fetchone()
        old_max = _fraction(row[0] if row else None)
        new_parts = [(part, _fraction(current.get(part)) + amount) for part in parts]
        new_max = max(old_max, *(total for _, total in new_parts))
        return before, whole, parallel + (new_max - old_max), new_parts, new_max

    # -- reading --------------------------------------------------------------------------
    @staticmethod
    def _to_spends(rows) -> list[Spend]:
        """Spends from (epsilon, label, created, partition, parts, key, charged) rows."""
        return [
            Spend(
                epsilon=r[0],
                label=r[1],
                time=r[2],
                partition=r[3],
                parts=tuple(json.loads(r[4])) if r[4] is not None else None,
                key=r[5],
                charged=r[6],
            )
            for r in rows
        ]

    @property
    def spends(self) -> list[Spend]:
        """Every spend recorded for this dataset, oldest first (O(n); see :meth:`recent`)."""

        def body():
            self._totals()  # rebuilds `charged` of spends recorded by an older writer
            rows = self._db.execute(
                "SELECT epsilon, label, created, partition, parts, key, charged "
                "FROM spends WHERE dataset = ? ORDER BY id",
                (self.dataset,),
            ).fetchall()
            return self._to_spends(rows)

        return self._read(body)

    def history(self, latest: int = 50) -> list[Spend]:
        """Every spend recorded for this dataset, oldest first (:attr:`spends`; ``latest``
        bounds only a view that cannot read them all, such as a curator's over HTTP)."""
        return self.spends

    def _recent_rows(self, limit: int) -> list[Spend]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be an integer >= 0, got {limit!r}")
        if limit == 0:
            return []
        rows = self._db.execute(
            "SELECT epsilon, label, created, partition, parts, key, charged "
            "FROM spends WHERE dataset = ? ORDER BY id DESC LIMIT ?",
            (self.dataset, limit),
        ).fetchall()
        return self._to_spends(rows[::-1])

    def recent(self, limit: int = 50) -> list[Spend]:
        """The latest ``limit`` spends, oldest first; O(limit), whatever the ledger's size.

        Parameters
        ----------
        limit : int
            How many spends at most (>= 0).

        Returns
        -------
        list of Spend
            With ``charged`` set: the part of ``spent`` each one added.
        """

        def body():
            self._totals()  # rebuilds `charged` of spends recorded by an older writer
            return self._recent_rows(limit)

        return self._read(body)

    @property
    def count(self) -> int:
        """The number of spends recorded for this dataset (O(1))."""
        return self._read(lambda: self._totals()[2])

    def summary(self, recent: int = 0) -> dict:
        """Cap, spent, remaining, number of spends and the latest spends, from one snapshot.

        O(``recent``), whatever the number of spends: what the budget meter draws.

        Parameters
        ----------
        recent : int
            How many of the latest spends to include (>= 0).

        Returns
        -------
        dict
            ``dataset``, ``total_epsilon``, ``spent``, ``remaining``, ``count`` and ``recent``
            (a list of :class:`Spend`, oldest first, as :meth:`recent` returns).
        """

        def body():
            return self._totals(), self._recent_rows(recent)

        (whole, parallel, count), spends = self._read(body)
        spent = whole + parallel
        return {
            "dataset": self.dataset,
            "total_epsilon": self.total_epsilon,
            "spent": float(spent),
            "remaining": float(max(Fraction(0), Fraction(self.total_epsilon) - spent)),
            "count": count,
            "recent": spends,
        }

    @property
    def spent(self) -> float:
        """Epsilon spent so far, under sequential and parallel composition (O(1))."""
        whole, parallel, _ = self._read(self._totals)
        return float(whole + parallel)

    @property
    def remaining(self) -> float:
        """Epsilon still available (never negative; O(1))."""
        return self.summary()["remaining"]

    def cost_of(
        self, epsilon: float, *, partition: str | None = None, parts: Iterable[str] | None = None
    ) -> float:
        """How much ``spent`` would grow if this spend were made now (O(len(parts))).

        Returns
        -------
        float
            ``epsilon`` for a whole-dataset spend; for a partitioned one, how far it would
            raise its partition's maximum (0 for a part that stays at or below it).
        """
        epsilon = check_epsilon(epsilon)
        partition, parts = self._check_parts(partition, parts)

        def body():
            before, whole, parallel, _, _ = self._charge(self.dataset, epsilon, partition, parts)
            return float(whole + parallel - before)

        return self._read(body)

    def has_key(self, key: str) -> bool:
        """Whether a spend with this idempotency key is already recorded."""

        def body():
            return self._db.execute(
                "SELECT 1 FROM spends WHERE dataset = ? AND key = ?", (self.dataset, key)
            ).fetchone()

        return self._transaction(body, write=False) is not None

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

        Examples
        --------
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
        db = self._db
        dataset, before, whole, parallel, new_parts, new_max = charge
        after = whole + parallel
        spend_id = db.insert_id(
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
        db.execute(
            "UPDATE totals SET whole = ?, parallel = ?, count = count + 1, last_id = ? "
            "WHERE dataset = ?",
            (str(whole), str(parallel), spend_id, dataset),
        )
        if partition is not None:
            db.executemany(
                db.insert(
                    "part_totals",
                    ("dataset", "partition", "part", "total"),
                    replace=("dataset", "partition", "part"),
                ),
                [(dataset, partition, part, str(total)) for part, total in new_parts],
            )
            db.execute(
                db.insert(
                    "partition_max", ("dataset", "partition", "max"), replace=("dataset", "partition")
                ),
                (dataset, partition, str(new_max)),
            )

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


class _Stale(Exception):
    """The running totals of ``dataset`` miss spends recorded by an older writer (internal)."""

    def __init__(self, dataset: str):
        super().__init__(dataset)
        self.dataset = dataset
