"""The session: the one door between widgets and data (SPEC.md §2, principles 2-5).

A :class:`Session` owns the named datasets and one :class:`~dpwidgets.engine.budget.PrivacyLedger`
per dataset. Widgets never hold a dataset; they ask the session to :meth:`~Session.release` the
output of a named mechanism. A release

1. validates the parameters (before anything is charged),
2. refuses what the mode forbids (in analyst mode: the broken SVT variants and the
   reconstruction attack),
3. looks the parameters up in the release cache -- a cached release is replayed for free,
4. runs the engine, charges the ledger, stores the DP output, and tells every observer (the
   budget meter) what happened.

Regression diagnostics (000 Ch. 4) run on a *table* dataset -- feature columns, then the
outcome -- through the mechanisms ``"fit_model"`` (a DP fit with diffprivlib: its coefficients
are a release of their own), ``"residual_plot"`` (PriRP), ``"roc_curve"`` (PriROC) and
``"binned_residuals"`` (PriBRP). The model under diagnosis is a parameter: ``model="ordinary"``
fits it inside the session (its predictions are as confidential as the data, and the
diagnostic's guarantee is given the model), ``model="public"`` applies public coefficients
such as a ``"fit_model"`` release's. See :func:`model_predictions`.

Modes
-----
``"teaching"``
    The data is declared public. :meth:`Session.public_view` returns it, widgets may draw the
    ground truth and the engine's secret state (the noisy threshold). The ledger still records
    what each run would have cost; a run past the cap is *not* refused (the data is public),
    it is recorded as an overdraft so the meter can show what analyst mode would have refused.
``"analyst"``
    The data is confidential. :meth:`Session.public_view` returns the dataset's public
    stand-in; :meth:`Session.preview` runs a mechanism on the stand-in for free; only
    :meth:`Session.release` touches the data, and a :class:`Release` made in this mode carries
    only the DP output (``Release.result`` is ``None``).

The release cache and kernel restarts
-------------------------------------
A release is keyed by ``sha256(dataset, fingerprint of the data, mechanism, parameters)``.
The DP output of every release is stored next to the ledger, in a ``releases`` table of the same
SQLite file (opened through the session's own connection). A later process asking for the same
key gets the stored output back and is charged nothing: it learns nothing it had not already
paid for. The order of operations is *run the engine, charge, store*: if the process dies
after the charge but before the store, the ledger knows the key but no output exists; the next
request then charges again under a fresh key rather than handing out fresh noise for free
(which would leak). With a ``":memory:"`` ledger the cache lives in the process only, exactly
as long as the ledger does.

Examples
--------
>>> import numpy as np
>>> from dpwidgets import Session
>>> s = Session(mode="teaching", seed=1)
>>> s.add_dataset("scores", np.arange(100.0), total_epsilon=2.0)
>>> r = s.release("scores", "svt", epsilon=0.5, c=2, threshold=90.0)  # doctest: +SKIP
>>> s.spent("scores")  # doctest: +SKIP
0.5
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .engine._validation import check_epsilon, check_finite_array, check_positive_int, check_rng
from .engine.budget import BudgetExceededError, PrivacyLedger, default_ledger_path

__all__ = [
    "MECHANISMS",
    "Mechanism",
    "MODELS",
    "OUTCOMES",
    "Overdraft",
    "PrivacyPolicyError",
    "Release",
    "Session",
    "model_predictions",
    "register_mechanism",
    "table_stand_in",
]

Mode = Literal["teaching", "analyst"]


class PrivacyPolicyError(ValueError):
    """A release the session's mode forbids (e.g. a broken SVT variant in analyst mode)."""


@dataclass(frozen=True)
class Release:
    """The outcome of one :meth:`Session.release`.

    Attributes
    ----------
    dataset, mechanism, label : str
        What was released, by which mechanism, under which ledger label.
    params : dict
        The validated parameters (public: they are chosen by the user, not by the data).
    epsilon : float
        What the release cost when it was first made.
    output : dict
        The DP output only -- the one thing that may cross into widget or Bokeh state.
    charged : bool
        ``True`` if this call charged the ledger; ``False`` for a cached replay.
    result : object or None
        The engine's full result object (including secret state such as the noisy threshold).
        Only in teaching mode, and only for a release computed in this process.
    overdraft : bool
        Teaching mode only: the run went past the cap and would have been refused in analyst
        mode.
    """

    dataset: str
    mechanism: str
    label: str
    params: dict
    epsilon: float
    output: dict
    charged: bool
    time: float
    result: Any = None
    overdraft: bool = False
    key: str = field(default="", repr=False)


@dataclass(frozen=True)
class Overdraft:
    """A teaching-mode run that went past the cap (analyst mode would have refused it)."""

    epsilon: float
    label: str
    time: float


@dataclass
class _Dataset:
    name: str
    data: np.ndarray
    stand_in: np.ndarray
    fingerprint: str
    description: str = ""
    # A DataFrame dataset keeps its public schema: column names and dtypes.
    columns: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] | None = None

    def frame(self, values: np.ndarray):
        """``values`` (the data or its stand-in) as a DataFrame with the public schema."""
        import pandas as pd

        assert self.columns is not None and self.dtypes is not None
        pairs = enumerate(zip(self.columns, self.dtypes, strict=True))
        return pd.DataFrame({c: values[:, j].astype(t) for j, (c, t) in pairs})


