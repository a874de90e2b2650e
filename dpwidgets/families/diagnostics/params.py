"""The parameters of the regression diagnostics' mechanisms, one frozen object each.

Each field is declared once (:func:`~dpwidgets.params.param`): its default, its check against
the table's *public* shape, what it means and how a widget shows it. The spec's ``validate``
is :meth:`~dpwidgets.params.Params.validate` of these classes; the canonical dict it returns
is what ``run`` receives and what keys the release cache.

Two things set these classes apart from a plain :class:`~dpwidgets.params.Params`:

* **The order of the refusals.** A request is refused for the first thing wrong with it, in
  the order of the fields: the table's shape (:meth:`~dpwidgets.params.Params.precheck`), then
  the model under diagnosis (``kind``, ``outcome``, ``model``, ``coef``, ``intercept``), then
  ``epsilon`` and the rest. A request without ``epsilon`` is therefore refused for its model
  first if the model is wrong, and ``epsilon`` is required by its check (a ``KeyError`` the
  door reports as "needs the parameter epsilon="), not up front.
* **Defaults decided from the public row count.** ``n`` is the table's public row count
  (``shape[0]``), and the budget split, the grid, the depth ``s`` and the merging threshold are
  decided from it, never from the true count, so that neighbouring tables of different true
  sizes get the same canonical parameters. A parameter checked before ``n`` (``grid``, ``s``)
  but decided from it gets its canonical value once every field is checked, and is listed
  after the field it is decided with; ``defaults`` (which rule fills in what is not given) is
  not a canonical parameter itself: it is spelt out in the values it decided.

Examples
--------
>>> from dpwidgets.mechanism import PublicShape
>>> from dpwidgets.families.diagnostics.params import BinnedResidualsParams
>>> p = BinnedResidualsParams.validate({"epsilon": 1.0}, PublicShape((2000, 2)))
>>> p["n"], p["s"], p["rho"], "defaults" in p
(2000, 3, 0.15, False)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...engine.validation import (
    check_epsilon,
    check_finite_array,
    check_positive,
    check_positive_int,
    check_probability,
)
from ...params import NOT_GIVEN, OMITTED, Choice, Context, Epsilon, Params, Range, one_of, param

__all__ = ["BinnedResidualsParams", "FitParams", "MODELS", "OUTCOMES", "ResidualPlotParams",
           "RocParams", "publisher_name", "publisher_options", "roc_defaults"]

#: The public transformations of the outcome before the model is fitted.
OUTCOMES: dict[str, str] = {"y": "the outcome as recorded", "log": "its natural logarithm"}
#: The models under diagnosis: fitted inside the door, or given by public coefficients.
MODELS = ("ordinary", "public")


# -- the engines the checks consult, imported when first needed: importing dpwidgets loads
# every spec, and does not load the diagnostics engine ------------------------------------------
def _diagnostics():
    from ...engine import diagnostics

    return diagnostics


def _publishers():
    from ...engine.histograms import PUBLISHERS

    return PUBLISHERS


def publisher_options(ndim: int) -> tuple[tuple[str, str], ...]:
    """The histogram publishers of ``ndim``-D counts as ``(name, label)`` pairs, each
    publisher once under its canonical name (an alias such as ``"dawa"`` in the label).

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.params import publisher_options
    >>> dict(publisher_options(1))["hb"]
    'hb'
    """
    from ...engine.histograms import publisher_choices

    return publisher_choices(ndim)


def publisher_name(key: str) -> str:
    """The canonical name of publisher ``key`` (an alias resolves; ``KeyError`` if none).

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.params import publisher_name
    >>> publisher_name("hb")
    'hb'
    """
    return _publishers()[key].name


def roc_defaults() -> tuple[str, ...]:
    """The names of PriROC's sets of defaults (``defaults=`` of ``"roc_curve"``).

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.params import roc_defaults
    >>> roc_defaults()
    ('dpwidgets', 'text')
    """
    return tuple(_diagnostics().ROC_DEFAULTS)


# -- checks shared by the fields below (each names its parameter) ------------------------------
def _table(request: Mapping, shape) -> None:
    if shape[1] < 2:
        raise ValueError(
            f"a diagnostics table needs at least one feature column before the outcome, got "
            f"shape {shape}"
        )


def _kind(needed: str | None):
    """``kind``; ``needed``: the kind of model the diagnostic needs (PriRP: OLS; PriROC and
    PriBRP: logistic), ``None`` for the DP fit (the caller chooses)."""

    def check(value, ctx: Context) -> str:
        if value not in ("ols", "logistic"):
            raise ValueError(f"kind must be 'ols' or 'logistic', got {value!r}")
        if needed is not None and value != needed:
            raise ValueError(f"this diagnostic needs kind={needed!r}, got {value!r}")
        return value

    return check


def _outcome(value, ctx: Context) -> str:
    if value not in OUTCOMES:
        raise ValueError(f"outcome must be one of {sorted(OUTCOMES)}, got {value!r}")
    if ctx.values["kind"] == "logistic" and value != "y":
        raise ValueError("a logistic model takes the 0/1 outcome as it is (outcome='y')")
    return value


_model = one_of("model", MODELS, shown=tuple)


_PUBLIC_ONLY = "coef= and intercept= are for model='public' only"


def _coef(value, ctx: Context):
    if ctx.values["model"] != "public":
        if value is not NOT_GIVEN:
            raise ValueError(_PUBLIC_ONLY)
        return OMITTED
    if value is NOT_GIVEN:
        raise ValueError("model='public' needs coef= (and intercept=): public coefficients")
    coef = check_finite_array(np.atleast_1d(value), "coef")
    if coef.size != ctx.shape[1] - 1:
        raise ValueError(
            f"coef must hold one coefficient per feature ({ctx.shape[1] - 1}), got {coef.size}"
        )
    return coef


def _intercept(value, ctx: Context):
    if ctx.values["model"] != "public":
        if value is not NOT_GIVEN:
            raise ValueError(_PUBLIC_ONLY)
        return OMITTED
    return float(check_finite_array([0.0 if value is NOT_GIVEN else value], "intercept")[0])


def _epsilon(value, ctx: Context) -> float:
    if value is NOT_GIVEN:
        raise KeyError("epsilon")  # the door: "needs the parameter epsilon="
    return check_epsilon(value)


_neighbours = one_of("neighbours", lambda: _diagnostics().NEIGHBOURS)


def _publisher(name, ndim: int) -> str:
    publishers = _publishers()
    if not isinstance(name, str) or name not in publishers:
        raise ValueError(f"publisher must be one of {sorted(publishers)}, got {name!r}")
    if ndim not in publishers[name].dims:
        raise ValueError(f"publisher {name!r} does not publish {ndim}-D histograms")
    return publishers[name].name  # aliases ("dawa", "lm") share one cache key


def _fraction(value, name: str, upper: float = 1.0) -> float:
    value = check_probability(value, name)
    if value >= upper:
        raise ValueError(f"{name} must be in the open interval (0, {upper:g}), got {value!r}")
    return value


def _share(name: str, upper: float = 1.0):
    def check(value, ctx: Context) -> float:
        return _fraction(value, name, upper)

    return check


def _optional_share(value, ctx: Context) -> float | None:
    return None if value is None else _fraction(value, "rho")


def _optional_levels(name: str, maximum: str):
    """An optional depth or size (``None``: decided from the public row count), at most the
    engine's ``maximum`` (a module constant)."""

    def check(value, ctx: Context) -> int | None:
        limit = getattr(_diagnostics(), maximum)
        return None if value is None else check_positive_int(value, name, maximum=limit)

    return check


