"""The synthetic-data mechanisms of the session (dpwidgets/families/synth/spec.py): validation
before any charge, declared domains in analyst mode, cost = ε charged once, outputs that are DP
output only, clamping instead of data-dependent errors, the public stand-in."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.engine import synth as sy
from dpwidgets.families.synth import params as synth_params
from dpwidgets.families.synth import spec as rs
from dpwidgets.families.synth.standins import synth_stand_in
from dpwidgets.session import MECHANISMS, PrivacyPolicyError

DOMAINS = {"a": (0, 199), "b": (0, 99), "c": (0, 49), "flag": (0, 1)}


def secret_table(n: int = 3000, seed: int = 11) -> pd.DataFrame:
    """A confidential table with Gaussian dependence (latent correlation 0.6) over DOMAINS."""
    rng = np.random.default_rng(seed)
    corr = np.full((3, 3), 0.6)
    np.fill_diagonal(corr, 1.0)
    z = rng.standard_normal((n, 3)) @ np.linalg.cholesky(corr).T
    u = 0.5 * (1 + np.tanh(z * 0.8))  # monotone: keeps the copula
    return pd.DataFrame({
        "a": np.floor(u[:, 0] * 200).astype(np.int64),
        "b": np.floor(u[:, 1] * 100).astype(np.int64),
        "c": np.floor(u[:, 2] * 50).astype(np.int64),
        "flag": (rng.random(n) < 0.3).astype(np.int64),
    })


def stand_in(n: int = 3000) -> pd.DataFrame:
    return synth_stand_in(n, DOMAINS, dtypes={c: "int64" for c in DOMAINS})


@pytest.fixture
def analyst(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=3)
    s.add_dataset("t", secret_table(), total_epsilon=2.0, stand_in=stand_in())
    s.add_dataset("plain", np.arange(50.0), total_epsilon=1.0)
    s.add_dataset("array", np.ones((30, 3)), total_epsilon=1.0, stand_in=np.zeros((30, 3)))
    yield s
    s.close()


def test_registered_mechanisms_run_on_frames():
    for name in ("dpcopula", "independent_synth", "laplace_histogram_synth", "peer_synth"):
        assert MECHANISMS[name] is rs.SYNTH_MECHANISMS[name]
        assert MECHANISMS[name].frame and MECHANISMS[name].table


def test_every_bad_parameter_is_refused_before_any_charge(analyst):
    bad = [
        ("t", "dpcopula", dict(epsilon=-1.0, domains=DOMAINS)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, method="magic")),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, k=0.0)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, publisher="nope")),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, publisher="ag")),  # 2-D only
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, hybrid_threshold=1)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, margin_fit="smooth")),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, n_rows=-1)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, n_rows=10**9)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, sample_size=1)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, colour="red")),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, attributes=["a"])),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, attributes=["a", "a"])),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, attributes="ab")),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, attributes=list("abcde"))),
        ("t", "dpcopula", dict(epsilon=0.5, domains={**DOMAINS, "a": (5, 2)})),
        ("t", "dpcopula", dict(epsilon=0.5, domains={**DOMAINS, "a": (0, 1.5)})),
        ("t", "dpcopula", dict(epsilon=0.5, domains={**DOMAINS, "a": [1, 1, 2]})),
        ("t", "dpcopula", dict(epsilon=0.5, domains={**DOMAINS, "a": "0-199"})),
        ("t", "dpcopula", dict(epsilon=0.5, domains={**DOMAINS, "a": 1})),
        ("t", "dpcopula", dict(epsilon=0.5, domains={"a": (0, 9), "b": (0, 9)})),  # 2 of 4
        ("t", "dpcopula", dict(epsilon=0.5, attributes=["a", "b"], domains={"a": (0, 9)})),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, max_partitions=0)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, hybrid_min_support=-1)),
        ("t", "dpcopula", dict(epsilon=0.5, domains=DOMAINS, sample_size="some")),
        ("t", "independent_synth", dict(epsilon=0.5, domains=DOMAINS, publisher="ag")),
        ("t", "laplace_histogram_synth", dict(epsilon=0.5, domains=DOMAINS, max_cells=10**5)),
        ("plain", "dpcopula", dict(epsilon=0.5)),  # 1-D data
        ("array", "dpcopula", dict(epsilon=0.5)),  # a table without named columns
    ]
    for name, mechanism, params in bad:
        with pytest.raises(ValueError):
            analyst.release(name, mechanism, **params)
    # Unknown attribute names are found against the public schema when the engine is called,
    # which the session does before charging.
    with pytest.raises(ValueError, match="not columns"):
        analyst.release("t", "dpcopula", epsilon=0.5, attributes=["a", "zz"],
                        domains={"a": (0, 199), "zz": (0, 3)})
    assert all(analyst.spent(n) == 0.0 for n in analyst.datasets)
    assert all(analyst.ledger(n).spends == [] for n in analyst.datasets)


def test_laplace_refusal_says_why_histograms_do_not_scale(analyst):
    with pytest.raises(ValueError, match="fits in memory"):
        analyst.release("t", "laplace_histogram_synth", epsilon=0.5, domains=DOMAINS,
                        max_cells=10**5)  # 200 * 100 * 50 * 2 = 2e6 cells
    assert analyst.spent("t") == 0.0


def test_analyst_mode_refuses_domains_read_from_the_data(analyst, tmp_path):
    with pytest.raises(PrivacyPolicyError, match="Nothing was charged"):
        analyst.release("t", "dpcopula", epsilon=0.5)
    assert analyst.spent("t") == 0.0
    assert not MECHANISMS["dpcopula"].private({"domains": None})
    # Teaching mode runs it, and says it is not DP.
    t = Session(mode="teaching", seed=1)
    t.add_dataset("t", secret_table(500), total_epsilon=1.0, stand_in=stand_in(500))
    with pytest.warns(sy.DomainFromDataWarning):
        r = t.release("t", "dpcopula", epsilon=0.5)
    assert "NOT DP" in r.output["guarantee"] and "NOT DP" in r.label


def test_release_is_the_engine_run_on_the_selected_columns(tmp_path):
    # Same generator state -> the session's release is exactly the engine's call (teaching
    # mode: an analyst session never lets a seed drive the noise of a release).
    frame = secret_table()
    s = Session(mode="teaching", rng=np.random.default_rng(5))
    s.add_dataset("t", frame, total_epsilon=2.0, stand_in=stand_in())
    r = s.release("t", "dpcopula", epsilon=1.0, attributes=["c", "a"], domains=DOMAINS,
                  hybrid_threshold=None)
    direct = sy.dpcopula(frame[["a", "c"]], 1.0, domains={"a": (0, 199), "c": (0, 49)},
                         hybrid_threshold=None, rng=np.random.default_rng(5))
    assert r.output["columns"] == ["a", "c"]  # the dataset's order
    pd.testing.assert_frame_equal(rs.synthetic_frame(r.output), direct.data)
    np.testing.assert_array_equal(r.output["correlation"], direct.correlation)
    assert r.output["epsilon_parts"] == dict(direct.epsilon_parts)
    assert r.epsilon == 1.0 and s.spent("t") == pytest.approx(1.0)
    assert "DPCopula-Kendall" in r.label and "2 attributes" in r.label
    again = s.release("t", "dpcopula", epsilon=1.0, attributes=["a", "c"], domains=DOMAINS,
                      hybrid_threshold=None)  # same release (attributes in another order)
    assert not again.charged and s.spent("t") == pytest.approx(1.0)


def test_outputs_are_dp_output_only(analyst):
    frame = secret_table()
    # hybrid_min_support=0: the text's rule, partition by flag whatever the DP size.
    r = analyst.release("t", "dpcopula", epsilon=1.0, domains=DOMAINS, hybrid_min_support=0)
    assert r.result is None
    out = r.output
    assert set(out) == {"columns", "dtypes", "data", "n_rows", "method", "epsilon",
                        "epsilon_parts", "guarantee", "neighbours", "margins", "domains",
                        "correlation", "correlation_columns", "partition_correlations",
                        "details"}
    assert set(out["details"]) <= set(rs._PUBLIC_DETAILS)
    assert out["method"] == "dpcopula-hybrid-kendall"  # flag has 2 values: the hybrid
    assert out["details"]["small_attributes"] == ["flag"]
    assert all(p["key"] in ([0], [1]) for p in out["partition_correlations"])
    # The release holds no true statistic of the table: no true margin, no true Kendall tau.
    for col, (lo, hi) in DOMAINS.items():
        true = np.bincount(frame[col] - lo, minlength=hi - lo + 1) / len(frame)
        assert not np.allclose(out["margins"][col], true)
        assert set(np.unique(out["data"][col])) <= set(range(lo, hi + 1))
    true_tau = sy.dependence_comparison(frame, frame).real_kendall.to_numpy()
    released = [np.asarray(v, dtype=float).ravel() for v in (
        *(p["correlation"] for p in out["partition_correlations"] if p["correlation"] is not None),
        out["details"].get("raw_correlation", []))]
    assert not np.isin(true_tau[np.triu_indices(4, 1)], np.concatenate(released)).any()
    # The synthetic size is the sum of the two noisy partition sizes (Lap(1/0.222) each, s.d.
    # about 9 together), not the true count: within 100 of it, but a DP number.
    assert abs(out["n_rows"] - len(frame)) < 100
    assert out["n_rows"] == int(np.sum(out["details"]["partition_rows"]))
    # The default: at eps = 0.5, eps * n~ / (2 partitions x 3 copula margins) is ~250 < 500
    # with 3,000 rows, so flag joins the copula (decided from the released noisy partition
    # sizes only) and one matrix covers all four.
    default = analyst.release("t", "dpcopula", epsilon=0.5, domains=DOMAINS).output
    assert set(default["details"]) <= set(rs._PUBLIC_DETAILS)
    assert default["details"]["partition_attributes"] == []
    assert default["details"]["counted_partitions"] == 2
    assert len(default["correlation_columns"]) == 4
    assert np.asarray(default["correlation"]).shape == (4, 4)
    assert abs(default["n_rows"] - len(frame)) < 100


def test_values_outside_a_declared_domain_are_clamped_not_reported(tmp_path):
    frame = secret_table(800)
    frame.loc[:4, "a"] = 977  # five records outside (0, 199)
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=2)
    s.add_dataset("t", frame, total_epsilon=1.0, stand_in=stand_in(800))
    r = s.release("t", "independent_synth", epsilon=0.5, domains=DOMAINS)
    assert r.output["data"]["a"].max() <= 199
    # 977 as a number of its own (not the digits inside a probability such as 0.00334977)
    leaked = re.compile(r"(?<![\d.])977(?!\d)")
    assert not leaked.search(repr(r.output)) and not leaked.search(r.label)
    np.testing.assert_array_equal(rs.clamp_to_domain(np.array([-3, 5, 977]), np.arange(200)),
                                  [0, 5, 199])
    np.testing.assert_array_equal(
        rs.clamp_to_domain(np.array([0.1, 2.4, 2.6, 9.0, -1.0]), np.array([0.0, 2.5, 5.0])),
        [0.0, 2.5, 2.5, 5.0, 0.0])


def test_domain_forms_are_distinct_in_the_cache_key(analyst):
    key = analyst.release_key
    base = dict(epsilon=0.5, attributes=["a", "b"])
    rng_form = key("t", "dpcopula", **base, domains={"a": (0, 5), "b": (0, 99)})
    assert rng_form == key("t", "dpcopula", **base, domains={"a": 6, "b": 100})
    assert rng_form == key("t", "dpcopula", **base, domains={"a": (0, 5), "b": (0, 99),
                                                            "c": (0, 1)})  # extra: ignored
    assert rng_form != key("t", "dpcopula", **base, domains={"a": [0, 5], "b": (0, 99)})
    np.testing.assert_array_equal(rs.domain_values((2, 5)), [2, 3, 4, 5])
    np.testing.assert_array_equal(rs.domain_values([5, 0.5]), [0.5, 5.0])


def test_baselines_and_the_hybrid_through_the_session(analyst):
    ind = analyst.release("t", "independent_synth", epsilon=0.4, domains=DOMAINS)
    assert ind.output["method"] == "independent" and ind.output["epsilon_parts"] == {
        "margins": 0.4}
    np.testing.assert_array_equal(ind.output["correlation"], np.eye(4))
    lap = analyst.release("t", "laplace_histogram_synth", epsilon=0.4,
                          attributes=["b", "c"], domains=DOMAINS)
    assert lap.output["details"]["cells"] == 100 * 50 and lap.output["correlation"] is None
    assert analyst.spent("t") == pytest.approx(0.8)
    labels = [s.label for s in analyst.ledger("t").spends]
    assert labels[0].startswith("independent DP margins") and "full-domain" in labels[1]


def test_peers_need_the_optional_extra(analyst, monkeypatch):
    if rs.peers_available():  # pragma: no cover - the extra is not installed in CI
        pytest.skip("opendp[mbi] is installed here")
    with pytest.raises(ValueError, match="opendp\\[mbi\\]"):
        analyst.release("t", "peer_synth", epsilon=0.5, domains=DOMAINS)
    assert analyst.spent("t") == 0.0
    # The plumbing, with a stand-in for OpenDP: validated, charged once, DP output only.
    monkeypatch.setattr(synth_params, "peers_available", lambda: True)

    def fake_peer(frame, epsilon, method="aim", domains=None, rng=None, *, n_rows=None):
        return sy.independent_synth(frame, epsilon, domains=domains, rng=rng, n_rows=n_rows)

    monkeypatch.setattr(sy, "peer_synth", fake_peer)
    r = analyst.release("t", "peer_synth", epsilon=0.5, method="aim", domains=DOMAINS)
    assert r.label.startswith("AIM (OpenDP mbi)") and analyst.spent("t") == pytest.approx(0.5)
    with pytest.raises(ValueError, match="'aim' or 'mst'"):
        analyst.release("t", "peer_synth", epsilon=0.5, method="pgm", domains=DOMAINS)


def test_a_release_survives_the_kernel(tmp_path):
    path = tmp_path / "ledger.sqlite"
    frame = secret_table(600)
    s1 = Session(mode="analyst", ledger=path, seed=1)
    s1.add_dataset("t", frame, total_epsilon=1.0, stand_in=stand_in(600))
    first = s1.release("t", "dpcopula", epsilon=0.5, domains=DOMAINS, method="mle")
    s1.close()
    s2 = Session(mode="analyst", ledger=path, seed=99)  # a new kernel
    s2.add_dataset("t", frame, total_epsilon=None, stand_in=stand_in(600))
    again = s2.release("t", "dpcopula", epsilon=0.5, domains=DOMAINS, method="mle")
    assert not again.charged and s2.spent("t") == pytest.approx(0.5)
    # Read back from the SQLite store: the same synthetic table, with the dataset's dtypes.
    pd.testing.assert_frame_equal(rs.synthetic_frame(again.output),
                                  rs.synthetic_frame(first.output))
    assert (rs.synthetic_frame(again.output).dtypes == frame.dtypes).all()
    s2.close()


def test_preview_runs_on_the_stand_in_for_free(analyst):
    result = analyst.preview("t", "dpcopula", epsilon=4.0, domains=DOMAINS, hybrid_threshold=None,
                             rng=np.random.default_rng(0))
    assert analyst.spent("t") == 0.0
    # The stand-in has (latent) equicorrelation 0.3, tau = (2/pi) asin(0.3) = 0.19; the secret
    # table has 0.6 (tau 0.41). The preview must see the stand-in's: the mean tau of the three
    # pairs a-b, a-c, b-c lies below the midpoint 0.30. With the text's sample size
    # t = 50 m(m-1)/eps2 the Laplace noise on each tau has scale C(m,2) 4/(t eps2) = 0.04 for
    # any eps2 (Li 2017, §3.2.2), so the mean of three has s.d. about 0.033 (plus tau's sampling s.d.
    # on t = 1350 rows, about 0.01): 0.30 is more than 3 s.d. away from 0.19.
    tau = sy.dependence_comparison(stand_in(), result.result.data).synthetic_kendall.to_numpy()
    pairs = tau[np.triu_indices(3, 1)]  # a-b, a-c, b-c (not the binary flag)
    assert 0.08 < pairs.mean() < 0.30, pairs


def test_stand_in_depends_on_public_facts_only():
    a = synth_stand_in(1000, DOMAINS, dtypes={c: "int64" for c in DOMAINS}, seed=4)
    b = synth_stand_in(1000, DOMAINS, dtypes={c: "int64" for c in DOMAINS}, seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns) == list(DOMAINS) and len(a) == 1000
    for col, (lo, hi) in DOMAINS.items():
        assert a[col].between(lo, hi).all() and a[col].dtype == np.int64
    # Uniform margins: every value of a 50-value domain is hit about 20 times in 1000 rows.
    assert np.bincount(a["c"], minlength=50).min() > 3
    floats = synth_stand_in(50, {"x": [0.5, 1.5, 7.25]})
    assert set(floats["x"]) <= {0.5, 1.5, 7.25}
    with pytest.raises(ValueError, match="correlation"):
        synth_stand_in(10, DOMAINS, correlation=-0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        synth_stand_in(10, {"x": (0, 1), "y": 3})


def test_kept_concordance_counts_are_of_public_tables_only(analyst, tmp_path, monkeypatch):
    """DPCopula keeps the concordance counts of a table it ran on (Kendall's tau of a later
    release then costs the rows left out of its sample) -- for public tables only: a preview
    (the stand-in) and a teaching run fill the memo, an analyst release on the confidential
    data (inside floating_point_safe) neither reads nor writes it."""
    memo = sy.ConcordanceMemo()
    monkeypatch.setattr(rs, "PUBLIC_CONCORDANCE", memo)
    params = dict(epsilon=0.5, domains=DOMAINS, attributes=["a", "b", "c"], hybrid_threshold=None)
    analyst.release("t", "dpcopula", **params)
    assert len(memo) == 0
    analyst.preview("t", "dpcopula", **params)
    assert len(memo) == 3  # the stand-in's three pairs
    before = {key: counts for key, (counts, _) in memo._pairs.items()}
    analyst.release("t", "dpcopula", **{**params, "epsilon": 0.25})
    assert len(memo) == 3 and all(memo._pairs[key][0] is counts
                                  for key, counts in before.items())
    teaching = Session(mode="teaching", seed=1)
    teaching.add_dataset("t", secret_table(), total_epsilon=5.0, stand_in=stand_in())
    teaching.release("t", "dpcopula", **params)
    assert len(memo) == 6  # and the public teaching table's
    teaching.close()


def test_selected_columns_keep_their_dtypes_and_listed_ranges_reach_the_engine_as_ranges():
    frame = pd.DataFrame({"a": np.array([0, 250, 7], dtype=np.int32),
                          "b": np.array([1.0, 2.0, 3.0]), "c": np.array([5, 6, 7], dtype=np.int32)})
    p = {"attributes": ("a", "c"), "domains": {"a": rs._canonical_domain((0, 199), "a"),
                                               "c": rs._canonical_domain(list(range(10)), "c")}}
    table, domains = rs._select(frame, p)
    assert table.dtypes.tolist() == [np.dtype(np.int32)] * 2
    assert table["a"].tolist() == [0, 199, 7]  # clamped, not reported
    assert domains == {"a": (0, 199), "c": (0, 9)}  # ten listed integers: the range 0..9
    assert rs._engine_domain(rs._canonical_domain([0, 2, 3], "x")) == [0, 2, 3]
    mixed = rs._select(frame, {"attributes": ("a", "b"),
                               "domains": {"a": rs._canonical_domain((0, 199), "a"),
                                           "b": rs._canonical_domain((0, 9), "b")}})[0]
    assert mixed.dtypes.tolist() == [np.dtype(np.int32), np.dtype(float)]
    assert rs.clamp_to_domain(np.array([3, 4]), np.arange(10)).tolist() == [3, 4]
