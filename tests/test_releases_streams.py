"""The stream mechanisms of the session (dpwidgets/families/streams/spec.py): validation before any
charge, cost = ε, outputs that are DP output only, post-processing for free, real time."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine import streams as st
from dpwidgets.families.streams import spec as rs
from dpwidgets.families.streams.standins import multi_state_streams, wifi_stream
from dpwidgets.session import MECHANISMS

PEGASUS_KEYS = {"estimates", "smoothed", "noisy", "boundaries", "theta", "epsilon_parts",
                "guarantee", "smoother", "window", "threshold_share", "defaults"}


def secret_stream(n: int = 3000, seed: int = 21) -> np.ndarray:
    """Confidential counts whose values are recognisable: flat stretches at levels of about
    two to three million (so the Grouper forms groups), every count distinct from every other
    number the session or a release could produce by chance (noisy values are not integers)."""
    rng = np.random.default_rng(seed)
    levels = rng.integers(2_000_000, 3_000_000, size=n // 20 + 1)
    return (np.repeat(levels, 20)[:n] + rng.integers(0, 3, size=n)).astype(float)


def secret_states(n_states: int = 8, length: int = 400, seed: int = 22) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(1_000_000, 2_000_000, size=(n_states, length)).astype(float)


@pytest.fixture
def analyst(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=3)
    s.add_dataset("wifi", secret_stream(), total_epsilon=1.0,
                  stand_in=wifi_stream("Med_5", np.random.default_rng(0))[:3000])
    s.add_dataset("aps", secret_states(), total_epsilon=1.0,
                  stand_in=np.zeros((8, 400)))
    s.add_dataset("odd", secret_states(6, 50), total_epsilon=1.0, stand_in=np.zeros((6, 50)))
    yield s
    s.close()


def test_registered_mechanisms():
    assert {"pegasus", "laplace_stream", "hierarchical_pegasus"} <= set(MECHANISMS)
    assert MECHANISMS["hierarchical_pegasus"].table and not MECHANISMS["pegasus"].table


def test_every_bad_parameter_is_refused_before_any_charge(analyst):
    bad = [
        ("wifi", "pegasus", dict(epsilon=-0.1)),
        ("wifi", "pegasus", dict(epsilon=0.1, perturber_share=1.0)),
        ("wifi", "pegasus", dict(epsilon=0.1, perturber_share=0.0)),
        ("wifi", "pegasus", dict(epsilon=0.1, theta=-1.0)),
        ("wifi", "pegasus", dict(epsilon=0.1, theta=float("nan"))),
        ("wifi", "pegasus", dict(epsilon=0.1, smoother="median")),
        ("wifi", "pegasus", dict(epsilon=0.1, defaults="book")),
        ("wifi", "pegasus", dict(epsilon=0.1, threshold_share=1.0)),
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, method="hs_laplace", defaults="text")),
        ("wifi", "pegasus", dict(epsilon=0.1, w=16)),
        ("wifi", "laplace_stream", dict(epsilon=0.1, k=-1)),
        ("wifi", "hierarchical_pegasus", dict(epsilon=0.1)),  # a 1-D dataset
        ("aps", "pegasus", dict(epsilon=0.1)),  # a 2-D dataset
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, method="magic")),
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, epsilon_pr=0.1)),  # not < epsilon
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, method="hs_pegasus", beta=3.0)),
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, method="hs_laplace", smoother="median")),
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, smoother="mode")),
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, parents=[-1, 0, 0])),  # 2 leaves, 8 rows
        ("aps", "hierarchical_pegasus", dict(epsilon=0.1, parents=[1, 0, 0])),  # no root
        ("odd", "hierarchical_pegasus", dict(epsilon=0.1)),  # 6 states: no default binary tree
    ]
    for name, mechanism, params in bad:
        with pytest.raises(ValueError):
            analyst.release(name, mechanism, **params)
    with pytest.raises(ValueError, match="post-processing"):
        analyst.release("wifi", "pegasus", epsilon=0.1, smoother="median")
    assert all(analyst.spent(n) == 0.0 for n in analyst.datasets)
    assert all(analyst.ledger(n).spends == [] for n in analyst.datasets)


def test_non_count_data_fails_in_the_engine_without_a_free_answer(tmp_path):
    # Whether the data holds whole numbers is a fact about the data: in analyst mode the
    # question is charged and answered with a fixed message (no free oracle); in teaching mode
    # the data is public and the engine's own message comes through.
    from dpwidgets.engine.errors import ReleaseFailed

    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=1)
    s.add_dataset("frac", np.array([1.0, 2.5, 3.0]), total_epsilon=1.0,
                  stand_in=np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ReleaseFailed) as info:
        s.release("frac", "pegasus", epsilon=0.5)
    assert "whole" not in str(info.value) and "2.5" not in str(info.value)
    assert s.spent("frac") == pytest.approx(0.5)
    s.close()
    t = Session(mode="teaching")
    t.add_dataset("frac", np.array([1.0, 2.5, 3.0]), total_epsilon=1.0)
    with pytest.raises(ValueError, match="whole-number"):
        t.release("frac", "pegasus", epsilon=0.5)
    assert t.spent("frac") == 0.0


def test_pegasus_costs_epsilon_once_and_outputs_only_dp_values(analyst):
    # The text's defaults (Chen 2018, §5.6.1), one argument away.
    assert analyst.cost("wifi", "pegasus", epsilon=0.3, defaults="text") == pytest.approx(0.3)
    r = analyst.release("wifi", "pegasus", epsilon=0.3, perturber_share=0.7, defaults="text")
    assert r.charged and r.result is None and analyst.spent("wifi") == pytest.approx(0.3)
    assert r.label == "PeGaSus stream (ε_p:ε_g = 0.7:0.3, text defaults)"
    assert set(r.output) == PEGASUS_KEYS
    parts = r.output["epsilon_parts"]
    assert parts["perturber"] == pytest.approx(0.21) and parts["grouper"] == pytest.approx(0.09)
    assert sum(parts.values()) == pytest.approx(0.3, abs=1e-15)
    assert r.output["theta"] == pytest.approx(5 / 0.09)  # Chen 2018, §5.6.1: θ = 5/ε_g
    assert set(r.output["smoothed"]) == set(st.SMOOTHERS)
    np.testing.assert_array_equal(r.output["estimates"], r.output["smoothed"]["median"])
    b = r.output["boundaries"]
    assert b[0] == 0 and np.all(np.diff(b) > 0) and b[-1] < 3000
    # No true count in the output at its own step beyond what the noise explains: analyst
    # noise is discrete Laplace on a power-of-two grid (floating_point_safe), so a released
    # value equals the true count with probability P(Z = 0) < 2**-10 per step (expected
    # < 3 of 3,000; a leak would be ~all of them).
    counts = secret_stream()
    arrays = [r.output["noisy"], r.output["estimates"], *r.output["smoothed"].values()]
    for values in arrays:
        assert values.shape == (3000,) and np.mean(values == counts) < 0.01
    # The same parameters again: a free replay; other parameters: charged again.
    again = analyst.release("wifi", "pegasus", epsilon=0.3, perturber_share=0.7, defaults="text")
    assert not again.charged and analyst.spent("wifi") == pytest.approx(0.3)
    analyst.release("wifi", "laplace_stream", epsilon=0.2, k=3)
    assert analyst.spent("wifi") == pytest.approx(0.5)
    assert [s.label for s in analyst.ledger("wifi").spends][-1] == "BS_3 stream"


def test_pegasus_new_defaults_are_public_and_cost_the_same(analyst):
    r = analyst.release("wifi", "pegasus", epsilon=0.3)
    assert r.charged and analyst.spent("wifi") == pytest.approx(0.3)
    assert r.label == "PeGaSus stream (ε_p:ε_g = 0.95:0.05)"
    assert set(r.output) == PEGASUS_KEYS
    parts = r.output["epsilon_parts"]
    assert parts["perturber"] == pytest.approx(0.285) and parts["grouper"] == pytest.approx(0.015)
    assert r.output["theta"] == pytest.approx(160 / 0.015)
    assert r.output["threshold_share"] == pytest.approx(st.LYU_THRESHOLD_SHARE)
    assert r.output["defaults"] == "new" and r.output["smoother"] == "adaptive"
    np.testing.assert_array_equal(r.output["estimates"], r.output["smoothed"]["adaptive"])
    np.testing.assert_array_equal(rs.estimates(r.output), r.output["smoothed"]["adaptive"])
    assert r.output["window"].shape == (3000,) and r.output["window"].min() >= 1
    # Spelling the new defaults out is the same release: a free replay.
    again = analyst.release("wifi", "pegasus", epsilon=0.3, defaults="new", perturber_share=0.95,
                            threshold_share=st.LYU_THRESHOLD_SHARE)
    assert not again.charged and analyst.spent("wifi") == pytest.approx(0.3)


def test_over_budget_is_refused_without_a_charge(analyst):
    analyst.release("aps", "hierarchical_pegasus", epsilon=0.8)
    with pytest.raises(Exception, match="budget"):
        analyst.release("aps", "hierarchical_pegasus", epsilon=0.3, method="hs_laplace")
    assert analyst.spent("aps") == pytest.approx(0.8)


def test_hierarchical_release_outputs_and_cost(analyst):
    data = secret_states()
    h = st.Hierarchy.binary(8)
    for method, label in (("phs_pegasus", "PHS-PGS"), ("hs_pegasus", "HS-PGS"),
                          ("hs_laplace", "HS-LM")):
        before = analyst.spent("aps")
        r = analyst.release("aps", "hierarchical_pegasus", epsilon=0.2, method=method)
        assert analyst.spent("aps") - before == pytest.approx(0.2)
        assert r.label == f"{label} over 15 aggregated streams"
        assert r.output["estimates"].shape == (15, 400)
        assert sum(r.output["epsilon_parts"].values()) == pytest.approx(0.2)
        assert ("pruned" in r.output) == (method == "phs_pegasus")
        assert set(r.output) <= {"estimates", "pruned", "method", "epsilon_parts", "guarantee"}
        aggregates = h.aggregate(data)
        # Discrete grid noise: an estimate equals its true aggregate with probability
        # < 2**-10 (floating_point_safe); a leak would make most of them equal.
        assert np.mean(aggregates == r.output["estimates"]) < 0.01
    pruned = analyst.release("aps", "hierarchical_pegasus", epsilon=0.2, run=1).output["pruned"]
    # Counts of a million per state dwarf β = 2h/ε_pr = 8/0.02 = 400: nothing is pruned.
    assert pruned.dtype == bool and not pruned.any()


def test_post_processing_of_the_output_equals_the_engine_on_the_result():
    s = Session(mode="teaching", seed=5)
    counts = wifi_stream("High_5", np.random.default_rng(1))[:5000]
    s.add_dataset("h", counts, total_epsilon=10.0)
    r = s.release("h", "pegasus", epsilon=0.5)
    result = r.result  # teaching: the engine's full result is kept in the process
    rebuilt = rs.pegasus_result(r.output)
    np.testing.assert_array_equal(rebuilt.groups, result.groups)
    np.testing.assert_array_equal(rebuilt.group_starts, result.group_starts)
    for w in (1, 16, 300):
        np.testing.assert_allclose(rs.window_sums(r.output, w), st.window_sum_smoother(result, w))
        np.testing.assert_allclose(rs.window_sums(r.output, w, "estimates"),
                                   st.sliding_window_sums(result, w, method="estimates"))
        np.testing.assert_array_equal(rs.detections(r.output, "low_signal", w, 500.0),
                                      st.low_signal_events(result, w, 500.0))
    for smoother in st.SMOOTHERS:
        np.testing.assert_array_equal(rs.estimates(r.output, smoother), result.smoothed[smoother])
    np.testing.assert_array_equal(rs.detections(r.output, "jump_drop", 12, 200.0),
                                  st.jump_drop_events(result.estimates, 12, 200.0))
    stat = rs.event_statistic(r.output, "low_signal", 16)
    assert np.isnan(stat[:15]).all()
    np.testing.assert_allclose(stat[15:], st.window_sum_smoother(result, 16)[15:])
    with pytest.raises(ValueError):
        rs.window_sums(r.output, 16, method="magic")
    with pytest.raises(ValueError):
        rs.detections(r.output, "spike", 16, 1.0)
    # All of it was free: one release, one charge.
    assert s.spent("h") == pytest.approx(0.5) and len(s.ledger("h").spends) == 1


def test_each_estimate_uses_only_the_prefix_released_so_far():
    """Real time (Chen 2018, §5.2.2): the release of the first k steps equals the first k steps of the
    release of the whole stream, with the same seed (so revealing a whole release step by step
    shows what the online algorithm would have published)."""
    counts = wifi_stream("Med_5", np.random.default_rng(2))[:6000]
    prefix = 1234
    outs = []
    for data in (counts, counts[:prefix]):
        s = Session(mode="teaching", seed=11)
        s.add_dataset("m", data, total_epsilon=10.0)
        outs.append(s.release("m", "pegasus", epsilon=0.2).output)
    full, part = outs
    for key in ("noisy", "estimates"):
        np.testing.assert_array_equal(full[key][:prefix], part[key])
    for smoother in st.SMOOTHERS:
        np.testing.assert_array_equal(full["smoothed"][smoother][:prefix],
                                      part["smoothed"][smoother])
    np.testing.assert_array_equal(full["boundaries"][full["boundaries"] < prefix],
                                  part["boundaries"])


def test_a_release_survives_the_kernel_as_json(tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    counts = secret_stream(800)
    first = Session(mode="analyst", ledger=ledger, seed=1)
    first.add_dataset("wifi", counts, total_epsilon=1.0, stand_in=np.ones(800))
    r1 = first.release("wifi", "pegasus", epsilon=0.4)
    first.close()
    second = Session(mode="analyst", ledger=ledger, seed=2)
    second.add_dataset("wifi", counts, total_epsilon=None, stand_in=np.ones(800))
    r2 = second.release("wifi", "pegasus", epsilon=0.4)
    assert not r2.charged and second.spent("wifi") == pytest.approx(0.4)
    assert r2.output["boundaries"].dtype == np.int64
    for smoother in st.SMOOTHERS:
        np.testing.assert_array_equal(r2.output["smoothed"][smoother],
                                      r1.output["smoothed"][smoother])
    np.testing.assert_allclose(rs.window_sums(r2.output, 32), rs.window_sums(r1.output, 32))
    second.close()


def test_hierarchy_of_defaults_and_checks():
    assert rs.hierarchy_of(None, 16).height == 5
    with pytest.raises(ValueError, match="power of 2"):
        rs.hierarchy_of(None, 12)
    with pytest.raises(ValueError, match="leaf"):
        rs.hierarchy_of([-1, 0, 0], 3)
    h = rs.hierarchy_of([-1, 0, 0, 1, 1], 3)  # root, two children, one with two leaves
    assert h.leaves.tolist() == [2, 3, 4]


def test_multi_state_release_on_the_text_shape_prunes_the_sparse_nodes():
    """Multi_5-shaped data (many sparse access points): PHS-PGS prunes, and is more accurate
    than HS-LM (Chen 2018, Fig. 5.8). 16 states × 1000 steps, seed 4; the gap is more than 10× here
    (sparse leaves are released as 0 instead of Lap(h/ε) noise), so a 2× bound cannot flake."""
    data = multi_state_streams(np.random.default_rng(4), n_states=16, length=1000,
                               total=4_000)
    s = Session(mode="teaching", seed=4)
    s.add_dataset("multi", data, total_epsilon=10.0, stand_in=np.zeros_like(data))
    phs = s.release("multi", "hierarchical_pegasus", epsilon=0.1)
    lm = s.release("multi", "hierarchical_pegasus", epsilon=0.1, method="hs_laplace")
    truth = st.Hierarchy.binary(16).aggregate(data)
    assert phs.output["pruned"].mean() > 0.5
    assert (st.scaled_total_l1(truth, lm.output["estimates"])
            > 2 * st.scaled_total_l1(truth, phs.output["estimates"]))
    assert s.spent("multi") == pytest.approx(0.2)


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        a = a.astype(np.float64 if a.dtype.kind == "f" else np.int64)
        h.update(str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def test_seeded_teaching_releases_are_pinned():
    """The outputs the door returns for a seeded teaching session, recorded before the PeGaSus
    core was vectorised: the engine's refactor changed no released bit. Moved since on purpose:
    the average and James-Stein smoothers' last bits (a group's mean is its running sum over
    its size, no longer Welford's recursion) and PHS-PGS (below)."""
    s = Session(mode="teaching", seed=5)
    s.add_dataset("h", wifi_stream("High_5", np.random.default_rng(1))[:5000], total_epsilon=10.0)
    s.add_dataset("m", multi_state_streams(np.random.default_rng(2), n_states=8, length=600,
                                           total=4000), total_epsilon=10.0,
                  stand_in=np.zeros((8, 600)))
    pinned = {"pegasus new": "cff21d54ab1e5aa1", "pegasus text": "46589a8dc12c894a",
              # PHS-PGS moved when it stopped drawing the tests of pruned nodes' children
              # (same distribution: tests/engine/test_streams.py), and HS-PGS after it with
              # it (the session's generator is further along).
              "phs_pegasus": "a1ca99f864a9b4c9", "hs_pegasus": "4bf01942934dfa14"}
    for defaults in ("new", "text"):
        o = s.release("h", "pegasus", epsilon=0.5, defaults=defaults).output
        assert _digest(o["estimates"], o["noisy"], o["boundaries"], o["window"],
                       *[o["smoothed"][k] for k in sorted(o["smoothed"])]) == \
            pinned[f"pegasus {defaults}"]
    for method in ("phs_pegasus", "hs_pegasus"):
        o = s.release("m", "hierarchical_pegasus", epsilon=0.5, method=method).output
        assert _digest(o["estimates"], *([o["pruned"]] if "pruned" in o else [])) == \
            pinned[method]
