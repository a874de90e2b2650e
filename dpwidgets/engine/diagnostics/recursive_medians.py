"""s-RecursiveMedians (Chen 2018 §4.3.2, Alg. 12): the data-dependent thresholds of PriROC
and bin edges of PriBRP, and the budget of each median.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

import numpy as np

from ..mechanisms import (
    MEDIAN_FLOOR_BITS,
    SMOOTH_MEDIAN_VARIANTS,
    _grid_medians_of_runs,
    _noisy_medians_of_runs,
    _safe_alpha,
    is_floating_point_safe,
    median_grid,
)
from ..validation import check_epsilon, check_finite_array, check_positive_int, check_rng
from .checks import MAX_LEVELS, _check_domain, _check_in_domain, _check_neighbours

__all__ = ["s_recursive_medians", "median_budget"]


def _median_cost_factor(variant: str, name: str = "variant") -> float:
    """``epsilon_spent / epsilon`` of one :func:`smooth_sensitivity_median` call."""
    if not isinstance(variant, str) or variant not in SMOOTH_MEDIAN_VARIANTS:
        raise ValueError(f"{name} must be one of {sorted(SMOOTH_MEDIAN_VARIANTS)}, got {variant!r}")
    if variant == "nrs":
        return 1.0
    alpha, beta = SMOOTH_MEDIAN_VARIANTS[variant]
    return alpha + beta


def median_budget(epsilon1: float, s: int, neighbours: str = "replace-one",
                  variant: str = "nrs") -> float:
    """The budget of each median of :func:`s_recursive_medians` (ε1 over ``s`` levels, γ/2 per
    median under replace-one, γ under add/remove, 8/9 of it for ``"thesis"``).

    Raises ``ValueError`` naming ``epsilon`` when it is too small for the floating-point-safe
    median (its alpha must exceed ``2 MEDIAN_SLACK`` ≈ 1.2e-7), in either mode, so that the
    door refuses such a request before it charges anything.

    Examples
    --------
    >>> median_budget(0.2, 4), median_budget(0.2, 4, "add/remove")
    (0.025, 0.05)
    """
    epsilon1 = check_epsilon(epsilon1, "epsilon1")
    s = check_positive_int(s, "s", maximum=MAX_LEVELS)
    factor = _check_neighbours(neighbours)  # 2 medians per level may change under replace-one
    per_median = epsilon1 / s / factor / _median_cost_factor(variant)
    _safe_alpha(SMOOTH_MEDIAN_VARIANTS[variant][0] * per_median)
    return per_median


def s_recursive_medians(
    values,
    epsilon: float,
    s: int,
    lower: float = 0.0,
    upper: float = 1.0,
    *,
    rng: np.random.Generator | None = None,
    variant: str = "nrs",
    neighbours: str = "replace-one",
) -> np.ndarray:
    """s-RecursiveMedians: ``2^s - 1`` private thresholds splitting ``values`` evenly (Alg. 12).

    FINDMEDIANS releases the noisy median of the values inside ``(l, r)`` with
    :func:`.mechanisms.smooth_sensitivity_median` (Cauchy noise scaled to the smooth
    sensitivity of eq. 4.6; a noisy median outside ``(l, r)`` falls back to the midpoint),
    then recurses on ``{x < m~}`` in ``(l, m~)`` and ``{x > m~}`` in ``(m~, r)`` for ``s``
    levels. Here the recursion runs level by level: the values are sorted once and every
    partition is a slice of the sorted array, and the medians of one level (independent given
    the level) are computed together, so each level costs one batched pass over the records;
    the values and the draws are those of one FINDMEDIANS call per partition, in order.

    Parameters
    ----------
    values : array_like, 1-D
        Confidential values, all inside ``[lower, upper]``.
    epsilon : float
        ε1, the budget of the whole recursion.
    s : int
        Depth, in ``[1, MAX_LEVELS]`` (:data:`MAX_LEVELS` = 20: about a million thresholds).
    lower, upper : float
        Public domain (``[0, 1]`` for probabilities).
    rng : numpy.random.Generator, optional
    variant : {"nrs", "thesis"}
        Calibration of each median (see :func:`.mechanisms.smooth_sensitivity_median`).
        With ``"thesis"`` (which spends 9/8 of what it is given) each median is given
        ``(8/9)·γ/2`` (``(8/9)·γ`` under add/remove) so that the recursion still spends
        exactly ε1.
    neighbours : {"replace-one", "add/remove"}
        ``"replace-one"`` (default; the text's Thm 11): each median gets γ/2.
        ``"add/remove"``: each median gets γ (see Notes).

    Returns
    -------
    numpy.ndarray
        At most ``2^s - 1`` strictly increasing thresholds, all strictly inside
        ``(lower, upper)``: exactly ``2^s - 1`` unless heavy ties shrink a partition's interval
        to no float strictly inside it (see Notes).

    Raises
    ------
    ValueError
        Bad epsilon, ``s < 1``, bounds not ``lower < upper``, values outside them or NaN, an
        unknown variant or neighbour relation.

    Notes
    -----
    Privacy (Chen 2018 Thm 11, with the erratum that Alg. 12 spends γ/2 per median): each level uses γ = ε1/s. Under
    replace-one a changed record leaves one partition and joins another, so at most two
    partitions per level differ, each by one added or removed value: each median is
    released with γ/2, ``2 · γ/2`` per level, ε1 over s levels (the text's scales). Under
    add/remove the added or removed record lies in exactly one partition per level (the
    partitions are cut by the medians already released), so only one median per level sees
    a change and each median can be released with γ: ε1 over s levels again, at half the
    noise. The median
    mechanism's proof is stated for replace-one within a set; an added/removed value moves
    the median by at most one order statistic and shifts the index ranges in eq. 4.6 by at
    most one, so ``S*`` stays a β-smooth bound on the local sensitivity for that change
    (NRS 2007 §3.1's argument with k ± 1) — an argument sketched here, not a new proof.
    A partition with no value inside releases its midpoint plus Cauchy noise of scale
    ``(r - l)/alpha`` (the smooth sensitivity of an empty set), never the bare midpoint: a
    neighbour may hold one value there, and an exact midpoint against a noisy one would be
    an output of probability 1 against 0 (:func:`.mechanisms.smooth_sensitivity_median`).

    Ties. A partition is the open interval ``(l, r)`` between two released thresholds and
    holds the values strictly inside it. With heavily tied values a noisy median can land
    within a few float steps of a tied value, and after a midpoint fallback an interval can
    end up with no float strictly inside it (``r = nextafter(l)``, or ``l == r``). Such an
    interval holds no values and its midpoint is one of its ends, so it has nothing to split:
    it is dropped from the recursion and releases no threshold. Whether an interval is
    degenerate is a function of the thresholds already released (public), and a dropped
    partition draws no noise and touches no record, so the accounting above still bounds the
    cost of every level by γ: the recursion spends exactly ε1 (some of it on fewer medians).

    References
    ----------
    Chen 2018 §4.3.2, Alg. 12, eq. 4.6, Thm 11; Chen et al. 2016 §3.2.1, Alg. 1; Nissim, Raskhodnikova, Smith 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.diagnostics import s_recursive_medians
    >>> rng = np.random.default_rng(0)
    >>> np.round(s_recursive_medians(rng.uniform(0, 1, 1000), 1.0, 2, rng=rng), 1)
    array([0.3, 0.5, 0.8])
    """
    x = check_finite_array(values, "values")
    epsilon = check_epsilon(epsilon)
    s = check_positive_int(s, "s", maximum=MAX_LEVELS)
    lower, upper = _check_domain((lower, upper), "lower and upper")
    _check_in_domain(x, "values", lower, upper)
    per_median = median_budget(epsilon, s, neighbours, variant)
    rng = check_rng(rng)
    return _recursive_medians(x, s, lower, upper, per_median, variant, rng)


def _recursive_medians(x: np.ndarray, s: int, lower: float, upper: float, per_median: float,
                       variant: str, rng: np.random.Generator) -> np.ndarray:
    """:func:`s_recursive_medians` on checked values, which may be empty: a diagnostic on a
    table in its engine must not fail on a true count of 0 (that failure would tell it);
    every partition of an empty set releases its noisy midpoint (Notes there)."""
    xs = np.sort(np.asarray(x, dtype=float))
    if is_floating_point_safe():
        return _grid_recursive_medians(xs, s, lower, upper, per_median, variant, rng)
    # The partitions of a level: (l, r) and xs[start:stop], the values inside, in order. The
    # medians of a level are independent given the level, so they are released together
    # (same values and same draws as one smooth_sensitivity_median call per partition).
    lo, hi = np.array([lower]), np.array([upper])
    start, stop = np.array([0]), np.array([xs.size])
    found: list[float] = []
    for _level in range(s):
        # Drop the intervals with no float strictly inside (they hold no values; see Ties).
        mid = 0.5 * (lo + hi)
        keep = (lo < mid) & (mid < hi)
        if not keep.all():
            lo, hi, start, stop = lo[keep], hi[keep], start[keep], stop[keep]
            if lo.size == 0:
                break
        med = np.array(_noisy_medians_of_runs(xs, start, stop, lo, hi, per_median, variant, rng))
        found += med.tolist()
        cut_lo = np.clip(np.searchsorted(xs, med, side="left"), start, stop)
        cut_hi = np.clip(np.searchsorted(xs, med, side="right"), start, stop)
        # Children in order: (l, m~) holds {x < m~}, (m~, r) holds {x > m~}.
        lo, hi = np.column_stack((lo, med)).ravel(), np.column_stack((med, hi)).ravel()
        start = np.column_stack((start, cut_hi)).ravel()
        stop = np.column_stack((cut_lo, stop)).ravel()
    return np.sort(np.asarray(found))


def _grid_recursive_medians(xs: np.ndarray, s: int, lower: float, upper: float,
                            per_median: float, variant: str, rng: np.random.Generator) -> np.ndarray:
    """:func:`s_recursive_medians` inside :func:`~.mechanisms.floating_point_safe`: the same
    recursion with every median released on the grid ``lower + k g`` of
    :func:`~.mechanisms.median_grid` (``smooth_sensitivity_median``'s Notes). A partition is
    the open interval between two released grid points; one with no grid point strictly
    inside (``k_hi - k_lo < 2``) has nothing to split and is dropped (public, as under Ties)."""
    grid = median_grid(lower, upper)
    floor = (upper - lower) * 2.0**-MEDIAN_FLOOR_BITS
    k_lo, k_hi = np.zeros(1), np.array([(upper - lower) / grid])
    lo, hi = np.array([lower]), np.array([upper])
    start, stop = np.array([0]), np.array([xs.size])
    found: list[np.ndarray] = []
    for _level in range(s):
        keep = k_hi - k_lo >= 2.0
        if not keep.all():
            k_lo, k_hi, lo, hi = k_lo[keep], k_hi[keep], lo[keep], hi[keep]
            start, stop = start[keep], stop[keep]
            if k_lo.size == 0:
                break
        k = _grid_medians_of_runs(xs, start, stop, lo, hi, k_lo, k_hi, lower, grid, floor,
                                  per_median, variant, rng)
        med = lower + k * grid
        found.append(med)
        cut_lo = np.clip(np.searchsorted(xs, med, side="left"), start, stop)
        cut_hi = np.clip(np.searchsorted(xs, med, side="right"), start, stop)
        k_lo, k_hi = np.column_stack((k_lo, k)).ravel(), np.column_stack((k, k_hi)).ravel()
        lo, hi = np.column_stack((lo, med)).ravel(), np.column_stack((med, hi)).ravel()
        start = np.column_stack((start, cut_hi)).ravel()
        stop = np.column_stack((cut_lo, stop)).ravel()
    return np.sort(np.concatenate(found)) if found else np.empty(0)
