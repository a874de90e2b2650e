"""The committed notebooks in a real browser: JupyterLab (Run All Cells) and Voila.

For each notebook: every cell runs, the Bokeh figures and the budget meter render, no widget
shows an error, no figure overflows the notebook's output area, nothing is fetched from another
host. Then the widgets are driven: a slider moves and the figure redraws; Release is clicked and
the meter changes. In analyst mode (quickstart, the end of the diagnostics lesson) moving a
slider must NOT change the meter: previews are free.
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
    wait_for_bokeh,
    wait_until_changed,
)

pytestmark = pytest.mark.ui

QUICKSTART = "notebooks/00_quickstart.ipynb"
LESSON = "notebooks/01_sparse_vector.ipynb"
DIAGNOSTICS = "notebooks/02_regression_diagnostics.ipynb"
WIDGET_TIMEOUT_MS = 60_000


def _panel(page, widget_class: str):
    """The displayed VBox holding the session meter and the widget ``widget_class``."""
    return (page.locator(".widget-vbox")
            .filter(has=page.locator(f".{widget_class}"))
            .filter(has=page.locator(".dpw-meter")).first)


def _meter_text(panel) -> str:
    """All the meter says (one row per dataset of the session)."""
    return panel.locator(".dpw-meter").first.inner_text()


def _check_rendered(page, scope, n_meters: int) -> None:
    wait_for_bokeh(scope, timeout_ms=WIDGET_TIMEOUT_MS)
    expect(scope.locator(".dpw-meter")).to_have_count(n_meters, timeout=WIDGET_TIMEOUT_MS)
    expect(scope.locator(".dpw-meter .dpw-meter-head").first).to_be_visible()
    assert_no_widget_errors(scope)
    assert not page.dpw_log.page_errors, page.dpw_log.summary()


def _assert_fits_output(scope) -> None:
    """No Bokeh figure sticks out of its cell's output area (cut off or scrolled sideways)."""
    overflow = scope.evaluate(
        """(root) => [...root.querySelectorAll('.jp-OutputArea-output')].flatMap(out => {
             const edge = out.getBoundingClientRect().right;
             return [...out.querySelectorAll('.dpw-bokeh')]
               .map(fig => Math.round(fig.getBoundingClientRect().right - edge))
               .filter(px => px > 0);
           })""")
    assert not overflow, f"Bokeh figures overflow their output area by {overflow} px"


def _release_changes_meter(panel) -> None:
    before = _meter_text(panel)
    panel.locator(".dpw-release button, button.dpw-release").first.click()
    expect(panel.locator(".dpw-meter").first).not_to_have_text(
        before, timeout=WIDGET_TIMEOUT_MS)


def _slider_redraws(panel, threshold: str) -> None:
    """Type a new threshold into its slider's readout: the threshold line must move."""
    slider = panel.locator(".dpw-threshold").first
    figure = panel.locator(".dpw-bokeh").first
    expect(figure).to_be_visible(timeout=WIDGET_TIMEOUT_MS)
    before_value = readout(slider)
    before = figure.screenshot(animations="disabled")
    type_into_readout(slider, threshold)
    expect(slider.locator(".widget-readout").first).not_to_have_text(before_value)
    wait_until_changed(figure, before)


def _epsilon_moves(panel) -> None:
    """Nudge the ε slider with the keyboard: its readout and the widget's status follow."""
    slider = panel.locator(".dpw-epsilon").first
    status = panel.locator(".dpw-status").first
    before_value, before_status = readout(slider), status.inner_text()
    nudge_slider(slider, presses=10)
    assert readout(slider) != before_value
    expect(status).not_to_have_text(before_status, timeout=WIDGET_TIMEOUT_MS)


def test_quickstart_in_jupyterlab(page, lab_server):
    shots = lab_server.screenshots
    open_notebook(page, lab_server.lab(QUICKSTART))
    run_all_cells(page)
    notebook = page.locator(NOTEBOOK)
    # The meter alone (section 2) and beside the explorer (section 4).
    _check_rendered(page, notebook, n_meters=2)
    _assert_fits_output(notebook)
    panel = _panel(page, "dpw-svt-explorer")
    expect(panel.locator(".dpw-mode-analyst")).to_have_count(1)
    panel.scroll_into_view_if_needed()
    screenshot(page, shots, "quickstart-lab-ran")

    meter_before = _meter_text(panel)
    _epsilon_moves(panel)
    _slider_redraws(panel, "5000")
    # Analyst mode: the preview reran on the public stand-in and charged nothing.
    assert _meter_text(panel) == meter_before
    _release_changes_meter(panel)
    expect(panel.locator(".dpw-message .dpw-ok")).to_be_visible()
    screenshot(page, shots, "quickstart-lab-released")
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.external_requests, page.dpw_log.summary()


def test_lesson_in_jupyterlab(page, lab_server):
    shots = lab_server.screenshots
    open_notebook(page, lab_server.lab(LESSON))
    run_all_cells(page)
    notebook = page.locator(NOTEBOOK)
    # The meter beside the SVT explorer and beside the attack demo.
    _check_rendered(page, notebook, n_meters=2)
    _assert_fits_output(notebook)
    screenshot(page, shots, "lesson-lab-ran")

    explorer = _panel(page, "dpw-svt-explorer")
    expect(explorer.locator(".dpw-mode-teaching")).to_have_count(1)
    explorer.scroll_into_view_if_needed()
    screenshot(page, shots, "lesson-lab-explorer")
    _release_changes_meter(explorer)
    _slider_redraws(explorer, "5000")

    attack = _panel(page, "dpw-attack-demo")
    attack.scroll_into_view_if_needed()
    expect(attack.locator(".dpw-bokeh").first).to_be_visible()
    # δ = 0.05 reads 0.05, not the slider's snapped 10^-1.3 = 0.0501.
    expect(attack.locator(".dpw-delta .widget-readout").first).to_have_text("0.05")
    _release_changes_meter(attack)
    screenshot(page, shots, "lesson-lab-after")
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.external_requests, page.dpw_log.summary()


