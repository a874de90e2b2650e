"""DynamicHistogramWidget, headless: set a control, assert on the plotted data, the ledger and
the meter; in analyst mode previews are free, only Release spends, and no confidential value
reaches any widget or Bokeh state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.datasets import census_like_series
from dpwidgets.families.dynamic.display import marginal
from dpwidgets.families.dynamic.spec import expand_releases
from dpwidgets.families.dynamic.standins import dynamic_stand_in
from dpwidgets.families.dynamic.widget import DynamicHistogramWidget

from .conftest import leak_rate, leaked

N, SHAPE = 120, (96, 3)  # the census-like age × income marginal: U = 288
U = math.prod(SHAPE)
n = 20_000


pytestmark = pytest.mark.usefixtures("close_new_widgets")


def data(widget, name):
    return widget.figure.sources[name].data


def spends(session, dataset):
    return [(s.label, s.epsilon) for s in session.ledger(dataset).spends]


@pytest.fixture(scope="module")
def public_series() -> np.ndarray:
    return census_like_series(N, n, attributes=("age", "income"),
                              rng=np.random.default_rng(4)).histograms.astype(float)


@pytest.fixture
def teaching(public_series):
    s = Session(mode="teaching", seed=21)
    # n is the generator's parameter, declared: the widget never reads it off the data.
    s.add_dataset("census", public_series, total_epsilon=100.0,
                  stand_in=dynamic_stand_in(N, U, n), facts={"cardinality": n})
    yield s
    s.close()


def widget(session, **kwargs):
    kwargs.setdefault("debounce", 0)
    return DynamicHistogramWidget(session, "census", shape=SHAPE, attributes=("age", "income"),
                                  **kwargs)


# -- teaching -----------------------------------------------------------------------------------
def test_teaching_draws_the_data_the_release_and_the_errors_against_the_data(teaching,
                                                                             public_series):
    wd = widget(teaching, epsilon=1.0, cutoff=4)
    main, fixed, uniform = wd._last_releases
    assert [r.mechanism for r in wd._last_releases] == ["dsat", "dynamic_fixed",
                                                        "dynamic_uniform"]
    # Three live releases, each charged ε = 1 to the teaching ledger and shown on the meter.
    assert teaching.spent("census") == pytest.approx(3.0)
    assert teaching.meter.budget("census")["spent"] == pytest.approx(3.0)
    truth_marg = public_series.reshape(N, 96, 3).sum(axis=2)
    np.testing.assert_allclose(data(wd, "truth_image")["image"][0], truth_marg.T)
    released = main.result.releases
    np.testing.assert_allclose(data(wd, "release_image")["image"][0],
                               released.reshape(N, 96, 3).sum(axis=2).T)
    points = np.flatnonzero(main.result.release_points)
    np.testing.assert_array_equal(data(wd, "points")["x"], points + 1)
    # The public threshold trajectory (step line through its change points).
    thr = main.result.thresholds
    xs = data(wd, "threshold")["x"].astype(int) - 1
    np.testing.assert_array_equal(data(wd, "threshold")["y"], thr[xs])
    # Error over time against the data, for DSAT and both comparisons (float32: rtol 1e-5).
    for name, rel in (("error_main", main), ("error_cmp1", fixed), ("error_cmp2", uniform)):
        expected = np.abs(rel.result.releases - public_series).mean(axis=1)
        np.testing.assert_allclose(data(wd, name)["y"], expected, rtol=1e-5)
    assert set(wd.quality_values) == {"DSAT", "fixed sampling", "ε/N"}
    # The distance the decisions tested: the paced DSAT (default) measures each snapshot against
    # the true snapshot at the last release time.
    assert main.result.details["reference"] == "snapshot"
    dist_of = public_series / public_series.sum(1, keepdims=True)
    last = np.maximum.accumulate(np.where(main.result.release_points, np.arange(N), 0))
    dist = np.abs(dist_of[1:] - dist_of[last[:-1]]).sum(1)
    np.testing.assert_allclose(data(wd, "distance")["y"], dist, rtol=1e-4)
    # The text's DSAT measures it against the last private release.
    wd.variant.value = "text"
    text = wd._last_releases[0].result
    assert text.details["reference"] == "release"
    ref = np.clip(text.releases, 0, None)
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(data(wd, "distance")["y"],
                               np.abs(dist_of[1:] - ref[:-1]).sum(1), rtol=1e-4)
    assert wd.figure.error_labels() == ["DSAT", "fixed sampling", "ε/N"]


def test_eps_over_n_baseline_error_is_its_laplace_scale(teaching):
    """ε/N per snapshot (identity publisher): every cell gets Lap(N/ε) noise, so the mean
    absolute error per bin is N/ε = 240 at ε = 0.5. Over N·U = 34,560 cells the relative s.d.
    of that mean is 1/sqrt(34,560) ≈ 0.5%; a 3% tolerance is six s.d. (seeded session)."""
    wd = widget(teaching, epsilon=0.5, cutoff=4)
    assert wd.quality_values["ε/N"] == pytest.approx(N / 0.5, rel=0.03)
    # Releasing every snapshot wastes the budget: DSAT's C = 4 releases are far more accurate.
    assert wd.quality_values["DSAT"] < wd.quality_values["ε/N"] / 5


def test_controls_reach_the_session_and_only_changed_releases_are_charged(teaching):
    wd = widget(teaching, epsilon=1.0, cutoff=4)
    assert teaching.spent("census") == pytest.approx(3.0)
    wd.epsilon.value = 2.0  # all three rerun
    assert teaching.spent("census") == pytest.approx(3.0 + 6.0)
    wd.cutoff.value = 6  # DSAT and fixed sampling rerun; ε/N does not depend on C: a replay
    assert teaching.spent("census") == pytest.approx(9.0 + 4.0)
    assert "C = 6" in spends(teaching, "census")[-1][0]
    assert len(data(wd, "points")["x"]) <= 6
    before = teaching.spent("census")
    wd.theta.value = 0.2  # θ steers only the text's controller: under the paced one, a replay
    assert teaching.spent("census") == before and wd._rows["pid"].layout.display == "none"
    wd.variant.value = "text"
    assert wd._rows["pid"].layout.display is None and wd.threshold.description == "T1 (initial)"
    assert "θ = 0.2" in spends(teaching, "census")[-1][0]
    assert teaching.spent("census") == pytest.approx(before + 2.0)  # only DSAT is new (ε = 2)
    assert teaching.meter.budget("census")["spent"] == pytest.approx(teaching.spent("census"))
    before = teaching.spent("census")
    wd.release_button.click()  # teaching: a rerun with fresh noise, charged again
    assert teaching.spent("census") == pytest.approx(before + 6.0)


def test_time_slider_redraws_the_snapshot_and_spends_nothing(teaching, public_series):
    wd = widget(teaching, epsilon=1.0, cutoff=4)
    spent = teaching.spent("census")
    wd.time.value = 37
    assert teaching.spent("census") == spent
    truth = public_series.reshape(N, 96, 3).sum(axis=2)
    np.testing.assert_allclose(data(wd, "snapshot_truth")["top"], truth[36])
    released = expand_releases(wd.release_output).reshape(N, 96, 3).sum(axis=2)
    np.testing.assert_allclose(data(wd, "snapshot_release")["y"], released[36])
    assert all(span.location == 37 for span in wd.figure.cursors)
    assert "t = 37" in wd.figure.panels["snapshot"].title.text


def test_method_choice_switches_controls_comparisons_and_thresholds(teaching):
    wd = widget(teaching, epsilon=1.0, cutoff=4, threshold=0.05)
    wd.method.value = "dsft"
    assert wd.threshold.description == "T" and wd._rows["pid"].layout.display == "none"
    assert np.all(data(wd, "threshold")["y"] == 0.05)  # DSFT's T is constant
    wd.method.value = "dynamic_uniform"  # the baseline itself: compared with fixed sampling
    assert wd.comparisons() == ["dynamic_fixed"]
    assert len(data(wd, "error_cmp2")["x"]) == 0 and len(data(wd, "threshold")["x"]) == 0
    assert len(data(wd, "points")["x"]) == N
    assert wd._rows["threshold"].layout.display == "none"
    wd.compare.value = False
    before = len(teaching.ledger("census").spends)
    wd.epsilon.value = 0.7
    assert len(teaching.ledger("census").spends) == before + 1
    assert len(data(wd, "error_cmp1")["x"]) == 0


def test_w_event_methods_are_charged_per_window_at_user_level(teaching):
    wd = widget(teaching, epsilon=0.5, cutoff=3)
    wd.w.value = 50
    wd.method.value = "dsat_w_event"
    assert wd.cutoff.max == 50 and wd.burn_in.max == 49
    # N = 120, w = 50: ⌈N/w⌉ = 3; the method, BD and BA are each charged 3 × 0.5.
    last = spends(teaching, "census")[-3:]
    assert [eps for _, eps in last] == pytest.approx([1.5, 1.5, 1.5])
    assert [label.split(" ")[0] for label, _ in last] == ["w-event", "BD,", "BA,"]
    assert "⌈N/w⌉·ε = 1.5" in wd.banner.value
    assert set(wd.quality_values) == {"w-event DSAT", "BD", "BA"}


def test_burn_in_beyond_the_window_is_refused_not_lowered(teaching):
    wd = widget(teaching, epsilon=0.5, cutoff=3, burn_in=30, w=50, method="dsat_w_event")
    assert wd.burn_in.value == 30 and wd.message.value == ""
    before = spends(teaching, "census")
    wd.w.value = 20  # a window of 20 holds no burn-in of 30: said, not fitted to 19
    assert wd.burn_in.value == 30
    assert "Refused" in wd.message.value and "burn-in M: got 30" in wd.message.value
    assert "[1, 19]" in wd.message.value
    assert spends(teaching, "census") == before  # nothing ran, nothing charged
    assert "fix the parameters first" in wd.release_button.description
    wd.burn_in.value = 12
    assert wd.message.value == "" and wd.params["burn_in"] == 12
    assert len(spends(teaching, "census")) > len(before)


def test_show_truth_off_draws_nothing_from_the_data(teaching):
    wd = widget(teaching, epsilon=1.0)
    wd.show_truth.value = False
    for name in ("truth_image", "distance", "error_main", "error_cmp1", "snapshot_truth"):
        assert all(len(col) == 0 for col in data(wd, name).values()), name
    assert wd.quality_values == {}


def test_teaching_dataset_dropdown_adds_the_public_series(teaching):
    s = Session(mode="teaching", seed=3)
    wd = DynamicHistogramWidget(s, data="moving", debounce=0, compare=False)
    assert wd.dataset == "moving_objects" and s.shape("moving_objects") == (400, 256)
    assert wd.shape == (16, 16) and wd.cardinality == 20_000
    assert wd.time.max == 400 and wd.cutoff.value == 4  # C = 0.01 N (Li 2017, Table 4.2)
    assert data(wd, "truth_image")["image"][0].shape == (16, 400)
    with pytest.raises(ValueError, match="data must be one of"):
        DynamicHistogramWidget(s, data="nope")
    s.close()


# -- analyst ------------------------------------------------------------------------------------
def secret_series(seed: int = 9) -> np.ndarray:
    """Confidential counts around 100,000-110,000 per cell (marginals ~300,000, totals ~29M):
    nowhere near the public stand-in (~20,000 records per snapshot), the times or the bins."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(U), size=N // 10).repeat(10, axis=0)
    return (100_000 + np.stack([rng.multinomial(200_000, p) for p in probs]) // 20).astype(float)


@pytest.fixture
def analyst(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=4)
    s.add_dataset("series", secret_series(), total_epsilon=2.0,
                  stand_in=dynamic_stand_in(N, U, n), facts={"cardinality": n})
    yield s
    s.close()


def analyst_widget(session, **kwargs):
    return DynamicHistogramWidget(session, "series", shape=SHAPE, cardinality=n, debounce=0,
                                  **kwargs)


def confidential() -> tuple[np.ndarray, ...]:
    secret = secret_series()
    return secret, secret.reshape(N, 96, 3).sum(axis=2), secret.sum(axis=1)


def test_analyst_widget_needs_a_dataset_and_a_public_size(analyst):
    with pytest.raises(ValueError, match="dataset="):
        DynamicHistogramWidget(analyst)
    analyst.add_dataset("undeclared", secret_series(), total_epsilon=1.0,
                        stand_in=dynamic_stand_in(N, U, n))
    with pytest.raises(ValueError, match="cardinality"):
        DynamicHistogramWidget(analyst, "undeclared")
    with pytest.raises(ValueError, match="cells"):
        DynamicHistogramWidget(analyst, "series", shape=(10, 10), cardinality=n)


def test_analyst_previews_on_the_stand_in_and_control_moves_spend_nothing(analyst):
    wd = analyst_widget(analyst, epsilon=0.5)
    assert analyst.spent("series") == 0.0 and "PREVIEW" in wd.status.value
    stand_in = analyst.stand_in("series")
    np.testing.assert_allclose(data(wd, "truth_image")["image"][0],
                               marginal(stand_in, SHAPE)[0].T)
    assert "on the public stand-in" in wd.quality.value
    for control, value in ((wd.epsilon, 0.8), (wd.cutoff, 5), (wd.threshold, 0.2),
                           (wd.delta, 0.1), (wd.theta, 0.3), (wd.burn_in, 4), (wd.time, 17),
                           (wd.method, "dsft"), (wd.method, "dsat_w_event"), (wd.w, 30),
                           (wd.compare, False), (wd.method, "dynamic_uniform")):
        control.value = value
        assert analyst.spent("series") == 0.0, control.description
    assert analyst.ledger("series").spends == []
    assert "Release would charge ε = 0.8" in wd.status.value
    assert wd.show_truth.disabled and wd.data.disabled
    assert leaked(*confidential()) == []


def test_analyst_release_spends_once_draws_dp_output_only_and_leaks_nothing(analyst):
    wd = analyst_widget(analyst, epsilon=0.5, cutoff=4)
    release = wd.release()
    assert release is not None and release.result is None
    assert analyst.spent("series") == pytest.approx(0.5)
    assert analyst.meter.budget("series")["spent"] == pytest.approx(0.5)
    assert "charged ε = 0.5" in wd.message.value
    assert [s.label.split(" ")[0] for s in analyst.ledger("series").spends] == ["DSAT"]
    for name in ("truth_image", "distance", "error_main", "error_cmp1", "error_cmp2",
                 "snapshot_truth"):
        assert all(len(col) == 0 for col in data(wd, name).values()), name
    assert wd.quality_values == {} and "needs" not in wd.status.value
    released = expand_releases(release.output).reshape(N, 96, 3).sum(axis=2)
    np.testing.assert_allclose(data(wd, "release_image")["image"][0], released.T)
    assert leak_rate(*confidential()) < 0.01  # the released DP output is on its grid
    # The time slider only redraws the released output: nothing spent, still no leak.
    wd.time.value = 99
    np.testing.assert_allclose(data(wd, "snapshot_release")["y"], released[98])
    assert analyst.spent("series") == pytest.approx(0.5)
    assert leak_rate(*confidential()) < 0.01
    # Same parameters again: a free replay.
    wd.release_button.click()
    assert analyst.spent("series") == pytest.approx(0.5)
    assert "nothing spent" in wd.message.value


def test_analyst_w_event_release_and_over_budget_refusal(analyst):
    wd = analyst_widget(analyst, epsilon=0.4, method="dsat_w_event", w=60, cutoff=2)
    assert "Release would charge ε = 0.8" in wd.status.value  # ⌈120/60⌉ = 2
    wd.release()
    assert analyst.spent("series") == pytest.approx(0.8)
    wd.epsilon.value = 0.7  # 1.4 > 1.2 left
    assert "refused" in wd.epsilon_note.value
    assert wd.release() is None
    assert "Over budget" in wd.message.value
    assert analyst.spent("series") == pytest.approx(0.8)


def test_the_leak_check_sees_the_series_when_it_is_drawn():
    """Negative control: the same series in a teaching session (declared public) is drawn, and
    the check used above finds its marginals -- so an empty result above means something."""
    s = Session(mode="teaching", seed=4)
    s.add_dataset("series", secret_series(), total_epsilon=100.0,
                  stand_in=dynamic_stand_in(N, U, n))
    DynamicHistogramWidget(s, "series", shape=SHAPE, cardinality=n, debounce=0, compare=False)
    assert len(leaked(*confidential())) > 100
    s.close()