# --------------------------------------------------------------------------------------------
# Mechanisms the session can release. Each entry validates its parameters into a canonical
# dict, states its cost before running, runs the engine, and extracts the DP output.
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mechanism:
    """A mechanism :meth:`Session.release` can run: how to validate its parameters (into a
    canonical dict, before anything is charged), what it costs, how to run the engine, and
    which parts of the engine's result are the DP output that may leave the session."""

    name: str
    validate: Callable[[dict, int], dict]
    cost: Callable[[dict], float]
    run: Callable[[np.ndarray, dict, np.random.Generator], Any]
    outputs: Callable[[Any, dict], dict]
    private: Callable[[dict], bool]
    label: Callable[[dict], str]
    # False: runs on a 1-D array and ``validate`` gets the public size n. True: runs on a table
    # (n, p + 1) -- p feature columns, then the outcome -- and ``validate`` gets its public shape.
    table: bool = False
    # True (implies ``table``): ``run`` gets the dataset as a pandas DataFrame with its public
    # column names and dtypes (datasets added as DataFrames).
    frame: bool = False



def _svt_module():
    from .engine import svt

    return svt


def _threshold(value, n: int) -> float | np.ndarray:
    arr = check_finite_array(np.atleast_1d(value), "threshold")
    if arr.size == 1:
        return float(arr[0])
    if arr.size != n:
        raise ValueError(f"threshold must be a number or one per query ({n}), got {arr.size}")
    return arr


def _svt_validate(params: dict, n: int) -> dict:
    svt = _svt_module()
    p = dict(params)
    variant = p.pop("variant", "standard")
    if variant not in svt.VARIANTS:
        raise ValueError(f"variant must be one of {sorted(svt.VARIANTS)}, got {variant!r}")
    out = {
        "variant": variant,
        "epsilon": check_epsilon(p.pop("epsilon")),
        "c": check_positive_int(p.pop("c", 1), "c"),
        "threshold": _threshold(p.pop("threshold"), n),
        "sensitivity": check_epsilon(p.pop("sensitivity", 1.0), "sensitivity"),
        "monotonic": bool(p.pop("monotonic", False)),
        "epsilon3": check_epsilon(p.pop("epsilon3", 0.0), "epsilon3", allow_zero=True),
        "threshold_sensitivity": check_epsilon(
            p.pop("threshold_sensitivity", 0.0), "threshold_sensitivity", allow_zero=True
        ),
    }
    ratio = p.pop("ratio", None)
    out["ratio"] = None if ratio is None else check_epsilon(ratio, "ratio")
    if p:
        raise ValueError(f"unknown parameter(s) for 'svt': {sorted(p)}")
    return out


def _svt_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    return _svt_module().sparse_vector(data, rng=rng, **p)


def _svt_outputs(result, p: dict) -> dict:
    outcomes = np.asarray(result.outcomes, dtype=bool)
    above = np.flatnonzero(outcomes)
    out = {"outcomes": outcomes, "above": above, "n_examined": int(outcomes.size)}
    # A noisy answer is part of the output only where the variant publishes it: for ⊤ queries
    # with epsilon3 > 0 (standard) or always (roth2011). NaN marks "not published".
    values = np.asarray(result.values, dtype=float)
    if np.any(np.isfinite(values[above])):
        out["above_values"] = values[above]
    return out


def _svt_private(p: dict) -> bool:
    return bool(_svt_module().VARIANTS[p["variant"]].private)


def _top_c_validate(params: dict, n: int) -> dict:
    p = dict(params)
    method = p.pop("method", "em")
    if method not in ("em", "svt_retr"):
        raise ValueError(f"method must be 'em' or 'svt_retr', got {method!r}")
    c = check_positive_int(p.pop("c", 1), "c")
    if c > n:
        raise ValueError(f"c must be at most the number of items ({n}), got {c}")
    out: dict = {
        "method": method,
        "c": c,
        "epsilon": check_epsilon(p.pop("epsilon")),
        "monotonic": bool(p.pop("monotonic", True)),
    }
    if method == "svt_retr":
        if "threshold" not in p:
            raise ValueError("top_c with method='svt_retr' needs a public threshold=")
        out["threshold"] = _threshold(p.pop("threshold"), n)
        out["increment"] = check_epsilon(p.pop("increment", 1.0), "increment", allow_zero=True)
        out["max_passes"] = check_positive_int(p.pop("max_passes", 10_000), "max_passes")
    if p:
        raise ValueError(f"unknown parameter(s) for 'top_c': {sorted(p)}")
    return out


def _top_c_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    return _svt_module().top_c(data, rng=rng, **p)


def _top_c_outputs(result, p: dict) -> dict:
    return {"selected": np.asarray(result, dtype=int)}


def _recon_validate(params: dict, n: int) -> dict:
    from .engine._validation import check_probability

    p = dict(params)
    out = {
        "epsilon": check_epsilon(p.pop("epsilon")),
        "delta": check_probability(p.pop("delta", 0.05), "delta"),
    }
    if p:
        raise ValueError(f"unknown parameter(s) for 'reconstruction': {sorted(p)}")
    return out


def _recon_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    from .engine.attacks import reconstruct_histogram

    return reconstruct_histogram(data, p["epsilon"], delta=p["delta"], rng=rng)


def _recon_outputs(result, p: dict) -> dict:
    return {"estimate": np.asarray(result.estimate, dtype=float)}


# --------------------------------------------------------------------------------------------
# Regression diagnostics (000 Ch. 4; SPEC §3.4). They run on a table whose last column is the
# outcome; the model under diagnosis is part of the parameters: either an ordinary fit made
# inside the session on the data itself, or public coefficients (a "fit_model" release).
# --------------------------------------------------------------------------------------------
#: Public transformations of the outcome before fitting (000 §4.2.3's CPS example: log income).
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
            from .datasets.regression import fit_model

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
    from .engine.histograms import PUBLISHERS

    if not isinstance(name, str) or name not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {name!r}")
    if ndim not in PUBLISHERS[name].dims:
        raise ValueError(f"publisher {name!r} does not publish {ndim}-D histograms")
    return PUBLISHERS[name].name  # aliases ("dawa", "lm") share one cache key


