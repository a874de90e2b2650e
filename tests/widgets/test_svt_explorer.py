"""SVTExplorer, headless: set a control, assert on the plotted data and on the ledger."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine.audit import audit_svt
from dpwidgets.engine.svt import VARIANTS
from dpwidgets.families.svt import audits as audits_module
from dpwidgets.families.svt import widget as svt_explorer
from dpwidgets.families.svt.audits import Audits
from dpwidgets.families.svt.widget import audit_future, default_threshold
from dpwidgets.ui.base import fmt
from dpwidgets.widgets import SVTExplorer

from .conftest import leaked, secret_scores, zipf_scores


def data(explorer, name):
    return explorer.figure.sources[name].data


# -- teaching mode ---------------------------------------------------------------------------
def test_teaching_reruns_live_and_charges_the_teaching_ledger(teaching_session):
    e = SVTExplorer(teaching_session, epsilon=0.5, c=10, debounce=0)
    spent = teaching_session.spent("items")
    assert spent == pytest.approx(0.5)
    sources_before = dict(e.figure.sources)
    e.epsilon.value = 1.0
    assert teaching_session.spent("items") == pytest.approx(1.5)
    assert teaching_session.meter.budget("items")["spent"] == pytest.approx(1.5)
    # Redrawn by replacing data in the same sources, not by re-creating figures.
    assert all(e.figure.sources[k] is v for k, v in sources_before.items())
    scores = teaching_session.public_view("items")
    np.testing.assert_array_equal(data(e, "answers")["y"], scores)
    above = data(e, "above")
    assert 0 < len(above["x"]) <= 10
    np.testing.assert_array_equal(above["y"], scores[above["x"]])
    assert len(data(e, "true_top")["x"]) == 10


def test_teaching_c_moves_threshold_truth_and_split(teaching_session):
    e = SVTExplorer(teaching_session, epsilon=2.0, c=5, debounce=0)
    e.c.value = 40
    scores = teaching_session.public_view("items")
    assert e.threshold.value == default_threshold(scores, 40, e.threshold.step)
    assert len(data(e, "true_top")["x"]) == 40
    assert 0 < len(data(e, "above")["x"]) <= 40
    assert data(e, "optimum")["x"][0] == pytest.approx(1 / (1 + 40 ** (2 / 3)))  # monotonic
    e.show_truth.value = False
    assert len(data(e, "true_top")["x"]) == 0


def test_auto_threshold_echo_is_not_a_user_move(teaching_session):
    # Moving c sets the threshold from Python; the browser's snapped echo of it must neither
    # untick "threshold from c" nor rerun (and charge) a second time.
    e = SVTExplorer(teaching_session, epsilon=1.0, c=5, debounce=0)
    calls = []
    recompute = e._debouncer.callback
    e._debouncer.callback = lambda: (calls.append(1), recompute())
    e.c.value = 40
    t = e.threshold.value
    slider = e.threshold.slider
    snapped = slider.min + round((t - slider.min) / slider.step) * slider.step
    # The suggestion is on the slider's grid (what its readout shows is the value); the
    # browser's echo of it, with float dust from its step arithmetic, is still no move.
    assert snapped == pytest.approx(t, abs=1e-9 * abs(t))
    slider.set_state({"value": snapped * (1 + 1e-15)})
    assert e.threshold.value == t
    assert e.auto_threshold.value is True
    assert calls == [1]


def test_teaching_threshold_and_split_controls_reach_the_engine(teaching_session):
    e = SVTExplorer(teaching_session, epsilon=1.0, c=5, debounce=0)
    e.threshold.value = float(teaching_session.public_view("items").max()) + 1e4
    assert e.auto_threshold.value is False
    # No answer reaches a threshold 10^4 above the maximum (noise s.d. is far smaller).
    assert len(data(e, "above")["x"]) == 0
    assert len(data(e, "stop")["x"]) == 0  # examined everything, never stopped
    e.split.preset.value = "1:1"
    assert e.params["ratio"] == pytest.approx(1.0)
    assert data(e, "current")["x"][0] == pytest.approx(0.5)


def test_teaching_broken_variant_shows_banner_with_audited_loss(teaching_session):
    e = SVTExplorer(teaching_session, epsilon=0.5, c=3, debounce=0)
    assert "NOT PRIVATE" not in e.banner.value
    assert e.audits_ready(timeout=120)  # the audits run in the background (see below)
    e.variant.value = "roth2011"
    assert "NOT PRIVATE" in e.banner.value and "Claimed ε = 0.5" in e.banner.value
    assert "actual bound: ∞" in e.banner.value
    # The audited loss on Lyu, Su & Li 2017, §9.1's counterexample exceeds the claimed ε.
    audited = float(e.banner.value.split("audited privacy loss ≥ ")[1].split(" ")[0])
    assert audited > 0.5
    assert e.split.share.disabled  # roth2011 fixes its split
    e.variant.value = "lee_clifton"
    loss = VARIANTS["lee_clifton"].privacy_loss(0.5, 3, True)
    assert f"actual bound: {loss:.3g}" in e.banner.value


def test_a_precomputed_broken_variant_runs_no_audit_on_the_redraw(teaching_session,
                                                                   monkeypatch):
    """Building the widget queues the audit of every broken variant at the current ε grid
    point in the background; once in, switching to a broken variant shows that audit's number
    and runs no audit: the banner redraw takes well under 100 ms (a fresh audit takes up to
    0.8 s)."""
    e = SVTExplorer(teaching_session, epsilon=0.5, c=3, debounce=0)
    broken = [v for v in VARIANTS if not VARIANTS[v].private]
    assert e.audits_ready(timeout=120)
    results = {v: audit_future(v, 0.5).result() for v in broken}
    # The number shown is the audit itself (seeded, deterministic), not a stand-in value.
    assert results["roth2011"] == audit_svt(
        "roth2011", epsilon=0.5, rng=np.random.default_rng(20170801)).epsilon_lower

    def no_audit(*args, **kwargs):
        raise AssertionError("an audit ran on the redraw path")

    monkeypatch.setattr(svt_explorer, "audited_loss", no_audit)
    monkeypatch.setattr("dpwidgets.engine.audit.audit_svt", no_audit)
    for variant in broken:
        e.variant.value = variant
        start = time.perf_counter()
        e._update_banner()
        assert time.perf_counter() - start < 0.1
        assert "NOT PRIVATE" in e.banner.value and "running" not in e.banner.value
        if results[variant] is not None and results[variant] > 0.5:
            assert f"audited privacy loss ≥ {fmt(results[variant])} at ε = 0.5" in e.banner.value


def test_a_broken_variant_whose_audit_is_not_in_says_so_then_shows_it(teaching_session,
                                                                      monkeypatch):
    """Before its audit is in, the banner says the audit is running (the redraw does not wait);
    when the background worker delivers it, the banner shows that result."""
    gate = threading.Event()

    def slow_audit(variant, epsilon, progress=None):
        gate.wait(60)
        return 9.0

    # The explorer's own audits, on an executor of this test's: the fake results never reach
    # other tests.
    audits = Audits(ThreadPoolExecutor(max_workers=1), compute=slow_audit)
    e = SVTExplorer(teaching_session, epsilon=0.07, c=3, variant="roth2011", debounce=0,
                    audits=audits)
    assert "audit at ε = 0.07 on the source's counterexample running" in e.banner.value
    gate.set()
    assert audits.future("roth2011", 0.07).result(timeout=120) == 9.0
    deadline = time.monotonic() + 10
    while "running" in e.banner.value and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "audited privacy loss ≥ 9 at ε = 0.07" in e.banner.value
    assert e.audits_ready(timeout=120)


def test_a_running_audit_shows_its_progress_until_its_bar_is_full(teaching_session,
                                                                   monkeypatch,
                                                                   close_new_widgets):
    """While the audit the banner waits for runs, a bar under the banner shows its batches;
    it ends full (value == max) and is hidden when the number is in. The bar holds batch
    counts of the audit on the public counterexample only.

    At ε = 0.1 roth2011's counterexample is sized large enough for six batches (about 1.5 s
    alone), and the audit refutes the claim; a private cache and the explorer's own audits keep
    the audit fresh whatever other tests ran."""
    audits = Audits(ThreadPoolExecutor(max_workers=1))
    monkeypatch.setattr(audits_module, "_LOSSES", {})
    e = SVTExplorer(teaching_session, epsilon=0.1, c=3, variant="roth2011", debounce=0,
                    audits=audits)
    seen: list[tuple[float, float]] = []
    e.audit_progress.observe(
        lambda _c: seen.append((e.audit_progress.value, e.audit_progress.max)), names="value")
    assert "running" in e.banner.value
    assert e.audit_progress.layout.display != "none"
    assert e.audits_ready(timeout=300)
    deadline = time.monotonic() + 10
    while "running" in e.banner.value and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "audited privacy loss ≥" in e.banner.value
    job = audits.future("roth2011", 0.1)
    done, total = job.steps
    assert total is not None and total >= 2 and done == total
    # The bar moved through the batches and ended full, then was hidden.
    assert len(seen) >= 2 and seen[-1] == (total, total)
    assert [v for v, _ in seen] == sorted(v for v, _ in seen)
    assert e.audit_progress.value == e.audit_progress.max == total
    assert e.audit_progress.layout.display == "none"
    # Its state: the description and batch counts, nothing else.
    state = e.audit_progress.get_state()
    assert state["description"] == "audit" and state["min"] == 0
    # A private variant shows no bar.
    e.variant.value = "standard"
    assert e.audit_progress.layout.display == "none"


def test_an_analyst_explorer_never_shows_an_audit_bar(analyst_session, close_new_widgets):
    """Analyst mode offers no broken variant, hence runs no audit; its bar stays hidden and
    nothing of the data reaches any widget's state."""
    e = SVTExplorer(analyst_session, epsilon=0.5, c=3, debounce=0)
    assert e.audit_progress.layout.display == "none" and e.audit_progress.value == 0
    e.threshold.value = 500.0
    e.release()
    assert e.audit_progress.layout.display == "none"
    assert leaked(secret_scores(2000)) == []


