"""The diagnostics' data-touching step inside a query engine.

A regression diagnostic reads a model's predictions and residuals only through a few counts
(:class:`dpwidgets.engine.diagnostics.Records`): how many fall within each doubling interval,
a 2-D histogram on a grid, the positives and negatives per score interval. On a table that
lives in a query engine (a curator's Parquet file, a database) :class:`TableRecords` asks the
engine for exactly these: the model's predictions are an expression over the row's columns,
each count one ``GROUP BY``, and an ordinary fit is made from sums (the normal equations for
least squares, one Newton step per pass for the logistic model), so the rows never leave the
engine. Only order statistics -- the s-RecursiveMedians of PriBRP and of PriROC's text
variant -- need the scores themselves; then two columns (score, label) are read, never the
features. The door's DP fits read sums too: the functional mechanism's clipped means and
centred products (:class:`TableMoments`), the logistic objective's value, gradient and
Hessian for a damped Newton's method (:class:`TableLogisticSums`).

The bins are those of the in-memory functions, computed with the same arithmetic and the same
exact corrections against the edges, so a record lands in the same cell on either path (a
prediction computed by the engine may differ from numpy's in its last bit, which moves a
record only if it lies within that bit of an edge; each record's cell still depends on its own
row alone, so every sensitivity argument holds as it is).
"""

from __future__ import annotations

import math

import numpy as np

from .engine.diagnostics import Records
from .engine.regression import LogisticSums, Moments, damped_newton
from .tables import RowsQuery

__all__ = ["TableLogisticSums", "TableMoments", "TableRecords", "table_fit"]

#: The gradient norm at which the ordinary logistic fit's Newton's method stops.
NEWTON_TOL = 1e-8


def _sigmoid(eta):
    return 1.0 / (1.0 + (-eta).exp())


def _indicator(condition):
    """1 where ``condition`` holds, else 0 (PostgreSQL casts no boolean to an integer)."""
    import ibis

    return ibis.ifelse(condition, 1, 0)


def _dot(columns, coef, intercept: float):
    """``intercept + sum_j coef_j x_j`` as an engine expression."""
    eta = columns[0] * float(coef[0]) + float(intercept)
    for x, w in zip(columns[1:], coef[1:], strict=True):
        eta = eta + x * float(w)
    return eta


def _aggregate(query: RowsQuery, expr, **named) -> dict:
    """One pass: the named aggregates of ``expr`` as floats."""
    row = query.run(expr.aggregate(**named)).to_pylist()[0]
    return {k: (math.nan if v is None else float(v)) for k, v in row.items()}


def _ordinary_ols(query: RowsQuery, X: list, y) -> tuple[np.ndarray, float]:
    """Least squares from two passes of sums (means, then centred cross-products): the
    coefficients of :class:`sklearn.linear_model.LinearRegression` (a minimum-norm solution
    when the features are collinear)."""
    t = query.rows()
    d = len(X)
    means = _aggregate(query, t, **{f"m{j}": x.mean() for j, x in enumerate(X)}, my=y.mean())
    mx = np.array([means[f"m{j}"] for j in range(d)])
    my = means["my"]
    xc = [x - float(m) for x, m in zip(X, mx, strict=True)]
    yc = y - my
    sums = {f"xy{j}": (xc[j] * yc).sum() for j in range(d)}
    sums.update({f"xx{j}_{k}": (xc[j] * xc[k]).sum() for j in range(d) for k in range(j, d)})
    s = _aggregate(query, t, **sums)
    gram = np.empty((d, d))
    for j in range(d):
        for k in range(j, d):
            gram[j, k] = gram[k, j] = s[f"xx{j}_{k}"]
    xy = np.array([s[f"xy{j}"] for j in range(d)])
    coef = np.linalg.lstsq(gram, xy, rcond=None)[0]
    return coef, float(my - mx @ coef)


