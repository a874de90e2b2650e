"""The stream widgets, headless: set a control, assert on the plotted data (the
ColumnDataSources), the quality measures, the ledger and the meter. Post-processing controls
(smoother, w, event kind, δ) and playing spend nothing; analyst mode previews for free,
releases once, and no confidential value reaches any widget or Bokeh state."""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine import streams as st
from dpwidgets.families.streams import display as fs
from dpwidgets.families.streams import spec as rs
from dpwidgets.families.streams.standins import multi_state_streams, wifi_stream
from dpwidgets.families.streams.widget import HierarchyWidget, StreamWidget

from .conftest import leak_rate, leaked

N = 3000  # steps: the first 3000 of High_5 (about ten days) keep the tests fast
W = 500  # the live panel's window (its rollover)


def data(widget, name):
    return widget.figure.sources[name].data


def spends(session, name):
    return len(session.ledger(name).spends)


def secret_stream(n: int = N, seed: int = 31) -> np.ndarray:
    """Confidential counts, each one recognisable: flat stretches at levels in the millions
    plus a small jitter. Noisy releases are never integers, so none can equal one by chance."""
    rng = np.random.default_rng(seed)
    levels = rng.integers(2_000_000, 3_000_000, size=n // 25 + 1)
    return (np.repeat(levels, 25)[:n] + rng.integers(0, 5, size=n)).astype(float)


def public_stand_in(n: int = N) -> np.ndarray:
    return wifi_stream("Med_5", np.random.default_rng(0))[:n].astype(float)


pytestmark = pytest.mark.usefixtures("close_new_widgets")


@pytest.fixture
def teaching():
    s = Session(mode="teaching", seed=5)
    yield s
    s.close()


@pytest.fixture
def analyst(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=5)
    s.add_dataset("wifi", secret_stream(), total_epsilon=1.0, stand_in=public_stand_in())
    yield s
    s.close()


@pytest.fixture
def sw(teaching):
    # The text's defaults (Chen 2018, §5.6.1: median smoother, θ = 5/ε_g); the new defaults
    # have their own test below.
    return StreamWidget(teaching, stream="High_5", length=N, epsilon=0.5, window=W,
                        defaults="text", debounce=0)


# -- StreamWidget: teaching ------------------------------------------------------------------
def test_teaching_live_panel_draws_truth_lm_and_pegasus_of_one_release(sw, teaching):
    name = sw.dataset
    assert name == f"High_5_{N}" and teaching.spent(name) == pytest.approx(0.5)
    assert sw.t == W and sw.play.max == N and not sw.play.playing
    truth = teaching.public_view(name)
    out = sw.output
    live = data(sw, "private")
    np.testing.assert_array_equal(live["x"], np.arange(0, W))
    np.testing.assert_array_equal(live["pgs"], out["smoothed"]["median"][:W])
    np.testing.assert_array_equal(live["lm"], out["noisy"][:W])
    np.testing.assert_array_equal(data(sw, "truth")["y"], truth[:W])
    # The shading is the Grouper's partition of the steps shown, one quad per group.
    quads = data(sw, "groups")
    bounds = out["boundaries"]
    shown = bounds[bounds < W]
    np.testing.assert_array_equal(quads["left"], shown - 0.5)
    np.testing.assert_array_equal(quads["right"], np.append(shown[1:], W) - 0.5)
    assert set(quads["color"]) == set(fs.GROUP_COLORS)
    assert "0.5-DP" in sw.banner.value and "spends nothing" in sw.banner.value
    assert teaching.meter.budget(name)["spent"] == pytest.approx(0.5)


def test_new_defaults_draw_the_adaptive_smoother_and_switch_in_one_release(teaching):
    sw = StreamWidget(teaching, stream="High_5", length=N, epsilon=0.5, window=W, debounce=0)
    name = sw.dataset
    assert sw.defaults.value == "new" and sw.smoother.value == "adaptive"
    p = sw.params
    assert p["defaults"] == "new" and p["perturber_share"] == pytest.approx(0.95)
    out = sw.output
    assert out["theta"] == pytest.approx(160 / (0.05 * 0.5))
    np.testing.assert_array_equal(data(sw, "private")["pgs"], out["smoothed"]["adaptive"][:W])
    assert teaching.spent(name) == pytest.approx(0.5)
    # The dropdown resets the split, θ and the smoother together: one release, not three.
    sw.defaults.value = "text"
    assert (sw.split.value, sw.theta.value, sw.smoother.value) == (pytest.approx(0.8), 5.0, "median")
    assert teaching.spent(name) == pytest.approx(1.0)
    assert sw.output["theta"] == pytest.approx(5 / (0.2 * 0.5))
    np.testing.assert_array_equal(data(sw, "private")["pgs"], sw.output["smoothed"]["median"][:W])


def test_playing_streams_with_rollover_and_spends_nothing(sw, teaching):
    name, spent = sw.dataset, teaching.spent(sw.dataset)
    out, truth = sw.output, teaching.public_view(sw.dataset)
    for t in range(W + 50, W + 400, 50):  # ticks of 50 steps: 1000 steps/s at 20 ticks/s
        sw.play.value = t
    live = data(sw, "private")
    assert len(live["x"]) == W  # rollover keeps the last W steps
    np.testing.assert_array_equal(live["x"], np.arange(sw.t - W, sw.t))
    np.testing.assert_array_equal(live["pgs"], out["estimates"][sw.t - W : sw.t])
    np.testing.assert_array_equal(data(sw, "truth")["y"], truth[sw.t - W : sw.t])
    assert data(sw, "groups")["right"][-1] == sw.t - 0.5
    assert sw.figure.cursors[0].location == sw.t - 1
    sw.play.value = 10  # scrub back: the panel is rebuilt, not streamed
    np.testing.assert_array_equal(data(sw, "private")["x"], np.arange(10))
    sw.play.value = N  # a jump past the window
    np.testing.assert_array_equal(data(sw, "private")["x"], np.arange(N - W, N))
    assert teaching.spent(name) == spent and spends(teaching, name) == 1


def test_smoother_window_and_delta_are_post_processing_and_spend_nothing(sw, teaching):
    name = sw.dataset
    out, truth = sw.output, teaching.public_view(name)
    sw.smoother.value = "average"
    np.testing.assert_array_equal(data(sw, "private")["pgs"], out["smoothed"]["average"][:W])
    sw.w.value = 64
    wss = rs.window_sums(out, 64)
    x, y = fs.decimate(wss)
    np.testing.assert_array_equal(data(sw, "win_wss")["x"], x)
    np.testing.assert_array_equal(data(sw, "win_wss")["y"], y)
    true_sums = st.sliding_window_sums(truth, 64)
    assert sw.quality_values["WSS average L1"] == pytest.approx(st.average_l1(true_sums, wss))
    sw.kind.value = "low_signal"
    delta = sw.delta.value
    stat = rs.event_statistic(out, "low_signal", 64)
    expected = np.flatnonzero(np.nan_to_num(stat, nan=np.inf) < delta)
    np.testing.assert_array_equal(data(sw, "ev_detected")["x"], fs._sample(expected))
    sw.delta.value = sw.delta.max / 2
    assert sw.figure.delta_line.location == sw.delta.value
    sw.show_truth.value = False
    assert len(data(sw, "truth")["x"]) == 0 and len(data(sw, "win_truth")["x"]) == 0
    assert sw.quality_values == {} and not sw.figure.panels["roc"].visible
    sw.show_truth.value = True
    # Smoother, w, event kind, δ and the truth on/off: one release, nothing more charged.
    assert teaching.spent(name) == pytest.approx(0.5) and spends(teaching, name) == 1


def test_release_parameters_rerun_and_are_charged(sw, teaching):
    name = sw.dataset
    sw.epsilon.value = 0.05
    assert teaching.spent(name) == pytest.approx(0.55)
    low = sw.quality_values["PeGaSus scaled L1"]
    sw.epsilon.value = 2.0
    high = sw.quality_values["PeGaSus scaled L1"]
    # ε = 2 vs 0.05: noise scales 40× apart, on a stream of ~37 connections per step.
    assert high < low / 5
    sw.split.value = 0.5
    assert sw.output["epsilon_parts"]["grouper"] == pytest.approx(1.0)
    sw.theta.value = 100.0
    assert sw.output["theta"] == pytest.approx(100.0 / 1.0)
    sw.release_button.click()  # Rerun: fresh noise, charged again
    assert spends(teaching, name) == 6
    assert teaching.spent(name) == pytest.approx(0.5 + 0.05 + 2 + 2 + 2 + 2)
    assert teaching.meter.budget(name)["spent"] == pytest.approx(8.55)
    sw.epsilon.value = 3.0  # past the cap of 10: recorded as an overdraft, and said so
    assert len(teaching.overdrafts(name)) == 1 and "Past the cap" in sw.message.value


def test_roc_point_moves_along_the_curve_as_the_detection_threshold_moves(sw, teaching):
    sw.w.value = 16
    assert sw.event_delta.value == sw.delta.value  # by default detect at the events' δ
    roc = {k: np.array(v) for k, v in data(sw, "roc_pgs").items()}
    assert roc["x"][0] == 0.0 and roc["y"][0] == 0.0 and roc["x"][-1] == 1.0
    assert np.all(np.diff(roc["x"]) >= 0) and np.all(np.diff(roc["y"]) >= 0)
    point = data(sw, "roc_point")
    assert list(point["method"]) == ["PeGaSus", "LM"]
    truth = teaching.public_view(sw.dataset)
    true_events = (np.nan_to_num(st.jump_drop_statistic(truth, 16), nan=-np.inf)
                   >= sw.event_delta.value)

    def tpr_fpr(delta):
        detected = rs.detections(sw.output, "jump_drop", 16, delta)[15:]
        t = true_events[15:]
        return (detected & t).sum() / t.sum(), (detected & ~t).sum() / (~t).sum()

    tpr, fpr = tpr_fpr(sw.delta.value)
    assert point["y"][0] == pytest.approx(tpr) and point["x"][0] == pytest.approx(fpr)
    np.testing.assert_array_equal(data(sw, "ev_true")["x"],
                                  fs._sample(np.flatnonzero(true_events)))
    assert 0.5 < sw.quality_values["PeGaSus AUC"] <= 1.0
    # A lower detection threshold: more detections, the point moves up along the same curve.
    sw.delta.value = sw.delta.value / 2
    tpr2, fpr2 = tpr_fpr(sw.delta.value)
    assert data(sw, "roc_point")["y"][0] == pytest.approx(tpr2) and tpr2 >= tpr
    assert fpr2 > fpr
    np.testing.assert_array_equal(data(sw, "roc_pgs")["x"], roc["x"])
    # Another definition of the true events: another curve.
    sw.event_delta.value = sw.event_delta.max / 2
    assert not np.array_equal(data(sw, "roc_pgs")["x"], roc["x"])
    assert sw.figure.event_line.location == sw.event_delta.value
    assert teaching.spent(sw.dataset) == pytest.approx(0.5)


def test_switching_the_stream_resets_time_and_window(sw, teaching):
    sw.data.value = "sunspots"
    assert sw.dataset == "sunspots" and sw.n_steps == 309
    assert sw.t == 309 and sw.w.options[-1] == 256
    assert len(data(sw, "private")["x"]) == 309
    assert teaching.spent("sunspots") == pytest.approx(0.5)


def test_constructor_validates(tmp_path):
    s = Session(mode="teaching")
    with pytest.raises(ValueError, match="stream"):
        StreamWidget(s, stream="nope")
    with pytest.raises(ValueError, match="smoother"):
        StreamWidget(s, smoother="mode")
    a = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite")
    with pytest.raises(ValueError, match="dataset"):
        StreamWidget(a)


# -- StreamWidget: analyst -------------------------------------------------------------------
def test_analyst_previews_on_the_stand_in_for_free(analyst):
    sw = StreamWidget(analyst, dataset="wifi", epsilon=0.4, window=W, debounce=0)
    sw.epsilon.value = 0.3
    sw.split.value = 0.6
    sw.w.value = 32
    assert analyst.spent("wifi") == 0.0
    assert "PREVIEW" in sw.status.value and "charge ε = 0.3" in sw.status.value
    np.testing.assert_array_equal(data(sw, "truth")["y"], analyst.stand_in("wifi")[:W])
    assert "on the public stand-in" in sw.quality.value
    assert sw.data.disabled and sw.show_truth.disabled


def test_analyst_release_charges_once_then_post_processing_is_free(analyst):
    sw = StreamWidget(analyst, dataset="wifi", epsilon=0.4, window=W, debounce=0)
    sw.release_button.click()
    assert analyst.spent("wifi") == pytest.approx(0.4)
    assert analyst.meter.budget("wifi")["spent"] == pytest.approx(0.4)
    assert "charged ε = 0.4" in sw.message.value
    release = analyst.ledger("wifi").spends[-1]
    assert release.label.startswith("PeGaSus stream")
    # Only DP output on screen: no truth, no true events, no ROC, no quality measure.
    for name in ("truth", "win_truth", "ev_truth", "ev_true", "roc_pgs", "roc_lm", "roc_point"):
        assert len(next(iter(data(sw, name).values()))) == 0, name
    assert not sw.figure.panels["roc"].visible and sw.quality_values == {}
    assert sw.event_delta.layout.display == "none" and not sw.figure.event_line.visible
    assert "Detections at δ" in sw.quality.value
    out = sw.output
    np.testing.assert_array_equal(data(sw, "private")["pgs"], out["estimates"][:W])
    # w, δ, the event kind, the smoother and playing: post-processing of the one release.
    for change in (("w", 128), ("kind", "low_signal"), ("smoother", "james_stein")):
        getattr(sw, change[0]).value = change[1]
    sw.delta.value = sw.delta.min + (sw.delta.max - sw.delta.min) / 3
    for t in range(W, 2000, 100):
        sw.play.value = t
    np.testing.assert_array_equal(data(sw, "private")["pgs"],
                                  out["smoothed"]["james_stein"][sw.t - W : sw.t])
    assert "Released" in sw.status.value or "released" in sw.status.value
    assert analyst.spent("wifi") == pytest.approx(0.4) and spends(analyst, "wifi") == 1
    # The same parameters again: a cached replay; a new ε goes back to a free preview.
    sw.release()
    assert "nothing spent" in sw.message.value and analyst.spent("wifi") == pytest.approx(0.4)
    sw.epsilon.value = 0.5
    assert "PREVIEW" in sw.status.value and analyst.spent("wifi") == pytest.approx(0.4)
    sw.epsilon.value = 0.4
    assert "refused" not in sw.epsilon_note.value  # released already: a replay is free
    sw.epsilon.value = 0.7
    assert "refused" in sw.epsilon_note.value  # the guardrail says so before the click
    sw.release_button.click()  # 0.4 + 0.7 > 1: refused, nothing charged
    assert "Over budget" in sw.message.value and analyst.spent("wifi") == pytest.approx(0.4)


def test_analyst_state_never_contains_confidential_values(tmp_path):
    secret = secret_stream()
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=9)
    s.add_dataset("wifi", secret, total_epsilon=5.0, stand_in=public_stand_in())
    s.meter  # noqa: B018 - the meter's state crosses to the browser too
    sw = StreamWidget(s, dataset="wifi", epsilon=0.5, window=W, debounce=0)
    # Derived confidential values: true window sums and jumps (only those too large to meet a
    # public number such as a step index by chance are checked).
    sums = st.sliding_window_sums(secret, 16)
    jumps = st.jump_drop_statistic(secret, 16)
    derived = (sums, jumps[np.nan_to_num(jumps) > 1e5])
    assert leaked(secret, *derived) == []
    sw.release_button.click()
    assert "Released" in sw.message.value
    sw.w.value = 16
    sw.kind.value = "low_signal"
    sw.delta.value = sw.delta.max / 2
    sw.play.value = 1500
    assert leak_rate(secret, *derived) < 0.01  # the released DP output is on its grid
    # The check can fail: a teaching widget on the same values puts them in the state.
    t = Session(mode="teaching")
    t.add_dataset("wifi", secret, total_epsilon=5.0)
    StreamWidget(t, dataset="wifi", epsilon=0.5, window=W, debounce=0)
    hits = set(leaked(secret))
    assert set(secret[:W].tolist()) <= hits


