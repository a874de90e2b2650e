"""Tests for dpwidgets.engine.synth: DPCopula (Kendall, MLE, hybrid), baselines, evaluation.

Statistical tests state their seed, table size and why the tolerance is what it is. The
main table is Li 2017 §3.3.4's setup shrunk to m = 4: n = 50,000 records, domain 1000, Gaussian
margins, Gaussian dependence with latent correlation 0.8 (Kendall's tau 0.59), epsilon = 1,
k = 8. Those tests use the "identity" publisher (Laplace per margin cell, whose error is
known in closed form); one end-to-end test runs the text's default "efpa".
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from dpwidgets.engine import synth as S
from dpwidgets.engine.histograms import PUBLISHERS, publish
from dpwidgets.families.synth.standins import gaussian_dependence_table, interaction_table

RHO = 0.8
TAU = 2 / math.pi * math.asin(RHO)  # 0.590, Kendall's tau of the latent Gaussian


@pytest.fixture(scope="module")
def gauss():
    """n=50,000, m=4, domain 1000, Gaussian margins, latent correlation 0.8 (seed 0)."""
    return gaussian_dependence_table(
        n=50_000, m=4, domain=1000, correlation=RHO, rng=np.random.default_rng(0)
    )


@pytest.fixture(scope="module")
def mixed():
    """A table mixing dtypes and domain forms, with two small attributes (seed 1)."""
    rng = np.random.default_rng(1)
    n = 6000
    g = rng.integers(0, 2, n)  # small, binary
    r = rng.integers(0, 3, n)  # small, 3 values
    z = rng.standard_normal(n)
    x = np.clip(np.round(40 + 20 * g + 10 * r + 8 * z), 0, 99).astype(np.int32)
    y = np.clip(np.round(x + 5 * rng.standard_normal(n)), 0, 99).astype(float)
    w = rng.choice([0.5, 1.5, 2.5, 10.0], size=n)
    frame = pd.DataFrame({"g": g.astype(bool), "r": r.astype(np.uint8), "x": x, "y": y, "w": w})
    domains = {"g": [False, True], "r": 3, "x": (0, 99), "y": (0, 99), "w": [0.5, 1.5, 2.5, 10.0]}
    return frame, domains


def mean_abs_offdiag(a: np.ndarray, b: np.ndarray) -> float:
    i, j = np.triu_indices(a.shape[0], 1)
    return float(np.mean(np.abs(a[i, j] - b[i, j])))


# ---------------------------------------------------------------------------------------------
# Validation before any randomness
# ---------------------------------------------------------------------------------------------


def _frame(n=50):
    rng = np.random.default_rng(5)
    return pd.DataFrame({"a": rng.integers(0, 20, n), "b": rng.integers(0, 30, n)})


INVALID = [
    ("epsilon", dict(epsilon=0.0)),
    ("epsilon", dict(epsilon=-1.0)),
    ("epsilon", dict(epsilon=float("nan"))),
    ("k must", dict(k=0.0)),
    ("k must", dict(k=-2.0)),
    ("method", dict(method="spearman")),
    ("publisher", dict(publisher="nope")),
    ("publisher must release 1-D", dict(publisher="ag")),
    ("hybrid_threshold", dict(hybrid_threshold=1)),
    ("n_rows", dict(n_rows=-3)),
    ("sample_size", dict(sample_size=1)),
    ("sample_size", dict(sample_size="txt")),
    ("tie_correction", dict(tie_correction="yes")),
    ("margin_fit", dict(margin_fit="round")),
    ("at least 2 columns", dict(frame=_frame()[["a"]])),
    ("numeric", dict(frame=_frame().assign(b=list("xy") * 25))),
    ("numeric", dict(frame=_frame().assign(b=pd.Categorical(["u", "v"] * 25)))),
    ("missing", dict(frame=_frame().assign(b=[np.nan] + [1.0] * 49))),
    ("outside its declared domain", dict(domains={"a": (0, 9), "b": (0, 29)})),
    ("outside its declared domain", dict(domains={"a": (0, 19), "b": list(range(29))})),
    ("at least 2 values", dict(domains={"a": (0, 19), "b": (3, 3)})),
    ("at least 2 values", dict(frame=_frame().assign(b=7), domains=None)),
    ("declare exactly", dict(domains={"a": (0, 19)})),
    ("declare exactly", dict(domains={"a": (0, 19), "b": (0, 29), "c": (0, 1)})),
    ("needs integers", dict(domains={"a": (0.0, 19.0), "b": (0, 29)})),
    ("dtype", dict(domains={"a": [0.5, *range(20)], "b": (0, 29)})),
    ("max_partitions", dict(max_partitions=0)),
    ("hybrid_min_support", dict(hybrid_min_support=-1.0)),
    ("hybrid_min_support", dict(hybrid_min_support=float("inf"))),
]


@pytest.mark.parametrize(
    ("match", "kwargs"), INVALID, ids=[f"{m}-{i}" for i, (m, _) in enumerate(INVALID)]
)
def test_dpcopula_validates_before_any_randomness(match, kwargs):
    args = {
        "frame": _frame(),
        "epsilon": 1.0,
        "domains": {"a": (0, 19), "b": (0, 29)},
        "publisher": "identity",
    }
    args.update(kwargs)
    rng = np.random.default_rng(123)
    before = rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", S.DomainFromDataWarning)
        with pytest.raises(ValueError, match=match):
            S.dpcopula(rng=rng, **args)
    assert rng.bit_generator.state == before


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="rng"):
        S.dpcopula(_frame(), 1.0, domains={"a": (0, 19), "b": (0, 29)}, rng=42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("func", "kwargs"),
    [
        (S.independent_synth, {}),
        (S.laplace_histogram_synth, {}),
        (S.peer_synth, {}),
    ],
)
def test_baselines_validate_before_any_randomness(func, kwargs):
    rng = np.random.default_rng(7)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="outside its declared domain"):
        func(_frame(), 1.0, domains={"a": (0, 5), "b": (0, 29)}, rng=rng, **kwargs)
    with pytest.raises(ValueError, match="epsilon"):
        func(_frame(), 0.0, domains={"a": (0, 19), "b": (0, 29)}, rng=rng, **kwargs)
    assert rng.bit_generator.state == before


def test_laplace_histogram_refuses_a_domain_that_does_not_fit():
    frame = pd.DataFrame({"a": [0, 1], "b": [0, 1], "c": [0, 1]})
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="max_cells"):
        S.laplace_histogram_synth(frame, 1.0, {c: (0, 999) for c in "abc"}, rng)
    assert rng.bit_generator.state == before


def test_domains_read_from_data_warn_and_say_not_private():
    with pytest.warns(S.DomainFromDataWarning):
        res = S.dpcopula(_frame(), 1.0, publisher="identity", rng=np.random.default_rng(0))
    assert "NOT DP" in res.guarantee
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a declared domain must not warn
        res = S.dpcopula(
            _frame(),
            1.0,
            domains={"a": (0, 19), "b": (0, 29)},
            publisher="identity",
            rng=np.random.default_rng(0),
        )
    assert "NOT DP" not in res.guarantee and "add/remove" in res.guarantee


# ---------------------------------------------------------------------------------------------
# Budget accounting
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 2.7])
@pytest.mark.parametrize("k", [0.5, 1.0, 3.3, 8.0])
def test_epsilon_parts_sum_to_epsilon_exactly(epsilon, k, mixed):
    frame, domains = mixed
    plain = S.dpcopula(
        frame[["x", "y"]],
        epsilon,
        k=k,
        domains={"x": (0, 99), "y": (0, 99)},
        publisher="identity",
        rng=np.random.default_rng(0),
    )
    assert math.fsum(plain.epsilon_parts.values()) == epsilon == plain.epsilon
    assert set(plain.epsilon_parts) == {"margins", "dependence"}
    assert math.isclose(plain.epsilon_parts["margins"] / plain.epsilon_parts["dependence"], k)
    hybrid = S.dpcopula(
        frame, epsilon, k=k, domains=domains, publisher="identity", max_partitions=24,
        rng=np.random.default_rng(0),
    )
    parts = hybrid.epsilon_parts
    assert math.fsum(parts.values()) == epsilon
    # eps1 = k eps/(k+1) split evenly over the 5 attributes; the 3 small ones (g, r, w: 24
    # partitions, the text's Alg. 6) go to the partition sizes, the 2 large ones are margins
    # in the partitions.
    eps1 = epsilon * k / (k + 1)
    assert math.isclose(parts["partition_sizes"], eps1 * 3 / 5)
    assert math.isclose(parts["margins"], eps1 * 2 / 5)
    assert math.isclose(parts["dependence"], epsilon / (k + 1))
    # The default cap (8 partitions) keeps g and r (6); w joins the copula's margins.
    capped = S.dpcopula(frame, epsilon, k=k, domains=domains, publisher="identity",
                        rng=np.random.default_rng(0)).epsilon_parts
    assert math.fsum(capped.values()) == epsilon
    assert math.isclose(capped["partition_sizes"], eps1 * 2 / 5)
    assert math.isclose(capped["margins"], eps1 * 3 / 5)


def test_independent_and_histogram_baselines_spend_epsilon(mixed):
    frame, domains = mixed
    ind = S.independent_synth(frame, 0.7, domains, "identity", rng=np.random.default_rng(0))
    assert dict(ind.epsilon_parts) == {"margins": 0.7}
    assert np.array_equal(ind.correlation, np.eye(5))
    lh = S.laplace_histogram_synth(frame, 0.7, domains, np.random.default_rng(0))
    assert math.fsum(lh.epsilon_parts.values()) == 0.7
    assert lh.details["cells"] == 2 * 3 * 100 * 100 * 4


# ---------------------------------------------------------------------------------------------
# Output schema and reproducibility
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["kendall", "mle"])
@pytest.mark.parametrize("hybrid_threshold", [None, 10])
def test_columns_dtypes_and_domains_are_preserved(mixed, method, hybrid_threshold):
    frame, domains = mixed
    res = S.dpcopula(
        frame,
        1.0,
        method=method,
        domains=domains,
        publisher="identity",
        hybrid_threshold=hybrid_threshold,
        rng=np.random.default_rng(2),
    )
    out = res.data
    assert list(out.columns) == list(frame.columns)
    assert list(out.dtypes) == list(frame.dtypes)
    for col in frame.columns:
        allowed = res.domains[col]
        assert np.isin(out[col].to_numpy(), allowed).all(), col
        assert res.margins[col].shape == allowed.shape
        assert math.isclose(res.margins[col].sum(), 1.0) and res.margins[col].min() >= 0
    # The default size is the DP record count: within a few hundred of 6000 at epsilon 1.
    assert abs(res.n_rows - len(frame)) < 600
    assert (
        S.dpcopula(
            frame,
            1.0,
            method=method,
            domains=domains,
            publisher="identity",
            hybrid_threshold=hybrid_threshold,
            n_rows=777,
            rng=np.random.default_rng(2),
        ).n_rows
        == 777
    )


def test_hybrid_is_chosen_by_domain_size(mixed):
    frame, domains = mixed
    # hybrid_min_support=0: partition whatever the DP size (the text's rule).
    res = S.dpcopula(
        frame, 1.0, domains=domains, publisher="identity", max_partitions=24,
        hybrid_min_support=0, rng=np.random.default_rng(0),
    )
    assert res.method == "dpcopula-hybrid-kendall" and res.correlation is None
    assert res.details["small_attributes"] == ("g", "r", "w")  # 2, 3 and 4 values
    assert res.correlation_columns == ("x", "y")
    # Default cap of 8 partitions: smallest domains first, g (2) x r (3) = 6; w (4) would
    # make 24, so it is modelled by the copula with x and y.
    capped = S.dpcopula(frame, 1.0, domains=domains, publisher="identity",
                        hybrid_min_support=0, rng=np.random.default_rng(0))
    assert capped.details["small_attributes"] == ("g", "r")
    assert capped.details["small_in_copula"] == ("w",)
    assert capped.details["n_partitions"] == 6
    assert set(capped.data.columns) == set(frame.columns)
    assert S._hybrid_attributes([2, 100, 5, 3, 2], 10, 8) == ([0, 4], 4)  # 2 x 2, then 3: 12
    assert S._hybrid_attributes([2, 100], None, 8) == ([], 1)
    assert S._hybrid_attributes([9, 100], 10, 8) == ([], 1)  # 9 partitions exceed the cap
    plain = S.dpcopula(
        frame,
        1.0,
        domains=domains,
        publisher="identity",
        hybrid_threshold=None,
        rng=np.random.default_rng(0),
    )
    assert plain.method == "dpcopula-kendall" and plain.correlation.shape == (5, 5)
    assert plain.correlation_columns == tuple(frame.columns)


@pytest.mark.parametrize("method", ["kendall", "mle"])
def test_seeded_runs_are_reproducible(mixed, method):
    frame, domains = mixed
    runs = [
        S.dpcopula(
            frame,
            1.0,
            method=method,
            domains=domains,
            publisher="identity",
            hybrid_threshold=None,
            rng=np.random.default_rng(seed),
        )
        for seed in (11, 11, 12)
    ]
    pd.testing.assert_frame_equal(runs[0].data, runs[1].data)
    assert np.array_equal(runs[0].correlation, runs[1].correlation)
    assert not runs[0].data.equals(runs[2].data)
    hybrid = [
        S.dpcopula(
            frame,
            1.0,
            method=method,
            domains=domains,
            publisher="identity",
            rng=np.random.default_rng(3),
        ).data
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(*hybrid)


def test_result_is_read_only(gauss):
    res = S.dpcopula(
        gauss.frame, 1.0, domains=gauss.domains, publisher="identity", rng=np.random.default_rng(0)
    )
    with pytest.raises(ValueError):
        res.correlation[0, 1] = 0.0
    with pytest.raises(TypeError):
        res.epsilon_parts["margins"] = 0.0  # type: ignore[index]


# ---------------------------------------------------------------------------------------------
# Statistical behaviour on the Gaussian-dependence table (n=50k, m=4, domain 1000, rho=0.8)
# ---------------------------------------------------------------------------------------------


def test_dp_kendall_noise_is_calibrated_and_the_correlation_accurate(gauss):
    """epsilon 1, k 8: eps2 = 1/9, t = 50*4*3*9 = 5400 rows, tau noise Lap(6*(4/5400)*9) =
    Lap(0.04). Over 20 releases (seeds 100-119, 120 coefficients) the mean |tau~ - tau| must
    be 0.04 (E|Lap(b)| = b; s.d. of the mean 0.0037, plus ~0.006 of sampling): we require
    (0.03, 0.05), so a noise scale off by 25% either way -- too little noise is a privacy
    bug -- fails. On P = sin(pi tau/2) (slope ~0.94 at tau = 0.59) the median over releases
    of the mean |P~ - 0.8| is ~0.04; required < 0.06. Dropping the sine (P = tau = 0.59)
    fails both."""
    truth = gauss.details["correlation"]
    codes = gauss.frame.to_numpy()
    tau_data = S._concordance_sums(codes) / (len(codes) * (len(codes) - 1) / 2)
    tau_err, p_err = [], []
    for seed in range(100, 120):
        res = S.dpcopula(
            gauss.frame,
            1.0,
            domains=gauss.domains,
            publisher="identity",
            hybrid_threshold=None,
            n_rows=0,
            sample_size="text",  # the text's rule (the default takes at least 20,000 rows)
            rng=np.random.default_rng(seed),
        )
        assert res.details["sample_size"] == 5400 == res.details["sample_rule"]
        assert math.isclose(res.details["kendall_noise_scale"], 6 * 4 / 5400 * 9)
        tau_err.append(np.abs(res.details["noisy_tau"][np.triu_indices(4, 1)] - tau_data))
        p_err.append(mean_abs_offdiag(res.correlation, truth))
    assert 0.03 < np.mean(tau_err) < 0.05
    assert np.median(p_err) < 0.06


def test_kendall_without_noise_recovers_the_copula_correlation(gauss):
    """epsilon 1e6 makes the Laplace noise ~1e-6; with t = 50,000 rows (sample_size) the
    estimate is sin(pi tau_a / 2) of the data: within 0.02 of 0.8 (sampling s.d. of tau
    ~0.003, ties of the 1000-value codes lower tau_a by < 0.003)."""
    res = S.dpcopula(
        gauss.frame,
        1e6,
        domains=gauss.domains,
        publisher="identity",
        hybrid_threshold=None,
        sample_size=10**9,
        rng=np.random.default_rng(0),
    )
    assert res.details["sample_size"] == 50_000
    assert np.max(np.abs(res.correlation - gauss.details["correlation"])) < 0.02


def test_mle_correlation_is_accurate(gauss):
    """DP MLE with l = 2000 blocks of ~25 records: noise Lap(6 * 2 / (2000/9)) = Lap(0.054);
    the normal-scores estimate of a block of 25 is biased low by ~0.02 at rho = 0.8. Mean
    |error| < 0.1 fails with probability < 1% for a correct implementation (seed 22)."""
    res = S.dpcopula(
        gauss.frame,
        1.0,
        method="mle",
        domains=gauss.domains,
        publisher="identity",
        hybrid_threshold=None,
        mle_partitions=2000,
        rng=np.random.default_rng(22),
    )
    assert res.details["mle_blocks"] == 2000
    assert math.isclose(res.details["mle_noise_scale"], 6 * 2 / (2000 / 9))
    assert mean_abs_offdiag(res.correlation, gauss.details["correlation"]) < 0.1
    exact = S.dpcopula(
        gauss.frame,
        1e6,
        method="mle",
        domains=gauss.domains,
        publisher="identity",
        hybrid_threshold=None,
        mle_partitions=500,
        rng=np.random.default_rng(0),
    )
    # Blocks of ~100: the normal-scores estimator is within 0.03 of the latent 0.8.
    assert np.max(np.abs(exact.correlation - gauss.details["correlation"])) < 0.03


def test_default_mle_blocks_follow_the_text(gauss):
    """l = ceil(C(m,2) / (0.025 eps2)) = ceil(6 * 9 / 0.025) = 2160 <= 50,000 / 20."""
    res = S.dpcopula(
        gauss.frame,
        1.0,
        method="mle",
        domains=gauss.domains,
        publisher="identity",
        hybrid_threshold=None,
        rng=np.random.default_rng(0),
    )
    assert res.details["mle_blocks"] == 2160
    assert math.isclose(res.details["mle_noise_scale"], 0.05)


@pytest.fixture(scope="module")
def releases(gauss):
    """DPCopula-Kendall and the independent baseline at epsilon 1 (identity margins)."""
    cop = S.dpcopula(
        gauss.frame, 1.0, domains=gauss.domains, publisher="identity", rng=np.random.default_rng(31)
    )
    ind = S.independent_synth(
        gauss.frame, 1.0, gauss.domains, "identity", rng=np.random.default_rng(31)
    )
    return cop, ind


def test_dependence_survives_and_beats_the_independent_baseline(gauss, releases):
    """Real pairwise tau-b is ~0.59. DPCopula's synthetic tau must be within 0.1 on average
    (the P noise above plus sampling, ~0.03 expected); the independent baseline's is ~0,
    so its mean |difference| is ~0.59 (> 0.5 with certainty at n = 50k)."""
    cop, ind = releases
    d_cop = S.dependence_comparison(gauss.frame, cop.data, rng=np.random.default_rng(0))
    d_ind = S.dependence_comparison(gauss.frame, ind.data, rng=np.random.default_rng(0))
    real_tau = d_cop.real_kendall.to_numpy()[np.triu_indices(4, 1)]
    assert np.all(np.abs(real_tau - TAU) < 0.02)
    assert d_cop.mean_abs_kendall_difference < 0.1
    assert d_ind.mean_abs_kendall_difference > 0.5
    assert d_cop.mean_abs_kendall_difference < d_ind.mean_abs_kendall_difference / 4


def test_range_queries_beat_the_independent_baseline(gauss, releases):
    """1000 random 4-D range queries (seed 41), sanity bound s = 1 (Li 2017 Table 3.2). With
    tau = 0.59 an independent sample puts mass where the real table has none; measured mean
    relative error ~0.4-1 for DPCopula vs ~25 for the baseline. Required: at most half."""
    cop, ind = releases
    queries = S.random_range_queries(gauss.domains, 1000, np.random.default_rng(41))
    e_cop = S.range_count_error(gauss.frame, cop.data, queries, sanity_bound=1.0)
    e_ind = S.range_count_error(gauss.frame, ind.data, queries, sanity_bound=1.0)
    assert e_cop.mean_relative < 0.5 * e_ind.mean_relative
    assert e_cop.median_relative < e_ind.median_relative


def test_margins_are_close_to_the_real_ones(gauss, releases):
    """Identity margins with eps1/m = 0.22 per 1000-cell margin: the clipped noise adds
    ~2.25 phantom records per near-empty cell; per-column TVD stays below 0.1 (measured
    ~0.06) for both methods."""
    cop, ind = releases
    assert S.marginal_comparison(gauss.frame, cop.data).max() < 0.1
    assert S.marginal_comparison(gauss.frame, ind.data).max() < 0.1


@pytest.mark.skipif("efpa" not in PUBLISHERS, reason="the EFPA publisher is not registered yet")
@pytest.mark.parametrize("publisher", [None, "efpa"])
def test_default_and_text_publishers_end_to_end(gauss, publisher):
    """The defaults (DAWA margins) and the text's configuration (EFPA margins), k = 8,
    Kendall, on the same table, seed 51: the dependence survives (mean |tau diff| < 0.1 as
    above) and margins are usable (TVD < 0.15; on a smooth Gaussian margin both publishers'
    errors are close to the identity's)."""
    options = {} if publisher is None else {"publisher": publisher}
    res = S.dpcopula(gauss.frame, 1.0, domains=gauss.domains, rng=np.random.default_rng(51),
                     **options)
    assert res.details["publisher"] == (publisher or S.DEFAULT_PUBLISHER)
    d = S.dependence_comparison(gauss.frame, res.data, rng=np.random.default_rng(0))
    assert d.mean_abs_kendall_difference < 0.1
    assert S.marginal_comparison(gauss.frame, res.data).max() < 0.15


def test_spiky_margin_default_publisher_and_efpa_fallback():
    """A 2-column table, 30,000 rows, seed 5: ``gain`` is 0 for 90% of the rows (a point mass
    EFPA's Fourier series cannot hold) and correlated with ``age``. At eps = 1, release seed
    1: the default (DAWA) and EFPA with ``fallback="identity"`` keep the spike within 2
    points of its true share (measured: DAWA 0.002 off, gain TVD 0.014, seeds 0-5 <= 0.003
    off; the fallback 0.002 off, TVD 0.03); the
    text's EFPA smears it (0.19 off, TVD 0.25; seeds 0-5: 0.02 to 0.19 off). The options
    used are recorded in the result."""
    rng = np.random.default_rng(5)
    z = rng.multivariate_normal([0, 0], [[1, 0.6], [0.6, 1]], size=30_000)
    age = np.clip(np.round(40 + 12 * z[:, 0]), 17, 90).astype(np.int64)
    gain = np.where(z[:, 1] > 1.28, np.clip(np.round(np.exp(2 * z[:, 1]) * 50), 1, 999), 0)
    frame = pd.DataFrame({"age": age, "gain": gain.astype(np.int64)})
    domains = {"age": (17, 90), "gain": (0, 999)}
    share = float(np.mean(frame.gain == 0))
    default = S.dpcopula(frame, 1.0, domains=domains, rng=np.random.default_rng(1))
    fallback = S.dpcopula(frame, 1.0, domains=domains, publisher="efpa",
                          publisher_options={"fallback": "identity"},
                          rng=np.random.default_rng(1))
    text = S.dpcopula(frame, 1.0, domains=domains, publisher="efpa",
                      rng=np.random.default_rng(1))
    assert default.details["publisher_options"] == {} == text.details["publisher_options"]
    assert fallback.details["publisher_options"] == {"fallback": "identity"}
    gain_tvd = {}
    for name, res in (("default", default), ("fallback", fallback), ("text", text)):
        gain_tvd[name] = S.marginal_comparison(frame, res.data)["gain"]
        off = abs(float(np.mean(res.data.gain == 0)) - share)
        assert (off > 0.1) if name == "text" else (off < 0.02), (name, off)
    assert max(gain_tvd["default"], gain_tvd["fallback"]) < gain_tvd["text"] / 2
    # The dependence survives the 90% atom with the defaults (tie-corrected, calibrated
    # tau): |tau_b(synthetic) - tau_b(real)| measured 0.006-0.015 over seeds 0-5; with the
    # text's tau-a (tie_correction=False) 0.18-0.19.
    for corrected, bound in ((True, 0.04), (False, None)):
        res = S.dpcopula(frame, 1.0, domains=domains, tie_correction=corrected,
                         rng=np.random.default_rng(1))
        gap = S.dependence_comparison(frame, res.data, rng=np.random.default_rng(0))
        if bound is None:
            assert gap.mean_abs_kendall_difference > 0.1
        else:
            assert gap.mean_abs_kendall_difference < bound
            assert res.details["tie_calibrated_pairs"] == 1


@pytest.fixture(scope="module")
def discrete():
    """40,000 rows, seed 9: a latent Gaussian (correlations 0.6, 0.5, 0.4) cut into a
    balanced binary x, a 4-level y and an unbalanced (69/31) binary w."""
    rng = np.random.default_rng(9)
    z = rng.multivariate_normal([0, 0, 0], [[1, 0.6, 0.5], [0.6, 1, 0.4], [0.5, 0.4, 1]], 40_000)
    frame = pd.DataFrame({"x": (z[:, 0] > 0).astype(np.int64),
                          "y": np.digitize(z[:, 1], [-1, 0, 1]).astype(np.int64),
                          "w": (z[:, 2] > 0.5).astype(np.int64)})
    return frame, {"x": 2, "y": 4, "w": 2}


@pytest.mark.parametrize("epsilon", [1.0, 50.0])
def test_tie_correction_keeps_the_dependence_of_discrete_attributes(discrete, epsilon):
    """Release seeds 0-4, hybrid off (so the copula models the small attributes). With the
    tie correction the largest |tau_b(synthetic) - tau_b(real)| over the 3 pairs is at most
    0.06 in every release (measured 0.012-0.041); with the text's tau-a it is at least 0.12
    in every one (measured 0.166-0.183): ties count 0 in tau-a and the copula's correlation
    comes out too small."""
    frame, domains = discrete
    for seed in range(5):
        gaps = []
        for corrected in (True, False):
            res = S.dpcopula(frame, epsilon, domains=domains, hybrid_threshold=None,
                             tie_correction=corrected, rng=np.random.default_rng(seed))
            assert res.details["tie_correction"] is corrected
            d = S.dependence_comparison(frame, res.data, rng=np.random.default_rng(0))
            gaps.append(d.max_abs_kendall_difference)
        assert gaps[0] <= 0.06 and gaps[1] >= 0.12


def test_tie_corrected_tau_is_tau_b():
    """On the data itself (no noise), tau-a corrected with the exact margins is scipy's
    tau-b up to the finite-sample term of the tie counts (< 1e-3 at 2,000 rows)."""
    rng = np.random.default_rng(4)
    codes = np.stack([rng.integers(0, 3, 2000), rng.integers(0, 2, 2000)], axis=1)
    codes[:, 1] = np.where(rng.random(2000) < 0.5, codes[:, 0] > 0, codes[:, 1])
    tau_a = S._concordance_sums(codes)[0] / (2000 * 1999 / 2)
    probs = [np.bincount(codes[:, j]) / 2000 for j in range(2)]
    tau = S._tie_corrected_tau(np.array([[1.0, tau_a], [tau_a, 1.0]]), probs)
    from scipy import stats
    assert tau[0, 1] == pytest.approx(stats.kendalltau(codes[:, 0], codes[:, 1]).statistic,
                                      abs=1e-3)
    one_valued = S._tie_corrected_tau(np.array([[1.0, 0.3], [0.3, 1.0]]),
                                      [np.array([1.0, 0.0]), np.array([0.5, 0.5])])
    assert one_valued[0, 1] == 0.0 and one_valued[0, 0] == 1.0


def test_tau_b_from_a_contingency_table_is_scipys():
    from scipy import stats

    rng = np.random.default_rng(3)
    for k1, k2 in [(2, 2), (3, 5), (30, 7)]:
        x = rng.integers(0, k1, 500)
        y = (x + rng.integers(0, k2, 500)) % k2
        table = np.bincount(x * k2 + y, minlength=k1 * k2).reshape(k1, k2)
        assert S._tau_b_from_table(table) == pytest.approx(stats.kendalltau(x, y).statistic,
                                                           abs=1e-12)
    assert S._tau_b_from_table(np.array([[5.0, 7.0]])) == 0.0  # one row value: all tied


@pytest.mark.parametrize(("cut", "rho"), [(1.28, 0.6), (1.28, -0.3), (0.0, 0.8)])
def test_calibration_recovers_the_latent_correlation_of_tied_pairs(cut, rho):
    """A latent bivariate normal (200,000 draws, seed 6) cut into a binary x (P(x = 1) =
    10% for cut 1.28, 50% for 0) and a 40-level y. From the exact margins and the data's
    tau-b, the calibration returns the latent rho within 0.02 (its own simulation has
    30,000 rows); sin(pi tau_b / 2) is off by more than 0.05 for the 90/10 attribute
    (measured: 0.19 at rho = 0.6, 0.08 at rho = -0.3)."""
    from scipy import stats

    rng = np.random.default_rng(6)
    z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], 200_000)
    x = (z[:, 0] > cut).astype(np.int64)
    y = np.clip(np.floor((z[:, 1] + 4) * 5), 0, 39).astype(np.int64)
    probs = [np.bincount(x, minlength=2) / len(x), np.bincount(y, minlength=40) / len(y)]
    tau_b = stats.kendalltau(x, y).statistic
    tau = np.array([[1.0, tau_b], [tau_b, 1.0]])
    corr, calibrated = S._calibrate_tied_pairs(tau, probs, S._correlation_from_tau(tau))
    assert calibrated == 1
    assert corr[0, 1] == pytest.approx(rho, abs=0.02)
    if cut > 0:
        assert abs(np.sin(np.pi * tau_b / 2) - rho) > 0.05


