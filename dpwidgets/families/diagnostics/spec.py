"""Session mechanisms of the private regression diagnostics (Chen 2018, Ch. 4; Chen et al. 2016).

They run on a *table* dataset -- feature columns, then the outcome -- through

=======================  ==================================================  ==========
name                     engine                                              charged
=======================  ==================================================  ==========
``"fit_model"``          a DP fit (its coefficients; engine.regression)      ``epsilon``
``"residual_plot"``      PriRP (Chen 2018, Alg. 9)                           ``epsilon``
``"roc_curve"``          PriROC (Chen 2018, Alg. 11-12)                      ``epsilon``
``"binned_residuals"``   PriBRP (Chen 2018, Alg. 13-14)                      ``epsilon``
=======================  ==================================================  ==========

The model under diagnosis is a parameter: ``model="ordinary"`` fits it inside the door (its
predictions are as confidential as the data, and the diagnostic's guarantee is given the
model), ``model="public"`` applies public coefficients such as a ``"fit_model"`` release's. See
:func:`model_predictions`. Neighbours: one row added or removed (the text's bounded variant is
stated in each engine docstring).

The public row count. ``validate`` (the ``validate`` of each mechanism's parameters,
:mod:`~dpwidgets.families.diagnostics.params`) decides every default from the dataset's *public* shape (``shape[0]``: the
owner's declared ``rows=`` of a table's ``"rows"`` view, the shape of an ``add_dataset`` array,
which that API makes public) and writes it into the canonical parameters as ``n``, with every
budget split, grid, depth and threshold derived from it; ``run`` passes that ``n`` to the
engine, which never decides anything from the true (bounded, cleaned) row count. Two
neighbouring tables of different true sizes therefore get the same parameters,
``epsilon_parts``, grids, numbers of thresholds and bins, label and guarantee.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from ..._moved import moved
from ...mechanism import Mechanism, register_mechanism
from .params import (
    MODELS,
    OUTCOMES,
    BinnedResidualsParams,
    FitParams,
    ResidualPlotParams,
    RocParams,
    _brp_split,
)

__all__ = ["DIAGNOSTIC_MECHANISMS", "MODELS", "OUTCOMES", "model_predictions"]

_FIT_CACHE: dict[tuple, np.ndarray] = {}
_FIT_CACHE_SIZE = 8


def _transform_outcome(y: np.ndarray, outcome: str) -> np.ndarray:
    if outcome == "log":
        if np.any(y <= 0):
            raise ValueError(
                "outcome='log' needs a positive outcome; this dataset has values <= 0 "
                "(choose outcome='y')"
            )
        return np.log(y)
    return y


def model_predictions(
    table: np.ndarray,
    *,
    kind: str = "ols",
    outcome: str = "y",
    model: str = "ordinary",
    coef=None,
    intercept: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predictions, residuals and (transformed) outcome of the model under diagnosis.

    Parameters
    ----------
    table : numpy.ndarray, shape (n, p + 1)
        Features, then the outcome (0/1 labels for ``kind="logistic"``).
    kind : {"ols", "logistic"}
        Linear regression (predictions ŷ) or logistic regression (probabilities P(y = 1 | x)).
    outcome : {"y", "log"}
        Public transformation of the outcome before fitting (see :data:`OUTCOMES`).
    model : {"ordinary", "public"}
        ``"ordinary"``: fit the model to ``table`` itself (scikit-learn, through
        :func:`dpwidgets.datasets.fit_model`; cached per table and specification).
        ``"public"``: apply the given public coefficients (e.g. the output of a
        ``"fit_model"`` release: a DP fit).
    coef, intercept :
        The public coefficients for ``model="public"``.

    Returns
    -------
    predictions, residuals, outcome : numpy.ndarray
        ``residuals = outcome - predictions``.

    Notes
    -----
    Whatever the model, the predictions and residuals on a confidential table are themselves
    confidential; an *ordinary* fit is moreover a function of every record, so only the DP
    diagnostics that the session releases may show anything about them.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.spec import model_predictions
    >>> table = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]])
    >>> predicted, residuals, y = model_predictions(table, model="public", coef=[2.0],
    ...                                             intercept=1.0)
    >>> predicted.tolist(), residuals.tolist()
    ([1.0, 3.0, 5.0], [0.0, 0.0, 0.0])
    """
    X, y = table[:, :-1], _transform_outcome(table[:, -1], outcome)
    if model == "public":
        eta = X @ np.asarray(coef, dtype=float) + float(intercept)
        predictions = eta if kind == "ols" else 1.0 / (1.0 + np.exp(-eta))
    else:
        key = (hashlib.blake2b(table.tobytes(), digest_size=16).hexdigest(), table.shape, kind,
               outcome)
        predictions = _FIT_CACHE.get(key)
        if predictions is None:
            from .standins import fit_model

            predictions = fit_model(X, y, kind).predictions
            predictions.setflags(write=False)
            if len(_FIT_CACHE) >= _FIT_CACHE_SIZE:
                _FIT_CACHE.pop(next(iter(_FIT_CACHE)))
            _FIT_CACHE[key] = predictions
    return predictions, y - predictions, y


