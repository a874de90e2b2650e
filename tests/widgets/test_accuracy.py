"""Accuracy before spending (ViP): the spread of previews on the stand-in at the chosen ε and
at the ε the rest of the budget buys."""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets.widgets.accuracy import accuracy_preview, spread

TRUTH = np.linspace(0.0, 100.0, 50)


def laplace_counts(epsilon: float, rng: np.random.Generator) -> np.ndarray:
    return TRUTH + rng.laplace(0.0, 1.0 / epsilon, TRUTH.size)


def test_the_band_matches_the_laplace_quantiles():
    # 400 runs x 50 values: each value's 5-95% band of Lap(1/eps) is +-ln(10)/eps; the median
    # over values of the estimated half-width is within 10% of it (seed 0).
    s = spread(laplace_counts, 0.5, np.random.default_rng(0), runs=400, noiseless=TRUTH)
    assert s.half_width == pytest.approx(np.log(10) / 0.5, rel=0.1)
    assert s.error == pytest.approx(np.log(2) / 0.5, rel=0.1)  # the median of |Lap(b)| is b ln 2
    assert np.all(s.low < TRUTH) and np.all(s.high > TRUTH)


def test_the_rest_of_the_budget_narrows_the_band_in_proportion():
    rng = np.random.default_rng(1)
    # A user-level view charges 3 eps: with 1.5 left, eps = 0.1 (cost 0.3) leaves room for
    # one release at eps = 0.5, whose band is 5x narrower.
    ap = accuracy_preview(laplace_counts, 0.1, 0.3, 1.5, rng, what="the counts",
                          noiseless=TRUTH, runs=200)
    assert ap.rest is not None and ap.rest.epsilon == pytest.approx(0.5)
    assert ap.now.half_width / ap.rest.half_width == pytest.approx(5.0, rel=0.2)
    text = ap.html()
    assert "ε = 0.1" in text and "ε = 0.5" in text and "the counts" in text


def test_nothing_left_beyond_this_release_says_so():
    ap = accuracy_preview(laplace_counts, 0.5, 0.5, 0.5, np.random.default_rng(2),
                          what="the counts", runs=20)
    assert ap.rest is None and ap.now.error is None
    assert "use all that is left" in ap.html()


# -- in a widget: the StreamWidget's panel (analyst mode) ---------------------------------------


def _stream_widget(tmp_path, secret: np.ndarray, name: str):
    from dpwidgets import Session
    from dpwidgets.widgets.streams import StreamWidget

    from .test_stream_widgets import public_stand_in

    s = Session(mode="analyst", ledger=tmp_path / f"{name}.sqlite")
    s.add_dataset("wifi", secret, total_epsilon=1.0, stand_in=public_stand_in())
    return s, StreamWidget(s, dataset="wifi", epsilon=0.2, window=500, debounce=0)


@pytest.mark.usefixtures("close_new_widgets")
def test_the_panel_is_free_and_reads_nothing_of_the_data(tmp_path):
    from .test_stream_widgets import secret_stream

    panels = []
    for seed in (31, 32):  # two different confidential streams, one public stand-in
        s, sw = _stream_widget(tmp_path, secret_stream(seed=seed), f"l{seed}")
        assert sw.accuracy.value == "" and "free previews" in sw.accuracy_button.description
        sw._rng = np.random.default_rng(8)  # the previews' generator (public stand-in)
        sw.accuracy_button.click()
        ap = sw.accuracy_preview
        assert ap is not None and s.spent("wifi") == 0.0  # previews charge nothing
        # ε = 0.2 of a budget of 1: the rest buys one release at ε = 1, a narrower band.
        assert ap.now.epsilon == pytest.approx(0.2) and ap.rest.epsilon == pytest.approx(1.0)
        assert ap.rest.half_width < ap.now.half_width
        assert ap.now.low.size == public_stand_in_size()
        panels.append(sw.accuracy.value)
        # A control change makes it stale: the panel no longer claims the old figures.
        sw.epsilon.value = 0.3
        assert sw.accuracy_preview is None and "again" in sw.accuracy.value
        s.close()
    assert panels[0] == panels[1]  # the same panel whatever the data


def public_stand_in_size() -> int:
    from .test_stream_widgets import N

    return N


@pytest.mark.usefixtures("close_new_widgets")
def test_no_panel_in_teaching_mode():
    from dpwidgets import Session
    from dpwidgets.widgets.streams import StreamWidget

    sw = StreamWidget(Session(mode="teaching", seed=0), stream="High_5", length=600,
                      epsilon=0.5, window=200, debounce=0)
    assert not hasattr(sw, "accuracy_button") and sw.estimate_accuracy() is None


@pytest.mark.usefixtures("close_new_widgets")
def test_the_dynamic_histograms_panel_spreads_the_error_per_time(tmp_path):
    from dpwidgets import Session
    from dpwidgets.releases.dynamic import dynamic_stand_in

    from .test_dynamic_widget import N, U, analyst_widget, n, secret_series

    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite")
    s.add_dataset("series", secret_series(), total_epsilon=2.0,
                  stand_in=dynamic_stand_in(N, U, n), facts={"cardinality": n})
    wd = analyst_widget(s)
    ap = wd.estimate_accuracy()
    assert s.spent("series") == 0.0
    assert ap.now.low.size == N and np.all(ap.now.low <= ap.now.high)
    assert ap.rest is not None and ap.rest.half_width < ap.now.half_width
    assert "error per time step" in wd.accuracy.value
    s.close()
