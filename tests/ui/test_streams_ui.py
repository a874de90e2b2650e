"""Notebook 03 (streams) in a real JupyterLab: every cell runs, the stream and hierarchy widgets
render (Bokeh canvases, no javascript error), a control change redraws the live panel, the play
button reveals the stream in the browser, and in analyst mode a preview is free while Release
moves the meter."""

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
from .test_notebooks_ui import (
    WIDGET_TIMEOUT_MS,
    _assert_fits_output,
    _check_rendered,
    _meter_text,
    _panel,
    _release_changes_meter,
)

pytestmark = pytest.mark.ui

STREAMS = "notebooks/03_streams.ipynb"


def test_streams_in_jupyterlab(page, lab_server):
    shots = lab_server.screenshots
    open_notebook(page, lab_server.lab(STREAMS))
    run_all_cells(page)
    notebook = page.locator(NOTEBOOK)
    # The teaching meter beside the stream widget, the analyst meter beside the last one.
    _check_rendered(page, notebook, n_meters=2)
    expect(notebook.locator(".dpw-stream-widget")).to_have_count(2)
    for css in ("dpw-stream-widget", "dpw-hierarchy-widget"):
        expect(notebook.locator(f".{css} .dpw-bokeh .bk-Canvas").first).to_be_visible(
            timeout=WIDGET_TIMEOUT_MS)
    # The stream widget's layout: live panel, windows, events and ROC: four canvases.
    live = _panel(page, "dpw-stream-widget")
    expect(live.locator(".dpw-mode-teaching")).to_have_count(1)
    expect(live.locator(".dpw-bokeh .bk-Canvas")).to_have_count(4, timeout=WIDGET_TIMEOUT_MS)
    _assert_fits_output(notebook)
    live.scroll_into_view_if_needed()
    screenshot(page, shots, "streams-lab-ran")

    # Teaching: ε moves, PeGaSus is released again (charged), the live panel redraws.
    figure = live.locator(".dpw-bokeh").first
    slider = live.locator(".dpw-epsilon").first
    before_meter, before = _meter_text(live), figure.screenshot(animations="disabled")
    assert readout(slider) == "0.1"
    type_into_readout(slider, "1")
    expect(slider.locator(".widget-readout").first).to_have_text("1")
    wait_until_changed(figure, before)
    expect(live.locator(".dpw-meter").first).not_to_have_text(before_meter,
                                                             timeout=WIDGET_TIMEOUT_MS)
    screenshot(page, shots, "streams-lab-epsilon-moved")

    # Play: the browser's Play control ticks, the kernel streams the new steps in.
    time_slider = live.locator(".dpw-time").first
    shown = readout(time_slider)
    before = figure.screenshot(animations="disabled")
    meter = _meter_text(live)
    live.locator(".dpw-play button").first.click()
    expect(time_slider.locator(".widget-readout").first).not_to_have_text(
        shown, timeout=WIDGET_TIMEOUT_MS)
    wait_until_changed(figure, before)
    live.locator(".dpw-play button").first.click()  # the same button pauses
    assert _meter_text(live) == meter  # playing re-runs nothing and spends nothing
    screenshot(page, shots, "streams-lab-played")

    hierarchy = notebook.locator(".dpw-hierarchy-widget").first
    hierarchy.scroll_into_view_if_needed()
    expect(hierarchy.locator(".dpw-quality-values")).to_contain_text("PHS-PGS")
    screenshot(page, shots, "streams-lab-hierarchy")

    # Analyst: the notebook released ε = 0.5 of 1 from code. A new ε is a free preview; only
    # Release spends it.
    analyst = (page.locator(".widget-vbox").filter(has=page.locator(".dpw-mode-analyst"))
               .filter(has=page.locator(".dpw-meter")).first)
    analyst.scroll_into_view_if_needed()
    meter_before = _meter_text(analyst)
    status = analyst.locator(".dpw-status").first
    slider = analyst.locator(".dpw-epsilon").first
    type_into_readout(slider, "0.3")
    # The log slider snaps a typed 0.3 to 10^-0.52 = 0.302; a value from the slider is the
    # number its readout shows, 0.3: that is what is previewed, charged and in the box.
    expect(slider.locator(".widget-readout").first).to_have_text("0.3")
    expect(slider.locator(".dpw-number input").first).to_have_value("0.3")
    expect(status.locator(".dpw-preview")).to_contain_text(re.compile(r"charge ε = 0\.3(?!\d)"),
                                                           timeout=WIDGET_TIMEOUT_MS)
    assert _meter_text(analyst) == meter_before
    _release_changes_meter(analyst)
    # The message holds two notes once the release is drawn ("Released ... charged" and
    # "moving ... spends nothing more"): the first one says what was charged.
    expect(analyst.locator(".dpw-message .dpw-ok").first).to_contain_text(
        re.compile(r"charged ε = 0\.3(?!\d)"), timeout=WIDGET_TIMEOUT_MS)
    screenshot(page, shots, "streams-lab-released")
    assert_no_widget_errors(notebook)
    assert "javascript error" not in notebook.inner_text().lower()
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
    assert not page.dpw_log.external_requests, page.dpw_log.summary()
