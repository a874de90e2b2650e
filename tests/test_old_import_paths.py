"""The ledger and the release store moved to dpwidgets.persistence, and the personalized-DP
family to dpwidgets/families/personalized/; their old import paths (dpwidgets.engine.budget,
dpwidgets.store, dpwidgets.releases.personalized, ...) still give the same objects, with a
DeprecationWarning that names the new path."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import dpwidgets.persistence as persistence
from dpwidgets.persistence import postgres, sqlite, store


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("dpwidgets.engine.budget", "PrivacyLedger", persistence.PrivacyLedger),
        ("dpwidgets.engine.budget", "Spend", persistence.Spend),
        ("dpwidgets.engine.budget", "LedgerView", persistence.LedgerView),
        ("dpwidgets.engine.budget", "default_ledger_path", persistence.default_ledger_path),
        ("dpwidgets.engine.budget", "_begin_immediate", sqlite.begin_immediate),
        ("dpwidgets.engine.budget", "_Postgres", postgres.PostgresBackend),
        ("dpwidgets.engine.budget", "_PG_SCHEMA", postgres.PG_SCHEMA),
        ("dpwidgets.store", "ReleaseStore", store.ReleaseStore),
        ("dpwidgets.store", "decode_output", store.decode_output),
        ("dpwidgets.store", "_to_jsonable", store.to_jsonable),
    ],
)
def test_an_old_path_warns_and_gives_the_moved_object(old, name, new):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=r"dpwidgets\.persistence\."):
        assert getattr(module, name) is new


def test_budget_exceeded_error_keeps_its_old_paths_without_a_warning():
    from dpwidgets.engine.errors import BudgetExceededError, ReleaseRefused

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from dpwidgets.engine import BudgetExceededError as from_engine
        from dpwidgets.engine import PrivacyLedger
        from dpwidgets.engine.budget import BudgetExceededError as from_budget
    assert from_engine is from_budget is persistence.BudgetExceededError is BudgetExceededError
    assert issubclass(BudgetExceededError, ReleaseRefused)
    assert PrivacyLedger is persistence.PrivacyLedger


def test_an_unknown_name_is_an_import_error():
    with pytest.raises(ImportError):
        from dpwidgets.engine.budget import no_such_name  # noqa: F401
    with pytest.raises(ImportError):
        from dpwidgets.store import no_such_name  # noqa: F401


# The personalized-DP family moved into dpwidgets/families/personalized/: each old module is
# the new one, imported with a DeprecationWarning that names it.
@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("dpwidgets.releases.personalized", "PERSONALIZED_MECHANISMS",
         "dpwidgets.families.personalized.spec"),
        ("dpwidgets.releases.personalized", "PrivacyVector",
         "dpwidgets.families.personalized.params"),
        ("dpwidgets.releases.personalized", "release_plan",
         "dpwidgets.families.personalized.params"),
        ("dpwidgets.releases.personalized", "personalized_stand_in",
         "dpwidgets.families.personalized.standins"),
        ("dpwidgets.widgets.personalized", "PersonalizedWidget",
         "dpwidgets.families.personalized.widget"),
        ("dpwidgets.widgets.personalized", "DATASETS", "dpwidgets.families.personalized.sources"),
        ("dpwidgets.widgets.personalized", "METHODS", "dpwidgets.families.personalized.text"),
        ("dpwidgets.widgets.figures.personalized", "personalized_figure",
         "dpwidgets.families.personalized.display"),
        ("dpwidgets.widgets.figures.personalized", "budget_used",
         "dpwidgets.families.personalized.display"),
        ("dpwidgets.datasets.personalized", "count_task",
         "dpwidgets.families.personalized.standins"),
        ("dpwidgets.datasets.personalized", "make_budgets",
         "dpwidgets.families.personalized.standins"),
    ],
)
def test_an_old_personalized_path_warns_and_gives_the_moved_object(old, name, new):
    sys.modules.pop(old, None)  # imported afresh: the warning comes with the import
    with pytest.warns(DeprecationWarning, match=r"dpwidgets\.families\.personalized\."):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)
