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

The public row count. ``validate`` decides every default from the dataset's *public* shape
(``shape[0]``: the owner's declared ``rows=`` of a table's ``"rows"`` view, the shape of an
``add_dataset`` array, which that API makes public) and writes it into the canonical parameters
as ``n``, with every budget split, grid, depth and threshold derived from it; ``run`` passes
that ``n`` to the engine, which never decides anything from the true (bounded, cleaned) row
count. Two neighbouring tables of different true sizes therefore get the same parameters,
``epsilon_parts``, grids, numbers of thresholds and bins, label and guarantee.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

import numpy as np

from .._moved import moved
from ..engine.validation import (
    check_epsilon,
    check_finite_array,
    check_positive,
    check_positive_int,
)
from ..mechanism import Mechanism, register_mechanism

__all__ = ["DIAGNOSTIC_MECHANISMS", "MODELS", "OUTCOMES", "model_predictions"]

OUTCOMES: dict[str, str] = {"y": "the outcome as recorded", "log": "its natural logarithm"}
MODELS = ("ordinary", "public")
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
            from ..datasets.regression import fit_model

            predictions = fit_model(X, y, kind).predictions
            predictions.setflags(write=False)
            if len(_FIT_CACHE) >= _FIT_CACHE_SIZE:
                _FIT_CACHE.pop(next(iter(_FIT_CACHE)))
            _FIT_CACHE[key] = predictions
    return predictions, y - predictions, y


def _model_validate(p: dict, shape: tuple, kind: str | None = None) -> dict:
    """Pop and check the model specification (shared by the diagnostics and the DP fit).

    ``kind`` given: the diagnostic needs that kind of model (PriRP: OLS; PriROC and PriBRP:
    logistic); ``None``: the caller chooses (the DP fit)."""
    if shape[1] < 2:
        raise ValueError(
            f"a diagnostics table needs at least one feature column before the outcome, got "
            f"shape {shape}"
        )
    given = p.pop("kind", kind or "ols")
    if given not in ("ols", "logistic"):
        raise ValueError(f"kind must be 'ols' or 'logistic', got {given!r}")
    if kind is not None and given != kind:
        raise ValueError(f"this diagnostic needs kind={kind!r}, got {given!r}")
    outcome = p.pop("outcome", "y")
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {sorted(OUTCOMES)}, got {outcome!r}")
    if given == "logistic" and outcome != "y":
        raise ValueError("a logistic model takes the 0/1 outcome as it is (outcome='y')")
    return {"kind": given, "outcome": outcome}


def _diagnosed_model(p: dict, shape: tuple, kind: str) -> dict:
    out = _model_validate(p, shape, kind)
    model = p.pop("model", "ordinary")
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    out["model"] = model
    if model == "public":
        if "coef" not in p:
            raise ValueError("model='public' needs coef= (and intercept=): public coefficients")
        coef = check_finite_array(np.atleast_1d(p.pop("coef")), "coef")
        if coef.size != shape[1] - 1:
            raise ValueError(
                f"coef must hold one coefficient per feature ({shape[1] - 1}), got {coef.size}"
            )
        out["coef"] = coef
        out["intercept"] = float(check_finite_array([p.pop("intercept", 0.0)], "intercept")[0])
    elif "coef" in p or "intercept" in p:
        raise ValueError("coef= and intercept= are for model='public' only")
    return out


def _publisher(name, ndim: int) -> str:
    from ..engine.histograms import PUBLISHERS

    if not isinstance(name, str) or name not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {name!r}")
    if ndim not in PUBLISHERS[name].dims:
        raise ValueError(f"publisher {name!r} does not publish {ndim}-D histograms")
    return PUBLISHERS[name].name  # aliases ("dawa", "lm") share one cache key


def _fraction(value, name: str, upper: float = 1.0) -> float:
    from ..engine.validation import check_probability

    value = check_probability(value, name)
    if value >= upper:
        raise ValueError(f"{name} must be in the open interval (0, {upper:g}), got {value!r}")
    return value


def _diagnostics():
    from ..engine import diagnostics

    return diagnostics


def _optional_int(p: dict, name: str, maximum: int | None = None) -> int | None:
    value = p.pop(name, None)
    return None if value is None else check_positive_int(value, name, maximum=maximum)


def _unknown(p: dict, mechanism: str) -> None:
    if p:
        raise ValueError(f"unknown parameter(s) for {mechanism!r}: {sorted(p)}")


