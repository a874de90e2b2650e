"""Tests for dpwidgets.datasets.synth: Li 2017, Ch. 3's tables (Gaussian dependence, census-shaped)
and the fair survey shipped by statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpwidgets.datasets.synth import (
    BRAZIL_CENSUS_DOMAINS,
    GAUSSIAN_MARGINS,
    US_CENSUS_DOMAINS,
    brazil_census_like,
    gaussian_dependence_table,
    load_fair_table,
    us_census_like,
)
from dpwidgets.engine.synth import dpcopula, resolve_domains


def _in_domains(table) -> bool:
    return all(table.frame[c].between(lo, hi).all() for c, (lo, hi) in table.domains.items())


@pytest.mark.parametrize("margins", GAUSSIAN_MARGINS)
def test_gaussian_dependence_table_shape_domains_and_seed(margins):
    a = gaussian_dependence_table(
        n=5000, m=3, domain=200, margins=margins, rng=np.random.default_rng(4)
    )
    b = gaussian_dependence_table(
        n=5000, m=3, domain=200, margins=margins, rng=np.random.default_rng(4)
    )
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert a.frame.shape == (5000, 3) and list(a.frame.columns) == ["x1", "x2", "x3"]
    assert all(t == np.int64 for t in a.frame.dtypes)
    assert dict(a.domains) == {"x1": (0, 199), "x2": (0, 199), "x3": (0, 199)}
    assert _in_domains(a) and a.domain_sizes == {"x1": 200, "x2": 200, "x3": 200}


def test_gaussian_dependence_table_has_the_stated_dependence_and_margins():
    """n = 50,000 (seed 0): Kendall's tau of a Gaussian copula is (2/pi) asin(rho) = 0.333 at
    rho = 0.5, whatever the (monotone) margins; its sampling s.d. is ~0.003, ties of the
    1000-value codes lower tau-b by < 0.01 (Gaussian, uniform). Zipf margins tie most records
    on a few small codes, so only its shape is checked."""
    expected = 2 / math.pi * math.asin(0.5)
    gauss = gaussian_dependence_table(rng=np.random.default_rng(0))
    assert gauss.frame.shape == (50_000, 8)  # the text's defaults
    for margins in ("gaussian", "uniform"):
        t = gaussian_dependence_table(n=50_000, m=2, margins=margins, rng=np.random.default_rng(0))
        tau = stats.kendalltau(t.frame["x1"], t.frame["x2"]).statistic
        assert abs(tau - expected) < 0.015, margins
    uni = gaussian_dependence_table(n=50_000, m=2, margins="uniform", rng=np.random.default_rng(1))
    deciles = np.bincount(uni.frame["x1"] // 100, minlength=10) / 50_000
    assert np.all(np.abs(deciles - 0.1) < 0.01)
    g = gaussian_dependence_table(n=50_000, m=2, margins="gaussian", rng=np.random.default_rng(1))
    assert abs(g.frame["x1"].mean() - 500) < 3 and abs(g.frame["x1"].std() - 125) < 3
    z = gaussian_dependence_table(n=50_000, m=2, margins="zipf", rng=np.random.default_rng(1))
    counts = np.bincount(z.frame["x1"], minlength=1000)
    assert counts[0] == counts.max() and counts[0] > 5 * counts[10]


def test_gaussian_dependence_table_validates():
    with pytest.raises(ValueError, match="m must"):
        gaussian_dependence_table(m=1)
    with pytest.raises(ValueError, match="margins"):
        gaussian_dependence_table(margins="poisson")
    with pytest.raises(ValueError, match="correlation"):
        gaussian_dependence_table(m=3, correlation=-0.6)
    with pytest.raises(ValueError, match="positive definite"):
        gaussian_dependence_table(
            m=3, correlation=np.array([[1, 0.9, -0.9], [0.9, 1, 0.9], [-0.9, 0.9, 1]])
        )
    matrix = np.array([[1.0, 0.2], [0.2, 1.0]])
    t = gaussian_dependence_table(n=10, m=2, correlation=matrix, rng=np.random.default_rng(0))
    assert np.array_equal(t.details["correlation"], matrix)


def test_us_census_like_shape_and_dependence():
    t = us_census_like(n=40_000, rng=np.random.default_rng(2))
    assert (
        list(t.frame.columns)
        == list(US_CENSUS_DOMAINS)
        == ["age", "income", "occupation", "gender"]
    )
    assert t.domain_sizes == dict(US_CENSUS_DOMAINS)
    assert _in_domains(t) and t.n == 40_000
    f = t.frame
    adults = f[f.age >= 16]
    assert (f.loc[f.age < 16, "income"] == 0).all()
    assert stats.kendalltau(adults.age, adults.income).statistic > 0.1
    assert stats.kendalltau(adults.occupation, adults.income).statistic > 0.2
    assert adults[adults.gender == 1].income.median() > adults[adults.gender == 0].income.median()
    again = us_census_like(n=40_000, rng=np.random.default_rng(2))
    pd.testing.assert_frame_equal(f, again.frame)


def test_brazil_census_like_shape_and_dependence():
    t = brazil_census_like(n=30_000, rng=np.random.default_rng(3))
    assert list(t.frame.columns) == list(BRAZIL_CENSUS_DOMAINS)
    assert list(t.domain_sizes.values()) == [95, 2, 2, 2, 31, 140, 95, 586]
    assert _in_domains(t) and t.n == 30_000
    assert brazil_census_like(rng=np.random.default_rng(0)).n == 188_846
    f = t.frame
    assert stats.kendalltau(f.education, f.income).statistic > 0.2
    assert f[f.age >= 70].disability.mean() > 2 * f[f.age < 40].disability.mean()
    assert f[f.nativity == 1].years_residing.mean() < f[f.nativity == 0].years_residing.mean()


def test_fair_table_is_integer_coded_with_its_codebook():
    pytest.importorskip("statsmodels")
    t = load_fair_table()
    assert t.frame.shape == (6366, 9)
    assert all(dtype == np.int64 for dtype in t.frame.dtypes)
    assert _in_domains(t)
    assert t.domain_sizes["rate_marriage"] == 5 and t.domain_sizes["affairs"] == 21
    for col, size in t.domain_sizes.items():
        assert len(t.codebook[col]) == size, col
    assert (t.frame["affairs"] == 0).mean() == pytest.approx(0.6775, abs=1e-3)
    # The codes map back onto the published values.
    from statsmodels.datasets import fair

    raw = fair.load_pandas().data
    assert np.array_equal(t.codebook["age"][t.frame["age"]], raw["age"].to_numpy())


def test_tables_are_accepted_by_dpcopula():
    tables = [
        gaussian_dependence_table(n=2000, m=3, rng=np.random.default_rng(0)),
        us_census_like(n=2000, rng=np.random.default_rng(0)),
        brazil_census_like(n=2000, rng=np.random.default_rng(0)),
    ]
    for t in tables:
        domains = resolve_domains(t.frame, t.domains)
        assert {c: v.size for c, v in domains.items()} == t.domain_sizes
        res = dpcopula(
            t.frame, 1.0, domains=t.domains, publisher="identity", rng=np.random.default_rng(0)
        )
        assert list(res.data.columns) == list(t.frame.columns)