def _ordinary_logistic(query: RowsQuery, X: list, y) -> tuple[np.ndarray, float]:
    """The L2-regularised logistic regression of :class:`sklearn.linear_model.LogisticRegression`
    (C = 1, the intercept unpenalised) by damped Newton, one pass of sums per step: its exact
    minimiser, to a gradient norm of :data:`NEWTON_TOL` (scikit-learn's solver stops at a
    gradient tolerance of 1e-4)."""
    import ibis

    t = query.rows()
    d = len(X)
    u = t.select(y=y, **{f"x{j}": x for j, x in enumerate(X)})
    col = [*(u[f"x{j}"] for j in range(d)), None]  # None: the intercept's column of ones

    def times(v, j):
        return v if col[j] is None else v * col[j]

    def evaluate(theta):
        eta = ibis.literal(float(theta[d]))
        for j in range(d):
            eta = eta + u[f"x{j}"] * float(theta[j])
        v = u.mutate(eta=eta)
        # log(1 + exp(eta)) - y eta, and the probability, stable for either sign of eta.
        v = v.mutate(loss=ibis.greatest(v.eta, 0.0) + (1.0 + (-v.eta.abs()).exp()).ln()
                     - v.y * v.eta,
                     p=1.0 / (1.0 + (-v.eta).clip(lower=-700.0, upper=700.0).exp()))
        v = v.mutate(r=v.p - v.y, c=v.p * (1.0 - v.p))
        sums = {"loss": v.loss.sum()}
        sums.update({f"g{j}": times(v.r, j).sum() for j in range(d + 1)})
        sums.update({f"h{j}_{k}": times(times(v.c, j), k).sum()
                     for j in range(d + 1) for k in range(j, d + 1)})
        s = _aggregate(query, v, **sums)
        penalty = np.append(theta[:d], 0.0)
        grad = np.array([s[f"g{j}"] for j in range(d + 1)]) + penalty
        hess = np.empty((d + 1, d + 1))
        for j in range(d + 1):
            for k in range(j, d + 1):
                hess[j, k] = hess[k, j] = s[f"h{j}_{k}"]
        hess[np.arange(d), np.arange(d)] += 1.0
        return s["loss"] + 0.5 * float(theta[:d] @ theta[:d]), grad, hess

    theta, _ = damped_newton(evaluate, d + 1, NEWTON_TOL)
    return theta[:d], float(theta[d])


def _columns(query: RowsQuery, outcome: str = "y"):
    """The features and the (transformed) outcome of a diagnostics view as expressions."""
    t = query.rows()
    names = list(t.columns)
    X, y = [t[c] for c in names[:-1]], t[names[-1]]
    if outcome == "log":
        if _aggregate(query, t, bad=_indicator(y <= 0).sum())["bad"] > 0:
            raise ValueError("outcome='log' needs a positive outcome; this dataset has values "
                             "<= 0 (choose outcome='y')")
        y = y.ln()
    return t, X, y


