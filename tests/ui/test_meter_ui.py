"""The budget meter with many datasets, in JupyterLab (Chromium): the active dataset first and
open, the others folded to their one-line summary, which a click opens."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .lab import assert_no_widget_errors, open_notebook, run_all_cells, write_notebook

pytestmark = pytest.mark.ui

CELL = """\
import numpy as np
from dpwidgets import Session

s = Session("teaching", seed=0)
for name in ("alpha", "beta", "gamma", "delta"):
    s.add_dataset(name, np.arange(20.0), total_epsilon=1.0)
s.release("gamma", "laplace_stream", epsilon=0.25)
s.meter
"""


def test_meter_folds_all_but_the_active_dataset(page, lab_server):
    write_notebook(lab_server.root / "scratch" / "meter_fold.ipynb", CELL)
    notebook = open_notebook(page, lab_server.lab("scratch/meter_fold.ipynb"))
    run_all_cells(page)
    rows = notebook.locator(".dpw-meter .dpw-meter-row")
    expect(rows).to_have_count(4, timeout=60_000)
    # The latest release's dataset comes first, open, with its bar and odds sentence.
    first = rows.nth(0)
    assert first.get_attribute("data-dataset") == "gamma"
    expect(first.locator(".dpw-meter-bar")).to_be_visible()
    expect(first).to_contain_text("spent ε = 0.25 of 1")
    # The others keep their order and show one line each until opened.
    assert [rows.nth(i).get_attribute("data-dataset") for i in (1, 2, 3)] == [
        "alpha", "beta", "delta"]
    folded = notebook.locator(".dpw-meter details.dpw-meter-folded")
    expect(folded).to_have_count(3)
    expect(folded.nth(0).locator(".dpw-meter-bar")).to_be_hidden()
    expect(folded.nth(0).locator("summary")).to_contain_text("alpha: spent ε = 0 of 1")
    folded.nth(0).locator("summary").click()
    expect(folded.nth(0).locator(".dpw-meter-bar")).to_be_visible()
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.page_errors, page.dpw_log.summary()


SHARED_CELL = """\
import numpy as np
from dpwidgets import Session

s = Session("analyst", ledger={ledger!r})
s.add_dataset("shared", np.arange(50.0), total_epsilon=1.0, stand_in=np.zeros(50))
s.meter
"""


def test_two_notebooks_on_one_ledger_agree(page, lab_server):
    """What another kernel spends on the same ledger file shows on this meter without any
    release here: the meter's view asks its kernel to re-read the ledger while it is on screen
    (every ``refresh_seconds``), and a replay there is not charged twice."""
    import numpy as np

    from dpwidgets import Session

    ledger = lab_server.root / "scratch" / "shared.sqlite"
    write_notebook(lab_server.root / "scratch" / "meter_shared.ipynb",
                   SHARED_CELL.format(ledger=str(ledger)))
    notebook = open_notebook(page, lab_server.lab("scratch/meter_shared.ipynb"))
    run_all_cells(page)
    head = notebook.locator(".dpw-meter .dpw-meter-head")
    expect(head).to_contain_text("shared: spent ε = 0 of 1", timeout=60_000)
    other = Session("analyst", ledger=ledger)  # the other notebook's kernel
    other.add_dataset("shared", np.arange(50.0), total_epsilon=1.0, stand_in=np.zeros(50))
    other.release("shared", "svt", epsilon=0.25, label="elsewhere", variant="standard", c=2,
                  threshold=10.0)
    other.release("shared", "svt", epsilon=0.25, label="elsewhere", variant="standard", c=2,
                  threshold=10.0)  # a replay: free
    # No action on this page: the view's timer (5 s) brings the other kernel's spend in.
    expect(head).to_contain_text("spent ε = 0.25 of 1", timeout=30_000)
    expect(notebook.locator(".dpw-meter .dpw-meter-segment")).to_have_count(1)
    assert_no_widget_errors(notebook)
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
    other.close()