def test_topc_panel_compares_svt_with_em(teaching_session):
    e = SVTExplorer(teaching_session, epsilon=5.0, c=10, debounce=0, topc_runs=2)
    rates = data(e, "rates")
    assert rates["method"] == ["SVT (this run)", "SVT-ReTr", "EM"]
    assert all(0.0 <= r <= 1.0 for r in rates["fnr"] + rates["ser"])


def test_rerun_button_draws_fresh_noise_and_charges(teaching_session):
    e = SVTExplorer(teaching_session, epsilon=0.5, c=5, debounce=0)
    e.release_button.click()
    assert teaching_session.spent("items") == pytest.approx(1.0)


def test_default_teaching_dataset_is_the_zipf_setup():
    s = Session(mode="teaching", seed=0)
    e = SVTExplorer(s, debounce=0)
    assert e.n_queries == 10_000 and s.datasets == ["zipf_items"]


# -- analyst mode ----------------------------------------------------------------------------
def test_analyst_controls_preview_for_free(analyst_session):
    e = SVTExplorer(analyst_session, epsilon=0.2, c=5, debounce=0)
    assert set(e.variant.options) == {
        (VARIANTS[v].title, v) for v in VARIANTS if VARIANTS[v].private
    }
    e.epsilon.value = 0.3
    e.c.value = 8
    assert analyst_session.spent("items") == 0.0
    assert "PREVIEW" in e.status.value
    np.testing.assert_array_equal(
        data(e, "answers")["y"], analyst_session.stand_in("items")
    )
    assert len(data(e, "true_top")["x"]) == 0


