"""The privacy ledger: a persistent, process-safe record of the budget spent on each dataset.

The ledger is the product's safety catch: persistent, shared by every process that opens the
same file, never exceedable, never reset, and losing nothing on a crash.

Transactions
------------
Every spend is one SQLite transaction taken with ``BEGIN IMMEDIATE``: the database's write
lock is held from the moment the running totals are read until the new spend and the updated
totals are committed, so two processes can never both read "0.4 left" and both spend 0.4. A
crash before the commit leaves nothing recorded; a spend made with a ``key`` is recorded at
most once, so retrying it after a crash charges nothing twice.

The file uses a rollback journal (``journal_mode=TRUNCATE``) with ``synchronous=FULL``, never
WAL: with a rollback journal every committed transaction is in the database file itself when
``COMMIT`` returns, so a copy of ``ledger.sqlite`` alone (a backup, a file moved to another
machine) holds every committed spend. Under WAL recent commits live in the ``-wal`` file until
a checkpoint and a copy of the main file alone silently drops them.

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

Datasets and aliases
--------------------
A dataset is looked up by its normalised name (Unicode NFKC, surrounding whitespace stripped,
inner whitespace collapsed, case folded) and, if given, by a content fingerprint. Whatever
name or fingerprint finds an existing dataset binds to *its* budget and is recorded as an
alias, so the same data added as "visits", "Visits " or "visits_2" is charged to one budget.
"""

from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import threading
import time
import unicodedata
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ._validation import check_epsilon
from .errors import ReleaseRefused

__all__ = [
    "BudgetExceededError",
    "PrivacyLedger",
    "Spend",
    "default_ledger_path",
]

# Relative slack when comparing a new total with the cap, so that spending exactly what
# ``remaining`` reports (itself rounded to a float) is allowed; far below any meaningful epsilon.
_TOLERANCE = 1e-9

# ``PRAGMA user_version`` of a file with running totals, aliases and fingerprints. Files
# written by earlier versions have 0 and are migrated on open.
_SCHEMA_VERSION = 2

