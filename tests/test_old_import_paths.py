"""The ledger and the release store moved to dpwidgets.persistence, and every family to
dpwidgets/families/<family>/; their old import paths (dpwidgets.engine.budget,
dpwidgets.store, dpwidgets.releases.streams, ...) still give the same objects, with a
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


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("dpwidgets.releases.streams", "STREAM_MECHANISMS", "dpwidgets.families.streams.spec"),
        ("dpwidgets.releases.streams", "window_sums", "dpwidgets.families.streams.spec"),
        ("dpwidgets.releases.streams", "hierarchy_of", "dpwidgets.families.streams.spec"),
        ("dpwidgets.widgets.streams", "StreamWidget", "dpwidgets.families.streams.widget"),
        ("dpwidgets.widgets.streams", "HierarchyWidget", "dpwidgets.families.streams.widget"),
        ("dpwidgets.widgets.streams", "COMPARE_MAX_CELLS", "dpwidgets.families.streams.widget"),
        ("dpwidgets.widgets.figures.streams", "stream_figure",
         "dpwidgets.families.streams.display"),
        ("dpwidgets.datasets.streams", "wifi_stream", "dpwidgets.families.streams.standins"),
    ],
)
def test_an_old_streams_module_warns_and_is_the_moved_module(old, name, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)  # imported before: import it afresh
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        module = importlib.import_module(old)
    moved = importlib.import_module(new)
    assert module is moved and getattr(module, name) is getattr(moved, name)


# The synthetic-data family moved into dpwidgets/families/synth/: each old module is its new
# module (with a DeprecationWarning when imported by the old name).
SYNTH_MODULES = [
    ("dpwidgets.releases.synth", "dpwidgets.families.synth.spec", "SYNTH_MECHANISMS"),
    ("dpwidgets.widgets.synth", "dpwidgets.families.synth.widget", "SyntheticDataWidget"),
    ("dpwidgets.widgets.figures.synth", "dpwidgets.families.synth.display", "synth_figure"),
    ("dpwidgets.datasets.synth", "dpwidgets.families.synth.standins", "us_census_like"),
]


@pytest.mark.parametrize(("old", "new", "name"), SYNTH_MODULES)
def test_an_old_synth_module_warns_and_is_the_moved_module(old, new, name, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)  # imported before: import it afresh
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old} moved to {new}")):
        module = importlib.import_module(old)
    moved = importlib.import_module(new)
    assert module is moved and getattr(module, name) is getattr(moved, name)


def test_the_old_synth_names_give_the_moved_objects(monkeypatch):
    from dpwidgets.families.synth import params, spec, standins, widget

    monkeypatch.delitem(sys.modules, "dpwidgets.releases.synth", raising=False)
    with pytest.warns(DeprecationWarning):
        old_spec = importlib.import_module("dpwidgets.releases.synth")
    # The domain forms and the peers' probe moved to params.py; the spec still has them.
    assert old_spec.domain_values is params.domain_values
    assert old_spec.peers_available is params.peers_available
    assert old_spec.PEER_INSTALL == params.PEER_INSTALL
    # The stand-in generator moved to standins.py: found, with a warning naming its home.
    with pytest.warns(DeprecationWarning, match=r"dpwidgets\.families\.synth\.standins"):
        assert old_spec.synth_stand_in is standins.synth_stand_in
    # The publisher options the widget took from the diagnostics widget are public now.
    assert widget._publisher_options is params.publisher_options
    assert spec.synth_outputs is old_spec.synth_outputs


# The dynamic-histogram family moved into dpwidgets/families/dynamic/: each old module is the
# new one, imported with a DeprecationWarning that names it.
@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("dpwidgets.releases.dynamic", "DYNAMIC_MECHANISMS", "dpwidgets.families.dynamic.spec"),
        ("dpwidgets.releases.dynamic", "expand_releases", "dpwidgets.families.dynamic.spec"),
        ("dpwidgets.releases.dynamic", "dynamic_stand_in", "dpwidgets.families.dynamic.standins"),
        ("dpwidgets.widgets.dynamic", "DynamicHistogramWidget",
         "dpwidgets.families.dynamic.widget"),
        ("dpwidgets.widgets.dynamic", "DATASETS", "dpwidgets.families.dynamic.sources"),
        ("dpwidgets.widgets.figures.dynamic", "marginal", "dpwidgets.families.dynamic.display"),
        ("dpwidgets.widgets.figures.dynamic", "dynamic_figure",
         "dpwidgets.families.dynamic.display"),
        ("dpwidgets.datasets.dynamic", "census_like_series",
         "dpwidgets.families.dynamic.standins"),
        ("dpwidgets.datasets.dynamic", "DynamicSeries", "dpwidgets.families.dynamic.standins"),
    ],
)
def test_an_old_dynamic_path_warns_and_gives_the_moved_object(old, name, new):
    sys.modules.pop(old, None)  # imported afresh: the warning comes with the import
    with pytest.warns(DeprecationWarning, match=r"dpwidgets\.families\.dynamic\."):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


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
