"""Tests for dpwidgets.engine.histograms: the publish() interface and every publisher.

Statistical tests state their seed, the number of cells and repetitions, and why the
tolerance is what it is; every seed is fixed, so the tests are deterministic, and each
comparison has a wide margin (the measured ratios are noted next to the thresholds) while
still failing for a broken implementation (e.g. DAWA without its partition is LM-like, and
HB without consistency is ~h^2 times worse than LM per cell).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets.engine.histograms import (
    PUBLISHERS,
    PublishedHistogram,
    _tree_least_squares,
    dyadic_l1_partition,
    hilbert_d2xy,
    hilbert_order,
    hilbert_xy2d,
    partition_singletons_log_ratio,
    publish,
    workload_matrix,
)

METHODS = sorted({p.name for p in PUBLISHERS.values()})


def steps_1d(n_cells: int = 4096, total: int = 100_000) -> np.ndarray:
    """A piecewise-constant histogram: 8 flat steps of equal width, about ``total`` records."""
    levels = np.array([5, 40, 10, 0, 30, 2, 20, 15], dtype=float)
    x = np.repeat(levels, n_cells // 8)
    return np.round(x * total / x.sum())


def clustered_2d(side: int = 64) -> np.ndarray:
    """Two Gaussian blobs on a ``side x side`` grid (about 420k records), zero elsewhere."""
    yy, xx = np.mgrid[:side, :side]
    g = 3000 * np.exp(-((yy - 20) ** 2 + (xx - 40) ** 2) / 30)
    g += 500 * np.exp(-((yy - 50) ** 2 + (xx - 10) ** 2) / 100)
    return np.round(g)


def mean_errors(method, x, epsilon, reps, seed, **kwargs):
    """Mean over ``reps`` runs of (per-cell MSE, prefix-query MSE) of ``method`` on ``x``."""
    rng = np.random.default_rng(seed)
    cell, prefix = [], []
    for _ in range(reps):
        est = publish(x, epsilon, method, rng=rng, **kwargs).counts
        err = est - x
        cs = np.cumsum(err) if x.ndim == 1 else err.cumsum(0).cumsum(1)
        cell.append(np.mean(err**2))
        prefix.append(np.mean(cs**2))
    return float(np.mean(cell)), float(np.mean(prefix))


# ---------------------------------------------------------------------------------------------
# Interface
# ---------------------------------------------------------------------------------------------


def test_registry_records_are_complete():
    assert {"identity", "lm", "uniform", "hb", "dawa", "ag", "mwem", "ahp_greedy"} <= set(PUBLISHERS)
    assert PUBLISHERS["lm"] is PUBLISHERS["identity"]
    for key, pub in PUBLISHERS.items():
        assert pub.title and pub.source and pub.guarantee
        assert set(pub.dims) <= {1, 2}
        assert "add/remove" in pub.guarantee
        # A simplified variant never carries the original's bare name as its own name.
        if pub.simplification is not None:
            assert pub.name not in {"dawa", "ahp"}
        assert "References" in (pub.function.__doc__ or ""), key
    assert PUBLISHERS["dawa"].name == "dawa_dyadic"
    assert PUBLISHERS["ag"].dims == (2,)


@pytest.mark.parametrize(
    ("method", "shape"),
    [
        (m, shape)
        for m in METHODS
        for shape in [(37,), (256,), (5, 9), (16, 16)]
        if len(shape) in PUBLISHERS[m].dims
    ],
)
def test_every_method_keeps_shape_and_spends_exactly_epsilon(method, shape):
    pub = PUBLISHERS[method]
    rng = np.random.default_rng(5)
    x = rng.integers(0, 30, size=shape).astype(float)
    out = publish(x, 0.7, method, rng=rng)
    assert isinstance(out, PublishedHistogram)
    assert out.counts.shape == shape and out.counts.dtype == float
    assert np.all(np.isfinite(out.counts))
    assert out.epsilon == 0.7
    assert out.method == pub.name
    assert math.isclose(math.fsum(out.epsilon_parts.values()), 0.7, rel_tol=1e-12)
    assert all(v > 0 for v in out.epsilon_parts.values())


@pytest.mark.parametrize("method", METHODS)
def test_seeded_runs_are_reproducible(method):
    x = clustered_2d(16) if PUBLISHERS[method].dims == (2,) else steps_1d(64, 1000)
    a = publish(x, 0.5, method, rng=np.random.default_rng(9)).counts
    b = publish(x, 0.5, method, rng=np.random.default_rng(9)).counts
    np.testing.assert_array_equal(a, b)


def test_result_is_immutable_and_helpers_are_post_processing():
    out = publish(np.arange(10), 1.0, "lm", rng=np.random.default_rng(0))
    with pytest.raises(ValueError):
        out.counts[0] = 1.0
    with pytest.raises(AttributeError):
        out.epsilon = 2.0  # type: ignore[misc]
    np.testing.assert_allclose(out.prefix_sums(), np.cumsum(out.counts))
    assert math.isclose(out.range_sum(2, 5), float(np.sum(out.counts[2:5])))
    nn = out.nonnegative()
    assert np.all(nn >= 0) and np.all(nn == np.round(nn))
    out2 = publish(np.ones((4, 5)), 1.0, "uniform", rng=np.random.default_rng(0))
    assert math.isclose(out2.range_sum((0, 0), (4, 5)), out2.total)
    assert math.isclose(out2.prefix_sums()[-1, -1], out2.total)


# ---------------------------------------------------------------------------------------------
# Validation happens before any randomness
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "epsilon", "method", "kwargs", "match"),
    [
        ([1, -2, 3], 1.0, "lm", {}, "counts"),
        ([1, 2.5, 3], 1.0, "dawa", {}, "counts"),
        ([1, np.nan, 3], 1.0, "hb", {}, "counts"),
        ([], 1.0, "uniform", {}, "counts"),
        (np.ones((2, 2, 2)), 1.0, "lm", {}, "counts"),
        ([1, 2, 3], 1.0, "ag", {}, "counts"),
        ([1, 2, 3], 0.0, "lm", {}, "epsilon"),
        ([1, 2, 3], float("nan"), "mwem", {}, "epsilon"),
        ([1, 2, 3], 1.0, "nope", {}, "method"),
        ([1, 2, 3], 1.0, "mwem", {"workload": "ranges"}, "workload"),
        ([1, 2, 3], 1.0, "dawa", {"workload": np.ones((2, 4))}, "workload"),
    ],
)
def test_invalid_input_raises_before_any_randomness(counts, epsilon, method, kwargs, match):
    rng = np.random.default_rng(123)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        publish(counts, epsilon, method, rng=rng, **kwargs)
    assert rng.bit_generator.state == before


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="rng"):
        publish([1, 2], 1.0, "lm", rng=42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Identity (LM) and the shared machinery
# ---------------------------------------------------------------------------------------------


def test_lm_is_unbiased_with_variance_2_over_eps_squared():
    # seed 0; 4096 cells x 50 runs = 204,800 Laplace errors at epsilon = 0.5 (variance 8).
    # Laplace has kurtosis 6, so the relative standard error of the sample variance is
    # sqrt(5/204800) = 0.5%: a 3% tolerance is 6 standard errors. The mean error has standard
    # error sqrt(8/204800) = 0.0063; we allow 0.04 (6.4 s.e.).
    eps, n, reps = 0.5, 4096, 50
    x = np.random.default_rng(1).integers(0, 100, n).astype(float)
    rng = np.random.default_rng(0)
    err = np.stack([publish(x, eps, "lm", rng=rng).counts - x for _ in range(reps)])
    assert abs(err.mean()) < 0.04
    assert abs(err.var() / (2 / eps**2) - 1) < 0.03


def test_tree_least_squares_matches_weighted_least_squares():
    # A binary tree of height 3 (8 leaves, 14 measured nodes, root unmeasured) with unequal
    # per-level variances: the two-pass estimate equals the explicit GLS solution.
    rng = np.random.default_rng(4)
    b, h = 2, 3
    variances = [np.full(1, np.inf), np.full(2, 4.0), np.full(4, 1.0), np.full(8, 9.0)]
    measured = [np.zeros(1)] + [rng.normal(10, 3, b**lvl) for lvl in range(1, h + 1)]
    est = _tree_least_squares(measured, variances, b)
    rows, ys, ws = [], [], []
    for lvl in range(1, h + 1):
        width = b ** (h - lvl)
        for j in range(b**lvl):
            row = np.zeros(b**h)
            row[j * width : (j + 1) * width] = 1.0
            rows.append(row)
            ys.append(measured[lvl][j])
            ws.append(1.0 / np.sqrt(variances[lvl][j]))
    a, y, w = np.array(rows), np.array(ys), np.array(ws)
    expected = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)[0]
    np.testing.assert_allclose(est, expected, rtol=1e-10, atol=1e-10)


def _workload_error_by_matrix(k, b, h, weights, kind):
    """Expected prefix/range workload error from the explicit GLS covariance (the reference):
    information matrix over the k real leaves, inverted by numpy."""
    info = np.zeros((k, k))
    leaf = np.arange(k)
    for level in range(1, h + 1):
        if weights[level - 1] > 0:
            node = leaf // b ** (h - level)
            info += (node[:, None] == node[None, :]) / (2.0 / weights[level - 1] ** 2)
    cov = np.linalg.inv(info)
    lo, hi = np.minimum.outer(leaf, leaf), np.maximum.outer(leaf, leaf)
    counts = (k - hi) if kind == "prefix" else (lo + 1) * (k - hi)  # queries holding both
    return float(np.sum(counts * cov))


@pytest.mark.parametrize("kind", ["prefix", "range"])
def test_closed_form_workload_error_matches_the_gls_covariance(kind):
    # Trees with full and partial last nodes, 1 to 10 levels, each level-weight profile the
    # design tries plus unmeasured middle levels; agreement to 1e-10 relative (float sums).
    from dpwidgets.engine.histograms import _tree_workload_error

    for k, b in ((1, 2), (5, 2), (7, 3), (37, 4), (64, 4), (300, 2), (513, 23), (900, 30)):
        h = max(1, math.ceil(math.log(max(k, 2)) / math.log(b) - 1e-12))
        profiles = [np.eye(h)[-1], np.r_[np.zeros(h - 1), 1.0] + (np.arange(h) == 0)]
        profiles += [g ** np.arange(h, dtype=float) for g in (0.5, 1.0, 2.0)]
        for w in profiles:
            w = w / w.sum()
            expected = _workload_error_by_matrix(k, b, h, w, kind)
            assert _tree_workload_error(k, b, h, w, kind) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("kind", ["identity", "prefix", "range"])
def test_cached_bucket_design_is_the_matrix_search_choice(kind):
    # The design for a named workload (closed form, cached on the public k) must pick what
    # the response-matrix search picks, for every k the search tests (1..1024, sampled
    # densely near powers of the branching factors) and above it.
    from dpwidgets.engine.histograms import (
        _bucket_hierarchy_design,
        _bucket_hierarchy_search,
        _named_workload_design,
    )

    _named_workload_design.cache_clear()  # compute each design afresh

    ks = sorted({*range(1, 40), 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 400, 511, 512,
                 513, 700, 841, 900, 1000, 1023, 1024, 1025, 3000})
    for k in ks:
        b, h, weights, label = _bucket_hierarchy_design(k, kind, None)
        eb, eh, eweights, elabel = _bucket_hierarchy_search(k, kind, None)
        assert (b, h, label) == (eb, eh, elabel), k
        np.testing.assert_array_equal(weights, eweights)
        assert not weights.flags.writeable  # shared by the cache: read-only


@pytest.mark.parametrize("order", [1, 2, 3, 4, 5, 6])
def test_hilbert_curve_is_a_bijection_through_adjacent_cells(order):
    side = 1 << order
    d = np.arange(side * side)
    x, y = hilbert_d2xy(order, d)
    assert len(set(zip(x.tolist(), y.tolist(), strict=True))) == side * side
    assert x.min() == 0 and x.max() == side - 1 and y.min() == 0 and y.max() == side - 1
    np.testing.assert_array_equal(np.abs(np.diff(x)) + np.abs(np.diff(y)), 1)
    np.testing.assert_array_equal(hilbert_xy2d(order, x, y), d)
    flat = hilbert_order((side, side))
    np.testing.assert_array_equal(np.sort(flat), d)


def test_hilbert_order_of_a_rectangle_is_a_permutation():
    flat = hilbert_order((5, 7))
    np.testing.assert_array_equal(np.sort(flat), np.arange(35))


def test_workload_matrix_kinds():
    np.testing.assert_array_equal(workload_matrix("prefix", (3,)), np.tril(np.ones((3, 3))))
    assert workload_matrix("range", (4,)).shape == (10, 4)
    assert workload_matrix(None, (2, 3)).shape == (6, 6)
    w = workload_matrix("prefix", (2, 2))
    np.testing.assert_array_equal(w @ np.arange(4.0), [0, 1, 2, 6])


# ---------------------------------------------------------------------------------------------
# Accuracy: each publisher does what it is for
# ---------------------------------------------------------------------------------------------


def test_dawa_partition_finds_the_steps_when_noise_is_negligible():
    x = steps_1d(1024, 100_000)
    start, _ = dyadic_l1_partition(x, 1e6, 1.0, np.random.default_rng(0))
    np.testing.assert_array_equal(start, np.arange(8) * 128)


@pytest.mark.parametrize("workload", [None, "prefix"])
def test_dawa_beats_lm_on_a_piecewise_constant_histogram(workload):
    # 4096 cells in 8 flat steps, 100k records, epsilon = 0.1, seed 3, 5 runs each.
    # LM's cell MSE is 2/eps^2 = 200; DAWA's is ~0.1-3 (few buckets), prefix MSE ~2e3 vs
    # LM's ~5e5. Demanding a factor 10 on both leaves a wide margin.
    x = steps_1d()
    lm = mean_errors("lm", x, 0.1, 5, 3)
    dawa = mean_errors("dawa", x, 0.1, 5, 3, workload=workload)
    assert dawa[0] < lm[0] / 10
    assert dawa[1] < lm[1] / 10


def test_hb_beats_lm_on_long_range_queries():
    # 4096 cells, epsilon = 0.1, seed 7, 10 runs, 500 random ranges of length >= 1024.
    # LM's variance of such a range is >= 2*1024/eps^2 ~ 2e5; HB's is ~1.5e4 (b = 16, h = 3);
    # we require a factor 3.
    x = steps_1d()
    rng = np.random.default_rng(7)
    lo = rng.integers(0, 4096 - 1024, 500)
    hi = lo + rng.integers(1024, 4096 - lo + 1)
    out = {}
    for method in ("lm", "hb"):
        errs = []
        for _ in range(10):
            cs = np.concatenate(([0.0], np.cumsum(publish(x, 0.1, method, rng=rng).counts - x)))
            errs.append(np.mean((cs[hi] - cs[lo]) ** 2))
        out[method] = np.mean(errs)
    assert out["hb"] < out["lm"] / 3


def test_ag_beats_lm_on_clustered_2d_range_queries():
    # 64x64 grid with two blobs (~420k records), epsilon = 0.1, seed 11, 5 runs, 1000 random
    # rectangles. Measured: AG ~0.15 of LM's range MSE; we require < 0.5.
    g = clustered_2d()
    rng = np.random.default_rng(11)
    r = np.sort(rng.integers(0, 64, (2, 1000)), axis=0)
    c = np.sort(rng.integers(0, 64, (2, 1000)), axis=0)
    out = {}
    for method in ("lm", "ag"):
        errs = []
        for _ in range(5):
            err = publish(g, 0.1, method, rng=rng).counts - g
            cs = np.zeros((65, 65))
            cs[1:, 1:] = err.cumsum(0).cumsum(1)
            q = cs[r[1] + 1, c[1] + 1] - cs[r[0], c[1] + 1] - cs[r[1] + 1, c[0]] + cs[r[0], c[0]]
            errs.append(np.mean(q**2))
        out[method] = np.mean(errs)
    assert out["ag"] < 0.5 * out["lm"]


def test_mwem_improves_on_uniform_for_its_workload():
    # A skewed 1-D histogram of 256 cells (~20k records), prefix workload, epsilon = 0.5,
    # seed 13, 5 runs. Uniform's prefix MSE is ~1e7 (the mass is not uniform); MWEM's ten
    # measured prefixes cut it by well over 10x; we require 4x.
    x = np.round(np.concatenate([np.full(64, 200.0), np.full(128, 20.0), np.full(64, 60.0)]))
    uni = mean_errors("uniform", x, 0.5, 5, 13)
    mw = mean_errors("mwem", x, 0.5, 5, 13, workload="prefix")
    assert mw[1] < uni[1] / 4


def test_mwem_accepts_an_explicit_query_matrix_and_a_public_total():
    x = np.array([10.0, 0, 0, 30, 5, 5, 0, 50])
    q = workload_matrix("range", (8,))
    out = publish(x, 1.0, "mwem", rng=np.random.default_rng(2), workload=q, total=x.sum())
    assert "total" not in out.epsilon_parts
    assert math.isclose(out.total, x.sum())
    assert math.isclose(math.fsum(out.epsilon_parts.values()), 1.0)


def test_dawa_2d_uses_hilbert_order_and_is_exact_for_large_epsilon():
    g = clustered_2d(16)
    out = publish(g, 1e6, "dawa", rng=np.random.default_rng(0), workload="range")
    assert out.details["cell_order"] == "hilbert"
    np.testing.assert_allclose(out.counts, g, atol=0.5)


# ---------------------------------------------------------------------------------------------
# EFPA
# ---------------------------------------------------------------------------------------------


def gaussian_bump(n_cells: int = 1000, peak: float = 5000.0, sd: float = 80.0) -> np.ndarray:
    """A smooth histogram: a Gaussian bump centred in ``n_cells`` bins (~1e6 records)."""
    i = np.arange(n_cells)
    return np.round(peak * np.exp(-((i - n_cells / 2) ** 2) / (2 * sd**2)))


def _orthonormal_real_fourier(v: np.ndarray) -> np.ndarray:
    """Coordinates of ``v`` (last axis) in the orthonormal real Fourier basis, in rfft order:
    F_0, (sqrt2 Re F_j, sqrt2 Im F_j) ..., and the Nyquist term for an even length."""
    n = v.shape[-1]
    f = np.fft.rfft(v, norm="ortho")
    cols = [f[..., :1].real]
    last = f.shape[-1] - 1 if n % 2 == 0 else f.shape[-1]
    inner = f[..., 1:last]
    pairs = np.stack([np.sqrt(2) * inner.real, np.sqrt(2) * inner.imag], axis=-1)
    cols.append(pairs.reshape(*v.shape[:-1], -1))
    if n % 2 == 0:
        cols.append(f[..., -1:].real)
    return np.concatenate(cols, axis=-1)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 33, 64])
def test_efpa_sensitivity_bounds_hold_for_every_cell_and_every_k(n):
    # Exhaustive over the cell t that changes and the number of kept parameters d: the L1
    # change of the d kept coordinates is <= sqrt(d) * sqrt(d/n) = d/sqrt(n) (the
    # "retained" bound) <= sqrt(d) (the "histogram" bound), and the basis is orthonormal.
    coords = _orthonormal_real_fourier(np.eye(n))  # row t: the coordinates of e_t
    np.testing.assert_allclose(coords @ coords.T, np.eye(n), atol=1e-12)
    l1 = np.cumsum(np.abs(coords), axis=1).max(axis=0)  # worst t, for d = 1..n kept
    d = np.arange(1, n + 1)
    kept = np.r_[1:n + 1:2, n] - 1  # EFPA keeps whole coefficients: d = 1, 3, 5, ..., n
    assert np.all(l1[kept] <= d[kept] / np.sqrt(n) + 1e-12)
    assert np.all(l1 <= np.sqrt(d) + 1e-12)
    if n >= 4:  # and the bound is not loose by more than 2 at d = 3
        assert l1[2] > 0.5 * 3 / np.sqrt(n)


@pytest.mark.parametrize("l2_bound", ["retained", "histogram"])
@pytest.mark.parametrize("n", [49, 50])
def test_efpa_quality_has_sensitivity_at_most_one(n, l2_bound):
    # The EM's score U(k) for every k, on x and on x + e_t for every cell t (random counts up
    # to 1000, seed 21): |U(x) - U(x + e_t)| <= 1, the sensitivity given to the EM. (A
    # squared-error score would move by ~2 * sqrt(RE) ~ 1e4 here.) Also checked against an
    # independent computation of RE(k) + PE(k) in the orthonormal real Fourier basis.
    from dpwidgets.engine.histograms import _efpa_scores

    rng = np.random.default_rng(21)
    x = rng.integers(0, 1000, n).astype(float)
    base = _efpa_scores(x, 0.05, l2_bound)
    for t in range(n):
        moved = _efpa_scores(x + np.eye(n)[t], 0.05, l2_bound)
        assert np.max(np.abs(moved[-1] - base[-1])) <= 1.0 + 1e-9
    coords = _orthonormal_real_fourier(x)
    d = base[3]
    re = np.array([np.sum(coords[int(dk):] ** 2) for dk in d])
    np.testing.assert_allclose(base[-1], -np.sqrt(re + 2 * d * base[4] ** 2), rtol=1e-10)
    delta2 = np.sqrt(d / n) if l2_bound == "retained" else 1.0
    np.testing.assert_allclose(base[4], np.sqrt(d) * delta2 / 0.05)


def test_efpa_splits_the_budget_in_halves_and_is_1d_only():
    x = gaussian_bump(200, 300.0, 20.0)
    out = publish(x, 0.4, "efpa", rng=np.random.default_rng(1))
    assert dict(out.epsilon_parts) == {"select": 0.2, "measure": 0.2}
    assert out.method == "efpa" and PUBLISHERS["efpa"].dims == (1,)
    assert PUBLISHERS["efpa"].simplification is None
    assert 1 <= out.details["n_coefficients"] <= 101
    out = publish(x, 0.4, "efpa", rng=np.random.default_rng(1), rho=0.25)
    assert math.isclose(out.epsilon_parts["select"], 0.1)
    assert math.isclose(math.fsum(out.epsilon_parts.values()), 0.4, rel_tol=1e-12)


@pytest.mark.parametrize(
    ("counts", "kwargs", "match"),
    [
        (np.ones((4, 4)), {}, "1-D"),
        ([1, 2, 3], {"rho": 1.0}, "rho"),
        ([1, 2, 3], {"l2_bound": "l1"}, "l2_bound"),
    ],
)
def test_efpa_validates_before_any_randomness(counts, kwargs, match):
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        publish(counts, 1.0, "efpa", rng=rng, **kwargs)
    assert rng.bit_generator.state == before


def test_efpa_is_exact_when_epsilon_is_huge():
    # epsilon = 1e8: the EM keeps every coefficient (RE = 0, PE ~ 1e-13) and the noise
    # scale is ~1e-7, so the inverse DFT must give back the histogram (odd and even n).
    for n in (999, 1000):
        x = gaussian_bump(n)
        x[::7] += 3  # not smooth: needs every coefficient
        out = publish(x, 1e8, "efpa", rng=np.random.default_rng(0))
        np.testing.assert_allclose(out.counts, x, atol=1e-3)


def test_efpa_noise_matches_its_stated_error():
    # n = 64, a constant plus a cosine of frequency 3 (rounded to whole counts), epsilon = 1,
    # seed 17, 400 runs. Whatever k the EM picks, the expected squared error is RE(k) +
    # 2 d_k lambda_k^2 (the quality's own formula), with RE(k) computed here independently
    # from the full complex DFT. The squared Laplace noise of d >= 7 parameters has relative
    # sd <= sqrt(20)/2/sqrt(7) = 0.85 per run, so the ratio of the summed errors to the
    # summed expectations has s.e. < 0.045 over 400 runs: 15% is > 3 s.e., and a missing
    # sqrt(2) on the complex parts (error x1.86) or a wrong ortho scaling fails it.
    n = 64
    t = np.arange(n)
    x = np.round(1000 + 500 * np.cos(2 * np.pi * 3 * t / n))
    full = np.fft.fft(x, norm="ortho")

    def dropped_energy(k):
        f = full.copy()
        f[k : n - k + 1] = 0
        return float(np.sum((np.fft.ifft(f, norm="ortho").real - x) ** 2))

    rng = np.random.default_rng(17)
    errors, expected, ks = [], [], []
    for _ in range(400):
        out = publish(x, 1.0, "efpa", rng=rng)
        k, d, lam = (out.details[key] for key in ("n_coefficients", "n_parameters", "noise_scale"))
        assert d == 2 * k - 1 and lam == pytest.approx(np.sqrt(d) * np.sqrt(d / n) / 0.5)
        errors.append(np.sum((out.counts - x) ** 2))
        expected.append(dropped_energy(k) + 2 * d * lam**2)
        ks.append(k)
    assert min(ks) >= 4  # k <= 3 drops the cosine: RE ~ 4e6, never chosen
    assert np.sum(errors) / np.sum(expected) == pytest.approx(1.0, abs=0.15)


def test_efpa_beats_lm_on_a_smooth_histogram():
    # The published advantage (Ács et al. 2012): on a smooth histogram the Fourier
    # compression beats per-cell Laplace. Gaussian bump over 1000 bins (~1e6 records),
    # epsilon = 0.1, seed 8. LM: cell MSE 2/eps^2 = 200, mean |error| 1/eps = 10.
    # Default bound, 20 runs: measured MSE 6-11 and mean |error| ~1.8-2.4 over seeds 0-4;
    # we require MSE < LM/5 and mean |error| < LM/2.
    # Reference-code bound (Delta2 = 1), 200 runs: measured MSE ratio ~0.6-0.9 to LM and
    # mean |error| about equal; we require MSE < 0.95 LM (the 200-run mean has ~3% s.e.).
    x = gaussian_bump()
    rng = np.random.default_rng(8)

    def errors(method, reps, **kw):
        e = np.stack([publish(x, 0.1, method, rng=rng, **kw).counts - x for _ in range(reps)])
        return float(np.mean(e**2)), float(np.mean(np.abs(e)))

    lm = errors("lm", 20)
    efpa = errors("efpa", 20)
    assert efpa[0] < lm[0] / 5
    assert efpa[1] < lm[1] / 2
    paper = errors("efpa", 200, l2_bound="histogram")
    lm200 = errors("lm", 200)
    assert paper[0] < 0.95 * lm200[0]


def spiky_histogram(n_cells: int = 1000) -> np.ndarray:
    """A point mass at 0 (27,000 records) and a sparse tail: a zero income and its earners."""
    x = np.zeros(n_cells)
    x[0] = 27_000
    x[50:300:3] = 30
    return x


def test_efpa_fallback_is_a_data_independent_extra_candidate():
    # The fallback adds the score -sqrt(2n)/eps2 to the EM's candidates: on x and on every
    # neighbour x + e_t it is the same number, so the qualities' sensitivity stays <= 1.
    # Seeds 0-9: on a spike the Laplace histogram wins every time (EFPA's best candidate
    # has expected L2 error >= 2,800 at eps2 = 0.5, Laplace's is sqrt(2000)/0.5 = 89); on
    # the smooth bump EFPA's Fourier candidates still win every time (their error ~50 vs
    # Laplace's 450 at eps2 = 0.1).
    spike = spiky_histogram()
    for seed in range(10):
        out = publish(spike, 1.0, "efpa", rng=np.random.default_rng(seed), fallback="identity")
        assert out.details["fallback"] == "identity" and out.details["n_coefficients"] == 0
        assert out.details["noise_scale"] == pytest.approx(1 / 0.5)
        assert dict(out.epsilon_parts) == {"select": 0.5, "measure": 0.5}
        smooth = publish(gaussian_bump(), 0.2, "efpa", rng=np.random.default_rng(seed),
                         fallback="identity")
        assert smooth.details["fallback"] is None and smooth.details["n_coefficients"] >= 1
    text = publish(spike, 1.0, "efpa", rng=np.random.default_rng(0))
    assert text.details["fallback"] is None and text.details["n_coefficients"] >= 1


def test_efpa_fallback_noise_is_laplace_with_the_measure_budget():
    # When the fallback wins, the release is x + Lap(1/eps2) per cell: over seeds 0-19 on
    # the spike (20,000 cells of noise at eps = 1, eps2 = 0.5) the mean |error| is 2 (Lap
    # scale 2) within 3% (s.e. of the mean of |Lap(2)| over 20,000 draws: 0.7%) and the
    # error of the text's EFPA is at least 20 times larger in L2.
    spike = spiky_histogram()
    err = np.concatenate([
        publish(spike, 1.0, "efpa", rng=np.random.default_rng(s), fallback="identity").counts
        - spike for s in range(20)])
    assert np.mean(np.abs(err)) == pytest.approx(2.0, rel=0.03)
    text = np.concatenate([
        publish(spike, 1.0, "efpa", rng=np.random.default_rng(s)).counts - spike
        for s in range(20)])
    assert np.sqrt(np.mean(text**2)) > 20 * np.sqrt(np.mean(err**2))


def test_efpa_fallback_validates_before_any_randomness():
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="fallback"):
        publish([1, 2, 3], 1.0, "efpa", rng=rng, fallback="dawa")
    assert rng.bit_generator.state == before


# ---------------------------------------------------------------------------------------------
# AHP (ahp_greedy)
# ---------------------------------------------------------------------------------------------


def three_plateaus(heights, n_cells: int = 1024) -> np.ndarray:
    """Three plateaus of 32 cells (at 100, 400 and 800) on a histogram of zeros."""
    x = np.zeros(n_cells)
    for start, h in zip((100, 400, 800), heights, strict=True):
        x[start : start + 32] = h
    return x


def test_ahp_err_star_is_the_exhaustive_minimum():
    # 200 random sorted sequences (half zeros, ties from rounding), 4 measurement variances:
    # the early-terminated, run-skipping scan equals the minimum over every cluster end.
    from dpwidgets.engine.histograms import _ahp_err_star

    rng = np.random.default_rng(30)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        v = np.round(rng.normal(20, 10, n), int(rng.integers(0, 2)))
        v = np.sort(np.where(rng.random(n) < 0.5, 0.0, v))
        mv = float(rng.choice([0.5, 8.0, 800.0, 80000.0]))
        brute = [np.min((v[j] - np.cumsum(v[j:]) / np.arange(1, n - j + 1)) ** 2
                        + mv / np.arange(1, n - j + 1) ** 2) for j in range(n)]
        np.testing.assert_allclose(_ahp_err_star(v, mv), brute, rtol=1e-9, atol=1e-9)


def test_ahp_clustering_keeps_exact_plateaus_apart_from_zeros():
    # Noise-free sorted values: 900 zeros, then 32 x 20, 32 x 40, 32 x 60, measurement
    # variance 800 (epsilon2 = 0.05): exactly the four groups.
    from dpwidgets.engine.histograms import _greedy_sorted_clusters

    v = np.sort(three_plateaus((20, 40, 60)))
    labels = _greedy_sorted_clusters(v, 800.0)
    np.testing.assert_array_equal(labels, np.repeat([0, 1, 2, 3], [928, 32, 32, 32]))


def test_ahp_keeps_tall_plateaus_apart_and_beats_lm():
    # Regression test for the clustering that subtracted the first-stage noise variance of
    # cells thresholded to 0: the zeros' cluster swallowed the 20-plateau (its mean estimate
    # was ~10, cell MSE ~6.5 vs LM's 2). 1024 cells, plateaus 20/40/60, epsilon = 1, seed 4,
    # 10 runs: now each plateau's mean estimate is within 0.6 of the truth (we allow 2) and
    # the cell MSE is 0.24-0.47 over seeds 0-5 (we require < LM/2 ~ 1).
    x = three_plateaus((20, 40, 60))
    rng = np.random.default_rng(4)
    runs = [publish(x, 1.0, "ahp_greedy", rng=rng) for _ in range(10)]
    est = np.stack([r.counts for r in runs])
    for start, h in zip((100, 400, 800), (20, 40, 60), strict=True):
        assert abs(est[:, start : start + 32].mean() - h) < 2
    lm = mean_errors("lm", x, 1.0, 10, 4)[0]
    assert np.mean((est - x) ** 2) < lm / 2
    assert all(r.details["n_clusters"] >= 4 for r in runs)


def test_ahp_does_not_collapse_into_uniform_on_low_plateaus():
    # Plateaus 5/10/20 at epsilon = 0.5 (threshold 8): the old clustering made one cluster
    # in every run (exactly Uniform, MSE 15.2). Seed 5, 10 runs: measured MSE 6.3-6.9 over
    # seeds 0-5; we require < 0.6 x Uniform and plateau means in the right order.
    x = three_plateaus((5, 10, 20))
    rng = np.random.default_rng(5)
    est = np.stack([publish(x, 0.5, "ahp_greedy", rng=rng).counts for _ in range(10)])
    uniform = mean_errors("uniform", x, 0.5, 10, 5)[0]
    assert np.mean((est - x) ** 2) < 0.6 * uniform
    means = [est[:, s : s + 32].mean() for s in (100, 400, 800)]
    assert means[0] < means[1] < means[2]


def test_ahp_validates_its_threshold_before_any_randomness():
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="threshold"):
        publish([1, 2, 3], 1.0, "ahp_greedy", rng=rng, threshold=-1.0)
    assert rng.bit_generator.state == before


# ---------------------------------------------------------------------------------------------
# DAWA as published (Li, Hay, Miklau & Wang 2014, §3.2): not epsilon-DP
# ---------------------------------------------------------------------------------------------


def test_published_dawa_is_registered_as_not_private():
    pub = PUBLISHERS["dawa_published_not_private"]
    assert pub.private is False and "NOT" in pub.guarantee and pub.dims == (1,)
    assert all(p.private for k, p in PUBLISHERS.items() if k != "dawa_published_not_private")
    release = publish(np.arange(64.0) % 5, 1.0, "dawa_published_not_private",
                      rng=np.random.default_rng(0), workload="prefix")
    assert release.epsilon_parts == {"partition": 0.25, "measure": 0.75}
    assert release.counts.shape == (64,)
    with pytest.raises(ValueError, match="counts must be 1-D"):
        publish(np.ones((4, 4)), 1.0, "dawa_published_not_private")
    # The analyst release path runs inside floating_point_safe(): there it never runs, even
    # through a mechanism that does not check Publisher.private.
    from dpwidgets.engine.mechanisms import floating_point_safe

    with floating_point_safe(), pytest.raises(ValueError, match="not differentially private"):
        publish(np.arange(64.0), 1.0, "dawa_published_not_private")


@pytest.mark.parametrize(("n", "published"), [(4, 1.75), (16, 11.94), (256, 248.0),
                                              (4096, 4084.0)])
def test_published_dawa_all_singletons_log_ratio(n, published):
    # Exact: a histogram of zeros against one record in a middle cell, epsilon1 = 1, penalty
    # 1. The published calibration's loss grows like n (every power-of-2 interval holding the
    # cell moves its cost; the issue's own computation, with its own penalty, gave 2.1 and
    # 4089); dawa_dyadic's stays at epsilon1 (its noise is scaled to the whole cost vector).
    zeros = np.zeros(n)
    one = zeros.copy()
    one[n // 2 - 1] = 1
    loss = partition_singletons_log_ratio(one, zeros, 1.0)
    assert loss == pytest.approx(published, abs=0.01)
    assert loss > 1.0
    assert partition_singletons_log_ratio(zeros, one, 1.0) == pytest.approx(-loss)
    dyadic = partition_singletons_log_ratio(one, zeros, 1.0, method="dawa_dyadic")
    assert abs(dyadic) <= 1.0 + 1e-9


def test_published_dawa_log_ratio_matches_monte_carlo():
    # The exact probability of "all singletons" against the frequency of that output of
    # published_l1_partition: n = 4, epsilon1 = 0.2, penalty 1, 20,000 runs per histogram,
    # seed 7. Exact P = 0.0343 (zeros) and 0.0487 (one record in cell 1); the binomial s.e.
    # at 20,000 runs is 0.0013-0.0015, so 5 s.e. is the tolerance.
    from dpwidgets.engine.histograms import _log_laplace_tail, published_l1_partition

    rng = np.random.default_rng(7)
    zeros, one = np.zeros(4), np.array([0.0, 1.0, 0.0, 0.0])
    exact = {}
    for name, x in (("zeros", zeros), ("one", one)):
        ratio = partition_singletons_log_ratio(x, zeros, 0.2)
        log_p0 = float(np.sum(_log_laplace_tail(np.array([1.0, 1.0, 1.0, 3.0]), 10.0)))
        exact[name] = math.exp(log_p0 + ratio)
        runs = 20_000
        hits = sum(published_l1_partition(x, 0.2, 1.0, rng)[0].size == 4 for _ in range(runs))
        se = math.sqrt(exact[name] * (1 - exact[name]) / runs)
        assert abs(hits / runs - exact[name]) < 5 * se
    assert exact["one"] / exact["zeros"] == pytest.approx(math.exp(0.2 * 1.75))  # 1.75 eps1


def test_partition_singletons_log_ratio_validates():
    with pytest.raises(ValueError, match="same length"):
        partition_singletons_log_ratio(np.zeros(4), np.zeros(5), 1.0)
    with pytest.raises(ValueError, match="method"):
        partition_singletons_log_ratio(np.zeros(4), np.zeros(4), 1.0, method="dawa")
    with pytest.raises(ValueError, match="epsilon1"):
        partition_singletons_log_ratio(np.zeros(4), np.zeros(4), 0.0)