def test_tie_correction_is_skipped_where_it_would_amplify_noise():
    """The correction divides tau-a's noise by sqrt(u_j u_k) too. A pair is corrected only
    if the estimated bias |tau_a| (1 - sqrt(u_j u_k)) exceeds the noise s.d. and the
    corrected noise stays within TIE_NOISE_LIMIT: a rare binary attribute (u = 0.1) with
    noise s.d. 0.05 is left alone, a balanced one with a strong tau-a is corrected, and a
    balanced one with a tau-a inside the noise is left alone."""
    probs = [np.array([0.95, 0.05]), np.array([0.5, 0.5]), np.full(100, 0.01)]
    tau_a = np.array([[1.0, 0.02, 0.1], [0.02, 1.0, 0.3], [0.1, 0.3, 1.0]])
    mask = S._tie_correction_mask(tau_a, probs, noise_sd=0.05)
    assert not mask[0, 1] and not mask[0, 2]  # u = 0.095: noise 0.05 / 0.31 > 0.1
    assert mask[1, 2]  # u 0.5 and 0.99: noise 0.07; bias 0.3 (1 - 0.70) = 0.09 > 0.05
    weak = S._tie_correction_mask(np.where(np.eye(3) > 0, 1.0, 0.04), probs, noise_sd=0.05)
    assert not weak[1, 2]  # bias 0.04 (1 - 0.70) = 0.012, inside the noise
    corrected = S._tie_corrected_tau(tau_a, probs, mask)
    assert corrected[0, 1] == tau_a[0, 1] and corrected[1, 2] > tau_a[1, 2]


