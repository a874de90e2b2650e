"""The privacy ledger: a persistent, process-safe record of the budget spent on each dataset.

The ledger is the product's safety catch (SPEC.md §2, principle 4). Every spend is one SQLite
transaction taken with ``BEGIN IMMEDIATE``: the database's write lock is held from the moment
the spends so far are read until the new one is committed, so two processes can never both
read "0.4 left" and both spend 0.4. A crash before the commit leaves nothing recorded; a spend
made with a ``key`` is recorded at most once, so retrying it after a crash charges nothing twice.

Composition
-----------
Spends on the whole dataset add up (sequential composition). A release over disjoint parts of
the data declares them with ``partition=`` and ``parts=``: within one partition, an individual
belongs to exactly one part, so what that partition costs is the largest total over its parts
(parallel composition, McSherry 2009, Thm. 4). Parts of *different* partitions may overlap,
so different partitions add up. The ledger therefore charges

    spent = sum(whole-dataset spends) + sum over partitions of max over parts (spends on part),

which bounds the privacy loss of every individual and is never exceeded.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ._validation import check_epsilon

__all__ = [
    "BudgetExceededError",
    "PrivacyLedger",
    "Spend",
    "default_ledger_path",
]

# Relative slack when comparing float sums, so that spending exactly what is left
# (0.1 ten times against a cap of 1.0) is allowed; far below any meaningful epsilon.
_TOLERANCE = 1e-9

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY,
    total_epsilon REAL NOT NULL CHECK (total_epsilon > 0),
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets(name),
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    label TEXT NOT NULL,
    created REAL NOT NULL,
    partition TEXT,
    parts TEXT,
    key TEXT,
    UNIQUE (dataset, key)
);
CREATE INDEX IF NOT EXISTS spends_by_dataset ON spends(dataset);
"""


class BudgetExceededError(RuntimeError):
    """A spend would take a dataset past its total budget; nothing was recorded."""

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
    """One recorded spend."""

    epsilon: float
    label: str
    time: float
    partition: str | None = None
    parts: tuple[str, ...] | None = None
    key: str | None = None


def default_ledger_path() -> Path:
    """The ledger file used when none is given: ``$DPWIDGETS_LEDGER``, else under the user's
    data directory (``platformdirs.user_data_dir("dpwidgets")/ledger.sqlite``)."""
    env = os.environ.get("DPWIDGETS_LEDGER")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("dpwidgets", appauthor=False)) / "ledger.sqlite"


def _charged(spends: Iterable[Spend]) -> tuple[float, dict[str, dict[str, float]]]:
    """Return (whole-dataset total, {partition: {part: total}})."""
    whole: list[float] = []
    terms: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in spends:
        if s.partition is None:
            whole.append(s.epsilon)
        else:
            for part in s.parts or ():
                terms[s.partition][part].append(s.epsilon)
    # math.fsum: ten spends of 0.1 make exactly 1.0, not 0.9999999999999999.
    by_partition = {
        name: {part: math.fsum(eps) for part, eps in parts.items()} for name, parts in terms.items()
    }
    return math.fsum(whole), by_partition


def _composed(whole: float, by_partition: dict[str, dict[str, float]]) -> float:
    return whole + sum(max(parts.values(), default=0.0) for parts in by_partition.values())


