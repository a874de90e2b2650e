"""The metrics (not private: they compare a private output with the confidential truth): Sim,
AUC and its error, the symmetric difference, the binned residuals, ShapeD, regret, the
discriminatory power.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..validation import (
    check_finite_array,
    check_nonnegative,
    check_positive_int,
    check_probability,
    check_real,
)
from .checks import (
    MAX_METRIC_BINS,
    _check_domain,
    _check_in_domain,
    _check_labels,
    _check_pair,
    _check_scored,
)
from .records import _uniform_bin

__all__ = ["residual_plot_similarity", "SimilarityReference", "similarity_reference", "roc_auc",
           "auc_error", "symmetric_difference", "binned_residuals", "shape_distance", "regret",
           "discriminatory_power"]


@dataclass(frozen=True, eq=False)
class SimilarityReference:
    """The true plot's side of :func:`residual_plot_similarity`, computed once per plot.

    Attributes
    ----------
    fractions : numpy.ndarray, shape (bins, bins)
        ``P(c)``: the fraction of the true points in each cell.
    edges_predicted, edges_residual : numpy.ndarray
        The grid: ``bins`` equal cells over ``[min - margin, max + margin]`` of each column.
    bins : int
    margin : float
    """

    fractions: np.ndarray
    edges_predicted: np.ndarray
    edges_residual: np.ndarray
    bins: int
    margin: float


def similarity_reference(true_points, *, bins: int = 10, margin: float = 0.1) -> SimilarityReference:
    """The grid and cell fractions of the true residual plot that Sim compares against.

    Pass it as ``reference=`` to :func:`residual_plot_similarity` to score many private plots
    of the same true plot without re-binning the true points each time (the widgets do this
    on every control change). Same validation as :func:`residual_plot_similarity`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ref = similarity_reference(rng.normal(size=(500, 2)), bins=5)
    >>> ref.fractions.shape, round(float(ref.fractions.sum()), 6)
    ((5, 5), 1.0)
    """
    t = check_finite_array(true_points, "true_points", ndim=2)
    if t.shape[1] != 2:
        raise ValueError("true_points and private_points must have shape (k, 2)")
    bins = check_positive_int(bins, "bins", maximum=MAX_METRIC_BINS)
    margin = check_nonnegative(margin, "margin")
    lo = t.min(axis=0) - margin
    hi = t.max(axis=0) + margin
    edges_p = np.linspace(lo[0], hi[0], bins + 1)  # what histogram2d builds from (bins, range)
    edges_r = np.linspace(lo[1], hi[1], bins + 1)
    p_true = np.histogram2d(t[:, 0], t[:, 1], bins=(edges_p, edges_r))[0] / t.shape[0]
    for array in (p_true, edges_p, edges_r):
        array.setflags(write=False)
    return SimilarityReference(fractions=p_true, edges_predicted=edges_p, edges_residual=edges_r,
                               bins=bins, margin=float(margin))


def residual_plot_similarity(true_points, private_points, *, bins: int = 10,
                             margin: float = 0.1,
                             reference: SimilarityReference | None = None) -> float:
    """Sim(RP, PRP): total variation distance on a 10×10 grid over the true plot (Chen 2018 §4.2.3).

    The grid covers ``[min ŷ - 0.1, max ŷ + 0.1] × [min r - 0.1, max r + 0.1]`` of the true
    plot; ``P(c)`` and ``P_p(c)`` are the fractions of true and private points per cell, and
    private points outside the grid count as missing mass::

        Sim = (sum_c |P(c) - P_p(c)| + (1 - sum_c P_p(c))) / 2

    Returns a value in [0, 1]; 0 means identical cell distributions, 1 when the private plot
    is empty or entirely outside. Inputs are (k, 2) arrays of (prediction, residual).
    ``reference`` (from :func:`similarity_reference`) stands in for the true plot: then pass
    ``true_points=None``; its own ``bins`` and ``margin`` are used, and the value is the same
    as from the true points.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> true_points = rng.normal(size=(500, 2))
    >>> round(residual_plot_similarity(true_points, true_points + 0.1, bins=5), 3)
    0.056
    """
    if reference is None:
        reference = similarity_reference(true_points, bins=bins, margin=margin)
    elif true_points is not None:
        raise ValueError("give true_points or reference, not both")
    q = check_finite_array(private_points, "private_points", ndim=2, allow_empty=True)
    if q.size and q.shape[1] != 2:
        raise ValueError("true_points and private_points must have shape (k, 2)")
    if q.size == 0:
        return 1.0
    ex, er = reference.edges_predicted, reference.edges_residual
    m = reference.bins
    # np.histogram2d(q[:, 0], q[:, 1], bins=(ex, er)), by index arithmetic (same counts).
    inside = (q[:, 0] >= ex[0]) & (q[:, 0] <= ex[-1]) & (q[:, 1] >= er[0]) & (q[:, 1] <= er[-1])
    cell = _uniform_bin(q[inside, 0], ex) * m + _uniform_bin(q[inside, 1], er)
    counts = np.bincount(cell, minlength=m * m).reshape(m, m).astype(float)
    p_priv = counts / q.shape[0]
    return float(0.5 * (np.abs(reference.fractions - p_priv).sum() + (1.0 - p_priv.sum())))


def roc_auc(fpr, tpr) -> float:
    """Trapezoidal area under a ROC curve given by non-decreasing ``fpr`` and ``tpr``.

    Examples
    --------
    >>> roc_auc([0.0, 0.5, 1.0], [0.0, 1.0, 1.0])
    0.75
    """
    f, t = _check_pair(fpr, tpr, "fpr", "tpr")
    _check_in_domain(f, "fpr", 0.0, 1.0)
    _check_in_domain(t, "tpr", 0.0, 1.0)
    # The sum of many trapezoids can round past 1 (1.0000000000000002) on a curve in the unit
    # square; the area of such a curve is in [0, 1] by definition.
    return float(min(max(np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2.0), 0.0), 1.0))


def auc_error(labels, scores, private_auc: float) -> float:
    """``|AUC(labels, scores) - private_auc|``: the AUC error of Chen 2018 §4.3.3 (Fig. 4.8).

    Examples
    --------
    >>> round(auc_error([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.7), 3)
    0.05
    """
    from sklearn.metrics import roc_auc_score

    y = _check_labels(labels)
    p = check_finite_array(scores, "scores")
    private_auc = check_probability(private_auc, "private_auc", open_interval=False)
    return float(abs(roc_auc_score(y, p) - private_auc))


def _curve_limits(f: np.ndarray, t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Right and left limits at ``x`` of the piecewise-linear curve through (f, t).

    A vertical step (repeated f) is a jump: the right limit takes its top, the left its bottom.
    """
    fu, first = np.unique(f, return_index=True)
    last = np.unique(f[::-1], return_index=True)[1]
    last = f.size - 1 - last
    bottom, top = t[first], t[last]

    def along(idx: np.ndarray) -> np.ndarray:  # value on segment [fu[idx], fu[idx+1]]
        idx = np.clip(idx, 0, fu.size - 2)
        w = (x - fu[idx]) / (fu[idx + 1] - fu[idx])
        return top[idx] + w * (bottom[idx + 1] - top[idx])

    right = along(np.searchsorted(fu, x, side="right") - 1)
    left = along(np.searchsorted(fu, x, side="left") - 1)
    return right, left


def symmetric_difference(fpr_a, tpr_a, fpr_b, tpr_b) -> float:
    """Area between two ROC curves over FPR in [0, 1] (Chen 2018 §4.3.3, Fig. 4.9).

    Both curves are piecewise linear from (0, 0) to (1, 1) (vertical steps allowed); the area
    is computed exactly on the union of their breakpoints, including where they cross.
    Averaging it over repetitions gives the text's "mean symmetric difference".

    Examples
    --------
    >>> symmetric_difference([0.0, 1.0], [0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0])
    0.5
    """
    fa, ta = _check_pair(fpr_a, tpr_a, "fpr_a", "tpr_a")
    fb, tb = _check_pair(fpr_b, tpr_b, "fpr_b", "tpr_b")
    for values, name in ((fa, "fpr_a"), (ta, "tpr_a"), (fb, "fpr_b"), (tb, "tpr_b")):
        _check_in_domain(values, name, 0.0, 1.0)
    for f, name in ((fa, "fpr_a"), (fb, "fpr_b")):
        if f[0] != 0 or f[-1] != 1 or np.any(np.diff(f) < 0):
            raise ValueError(f"{name} must be non-decreasing from 0 to 1")
    x = np.union1d(fa, fb)
    ra, la = _curve_limits(fa, ta, x)
    rb, lb = _curve_limits(fb, tb, x)
    d0 = (ra - rb)[:-1]  # difference just right of x_j
    d1 = (la - lb)[1:]  # difference just left of x_{j+1}
    h = np.diff(x)
    same = d0 * d1 >= 0
    a0, a1 = np.abs(d0), np.abs(d1)
    with np.errstate(invalid="ignore", divide="ignore"):
        crossing = np.where(a0 + a1 > 0, (d0**2 + d1**2) / (2 * (a0 + a1)), 0.0)
    return float(np.sum(h * np.where(same, (a0 + a1) / 2, crossing)))


def binned_residuals(labels, probabilities, n_bins: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The confidential binned residual plot (Chen 2018 §4.4.1): bins of (nearly) equal size.

    ``n_bins`` defaults to ``2^s`` with ``s = max{t : 2^t <= sqrt(n)}``, PriBRP's count.
    Returns (mean prediction, mean residual) per bin. Not private: the reference for
    :func:`shape_distance`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 1000)
    >>> y = (rng.uniform(0, 1, 1000) < p).astype(int)  # a calibrated model
    >>> mean_predicted, mean_residual = binned_residuals(y, p)
    >>> mean_predicted.shape, round(float(np.abs(mean_residual).max()), 2)
    ((16,), 0.11)
    """
    y, p, _, _ = _check_scored(labels, probabilities, "probabilities")
    n = y.size
    if n_bins is None:
        n_bins = 2 ** max(1, int(math.floor(math.log2(math.sqrt(n)))))
    n_bins = min(check_positive_int(n_bins, "n_bins"), n)
    order = np.argsort(p, kind="stable")
    which = np.empty(n, dtype=np.int64)
    which[order] = (np.arange(n) * n_bins) // n
    size = np.bincount(which, minlength=n_bins)
    mean_p = np.bincount(which, weights=p, minlength=n_bins) / size
    mean_r = np.bincount(which, weights=y - p, minlength=n_bins) / size
    return mean_p, mean_r


def _half_slopes(p: np.ndarray, r: np.ndarray, split: float) -> np.ndarray:
    out = np.zeros(2)
    for side, mask in enumerate((p <= split, p > split)):
        pp, rr = p[mask], r[mask]
        if pp.size >= 2 and np.ptp(pp) > 0:
            dp = pp - pp.mean()
            out[side] = float(np.dot(dp, rr - rr.mean()) / np.dot(dp, dp))
    return out


def shape_distance(predicted, residual, reference_predicted=None, reference_residual=None, *,
                   split: float = 0.5) -> float:
    """ShapeD (Chen 2018 eq. 4.13): the summed |slope differences| of two binned residual plots.

    Each plot's points are split at ``p <= split`` / ``p > split`` and an OLS line of residual
    on prediction is fitted to each half; ``ShapeD = |Slp_A1 - Slp_B1| + |Slp_A2 - Slp_B2|``.
    Without a reference the ideal plot (both slopes 0) is used, as in Table 4.5. A half with
    fewer than two distinct predictions has slope 0 (a flat line: no evidence of a pattern).

    Examples
    --------
    >>> import numpy as np
    >>> p = np.linspace(0.05, 0.95, 10)
    >>> shape_distance(p, p - 0.5, p, np.zeros(10))  # slope 1 on both halves against 0
    2.0
    """
    p, r = _check_pair(predicted, residual, "predicted", "residual")
    split = check_real(split, "split")
    if (reference_predicted is None) != (reference_residual is None):
        raise ValueError("reference_predicted and reference_residual must be given together")
    a = _half_slopes(p, r, split)
    if reference_predicted is None:
        b = np.zeros(2)
    else:
        rp, rr = _check_pair(reference_predicted, reference_residual, "reference_predicted",
                             "reference_residual")
        b = _half_slopes(rp, rr, split)
    return float(np.abs(a - b).sum())


def regret(errors: Mapping[str, Sequence[float]] | np.ndarray,
           names: Sequence[str] | None = None) -> dict[str, float]:
    """Average regret (Chen 2018 eq. 4.2-4.3; Tables 4.2 and 4.4).

    ``errors[a][j]`` is algorithm a's error on setting j (a (dataset, ε) pair); the regret of a
    is the mean over settings of its error divided by the smallest error on that setting.
    Accepts a mapping name -> errors, or an (algorithms × settings) array with ``names``.

    Examples
    --------
    >>> regret({"a": [1.0, 2.0], "b": [2.0, 2.0]})
    {'a': 1.0, 'b': 1.5}
    """
    if names is not None and (isinstance(names, str) or not isinstance(names, Sequence)
                              or not all(isinstance(name, str) for name in names)):
        raise ValueError("names must be a sequence of algorithm names (strings) or None")
    if isinstance(errors, str):
        raise ValueError("errors must be a mapping name -> errors or an (algorithms x settings) array")
    if isinstance(errors, Mapping):
        names = list(errors)
        table = np.array([np.asarray(errors[k], dtype=float) for k in names])
    else:
        table = check_finite_array(errors, "errors", ndim=2)
        names = list(names) if names is not None else [str(i) for i in range(table.shape[0])]
    table = check_finite_array(table, "errors", ndim=2)
    if np.any(table < 0) or len(names) != table.shape[0]:
        raise ValueError("errors must be non-negative, one row per name")
    best = table.min(axis=0)
    if np.any(best <= 0):
        raise ValueError("every setting needs a positive smallest error (regret divides by it)")
    return {name: float(v) for name, v in zip(names, (table / best).mean(axis=1), strict=True)}


def discriminatory_power(sample_a, sample_b, *, bins: int = 20,
                         value_range: tuple[float, float] | None = None) -> float:
    """TVD between the empirical distributions of a quality measure in two scenarios.

    Chen 2018 §4.2.3 (Fig. 4.3(e, j), Table 4.1) and §4.4.3 (Fig. 4.14(e, j), Table 4.5) judge
    whether noisy plots can tell a good model from a bad one by the total variation distance
    between the distributions of Sim (or ShapeD) over repeated noisy plots of each scenario;
    1 means the two never overlap. The text does not say how the distributions are binned:
    here both samples share ``bins`` equal-width bins over ``value_range`` (default: the
    combined range of the samples).

    Examples
    --------
    >>> discriminatory_power([0.1, 0.2, 0.3], [0.7, 0.8, 0.9], bins=4, value_range=(0, 1))
    1.0
    """
    a = check_finite_array(sample_a, "sample_a")
    b = check_finite_array(sample_b, "sample_b")
    bins = check_positive_int(bins, "bins", maximum=MAX_METRIC_BINS)
    if value_range is not None:
        value_range = _check_domain(value_range, "value_range")
    if value_range is None:
        lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
        value_range = (lo, hi if hi > lo else lo + 1.0)
    ha = np.histogram(a, bins=bins, range=value_range)[0] / a.size
    hb = np.histogram(b, bins=bins, range=value_range)[0] / b.size
    return float(min(1.0, 0.5 * np.abs(ha - hb).sum()))  # min: float rounding above 1
