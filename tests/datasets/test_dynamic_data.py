"""Tests for dpwidgets.families.dynamic.standins (Li 2017, §4.5.1's census-like series; moving objects)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets.engine.dynamic import empirical_update_rate
from dpwidgets.families.dynamic.standins import (
    CENSUS_ATTRIBUTES,
    CENSUS_DOMAINS,
    census_distribution,
    census_like_series,
    moving_object_series,
)


def test_census_distribution_shape_and_income_rule():
    p = census_distribution()
    assert p.shape == (96, 2, 12, 2, 2, 3) == tuple(CENSUS_DOMAINS[a] for a in CENSUS_ATTRIBUTES)
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-12) and np.all(p >= 0)
    by_age_income = p.sum(axis=(1, 2, 3, 4))
    # Income code 0 ("values smaller than 0") exactly for ages under 20 (Li 2017, §4.5.1).
    assert np.all(by_age_income[:20, 1:] == 0) and np.all(by_age_income[20:, 0] == 0)
    assert np.all(by_age_income[:20, 0] > 0)


def test_census_series_sizes_and_reproducibility():
    kwargs = dict(n_times=40, n_records=20_000, population=100_000, rng=None)
    a = census_like_series(**{**kwargs, "rng": np.random.default_rng(3)})
    b = census_like_series(**{**kwargs, "rng": np.random.default_rng(3)})
    assert np.array_equal(a.histograms, b.histograms)
    assert a.histograms.shape == (40, 96 * 12 * 3) and a.shape == (96, 12, 3)
    assert a.attributes == ("age", "education", "income")
    assert np.all(a.histograms.sum(axis=1) == 20_000) and a.histograms.min() >= 0
    assert a.cardinality == 20_000


def test_census_series_full_joint_has_27648_bins():
    s = census_like_series(3, 2_000, population=10_000, attributes=CENSUS_ATTRIBUTES, n_periods=3,
                           rng=np.random.default_rng(0))
    assert s.histograms.shape == (3, 27_648)


def test_census_replacements_follow_the_period_rates():
    # m ~ N(r_p n / 2, sigma^2): per period (20 steps) the mean of m is within 5 standard
    # errors (5 * sqrt(1e5 / 20) ~ 354) of r_p n / 2 unless clipped at 0 (rates near 0).
    n, rates = 100_000, [0.0, 0.2, 1.0, 2.0, 0.5]
    s = census_like_series(101, n, population=400_000, n_periods=5, period_rates=rates,
                           rng=np.random.default_rng(7))
    m = s.details["replaced"]
    for p, r in enumerate(rates):
        chunk = m[p * 20 : (p + 1) * 20]
        if r > 0.05:
            assert abs(chunk.mean() - r * n / 2) < 5 * math.sqrt(1e5 / 20)
    assert m[:20].mean() < 400  # rate 0: only the (clipped) N(0, 1e5) noise
    # The observed update rate can only undercount 2m/n (tuples that land where they left).
    observed = empirical_update_rate(s.histograms)
    assert np.all(observed <= 2 * m / n + 1e-12)
    assert observed[40:60].mean() > 5 * observed[:20].mean()  # busy period moves more


def test_default_period_rates_average_the_update_rate():
    s = census_like_series(50, 10_000, population=50_000, rng=np.random.default_rng(1))
    rates = s.details["period_rates"]
    assert rates.shape == (10,) and np.all((rates >= 0) & (rates <= 2))
    assert rates.mean() == pytest.approx(0.5, abs=0.1)  # clipping at 2 can lower the mean
    assert np.ptp(rates) > 0.3  # "10 periods of different rates"


def test_census_drift_makes_real_change_points():
    # n = 50,000 over age x income (288 bins), N = 100, 5 periods of rate 0.5 (25% of the
    # tuples replaced per step, so a period's population is reached within ~20 steps); seed 2.
    # Sampling noise alone keeps two snapshots within (2/sqrt(pi)) sqrt(U/n) = 0.086 of each
    # other (normalised L1); drift = 1 moves the snapshot by ~0.8 per period (asked: > 0.3).
    kwargs = dict(n_times=100, n_records=50_000, population=300_000, n_periods=5,
                  period_rates=[0.5] * 5, attributes=("age", "income"))
    still = census_like_series(**kwargs, rng=np.random.default_rng(2))
    moving = census_like_series(**kwargs, drift=1.0, rng=np.random.default_rng(2))
    assert moving.details["period_starts"].tolist() == [0, 20, 40, 60, 80]
    assert moving.details["drift"] == 1.0 and still.details["drift"] == 0.0
    assert np.all(moving.histograms.sum(axis=1) == 50_000)

    def dist(s, a, b):
        h = s.histograms / s.histograms.sum(axis=1, keepdims=True)
        return float(np.abs(h[a] - h[b]).sum())

    floor = 2 / math.sqrt(math.pi) * math.sqrt(288 / 50_000)
    ends = [19, 39, 59, 79, 99]  # last snapshot of each period
    assert max(dist(still, a, b) for a, b in zip(ends[:-1], ends[1:], strict=True)) < floor
    assert min(dist(moving, a, b) for a, b in zip(ends[:-1], ends[1:], strict=True)) > 0.3
    # Inside the first period (drift or not: period 0 inserts from the population) nothing moves.
    assert dist(moving, 2, 19) < floor


def test_census_drift_zero_is_the_texts_setup():
    # drift = 0 keeps the finite pool: the same draws as without the argument.
    kwargs = dict(n_times=30, n_records=10_000, population=60_000, attributes=("income",))
    a = census_like_series(**kwargs, rng=np.random.default_rng(4))
    b = census_like_series(**kwargs, drift=0.0, rng=np.random.default_rng(4))
    assert np.array_equal(a.histograms, b.histograms)


def test_moving_objects():
    a = moving_object_series(60, 3_000, grid=(8, 10), rng=np.random.default_rng(4))
    b = moving_object_series(60, 3_000, grid=(8, 10), rng=np.random.default_rng(4))
    assert np.array_equal(a.histograms, b.histograms)
    assert a.histograms.shape == (60, 80) and a.shape == (8, 10)
    assert np.all(a.histograms.sum(axis=1) == 3_000)
    moving = a.details["moving"]
    assert moving.max() > 3 * max(moving[:3].max(), 1)  # traffic swells after the start
    assert np.any(a.histograms[1:] != a.histograms[:-1])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda rng: census_like_series(0, rng=rng), "n_times"),
        (lambda rng: census_like_series(10, 1000, population=500, rng=rng), "population"),
        (lambda rng: census_like_series(10, 100, population=1000, update_rate=3, rng=rng), "update_rate"),
        (lambda rng: census_like_series(10, 100, population=1000, n_periods=11, rng=rng), "n_periods"),
        (lambda rng: census_like_series(10, 100, population=1000, period_rates=[1, 2], rng=rng),
         "period_rates"),
        (lambda rng: census_like_series(10, 100, population=1000, attributes=("zip",), rng=rng),
         "attributes"),
        (lambda rng: census_like_series(10, 100, population=1000, drift=-0.5, rng=rng), "drift"),
        (lambda rng: census_like_series(10, 100, population=1000, drift=np.nan, rng=rng), "drift"),
        (lambda rng: moving_object_series(10, 100, grid=(0, 4), rng=rng), "grid"),
        (lambda rng: moving_object_series(10, 100, speed=0, rng=rng), "speed"),
    ],
)
def test_validation_before_randomness(call, match):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        call(rng)
    assert rng.bit_generator.state == state