# -- figure helpers ---------------------------------------------------------------------------
def test_decimate_keeps_every_extreme_and_time_order():
    rng = np.random.default_rng(0)
    y = rng.normal(size=50_001)
    y[12_345] = 100.0
    y[40_000] = -100.0
    x, d = fs.decimate(y, 1000)
    assert len(x) <= 1000 and np.all(np.diff(x) > 0)
    assert 100.0 in d and -100.0 in d
    np.testing.assert_array_equal(d, y[x.astype(int)])
    x2, d2 = fs.decimate(y[:500], 1000)
    np.testing.assert_array_equal(d2, y[:500])
    stat = np.r_[np.full(15, np.nan), np.arange(20_000.0)]
    _, d3 = fs.decimate(stat, 100)
    assert np.nanmax(d3) == 19_999.0


def test_group_quads_partition_the_window():
    bounds = np.array([0, 3, 4, 10, 11])
    q = fs.group_quads(bounds, 2, 12)
    np.testing.assert_array_equal(q["left"], [1.5, 2.5, 3.5, 9.5, 10.5])
    np.testing.assert_array_equal(q["right"], [2.5, 3.5, 9.5, 10.5, 11.5])
    assert list(q["color"]) == [fs.GROUP_COLORS[i % 2] for i in range(5)]
    assert fs.group_quads(bounds, 5, 5)["left"].size == 0


