"""Tests for dpwidgets.engine.personalized (Li 2017 Ch. 5: personalized differential privacy).

Every seed is fixed, so each test is deterministic; the statistical tests state their seed,
sample size, number of trials and why their tolerance holds.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from dpwidgets.engine.mechanisms import floating_point_safe
from dpwidgets.engine.personalized import (
    METHODS,
    WEIGHT_UNIT,
    count_utility,
    erm_utility,
    misclassification_rate,
    personalized_histogram,
    personalized_logistic_regression,
    plan_releases,
    privacy_aware_partition,
    relative_frequency_error,
    sample_records,
    sampling_probabilities,
    utility_partition,
    wasted_budget,
    weighted_histogram,
)
from dpwidgets.families.personalized.standins import figure_5_1, load_fair_logistic

EDGES = np.linspace(-4.0, 4.0, 17)


def _data(n: int, seed: int, low: float = 0.01, high: float = 1.0):
    rng = np.random.default_rng(seed)
    values = np.clip(rng.standard_normal(n), -4.0, 4.0)
    budgets = rng.uniform(low, high, n)
    return values, budgets


# ---------------------------------------------------------------------------------------------
# Validation happens before any randomness (the generator's state is unchanged)
# ---------------------------------------------------------------------------------------------

_V, _B = _data(200, 1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"budgets": np.r_[_B[:-1], 0.0]}, "budgets"),
        ({"budgets": np.r_[_B[:-1], -0.5]}, "budgets"),
        ({"budgets": np.r_[_B[:-1], np.nan]}, "budgets"),
        ({"budgets": _B[:-1]}, "budgets"),
        ({"values": np.r_[_V[:-1], np.nan]}, "values"),
        ({"values": np.r_[_V[:-1], 9.0]}, "bins must cover"),
        ({"values": np.array([]), "budgets": np.array([])}, "values"),
        ({"bins": 16}, "value_range"),
        ({"bins": 16, "value_range": (-1.0, 1.0)}, "bins must cover"),
        ({"bins": np.array([0.0, 0.0, 1.0])}, "bins"),
        ({"method": "maximum"}, "method"),
        ({"method": "sampling", "threshold": 5.0}, "threshold"),
        ({"method": "sampling", "threshold": 0.001}, "threshold"),
        ({"method": "utility", "threshold": 0.5}, "threshold"),
        ({"method": "sampling", "rounds": 2}, "rounds"),
        ({"rounds": 0}, "rounds"),
        ({"ensemble": "median"}, "ensemble"),
        ({"ensemble": "sum", "rounds": 2, "method": "privacy_aware"}, "ensemble"),
        ({"min_size": 0}, "min_size"),
        ({"min_size": 201}, "min_size"),
        ({"max_partitions": 0}, "max_partitions"),
        ({"utility": "auc"}, "utility"),
        ({"method": "weighted", "threshold": 0.5}, "threshold"),
        ({"method": "weighted", "rounds": 2}, "rounds"),
    ],
)
def test_histogram_validation_before_noise(kwargs, match):
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    args = {"values": _V, "budgets": _B, "bins": EDGES, **kwargs}
    with pytest.raises(ValueError, match=match):
        personalized_histogram(args.pop("values"), args.pop("budgets"), args.pop("bins"),
                               rng=rng, **args)
    assert rng.bit_generator.state == before


def test_integer_bins_with_public_range_match_edges():
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    a = personalized_histogram(_V, _B, 16, "minimum", value_range=(-4.0, 4.0), rng=rng_a)
    b = personalized_histogram(_V, _B, EDGES, "minimum", rng=rng_b)
    assert np.array_equal(a.edges, EDGES) and np.array_equal(a.counts, b.counts)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"data_norm": None}, "data_norm"),
        ({"data_norm": -1.0}, "data_norm"),
        ({"y": np.full(200, 2)}, "y"),
        ({"X": np.full((200, 3), np.nan)}, "X"),
        ({"budgets": _B[:10]}, "budgets"),
        ({"ensemble": "stack"}, "ensemble"),
    ],
)
def test_logistic_validation_before_noise(kwargs, match):
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    args = {"X": np.zeros((200, 3)), "y": np.arange(200) % 2, "budgets": _B, "data_norm": 1.0,
            **kwargs}
    with pytest.raises(ValueError, match=match):
        personalized_logistic_regression(args.pop("X"), args.pop("y"), args.pop("budgets"),
                                         rng=rng, **args)
    assert rng.bit_generator.state == before


# ---------------------------------------------------------------------------------------------
# Budget accounting: every record enjoys at most what it asked for
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "rounds"),
    [(m, 1) for m in METHODS] + [(m, 3) for m in ("minimum", "privacy_aware", "utility")],
)
def test_enjoyed_never_exceeds_asked(method, rounds):
    values, budgets = _data(5_000, 2)
    result = personalized_histogram(values, budgets, EDGES, method, rounds=rounds,
                                     rng=np.random.default_rng(4))
    assert result.enjoyed.shape == budgets.shape
    assert np.all(result.enjoyed <= budgets) and np.all(result.enjoyed >= 0)
    plan = result.details["plan"]
    # What the releases say each record spent adds up to ``enjoyed`` (sequential composition).
    if method in ("minimum", "privacy_aware", "utility"):
        spent = np.zeros_like(budgets)
        for members, eps in zip(plan.partitions, plan.epsilons, strict=True):
            assert eps == pytest.approx(float(np.min(budgets[members] - spent[members])), rel=1e-12)
            spent[members] += eps
        assert np.allclose(spent, result.enjoyed, rtol=0, atol=0)
        # Releases of one round are disjoint.
        for t in np.unique(plan.rounds):
            members = np.concatenate([p for p, r in zip(plan.partitions, plan.rounds, strict=True) if r == t])
            assert np.unique(members).size == members.size
    assert set(result.epsilon_parts.values()) <= set(plan.epsilons.tolist())


def test_enjoyed_by_method_matches_the_proofs():
    values, budgets = _data(3_000, 5)
    t = 0.4
    samp = personalized_histogram(values, budgets, EDGES, "sampling", threshold=t, rng=np.random.default_rng(1))
    assert np.array_equal(samp.enjoyed, np.minimum(budgets, t))
    thr = personalized_histogram(values, budgets, EDGES, "threshold", threshold=t, rng=np.random.default_rng(1))
    assert np.array_equal(thr.enjoyed, np.where(budgets >= t, t, 0.0))
    assert np.array_equal(thr.partitions[0], np.flatnonzero(budgets >= t))
    mini = personalized_histogram(values, budgets, EDGES, "minimum", rng=np.random.default_rng(1))
    assert np.all(mini.enjoyed == budgets.min()) and mini.epsilon_parts == {"round1/part0": budgets.min()}


def test_t_round_uses_more_budget_each_round():
    _, budgets = _data(20_000, 6)
    used = [plan_releases(budgets, "privacy_aware", rounds=r).enjoyed.sum() / budgets.sum()
            for r in (1, 2, 3)]
    assert used[0] < used[1] < used[2] <= 1.0
    # Li 2017 §5.2.3: the left-over budget shrinks fast; 16 parts already use > 90% of it.
    assert used[0] > 0.9 and used[2] > 0.99


# ---------------------------------------------------------------------------------------------
# Reproducibility and trivial cases
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_seeded_runs_are_bit_identical(method):
    values, budgets = _data(4_000, 7)
    a = personalized_histogram(values, budgets, EDGES, method, rng=np.random.default_rng(9))
    b = personalized_histogram(values, budgets, EDGES, method, rng=np.random.default_rng(9))
    c = personalized_histogram(values, budgets, EDGES, method, rng=np.random.default_rng(10))
    assert np.array_equal(a.counts, b.counts)
    assert not np.array_equal(a.counts, c.counts)


def test_equal_budgets_reduce_every_partitioning_to_minimum():
    values, _ = _data(2_000, 8)
    budgets = np.full(values.size, 0.3)
    ref = personalized_histogram(values, budgets, EDGES, "minimum", rng=np.random.default_rng(2))
    for method in ("privacy_aware", "utility"):
        out = personalized_histogram(values, budgets, EDGES, method, rng=np.random.default_rng(2))
        assert len(out.partitions) == 1 and np.array_equal(out.counts, ref.counts)


def test_sum_ensemble_adds_the_partition_releases():
    values, budgets = _data(4_000, 9)
    out = personalized_histogram(values, budgets, EDGES, "privacy_aware", ensemble="sum",
                                 rng=np.random.default_rng(3))
    assert np.allclose(out.counts, out.release_counts.sum(axis=0))


def test_plan_is_reusable_and_checked():
    values, budgets = _data(3_000, 10)
    plan = plan_releases(budgets, "utility", utility_options={"cell_variance": 1 / 16 * 15 / 16})
    a = personalized_histogram(values, budgets, EDGES, plan=plan, rng=np.random.default_rng(5))
    b = personalized_histogram(values, budgets, EDGES, "utility", rng=np.random.default_rng(5))
    assert np.array_equal(a.counts, b.counts)
    with pytest.raises(ValueError, match="plan"):
        personalized_histogram(values, budgets[::-1], EDGES, plan=plan, rng=np.random.default_rng(5))


# ---------------------------------------------------------------------------------------------
# Partitioning: Alg. 10 / Alg. 11 against brute force, contiguity, wasted budget
# ---------------------------------------------------------------------------------------------


def _brute_force(budgets: np.ndarray, k: int, score, min_size: int = 1):
    """Best contiguous k-partition of the sorted budgets by enumeration."""
    b = np.sort(budgets)
    n = b.size
    best, best_cuts = None, None
    for inner in itertools.combinations(range(1, n), k - 1):
        cuts = (0, *inner, n)
        if min(np.diff(cuts)) < min_size:
            continue
        value = score(b, cuts)
        if best is None or value < best - 1e-12:
            best, best_cuts = value, cuts
    return best, best_cuts


def _waste(b, cuts):
    return sum(float(np.sum((b[a:c] - b[a]) ** 2)) for a, c in zip(cuts[:-1], cuts[1:], strict=True))


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_alg10_matches_brute_force(k):
    budgets = np.random.default_rng(20 + k).uniform(0.01, 1.0, 12)
    part = privacy_aware_partition(budgets, k=k, min_size=1)
    best, cuts = _brute_force(budgets, k, _waste)
    assert part.exact and part.k == k
    assert part.objective == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert tuple(part.bounds) == cuts
    assert wasted_budget(budgets, part.labels) == pytest.approx(best, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("k", [2, 3])
def test_alg11_matches_brute_force(k):
    budgets = np.random.default_rng(30 + k).uniform(0.01, 1.0, 12)

    def neg_utility(b, cuts):
        return -sum(float(count_utility(c - a, b[a], cell_variance=0.05))
                    for a, c in zip(cuts[:-1], cuts[1:], strict=True))

    part = utility_partition(budgets, k=k, min_size=2, utility_options={"cell_variance": 0.05})
    best, cuts = _brute_force(budgets, k, neg_utility, min_size=2)
    assert part.objective == pytest.approx(-best, rel=1e-9)
    assert tuple(part.bounds) == cuts


def test_privacy_aware_wastes_less_than_minimum_and_is_contiguous():
    _, budgets = _data(100_000, 11)
    part = privacy_aware_partition(budgets)
    assert not part.exact  # 100,000 distinct budgets: cuts on 1,024 quantile boundaries
    minimum_waste = wasted_budget(budgets, np.zeros(budgets.size, dtype=np.int64))
    assert part.objective <= minimum_waste
    assert wasted_budget(budgets, part.labels) == pytest.approx(part.objective, rel=1e-6)
    # Contiguous in sorted budget order: partition i's largest budget <= partition i+1's smallest.
    highs = np.array([budgets[idx].max() for idx in part.indices()])
    lows = np.array([budgets[idx].min() for idx in part.indices()])
    assert np.all(highs[:-1] <= lows[1:])
    assert np.array_equal(lows, part.epsilons)
    assert np.all(part.sizes >= part.min_size) and part.sizes.sum() == budgets.size
    # Eq. (5.2.3) picks the k minimising sum_i W_i / n_i among the k searched.
    assert part.selection[part.k - 1] == np.nanmin(part.selection)


def test_figure_5_1_waste_by_hand():
    budgets = figure_5_1()["budget"].to_numpy()
    labels = np.array([0, 0, 1, 1, 1, 2, 2, 2])
    by_hand = 0.01**2 + (0.02**2 + 0.04**2) + (0.03**2 + 0.04**2)
    assert wasted_budget(budgets, labels) == pytest.approx(by_hand)
    part = privacy_aware_partition(budgets, k=3, min_size=2)
    assert part.objective <= by_hand + 1e-15


@pytest.mark.parametrize("k", [2, 3, 5])
def test_t_round_theorem_bound_one_round(k):
    # Li 2017 §5.2.3: sum_l (eps_l^1)^2 <= n / (n - 1 + k^2) * sum_l eps_l^2 for the optimal
    # k-partition (the left-over budget of record l is eps_l - min of its partition).
    budgets = np.random.default_rng(40 + k).uniform(0.01, 1.0, 300)
    part = privacy_aware_partition(budgets, k=k, min_size=1, max_groups=1024)
    left = budgets - part.epsilons[part.labels]
    n = budgets.size
    assert np.sum(left**2) <= n / (n - 1 + k * k) * np.sum(budgets**2)


def test_partitioning_100k_budgets_is_fast_enough():
    import time

    _, budgets = _data(100_000, 12)
    start = time.perf_counter()
    privacy_aware_partition(budgets)
    utility_partition(budgets)
    # ~0.3 s each on a 2-core machine; a generous bound keeps this from being flaky.
    assert time.perf_counter() - start < 20.0


# ---------------------------------------------------------------------------------------------
# Statistical behaviour
# ---------------------------------------------------------------------------------------------


def test_sampling_inclusion_probabilities_match_formula():
    # Seed 13; 4 budget levels x 50,000 records. The empirical inclusion rate of each level
    # must be within 5 binomial standard errors (sqrt(p(1-p)/50,000) <= 0.0023) of
    # (e^eps - 1)/(e^eps_T - 1); a wrong formula (e.g. eps/eps_T) is off by > 0.01.
    levels = np.array([0.05, 0.2, 0.45, 0.8])
    budgets = np.repeat(levels, 50_000)
    threshold = 0.45
    formula = np.where(levels < threshold, np.expm1(levels) / np.expm1(threshold), 1.0)
    assert np.allclose(sampling_probabilities(budgets, threshold), np.repeat(formula, 50_000))
    kept = sample_records(budgets, threshold, np.random.default_rng(13)).reshape(4, -1)
    rates = kept.mean(axis=1)
    se = np.sqrt(formula * (1 - formula) / 50_000)
    assert np.all(np.abs(rates - formula) <= 5 * se + 1e-12)
    assert np.all(kept[2:]) and np.abs(rates[1] - 0.2 / 0.45) > 0.01


def test_sampling_estimate_is_unbiased_for_the_total():
    # Seed 14, n = 20,000, U(0.01, 1) budgets, 40 trials at the mean threshold: the scaled
    # total n * (noisy sample total) / sum p must average n within 5 standard errors.
    values, budgets = _data(20_000, 14)
    rng = np.random.default_rng(14)
    totals = np.array([personalized_histogram(values, budgets, EDGES, "sampling", rng=rng).counts.sum()
                       for _ in range(40)])
    assert abs(totals.mean() - values.size) <= 5 * totals.std(ddof=1) / math.sqrt(totals.size)


def test_privacy_aware_beats_minimum_on_100k_records():
    # Seed 15; n = 100,000 records, budgets U(0.01, 1), 16 bins, 5 trials each. Minimum adds
    # Lap(2/0.01) per bin (mean |error| ~200 counts); privacy-aware partitions at mostly large
    # budgets and the inverse-variance ensemble measures ~30. Requiring half of Minimum's
    # mean absolute error leaves a 3x margin over the sampling noise of a 5 x 16-bin mean.
    values, budgets = _data(100_000, 15)
    truth = np.histogram(values, EDGES)[0]
    rng = np.random.default_rng(15)
    plan = plan_releases(budgets, "privacy_aware")

    def error(method, plan=None):
        return np.mean([np.mean(np.abs(personalized_histogram(values, budgets, EDGES, method,
                                                              plan=plan, rng=rng).counts - truth))
                        for _ in range(5)])

    minimum, aware = error("minimum"), error("privacy_aware", plan)
    assert aware < 0.5 * minimum


def test_relative_frequency_error_by_hand():
    true = np.array([[1.0, 2.0], [3.0, 4.0]]).ravel()
    noisy = true + np.array([1.0, -1.0, 0.5, 0.0])
    queries = (np.array([[0, 0], [1, 0]]), np.array([[2, 2], [2, 1]]))
    # Query 1 covers every cell (error 0.5), query 2 cell (1, 0) (error 0.5); n = 10.
    rfe = relative_frequency_error(true, noisy, shape=(2, 2), queries=queries)
    assert rfe == pytest.approx(0.05)
    assert relative_frequency_error(true, true, shape=(2, 2), queries=queries) == 0.0


# ---------------------------------------------------------------------------------------------
# Logistic regression
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fair():
    return load_fair_logistic()


@pytest.mark.parametrize("method", METHODS)
def test_logistic_methods_run_and_respect_budgets(fair, method):
    budgets = np.random.default_rng(16).uniform(0.5, 5.0, fair.n)
    clf = personalized_logistic_regression(fair.X, fair.y, budgets, method, data_norm=1.0,
                                           rng=np.random.default_rng(16))
    assert np.all(clf.enjoyed <= budgets)
    assert clf.weights.sum() == pytest.approx(1.0) and len(clf.models) == len(clf.partitions)
    pred = clf.predict(fair.X)
    assert pred.shape == fair.y.shape and set(np.unique(pred)) <= {0, 1}
    rate = clf.misclassification_rate(fair.X, fair.y)
    assert rate == misclassification_rate(fair.y, pred)
    # Large budgets: the private model must be close to the non-private error (0.276) and
    # clearly better than always predicting 0 (0.322).
    assert rate < 0.31


def test_logistic_refuses_a_fit_that_did_not_converge(fair):
    # Objective perturbation is DP for the exact minimiser only: one L-BFGS iteration does not
    # reach it (the fits take 10-35 at tol 1e-8), and the release must be refused, not
    # released with the ConvergenceWarning silenced. Budgets U(0.5, 5), seed 16.
    budgets = np.random.default_rng(16).uniform(0.5, 5.0, fair.n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is silenced into a warning either
        with pytest.raises(ValueError, match="max_iter"):
            personalized_logistic_regression(fair.X, fair.y, budgets, "minimum", data_norm=1.0,
                                             rng=np.random.default_rng(16), max_iter=1)


def test_logistic_is_reproducible(fair):
    budgets = np.random.default_rng(17).uniform(0.1, 1.0, fair.n)
    a = personalized_logistic_regression(fair.X, fair.y, budgets, "utility", data_norm=1.0,
                                         rng=np.random.default_rng(3))
    b = personalized_logistic_regression(fair.X, fair.y, budgets, "utility", data_norm=1.0,
                                         rng=np.random.default_rng(3))
    for ma, mb in zip(a.models, b.models, strict=True):
        assert np.array_equal(ma.coef_, mb.coef_)


def test_erm_utility_prefers_more_records_and_budget():
    u = erm_utility(np.array([1000, 2000, 1000]), np.array([0.5, 0.5, 1.0]), dimension=9)
    assert u[1] > u[0] and u[2] > u[0]


# ---------------------------------------------------------------------------------------------
# Weighted (Alaggan, Gambs & Kermarrec 2016): one release, records weighted eps_j / eps_max
# ---------------------------------------------------------------------------------------------


def test_weighted_enjoyed_is_the_rounded_weight_and_never_exceeds_asked():
    """Record j enjoys w_j eps_max with w_j = eps_j / eps_max rounded down to the unit: at most
    its budget, at most one unit (times eps_max) below it; the top record spends all of it."""
    values, budgets = _data(20_000, 21)
    # Budgets on the unit grid themselves, where float rounding of eps_j / eps_max could lift
    # a weight by an ulp above the exact ratio.
    budgets[:5_000] = np.max(budgets) * WEIGHT_UNIT * np.arange(10_000, 15_000)
    result = weighted_histogram(values, budgets, EDGES, rng=np.random.default_rng(2))
    plan = result.details["plan"]
    top = float(np.max(budgets))
    assert np.all(result.enjoyed <= budgets)
    assert np.all(result.enjoyed >= budgets - WEIGHT_UNIT * top * (1 + 1e-9))
    assert result.enjoyed[np.argmax(budgets)] == top and np.max(result.enjoyed) == top
    np.testing.assert_array_equal(plan.weights * top, result.enjoyed)
    units = plan.weights / WEIGHT_UNIT
    np.testing.assert_array_equal(units, np.floor(units))  # whole units: exact sums
    # One release of every record at eps_max: what the plan states it spends.
    assert len(result.partitions) == 1 and result.partitions[0].size == budgets.size
    assert result.epsilon_parts == {"weighted": top}
    assert "Alaggan" in result.guarantee and "replace-one" in result.neighbours


def test_weighted_noise_is_laplace_two_over_the_top_budget_per_cell():
    """The loss of record j is (L1 change 2 w_j) / (noise scale): the proof needs the noise of
    the weighted histogram to be Lap(2 / eps_max), variance 8 / eps_max^2. Seed 23, n = 2,000,
    16 cells, 400 trials = 6,400 draws: the sample variance of Laplace noise has relative s.d.
    sqrt(5 / 6400) ~ 2.8%; 15% is over 5 s.d."""
    values, budgets = _data(2_000, 23)
    rng = np.random.default_rng(23)
    plan = plan_releases(budgets, "weighted")
    cell = np.clip(np.searchsorted(EDGES, values, side="right") - 1, 0, EDGES.size - 2)
    truth = np.bincount(cell, weights=plan.weights, minlength=EDGES.size - 1)
    noise = np.stack([weighted_histogram(values, budgets, EDGES, rng=rng, plan=plan)
                      .release_counts[0] - truth for _ in range(400)])
    top = float(np.max(budgets))
    assert noise.var() == pytest.approx(8.0 / top**2, rel=0.15)
    assert abs(noise.mean()) <= 5 * math.sqrt(8.0 / top**2 / noise.size)


def test_weighted_estimate_is_unbiased_when_budgets_are_assigned_independently():
    """E[estimate] = H when the privacy vector is assigned to the records independently of
    their values (each trial: a random permutation of a fixed U(0.01, 1) vector, fresh noise).
    Seed 24, n = 2,000, 16 cells, 400 trials; each cell's mean must be within 5 standard
    errors (its own sample s.d. / sqrt(400)) of the true count: a false alarm in any of the
    16 cells has probability < 16 * 6e-7."""
    values, budgets = _data(2_000, 24)
    rng = np.random.default_rng(24)
    truth = np.histogram(values, bins=EDGES)[0]
    estimates = np.stack([
        weighted_histogram(values, rng.permutation(budgets), EDGES, rng=rng).counts
        for _ in range(400)
    ])
    se = estimates.std(axis=0, ddof=1) / math.sqrt(estimates.shape[0])
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= 5 * se)
    # The rescaling n / sum w_j is public: the total estimate is unbiased for n as well.
    totals = estimates.sum(axis=1)
    assert abs(totals.mean() - values.size) <= 5 * totals.std(ddof=1) / math.sqrt(totals.size)


def test_weighted_is_the_personalized_histogram_method_and_is_reproducible():
    values, budgets = _data(4_000, 25)
    a = weighted_histogram(values, budgets, EDGES, rng=np.random.default_rng(9))
    b = personalized_histogram(values, budgets, EDGES, "weighted", rng=np.random.default_rng(9))
    c = weighted_histogram(values, budgets, EDGES, rng=np.random.default_rng(10))
    assert np.array_equal(a.counts, b.counts) and not np.array_equal(a.counts, c.counts)
    assert a.method == "weighted" and a.ensemble == "scaled"
    np.testing.assert_allclose(a.counts, a.weights[0] * a.release_counts[0], rtol=1e-12)


def test_weighted_is_floating_point_safe_noise_on_whole_units():
    """Inside floating_point_safe() the noise added to the (whole) weight units lies on the
    grid sampler's power-of-two grid: the released weighted histogram over WEIGHT_UNIT is a
    multiple of a data-independent step whatever the data (Mironov 2012)."""
    values, budgets = _data(1_000, 26)
    with floating_point_safe():
        out = weighted_histogram(values, budgets, EDGES, rng=np.random.default_rng(1))
    units = out.release_counts[0] / WEIGHT_UNIT
    top = float(np.max(budgets))
    step = 2.0 ** math.floor(math.log2(min(1.0, 2.0 / (top * WEIGHT_UNIT) / 2**20)))
    np.testing.assert_array_equal(units / step, np.round(units / step))


def test_weighted_plans_are_refused_where_they_do_not_apply():
    values, budgets = _data(200, 27)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="plan"):
        weighted_histogram(values, budgets, EDGES, rng=rng, plan=plan_releases(budgets, "minimum"))
    with pytest.raises(ValueError, match="method"):
        personalized_logistic_regression(np.zeros((200, 2)), np.arange(200) % 2, budgets,
                                         "weighted", data_norm=1.0, rng=rng)
    with pytest.raises(ValueError, match="histograms only"):
        personalized_logistic_regression(np.zeros((200, 2)), np.arange(200) % 2, budgets,
                                         data_norm=1.0, rng=rng,
                                         plan=plan_releases(budgets, "weighted"))
    assert rng.bit_generator.state == before


# -- speed (issue 13): a plan given the sort order, bins by arithmetic --------------------------
def _ties(n: int, seed: int) -> np.ndarray:
    """Budgets with many ties (rounded to 0.05) and a lump at the top."""
    rng = np.random.default_rng(seed)
    b = np.round(rng.uniform(0.01, 1.0, n) / 0.05) * 0.05 + 0.01
    b[rng.random(n) < 0.2] = 1.0
    return b


@pytest.mark.parametrize(("method", "rounds"), [("privacy_aware", 1), ("utility", 1),
                                                ("utility", 2), ("privacy_aware", 3)])
def test_a_plan_given_the_sort_order_is_the_same_plan(method, rounds):
    capped = np.minimum(_ties(5000, 2), 0.6)
    given = plan_releases(capped, method, rounds=rounds, max_groups=64,
                          order=np.argsort(capped, kind="stable"))
    plain = plan_releases(capped, method, rounds=rounds, max_groups=64)
    for field in ("labels", "enjoyed", "epsilons", "rounds"):
        assert np.array_equal(getattr(given, field), getattr(plain, field)), field
    assert all(np.array_equal(a, c) for a, c in zip(given.partitions, plain.partitions,
                                                     strict=True))
    assert np.array_equal(given.partitionings[0].order, plain.partitionings[0].order)


def test_a_wrong_sort_order_is_refused():
    b = _ties(200, 3)
    good = np.argsort(b, kind="stable")
    tied = np.flatnonzero(b[good][1:] == b[good][:-1])[0]
    swapped = good.copy()
    swapped[[tied, tied + 1]] = swapped[[tied + 1, tied]]  # sorted, but not stable
    for order, match in ((good[::-1], "stable sort order"), (swapped, "stable sort order"),
                         (np.zeros(200, dtype=int), "permutation"), (good[:-1], "record")):
        with pytest.raises(ValueError, match=match):
            plan_releases(b, "utility", order=order)


@pytest.mark.parametrize("edges", [np.arange(2049) - 0.5, np.linspace(-4.0, 4.0, 17),
                                   np.linspace(0.1, 0.7, 1001), np.array([0.0, 1.0, 5.0, 6.0])])
def test_bins_by_arithmetic_are_numpy_histograms(edges):
    from dpwidgets.engine.personalized import _bin_index

    rng = np.random.default_rng(4)
    values = np.concatenate([rng.uniform(edges[0], edges[-1], 20_000), np.repeat(edges, 3),
                             np.nextafter(edges, np.inf)[:-1], np.nextafter(edges, -np.inf)[1:]])
    expected = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, edges.size - 2)
    assert np.array_equal(_bin_index(values, edges), expected)
    counts = np.bincount(_bin_index(values, edges), minlength=edges.size - 1)
    assert np.array_equal(counts, np.histogram(values, bins=edges)[0])