def _finish(p: dict, out: dict, shape: tuple, name: str, what: str, minimum: int = 2) -> dict:
    """The last checks of a diagnostic's parameters: enough records, nothing unknown."""
    if shape[0] < minimum:
        raise ValueError(f"{what} needs at least {minimum} records, the table has {shape[0]}")
    _unknown(p, name)
    return out


def _model_label(p: dict) -> str:
    what = "log y" if p["outcome"] == "log" else "y"
    fit = "ordinary fit" if p["model"] == "ordinary" else "public (DP-fit) coefficients"
    return f"{p['kind'].upper() if p['kind'] == 'ols' else 'logistic'} of {what}, {fit}"


def _model_of(p: dict) -> dict:
    return {k: p[k] for k in ("kind", "outcome", "model", "coef", "intercept") if k in p}


def _bounds_pair(value, name: str, n_features: int | None = None) -> list:
    try:
        lower, upper = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lower, upper), got {value!r}") from None
    size = 1 if n_features is None else n_features
    lo = np.broadcast_to(check_finite_array(np.atleast_1d(lower), f"{name} lower"), (size,))
    hi = np.broadcast_to(check_finite_array(np.atleast_1d(upper), f"{name} upper"), (size,))
    if np.any(lo >= hi):
        raise ValueError(f"{name} must have lower < upper, got {value!r}")
    from ..engine.regression import MAX_BOUND

    if max(np.abs(lo).max(), np.abs(hi).max()) > MAX_BOUND:
        raise ValueError(f"{name} must lie within +-{MAX_BOUND:g}")
    if n_features is None:
        return [float(lo[0]), float(hi[0])]
    return [lo.astype(float).copy(), hi.astype(float).copy()]


def _fit_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    out = _model_validate(p, shape)
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    out["n"] = _public_rows(p, shape, 2, "a DP fit")
    if out["kind"] == "ols":
        ranges = getattr(shape, "ranges", None)
        if ("bounds_X" not in p and "bounds_y" not in p and out["outcome"] == "y"
                and ranges is not None and all(r is not None for r in ranges)):
            # The owner's declared ranges (public) bound the features and the outcome.
            p["bounds_X"] = ([r[0] for r in ranges[:-1]], [r[1] for r in ranges[:-1]])
            p["bounds_y"] = tuple(ranges[-1])
        if "bounds_X" not in p or "bounds_y" not in p:
            raise ValueError(
                "a DP OLS fit needs public bounds_X=(lower, upper) and bounds_y=(lower, upper) "
                "(of the transformed outcome), declared by the data owner, never read off the data"
            )
        out["bounds_X"] = _bounds_pair(p.pop("bounds_X"), "bounds_X", shape[1] - 1)
        out["bounds_y"] = _bounds_pair(p.pop("bounds_y"), "bounds_y")
    else:
        if "data_norm" not in p:
            raise ValueError("a DP logistic fit needs data_norm= (public bound on a row's L2 norm)")
        out["data_norm"] = check_positive(p.pop("data_norm"), "data_norm")
        from ..engine.regression import logistic_regularization

        reg = p.pop("regularization", None)
        out["regularization"] = (logistic_regularization(out["n"], shape[1] - 1, out["epsilon"])
                                 if reg is None else check_positive(reg, "regularization"))
    _unknown(p, "fit_model")
    return out


def _fit_run(table, p: dict, rng: np.random.Generator):
    from ..engine.regression import dp_linear_regression, dp_logistic_regression
    from ..tables import RowsQuery

    if isinstance(table, RowsQuery):  # a table in its query engine: the fit reads sums
        from ..scored import table_fit

        return table_fit(table, p, rng)

    X, y = table[:, :-1], _transform_outcome(table[:, -1], p["outcome"])
    if p["kind"] == "ols":
        return dp_linear_regression(X, y, p["epsilon"], (p["bounds_X"][0], p["bounds_X"][1]),
                                    tuple(p["bounds_y"]), rng=rng, n=p["n"])
    return dp_logistic_regression(X, y, p["epsilon"], p["data_norm"], rng=rng, n=p["n"],
                                  regularization=p["regularization"])


