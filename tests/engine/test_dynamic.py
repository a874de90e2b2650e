"""Tests for dpwidgets.engine.dynamic (Li 2017 Ch. 4: DSFT, DSAT, w-event DSAT, baselines).

Fast tests use small seeded series; the accuracy claims of Li 2017 §4.5 are checked in the
``slow`` tests on the census-like and moving-object generators (seeds, sizes and the reason
for each tolerance are stated in each test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets.engine.dynamic import (
    DSAT_DEFAULTS,
    PACED_DEFAULTS,
    budget_absorption_release,
    budget_distribution_release,
    dsat,
    dsat_w_event,
    dsft,
    dsft_k,
    empirical_update_rate,
    fixed_sampling_release,
    l1_sensitivity,
    normalised_l1,
    paced_k,
    random_range_queries,
    range_query_error,
    sampling_noise_floor,
    uniform_budget_release,
    update_ratio,
)
from dpwidgets.families.dynamic.standins import census_like_series, moving_object_series


@pytest.fixture(scope="module")
def census():
    # N = 120 snapshots of n = 50,000 tuples over age x income (288 bins); seed 11.
    return census_like_series(120, 50_000, population=300_000, attributes=("age", "income"),
                              rng=np.random.default_rng(11))


@pytest.fixture(scope="module")
def grid():
    # N = 150 steps of 5,000 objects on a 12 x 12 grid; seed 12.
    return moving_object_series(150, 5_000, grid=(12, 12), rng=np.random.default_rng(12))


def _repeats_between_releases(result) -> bool:
    rel, pts = result.releases, result.release_points
    return bool(pts[0]) and all(np.array_equal(rel[t], rel[t - 1]) for t in range(1, len(pts)) if not pts[t])


# ---------------------------------------------------------------------------------------------
# Budget accounting
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["dsft", "dsat", "dsat-text", "dsft-snapshot"])
@pytest.mark.parametrize("threshold", [0.0, 0.3, 2.0])
def test_user_level_spends_exactly_epsilon_with_at_most_c_releases(census, method, threshold):
    h, eps, c = census.histograms, 0.7, 6
    if method == "dsft":
        r = dsft(h, eps, c, threshold, np.random.default_rng(1), cardinality=census.cardinality)
    elif method == "dsft-snapshot":
        r = dsft(h, eps, c, threshold, np.random.default_rng(1), reference="snapshot", cardinality=census.cardinality)
    elif method == "dsat-text":
        r = dsat(h, eps, c, np.random.default_rng(1), threshold=threshold, variant="text", cardinality=census.cardinality)
    else:
        r = dsat(h, eps, c, np.random.default_rng(1), threshold=threshold, cardinality=census.cardinality)
    assert math.isclose(math.fsum(r.epsilon_parts.values()), eps, rel_tol=1e-12)
    assert math.isclose(math.fsum(r.release_epsilons) + r.epsilon_parts["decision"], eps, rel_tol=1e-12)
    assert 1 <= r.n_releases <= c
    assert np.all(r.release_epsilons[~r.release_points] == 0)
    assert _repeats_between_releases(r)
    # Either all C releases were used or the last time point spent what was left.
    assert r.n_releases == c or r.release_points[-1]


def test_dsft_unreachable_threshold_releases_first_and_last_point_only(census):
    # T = 2 is the largest possible distance; with Delta ~ 4e-5 the noise cannot reach it.
    h, eps, c = census.histograms, 1.0, 5
    r = dsft(h, eps, c, 2.0, np.random.default_rng(3), cardinality=census.cardinality)
    assert np.flatnonzero(r.release_points).tolist() == [0, h.shape[0] - 1]
    eps2 = r.epsilon_parts["release"]
    assert math.isclose(r.release_epsilons[0], eps2 / c)
    assert math.isclose(r.release_epsilons[-1], eps2 - eps2 / c)


def test_dsft_zero_threshold_spends_the_cutoff_then_repeats(census):
    # T = 0: every (noisy) distance to a noisy release passes; C releases at t = 0..C-1.
    r = dsft(census.histograms, 1.0, 4, 0.0, np.random.default_rng(4), cardinality=census.cardinality)
    assert np.flatnonzero(r.release_points).tolist() == [0, 1, 2, 3]
    assert np.all(r.releases[4:] == r.releases[3])


def test_decision_noise_is_standard_svt_with_c_minus_one_positives(census):
    h, eps, c = census.histograms, 1.0, 6
    r = dsft(h, eps, c, 0.5, np.random.default_rng(0), k=0.1, cardinality=census.cardinality)
    delta = l1_sensitivity(int(h.sum(axis=1).min()))
    eps1 = r.epsilon_parts["decision"]
    assert math.isclose(eps1, 0.1)
    assert math.isclose(r.details["threshold_scale"], 2 * delta / eps1)  # the text's Lap(2Δ/ε1)
    assert math.isclose(r.details["query_scale"], 4 * (c - 1) * delta / eps1)  # corrected
    assert math.isclose(r.details["release_scale"], c / (eps - eps1))


def test_dsft_decision_ratio_none_is_the_optimal_split(census):
    # decision_ratio=None: eps_query/eps_threshold = (2c)^(2/3) with c = C - 1 (Lyu, Su & Li
    # 2017 eq. 12); the SVT scales follow: threshold Delta (1 + r)/eps1, query
    # 2 c Delta (1 + r)/(r eps1). It used to run with 1.0.
    h, eps, c = census.histograms, 1.0, 6
    r = dsft(h, eps, c, 0.5, np.random.default_rng(0), k=0.1, decision_ratio=None, cardinality=census.cardinality)
    delta = l1_sensitivity(int(h.sum(axis=1).min()))
    ratio = (2 * (c - 1)) ** (2 / 3)
    eps1 = r.epsilon_parts["decision"]
    assert math.isclose(r.details["decision_ratio"], ratio)
    assert math.isclose(r.details["threshold_scale"], delta * (1 + ratio) / eps1)
    assert math.isclose(r.details["query_scale"], 2 * (c - 1) * delta * (1 + ratio) / (ratio * eps1))


def test_k_of_theorem_4_3_4():
    # Hand computation: n = 500,000, Delta = 2/(n-1), U = 27,648, C = 10, N = 500:
    # cbrt(n^2 Delta^2 (8 + 3200) / (U * 100)) = cbrt(4.000016 * 3208 / 2,764,800) = 0.16685.
    assert dsft_k(500_000, 27_648, 10, 500) == pytest.approx(0.16685, abs=5e-5)
    assert dsft_k(500_000, 10, 10, 500) == pytest.approx(1 - 10 / 500)  # the cap binds
    assert dsft_k(1000, 100, 50, 50) == 0.0  # C = N: nothing left for decisions


def test_paced_decision_noise_and_split(census):
    # Paced DSAT: distance to the snapshot (sensitivity 2 Delta), SVT split 1:(2c)^(2/3),
    # k from paced_k; the scales follow from the standard SVT with c = C - 1.
    h, eps, c = census.histograms, 0.5, 6
    r = dsat(h, eps, c, np.random.default_rng(0), cardinality=census.cardinality)
    n = int(h.sum(axis=1).min())
    delta = l1_sensitivity(n)
    ratio = (2 * (c - 1)) ** (2 / 3)
    eps1 = r.epsilon_parts["decision"]
    assert r.details["variant"] == "paced" and r.details["reference"] == "snapshot"
    assert math.isclose(r.details["sensitivity"], 2 * delta)
    assert math.isclose(r.details["decision_ratio"], ratio)
    assert math.isclose(eps1, paced_k(n, h.shape[1], c, eps) * eps)
    assert math.isclose(r.details["threshold_scale"], 2 * delta * (1 + ratio) / eps1)
    assert math.isclose(r.details["query_scale"], 2 * (c - 1) * 2 * delta * (1 + ratio) / (ratio * eps1))
    # paced_k's target: query noise = 0.1 x the on-schedule threshold T_s (unless clipped).
    t_s = r.details["schedule_threshold"]
    if PACED_DEFAULTS["k_min"] < r.details["k"] < PACED_DEFAULTS["k_max"]:
        assert math.isclose(r.details["query_scale"], 0.1 * t_s)
    text = dsat(h, eps, c, np.random.default_rng(0), variant="text", cardinality=census.cardinality)
    assert text.details["reference"] == "release" and math.isclose(text.details["sensitivity"], delta)
    assert text.details["k_rule"] == "Thm 4.3.4" and text.details["decision_ratio"] == 1.0


def test_paced_k_rule_by_hand():
    # n = 500,000, U = 3,456, C = 5: T_s = max(0.5, 2 * 1.1284 * sqrt(3456/5e5) = 0.1876) = 0.5;
    # Delta_d = 4/(n-1); r = 8^(2/3) = 4; eps1 = 2*4*Delta_d*5/(4*0.1*0.5) = 8.0e-4 -> k_min.
    assert paced_k(500_000, 3_456, 5, 1.0) == PACED_DEFAULTS["k_min"] == 0.01
    # n = 2,000, U = 16, C = 2: Delta_d = 4/1999, c = 1, r = 2^(2/3) = 1.5874;
    # eps1 = 2 * 0.0020010 * 2.5874 / (1.5874 * 0.05) = 0.13046.
    assert paced_k(2_000, 16, 2, 1.0) == pytest.approx(0.13046, rel=1e-4)
    assert paced_k(2_000, 16, 2, 0.1) == PACED_DEFAULTS["k_max"] == 0.5  # capped
    assert paced_k(2_000, 16, 1, 1.0) == 0.0  # C = 1: no decisions
    # Distance to the release halves the sensitivity and so eps1.
    assert paced_k(2_000, 16, 2, 1.0, reference="release") == pytest.approx(0.13046 / 2, rel=1e-4)
    with pytest.raises(ValueError, match="reference"):
        paced_k(2_000, 16, 2, 1.0, reference="nope")


def test_sampling_noise_floor_matches_simulation():
    # Two independent multinomial samples, n = 20,000 over U = 200 bins. Uniform p: the mean
    # normalised L1 over 400 pairs is within 2% of (2/sqrt(pi)) sqrt(U/n) = 0.11284 (the
    # normal approximation is good at 100 records per cell; the sd of the 400-pair mean is
    # ~0.1%). A skewed p stays below the bound (Cauchy-Schwarz).
    n, u = 20_000, 200
    rng = np.random.default_rng(0)
    floor = sampling_noise_floor(n, u)
    assert floor == pytest.approx(2 / math.sqrt(math.pi) * math.sqrt(u / n))
    for p, check in ((np.full(u, 1 / u), "equal"), (np.arange(1, u + 1) ** 2.0, "below")):
        p = p / p.sum()
        x, y = rng.multinomial(n, p, size=400), rng.multinomial(n, p, size=400)
        mean = float(np.abs(x - y).sum(axis=1).mean() / n)
        if check == "equal":
            assert mean == pytest.approx(floor, rel=0.02)
        else:
            assert mean < 0.9 * floor


def test_cutoff_one_spends_everything_on_the_first_release(census):
    # C = 1: the one release is time 1 and no decision is ever made, so k = 0 for every method
    # (Alg. 7 would charge k eps for nothing).
    h = census.histograms
    for r in (dsat(h, 0.8, 1, np.random.default_rng(0), cardinality=census.cardinality),
              dsat(h, 0.8, 1, np.random.default_rng(0), variant="text", cardinality=census.cardinality),
              dsft(h, 0.8, 1, 0.1, np.random.default_rng(0), cardinality=census.cardinality)):
        assert r.epsilon_parts["decision"] == 0 and r.details["k"] == 0
        assert np.flatnonzero(r.release_points).tolist() == [0]
        assert math.isclose(r.release_epsilons[0], 0.8)


def test_cutoff_equal_to_n_releases_every_point(census):
    h = census.histograms[:20]
    r = dsat(h, 1.0, 20, np.random.default_rng(0), cardinality=census.cardinality)
    assert r.release_points.all() and r.epsilon_parts["decision"] == 0
    assert np.allclose(r.release_epsilons, 1.0 / 20)


def test_baselines_budget(census):
    h, eps = census.histograms, 1.0
    u = uniform_budget_release(h, eps, np.random.default_rng(0))
    assert u.release_points.all() and math.isclose(u.release_epsilons.sum(), eps)
    f = fixed_sampling_release(h, eps, 8, np.random.default_rng(0))
    assert f.n_releases == 8 and math.isclose(f.release_epsilons.sum(), eps)
    assert np.flatnonzero(f.release_points).tolist() == [0, 15, 30, 45, 60, 75, 90, 105]
    assert _repeats_between_releases(f)


# ---------------------------------------------------------------------------------------------
# w-event privacy: every window of w time points is charged at most epsilon
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("w", [1, 7, 30, 200])
def test_w_event_windows_never_exceed_epsilon(grid, w):
    h, eps = grid.histograms, 0.8
    results = [
        budget_distribution_release(h, eps, w, np.random.default_rng(w)),
        budget_absorption_release(h, eps, w, np.random.default_rng(w)),
        dsat_w_event(h, eps, w, cutoff=1, rng=np.random.default_rng(w), threshold=0.1, cardinality=grid.cardinality),
    ]
    if w >= 7:
        results.append(dsat_w_event(h, eps, w, cutoff=3, rng=np.random.default_rng(w), threshold=0.0, cardinality=grid.cardinality))
    for r in results:
        assert r.window_epsilons.max() <= eps * (1 + 1e-12), r.method
        # Independent recomputation of the publication half from the per-point budgets.
        pub = r.release_epsilons
        windows = [pub[s : s + w].sum() for s in range(max(len(pub) - w + 1, 1))]
        limit = eps / 2 if r.method in ("bd", "ba") else r.epsilon_parts["release"]
        assert max(windows) <= limit * (1 + 1e-12), r.method
        assert _repeats_between_releases(r) or r.method in ("bd", "ba")
    dsat_w = results[-1]
    counts = [dsat_w.release_points[s : s + w].sum() for s in range(max(len(h) - w + 1, 1))]
    assert max(counts) <= dsat_w.cutoff


def test_budget_absorption_nullifies_after_absorbing(grid):
    # A BA publication with k units of eps/(2w) is followed by k - 1 silent points.
    w, eps = 10, 1.0
    r = budget_absorption_release(grid.histograms, eps, w, np.random.default_rng(5))
    unit = eps / (2 * w)
    pts = np.flatnonzero(r.release_points)
    assert pts.size >= 3
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        units = round(r.release_epsilons[a] / unit)
        assert 1 <= units <= w and b - a >= units


# ---------------------------------------------------------------------------------------------
# DSAT's threshold trajectory, reproducibility
# ---------------------------------------------------------------------------------------------


def test_text_dsat_threshold_stays_in_range_and_moves(census):
    for theta in (0.05, 0.5, 3.0):
        r = dsat(census.histograms, 1.0, 6, np.random.default_rng(2), theta=theta, burn_in=3,
                 variant="text", cardinality=census.cardinality)
        assert np.all((r.thresholds >= 0) & (r.thresholds <= 2))
        assert np.ptp(r.thresholds) > 0
        assert np.all(r.thresholds[:3] == 0.5)  # burn-in: no adjustment


@pytest.mark.parametrize("series", ["census", "grid"])
def test_text_dsat_releases_on_the_fixed_schedule(request, series):
    # The diagnosis of departure 6: Alg. 8's printed P term makes the release times a
    # function of N and C only -- within 5 points after j N / C on two unrelated series,
    # four seeds and two cutoffs (measured offsets: 2 to 4 points).
    h = request.getfixturevalue(series).histograms
    for seed in range(4):
        for c in (4, 6):
            r = dsat(h, 1.0, c, np.random.default_rng(seed), variant="text", k=0.05, cardinality=request.getfixturevalue(series).cardinality)
            points = np.flatnonzero(r.release_points)
            expected = np.arange(c) * len(h) / c
            assert points.size == c
            assert np.all((points >= expected) & (points <= expected + 5)), points


def test_paced_threshold_is_the_public_schedule(census):
    # T_i = min(2, T_s * 2^(C_i - 0.5 - C t / N)) from the public count and time only.
    h, c = census.histograms, 6
    r = dsat(h, 1.0, c, np.random.default_rng(3), threshold=0.2, cardinality=census.cardinality)
    t_s = r.details["schedule_threshold"]
    assert t_s == max(0.2, 2 * sampling_noise_floor(int(h.sum(axis=1).min()), h.shape[1]))
    count_before = np.concatenate([[0], np.cumsum(r.release_points)[:-1]])
    t = np.arange(len(h))
    expected = np.minimum(2.0, t_s * 2.0 ** (count_before - 0.5 - c * t / len(h)))
    assert np.allclose(r.thresholds[1:], expected[1:])
    assert np.all((r.thresholds >= 0) & (r.thresholds <= 2))


def test_dsat_w_threshold_in_range(grid):
    r = dsat_w_event(grid.histograms, 1.0, 40, cutoff=3, rng=np.random.default_rng(1), cardinality=grid.cardinality)
    assert np.all((r.thresholds >= 0) & (r.thresholds <= 2))


def test_seeded_runs_are_reproducible(census):
    a = dsat(census.histograms, 1.0, 5, np.random.default_rng(9), cardinality=census.cardinality)
    b = dsat(census.histograms, 1.0, 5, np.random.default_rng(9), cardinality=census.cardinality)
    assert np.array_equal(a.releases, b.releases) and np.array_equal(a.thresholds, b.thresholds)


def test_result_is_read_only(census):
    r = dsft(census.histograms, 1.0, 3, 0.5, np.random.default_rng(0), cardinality=census.cardinality)
    with pytest.raises(ValueError):
        r.releases[0, 0] = 1.0
    assert "user level" in r.guarantee and "user" in r.neighbours


def test_identity_baselines_are_one_vectorised_draw(census):
    # The N releases of eps/N are H + Lap(N/eps) per cell: one draw for the whole (N, U) series,
    # the same stream the per-snapshot calls drew (seed 4; exact equality, no tolerance).
    h = census.histograms
    r = uniform_budget_release(h, 2.0, np.random.default_rng(4))
    expected = h + np.random.default_rng(4).laplace(0.0, h.shape[0] / 2.0, h.shape)
    np.testing.assert_array_equal(r.releases, expected)
    f = fixed_sampling_release(h, 2.0, 4, np.random.default_rng(4))
    points = np.flatnonzero(f.release_points)
    drawn = h[points] + np.random.default_rng(4).laplace(0.0, 4 / 2.0, (points.size, h.shape[1]))
    np.testing.assert_array_equal(f.release_histograms, drawn)
    np.testing.assert_array_equal(f.releases, drawn[np.cumsum(f.release_points) - 1])


def test_other_publishers_release_each_snapshot_as_publish_does(census):
    # Validated once, then the registered publisher per snapshot: the same output as calling
    # histograms.publish on every row with the same generator (seed 6; exact equality).
    from dpwidgets.engine.histograms import publish

    h = census.histograms[:12]
    r = uniform_budget_release(h, 3.0, np.random.default_rng(6), publisher="hb")
    rng = np.random.default_rng(6)
    expected = np.stack([publish(row, 3.0 / 12, "hb", rng=rng).counts for row in h])
    np.testing.assert_array_equal(r.releases, expected)


def test_large_series_are_validated_whole_before_randomness():
    # Larger than one validation block: a bad cell in the last row is still found, by name.
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for bad in (0.5, -1.0, np.nan):
        h = np.ones((300, 400))
        h[-1, -1] = bad
        with pytest.raises(ValueError, match="histograms"):
            uniform_budget_release(h, 1.0, rng)
        with pytest.raises(ValueError, match="histograms"):
            dsat(h, 1.0, 3, rng, cardinality=400)
    assert rng.bit_generator.state == state


def test_release_histograms_and_lazy_series(grid):
    for r in (dsat(grid.histograms, 1.0, 4, np.random.default_rng(2), cardinality=grid.cardinality),
              budget_distribution_release(grid.histograms, 1.0, 20, np.random.default_rng(2)),
              uniform_budget_release(grid.histograms, 1.0, np.random.default_rng(2))):
        np.testing.assert_array_equal(r.release_histograms, r.releases[r.release_points])
        assert not r.releases.flags.writeable and not r.release_histograms.flags.writeable
        first = int(np.argmax(r.release_points))
        assert np.all(r.releases[:first] == 0)  # BD/BA: nothing published yet


def test_publisher_chosen_by_dimension(census):
    # Li, Hay, Miklau, Wang 2014's DAWA merges runs of adjacent cells: only on a 1-D histogram.
    from dpwidgets.engine.dynamic import PUBLISHER_RULE

    h = census.histograms  # 96 ages x 3 incomes, flattened to 288 cells
    flat = dsat(h, 1.0, 3, np.random.default_rng(0), publisher="auto", shape=census.shape, cardinality=census.cardinality)
    assert flat.publisher == "identity" and flat.details["publisher_rule"] == PUBLISHER_RULE
    one = dsat(h, 1.0, 3, np.random.default_rng(0), publisher="auto", shape=(288,), cardinality=census.cardinality)
    assert one.publisher == "dawa_dyadic" and "publisher_note" not in one.details
    unknown = uniform_budget_release(h, 1.0, np.random.default_rng(0), publisher="auto")
    assert unknown.publisher == "identity"  # no shape: the order of the cells is unknown
    # An explicit choice is kept, with a note; a singleton attribute is not a dimension.
    chosen = fixed_sampling_release(h, 1.0, 3, np.random.default_rng(0), publisher="dawa",
                                    shape=census.shape)
    assert chosen.publisher == "dawa_dyadic" and "flattened" in chosen.details["publisher_note"]
    assert "publisher_note" not in dsft(h, 1.0, 3, 0.5, np.random.default_rng(0),
                                        publisher="dawa", shape=(1, 288, 1),
                                        cardinality=census.cardinality).details


@pytest.mark.parametrize("shape", [(5, 5), (0, 288), "288", (2.5, 2)])
def test_bad_shape_refused_before_randomness(census, shape):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="shape"):
        dsat(census.histograms, 1.0, 3, rng, publisher="auto", shape=shape, cardinality=census.cardinality)
    assert rng.bit_generator.state == state


# ---------------------------------------------------------------------------------------------
# Quality measures
# ---------------------------------------------------------------------------------------------


def test_range_query_error_matches_brute_force():
    rng = np.random.default_rng(0)
    true = rng.integers(0, 20, size=(4, 3 * 4 * 5)).astype(float)
    released = true + rng.normal(0, 3, size=true.shape)
    shape = (3, 4, 5)
    lo, hi = random_range_queries(shape, 50, np.random.default_rng(1))
    expected = []
    for t in range(4):
        d = (released[t] - true[t]).reshape(shape)
        for q in range(50):
            box = d[lo[q, 0] : hi[q, 0], lo[q, 1] : hi[q, 1], lo[q, 2] : hi[q, 2]]
            expected.append(abs(box.sum()))
    got = range_query_error(true, released, shape=shape, queries=(lo, hi))
    assert got == pytest.approx(np.mean(expected), rel=1e-12)
    assert range_query_error(true, true, 10, np.random.default_rng(0)) == 0.0


def test_update_ratio_and_empirical_rate():
    assert update_ratio(np.array([True, False, True, False])).tolist() == [1.0, 0.5, 2 / 3, 0.5]
    h = np.array([[5, 5], [4, 6], [4, 6]])
    assert empirical_update_rate(h).tolist() == [0.2, 0.0]
    assert normalised_l1([1, 0], [0, 3]) == 2.0


# ---------------------------------------------------------------------------------------------
# Validation: ValueError naming the argument, before any randomness
# ---------------------------------------------------------------------------------------------


GOOD = np.array([[3, 4, 5], [4, 4, 4], [5, 3, 4]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"histograms": [[1, 2, 3], [1, 2]]}, "histograms"),
        ({"histograms": [1, 2, 3]}, "histograms"),
        ({"histograms": np.ones((2, 2, 2))}, "histograms"),
        ({"histograms": [[1, -2, 3], [1, 2, 3]]}, "histograms"),
        ({"histograms": [[1, 2.5, 3], [1, 2, 3]]}, "histograms"),
        ({"histograms": [[1, np.nan, 3], [1, 2, 3]]}, "histograms"),
        ({"histograms": np.zeros((0, 3))}, "histograms"),
        ({"histograms": [[1, 2, 3]]}, "histograms"),
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"cutoff": 0}, "cutoff"),
        ({"cutoff": 4}, "cutoff"),
        ({"cutoff": 1.5}, "cutoff"),
        ({"threshold": 2.5}, "threshold"),
        ({"threshold": -0.1}, "threshold"),
        ({"k": 1.0}, "k"),
        ({"cardinality": 100}, "cardinality"),
        ({"publisher": "nope"}, "publisher"),
    ],
)
def test_dsft_validation_before_randomness(kwargs, match):
    args = {"histograms": GOOD, "epsilon": 1.0, "cutoff": 2, "threshold": 0.5, "cardinality": 12,
            **kwargs}
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        dsft(args.pop("histograms"), args.pop("epsilon"), args.pop("cutoff"), args.pop("threshold"),
             rng, **args)
    assert rng.bit_generator.state == state


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda rng: dsat(GOOD, 1.0, 2, rng, burn_in=3, cardinality=12), "burn_in"),
        (lambda rng: dsat(GOOD, 1.0, 2, rng, theta=0, cardinality=12), "theta"),
        (lambda rng: dsat(GOOD, 1.0, 2, rng, delta=-1, cardinality=12), "delta"),
        (lambda rng: dsat(GOOD, 1.0, 2, rng, variant="pid", cardinality=12), "variant"),
        (lambda rng: dsat(GOOD, 1.0, 2, rng, reference="noisy", cardinality=12), "reference"),
        (lambda rng: dsat(GOOD, 1.0, 2, rng, gain=0, cardinality=12), "gain"),
        (lambda rng: dsat(GOOD, 1.0, 2, rng, decision_ratio=-1, cardinality=12), "decision_ratio"),
        (lambda rng: dsft(GOOD, 1.0, 2, 0.5, rng, reference="x", cardinality=12), "reference"),
        (lambda rng: dsat([[1, 2], [1, 2, 3]], 1.0, 1, rng, cardinality=12), "histograms"),
        (lambda rng: dsat_w_event(GOOD, 1.0, 0, rng=rng, cardinality=12), "w"),
        (lambda rng: dsat_w_event(GOOD, 1.0, 2.5, rng=rng, cardinality=12), "w"),
        (lambda rng: dsat_w_event(GOOD, 1.0, 3, cutoff=4, rng=rng, cardinality=12), "cutoff"),
        (lambda rng: dsat_w_event(GOOD, -1.0, 3, rng=rng, cardinality=12), "epsilon"),
        (lambda rng: budget_distribution_release(GOOD, 1.0, 0, rng), "w"),
        (lambda rng: budget_absorption_release(GOOD, 0.0, 2, rng), "epsilon"),
        (lambda rng: budget_absorption_release([[1, 2], [3]], 1.0, 2, rng), "histograms"),
        (lambda rng: uniform_budget_release([[1, -1]], 1.0, rng), "histograms"),
        (lambda rng: fixed_sampling_release(GOOD, 1.0, 0, rng), "cutoff"),
        (lambda rng: fixed_sampling_release(GOOD, 1.0, 5, rng), "cutoff"),
        (lambda rng: range_query_error(GOOD, GOOD, 5, rng, shape=(2, 2)), "shape"),
    ],
)
def test_other_validation_before_randomness(call, match):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        call(rng)
    assert rng.bit_generator.state == state


def test_defaults_are_the_texts():
    assert DSAT_DEFAULTS["N"] == 500 and DSAT_DEFAULTS["cutoff_fraction"] == 0.01
    assert DSAT_DEFAULTS["delta"] == 0.05 and DSAT_DEFAULTS["theta"] == 0.5
    assert DSAT_DEFAULTS["update_rate"] == 0.5
    r = dsat(np.tile(GOOD[0], (200, 1)), 1.0, rng=np.random.default_rng(0), variant="text", cardinality=12)
    assert r.cutoff == 2 and r.details["theta"] == 0.5 and r.details["delta"] == 0.05
    p = dsat(np.tile(GOOD[0], (200, 1)), 1.0, rng=np.random.default_rng(0), cardinality=12)  # N = 200
    assert p.cutoff == 2 and p.details["variant"] == "paced" and p.details["burn_in"] == 4
    assert p.details["gain"] == PACED_DEFAULTS["gain"] == math.log(2)


# ---------------------------------------------------------------------------------------------
# Accuracy claims of Li 2017 §4.5 (slow)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def census_full():
    # The text's setup scaled in N only: n = 500,000 tuples per snapshot, r = 0.5,
    # sigma^2 = 100K, 10 periods, 3-D marginal (age, education, income; U = 3,456), N = 300,
    # C = 0.01 N = 3. Seed 1. Generation takes about 0.5 s.
    return census_like_series(300, rng=np.random.default_rng(1))


def _mean_error(series, make, seeds=range(3), n_queries=1000):
    # The same 1,000 queries (seed 5) for every method; 3 release seeds each.
    queries = random_range_queries(series.shape, n_queries, np.random.default_rng(5))
    return float(np.mean([
        range_query_error(series.histograms, make(np.random.default_rng(s)).releases,
                          shape=series.shape, queries=queries)
        for s in seeds
    ]))


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_dsat_close_to_best_dsft_and_far_better_than_baseline(census_full, eps):
    # Li 2017 Fig. 4.3: DSAT ~ the best DSFT without knowing T; Fig. 4.4: the eps/N baseline is an
    # order of magnitude worse. Tolerance: DSAT within 25% of the best DSFT over a grid of T
    # (seed-to-seed spread of the mean of 3 runs is ~5-10%); baseline at least 10x DSAT.
    # Measured (paced DSAT): 199 vs best DSFT 236 at eps 0.5, 168 vs 178 at eps 1.
    h = census_full.histograms
    dsat_err = _mean_error(census_full, lambda rng: dsat(h, eps, None, rng, cardinality=census_full.cardinality))
    dsft_errs = {T: _mean_error(census_full, lambda rng, T=T: dsft(h, eps, None, T, rng, cardinality=census_full.cardinality))
                 for T in (0.01, 0.03, 0.06, 0.1, 0.2, 0.4)}
    assert dsat_err <= 1.25 * min(dsft_errs.values()), (dsat_err, dsft_errs)
    baseline = _mean_error(census_full, lambda rng: uniform_budget_release(h, eps, rng), seeds=[0])
    assert baseline >= 10 * dsat_err


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "Li 2017 Fig. 4.4-4.5 (DSAT beats fixed sampling) is not reproduced on the text's own data "
    "setup: tuples are replaced by tuples of the same population, so the snapshots differ only "
    "by sampling noise (normalised L1 ~0.045 however many tuples change) and there is no change "
    "point to find. Measured (3 seeds): paced DSAT 199 vs fixed 183 at eps 0.5, 168 vs 156 at "
    "eps 1; the text's DSAT releases every N/C points (test_text_dsat_releases_on_the_fixed_"
    "schedule) and pays k eps for the decisions. See test_dsat_beats_fixed_and_baseline_with_"
    "change_points for the series with real change points."
))
def test_dsat_beats_fixed_sampling_on_census_like_series(census_full):
    h = census_full.histograms
    for eps in (0.5, 1.0):
        dsat_err = _mean_error(census_full, lambda rng, e=eps: dsat(h, e, None, rng, cardinality=census_full.cardinality))
        fixed_err = _mean_error(census_full, lambda rng, e=eps: fixed_sampling_release(h, e, None, rng))
        assert dsat_err < fixed_err


@pytest.mark.slow
def test_dsat_beats_fixed_and_baseline_with_change_points():
    # The census-like series with real change points: drift = 0.25 (inserted tuples come from a
    # new population in each of the 10 periods), the text's N = 500, n = 500,000, r = 0.5,
    # 3-D marginal (U = 3,456), data seed 1; C = 0.01 N = 5; 1,000 queries (seed 5); 3 release
    # seeds per method. Measured ratio paced DSAT / fixed: 0.81-0.94 at eps 0.5 and
    # 0.86-0.88 at eps 1 over four disjoint triples of seeds, so a strict win has a margin of
    # 6% over the worst triple; the eps/N baseline is 2-5x worse than DSAT (asked: 1.5x).
    series = census_like_series(500, drift=0.25, rng=np.random.default_rng(1))
    h = series.histograms
    for eps in (0.5, 1.0):
        ours = _mean_error(series, lambda rng, e=eps: dsat(h, e, None, rng, cardinality=series.cardinality))
        fixed = _mean_error(series, lambda rng, e=eps: fixed_sampling_release(h, e, None, rng))
        base = _mean_error(series, lambda rng, e=eps: uniform_budget_release(h, e, rng), seeds=[0])
        assert ours < fixed, (eps, ours, fixed)
        assert base > 1.5 * ours, (eps, ours, base)


@pytest.mark.slow
def test_dsat_w_event_beats_bd_and_ba_at_large_w():
    # Li 2017 Fig. 4.8: the gap between DSAT and BD/BA grows with w. Moving objects (seed 2,
    # 50,000 objects, 32 x 32 grid, N = 400), w = 200, C = 8 per window, eps = 1, 3 seeds.
    # Measured: DSAT-w ~ 560, BD ~ 670, BA ~ 830; we ask for a strict win over both.
    series = moving_object_series(400, 50_000, rng=np.random.default_rng(2))
    h, w = series.histograms, 200
    ours = _mean_error(series, lambda rng: dsat_w_event(h, 1.0, w, cutoff=8, rng=rng, cardinality=series.cardinality))
    bd = _mean_error(series, lambda rng: budget_distribution_release(h, 1.0, w, rng))
    ba = _mean_error(series, lambda rng: budget_absorption_release(h, 1.0, w, rng))
    assert ours < bd and ours < ba, (ours, bd, ba)


# ---------------------------------------------------------------------------------------------
# The public snapshot size n is an argument, never read off the data (issue 24)
# ---------------------------------------------------------------------------------------------


_DISTANCE_METHODS = {
    "dsft": lambda h, rng, **kw: dsft(h, 1.0, 4, 0.3, rng, **kw),
    "dsat": lambda h, rng, **kw: dsat(h, 1.0, 4, rng, **kw),
    "dsat-text": lambda h, rng, **kw: dsat(h, 1.0, 4, rng, variant="text", **kw),
    "dsat_w_event": lambda h, rng, **kw: dsat_w_event(h, 1.0, 10, cutoff=3, rng=rng, **kw),
}


@pytest.mark.parametrize("method", sorted(_DISTANCE_METHODS))
def test_distance_methods_have_no_data_derived_cardinality(census, method):
    # Before: cardinality=None (the default) took the smallest snapshot total of the data.
    call = _DISTANCE_METHODS[method]
    h = census.histograms[:30]
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(TypeError, match="cardinality"):
        call(h, rng)
    with pytest.raises(ValueError, match="cardinality"):
        call(h, rng, cardinality=None)
    assert rng.bit_generator.state == state  # refused before any randomness


@pytest.mark.parametrize("method", sorted(_DISTANCE_METHODS))
def test_details_carry_only_the_public_cardinality(census, method):
    # One user added to every snapshot (the outside audit's neighbour) moves the smallest
    # snapshot total from 5,000 to 5,001; with the same declared n, every number the release
    # derives from n (Delta, k, the noise scales, the floor) must be exactly the same, and
    # details["cardinality"] is the declared n, not a total of the data.
    call = _DISTANCE_METHODS[method]
    h = census.histograms[:30].copy()
    plus = h.copy()
    plus[:, 0] += 1
    n = census.cardinality - 500  # a declared lower bound below the true size
    a = call(h, np.random.default_rng(1), cardinality=n)
    b = call(plus, np.random.default_rng(1), cardinality=n)
    assert a.details["cardinality"] == b.details["cardinality"] == n
    assert a.details["sensitivity"] == b.details["sensitivity"]
    # Delta = 2/(n-1) to the last release, 2 Delta to the true snapshot (paced DSAT).
    assert a.details["sensitivity"] in (l1_sensitivity(n), 2 * l1_sensitivity(n))
    for key in ("k", "epsilon1", "epsilon2", "threshold_scale", "query_scale", "release_scale",
                "noise_floor", "schedule_threshold"):
        if key in a.details:
            assert a.details[key] == b.details[key], key
