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

Joint spends
------------
A curator may give each analyst a cap of their own on a dataset besides the dataset's cap:
``dataset_ledger.spend(eps, label, key=k, jointly=[analyst_ledger])`` charges both in one
transaction on one database, or neither (see :meth:`PrivacyLedger.spend`).

Claims: one output per charged key
----------------------------------
An idempotency key pays once, but several attempts may carry it at once (a client's retry
reaching another curator replica while the first attempt still runs). :meth:`PrivacyLedger.claim`
records, in the spend's own transaction, a claim on the key: the attempt that holds it (its
``owner``) and a lease (an expiry time, on the database's clock). Only the holder runs the
release. Another attempt with the key, while the lease lasts, waits for the holder's output in
the release store (or its failure, which it repeats); once the lease has run out with neither
(the holder died: its output never left it), it takes the claim over and runs under the spend
already recorded. The holder ends the claim (:meth:`PrivacyLedger.finish`) when it has stored
the output, or may :meth:`~PrivacyLedger.renew` it. The lease must outlast the slowest release:
an attempt still alive when its lease runs out may see another run beside it, and only the
first output stored is released.

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

import contextlib
import functools
import json
import math
import os
import random
import sqlite3
import threading
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ._validation import check_epsilon
from .errors import BudgetExceededError

__all__ = [
    "BudgetExceededError",
    "Claim",
    "PrivacyLedger",
    "Spend",
    "default_ledger_path",
]

# Relative slack when comparing a new total with the cap, so that spending exactly what
# ``remaining`` reports (itself rounded to a float) is allowed; far below any meaningful epsilon.
_TOLERANCE = 1e-9

# The schema version: 2 added running totals, aliases and fingerprints, 3 the claims on
# idempotency keys. SQLite files written by earlier versions have 0 or 2 (``PRAGMA
# user_version``) and are migrated on open.
_SCHEMA_VERSION = 3

# Executed statement by statement inside the opening transaction (``executescript`` would
# commit first, and two processes must not both create or migrate the tables). One template for
# both backends: {float} is DOUBLE PRECISION in PostgreSQL, not its 4-byte REAL (an epsilon must
# read back as the float that was written); {id} is SQLite's rowid alias or an identity column.
_SCHEMA_TEMPLATE = [
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
_SQLITE_SCHEMA = [t.format(float="REAL", id="INTEGER PRIMARY KEY AUTOINCREMENT",
                           without_rowid=" WITHOUT ROWID") for t in _SCHEMA_TEMPLATE]

# The same tables in PostgreSQL, in the schema _PG_SCHEMA, plus the schema version (SQLite keeps
# it in PRAGMA user_version).
_PG_SCHEMA = "dpwidgets_ledger"
_POSTGRES_SCHEMA = [
    *(t.format(float="DOUBLE PRECISION", id="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
               without_rowid="") for t in _SCHEMA_TEMPLATE),
    """CREATE TABLE IF NOT EXISTS schema_version (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        version INTEGER NOT NULL
    )""",
]

# pg_advisory_xact_lock key that serialises opening datasets (and creating the tables):
# "dpwledgr" in ASCII.
_PG_OPEN_LOCK = int.from_bytes(b"dpwledgr", "big") & 0x7FFF_FFFF_FFFF_FFFF


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


@dataclass(frozen=True)
class Claim:
    """The claim on an idempotency key, as :meth:`PrivacyLedger.claim` left it.

    Attributes
    ----------
    state : {"running", "done", "failed"}
        ``"running"``: ``owner`` is running the release until its lease ends; ``"done"``: its
        output is stored; ``"failed"``: it failed on the data (a retry repeats the failure).
    owner : str
        The attempt holding (or that last held) the claim.
    expires : float
        When the holder's lease ends, on the database's clock (seconds since the epoch).
    now : float
        The database's clock when the claim was read.
    fresh : bool
        This call recorded the spend (the first attempt with this key).
    resumed : bool
        This call took the claim over under a spend already recorded: the earlier holder's
        lease ran out (it died before storing an output), or the key was charged before
        claims existed.
    """

    state: str
    owner: str
    expires: float
    now: float
    fresh: bool = False
    resumed: bool = False

    def held_by(self, owner: str) -> bool:
        """Whether ``owner`` holds the claim (and should run the release)."""
        return self.state == "running" and self.owner == owner

    @property
    def live(self) -> bool:
        """Whether the holder's lease is still running."""
        return self.state == "running" and self.expires > self.now


def create_private(path: str) -> None:
    """Create ``path`` (if missing) readable and writable by its owner only (mode 0600).

    The ledger and the release store hold the store's secret and every output; SQLite creates
    its journal (and WAL) files with the permissions of the database file, so they are 0600
    too. An existing file keeps its mode.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


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


# -- the two databases ------------------------------------------------------------------------
#
# The accounting (PrivacyLedger) is written once, in SQL with "?" placeholders; a backend
# object holds the connection and everything that differs between SQLite and PostgreSQL: how
# a write transaction takes its lock, the schema and its version, "INSERT OR IGNORE" and
# "INSERT OR REPLACE", placeholders, the new row's id, and what "the same database" means.


def _is_postgres_url(path) -> bool:
    return isinstance(path, str) and path.startswith(("postgresql://", "postgres://"))


class _SQLite:
    """A ledger file: its path rules, its pragmas, and ``BEGIN IMMEDIATE``."""

    persistent: bool

    def __init__(self, path, timeout: float):
        self.path, self.persistent = _resolve_path(path)
        self.timeout = float(timeout)
        self._busy_pragma = f"PRAGMA busy_timeout = {int(timeout * 1000)}"
        if self.persistent:
            create_private(self.path)
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
        self.conn = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._configure()
        except BaseException:
            self.conn.close()
            raise

    def _configure(self) -> None:
        self.conn.execute(self._busy_pragma)
        if not self.persistent:
            return
        try:
            mode = self.conn.execute("PRAGMA journal_mode = TRUNCATE").fetchone()[0]
        except sqlite3.OperationalError:
            # Leaving WAL needs every other connection to the file closed (e.g. an older
            # version of dpwidgets still running). Spends stay atomic and durable in WAL too;
            # only a copy of the main file alone could miss the latest. The next open
            # switches the file.
            mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "truncate":
            warnings.warn(
                f"the ledger {self.path!r} stays in {mode} journal mode while another process "
                f"has it open; a copy of the file alone may miss recent spends until then",
                RuntimeWarning,
                stacklevel=4,  # the caller of PrivacyLedger()
            )
        self.conn.execute("PRAGMA synchronous = FULL")

    # -- dialect --------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence = ()):
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> None:
        self.conn.executemany(sql, rows)

    def insert_id(self, sql: str, params: Sequence) -> int:
        """Run an INSERT into ``spends`` and return the new row's id."""
        return self.conn.execute(sql, params).lastrowid

    @staticmethod
    def insert(
        table: str, columns: Sequence[str], *, ignore: bool = False, replace: Sequence[str] = ()
    ) -> str:
        """INSERT of one row; ``ignore``: skip it on a conflict; ``replace``: overwrite the
        row with the same key (the columns in ``replace``)."""
        verb = "INSERT OR IGNORE" if ignore else "INSERT OR REPLACE" if replace else "INSERT"
        marks = ", ".join("?" * len(columns))
        return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({marks})"

    # -- transactions ---------------------------------------------------------------------
    def begin(self, write: bool) -> None:
        if write:
            _begin_immediate(self.conn, self.timeout, self._busy_pragma)
        else:
            self.conn.execute("BEGIN")

    def lock(self, datasets: Iterable[str]) -> None:
        """Nothing: ``BEGIN IMMEDIATE`` already holds the whole file's write lock."""

    def lock_for_opening(self) -> None:
        """Nothing, for the same reason."""

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    @staticmethod
    def retryable(exc: BaseException) -> bool:
        return False  # _begin_immediate already waits for the lock

    @staticmethod
    def now() -> float:
        """The clock leases are measured on: this machine's (one file, one machine)."""
        return time.time()

    # -- schema ---------------------------------------------------------------------------
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def set_schema_version(self, version: int) -> None:
        self.conn.execute(f"PRAGMA user_version = {int(version)}")

    def create_schema(self) -> None:
        for statement in _SQLITE_SCHEMA:
            self.conn.execute(statement)
        # Tables created by earlier versions lack the new columns.
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(datasets)")}
        if "fingerprint" not in columns:
            self.conn.execute("ALTER TABLE datasets ADD COLUMN fingerprint TEXT")
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(spends)")}
        if "spent_after" not in columns:
            self.conn.execute("ALTER TABLE spends ADD COLUMN spent_after TEXT")
        if "charged" not in columns:
            self.conn.execute("ALTER TABLE spends ADD COLUMN charged REAL")

    # -- the rest -------------------------------------------------------------------------
    def same_database(self, other) -> bool:
        """Whether ``other`` reaches the same tables (one file; a ``:memory:`` ledger is
        a database of its own)."""
        return other is self or (
            isinstance(other, _SQLite)
            and self.persistent
            and other.persistent
            and other.path == self.path
        )

    def after_open(self) -> None:
        if self.persistent:
            # The file now exists: a hard link made while we were creating it is caught here.
            _check_single_link(Path(self.path))

    def close(self) -> None:
        self.conn.close()


def _scrub(text: object, secrets: Iterable[str | None]) -> str:
    """``str(text)`` with every non-empty secret replaced by ``***``."""
    text = str(text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


@functools.lru_cache(maxsize=256)
def _pg_sql(sql: str) -> str:
    """The statement with psycopg's placeholders (the ledger's SQL has no literal ? or %)."""
    return sql.replace("?", "%s")


class _Postgres:
    """A ledger in a PostgreSQL database: a psycopg connection, row locks, an advisory lock."""

    persistent = True

    def __init__(self, url: str, timeout: float):
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
            from psycopg.pq import TransactionStatus
        except ImportError as exc:
            raise ImportError(
                "a PostgreSQL ledger needs psycopg: pip install 'dpwidgets[curator]'"
            ) from exc
        self._psycopg = psycopg
        self._retryable = (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected)
        self._idle = TransactionStatus.IDLE
        self.timeout = float(timeout)
        raw = urlsplit(url)
        self._secrets = [raw.password, unquote(raw.password or "")]
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise ValueError(
                f"the ledger URL is not a valid PostgreSQL URL: {_scrub(exc, self._secrets)}"
            ) from None
        self._secrets.append(params.get("password"))
        # Never the password: this is what repr() and error messages show.
        user = f"{params['user']}@" if params.get("user") else ""
        port = f":{params['port']}" if params.get("port") else ""
        self.path = f"postgresql://{user}{params.get('host', '')}{port}/{params.get('dbname', '')}"
        self._url = url
        self._options: dict = {"autocommit": True}  # we issue BEGIN / COMMIT ourselves
        if "connect_timeout" not in params:
            self._options["connect_timeout"] = max(2, math.ceil(self.timeout))
        self.conn = self._connect()
        info = self.conn.info
        self.identity = (info.host, info.port, info.dbname)

    def _connect(self):
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(self._url, **self._options)
        except psycopg.Error as exc:
            raise ConnectionError(
                f"cannot connect to the ledger database {self.path}: "
                f"{_scrub(exc, self._secrets)}"
            ) from None
        try:
            # lock_timeout: how long a spend waits for another's row lock (0 would mean
            # forever). idle_in_transaction_session_timeout: a client that vanished (machine
            # lost, process frozen) mid-transaction releases its locks after this long;
            # ours never idle inside a transaction.
            conn.execute(
                "SELECT set_config('lock_timeout', %s, false), "
                "set_config('idle_in_transaction_session_timeout', %s, false), "
                "set_config('search_path', %s, false)",
                (
                    f"{max(1, round(self.timeout * 1000))}ms",
                    f"{max(60_000, round(self.timeout * 1000))}ms",
                    _PG_SCHEMA,
                ),
            )
        except BaseException:
            conn.close()
            raise
        return conn

    # -- dialect --------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence = ()):
        return self.conn.execute(_pg_sql(sql), params)

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(_pg_sql(sql), rows)

    def insert_id(self, sql: str, params: Sequence) -> int:
        """Run an INSERT into ``spends`` and return the new row's id."""
        return self.execute(sql + " RETURNING id", params).fetchone()[0]

    @staticmethod
    def insert(
        table: str, columns: Sequence[str], *, ignore: bool = False, replace: Sequence[str] = ()
    ) -> str:
        """INSERT of one row; ``ignore``: skip it on a conflict; ``replace``: overwrite the
        row with the same key (the columns in ``replace``)."""
        marks = ", ".join("?" * len(columns))
        head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
        if ignore:
            return f"{head} ON CONFLICT DO NOTHING"
        if replace:
            updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in replace)
            return f"{head} ON CONFLICT ({', '.join(replace)}) DO UPDATE SET {updates}"
        return head

    # -- transactions ---------------------------------------------------------------------
    def begin(self, write: bool) -> None:
        # Explicit levels: the database's default_transaction_isolation must not matter.
        begin = (
            "BEGIN ISOLATION LEVEL READ COMMITTED"
            if write
            else "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        )
        try:
            self.conn.execute(begin)
        except self._psycopg.OperationalError:
            if not self.conn.broken:
                raise
            # The server restarted, or dropped an idle connection: nothing of this
            # transaction was sent yet, so a new connection may run it. (A connection lost
            # later, e.g. during COMMIT, is the caller's to retry, with its key.)
            self.conn.close()
            self.conn = self._connect()
            self.conn.execute(begin)

    def lock(self, datasets: Iterable[str]) -> None:
        """Lock each dataset's row of running totals, one statement each, in name order: two
        transactions locking overlapping sets take their common rows in the same order."""
        for dataset in sorted(set(datasets)):
            self.conn.execute("SELECT 1 FROM totals WHERE dataset = %s FOR UPDATE", (dataset,))

    def lock_for_opening(self) -> None:
        """Serialise openers (held until the transaction ends), then create the schema."""
        self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_OPEN_LOCK,))
        found = self.conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (_PG_SCHEMA,)
        ).fetchone()
        if found is None:
            self.conn.execute(f"CREATE SCHEMA {_PG_SCHEMA}")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if not self.conn.closed and self.conn.info.transaction_status != self._idle:
            self.conn.execute("ROLLBACK")

    def retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, self._retryable)

    def now(self) -> float:
        """The clock leases are measured on: the server's, one for every replica."""
        row = self.conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
        return float(row[0])

    # -- schema ---------------------------------------------------------------------------
    def schema_version(self) -> int:
        table = self.conn.execute(
            "SELECT to_regclass(%s)", (f"{_PG_SCHEMA}.schema_version",)
        ).fetchone()[0]
        if table is None:
            return 0
        row = self.conn.execute("SELECT version FROM schema_version").fetchone()
        return row[0] if row else 0

    def set_schema_version(self, version: int) -> None:
        self.execute(
            self.insert("schema_version", ("id", "version"), replace=("id",)), (1, int(version))
        )

    def create_schema(self) -> None:
        for statement in _POSTGRES_SCHEMA:
            self.conn.execute(statement)

    # -- the rest -------------------------------------------------------------------------
    def same_database(self, other) -> bool:
        """Whether ``other`` is connected to the same server and database (as the client
        names them: "localhost" and "127.0.0.1" count as two)."""
        return isinstance(other, _Postgres) and other.identity == self.identity

    def after_open(self) -> None:
        pass

    def close(self) -> None:
        self.conn.close()


