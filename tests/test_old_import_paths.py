"""The ledger and the release store moved to dpwidgets.persistence, and a family's modules to
its folder dpwidgets/families/<family>/; their old import paths (dpwidgets.engine.budget,
dpwidgets.store, dpwidgets.releases.diagnostics, ...) still give the same objects, with a
DeprecationWarning that names the new path."""

from __future__ import annotations

import importlib
import re
import sys
import warnings

import pytest

import dpwidgets.catalog as catalog
import dpwidgets.persistence as persistence
from dpwidgets.families.diagnostics import display as diagnostics_display
from dpwidgets.families.diagnostics import spec as diagnostics_spec
from dpwidgets.families.diagnostics import standins as diagnostics_standins
from dpwidgets.families.diagnostics import widget as diagnostics_widget
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


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("dpwidgets.releases.diagnostics", "DIAGNOSTIC_MECHANISMS", diagnostics_spec),
        ("dpwidgets.releases.diagnostics", "model_predictions", diagnostics_spec),
        ("dpwidgets.releases.diagnostics", "MODELS", diagnostics_spec),
        ("dpwidgets.widgets.diagnostics", "ResidualPlotWidget", diagnostics_widget),
        ("dpwidgets.widgets.diagnostics", "RocWidget", diagnostics_widget),
        ("dpwidgets.widgets.diagnostics", "BinnedResidualWidget", diagnostics_widget),
        ("dpwidgets.widgets.diagnostics", "analyst_defaults", diagnostics_widget),
        ("dpwidgets.widgets.diagnostics", "_publisher_options", diagnostics_widget),
        ("dpwidgets.widgets.figures.diagnostics", "residual_figure", diagnostics_display),
        ("dpwidgets.widgets.figures.diagnostics", "MAX_POINTS", diagnostics_display),
        ("dpwidgets.datasets.regression", "fit_model", diagnostics_standins),
        ("dpwidgets.datasets.regression", "residual_scenario", diagnostics_standins),
    ],
)
def test_a_moved_module_warns_and_is_its_new_home(old, name, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)  # imported already: import it afresh
    with pytest.warns(DeprecationWarning, match=re.escape(f"moved to {new.__name__}")):
        module = importlib.import_module(old)
    assert module is new
    assert getattr(module, name) is getattr(new, name)


def test_table_stand_in_keeps_its_path_in_the_old_diagnostics_spec():
    with pytest.warns(DeprecationWarning, match=r"dpwidgets\.catalog\.table_stand_in"):
        assert diagnostics_spec.table_stand_in is catalog.table_stand_in


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