def test_analyst_release_charges_once_and_replay_is_free(analyst_session):
    e = SVTExplorer(analyst_session, epsilon=0.2, c=5, threshold=500.0, debounce=0)
    e.release_button.click()
    assert analyst_session.spent("items") == pytest.approx(0.2)
    assert analyst_session.meter.budget("items")["spent"] == pytest.approx(0.2)
    assert "charged ε = 0.2" in e.message.value
    # The release shows DP output only: no answers, the public threshold, ⊤ positions.
    assert len(data(e, "answers")["y"]) == 0
    assert set(data(e, "threshold")["y"]) == {e.threshold.value}
    above = data(e, "above")["x"]
    e.c.value = 6  # back to a preview ...
    e.c.value = 5
    assert "free replay" in e.status.value
    e.release_button.click()  # ... and the same parameters again: a replay
    assert analyst_session.spent("items") == pytest.approx(0.2)
    assert "nothing spent" in e.message.value
    np.testing.assert_array_equal(data(e, "above")["x"], above)


def test_analyst_over_budget_release_shows_message_and_charges_nothing(analyst_session):
    e = SVTExplorer(analyst_session, epsilon=0.8, c=5, threshold=500.0, debounce=0)
    e.release_button.click()
    e.epsilon.value = 0.5
    assert "refused" in e.epsilon_note.value  # guardrail before the click
    e.release_button.click()
    assert "Over budget" in e.message.value and "Nothing was charged" in e.message.value
    assert analyst_session.spent("items") == pytest.approx(0.8)
    assert "exceeded" in analyst_session.meter.message