def test_tree_layout_places_parents_over_their_children():
    h = st.Hierarchy.binary(8)
    x, y = fs.tree_layout(h.parents)
    np.testing.assert_array_equal(np.sort(x[h.leaves]), np.arange(8))
    assert y[0] == -1 and set(y[h.leaves]) == {-4}
    for node in range(1, 15):
        parent = h.parents[node]
        kids = [k for k in range(15) if h.parents[k] == parent]
        assert x[parent] == pytest.approx(np.mean(x[kids]))


# -- HierarchyWidget --------------------------------------------------------------------------
def test_hierarchy_teaching_tree_pruning_and_comparison(teaching):
    hw = HierarchyWidget(teaching, n_states=16, length=600, epsilon=0.1, debounce=0)
    name = hw.dataset
    assert name == "multi_16x600" and hw.hierarchy.height == 5
    # PHS-PGS plus HS-PGS and HS-LM for comparison: three releases of ε each.
    assert teaching.spent(name) == pytest.approx(0.3) and spends(teaching, name) == 3
    phs = hw.output
    nodes = data(hw, "nodes")
    t = hw.t
    np.testing.assert_array_equal(nodes["status"] == "pruned", phs["pruned"][:, t])
    np.testing.assert_array_equal(nodes["estimate"], phs["estimates"][:, t])
    truth = hw.hierarchy.aggregate(teaching.public_view(name))
    np.testing.assert_array_equal(nodes["truth"], truth[:, t])
    assert np.all(nodes["estimate"][nodes["status"] == "pruned"] == 0)
    # Time and node selection redraw, and spend nothing.
    hw.play.value = 17
    np.testing.assert_array_equal(data(hw, "nodes")["status"] == "pruned", phs["pruned"][:, 17])
    assert f"{int(phs['pruned'][:, 17].sum())} of 31 nodes pruned" in hw.figure.panels[
        "tree"].title.text
    hw.figure.sources["nodes"].selected.indices = [5]  # a click on node 5 in the browser
    assert hw.node.value == 5
    np.testing.assert_array_equal(data(hw, "spark_phs")["y"], phs["estimates"][5])
    np.testing.assert_array_equal(data(hw, "spark_truth")["y"], truth[5])
    assert len(data(hw, "spark_lm")["y"]) == 600
    assert teaching.spent(name) == pytest.approx(0.3)
    levels = data(hw, "levels")
    assert list(levels["level"]) == [1, 2, 3, 4, 5]
    q = hw.quality_values
    assert q["HS-LM / PHS-PGS"] == pytest.approx(q["HS-LM scaled L1"] / q["PHS-PGS scaled L1"])
    # Multi_5-shaped data is sparse: pruning wins by far (Chen 2018, Fig. 5.8 reports 78× at ε = 0.1).
    assert q["HS-LM / PHS-PGS"] > 2
    hw.compare.value = False  # PHS-PGS with the same parameters: a cached replay
    assert spends(teaching, name) == 3 and np.isnan(data(hw, "levels")["hs"]).all()
    hw.epsilon.value = 0.2
    assert spends(teaching, name) == 4 and teaching.spent(name) == pytest.approx(0.5)
    hw.auto_beta.value = False
    hw.beta.value = 1e9  # prune everything below the root
    assert data(hw, "nodes")["status"][1:].tolist() == ["pruned"] * 30


