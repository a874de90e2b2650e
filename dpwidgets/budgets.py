"""The budgets a local door charges: one ledger per dataset it holds, opened through its port.

:class:`Budgets` opens each dataset's ledger through the door's
:class:`~dpwidgets.door.LedgerPort` (one :class:`~dpwidgets.persistence.ledger.PrivacyLedger`
per budget by default, a curator's joint ledgers for an analyst's door), keeps the teaching-mode
runs past a cap (:class:`~dpwidgets.mechanism.Overdraft`) and reports what is spent and what
remains for a person to read. The cap itself is the ledger's to enforce, exactly.
"""

from __future__ import annotations

import time

from .door import LedgerPort
from .mechanism import Overdraft

__all__ = ["Budgets"]


def _round_dust(x: float) -> float:
    """A ledger total for a person to read: the exact sum rounded to 12 significant digits, so
    that 1 - 0.8 reads 0.2, not 0.19999999999999996. Only what is *reported*: the cap check
    stays exact (the ledger's, in fractions, with a relative slack of 1e-9 that admits
    spending exactly what this reports)."""
    return float(f"{float(x):.12g}")


class Budgets:
    """The ledgers of a door's datasets, by dataset name, and their teaching overdrafts.

    Parameters
    ----------
    port : LedgerPort
        How a dataset's ledger is opened (:meth:`open`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.budgets import Budgets
    >>> from dpwidgets.catalog import entry
    >>> from dpwidgets.door import LedgerFiles
    >>> budgets = Budgets(LedgerFiles(":memory:"))
    >>> held = entry("scores", np.arange(6.0), None, "", "row", None, ())
    >>> budgets.add(held.name, budgets.open(held, 1.0))
    >>> held.ledger_name, budgets.spent("scores")
    ('scores', 0.0)
    >>> budgets.overdraw("scores", 2.0, "a run past the cap")
    >>> [o.label for o in budgets.overdrafts("scores")]
    ['a run past the cap']
    """

    def __init__(self, port: LedgerPort):
        self.port = port
        self.ledgers: dict = {}
        self.overdrawn: dict[str, list[Overdraft]] = {}

    def open(self, held, total_epsilon: float | None):
        """Open the ledger of an entry through the port (``total_epsilon`` ``None``: the
        recorded cap) and name on the entry the budget it is charged to."""
        ledger = self.port.open(held, total_epsilon)
        held.ledger_name = ledger.dataset
        return ledger

    def add(self, name: str, ledger) -> None:
        """Charge the dataset ``name`` to ``ledger`` from now on."""
        self.ledgers[name] = ledger
        self.overdrawn[name] = []

    def ledger(self, name: str):
        """The ledger of a dataset."""
        return self.ledgers[name]

    def spent(self, name: str) -> float:
        """Epsilon charged to a dataset's ledger, to 12 significant digits."""
        return _round_dust(self.ledgers[name].spent)

    def remaining(self, name: str) -> float:
        """Epsilon still available on a dataset's ledger, to 12 significant digits."""
        return _round_dust(self.ledgers[name].remaining)

    def overdrafts(self, name: str) -> list[Overdraft]:
        """The teaching-mode runs of a dataset past its cap, oldest first (a copy)."""
        return list(self.overdrawn[name])

    def overdraw(self, name: str, epsilon: float, label: str) -> None:
        """Record a teaching-mode run past the cap (what analyst mode would have refused)."""
        self.overdrawn[name].append(Overdraft(epsilon, label, time.time()))

    def summary(self) -> str:
        """``"name: spent/total, ..."`` for every dataset, in the order they were added."""
        return ", ".join(f"{n}: {ledger.spent:.3g}/{ledger.total_epsilon:.3g}"
                         for n, ledger in self.ledgers.items())

    def close(self) -> None:
        """Close every ledger's database connection."""
        for ledger in self.ledgers.values():
            ledger.close()
