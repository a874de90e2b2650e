"""The browser harness proved on a scratch notebook made of the three front-end pieces the
widgets are built from: an ipywidgets slider and button, a ``jupyter_bokeh.BokehModel`` figure
and a trivial anywidget. If these fail, the stack is broken, not dpwidgets.

BokehJS is loaded the way the notebooks load it, inline (``output_notebook(INLINE)``):
jupyter_bokeh's labextension does not bundle BokehJS, and the default (CDN) resources fail
offline. The browser here resolves no other host, so these tests also prove "works offline".
"""

from __future__ import annotations

import pytest

from .lab import (
    assert_no_widget_errors,
    nudge_slider,
    open_notebook,
    readout,
    run_all_cells,
    screenshot,
    wait_for_bokeh,
    wait_until_changed,
    write_notebook,
)

pytestmark = pytest.mark.ui

SETUP = """\
import anywidget
import ipywidgets as w
import traitlets
from bokeh.io import output_notebook
from bokeh.plotting import figure
from bokeh.resources import INLINE
from jupyter_bokeh import BokehModel

output_notebook(INLINE, hide_banner=True)
"""

FIGURE = """\
fig = figure(width=320, height=220, title="scratch")
line = fig.line([0, 1, 2], [0, 1, 0])
slider = w.IntSlider(value=1, min=0, max=10, description="peak")
slider.observe(lambda ch: line.data_source.data.update(y=[0, ch["new"], 0]), names="value")
w.VBox([slider, BokehModel(fig)])
"""

ANYWIDGET = """\
class Counter(anywidget.AnyWidget):
    _esm = '''
    export default { render({ model, el }) {
      el.classList.add("scratch-counter");
      const draw = () => { el.textContent = "count " + model.get("n"); };
      draw();
      model.on("change:n", draw);
    } }
    '''
    n = traitlets.Int(0).tag(sync=True)

counter = Counter()
button = w.Button(description="Add one")
button.on_click(lambda _: setattr(counter, "n", counter.n + 1))
w.VBox([button, counter])
"""


@pytest.fixture(scope="module")
def scratch(lab_server):
    write_notebook(lab_server.root / "scratch" / "harness.ipynb", SETUP, FIGURE, ANYWIDGET)
    write_notebook(lab_server.root / "scratch" / "fails.ipynb", "x = 1",
                   "raise ValueError('boom')", "y = 2")
    return "scratch/harness.ipynb"


def _exercise(page, scope, shots, prefix: str) -> None:
    """Slider -> figure redraws; button -> anywidget redraws; no widget error anywhere."""
    canvases = wait_for_bokeh(scope)
    counter = scope.locator(".scratch-counter")
    assert counter.inner_text() == "count 0"
    assert_no_widget_errors(scope)
    screenshot(page, shots, f"{prefix}-ran")

    slider = scope.locator(".widget-slider").first
    figure = canvases.first
    before = figure.screenshot(animations="disabled")
    nudge_slider(slider, presses=4)
    assert readout(slider) == "5"
    wait_until_changed(figure, before)

    scope.get_by_role("button", name="Add one").click()
    from playwright.sync_api import expect

    expect(counter).to_have_text("count 1")
    screenshot(page, shots, f"{prefix}-after")
    assert_no_widget_errors(scope)


def test_scratch_notebook_in_jupyterlab(page, lab_server, scratch):
    notebook = open_notebook(page, lab_server.lab(scratch))
    run_all_cells(page)
    _exercise(page, notebook, lab_server.screenshots, "harness-lab")
    log = page.dpw_log
    assert not log.external_requests, f"reached beyond localhost:\n{log.summary()}"
    assert not log.page_errors, log.summary()


def test_scratch_notebook_in_voila(page, lab_server, scratch):
    page.goto(lab_server.voila(scratch))
    body = page.locator("body")
    _exercise(page, body, lab_server.screenshots, "harness-voila")
    assert not any("bokeh" in u for u in page.dpw_log.external_requests), page.dpw_log.summary()


def test_harness_reports_a_failing_cell(page, lab_server, scratch):
    open_notebook(page, lab_server.lab("scratch/fails.ipynb"))
    with pytest.raises(AssertionError, match="boom"):
        run_all_cells(page, timeout_ms=60_000)
