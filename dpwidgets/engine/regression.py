"""Differentially private regression: the models that the private diagnostics diagnose.

Chen 2018 (Ch. 4) diagnoses a model fitted to the confidential data; a model released to the
analyst must itself be differentially private. Two fits, both floating-point safe inside
:func:`~.mechanisms.floating_point_safe` (every analyst release) because their only noise is
:func:`~.mechanisms.laplace_reals` on a released statistic, and everything after it is
post-processing:

* :func:`dp_linear_regression` — the functional mechanism (Zhang, Zhang, Xiao, Yang &
  Winslett 2012): Laplace noise on the coefficients of the least-squares objective, then its
  minimiser. This is the algorithm of diffprivlib's ``LinearRegression`` (0.6), with three
  departures, each on the side of the proof: the clipped squares' sensitivity is the width
  of the squares' range (diffprivlib takes the square of the *lower* bound twice, which
  under-states it whenever the upper bound is the larger in magnitude); the budget of the
  noisy means that centre the data is part of epsilon (diffprivlib spends epsilon / (d + 1)
  on each of the feature and outcome means besides the epsilon it reports, (d + 2)/(d + 1)
  times epsilon in all); the objective's constant term, which does not move the minimiser,
  is not released, so its share goes to the other terms.
* :func:`dp_logistic_regression` — output perturbation (Chaudhuri, Monteleoni & Sarwate 2011,
  Alg. 1): the L2-regularised logistic minimiser, computed to a certified gradient norm, plus
  Laplace noise calibrated to its sensitivity. Objective perturbation (their Alg. 2,
  diffprivlib's ``LogisticRegression``) is far more accurate (its noise does not grow as
  1/lambda: on Chen 2018's scenario M1, n = 2,000, epsilon = 1, squared coefficient error
  0.003 against 0.13 here), but its proof runs through the density of a continuous noise
  vector mapped one-to-one onto the minimiser: with noise on a grid the minimisers of two
  neighbouring data sets form two disjoint sets, which is the floating-point leak itself.
  Output perturbation's proof carries over to the grid exactly. This is the price of a
  floating-point-safe logistic fit; ``fit_model(..., method="objective")`` keeps
  diffprivlib's for teaching runs (refused by the door in analyst mode).

Neighbours: one row added or removed, or one row replaced. Neither fit decides anything from
the true row count: the regularisation, the noise scales and the noise grids are functions of a
*public* row count ``n`` (declared by the data owner; the door passes the dataset's public
shape), which enters only as a public normalising constant, and each sensitivity is bounded
for both relations without it. With ``n`` omitted a direct caller's ``len(X)`` is used and the
guarantee is then stated for replace-one neighbours only (the relation that fixes the size).
The bounds (features, outcome) and the row norm are facts the data owner declares, never
read from the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy import optimize

from . import validation
from ._results import eps_text
from .mechanisms import laplace_reals

__all__ = ["damped_newton", "ArrayMoments", "DPRegression", "LogisticSums", "Moments",
           "LOGISTIC_GRADIENT_TOLERANCE", "MAX_BOUND", "NEIGHBOURS", "dp_linear_regression",
           "dp_logistic_regression"]

#: The neighbour relation of both fits given a public row count ``n``.
NEIGHBOURS = "one row added or removed, or one row replaced (n public, declared)"
#: ... and with ``n`` omitted (``len(X)`` stands for it; public only under replace-one).
NEIGHBOURS_LEN = "replace-one (bounded DP): n = len(X) public, one row changed"

#: The largest magnitude a declared bound may have: squares and products of bounds, times the
#: number of terms, stay finite doubles.
MAX_BOUND = 1e50

#: The largest gradient norm at which a logistic minimiser is accepted; its distance to the
#: exact minimiser (at most this over the regularisation, by strong convexity) enters the
#: sensitivity, so the release is private for the minimiser actually computed.
LOGISTIC_GRADIENT_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class DPRegression:
    """A differentially private linear or logistic model and what it cost.

    Attributes
    ----------
    coef : numpy.ndarray
        One coefficient per feature (in the features' own units).
    intercept : float
    epsilon : float
    epsilon_parts : mapping
        Linear: ``means`` (centring) and ``objective``; logistic: ``model``.
    details : mapping
        Public settings: the regularisation, the sensitivities and noise scales.
    guarantee, neighbours : str
    """

    coef: np.ndarray
    intercept: float
    epsilon: float
    epsilon_parts: MappingProxyType
    details: MappingProxyType
    guarantee: str
    neighbours: str = NEIGHBOURS

    def predict(self, X) -> np.ndarray:
        """``X @ coef + intercept`` (the linear predictor)."""
        X = np.asarray(X, dtype=float)
        return (X[:, None] if X.ndim == 1 else X) @ self.coef + self.intercept


def _check_xy(X, y) -> tuple[np.ndarray, np.ndarray]:
    X = validation.check_finite_array(X, "X", ndim=None)
    X = X[:, None] if X.ndim == 1 else X
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"X must be 2-D with at least 2 rows and 1 column, got shape {X.shape}")
    y = validation.check_finite_array(y, "y", ndim=1)
    if y.size != X.shape[0]:
        raise ValueError(f"X and y must have the same number of rows, got {X.shape[0]} and {y.size}")
    return X, y


def _check_range(bounds, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``, scalars or one per column, as float arrays of length d; lower < upper."""
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lower, upper) of public bounds") from None
    lo = np.broadcast_to(validation.check_finite_array(np.atleast_1d(lo), name, ndim=1), (d,)).astype(float)
    hi = np.broadcast_to(validation.check_finite_array(np.atleast_1d(hi), name, ndim=1), (d,)).astype(float)
    if not np.all(lo < hi):
        raise ValueError(f"{name} must have lower < upper for every column")
    if max(np.abs(lo).max(), np.abs(hi).max()) > MAX_BOUND:
        raise ValueError(f"{name} must lie within +-{MAX_BOUND:g} (MAX_BOUND)")
    return lo, hi