class PrivacyLedger:
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
        self._db = _Postgres(path, timeout) if _is_postgres_url(path) else _SQLite(path, timeout)
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

    # -- opening --------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Bring the database to the current schema (inside the opening transaction)."""
        db = self._db
        version = db.schema_version()
        if version >= _SCHEMA_VERSION:
            return
        db.create_schema()
        alias = db.insert("aliases", ("kind", "value", "dataset", "created"), ignore=True)
        names = db.execute("SELECT name, created FROM datasets ORDER BY created, name")
        for name, created in names.fetchall() if version < 2 else ():
            # Oldest first: if two old datasets differ only in spelling, the older one keeps
            # the normalised name (both stay reachable by their exact names).
            db.execute(alias, ("name", normalise_name(name), name, created))
            self._rebuild(name)
        db.set_schema_version(_SCHEMA_VERSION)

    def _open_dataset(
        self, requested: str, total_epsilon: float | None, fingerprint: str | None
    ) -> None:
        db = self._db
        db.lock_for_opening()
        self._migrate()
        now = time.time()
        normal = normalise_name(requested)
        exact = db.execute("SELECT name FROM datasets WHERE name = ?", (requested,)).fetchone()
        if exact is not None:
            by_name = exact[0]
        else:
            row = db.execute(
                "SELECT dataset FROM aliases WHERE kind = 'name' AND value = ?", (normal,)
            ).fetchone()
            by_name = row[0] if row else None
        by_fingerprint = None
        if fingerprint is not None:
            row = db.execute(
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
            db.execute(
                "INSERT INTO datasets (name, total_epsilon, created, fingerprint) "
                "VALUES (?, ?, ?, ?)",
                (canonical, total_epsilon, now, fingerprint),
            )
            db.execute(
                "INSERT INTO totals (dataset, whole, parallel, count, last_id) "
                "VALUES (?, '0', '0', 0, 0)",
                (canonical,),
            )
        cap = db.execute(
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
        alias = db.insert("aliases", ("kind", "value", "dataset", "created"), ignore=True)
        db.execute(alias, ("name", normal, canonical, now))
        if fingerprint is not None:
            db.execute(alias, ("fingerprint", fingerprint, canonical, now))
            db.execute(
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
        dpwidgets.engine.budget.BudgetExceededError: privacy budget of dataset 'visits/alice' exceeded: ...
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

    # -- claims on idempotency keys --------------------------------------------------------
    def claim(
        self,
        epsilon: float,
        label: str = "release",
        *,
        key: str,
        owner: str,
        lease: float,
        partition: str | None = None,
        parts: Iterable[str] | None = None,
        jointly: Iterable[PrivacyLedger] = (),
    ) -> Claim:
        """Charge a keyed spend and claim the right to run its release, in one transaction.

        Several attempts may carry one idempotency key at once (a client's retry reaching
        another curator replica while the first attempt runs). The key pays once; the claim
        decides which attempt runs the release, so that one output is made for one charge:

        * the first attempt records the spend (as :meth:`spend` does) and a claim held by
          ``owner`` for ``lease`` seconds;
        * a later attempt finds the claim. While the holder's lease lasts it must not run:
          it waits for the holder's output (:meth:`claim_state`, then the release store)
          or its failure. Once the lease has run out without an output (the holder died),
          the later attempt takes the claim over and runs under the spend already recorded
          (``resumed``); nothing is charged twice.
        * the holder calls :meth:`finish` when it has stored the output (or failed on the
          data), and may :meth:`renew` its lease while it runs.

        Leases are measured on the database's clock (SQLite: this machine's; PostgreSQL: the
        server's), so replicas on several machines agree on when one has run out.

        Parameters
        ----------
        epsilon, label, partition, parts, jointly
            As for :meth:`spend`.
        key : str
            The idempotency key (required).
        owner : str
            Names this attempt (unique per attempt: a uuid, say).
        lease : float
            Seconds the claim is held without an output before another attempt may take it
            over: longer than the slowest release.

        Returns
        -------
        Claim
            ``claim.held_by(owner)``: run the release (``claim.fresh``: this call charged it;
            ``claim.resumed``: under an earlier attempt's charge). Otherwise another attempt
            holds the claim (``"running"``, until ``claim.expires``) or ended it
            (``"done"``: replay its stored output; ``"failed"``: repeat its failure).

        Raises
        ------
        BudgetExceededError, ValueError
            As for :meth:`spend` (nothing recorded, no claim taken).
        """
        epsilon, label, partition, parts, ledgers = self._spend_args(
            epsilon, label, partition, parts, key, jointly
        )
        owner = self._check_owner(owner, key)
        lease = self._check_lease(lease)

        def body() -> Claim:
            fresh = self._spend_in(ledgers, epsilon, label, partition, parts, key)
            db = self._db
            now = db.now()
            row = db.execute(
                "SELECT owner, expires, state FROM claims WHERE dataset = ? AND key = ?",
                (self.dataset, key),
            ).fetchone()
            if row is not None and not (row[2] == "running" and (row[0] == owner or row[1] <= now)):
                return Claim(row[2], row[0], float(row[1]), now, fresh=fresh)
            db.execute(
                db.insert(
                    "claims",
                    ("dataset", "key", "owner", "expires", "state", "updated"),
                    replace=("dataset", "key"),
                ),
                (self.dataset, key, owner, now + lease, "running", now),
            )
            resumed = not fresh and (row is None or row[0] != owner)
            return Claim("running", owner, now + lease, now, fresh=fresh, resumed=resumed)

        return self._write(body, [ledger.dataset for ledger in ledgers])

    def claim_state(self, key: str) -> Claim | None:
        """The claim on ``key`` as last committed (a read: never blocked, never blocking),
        or ``None`` if there is none."""

        def body():
            row = self._db.execute(
                "SELECT owner, expires, state FROM claims WHERE dataset = ? AND key = ?",
                (self.dataset, key),
            ).fetchone()
            return None if row is None else Claim(row[2], row[0], float(row[1]), self._db.now())

        return self._transaction(body, write=False)

    def renew(self, key: str, owner: str, lease: float) -> bool:
        """Extend ``owner``'s lease on ``key`` to ``lease`` seconds from now; ``False`` if it
        no longer holds the claim (its lease ran out and another attempt took it over)."""
        owner = self._check_owner(owner, key)
        lease = self._check_lease(lease)

        def body() -> bool:
            db = self._db
            now = db.now()
            return db.execute(
                "UPDATE claims SET expires = ?, updated = ? WHERE dataset = ? AND key = ? "
                "AND owner = ? AND state = 'running'",
                (now + lease, now, self.dataset, key, owner),
            ).rowcount > 0

        return self._write(body, [self.dataset])

    def finish(self, key: str, owner: str, *, failed: bool = False) -> bool:
        """End the claim on ``key``: its output is stored (``failed=False``, whoever holds
        the claim now: the stored output is the release), or ``owner``'s run failed on the
        data (``failed=True``; only while ``owner`` still holds the claim, otherwise the
        attempt that took it over decides). Returns whether the claim changed."""
        owner = self._check_owner(owner, key)

        def body() -> bool:
            db = self._db
            now = db.now()
            if failed:
                sql = ("UPDATE claims SET state = 'failed', updated = ? WHERE dataset = ? "
                       "AND key = ? AND owner = ? AND state = 'running'")
                args = (now, self.dataset, key, owner)
            else:
                sql = ("UPDATE claims SET state = 'done', updated = ? WHERE dataset = ? "
                       "AND key = ? AND state <> 'done'")
                args = (now, self.dataset, key)
            return db.execute(sql, args).rowcount > 0

        return self._write(body, [self.dataset])

    @staticmethod
    def _check_owner(owner, key) -> str:
        if not isinstance(key, str) or not key:
            raise ValueError(f"a claim needs a non-empty string key, got {key!r}")
        if not isinstance(owner, str) or not owner:
            raise ValueError(f"owner must be a non-empty string naming the attempt, got {owner!r}")
        return owner

    @staticmethod
    def _check_lease(lease) -> float:
        if isinstance(lease, bool) or not isinstance(lease, int | float) or not (
            math.isfinite(lease) and lease > 0
        ):
            raise ValueError(f"lease must be a number of seconds > 0, got {lease!r}")
        return float(lease)

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


class LedgerView:
    """A ledger seen through its :meth:`summary` alone (read-only properties derived from one
    snapshot): what a curator's joint ledger and an analyst's remote ledger provide."""

    def summary(self, recent: int = 0) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    total_epsilon = property(lambda self: self.summary()["total_epsilon"], doc="The cap.")
    spent = property(lambda self: self.summary()["spent"], doc="Epsilon spent so far.")
    remaining = property(lambda self: self.summary()["remaining"], doc="Epsilon left.")
    count = property(lambda self: self.summary()["count"], doc="Spends recorded.")

    def recent(self, limit: int = 50) -> list[Spend]:
        """The latest ``limit`` spends, oldest first."""
        return self.summary(limit)["recent"]


class _Stale(Exception):
    """The running totals of ``dataset`` miss spends recorded by an older writer (internal)."""

    def __init__(self, dataset: str):
        super().__init__(dataset)
        self.dataset = dataset