def _fraction(value, name: str, upper: float = 1.0) -> float:
    from .engine._validation import check_probability

    value = check_probability(value, name)
    if value >= upper:
        raise ValueError(f"{name} must be in the open interval (0, {upper:g}), got {value!r}")
    return value


def _optional_int(p: dict, name: str) -> int | None:
    value = p.pop(name, None)
    return None if value is None else check_positive_int(value, name)


def _unknown(p: dict, mechanism: str) -> None:
    if p:
        raise ValueError(f"unknown parameter(s) for {mechanism!r}: {sorted(p)}")


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
    if n_features is None:
        return [float(lo[0]), float(hi[0])]
    return [lo.astype(float).copy(), hi.astype(float).copy()]


def _fit_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    out = _model_validate(p, shape)
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    if out["kind"] == "ols":
        if "bounds_X" not in p or "bounds_y" not in p:
            raise ValueError(
                "a DP OLS fit needs public bounds_X=(lower, upper) and bounds_y=(lower, upper) "
                "(of the transformed outcome); diffprivlib would otherwise read them off the data"
            )
        out["bounds_X"] = _bounds_pair(p.pop("bounds_X"), "bounds_X", shape[1] - 1)
        out["bounds_y"] = _bounds_pair(p.pop("bounds_y"), "bounds_y")
    else:
        if "data_norm" not in p:
            raise ValueError("a DP logistic fit needs data_norm= (public bound on a row's L2 norm)")
        out["data_norm"] = check_epsilon(p.pop("data_norm"), "data_norm")
    _unknown(p, "fit_model")
    return out


def _fit_run(table: np.ndarray, p: dict, rng: np.random.Generator):
    from .datasets.regression import fit_model

    X, y = table[:, :-1], _transform_outcome(table[:, -1], p["outcome"])
    extra = (
        {"bounds_X": (p["bounds_X"][0], p["bounds_X"][1]), "bounds_y": tuple(p["bounds_y"])}
        if p["kind"] == "ols" else {"data_norm": p["data_norm"]}
    )
    return fit_model(X, y, p["kind"], private=True, epsilon=p["epsilon"], rng=rng, **extra)


def _fit_outputs(result, p: dict) -> dict:
    return {
        "coef": np.asarray(result.coef, dtype=float),
        "intercept": float(result.intercept),
        "guarantee": result.guarantee,
    }


def _rp_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    out = _diagnosed_model(p, shape, "ols")
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    out["publisher"] = _publisher(p.pop("publisher", "dawa"), 2)
    rho = p.pop("rho", None)
    out["rho"] = None if rho is None else _fraction(rho, "rho")
    out["grid"] = _optional_int(p, "grid")
    out["theta"] = _fraction(p.pop("theta", 0.95), "theta")
    for name in ("mu_predicted", "mu_residual"):
        out[name] = check_epsilon(p.pop(name, 1.0), name)
    for name in ("center_predicted", "center_residual"):
        out[name] = float(check_finite_array([p.pop(name, 0.0)], name)[0])
    if shape[0] < 2:
        raise ValueError(f"a residual plot needs at least 2 records, the table has {shape[0]}")
    _unknown(p, "residual_plot")
    return out


def _rp_run(table: np.ndarray, p: dict, rng: np.random.Generator):
    from .engine.diagnostics import private_residual_plot

    predicted, residuals, _ = model_predictions(table, **_model_of(p))
    return private_residual_plot(
        predicted, residuals, p["epsilon"], rng, publisher=p["publisher"], theta=p["theta"],
        mu_predicted=p["mu_predicted"], mu_residual=p["mu_residual"],
        center_predicted=p["center_predicted"], center_residual=p["center_residual"],
        epsilon1=None if p["rho"] is None else p["rho"] * p["epsilon"], grid=p["grid"],
    )


def _rp_outputs(result, p: dict) -> dict:
    (x0, x1), (r0, r1) = result.bounds
    return {
        "points": np.asarray(result.points, dtype=float),
        "counts": np.asarray(result.counts, dtype=float),
        "edges_predicted": np.asarray(result.edges_predicted, dtype=float),
        "edges_residual": np.asarray(result.edges_residual, dtype=float),
        "bounds": np.array([x0, x1, r0, r1], dtype=float),
        "grid": int(result.grid),
        "epsilon_parts": dict(result.epsilon_parts),
        "guarantee": result.guarantee,
    }


def _roc_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    out = _diagnosed_model(p, shape, "logistic")
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    out["rho"] = _fraction(p.pop("rho", 0.2), "rho")
    out["s"] = _optional_int(p, "s")
    thresholds = p.pop("thresholds", "recursive_medians")
    if thresholds not in ("recursive_medians", "fixed"):
        raise ValueError(f"thresholds must be 'recursive_medians' or 'fixed', got {thresholds!r}")
    out["thresholds"] = thresholds
    out["publisher"] = _publisher(p.pop("publisher", "dawa"), 1)
    if shape[0] < 2:
        raise ValueError(f"a ROC curve needs at least 2 records, the table has {shape[0]}")
    _unknown(p, "roc_curve")
    return out


def _roc_run(table: np.ndarray, p: dict, rng: np.random.Generator):
    from .engine.diagnostics import private_roc_curve

    scores, _, labels = model_predictions(table, **_model_of(p))
    return private_roc_curve(
        labels, scores, p["epsilon"], rng, rho=p["rho"], s=p["s"],
        thresholds=p["thresholds"], publisher=p["publisher"],
    )


def _roc_outputs(result, p: dict) -> dict:
    return {
        "fpr": np.asarray(result.fpr, dtype=float),
        "tpr": np.asarray(result.tpr, dtype=float),
        "thresholds": np.asarray(result.thresholds, dtype=float),
        "auc": float(result.auc),
        "noisy_tp": np.asarray(result.noisy_tp, dtype=float),
        "noisy_fp": np.asarray(result.noisy_fp, dtype=float),
        "epsilon_parts": dict(result.epsilon_parts),
        "guarantee": result.guarantee,
    }


