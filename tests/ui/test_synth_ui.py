"""Notebook 05 (synthetic data, DPCopula) in a real JupyterLab, driven by headless Chromium.

Every cell runs; the three SyntheticDataWidgets render their Bokeh canvases with no widget or
JavaScript error and fit the output area; in teaching mode a control change redraws the figure
and charges the meter; in analyst mode the same change is a free preview (the meter does not
move) and Release charges it.
"""

from __future__ import annotations

import re

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
from .test_notebooks_ui import _assert_fits_output, _check_rendered, _meter_text, _panel

pytestmark = pytest.mark.ui

SYNTH = "notebooks/05_synthetic_data.ipynb"
WIDGET_TIMEOUT_MS = 60_000


def test_synthetic_data_in_jupyterlab(page, lab_server):
    shots = lab_server.screenshots
    open_notebook(page, lab_server.lab(SYNTH))
    run_all_cells(page, timeout_ms=300_000)
    notebook = page.locator(NOTEBOOK)
    # The teaching meter beside the first widget, the analyst meter beside the last.
    _check_rendered(page, notebook, n_meters=2)
    expect(notebook.locator(".dpw-synth")).to_have_count(3)
    for i in range(3):
        # :visible -- the real table's panels are hidden after an analyst release.
        expect(notebook.locator(".dpw-synth").nth(i).locator(".dpw-bokeh .bk-Canvas:visible").first
               ).to_be_visible(timeout=WIDGET_TIMEOUT_MS)
    _assert_fits_output(notebook)

    # Teaching: ε moves, DPCopula (and the baseline) rerun live, charged; the figure redraws.
    explorer = _panel(page, "dpw-synth")
    expect(explorer.locator(".dpw-mode-teaching")).to_have_count(1)
    explorer.scroll_into_view_if_needed()
    screenshot(page, shots, "synth-lab-ran")
    slider = explorer.locator(".dpw-epsilon").first
    figure = explorer.locator(".dpw-bokeh").first
    before_meter, before_value = _meter_text(explorer), readout(slider)
    before = figure.screenshot(animations="disabled")
    type_into_readout(slider, "0.3")
    expect(slider.locator(".widget-readout").first).not_to_have_text(before_value)
    wait_until_changed(figure, before)
    expect(explorer.locator(".dpw-meter").first).not_to_have_text(before_meter,
                                                                  timeout=WIDGET_TIMEOUT_MS)
    expect(explorer.locator(".dpw-status").first).to_contain_text("live run")
    screenshot(page, shots, "synth-lab-teaching-moved")

    # Analyst: the notebook released ε = 1 of 2 from code. A new ε is a free preview (the meter
    # stays), then Release charges it once.
    analyst = (page.locator(".widget-vbox").filter(has=page.locator(".dpw-mode-analyst"))
               .filter(has=page.locator(".dpw-meter")).first)
    analyst.scroll_into_view_if_needed()
    screenshot(page, shots, "synth-lab-analyst")
    meter_before = _meter_text(analyst)
    status = analyst.locator(".dpw-status").first
    figure = analyst.locator(".dpw-bokeh").first
    before = figure.screenshot(animations="disabled")
    type_into_readout(analyst.locator(".dpw-epsilon").first, "0.5")
    # The log slider snaps a typed 0.5 to 10^-0.3 = 0.501 and its readout shows "0.5": a value
    # from the slider is the number its readout shows, previewed and charged.
    expect(status.locator(".dpw-preview")).to_contain_text(re.compile(r"charge ε = 0\.5(?!\d)"),
                                                           timeout=WIDGET_TIMEOUT_MS)
    wait_until_changed(figure, before)
    assert _meter_text(analyst) == meter_before
    analyst.locator(".dpw-release button, button.dpw-release").first.click()
    expect(analyst.locator(".dpw-message .dpw-ok")).to_contain_text(re.compile(r"charged ε = 0\.5(?!\d)"),
                                                                   timeout=WIDGET_TIMEOUT_MS)
    expect(analyst.locator(".dpw-meter").first).not_to_have_text(meter_before)
    expect(status).to_contain_text("released DP output")
    screenshot(page, shots, "synth-lab-released")
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
    assert not page.dpw_log.external_requests, page.dpw_log.summary()