class Moments:
    """What the functional mechanism reads of the data: the sums of the clipped columns, then
    the sums of products of the clipped, centred columns. :class:`ArrayMoments` computes them
    in memory; ``dpwidgets.scored`` asks a query engine for them (two passes), so a curator
    never loads a table to fit a model. :func:`dp_linear_regression` accepts one in place of
    ``X`` (``y`` None).
    """

    n: int
    d: int

    def sums(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The ``d + 1`` sums of the columns (features, then the outcome) clipped to
        ``[lo, hi]``."""
        raise NotImplementedError

    def products(self, lo: np.ndarray, hi: np.ndarray, centre: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """``X'y`` (d) and ``X'X`` (d x d) of the clipped columns minus ``centre``."""
        raise NotImplementedError


class ArrayMoments(Moments):
    """:class:`Moments` of arrays held in memory."""

    def __init__(self, X: np.ndarray, y: np.ndarray):
        self.table = np.column_stack((X, y))
        self.n, self.d = X.shape

    def sums(self, lo, hi):
        return np.clip(self.table, lo, hi).sum(axis=0)

    def products(self, lo, hi, centre):
        c = np.clip(self.table, lo, hi) - centre
        Xc, yc = c[:, : self.d], c[:, self.d]
        return Xc.T @ yc, Xc.T @ Xc


class LogisticSums:
    """What the logistic fit reads of the data: at ``theta``, the regularised objective of
    :func:`dp_logistic_regression` (rows scaled into the ball of ``data_norm``), its gradient
    and its Hessian, in one pass. ``dpwidgets.scored`` computes them in a query engine;
    :func:`dp_logistic_regression` accepts one in place of ``X`` (``y`` None)."""

    n: int
    d: int

    def evaluate(self, theta: np.ndarray, data_norm: float, lam: float, n: float
                 ) -> tuple[float, np.ndarray, np.ndarray]:
        """The objective ``(1/n) sum loss + (lam/2) |theta|^2`` (``n`` the public row count, a
        constant; never the true count), its gradient and its Hessian at ``theta``."""
        raise NotImplementedError


def _square_width(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Width of ``{x^2 : lo <= x <= hi}`` (the sensitivity of a sum of squares, replace-one)."""
    top = np.maximum(lo * lo, hi * hi)
    bottom = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(lo * lo, hi * hi))
    return top - bottom


