"""Legible widgets in JupyterLab (Chromium), as a person sees them: no cut label, nothing wider
than the output area, figures as wide as the page allows, legends beside the data, and a saved
notebook that does not carry BokehJS (the server extension serves it).

The headless side of the same claims is tests/widgets/test_legibility.py.
"""

from __future__ import annotations

import json
import time

import pytest

from .lab import (
    assert_no_widget_errors,
    open_notebook,
    run_all_cells,
    screenshot,
    wait_for_bokeh,
    write_notebook,
)

pytestmark = pytest.mark.ui

CELLS = [
    """\
import tempfile
from pathlib import Path
import numpy as np
import ipywidgets as widgets
from dpwidgets import Session
from dpwidgets.widgets import ResidualPlotWidget, SVTExplorer, SyntheticDataWidget

w = 1 / np.arange(1, 2001)
scores = np.random.default_rng(1).permutation(np.round(w / w.sum() * 200_000)) + 0.371
stand_in = np.random.default_rng(3).permutation(np.round(w / w.sum() * 200_000))
analyst = Session("analyst", ledger=Path(tempfile.mkdtemp()) / "l.sqlite", seed=7)
analyst.add_dataset("items", scores, total_epsilon=1.0, stand_in=stand_in)
released = SVTExplorer(analyst, epsilon=0.5, c=10, threshold=300.0, debounce=0)
released.release()
widgets.VBox([analyst.meter, released])
""",
    """\
teaching = Session("teaching", seed=0)
ResidualPlotWidget(teaching, scenario="heteroscedastic", n=2000, epsilon=0.5, debounce=0)
""",
    """\
SyntheticDataWidget(teaching, data="gaussian", n=5000, epsilon=1.0, debounce=0)
""",
]

# Labels ipywidgets cuts with an ellipsis (scrollWidth beyond the box), outputs wider than
# their area, and the width of every Bokeh canvas per output, with the output area's width.
# BokehJS draws inside shadow roots, which querySelectorAll does not pierce: walked by hand.
_LAYOUT_JS = """
(scope) => {
  const root = document.querySelector(scope);
  const cut = [];
  const labels = root.querySelectorAll(
    'button.jupyter-button, .widget-checkbox label, .widget-checkbox label span');
  for (const el of labels) {
    if (el.offsetParent && el.scrollWidth > el.clientWidth + 1) {
      cut.push(`${el.textContent.trim()} (${el.scrollWidth} > ${el.clientWidth})`);
    }
  }
  const wide = [];
  for (const out of root.querySelectorAll('.jp-OutputArea-output')) {
    if (out.scrollWidth > out.clientWidth + 1) wide.push(`${out.scrollWidth} > ${out.clientWidth}`);
  }
  const canvasesIn = (node) => {
    const found = [];
    const walk = (n) => {
      if (n.classList && n.classList.contains('bk-Canvas')) found.push(n);
      for (const c of n.children || []) walk(c);
      if (n.shadowRoot) walk(n.shadowRoot);
    };
    walk(node);
    return found;
  };
  const outputs = [...root.querySelectorAll('.jp-OutputArea-output')];
  return {
    cut, wide,
    area: outputs[0].getBoundingClientRect().width,
    canvases: outputs.map((out) => canvasesIn(out).map((c) => c.getBoundingClientRect().width))
      .filter((widths) => widths.length),
  };
}
"""


def _facts(page) -> dict:
    return page.evaluate(_LAYOUT_JS, ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")


def test_labels_whole_and_figures_fit_the_page(page, lab_server):
    path = write_notebook(lab_server.root / "scratch" / "legibility.ipynb", *CELLS)
    page.set_viewport_size({"width": 1400, "height": 1000})
    notebook = open_notebook(page, lab_server.lab("scratch/legibility.ipynb"))
    run_all_cells(page, timeout_ms=300_000)
    # The narrow page is the same page made narrower, as a person resizes a window. Not a
    # reopened notebook: JupyterLab's widget renderer gives up on an output it renders between
    # two restores of the kernel's models ("Error displaying widget: model not found",
    # jupyter-widgets/ipywidgets#4026), which a loaded machine hits on most reloads.
    for width in (1400, 900):
        page.set_viewport_size({"width": width, "height": 1000})
        for cell in range(len(CELLS)):  # each widget drawn (hidden panels have canvases too)
            wait_for_bokeh(notebook.locator(".jp-CodeCell").nth(cell))
        page.wait_for_timeout(1000)  # BokehJS lays out on resize: let it settle once
        facts = _facts(page)
        screenshot(page, lab_server.screenshots, f"legibility-{width}")
        assert facts["cut"] == [], f"cut labels at {width} px: {facts['cut']}"
        assert facts["wide"] == [], f"outputs wider than their area at {width} px"
        for canvases in facts["canvases"]:
            assert all(c <= facts["area"] + 1 for c in canvases), (width, facts)
        if width == 1400:
            # The SVT run (built 760 px wide) grows with the page, up to 1.5 times.
            svt = max(facts["canvases"][0])
            assert 760 < svt <= 1140 + 1, facts["canvases"][0]
        assert_no_widget_errors(notebook)
        if width == 1400:
            # Saved as a person saves it: the widgets' outputs, not BokehJS (served by the
            # server's extension, loaded once per browser).
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    saved = json.loads(path.read_text())
                except json.JSONDecodeError:  # read while the server was writing it
                    saved = {"cells": []}
                if any(c.get("outputs") for c in saved["cells"]):
                    break
                page.wait_for_timeout(250)  # the save is written by the server: poll it
            size = path.stat().st_size
            assert size < 100_000, f"saved notebook: {size} bytes"
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