def test_kendall_sample_has_a_floor_of_rows():
    """The text's rule gives 50*2*1/(50/3) = 6 rows for m = 2 at eps = 50 (k = 2); the
    default computes tau on KENDALL_MIN_ROWS = 20,000 (or all rows if fewer), and an explicit
    sample_size is the rule itself."""
    rng = np.random.default_rng(1)
    z = rng.multivariate_normal([0, 0], [[1, 0.5], [0.5, 1]], 30_000)
    frame = pd.DataFrame({"a": np.clip(np.round(50 + 15 * z[:, 0]), 0, 99).astype(np.int64),
                          "b": np.clip(np.round(50 + 15 * z[:, 1]), 0, 99).astype(np.int64)})
    res = S.dpcopula(frame, 50.0, k=2.0, domains={"a": 100, "b": 100}, sample_size="floor",
                     rng=np.random.default_rng(0))
    assert res.details["sample_rule"] == S.KENDALL_MIN_ROWS == 20_000
    assert res.details["sample_size"] == 20_000
    small = S.dpcopula(frame.iloc[:5000], 50.0, k=2.0, domains={"a": 100, "b": 100},
                       sample_size="floor", rng=np.random.default_rng(0))
    assert 4900 < small.details["sample_size"] < 5100  # the DP count of the rows
    for rule in ("text", S.kendall_sample_size(2, 50.0 / 3)):
        text = S.dpcopula(frame, 50.0, k=2.0, domains={"a": 100, "b": 100}, sample_size=rule,
                          rng=np.random.default_rng(0))
        assert text.details["sample_size"] == 6