def _positive(name: str):
    def check(value, ctx: Context) -> float:
        return check_positive(value, name)

    return check


def _real(name: str):
    def check(value, ctx: Context) -> float:
        return float(check_finite_array([value], name)[0])

    return check


def _public_rows(minimum: int, what: str):
    """``n``: the public row count, ``shape[0]`` of the dataset's public shape (a ``"rows"``
    view's declared ``rows=``), checked against ``minimum`` before anything is charged. An
    ``n`` in the request (canonical parameters given back) must be that count: it is the
    owner's declaration, not the analyst's choice."""

    def check(value, ctx: Context) -> int:
        n = int(ctx.shape[0])
        if n < minimum:
            raise ValueError(f"{what} needs at least {minimum} records, the table has {n}")
        asked = n if value is NOT_GIVEN else value
        if isinstance(asked, bool) or not isinstance(asked, int | np.integer) or asked != n:
            raise ValueError(f"n is the dataset's public row count ({n}, declared by its "
                             f"owner); got n={asked!r}")
        return n

    return check


class _OnATable:
    """Mixin of the diagnostics' parameter classes: each runs on a table of features then the
    outcome, refused (by :func:`_table`) before any field is read."""

    @classmethod
    def precheck(cls, request: Mapping[str, Any], shape: Any) -> None:
        _table(request, shape)


