"""What every widget shares (dpwidgets/widgets/_base.py): one base class, refusals instead of
clamping, the Release button stating parameters and cost, per-row guarantees, and no
confidential number in an error message or a button label."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dpwidgets.widgets as widgets
from dpwidgets import Session
from dpwidgets.families.dynamic.standins import dynamic_stand_in
from dpwidgets.ui.base import ReleaseWidget
from dpwidgets.widgets import DynamicHistogramWidget, SVTExplorer

from .conftest import leaked, secret_scores, zipf_scores


@pytest.fixture(autouse=True)
def _close_new_widgets():
    """Forget the widgets a test made: the leak tests of other modules search every live
    widget's state, and public constants drawn here (log-axis ticks) must not meet them."""
    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    yield
    for key in set(_instances) - before:
        _instances.pop(key, None)


def test_every_widget_derives_from_the_one_base():
    classes = [obj for _, obj in inspect.getmembers(widgets, inspect.isclass)
               if obj.__module__.startswith(("dpwidgets.widgets", "dpwidgets.families")) and obj.__name__ != "BudgetMeter"]
    assert len(classes) == 10
    for cls in classes:
        assert issubclass(cls, ReleaseWidget), cls


def test_person_unit_changes_the_guarantee_sentence(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=3)
    s.add_dataset("rows", secret_scores(300), total_epsilon=1.0, stand_in=zipf_scores(300, 3))
    s.add_dataset("people", secret_scores(300), total_epsilon=1.0,
                  stand_in=zipf_scores(300, 3), privacy_unit="person")
    rows = SVTExplorer(s, "rows", epsilon=0.2, c=3, threshold=100.0, debounce=0)
    people = SVTExplorer(s, "people", epsilon=0.2, c=3, threshold=100.0, debounce=0)
    assert "per row" in rows.banner.value and "per person" not in rows.banner.value
    assert "per person" in people.banner.value and "per row" not in people.banner.value
    rows.release()
    assert "per row" in rows.status.value


# -- a dynamic histogram: the declared fact, not the analyst's, and refusals ------------------
N, U, CARD = 40, 12, 500


def secret_series() -> np.ndarray:
    rng = np.random.default_rng(2)
    return rng.multinomial(CARD + 37, np.full(U, 1 / U), size=N).astype(float)


@pytest.fixture
def dynamic_analyst(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=1)
    s.add_dataset("series", secret_series(), total_epsilon=2.0,
                  stand_in=dynamic_stand_in(N, U, CARD), facts={"cardinality": CARD})
    yield s
    s.close()


def test_dynamic_analyst_sends_no_fact_and_refuses_bad_values(dynamic_analyst):
    wd = DynamicHistogramWidget(dynamic_analyst, "series", epsilon=0.5, debounce=0)
    assert "cardinality" not in wd.params and wd.cardinality == CARD
    assert "per row" in wd.banner.value
    assert wd.release_button.description.startswith("Release: ")
    assert wd.release_button.description.endswith("(costs ε=0.5)")
    wd.epsilon.value = -1.0
    assert "ε: got -1" in wd.message.value and wd.release() is None
    wd.cutoff.value = 10_000
    wd.epsilon.value = 0.5
    assert "C (most releases): got 10000" in wd.message.value
    assert dynamic_analyst.spent("series") == 0.0
    wd.cutoff.value = 2
    release = wd.release()
    assert release is wd.last_release and dynamic_analyst.spent("series") == 0.5
    np.testing.assert_array_equal(
        np.asarray(wd.figure.sources["release_image"].data["image"][0]).shape[1], N)


def test_no_confidential_number_in_messages_or_button_labels(tmp_path):
    raw = secret_scores(700) + 0.0271  # values no other test's widget shows
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=3)
    s.add_dataset("items", raw, total_epsilon=0.5, stand_in=zipf_scores(700, seed=3))
    e = SVTExplorer(s, epsilon=0.2, c=4, threshold=300.0, debounce=0)
    for value in (-1.0, float("nan"), 0.2, 0.4):  # refused, refused, released, over budget
        e.epsilon.value = value
        e.release()
        assert leaked(raw) == [], e.message.value
    e.c.value = 0
    e.release()
    assert leaked(raw) == []


def test_dynamic_export_is_the_last_release_never_a_preview(dynamic_analyst):
    wd = DynamicHistogramWidget(dynamic_analyst, "series", epsilon=0.5, debounce=0)
    assert wd.release_output is None and wd.shown_output is not None  # a preview only
    release = wd.release()
    wd.epsilon.value = 0.25  # a new preview on screen
    assert "PREVIEW" in wd.status.value
    assert wd.release_output is release.output and wd.shown_output is not release.output
