"""Basic mechanisms: the one Laplace sampler of the package and the exponential mechanism.

Every mechanism in ``dpwidgets`` that adds Laplace noise draws it through :func:`laplace`,
so there is exactly one place where Laplace noise is generated.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_epsilon, check_finite_array, check_positive_int, check_rng

__all__ = ["laplace", "laplace_mechanism", "exponential_mechanism"]


def laplace(scale, size=None, *, rng: np.random.Generator) -> np.ndarray | float:
    """Draw Laplace(0, ``scale``) noise, vectorised.

    Parameters
    ----------
    scale : float or array_like
        The scale b of the density ``exp(-|x|/b) / (2b)``; ``np.inf`` is not allowed.
        An array broadcasts against ``size``. A scale of 0 returns exact zeros (used by the
        broken SVT variant of Stoddard et al., which adds no query noise).
    size : int or tuple of ints, optional
        Output shape, as for :meth:`numpy.random.Generator.laplace`.
    rng : numpy.random.Generator
        The source of randomness; required, so every caller states where its noise comes from.
    """
    scale = np.asarray(scale, dtype=float)
    if np.any(~np.isfinite(scale)) or np.any(scale < 0):
        raise ValueError(f"scale must be finite and >= 0, got {scale!r}")
    return rng.laplace(0.0, scale, size)


def laplace_mechanism(
    values,
    epsilon: float,
    sensitivity: float = 1.0,
    *,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Release ``values`` + Lap(sensitivity/epsilon) noise per entry.

    Guarantee: ``epsilon``-DP when ``sensitivity`` bounds the L1 change of the whole vector
    ``values`` between neighbouring datasets (for a histogram: 1 under add/remove-one, 2 under
    replace-one).

    References: Dwork, McSherry, Nissim, Smith 2006; 001 §2.
    """
    values = check_finite_array(values, "values", ndim=None)
    epsilon = check_epsilon(epsilon)
    sensitivity = check_epsilon(sensitivity, "sensitivity")
    rng = check_rng(rng)
    return values + laplace(sensitivity / epsilon, values.shape, rng=rng)