# -- the model under diagnosis: the fields the DP fit shares with the diagnostics --------------
def _kind_field(needed: str | None):
    what = "'ols' or 'logistic'" if needed is None else f"{needed!r} only"
    return param(needed or "ols", check=_kind(needed), doc=f"the kind of model: {what}")


def _outcome_field(control: Choice | None = None):
    return param("y", check=_outcome, control=control, label="outcome",
                 doc="public transformation of the outcome ('y', 'log')")


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class _Diagnostic(_OnATable):
    """The fields every diagnostic starts with, in this order: the model under diagnosis (a
    logistic one; a class that redeclares ``kind`` or ``outcome`` keeps them in these
    places), the diagnostic's budget and the neighbour relation its noise is calibrated for.
    A mixin of the three diagnostics' :class:`~dpwidgets.params.Params` classes."""

    kind: str = _kind_field("logistic")
    outcome: str = _outcome_field()
    model: str = param("ordinary", check=_model,
                       doc="'ordinary': fitted inside the door; 'public': coef= and intercept=")
    coef: np.ndarray = param(NOT_GIVEN, check=_coef,
                             doc="model='public' only: one coefficient per feature")
    intercept: float = param(NOT_GIVEN, check=_intercept,
                             doc="model='public' only: the intercept (0)")
    epsilon: float = param(
        NOT_GIVEN, check=_epsilon, control=Epsilon(), label="ε plot",
        doc="the whole budget of the diagnostic, charged (the DP fit is its own release)")
    neighbours: str = param("replace-one", check=_neighbours,
                            doc="the neighbour relation the noise is calibrated for: "
                                "'replace-one' (the text's) or 'add/remove'")


# -- "residual_plot": PriRP (Chen 2018, Alg. 9-10) ----------------------------------------------
def _rp_epsilon1(value, ctx: Context) -> float:
    """``epsilon1`` (the bounds' budget) from ``rho`` or as given, or the text's rule; the
    grid is decided with it, by the same rule (``ResidualPlotParams.decide``)."""
    v = ctx.values
    epsilon1 = value
    if v["rho"] is not None:
        if epsilon1 is not None and not math.isclose(epsilon1, v["rho"] * v["epsilon"]):
            raise ValueError("give rho= or epsilon1= (the bounds' budget), not both")
        epsilon1 = v["rho"] * v["epsilon"]
    # epsilon1 and the grid from the public row count (Chen 2018 §4.2.2), never the true one.
    return _diagnostics().residual_plot_defaults(v["n"], v["epsilon"], v["theta"], epsilon1,
                                                 v["grid"])[0]