class TableRecords(Records):
    """:class:`~dpwidgets.engine.diagnostics.Records` of a model on a table in its engine.

    Parameters
    ----------
    query : dpwidgets.tables.RowsQuery
        The diagnostics view: feature columns, then the outcome.
    kind, outcome, model, coef, intercept :
        The model under diagnosis, as :func:`dpwidgets.families.diagnostics.spec.model_predictions`
        takes it: ``model="public"`` applies ``coef`` and ``intercept``; ``"ordinary"`` fits
        the model to the table first (from sums, inside the engine).
    """

    def __init__(self, query: RowsQuery, *, kind: str = "ols", outcome: str = "y",
                 model: str = "ordinary", coef=None, intercept: float = 0.0):
        self.query = query
        t, X, y = _columns(query, outcome)
        if model == "public":
            coef, intercept = np.asarray(coef, dtype=float), float(intercept)
        elif kind == "ols":
            coef, intercept = _ordinary_ols(query, X, y)
        else:
            coef, intercept = _ordinary_logistic(query, X, y)
        eta = _dot(X, coef, intercept)
        predicted = eta if kind == "ols" else _sigmoid(eta)
        self.rows = t.select(predicted=predicted, residual=y - predicted, label=y)
        self.n = int(_aggregate(query, t, n=t.count())["n"])

    def check_scored(self, lower: float, upper: float) -> None:
        r = self.rows
        bad = _aggregate(self.query, r,
                         labels=_indicator((r.label != 0.0) & (r.label != 1.0)).sum(),
                         scores=_indicator((r.predicted < lower) | (r.predicted > upper)).sum())
        if bad["labels"] > 0:
            raise ValueError("labels must be 0 or 1; some values are not")
        if bad["scores"] > 0:
            raise ValueError(f"scores must lie in [{lower}, {upper}]; some values fall outside "
                             "(give the public bounds of the scores, or clip them first)")

    def _counted(self, table, keys: list[str]) -> tuple[list[np.ndarray], np.ndarray]:
        """``GROUP BY keys`` of ``table`` with the count of each group."""
        out = self.query.run(table.group_by(keys).aggregate(__n=table.count()))
        cols = [np.asarray(out.column(k).to_numpy(), dtype=np.int64) for k in keys]
        return cols, np.asarray(out.column("__n").to_numpy(), dtype=np.int64)

    def doubling_counts(self, column, center, mu, max_doublings):
        import ibis

        top = float(max_doublings + 1)
        two = ibis.literal(2.0)
        # One step per projection: each names its result, so no expression is repeated in
        # the SQL the engine runs.
        r = self.rows.select(__d=(self.rows[column] - float(center)).abs())
        r = r.mutate(__f=ibis.cases((r["__d"] == 0.0, 0.0),
                                    else_=(r["__d"] / float(mu)).log2().ceil()))
        r = r.mutate(__f=ibis.greatest(0.0, ibis.least(top, r["__f"])))
        # Exact corrections of log2's rounding at powers of two (a boundary is inside).
        r = r.mutate(__f=ibis.ifelse((r["__f"] > 0) & (r["__d"] <= float(mu) * two ** (r["__f"] - 1)),
                                     r["__f"] - 1, r["__f"]))
        r = r.mutate(__f=ibis.ifelse(r["__d"] > float(mu) * two ** r["__f"], r["__f"] + 1, r["__f"]))
        r = r.mutate(__k=ibis.greatest(0.0, ibis.least(top, r["__f"])).cast("int64"))
        (idx,), n = self._counted(r, ["__k"])
        return np.bincount(idx, weights=n, minlength=max_doublings + 2).astype(np.int64)

    @staticmethod
    def _binned(table, value: str, edges: np.ndarray, out: str):
        """``table`` with the bin of column ``value`` as column ``out``: the engine's
        :func:`~dpwidgets.engine.diagnostics._uniform_bin` -- index arithmetic, then one
        exact comparison each way against the edges themselves."""
        import ibis

        m = edges.size - 1
        scale = m / (edges[-1] - edges[0])
        e = ibis.literal([float(v) for v in edges], type="array<float64>")
        v = table[value]
        t = table.mutate(__g=((v - float(edges[0])) * scale).floor())
        # int32: Spark indexes arrays by INT (m is at most MAX_GRID or 2^MAX_LEVELS).
        t = t.mutate(__g=ibis.greatest(0.0, ibis.least(float(m - 1), t["__g"])).cast("int32"))
        t = t.mutate(__g=t["__g"] - _indicator(t[value] < e[t["__g"]]))
        t = t.mutate(**{out: t["__g"] + _indicator((t[value] >= e[t["__g"] + 1]) & (t["__g"] < m - 1))})
        return t.drop("__g")

    def grid_counts(self, edges_predicted, edges_residual):
        m = edges_predicted.size - 1
        ex, er = np.asarray(edges_predicted, float), np.asarray(edges_residual, float)
        r = self.rows
        r = r.filter(r.predicted.between(float(ex[0]), float(ex[-1]))
                     & r.residual.between(float(er[0]), float(er[-1])))
        r = self._binned(self._binned(r, "predicted", ex, "__i"), "residual", er, "__j")
        (i, j), n = self._counted(r, ["__i", "__j"])
        hist = np.zeros(m * m)
        np.add.at(hist, i * m + j, n)
        return hist.reshape(m, m)

    def interval_counts(self, thresholds_desc):
        cells = thresholds_desc.size - 1
        r = self.rows.select(__y=self.rows.label.cast("int64"), __s=-self.rows.predicted)
        if cells == 1:
            (label,), n = self._counted(r, ["__y"])
            return (np.array([float(n[label == 1].sum())]), np.array([float(n[label == 0].sum())]))
        r = self._binned(r, "__s", -np.asarray(thresholds_desc, dtype=float), "__k")
        (k, label), n = self._counted(r, ["__k", "__y"])
        tp = np.bincount(k[label == 1], weights=n[label == 1], minlength=cells)
        fp = np.bincount(k[label == 0], weights=n[label == 0], minlength=cells)
        return tp.astype(float), fp.astype(float)

    def scored(self):
        out = self.query.run(self.rows.select("label", "predicted"))
        y = np.asarray(out.column("label").to_numpy(), dtype=float).astype(np.int8)
        return y, np.asarray(out.column("predicted").to_numpy(), dtype=float)