# Executed statement by statement inside the opening transaction (``executescript`` would
# commit first, and two processes must not both create or migrate the tables).
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS datasets (
        name TEXT PRIMARY KEY,
        total_epsilon REAL NOT NULL CHECK (total_epsilon > 0),
        created REAL NOT NULL,
        fingerprint TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS spends (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset TEXT NOT NULL REFERENCES datasets(name),
        epsilon REAL NOT NULL CHECK (epsilon > 0),
        label TEXT NOT NULL,
        created REAL NOT NULL,
        partition TEXT,
        parts TEXT,
        key TEXT,
        spent_after TEXT,
        charged REAL,
        UNIQUE (dataset, key)
    )""",
    "CREATE INDEX IF NOT EXISTS spends_by_dataset ON spends(dataset)",
    # Every name (normalised) and fingerprint that has found a dataset.
    """CREATE TABLE IF NOT EXISTS aliases (
        kind TEXT NOT NULL CHECK (kind IN ('name', 'fingerprint')),
        value TEXT NOT NULL,
        dataset TEXT NOT NULL REFERENCES datasets(name),
        created REAL NOT NULL,
        PRIMARY KEY (kind, value)
    ) WITHOUT ROWID""",
    # Running totals, as exact fractions ("n/d"). last_id is the newest spend they include:
    # a spend inserted by an older version of this code (which knows no totals) is detected
    # by max(id) != last_id, and the totals are rebuilt once.
    """CREATE TABLE IF NOT EXISTS totals (
        dataset TEXT PRIMARY KEY REFERENCES datasets(name),
        whole TEXT NOT NULL,
        parallel TEXT NOT NULL,
        count INTEGER NOT NULL,
        last_id INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS part_totals (
        dataset TEXT NOT NULL,
        partition TEXT NOT NULL,
        part TEXT NOT NULL,
        total TEXT NOT NULL,
        PRIMARY KEY (dataset, partition, part)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS partition_max (
        dataset TEXT NOT NULL,
        partition TEXT NOT NULL,
        max TEXT NOT NULL,
        PRIMARY KEY (dataset, partition)
    ) WITHOUT ROWID""",
]


class BudgetExceededError(ReleaseRefused, RuntimeError):
    """A spend would take a dataset past its total budget; nothing was recorded.

    Attributes
    ----------
    dataset : str
        The dataset whose budget would be exceeded.
    requested : float
        The epsilon asked for.
    remaining : float
        The epsilon still available.
    total : float
        The dataset's cap.
    label : str
        The label of the refused release.
    """

    def __init__(self, dataset: str, requested: float, remaining: float, total: float, label: str):
        self.dataset = dataset
        self.requested = requested
        self.remaining = remaining
        self.total = total
        self.label = label
        super().__init__(
            f"privacy budget of dataset {dataset!r} exceeded: {label!r} asks for "
            f"epsilon={requested:.6g} but only {remaining:.6g} of {total:.6g} is left. "
            f"Nothing was charged. Lower epsilon to at most {remaining:.6g}, or replay a "
            f"release already paid for."
        )


@dataclass(frozen=True)
class Spend:
    """One recorded spend.

    Attributes
    ----------
    epsilon : float
        The epsilon the release asked for.
    label : str
        What was released.
    time : float
        When it was recorded (seconds since the epoch).
    partition, parts : str and tuple of str, optional
        The disjoint parts it touched (parallel composition), or ``None`` for the whole data.
    key : str, optional
        Its idempotency key.
    charged : float, optional
        How much ``spent`` grew when it was recorded (less than ``epsilon`` for a part whose
        partition had already been charged more on another part); ``None`` if not known.
    """

    epsilon: float
    label: str
    time: float
    partition: str | None = None
    parts: tuple[str, ...] | None = None
    key: str | None = None
    charged: float | None = None


def default_ledger_path() -> Path:
    """The ledger file used when none is given.

    Returns
    -------
    pathlib.Path
        ``$DPWIDGETS_LEDGER`` (``~`` expanded, made absolute), else
        ``platformdirs.user_data_dir("dpwidgets")/ledger.sqlite``.
    """
    env = os.environ.get("DPWIDGETS_LEDGER")
    if env:
        # abspath, not resolve: the ledger resolves symlinks itself when it opens the file.
        return Path(os.path.abspath(Path(env).expanduser()))
    from platformdirs import user_data_dir

    return Path(os.path.abspath(Path(user_data_dir("dpwidgets", appauthor=False)))) / (
        "ledger.sqlite"
    )


def normalise_name(name: str) -> str:
    """The form under which dataset names are compared.

    Unicode NFKC, surrounding whitespace stripped, inner runs of whitespace collapsed to one
    space, case folded: "Visits", " visits" and "visits" name one dataset.
    """
    folded = " ".join(unicodedata.normalize("NFKC", name).split()).casefold()
    # Case folding can produce characters NFKC would rewrite again (e.g. "ß" -> "ss" is fine,
    # but some compatibility characters reappear); one more pass makes the form a fixed point.
    return unicodedata.normalize("NFKC", folded)


def _fraction(text: str | None) -> Fraction:
    return Fraction(text) if text else Fraction(0)


def _parts_json(parts: tuple[str, ...] | None) -> str | None:
    return json.dumps(list(parts)) if parts is not None else None


def _where(partition: str | None, parts: tuple[str, ...] | None) -> str:
    return "" if partition is None else f" on parts {list(parts or ())} of {partition!r}"


def _resolve_path(path) -> tuple[str, bool]:
    """Return (the path SQLite opens, whether it is a file)."""
    if path is None:
        path = default_ledger_path()
    if isinstance(path, bytes):
        raise ValueError("the ledger path must be a str or a path, not bytes")
    text = os.fspath(path)
    if text == ":memory:":
        return text, False
    if not text.strip():
        raise ValueError("the ledger path is empty; give a file path or ':memory:'")
    if text.startswith("file:"):
        # A URI could open one file under many spellings (query parameters, mode=memory,
        # vfs=...), defeating the "one file, one budget" check below.
        raise ValueError(
            f"the ledger path {text!r} is a 'file:' URI; give a plain file path instead"
        )
    # One file, one spelling: "~", relative paths and symlinks all lead to the same name.
    resolved = Path(text).expanduser().resolve()
    if resolved.is_dir():
        raise ValueError(f"the ledger path {str(resolved)!r} is a directory, not a file")
    resolved.parent.mkdir(parents=True, exist_ok=True)
    _check_single_link(resolved)
    return str(resolved), True


def _check_single_link(path: Path) -> None:
    # Two hard links of one file are two names that resolve() cannot unify; SQLite locks the
    # file itself but keys its journal by name, so two names could each see a "hot" journal
    # of their own. Refusing them keeps one budget per file.
    try:
        links = os.stat(path).st_nlink
    except FileNotFoundError:
        return
    if links > 1:
        raise ValueError(
            f"the ledger file {str(path)!r} has {links} hard links; a ledger must have exactly "
            f"one name (remove the other links, or copy the file)"
        )


def _begin_immediate(conn: sqlite3.Connection, timeout: float, busy_pragma: str) -> None:
    """Take the database's write lock (``BEGIN IMMEDIATE``), waiting up to ``timeout`` s.

    SQLite's own busy handler sleeps 1, 2, 5, 10, ... 100 ms between attempts, so with several
    processes spending at once the lock often sits free while every waiter sleeps. Short
    randomised waits (0.1-2 ms) keep it busy instead. SQLite's handler (``busy_pragma``, the
    connection's usual busy_timeout) still governs every other wait, e.g. COMMIT waiting for
    readers to finish.
    """
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        deadline = time.monotonic() + timeout
        delay = 1e-4
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 1.5, 2e-3)
    finally:
        conn.execute(busy_pragma)


class PrivacyLedger:
    """Budget accounting for one dataset, persisted in SQLite.

    Parameters
    ----------
    path : str or path-like, optional
        The SQLite file (created if missing; ``~`` expanded, symlinks resolved; a file with
        more than one hard link, a ``file:`` URI and an empty path are refused),
        ``":memory:"`` for a throw-away ledger (teaching mode), or ``None`` for
        :func:`default_ledger_path`.
    dataset : str
        The name the spends are keyed by. Every process opening the same file and dataset
        shares one budget. Names are compared normalised (see :func:`normalise_name`).
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
        The resolved file path, or ``":memory:"``.
    total_epsilon : float
        The cap.

    Raises
    ------
    ValueError
        On a bad path, a bad name or cap, a cap that differs from the recorded one, a new
        dataset without a cap, or a name and a fingerprint that find two different datasets.

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
        self.path, self.persistent = _resolve_path(path)
        self._lock = threading.RLock()
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        try:
            with self._lock:
                self._configure(timeout)
                self._transaction(
                    lambda: self._open_dataset(dataset, total_epsilon, fingerprint), write=True
                )
        except BaseException:
            self._conn.close()
            raise
        if self.persistent:
            # The file now exists: a hard link made while we were creating it is caught here.
            try:
                _check_single_link(Path(self.path))
            except ValueError:
                self._conn.close()
                raise

    # -- opening --------------------------------------------------------------------------
    def _configure(self, timeout: float) -> None:
        self._timeout = float(timeout)
        self._busy_pragma = f"PRAGMA busy_timeout = {int(timeout * 1000)}"
        self._conn.execute(self._busy_pragma)
        if not self.persistent:
            return
        try:
            mode = self._conn.execute("PRAGMA journal_mode = TRUNCATE").fetchone()[0]
        except sqlite3.OperationalError:
            # Leaving WAL needs every other connection to the file closed (e.g. an older
            # version of dpwidgets still running). Spends stay atomic and durable in WAL too;
            # only a copy of the main file alone could miss the latest. The next open
            # switches the file.
            mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "truncate":
            warnings.warn(
                f"the ledger {self.path!r} stays in {mode} journal mode while another process "
                f"has it open; a copy of the file alone may miss recent spends until then",
                RuntimeWarning,
                stacklevel=3,
            )
        self._conn.execute("PRAGMA synchronous = FULL")

    def _transaction(self, body, *, write: bool):
        """Run ``body()`` in one transaction (``BEGIN IMMEDIATE`` if it writes)."""
        with self._lock:
            if write:
                _begin_immediate(self._conn, self._timeout, self._busy_pragma)
            else:
                self._conn.execute("BEGIN")
            try:
                result = body()
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            return result

    def _migrate(self) -> None:
        """Bring the file to the current schema (inside the opening transaction)."""
        conn = self._conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version >= _SCHEMA_VERSION:
            return
        for statement in _SCHEMA:
            conn.execute(statement)
        # Tables created by earlier versions lack the new columns.
        columns = {r[1] for r in conn.execute("PRAGMA table_info(datasets)")}
        if "fingerprint" not in columns:
            conn.execute("ALTER TABLE datasets ADD COLUMN fingerprint TEXT")
        columns = {r[1] for r in conn.execute("PRAGMA table_info(spends)")}
        if "spent_after" not in columns:
            conn.execute("ALTER TABLE spends ADD COLUMN spent_after TEXT")
        if "charged" not in columns:
            conn.execute("ALTER TABLE spends ADD COLUMN charged REAL")
        names = conn.execute("SELECT name, created FROM datasets ORDER BY created, name")
        for name, created in names.fetchall():
            # Oldest first: if two old datasets differ only in spelling, the older one keeps
            # the normalised name (both stay reachable by their exact names).
            conn.execute(
                "INSERT OR IGNORE INTO aliases (kind, value, dataset, created) "
                "VALUES ('name', ?, ?, ?)",
                (normalise_name(name), name, created),
            )
            self._rebuild(name)
        conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def _open_dataset(
        self, requested: str, total_epsilon: float | None, fingerprint: str | None
    ) -> None:
        conn = self._conn
        self._migrate()
        now = time.time()
        normal = normalise_name(requested)
        exact = conn.execute("SELECT name FROM datasets WHERE name = ?", (requested,)).fetchone()
        if exact is not None:
            by_name = exact[0]
        else:
            row = conn.execute(
                "SELECT dataset FROM aliases WHERE kind = 'name' AND value = ?", (normal,)
            ).fetchone()
            by_name = row[0] if row else None
        by_fingerprint = None
        if fingerprint is not None:
            row = conn.execute(
                "SELECT dataset FROM aliases WHERE kind = 'fingerprint' AND value = ?",
                (fingerprint,),
            ).fetchone()
            by_fingerprint = row[0] if row else None
        if by_name is not None and by_fingerprint is not None and by_name != by_fingerprint:
            raise ValueError(
                f"dataset name {requested!r} is recorded in the ledger {self.path} for other "
                f"data than the data given (whose content is recorded under another name); "
                f"use that name, or a new name for new data"
            )
        canonical = by_name or by_fingerprint
        if canonical is None:
            if total_epsilon is None:
                raise ValueError(
                    f"dataset {requested!r} has no budget recorded in {self.path}; "
                    f"pass total_epsilon= to set its cap"
                )
            canonical = requested
            conn.execute(
                "INSERT INTO datasets (name, total_epsilon, created, fingerprint) "
                "VALUES (?, ?, ?, ?)",
                (canonical, total_epsilon, now, fingerprint),
            )
            conn.execute(
                "INSERT INTO totals (dataset, whole, parallel, count, last_id) "
                "VALUES (?, '0', '0', 0, 0)",
                (canonical,),
            )
        cap = conn.execute(
            "SELECT total_epsilon FROM datasets WHERE name = ?", (canonical,)
        ).fetchone()[0]
        if (
            exact is not None
            and total_epsilon is not None
            and not math.isclose(cap, total_epsilon)
        ):
            # Found by its own name: today's rule, a reopening cannot change the cap. Found
            # through an alias, the recorded cap wins without a word: an alias must not be a
            # way to change or reset a budget.
            raise ValueError(
                f"dataset {canonical!r} already has a cap of epsilon={cap:.6g} in "
                f"{self.path}; reopening cannot change it (asked for {total_epsilon:.6g})"
            )
        # Record every spelling and fingerprint that found (or created) the dataset, so a
        # later lookup by any of them finds it too.
        conn.execute(
            "INSERT OR IGNORE INTO aliases (kind, value, dataset, created) "
            "VALUES ('name', ?, ?, ?)",
            (normal, canonical, now),
        )
        if fingerprint is not None:
            conn.execute(
                "INSERT OR IGNORE INTO aliases (kind, value, dataset, created) "
                "VALUES ('fingerprint', ?, ?, ?)",
                (fingerprint, canonical, now),
            )
            conn.execute(
                "UPDATE datasets SET fingerprint = ? WHERE name = ? AND fingerprint IS NULL",
                (fingerprint, canonical),
            )
        self.dataset = canonical
        self.alias_of = canonical if canonical != requested else None
        self.total_epsilon = float(cap)

    # -- running totals -------------------------------------------------------------------
    def _rebuild(self, dataset: str) -> None:
        """Recompute a dataset's totals from its spends (O(n), inside a write transaction).

        Runs when an old file is migrated, and when spends were inserted by a version of this
        code that kept no totals.
        """
        conn = self._conn
        conn.execute("DELETE FROM part_totals WHERE dataset = ?", (dataset,))
        conn.execute("DELETE FROM partition_max WHERE dataset = ?", (dataset,))
        whole = Fraction(0)
        part_totals: dict[tuple[str, str], Fraction] = {}
        maxima: dict[str, Fraction] = {}
        count = last_id = 0
        updates = []
        rows = conn.execute(
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
        conn.executemany("UPDATE spends SET spent_after = ?, charged = ? WHERE id = ?", updates)
        conn.executemany(
            "INSERT INTO part_totals (dataset, partition, part, total) VALUES (?, ?, ?, ?)",
            [(dataset, p, q, str(t)) for (p, q), t in part_totals.items()],
        )
        conn.executemany(
            "INSERT INTO partition_max (dataset, partition, max) VALUES (?, ?, ?)",
            [(dataset, p, str(m)) for p, m in maxima.items()],
        )
        parallel = sum(maxima.values(), Fraction(0))
        conn.execute(
            "INSERT OR REPLACE INTO totals (dataset, whole, parallel, count, last_id) "
            "VALUES (?, ?, ?, ?, ?)",
            (dataset, str(whole), str(parallel), count, last_id),
        )

    def _totals(self) -> tuple[Fraction, Fraction, int]:
        """(whole, parallel, count) of this dataset; inside a transaction.

        Rebuilds them first if a spend was recorded without them (an older writer).
        """
        row = self._conn.execute(
            "SELECT whole, parallel, count, last_id, "
            "(SELECT max(id) FROM spends WHERE dataset = ?) FROM totals WHERE dataset = ?",
            (self.dataset, self.dataset),
        ).fetchone()
        if row is None or (row[4] or 0) != row[3]:
            raise _Stale
        return Fraction(row[0]), Fraction(row[1]), row[2]

    def _read(self, body):
        """Run a read-only ``body()`` on a consistent snapshot, rebuilding stale totals."""
        try:
            return self._transaction(body, write=False)
        except _Stale:
            self._transaction(lambda: self._rebuild(self.dataset), write=True)
            return self._transaction(body, write=False)

    def _charge(
        self, epsilon: float, partition: str | None, parts: tuple[str, ...] | None
    ) -> tuple[Fraction, Fraction, Fraction, list[tuple[str, Fraction]], Fraction | None]:
        """What this spend would make of the totals (inside a transaction, writes nothing).

        Returns (spent before, whole after, parallel after, new totals of the parts touched,
        new maximum of the partition or None).
        """
        whole, parallel, _ = self._totals()
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
                self._conn.execute(
                    f"SELECT part, total FROM part_totals WHERE dataset = ? AND partition = ? "
                    f"AND part IN ({marks})",
                    (self.dataset, partition, *chunk),
                ).fetchall()
            )
        row = self._conn.execute(
            "SELECT max FROM partition_max WHERE dataset = ? AND partition = ?",
            (self.dataset, partition),
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
            rows = self._conn.execute(
                "SELECT epsilon, label, created, partition, parts, key, charged "
                "FROM spends WHERE dataset = ? ORDER BY id",
                (self.dataset,),
            ).fetchall()
            return self._to_spends(rows)

        return self._read(body)

    def _recent_rows(self, limit: int) -> list[Spend]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be an integer >= 0, got {limit!r}")
        if limit == 0:
            return []
        rows = self._conn.execute(
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
            before, whole, parallel, _, _ = self._charge(epsilon, partition, parts)
            return float(whole + parallel - before)

        return self._read(body)

    def has_key(self, key: str) -> bool:
        """Whether a spend with this idempotency key is already recorded."""
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM spends WHERE dataset = ? AND key = ?", (self.dataset, key)
            ).fetchone()
        return row is not None

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

    def spend(
        self,
        epsilon: float,
        label: str = "release",
        *,
        partition: str | None = None,
        parts: Iterable[str] | None = None,
        key: str | None = None,
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

        Returns
        -------
        bool
            ``True`` if a new spend was recorded, ``False`` if ``key`` was already recorded.

        Raises
        ------
        BudgetExceededError
            The spend would exceed the cap; nothing was recorded.
        ValueError
            A bad argument, or ``key`` recorded with another epsilon, partition or parts.
        """
        epsilon = check_epsilon(epsilon)
        if not isinstance(label, str):
            raise ValueError(f"label must be a string, got {label!r}")
        partition, parts = self._check_parts(partition, parts)
        if key is not None and not isinstance(key, str):
            raise ValueError(f"key must be a string or None, got {type(key).__name__}")

        def body() -> bool:
            conn = self._conn
            if key is not None:
                row = conn.execute(
                    "SELECT epsilon, partition, parts FROM spends WHERE dataset = ? AND key = ?",
                    (self.dataset, key),
                ).fetchone()
                if row is not None:
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
                    return False
            before, whole, parallel, new_parts, new_max = self._charge(epsilon, partition, parts)
            after = whole + parallel
            if float(after) > self.total_epsilon * (1 + _TOLERANCE):
                raise BudgetExceededError(
                    self.dataset,
                    requested=epsilon,
                    remaining=float(max(Fraction(0), Fraction(self.total_epsilon) - before)),
                    total=self.total_epsilon,
                    label=label,
                )
            cursor = conn.execute(
                "INSERT INTO spends (dataset, epsilon, label, created, partition, parts, key, "
                "spent_after, charged) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.dataset,
                    epsilon,
                    label,
                    time.time(),
                    partition,
                    _parts_json(parts),
                    key,
                    str(after),
                    float(after - before),
                ),
            )
            conn.execute(
                "UPDATE totals SET whole = ?, parallel = ?, count = count + 1, last_id = ? "
                "WHERE dataset = ?",
                (str(whole), str(parallel), cursor.lastrowid, self.dataset),
            )
            if partition is not None:
                conn.executemany(
                    "INSERT OR REPLACE INTO part_totals (dataset, partition, part, total) "
                    "VALUES (?, ?, ?, ?)",
                    [(self.dataset, partition, part, str(total)) for part, total in new_parts],
                )
                conn.execute(
                    "INSERT OR REPLACE INTO partition_max (dataset, partition, max) "
                    "VALUES (?, ?, ?)",
                    (self.dataset, partition, str(new_max)),
                )
            return True

        try:
            return self._transaction(body, write=True)
        except _Stale:
            # Spends recorded by an older writer: rebuild the totals once, then charge.
            self._transaction(lambda: self._rebuild(self.dataset), write=True)
            return self._transaction(body, write=True)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

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
    """The running totals miss spends recorded by an older writer (internal)."""