class ResidualPlotParams(_Diagnostic, Params, mechanism="residual_plot"):
    """``"residual_plot"``: PriRP (Chen 2018, Alg. 9), a private residual plot of an OLS
    model; the plotted region is bounded privately first (Alg. 10).

    ``epsilon`` is the total: ``epsilon1`` bounds the region (by default ``min(0.3 ε, 470/n)``,
    Chen 2018 §4.2.2; ``rho=`` sets it to ``rho·ε``), the rest publishes the ``grid × grid``
    histogram (by default ``sqrt(θ² n (ε - ε1) / 10)`` cells a side).

    Examples
    --------
    >>> from dpwidgets.mechanism import PublicShape
    >>> from dpwidgets.families.diagnostics.params import ResidualPlotParams
    >>> p = ResidualPlotParams.validate({"epsilon": 1.0, "rho": 0.3}, PublicShape((2000, 2)))
    >>> p["epsilon1"], p["grid"], p["publisher"]
    (0.3, 11, 'dawa_dyadic')
    """

    kind: str = _kind_field("ols")  # in _Diagnostic's place, as is outcome
    outcome: str = _outcome_field(Choice((("y", "y"), ("log", "log y"))))
    publisher: str = param("dawa", check=lambda v, ctx: _publisher(v, 2), label="publisher",
                           control=Choice(lambda: publisher_options(2)),
                           doc="the 2-D histogram publisher of the grid's counts")
    rho: float | None = param(None, check=_optional_share, control=Range(0.01, 0.9, 0.01),
                              label="ρ", doc="ε1/ε, the bounds' share (None: the text's rule)")
    grid: int | None = param(None, check=_optional_levels("grid", "MAX_GRID"),
                             control=Range(0, 200, 1, integer=True), label="grid m (0 = auto)",
                             doc="m of the m × m grid (None, 0 on a slider: from n and ε)")
    theta: float = param(0.95, check=_share("theta"),
                         doc="the share of the records the private bounds must cover")
    n: int = param(NOT_GIVEN, check=_public_rows(2, "a residual plot"),
                   doc="the table's public row count (declared by its owner)")
    epsilon1: float | None = param(None, check=_rp_epsilon1,
                                   doc="the bounds' budget (None: from rho or the text's rule)")
    mu_predicted: float = param(1.0, check=_positive("mu_predicted"),
                                doc="public unit of the predictions' bounds (Alg. 10)")
    mu_residual: float = param(1.0, check=_positive("mu_residual"),
                               doc="public unit of the residuals' bounds (Alg. 10)")
    center_predicted: float = param(0.0, check=_real("center_predicted"),
                                    doc="public centre of the predictions' bounds")
    center_residual: float = param(0.0, check=_real("center_residual"),
                                   doc="public centre of the residuals' bounds")

    listed_after = {"grid": "epsilon1"}

    def decide(self, shape) -> dict:
        # The grid epsilon1's check decided: the same public inputs give the same grid.
        return {"grid": _diagnostics().residual_plot_defaults(
            self.n, self.epsilon, self.theta, self.epsilon1, self.grid)[1]}


# -- "roc_curve": PriROC (Chen 2018, Alg. 11-12) ------------------------------------------------
_roc_rules = one_of("defaults", lambda: _diagnostics().ROC_DEFAULTS)


def _thresholds(value, ctx: Context) -> str:
    if value is NOT_GIVEN:
        value = "recursive_medians" if ctx.values["defaults"] == "text" else "fixed"
    if value not in ("recursive_medians", "fixed"):
        raise ValueError(f"thresholds must be 'recursive_medians' or 'fixed', got {value!r}")
    return value


def _roc_levels(values: Mapping[str, Any]) -> int:
    """``s`` as given, else from the public row count and ε: the same for every true size."""
    if values["s"] is not None:
        return values["s"]
    if values["thresholds"] == "fixed" and values["defaults"] != "text":
        return _diagnostics().fixed_space_levels(values["n"], values["epsilon"])
    return _diagnostics().default_depth(values["n"])


