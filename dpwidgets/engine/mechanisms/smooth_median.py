"""The smooth-sensitivity median (Chen 2018 §4.3.2, Alg. 12 and eq. 4.6; Chen et al. 2016
§3.2.1, Alg. 1 and eq. 3): :func:`median_smooth_sensitivity`,
:func:`smooth_sensitivity_median`, and its floating-point-safe form on the grid of
:func:`median_grid` (Cauchy noise with relative precision in both tails)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._results import eps_text
from ..validation import check_epsilon, check_finite_array, check_positive, check_rng
from .context import is_floating_point_safe

__all__ = ["SMOOTH_MEDIAN_VARIANTS", "SmoothSensitivityMedian", "median_smooth_sensitivity",
           "smooth_sensitivity_median", "MEDIAN_GRID_BITS", "MEDIAN_SLACK", "median_grid"]

#: The two calibrations of the Cauchy-noise median that :func:`smooth_sensitivity_median`
#: offers, as (alpha, beta) fractions of epsilon: the noise is ``(S*_beta / alpha) * eta``.
SMOOTH_MEDIAN_VARIANTS: dict[str, tuple[float, float]] = {
    # The Nissim-Raskhodnikova-Smith 2007 framework with the Cauchy-like noise h(z) ∝ 1/(1+z^2)
    # calibrated to the whole budget: a shift of the median by at most S*/alpha standard units
    # costs at most alpha, a dilation by e^{+-beta} at most beta (smooth_sensitivity_median's
    # Notes), so alpha = beta = eps/2 spends exactly eps. (NRS's generic constants
    # alpha = beta = eps/6 for g = 2 are only (eps/3)-DP by the same argument: they would
    # charge eps for a third of it, at three times the noise.)
    "nrs": (0.5, 0.5),
    # Chen 2018 Alg. 12 / Chen et al. 2016 Alg. 1 as printed: m + (8 S*_{f,eps}(P) / eps) * eta, where eq. 4.6
    # smooths with e^{-k eps}, i.e. alpha = eps/8 and beta = eps.
    "thesis": (1.0 / 8.0, 1.0),
}


def _check_bounds(lower: float, upper: float) -> tuple[float, float]:
    lo = check_finite_array(np.atleast_1d(lower), "lower", ndim=1)
    hi = check_finite_array(np.atleast_1d(upper), "upper", ndim=1)
    if lo.size != 1 or hi.size != 1:
        raise ValueError("lower and upper must be scalars")
    lo_f, hi_f = float(lo[0]), float(hi[0])
    if not lo_f < hi_f:
        raise ValueError(f"lower must be < upper (the public domain [lower, upper]), got [{lo_f}, {hi_f}]")
    return lo_f, hi_f


def _check_median_values(values, lower: float, upper: float) -> np.ndarray:
    values = check_finite_array(values, "values", ndim=1, allow_empty=True)
    if values.size and (values.min() < lower or values.max() > upper):
        raise ValueError(
            f"values must lie in the public domain [lower, upper] = [{lower}, {upper}]; "
            f"some fall outside (clip them first, or widen the bounds)"
        )
    return values


def _median_smooth_sensitivity_sorted(x: np.ndarray, beta: float, lower: float, upper: float) -> float:
    """Eq. 4.6 on an already sorted, validated array (see :func:`median_smooth_sensitivity`)."""
    if x.size == 0:
        return upper - lower
    one = np.zeros(1, dtype=np.int64)
    return float(_median_smooth_sensitivities(x, one, one + x.size, beta, np.array([lower]),
                                              np.array([upper]))[0])


# Pruning slack (in log units): a search rectangle is dropped only when no pair in it can come
# within 1e-9 of the best gain already known, far above the few ulps the search can be off by.
_PRUNE_SLACK = 1e-9


def _median_smooth_sensitivities(
    xs: np.ndarray, starts: np.ndarray, stops: np.ndarray, beta: float, lowers: np.ndarray,
    uppers: np.ndarray,
) -> np.ndarray:
    """Eq. 4.6 of every non-empty sorted run ``xs[starts[p]:stops[p]]`` in ``[lowers[p], uppers[p]]``.

    Eq. 4.6 rewritten over pairs: ``S* = max over i <= m <= j of (y_j - y_i) e^{-beta (j-i-1)}``
    with ``y = (lower, x_1, ..., x_n, upper)``, ``k = j-i-1`` and ``t = j-m``. For fixed i the
    best j (largest on ties) is non-decreasing in i (if j' > j beats j for i, it beats it for
    every larger y_i), so the maximum is found by divide and conquer over i: O(n log n) work.
    All runs share each pass of the recursion (one vectorised pass per level for every run,
    which is what makes a whole level of s-RecursiveMedians cheap), and a search rectangle is
    dropped once an upper bound on its pairs falls below the best gain already seen; a row is
    scanned past a short window only when its bound does not rule the rest out. Both only
    skip pairs that cannot be the maximum (of the run, or of the row, so j_star is kept),
    and the rectangles that remain are exactly those of the plain recursion, so the result
    is the same float as without pruning.
    """
    n = (stops - starts).astype(np.int64)
    runs = n.size
    m = (n + 1) // 2  # 1-based position of the (lower) median in x, i.e. its index in y
    # Concatenate the y of every run: run p occupies y[off[p] : off[p] + n[p] + 2], and its
    # y[0] = lower, y[n+1] = upper stand for every out-of-range index (NRS 2007 §3.1).
    off = np.concatenate(([0], np.cumsum(n + 2)[:-1])).astype(np.int64)
    y = np.empty(int(np.sum(n + 2)))
    y[off] = lowers
    y[off + n + 1] = uppers
    first = np.concatenate(([0], np.cumsum(n)[:-1]))
    shift = np.repeat(off + 1 - first, n)
    src = np.repeat(starts - first, n) + np.arange(shift.size)
    y[shift + np.arange(shift.size)] = xs[src]

    # A floor for pruning only: the gains of a few pairs centred on the median, k = 0, 1, 3,
    # 7, ..., n (the result is still the maximum over the recursion's own pairs).
    ks = np.minimum((1 << np.arange(int(n.max()).bit_length() + 1)) - 1, n[:, None])
    ks = np.concatenate((ks, n[:, None]), axis=1)
    i0 = np.maximum(m[:, None] - (ks + 1) // 2, 0)
    j0 = np.minimum(i0 + ks + 1, (n + 1)[:, None])
    with np.errstate(divide="ignore"):
        floor = np.max(np.log(y[off[:, None] + j0] - y[off[:, None] + i0]) - beta * (j0 - i0 - 1),
                       axis=1)

    best = np.full(runs, -np.inf)
    run = np.arange(runs)
    ilo, ihi, jlo, jhi = np.zeros(runs, dtype=np.int64), m, m.copy(), n + 1
    while ilo.size:
        mid = (ilo + ihi) // 2
        base = off[run]
        # The row i = mid is scanned over a window [jlo, cut] first: a j beyond it has a
        # larger k, and past ceil(log((y_jhi - y_i) / (y_jlo - y_i)) / beta) + 1 steps the
        # penalty outweighs any possible gain in width over the pair (i, jlo). The rest of
        # the row is scanned only where its bound does not rule it out, so every row yields
        # the same maximum and the same j_star (largest on ties) as a full scan.
        with np.errstate(divide="ignore", invalid="ignore"):
            widest = np.log(y[base + jhi] - y[base + mid])
            steps = np.ceil((widest - np.log(y[base + jlo] - y[base + mid])) / beta) + 1
        steps = np.where(np.isfinite(steps), np.clip(steps, 0, jhi - jlo), jhi - jlo)
        cut = jlo + steps.astype(np.int64)
        seg_max, j_star = _row_maxima(y, base, mid, jlo, cut, beta)
        with np.errstate(invalid="ignore"):
            rest = (cut < jhi) & (widest - beta * (cut - mid) >= seg_max - _PRUNE_SLACK)
        if rest.any():
            more_max, more_star = _row_maxima(y, base[rest], mid[rest], cut[rest] + 1, jhi[rest],
                                              beta)
            later = more_max >= seg_max[rest]  # a tie goes to the larger j, as in a full scan
            j_star[rest] = np.where(later, more_star, j_star[rest])
            seg_max[rest] = np.maximum(seg_max[rest], more_max)
        np.maximum.at(best, run, seg_max)
        left = ilo <= mid - 1
        right = mid + 1 <= ihi
        ilo, ihi, jlo, jhi, run = (
            np.concatenate((ilo[left], mid[right] + 1)),
            np.concatenate((mid[left] - 1, ihi[right])),
            np.concatenate((jlo[left], j_star[right])),
            np.concatenate((j_star[left], jhi[right])),
            np.concatenate((run[left], run[right])),
        )
        # Every pair of a rectangle has y_j - y_i <= y_jhi - y_ilo and k >= jlo - ihi - 1.
        with np.errstate(divide="ignore"):
            bound = (np.log(y[off[run] + jhi] - y[off[run] + ilo])
                     - beta * np.maximum(jlo - ihi - 1, 0))
        keep = bound >= np.maximum(best, floor)[run] - _PRUNE_SLACK
        ilo, ihi, jlo, jhi, run = ilo[keep], ihi[keep], jlo[keep], jhi[keep], run[keep]
    # One scalar exp per run, exactly as a single call computes it.
    return np.array([float(np.exp(float(b))) for b in best])


def _row_maxima(y: np.ndarray, base: np.ndarray, i: np.ndarray, jlo: np.ndarray, jhi: np.ndarray,
                beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row r: the max over j in [jlo[r], jhi[r]] of the eq. 4.6 pair gain of (i[r], j) in
    log units, and the largest j attaining it (indices local to the run starting at base[r])."""
    lengths = jhi - jlo + 1
    seg_start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    pos = np.arange(int(seg_start[-1] + lengths[-1]))
    k = pos + np.repeat(jlo - seg_start - i - 1, lengths)  # j - i - 1
    # In logs: e^{-beta k} underflows for k ~ 10^4, and zeros would break the tie rule.
    with np.errstate(divide="ignore"):
        gains = (np.log(y[pos + np.repeat(base + jlo - seg_start, lengths)]
                        - np.repeat(y[base + i], lengths)) - beta * k)
    seg_max = np.maximum.reduceat(gains, seg_start)
    last = np.maximum.reduceat(np.where(gains == np.repeat(seg_max, lengths), pos, -1), seg_start)
    return seg_max, last - seg_start + jlo