def test_lesson_as_voila_dashboard(page, lab_server):
    shots = lab_server.screenshots
    # Voila streams the page while it executes the notebook, and the "load" event comes only
    # when the whole notebook has run (over 30 s on a busy 2-core machine): wait for the
    # response, then for the widgets below.
    page.goto(lab_server.voila(LESSON), wait_until="commit", timeout=120_000)
    body = page.locator("body")
    # Voila executes the whole notebook before it shows the cells.
    expect(body.locator(".dpw-attack-demo")).to_be_visible(timeout=180_000)
    _check_rendered(page, body, n_meters=2)
    screenshot(page, shots, "lesson-voila-ran")

    explorer = _panel(page, "dpw-svt-explorer")
    explorer.scroll_into_view_if_needed()
    _release_changes_meter(explorer)
    _slider_redraws(explorer, "5000")
    screenshot(page, shots, "lesson-voila-after")
    assert_no_widget_errors(body)
    # Voila's own template asks CDNs for Font Awesome and MathJax (cosmetic offline); BokehJS
    # and the widgets must not need any other host.
    assert not any("bokeh" in url for url in page.dpw_log.external_requests), (
        page.dpw_log.summary())


def test_diagnostics_in_jupyterlab(page, lab_server):
    shots = lab_server.screenshots
    open_notebook(page, lab_server.lab(DIAGNOSTICS))
    run_all_cells(page)
    notebook = page.locator(NOTEBOOK)
    # The teaching meter beside the synthetic fan, the analyst meter beside the last widget.
    _check_rendered(page, notebook, n_meters=2)
    for css in ("dpw-residual-plot", "dpw-roc", "dpw-binned-residuals"):
        # :visible -- the confidential panel is hidden after an analyst release.
        expect(notebook.locator(f".{css} .dpw-bokeh .bk-Canvas:visible").first).to_be_visible(
            timeout=WIDGET_TIMEOUT_MS)
    expect(notebook.locator(".dpw-diagnostics")).to_have_count(5)
    _assert_fits_output(notebook)

    # Teaching: ε of the residual plot moves, PriRP reruns live (charged), the plot redraws.
    fan = _panel(page, "dpw-residual-plot")
    expect(fan.locator(".dpw-mode-teaching")).to_have_count(1)
    fan.scroll_into_view_if_needed()
    screenshot(page, shots, "diagnostics-lab-ran")
    slider = fan.locator(".dpw-epsilon").first
    figure = fan.locator(".dpw-bokeh").first
    quality = fan.locator(".dpw-quality").first
    before_meter, before_quality = _meter_text(fan), quality.inner_text()
    before_value, before = readout(slider), figure.screenshot(animations="disabled")
    type_into_readout(slider, "2")
    expect(slider.locator(".widget-readout").first).to_have_text("2")
    assert before_value == "0.5"
    wait_until_changed(figure, before)
    expect(quality).not_to_have_text(before_quality, timeout=WIDGET_TIMEOUT_MS)
    expect(fan.locator(".dpw-meter").first).not_to_have_text(before_meter)
    screenshot(page, shots, "diagnostics-lab-fan-moved")

    for css, name in (("dpw-roc", "roc"), ("dpw-binned-residuals", "brp")):
        notebook.locator(f".{css}").first.scroll_into_view_if_needed()
        screenshot(page, shots, f"diagnostics-lab-{name}")

    # Analyst: the notebook released ε = 3 of 4 from code. A smaller ε is a free preview; only
    # Release spends it.
    analyst = (page.locator(".widget-vbox").filter(has=page.locator(".dpw-mode-analyst"))
               .filter(has=page.locator(".dpw-meter")).first)
    analyst.scroll_into_view_if_needed()
    screenshot(page, shots, "diagnostics-lab-analyst")
    meter_before = _meter_text(analyst)
    status = analyst.locator(".dpw-status").first
    slider = analyst.locator(".dpw-epsilon").first
    type_into_readout(slider, "0.8")
    # The log slider snaps a typed 0.8 to 10^-0.1 = 0.794 and its readout shows "0.79": a
    # value from the slider is the number its readout shows, so 0.79 is in the box, previewed
    # and charged (before, 0.794 was charged beside a readout of 0.79).
    expect(slider.locator(".widget-readout").first).to_have_text("0.79")
    expect(slider.locator(".dpw-number input").first).to_have_value("0.79")
    expect(status.locator(".dpw-preview")).to_contain_text(re.compile(r"charge ε = 0\.79(?!\d)"),
                                                           timeout=WIDGET_TIMEOUT_MS)
    assert _meter_text(analyst) == meter_before
    _release_changes_meter(analyst)
    expect(analyst.locator(".dpw-message .dpw-ok")).to_contain_text(
        re.compile(r"charged ε = 0\.79(?!\d)"))
    screenshot(page, shots, "diagnostics-lab-released")
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
    assert not page.dpw_log.external_requests, page.dpw_log.summary()