def _roc_publisher(value, ctx: Context) -> str:
    """The 1-D publisher (HB, or DAWA under ``defaults="text"``); PriROC's parameters are then
    all known, and each recursive median's budget is checked before anything is charged."""
    v = ctx.values
    name = _publisher(("dawa" if v["defaults"] == "text" else "hb") if value is NOT_GIVEN
                      else value, 1)
    if v["thresholds"] == "recursive_medians":
        _diagnostics().median_budget(v["rho"] * v["epsilon"], _roc_levels(v), v["neighbours"])
    return name


class RocParams(_Diagnostic, Params, mechanism="roc_curve"):
    """``"roc_curve"``: PriROC (Chen 2018, Alg. 11), a private ROC curve of a logistic model.

    ``defaults="dpwidgets"`` (the default) fills in N-FixedSpace thresholds (ε1 = 0), ``2^s``
    intervals by the rule in n·ε (:func:`~dpwidgets.engine.diagnostics.fixed_space_levels`)
    and the HB publisher; ``defaults="text"`` the text's s-RecursiveMedians (Alg. 12), ρ = 0.2,
    ``s = min(10, floor(log2 n))`` and DAWA (Chen 2018, §4.3.3). A parameter given overrides
    either; the canonical parameters spell out what was decided, without ``defaults``.

    Examples
    --------
    >>> from dpwidgets.mechanism import PublicShape
    >>> from dpwidgets.families.diagnostics.params import RocParams
    >>> p = RocParams.validate({"epsilon": 1.0, "defaults": "text"}, PublicShape((2000, 2)))
    >>> p["thresholds"], p["s"], p["publisher"]
    ('recursive_medians', 10, 'dawa_dyadic')
    """

    defaults: str = param("dpwidgets", check=_roc_rules,
                          doc="which rules fill in what is not given: 'dpwidgets' or 'text'")
    rho: float = param(0.2, check=_share("rho"), control=Range(0.01, 0.9, 0.01), label="ρ",
                       doc="ε1/ε, spent on the thresholds by s-RecursiveMedians")
    thresholds: str = param(
        NOT_GIVEN, check=_thresholds, label="thresholds",
        control=Choice((("fixed", "N-FixedSpace (ε1 = 0)"),
                        ("recursive_medians", "s-RecursiveMedians (Alg. 12)"))),
        doc="fixed, equally spaced thresholds, or private recursive medians (Alg. 12)")
    s: int | None = param(None, check=_optional_levels("s", "MAX_LEVELS"),
                          control=Range(0, 12, 1, integer=True),
                          label="s: 2^s thresholds (0 = auto)",
                          doc="|Θ| - 1 = 2^s thresholds (None, 0 on a slider: from n and ε)")
    n: int = param(NOT_GIVEN, check=_public_rows(2, "a ROC curve"),
                   doc="the table's public row count (declared by its owner)")
    publisher: str = param(NOT_GIVEN, check=_roc_publisher, label="publisher",
                           control=Choice(lambda: publisher_options(1)),
                           doc="the 1-D publisher of the TP and FP interval counts")

    listed_after = {"s": "n"}

    def decide(self, shape) -> dict:
        return {"s": _roc_levels(vars(self)), "defaults": OMITTED}


# -- "binned_residuals": PriBRP (Chen 2018, Alg. 13-14) -----------------------------------------
def _brp_split(rho: float) -> tuple[float, float, float]:
    """ρ = ε1/ε = ε2/ε (bins, merging), ε3 = (1 - 2ρ)ε for the averages (Chen 2018, §4.4.3)."""
    return (rho, rho, 1.0 - 2.0 * rho)


