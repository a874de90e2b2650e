"""What a ledger backend is: the tables it holds and the methods the accounting calls.

The accounting (:class:`~dpwidgets.persistence.ledger.PrivacyLedger`) is written once, in SQL
with ``?`` placeholders, against the small interface :class:`Backend` below;
:class:`~dpwidgets.persistence.sqlite.SQLiteBackend` and
:class:`~dpwidgets.persistence.postgres.PostgresBackend` implement it.

Transactions
------------
Every spend is one transaction that holds a write lock from the moment the running totals are
read until the new spend and the updated totals are committed, so two processes can never
both read "0.4 left" and both spend 0.4. A crash before the commit leaves nothing recorded (the
database rolls back a transaction whose client died, and releases its locks); a spend made with
a ``key`` is recorded at most once (a unique index on dataset and key), so retrying it after a
crash charges nothing twice.

* SQLite takes the database's write lock with ``BEGIN IMMEDIATE``: one writer at a time for the
  whole file. The file uses a rollback journal (``journal_mode=TRUNCATE``) with
  ``synchronous=FULL``, never WAL: with a rollback journal every committed transaction is in
  the database file itself when ``COMMIT`` returns, so a copy of ``ledger.sqlite`` alone (a
  backup, a file moved to another machine) holds every committed spend. Under WAL recent
  commits live in the ``-wal`` file until a checkpoint and a copy of the main file alone
  silently drops them.
* PostgreSQL runs a spend at READ COMMITTED and first locks the row of running totals of each
  dataset it charges (``SELECT ... FOR UPDATE``, in name order, so two joint spends cannot
  deadlock). Every statement after the lock sees whatever the previous holder committed, and
  every row a spend reads (totals, part totals, keys) is written only by transactions holding
  that lock: spends on one dataset are serialised, spends on different datasets run in
  parallel. A dead client's transaction is rolled back by the server (at once when its
  connection closes; after ``idle_in_transaction_session_timeout`` if its machine vanished).
  Reads (``spent``, ``summary``, ...) run at REPEATABLE READ, READ ONLY: one consistent
  snapshot, never blocked by a spend. Opening a dataset (and creating the tables) is
  serialised by a transaction-level advisory lock, so concurrent openers agree on one dataset
  and its aliases. A deadlock or serialization failure, which this scheme should never cause,
  is retried until ``timeout``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

__all__ = ["SCHEMA_TEMPLATE", "SCHEMA_VERSION", "Backend"]

#: The schema version: 2 added running totals, aliases and fingerprints, 3 the claims on
#: idempotency keys. SQLite files written by earlier versions have 0 or 2 (``PRAGMA
#: user_version``) and are migrated on open.
SCHEMA_VERSION = 3

#: Executed statement by statement inside the opening transaction (``executescript`` would
#: commit first, and two processes must not both create or migrate the tables). One template for
#: both backends: {float} is DOUBLE PRECISION in PostgreSQL, not its 4-byte REAL (an epsilon must
#: read back as the float that was written); {id} is SQLite's rowid alias or an identity column.
SCHEMA_TEMPLATE = [
    """CREATE TABLE IF NOT EXISTS datasets (
        name TEXT PRIMARY KEY,
        total_epsilon {float} NOT NULL CHECK (total_epsilon > 0),
        created {float} NOT NULL,
        fingerprint TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS spends (
        id {id},
        dataset TEXT NOT NULL REFERENCES datasets(name),
        epsilon {float} NOT NULL CHECK (epsilon > 0),
        label TEXT NOT NULL,
        created {float} NOT NULL,
        partition TEXT,
        parts TEXT,
        key TEXT,
        spent_after TEXT,
        charged {float},
        UNIQUE (dataset, key)
    )""",
    "CREATE INDEX IF NOT EXISTS spends_by_dataset ON spends(dataset, id)",
    # Every name (normalised) and fingerprint that has found a dataset.
    """CREATE TABLE IF NOT EXISTS aliases (
        kind TEXT NOT NULL CHECK (kind IN ('name', 'fingerprint')),
        value TEXT NOT NULL,
        dataset TEXT NOT NULL REFERENCES datasets(name),
        created {float} NOT NULL,
        PRIMARY KEY (kind, value)
    ){without_rowid}""",
    # Running totals, as exact fractions ("n/d"). last_id is the newest spend they include:
    # a spend inserted by an older version of this code (which knows no totals) is detected
    # by max(id) != last_id, and the totals are rebuilt once.
    """CREATE TABLE IF NOT EXISTS totals (
        dataset TEXT PRIMARY KEY REFERENCES datasets(name),
        whole TEXT NOT NULL,
        parallel TEXT NOT NULL,
        count BIGINT NOT NULL,
        last_id BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS part_totals (
        dataset TEXT NOT NULL,
        partition TEXT NOT NULL,
        part TEXT NOT NULL,
        total TEXT NOT NULL,
        PRIMARY KEY (dataset, partition, part)
    ){without_rowid}""",
    """CREATE TABLE IF NOT EXISTS partition_max (
        dataset TEXT NOT NULL,
        partition TEXT NOT NULL,
        max TEXT NOT NULL,
        PRIMARY KEY (dataset, partition)
    ){without_rowid}""",
    # Claims on idempotency keys (PrivacyLedger.claim): which attempt runs the release a key
    # paid for, until when its lease lasts, and how it ended. Written only under the lock of
    # the dataset's totals, like the spends.
    """CREATE TABLE IF NOT EXISTS claims (
        dataset TEXT NOT NULL,
        key TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires {float} NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed')),
        updated {float} NOT NULL,
        PRIMARY KEY (dataset, key)
    ){without_rowid}""",
]


# -- the two databases ------------------------------------------------------------------------
#
# The accounting (PrivacyLedger) is written once, in SQL with "?" placeholders; a backend
# object holds the connection and everything that differs between SQLite and PostgreSQL: how
# a write transaction takes its lock, the schema and its version, "INSERT OR IGNORE" and
# "INSERT OR REPLACE", placeholders, the new row's id, and what "the same database" means.


class Backend(Protocol):
    """The interface between the accounting and a database (what both backends provide).

    Attributes
    ----------
    path : str
        What ``repr()`` and error messages show: the resolved file path, ``":memory:"``, or a
        PostgreSQL URL without its password.
    persistent : bool
        ``False`` for a ``":memory:"`` SQLite ledger.
    timeout : float
        Seconds to wait for another process's transaction.
    conn
        The database connection (``sqlite3`` or ``psycopg``).

    Examples
    --------
    A :class:`~dpwidgets.persistence.sqlite.SQLiteBackend` in memory is one:

    >>> from dpwidgets.persistence import Backend, SQLiteBackend
    >>> backend: Backend = SQLiteBackend(":memory:", timeout=1.0)
    >>> backend.path, backend.persistent
    (':memory:', False)
    >>> backend.execute("SELECT 1 + 1").fetchone()
    (2,)
    >>> backend.close()
    """

    path: str
    persistent: bool
    timeout: float
    conn: Any

    # -- dialect --------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence = ()):
        """Run one statement (``?`` placeholders) and return its cursor."""

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> None:
        """Run one statement once per row."""

    def insert_id(self, sql: str, params: Sequence) -> int:
        """Run an INSERT into ``spends`` and return the new row's id."""

    def insert(
        self, table: str, columns: Sequence[str], *, ignore: bool = False,
        replace: Sequence[str] = (),
    ) -> str:
        """INSERT of one row; ``ignore``: skip it on a conflict; ``replace``: overwrite the
        row with the same key (the columns in ``replace``)."""

    # -- transactions ---------------------------------------------------------------------
    def begin(self, write: bool) -> None:
        """Begin a transaction; a write transaction takes the backend's write lock."""

    def lock(self, datasets: Iterable[str]) -> None:
        """Lock the running totals of ``datasets`` (inside a write transaction)."""

    def lock_for_opening(self) -> None:
        """Serialise the processes opening datasets (inside a write transaction)."""

    def commit(self) -> None:
        """Commit the transaction."""

    def rollback(self) -> None:
        """Roll the transaction back, if one is open."""

    def retryable(self, exc: BaseException) -> bool:
        """Whether ``exc`` (a deadlock, a serialization failure) allows running the
        transaction again."""

    def now(self) -> float:
        """The clock leases are measured on (seconds since the epoch)."""

    # -- schema ---------------------------------------------------------------------------
    def schema_version(self) -> int:
        """The version of the tables found (0 when there are none)."""

    def set_schema_version(self, version: int) -> None:
        """Record the version of the tables."""

    def create_schema(self) -> None:
        """Create the tables, or add what tables of an earlier version lack."""

    # -- the rest -------------------------------------------------------------------------
    def same_database(self, other) -> bool:
        """Whether ``other`` reaches the same tables."""

    def after_open(self) -> None:
        """Checks once the ledger's dataset is open."""

    def close(self) -> None:
        """Close the connection."""