def test_analyst_refuses_broken_variant_at_construction(analyst_session):
    with pytest.raises(ValueError, match="not available in analyst mode"):
        SVTExplorer(analyst_session, variant="roth2011")


def test_analyst_state_never_contains_raw_data(tmp_path):
    raw = secret_scores(2000)
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=3)
    s.add_dataset("items", raw, total_epsilon=1.0, stand_in=zipf_scores(2000, seed=3))
    e = SVTExplorer(s, epsilon=0.3, c=5, threshold=500.0, debounce=0)
    s.meter  # noqa: B018 - the meter's state is part of what crosses to the browser
    e.epsilon.value = 0.25
    assert leaked(raw) == []
    e.release_button.click()
    e.variant.value = "dpbook"
    e.release_button.click()
    assert s.spent("items") == pytest.approx(0.5)
    assert leaked(raw) == []
    # The check can fail: a teaching explorer on the same values does put them in the state.
    t = Session(mode="teaching")
    t.add_dataset("items", raw, total_epsilon=5.0)
    SVTExplorer(t, epsilon=0.3, c=5, debounce=0)
    assert len(leaked(raw)) > 0


# -- the release uses exactly what the user set; bad values are refused ------------------------
def test_typed_epsilon_is_charged_exactly_and_button_states_the_cost(analyst_session):
    e = SVTExplorer(analyst_session, epsilon=0.2, c=5, threshold=500.0, debounce=0)
    e.epsilon.text.value = 0.37  # typed into the box beside the log slider
    assert e.params["epsilon"] == 0.37
    # The title names the variant; the button does not repeat it.
    assert e.release_button.description == (
        "Release: SVT standard, ε=0.37, c=5, threshold=500, "
        f"ratio={e.split.ratio:.3g} (costs ε=0.37)")
    assert "charges ε = 0.37" in e.release_button.tooltip
    e.c.value = 7
    assert "c=7" in e.release_button.description
    release = e.release()
    assert release is e.last_release and not release.preview
    assert analyst_session.spent("items") == 0.37
    assert release.params["threshold"] == 500.0


def test_typed_threshold_far_outside_the_stand_in_range_is_not_clamped(analyst_session):
    e = SVTExplorer(analyst_session, epsilon=0.2, c=5, debounce=0)
    e.threshold.value = 5e6
    assert e.params["threshold"] == 5e6
    assert e.threshold.slider.max >= 5e6  # the slider widened; the value was kept
    release = e.release()
    assert release.params["threshold"] == 5e6
    assert len(release.output["above"]) == 0


def test_analyst_threshold_from_the_stand_in_is_never_released_silently(analyst_session):
    e = SVTExplorer(analyst_session, epsilon=0.2, c=5, debounce=0)
    assert not e.auto_threshold.value and e.auto_threshold.layout.display == "none"
    assert "stand-in" in e.threshold_note.value and "Type the threshold" in e.threshold_note.value
    assert e.release() is None
    assert "type the threshold" in e.message.value
    assert analyst_session.spent("items") == 0.0 and e.last_release is None
    e.threshold.value = 450.0
    assert e.release() is not None and analyst_session.spent("items") == pytest.approx(0.2)