def _brp_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    out = _diagnosed_model(p, shape, "logistic")
    out["epsilon"] = check_epsilon(p.pop("epsilon"))
    # ρ = ε1/ε = ε2/ε (bins, merging), ε3 = (1 - 2ρ)ε for the averages (000 §4.4.3, Fig. 4.15).
    out["rho"] = _fraction(p.pop("rho", 0.15), "rho", upper=0.5)
    out["s"] = _optional_int(p, "s")
    if shape[0] < 4:
        raise ValueError(f"a binned residual plot needs at least 4 records, got {shape[0]}")
    _unknown(p, "binned_residuals")
    return out


def _brp_run(table: np.ndarray, p: dict, rng: np.random.Generator):
    from .engine.diagnostics import private_binned_residual_plot

    probabilities, _, labels = model_predictions(table, **_model_of(p))
    rho = p["rho"]
    return private_binned_residual_plot(
        labels, probabilities, p["epsilon"], rng, split=(rho, rho, 1.0 - 2.0 * rho), s=p["s"],
    )


def _brp_outputs(result, p: dict) -> dict:
    return {
        "mean_predicted": np.asarray(result.mean_predicted, dtype=float),
        "mean_residual": np.asarray(result.mean_residual, dtype=float),
        "bins": np.asarray(result.bins, dtype=float),
        "noisy_sizes": np.asarray(result.noisy_sizes, dtype=float),
        "epsilon_parts": dict(result.epsilon_parts),
        "guarantee": result.guarantee,
    }


MECHANISMS: dict[str, Mechanism] = {
    "svt": Mechanism(
        "svt",
        _svt_validate,
        # epsilon is the total: the engine takes epsilon3 out of it (svt.py, budget convention).
        cost=lambda p: p["epsilon"],
        run=_svt_run,
        outputs=_svt_outputs,
        private=_svt_private,
        label=lambda p: f"SVT {p['variant']} c={p['c']}",
    ),
    "top_c": Mechanism(
        "top_c",
        _top_c_validate,
        cost=lambda p: p["epsilon"],
        run=_top_c_run,
        outputs=_top_c_outputs,
        private=lambda p: True,
        label=lambda p: f"top-{p['c']} ({p['method']})",
    ),
    # The reconstruction attack runs GPTT, which is not private for any epsilon: teaching only.
    "reconstruction": Mechanism(
        "reconstruction",
        _recon_validate,
        cost=lambda p: p["epsilon"],
        run=_recon_run,
        outputs=_recon_outputs,
        private=lambda p: False,
        label=lambda p: "reconstruction attack (GPTT)",
    ),
    # Fitting a DP model on the data is a release of its own (its coefficients), charged once.
    "fit_model": Mechanism(
        "fit_model",
        _fit_validate,
        cost=lambda p: p["epsilon"],
        run=_fit_run,
        outputs=_fit_outputs,
        private=lambda p: True,
        label=lambda p: f"DP {p['kind']} fit of {'log y' if p['outcome'] == 'log' else 'y'} "
        "(diffprivlib)",
        table=True,
    ),
    "residual_plot": Mechanism(
        "residual_plot",
        _rp_validate,
        cost=lambda p: p["epsilon"],
        run=_rp_run,
        outputs=_rp_outputs,
        private=lambda p: True,
        label=lambda p: f"PriRP ({p['publisher']}) — {_model_label(p)}",
        table=True,
    ),
    "roc_curve": Mechanism(
        "roc_curve",
        _roc_validate,
        cost=lambda p: p["epsilon"],
        run=_roc_run,
        outputs=_roc_outputs,
        private=lambda p: True,
        label=lambda p: f"PriROC ({p['publisher']}) — {_model_label(p)}",
        table=True,
    ),
    "binned_residuals": Mechanism(
        "binned_residuals",
        _brp_validate,
        cost=lambda p: p["epsilon"],
        run=_brp_run,
        outputs=_brp_outputs,
        private=lambda p: True,
        label=lambda p: f"PriBRP — {_model_label(p)}",
        table=True,
    ),
}
"""The mechanisms :meth:`Session.release` knows, by name. Those of the SVT and regression
chapters are defined here; the later chapters register theirs from :mod:`dpwidgets.releases`."""


