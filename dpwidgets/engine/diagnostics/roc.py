"""PriROC (Chen 2018 §4.3.2, Alg. 11): :func:`private_roc_curve`, its defaults, and the naive
Laplace baseline :func:`roc_fixed_laplace`.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .._results import eps_text
from ..histograms import _check_workload
from ..mechanisms import laplace
from ..validation import check_epsilon, check_positive_int, check_rng
from .checks import (
    MAX_LEVELS,
    MAX_THRESHOLDS,
    NEIGHBOURS,
    _check_fraction,
    _check_neighbours,
    _check_publisher,
    _check_scored,
    _parts,
    _publish,
    public_n,
)
from .metrics import roc_auc
from .records import _interval_index, _scored_records
from .recursive_medians import _median_cost_factor, _recursive_medians, median_budget

__all__ = ["PrivateRoc", "private_roc_curve", "PriROC", "roc_fixed_laplace", "ROC_DEFAULTS",
           "default_depth", "fixed_space_levels"]


@dataclass(frozen=True, eq=False)
class PrivateRoc:
    """A private ROC curve and what it cost.

    Attributes
    ----------
    fpr, tpr : numpy.ndarray
        Non-decreasing, in [0, 1], from (0, 0) to (1, 1); one point per threshold.
    thresholds : numpy.ndarray
        The thresholds Θ, decreasing from ``upper`` (θ_0) to ``lower`` (θ_ℓ); point k is
        (FPR(θ_k), TPR(θ_k)).
    auc : float
        Trapezoidal area under (fpr, tpr).
    noisy_tp, noisy_fp : numpy.ndarray
        Noisy counts per threshold interval (θ_k, θ_{k-1}] (publisher output, before
        monotonicity is restored).
    strategy : str
        ``"recursive_medians"``, ``"fixed"`` or ``"fixed_laplace_baseline"``.
    publisher : str
    s : int
        The depth: ``|Θ| - 1 = 2^s`` intervals (fewer only when heavily tied scores leave
        recursive-median intervals with no float inside, see :func:`s_recursive_medians`).
    epsilon : float
    epsilon_parts : mapping
        Replace-one: ``thresholds`` (ε1), ``tp`` (ε2/2), ``fp`` (ε2/2). Add/remove:
        ``thresholds`` (ε1), ``tp_fp`` (ε2: each histogram is published with ε2, on disjoint
        records — parallel composition).
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float
    noisy_tp: np.ndarray
    noisy_fp: np.ndarray
    strategy: str
    publisher: str
    s: int
    epsilon: float
    epsilon_parts: Mapping[str, float]
    n: int
    guarantee: str
    neighbours: str


def _monotone_rates(noisy_cells: np.ndarray) -> np.ndarray:
    """Noisy interval counts -> a rate curve from 0 to 1, monotone by isotonic regression.

    The rate at θ_k is the noisy prefix sum over the noisy total (Chen 2018 §4.3.2: "TPR/FPR use the
    noisy totals"); the endpoints are 0 (θ_0 = upper) and 1 (θ_ℓ = lower) by definition.
    """
    from sklearn.isotonic import IsotonicRegression

    prefix = np.cumsum(noisy_cells)
    total = max(float(prefix[-1]), 1.0)
    inner = prefix[:-1] / total
    if inner.size:
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True)
        inner = iso.fit_transform(np.arange(inner.size, dtype=float), inner)
    return np.concatenate(([0.0], inner, [1.0]))


#: The two sets of defaults of :func:`private_roc_curve`, name -> what they are.
ROC_DEFAULTS: Mapping[str, str] = MappingProxyType({
    "dpwidgets": "N-FixedSpace thresholds (eps1 = 0), 2^s intervals with s = "
                 "clip(round(log2(n eps) / 3) + 1, 3, 10), publisher HB",
    "text": "s-RecursiveMedians thresholds with eps1 = 0.2 eps, s = min(10, floor(log2 n)), "
            "publisher DAWA (Chen 2018, Alg. 11; Chen et al. 2016)",
})