@pytest.mark.parametrize("bad", [-1.0, 0.0, float("nan"), float("inf")])
def test_bad_epsilon_is_refused_not_clamped_and_the_widget_stays_alive(analyst_session, bad):
    e = SVTExplorer(analyst_session, epsilon=0.2, c=5, threshold=500.0, debounce=0)
    before = dict(data(e, "answers"))
    e.epsilon.value = bad
    assert e.epsilon.value != 0.001
    assert "ε: got" in e.message.value and "accepted: a number in (0, ∞)" in e.message.value
    assert e.release() is None
    assert analyst_session.spent("items") == 0.0
    assert "fix the parameters" in e.release_button.description
    np.testing.assert_array_equal(data(e, "answers")["y"], before["y"])  # nothing redrawn
    e.epsilon.value = 0.25  # and it keeps working
    assert "PREVIEW" in e.status.value and "Refused" not in e.message.value
    assert e.release().epsilon == 0.25


def test_bad_cutoff_is_refused(teaching_session):
    e = SVTExplorer(teaching_session, epsilon=0.5, c=5, debounce=0)
    spent = teaching_session.spent("items")
    e.c.value = 0
    assert e.c.value == 0 and "c (cutoff): got 0" in e.message.value
    assert teaching_session.spent("items") == spent


def test_analyst_sends_no_data_fact_and_shows_the_declared_one(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=3)
    s.add_dataset("items", secret_scores(500), total_epsilon=1.0,
                  stand_in=zipf_scores(500, seed=3))
    e = SVTExplorer(s, epsilon=0.2, c=5, threshold=500.0, monotonic=True, debounce=0)
    assert "monotonic" not in e.params
    assert e.monotonic.disabled and e.monotonic.value is False  # nothing declared
    assert e.release() is not None


def test_teaching_topc_panel_runs_and_scores_on_the_data(teaching_session):
    # High ε: EM and SVT-ReTr find the true top-c of the (public) data; scored against the
    # data, not against a stand-in, so their FNR is (close to) 0, never 1.
    e = SVTExplorer(teaching_session, epsilon=50.0, c=5, debounce=0, topc_runs=2)
    rates = dict(zip(data(e, "rates")["method"], data(e, "rates")["fnr"], strict=True))
    assert rates["EM"] <= 0.2 and rates["SVT-ReTr"] <= 0.2


def test_analyst_preview_labels_and_leaks_nothing_new(tmp_path):
    raw = secret_scores(1500, seed=9) + 0.0123  # no earlier (teaching) widget shows these
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=3)
    s.add_dataset("items", raw, total_epsilon=1.0, stand_in=zipf_scores(1500, seed=3))
    e = SVTExplorer(s, epsilon=0.3, c=5, debounce=0)
    assert "PREVIEW" in e._topc_plot.title.text
    e.epsilon.value = -1  # an error message
    e.release()  # refused: the threshold was not typed
    e.threshold.value = 1234.5
    e.release()
    e.epsilon.value = 5.0
    e.release()  # over budget: another message
    assert "Over budget" in e.message.value
    assert leaked(raw) == []


@pytest.mark.parametrize("mode", ["teaching", "analyst"])
@pytest.mark.parametrize("c", [1, 5, 40])
def test_the_threshold_readout_box_and_note_show_one_value(mode, c, tmp_path):
    """Seen: the slider's readout said 605 while the box and the suggestion said 604."""
    from dpwidgets.families.svt.widget import _step_format

    counts = zipf_scores(2000)  # public in this test; c = 40 gave 604 in a box, 605 beside it
    session = Session(mode=mode, **({"ledger": tmp_path / "l.sqlite"} if mode == "analyst" else {}))
    session.add_dataset("items", counts, total_epsilon=5.0, stand_in=counts)
    e = SVTExplorer(session, "items", epsilon=1.0, c=c, debounce=0)
    try:
        slider = e.threshold.slider
        on_grid = slider.min + round((e.threshold.value - slider.min) / slider.step) * slider.step
        readout = format(on_grid, _step_format(slider.step))
        assert float(readout) == e.threshold.value == e.threshold.text.value
        assert e.threshold.value == float(fmt(e.threshold.value).replace(",", ""))
        if mode == "analyst":
            assert f"{fmt(e.threshold.value)}.</span>" in e.threshold_note.value
    finally:
        e.close()
        session.close()