# -- the DP fits (the door's "fit_model"): their sums, inside the engine ---------------------------


class TableMoments(Moments):
    """:class:`~dpwidgets.engine.regression.Moments` of a diagnostics view in its engine: the
    clipped sums in one pass, the centred products in another."""

    def __init__(self, query: RowsQuery, outcome: str = "y"):
        self.query = query
        self.t, X, y = _columns(query, outcome)
        self.cols = [*X, y]
        self.d = len(X)
        self.n = int(_aggregate(query, self.t, n=self.t.count())["n"])

    def _clipped(self, lo, hi):
        return [c.clip(lower=float(a), upper=float(b))
                for c, a, b in zip(self.cols, lo, hi, strict=True)]

    def sums(self, lo, hi):
        got = _aggregate(self.query, self.t,
                         **{f"m{j}": c.sum() for j, c in enumerate(self._clipped(lo, hi))})
        return np.array([0.0 if math.isnan(got[f"m{j}"]) else got[f"m{j}"]
                         for j in range(self.d + 1)])

    def products(self, lo, hi, centre):
        c = [v - float(m) for v, m in zip(self._clipped(lo, hi), centre, strict=True)]
        d = self.d
        sums = {f"xy{j}": (c[j] * c[d]).sum() for j in range(d)}
        sums.update({f"xx{j}_{k}": (c[j] * c[k]).sum() for j in range(d) for k in range(j, d)})
        got = _aggregate(self.query, self.t, **sums)
        got = {k: 0.0 if math.isnan(v) else v for k, v in got.items()}  # SUM of no rows: NULL
        gram = np.empty((d, d))
        for j in range(d):
            for k in range(j, d):
                gram[j, k] = gram[k, j] = got[f"xx{j}_{k}"]
        return np.array([got[f"xy{j}"] for j in range(d)]), gram


