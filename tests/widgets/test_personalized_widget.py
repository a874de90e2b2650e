"""PersonalizedWidget, headless: set a control (the threshold slider among them), assert on the
plotted data, the ledger and the meter; in analyst mode previews are free, only Release spends,
and no confidential value reaches any widget or Bokeh state."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine.dynamic import random_range_queries
from dpwidgets.engine.personalized import relative_frequency_error
from dpwidgets.families.personalized.display import budget_used
from dpwidgets.families.personalized.standins import budgets_mixed, personalized_stand_in
from dpwidgets.families.personalized.widget import DATASETS, PersonalizedWidget

from .conftest import leaked

N = 20_000
EDGES = np.linspace(0.0, 100.0, 41)


pytestmark = pytest.mark.usefixtures("close_new_widgets")


def data(widget, name):
    return widget.figure.sources[name].data


def releases(session, dataset):
    return [(s.label, s.epsilon) for s in session.ledger(dataset).spends]


@pytest.fixture
def teaching():
    s = Session(mode="teaching", seed=21)
    yield s
    s.close()


def teaching_widget(session, **kwargs):
    kwargs.setdefault("debounce", 0)
    kwargs.setdefault("n", N)
    return PersonalizedWidget(session, **kwargs)


# -- teaching -----------------------------------------------------------------------------------
def test_teaching_draws_vector_partitions_enjoyed_and_errors_against_the_data(teaching):
    wd = teaching_widget(teaching, data="age", privacy="normal")
    ds = wd.dataset
    assert ds == f"age_{N}" and teaching.shape(ds) == (N, 2)
    # Four live releases (the text's four mechanisms), each charged its largest per-record
    # loss to the teaching ledger, and shown on the meter.
    assert [r.params["method"] for r in wd._last_releases] == [
        "minimum", "sampling", "privacy_aware", "utility"]
    charges = [float(np.max(r.output["enjoyed"])) for r in wd._last_releases]
    assert [e for _, e in releases(teaching, ds)] == pytest.approx(charges)
    assert teaching.meter.budget(ds)["spent"] == pytest.approx(sum(charges))
    b = wd.budgets.array
    assert b.shape == (N,) and b.min() >= 0.01 and b.max() <= 1.0
    # The privacy vector's histogram.
    counts, edges = np.histogram(b, bins=40, range=(0.0, b.max() * (1 + 1e-9)))
    np.testing.assert_array_equal(data(wd, "vector")["top"], counts)
    np.testing.assert_allclose(data(wd, "vector")["left"], edges[:-1])
    # Asked vs enjoyed of the selected mechanism (utility), on the sorted-budget axis.
    order = np.argsort(b, kind="stable")
    ranks = data(wd, "sorted")["rank"].astype(int)
    np.testing.assert_array_equal(data(wd, "sorted")["asked"], b[order][ranks])
    utility = wd._last_releases[3].output
    np.testing.assert_array_equal(data(wd, "sorted")["enjoyed"], utility["enjoyed"][order][ranks])
    assert np.all(data(wd, "sorted")["enjoyed"] <= data(wd, "sorted")["asked"])
    # Its round-1 partitions shaded up to their budgets; one strip row per mechanism.
    np.testing.assert_allclose(np.sort(data(wd, "shading")["top"]),
                               np.sort(utility["release_epsilons"]))
    np.testing.assert_allclose(np.diff(data(wd, "shading")["left"]) * N,
                               utility["release_sizes"][:-1])
    assert set(data(wd, "strips")["method"]) == {"Minimum", "Sampling", "Privacy-aware",
                                                 "Utility-based"}
    assert wd.figure.methods.factors == ["Utility-based", "Privacy-aware", "Sampling",
                                         "Minimum"]
    # The DP histogram of the selected mechanism and the data's histogram beside it.
    values = teaching.public_view(ds)[:, 0]
    truth = np.histogram(values, bins=DATASETS["age"].edges)[0]
    np.testing.assert_array_equal(data(wd, "truth")["y"], truth)
    np.testing.assert_array_equal(data(wd, "private")["y"], utility["counts"])
    # The error of every mechanism: Li 2017, §5.3.1's relative frequency error, on 1,000 fixed
    # random range queries over the 80 age bins.
    queries = random_range_queries((80,), 1000, np.random.default_rng(
        zlib.crc32(repr((80,)).encode())))
    for release, name in zip(wd._last_releases, ["Minimum", "Sampling", "Privacy-aware",
                                                 "Utility-based"], strict=True):
        expected = relative_frequency_error(truth, release.output["counts"], queries=queries,
                                            n=N)
        assert wd.quality_values[name] == pytest.approx(expected)
    assert set(data(wd, "levels")["method"]) == {"Minimum", "Privacy-aware", "Utility-based"}
    assert list(data(wd, "current")["method"]) == ["Sampling"]
    assert "against the data" in wd.quality.value


def test_one_epsilon_for_all_wastes_the_willingness_and_loses_accuracy(teaching):
    """Li 2017, §5.1: Minimum uses min ε for everybody. Under the text's N(0.1, 1) vector 46% of
    the records ask for 0.01, so Minimum uses ~3% of the budget asked; its Laplace noise
    (scale 2/0.01 per cell) is ~100x that of releases near ε = 1, and its error is many times
    the partitioning methods' (about 14x in benchmarks/results/personalized_counts.md at
    n = 100,000; here n = 20,000, seeded: a factor 4 leaves a wide margin)."""
    wd = teaching_widget(teaching, data="age", privacy="normal")
    b = wd.budgets.array
    minimum, sampling, aware, utility = (r.output for r in wd._last_releases)
    assert budget_used(minimum["enjoyed"], b) < 0.05
    assert budget_used(aware["enjoyed"], b) > 0.8
    assert wd.quality_values["Minimum"] > 4 * wd.quality_values["Utility-based"]
    assert wd.quality_values["Minimum"] > 4 * wd.quality_values["Privacy-aware"]
    assert "uses" in wd.quality.value and "ledger cost" in wd.quality.value


def test_the_threshold_slider_reruns_sampling_only_and_traces_the_error_curve(teaching):
    wd = teaching_widget(teaching, data="age", privacy="uniform_wide")
    ds = wd.dataset
    b = wd.budgets.array
    assert wd.auto_threshold.value and wd.threshold.value == pytest.approx(b.mean())
    assert (wd.threshold.min, wd.threshold.max) == pytest.approx((b.min(), b.max()))
    spent = teaching.spent(ds)
    wd.threshold.value = 0.7
    assert not wd.auto_threshold.value  # moving the slider leaves the mean
    # Only Sampling depends on ε_T: one new release charged ε_T = 0.7, the others replayed.
    assert teaching.spent(ds) == pytest.approx(spent + 0.7)
    label, eps = releases(teaching, ds)[-1]
    assert "Sampling" in label and "ε_T = 0.7" in label and eps == pytest.approx(0.7)
    sampling = wd.outputs["sampling"]
    assert sampling["threshold"] == pytest.approx(0.7)
    np.testing.assert_allclose(sampling["enjoyed"], np.minimum(b, 0.7))
    assert list(data(wd, "current")["x"]) == pytest.approx([0.7])
    assert data(wd, "current")["y"][0] == pytest.approx(wd.quality_values["Sampling"])
    # The trail holds both thresholds visited: Li 2017, Fig. 5.2's curve, traced by the slider.
    assert list(data(wd, "trail")["x"]) == pytest.approx(sorted([b.mean(), 0.7]))
    assert all(span.location == pytest.approx(0.7) and span.visible
               for span in wd.figure.spans.values())
    # Sampling's strip splits where p_j reaches 1 (records at or above ε_T).
    strips = data(wd, "strips")
    rows = [i for i, m in enumerate(strips["method"]) if m == "Sampling"]
    assert strips["right"][rows[0]] == pytest.approx(np.mean(b < 0.7), abs=1e-12)
    wd.auto_threshold.value = True  # back to the mean
    assert wd.threshold.value == pytest.approx(b.mean())


def test_privacy_vector_choices_and_custom_groups_redraw_everything(teaching):
    wd = teaching_widget(teaching, data="age", privacy="normal")
    wd.privacy.value = "uniform"
    b = wd.budgets.array
    assert b.min() >= 0.01 and b.max() <= 0.1  # U(0.01, 0.1)
    assert data(wd, "vector")["right"][-1] == pytest.approx(b.max() * (1 + 1e-9))
    assert wd.threshold.max == pytest.approx(b.max())
    assert all(r.epsilon <= 0.1 for r in wd._last_releases)
    wd.privacy.value = "custom"
    assert wd.groups_box.layout.display is None
    for share, value in zip(wd.group_share, (1.0, 0.0, 0.0), strict=True):
        share.value = value  # only conservative users...
    wd.group_range[0].value = (0.05, 0.08)  # ...asking for 0.05-0.08
    b = wd.budgets.array
    assert b.min() >= 0.05 and b.max() <= 0.08
    expected = budgets_mixed(N, [(1.0, 0.05, 0.08)], np.random.default_rng(
        zlib.crc32(f"{wd.dataset}:custom".encode())))
    np.testing.assert_array_equal(b, expected)
    assert wd.outputs["minimum"]["charge"] == pytest.approx(b.min())


def test_group_sliders_refuse_bad_values_instead_of_clamping(teaching):
    wd = teaching_widget(teaching, data="age", privacy="custom")
    good = {"spent": releases(teaching, wd.dataset), "drawn": dict(data(wd, "vector"))}

    def refused(name: str) -> None:
        assert "Refused" in wd.message.value and name in wd.message.value
        assert releases(teaching, wd.dataset) == good["spent"]  # nothing ran or was charged
        assert dict(data(wd, "vector")) == good["drawn"]  # the plot shows the last good run

    wd.group_range[1].value = (0.5, 3.0)  # above the 1.0 ceiling: kept, not clamped to 1.0
    assert wd.group_range[1].value == (0.5, 3.0)
    refused("moderate: budgets")
    wd.group_range[1].value = (0.6, 0.4)  # low above high
    refused("moderate: budgets")
    wd.group_range[1].value = (0.2, 1.0)
    assert wd.message.value == ""
    good = {"spent": releases(teaching, wd.dataset), "drawn": dict(data(wd, "vector"))}
    wd.group_share[0].value = 1.5  # a share above 1: kept, refused
    assert wd.group_share[0].value == 1.5
    refused("conservative: share")
    wd.group_share[1].value = wd.group_share[2].value = 0.0
    refused("conservative: share")
    wd.group_share[0].value = 0.0  # no group at all
    refused("group shares")
    wd.group_share[2].value = 1.0
    assert wd.message.value == "" and len(releases(teaching, wd.dataset)) > len(good["spent"])
    assert np.all(wd.budgets.array == 1.0)  # only the liberal group, asking for 1.0
    # The group sliders are checked only while the custom vector is drawn.
    wd.group_range[0].value = (0.5, 3.0)
    wd.privacy.value = "normal"
    assert "Refused" not in wd.message.value


def test_rounds_cap_method_and_compare_reach_the_session(teaching):
    wd = teaching_widget(teaching, data="age", privacy="normal")
    ds = wd.dataset
    one = budget_used(wd.outputs["privacy_aware"]["enjoyed"], wd.budgets.array)
    wd.rounds.value = 2  # T-round partitioning uses the left-over budget (Li 2017, §5.2.3)
    two = budget_used(wd.outputs["privacy_aware"]["enjoyed"], wd.budgets.array)
    assert two > one and set(wd.outputs["privacy_aware"]["release_rounds"]) == {1, 2}
    assert "T = 2 rounds" in releases(teaching, ds)[-1][0]
    wd.no_cap.value = False
    wd.epsilon.value = 0.3
    assert all(np.max(out["enjoyed"]) <= 0.3 + 1e-12 for out in wd.outputs.values())
    assert all(r.epsilon <= 0.3 + 1e-12 for r in wd._last_releases)
    assert wd.threshold.max == pytest.approx(0.3)
    wd.compare.value = False
    wd.method.value = "threshold"
    assert list(wd.outputs) == ["threshold"]
    assert set(data(wd, "strips")["method"]) == {"Threshold"}
    # Threshold leaves the records below ε_T out: a grey block that enjoys nothing.
    assert "#d9d9d9" in data(wd, "strips")["colour"]
    enjoyed = wd.outputs["threshold"]["enjoyed"]
    assert np.all((enjoyed == 0) | np.isclose(enjoyed, wd.threshold.value))
    spent = teaching.spent(ds)
    wd.release_button.click()  # teaching: a rerun with fresh noise, charged again
    assert teaching.spent(ds) == pytest.approx(spent + wd.threshold.value)


def test_switching_to_the_grid_data_uses_box_queries_on_the_grid(teaching):
    wd = teaching_widget(teaching, data="age")
    wd.data.value = "census"
    assert wd.dataset == f"census_{N}" and wd.shape == (8, 2, 8, 16)
    assert len(data(wd, "private")["y"]) == 2048
    assert teaching.spent(f"census_{N}") > 0


# -- analyst ------------------------------------------------------------------------------------
def secret_values(n: int = N, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(50.0, 15.0, n), 0.0, 99.0) + 0.371 + np.arange(n) * 1e-7


@pytest.fixture
def analyst(tmp_path):
    b = budgets_mixed(N, [(0.54, 0.01, 0.2), (0.37, 0.2, 1.0), (0.09, 1.0, 1.0)],
                      np.random.default_rng(2))
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=5)
    s.add_dataset("survey", np.column_stack((secret_values(), b)), total_epsilon=2.0,
                  stand_in=personalized_stand_in(b, EDGES))
    yield s, b
    s.close()


def test_analyst_controls_drive_free_previews_only(analyst):
    s, b = analyst
    wd = PersonalizedWidget(s, "survey", bins=EDGES, debounce=0)
    np.testing.assert_array_equal(wd.budgets.array, b)  # read from the public stand-in
    assert wd.privacy.disabled and wd.data.disabled
    cost = s.cost("survey", "personalized_histogram", **wd.params)
    assert f"charge ε = {cost:.3g}" in wd.status.value and "PREVIEW" in wd.status.value
    # Moving ε_T re-runs Sampling's preview only; the others keep theirs.
    before = dict(wd.outputs)
    wd.threshold.value = 0.45
    assert wd.outputs["sampling"] is not before["sampling"]
    assert all(wd.outputs[m] is before[m] for m in ("minimum", "privacy_aware", "utility"))
    for change in (lambda: setattr(wd.threshold, "value", 0.5),
                   lambda: setattr(wd.rounds, "value", 3),
                   lambda: setattr(wd.method, "value", "privacy_aware"),
                   lambda: setattr(wd.no_cap, "value", False),
                   lambda: setattr(wd.epsilon, "value", 0.4),
                   lambda: setattr(wd.compare, "value", False)):
        change()
        assert s.spent("survey") == 0.0 and s.ledger("survey").spends == []
        assert s.meter.budget("survey")["spent"] == 0.0
    # The preview's reference is the stand-in's histogram, and its errors are on the stand-in.
    wd.compare.value = True
    stand_in = np.histogram(s.stand_in("survey")[:, 0], bins=EDGES)[0]
    np.testing.assert_array_equal(data(wd, "truth")["y"], stand_in)
    assert "on the public stand-in" in wd.quality.value
    assert set(wd.quality_values) == {"Minimum", "Sampling", "Privacy-aware", "Utility-based"}
    assert not leaked(secret_values())


def test_analyst_release_spends_once_and_draws_the_dp_output_only(analyst):
    s, b = analyst
    wd = PersonalizedWidget(s, "survey", bins=EDGES, method="sampling", threshold=0.3,
                            debounce=0)
    cost = s.cost("survey", "personalized_histogram", **wd.params)
    assert cost == pytest.approx(0.3)  # Sampling's largest per-record loss is ε_T
    release = wd.release()
    assert release.charged and s.spent("survey") == pytest.approx(0.3)
    assert s.meter.budget("survey")["spent"] == pytest.approx(0.3)
    assert "charged ε = 0.3" in wd.message.value
    np.testing.assert_array_equal(data(wd, "private")["y"], release.output["counts"])
    for name in ("truth", "levels", "current", "trail"):
        assert all(len(col) == 0 for col in data(wd, name).values()), name
    assert wd.quality_values == {} and "would need the data" in wd.quality.value
    # The public side is still drawn: the released enjoyed budgets, min(ε_j, ε_T).
    order = np.argsort(b, kind="stable")
    ranks = data(wd, "sorted")["rank"].astype(int)
    np.testing.assert_allclose(data(wd, "sorted")["enjoyed"], np.minimum(b, 0.3)[order][ranks])
    assert not leaked(secret_values())
    again = wd.release()
    assert not again.charged and s.spent("survey") == pytest.approx(0.3)
    assert "replayed" in wd.message.value
    # A slider move after the release is a preview again: nothing spent.
    wd.threshold.value = 0.6
    assert s.spent("survey") == pytest.approx(0.3) and "PREVIEW" in wd.status.value


def test_analyst_over_budget_and_a_wrong_privacy_vector_are_refused_uncharged(analyst):
    s, b = analyst
    wd = PersonalizedWidget(s, "survey", bins=EDGES, method="privacy_aware", debounce=0)
    wd.release()
    spent = s.spent("survey")
    wd.rounds.value = 3
    wd.release()
    wd.rounds.value = 4
    assert wd.release() is None  # 2.0 in all: the third is over budget
    assert "Over budget" in wd.message.value and s.spent("survey") < 2.0
    assert s.spent("survey") >= spent
    # A privacy vector above what the records asked for is refused, nothing charged.
    spent = s.spent("survey")
    high = PersonalizedWidget(s, "survey", bins=EDGES, budgets=np.minimum(b * 2, 1.0),
                              method="minimum", debounce=0)
    assert high.release() is None
    assert "never less" in high.message.value and s.spent("survey") == spent


def test_analyst_widget_needs_a_dataset_and_public_bins(analyst):
    s, _ = analyst
    with pytest.raises(ValueError, match="dataset="):
        PersonalizedWidget(s)
    with pytest.raises(ValueError, match="bins="):
        PersonalizedWidget(s, "survey")
    with pytest.raises(ValueError, match="method"):
        PersonalizedWidget(s, "survey", bins=EDGES, method="median")


# -- speed (issue 13): one sort and one plan per privacy vector ---------------------------------
def test_a_new_privacy_vector_is_sorted_once_and_planned_once_per_method(teaching, monkeypatch):
    from dpwidgets.engine import personalized as engine
    from dpwidgets.engine.personalized import histogram, logistic
    from dpwidgets.families.personalized import params as rp

    wd = teaching_widget(teaching, data="census", privacy="custom")
    sorts, plans = [], []
    sort, plan = rp._sort, engine.plan_releases
    monkeypatch.setattr(rp, "_sort", lambda b: sorts.append(1) or sort(b))
    for module in (engine, histogram, logistic):  # where plan_releases is looked up
        monkeypatch.setattr(module, "plan_releases",
                            lambda b, method, **kw: plans.append(method) or plan(b, method, **kw))
    wd.group_share[0].value = 0.4  # a new privacy vector: every mechanism reruns
    assert sorts == [1]
    assert sorted(plans) == sorted(["minimum", "sampling", "privacy_aware", "utility"])
    # The one sort draws the sorted-budget axis and cuts every partition of the plans.
    b = wd.budgets.array
    ranks = np.asarray(data(wd, "sorted")["rank"])
    np.testing.assert_array_equal(data(wd, "sorted")["asked"], np.sort(b)[ranks])
    np.testing.assert_array_equal(
        data(wd, "sorted")["enjoyed"],
        np.asarray(wd.plans["utility"].enjoyed)[np.argsort(b, kind="stable")][ranks])
    sorts.clear()
    plans.clear()
    wd.method.value = "privacy_aware"  # a redraw: the plans are kept
    wd.epsilon.value, wd.no_cap.value = 0.5, False  # a cap: new plans, the same sort
    assert sorts == [] and sorted(plans) == sorted(["minimum", "sampling", "privacy_aware",
                                                    "utility"])
