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
features.

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
from .tables import RowsQuery

__all__ = ["TableRecords", "table_records"]

#: Newton's method for the ordinary logistic fit stops when a step moves no coefficient by
#: more than this (relative to the coefficients' size), or after :data:`NEWTON_STEPS` passes.
NEWTON_TOL = 1e-10
NEWTON_STEPS = 60


def _sigmoid(eta):
    return 1.0 / (1.0 + (-eta).exp())


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
    (C = 1, the intercept unpenalised) by Newton's method, one pass of sums per step: its
    exact minimiser (scikit-learn's solver stops at a gradient tolerance of 1e-4)."""
    t = query.rows()
    d = len(X)
    z = [*X, None]  # the intercept's column is 1
    theta = np.zeros(d + 1)
    for _ in range(NEWTON_STEPS):
        p = _sigmoid(_dot(X, theta[:d], theta[d]))
        w = p * (1.0 - p)
        sums = {f"g{j}": ((p - y) * (x if x is not None else 1.0)).sum()
                for j, x in enumerate(z)}
        for j in range(d + 1):
            for k in range(j, d + 1):
                term = w
                for col in (z[j], z[k]):
                    if col is not None:
                        term = term * col
                sums[f"h{j}_{k}"] = term.sum()
        s = _aggregate(query, t, **sums)
        grad = np.array([s[f"g{j}"] for j in range(d + 1)])
        grad[:d] += theta[:d]
        hess = np.empty((d + 1, d + 1))
        for j in range(d + 1):
            for k in range(j, d + 1):
                hess[j, k] = hess[k, j] = s[f"h{j}_{k}"]
        hess[np.arange(d), np.arange(d)] += 1.0
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.max(np.abs(step)) <= NEWTON_TOL * max(1.0, float(np.max(np.abs(theta)))):
            break
    return theta[:d], float(theta[d])


class TableRecords(Records):
    """:class:`~dpwidgets.engine.diagnostics.Records` of a model on a table in its engine.

    Parameters
    ----------
    query : dpwidgets.tables.RowsQuery
        The diagnostics view: feature columns, then the outcome.
    kind, outcome, model, coef, intercept :
        The model under diagnosis, as :func:`dpwidgets.releases.diagnostics.model_predictions`
        takes it: ``model="public"`` applies ``coef`` and ``intercept``; ``"ordinary"`` fits
        the model to the table first (from sums, inside the engine).
    """

    def __init__(self, query: RowsQuery, *, kind: str = "ols", outcome: str = "y",
                 model: str = "ordinary", coef=None, intercept: float = 0.0):
        self.query = query
        t = query.rows()
        names = [c for c in t.columns]
        X, y = [t[c] for c in names[:-1]], t[names[-1]]
        if outcome == "log":
            if _aggregate(query, t, bad=(y <= 0).cast("int64").sum())["bad"] > 0:
                raise ValueError("outcome='log' needs a positive outcome; this dataset has "
                                 "values <= 0 (choose outcome='y')")
            y = y.ln()
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
                         labels=((r.label != 0.0) & (r.label != 1.0)).cast("int64").sum(),
                         scores=((r.predicted < lower) | (r.predicted > upper)).cast("int64").sum())
        if bad["labels"] > 0:
            raise ValueError("labels must be 0 or 1; some values are not")
        if bad["scores"] > 0:
            raise ValueError(f"scores must lie in [{lower}, {upper}]; some values fall outside "
                             "(give the public bounds of the scores, or clip them first)")

    def _grouped(self, keys: dict, where=None) -> tuple[list[np.ndarray], np.ndarray]:
        r = self.rows if where is None else self.rows.filter(where(self.rows))
        keyed = r.mutate(**{k: f(r) for k, f in keys.items()})
        out = self.query.run(keyed.group_by(list(keys)).aggregate(__n=keyed.count()))
        cols = [np.asarray(out.column(k).to_numpy(), dtype=np.int64) for k in keys]
        return cols, np.asarray(out.column("__n").to_numpy(), dtype=np.int64)

    def doubling_counts(self, column, center, mu, max_doublings):
        import ibis

        top = max_doublings + 1

        def first(r):
            dist = (r[column] - float(center)).abs()
            guess = ibis.cases((dist == 0.0, 0.0), else_=(dist / float(mu)).log2().ceil())
            f = guess.clip(lower=0.0, upper=float(top))
            # Exact corrections of log2's rounding at powers of two (a boundary is inside).
            f = ibis.ifelse((f > 0) & (dist <= float(mu) * (ibis.literal(2.0) ** (f - 1))),
                            f - 1, f)
            f = ibis.ifelse(dist > float(mu) * (ibis.literal(2.0) ** f), f + 1, f)
            return f.clip(lower=0.0, upper=float(top)).cast("int64")

        (idx,), n = self._grouped({"__k": first})
        return np.bincount(idx, weights=n, minlength=top + 1).astype(np.int64)

    def _uniform_bin(self, value, edges: np.ndarray):
        """The engine's :func:`~dpwidgets.engine.diagnostics._uniform_bin`: index
        arithmetic, then one exact comparison each way against the edges themselves."""
        import ibis

        m = edges.size - 1
        scale = m / (edges[-1] - edges[0])
        e = ibis.literal([float(v) for v in edges], type="array<float64>")
        guess = ((value - float(edges[0])) * scale).floor().clip(lower=0, upper=m - 1).cast("int64")
        guess = guess - (value < e[guess]).cast("int64")
        return guess + ((value >= e[guess + 1]) & (guess < m - 1)).cast("int64")

    def grid_counts(self, edges_predicted, edges_residual):
        m = edges_predicted.size - 1
        ex, er = np.asarray(edges_predicted, float), np.asarray(edges_residual, float)
        (i, j), n = self._grouped(
            {"__i": lambda r: self._uniform_bin(r.predicted, ex),
             "__j": lambda r: self._uniform_bin(r.residual, er)},
            where=lambda r: (r.predicted.between(float(ex[0]), float(ex[-1]))
                             & r.residual.between(float(er[0]), float(er[-1]))))
        hist = np.zeros(m * m)
        np.add.at(hist, i * m + j, n)
        return hist.reshape(m, m)

    def interval_counts(self, thresholds_desc):
        cells = thresholds_desc.size - 1
        if cells == 1:
            (label,), n = self._grouped({"__y": lambda r: r.label.cast("int64")})
            return (np.array([float(n[label == 1].sum())]), np.array([float(n[label == 0].sum())]))
        neg = -np.asarray(thresholds_desc, dtype=float)
        (k, label), n = self._grouped({"__k": lambda r: self._uniform_bin(-r.predicted, neg),
                                       "__y": lambda r: r.label.cast("int64")})
        tp = np.bincount(k[label == 1], weights=n[label == 1], minlength=cells)
        fp = np.bincount(k[label == 0], weights=n[label == 0], minlength=cells)
        return tp.astype(float), fp.astype(float)

    def scored(self):
        out = self.query.run(self.rows.select("label", "predicted"))
        y = np.asarray(out.column("label").to_numpy(), dtype=float).astype(np.int8)
        return y, np.asarray(out.column("predicted").to_numpy(), dtype=float)


def table_records(query: RowsQuery, **model) -> TableRecords:
    """:class:`TableRecords` of the model ``model`` (``kind``, ``outcome``, ``model``,
    ``coef``, ``intercept``) on ``query``."""
    return TableRecords(query, **model)