def median_smooth_sensitivity(values, beta: float, lower: float, upper: float) -> float:
    """The beta-smooth sensitivity S*_beta of the median on the public domain [lower, upper].

    Implements Chen 2018 eq. 4.6 (Chen et al. 2016 eq. 3; Nissim, Raskhodnikova, Smith 2007, Prop. 3.4)::

        S*(x) = max_{k=0..n} e^{-k beta} max_{t=0..k+1} (x_{m+t} - x_{m+t-k-1})

    where ``x_1 <= ... <= x_n`` are the sorted values, ``m = ceil(n/2)`` is the position of the
    median, and ``x_i = lower`` for ``i <= 0``, ``x_i = upper`` for ``i > n``. The inner maximum
    is the local sensitivity at Hamming distance k, ``A^(k)(x)``: the most the median of a data
    set differing from ``x`` in at most ``k`` records can move when one more record is replaced.
    (The garbled thesis text prints the same formula; the clamping of out-of-range entries is
    NRS's and is what makes ``S*`` finite and at least ``e^{-n beta} (upper - lower)``.)

    Parameters
    ----------
    values : array_like, 1-D
        The data, all inside ``[lower, upper]``; order does not matter. May be empty.
    beta : float
        Smoothing parameter (> 0): ``S*(x') <= e^beta S*(x)`` for neighbours ``x, x'``.
    lower, upper : float
        The public domain of one record, ``lower < upper``.

    Returns
    -------
    float
        ``S*_beta(x)``; for an empty input, the global sensitivity ``upper - lower``.

    Notes
    -----
    Neighbours are replace-one (bounded DP: same n, one record changed), as in NRS 2007.
    Computed exactly by a divide-and-conquer over the pair form of eq. 4.6, vectorised per
    recursion level: O(n log n) time, no Python loop over records.

    References
    ----------
    Chen 2018 §4.3.2, eq. 4.6; Chen et al. 2016 §3.2.1, eq. 3; Nissim, Raskhodnikova, Smith, "Smooth sensitivity and
    sampling in private data analysis", STOC 2007, §3.1.

    Examples
    --------
    >>> from dpwidgets.engine.mechanisms import median_smooth_sensitivity
    >>> round(median_smooth_sensitivity([1, 2, 3, 4, 5, 6, 7], beta=0.1, lower=0, upper=10), 3)
    4.966
    """
    beta = check_positive(beta, "beta")
    lower, upper = _check_bounds(lower, upper)
    values = _check_median_values(values, lower, upper)
    return _median_smooth_sensitivity_sorted(np.sort(values), beta, lower, upper)


