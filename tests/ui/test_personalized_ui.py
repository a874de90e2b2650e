"""Notebook 06 (personalized DP) in a real JupyterLab with headless Chromium.

Every cell runs; the Bokeh canvases and both budget meters render; no widget shows an error (no
"Click to show javascript error"); no figure overflows its output area; nothing is fetched from
another host. Then the widgets are driven: in teaching mode a new sampling threshold ε_T redraws
the figure and the meter moves (Sampling's live release is charged); in analyst mode a new ε_T
changes only the free preview -- the meter stays put -- and, after choosing another mechanism,
Release updates the meter.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .lab import (
    NOTEBOOK,
    assert_no_widget_errors,
    open_notebook,
    readout,
    run_all_cells,
    screenshot,
    type_into_readout,
    wait_until_changed,
)
from .test_notebooks_ui import WIDGET_TIMEOUT_MS, _assert_fits_output, _check_rendered, _meter_text

pytestmark = pytest.mark.ui

PERSONALIZED = "notebooks/06_personalized_dp.ipynb"


def _mode_panel(page, mode: str):
    """The displayed VBox holding a meter and the personalized widget of the given mode."""
    return (page.locator(".widget-vbox")
            .filter(has=page.locator(f".dpw-personalized.dpw-mode-{mode}"))
            .filter(has=page.locator(".dpw-meter")).first)


def _retype_threshold(panel, value: str) -> None:
    slider = panel.locator(".dpw-threshold").first
    before = readout(slider)
    type_into_readout(slider, value)
    expect(slider.locator(".widget-readout").first).not_to_have_text(before)


def test_personalized_dp_in_jupyterlab(page, lab_server):
    shots = lab_server.screenshots
    open_notebook(page, lab_server.lab(PERSONALIZED))
    run_all_cells(page)
    notebook = page.locator(NOTEBOOK)
    # The teaching meter beside the explorer, the analyst meter beside the confidential table.
    _check_rendered(page, notebook, n_meters=2)
    expect(notebook.locator(".dpw-personalized")).to_have_count(2)
    for mode in ("teaching", "analyst"):
        expect(notebook.locator(f".dpw-personalized.dpw-mode-{mode} .dpw-bokeh .bk-Canvas:visible")
               .first).to_be_visible(timeout=WIDGET_TIMEOUT_MS)
    assert "javascript error" not in notebook.inner_text().lower()
    _assert_fits_output(notebook)

    # Teaching: a new ε_T reruns Sampling live (charged): the figure redraws, the meter moves.
    teach = _mode_panel(page, "teaching")
    teach.scroll_into_view_if_needed()
    screenshot(page, shots, "personalized-lab-ran")
    figure = teach.locator(".dpw-bokeh").first
    quality = teach.locator(".dpw-quality").first
    before_meter, before_quality = _meter_text(teach), quality.inner_text()
    before = figure.screenshot(animations="disabled")
    _retype_threshold(teach, "0.3")
    wait_until_changed(figure, before)
    expect(quality).not_to_have_text(before_quality, timeout=WIDGET_TIMEOUT_MS)
    expect(teach.locator(".dpw-meter").first).not_to_have_text(before_meter,
                                                                timeout=WIDGET_TIMEOUT_MS)
    expect(teach.locator(".dpw-auto-threshold input").first).not_to_be_checked()
    screenshot(page, shots, "personalized-lab-teaching-moved")

    # Analyst: the notebook released the utility-based histogram. A new ε_T moves only the
    # free preview (Sampling's strip and error marker); the meter stays put.
    analyst = _mode_panel(page, "analyst")
    analyst.scroll_into_view_if_needed()
    meter_before = _meter_text(analyst)
    plot = analyst.locator(".dpw-bokeh").first
    before = plot.screenshot(animations="disabled")
    _retype_threshold(analyst, "0.5")
    status = analyst.locator(".dpw-status").first
    expect(status.locator(".dpw-preview")).to_be_visible(timeout=WIDGET_TIMEOUT_MS)
    wait_until_changed(plot, before)
    assert _meter_text(analyst) == meter_before
    screenshot(page, shots, "personalized-lab-analyst-preview")
    # Minimum costs the smallest budget, 0.01: still a preview until Release is clicked.
    analyst.locator(".dpw-method select").first.select_option(
        label="Minimum: everyone at the smallest budget (Li 2017, §5.1)")
    expect(status.locator(".dpw-preview")).to_contain_text("charge ε = 0.01",
                                                           timeout=WIDGET_TIMEOUT_MS)
    assert _meter_text(analyst) == meter_before
    analyst.locator(".dpw-release button, button.dpw-release").first.click()
    expect(analyst.locator(".dpw-meter").first).not_to_have_text(meter_before,
                                                                 timeout=WIDGET_TIMEOUT_MS)
    expect(analyst.locator(".dpw-message .dpw-ok")).to_contain_text("charged ε = 0.01")
    expect(status.locator(".dpw-released")).to_be_visible()
    screenshot(page, shots, "personalized-lab-released")
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
    assert not page.dpw_log.external_requests, page.dpw_log.summary()