def register_mechanism(mechanism: Mechanism) -> None:
    """Make ``mechanism`` releasable through :meth:`Session.release` under its name."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"expected a Mechanism, got {type(mechanism).__name__}")
    if mechanism.name in MECHANISMS and MECHANISMS[mechanism.name] is not mechanism:
        raise ValueError(f"a mechanism named {mechanism.name!r} is already registered")
    if mechanism.frame and not mechanism.table:
        raise ValueError("a mechanism that runs on a DataFrame (frame=True) needs table=True")
    MECHANISMS[mechanism.name] = mechanism


# --------------------------------------------------------------------------------------------
# JSON encoding of DP outputs (arrays keep their dtype; NaN survives as null).
# --------------------------------------------------------------------------------------------
def _to_jsonable(value):
    if isinstance(value, np.ndarray):
        return {
            "__array__": [None if (isinstance(v, float) and not math.isfinite(v)) else v
                          for v in value.tolist()],
            "dtype": str(value.dtype),
        }
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_jsonable(v) for v in value]
    return value


def _from_jsonable(value):
    if isinstance(value, dict):
        if "__array__" in value:
            dtype = np.dtype(value["dtype"])
            items = value["__array__"]
            if dtype.kind == "f":
                items = [np.nan if v is None else v for v in items]
            return np.asarray(items, dtype=dtype)
        return {k: _from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_jsonable(v) for v in value]
    return value


def _canonical(params: dict) -> str:
    return json.dumps(_to_jsonable(params), sort_keys=True, separators=(",", ":"))


class _ReleaseStore:
    """Released DP outputs, persisted in a ``releases`` table of the ledger's SQLite file."""

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS releases (
        dataset TEXT NOT NULL,
        key TEXT NOT NULL,
        mechanism TEXT NOT NULL,
        label TEXT NOT NULL,
        params TEXT NOT NULL,
        epsilon REAL NOT NULL,
        output TEXT NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (dataset, key)
    );
    """

    # Rows kept in memory (with the teaching-mode engine results). Older ones are evicted: a
    # file-backed store reads them back from SQLite (without the result); an in-memory ledger
    # forgets them, so replaying one is charged afresh -- never less than the truth.
    MEMORY_ROWS = 64

    def __init__(self, path: str):
        self._memory: OrderedDict[tuple[str, str], dict] = OrderedDict()
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if path != ":memory:":
            self._conn = sqlite3.connect(
                path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA busy_timeout = 60000")
            self._conn.executescript(self._SCHEMA)

    def get(self, dataset: str, key: str) -> dict | None:
        with self._lock:
            row = self._memory.get((dataset, key))
            if row is not None:
                self._memory.move_to_end((dataset, key))
                return row
            if self._conn is None:
                return None
            got = self._conn.execute(
                "SELECT mechanism, label, params, epsilon, output, created FROM releases "
                "WHERE dataset = ? AND key = ?",
                (dataset, key),
            ).fetchone()
        if got is None:
            return None
        return {
            "mechanism": got[0],
            "label": got[1],
            "params": _from_jsonable(json.loads(got[2])),
            "epsilon": got[3],
            "output": _from_jsonable(json.loads(got[4])),
            "time": got[5],
        }

    def put(self, dataset: str, key: str, row: dict) -> None:
        with self._lock:
            self._memory[(dataset, key)] = row
            self._memory.move_to_end((dataset, key))
            while len(self._memory) > self.MEMORY_ROWS:
                self._memory.popitem(last=False)
            if self._conn is not None:
                self._conn.execute(
                    "INSERT OR IGNORE INTO releases "
                    "(dataset, key, mechanism, label, params, epsilon, output, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        dataset,
                        key,
                        row["mechanism"],
                        row["label"],
                        _canonical(row["params"]),
                        row["epsilon"],
                        json.dumps(_to_jsonable(row["output"])),
                        row["time"],
                    ),
                )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _is_frame(value) -> bool:
    import pandas as pd

    return isinstance(value, pd.DataFrame)


def _frame_schema(frame, name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The public schema (column names, dtypes) of a DataFrame of numeric columns."""
    import pandas as pd

    bad = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise ValueError(
            f"{name}: columns {bad} are not numeric; integer-code them first (e.g. "
            f"frame[col].astype('category').cat.codes) and declare the coding"
        )
    if frame.shape[1] < 2:
        raise ValueError(f"{name}: a DataFrame dataset needs at least 2 columns")
    return tuple(str(c) for c in frame.columns), tuple(str(t) for t in frame.dtypes)


def _run_input(ds: _Dataset, mech: Mechanism, values: np.ndarray):
    """What ``mech.run`` gets: the array, or for ``frame`` mechanisms the DataFrame."""
    return ds.frame(values) if mech.frame else values


def _default_stand_in(n: int) -> np.ndarray:
    """A public stand-in that depends on nothing but the public size: a Zipf(1) profile of
    ``n`` scores over 1,000,000 records (the 001 §6 setup), in a fixed shuffled order."""
    weights = 1.0 / np.arange(1, n + 1)
    scores = np.round(weights / weights.sum() * 1_000_000)
    return np.random.default_rng(0).permutation(scores)


def table_stand_in(n: int, n_features: int = 1, outcome: str = "continuous") -> np.ndarray:
    """A public stand-in table (n, n_features + 1) that depends on nothing but the public shape.

    ``"continuous"``: 000 §4.2.3's Ideal scenario, ``x ~ U[1, 50]`` per feature and
    ``y = mean(x) + N(0, 1)`` -- a well-specified linear model. ``"binary"``: 000 §4.4.3's M1,
    ``x ~ U[-1, 1]`` per feature and ``logit P(y = 1) = 2·mean(x)``. Seeded (0): a preview on it
    is reproducible and says nothing about any confidential table.
    """
    n = check_positive_int(n, "n")
    n_features = check_positive_int(n_features, "n_features")
    rng = np.random.default_rng(0)
    if outcome == "continuous":
        X = rng.uniform(1.0, 50.0, (n, n_features))
        y = X.mean(axis=1) + rng.normal(0.0, 1.0, n)
    elif outcome == "binary":
        X = rng.uniform(-1.0, 1.0, (n, n_features))
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-2.0 * X.mean(axis=1)))).astype(float)
    else:
        raise ValueError(f"outcome must be 'continuous' or 'binary', got {outcome!r}")
    return np.column_stack((X, y))