@dataclass(frozen=True)
class SmoothSensitivityMedian:
    """A noisy median released by :func:`smooth_sensitivity_median`, and what it cost.

    ``value`` is the released number (after the out-of-range rule); ``median``,
    ``smooth_sensitivity`` and ``noise_scale`` are confidential intermediate quantities, kept
    for teaching on public data — never send them to a widget in analyst mode.
    """

    value: float
    median: float
    smooth_sensitivity: float
    noise_scale: float
    alpha: float
    beta: float
    epsilon: float
    epsilon_spent: float
    fell_back: bool
    variant: str
    n: int
    guarantee: str
    neighbours: str = "replace-one (bounded DP): same n, one value changed"

    def __float__(self) -> float:
        return self.value


def smooth_sensitivity_median(
    values,
    epsilon: float,
    lower: float,
    upper: float,
    *,
    rng: np.random.Generator | None = None,
    variant: str = "nrs",
    out_of_range: str = "midpoint",
) -> SmoothSensitivityMedian:
    """Release the median of ``values`` with Cauchy noise scaled to its smooth sensitivity.

    The release is ``median + (S*_beta(values) / alpha) * eta`` with ``eta = tan(pi (U - 1/2))``,
    ``U ~ Uniform(0, 1)`` — density ∝ 1/(1 + eta^2) — as in FINDMEDIANS of Chen 2018 Alg. 12
    (s-RecursiveMedians, used by PriROC and PriBRP). ``S*_beta`` is eq. 4.6, computed by
    :func:`median_smooth_sensitivity`. The median is the order statistic ``x_(ceil(n/2))`` (the
    lower middle value when n is even), the statistic eq. 4.6 is the smooth sensitivity of.

    Parameters
    ----------
    values : array_like, 1-D
        The confidential values, all inside the public domain ``[lower, upper]``. May be empty.
    epsilon : float
        Budget of this one median. Inside s-RecursiveMedians each median gets gamma/2 with
        gamma = epsilon_1 / s (Chen 2018 Alg. 12, γ/2 per median: an erratum).
    lower, upper : float
        Public bounds of one value (``lower < upper``); they enter ``S*`` for medians near the
        ends of the data and define the fallback.
    rng : numpy.random.Generator, optional
        Source of randomness (one uniform draw).
    variant : {"nrs", "thesis"}
        Calibration (alpha, beta) as fractions of epsilon, see ``SMOOTH_MEDIAN_VARIANTS``.
        ``"nrs"`` (default): alpha = beta = epsilon/2, the NRS 2007 framework with the
        Cauchy-like noise calibrated so that it spends exactly epsilon (Notes). ``"thesis"``: Chen 2018 Alg. 12 /
        Chen et al. 2016 Alg. 1 as printed, noise ``8 S*_eps / eps`` with ``e^{-k eps}`` smoothing (alpha =
        epsilon/8, beta = epsilon); NRS's lemma does not cover it, and the direct argument in
        the Notes gives (9/8)·epsilon, which is what ``epsilon_spent`` reports.
    out_of_range : {"midpoint", "clip", "keep"}
        What to release when the noisy median is not strictly inside (lower, upper):
        the midpoint (Chen 2018 Alg. 12: "if m~ <= l or m~ >= r then m~ <- (l+r)/2"), the nearest
        bound, or the raw value. All three are post-processing.

    Returns
    -------
    SmoothSensitivityMedian
        ``value`` (also ``float(result)``), plus the budget and calibration used.

    Raises
    ------
    ValueError
        Bad epsilon, bounds with ``lower >= upper``, NaN/inf values or values outside the
        bounds, an unknown variant or out_of_range — before any randomness is used.

    Notes
    -----
    Privacy: epsilon-DP under replace-one neighbours (n is public), by the smooth-sensitivity
    framework of NRS 2007 §2: ``S*_beta`` is a beta-smooth upper bound on the local
    sensitivity, and the noise ``(S*/alpha) eta`` is calibrated to it. For h ∝ 1/(1+z^2)
    directly: neighbours shift ``eta`` by at most alpha, costing at most alpha in log-density
    (|d ln(1+z^2)/dz| <= 1), and rescale it by at most e^beta, costing at most beta (the
    Jacobian and the density change partly cancel), so the release is (alpha + beta)-DP:
    exactly epsilon for ``"nrs"`` (alpha = beta = epsilon/2), 9·epsilon/8 for the thesis
    constants.

    An empty input is released like any other: its median is taken to be the midpoint and
    its smooth sensitivity the width ``upper - lower`` (what eq. 4.6 gives with no records),
    so the release is ``midpoint + ((upper - lower)/alpha) eta`` under the same out-of-range
    rule, and one uniform is drawn. Never the bare midpoint: inside s-RecursiveMedians a
    partition empty on one input holds a record on its neighbour, and an exact midpoint
    against a noisy one would be a difference with probability 0 against > 0 (unbounded
    privacy loss). The midpoint shifts by at most ``(upper - lower)/2 <= S*`` from the
    one-record median and ``S*`` changes by at most e^beta, so the argument above covers
    it. All-equal values are handled by eq. 4.6 as is:
    ``S*`` is then the smoothed distance from the common value to the domain bounds.

    Inside s-RecursiveMedians a replaced record can leave one partition and join another, so
    each partition sees an add/remove change, not a replace-one change; the thesis accounts
    for this by charging two medians per level (Chen 2018 Thm 11) — the caller's concern.

    Floating point. Outside :func:`floating_point_safe` (teaching runs, previews) the release
    is the double ``median + scale * tan(pi (U - 1/2))``: its set of reachable values depends
    on the median (Mironov 2012). Inside (every analyst release) it is the grid point
    ``lower + k g``, ``g`` = :func:`median_grid` (the largest power of two <= (upper - lower) /
    2**16), ``k = rint(c + (S / alpha') eta / g)`` with ``c = (median - lower) / g``, ``S =
    max(S*, (upper - lower) 2**-24)`` (the maximum of a beta-smooth bound and a constant is a
    beta-smooth bound; the floor keeps the noise from vanishing in floating point) and ``alpha' =
    alpha (1 - 2**-20) - MEDIAN_SLACK``; an index not strictly inside falls back to the grid
    point ``floor(K/2)`` of the midpoint (``K = (upper - lower) / g``). Rounding to the grid
    and the fallback are post-processing of the ideal Cauchy release, so what remains is the
    implementation's error, which ``alpha'`` pays for:

    * ``eta`` comes from :func:`_cauchy_draws`, exact to a relative ``2**-52`` of ``V`` wherever
      it falls and within a few ulps through ``tan``; a cell ``[k - 1/2, k + 1/2)`` at distance
      ``D <= W < 2**17 g`` from ``c`` has a width in ``V`` at least ``g / (4 D + 2 g)`` of its
      ends' ``V``, so every cell (and every union of cells: the fallback's tails are
      ``V``-intervals ending at 0) is hit with a probability within a relative ``delta <=
      2**-28`` of its ideal mass; the sum ``c + t eta`` errs by at most ``2**-36`` cells
      inside the domain, a sliver below a relative ``2**-33`` of any cell;
    * ``c`` is ``(median - lower) / g`` rounded once (``<= W 2**-53`` in value), a shift below
      ``2**-28`` of ``S / alpha`` at the floor: the factor ``1 - 2**-20`` on alpha pays it;
      ``S*`` is computed to a relative ``2**-40`` or so (a dilation far inside the slack).

    So the released index is ``(alpha + beta)``-DP up to ``2 ln((1 + delta) / (1 - delta)) <
    2**-25.9``, less than ``MEDIAN_SLACK = 2**-24``: the median spends at most its nominal
    epsilon. Budgets whose alpha is below ``2 MEDIAN_SLACK`` (about 1.2e-7) are refused before
    anything is drawn. The set of possible outputs is the grid (and the midpoint's grid point)
    whatever the data: no double's low bits tell neighbours apart.

    References
    ----------
    Chen 2018 §4.3.2, Alg. 12, eq. 4.6; Chen et al. 2016 §3.2.1, Alg. 1, eq. 3; Nissim, Raskhodnikova, Smith 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import smooth_sensitivity_median
    >>> values = np.random.default_rng(1).normal(50, 10, 201)
    >>> r = smooth_sensitivity_median(values, 1.0, lower=0, upper=100, rng=np.random.default_rng(0))
    >>> round(float(np.median(values)), 1), round(float(r.value), 1)
    (50.1, 50.2)
    """
    epsilon = check_epsilon(epsilon)
    lower, upper = _check_bounds(lower, upper)
    values = _check_median_values(values, lower, upper)
    if variant not in SMOOTH_MEDIAN_VARIANTS:
        raise ValueError(f"variant must be one of {sorted(SMOOTH_MEDIAN_VARIANTS)}, got {variant!r}")
    if out_of_range not in ("midpoint", "clip", "keep"):
        raise ValueError(f"out_of_range must be 'midpoint', 'clip' or 'keep', got {out_of_range!r}")
    rng = check_rng(rng)

    alpha_frac, beta_frac = SMOOTH_MEDIAN_VARIANTS[variant]
    alpha, beta = alpha_frac * epsilon, beta_frac * epsilon
    epsilon_spent = alpha + beta
    guarantee = (
        f"{eps_text(epsilon_spent)}-DP (NRS 2007, Cauchy noise, alpha = beta = epsilon/2)"
        if variant == "nrs"
        else f"{eps_text(epsilon_spent)}-DP (= 9/8 x epsilon; Chen 2018 Alg. 12 claims epsilon)"
    )
    midpoint = 0.5 * (lower + upper)
    n = values.size
    x = np.sort(values)
    # An empty input: the midpoint with the noise of the global sensitivity (see Notes).
    median = float(x[(n + 1) // 2 - 1]) if n else float("nan")
    if is_floating_point_safe():  # on the grid lower + k g (Notes, "Floating point")
        grid = median_grid(lower, upper)
        top = np.array([(upper - lower) / grid])
        floor = (upper - lower) * 2.0**-MEDIAN_FLOOR_BITS
        s_star = max(_median_smooth_sensitivity_sorted(x, beta, lower, upper), floor)
        k = float(_grid_medians_of_runs(
            x, np.array([0]), np.array([n]), np.array([lower]), np.array([upper]),
            np.zeros(1), top, lower, grid, floor, epsilon, variant, rng,
            sens=np.array([s_star]))[0])
        inside = 0.0 < k < float(top[0])
        return SmoothSensitivityMedian(
            value=lower + k * grid, median=median, smooth_sensitivity=s_star,
            noise_scale=s_star / _safe_alpha(alpha), alpha=alpha, beta=beta, epsilon=epsilon,
            epsilon_spent=epsilon_spent, fell_back=not inside, variant=variant, n=int(n),
            guarantee=f"{guarantee}; floating-point safe: Cauchy noise rounded to the grid "
                      f"{grid:g}",
        )
    centre = median if n else midpoint
    s_star = _median_smooth_sensitivity_sorted(x, beta, lower, upper)
    scale = s_star / alpha
    eta = _cauchy(rng.random())
    noisy = centre + scale * eta
    inside = lower < noisy < upper
    if inside or out_of_range == "keep":
        value = noisy
    elif out_of_range == "midpoint":
        value = midpoint
    else:
        value = float(np.clip(noisy, lower, upper))
    return SmoothSensitivityMedian(
        value=float(value), median=median, smooth_sensitivity=s_star, noise_scale=scale,
        alpha=alpha, beta=beta, epsilon=epsilon, epsilon_spent=epsilon_spent,
        fell_back=not inside and out_of_range != "keep", variant=variant, n=int(n),
        guarantee=guarantee,
    )


def _cauchy(u: float) -> float:
    """The standard Cauchy variate ``tan(pi (u - 1/2))`` of one uniform draw ``u``."""
    return float(np.tan(np.pi * (u - 0.5)))


def _noisy_medians_of_runs(
    xs: np.ndarray, starts: np.ndarray, stops: np.ndarray, lowers, uppers, epsilon: float,
    variant: str, rng: np.random.Generator,
) -> list[float]:
    """The values of ``smooth_sensitivity_median(xs[a:b], epsilon, lo, hi, variant=variant,
    out_of_range="midpoint")`` for every run ``(a, b, lo, hi)``, in order, from the same rng.

    For s-RecursiveMedians, one level at a time: ``xs`` is sorted and validated, every run lies
    in its ``[lo, hi]``, ``epsilon`` has been checked. The smooth sensitivities of all runs come
    from one batched computation; the uniforms are one ``rng.random(count)`` over the non-empty
    runs in order, which is the same stream as one ``rng.random()`` per call (an empty run
    draws its uniform too and releases ``midpoint + ((hi - lo)/alpha) eta``, as a single call
    does: never the bare midpoint).
    """
    alpha_frac, beta_frac = SMOOTH_MEDIAN_VARIANTS[variant]
    alpha, beta = alpha_frac * epsilon, beta_frac * epsilon
    starts = np.asarray(starts, dtype=np.int64)
    stops = np.asarray(stops, dtype=np.int64)
    lowers = np.asarray(lowers, dtype=float)
    uppers = np.asarray(uppers, dtype=float)
    flat = np.flatnonzero(~(lowers < uppers))
    if flat.size:  # a zero-width run raises, as a single call would
        _check_bounds(float(lowers[flat[0]]), float(uppers[flat[0]]))
    busy = np.flatnonzero(stops > starts)
    s_star = _median_smooth_sensitivities(xs, starts[busy], stops[busy], beta, lowers[busy],
                                          uppers[busy]) if busy.size else np.empty(0)
    u = rng.random(starts.size)
    out = [0.5 * (float(lo) + float(hi)) for lo, hi in zip(lowers, uppers, strict=True)]
    sens = uppers - lowers  # an empty run: the global sensitivity (as a single call)
    sens[busy] = s_star
    for p in range(starts.size):
        lower, upper = float(lowers[p]), float(uppers[p])
        n = int(stops[p] - starts[p])
        centre = float(xs[starts[p] + (n + 1) // 2 - 1]) if n else out[p]
        noisy = centre + (float(sens[p]) / alpha) * _cauchy(float(u[p]))
        if lower < noisy < upper:
            out[p] = noisy
    return out


# The floating-point-safe median (what smooth_sensitivity_median and s-RecursiveMedians run
# inside floating_point_safe(); the argument is in smooth_sensitivity_median's Notes).

#: Released floating-point-safe medians lie on ``lower + k g``, ``g`` the largest power of two
#: ``<= (upper - lower) / 2**MEDIAN_GRID_BITS`` (:func:`median_grid`).
MEDIAN_GRID_BITS = 16
#: The most, in log-probability, by which the floating-point-safe median's implementation can
#: exceed the ideal mechanism (boundary errors of the grid cells, the rounding of the centre
#: and of ``S*``); paid out of ``alpha`` (smooth_sensitivity_median's Notes).
MEDIAN_SLACK = 2.0**-24
#: The smooth sensitivity used inside the context is at least ``(upper - lower) /
#: 2**MEDIAN_FLOOR_BITS`` (public), so that the noise never vanishes in floating point.
MEDIAN_FLOOR_BITS = 24

# 1, 2, 4, ..., 2**63 as uint64: searchsorted(_POW2_64, w, "right") is the bit length of w.
_POW2_64 = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))


def median_grid(lower: float, upper: float) -> float:
    """The grid of a floating-point-safe median on the public domain ``[lower, upper]``: the
    largest power of two ``<= (upper - lower) / 2**MEDIAN_GRID_BITS``.

    Examples
    --------
    >>> import math
    >>> from dpwidgets.engine.mechanisms import median_grid
    >>> math.log2(median_grid(0.0, 1.0))  # a power of two
    -16.0
    """
    lower, upper = _check_bounds(lower, upper)
    return math.ldexp(1.0, math.frexp(upper - lower)[1] - 1 - MEDIAN_GRID_BITS)


def _safe_alpha(alpha: float) -> float:
    """The alpha a floating-point-safe median uses for a nominal ``alpha``: shrunk by a
    relative 2**-20 (the centre's rounding) and by :data:`MEDIAN_SLACK`; checked before any
    draw."""
    used = alpha * (1.0 - 2.0**-20) - MEDIAN_SLACK
    if not used >= MEDIAN_SLACK:
        raise ValueError(
            f"epsilon: a floating-point-safe median needs alpha above {2 * MEDIAN_SLACK:.3g} "
            f"(its budget share), got alpha = {alpha:.3g}; raise epsilon or lower the depth"
        )
    return used


def _cauchy_draws(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` standard Cauchy variates with relative precision everywhere, both tails included.

    ``|eta| = tan(pi V / 2)`` (``|eta| <= 1``) or ``1 / tan(pi V / 2)`` (``|eta| >= 1``), each
    with probability 1/2, a fair sign, and ``V`` uniform on ``(0, 1/2)`` drawn as a double with
    full relative precision: its binary exponent from the leading zeros of uniform 64-bit words
    (``P(Z = z) = 2**-(z+1)``), its 52 mantissa bits uniform. A draw of ``V`` is thus exact to
    ``2**-52`` of its own size however small, so every interval of ``eta`` is hit with a
    probability within a relative ``2**-49`` or so of its ideal measure at its ends (``tan``
    and the divisions err by a few ulps, and the map ``V -> |eta|`` has elasticity at most 1).
    ``rng.random()`` in ``tan(pi (U - 1/2))`` would instead round ``U`` to ``2**-53`` in
    absolute terms, which leaves the far tails coarse and data-dependent cells unreachable.
    """
    zeros = np.zeros(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:  # a word of 64 zero bits (probability 2**-64) continues with the next
        words = rng.integers(0, 2**64, size=todo.size, dtype=np.uint64, endpoint=False)
        zeros[todo] += 64 - np.searchsorted(_POW2_64, words, side="right")
        todo = todo[words == 0]
    bits = rng.integers(0, 2**54, size=n, dtype=np.int64)  # mantissa, far branch, sign
    v = np.ldexp(1.0 + (bits & (2**52 - 1)) * 2.0**-52, -(zeros + 2))
    t = np.tan((0.5 * np.pi) * v)
    magnitude = np.where((bits >> 52) & 1 == 1, 1.0 / t, t)
    return np.where((bits >> 53) & 1 == 1, -magnitude, magnitude)


def _grid_medians_of_runs(
    xs: np.ndarray, starts: np.ndarray, stops: np.ndarray, lowers: np.ndarray,
    uppers: np.ndarray, k_lo: np.ndarray, k_hi: np.ndarray, origin: float, grid: float,
    floor: float, epsilon: float, variant: str, rng: np.random.Generator,
    sens: np.ndarray | None = None,
) -> np.ndarray:
    """The floating-point-safe form of :func:`_noisy_medians_of_runs`: the grid index ``k`` of
    every run's released median (``origin + k grid``), as a float array of whole numbers.

    Run p holds ``xs[starts[p]:stops[p]]`` inside ``[lowers[p], uppers[p]] = origin + [k_lo[p],
    k_hi[p]] grid`` (``k_hi`` may be fractional for the domain's own upper end). The noisy
    median ``rint(c + (S / alpha') eta / grid)``, with ``c = (median - origin) / grid`` (the
    midpoint's index for an empty run), ``S = max(S*, floor)`` (``hi - lo`` for an empty run)
    and ``alpha'`` from :func:`_safe_alpha`, is released when it lies strictly between
    ``k_lo`` and ``k_hi``, else ``floor((k_lo + k_hi) / 2)`` (the midpoint, on the grid).
    ``sens``: the runs' ``S`` if the caller has it already (it is computed here otherwise).
    """
    alpha_frac, beta_frac = SMOOTH_MEDIAN_VARIANTS[variant]
    alpha, beta = _safe_alpha(alpha_frac * epsilon), beta_frac * epsilon
    n = stops - starts
    busy = np.flatnonzero(n > 0)
    if sens is None:
        sens = uppers - lowers  # an empty run: the global sensitivity
        if busy.size:
            sens[busy] = _median_smooth_sensitivities(xs, starts[busy], stops[busy], beta,
                                                      lowers[busy], uppers[busy])
        sens = np.maximum(sens, floor)
    centre = 0.5 * (k_lo + k_hi)
    centre[busy] = (xs[starts[busy] + (n[busy] + 1) // 2 - 1] - origin) / grid
    eta = _cauchy_draws(n.size, rng)
    with np.errstate(over="ignore", invalid="ignore"):
        k = np.rint(centre + (sens / (alpha * grid)) * eta)
        inside = (k > k_lo) & (k < k_hi)
    return np.where(inside, k, np.floor(0.5 * (k_lo + k_hi)))
