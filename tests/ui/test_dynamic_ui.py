"""Notebook 04 (dynamic histograms) in a real JupyterLab with headless Chromium.

Every cell runs; the Bokeh canvases and both budget meters render; no widget shows an error (no
"Click to show javascript error"); no figure overflows its output area; nothing is fetched from
another host. Then the widgets are driven: in teaching mode a new ε redraws the figure and the
meter moves (live releases are charged); in analyst mode a new ε and a time-slider move change
only the free preview -- the meter stays put -- and Release updates the meter.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .lab import (
    NOTEBOOK,
    assert_no_widget_errors,
    nudge_slider,
    open_notebook,
    readout,
    run_all_cells,
    screenshot,
    type_into_readout,
    wait_until_changed,
)
from .test_notebooks_ui import WIDGET_TIMEOUT_MS, _assert_fits_output, _check_rendered, _meter_text

pytestmark = pytest.mark.ui

DYNAMIC = "notebooks/04_dynamic_histograms.ipynb"


def _mode_panel(page, mode: str):
    """The displayed VBox holding a meter and the dynamic widget of the given mode."""
    return (page.locator(".widget-vbox")
            .filter(has=page.locator(f".dpw-dynamic.dpw-mode-{mode}"))
            .filter(has=page.locator(".dpw-meter")).first)


def test_dynamic_histograms_in_jupyterlab(page, lab_server):
    shots = lab_server.screenshots
    open_notebook(page, lab_server.lab(DYNAMIC))
    run_all_cells(page)
    notebook = page.locator(NOTEBOOK)
    # The teaching meter beside the explorer, the analyst meter beside the confidential series.
    _check_rendered(page, notebook, n_meters=2)
    expect(notebook.locator(".dpw-dynamic")).to_have_count(2)
    for mode in ("teaching", "analyst"):
        # :visible -- a panel with nothing to show (the data, after a release) is hidden.
        expect(notebook.locator(f".dpw-dynamic.dpw-mode-{mode} .dpw-bokeh .bk-Canvas:visible").first
               ).to_be_visible(timeout=WIDGET_TIMEOUT_MS)
    assert "javascript error" not in notebook.inner_text().lower()
    _assert_fits_output(notebook)

    # Teaching: a new ε reruns the method and its comparisons live (charged): the figure
    # redraws and the meter moves.
    teach = _mode_panel(page, "teaching")
    teach.scroll_into_view_if_needed()
    screenshot(page, shots, "dynamic-lab-ran")
    slider = teach.locator(".dpw-epsilon").first
    figure = teach.locator(".dpw-bokeh").first
    quality = teach.locator(".dpw-quality").first
    before_meter, before_quality = _meter_text(teach), quality.inner_text()
    before = figure.screenshot(animations="disabled")
    type_into_readout(slider, "2")
    expect(slider.locator(".widget-readout").first).to_have_text("2")
    wait_until_changed(figure, before)
    expect(quality).not_to_have_text(before_quality, timeout=WIDGET_TIMEOUT_MS)
    expect(teach.locator(".dpw-meter").first).not_to_have_text(before_meter,
                                                                timeout=WIDGET_TIMEOUT_MS)
    screenshot(page, shots, "dynamic-lab-teaching-moved")

    # Analyst: the notebook released ε = 0.5 of 2 from code. Moving ε and the time slider only
    # moves the free preview; the meter stays put. Release spends, and the meter moves.
    analyst = _mode_panel(page, "analyst")
    analyst.scroll_into_view_if_needed()
    meter_before = _meter_text(analyst)
    status = analyst.locator(".dpw-status").first
    type_into_readout(analyst.locator(".dpw-epsilon").first, "0.8")
    # The log slider snaps a typed 0.8 to 10^-0.1 = 0.794 and its readout shows "0.79": a value
    # from the slider is the number its readout shows, previewed and charged.
    expect(status.locator(".dpw-preview")).to_contain_text(re.compile(r"charge ε = 0\.79(?!\d)"),
                                                           timeout=WIDGET_TIMEOUT_MS)
    time_slider = analyst.locator(".dpw-time").first
    before_time = readout(time_slider)
    snapshot = analyst.locator(".dpw-bokeh").first
    before = snapshot.screenshot(animations="disabled")
    nudge_slider(time_slider, presses=15)
    expect(time_slider.locator(".widget-readout").first).not_to_have_text(before_time)
    wait_until_changed(snapshot, before)  # the cursor and the snapshot panel moved
    assert _meter_text(analyst) == meter_before
    screenshot(page, shots, "dynamic-lab-analyst-preview")
    analyst.locator(".dpw-release button, button.dpw-release").first.click()
    expect(analyst.locator(".dpw-meter").first).not_to_have_text(meter_before,
                                                                 timeout=WIDGET_TIMEOUT_MS)
    expect(analyst.locator(".dpw-message .dpw-ok")).to_contain_text(re.compile(r"charged ε = 0\.79(?!\d)"))
    expect(status.locator(".dpw-released")).to_be_visible()
    screenshot(page, shots, "dynamic-lab-released")
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
    assert not page.dpw_log.external_requests, page.dpw_log.summary()
