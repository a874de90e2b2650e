"""The analyst's budgets: ``GET /budget``.

One entry per budget the analyst holds (the views of one table share one budget, shown once):
what the analyst spent and has left on it, what the dataset's own cap has left (the smaller of
the two is what a release can spend), and the 50 most recent spends. The analyst's own ledger
only: never another analyst's spends.
"""

from __future__ import annotations

from fastapi import APIRouter

from .access import Auth, Served, analyst

__all__ = ["router"]

router = APIRouter()


@router.get("/budget")
def budget(curator: Served, authorization: Auth = None):
    who, _, door = analyst(curator, authorization)
    out = {}
    for name in door.datasets:
        ledger = door.ledger(name)
        if ledger.shared.dataset in out:
            continue
        summary = ledger.summary(recent=50)
        summary["recent"] = [s.__dict__ | {"parts": list(s.parts) if s.parts else None}
                             for s in summary["recent"]]
        out[ledger.shared.dataset] = summary
    return {"analyst": who, "budgets": out}
