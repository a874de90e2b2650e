"""Tests for dpwidgets.families.personalized.standins (Li 2017, §5.3.1's privacy vectors and tasks).

Seeds are fixed; statistical checks state their sample size and tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpwidgets.families.personalized.standins import (
    BUDGET_SETUPS,
    CENSUS_COLUMNS,
    CENSUS_DOMAINS,
    COUNT_TASK_SHAPE,
    budgets_mixed,
    budgets_normal,
    budgets_uniform,
    census_like_records,
    count_task,
    figure_5_1,
    load_fair_logistic,
    logistic_task,
    make_budgets,
)


def test_budgets_uniform_range_and_seed():
    a = budgets_uniform(10_000, rng=np.random.default_rng(1))
    b = budgets_uniform(10_000, rng=np.random.default_rng(1))
    assert np.array_equal(a, b) and a.min() >= 0.01 and a.max() <= 0.1
    wide = budgets_uniform(10_000, 0.01, 1.0, np.random.default_rng(1))
    assert wide.max() > 0.9


@pytest.mark.parametrize(("low", "high"), [(0.0, 0.1), (0.2, 0.1), (-1.0, 1.0), (np.nan, 1.0)])
def test_budgets_uniform_validation(low, high):
    with pytest.raises(ValueError):
        budgets_uniform(10, low, high, np.random.default_rng(0))


def test_budgets_normal_clip_puts_the_text_masses_on_the_ends():
    # n = 200,000 (seed 2): the share at each end has standard error <= 0.0012; expected
    # P(N(0.1, 1) < 0.01) = 0.4641 and P(> 1) = 0.1841; tolerance 0.005 (> 4 s.e.).
    b = budgets_normal(200_000, rng=np.random.default_rng(2))
    assert b.min() == 0.01 and b.max() == 1.0
    assert abs(np.mean(b == 0.01) - stats.norm.cdf(-0.09)) < 0.005
    assert abs(np.mean(b == 1.0) - stats.norm.sf(0.9)) < 0.005


def test_budgets_normal_truncate_has_the_truncated_mean():
    # n = 200,000 (seed 3); s.d. of a draw ~0.28, of the mean ~0.0007; tolerance 0.004.
    b = budgets_normal(200_000, rng=np.random.default_rng(3), mode="truncate")
    expected = stats.truncnorm.mean((0.01 - 0.1) / 1.0, (1.0 - 0.1) / 1.0, loc=0.1, scale=1.0)
    assert 0.01 <= b.min() and b.max() <= 1.0 and np.mean(b == 0.01) < 0.001
    assert abs(b.mean() - expected) < 0.004


@pytest.mark.parametrize("kwargs", [{"sd": 0.0}, {"clip": (0.5, 0.1)}, {"mode": "fold"}, {"clip": (0.0, 1.0)}])
def test_budgets_normal_validation(kwargs):
    with pytest.raises(ValueError):
        budgets_normal(10, rng=np.random.default_rng(0), **kwargs)


def test_budgets_mixed_groups():
    groups = [(0.5, 0.01, 0.2), (0.4, 0.2, 1.0), (0.1, 1.0, 1.0)]
    b = budgets_mixed(100_000, groups, np.random.default_rng(4))
    # Binomial s.e. of each share <= 0.0016; tolerance 0.01.
    assert abs(np.mean(b < 0.2) - 0.5) < 0.01 and abs(np.mean(b == 1.0) - 0.1) < 0.01
    assert b.min() >= 0.01 and b.max() <= 1.0
    with pytest.raises(ValueError, match="sum to 1"):
        budgets_mixed(10, [(0.5, 0.1, 0.2)], np.random.default_rng(0))
    with pytest.raises(ValueError):
        budgets_mixed(10, [(1.0, 0.0, 0.2)], np.random.default_rng(0))


@pytest.mark.parametrize("name", sorted(BUDGET_SETUPS))
def test_named_setups(name):
    b = make_budgets(name, 1_000, np.random.default_rng(5))
    assert b.shape == (1_000,) and np.all(b > 0) and np.all(b <= 1.0)
    with pytest.raises(ValueError):
        make_budgets("lognormal", 10)


def test_figure_5_1():
    table = figure_5_1()
    assert list(table["budget"]) == sorted(table["budget"]) and table["budget"].min() == 0.01
    assert table.shape == (8, 5)


@pytest.mark.parametrize("country", ["us", "brazil"])
def test_census_like_records_respect_domains(country):
    frame = census_like_records(country, 20_000, np.random.default_rng(6))
    assert tuple(frame.columns) == CENSUS_COLUMNS
    for col, (lo, hi) in CENSUS_DOMAINS.items():
        assert frame[col].between(lo, hi).all(), col
    assert not ((frame.is_single == 1) & (frame.is_married == 1)).any()
    assert (frame.children <= frame.family_size - 1).all()
    assert (frame.years_residing <= frame.age).all()
    # Income rises with education (the dependence the logistic task learns).
    assert np.corrcoef(frame.education, np.log1p(frame.income))[0, 1] > 0.3
    again = census_like_records(country, 20_000, np.random.default_rng(6))
    assert frame.equals(again)
    with pytest.raises(ValueError):
        census_like_records("france", 10)


def test_count_task_cells():
    task = count_task("us", 30_000, np.random.default_rng(7))
    assert task.shape == COUNT_TASK_SHAPE and task.n == 30_000
    assert task.cells.min() >= 0 and task.cells.max() < task.n_cells
    assert task.histogram().sum() == 30_000 and task.bins.size == task.n_cells + 1


@pytest.mark.parametrize("country", ["us", "brazil"])
def test_logistic_task(country):
    task = logistic_task(country, 20_000, np.random.default_rng(8))
    assert task.X.shape == (20_000, 13) and task.data_norm == 1.0
    assert np.linalg.norm(task.X, axis=1).max() <= 1.0 + 1e-12
    assert set(np.unique(task.y)) == {0, 1} and 0.3 < task.y.mean() < 0.7


def test_load_fair_logistic():
    task = load_fair_logistic()
    assert task.X.shape == (6366, 8) and np.linalg.norm(task.X, axis=1).max() <= 1.0
    assert task.y.mean() == pytest.approx(0.3225, abs=1e-3)