def _product_width(lo1, hi1, lo2, hi2) -> np.ndarray:
    """Width of ``{a b : a in [lo1, hi1], b in [lo2, hi2]}`` (extremes at the corners)."""
    corners = np.stack([lo1 * lo2, lo1 * hi2, hi1 * lo2, hi1 * hi2])
    return corners.max(axis=0) - corners.min(axis=0)


#: Post-processing of the noisy ``X'X``: its eigenvalues are raised to at least this many times
#: ``sqrt(d)`` times the largest noise scale of its entries (about the size of the noise
#: matrix's own eigenvalues), a ridge set by public quantities only.
_EIGEN_FLOOR = 1.0


def _centring_share(d: int) -> float:
    """The part of epsilon spent on the d + 1 means that centre the data: ``min(0.2, 1 / (d +
    2))``: the means need far less of the budget than the fit, so a smaller share than
    diffprivlib's 2 / (d + 2) gives a more accurate slope (the figures are on the diagnostics
    family page of the documentation; tests/engine/test_regression.py checks the fit against
    diffprivlib's own, not this split)."""
    return min(0.2, 1.0 / (d + 2))


def _public_rows(n, records: int) -> tuple[int, bool]:
    """The public row count (``n`` if given, else ``records``: a direct caller's ``len(X)``)
    and whether it was declared."""
    if n is None:
        return int(records), False
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n (the public row count) must be a positive integer, got {n!r}")
    return int(n), True