def _brp_levels(values: Mapping[str, Any], threshold: float | None) -> tuple[int, float]:
    """PriBRP's depth ``s`` and Alg. 14's threshold, from the public row count (never the
    true one); ``defaults`` is checked here."""
    return _diagnostics().binned_residuals_defaults(
        values["n"], values["epsilon"], _brp_split(values["rho"]), values["s"],
        threshold=threshold, neighbours=values["neighbours"], defaults=values["defaults"])


def _brp_threshold(value, ctx: Context) -> float:
    """Alg. 14's merging threshold as given, or decided with the depth; PriBRP's parameters
    are then all known, and each median's budget is checked before anything is charged."""
    v = ctx.values
    threshold = None if value is None else float(check_finite_array([value], "threshold")[0])
    s, threshold = _brp_levels(v, threshold)
    _diagnostics().median_budget(v["rho"] * v["epsilon"], s, v["neighbours"])
    return threshold


class BinnedResidualsParams(_Diagnostic, Params, mechanism="binned_residuals"):
    """``"binned_residuals"``: PriBRP (Chen 2018, Alg. 13), a private binned residual plot of
    a logistic model: ``2^s`` initial bins by s-RecursiveMedians (Alg. 12), merged where too
    small (Alg. 14), then the noisy mean prediction and residual per bin.

    ``rho`` is ε1/ε = ε2/ε (the bins and their merging); the averages get ε3 = (1 - 2ρ)ε
    (Chen 2018, §4.4.3, Fig. 4.15).

    Examples
    --------
    >>> from dpwidgets.mechanism import PublicShape
    >>> from dpwidgets.families.diagnostics.params import BinnedResidualsParams
    >>> p = BinnedResidualsParams.validate({"epsilon": 1.0, "defaults": "text"},
    ...                                    PublicShape((20_000, 2)))
    >>> p["s"], round(p["threshold"], 2)
    (7, 120.71)
    """

    rho: float = param(0.15, check=_share("rho", upper=0.5), control=Range(0.01, 0.49, 0.01),
                       label="ρ", doc="ε1/ε = ε2/ε for the bins and their merging (< 1/2)")
    s: int | None = param(None, check=_optional_levels("s", "MAX_LEVELS"),
                          control=Range(0, 10, 1, integer=True),
                          label="s: 2^s initial bins (0 = auto)",
                          doc="2^s initial bins (None, 0 on a slider: from n and ε)")
    defaults: str = param("dpwidgets",
                          doc="which rule decides s: 'dpwidgets' (from n·ε) or 'text' (from n)")
    n: int = param(NOT_GIVEN, check=_public_rows(4, "a binned residual plot"),
                   doc="the table's public row count (declared by its owner)")
    threshold: float | None = param(None, check=_brp_threshold,
                                    doc="Alg. 14's merging threshold (None: from n, s and ε)")

    listed_after = {"s": "n"}

    def decide(self, shape) -> dict:
        return {"s": _brp_levels(vars(self), self.threshold)[0], "defaults": OMITTED}


# -- "fit_model": the DP fit of the model to diagnose --------------------------------------------
_NEEDS_BOUNDS = ("a DP OLS fit needs public bounds_X=(lower, upper) and bounds_y=(lower, upper) "
                 "(of the transformed outcome), declared by the data owner, never read off the "
                 "data")


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
    from ...engine.regression import MAX_BOUND

    if max(np.abs(lo).max(), np.abs(hi).max()) > MAX_BOUND:
        raise ValueError(f"{name} must lie within +-{MAX_BOUND:g}")
    if n_features is None:
        return [float(lo[0]), float(hi[0])]
    return [lo.astype(float).copy(), hi.astype(float).copy()]


def _declared_bounds(shape) -> tuple | None:
    """``(bounds_X, bounds_y)`` from the owner's declared (low, high) of every column (the
    features, then the outcome), or ``None`` unless every column has one."""
    ranges = getattr(shape, "ranges", None)
    if ranges is None or not all(r is not None for r in ranges):
        return None
    return ([r[0] for r in ranges[:-1]], [r[1] for r in ranges[:-1]]), tuple(ranges[-1])