def default_depth(n: int) -> int:
    """The text's depth ``s`` of PriROC's thresholds (``2^s`` intervals): ``min(10, floor(log2 n))``,
    at least 1.

    Chen 2018 §4.3.3 uses ``|Θ| = 2^10``; Chen et al. 2016 §3.3 the largest ``2^s <= n``; the
    rule takes both. It is the depth of ``defaults="text"`` and of s-RecursiveMedians
    thresholds in :func:`private_roc_curve` when ``s`` is not given. ``n`` is the public row
    count, so the depth costs no budget.

    Parameters
    ----------
    n : int
        The public row count (>= 1).

    Returns
    -------
    int
        ``s`` in [1, 10].

    Raises
    ------
    ValueError
        ``n`` not a positive integer.

    Examples
    --------
    >>> from dpwidgets.engine.diagnostics import default_depth
    >>> default_depth(1), default_depth(700), default_depth(1024), default_depth(10**6)
    (1, 9, 10, 10)
    """
    n = check_positive_int(n, "n")
    return max(1, min(10, int(math.floor(math.log2(n)))))



def fixed_space_levels(n: int, epsilon: float) -> int:
    """The depth ``s`` (``2^s`` equal-width intervals) of PriROC's default N-FixedSpace thresholds.

    ``s = clip(round(log2(n·eps) / 3) + 1, 3, 10)``: 2^3 intervals below ``n·eps ≈ 181``, 2^4
    for ``n·eps`` in about [181, 1448) (the text's n ≈ 500-700 at eps = 1), 2^5 up to about
    11,600, 2^10 from about 4.7·10^7. Why: each interval's two counts carry Laplace noise, and a
    TPR or FPR is a prefix sum of up to ``2^s`` of them, so the noise grows with ``2^s`` (as
    ``sqrt(2^s)/(n eps)`` for the flat tree HB keeps up to 32 cells) while the discretisation
    error of the equal-width curve shrinks with ``2^-s``, so the best depth grows slowly with
    ``n·eps``; the rule sits up to one level finer than the best depth on well-spread scores, which
    costs little there and keeps resolution for scores that crowd into part of the public
    range, where equal-width intervals lose more (the figures behind the rule are on the
    diagnostics family page of the documentation).
    ``n`` is the public row count (declared by the data owner, never ``len(data)``; see
    :func:`public_n`) and ``eps`` is public, so the rule costs no budget and gives the same
    depth on neighbours of any size.

    Examples
    --------
    >>> fixed_space_levels(700, 1.0), fixed_space_levels(10**6, 1.0)
    (4, 8)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    return int(min(10, max(3, round(math.log2(n * epsilon) / 3.0) + 1)))


def _roc_guarantee(epsilon: float, neighbours: str, publisher: str) -> str:
    from ..histograms import PUBLISHERS

    if not PUBLISHERS[publisher].private:
        return (f"NOT differentially private: publisher {publisher!r} is not epsilon-DP "
                f"(nominal epsilon {epsilon:g}; teaching only)")
    return f"{eps_text(epsilon)}-DP under {neighbours} (Chen 2018 Thm 11 + publisher {publisher!r}; Thm 12)"


def private_roc_curve(
    labels,
    scores,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    defaults: str = "dpwidgets",
    rho: float | None = None,
    s: int | None = None,
    thresholds: str | None = None,
    publisher: str | None = None,
    bounds: tuple[float, float] = (0.0, 1.0),
    median_variant: str = "nrs",
    workload: str | None = "prefix",
    neighbours: str = "replace-one",
    n: int | None = None,
) -> PrivateRoc:
    """PriROC: an epsilon-DP ROC curve of a binary classifier (Chen 2018 Alg. 11).

    Step 1: thresholds Θ by :func:`s_recursive_medians` with ``epsilon1 = rho·eps`` (``2^s - 1``
    medians plus the public ends), or N-FixedSpace (``thresholds="fixed"``: ``2^s``
    equal-width intervals, ``epsilon1 = 0``). Step 2: the counts of positives and of negatives
    per interval ``(θ_k, θ_{k-1}]`` (so TP(θ_k), FP(θ_k) are prefix sums) are released by
    :func:`.histograms.publish` with ``epsilon2/2`` each and the ``"prefix"`` workload; TPR and
    FPR divide the noisy prefix sums by the noisy totals. Step 3: isotonic regression
    (sklearn) makes both monotone; the endpoints (0, 0) and (1, 1) hold by definition.

    Defaults. ``defaults="dpwidgets"`` (the default): N-FixedSpace thresholds, ``2^s``
    intervals with ``s`` from :func:`fixed_space_levels` (a rule in ``n·eps``), and HB. At the
    text's own budgets (ρ = 0.2, s = 9, n ≈ 600, eps <= 1) nearly all of the s-RecursiveMedians
    thresholds fall back to equal-width midpoints, so ε1 buys almost nothing; spending all of
    epsilon on fewer, coarser counts is more accurate than the text's settings and than the
    naive Laplace curve of :func:`roc_fixed_laplace` at the text's budgets (the benchmark
    ``benchmarks/diagnostics_priroc.py`` measures both). ``defaults="text"``:
    s-RecursiveMedians with ρ = 0.2, ``s = min(10, floor(log2 n))``, DAWA — Chen 2018 §4.3.3.
    Any argument given explicitly overrides either set.

    Parameters
    ----------
    labels : array_like of {0, 1}
    scores : array_like
        Predicted probabilities (or any scores inside the public ``bounds``).
    epsilon : float
    rng : numpy.random.Generator, optional
    defaults : {"dpwidgets", "text"}
        Which set of defaults fills the arguments left at ``None`` (see :data:`ROC_DEFAULTS`).
    rho : float, optional
        Fraction of epsilon for the thresholds (0.2, Chen 2018 §4.3.3, Fig. 4.10). Ignored (ε1 = 0)
        for ``thresholds="fixed"``.
    s : int, optional
        ``|Θ| - 1 = 2^s``; default :func:`fixed_space_levels` for fixed thresholds under
        ``defaults="dpwidgets"``, else ``min(10, floor(log2 n))`` (Chen 2018 uses 2^10, Chen et
        al. 2016 the largest 2^s <= n); at most :data:`MAX_LEVELS`.
    thresholds : {"fixed", "recursive_medians"}, optional
        Default ``"fixed"`` (``"recursive_medians"`` under ``defaults="text"``).
    publisher : str, optional
        A 1-D-capable key of :data:`.histograms.PUBLISHERS`; default ``"hb"`` (``"dawa"``
        under ``defaults="text"``; Table 4.4: DAWA has regret 1, but the DAWA the text ran is
        not differentially private, see ``"dawa_published_not_private"``).
    bounds : (float, float)
        Public range of the scores; scores outside raise.
    median_variant : {"nrs", "thesis"}
        Calibration of the noisy medians.
    workload : str or None
        Passed to the publisher ("prefix": TP and FP are one-sided range queries, Chen et al. 2016 Def. 4).
    neighbours : {"replace-one", "add/remove"}
        ``"replace-one"`` (default): the text's scales — γ/2 per median, ε2/2 per histogram.
        ``"add/remove"``: γ per median and ε2 per histogram, half the noise (see Notes).
    n : int, optional
        The public row count (declared by the data owner) the default depth ``s`` is decided
        from. Omitted: the number of records under replace-one; required under add/remove
        (:func:`public_n`).

    Returns
    -------
    PrivateRoc

    Raises
    ------
    ValueError
        Labels not in {0, 1}, scores outside ``bounds`` or NaN, mismatched lengths, fewer
        than 2 records, bad epsilon/rho/s, unknown defaults, strategy or publisher — before
        any randomness.

    Notes
    -----
    Privacy: epsilon-DP under the chosen relation (Thm 11 for Θ, then the publisher's
    guarantee; the text's Thm 12 cites itself). The depth ``s``, hence the number of intervals,
    is a function of the public ``n`` and ``eps`` only: the same on both neighbours. The positives' and the negatives' interval
    counts are two histograms of disjoint sets of records, each published by an
    add/remove-calibrated publisher (one cell changing by 1 costs its budget).

    - Replace-one (the text's scales, which are what this relation needs): a changed record
      either keeps its label and moves between two intervals of one histogram (an L1 change
      of 2: twice that histogram's budget) or changes its label and leaves one histogram for
      the other (L1 change 1 in each: both budgets). With ``epsilon2/2`` per histogram either
      case costs epsilon2. In the medians two partitions per level can change: γ/2 each.
    - Add/remove: the record is in exactly one histogram and changes one of its cells by 1,
      so by parallel composition each histogram can be published with the whole epsilon2;
      and one partition per level changes, so each median gets γ. The text's scales would
      be (epsilon/2)-DP under this relation.

    A publisher registered with ``private=False`` (the published DAWA calibration) voids the
    guarantee; the result then says so.

    References
    ----------
    Chen 2018 §4.3.2, Alg. 11-12, Thm 11-12; Chen et al. 2016 §3.2.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.diagnostics import private_roc_curve
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat([0, 1], 500)
    >>> scores = np.clip(0.3 + 0.4 * labels + rng.normal(0, 0.2, 1000), 0, 1)
    >>> roc = private_roc_curve(labels, scores, 1.0, rng, n=1000)
    >>> roc.fpr[[0, -1]], roc.tpr[[0, -1]], round(roc.auc, 1)
    (array([0., 1.]), array([0., 1.]), 0.9)
    """
    records, lower, upper = _scored_records(labels, scores, "scores", bounds)
    n = public_n(n, records.n, neighbours)
    epsilon = check_epsilon(epsilon)
    if not isinstance(defaults, str) or defaults not in ROC_DEFAULTS:
        raise ValueError(f"defaults must be one of {sorted(ROC_DEFAULTS)}, got {defaults!r}")
    text = defaults == "text"
    if thresholds is None:
        thresholds = "recursive_medians" if text else "fixed"
    if thresholds not in ("recursive_medians", "fixed"):
        raise ValueError(f"thresholds must be 'recursive_medians' or 'fixed', got {thresholds!r}")
    rho = _check_fraction(0.2 if rho is None else rho, "rho")
    if s is not None:
        s = check_positive_int(s, "s", maximum=MAX_LEVELS)
    elif text or thresholds == "recursive_medians":
        s = default_depth(n)
    else:
        s = fixed_space_levels(n, epsilon)
    publisher = _check_publisher(("dawa" if text else "hb") if publisher is None else publisher, 1)
    _median_cost_factor(median_variant, "median_variant")
    _check_workload(workload)
    factor = _check_neighbours(neighbours)
    rng = check_rng(rng)

    eps1 = rho * epsilon if thresholds == "recursive_medians" else 0.0
    eps2 = epsilon - eps1
    if factor == 2:  # replace-one: sequential composition of the two histograms
        parts = _parts(epsilon, thresholds=eps1, tp=eps2 / 2, fp=eps2 / 2)
        eps_tp, eps_fp = parts["tp"], parts["fp"]
    else:  # add/remove: parallel composition over positives and negatives
        parts = _parts(epsilon, thresholds=eps1, tp_fp=eps2)
        eps_tp = eps_fp = parts["tp_fp"]
    records.check_scored(lower, upper)
    if thresholds == "recursive_medians":  # order statistics: the scores themselves
        y, p = records.scored()
        inner = _recursive_medians(
            p, s, lower, upper, median_budget(parts["thresholds"], s, neighbours, median_variant),
            median_variant, rng)
        theta = np.concatenate(([upper], inner[::-1], [lower]))
        k = _interval_index(p, theta)
        cells = theta.size - 1
        tp_cells = np.bincount(k[y == 1], minlength=cells).astype(float)
        fp_cells = np.bincount(k[y == 0], minlength=cells).astype(float)
    else:
        theta = np.linspace(upper, lower, 2**s + 1)
        # Equal widths: index arithmetic instead of a binary search per score (the same
        # intervals (θ_{k+1}, θ_k], the last one closed, as _interval_index); two counts.
        tp_cells, fp_cells = (np.asarray(c, dtype=float) for c in records.interval_counts(theta))
    noisy_tp = np.asarray(_publish(tp_cells, eps_tp, publisher, rng, workload).counts)
    noisy_fp = np.asarray(_publish(fp_cells, eps_fp, publisher, rng, workload).counts)
    tpr = _monotone_rates(noisy_tp)
    fpr = _monotone_rates(noisy_fp)
    return PrivateRoc(
        fpr=fpr, tpr=tpr, thresholds=theta, auc=roc_auc(fpr, tpr), noisy_tp=noisy_tp,
        noisy_fp=noisy_fp, strategy=thresholds, publisher=publisher, s=s, epsilon=epsilon,
        epsilon_parts=parts, n=int(n),
        guarantee=_roc_guarantee(epsilon, neighbours, publisher),
        neighbours=NEIGHBOURS[neighbours],
    )


PriROC = private_roc_curve


def roc_fixed_laplace(
    labels,
    scores,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    n_thresholds: int = 1024,
    bounds: tuple[float, float] = (0.0, 1.0),
    n: int | None = None,
) -> PrivateRoc:
    """BASELINE: the naive Laplace ROC curve Chen 2018 §4.3.2 argues against.

    N equal-width thresholds; every TP(θ_k), FP(θ_k) and n1 gets ``Lap((2N + 1)/eps)`` (the
    vector of 2N + 1 counts has L1 sensitivity ``2N + 1``; n0 = n - ñ1 with n public); then the
    same rate computation and isotonic regression as PriROC, so the comparison isolates the
    effect of the one-sided range publisher and of the data-dependent thresholds.

    Privacy: epsilon-DP (each count moves by <= 1) under add/remove and replace-one when ``n``
    (the public row count, declared by the data owner) is given; with ``n`` omitted ``n0 = len
    - ñ1`` uses ``len(labels)``, public under replace-one only, and the result says so.
    Returned as a :class:`PrivateRoc` with ``strategy="fixed_laplace_baseline"``.

    References: Chen 2018 §4.3.2 ("high sensitivity (2|Θ| + 1)"); Chen et al. 2016 §3.2.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.diagnostics import roc_fixed_laplace
    >>> labels, scores = np.tile([0, 1], 500), np.tile([0.2, 0.8], 500)  # separable
    >>> rng = np.random.default_rng(0)
    >>> roc = roc_fixed_laplace(labels, scores, 1.0, rng, n_thresholds=16, n=1000)
    >>> roc.fpr.size, roc.strategy
    (17, 'fixed_laplace_baseline')
    """
    from sklearn.isotonic import IsotonicRegression

    y, p, lower, upper = _check_scored(labels, scores, "scores", bounds)
    declared = n is not None
    n = public_n(n, y.size, "replace-one")
    epsilon = check_epsilon(epsilon)
    n_thresholds = check_positive_int(n_thresholds, "n_thresholds", minimum=2,
                                      maximum=MAX_THRESHOLDS)
    rng = check_rng(rng)

    theta = np.linspace(upper, lower, n_thresholds + 1)
    inner = theta[1:-1]
    # TP(θ) = #{y = 1, p > θ}, FP(θ) = #{y = 0, p > θ}, by binary search on sorted scores.
    pos, neg = np.sort(p[y == 1]), np.sort(p[y == 0])
    tp = pos.size - np.searchsorted(pos, inner, side="right")
    fp = neg.size - np.searchsorted(neg, inner, side="right")
    scale = (2 * n_thresholds + 1) / epsilon
    noisy = np.concatenate((tp, fp, [y.sum()])) + laplace(scale, 2 * inner.size + 1, rng=rng)
    n1 = min(max(noisy[-1], 1.0), n - 1.0)
    n0 = n - n1
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True)
    grid = np.arange(inner.size, dtype=float)
    tpr = np.concatenate(([0.0], iso.fit_transform(grid, noisy[: inner.size] / n1), [1.0]))
    fpr = np.concatenate(([0.0], iso.fit_transform(grid, noisy[inner.size : -1] / n0), [1.0]))
    return PrivateRoc(
        fpr=fpr, tpr=tpr, thresholds=theta, auc=roc_auc(fpr, tpr),
        noisy_tp=np.diff(np.concatenate(([0.0], noisy[: inner.size]))),
        noisy_fp=np.diff(np.concatenate(([0.0], noisy[inner.size : -1]))),
        strategy="fixed_laplace_baseline", publisher="laplace", s=int(math.log2(n_thresholds)),
        epsilon=epsilon, epsilon_parts=_parts(epsilon, counts=epsilon), n=int(n),
        guarantee=f"{eps_text(epsilon)}-DP (Laplace, L1 sensitivity 2N + 1)",
        neighbours=("add/remove or replace-one (public n)" if declared
                    else "replace-one (n = len(labels) public)"),
    )