def dp_linear_regression(X, y, epsilon: float, bounds_X, bounds_y,
                         rng: np.random.Generator | None = None, *,
                         n: int | None = None) -> DPRegression:
    """Least squares with the functional mechanism (Zhang et al. 2012), diffprivlib's algorithm
    with its faults corrected (module docstring).

    Parameters
    ----------
    X : array_like, (n,) or (n, d)
    y : array_like, (n,)
    epsilon : float
    bounds_X, bounds_y : (lower, upper)
        Public bounds, scalars or one pair per feature (declared by the data owner); values
        outside are clipped.
    rng : numpy.random.Generator, optional
    n : int, optional
        The public row count (declared by the data owner) that turns the noisy column sums
        into the centring means. Omitted: ``len(X)``, and the guarantee is for replace-one
        neighbours only.

    Returns
    -------
    DPRegression
        The slope and intercept in the data's units, the split of epsilon between the
        centring means and the objective, and the objective terms' public noise scales.

    Raises
    ------
    ValueError
        Bad shapes, NaN/inf, bounds with lower >= upper, bad epsilon; before any draw.

    Notes
    -----
    1. Clip X and y to their bounds. Release the d + 1 column sums with ``min(0.2, 1 / (d +
       2)) epsilon``, each with the unit ``max(hi - lo, |lo|, |hi|)`` (one row moves a clipped
       sum by at most ``hi - lo`` when replaced and ``max(|lo|, |hi|)`` when added or removed;
       L1 over the d + 1 sums), divide them by the public ``n`` and clamp them into the
       bounds: the centring means. (When the true count differs from ``n`` the centre is off,
       which costs accuracy only; the sums' noise and grid never depend on the true count.)
    2. The objective ``sum (y - x w)^2 = sum y^2 - 2 w' X'y + w' X'X w``: release ``X'y``
       (d terms) and the upper triangle of ``X'X`` (d(d+1)/2 terms) with the rest of epsilon,
       each term's sensitivity the width of its range over the centred bounds (a product's
       corners; a square's range), one Laplace per term at ``width x (number of terms) /
       epsilon`` (the L1 argument over the terms).
    3. Post-processing: fold the noisy squares to >= 0, raise the noisy ``X'X``'s eigenvalues
       to at least ``sqrt(d)`` times its largest noise scale (the noisy objective may be
       unbounded below; a ridge set by public quantities) and return the minimiser ``w``,
       with intercept ``mean_y - mean_x w``. Where diffprivlib's minimiser runs off (its
       ``minimize`` on an indefinite quadratic; the diabetes data at epsilon 2: squared
       coefficient error ~5e12) this one stays bounded (~2e6, the size of the OLS
       coefficients themselves).

    Privacy: epsilon-DP under add/remove and under replace-one neighbours by sequential
    composition of the two releases (the bounds and ``n`` are public). Step 2's terms under
    add/remove: one row adds or removes one product of centred values whose ranges contain 0
    (the centre lies in the bounds), so it moves a term by at most ``max |corner|`` <= the
    width used; the noise is the same for both relations. With ``n`` omitted, ``len(X)`` is
    used in its place and the guarantee is for replace-one only (it fixes the size). Floating point: both releases go through
    :func:`~.mechanisms.laplace_reals`, on a power-of-two grid inside
    :func:`~.mechanisms.floating_point_safe`.

    References
    ----------
    Zhang, Zhang, Xiao, Yang & Winslett, "Functional mechanism: regression analysis under
    differential privacy", PVLDB 2012; diffprivlib 0.6 ``LinearRegression``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.regression import dp_linear_regression
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 2000)
    >>> y = 2 * x + 1 + rng.normal(0, 0.1, 2000)
    >>> fit = dp_linear_regression(x, y, 1.0, (0, 1), (0, 4), rng, n=2000)
    >>> fit.coef.round(1), round(float(fit.intercept), 1)
    (array([2.]), 1.0)
    """
    moments = X if isinstance(X, Moments) and y is None else ArrayMoments(*_check_xy(X, y))
    d = moments.d
    n, declared = _public_rows(n, moments.n)
    epsilon = validation.check_epsilon(epsilon)
    lo_x, hi_x = _check_range(bounds_X, d, "bounds_X")
    lo_y, hi_y = _check_range(bounds_y, 1, "bounds_y")
    rng = validation.check_rng(rng)
    eps_means = epsilon * _centring_share(d)
    eps_objective = epsilon - eps_means

    lo = np.concatenate((lo_x, lo_y))
    hi = np.concatenate((hi_x, hi_y))
    unit = np.maximum(hi - lo, np.maximum(np.abs(lo), np.abs(hi)))  # both relations
    sums = laplace_reals(np.asarray(moments.sums(lo, hi), dtype=float), d + 1, eps_means,
                         rng=rng, unit=unit, max_changed=d + 1)
    means = np.clip(sums / n, lo, hi)
    mx, my = means[:d], float(means[d])
    clo_x, chi_x, clo_y, chi_y = lo_x - mx, hi_x - mx, lo_y[0] - my, hi_y[0] - my

    iu, ju = np.triu_indices(d)
    xy, gram = moments.products(lo, hi, means)
    xx = np.asarray(gram, dtype=float)[iu, ju]
    width_xy = _product_width(clo_x, chi_x, clo_y, chi_y)
    width_xx = np.where(iu == ju, _square_width(clo_x[iu], chi_x[iu]),
                        _product_width(clo_x[iu], chi_x[iu], clo_x[ju], chi_x[ju]))
    terms = xy.size + xx.size
    scales = np.concatenate((width_xy, width_xx)) * terms / eps_objective  # public
    noisy = laplace_reals(np.concatenate((xy, xx)), terms, eps_objective, rng=rng,
                          unit=np.concatenate((width_xy, width_xx)), max_changed=terms)
    noisy_xy = noisy[:d]
    noisy_xx = np.zeros((d, d))
    noisy_xx[iu, ju] = noisy[d:]
    noisy_xx[ju, iu] = noisy[d:]
    np.fill_diagonal(noisy_xx, np.abs(np.diag(noisy_xx)))  # the squares, folded to >= 0
    values, vectors = np.linalg.eigh(noisy_xx)
    floor = _EIGEN_FLOOR * math.sqrt(d) * float(scales[d:].max())  # the noise's own size
    w = vectors @ ((vectors.T @ noisy_xy) / np.maximum(values, floor))
    return DPRegression(
        coef=w, intercept=my - float(mx @ w), epsilon=epsilon,
        epsilon_parts=MappingProxyType({"means": eps_means, "objective": eps_objective}),
        details=MappingProxyType({"terms": terms, "noise_scales": scales,
                                  "eigenvalue_floor": floor, "n": n}),
        guarantee=f"{eps_text(epsilon)}-DP ({'add/remove or replace-one' if declared else 'replace-one'}; "
                  f"the functional mechanism of Zhang et al. 2012 with bounds declared by the "
                  f"data owner{', public n' if declared else ''})",
        neighbours=NEIGHBOURS if declared else NEIGHBOURS_LEN,
    )