# ---------------------------------------------------------------------------------------------
# Kendall's tau: the concordance sums and the sensitivity bound
# ---------------------------------------------------------------------------------------------


def _brute_sums(codes):
    n, m = codes.shape
    out = []
    for j, k in zip(*np.triu_indices(m, 1), strict=True):
        sj = np.sign(codes[:, j, None] - codes[None, :, j])
        sk = np.sign(codes[:, k, None] - codes[None, :, k])
        out.append((sj * sk).sum() / 2)
    return np.array(out)


@pytest.mark.parametrize("seed", range(5))
def test_concordance_sums_match_the_definition(seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 6, size=(120, 4))  # many ties
    codes[:, 3] = 2  # a constant column: every pair tied
    assert np.array_equal(S._concordance_sums(codes), _brute_sums(codes))


def test_kendall_statistic_sensitivity_is_4_over_t():
    """Lemma 3.2.1 as used here: for t rows, replacing one changes S by at most 2(t-1), so
    S/C(t,2) moves by at most 4/t; adding one to n < t rows moves it by at most 2/t. Checked
    on random neighbours, including the worst case (a record concordant with all others
    replaced by one discordant with all)."""
    rng = np.random.default_rng(9)
    t = 40
    pairs = t * (t - 1) / 2
    for _ in range(200):
        data = rng.integers(0, 10, size=(t, 2))
        other = data.copy()
        other[rng.integers(t)] = rng.integers(0, 10, size=2)
        diff = np.abs(S._concordance_sums(data) - S._concordance_sums(other)) / pairs
        assert diff.max() <= 4 / t + 1e-12
        assert (
            np.abs(S._concordance_sums(data[1:]) - S._concordance_sums(data)).max() / pairs
            <= 2 / t + 1e-12
        )
    line = np.column_stack([np.arange(1, t + 1), np.arange(1, t + 1)])
    worst = line.copy()
    worst[0] = [t + 1, 0]  # was below everything on both axes, now above on one, below on the other
    assert np.abs(S._concordance_sums(worst) - S._concordance_sums(line)) / pairs == pytest.approx(
        4 / t
    )