def _public_rows(p: dict, shape: tuple, minimum: int, what: str) -> int:
    """The public row count: ``shape[0]`` of the dataset's public shape (a ``"rows"`` view's
    declared ``rows=``), checked against ``minimum`` before anything is charged. An ``n`` in
    the request (canonical parameters given back) must be that count: it is the owner's
    declaration, not the analyst's choice."""
    n = int(shape[0])
    if n < minimum:
        raise ValueError(f"{what} needs at least {minimum} records, the table has {n}")
    asked = p.pop("n", n)
    if isinstance(asked, bool) or not isinstance(asked, int | np.integer) or asked != n:
        raise ValueError(f"n is the dataset's public row count ({n}, declared by its owner); "
                         f"got n={asked!r}")
    return n


def _neighbours(p: dict) -> str:
    """The neighbour relation a diagnostic is calibrated for: ``"replace-one"`` (the text's;
    n public) or ``"add/remove"`` (:data:`dpwidgets.engine.diagnostics.NEIGHBOURS`)."""
    relation = p.pop("neighbours", "replace-one")
    if relation not in _diagnostics().NEIGHBOURS:
        raise ValueError(f"neighbours must be one of {sorted(_diagnostics().NEIGHBOURS)}, "
                         f"got {relation!r}")
    return relation


def _relation(p: dict) -> str:
    return _diagnostics().NEIGHBOURS[p["neighbours"]]


def _rp_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    out = _diagnosed_model(p, shape, "ols")
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    out["neighbours"] = _neighbours(p)
    out["publisher"] = _publisher(p.pop("publisher", "dawa"), 2)
    rho = p.pop("rho", None)
    out["rho"] = None if rho is None else _fraction(rho, "rho")
    grid = _optional_int(p, "grid", _diagnostics().MAX_GRID)
    out["theta"] = _fraction(p.pop("theta", 0.95), "theta")
    # epsilon1 and the grid from the public row count (Chen 2018 §4.2.2), never the true one.
    out["n"] = _public_rows(p, shape, 2, "a residual plot")
    epsilon1 = p.pop("epsilon1", None)  # (canonical parameters given back)
    if out["rho"] is not None:
        if epsilon1 is not None and not math.isclose(epsilon1, out["rho"] * out["epsilon"]):
            raise ValueError("give rho= or epsilon1= (the bounds' budget), not both")
        epsilon1 = out["rho"] * out["epsilon"]
    out["epsilon1"], out["grid"] = _diagnostics().residual_plot_defaults(
        out["n"], out["epsilon"], out["theta"], epsilon1, grid)
    for name in ("mu_predicted", "mu_residual"):
        out[name] = check_positive(p.pop(name, 1.0), name)
    for name in ("center_predicted", "center_residual"):
        out[name] = float(check_finite_array([p.pop(name, 0.0)], name)[0])
    return _finish(p, out, shape, "residual_plot", "a residual plot")


def _roc_validate(params: dict, shape: tuple) -> dict:
    """PriROC's canonical parameters. ``defaults="dpwidgets"`` (fixed thresholds, ``s`` by the
    rule in n·ε, HB) or ``"text"`` (s-RecursiveMedians, ρ = 0.2, DAWA); see
    :func:`dpwidgets.engine.diagnostics.private_roc_curve`. Every default is spelt out."""
    p = dict(params)
    out = _diagnosed_model(p, shape, "logistic")
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    out["neighbours"] = _neighbours(p)
    defaults = p.pop("defaults", "dpwidgets")
    if defaults not in _diagnostics().ROC_DEFAULTS:
        raise ValueError(
            f"defaults must be one of {sorted(_diagnostics().ROC_DEFAULTS)}, got {defaults!r}")
    text = defaults == "text"
    out["rho"] = _fraction(p.pop("rho", 0.2), "rho")
    thresholds = p.pop("thresholds", "recursive_medians" if text else "fixed")
    if thresholds not in ("recursive_medians", "fixed"):
        raise ValueError(f"thresholds must be 'recursive_medians' or 'fixed', got {thresholds!r}")
    out["thresholds"] = thresholds
    s = _optional_int(p, "s", _diagnostics().MAX_LEVELS)
    out["n"] = n = _public_rows(p, shape, 2, "a ROC curve")
    if s is None:  # from the public row count and epsilon: the same for every true size
        s = (_diagnostics().fixed_space_levels(n, out["epsilon"])
             if thresholds == "fixed" and not text else _diagnostics()._default_s(n))
    out["s"] = s
    out["publisher"] = _publisher(p.pop("publisher", "dawa" if text else "hb"), 1)
    if thresholds == "recursive_medians":  # each median's budget, before anything is charged
        _diagnostics().median_budget(out["rho"] * out["epsilon"], s, out["neighbours"])
    return _finish(p, out, shape, "roc_curve", "a ROC curve")