def test_hierarchy_compares_by_default_only_on_small_hierarchies(teaching):
    # 16 x 600 (under COMPARE_MAX_CELLS): PHS-PGS, HS-PGS and HS-LM, three releases. 32 x
    # 8,000 = 256,000 cells: PHS-PGS only by default (one release); compare=True still runs all.
    from dpwidgets.families.streams.widget import COMPARE_MAX_CELLS

    small = HierarchyWidget(teaching, n_states=16, length=600, epsilon=0.1, debounce=0)
    assert small.compare.value and spends(teaching, small.dataset) == 3
    assert 32 * 8000 > COMPARE_MAX_CELLS
    big = HierarchyWidget(teaching, n_states=32, length=8000, epsilon=0.1, debounce=0)
    assert not big.compare.value and spends(teaching, big.dataset) == 1
    assert np.isnan(data(big, "levels")["hs"]).all()
    forced = HierarchyWidget(teaching, n_states=32, length=8000, epsilon=0.2, compare=True,
                             debounce=0)
    assert forced.compare.value and spends(teaching, forced.dataset) == 4


def test_hierarchy_analyst_preview_release_and_no_leak(tmp_path):
    rng = np.random.default_rng(8)
    secret = (rng.integers(1_000_000, 2_000_000, size=(8, 300))).astype(float)
    stand_in = multi_state_streams(np.random.default_rng(0), n_states=8, length=300,
                                   total=3000).astype(float)
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=2)
    s.add_dataset("aps", secret, total_epsilon=1.0, stand_in=stand_in)
    s.meter  # noqa: B018
    hw = HierarchyWidget(s, dataset="aps", epsilon=0.3, debounce=0)
    hw.epsilon.value = 0.2
    assert s.spent("aps") == 0.0 and "PREVIEW" in hw.status.value
    agg = hw.hierarchy.aggregate(secret)
    assert leaked(secret, agg) == []
    hw.release_button.click()
    assert s.spent("aps") == pytest.approx(0.2) and "charged ε = 0.2" in hw.message.value
    assert np.isnan(data(hw, "nodes")["truth"]).all()
    assert len(data(hw, "spark_truth")["y"]) == 0 and len(data(hw, "spark_hs")["y"]) == 0
    assert len(data(hw, "levels")["level"]) == 0
    hw.play.value = 10
    hw.node.value = 3
    assert leaked(secret, agg) == []
    assert s.spent("aps") == pytest.approx(0.2)