def _logistic_objective(theta: np.ndarray, Z: np.ndarray, s: np.ndarray, lam: float,
                        n: float):
    """``(1/n) sum log(1 + exp(-s z theta)) + (lam/2) |theta|^2`` and its gradient, ``n`` the
    public row count (a constant: the sum runs over the rows there are)."""
    margin = s * (Z @ theta)
    loss = np.logaddexp(0.0, -margin).sum() / n + 0.5 * lam * theta @ theta
    weight = -s * np.exp(-np.logaddexp(0.0, margin))  # -s sigmoid(-margin)
    grad = Z.T @ weight / n + lam * theta
    return loss, grad


def logistic_regularization(n: int, d: int, epsilon: float) -> float:
    """The default lambda of :func:`dp_logistic_regression`: ``sqrt(2 sqrt(d + 1) / (n
    epsilon)) / 8`` for the public row count ``n`` (declared; never the true count), ``d``
    features and the budget. It trades the noise ``~ 2 sqrt(d + 1) / (n lambda epsilon)``
    against the shrinkage; the factor 1/8 was the best of 1/50 to 3 on Chen 2018's logistic
    scenarios M1 (n = 500, 2,000) and M2 (n = 2,000) at epsilon 0.5, 1 and 5."""
    return math.sqrt(2.0 * math.sqrt(d + 1) / (n * epsilon)) / 8.0