def _diagnostics():
    from ...engine import diagnostics

    return diagnostics


def _model_label(p: dict) -> str:
    what = "log y" if p["outcome"] == "log" else "y"
    fit = "ordinary fit" if p["model"] == "ordinary" else "public (DP-fit) coefficients"
    return f"{p['kind'].upper() if p['kind'] == 'ols' else 'logistic'} of {what}, {fit}"


def _model_of(p: dict) -> dict:
    return {k: p[k] for k in ("kind", "outcome", "model", "coef", "intercept") if k in p}


def _fit_run(table, p: dict, rng: np.random.Generator):
    from ...engine.regression import dp_linear_regression, dp_logistic_regression
    from ...tables import RowsQuery

    if isinstance(table, RowsQuery):  # a table in its query engine: the fit reads sums
        from ...scored import table_fit

        return table_fit(table, p, rng)

    X, y = table[:, :-1], _transform_outcome(table[:, -1], p["outcome"])
    if p["kind"] == "ols":
        return dp_linear_regression(X, y, p["epsilon"], (p["bounds_X"][0], p["bounds_X"][1]),
                                    tuple(p["bounds_y"]), rng=rng, n=p["n"])
    return dp_logistic_regression(X, y, p["epsilon"], p["data_norm"], rng=rng, n=p["n"],
                                  regularization=p["regularization"])


def _relation(p: dict) -> str:
    """The neighbour relation a diagnostic is calibrated for: ``"replace-one"`` (the text's;
    n public) or ``"add/remove"`` (:data:`dpwidgets.engine.diagnostics.NEIGHBOURS`)."""
    return _diagnostics().NEIGHBOURS[p["neighbours"]]


def _on_model(engine_function: str, inputs: tuple[str, ...], options: Callable[[dict], dict]):
    """A diagnostic's ``run``: the diagnosed model's predictions, residuals and outcome on the
    table (inside the door), then the engine's ``engine_function`` on the named ``inputs``.
    On a table left in its query engine (a :class:`~dpwidgets.tables.RowsQuery`) the model
    and the counts are computed there (:mod:`dpwidgets.scored`): the rows are not loaded."""

    def run(table, p: dict, rng: np.random.Generator):
        from ...engine import diagnostics
        from ...tables import RowsQuery

        if isinstance(table, RowsQuery):
            from ...scored import TableRecords

            args = (TableRecords(table, **_model_of(p)), None)
        else:
            predicted, residuals, outcome = model_predictions(table, **_model_of(p))
            named = {"predicted": predicted, "residuals": residuals, "outcome": outcome}
            args = tuple(named[i] for i in inputs)
        return getattr(diagnostics, engine_function)(*args, p["epsilon"], rng, **options(p))

    return run


_rp_run = _on_model("private_residual_plot", ("predicted", "residuals"), lambda p: {
    "publisher": p["publisher"], "theta": p["theta"], "mu_predicted": p["mu_predicted"],
    "mu_residual": p["mu_residual"], "center_predicted": p["center_predicted"],
    "center_residual": p["center_residual"], "grid": p["grid"], "epsilon1": p["epsilon1"],
    "neighbours": p["neighbours"], "n": p["n"]})