class PrivacyLedger:
    """Budget accounting for one dataset, persisted in SQLite.

    Parameters
    ----------
    path : str or path-like, optional
        The SQLite file (created if missing), ``":memory:"`` for a throw-away ledger (teaching
        mode), or ``None`` for :func:`default_ledger_path`.
    dataset : str
        The name the spends are keyed by. Every process opening the same file and dataset
        shares one budget.
    total_epsilon : float, optional
        The cap. Required the first time a dataset is recorded; afterwards it may be omitted,
        and if given it must equal the recorded cap (a cap cannot be changed by reopening).
    timeout : float
        Seconds to wait for another process's transaction before giving up.

    Examples
    --------
    >>> ledger = PrivacyLedger(":memory:", dataset="demo", total_epsilon=1.0)
    >>> ledger.spend(0.25, label="histogram")
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
    ):
        if not isinstance(dataset, str) or not dataset:
            raise ValueError(f"dataset must be a non-empty string, got {dataset!r}")
        if total_epsilon is not None:
            total_epsilon = check_epsilon(total_epsilon, "total_epsilon")
        self.dataset = dataset
        if path is None:
            path = default_ledger_path()
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        with self._lock:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.executescript(_SCHEMA)
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute(
                    "SELECT total_epsilon FROM datasets WHERE name = ?", (dataset,)
                ).fetchone()
                if row is None:
                    if total_epsilon is None:
                        raise ValueError(
                            f"dataset {dataset!r} has no budget recorded in {self.path}; "
                            f"pass total_epsilon= to set its cap"
                        )
                    self._conn.execute(
                        "INSERT INTO datasets (name, total_epsilon, created) VALUES (?, ?, ?)",
                        (dataset, total_epsilon, time.time()),
                    )
                elif total_epsilon is not None and not math.isclose(row[0], total_epsilon):
                    raise ValueError(
                        f"dataset {dataset!r} already has a cap of epsilon={row[0]:.6g} in "
                        f"{self.path}; reopening cannot change it (asked for {total_epsilon:.6g})"
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self.total_epsilon = float(
                self._conn.execute(
                    "SELECT total_epsilon FROM datasets WHERE name = ?", (dataset,)
                ).fetchone()[0]
            )

    # -- reading --------------------------------------------------------------------------
    def _read_spends(self) -> list[Spend]:
        rows = self._conn.execute(
            "SELECT epsilon, label, created, partition, parts, key FROM spends "
            "WHERE dataset = ? ORDER BY id",
            (self.dataset,),
        ).fetchall()
        return [
            Spend(
                epsilon=r[0],
                label=r[1],
                time=r[2],
                partition=r[3],
                parts=tuple(json.loads(r[4])) if r[4] is not None else None,
                key=r[5],
            )
            for r in rows
        ]

    @property
    def spends(self) -> list[Spend]:
        """Every spend recorded for this dataset, oldest first."""
        with self._lock:
            return self._read_spends()

    @property
    def spent(self) -> float:
        """Epsilon spent so far, under sequential and parallel composition."""
        return _composed(*_charged(self.spends))

    @property
    def remaining(self) -> float:
        """Epsilon still available (never negative)."""
        return max(0.0, self.total_epsilon - self.spent)

    def cost_of(
        self, epsilon: float, *, partition: str | None = None, parts: Iterable[str] | None = None
    ) -> float:
        """How much ``spent`` would grow if this spend were made now (0 for a free part)."""
        epsilon = check_epsilon(epsilon)
        partition, parts = self._check_parts(partition, parts)
        spends = self.spends
        before = _composed(*_charged(spends))
        after = _composed(*_charged([*spends, Spend(epsilon, "", 0.0, partition, parts)]))
        return after - before

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
            retry safely after a crash.

        Returns
        -------
        bool
            ``True`` if a new spend was recorded, ``False`` if ``key`` was already recorded.
        """
        epsilon = check_epsilon(epsilon)
        if not isinstance(label, str):
            raise ValueError(f"label must be a string, got {label!r}")
        partition, parts = self._check_parts(partition, parts)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                if key is not None and self._conn.execute(
                    "SELECT 1 FROM spends WHERE dataset = ? AND key = ?", (self.dataset, key)
                ).fetchone():
                    self._conn.execute("ROLLBACK")
                    return False
                spends = self._read_spends()
                before = _composed(*_charged(spends))
                new = Spend(epsilon, label, time.time(), partition, parts, key)
                after = _composed(*_charged([*spends, new]))
                if after > self.total_epsilon * (1 + _TOLERANCE):
                    raise BudgetExceededError(
                        self.dataset,
                        requested=epsilon,
                        remaining=max(0.0, self.total_epsilon - before),
                        total=self.total_epsilon,
                        label=label,
                    )
                self._conn.execute(
                    "INSERT INTO spends (dataset, epsilon, label, created, partition, parts, key) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        self.dataset,
                        epsilon,
                        label,
                        new.time,
                        partition,
                        json.dumps(list(parts)) if parts is not None else None,
                        key,
                    ),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        return True

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
