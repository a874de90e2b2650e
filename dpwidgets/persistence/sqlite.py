"""The SQLite backend: a ledger file (or ``":memory:"``), its path rules and its pragmas."""

from __future__ import annotations

import os
import random
import sqlite3
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

from .backend import SCHEMA_TEMPLATE
from .paths import create_private, default_ledger_path

__all__ = ["SQLITE_SCHEMA", "SQLiteBackend", "begin_immediate"]

SQLITE_SCHEMA = [t.format(float="REAL", id="INTEGER PRIMARY KEY AUTOINCREMENT",
                           without_rowid=" WITHOUT ROWID") for t in SCHEMA_TEMPLATE]


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


def begin_immediate(conn: sqlite3.Connection, timeout: float, busy_pragma: str) -> None:
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


class SQLiteBackend:
    """A ledger file: its path rules, its pragmas, and ``BEGIN IMMEDIATE``.

    Examples
    --------
    The file is created readable by its owner only, and the tables in a write transaction:

    >>> import os, tempfile
    >>> from dpwidgets.persistence import SQLiteBackend
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
    >>> backend = SQLiteBackend(path, timeout=5.0)
    >>> backend.persistent, oct(os.stat(path).st_mode & 0o777)
    (True, '0o600')
    >>> backend.begin(write=True); backend.create_schema(); backend.commit()
    >>> backend.execute("SELECT count(*) FROM spends").fetchone()
    (0,)
    >>> backend.close()
    """

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
            begin_immediate(self.conn, self.timeout, self._busy_pragma)
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
        return False  # begin_immediate already waits for the lock

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
        for statement in SQLITE_SCHEMA:
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
            isinstance(other, SQLiteBackend)
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
