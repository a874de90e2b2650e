"""The running totals: what a dataset's spends add up to, kept so that charging is O(1).

Running totals
--------------
The ledger charges ``sum(whole-dataset spends) + sum over partitions of max over parts (spends
on part)`` (see "Composition" in :mod:`dpwidgets.persistence.ledger`). Rather than add up every
spend at every charge, it keeps the sums in the database: one row per dataset in ``totals``
(the whole-dataset sum, the sum of the partitions' maxima, the number of spends and the id of
the last one), one per part in ``part_totals`` and one per partition in ``partition_max``. A
spend reads them, checks the cap, and writes the new sums in its own transaction, under the
lock on its dataset's ``totals`` row (see :mod:`dpwidgets.persistence.backend`).

The totals are exact rational numbers (a float is a dyadic rational, so ``Fraction(x)`` is
exact), stored as text and rounded to a float once when read: ten spends of 0.1 make
``spent == 1.0`` exactly, as ``math.fsum`` would.

Rebuilt from the spends
-----------------------
The spends are the record; the totals are their sums, and can always be recomputed from them.
A ``totals`` row whose last id is not the dataset's latest spend misses spends (recorded by a
version of this code that kept no totals): reading it raises ``_Stale``, and the ledger rebuilds
that dataset's totals from its spends (O(n), once) in a write transaction of its own before
reading or charging again. Migrating an old file rebuilds every dataset's totals.

:class:`Totals` is a mixin of :class:`~dpwidgets.persistence.ledger.PrivacyLedger`, as
:class:`~dpwidgets.persistence.datasets.Datasets` and :class:`~dpwidgets.persistence.claims.Claims`
are: the totals are read and written only inside the ledger's transactions, on its backend, by
every other part of it (the migration, the reads, the spends).
"""

from __future__ import annotations

import json
from fractions import Fraction

__all__ = ["Totals"]


def _fraction(text: str | None) -> Fraction:
    return Fraction(text) if text else Fraction(0)


class Totals:
    """The running totals of :class:`~dpwidgets.persistence.ledger.PrivacyLedger` (a mixin: it
    reads and writes them inside the ledger's transactions, on its backend).

    Examples
    --------
    Ten spends of 0.1 add up to 1.0 exactly; within one partition, only the part with the
    largest total counts, so a spend on another part that stays at or below it is free:

    >>> from dpwidgets.persistence import PrivacyLedger
    >>> ledger = PrivacyLedger(":memory:", dataset="demo", total_epsilon=2.0)
    >>> for _ in range(10):
    ...     _ = ledger.spend(0.1)
    >>> ledger.spent
    1.0
    >>> ledger.spend(0.5, partition="region", parts=["north", "south"])
    True
    >>> ledger.cost_of(0.5, partition="region", parts=["east"]), ledger.spent
    (0.0, 1.5)
    """

    # -- reading ----------------------------------------------------------------------------
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

    # -- writing ----------------------------------------------------------------------------
    def _store_totals(
        self,
        dataset: str,
        spend_id: int,
        whole: Fraction,
        parallel: Fraction,
        partition: str | None,
        new_parts: list[tuple[str, Fraction]],
        new_max: Fraction | None,
    ) -> None:
        """Write what :meth:`_charge` computed for ``dataset`` once its spend ``spend_id`` is
        inserted (inside that spend's transaction)."""
        db = self._db
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

    # -- rebuilding -------------------------------------------------------------------------
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


class _Stale(Exception):
    """The running totals of ``dataset`` miss spends recorded by an older writer (internal)."""

    def __init__(self, dataset: str):
        super().__init__(dataset)
        self.dataset = dataset
