"""The journal: the spends a ledger has recorded and what they add up to, read-only.

Every read runs in one read transaction: one consistent snapshot, never blocked by a spend
(see :mod:`dpwidgets.persistence.backend`). Totals are read from the running totals
(:mod:`dpwidgets.persistence.totals`) and spends by index, so a read costs O(1), O(the spends
it returns) or O(the parts it names), whatever the number of spends; only
:attr:`~Journal.spends` and :meth:`~Journal.history` read them all. A read that finds the
totals stale has them rebuilt first, then reads again.

:class:`Journal` is a mixin of :class:`~dpwidgets.persistence.ledger.PrivacyLedger`, as
:class:`~dpwidgets.persistence.datasets.Datasets` and :class:`~dpwidgets.persistence.claims.Claims`
are, rather than an object the ledger holds: its reads are the ledger's own public API
(``ledger.spent``, ``ledger.summary()``, ...) and run in the ledger's transactions on its
backend, so a separate object would need a forwarding method on the ledger for each of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from fractions import Fraction

from ..engine.validation import check_epsilon
from .records import Spend

__all__ = ["Journal"]


class Journal:
    """The read-only queries of :class:`~dpwidgets.persistence.ledger.PrivacyLedger` (a mixin:
    they run in the ledger's read transactions, on its backend).

    Examples
    --------
    >>> from dpwidgets.persistence import PrivacyLedger
    >>> ledger = PrivacyLedger(":memory:", dataset="demo", total_epsilon=1.0)
    >>> ledger.spend(0.25, "histogram", key="r1")
    True
    >>> ledger.count, ledger.has_key("r1"), ledger.cost_of(0.5), round(ledger.remaining, 6)
    (1, True, 0.5, 0.75)
    >>> [(spend.label, spend.charged) for spend in ledger.recent(5)]
    [('histogram', 0.25)]
    """

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