def _ols(values: Mapping[str, Any]) -> bool:
    return values["kind"] == "ols"


def _logistic(values: Mapping[str, Any]) -> bool:
    return values["kind"] == "logistic"


def _bounds_x(value, ctx: Context):
    """Checked with ``bounds_y`` (:func:`_bounds_y`): a DP OLS fit needs both before either."""
    return value


def _bounds_y(value, ctx: Context):
    """Both bounds, given or (neither given, outcome ``y``) the owner's declared ranges of the
    features and the outcome; each checked, ``bounds_X`` first."""
    bounds_x = ctx.values["bounds_X"]
    if bounds_x is NOT_GIVEN and value is NOT_GIVEN and ctx.values["outcome"] == "y":
        declared = _declared_bounds(ctx.shape)
        if declared is not None:
            bounds_x, value = declared
    if bounds_x is NOT_GIVEN or value is NOT_GIVEN:
        raise ValueError(_NEEDS_BOUNDS)
    _bounds_pair(bounds_x, "bounds_X", ctx.shape[1] - 1)
    return _bounds_pair(value, "bounds_y")


def _data_norm(value, ctx: Context) -> float:
    if value is NOT_GIVEN:
        raise ValueError("a DP logistic fit needs data_norm= (public bound on a row's L2 norm)")
    return check_positive(value, "data_norm")


def _regularization(value, ctx: Context) -> float:
    if value is None:
        from ...engine.regression import logistic_regularization

        v = ctx.values
        return logistic_regularization(v["n"], ctx.shape[1] - 1, v["epsilon"])
    return check_positive(value, "regularization")


class FitParams(_OnATable, Params, mechanism="fit_model"):
    """``"fit_model"``: a DP fit of the model to diagnose, a release of its own (its
    coefficients): the functional mechanism for OLS (Zhang et al. 2012), output perturbation
    for logistic regression (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1).

    Both need public bounds, declared by the data owner and never read off the data: the
    features' and the (transformed) outcome's ranges for OLS (by default the ranges the owner
    declared with the table), a bound on a row's L2 norm for logistic regression.

    Examples
    --------
    >>> from dpwidgets.mechanism import PublicShape
    >>> from dpwidgets.families.diagnostics.params import FitParams
    >>> shape = PublicShape((500, 2), ranges=((0.0, 1.0), (-1.0, 3.0)))
    >>> FitParams.validate({"epsilon": 0.5}, shape)["bounds_y"]
    [-1.0, 3.0]
    """

    kind: str = _kind_field(None)
    outcome: str = _outcome_field()
    epsilon: float = param(NOT_GIVEN, check=_epsilon, control=Epsilon(), label="ε fit",
                           doc="the fit's budget, charged as its own release")
    n: int = param(NOT_GIVEN, check=_public_rows(2, "a DP fit"),
                   doc="the table's public row count (declared by its owner)")
    bounds_X: list = param(NOT_GIVEN, check=_bounds_x, when=_ols,
                           doc="OLS: public (lower, upper) of the features, each or all")
    bounds_y: list = param(NOT_GIVEN, check=_bounds_y, when=_ols,
                           doc="OLS: public (lower, upper) of the transformed outcome")
    data_norm: float = param(NOT_GIVEN, check=_data_norm, when=_logistic,
                             doc="logistic: a public bound on a row's L2 norm")
    regularization: float | None = param(
        None, check=_regularization, when=_logistic,
        doc="logistic: the L2 penalty (None: from n, the features and ε)")

    def decide(self, shape) -> dict:
        if self.kind != "ols":
            return {}
        bounds_x = self.bounds_X
        if bounds_x is NOT_GIVEN:  # neither was given: the owner's (checked by _bounds_y)
            bounds_x = _declared_bounds(shape)[0]
        return {"bounds_X": _bounds_pair(bounds_x, "bounds_X", shape[1] - 1)}