def test_kendall_sample_size_is_the_text_rule():
    assert S.kendall_sample_size(8, 1 / 9) == 50 * 8 * 7 * 9 == 25_200
    assert S.kendall_sample_size(2, 0.5) == 200
    with pytest.raises(ValueError, match="m"):
        S.kendall_sample_size(1, 1.0)


# ---------------------------------------------------------------------------------------------
# Positive-definite repair
# ---------------------------------------------------------------------------------------------


def test_repair_makes_a_non_pd_matrix_a_correlation_matrix():
    bad = np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]])
    assert np.linalg.eigvalsh(bad).min() < 0
    fixed, repaired = S.repair_correlation(bad)
    assert repaired
    assert np.allclose(fixed, fixed.T) and np.allclose(np.diag(fixed), 1.0)
    assert np.linalg.eigvalsh(fixed).min() > 0
    np.linalg.cholesky(fixed)
    # The repair keeps the signs and stays near the input (it only removes the negative part).
    assert np.all(np.sign(fixed) == np.sign(bad))
    assert np.max(np.abs(fixed - bad)) < 0.5


def test_repair_leaves_a_pd_matrix_alone():
    good = np.array([[1.0, 0.3], [0.3, 1.0]])
    fixed, repaired = S.repair_correlation(good)
    assert not repaired and np.array_equal(fixed, good)
    with pytest.raises(ValueError, match="square"):
        S.repair_correlation(np.ones((2, 3)))


def test_dpcopula_repairs_a_noisy_non_pd_estimate(gauss):
    """At epsilon 0.02 the tau noise (scale ~2) clips most coefficients to +-1: the raw
    6 x 6... here 4 x 4 matrix of +-1 entries is not PD (seed 0), and the release must be."""
    res = S.dpcopula(
        gauss.frame,
        0.02,
        domains=gauss.domains,
        publisher="identity",
        hybrid_threshold=None,
        rng=np.random.default_rng(0),
    )
    assert res.details["min_eigenvalue_before_repair"] < 0 and res.details["repaired"]
    assert np.linalg.eigvalsh(res.correlation).min() > 0
    assert np.allclose(np.diag(res.correlation), 1.0)


# ---------------------------------------------------------------------------------------------
# Hybrid (Li 2017 Alg. 6)
# ---------------------------------------------------------------------------------------------


def test_hybrid_keeps_the_partition_structure():
    """x's mean moves by +25 with g and +12 per step of r (n = 20,000, seed 8; 6 partitions).
    The hybrid runs a copula per (g, r) cell and keeps the 6 conditional means within 4
    (measured 1.2-2.5 over seeds 0-3: the margins' noise at eps1/4 per partition pulls a
    little mass towards the middle); the plain copula, which sees g and r only through rank
    correlations, misses them by 4.4-6.4. The partition sizes (Lap(1/eps_p), eps_p = eps1/2)
    reproduce the (g, r) frequencies within 0.01 TVD."""
    rng = np.random.default_rng(8)
    n = 20_000
    g, r = rng.integers(0, 2, n), rng.integers(0, 3, n)
    x = np.clip(np.round(30 + 25 * g + 12 * r + 6 * rng.standard_normal(n)), 0, 99).astype(int)
    y = np.clip(np.round(x + 6 * rng.standard_normal(n)), 0, 99).astype(int)
    frame = pd.DataFrame({"g": g, "r": r, "x": x, "y": y})
    domains = {"g": 2, "r": 3, "x": (0, 99), "y": (0, 99)}
    real = frame.groupby(["g", "r"])["x"].mean()
    hyb = S.dpcopula(
        frame, 1.0, domains=domains, publisher="identity", rng=np.random.default_rng(0)
    )
    plain = S.dpcopula(
        frame,
        1.0,
        domains=domains,
        publisher="identity",
        hybrid_threshold=None,
        rng=np.random.default_rng(0),
    )
    assert hyb.details["n_partitions"] == 6
    assert hyb.details["partition_rows"].sum() == hyb.n_rows
    assert len(hyb.details["partition_correlations"]) == 6
    err_hyb = np.abs(hyb.data.groupby(["g", "r"])["x"].mean() - real).max()
    err_plain = np.abs(plain.data.groupby(["g", "r"])["x"].mean() - real).max()
    assert err_hyb < 4 and err_hyb < err_plain
    freq_real = frame.groupby(["g", "r"]).size() / n
    freq_syn = hyb.data.groupby(["g", "r"]).size() / hyb.n_rows
    assert 0.5 * np.abs(freq_real - freq_syn).sum() < 0.01


