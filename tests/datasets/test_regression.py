"""Tests for dpwidgets.families.diagnostics.standins: the scenarios of Chen 2018, Ch. 4 and fit_model.

Seeds are fixed; tolerances are several standard errors wide (stated per test).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpwidgets.datasets import (
    RESIDUAL_SCENARIOS,
    binormal_scores,
    discriminatory_scenario,
    fit_model,
    load_breast_cancer_data,
    load_diabetes_data,
    logistic_scenario,
    posited_residuals,
    residual_scenario,
)


@pytest.mark.parametrize("name", sorted(RESIDUAL_SCENARIOS))
def test_residual_scenarios_shape_range_and_seed(name):
    a = residual_scenario(name, 1000, np.random.default_rng(0))
    b = residual_scenario(name, 1000, np.random.default_rng(0))
    assert a.X.shape == (1000, 1) and a.y.shape == (1000,) and a.n == 1000
    assert a.X.min() >= 1 and a.X.max() <= 50
    np.testing.assert_array_equal(a.y, b.y)


def test_residual_scenarios_show_their_violation():
    # n = 20,000 (seed 1). Heteroscedastic: the residual variance is x (4x larger for x > 40
    # than for x < 10 on average: ratio ≈ 45/5.5). Nonlinear: OLS residuals form a hook, so
    # their correlation with (x - 25.5)^2 is strong (≈ 0.95); Ideal shows neither.
    fits = {}
    for name in RESIDUAL_SCENARIOS:
        d = residual_scenario(name, 20_000, np.random.default_rng(1))
        fits[name] = (d.X[:, 0], fit_model(d.X, d.y).residuals)
    x, r = fits["heteroscedastic"]
    assert r[x > 40].var() > 4 * r[x < 10].var()
    x, r = fits["nonlinear"]
    assert np.corrcoef(r, (x - 25.5) ** 2)[0, 1] > 0.8
    x, r = fits["ideal"]
    assert abs(np.corrcoef(r, (x - 25.5) ** 2)[0, 1]) < 0.05  # 7 standard errors
    assert 0.9 < r.var() < 1.1


def test_discriminatory_models():
    m2 = discriminatory_scenario("M2", 5000, np.random.default_rng(2), alpha=1.0)
    m3 = discriminatory_scenario("M3", 5000, np.random.default_rng(2), gamma=0.01)
    m1 = discriminatory_scenario("M1", 5000, np.random.default_rng(2))
    assert m1.X.min() >= 0 and m1.X.max() <= 50
    assert np.var(m2.y - m2.X[:, 0]) > 10  # E[(αx + 1)^2] = 884 for α = 1 (sd reading)
    assert np.mean(m3.y - m3.X[:, 0]) == pytest.approx(0.01 * 2500 / 3, rel=0.05)
    with pytest.raises(ValueError, match="model"):
        discriminatory_scenario("M4", 10)
    with pytest.raises(ValueError, match="noise"):
        discriminatory_scenario("M2", 10, noise="sigma")


def test_discriminatory_m2_noise_reading():
    # n = 50,000, α = 1, x ~ U[0, 50]. Default (R's convention, which reproduces Table 4.1):
    # αx + 1 is the sd, so Var(y - x) = E[(x + 1)^2] = 2500/3 + 50 + 1 = 884.3. The variance
    # reading (one argument away): Var(y - x) = E[x + 1] = 26. Relative s.e. of a sample
    # variance of these mixtures at n = 50,000 is under 2%; 5% is the tolerance.
    sd = discriminatory_scenario("M2", 50_000, np.random.default_rng(4), alpha=1.0)
    var = discriminatory_scenario("M2", 50_000, np.random.default_rng(4), alpha=1.0,
                                  noise="variance")
    assert np.var(sd.y - sd.X[:, 0]) == pytest.approx(2500 / 3 + 51, rel=0.05)
    assert np.var(var.y - var.X[:, 0]) == pytest.approx(26.0, rel=0.05)
    assert "sd = 1 x + 1" in sd.description and "var = 1 x + 1" in var.description


def test_posited_residuals_are_against_y_equals_x():
    m3 = discriminatory_scenario("M3", 1000, np.random.default_rng(5), gamma=0.01)
    x, r = posited_residuals(m3)
    np.testing.assert_array_equal(x, m3.X[:, 0])
    np.testing.assert_allclose(r, m3.y - m3.X[:, 0])
    # An OLS refit absorbs most of the curvature; the posited line keeps it (mean 0.01·2500/3).
    assert np.mean(r) == pytest.approx(0.01 * 2500 / 3, rel=0.1)
    with pytest.raises(ValueError, match="one feature column"):
        posited_residuals(type(m3)(np.ones((4, 2)), np.ones(4), "x", "two features"))


def test_logistic_scenarios_fit_linear_term():
    # n = 50,000: M1's fitted slope is 2 within 0.1 (se ≈ 0.02); M2's linear fit misses the
    # x^2 term, so its binned residuals are positive at both ends (the hook).
    m1 = logistic_scenario("M1", 50_000, np.random.default_rng(3))
    f1 = fit_model(m1.X, m1.y, "logistic")
    assert f1.coef[0] == pytest.approx(2.0, abs=0.1) and abs(f1.intercept) < 0.1
    m2 = logistic_scenario("M2", 50_000, np.random.default_rng(3))
    f2 = fit_model(m2.X, m2.y, "logistic")
    x = m2.X[:, 0]
    assert f2.residuals[x < -0.8].mean() > 0.02 and f2.residuals[x > 0.8].mean() > 0.02
    assert f2.residuals[np.abs(x) < 0.2].mean() < -0.02


@pytest.mark.parametrize("auc", [0.7, 0.85, 0.95])
def test_binormal_scores_have_the_set_auc(auc):
    # n = 40,000 at prevalence 0.5: the AUC's standard error is < 0.003; tolerance 0.012.
    y, s = binormal_scores(40_000, auc, np.random.default_rng(4))
    assert np.all((s > 0) & (s < 1)) and set(np.unique(y)) == {0, 1}
    assert roc_auc_score(y, s) == pytest.approx(auc, abs=0.012)


def test_public_datasets_ship_offline():
    d = load_diabetes_data()
    assert d.X.shape == (442, 10) and d.n == 442
    b = load_breast_cancer_data()
    assert b.X.shape == (569, 30) and set(np.unique(b.y)) == {0, 1}
    fit = fit_model(b.X, b.y, "logistic")
    assert np.all((fit.predictions >= 0) & (fit.predictions <= 1))
    assert roc_auc_score(b.y, fit.predictions) > 0.95


def test_fit_model_ordinary_and_private():
    d = load_diabetes_data()
    ols = fit_model(d.X, d.y)
    assert not ols.private and ols.epsilon == 0.0 and ols.spent == (0.0, 0.0)
    assert abs(ols.residuals.mean()) < 1e-8
    np.testing.assert_allclose(ols.predictions + ols.residuals, d.y)
    dp = fit_model(d.X, d.y, private=True, epsilon=2.0, rng=np.random.default_rng(5),
                   bounds_X=(-0.2, 0.2), bounds_y=(25.0, 346.0))
    assert dp.private and dp.epsilon == 2.0 and dp.spent == (2.0, 0.0)
    again = fit_model(d.X, d.y, private=True, epsilon=2.0, rng=np.random.default_rng(5),
                      bounds_X=(-0.2, 0.2), bounds_y=(25.0, 346.0))
    np.testing.assert_array_equal(dp.coef, again.coef)  # seeded through rng
    m = logistic_scenario("M1", 2000, np.random.default_rng(6))
    lr = fit_model(m.X, m.y, "logistic", private=True, epsilon=1.0, data_norm=1.0,
                   rng=np.random.default_rng(7))
    assert lr.spent == (1.0, 0.0) and np.all((lr.predictions > 0) & (lr.predictions < 1))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "probit"}, "kind"),
        ({"private": True}, "epsilon"),
        ({"private": True, "epsilon": 1.0}, "bounds_X"),
        ({"kind": "logistic", "private": True, "epsilon": 1.0}, "labels"),
    ],
)
def test_fit_model_validation(kwargs, match):
    X, y = np.arange(10.0), np.arange(10.0)
    with pytest.raises(ValueError, match=match):
        fit_model(X, y, **kwargs)


def test_fit_model_rejects_nan_and_mismatch():
    with pytest.raises(ValueError, match="X"):
        fit_model([1.0, np.nan, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="same number of rows"):
        fit_model([1.0, 2.0, 3.0], [1.0, 2.0])
