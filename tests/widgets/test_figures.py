"""Figure builders are plain functions: build, compute columns, assign."""

from __future__ import annotations

import numpy as np
import pytest
from bokeh.models import ColumnDataSource

from dpwidgets.families.svt import display as svt_display
from dpwidgets.widgets import figures


def test_svt_plot_data_teaching():
    answers = np.array([1.0, 5.0, 2.0, 9.0, 3.0, 8.0])
    data = svt_display.svt_plot_data(
        n_queries=6,
        outcomes=np.array([False, True, False, True]),
        threshold=4.0,
        answers=answers,
        noisy_threshold=np.array([4.2, 4.2, 4.2, 4.2]),
        true_top=np.array([3, 5]),
    )
    np.testing.assert_array_equal(data["above"]["x"], [1, 3])
    np.testing.assert_array_equal(data["above"]["y"], [5.0, 9.0])
    np.testing.assert_array_equal(data["answers"]["y"], answers)
    assert set(data["threshold"]["y"]) == {4.2}
    np.testing.assert_array_equal(data["stop"]["x"], [3])
    np.testing.assert_array_equal(data["true_top"]["y"], [9.0, 8.0])


def test_svt_plot_data_release_has_no_answers():
    data = svt_display.svt_plot_data(
        n_queries=5, outcomes=np.array([True, False, True]), threshold=7.5
    )
    assert data["answers"]["y"].size == 0 and data["true_top"]["x"].size == 0
    np.testing.assert_array_equal(data["above"]["y"], [7.5, 7.5])
    np.testing.assert_array_equal(data["threshold"]["y"], [7.5, 7.5])


def test_split_curve_minimum_is_the_marked_optimum():
    for c, mono in ((1, False), (10, False), (25, True)):
        data = svt_display.split_plot_data(c, mono, share=0.5)
        curve = data["curve"]
        best = curve["x"][np.argmin(curve["y"])]
        assert data["optimum"]["x"][0] == pytest.approx(best, abs=0.01)
        assert data["current"]["x"][0] == 0.5


def test_builders_return_named_sources_and_update_assigns():
    for build in (svt_display.svt_figure, svt_display.split_figure, svt_display.topc_figure,
                  svt_display.attack_figure):
        handle = build()
        assert handle.sources and all(
            isinstance(s, ColumnDataSource) for s in handle.sources.values()
        )
    handle = svt_display.topc_figure()
    figures.update(handle, svt_display.topc_plot_data({"EM": (0.1, 0.05), "SVT-ReTr": (0.3, 0.2)}))
    assert handle.sources["rates"].data["method"] == ["SVT-ReTr", "EM"]
    assert handle.sources["rates"].data["fnr"] == [0.3, 0.1]


def test_bokeh_widget_resends_the_document_to_every_new_view():
    # bokeh_widget wires redraw_when_displayed itself: a change made before a view exists
    # (here a title) is in the render bundle the next displayed view gets.
    from bokeh.plotting import figure

    from dpwidgets.ui.bokeh_widget import bokeh_widget

    p = figure(title="before")
    model = bokeh_widget(p)
    assert model._view_count == 0
    p.title.text = "drawn before the view existed"
    assert "drawn before the view existed" not in str(model.render_bundle)
    model._view_count = 1  # ipywidgets counts a displayed view
    assert "drawn before the view existed" in str(model.render_bundle)


@pytest.mark.usefixtures("close_new_widgets")
def test_no_figure_draws_a_step_area():
    # BokehJS 3.9 spins forever (a page at 100% CPU, never drawn) on a VAreaStep or HAreaStep
    # whose source is empty, and the widgets' sources start empty: the bands use quads or
    # plain areas. Every widget is checked.
    from bokeh.models import GlyphRenderer, HAreaStep, VAreaStep

    from dpwidgets import Session
    from dpwidgets.widgets import (
        BinnedResidualWidget,
        DynamicHistogramWidget,
        HierarchyWidget,
        PersonalizedWidget,
        ResidualPlotWidget,
        RocWidget,
        StreamWidget,
        SVTExplorer,
        SyntheticDataWidget,
    )

    s = Session("teaching", seed=0)
    built = [SVTExplorer(s, epsilon=0.5, c=5), StreamWidget(s, stream="High_5", length=500),
             HierarchyWidget(s, n_states=4, length=200), RocWidget(s, scenario="M1", n=500),
             BinnedResidualWidget(s, scenario="M1", n=500),
             ResidualPlotWidget(s, scenario="heteroscedastic", n=500),
             SyntheticDataWidget(s, data="gaussian", n=500),
             PersonalizedWidget(s, data="census", n=500),
             DynamicHistogramWidget(s, data="moving", compare=False)]
    found = []
    for widget in built:
        layout = widget.figure.layout
        for renderer in layout.select({"type": GlyphRenderer}):
            if isinstance(renderer.glyph, VAreaStep | HAreaStep):
                found.append(f"{type(widget).__name__}: {renderer.glyph}")
        widget.close()
    assert found == []
