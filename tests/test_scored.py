"""The diagnostics' data-touching step pushed into the query engine (dpwidgets.scored).

On a table that lives in DuckDB (a Parquet file here), PriRP, PriROC and PriBRP ask the engine
for counts instead of loading the rows. Each aggregate equals the in-memory one on the same
rows, so with the same seed the whole release is identical; the door's DP fits read sums
(means and products, the logistic objective's derivatives) there too. Through the door, an
analyst's diagnostics and fits never run the rows view's read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.engine import diagnostics as dx
from dpwidgets.families.diagnostics.spec import model_predictions
from dpwidgets.scored import TableRecords
from dpwidgets.tables import RowsQuery, Table, View

N = 4000
LINEAR = {"x1": {"kind": "float", "domain": [-4, 4]},
          "x2": {"kind": "int", "domain": [0, 9]},
          "y": {"kind": "float", "domain": [-30, 30]}}
LOGISTIC = {"x1": {"kind": "float", "domain": [-4, 4]},
            "g": {"kind": "category", "domain": ["a", "b", "c"]},
            "label": {"kind": "int", "domain": [0, 1]}}


def _frame(kind: str, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1 = rng.normal(0, 1.5, N)
    x1[:5] = [9.0, -9.0, np.nan, 1.0, 0.0]  # clipped, clipped, dropped
    if kind == "ols":
        x2 = rng.integers(0, 12, N)  # 10 and 11 lie outside the declared domain: dropped
        y = 3 + 2 * x1 + 0.5 * x2 + rng.standard_t(3, N)
        return pd.DataFrame({"x1": x1, "x2": x2, "y": y})
    g = rng.choice(["a", "b", "c", "z"], N, p=[0.4, 0.3, 0.28, 0.02])  # "z": dropped
    eta = -0.5 + 1.2 * np.nan_to_num(x1) + np.select([g == "b", g == "c"], [0.8, -0.6], 0.0)
    return pd.DataFrame({"x1": x1, "g": g,
                         "label": (rng.random(N) < 1 / (1 + np.exp(-eta))).astype(int)})


def _declared(kind: str, folder):
    path = folder / f"{kind}.parquet"
    _frame(kind).to_parquet(path)
    columns = LINEAR if kind == "ols" else LOGISTIC
    t = Table(str(path), columns)
    view = View("rows", tuple(columns), rows=N)
    return kind, t, view, t.read(view)


@pytest.fixture(scope="module", params=["ols", "logistic"])
def table(request, tmp_path_factory):
    return _declared(request.param, tmp_path_factory.mktemp("scored"))


MODELS = [{"model": "ordinary"}, {"model": "public", "coef": [1.5, 0.25], "intercept": -0.3}]


@pytest.mark.parametrize("model", MODELS, ids=["ordinary", "public"])
def test_the_engine_computes_the_same_predictions_as_numpy(table, model):
    kind, t, view, rows = table
    records = TableRecords(RowsQuery(t, view), kind=kind, **model)
    predicted, residuals, outcome = model_predictions(rows, kind=kind, **model)
    assert records.n == rows.shape[0] < N  # the cleaning dropped the same rows
    got = records.query.run(records.rows.select("predicted", "residual", "label"))
    # Rows come back in any order: compare sorted, with the engine's summation order's
    # rounding (public model) or the solvers' (ordinary fit: sklearn stops at a tolerance).
    tol = 1e-12 if model["model"] == "public" else (1e-9 if kind == "ols" else 1e-4)
    np.testing.assert_allclose(np.sort(got.column("predicted").to_numpy()), np.sort(predicted),
                               rtol=0, atol=tol)
    np.testing.assert_array_equal(np.sort(got.column("label").to_numpy()), np.sort(outcome))


def test_every_aggregate_equals_the_in_memory_one(table):
    kind, t, view, rows = table
    model = MODELS[1]
    records = TableRecords(RowsQuery(t, view), kind=kind, **model)
    predicted, residuals, outcome = model_predictions(rows, kind=kind, **model)
    mem = dx.ArrayRecords(predicted, residuals, outcome.astype(np.int8) if kind != "ols"
                          else outcome)
    for column, center, mu in (("predicted", 0.0, 1.0), ("residual", 0.5, 0.25),
                               ("predicted", 2.0, 0.1)):
        np.testing.assert_array_equal(records.doubling_counts(column, center, mu, 40),
                                      mem.doubling_counts(column, center, mu, 40))
    lo, hi = np.quantile(predicted, [0.1, 0.9])
    ex, er = np.linspace(lo, hi, 24), np.linspace(-2.0, 3.0, 24)
    np.testing.assert_array_equal(records.grid_counts(ex, er), mem.grid_counts(ex, er))
    if kind == "logistic":
        records.check_scored(0.0, 1.0)
        for cells in (1, 8, 1024):
            theta = np.linspace(1.0, 0.0, cells + 1)
            for got, want in zip(records.interval_counts(theta), mem.interval_counts(theta),
                                 strict=True):
                np.testing.assert_array_equal(got, want)
        y, p = records.scored()
        order = np.lexsort((y, p))
        want = np.lexsort((outcome, predicted))
        # The engine's exp may round the last bits otherwise (the module docstring).
        np.testing.assert_allclose(p[order], predicted[want], rtol=1e-14, atol=0)
    else:
        with pytest.raises(ValueError, match="labels must be 0 or 1"):
            records.check_scored(-100.0, 100.0)


def test_a_boundary_value_lands_where_numpy_puts_it(tmp_path):
    # Predictions exactly on doubling boundaries and grid edges (a public model of slope 1).
    x = np.array([0.0, 1.0, 2.0, 4.0, 0.5, -1.0, -2.0, 8.0, 0.25, 3.0, 1.5, -0.75])
    path = tmp_path / "edges.parquet"
    pd.DataFrame({"x": x, "y": x * 0.5}).to_parquet(path)
    t = Table(str(path), {"x": {"kind": "float", "domain": [-10, 10]},
                          "y": {"kind": "float", "domain": [-10, 10]}})
    view = View("rows", ("x", "y"), rows=12)
    records = TableRecords(RowsQuery(t, view), model="public", coef=[1.0], intercept=0.0)
    mem = dx.ArrayRecords(x, x * 0.5 - x, x * 0.5)
    for mu in (1.0, 0.5, 0.25):
        np.testing.assert_array_equal(records.doubling_counts("predicted", 0.0, mu, 12),
                                      mem.doubling_counts("predicted", 0.0, mu, 12))
    edges = np.linspace(-2.0, 4.0, 13)  # steps of 0.5: many values sit on an edge
    np.testing.assert_array_equal(records.grid_counts(edges, np.linspace(-4, 4, 13)),
                                  mem.grid_counts(edges, np.linspace(-4, 4, 13)))


@pytest.mark.parametrize("model", MODELS, ids=["ordinary", "public"])
def test_a_seeded_diagnostic_is_the_same_release_on_either_path(table, model):
    kind, t, view, rows = table
    records = TableRecords(RowsQuery(t, view), kind=kind, **model)
    predicted, residuals, outcome = model_predictions(rows, kind=kind, **model)
    if kind == "logistic":
        # The engine's exp may round a probability's last bits otherwise, which moves a noisy
        # median by as much; and for the ordinary fit it finds the exact minimiser where
        # scikit-learn stops at its tolerance. So the in-memory run takes the engine's scores
        # (that the aggregates equal numpy's is the test above).
        y, p = records.scored()
        predicted, outcome = p, y.astype(float)
        residuals = outcome - predicted
    if kind == "ols":
        a = dx.private_residual_plot(records, None, 1.0, np.random.default_rng(3),
                                     publisher="hb", center_predicted=5.0)
        b = dx.private_residual_plot(predicted, residuals, 1.0, np.random.default_rng(3),
                                     publisher="hb", center_predicted=5.0)
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(np.sort(a.points, axis=0), np.sort(b.points, axis=0))
        assert a.bounds == b.bounds and a.epsilon_parts == b.epsilon_parts
        return
    for kwargs in ({}, {"defaults": "text"}):
        a = dx.private_roc_curve(records, None, 1.0, np.random.default_rng(5), **kwargs)
        b = dx.private_roc_curve(outcome, predicted, 1.0, np.random.default_rng(5), **kwargs)
        np.testing.assert_array_equal(a.tpr, b.tpr)
        np.testing.assert_array_equal(a.fpr, b.fpr)
        np.testing.assert_array_equal(a.thresholds, b.thresholds)
    a = dx.private_binned_residual_plot(records, None, 1.0, np.random.default_rng(9))
    b = dx.private_binned_residual_plot(outcome, predicted, 1.0, np.random.default_rng(9))
    np.testing.assert_array_equal(a.mean_residual, b.mean_residual)
    np.testing.assert_array_equal(a.bins, b.bins)


def test_the_engine_fits_the_minimiser_scikit_learn_approximates(tmp_path):
    kind, t, view, rows = _declared("logistic", tmp_path)
    from scipy.optimize import minimize

    from dpwidgets.scored import _ordinary_logistic

    q = RowsQuery(t, view)
    r = q.rows()
    names = list(r.columns)
    coef, intercept = _ordinary_logistic(q, [r[c] for c in names[:-1]], r[names[-1]])
    X, y = rows[:, :-1], rows[:, -1]

    def objective(theta):
        eta = X @ theta[:-1] + theta[-1]
        return np.logaddexp(0, eta).sum() - y @ eta + 0.5 * theta[:-1] @ theta[:-1]

    best = minimize(objective, np.zeros(X.shape[1] + 1), method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(np.append(coef, intercept), best.x, atol=1e-5)
    assert objective(np.append(coef, intercept)) <= best.fun + 1e-9


def test_an_analysts_diagnostics_never_load_the_rows(tmp_path, monkeypatch):
    frame = _frame("logistic")
    path = tmp_path / "scored.parquet"
    frame.to_parquet(path)
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    s.add_table("t", str(path), columns=LOGISTIC, features=["x1", "g"], outcome="label",
                rows=N, total_epsilon=5.0)

    def refuse(self, view):
        raise AssertionError(f"the rows of {view} were loaded")

    monkeypatch.setattr(Table, "read", refuse)
    roc = s.release("t/diagnostics", "roc_curve", epsilon=1.0, kind="logistic")
    assert roc.charged and 0.0 <= roc.output["auc"] <= 1.0
    brp = s.release("t/diagnostics", "binned_residuals", epsilon=1.0, kind="logistic",
                    model="public", coef=[1.0, 0.5], intercept=0.0)
    assert brp.charged and brp.output["bins"][0] == 0.0
    fit = s.release("t/diagnostics", "fit_model", epsilon=0.5, kind="logistic", data_norm=5.0)
    assert fit.charged and np.all(np.isfinite(fit.output["coef"]))
    assert s.remaining("t/diagnostics") == pytest.approx(2.5)
    s.close()


def test_the_dp_fits_read_sums_in_the_engine_and_release_the_same_model(tmp_path):
    from dpwidgets.engine.regression import dp_linear_regression, dp_logistic_regression
    from dpwidgets.scored import TableLogisticSums, TableMoments

    _, t, view, rows = _declared("ols", tmp_path)
    moments = TableMoments(RowsQuery(t, view))
    assert (moments.n, moments.d) == (rows.shape[0], 2)
    bounds = ([-4.0, 0.0], [4.0, 9.0]), (-30.0, 30.0)
    a = dp_linear_regression(moments, None, 1.0, *bounds, rng=np.random.default_rng(4))
    b = dp_linear_regression(rows[:, :-1], rows[:, -1], 1.0, *bounds,
                             rng=np.random.default_rng(4))
    # Sums in another order round otherwise in the last bits; the noise is the same draw.
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-9)
    assert a.intercept == pytest.approx(b.intercept, rel=1e-9)
    assert a.epsilon_parts == b.epsilon_parts

    _, t, view, rows = _declared("logistic", tmp_path)
    sums = TableLogisticSums(RowsQuery(t, view))
    a = dp_logistic_regression(sums, None, 1.0, 3.0, rng=np.random.default_rng(6))
    b = dp_logistic_regression(rows[:, :-1], rows[:, -1], 1.0, 3.0,
                               rng=np.random.default_rng(6))
    # Both minimisers are certified to a gradient norm of 1e-9, so they lie within
    # 2e-9 / lambda of each other; the noise is the same draw.
    lam = a.details["regularization"]
    np.testing.assert_allclose(a.coef, b.coef, atol=4e-9 / lam * 3.0)
    assert a.details == b.details
    with pytest.raises(ValueError, match="0/1 labels"):
        TableLogisticSums(RowsQuery(*_declared("ols", tmp_path)[1:3]))


def test_a_unit_bounded_table_is_sampled_once_per_release(tmp_path):
    rng = np.random.default_rng(1)
    people = np.repeat(np.arange(500), 6)
    x = rng.normal(0, 1, people.size)
    frame = pd.DataFrame({"person": people, "x1": x, "y": 2 * x + rng.normal(0, 1, x.size)})
    path = tmp_path / "people.parquet"
    frame.to_parquet(path)
    t = Table(str(path), {"x1": {"kind": "float", "domain": [-4, 4]},
                          "y": {"kind": "float", "domain": [-10, 10]}},
              unit="person", max_rows=2)
    q = RowsQuery(t, View("rows", ("x1", "y"), rows=1000))
    records = TableRecords(q, kind="ols", model="ordinary")
    assert records.n == 1000  # 2 of each person's 6 rows
    first = records.doubling_counts("residual", 0.0, 0.5, 10)
    for _ in range(3):  # every query reads the same bounded sample
        np.testing.assert_array_equal(records.doubling_counts("residual", 0.0, 0.5, 10), first)