def test_hybrid_partitions_only_where_the_dp_size_supports_it(mixed):
    """6,000 rows; g has 2 values, r 3: P = 6 partitions. The rule eps * n~ / P >= 2,500:
    ~1,000 at eps = 1 and ~500 at eps = 0.5 (no partition), ~3,000 at eps = 3 (both). The
    Laplace noise on n~ (scale 1/eps_p over 6 cells, ~10 rows) is far from every boundary."""
    frame, domains = mixed
    assert S._supported_partition([0, 1], [2, 3, 100], 3.0, 6000.0, 2500.0) == [0, 1]
    assert S._supported_partition([0, 1], [2, 3, 100], 2.4, 6000.0, 2500.0) == []
    assert S._supported_partition([0, 1], [2, 3, 100], 2.5, 6000.0, 2500.0) == [0, 1]
    expected = {1.0: (), 0.5: (), 3.0: ("g", "r")}
    for eps, keep in expected.items():
        res = S.dpcopula(frame, eps, domains=domains, publisher="identity",
                         rng=np.random.default_rng(0))
        d = res.details
        assert res.method == "dpcopula-hybrid-kendall"
        assert d["small_attributes"] == ("g", "r") and d["counted_partitions"] == 6
        assert d["partition_attributes"] == keep
        assert d["n_partitions"] == math.prod(len(domains[c]) if isinstance(domains[c], list)
                                              else domains[c] for c in keep)
        assert d["partition_support"] == pytest.approx(eps * d["noisy_n"] / d["n_partitions"])
        assert res.correlation_columns == tuple(c for c in frame.columns if c not in keep)
        assert math.fsum(res.epsilon_parts.values()) == eps
        assert set(res.data.columns) == set(frame.columns)
        assert abs(res.n_rows - 6000) < 100
        if not keep:  # one copula over every column, tau on all rows the DP count allows
            assert res.correlation.shape == (5, 5)
            assert d["sample_size"] == round(d["noisy_n"])
        else:
            assert res.correlation is None
    # The budget split does not depend on the decision (it is made after the counts).
    low, high = (S.dpcopula(frame, e, domains=domains, publisher="identity",
                            rng=np.random.default_rng(0)) for e in (0.5, 3.0))
    assert {k: v / 0.5 for k, v in low.epsilon_parts.items()} == pytest.approx(
        {k: v / 3.0 for k, v in high.epsilon_parts.items()})


def test_kendall_runs_on_all_rows_when_the_copula_is_unpartitioned():
    """The default t is the DP record count when the copula models the whole table (30,000
    rows here; the count's noise is ~Lap(m/eps1) per margin, a few rows), and the floor rule
    inside the hybrid's partitions."""
    rng = np.random.default_rng(1)
    z = rng.multivariate_normal([0, 0], [[1, 0.5], [0.5, 1]], 30_000)
    frame = pd.DataFrame({"a": np.clip(np.round(50 + 15 * z[:, 0]), 0, 99).astype(np.int64),
                          "b": np.clip(np.round(50 + 15 * z[:, 1]), 0, 99).astype(np.int64)})
    res = S.dpcopula(frame, 50.0, k=2.0, domains={"a": 100, "b": 100},
                     rng=np.random.default_rng(0))
    assert res.details["sample_size"] == round(res.details["noisy_n"])
    assert abs(res.details["sample_size"] - 30_000) < 10
    assert res.details["kendall_noise_scale"] == pytest.approx(
        4.0 / res.details["sample_size"] / (50.0 / 3))
    same = S.dpcopula(frame, 50.0, k=2.0, domains={"a": 100, "b": 100}, sample_size="all",
                      rng=np.random.default_rng(0))
    assert same.details["sample_size"] == res.details["sample_size"]
    codes = frame.to_numpy()
    for all_rows, rule in ((False, S.KENDALL_MIN_ROWS), (True, 30_000)):
        *_, info = S._copula_release(
            codes, [100, 100], 1.0, 1.0, method="kendall", publisher="identity", options={},
            fit="project", n_est=30_000.0, n_out=10, sample_size=None, mle_partitions=None,
            rng=np.random.default_rng(0), all_rows=all_rows)
        assert info["sample_rule"] == rule == info["sample_size"]


def test_hybrid_with_only_small_attributes_is_a_noisy_histogram():
    rng = np.random.default_rng(6)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 3000), "b": rng.integers(0, 4, 3000)})
    res = S.dpcopula(
        frame, 1.0, domains={"a": 3, "b": 4}, publisher="identity", max_partitions=12,
        rng=np.random.default_rng(0),
    )
    assert res.epsilon_parts["partition_sizes"] == 1.0
    assert res.epsilon_parts["margins"] == 0.0 and res.epsilon_parts["dependence"] == 0.0
    assert abs(res.n_rows - 3000) < 100  # 12 cells of Lap(1)


# ---------------------------------------------------------------------------------------------
# Margins: clipping vs projection
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_projection_is_the_l2_projection(seed):
    x = np.random.default_rng(seed).normal(0, 5, size=50)
    total = 30.0
    p = S._project_nonnegative(x, total)
    assert p.min() >= 0 and math.isclose(p.sum(), total)
    # KKT: positive entries are x - theta for one theta; zero entries have x <= theta.
    theta = x[p > 0] - p[p > 0]
    assert np.allclose(theta, theta[0]) and np.all(x[p == 0] <= theta[0] + 1e-12)
    assert np.allclose(S._project_nonnegative(np.array([3.0, -1.0, 2.0]), 4.0), [2.5, 0.0, 1.5])


def test_projection_removes_phantom_mass_of_empty_cells():
    """A 1000-cell margin with 5000 records in its first 100 cells, identity at epsilon 0.2
    (Lap(5) per cell, seed 3): clipping keeps E[max(Lap(5), 0)] = 2.5 phantom records in
    each of the 900 empty cells, ~2250 against 5000 real ones (TVD ~0.3, measured 0.30);
    projection subtracts a common level and keeps far less."""
    counts = np.zeros(1000)
    counts[:100] = 50
    est = publish(counts, 0.2, "identity", rng=np.random.default_rng(3)).counts
    truth = counts / counts.sum()
    tvd = {fit: 0.5 * np.abs(S._distribution(est, fit) - truth).sum() for fit in S.MARGIN_FITS}
    assert tvd["clip"] > 0.2
    assert tvd["project"] < tvd["clip"] / 2


# ---------------------------------------------------------------------------------------------
# Evaluation helpers
# ---------------------------------------------------------------------------------------------


def test_random_range_queries_are_inside_the_domains():
    domains = {"a": (0, 9), "b": [1.5, 2.5, 7.0], "c": 4}
    q = S.random_range_queries(domains, 500, np.random.default_rng(0))
    assert len(q) == 500 and q.columns == ("a", "b", "c")
    assert np.all(q.lower <= q.upper)
    assert set(np.unique(q.lower[:, 1])) <= {1.5, 2.5, 7.0}
    assert q.lower[:, 0].min() == 0 and q.upper[:, 0].max() == 9
    again = S.random_range_queries(domains, 500, np.random.default_rng(0))
    assert np.array_equal(q.lower, again.lower) and np.array_equal(q.upper, again.upper)
    fixed = S.random_range_queries({"a": (0, 99)}, 50, np.random.default_rng(1), width=0.1)
    assert np.all(fixed.upper - fixed.lower == 9)
    with pytest.raises(ValueError, match="width"):
        S.random_range_queries(domains, 5, width=1.5)


