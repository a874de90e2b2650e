"""CONTRIBUTING.md's recipe, end to end: a toy engine function, its mechanism spec, its figure
builder and its widget, added the documented way and driven in both modes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

from dpwidgets import Session
from dpwidgets.engine.errors import ParameterError
from dpwidgets.engine.mechanisms import laplace
from dpwidgets.engine.validation import check_epsilon, check_finite_array
from dpwidgets.mechanism import MECHANISMS, Mechanism, register_mechanism
from dpwidgets.ui.base import ReleaseWidget
from dpwidgets.ui.bokeh_widget import bokeh_widget
from dpwidgets.ui.controls import EpsilonSlider


# 1. The engine function ------------------------------------------------------------------------
@dataclass(frozen=True)
class NoisyCount:
    count: float
    epsilon: float
    guarantee: str


def noisy_count_above(values, threshold, epsilon, rng) -> NoisyCount:
    epsilon = check_epsilon(epsilon)
    threshold = float(check_finite_array([threshold], "threshold")[0])
    values = check_finite_array(values, "values")
    true = float(np.count_nonzero(values > threshold))
    return NoisyCount(true + float(laplace(1.0 / epsilon, rng=rng)), epsilon,
                      f"{epsilon:g}-DP (one row added or removed changes the count by 1)")


# 2. The mechanism spec -------------------------------------------------------------------------
def _validate(params: dict, n: int) -> dict:
    p = dict(params)
    out = {"epsilon": check_epsilon(p.pop("epsilon")),
           "threshold": float(check_finite_array([p.pop("threshold")], "threshold")[0])}
    if p:
        raise ValueError(f"unknown parameter(s) for 'count_above': {sorted(p)}")
    return out


SPEC = Mechanism(
    "count_above", _validate,
    run=lambda data, p, rng: noisy_count_above(data, p["threshold"], p["epsilon"], rng),
    outputs=lambda result, p: {"count": result.count},
    label=lambda p: f"count above {p['threshold']:g}",
    neighbours="one row added or removed",
    spent=lambda result, p: result.epsilon,
)


# 3. The figure builder: plain functions, no session ----------------------------------------------
def count_figure():
    source = ColumnDataSource({"what": ["count"], "value": [0.0]})
    fig = figure(x_range=["count"], height=200, width=240, title="noisy count")
    fig.vbar(x="what", top="value", width=0.6, source=source)
    return fig, source


def update_count(source: ColumnDataSource, output: dict) -> None:
    source.data = {"what": ["count"], "value": [float(output["count"])]}


# 4. The widget ---------------------------------------------------------------------------------
class CountWidget(ReleaseWidget):
    mechanism = "count_above"
    title = "count above"

    def __init__(self, session: Session, dataset: str, *, epsilon=0.5, threshold=10.0):
        self._setup(session, debounce=0)
        self.dataset = dataset
        self.threshold = threshold
        self.epsilon = EpsilonSlider(epsilon, min_epsilon=0.01, max_epsilon=10.0)
        self.fig, self.source = count_figure()
        self._assemble([self.banner, self.epsilon, self.release_button, self.message,
                        self.status, bokeh_widget(self.fig)], "dpw-count")
        self.epsilon.observe(lambda change: self._recompute(), names="value")
        self._recompute()

    @property
    def params(self) -> dict:
        return {"epsilon": float(self.epsilon.value), "threshold": self.threshold}

    def _live(self) -> None:
        release = self._live_release()
        update_count(self.source, release.output)
        self._live_status([release])

    def _preview(self) -> None:
        update_count(self.source, self._preview_run().output)
        self._preview_status()

    def _draw_release(self, release) -> None:
        update_count(self.source, release.output)


pytestmark = pytest.mark.usefixtures("close_new_widgets")


@pytest.fixture
def registered():
    register_mechanism(SPEC)
    yield SPEC
    MECHANISMS.pop("count_above", None)


DATA = np.arange(100.0)  # 89 values above 10
STAND_IN = np.zeros(100)  # none above 10


def test_the_toy_widget_in_teaching_mode_reruns_live_and_charges(registered):
    s = Session(mode="teaching", seed=0)
    s.add_dataset("d", DATA, total_epsilon=10.0)
    widget = CountWidget(s, "d", epsilon=2.0)
    assert isinstance(widget, ReleaseWidget)
    # ε = 2: Laplace scale 0.5; the plotted count is within 10 scales of the truth 89.
    assert abs(widget.source.data["value"][0] - 89) < 5
    assert s.spent("d") == pytest.approx(2.0)
    widget.epsilon.value = 1.0
    assert s.spent("d") == pytest.approx(3.0)
    assert widget.last_release is not None and widget.last_release.epsilon == 1.0
    assert "per row" in widget._guarantee_of(widget.last_release)


def test_the_toy_widget_in_analyst_mode_previews_free_and_releases_once(registered, tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=0)
    s.add_dataset("d", DATA, total_epsilon=1.0, stand_in=STAND_IN,
                  allow_mechanisms=["count_above"])
    widget = CountWidget(s, "d", epsilon=0.5)
    # The preview ran on the stand-in (no value above 10): the plot is near 0, nothing spent.
    assert abs(widget.source.data["value"][0]) < 40 and s.spent("d") == 0.0
    assert widget.last_release is None
    widget.epsilon.value = 0.25
    assert s.spent("d") == 0.0
    assert "ε=0.25" in widget.release_button.description
    release = widget.release()
    assert release.charged and s.spent("d") == pytest.approx(0.25)
    assert widget.last_release is release and widget.source.data["value"][0] == release.output[
        "count"]
    assert widget.release() is not None and s.spent("d") == pytest.approx(0.25)  # free replay


def test_the_toy_spec_is_refused_where_the_owner_did_not_allow_it(registered, tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("d", DATA, total_epsilon=1.0, stand_in=STAND_IN)
    widget = CountWidget(s, "d")
    assert widget.release() is None and "allow" in widget.message.value
    assert s.spent("d") == 0.0
    t = Session(mode="teaching")
    t.add_dataset("d", DATA, total_epsilon=1.0)
    with pytest.raises(ParameterError, match="threshold"):  # the spec's own validation
        t.release("d", "count_above", epsilon=0.1, threshold=float("nan"))
    assert t.spent("d") == 0.0


def test_every_widget_family_derives_from_the_one_base():
    import inspect

    import ipywidgets

    import dpwidgets.widgets as widgets

    classes = [c for c in vars(widgets).values() if inspect.isclass(c)
               and issubclass(c, ipywidgets.DOMWidget) and c is not widgets.BudgetMeter]
    assert len(classes) == 10
    assert all(issubclass(c, ReleaseWidget) for c in classes), classes
