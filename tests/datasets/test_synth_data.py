"""Tests for dpwidgets.families.synth.standins: Li 2017, Ch. 3's tables (Gaussian dependence,
census-shaped), the fair and randhie data shipped by statsmodels, and the interaction table
(structural zeros and a three-way XOR)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpwidgets.engine.synth import dpcopula, resolve_domains
from dpwidgets.families.synth.standins import (
    BRAZIL_CENSUS_DOMAINS,
    GAUSSIAN_MARGINS,
    INTERACTION_DOMAINS,
    RANDHIE_DOMAINS,
    US_CENSUS_DOMAINS,
    brazil_census_like,
    gaussian_dependence_table,
    impossible_rows,
    interaction_table,
    load_fair_table,
    load_randhie_table,
    us_census_like,
)


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
        interaction_table(n=2000, rng=np.random.default_rng(0)),
    ]
    for t in tables:
        domains = resolve_domains(t.frame, t.domains)
        assert {c: v.size for c, v in domains.items()} == t.domain_sizes
        res = dpcopula(
            t.frame, 1.0, domains=t.domains, publisher="identity", rng=np.random.default_rng(0)
        )
        assert list(res.data.columns) == list(t.frame.columns)


# ---------------------------------------------------------------------------------------------
# Dependence a Gaussian copula cannot hold: the interaction table and randhie
# ---------------------------------------------------------------------------------------------


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Every column permuted independently: the margins kept, the dependence destroyed (what
    independent margins would release with exact margins)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(frame[c].to_numpy()) for c in frame.columns})


def test_interaction_table_is_seeded_and_in_its_domains():
    a = interaction_table(n=5000, rng=np.random.default_rng(7))
    b = interaction_table(n=5000, rng=np.random.default_rng(7))
    c = interaction_table(n=5000, rng=np.random.default_rng(8))
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame.equals(c.frame)
    assert list(a.frame.columns) == list(INTERACTION_DOMAINS)
    assert a.domain_sizes == dict(INTERACTION_DOMAINS)
    assert all(t == np.int64 for t in a.frame.dtypes) and _in_domains(a)
    assert interaction_table(rng=np.random.default_rng(0)).n == 50_000


def test_interaction_table_declared_structural_zeros_have_zero_count():
    """Seed 0, n = 50,000: no row falls in a declared-impossible cell; the rules forbid what
    the docstring says (1,225 of 4,000 (age, tenure) cells, 280 of 320 (region, district));
    the same margins without the dependence (columns shuffled) fill them, so the check can
    fail: under independence 16% of rows have tenure > age (the real tenure is small, the
    age spread wide) and 83% of (region, district) pairs are mismatched."""
    t = interaction_table(rng=np.random.default_rng(0))
    rules = t.details["structural_zeros"]
    assert [cols for cols, _ in rules] == [("age", "tenure"), ("region", "district")]
    assert [int((~allowed).sum()) for _, allowed in rules] == [1225, 280]
    assert impossible_rows(t.frame, rules).sum() == 0
    f = t.frame
    assert (f.tenure <= f.age).all()
    assert (f.groupby("district").region.nunique() == 1).all()  # every district in one region
    assert (f.groupby("region").district.nunique() == 5).all()
    assert np.array_equal(t.details["district_region"][f.district], f.region)
    shuffled = _shuffled(f, 1)
    assert impossible_rows(shuffled, rules[:1]).mean() > 0.05
    assert impossible_rows(shuffled, rules[1:]).mean() > 0.5


def test_interaction_table_xor_holds_and_is_invisible_to_pairs():
    """overtime = night XOR weekend, flipped with probability 0.05 (seed 0, n = 50,000: the
    agreement's s.e. is sqrt(0.05 * 0.95 / n) = 0.001, tolerance 4 s.e.); with flip = 0 it is
    exact. The three binaries are pairwise independent: each pairwise correlation is within
    4/sqrt(n) = 0.018 of 0 (4 s.e. under independence), yet the third is nearly determined
    by the other two."""
    t = interaction_table(rng=np.random.default_rng(0))
    f = t.frame
    xor = f["night"] ^ f["weekend"]
    assert abs((f.overtime == xor).mean() - 0.95) < 0.004
    corr = f[["night", "weekend", "overtime"]].corr().to_numpy()
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 4 / math.sqrt(t.n))
    for n_, w_ in ((0, 0), (0, 1), (1, 0), (1, 1)):
        cell = f[(f["night"] == n_) & (f["weekend"] == w_)]
        assert abs(cell.overtime.mean() - (n_ ^ w_)) < 0.07
    exact = interaction_table(n=5000, rng=np.random.default_rng(3), flip=0.0).frame
    assert (exact.overtime == exact["night"] ^ exact["weekend"]).all()
    assert t.details["interaction"] == ("night", "weekend", "overtime")


def test_interaction_table_income_is_an_inverted_u_in_age():
    """Mean income peaks mid-career: codes 25-35 (ages 41-51) earn ~28 bins more than the
    youngest (< 5) and oldest (> 65) -- the peak is 30 bins high; tolerance 15 -- while
    Kendall's tau of age and income stays small (< 0.15): a dependence rank statistics miss."""
    f = interaction_table(rng=np.random.default_rng(0)).frame
    middle = f[f.age.between(25, 35)].income.mean()
    assert middle - f[f.age < 5].income.mean() > 15
    assert middle - f[f.age > 65].income.mean() > 15
    assert abs(stats.kendalltau(f.age, f.income).statistic) < 0.15


def test_interaction_table_validates_flip():
    for bad in (-0.1, 0.6, True, "0.1", float("nan")):
        with pytest.raises(ValueError, match="flip"):
            interaction_table(n=10, rng=np.random.default_rng(0), flip=bad)


def test_impossible_rows_checks_its_rules():
    frame = pd.DataFrame({"a": [0, 1, 1], "b": [0, 0, 1]})
    diagonal = np.eye(2, dtype=bool)
    assert impossible_rows(frame, [(("a", "b"), diagonal)]).tolist() == [False, True, False]
    assert impossible_rows(frame, []).tolist() == [False, False, False]
    with pytest.raises(ValueError, match="columns"):
        impossible_rows(frame, [(("a", "c"), diagonal)])
    with pytest.raises(ValueError, match="outside"):
        impossible_rows(frame.assign(b=[0, 0, 2]), [(("a", "b"), diagonal)])


def test_randhie_table_is_coded_on_public_grids_with_its_structural_zeros():
    """The RAND HIE file statsmodels ships: 20,190 rows, 10 attributes; the declared zeros
    (one self-rated health category, the plans' idp/coinsurance cells, fmde 0 at a 100% rate)
    have zero count; shuffled columns (independent margins) fill them."""
    pytest.importorskip("statsmodels")
    from statsmodels.datasets import randhie

    t = load_randhie_table()
    raw = randhie.load_pandas().data
    assert t.frame.shape == (20_190, 10) and list(t.frame.columns) == list(RANDHIE_DOMAINS)
    assert all(dtype == np.int64 for dtype in t.frame.dtypes) and _in_domains(t)
    assert t.domain_sizes == dict(RANDHIE_DOMAINS)
    rates = t.codebook["coinsurance"][t.frame["coinsurance"]]
    assert np.allclose(np.log(rates + 1), raw["lncoins"], atol=1e-5)
    assert np.array_equal(t.frame["mdvis"], raw["mdvis"])
    lpi_low = t.codebook["lpi"][t.frame["lpi"]]
    assert np.all((lpi_low <= raw["lpi"]) & (raw["lpi"] < lpi_low + 0.25))
    rules = t.details["structural_zeros"]
    assert [int((~allowed).sum()) for _, allowed in rules] == [4, 4, 35]
    assert impossible_rows(t.frame, rules).sum() == 0
    shuffled = _shuffled(t.frame, 2)
    for rule in rules:
        assert impossible_rows(shuffled, [rule]).mean() > 0.005, rule[0]