class TableLogisticSums(LogisticSums):
    """:class:`~dpwidgets.engine.regression.LogisticSums` of a diagnostics view in its engine:
    the objective of :func:`~dpwidgets.engine.regression.dp_logistic_regression`, its gradient
    and Hessian at ``theta``, in one pass."""

    def __init__(self, query: RowsQuery):
        self.query = query
        self.t, self.X, y = _columns(query)
        bad = _aggregate(query, self.t, bad=_indicator((y != 0.0) & (y != 1.0)).sum())
        if bad["bad"] > 0:
            raise ValueError("y must hold 0/1 labels")
        self.sign = y * 2.0 - 1.0
        self.d = len(self.X)
        self.n = int(_aggregate(query, self.t, n=self.t.count())["n"])

    def _scaled(self, data_norm: float):
        """The rows scaled into the ball of ``data_norm`` and divided by sqrt(2) (columns
        ``z0 ... z{d-1}``) with the label's sign ``s``: one expression per ``data_norm``."""
        import ibis

        if getattr(self, "_scaled_for", None) != data_norm:
            root2 = math.sqrt(2.0)
            norm = sum((x * x for x in self.X[1:]), self.X[0] * self.X[0]).sqrt()
            scale = ibis.ifelse(norm > float(data_norm), float(data_norm) / norm, 1.0)
            self._z = self.t.select(s=self.sign, **{
                f"z{j}": x * scale / float(data_norm) / root2 for j, x in enumerate(self.X)})
            self._scaled_for = data_norm
        return self._z

    def evaluate(self, theta, data_norm, lam, n):
        import ibis

        z = self._scaled(data_norm)
        d = self.d
        root2 = math.sqrt(2.0)
        eta = ibis.literal(float(theta[-1]) / root2)
        for j in range(d):
            eta = eta + z[f"z{j}"] * float(theta[j])
        u = z.mutate(m=z.s * eta)
        # log(1 + exp(-m)) and sigmoid(-m), stable for either sign of m.
        u = u.mutate(loss=ibis.greatest(-u.m, 0.0) + (1.0 + (-u.m.abs()).exp()).ln(),
                     sig=1.0 / (1.0 + u.m.clip(lower=-700.0, upper=700.0).exp()))
        u = u.mutate(w=-u.s * u.sig, c=u.sig * (1.0 - u.sig))
        col = [*(u[f"z{j}"] for j in range(d)), None]  # None: the intercept's 1/sqrt(2)

        def times(v, j):
            return v / root2 if col[j] is None else v * col[j]

        sums = {"loss": u.loss.sum()}
        sums.update({f"g{j}": times(u.w, j).sum() for j in range(d + 1)})
        sums.update({f"h{j}_{k}": times(times(u.c, j), k).sum()
                     for j in range(d + 1) for k in range(j, d + 1)})
        got = _aggregate(self.query, u, **sums)
        got = {k: 0.0 if math.isnan(v) else v for k, v in got.items()}  # SUM of no rows: NULL
        n = float(n)  # the public normaliser of the objective (never the true count)
        theta = np.asarray(theta, dtype=float)
        grad = np.array([got[f"g{j}"] for j in range(d + 1)]) / n + lam * theta
        hess = np.empty((d + 1, d + 1))
        for j in range(d + 1):
            for k in range(j, d + 1):
                hess[j, k] = hess[k, j] = got[f"h{j}_{k}"] / n
        hess += lam * np.eye(d + 1)
        return got["loss"] / n + 0.5 * lam * float(theta @ theta), grad, hess


def table_fit(query: RowsQuery, p: dict, rng: np.random.Generator):
    """The door's DP fit (``"fit_model"``) on a table in its engine: the engine's
    :func:`~dpwidgets.engine.regression.dp_linear_regression` or
    :func:`~dpwidgets.engine.regression.dp_logistic_regression` on the view's sums."""
    from .engine.regression import dp_linear_regression, dp_logistic_regression

    if p["kind"] == "ols":
        return dp_linear_regression(TableMoments(query, p["outcome"]), None, p["epsilon"],
                                    (p["bounds_X"][0], p["bounds_X"][1]),
                                    tuple(p["bounds_y"]), rng=rng, n=p["n"])
    return dp_logistic_regression(TableLogisticSums(query), None, p["epsilon"],
                                  p["data_norm"], rng=rng, n=p["n"],
                                  regularization=p["regularization"])