def dp_logistic_regression(X, y, epsilon: float, data_norm: float,
                           rng: np.random.Generator | None = None, *,
                           regularization: float | None = None,
                           n: int | None = None) -> DPRegression:
    """L2-regularised logistic regression by output perturbation (Chaudhuri et al. 2011, Alg. 1).

    Parameters
    ----------
    X : array_like, (n,) or (n, d)
    y : array_like, (n,)
        Labels in {0, 1}.
    epsilon : float
    data_norm : float
        Public bound on a row's L2 norm (declared by the data owner); rows are scaled down to it.
    rng : numpy.random.Generator, optional
    regularization : float, optional
        lambda of the objective; default :func:`logistic_regularization` of the public ``n``,
        d and epsilon.
    n : int, optional
        The public row count (declared by the data owner): the objective's normalising
        constant and the default lambda's. Omitted: ``len(X)``, and the guarantee is for
        replace-one neighbours only.

    Returns
    -------
    DPRegression
        Coefficients and intercept of the log-odds in the features' own units (the rows'
        scaling undone), with the regularisation and the noise scale used.

    Raises
    ------
    ValueError
        Bad shapes, NaN/inf, labels not in {0, 1}, bad epsilon, data_norm or regularization
        (before any draw); a minimiser that cannot be certified to
        :data:`LOGISTIC_GRADIENT_TOLERANCE` (after the data were read: a data-dependent
        failure).

    Notes
    -----
    Rows ``z = (x / data_norm, 1) / sqrt(2)`` (x scaled into the unit ball, an intercept
    column) have ``|z| <= 1``; the loss ``l_z(theta) = log(1 + exp(-s theta z))``, ``s = 2y -
    1``, is 1-Lipschitz in ``theta``. The objective is the sum over the rows there are,
    ``J(theta) = sum l_z + (Lambda/2) |theta|^2`` with the public ``Lambda = n lambda``
    (``n`` the public count: the averaged objective's ``1/n_true`` would make the
    sensitivity ``2/(n_true lambda)`` a function of the private count); it is minimised as
    ``J / n``, the same minimiser.

    Proof of the sensitivity (Chaudhuri et al. 2011, Lemma 7 / Cor. 8 with ``G = J' - J``):
    J is Lambda-strongly convex and a neighbour's ``J' = J + G`` with G the added or removed
    ``l_z`` (1-Lipschitz) or ``l_z' - l_z`` (2-Lipschitz), so ``|theta*' - theta*| <= 2 /
    Lambda`` under either relation, whatever the true count. The computed minimiser has
    ``|grad J / n| <= g_max = LOGISTIC_GRADIENT_TOLERANCE``, so it lies within ``g_max /
    lambda`` of ``theta*`` (strong convexity of ``J / n``): its L2 sensitivity is at most
    ``2 / Lambda + 2 g_max / lambda`` and its L1 sensitivity ``sqrt(d + 1)`` times that, all
    public. Laplace noise of that L1 sensitivity through :func:`~.mechanisms.laplace_reals`
    (floating-point safe inside the context; its grid is a function of that public bound)
    makes the release epsilon-DP under add/remove and replace-one neighbours; the
    coefficients are then rescaled to the features' units (post-processing). With ``n``
    omitted ``len(X)`` stands for it and the guarantee is for replace-one only.

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate, "Differentially private empirical risk minimization",
    JMLR 2011, Alg. 1, Cor. 8.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.regression import dp_logistic_regression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> y = (X[:, 0] - X[:, 1] + rng.logistic(size=2000) > 0).astype(int)
    >>> fit = dp_logistic_regression(X, y, 1.0, data_norm=4.0, rng=rng, n=2000)
    >>> np.sign(fit.coef)
    array([ 1., -1.])
    """
    sums = X if isinstance(X, LogisticSums) and y is None else None
    if sums is None:
        X, y = _check_xy(X, y)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("y must hold 0/1 labels")
    rows, d = (sums.n, sums.d) if sums is not None else X.shape
    n, declared = _public_rows(n, rows)
    epsilon = validation.check_epsilon(epsilon)
    data_norm = validation.check_positive(data_norm, "data_norm")
    lam = (logistic_regularization(n, d, epsilon) if regularization is None
           else validation.check_positive(regularization, "regularization"))
    rng = validation.check_rng(rng)
    if sums is not None:  # in a query engine: damped Newton, one pass per evaluation
        theta, grad = damped_newton(lambda th: sums.evaluate(th, data_norm, lam, n), d + 1,
                                    LOGISTIC_GRADIENT_TOLERANCE / 4)
    else:
        norms = np.linalg.norm(X, axis=1)
        scale = np.where(norms > data_norm, data_norm / np.maximum(norms, 1e-300), 1.0)
        Z = np.column_stack((X * scale[:, None] / data_norm, np.ones(rows))) / math.sqrt(2.0)
        s = 2.0 * y - 1.0
        fit = optimize.minimize(_logistic_objective, np.zeros(d + 1), args=(Z, s, lam, n),
                                jac=True, method="L-BFGS-B",
                                options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 10_000})
        theta = fit.x
        if not np.linalg.norm(_logistic_objective(theta, Z, s, lam, n)[1]) <= (
                LOGISTIC_GRADIENT_TOLERANCE):
            theta = _newton(theta, Z, s, lam, n)
        grad = _logistic_objective(theta, Z, s, lam, n)[1]
    if not np.linalg.norm(grad) <= LOGISTIC_GRADIENT_TOLERANCE:
        raise ValueError("the logistic minimiser could not be certified (gradient norm above "
                         "LOGISTIC_GRADIENT_TOLERANCE); only a certified minimiser is released")
    l2 = 2.0 / (n * lam) + 2.0 * LOGISTIC_GRADIENT_TOLERANCE / lam
    l1 = math.sqrt(d + 1) * l2
    noisy = laplace_reals(theta, l1, epsilon, rng=rng, max_changed=d + 1)
    coef = noisy[:d] / (math.sqrt(2.0) * data_norm)
    return DPRegression(
        coef=coef, intercept=float(noisy[d] / math.sqrt(2.0)), epsilon=epsilon,
        epsilon_parts=MappingProxyType({"model": epsilon}),
        details=MappingProxyType({"regularization": lam, "l1_sensitivity": l1,
                                  "noise_scale": l1 / epsilon, "n": n}),
        guarantee=f"{eps_text(epsilon)}-DP ({'add/remove or replace-one' if declared else 'replace-one'}; "
                  f"output perturbation, Chaudhuri et al. 2011 Alg. 1, rows scaled to the "
                  f"declared norm {data_norm:g}{', public n' if declared else ''})",
        neighbours=NEIGHBOURS if declared else NEIGHBOURS_LEN,
    )