def test_analyst_output_is_the_last_release_never_a_preview(analyst):
    sw = StreamWidget(analyst, dataset="wifi", epsilon=0.4, window=W, debounce=0)
    assert sw.output is None and sw.last_release is None  # only a preview so far
    assert "PREVIEW" in sw.status.value and sw.shown_output is not None
    release = sw.release()
    assert sw.output is release.output and not release.preview
    sw.epsilon.value = 0.3  # back to a preview on screen ...
    assert "PREVIEW" in sw.status.value
    assert sw.shown_output is not release.output
    assert sw.output is release.output  # ... the export is still what was released
    assert sw.last_release is release and analyst.spent("wifi") == pytest.approx(0.4)


def test_bad_values_are_refused_and_the_stream_widget_stays_alive(analyst):
    sw = StreamWidget(analyst, dataset="wifi", epsilon=0.4, window=W, debounce=0)
    sw.epsilon.value = float("nan")
    assert "ε: got nan" in sw.message.value
    sw.split.value = 1.5
    assert sw.release() is None and analyst.spent("wifi") == 0.0
    assert "accepted" in sw.message.value
    sw.split.value = 0.5
    sw.epsilon.value = 0.25
    assert sw.release().epsilon == 0.25 and analyst.spent("wifi") == 0.25
    assert "per row" in sw.banner.value
    # Released: the button says that releasing the same again is a free replay.
    assert sw.release_button.description.endswith("(free: already released)")