def _brp_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    out = _diagnosed_model(p, shape, "logistic")
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    out["neighbours"] = _neighbours(p)
    # ρ = ε1/ε = ε2/ε (bins, merging), ε3 = (1 - 2ρ)ε for the averages (Chen 2018, §4.4.3, Fig. 4.15).
    out["rho"] = _fraction(p.pop("rho", 0.15), "rho", upper=0.5)
    s = _optional_int(p, "s", _diagnostics().MAX_LEVELS)
    defaults = p.pop("defaults", "dpwidgets")  # checked by binned_residual_levels
    # The depth and Alg. 14's threshold from the public row count (never the true one).
    out["n"] = _public_rows(p, shape, 4, "a binned residual plot")
    threshold = p.pop("threshold", None)
    if threshold is not None:
        threshold = float(check_finite_array([threshold], "threshold")[0])
    out["s"], out["threshold"] = _diagnostics().binned_residuals_defaults(
        out["n"], out["epsilon"], _brp_split(out), s, threshold=threshold,
        neighbours=out["neighbours"], defaults=defaults)
    # each median's budget, before anything is charged
    _diagnostics().median_budget(out["rho"] * out["epsilon"], out["s"], out["neighbours"])
    return _finish(p, out, shape, "binned_residuals", "a binned residual plot", minimum=4)


def _on_model(engine_function: str, inputs: tuple[str, ...], options: Callable[[dict], dict]):
    """A diagnostic's ``run``: the diagnosed model's predictions, residuals and outcome on the
    table (inside the door), then the engine's ``engine_function`` on the named ``inputs``.
    On a table left in its query engine (a :class:`~dpwidgets.tables.RowsQuery`) the model
    and the counts are computed there (:mod:`dpwidgets.scored`): the rows are not loaded."""

    def run(table, p: dict, rng: np.random.Generator):
        from ..engine import diagnostics
        from ..tables import RowsQuery

        if isinstance(table, RowsQuery):
            from ..scored import TableRecords

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


def _publisher_private(p: dict) -> bool:
    """Whether the chosen publisher is DP: ``"dawa_published_not_private"`` is not (it is kept
    to reproduce Chen 2018, Table 4.4), so the door refuses it in analyst mode."""
    from ..engine.histograms import PUBLISHERS

    return bool(PUBLISHERS[p["publisher"]].private)

def _brp_split(p: dict) -> tuple[float, float, float]:
    """ρ = ε1/ε = ε2/ε (bins, merging), ε3 = (1 - 2ρ)ε for the averages (Chen 2018, §4.4.3)."""
    return (p["rho"], p["rho"], 1.0 - 2.0 * p["rho"])


_brp_run = _on_model("private_binned_residual_plot", ("outcome", "predicted"), lambda p: {
    "split": _brp_split(p), "s": p["s"], "threshold": p["threshold"],
    "neighbours": p["neighbours"], "n": p["n"]})


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
        "fit_model", _fit_validate, _fit_run, _fit_outputs, table=True, pushdown=True,
        label=lambda p: f"DP {p['kind']} fit of {'log y' if p['outcome'] == 'log' else 'y'} "
        f"({'functional mechanism' if p['kind'] == 'ols' else 'output perturbation'})"),
    "residual_plot": Mechanism(
        "residual_plot", _rp_validate, _rp_run, _rp_outputs, table=True, spent=_spent, pushdown=True,
        label=lambda p: f"PriRP ({p['publisher']}) — {_model_label(p)}",
        private=_publisher_private,
        neighbours=_relation),
    "roc_curve": Mechanism(
        "roc_curve", _roc_validate, _roc_run, _roc_outputs, table=True, spent=_spent, pushdown=True,
        label=lambda p: f"PriROC ({p['publisher']}) — {_model_label(p)}",
        private=_publisher_private,
        neighbours=_relation),
    "binned_residuals": Mechanism(
        "binned_residuals", _brp_validate, _brp_run, _brp_outputs, table=True, spent=_spent, pushdown=True,
        label=lambda p: f"PriBRP — {_model_label(p)}",
        neighbours=_relation),
}
for _mechanism in DIAGNOSTIC_MECHANISMS.values():
    register_mechanism(_mechanism)


# table_stand_in lived here until the catalog (which builds every stand-in) took it: the
# catalog must not import a mechanism spec that reaches back into it through the tables.
__getattr__ = moved(__name__, {"table_stand_in": ("dpwidgets.catalog", "table_stand_in")})
