"""What a new user meets in the widgets (issue 22, items 4-6): a suggestion on the table's
scale, one value per control everywhere it is shown, one cost, one bar per table's budget,
and copied code that runs as it is in a fresh kernel."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.ui.base import fmt, visible_text
from dpwidgets.ui.controls import FloatSlider, SliderText
from dpwidgets.widgets import StreamWidget, SVTExplorer

pytestmark = pytest.mark.usefixtures("close_new_widgets")

ROWS = 20_000
COLUMNS = {"page": {"kind": "int", "domain": [0, 49]}, "day": {"kind": "int", "domain": [0, 29]}}


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({"uid": rng.integers(0, 5_000, ROWS), "page": rng.integers(0, 50, ROWS),
                         "day": rng.integers(0, 30, ROWS)})


@pytest.fixture
def analyst(tmp_path):
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite", seed=1)
    s.add_table("visits", _frame(), columns=COLUMNS, unit_column="uid", max_rows=4,
                items="page", time="day", totals={"items": ROWS, "stream": ROWS},
                total_epsilon=10.0)
    yield s
    s.close()


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def test_the_svt_suggestion_is_on_the_tables_scale_and_one_value_everywhere(analyst):
    w = SVTExplorer(analyst, "visits/items", epsilon=0.2, c=5, debounce=0)
    suggestion = w.threshold.value
    # The stand-in sums to the declared 20,000 rows: a threshold for the top 5 of 50 pages is
    # a fraction of the table, not above it (it was 40,700 on a stand-in of 1,000,001).
    assert 0 < suggestion < ROWS
    # The box, the note, the button and the run carry one value (not 4008.5 / 4,010 / 4000).
    assert fmt(suggestion) in visible_text(w.threshold_note.value)
    assert f"threshold={fmt(suggestion)}" in w.release_button.description
    assert float(fmt(suggestion).replace(",", "")) == suggestion == w.params["threshold"]
    assert w.threshold.text.value == suggestion


def test_stream_status_and_button_state_one_cost_with_max_rows(analyst):
    w = StreamWidget(analyst, "visits/stream", epsilon=0.1, debounce=0)
    charge = analyst.cost("visits/stream", "pegasus", **w.params)
    assert charge == pytest.approx(0.4)  # 0.1 per row, 4 rows a person
    assert "would charge ε = 0.4" in visible_text(w.status.value)
    assert "(costs ε=0.4)" in w.release_button.description
    released = w.release()
    assert released is not None and released.epsilon == pytest.approx(0.4)
    assert "charged ε = 0.4" in visible_text(w.message.value)
    assert "(free: already released)" in w.release_button.description


def test_a_computed_parameter_carries_no_float_dust(analyst):
    w = StreamWidget(analyst, "visits/stream", epsilon=0.05, debounce=0)
    w.split.value = 0.9  # theta = 160 / (0.05 x 0.1) = 31999.99999999997 in floats
    theta = w.params["theta"]
    assert theta == 32_000.0
    assert "9999" not in w.release_button.description + w.release_button.tooltip + w.code()
    assert "theta=32,000" in w.release_button.description and "theta=32000.0" in w.code()


def test_a_dragged_slider_keeps_the_value_it_shows():
    box = SliderText(FloatSlider(value=0.0, min=0.0, max=1.0, step=0.1, description="s"), 0.0,
                     accepted=(0.0, 1.0))
    box.slider.value = 0.1 * 3  # the browser lands on 0.30000000000000004
    assert box.value == 0.3 and box.text.value == 0.3


def test_one_table_is_one_budget_in_the_meter(analyst):
    meter = analyst.meter
    assert [b["dataset"] for b in meter.budgets] == ["visits (items, stream)"]
    w = StreamWidget(analyst, "visits/stream", epsilon=0.1, debounce=0)
    w.release()
    SVTExplorer(analyst, "visits/items", epsilon=0.2, c=5, threshold=300.0, debounce=0).release()
    assert len(meter.budgets) == 1
    b = meter.budget("visits/items")
    assert b is meter.budget("visits/stream") is meter.budget("visits (items, stream)")
    assert b["datasets"] == ["visits/items", "visits/stream"]
    assert b["spent"] == pytest.approx(0.4 + 0.8) and b["total"] == 10.0
    assert b["count"] == 2 and meter.active == b["dataset"]  # the bar of the latest release


def test_datasets_added_alone_keep_one_bar_each(tmp_path):
    s = Session("analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("a", np.arange(50.0))
    s.add_dataset("b", np.arange(60.0))
    assert [b["dataset"] for b in s.meter.budgets] == ["a", "b"]


@pytest.mark.parametrize("mode", ["teaching", "analyst"])
def test_the_copied_code_runs_as_it_is_in_a_fresh_kernel(tmp_path, mode):
    path = tmp_path / "visits.csv"
    _frame().to_csv(path, index=False)
    kw = {"ledger": tmp_path / "ledger.sqlite"} if mode == "analyst" else {}
    s = Session(mode, **kw)
    s.add_table("visits", str(path), columns=COLUMNS, unit_column="uid", max_rows=4,
                items="page", totals={"items": ROWS}, total_epsilon=10.0)
    w = SVTExplorer(s, "visits/items", epsilon=0.2, c=5, threshold=300.0, debounce=0)
    if mode == "analyst":
        w.release()
    code = w.code_box.value
    assert "session.add_table('visits'," in code and "unit_column='uid'" in code
    assert "totals={'items': 20000}" in code
    assert "page,day" not in code and str(ROWS - 1) not in code  # no data, the schema only
    spent = s.spent("visits/items")
    s.close()
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "DP per person" in done.stdout  # print(release.guarantee)
    assert (tmp_path / "release.csv").exists()
    if mode == "analyst":  # the same ledger: the copied release was a free replay
        again = Session("analyst", ledger=tmp_path / "ledger.sqlite")
        again.add_table("visits", str(path), columns=COLUMNS, unit_column="uid", max_rows=4,
                        items="page", total_epsilon=10.0)
        assert again.spent("visits/items") == spent
        again.close()


def test_a_replayed_release_is_free_on_the_button_with_a_dp_fit(tmp_path):
    """The diagnostic on a DP fit: its release adds the fit's coefficients, which is_cached of
    the widget's own parameters cannot see; the button said "(costs ε=2)" after a replay."""
    from dpwidgets.widgets import ResidualPlotWidget

    s = Session("analyst", ledger=tmp_path / "l.sqlite", seed=0)
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 50, 2_000)
    s.add_dataset("income", np.column_stack((x, 2 * x + rng.normal(0, 3, 2_000))),
                  total_epsilon=10.0, stand_in="continuous")
    w = ResidualPlotWidget(s, "income", debounce=0,
                           fit_bounds={"bounds_X": (1, 50), "bounds_y": (-10, 120)})
    w.model.value = "dp"
    assert "(costs ε=" in w.release_button.description
    first = w.release()
    spent = s.spent("income")
    assert first is not None and "(free: already released)" in w.release_button.description
    again = w.release()
    assert again is not None and s.spent("income") == spent  # indeed a free replay
    assert "(free: already released)" in w.release_button.description
    w.epsilon.value = 0.3  # another release: it costs again
    assert "(costs ε=" in w.release_button.description