class Session:
    """Owns the datasets and their privacy ledgers; the only way widgets reach data.

    Parameters
    ----------
    mode : {"teaching", "analyst"}
        ``"teaching"``: the data is public, widgets rerun live and may show the ground truth.
        ``"analyst"``: the data is confidential, only explicit releases spend budget and only
        DP outputs leave the session.
    ledger : str or path-like, optional
        The SQLite ledger file. Default: ``":memory:"`` in teaching mode,
        :func:`~dpwidgets.engine.budget.default_ledger_path` in analyst mode.
    seed : int, optional
        Seeds the session's :class:`numpy.random.Generator` (reproducible teaching runs).
    rng : numpy.random.Generator, optional
        The generator to draw all noise from (instead of ``seed``).
    warn_fraction : float
        The meter warns once this fraction of a budget is spent.

    Examples
    --------
    >>> s = Session(mode="analyst", ledger="/tmp/ledger.sqlite")  # doctest: +SKIP
    >>> s.add_dataset("sales", counts, total_epsilon=1.0, stand_in=public_counts)  # doctest: +SKIP
    >>> r = s.release("sales", "svt", epsilon=0.1, c=5, threshold=100.0)  # doctest: +SKIP
    >>> r.output["above"]  # doctest: +SKIP
    """

    def __init__(
        self,
        mode: Mode = "teaching",
        ledger: str | Path | None = None,
        *,
        seed: int | None = None,
        rng: np.random.Generator | None = None,
        warn_fraction: float = 0.8,
    ):
        if mode not in ("teaching", "analyst"):
            raise ValueError(f"mode must be 'teaching' or 'analyst', got {mode!r}")
        if rng is not None and seed is not None:
            raise ValueError("give either seed= or rng=, not both")
        self.mode: Mode = mode
        if ledger is None:
            ledger = ":memory:" if mode == "teaching" else default_ledger_path()
        self.ledger_path = str(ledger)
        if self.ledger_path != ":memory:":
            Path(self.ledger_path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.rng = check_rng(rng) if rng is not None else np.random.default_rng(seed)
        if not 0.0 < warn_fraction <= 1.0:
            raise ValueError(f"warn_fraction must be in (0, 1], got {warn_fraction!r}")
        self.warn_fraction = float(warn_fraction)
        self._datasets: dict[str, _Dataset] = {}
        self._ledgers: dict[str, PrivacyLedger] = {}
        self._overdrafts: dict[str, list[Overdraft]] = {}
        self._listeners: list[Callable[[Session, dict], None]] = []
        self.last_refusal = ""
        self._meter = None
        self._lock = threading.RLock()
        # The ledger opens (and creates) the file first; the store adds its table to it.
        self._store: _ReleaseStore | None = None

    # -- datasets --------------------------------------------------------------------------
    @property
    def teaching(self) -> bool:
        """Whether the data is declared public."""
        return self.mode == "teaching"

    @property
    def datasets(self) -> list[str]:
        """The names of the datasets, in the order they were added."""
        return list(self._datasets)

    def add_dataset(
        self,
        name: str,
        data,
        *,
        total_epsilon: float | None = 1.0,
        stand_in=None,
        description: str = "",
    ) -> None:
        """Register a dataset and open (or create) its ledger.

        Parameters
        ----------
        name : str
            The name the ledger keys the budget by; reopening the same ledger file with the same
            name continues the same budget.
        data : array_like (1-D or 2-D) or pandas.DataFrame
            The data the mechanisms run on: query answers / item scores for SVT and top-c,
            histogram counts for the reconstruction attack, a counting stream (1-D); for the
            regression diagnostics a table (n, p + 1) of p feature columns and then the
            outcome; a series of histograms (N, U) or of state streams (2-D). A DataFrame of
            numeric columns keeps its column names and dtypes (a public schema) for the
            mechanisms that work on tables of attributes (synthetic data).
        total_epsilon : float, optional
            The budget cap. May be ``None`` when the ledger already records one.
        stand_in : array_like or {"continuous", "binary"}, optional
            A *public* array (or DataFrame of the same schema) of the same (public) shape,
            used by previews in analyst mode.
            Default: a Zipf(1) profile of that length (:func:`_default_stand_in`) for 1-D data;
            a table must be given one -- ``"continuous"`` or ``"binary"`` (the outcome's type,
            a public fact) picks :func:`table_stand_in`. Never derived from ``data``.
        description : str
            Shown in the meter.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if name in self._datasets:
            raise ValueError(f"dataset {name!r} is already in this session")
        columns = dtypes = None
        if _is_frame(data):
            columns, dtypes = _frame_schema(data, "data")
            if _is_frame(stand_in):
                if _frame_schema(stand_in, "stand_in") != (columns, dtypes):
                    raise ValueError("stand_in must have the data's columns and dtypes")
                stand_in = stand_in.to_numpy(dtype=float)
            data = data.to_numpy(dtype=float)
        data = check_finite_array(data, "data", ndim=None)
        if data.ndim not in (1, 2) or (data.ndim == 2 and data.shape[1] < 2):
            raise ValueError(
                f"data must be 1-D, or a 2-D table of feature columns then the outcome; got "
                f"shape {data.shape}"
            )
        data.setflags(write=False)
        if isinstance(stand_in, str):
            if data.ndim != 2:
                raise ValueError("stand_in='continuous'/'binary' is for tables (2-D data)")
            stand_in = table_stand_in(data.shape[0], data.shape[1] - 1, stand_in)
        if stand_in is None:
            if data.ndim == 2:
                raise ValueError(
                    f"a table needs a public stand_in of its shape {data.shape}: pass an array, "
                    f"or stand_in='continuous' / 'binary' for a synthetic one (table_stand_in)"
                )
            stand_in = _default_stand_in(data.size)
        else:
            stand_in = check_finite_array(stand_in, "stand_in", ndim=None)
            if stand_in.shape != data.shape:
                raise ValueError(
                    f"stand_in must have the dataset's public shape {data.shape}, "
                    f"got {stand_in.shape}"
                )
        stand_in.setflags(write=False)
        ledger = PrivacyLedger(self.ledger_path, dataset=name, total_epsilon=total_epsilon)
        with self._lock:
            if self._store is None:
                self._store = _ReleaseStore(self.ledger_path)
            fingerprint = hashlib.sha256(data.tobytes()).hexdigest()
            self._datasets[name] = _Dataset(
                name, data, stand_in, fingerprint, description, columns, dtypes
            )
            self._ledgers[name] = ledger
            self._overdrafts[name] = []
        self._notify({"kind": "dataset", "dataset": name})

    def _dataset(self, name: str | None) -> _Dataset:
        if name is None:
            if not self._datasets:
                raise ValueError("this session has no dataset; call add_dataset() first")
            name = next(iter(self._datasets))
        try:
            return self._datasets[name]
        except KeyError:
            raise ValueError(
                f"unknown dataset {name!r}; this session has {self.datasets}"
            ) from None

    def size(self, dataset: str | None = None) -> int:
        """The public size (number of queries, items or cells; rows of a table) of a dataset."""
        return int(self._dataset(dataset).data.shape[0])

    def shape(self, dataset: str | None = None) -> tuple[int, ...]:
        """The public shape of a dataset: ``(n,)``, or ``(n, p + 1)`` for a table."""
        return tuple(int(k) for k in self._dataset(dataset).data.shape)

    def columns(self, dataset: str | None = None) -> list[str] | None:
        """The column names of a dataset added as a DataFrame (public schema), else None."""
        cols = self._dataset(dataset).columns
        return None if cols is None else list(cols)

    def public_view(self, dataset: str | None = None) -> np.ndarray:
        """The values a widget may draw: the data itself in teaching mode (it is public),
        the public stand-in in analyst mode. Read-only."""
        ds = self._dataset(dataset)
        return ds.data if self.teaching else ds.stand_in

    def stand_in(self, dataset: str | None = None) -> np.ndarray:
        """The dataset's public stand-in (read-only)."""
        return self._dataset(dataset).stand_in

    # -- budget ----------------------------------------------------------------------------
    def ledger(self, dataset: str | None = None) -> PrivacyLedger:
        """The privacy ledger of a dataset."""
        return self._ledgers[self._dataset(dataset).name]

    def spent(self, dataset: str | None = None) -> float:
        """Epsilon charged to a dataset's ledger (teaching overdrafts not included)."""
        return self.ledger(dataset).spent

    def remaining(self, dataset: str | None = None) -> float:
        """Epsilon still available on a dataset's ledger."""
        return self.ledger(dataset).remaining

    def overdrafts(self, dataset: str | None = None) -> list[Overdraft]:
        """Teaching-mode runs past the cap (what analyst mode would have refused)."""
        return list(self._overdrafts[self._dataset(dataset).name])

    @property
    def meter(self):
        """The session's :class:`~dpwidgets.widgets.meter.BudgetMeter` (created on first use)."""
        if self._meter is None:
            from .widgets.meter import BudgetMeter

            self._meter = BudgetMeter(self)
        return self._meter

    def observe(self, callback: Callable[[Session, dict], None]) -> None:
        """Call ``callback(session, event)`` after every dataset added and every release
        attempt (``event["kind"]`` is ``"dataset"``, ``"release"`` or ``"refused"``)."""
        self._listeners.append(callback)

    def unobserve(self, callback: Callable[[Session, dict], None]) -> None:
        """Stop calling ``callback``."""
        self._listeners = [c for c in self._listeners if c is not callback]

    def _notify(self, event: dict) -> None:
        if event["kind"] == "refused":
            self.last_refusal = event["message"]
        elif event["kind"] == "release":
            self.last_refusal = ""
        for callback in list(self._listeners):
            callback(self, event)

    # -- releases --------------------------------------------------------------------------
    def _validated(
        self, mechanism: str, params: dict, shape: tuple[int, ...], ds_columns=()
    ) -> tuple[Mechanism, dict]:
        try:
            mech = MECHANISMS[mechanism]
        except KeyError:
            raise ValueError(
                f"mechanism must be one of {sorted(MECHANISMS)}, got {mechanism!r}"
            ) from None
        if "epsilon" not in params:
            raise ValueError(f"{mechanism!r} needs epsilon=")
        if mechanism in ("svt",) and "threshold" not in params:
            raise ValueError("'svt' needs threshold= (a public number, or one per query)")
        if mech.frame and ds_columns is None:
            raise ValueError(
                f"{mechanism!r} runs on a table of named attributes: add the dataset as a "
                f"pandas DataFrame"
            )
        if mech.table != (len(shape) == 2):
            need = "a table (a 2-D dataset)" if mech.table else "a 1-D array"
            raise ValueError(
                f"{mechanism!r} runs on {need}; this dataset has shape {tuple(shape)}"
            )
        return mech, mech.validate(params, tuple(shape) if mech.table else shape[0])

    def cost(self, mechanism: str, dataset: str | None = None, **params) -> float:
        """What a release with these parameters would charge (before any cache hit)."""
        ds = self._dataset(dataset)
        mech, p = self._validated(mechanism, params, ds.data.shape, ds.columns)
        return float(mech.cost(p))

    def release_key(self, dataset: str | None, mechanism: str, **params) -> str:
        """The cache key of a release (it includes a fingerprint of the data; stays in Python)."""
        ds = self._dataset(dataset)
        run = params.pop("run", 0)
        mech, p = self._validated(mechanism, params, ds.data.shape, ds.columns)
        return self._key(ds, mech.name, p, run)

    @staticmethod
    def _key(ds: _Dataset, mechanism: str, params: dict, run: int) -> str:
        blob = json.dumps(
            {
                "dataset": ds.name,
                "data": ds.fingerprint,
                "mechanism": mechanism,
                "params": _canonical(params),
                "run": int(run),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def is_cached(self, dataset: str | None, mechanism: str, **params) -> bool:
        """Whether a release with these parameters would be a free replay."""
        ds = self._dataset(dataset)
        key = self.release_key(ds.name, mechanism, **params)
        assert self._store is not None
        return self._store.get(ds.name, key) is not None

    def check_budget(self, dataset: str | None, epsilon: float, label: str) -> None:
        """Refuse, before anything is charged, a group of releases costing ``epsilon`` in all.

        For a widget that makes several releases for one click (a DP fit, then a diagnostic
        of it): either all of them fit in the budget or none is made. Teaching mode never
        refuses (runs past the cap are overdrafts).

        Raises
        ------
        BudgetExceededError
            Analyst mode and ``epsilon`` exceeds what is left (observers hear a refusal).
        """
        ds = self._dataset(dataset)
        ledger = self._ledgers[ds.name]
        remaining = ledger.remaining
        if self.teaching or epsilon <= remaining * (1 + 1e-12):
            return
        exc = BudgetExceededError(ds.name, float(epsilon), remaining, ledger.total_epsilon, label)
        self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
        raise exc

    def preview(self, dataset: str | None, mechanism: str, *, rng=None, **params):
        """Run a mechanism on the public stand-in: free, never touches the data.

        Returns the engine's full result object (the stand-in is public, so its secret state
        may be drawn).
        """
        ds = self._dataset(dataset)
        params.pop("run", None)
        mech, p = self._validated(mechanism, params, ds.data.shape, ds.columns)
        return mech.run(
            _run_input(ds, mech, ds.stand_in), p, check_rng(rng) if rng is not None else self.rng
        )

    def release(
        self, dataset: str | None, mechanism: str, *, label: str | None = None, run: int = 0,
        **params,
    ) -> Release:
        """Release a mechanism's DP output on a dataset, charging its ledger once.

        Parameters
        ----------
        dataset : str or None
            The dataset name (``None``: the first one added).
        mechanism : str
            A key of :data:`MECHANISMS`: ``"svt"``, ``"top_c"``, ``"reconstruction"`` (1-D
            data); ``"fit_model"``, ``"residual_plot"``, ``"roc_curve"``,
            ``"binned_residuals"`` (tables).
        label : str, optional
            The ledger label (default: derived from the parameters).
        run : int
            Part of the cache key: the same parameters with another ``run`` draw fresh noise
            (and are charged again).
        **params
            The mechanism's parameters (``epsilon=`` always).

        Returns
        -------
        Release

        Raises
        ------
        ValueError
            A parameter is invalid (nothing charged).
        PrivacyPolicyError
            Analyst mode and the mechanism is not DP (nothing charged).
        BudgetExceededError
            Analyst mode and the release would exceed the budget (nothing charged).
        """
        ds = self._dataset(dataset)
        try:
            mech, p = self._validated(mechanism, params, ds.data.shape, ds.columns)
            if not self.teaching and not mech.private(p):
                what = f"variant {p['variant']!r}" if "variant" in p else f"{mech.name!r}"
                raise PrivacyPolicyError(
                    f"{what} is not differentially private and is refused in analyst mode; "
                    f"it runs only in a teaching session on public data. Nothing was charged."
                )
        except ValueError as exc:
            self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise
        label = label or mech.label(p)
        epsilon = float(mech.cost(p))
        key = self._key(ds, mech.name, p, run)
        assert self._store is not None
        with self._lock:
            cached = self._store.get(ds.name, key)
            if cached is not None:
                release = Release(
                    ds.name, mech.name, cached["label"], cached["params"], cached["epsilon"],
                    cached["output"], charged=False, time=cached["time"],
                    result=cached.get("result"), overdraft=cached.get("overdraft", False),
                    key=key,
                )
                self._notify({"kind": "release", "dataset": ds.name, "release": release})
                return release
            ledger = self._ledgers[ds.name]
            # Computing before charging is harmless: an output that is never shown leaks
            # nothing. It lets a refused release leave no trace at all.
            try:
                result = mech.run(_run_input(ds, mech, ds.data), p, self.rng)
            except ValueError as exc:
                # A mechanism's last checks (nothing is charged yet): observers hear it.
                self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
                raise
            output = mech.outputs(result, p)
            overdraft = False
            charge_key = key
            if ledger.has_key(key):
                # Charged in an earlier process whose output was lost: charge afresh rather
                # than hand out fresh noise for free.
                charge_key = f"{key}#{uuid.uuid4().hex}"
            try:
                if not ledger.spend(epsilon, label, key=charge_key):
                    # Another process charged this key between has_key and spend.
                    other = self._store.get(ds.name, key)
                    if other is not None:
                        return self.release(ds.name, mech.name, label=label, run=run, **params)
                    ledger.spend(epsilon, label, key=f"{key}#{uuid.uuid4().hex}")
            except BudgetExceededError as exc:
                if not self.teaching:
                    self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
                    raise
                overdraft = True
                self._overdrafts[ds.name].append(Overdraft(epsilon, label, time.time()))
            row = {
                "mechanism": mech.name,
                "label": label,
                "params": p,
                "epsilon": epsilon,
                "output": output,
                "time": time.time(),
            }
            self._store.put(ds.name, key, row)
            if self.teaching:
                # In-process only: the engine result (with its secret state) is never persisted.
                row["result"] = result
                row["overdraft"] = overdraft
            release = Release(
                ds.name, mech.name, label, p, epsilon, output, charged=True, time=row["time"],
                result=result if self.teaching else None, overdraft=overdraft, key=key,
            )
        self._notify({"kind": "release", "dataset": ds.name, "release": release})
        return release

    def close(self) -> None:
        """Close the ledgers' and the release store's database connections."""
        for ledger in self._ledgers.values():
            ledger.close()
        if self._store is not None:
            self._store.close()

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{n}: {self._ledgers[n].spent:.3g}/{self._ledgers[n].total_epsilon:.3g}"
            for n in self._datasets
        )
        return f"Session(mode={self.mode!r}, ledger={self.ledger_path!r}, budgets={{{parts}}})"


# The mechanisms of the later chapters (streams, dynamic histograms, synthetic data,
# personalized DP) live in dpwidgets/releases/, one module per chapter; importing the package
# registers them in MECHANISMS.
from . import releases as _releases  # noqa: E402, F401