# -- the displays: computed once, drawn; playing redraws from the one drawn ---------------------
def _no_new_display(*args, **kwargs):
    raise AssertionError("a view control built a new display")


def test_playing_redraws_the_live_panel_from_the_display_drawn(sw, monkeypatch):
    out = sw.output
    monkeypatch.setattr(fs.StreamDisplay, "from_output", _no_new_display)
    for t in (W + 50, W + 120, 2500, 10, N):  # streamed, streamed, reset, reset, reset
        sw.play.value = t
        lo = max(0, t - W)
        np.testing.assert_array_equal(data(sw, "private")["x"], np.arange(lo, t))
        np.testing.assert_array_equal(data(sw, "private")["pgs"], out["smoothed"]["median"][lo:t])
        np.testing.assert_array_equal(data(sw, "truth")["y"],
                                      sw.session.public_view(sw.dataset)[lo:t])
        assert sw.figure.cursors[0].location == t - 1


def test_a_stream_display_draws_what_the_widget_shows(sw):
    truth = sw.session.public_view(sw.dataset)
    shown = fs.StreamDisplay.from_output(
        sw.output, rs.estimates(sw.output, "median"), where="teaching", w=int(sw.w.value),
        kind=sw.kind.value, delta=float(sw.delta.value), truth=truth)
    handle = shown.draw_time(shown.draw(fs.stream_figure(window=W)), sw.t)
    for name in ("truth", "private", "groups"):
        for column, values in data(sw, name).items():
            np.testing.assert_array_equal(handle.sources[name].data[column], values)
    assert handle.panels["live"].title.text == sw.figure.panels["live"].title.text


def test_hierarchy_step_and_node_redraw_from_the_display_drawn(teaching, monkeypatch):
    hw = HierarchyWidget(teaching, n_states=8, length=200, epsilon=0.5, compare=False,
                         debounce=0)
    truth = hw.hierarchy.aggregate(teaching.public_view(hw.dataset))
    shown = fs.HierarchyDisplay.from_outputs({"phs": hw.output}, hw.hierarchy,
                                             where="teaching", truth=truth)
    assert shown.quality == hw.quality_values
    monkeypatch.setattr(fs.HierarchyDisplay, "from_outputs", _no_new_display)
    hw.play.value = 37
    hw.node.value = 3
    handle = shown.draw(shown.figure(), t=37, node=3)
    for name in ("nodes", "spark_phs", "spark_truth", "levels"):
        for column, values in data(hw, name).items():
            np.testing.assert_array_equal(handle.sources[name].data[column], values)
    assert handle.panels["tree"].title.text == hw.figure.panels["tree"].title.text
    assert hw.figure.cursor.location == 37