def test_range_count_error_follows_the_definition():
    real = pd.DataFrame({"a": [0, 1, 2, 3], "b": [0, 0, 1, 1]})
    syn = pd.DataFrame({"a": [0, 0, 3, 3, 3], "b": [0, 0, 1, 1, 0]})
    q = S.RangeQueries(
        ("a", "b"),
        lower=np.array([[0, 0], [3, 0], [2, 2]]),
        upper=np.array([[1, 0], [3, 0], [3, 2]]),
    )
    err = S.range_count_error(real, syn, q, sanity_bound=1.0)
    assert err.true_answers.tolist() == [2, 0, 0]
    assert err.synthetic_answers.tolist() == [2, 1, 0]
    assert err.relative.tolist() == [0.0, 1.0, 0.0]  # |1 - 0| / max(0, s=1)
    assert S.range_count_error(real, syn, q, sanity_bound=4.0).relative.tolist() == [0.0, 0.25, 0.0]
    assert err.mean_absolute == pytest.approx(1 / 3)


def test_marginal_and_dependence_comparisons():
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"x": rng.integers(0, 5, 300), "y": rng.integers(0, 5, 300)})
    assert np.allclose(S.marginal_comparison(a, a), 0.0)
    b = a + 10
    assert np.allclose(S.marginal_comparison(a, b), 1.0)
    d = S.dependence_comparison(a, a)
    assert d.max_abs_kendall_difference == 0.0
    assert np.allclose(d.pearson_difference, 0.0)
    flipped = a.assign(y=-a["y"])
    assert S.dependence_comparison(a, flipped).kendall_difference.loc["x", "y"] == pytest.approx(
        -2 * d.real_kendall.loc["x", "y"]
    )
    with pytest.raises(ValueError, match="same columns"):
        S.marginal_comparison(a, a[["y", "x"]])


# ---------------------------------------------------------------------------------------------
# Peers (OpenDP's mbi extra, optional)
# ---------------------------------------------------------------------------------------------


def test_peer_synth_without_opendp_says_how_to_install(monkeypatch):
    for name in ("mbi", "opendp", "opendp.prelude", "polars"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install 'opendp\[mbi\]'"):
        S.peer_synth(_frame(), 1.0, domains={"a": (0, 19), "b": (0, 29)})


@pytest.mark.slow
@pytest.mark.parametrize("method", ["aim", "mst"])
def test_peer_synth_runs_when_opendp_mbi_is_installed(method):
    pytest.importorskip("mbi")
    pytest.importorskip("opendp")
    pytest.importorskip("polars")
    table = gaussian_dependence_table(
        n=3000, m=3, domain=8, correlation=0.7, rng=np.random.default_rng(0)
    )
    res = S.peer_synth(
        table.frame, 1.0, method, domains=table.domains, rng=np.random.default_rng(0)
    )
    assert res.method == method and dict(res.epsilon_parts) == {method: 1.0}
    assert list(res.data.columns) == list(table.frame.columns)
    assert list(res.data.dtypes) == list(table.frame.dtypes)
    assert res.data.isin(range(8)).all().all()
    assert abs(res.n_rows - 3000) < 300


def test_copula_cannot_hold_a_three_way_xor_the_hybrid_can():
    """The interaction table's (night, weekend, overtime) are pairwise independent with
    overtime = night XOR weekend (flip 0.05): every pairwise tau is ~0, so the copula alone
    releases them independent, 0.125 in each of the 8 cells where the table has 0.2375 in the
    4 cells XOR allows and 0.0125 in the other 4: TVD 0.45. Partitioning by the three
    binaries (the hybrid, 8 partitions; eps n / P = 10 x 20,000 / 8 >= 2,500) keeps it: TVD
    within the sampling noise of 20,000 rows on 8 cells (< 0.05). Seed 0; tolerances far
    from both values."""
    t = interaction_table(n=20_000, rng=np.random.default_rng(0))
    triple = list(t.details["interaction"])

    def tvd(res: S.SynthResult) -> float:
        p = t.frame[triple].value_counts(normalize=True)
        q = res.data[triple].value_counts(normalize=True)
        p, q = p.align(q, fill_value=0.0)
        return 0.5 * float(np.abs(p - q).sum())

    hybrid = S.dpcopula(t.frame, 10.0, domains=t.domains, rng=np.random.default_rng(0))
    copula = S.dpcopula(t.frame, 10.0, domains=t.domains, hybrid_threshold=None,
                        rng=np.random.default_rng(0))
    assert hybrid.details["n_partitions"] == 8
    assert tvd(hybrid) < 0.05
    assert tvd(copula) > 0.35


def test_range_count_error_can_rescale_an_oversampled_table():
    """Doubling every synthetic row and rescaling to the original size gives the same answers;
    rescaling a 10x table to the real size answers from frequencies (float answers)."""
    rng = np.random.default_rng(4)
    real = pd.DataFrame({"a": rng.integers(0, 10, 500), "b": rng.integers(0, 10, 500)})
    queries = S.random_range_queries({"a": 10, "b": 10}, 50, np.random.default_rng(0))
    raw = S.range_count_error(real, real, queries)
    doubled = S.range_count_error(real, pd.concat([real, real]), queries, rescale_to=500.0)
    assert np.array_equal(doubled.synthetic_answers, raw.synthetic_answers)
    assert doubled.mean_relative == 0.0
    big = pd.DataFrame({"a": rng.integers(0, 10, 5000), "b": rng.integers(0, 10, 5000)})
    scaled = S.range_count_error(real, big, queries, rescale_to=500.0)
    assert scaled.synthetic_answers.dtype == float
    assert np.allclose(scaled.synthetic_answers, queries.answer(big) / 10.0)
    with pytest.raises(ValueError, match="rescale_to"):
        S.range_count_error(real, big, queries, rescale_to=0.0)


# ---------------------------------------------------------------------------------------------
# Speed without a change in distribution: kept concordance counts, the inverse CDF, the MLE ranks
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_row_concordance_is_each_rows_sum_of_sign_products(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 7, 300), rng.integers(0, 30, 300)  # many ties on x
    brute = (np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])).sum(axis=1)
    per_row = S._row_concordance(x, y, 7, 30)
    assert np.array_equal(per_row, brute)
    assert per_row.sum() == 2 * _brute_sums(np.column_stack([x, y]))[0]


@pytest.mark.parametrize("t", [2005, 2000, 1999, 1963, 1001, 1000, 700, 10])
def test_kendall_with_kept_counts_is_the_same_release(t):
    """The memo changes how S(sample) is counted, not the sample nor the noise: the same
    generator gives the same noisy tau, bit for bit, whether the sample is every row (t >= n),
    all but a few (the counts of the rows left out are subtracted) or a small subset (counted
    directly). n = 2,000 rows with ties; a second call reuses the kept counts."""
    rng = np.random.default_rng(3)
    codes = np.column_stack([rng.integers(0, 5, 2000), rng.integers(0, 40, 2000),
                             rng.integers(0, 300, 2000)])
    sizes = [5, 40, 300]
    memo = S.ConcordanceMemo()
    for _ in range(2):
        kept, info = S._dp_kendall(codes, t, 0.5, np.random.default_rng(11), sizes, memo)
        plain, plain_info = S._dp_kendall(codes, t, 0.5, np.random.default_rng(11))
        assert np.array_equal(kept, plain) and info == plain_info
    assert len(memo) == (3 if t >= 1000 else 0)  # three pairs kept; a small sample needs none


def test_dpcopula_with_a_memo_is_the_same_release(mixed):
    """End to end, unpartitioned and hybrid (each partition's rows are a table of their own),
    Kendall and MLE: a memo changes nothing in the output for the same generator."""
    frame, domains = mixed
    memo = S.ConcordanceMemo()
    for kwargs in ({}, {"hybrid_min_support": 0.0}, {"method": "mle"}):
        for _ in range(2):  # the second call reads the kept counts
            a = S.dpcopula(frame, 1.0, domains=domains, rng=np.random.default_rng(5),
                           concordance=memo, **kwargs)
            b = S.dpcopula(frame, 1.0, domains=domains, rng=np.random.default_rng(5), **kwargs)
            pd.testing.assert_frame_equal(a.data, b.data)
            assert dict(a.details)["noisy_n"] == dict(b.details)["noisy_n"]
    assert len(memo) > 0