_roc_run = _on_model("private_roc_curve", ("outcome", "predicted"), lambda p: {
    "rho": p["rho"], "s": p["s"], "thresholds": p["thresholds"], "publisher": p["publisher"],
    "neighbours": p["neighbours"], "n": p["n"],
    "defaults": "text"})  # every parameter is explicit (decided in validate)
_brp_run = _on_model("private_binned_residual_plot", ("outcome", "predicted"), lambda p: {
    "split": _brp_split(p["rho"]), "s": p["s"], "threshold": p["threshold"],
    "neighbours": p["neighbours"], "n": p["n"]})


def _publisher_private(p: dict) -> bool:
    """Whether the chosen publisher is DP: ``"dawa_published_not_private"`` is not (it is kept
    to reproduce Chen 2018, Table 4.4), so the door refuses it in analyst mode."""
    from ...engine.histograms import PUBLISHERS

    return bool(PUBLISHERS[p["publisher"]].private)


def _public(*arrays: str, parts: bool = True, **scalars):
    """An ``outputs`` function: the named result fields as float arrays, the named scalars
    converted (``scalars``: field -> type), the budget split and the guarantee. These fields
    are the whole public output of a diagnostic; nothing else leaves the door."""

    def outputs(result, p: dict) -> dict:
        out = {name: np.asarray(getattr(result, name), dtype=float) for name in arrays}
        out.update({name: kind(getattr(result, name)) for name, kind in scalars.items()})
        if parts:
            out["epsilon_parts"] = dict(result.epsilon_parts)
        out["guarantee"] = result.guarantee
        return out

    return outputs


def _rp_outputs(result, p: dict) -> dict:
    out = _public("points", "counts", "edges_predicted", "edges_residual", grid=int)(result, p)
    (x0, x1), (r0, r1) = result.bounds
    out["bounds"] = np.array([x0, x1, r0, r1], dtype=float)
    return out


_fit_outputs = _public("coef", parts=False, intercept=float)
_roc_outputs = _public("fpr", "tpr", "thresholds", "noisy_tp", "noisy_fp", auc=float)
_brp_outputs = _public("mean_predicted", "mean_residual", "bins", "noisy_sizes")


def _spent(result, p: dict) -> float:
    """What a diagnostic says it spent: the sum of its parts (the door checks it)."""
    return float(sum(result.epsilon_parts.values()))


DIAGNOSTIC_MECHANISMS: dict[str, Mechanism] = {
    # Fitting a DP model on the data is a release of its own (its coefficients), charged once.
    "fit_model": Mechanism(
        "fit_model", FitParams.validate, _fit_run, _fit_outputs, table=True, pushdown=True,
        label=lambda p: f"DP {p['kind']} fit of {'log y' if p['outcome'] == 'log' else 'y'} "
        f"({'functional mechanism' if p['kind'] == 'ols' else 'output perturbation'})",
        params=FitParams),
    "residual_plot": Mechanism(
        "residual_plot", ResidualPlotParams.validate, _rp_run, _rp_outputs, table=True,
        spent=_spent, pushdown=True,
        label=lambda p: f"PriRP ({p['publisher']}) — {_model_label(p)}",
        private=_publisher_private, neighbours=_relation, params=ResidualPlotParams),
    "roc_curve": Mechanism(
        "roc_curve", RocParams.validate, _roc_run, _roc_outputs, table=True, spent=_spent,
        pushdown=True, label=lambda p: f"PriROC ({p['publisher']}) — {_model_label(p)}",
        private=_publisher_private, neighbours=_relation, params=RocParams),
    "binned_residuals": Mechanism(
        "binned_residuals", BinnedResidualsParams.validate, _brp_run, _brp_outputs,
        table=True, spent=_spent, pushdown=True,
        label=lambda p: f"PriBRP — {_model_label(p)}",
        neighbours=_relation, params=BinnedResidualsParams),
}
for _mechanism in DIAGNOSTIC_MECHANISMS.values():
    register_mechanism(_mechanism)


# table_stand_in lived in the old spec module (dpwidgets.releases.diagnostics, now an alias of
# this one) until the catalog (which builds every stand-in) took it: the catalog must not
# import a mechanism spec that reaches back into it through the tables.
__getattr__ = moved("dpwidgets.releases.diagnostics",
                    {"table_stand_in": ("dpwidgets.catalog", "table_stand_in")})