def exponential_mechanism(
    qualities,
    epsilon: float,
    sensitivity: float = 1.0,
    *,
    k: int = 1,
    monotonic: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Select ``k`` distinct indices by the exponential mechanism, ``epsilon/k`` per round.

    Each round picks among the not-yet-selected candidates with probability proportional to
    ``exp(eps_r * q / (2 * sensitivity))`` (``exp(eps_r * q / sensitivity)`` when the quality is
    monotonic), where ``eps_r = epsilon / k``; this is 001 §5's "EM run c times without
    replacement, each round with epsilon/c". Rather than k sequential draws, the rounds are
    drawn at once with the Gumbel-top-k trick: adding independent Gumbel noise to the
    log-weights and taking the k largest gives exactly the distribution (order included) of
    sequential sampling without replacement (Kool, van Hoof, Welling 2019, Thm. 1).

    Guarantee: ``epsilon``-DP by sequential composition of k ``epsilon/k``-DP rounds, under
    whatever neighbour relation ``sensitivity`` is stated for.

    Parameters
    ----------
    qualities : array_like, 1-D
        The quality (utility) score of every candidate.
    epsilon : float
        Total budget of the k rounds.
    sensitivity : float
        Largest change of any quality between neighbours (Delta).
    k : int
        Number of distinct candidates to select (1 <= k <= len(qualities)).
    monotonic : bool
        Whether all qualities move in the same direction between neighbours (001 §4.3).

    Returns
    -------
    numpy.ndarray of int
        The selected indices, in selection order.

    References
    ----------
    McSherry and Talwar 2007; 001 §5.
    """
    qualities = check_finite_array(qualities, "qualities")
    epsilon = check_epsilon(epsilon)
    sensitivity = check_epsilon(sensitivity, "sensitivity")
    k = check_positive_int(k, "k")
    if k > qualities.size:
        raise ValueError(f"k must be at most the number of candidates ({qualities.size}), got {k}")
    rng = check_rng(rng)
    factor = 1.0 if monotonic else 2.0
    log_weights = (epsilon / k) * qualities / (factor * sensitivity)
    keys = log_weights + rng.gumbel(size=qualities.size)
    if k == qualities.size:
        return np.argsort(-keys, kind="stable")
    top = np.argpartition(-keys, k - 1)[:k]
    return top[np.argsort(-keys[top], kind="stable")]


# ---------------------------------------------------------------------------------------------
# Smooth-sensitivity median (000 §4.3.2, Alg. 12 and eq. 4.6; 002 §3.2.1, Alg. 1 and eq. 3)
# ---------------------------------------------------------------------------------------------

# This section is appended to the module (the code above is left as it was), hence the import
# here rather than at the top.
from dataclasses import dataclass  # noqa: E402

#: The two calibrations of the Cauchy-noise median that :func:`smooth_sensitivity_median`
#: offers, as (alpha, beta) fractions of epsilon: the noise is ``(S*_beta / alpha) * eta``.
SMOOTH_MEDIAN_VARIANTS: dict[str, tuple[float, float]] = {
    # The usual Nissim-Raskhodnikova-Smith 2007 calibration of Cauchy-like noise
    # h(z) ∝ 1/(1+|z|^g): alpha = beta = eps/(2(g+1)), i.e. eps/6 for g = 2. The direct
    # argument in smooth_sensitivity_median's Notes shows it is (eps/3)-DP, so eps-DP holds.
    "nrs": (1.0 / 6.0, 1.0 / 6.0),
    # 000 Alg. 12 / 002 Alg. 1 as printed: m + (8 S*_{f,eps}(P) / eps) * eta, where eq. 4.6
    # smooths with e^{-k eps}, i.e. alpha = eps/8 and beta = eps.
    "thesis": (1.0 / 8.0, 1.0),
}

__all__ += [
    "SMOOTH_MEDIAN_VARIANTS",
    "SmoothSensitivityMedian",
    "median_smooth_sensitivity",
    "smooth_sensitivity_median",
]


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
        outside = int(np.count_nonzero((values < lower) | (values > upper)))
        raise ValueError(
            f"values must lie in the public domain [lower, upper] = [{lower}, {upper}]; "
            f"{outside} value(s) fall outside (clip them first, or widen the bounds)"
        )
    return values


def _median_smooth_sensitivity_sorted(x: np.ndarray, beta: float, lower: float, upper: float) -> float:
    """Eq. 4.6 on an already sorted, validated array (see :func:`median_smooth_sensitivity`)."""
    n = x.size
    if n == 0:
        return upper - lower
    # y[0] = lower and y[n+1] = upper stand for every out-of-range index (NRS 2007 §3.1).
    y = np.concatenate(([lower], x, [upper]))
    m = (n + 1) // 2  # 1-based position of the (lower) median in y
    # Eq. 4.6 rewritten over pairs: S* = max over i <= m <= j of (y_j - y_i) e^{-beta (j-i-1)},
    # with k = j-i-1 and t = j-m. For fixed i the best j (largest on ties) is non-decreasing in i
    # (if j' > j beats j for i, it beats it for every larger y_i), so the maximum is found by
    # divide and conquer over i, one vectorised pass per level: O(n log n) work in total.
    ilo = np.array([0])
    ihi = np.array([m])
    jlo = np.array([m])
    jhi = np.array([n + 1])
    best = -np.inf
    while ilo.size:
        mid = (ilo + ihi) // 2
        lengths = jhi - jlo + 1
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        seg = np.repeat(np.arange(ilo.size), lengths)
        j = jlo[seg] + (np.arange(seg.size) - starts[seg])
        i = mid[seg]
        # In logs: e^{-beta k} underflows for k ~ 10^4, and zeros would break the tie rule.
        with np.errstate(divide="ignore"):
            gains = np.log(y[j] - y[i]) - beta * (j - i - 1)
        seg_max = np.maximum.reduceat(gains, starts)
        best = max(best, float(seg_max.max()))
        j_star = np.maximum.reduceat(np.where(gains == seg_max[seg], j, -1), starts)
        left = ilo <= mid - 1
        right = mid + 1 <= ihi
        ilo, ihi, jlo, jhi = (
            np.concatenate((ilo[left], mid[right] + 1)),
            np.concatenate((mid[left] - 1, ihi[right])),
            np.concatenate((jlo[left], j_star[right])),
            np.concatenate((j_star[left], jhi[right])),
        )
    return float(np.exp(best))


def median_smooth_sensitivity(values, beta: float, lower: float, upper: float) -> float:
    """The beta-smooth sensitivity S*_beta of the median on the public domain [lower, upper].

    Implements 000 eq. 4.6 (002 eq. 3; Nissim, Raskhodnikova, Smith 2007, Prop. 3.4)::

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
    000 §4.3.2, eq. 4.6; 002 §3.2.1, eq. 3; Nissim, Raskhodnikova, Smith, "Smooth sensitivity and
    sampling in private data analysis", STOC 2007, §3.1.
    """
    beta = check_epsilon(beta, "beta")
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
    ``U ~ Uniform(0, 1)`` — density ∝ 1/(1 + eta^2) — as in FINDMEDIANS of 000 Alg. 12
    (s-RecursiveMedians, used by PriROC and PriBRP). ``S*_beta`` is eq. 4.6, computed by
    :func:`median_smooth_sensitivity`. The median is the order statistic ``x_(ceil(n/2))`` (the
    lower middle value when n is even), the statistic eq. 4.6 is the smooth sensitivity of.

    Parameters
    ----------
    values : array_like, 1-D
        The confidential values, all inside the public domain ``[lower, upper]``. May be empty.
    epsilon : float
        Budget of this one median. Inside s-RecursiveMedians each median gets gamma/2 with
        gamma = epsilon_1 / s (000 Alg. 12; SPEC §4 errata).
    lower, upper : float
        Public bounds of one value (``lower < upper``); they enter ``S*`` for medians near the
        ends of the data and define the fallback.
    rng : numpy.random.Generator, optional
        Source of randomness (one uniform draw).
    variant : {"nrs", "thesis"}
        Calibration (alpha, beta) as fractions of epsilon, see ``SMOOTH_MEDIAN_VARIANTS``.
        ``"nrs"`` (default): alpha = beta = epsilon/6, the usual NRS 2007 constants for
        Cauchy-like noise, epsilon-DP with room to spare (Notes). ``"thesis"``: 000 Alg. 12 /
        002 Alg. 1 as printed, noise ``8 S*_eps / eps`` with ``e^{-k eps}`` smoothing (alpha =
        epsilon/8, beta = epsilon); NRS's lemma does not cover it, and the direct argument in
        the Notes gives (9/8)·epsilon, which is what ``epsilon_spent`` reports.
    out_of_range : {"midpoint", "clip", "keep"}
        What to release when the noisy median is not strictly inside (lower, upper):
        the midpoint (000 Alg. 12: "if m~ <= l or m~ >= r then m~ <- (l+r)/2"), the nearest
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
    Jacobian and the density change partly cancel), so the release is (alpha + beta)-DP: for
    the NRS constants epsilon/3 <= epsilon, for the thesis constants 9·epsilon/8.

    An empty input has no neighbours under replace-one: the midpoint is released with no
    noise (that is also Alg. 12's fallback). All-equal values are handled by eq. 4.6 as is:
    ``S*`` is then the smoothed distance from the common value to the domain bounds.

    Inside s-RecursiveMedians a replaced record can leave one partition and join another, so
    each partition sees an add/remove change, not a replace-one change; the thesis accounts
    for this by charging two medians per level (000 Thm 11) — the caller's concern.

    References
    ----------
    000 §4.3.2, Alg. 12, eq. 4.6; 002 §3.2.1, Alg. 1, eq. 3; Nissim, Raskhodnikova, Smith 2007.
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
    epsilon_spent = epsilon if variant == "nrs" else (alpha + beta)
    guarantee = (
        f"{epsilon_spent:g}-DP (NRS 2007, Cauchy noise, alpha = beta = epsilon/6)"
        if variant == "nrs"
        else f"{epsilon_spent:g}-DP (= 9/8 x epsilon; 000 Alg. 12 claims epsilon)"
    )
    midpoint = 0.5 * (lower + upper)
    n = values.size
    if n == 0:
        return SmoothSensitivityMedian(
            value=midpoint, median=float("nan"), smooth_sensitivity=upper - lower,
            noise_scale=0.0, alpha=alpha, beta=beta, epsilon=epsilon,
            epsilon_spent=epsilon_spent, fell_back=True, variant=variant, n=0,
            guarantee=guarantee,
        )

    x = np.sort(values)
    median = float(x[(n + 1) // 2 - 1])
    s_star = _median_smooth_sensitivity_sorted(x, beta, lower, upper)
    scale = s_star / alpha
    eta = float(np.tan(np.pi * (rng.random() - 0.5)))
    noisy = median + scale * eta
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