#: The most coefficients :func:`damped_newton` solves for (its Hessian is size x size).
MAX_NEWTON_SIZE = 10_000


def damped_newton(evaluate, size: int, tolerance: float, steps: int = 100
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method from zero on a smooth, strongly convex objective, ``evaluate(theta) ->
    (value, gradient, Hessian)``: a step that raises both the objective and the gradient's
    norm is halved (near the minimiser the objective no longer changes in floating point; the
    gradient still shrinks). Stops once the gradient's norm is at most ``tolerance``; returns
    the point and its gradient (the caller certifies it).

    Examples
    --------
    >>> theta, grad = damped_newton(
    ...     lambda th: (float(((th - 1) ** 2).sum()), 2 * (th - 1), 2 * np.eye(th.size)), 2, 1e-9)
    >>> theta.tolist()
    [1.0, 1.0]
    """
    if not callable(evaluate):
        raise TypeError(f"evaluate must be a function theta -> (value, gradient, Hessian), "
                        f"got {evaluate!r}")
    size = validation.check_positive_int(size, "size", maximum=MAX_NEWTON_SIZE)
    tolerance = validation.check_positive(tolerance, "tolerance")
    steps = validation.check_positive_int(steps, "steps")
    theta = np.zeros(size)
    loss, grad, hessian = evaluate(theta)
    for _ in range(steps):
        if np.linalg.norm(grad) <= tolerance:
            break
        step = np.linalg.solve(hessian, grad)
        for _halving in range(60):
            t_loss, t_grad, t_hessian = evaluate(theta - step)
            if t_loss < loss or np.linalg.norm(t_grad) < np.linalg.norm(grad):
                break
            step = step / 2.0
        theta, loss, grad, hessian = theta - step, t_loss, t_grad, t_hessian
    return theta, grad


def _newton(theta: np.ndarray, Z: np.ndarray, s: np.ndarray, lam: float, n: float
            ) -> np.ndarray:
    """A few Newton steps from ``theta`` (the objective is smooth and lambda-strongly convex),
    to bring the gradient norm below the certification tolerance."""
    for _ in range(20):
        _, grad = _logistic_objective(theta, Z, s, lam, n)
        if np.linalg.norm(grad) <= LOGISTIC_GRADIENT_TOLERANCE / 4:
            break
        p = np.exp(-np.logaddexp(0.0, -(Z @ theta)))  # sigmoid(z theta)
        hessian = (Z.T * (p * (1.0 - p))) @ Z / n + lam * np.eye(theta.size)
        theta = theta - np.linalg.solve(hessian, grad)
    return theta


_damped_newton = damped_newton  # its earlier, private name