def test_concordance_memo_keys_by_content_and_stays_within_its_bytes():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 50, size=(1000, 3))
    memo = S.ConcordanceMemo(max_bytes=2 * 1000 * 4)  # room for two pairs of int32 counts
    first = memo.per_row(codes, [50, 50, 50])
    assert len(first) == 3 and len(memo) == 2  # the oldest pair went first
    other = codes.copy()
    other[0, 0] = (other[0, 0] + 1) % 50  # one value changed: another table
    again = memo.per_row(other, [50, 50, 50])
    assert again[0][1] == _brute_sums(other)[0] and again[0][1] != first[0][1]
    assert memo.per_row(codes, [2**11, 2**11 + 1, 3]) is None  # a 2-D table too large to keep
    memo.clear()
    assert len(memo) == 0


@pytest.mark.parametrize("kind", ["uniform", "zipf", "spikes", "zeros"])
def test_inverse_cdf_guide_table_is_a_binary_search(kind):
    """The guide table gives exactly np.searchsorted(..., side="right"), keys equal to a
    threshold, outside [lo, hi) and at +-inf included."""
    rng = np.random.default_rng(2)
    size = 1000
    if kind == "uniform":
        prob = np.full(size, 1.0 / size)
    elif kind == "zipf":
        prob = 1.0 / np.arange(1, size + 1)
    elif kind == "spikes":
        prob = np.full(size, 1e-9)
        prob[[0, 500, 999]] = [0.5, 0.3, 0.2]
    else:
        prob = rng.random(size)
        prob[:100] = 0.0
        prob[400:600] = 0.0
    prob /= prob.sum()
    cdf = S._cdf(prob)
    u = np.concatenate([rng.random(50_000), cdf[::7], [0.0, 1.0 - 1e-17]])
    assert np.array_equal(S._count_at_most(cdf, u, 0.0, 1.0),
                          np.searchsorted(cdf, u, side="right"))
    quantiles = S.special.ndtri(np.minimum(cdf, 1.0))
    z = np.concatenate([rng.standard_normal(50_000), quantiles[np.isfinite(quantiles)],
                        [-40.0, 40.0, -np.inf, np.inf]])
    assert np.array_equal(S._count_at_most(quantiles, z, -8.0, 8.0),
                          np.searchsorted(quantiles, z, side="right"))


def test_copula_sampling_is_alg_3_draw_for_draw():
    """Z = N L^T, U = Phi(Z), X = F^{-1}(U) (Li 2017 Alg. 3) as written, against the sampler's
    row-wise product and normal quantiles: the same codes from the same generator (20,000
    draws; a draw within an ulp of a CDF value could differ, with probability ~1e-12)."""
    rng = np.random.default_rng(7)
    probs = [rng.dirichlet(np.ones(s)) for s in (7, 300, 2, 1000)]
    probs[1][5] = 0.0
    probs[1] /= probs[1].sum()
    corr = np.full((4, 4), 0.4)
    np.fill_diagonal(corr, 1.0)
    n = 20_000
    draws = np.random.default_rng(1).standard_normal((n, 4)) @ S._cholesky(corr).T
    u = S.special.ndtr(draws)
    expected = np.column_stack([np.minimum(np.searchsorted(np.cumsum(p), u[:, j], "right"),
                                           p.size - 1) for j, p in enumerate(probs)])
    assert np.array_equal(S._sample_copula(probs, corr, n, np.random.default_rng(1)), expected)
    uniform = np.random.default_rng(2).random((n, 4))
    expected = np.column_stack([S._inverse_cdf(p, uniform[:, j]) for j, p in enumerate(probs)])
    assert np.array_equal(S._sample_copula(probs, None, n, np.random.default_rng(2)), expected)


def test_mle_midranks_by_radix_order_are_the_sorted_ones():
    rng = np.random.default_rng(4)
    n, size, blocks = 5000, 300, 200
    code, block = rng.integers(0, size, n), rng.integers(0, blocks, n)
    bsize = np.bincount(block, minlength=blocks).astype(float)
    starts = np.concatenate(([0.0], np.cumsum(bsize)[:-1]))
    key = block * size + code
    uniq, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    expected = (np.cumsum(counts) - counts - starts[uniq // size] + (counts + 1) / 2.0)[inverse]
    assert np.array_equal(S._midranks_by_block(code, size, block, starts), expected)


def test_prepare_checks_integer_columns_without_overflow():
    # int8 codes on a domain starting at -128: the offset needs more than int8.
    frame = pd.DataFrame({"a": np.array([-128, 0, 127], dtype=np.int8),
                          "b": np.array([1, 2, 3], dtype=np.int64)})
    table = S._prepare(frame, {"a": (-128, 127), "b": (0, 9)})
    assert table.codes[:, 0].tolist() == [0, 128, 255]
    with pytest.raises(ValueError, match="outside its declared domain"):
        S._prepare(frame, {"a": (-128, 126), "b": (0, 9)})
    # The decoded frame keeps the dtypes, one block or not.
    assert table.frame(table.codes).dtypes.tolist() == [np.dtype(np.int8), np.dtype(np.int64)]
    same = S._prepare(frame.astype(np.int64), {"a": (-128, 127), "b": (0, 9)})
    pd.testing.assert_frame_equal(same.frame(same.codes), frame.astype(np.int64))


def test_dp_mle_is_alg_2_as_written():
    """The normal scores from mid-ranks sorted by (block, code) and looked up per (mid-rank,
    block size) are Alg. 2's Phi^{-1}(midrank / (b + 1)) computed record by record: the same
    noisy correlation from the same generator, bit for bit (n = 3,000, 600 blocks; and a single
    block of all rows, where the scores are computed directly)."""
    rng = np.random.default_rng(8)
    codes = np.column_stack([rng.integers(0, 4, 3000), rng.integers(0, 50, 3000),
                             rng.integers(0, 700, 3000)])
    sizes = [4, 50, 700]

    def written(blocks: int) -> np.ndarray:
        """Alg. 2 record by record; the generator draws the blocks, then the noise."""
        gen = np.random.default_rng(4)
        block = gen.integers(0, blocks, size=3000)
        bsize = np.bincount(block, minlength=blocks).astype(float)
        starts = np.concatenate(([0.0], np.cumsum(bsize)[:-1]))
        z = np.empty((3000, 3))
        for j in range(3):
            key = block * sizes[j] + codes[:, j]
            uniq, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
            ranks = (np.cumsum(counts) - counts - starts[uniq // sizes[j]]
                     + (counts + 1) / 2.0)[inverse]
            z[:, j] = S.special.ndtri(ranks / (bsize[block] + 1.0))
        count = np.maximum(bsize, 1.0)

        def block_sum(w):
            return np.bincount(block, weights=w, minlength=blocks)

        sums = [block_sum(z[:, j]) for j in range(3)]
        var = [block_sum(z[:, j] ** 2) - sums[j] ** 2 / count for j in range(3)]
        avg = []
        for j, k in zip(*np.triu_indices(3, 1), strict=True):
            cov = block_sum(z[:, j] * z[:, k]) - sums[j] * sums[k] / count
            denom = np.sqrt(np.maximum(var[j], 0.0) * np.maximum(var[k], 0.0))
            ok = (bsize >= 3) & (denom > 1e-12)
            est = np.zeros(blocks)
            est[ok] = np.clip(cov[ok] / denom[ok], -1.0, 1.0)
            avg.append(est.sum() / blocks)
        noisy = S.laplace_reals(np.array(avg), 3 * 2.0 / blocks, 1.0, rng=gen,
                                scale=3 * 2.0 / blocks, max_changed=3)
        return np.clip(noisy, -1.0, 1.0)

    for blocks in (600, 1):
        corr, _ = S._dp_mle(codes, sizes, blocks, 1.0, np.random.default_rng(4))
        assert np.array_equal(corr[np.triu_indices(3, 1)], written(blocks))
