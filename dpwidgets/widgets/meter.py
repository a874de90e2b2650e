"""The budget meter: an anywidget showing spent and remaining epsilon per dataset.

The front end (``js/meter.js``) only draws what the traits say: one bar per dataset made of
one segment per release (hover: label, epsilon, time), a warning once ``warn_fraction`` of the
budget is spent, and the remaining budget in odds terms. Nothing in the traits is derived from
the data: labels, epsilons and times of releases are public.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import TYPE_CHECKING

import anywidget
import traitlets

from ._static import static_path

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["BudgetMeter", "odds_sentence"]


def odds_sentence(epsilon: float) -> str:
    """State a privacy loss as the factor by which an observer's odds may change."""
    if epsilon > 700:  # e^ε overflows a float; say it in powers of ten instead
        factor = f"10^{epsilon / math.log(10):.0f}"
    else:
        factor = f"{math.exp(epsilon):.3g}"
    return (
        f"an observer's odds about any one person can change by at most a factor "
        f"e^{epsilon:.3g} ≈ {factor}"
    )


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t).isoformat(timespec="seconds")


class BudgetMeter(anywidget.AnyWidget):
    """Spent and remaining epsilon of every dataset of a :class:`~dpwidgets.Session`.

    Use ``session.meter`` rather than constructing one: the session keeps it live, refreshing
    it after every release attempt of any widget of the session.

    Traits
    ------
    budgets : list of dict
        One entry per dataset: ``dataset``, ``total``, ``spent``, ``remaining``, ``fraction``,
        ``warning`` (spent >= ``warn_fraction`` of total), ``overdraft`` (teaching-mode epsilon
        past the cap), ``odds`` (the remaining budget in odds terms) and ``segments`` (one per
        release: ``label``, ``epsilon``, ``time``, ``overdraft``).
    active : str
        The dataset of the latest release (highlighted).
    message : str
        The latest refusal (over budget, not private), or "".
    """

    _esm = static_path("meter.js")
    _css = static_path("meter.css")

    mode = traitlets.Unicode("teaching").tag(sync=True)
    budgets = traitlets.List(traitlets.Dict()).tag(sync=True)
    active = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    warn_fraction = traitlets.Float(0.8).tag(sync=True)

    def __init__(self, session: Session, **kwargs):
        super().__init__(
            mode=session.mode,
            warn_fraction=session.warn_fraction,
            message=session.last_refusal,
            **kwargs,
        )
        self._session = session
        session.observe(self._on_event)
        self.refresh()

    def _on_event(self, session: Session, event: dict) -> None:
        if event.get("kind") == "refused":
            self.message = event.get("message", "")
        elif event.get("kind") == "release":
            self.message = ""
        if event.get("dataset"):
            self.active = event["dataset"]
        self.refresh()

    def budget(self, dataset: str | None = None) -> dict:
        """The entry of ``budgets`` for one dataset (default: the active one)."""
        name = dataset or self.active or (self.budgets[0]["dataset"] if self.budgets else "")
        for entry in self.budgets:
            if entry["dataset"] == name:
                return entry
        raise KeyError(f"no budget for dataset {name!r}")

    def refresh(self) -> None:
        """Re-read every ledger and push the result to the front end."""
        budgets = []
        for name in self._session.datasets:
            ledger = self._session.ledger(name)
            spends = ledger.spends
            total = ledger.total_epsilon
            spent = ledger.spent
            overdrafts = self._session.overdrafts(name)
            segments = [
                {"label": s.label, "epsilon": s.epsilon, "time": _iso(s.time), "overdraft": False}
                for s in spends
            ] + [
                {"label": o.label, "epsilon": o.epsilon, "time": _iso(o.time), "overdraft": True}
                for o in overdrafts
            ]
            overdraft = math.fsum(o.epsilon for o in overdrafts)
            remaining = max(0.0, total - spent)
            budgets.append(
                {
                    "dataset": name,
                    "total": total,
                    "spent": spent,
                    "remaining": remaining,
                    "fraction": spent / total,
                    "warning": spent >= self.warn_fraction * total * (1 - 1e-9),
                    "overdraft": overdraft,
                    "odds": odds_sentence(remaining),
                    "segments": segments,
                }
            )
        if not self.active and budgets:
            self.active = budgets[0]["dataset"]
        self.budgets = budgets
