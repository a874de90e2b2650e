"""Basic mechanisms: the noise samplers of the package and the exponential mechanism.

Every mechanism in ``dpwidgets`` that adds Laplace noise draws it from this module, so there
is exactly one place where noise is generated. :func:`laplace` is the fast continuous sampler
(teaching mode); :func:`discrete_laplace`, :func:`count_laplace` and :func:`grid_laplace`
(section "Floating-point-safe noise" below, :data:`NOISE_SAMPLERS`) release integers or
multiples of a power of two whose set of possible values does not depend on the data, as
analyst-mode releases need (Mironov 2012).

Floating-point-safe mode
------------------------
The door (:meth:`dpwidgets.session.Session.release` in analyst mode) runs every mechanism
inside :func:`floating_point_safe`. Inside it:

* :func:`laplace` draws grid noise ``gamma * discrete_laplace(scale / gamma)``, ``gamma`` the
  largest power of two <= ``min(1, scale / 2**GRID_BITS)`` (Canonne, Kamath & Steinke 2020).
  Integer-valued queries (counts, histograms, stream counts, partition sizes, sums of counts)
  plus this noise lie on the grid ``gamma Z`` whatever the data, and a shift of ``Delta`` (a
  multiple of gamma) costs at most ``Delta / scale``: the nominal epsilon. Everything computed
  from such noisy counts (least squares in HB/DAWA, smoothing, isotonic regression, ratios)
  is post-processing, hence safe too.
* Real-valued statistics that are *released* go through :func:`laplace_reals` (rounded to a
  power-of-two grid, then :func:`grid_laplace`, same epsilon): SVT's ``epsilon3`` numeric
  answers (``svt.py``), DPCopula's noisy Kendall tau and MLE correlations (``synth.py``),
  PriBRP's noisy sums of predictions and residuals (``diagnostics.py``), EFPA's Fourier
  coefficients (``histograms.py``).
* Selections: :func:`exponential_mechanism` (MWEM's query selection, EFPA's choice of the
  number of coefficients, the top-c ``em`` selection of ``svt.py``) runs
  :func:`_base2_selection`, Ilvento 2020's base-2 mechanism sampled with integer
  arithmetic; its loss, rounding of the qualities and implementation error included, is at
  most the epsilon it is given.
* SVT-style comparisons of noisy scores with a noisy threshold, whose noisy values are never
  released (:mod:`.svt`: every variant, the interactive :class:`~.svt.SparseVector` that
  DSAT's decisions use, SVT-ReTr), compare int64 grid steps of one
  :class:`ComparisonGrid`: scores and thresholds rounded to a power-of-two grid, every noise
  discrete Laplace in steps with the scales widened to pay for the rounding, so each
  comparison is exact and the run spends its nominal epsilon.
* Tests whose noisy statistic may as well be released are released on a grid and then
  tested (post-processing): DAWA's partition costs (``histograms.py``), BD/BA's
  dissimilarities (``dynamic.py``).
* Smooth-sensitivity medians (Cauchy noise: s-RecursiveMedians for PriBRP's bins and PriROC's
  thresholds with ``defaults="text"``) are released on the grid of :func:`median_grid` from a
  Cauchy sampler with relative precision in both tails, their implementation error paid out
  of the budget (:func:`smooth_sensitivity_median`'s Notes).
* Secret sampling coins (personalized DP's Sample mechanism, Li 2017 Def. 5.1.1) come from
  :func:`bernoulli_coins`, whose probability is rounded *down* to a multiple of 2**-53, so the
  amplification argument holds with the probability actually used.

* PeGaSus's Grouper (``streams.py``) computes each deviation exactly (``n1 dev`` in
  integers, the quotient rounded once, capped at ``DEV_MAX``) and compares it with ``theta
  + noise - noise`` whose terms are whole steps of one :class:`ComparisonGrid`, so the
  right-hand side is an exact double; the rounding of the quotient (< a quarter step) is
  inside the grid's ``K``, and the widened scales pay for it.

Teaching runs and previews stay continuous and fast (outside the context), and say so in
their guarantees.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction
from functools import lru_cache
from numbers import Integral

import numpy as np

from ._results import eps_text
from ._validation import (
    check_bool,
    check_epsilon,
    check_finite_array,
    check_positive,
    check_positive_int,
    check_rng,
)

__all__ = [
    "MAX_DRAWS",
    "laplace",
    "laplace_mechanism",
    "exponential_mechanism",
    "floating_point_safe",
    "is_floating_point_safe",
    "laplace_reals",
]

#: The most Laplace draws one :func:`laplace` call makes (800 MB of float64): a larger
#: ``size`` is refused before anything is allocated.
MAX_DRAWS = 10**8


def laplace(scale, size=None, *, rng: np.random.Generator) -> np.ndarray | float:
    """Draw Laplace(0, ``scale``) noise, vectorised.

    Parameters
    ----------
    scale : float or array_like
        The scale b of the density ``exp(-|x|/b) / (2b)``; ``np.inf`` is not allowed.
        An array broadcasts against ``size``. A scale of 0 returns exact zeros (used by the
        broken SVT variant of Stoddard et al., which adds no query noise).
    size : int or tuple of ints, optional
        Output shape, as for :meth:`numpy.random.Generator.laplace`; at most
        :data:`MAX_DRAWS` draws.
    rng : numpy.random.Generator
        The source of randomness; required, so every caller states where its noise comes from.
    """
    _check_generator(rng)
    try:
        scale = np.asarray(scale, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("scale must be a finite number >= 0 (or an array of them)") from None
    if np.any(~np.isfinite(scale)) or np.any(scale < 0):
        raise ValueError("scale must be finite and >= 0")
    shape = _check_size(size)
    if _FLOATING_POINT_SAFE.get():
        return _grid_noise(scale, size, shape, rng)
    return rng.laplace(0.0, scale, size)


# The switch of floating_point_safe(): a ContextVar, so a release running in one thread (or
# asyncio task) never changes the sampler of a teaching run in another.
_FLOATING_POINT_SAFE: ContextVar[bool] = ContextVar("dpwidgets_floating_point_safe",
                                                     default=False)


@contextmanager
def floating_point_safe() -> Iterator[None]:
    """Make :func:`laplace` (and :func:`laplace_reals`) floating-point safe inside the block.

    Inside, ``laplace(scale, size, rng=rng)`` returns ``gamma * Z`` with ``Z ~
    discrete_laplace(scale / gamma)`` (the scale in grid steps widened by ``2 b0 NOISE_SLACK``
    relative, below 2**-19 for a scale below 2**GRID_BITS, where ``b0 < 2**(GRID_BITS + 1)``,
    see Notes), ``gamma`` the largest power of two <= ``min(1, scale / 2**GRID_BITS)``
    (:data:`GRID_BITS` = 20: at scale 1, gamma = 2**-20); :func:`laplace_reals` rounds real
    values to a grid and calls :func:`grid_laplace`. Outside, both are the continuous sampler,
    bit for bit as before.
    Contexts nest (the innermost exit restores the enclosing state) and are local to the
    thread or task that entered them (a :class:`contextvars.ContextVar`).

    Notes
    -----
    Privacy: for an integer-valued query, ``count + gamma Z`` lies on ``gamma Z`` (gamma <= 1
    is a power of two) whatever the count, so the output set does not depend on the data
    (Mironov 2012); a shift by an integer ``Delta`` is ``Delta / gamma`` grid steps and costs at
    most ``Delta / scale``, the nominal loss: the scale in steps, ``b0 = scale / gamma``, is
    widened to ``b0 / (1 - 2 b0 NOISE_SLACK)``, which absorbs the sampler's slack
    (:data:`NOISE_SLACK`) for every shift of at least one step when ``b0 <= 2**31`` (scales up
    to 2**31, i.e. a count at epsilon >= 5e-10); beyond, the loss is the nominal one plus
    ``NOISE_SLACK`` per draw. Accuracy: the variance is that of Laplace(scale) within 0.1%
    (the grid is at least 2**GRID_BITS steps per scale).

    Limits: the scale in steps is below 2**(GRID_BITS + 1) for scales below 2**GRID_BITS and
    equals the scale above (gamma = 1), so :data:`MAX_DISCRETE_SCALE` (2**48) bounds the scale
    itself, as without the grid. ``count + gamma Z`` is an exact double while ``|count + gamma
    Z| <= 2**53 gamma``: at scale 1 (gamma = 2**-20) up to 2**33 ~ 8.6e9; more than ``2**32
    scale`` at any scale below 2**GRID_BITS, and 2**53 above (gamma = 1). Beyond, IEEE
    addition rounds the exact sum to a coarser power-of-two grid: a function of the exact
    release (post-processing), so still private, only less fine.

    Examples
    --------
    >>> import numpy as np
    >>> with floating_point_safe():
    ...     x = 3 + laplace(2.0, 4, rng=np.random.default_rng(0))
    >>> gamma = 2.0 * 2.0**-GRID_BITS  # the largest power of two <= 2 / 2**GRID_BITS
    >>> bool(np.all(x / gamma == np.round(x / gamma)))
    True

    References
    ----------
    Mironov 2012; Canonne, Kamath & Steinke 2020 (the discrete Laplace sampler).
    """
    token = _FLOATING_POINT_SAFE.set(True)
    try:
        yield
    finally:
        _FLOATING_POINT_SAFE.reset(token)


def is_floating_point_safe() -> bool:
    """Whether the calling context is inside :func:`floating_point_safe`."""
    return _FLOATING_POINT_SAFE.get()


def _noise_grid(scale: float) -> float:
    """The grid gamma of :func:`laplace` in floating-point-safe mode for a scale > 0: the
    largest power of two <= min(1, scale / 2**GRID_BITS) (never below the smallest double)."""
    exponent = math.frexp(scale)[1] - 1 - GRID_BITS  # scale = m 2**e, 0.5 <= m < 1
    return math.ldexp(1.0, max(min(exponent, 0), -1074))


def _grid_steps_scale(b0: float) -> float:
    """The discrete scale, in grid steps, standing for a nominal ``b0 = scale / gamma``: widened
    so that a shift of k >= 1 steps costs k / b + NOISE_SLACK <= k / b0 (floating_point_safe's
    Notes; the factor 2 covers the rounding of this computation)."""
    if not b0 <= MAX_DISCRETE_SCALE:
        raise ValueError(f"scale must be at most {MAX_DISCRETE_SCALE:g} for the floating-point-"
                         f"safe sampler, got {b0:g}")
    if b0 * NOISE_SLACK <= 2.0**-10:
        return min(b0 / (1.0 - 2.0 * b0 * NOISE_SLACK), MAX_DISCRETE_SCALE)
    return b0


def _grid_noise(scale: np.ndarray, size, shape: tuple[int, ...] | None,
                rng: np.random.Generator) -> np.ndarray | float:
    """:func:`laplace` inside :func:`floating_point_safe` (arguments already checked): one
    batch of discrete draws per distinct scale (an array of scales has few distinct ones)."""
    if shape is None:
        shape = scale.shape
    try:
        scales = scale if scale.ndim == 0 else np.broadcast_to(scale, shape)
    except ValueError:
        raise ValueError(f"scale of shape {scale.shape} does not broadcast to size {size!r}") \
            from None
    out = np.zeros(shape)
    distinct = [float(scale)] if scale.ndim == 0 else np.unique(scale).tolist()
    for s in distinct:
        if s == 0.0:  # exact zeros, as the continuous sampler gives
            continue
        gamma = _noise_grid(s)
        b = _grid_steps_scale(s / gamma)
        if scale.ndim == 0:
            out[...] = _discrete_laplace_draws(b, out.size, rng).reshape(shape) * gamma
        else:
            where = scales == s
            out[where] = _discrete_laplace_draws(b, int(np.count_nonzero(where)), rng) * gamma
    if size is None and scale.ndim == 0:
        return float(out)
    return out


def laplace_reals(values, sensitivity: float, epsilon: float, *, rng: np.random.Generator,
                  scale=None, unit=None, max_changed: int = 1) -> np.ndarray | float:
    """Release real ``values`` + Laplace noise; floating-point safe inside :func:`floating_point_safe`.

    The one door for noise on a *real-valued* statistic that is released (an integer-valued
    one only needs :func:`laplace`). Neighbours change the vector ``values / unit`` by at most
    ``sensitivity`` in L1, in at most ``max_changed`` entries.

    Parameters
    ----------
    values : float or array_like
        The exact statistic (finite).
    sensitivity : float
        L1 sensitivity of ``values / unit`` (> 0).
    epsilon : float
        The budget of this release.
    rng : numpy.random.Generator
        Required.
    scale : float or array_like, optional
        The continuous scale (outside the context); default ``unit * sensitivity / epsilon``.
        Callers pass the expression they always used, so seeded teaching runs stay bit for bit.
    unit : float or array_like, optional
        Public per-entry units ``>= 0`` (default 1): entry j's noise scale is ``unit[j] *
        sensitivity / epsilon``. An entry of unit 0 must be data-independent: it is kept
        without noise, as the continuous sampler's zero scale keeps it.
    max_changed : int
        How many entries can change between neighbours.

    Returns
    -------
    float or numpy.ndarray
        Outside the context ``values + laplace(scale, shape, rng=rng)``. Inside, ``unit *
        grid_laplace(values / unit, sensitivity, epsilon, grid=g, max_changed=max_changed)``
        with ``g`` the largest power of two <= ``sensitivity / max_changed / 2**GRID_BITS``
        (so the rounding widens the noise by at most 2**-GRID_BITS relative): the released
        numbers are public multiples (``unit``) of grid values, whose set does not depend on
        the data. Limits of that grid (:data:`GRID_BITS`): ``values / unit`` beyond ``+-2**52
        g``, a bound above ``2**31 sensitivity / max_changed``, are clamped; where the scale in
        grid units would exceed :data:`MAX_DISCRETE_SCALE` / 4 (``max_changed / epsilon`` above
        about 2**25, e.g. 34 entries at epsilon 1e-6), the grid is coarsened by as many bits as
        needed (it depends on public inputs only).

    Notes
    -----
    Privacy: epsilon-DP, exactly, inside the context (:func:`grid_laplace`; multiplying by
    the public ``unit`` is post-processing); outside, the textbook Laplace mechanism on
    doubles (Mironov 2012's caveat).
    """
    # Validated in both modes, before anything is drawn (the continuous path then adds the
    # caller's own expression, so seeded teaching runs stay bit for bit).
    _check_generator(rng)
    scalar = np.ndim(values) == 0
    array = check_finite_array(np.atleast_1d(values), "values", ndim=None, allow_empty=True)
    sensitivity = check_positive(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    max_changed = check_positive_int(max_changed, "max_changed")
    u = None
    if unit is not None:
        try:
            u = np.broadcast_to(np.asarray(unit, dtype=float), array.shape)
        except (TypeError, ValueError):
            raise ValueError(f"unit must be finite numbers >= 0 broadcasting to the shape "
                             f"{array.shape} of values") from None
        if np.any(~np.isfinite(u)) or np.any(u < 0):
            raise ValueError("unit must be finite and >= 0")
    if not _FLOATING_POINT_SAFE.get():
        if scale is None:
            scale = (1.0 if u is None else u) * sensitivity / epsilon
        if scalar:
            return values + float(laplace(scale, rng=rng))
        return values + laplace(scale, np.shape(values), rng=rng)
    values = array
    # The grid depends on public inputs only. At a tiny epsilon with many changed entries the
    # noise in grid steps would outgrow MAX_DISCRETE_SCALE: coarsen the grid just enough
    # (a coarser grid only rounds more; the release stays exactly epsilon-DP).
    bits = GRID_BITS
    while bits > 0 and max_changed * (2.0**bits + 1.0) / epsilon > MAX_DISCRETE_SCALE / 4:
        bits -= 1
    grid = math.ldexp(1.0, math.frexp(sensitivity / max_changed)[1] - 1 - bits)
    if u is None:
        out = grid_laplace(values, sensitivity, epsilon, rng=rng, grid=grid,
                           max_changed=max_changed)[0]
    else:
        live = u > 0
        noisy = grid_laplace(values[live] / u[live], sensitivity, epsilon, rng=rng, grid=grid,
                             max_changed=max_changed)[0]
        out = values.astype(float)  # a zero unit: no noise (its value is data-independent)
        out[live] = u[live] * noisy
    return float(out[0]) if scalar else out


def _check_generator(rng) -> np.random.Generator:
    """``rng`` if it is a Generator (required: no fresh unseeded fallback), else TypeError."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_size(size) -> tuple[int, ...] | None:
    """``size`` as a shape tuple (None stays None), or ValueError; at most MAX_DRAWS draws."""
    if size is None:
        return None
    shape = (size,) if isinstance(size, Integral | np.integer) and not isinstance(size, bool) \
        else size
    if not isinstance(shape, tuple) or not all(
        isinstance(d, Integral | np.integer) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ValueError(f"size must be None, an integer >= 0 or a tuple of them, got {size!r}")
    if math.prod(int(d) for d in shape) > MAX_DRAWS:
        raise ValueError(f"size must hold at most MAX_DRAWS = {MAX_DRAWS} draws, got {size!r}")
    return tuple(int(d) for d in shape)


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

    References: Dwork, McSherry, Nissim, Smith 2006; Lyu, Su & Li 2017 §2.
    """
    values = check_finite_array(values, "values", ndim=None)
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
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
    exact: bool | None = None,
) -> np.ndarray:
    """Select ``k`` distinct indices by the exponential mechanism, ``epsilon/k`` per round.

    Each round picks among the not-yet-selected candidates with probability proportional to
    ``exp(eps_r * q / (2 * sensitivity))`` (``exp(eps_r * q / sensitivity)`` when the quality is
    monotonic), where ``eps_r = epsilon / k``; this is Lyu, Su & Li 2017 §5's "EM run c times
    without replacement, each round with epsilon/c".

    Two samplers, chosen by the context (as :func:`laplace` is):

    * Outside :func:`floating_point_safe` (teaching runs, previews): the Gumbel-top-k trick,
      fast and vectorised. Adding independent Gumbel noise to the log-weights and taking the
      k largest gives the distribution (order included) of sequential sampling without
      replacement (Kool, van Hoof, Welling 2019, Thm. 1) -- in real arithmetic. NOT floating-
      point safe: numpy's Gumbel of a double lies in about [-3.6, 36.7], so a candidate whose
      log-weight is ~40 below the best is never selected, while on a neighbour whose gap is
      a little smaller it can be: the privacy loss of such an output is unbounded (Ilvento
      2020's attacks on floating-point exponential mechanisms).
    * Inside :func:`floating_point_safe` (every analyst release): the base-2 exponential
      mechanism sampled with integer arithmetic (:func:`_base2_selection`): the
      qualities are rounded to a power-of-two grid, every candidate keeps a positive
      probability, and the privacy loss of each round is proved to be at most ``epsilon / k``
      including the rounding (Notes there).

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
        Whether all qualities move in the same direction between neighbours (Lyu, Su & Li 2017 §4.3).
    exact : bool, optional
        ``True``: the base-2 sampler whatever the context (:func:`_base2_selection`, whose
        Notes hold the proof); ``False``: the Gumbel sampler; ``None`` (default): base-2
        inside :func:`floating_point_safe`, Gumbel outside.

    Returns
    -------
    numpy.ndarray of int
        The selected indices, in selection order.

    References
    ----------
    McSherry and Talwar 2007; Lyu, Su & Li 2017 §5; Ilvento 2020 (the base-2 mechanism).
    """
    qualities, epsilon, sensitivity, k, monotonic = _check_selection(
        qualities, epsilon, sensitivity, k, monotonic)
    rng = check_rng(rng)
    if (_FLOATING_POINT_SAFE.get() if exact is None else check_bool(exact, "exact")):
        return _base2_selection(qualities, epsilon, sensitivity, k, monotonic, rng)
    # Teaching sampler (Gumbel-top-k on doubles): fast, not floating-point safe (above).
    factor = 1.0 if monotonic else 2.0
    log_weights = (epsilon / k) * qualities / (factor * sensitivity)
    keys = log_weights + rng.gumbel(size=qualities.size)
    if k == qualities.size:
        return np.argsort(-keys, kind="stable")
    top = np.argpartition(-keys, k - 1)[:k]
    return top[np.argsort(-keys[top], kind="stable")]


# ---------------------------------------------------------------------------------------------
# Smooth-sensitivity median (Chen 2018 §4.3.2, Alg. 12 and eq. 4.6; Chen et al. 2016 §3.2.1, Alg. 1 and eq. 3)
# ---------------------------------------------------------------------------------------------

# This section is appended to the module (the code above is left as it was), hence the import
# here rather than at the top.
from dataclasses import dataclass  # noqa: E402

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

__all__ += ["MEDIAN_GRID_BITS", "MEDIAN_SLACK", "bernoulli_coins", "median_grid"]

# 1, 2, 4, ..., 2**63 as uint64: searchsorted(_POW2_64, w, "right") is the bit length of w.
_POW2_64 = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))


def median_grid(lower: float, upper: float) -> float:
    """The grid of a floating-point-safe median on the public domain ``[lower, upper]``: the
    largest power of two ``<= (upper - lower) / 2**MEDIAN_GRID_BITS``."""
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


def bernoulli_coins(probabilities, rng: np.random.Generator) -> np.ndarray:
    """Independent coins, True with the given probabilities (public, in [0, 1]).

    ``rng.random() < p`` is True with probability ``ceil(p 2**53) / 2**53``, a hair *above* p
    (numpy's uniforms are multiples of 2**-53). Inside :func:`floating_point_safe` the coins
    compare the same uniforms with ``floor(p 2**53) / 2**53`` instead, so each coin's
    probability is exactly that, never above p: privacy amplification by sampling, which
    charges ``ln(1 + p (e^eps - 1))``, then holds with the probability actually used. Outside
    the context the textbook comparison is kept (seeded teaching runs stay bit for bit).
    """
    p = check_finite_array(probabilities, "probabilities", ndim=None, allow_empty=True)
    if p.size and not (p.min() >= 0.0 and p.max() <= 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    _check_generator(rng)
    u = rng.random(p.shape)
    if is_floating_point_safe():
        return u < np.floor(p * 2.0**53) * 2.0**-53
    return u < p


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


# ---------------------------------------------------------------------------------------------
# Floating-point-safe noise (Mironov 2012; Canonne, Kamath & Steinke 2020; Ghosh, Roughgarden &
# Sundararajan 2009)
# ---------------------------------------------------------------------------------------------
#
# Why: ``x + rng.laplace(...)`` is a double whose set of reachable values depends on x (Mironov
# 2012, §3): for a count of 0, most released doubles cannot occur under a count of 1, so the
# output itself says which of the two was true. The samplers below release integers, or
# integers times a power of two, whose reachable set does not depend on the data.
#
# Selections. The Gumbel-top-k exponential mechanism above works on doubles: numpy's Gumbel is
# bounded, so far-below candidates get probability exactly 0 (an unbounded loss between
# neighbours). Inside floating_point_safe() it hands over to the base-2 exponential mechanism
# (Ilvento 2020) at the end of this module: qualities on a power-of-two grid, weights exact
# dyadic numbers, sampling from exact uniform integers, the rounding charged (its Notes).
# Report-noisy-max with discrete_laplace noise was the other route; it was not taken because
# its selection law is not the exponential mechanism's (the families were calibrated with
# the latter) and k rounds of it need k fresh noise vectors (k n draws for top-k).
#
# Not offered: Mironov 2012's snapping mechanism (§5.2, Thm 1: for lambda < B < 2**46 lambda
# it is (1/lambda + 2**-49 B/lambda)-DP at sensitivity 1). Its proof needs (a) a uniform with
# full resolution on (0, 1] — numpy's rng.random() is k / 2**53, so no value lies below
# 2**-53 and the small ones are coarse (one can be built from raw bits: a geometric exponent
# and 52 mantissa bits) — and (b) a correctly rounded natural log, which numpy does not
# promise (np.log is within a few ulps; CRlibm or CORE-MATH would be needed). Without (b) the
# theorem does not apply, and grid_laplace gives a data-independent output set with exact
# accounting anyway.

#: The largest ``scale`` :func:`discrete_laplace` accepts (2**48 ~ 2.8e14): beyond it the
#: integer parts ``U + t*V`` of the sampler would approach the int64 range, and no DP release
#: needs it (a count at epsilon = EPSILON_MIN has scale 1e6).
MAX_DISCRETE_SCALE = float(2**48)

#: The additive privacy-loss slack of :func:`discrete_laplace`: for integer noise Z of scale b
#: and any integers k, k' with |k - k'| <= Delta, ``log P(Z = y - k) / P(Z = y - k') <=
#: Delta / b + NOISE_SLACK`` for every y (derivation: the Notes of :func:`discrete_laplace`).
#: :func:`count_laplace` and :func:`grid_laplace` calibrate ``b`` so that the total is at
#: most epsilon: they charge exactly epsilon.
NOISE_SLACK = 2.0**-41

#: Upward nudge of every acceptance probability before it is compared with a uniform. It covers
#: the rounding of ``u * (-1/b)`` and of ``exp`` up to 2**-45 relative (hundreds of ulps; glibc's
#: exp is within 1 ulp), so the implemented probability is never below the ideal, and keeps the
#: excess below 2**-43 (discrete_laplace's Notes).
_NUDGE = 2.0**-44
#: The smallest positive probability ``rng.random() < p`` can have: its uniforms are k / 2**53.
_MIN_BERNOULLI = 2.0**-53

#: The samplers of this module and what each release costs. ``laplace`` is the teaching
#: sampler; analyst-mode releases use the floating-point-safe three.
NOISE_SAMPLERS: dict[str, str] = {
    "laplace": (
        "continuous Laplace(scale) on doubles via numpy's Generator.laplace: fast, for teaching; "
        "x + noise leaks the low bits of x (Mironov 2012), so its nominal epsilon does not hold "
        "for released doubles"),
    "discrete_laplace": (
        "two-sided geometric P(k) ∝ exp(-|k|/scale) on all of Z (Ghosh, Roughgarden & "
        "Sundararajan 2009), sampled with integer arithmetic after Canonne, Kamath & Steinke "
        "2020 Alg. 2; privacy loss of a shift by Delta <= Delta/scale + NOISE_SLACK"),
    "count_laplace": (
        "counts + discrete_laplace(scale = Delta / (epsilon - slack)): exactly epsilon-DP for "
        "integer counts whose vector changes by at most Delta in L1 (integer Delta)"),
    "grid_laplace": (
        "real values rounded to a power-of-two grid g, plus g * discrete_laplace with scale "
        "(floor(Delta/g) + max_changed) / (epsilon - slack): exactly epsilon-DP, released "
        "values are exact multiples of g"),
}

__all__ += [
    "MAX_DISCRETE_SCALE",
    "NOISE_SLACK",
    "NOISE_SAMPLERS",
    "discrete_laplace",
    "count_laplace",
    "grid_laplace",
]


def _check_discrete_scale(scale) -> float:
    if isinstance(scale, bool) or not isinstance(scale, Integral | float | np.integer | np.floating):
        raise ValueError(
            f"scale must be a finite number in (0, {MAX_DISCRETE_SCALE:g}], got {type(scale).__name__}")
    value = float(scale)
    if not 0 < value <= MAX_DISCRETE_SCALE:  # NaN fails too
        raise ValueError(f"scale must be a finite number in (0, {MAX_DISCRETE_SCALE:g}], got {value!r}")
    return value


def discrete_laplace(scale: float, size=None, *, rng: np.random.Generator) -> np.ndarray:
    """Draw discrete Laplace (two-sided geometric) noise: ``P(k) ∝ exp(-|k| / scale)``, k in Z.

    Parameters
    ----------
    scale : float
        ``b > 0`` (at most :data:`MAX_DISCRETE_SCALE`), one scalar. The variance is
        ``2 q / (1 - q)**2`` with ``q = exp(-1/b)``, close to the ``2 b**2`` of Laplace(b).
    size : int or tuple of ints, optional
        Output shape (at most :data:`MAX_DRAWS` draws); None gives a 0-d array.
    rng : numpy.random.Generator
        The source of randomness; required.

    Returns
    -------
    numpy.ndarray of int64
        Every integer is a possible value, whatever the data the noise is later added to.

    Raises
    ------
    ValueError
        A scale that is not a number in (0, MAX_DISCRETE_SCALE], or a bad size; TypeError for
        an rng that is not a Generator. Raised before anything is drawn.

    Notes
    -----
    The algorithm is Canonne, Kamath & Steinke 2020, Alg. 2 (their split of a geometric into
    a uniform remainder and a geometric quotient), vectorised with batched rejection. With
    ``t = max(1, ceil(b (1 - 2**-20)))`` and ``q = exp(-t/b)`` (between e**-2 and e**-1,
    up to 2**-20, when b >= 1/2; any t gives the same law, this one keeps both steps cheap):

    1. One uniform integer on ``{0, ..., 2t-1}`` gives ``U`` on ``{0, ..., t-1}`` and a fair
       sign bit ``S`` (``rng.integers``: exact). ``U`` is accepted with probability
       ``exp(-U/b)``.
    2. ``V``, the number of successes of Bernoulli(q) before the first failure, from one
       uniform ``R``: ``V >= j`` iff ``R < c_j / 2**53`` for integer levels ``c_1 =
       ceil(q 2**53)``, ``c_{j+1} = ceil(c_j q)`` (exact integer arithmetic, while ``c_j >=
       2**47``: about 4 levels), then Bernoulli(``c_1 / 2**53``) trials for the ~2% beyond.
       ``X = U + t V`` has ``P(X = x) ∝ exp(-x/b)``.
    3. ``(S = -, X = 0)`` is rejected (Alg. 2's rule, so 0 is not counted twice); ``Z = ±X``,
       so ``P(Z = z) ∝ P(X = |z|)``.

    What is exact: every draw, comparison and sum is integer arithmetic on numpy's uniform
    integers and on ``rng.random()`` values, which are exactly ``k / 2**53`` with ``k`` uniform
    (numpy's ``(next_uint64 >> 11) * 2**-53``); hence ``rng.random() < p`` has probability
    exactly ``ceil(p 2**53) / 2**53``. What is floating point: only ``exp(-U/b)`` and ``q``.
    Both are nudged up by 2**-44 relative (:data:`_NUDGE`), so that every implemented
    acceptance probability, and every ratio ``P(V >= j+1) / P(V >= j)``, lies in ``[ideal,
    ideal (1 + eta)]`` with ``eta <= 2**-43``: nudge 2**-44; ``exp`` and ``u/b`` rounding
    <= 2**-45 (assuming numpy's ``exp`` within a few hundred ulps); the 2**-53 grid <= 2**-50
    on acceptances (all >= e**-1); the integer levels <= 2**-47 (every level after the first
    is >= 2**47, and the first errs by 2**-53/q <= 2**-50 whenever there is a second). With a
    single level (q below about 1/8, scales below about 1/2) its rounding is upwards by at
    most 2**-53 in absolute terms, which only thickens the tail.

    The implemented pmf is therefore not exactly the ideal, but its privacy loss is bounded:
    for integers ``a < a'`` (so ``V <= V'``), ``log P(Z=a)/P(Z=a')`` gains at most ``eta`` from
    the acceptance factor and ``eta q/(1-q) <= 0.6 eta`` from ``P(V=v) = G_v (1 - r_v)``
    (the ratios ``r_j >= q`` only thicken the tail): ``<= (a'-a)/b + 1.6 eta``. Backwards,
    ``V - V' <= (a-a')/t + 1`` ratios each short by at most ``eta`` add at most
    ``(a-a') eta/t + eta`` (``t >= b (1 - 2**-20)``), against the ideal ``-(a-a')/b``:
    ``<= 2.6 eta``. Both are below ``Delta/b + 2**-41`` (:data:`NOISE_SLACK`) for
    ``|a - a'| <= Delta``; ``test_implemented_pmf_has_the_stated_privacy_loss`` checks this
    on the exact rational pmf.

    Why the output set does not depend on the data: the noise is drawn without looking at
    any data, and it is added to integer data in integer arithmetic; every integer has
    positive probability (every Bernoulli has ``p >= 2**-53``, also when ``exp`` underflows
    for tiny scales), so ``k + Z`` can be any integer for any ``k``. There is no double whose
    low bits could tell ``k`` from ``k + 1``.

    Time: per draw about 1.6 uniform integers, 3.2 uniforms, 1.6 table look-ups (``exp``
    beyond 2**16) and a few integer passes; a small multiple of ``rng.laplace``'s time
    (benchmarks/noise_samplers.py measures it).
    Draws are made in equal passes of at most 2**14 (small arrays stay in the cache); which pass and batch
    a draw comes from depends on (scale, number of draws) only, so a seeded call is
    reproducible bit for bit.

    References
    ----------
    Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020,
    §5, Alg. 1-2; Ghosh, Roughgarden & Sundararajan 2009 (the geometric mechanism); Mironov 2012.
    """
    _check_generator(rng)
    b = _check_discrete_scale(scale)
    shape = _check_size(size)
    n = 1 if shape is None else math.prod(shape)
    draws = _discrete_laplace_draws(b, n, rng)
    return draws.reshape(() if shape is None else shape)


#: Draws per pass of :func:`_discrete_laplace_draws` (at most): its dozen temporary arrays
#: (128 KiB each) stay in the CPU cache and in heap memory the allocator reuses instead of
#: fresh pages to fault in, so many draws in passes of this size are faster than one pass over
#: all of them (benchmarks/noise_samplers.py measures the sampler against numpy's Laplace).
_DRAW_CHUNK = 2**14


def _discrete_laplace_draws(b: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of the sampler of :func:`discrete_laplace` (arguments already checked), in
    passes of at most :data:`_DRAW_CHUNK` draws (which depend on ``n`` only: reproducible)."""
    if n <= _DRAW_CHUNK:
        return _discrete_laplace_pass(b, n, rng)
    out = np.empty(n, dtype=np.int64)
    passes = -(-n // _DRAW_CHUNK)
    size = -(-n // passes)  # passes of equal size
    for start in range(0, n, size):
        stop = min(start + size, n)
        out[start:stop] = _discrete_laplace_pass(b, stop - start, rng)
    return out


def _discrete_laplace_pass(b: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """One pass of :func:`_discrete_laplace_draws`."""
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    t = _period(b)
    levels = _geometric_levels(t, b)
    # Expected acceptance of U (mean of exp(-u/b) over u < t) and of the sign step, to size
    # each batch: one batch nearly always suffices.
    accept_u = 1.0 if t == 1 else -math.expm1(-t / b) / (t * -math.expm1(-1.0 / b))
    p_zero = -math.expm1(-1.0 / b) / (1.0 + math.exp(-1.0 / b))  # P(X = 0) of the geometric
    rate = accept_u * (1.0 - p_zero / 2.0)
    filled = 0
    while filled < n:
        need = n - filled
        m = int(need / rate * 1.01) + 64
        # One uniform integer on {0, ..., 2t - 1} gives U (its upper part) and the sign bit
        # (its lowest bit), independent and each exactly uniform.
        draw = rng.integers(0, 2 * t, size=m, dtype=np.int64)
        negative = draw & 1
        x = draw
        x >>= 1  # U
        if t == 1:
            keep = np.ones(m, dtype=bool)
        else:
            # exp(-u/b), nudged up; from a table when it is small (a gather is cheaper
            # than exp). u * (-1/b) differs from -(u/b) by < 2**-52: inside the nudge.
            if t <= min(2**16, m):
                accept = _acceptance(np.arange(t), b)[x]
            else:
                accept = _acceptance(x, b)
            keep = rng.random(m) < accept
        v = _geometric(levels, m, rng)
        v *= t
        x += v  # X = U + t V
        x ^= -negative  # two's complement: (x ^ -1) + 1 == -x; and x ^ -1 == -1 iff x == 0
        keep &= x != -1  # CKS 2020 Alg. 2: -0 is rejected, so 0 is counted once
        x += negative
        z = x[keep]
        take = min(z.size, need)
        out[filled:filled + take] = z[:take]
        filled += take
    return out


def _period(b: float) -> int:
    """The t of X = U + t V in :func:`discrete_laplace`: ~b, and exactly the integer k for the
    calibrated scales a hair above it (units / (epsilon - slack)), which halves the work at
    epsilon = 1 compared with t = k + 1."""
    return max(1, math.ceil(b * (1.0 - 2.0**-20)))


def _acceptance(u: np.ndarray, b: float) -> np.ndarray:
    """``exp(-u/b)`` nudged up by :data:`_NUDGE`: never below the ideal (Notes above)."""
    accept = np.multiply(u, -1.0 / b)
    np.exp(accept, out=accept)
    accept *= 1.0 + _NUDGE
    return accept


@lru_cache(maxsize=256)  # a pure function of (t, b); the Fraction arithmetic dominates scalar draws
def _geometric_levels(t: int, b: float) -> np.ndarray:
    """Thresholds ``c_j / 2**53`` (descending) of the geometric V of :func:`discrete_laplace`.

    ``V >= j`` iff one uniform ``R < c_j / 2**53``, with ``c_1 = ceil(q' 2**53)`` and
    ``c_{j+1} = ceil(c_j q')`` in exact integer arithmetic, ``q' = exp(-t/b)`` nudged up, so
    every ratio ``P(V >= j+1) / P(V >= j) = c_{j+1} / c_j`` lies in ``[q, q (1 + 2**-43))``
    while ``c_j >= 2**47``; past the last level the sampler continues with Bernoulli(c_1 /
    2**53) trials (geometric tails are memoryless), so the ratio stays in that range.
    """
    # exp(-t/b) underflows for b < 1/745: any p below 2**-53 is the same Bernoulli as 2**-53.
    q = Fraction(max(math.exp(-t / b) * (1.0 + _NUDGE), _MIN_BERNOULLI))
    levels = [math.ceil(q * 2**53)]
    while len(levels) < 8:
        following = math.ceil(levels[-1] * q)
        if following < 2**47:
            break
        levels.append(following)
    out = np.array(levels, dtype=float) * 2.0**-53  # exact: integers < 2**53
    out.flags.writeable = False  # shared by the cache
    return out


def _geometric(levels: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` draws of V: successes before the first failure (see :func:`_geometric_levels`)."""
    r = rng.random(m)
    v = (r < levels[0]).view(np.int8).copy()  # int8 sums: at most 8 levels
    for level in levels[1:]:
        v += (r < level).view(np.int8)
    running = np.flatnonzero(v == levels.size)
    v = v.astype(np.int64)
    while running.size:  # the tail, ~e**-4 of the draws: Bernoulli(c_1 / 2**53) trials
        running = running[rng.random(running.size) < levels[0]]
        v[running] += 1
    return v


def _calibrated_scale(units: float, epsilon: float, coordinates: int = 1) -> float:
    """The scale b with ``units / b + coordinates * NOISE_SLACK <= epsilon``: the release costs
    epsilon when a neighbour shifts at most ``coordinates`` noisy entries (the slack is per
    shifted coordinate).

    The factor (1 - 2**-50) absorbs the three roundings of this float computation."""
    return units / (epsilon * (1.0 - 2.0**-50) - coordinates * NOISE_SLACK)


#: Integers up to 2**53 are exact doubles; the largest |count| :func:`count_laplace` accepts.
_MAX_EXACT = 2**53


def count_laplace(counts, sensitivity: int, epsilon: float, *,
                  rng: np.random.Generator) -> np.ndarray:
    """Release integer ``counts`` + discrete Laplace noise: the geometric mechanism.

    Parameters
    ----------
    counts : array_like of integers
        Counts, histogram cells, stream counts, partition sizes: any shape, whole numbers
        (float or int dtype), ``|count| <= 2**53``; negative values are allowed (differences).
    sensitivity : int
        Integer ``Delta >= 1`` bounding the L1 change of the whole ``counts`` vector between
        neighbours (a histogram: 1 under add/remove-one, 2 under replace-one).
    epsilon : float
        Budget of this release.
    rng : numpy.random.Generator
        Required.

    Returns
    -------
    numpy.ndarray of int64
        ``counts + Z`` with ``Z ~ discrete_laplace(Delta / (epsilon - c NOISE_SLACK))``,
        ``c = min(Delta, counts.size)`` the most coordinates a neighbour can move.

    Raises
    ------
    ValueError
        Non-integer, non-finite or too large counts, a non-integer or non-positive
        sensitivity, a bad epsilon; before anything is drawn.

    Notes
    -----
    Privacy: exactly epsilon-DP. The released integers are ``k + Z``, whose set of possible
    values is all of Z for any data; the loss of a shift by at most Delta in L1 is
    ``<= Delta / b + c NOISE_SLACK <= epsilon`` with the calibrated ``b`` (per coordinate,
    summed over the at most ``c`` moved coordinates: the usual Laplace-mechanism argument). The widening of the scale is
    below 1e-6 relative for every accepted epsilon.

    References
    ----------
    Ghosh, Roughgarden & Sundararajan 2009; Canonne, Kamath & Steinke 2020, §5.
    """
    _check_generator(rng)
    k = _check_integer_counts(counts)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, Integral | float | np.integer
                                                      | np.floating):
        raise ValueError(f"sensitivity must be an integer >= 1, got {type(sensitivity).__name__}")
    if not (math.isfinite(float(sensitivity)) and float(sensitivity) >= 1
            and float(sensitivity) == round(float(sensitivity))):
        raise ValueError(f"sensitivity must be an integer >= 1 (a whole number of counts), "
                         f"got {float(sensitivity)!r}")
    epsilon = check_epsilon(epsilon)
    # At most min(Delta, size) coordinates move, each with its own NOISE_SLACK.
    b = _calibrated_scale(float(sensitivity), epsilon, min(int(sensitivity), max(k.size, 1)))
    if not 0 < b <= MAX_DISCRETE_SCALE:
        raise ValueError(f"sensitivity / epsilon must be at most {MAX_DISCRETE_SCALE:g} "
                         f"(the largest discrete Laplace scale), got {b:g}")
    return k + _discrete_laplace_draws(b, k.size, rng).reshape(k.shape)


def _check_integer_counts(counts) -> np.ndarray:
    """``counts`` as int64, or ValueError unless whole numbers within +-2**53."""
    try:
        array = np.asarray(counts)
    except (TypeError, ValueError):
        raise ValueError("counts must be an array of whole numbers") from None
    if array.dtype.kind in "iu":  # integers: only the range to check
        if array.size and (array.max() > _MAX_EXACT or array.min() < -_MAX_EXACT):
            raise ValueError("counts must lie within +-2**53 (exact integers)")
        return array.astype(np.int64, copy=False)
    if array.dtype.kind != "f":
        raise ValueError(f"counts must be an array of whole numbers, got dtype {array.dtype}")
    if not np.all(np.isfinite(array)):
        raise ValueError("counts must be finite: found NaN or infinite values")
    if np.any(array != np.round(array)):
        raise ValueError("counts must be whole numbers; found fractional values "
                         "(for real values use grid_laplace)")
    if np.any(np.abs(array) > _MAX_EXACT):
        raise ValueError("counts must lie within +-2**53 (exact integers)")
    return array.astype(np.int64)


#: The default grid is the largest power of two <= sensitivity / 2**GRID_BITS (and the grid of
#: :func:`laplace` in floating-point-safe mode is the largest power of two <= min(1, scale /
#: 2**GRID_BITS)). 20 bits, not 10: a released noisy count is an integer (so may equal the true
#: count) with probability about gamma, ~2**-15 at scale 32 instead of ~1/32. Rounding moves a
#: value by at most 2**-(GRID_BITS + 1) of the sensitivity. Limits (sensitivity Delta, epsilon,
#: max_changed m; laplace_reals' grid g is in (Delta / (m 2**(GRID_BITS + 1)), Delta / (m
#: 2**GRID_BITS)], grid_laplace's default grid is that of m = 1):
#:
#: * the noise scale in grid units is about m 2**GRID_BITS-m 2**(GRID_BITS + 1) / epsilon: at
#:   m = 1 at most 2**21 / EPSILON_MIN ~ 2.1e12, 134x inside :data:`MAX_DISCRETE_SCALE` (2**48);
#:   grid_laplace refuses (ValueError) once m / epsilon exceeds about 2**27 ~ 1.3e8 (2**27 to
#:   2**28 depending on where Delta / m falls between powers of two), e.g. m > 134 at epsilon
#:   1e-6;
#: * ``Delta / g`` (about m 2**GRID_BITS-m 2**(GRID_BITS + 1)) must be at most 2**40: m <= 2**19;
#: * values are clamped to +-2**52 g before the noise, i.e. beyond a point in (2**(51 -
#:   GRID_BITS) Delta / m, 2**(52 - GRID_BITS) Delta / m]: at sensitivity 1 and m = 1, |value|
#:   > 2**32 ~ 4.29e9 is clamped (only ~7% above a count of 4e9). Counts released through
#:   :func:`laplace` are not clamped (floating_point_safe's Notes).
GRID_BITS = 20
#: Values are clamped to +-2**52 grid steps; releases are clipped to +-2**53 steps (exact).
_MAX_STEPS = 2**52

__all__ += ["GRID_BITS"]


def _check_grid(grid, sensitivity: float) -> float:
    if grid is None:
        # Largest power of two <= sensitivity / 2**GRID_BITS (frexp: sensitivity = m 2**e,
        # 0.5 <= m < 1, so the largest power of two <= sensitivity is 2**(e - 1)).
        return math.ldexp(1.0, math.frexp(sensitivity)[1] - 1 - GRID_BITS)
    if isinstance(grid, bool) or not isinstance(grid, Integral | float | np.integer | np.floating):
        raise ValueError(f"grid must be None or a power of two (e.g. 2.0**-10), got "
                         f"{type(grid).__name__}")
    value = float(grid)
    if not (math.isfinite(value) and value > 0 and math.frexp(value)[0] == 0.5):
        raise ValueError(f"grid must be None or a power of two (e.g. 2.0**-10), got {value!r}")
    return value


def grid_laplace(values, sensitivity: float, epsilon: float, *, rng: np.random.Generator,
                 grid: float | None = None, max_changed: int = 1) -> tuple[np.ndarray, float]:
    """Release real ``values`` with floating-point-safe Laplace-like noise on a power-of-two grid.

    Each value is rounded to the nearest multiple of the grid ``g`` (ties to even), clamped to
    ``+-2**52 g``, and ``g * Z`` is added with ``Z ~ discrete_laplace(b)``,
    ``b = (floor(Delta / g) + max_changed) / (epsilon - max_changed NOISE_SLACK)``; the sum is
    clipped to ``+-2**53 g``. The released doubles are exact multiples of ``g``.

    Parameters
    ----------
    values : array_like
        Finite reals, any shape.
    sensitivity : float
        ``Delta > 0``: the L1 change of the whole vector ``values`` between neighbours.
    epsilon : float
        Budget of this release.
    rng : numpy.random.Generator
        Required.
    grid : float, optional
        A power of two ``g``. Default: the largest power of two <= ``Delta / 2**GRID_BITS``
        (``Delta / 2**(GRID_BITS + 1) < g <= Delta / 2**GRID_BITS``, 2**-20 at ``Delta = 1``),
        so the rounding adds at most about 2**-GRID_BITS (one part in a million) of a
        sensitivity to the noise scale. ``Delta / g`` may be at most 2**40. With the default,
        values beyond ``+-2**52 g``, a bound in ``(2**31 Delta, 2**32 Delta]`` (2**32 ~ 4.29e9
        at ``Delta = 1``), are clamped, and the scale in grid units, about ``2**20-2**21 /
        epsilon``, stays below :data:`MAX_DISCRETE_SCALE` for every epsilon >= 1e-6
        (:data:`GRID_BITS`).
    max_changed : int
        How many entries of ``values`` can change between neighbours (1 for a scalar query;
        a histogram under replace-one: 2). Each changed entry can round the other way, adding
        one grid step to the sensitivity in grid units.

    Returns
    -------
    (numpy.ndarray of float, float)
        The released values (shape of ``values``) and the grid ``g``.

    Raises
    ------
    ValueError
        NaN/inf values, a bad sensitivity, epsilon, grid or max_changed, or a grid so fine
        that the noise scale in grid units exceeds :data:`MAX_DISCRETE_SCALE`; before anything
        is drawn. Values beyond ``+-2**52 g`` are clamped, not refused (a refusal would depend
        on the data).

    Notes
    -----
    Privacy: exactly epsilon-DP. Rounding and clamping are 1-Lipschitz up to one grid step
    per changed entry, so neighbouring inputs give integer vectors ``k, k'`` with
    ``|k - k'|_1 <= floor(Delta/g) + max_changed`` (an integer: Delta/g is exact, g being a
    power of two); the integer noise then costs at most that over ``b`` plus NOISE_SLACK per
    changed entry, which is epsilon (:func:`discrete_laplace`). The final clip and the multiplication by
    ``g`` (exact for integers below 2**53 in absolute value) are post-processing. The
    set of possible outputs, ``g Z`` within ``+-2**53 g``, does not depend on the data,
    which is what Mironov 2012's attack on ``x + Laplace`` doubles exploits. Accuracy: the
    noise has standard deviation about ``sqrt(2) (Delta + max_changed g) / epsilon``, and the
    rounding error is at most ``g / 2``.

    References
    ----------
    Mironov 2012 (the attack, and rounding to a power-of-two grid in the snapping mechanism);
    Canonne, Kamath & Steinke 2020 (integer noise); Ghosh, Roughgarden & Sundararajan 2009.
    """
    _check_generator(rng)
    values = check_finite_array(values, "values", ndim=None, allow_empty=True)
    sensitivity = check_positive(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    g = _check_grid(grid, sensitivity)
    max_changed = check_positive_int(max_changed, "max_changed")
    if not g <= 2.0**970:  # 2**53 g must stay a finite double
        raise ValueError(f"grid must be at most 2**970 so that releases stay finite, got {g!r}")
    steps = sensitivity / g  # exact: g is a power of two (unless it overflows to inf)
    if not steps <= 2.0**40:
        raise ValueError(f"grid must be at least sensitivity / 2**40 (noise in grid units), "
                         f"got {g!r}")
    b = _calibrated_scale(math.floor(steps) + max_changed, epsilon, max_changed)
    if not 0 < b <= MAX_DISCRETE_SCALE:
        raise ValueError(f"grid is too fine for this epsilon: the noise scale in grid units "
                         f"would be {b:g} > {MAX_DISCRETE_SCALE:g}; use a coarser grid")
    with np.errstate(over="ignore", under="ignore"):
        k = np.rint(np.clip(values / g, -_MAX_STEPS, _MAX_STEPS)).astype(np.int64)
    noisy = np.clip(k + _discrete_laplace_draws(b, k.size, rng).reshape(k.shape),
                    -2 * _MAX_STEPS, 2 * _MAX_STEPS)
    return noisy.astype(float) * g, g


# ---------------------------------------------------------------------------------------------
# Floating-point-safe selection: the base-2 exponential mechanism (Ilvento 2020)
# ---------------------------------------------------------------------------------------------
#
# Why not the Gumbel trick on doubles: numpy's Gumbel variates are bounded (about -3.6 to
# 36.7), so a candidate far enough below the best has probability exactly 0, and one a
# little less far below has a positive one; between neighbours that is an unbounded loss.
# Here every weight is an exact dyadic number m 2**-j (integers m, j), the weights are
# summed exactly (Python integers), and the index is drawn from exact uniform integers: the
# implemented probabilities are the stated ones, and the only floating-point operation,
# exp2 of a fraction in [0, 1), enters through a bounded relative error that is charged.

#: The additive privacy-loss slack of one round of :func:`_base2_selection`:
#: the implemented weights are within a relative ``rho <= 1.51 * 2**-44`` of the ideal ones
#: (rounding of the 44-bit mantissas <= 2**-44; ``exp2`` <= 2**-45, the assumption of
#: :data:`_NUDGE`; the conversion of the fraction to a double <= 2**-53), so a probability
#: ratio is at most the ideal one times ``((1 + rho) / (1 - rho))**2``: ``+ 4.01 rho < 2**-41``
#: in log. Every round is calibrated so that its ideal loss plus this slack is its budget.
SELECTION_SLACK = 2.0**-41
#: Bits of the integer mantissas of the weights (in [2**43, 2**44]).
_EM_MANTISSA_BITS = 44
#: eta = a / 2**shift bits per grid step with ``a < 2**_EM_A_BITS`` (exact int64 products).
_EM_A_BITS = 36
#: eta is at most 64 bits per grid step (only budgets above ~5e7 per round are cut); with
#: ``a < 2**36`` this keeps the shift >= 29, which the exact products need.
_EM_ETA_MAX = 64
#: Exponent groups within this many bits of the best live one are summed exactly each
#: round; the candidates beyond (at most n 2**-64 of the mass) are reached by rejection.
_EM_WINDOW = 64
#: An exact rational upper bound on ln 2 (ln 2 = 0.69314718055994530941723212145817656807...).
_LN2_UP = Fraction("0.69314718055994530941723212145817657")
#: Proposals per batch of the rejection step inside an exponent group.
_EM_BATCH = 8

# base2_exponential_mechanism and base2_selection_probabilities are importable by name but not
# in __all__: exponential_mechanism is the public door (it switches to the base-2 sampler inside
# floating_point_safe()); the two are for tests, benchmarks and explanations.
__all__ += ["SELECTION_SLACK"]


@lru_cache(maxsize=256)  # a pure function of public scalars; the Fraction arithmetic is slow
def _base2_constants(epsilon: float, k: int, sensitivity: float, monotonic: bool
                     ) -> tuple[float, int, int, int]:
    """``(g, K, a, shift)`` of :func:`_base2_selection` for the budget
    ``epsilon / k`` per round: the grid, the sensitivity in steps, ``eta = a / 2**shift``."""
    factor = 1 if monotonic else 2
    budget = Fraction(epsilon) / k - Fraction(SELECTION_SLACK)
    if budget <= 0:
        raise ValueError(f"epsilon / k must exceed SELECTION_SLACK = 2**-41 for the floating-"
                         f"point-safe exponential mechanism, got {epsilon / k:g}")
    bits = GRID_BITS
    while True:
        grid = math.ldexp(1.0, math.frexp(sensitivity)[1] - 1 - bits)
        steps = math.floor(sensitivity / grid) + 1  # sensitivity / grid is exact
        eta = min(budget / (factor * steps * _LN2_UP), Fraction(_EM_ETA_MAX))
        shift = 62
        while math.floor(eta * 2**shift) >= 2**_EM_A_BITS:  # ends at shift >= 29 (eta <= 64)
            shift -= 1
        a = math.floor(eta * 2**shift)
        # A coarser grid (fewer steps K) makes eta, hence a, larger: stop once a >= K, so that
        # neither the rounding of the qualities (1/K) nor that of eta (1/a) wastes more than
        # ~2**-20 of the budget at eps_r ~ 1, and both stay small at tiny budgets.
        if a >= steps or bits == 0:
            return grid, steps, a, shift
        bits -= 1


def _base2_weights(qualities: np.ndarray, epsilon: float, k: int, sensitivity: float,
                   monotonic: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(exponent, mantissa)``: candidate i's weight is exactly ``mantissa[i] * 2**-(exponent[i]
    + 44)`` (the best has weight 1); the Notes of :func:`_base2_selection` say why
    each step is private. All integer arithmetic is exact in int64."""
    # The grid and eta depend on public inputs only (sensitivity, epsilon, k, monotonic).
    grid, _, a, shift = _base2_constants(epsilon, k, sensitivity, monotonic)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        n = np.rint(np.clip(qualities / grid, -_MAX_STEPS, _MAX_STEPS)).astype(np.int64)
    if a == 0:  # eta = 0: every weight is 1 (spends nothing; only at budgets below ~2**-60)
        return (np.zeros(n.size, dtype=np.int64),
                np.full(n.size, 1 << _EM_MANTISSA_BITS, dtype=np.int64))
    d = n.max() - n  # the distance to the best, in steps: <= 2**53
    # a * d = a d1 2**26 + a d0 without overflow (a < 2**36, d1 <= 2**27, d0 < 2**26), then
    # split into the integer part (< 2**60) and the fraction of a * d / 2**shift (shift >= 29).
    a64 = np.int64(a)
    high = (d >> 26) * a64
    low = ((high & ((1 << (shift - 26)) - 1)) << 26) + (d & ((1 << 26) - 1)) * a64
    exponent = (high >> (shift - 26)) + (low >> shift)
    fraction = (low & ((1 << shift) - 1)).astype(float) * 2.0**-shift
    mantissa = np.rint(np.exp2(-fraction) * 2.0**_EM_MANTISSA_BITS).astype(np.int64)
    return exponent, mantissa


def _uniform_below(bound: int, rng: np.random.Generator) -> int:
    """A uniform integer in ``[0, bound)`` (a Python int of any size), exactly: whole random
    bytes, the surplus bits dropped, rejected when ``>= bound`` (probability < 1/2)."""
    bits = bound.bit_length()
    size = (bits + 7) // 8
    while True:
        x = int.from_bytes(rng.bytes(size), "little") >> (8 * size - bits)
        if x < bound:
            return x


def _halves(e: int, rng: np.random.Generator) -> bool:
    """True with probability exactly ``2**-e`` (e >= 0): e fair bits, all zero; stops at the
    first one (so an enormous e costs one draw in all but a 2**-62 fraction of calls)."""
    while e > 0:
        take = min(e, 62)
        if int(rng.integers(0, 1 << take)) != 0:
            return False
        e -= take
    return True


class _Base2Urn:
    """The candidates of one :func:`_base2_selection` run, grouped by exponent, for
    exact draws without replacement (each draw exactly proportional to the live weights)."""

    def __init__(self, exponent: np.ndarray, mantissa: np.ndarray) -> None:
        self.size = exponent.size
        top = int(exponent.max())
        key = exponent.astype(np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.int64)
        self.order = np.argsort(key, kind="stable")  # a radix sort for small exponents
        ranked = exponent[self.order]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(ranked)) + 1))
        sizes = np.diff(np.append(starts, self.size))
        self.group = np.empty(self.size, dtype=np.int64)
        self.group[self.order] = np.repeat(np.arange(starts.size), sizes)
        self.starts = starts.tolist()
        self.levels = ranked[starts].tolist()  # the exponent of each group, ascending
        self.live = sizes.tolist()
        # Exact sums of the mantissas per group: 22-bit halves summed in doubles stay below
        # 2**53 (exact) for fewer than 2**31 candidates.
        ordered = mantissa[self.order]
        low = np.add.reduceat((ordered & ((1 << 22) - 1)).astype(float), starts)
        high = np.add.reduceat((ordered >> 22).astype(float), starts)
        self.totals = [(int(h) << 22) + int(lo) for h, lo in zip(high, low, strict=True)]
        self.exponent = exponent
        self.mantissa = mantissa  # our own array: selected candidates are zeroed in it
        self.pools: dict[int, np.ndarray] = {}
        self.best = 0  # the first group with live candidates
        self.edge = 0  # the first group more than _EM_WINDOW bits below the best

    def draw(self, rng: np.random.Generator) -> int:
        """One candidate, with probability ``m_i 2**-j_i / sum over the live ones``, exactly."""
        groups, levels, totals = len(self.levels), self.levels, self.totals
        best = levels[self.best]
        while self.edge < groups and levels[self.edge] <= best + _EM_WINDOW:
            self.edge += 1
        # In units of 2**-(best + window + 44): group g weighs S_g 2**(best + window - j_g);
        # a candidate beyond the window weighs at most 2**43, so slots * 2**43 bounds them.
        near = [(g, totals[g] << (best + _EM_WINDOW - levels[g]))
                for g in range(self.best, self.edge) if totals[g]]
        near_total = sum(w for _, w in near)
        slots = self.size - self.starts[self.edge] if self.edge < groups else 0
        while True:
            if len(near) == 1 and not slots:
                return self._from_group(near[0][0], rng)
            u = _uniform_below(near_total + (slots << (_EM_MANTISSA_BITS - 1)), rng)
            if u < near_total:
                for g, w in near:
                    if u < w:
                        return self._from_group(g, rng)
                    u -= w
            # Beyond the window: a uniform slot, kept with probability (its weight) / 2**43:
            # m_i / 2**44 times 2**-(j_i - best - window - 1); else the whole draw restarts.
            i = int(self.order[self.starts[self.edge] + int(rng.integers(0, slots))])
            m = int(self.mantissa[i])
            if (m and int(rng.integers(0, 1 << _EM_MANTISSA_BITS)) < m
                    and _halves(int(self.exponent[i]) - best - _EM_WINDOW - 1, rng)):
                return i

    def _from_group(self, g: int, rng: np.random.Generator) -> int:
        """Candidate i of group g with probability ``m_i / S_g`` (uniform proposals, each kept
        when a uniform integer below 2**44 is < m_i; selected candidates have m_i = 0)."""
        pool = self.pools.get(g)
        if pool is None:
            pool = self.order[self.starts[g]:self.starts[g] + self._slots(g)]
        if pool.size == 1:
            return int(pool[0])
        while True:
            pos = rng.integers(0, pool.size, size=_EM_BATCH)
            coin = rng.integers(0, 1 << _EM_MANTISSA_BITS, size=_EM_BATCH)
            hit = np.flatnonzero(coin < self.mantissa[pool[pos]])
            if hit.size:
                return int(pool[pos[hit[0]]])

    def _slots(self, g: int) -> int:
        return (self.starts[g + 1] if g + 1 < len(self.starts) else self.size) - self.starts[g]

    def remove(self, i: int) -> None:
        """Take candidate i out of the urn (it was selected)."""
        g = int(self.group[i])
        self.totals[g] -= int(self.mantissa[i])
        self.mantissa[i] = 0
        self.live[g] -= 1
        pool = self.pools.get(g)
        if pool is None:
            pool = self.order[self.starts[g]:self.starts[g] + self._slots(g)]
        if 2 * self.live[g] < pool.size:  # keep proposals mostly live: drop the selected
            self.pools[g] = pool[self.mantissa[pool] > 0]
        while self.best < len(self.live) - 1 and not self.live[self.best]:
            self.best += 1


def _check_selection(qualities, epsilon, sensitivity, k, monotonic):
    qualities = check_finite_array(qualities, "qualities")
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    k = check_positive_int(k, "k")
    monotonic = check_bool(monotonic, "monotonic")
    if k > qualities.size:
        raise ValueError(f"k must be at most the number of candidates ({qualities.size}), got {k}")
    return qualities, epsilon, sensitivity, k, monotonic


def base2_selection_probabilities(qualities, epsilon: float, sensitivity: float = 1.0, *,
                                  k: int = 1, monotonic: bool = False) -> np.ndarray:
    """The exact selection probabilities of the first round of
    :func:`_base2_selection` (budget ``epsilon / k``), as doubles.

    They are computed from the same integer weights the sampler uses, summed as fractions, so
    they are the implemented distribution (each probability correctly rounded to a double;
    weights more than 1100 bits below the best, whose probabilities are below the smallest
    double, count as 0), not the ideal one; later rounds renormalise the same weights over
    the candidates left. For tests and for explanations of the mechanism.
    """
    qualities, epsilon, sensitivity, k, monotonic = _check_selection(
        qualities, epsilon, sensitivity, k, monotonic)
    exponent, mantissa = _base2_weights(qualities, epsilon, k, sensitivity, monotonic)
    top = int(exponent.min()) + 1100
    scaled = [int(m) << (top - int(j)) if j <= top else 0
              for m, j in zip(mantissa, exponent, strict=True)]
    total = sum(scaled)
    return np.array([float(Fraction(s, total)) for s in scaled])


def _base2_selection(qualities: np.ndarray, epsilon: float, sensitivity: float, k: int,
                     monotonic: bool, rng: np.random.Generator) -> np.ndarray:
    """The exponential mechanism, floating-point safe: base 2, exact integer sampling.

    What :func:`exponential_mechanism` runs inside :func:`floating_point_safe` (every analyst
    release) or with ``exact=True``; same arguments (checked there), same guarantee. Each of the k rounds selects one of
    the candidates not yet selected with probability proportional to ``2**(-eta d_i)``, where

    * ``g`` is a public power of two, the largest <= ``Delta / 2**GRID_BITS`` (for budgets
      below about 5e-7 per round, coarsened until ``a >= K``: g depends on public inputs
      only), and ``n_i = rint(q_i / g)`` (ties to even; ``|q_i / g|`` clamped to 2**52) is the
      quality in grid steps;
    * ``d_i = max_j n_j - n_i``: the distance to the best, in steps (at most 2**53);
    * ``eta = a / 2**s`` bits per step, ``a = floor(2**s * min(64, (eps_r - SELECTION_SLACK)
      / (f K ln 2)))`` in exact rational arithmetic (ln 2 rounded up), ``s`` the largest
      shift <= 62 with ``a < 2**36``, ``eps_r = epsilon / k``, ``K = floor(Delta / g) + 1``,
      ``f = 2`` (``f = 1`` if ``monotonic``). The cap of 64 bits per step cuts only budgets
      above ~5e7 per round (the mechanism is then an argmax, and spends less than given).

    The weight ``2**(-eta d_i)`` is ``2**-j_i 2**-phi_i`` with the integer ``j_i = floor(a d_i
    / 2**s)`` (< 2**60) and the dyadic fraction ``phi_i`` of ``a d_i / 2**s``, both exact in
    int64 (``a d_i`` up to 2**89 is split in two products);
    ``2**-phi_i`` in [1/2, 1] becomes the integer mantissa ``m_i = rint(exp2(-phi_i) 2**44)``.
    The implemented weight is exactly ``m_i 2**-(j_i + 44)``. A round draws a uniform integer
    below the exact sum, in units of ``2**-(b + 64 + 44)`` (``b`` the best live exponent), of
    the live mantissas of the exponent groups within 64 bits of ``b``, plus a bound
    (``2**43`` per slot) for the candidates beyond; it falls in a group g (then candidate i of
    g is drawn with probability ``m_i / S_g`` by uniform proposals accepted when a uniform
    integer below 2**44 is ``< m_i``) or in the bound (then a uniform slot beyond is kept with
    probability its weight over the bound, from exact uniform integers and fair bits, and
    otherwise the whole draw restarts). Every step is exact, so candidate i is selected with
    probability exactly ``m_i 2**-j_i / sum_l m_l 2**-j_l`` over the live candidates
    (:func:`base2_selection_probabilities`), every live candidate with a positive one. Time:
    O(n log n) once (vectorised; a radix sort unless the exponents are large) plus O(groups
    within 64 bits) Python operations per round (benchmarks/noise_samplers.py measures it).

    Parameters
    ----------
    qualities, epsilon, sensitivity, k, monotonic, rng
        As for :func:`exponential_mechanism`.

    Returns
    -------
    numpy.ndarray of int64
        The selected indices, in selection order.

    Raises
    ------
    ValueError
        As for :func:`exponential_mechanism`; also ``epsilon / k <= 2**-41`` or 2**31
        candidates or more. Before anything is drawn.

    Notes
    -----
    Neighbours: any relation under which ``|q_i(D) - q_i(D')| <= Delta`` for every candidate
    i (and, with ``monotonic``, all qualities move in the same direction).

    Privacy of one round: ``eps_r``-DP, exactly.

    1. Rounding: ``|rint(x) - rint(y)| <= floor(|x - y|) + 1``, so ``|n_i - n'_i| <= K``; rint
       is non-decreasing, so monotonic qualities stay monotonic. The clamp to +-2**52 is
       1-Lipschitz and non-decreasing too.
    2. The ideal base-2 mechanism on ``n``: ``M = max_j n_j`` is common to all candidates, so
       the weights are proportional to ``2**(eta n_i)``, and ``P(i) / P'(i) = 2**(eta (n_i -
       n'_i)) Z' / Z`` with ``Z = sum_l 2**(eta n_l)``; each factor is at most ``2**(eta
       K)``, and with monotonic qualities one of them is at most 1, so the ratio is at most
       ``2**(f eta K)``, i.e. a loss of at most ``f eta K ln 2 <= eps_r - SELECTION_SLACK``
       (the choice of a: ln 2 rounded up, eta rounded down; never more than the budget).
    3. The implementation: each weight is within a factor ``1 +- rho`` of the ideal,
       ``rho <= 1.51 * 2**-44`` (:data:`SELECTION_SLACK`), so is their sum; the ratio gains at
       most ``2 ln((1 + rho) / (1 - rho)) < SELECTION_SLACK``. The sampling itself is exact
       (above). Total: at most ``eps_r``.
    4. Ties: the mechanism samples, it never takes an argmax, so there is no tie to break:
       candidates of equal quality have equal weights and equal probabilities.

    k rounds without replacement: round r is the mechanism above restricted to the candidates
    not yet selected (a set fixed by the earlier outputs), with the same weights, so it is
    ``eps_r``-DP given the earlier rounds; by (adaptive) sequential composition the k rounds are ``k eps_r = epsilon``-DP
    (Lyu, Su & Li 2017 §5, "EM c times without replacement").

    Accuracy against the textbook mechanism ``exp(eps_r q / (f Delta))``: the grid moves a
    quality by at most g/2 (about 2**-21 Delta), and eta per unit of quality is smaller than
    ``eps_r / (f Delta ln 2)`` by the factor ``Delta / (g K)`` (about ``1 - 2**-20``), by the
    rounding of a (< 1/a) and by ``SELECTION_SLACK / eps_r``: at budgets above ~1e-5 per
    round the selection probabilities agree with the textbook ones to about six digits
    (``tests/engine/test_selection_fp.py``).

    References
    ----------
    Ilvento 2020, "Implementing the exponential mechanism with base-2 differential privacy"
    (CCS; base 2 so that the weights are exact); McSherry & Talwar 2007; Lyu, Su & Li 2017 §5;
    Canonne, Kamath & Steinke 2020 (exact sampling from uniform integers).
    """
    if qualities.size >= 2**31:
        raise ValueError(f"qualities must have fewer than 2**31 candidates, got {qualities.size}")
    urn = _Base2Urn(*_base2_weights(qualities, epsilon, k, sensitivity, monotonic))
    out = np.empty(k, dtype=np.int64)
    for r in range(k):
        out[r] = urn.draw(rng)
        urn.remove(int(out[r]))
    return out


# ---------------------------------------------------------------------------------------------
# Floating-point-safe comparisons: SVT-style tests of noisy scores against noisy thresholds
# ---------------------------------------------------------------------------------------------

__all__ += ["ComparisonGrid"]


@dataclass(frozen=True)
class ComparisonGrid:
    """The common grid on which a floating-point-safe SVT compares its noisy values.

    SVT-style mechanisms (Lyu, Su & Li 2017 Alg. 1-7; Chen 2018 Alg. 8 and 16) never release
    their noisy scores, only which side of a noisy threshold each falls; their proofs shift
    the threshold noise and the noise of the ⊤ queries by the sensitivity and compare. Done
    on doubles, ``q + nu >= T + rho`` rounds both sides, and a rounded comparison does not
    follow the shift (two values equal after rounding can be ordered differently once both
    move). Inside :func:`floating_point_safe` every such run therefore works in integer steps
    of one grid ``g``: scores and thresholds are rounded to it (:meth:`steps`), every noise is
    discrete Laplace in steps (:meth:`noise`), and every comparison is between int64 values,
    exactly.

    Build it with :meth:`for_sensitivities`; ``grid`` is a power of two, ``widen`` the factor
    (about ``1 + 2**-GRID_BITS``) by which every noise scale of the run is multiplied so that
    the rounding is paid for.

    Notes
    -----
    Privacy: rounding moves a score (or a data-dependent threshold) of sensitivity ``Delta``
    by at most ``K = floor(Delta / g) + 1`` steps between neighbours (``|rint(x) - rint(y)| <=
    floor(|x - y|) + 1``), and ``K g <= widen Delta``. An SVT proof charges each noise draw
    ``shift / scale`` for a shift of a multiple of the sensitivities (e.g. ``Delta`` for the
    threshold, ``2 Delta`` for a ⊤ query); in steps the shift is at most the same multiple of
    ``K``, and :meth:`noise` draws discrete Laplace of scale ``widen scale / g`` in steps,
    widened further so that a shift of ``k >= 1`` steps costs at most ``k g / (widen scale)``
    including the sampler's :data:`NOISE_SLACK` (as :func:`laplace` does inside
    :func:`floating_point_safe`). Each term is then at most its nominal value, with the sums
    over the discrete noise in place of integrals; the ⊥ answers need only that rounding
    and the comparison are monotone. So the run spends its nominal epsilon, exactly.
    """

    grid: float
    widen: float

    @classmethod
    def for_sensitivities(cls, *sensitivities: float, largest_scale: float) -> ComparisonGrid:
        """The grid for scores and thresholds of the given sensitivities (all > 0): the
        largest power of two <= ``min(sensitivities) / 2**GRID_BITS``, coarsened (a public
        choice, down to ``min(sensitivities)`` itself) while the largest noise scale in steps
        would exceed ``MAX_DISCRETE_SCALE / 4`` or a sensitivity would exceed 2**40 steps."""
        sens = [check_positive(s, "sensitivity") for s in sensitivities]
        if not sens:
            raise ValueError("ComparisonGrid needs at least one sensitivity")
        largest_scale = check_positive(largest_scale, "largest_scale") if largest_scale else 0.0
        bits = GRID_BITS
        while True:
            grid = math.ldexp(1.0, math.frexp(min(sens))[1] - 1 - bits)
            fits = max(sens) / grid <= 2.0**40 and (
                largest_scale * 2.0 / grid <= MAX_DISCRETE_SCALE / 4)
            if fits or bits == 0:
                break
            bits -= 1
        if max(sens) / grid > 2.0**52:
            raise ValueError("sensitivities must be within a factor 2**52 of each other")
        # (floor(s / g) + 1) g is exact (s / g <= 2**52 and g a power of two); the division by
        # s rounds, which the factor (1 + 2**-50) covers.
        widen = max((math.floor(s / grid) + 1) * grid / s for s in sens) * (1.0 + 2.0**-50)
        return cls(grid, widen)

    def steps(self, values) -> np.ndarray:
        """``rint(values / grid)`` as int64 (ties to even), ``|values / grid|`` clamped to
        2**52 (1-Lipschitz and monotone, so the proofs above hold)."""
        with np.errstate(over="ignore", under="ignore"):
            return np.rint(np.clip(np.asarray(values, dtype=float) / self.grid,
                                   -_MAX_STEPS, _MAX_STEPS)).astype(np.int64)

    def noise(self, scale: float, size=None, *, rng: np.random.Generator) -> np.ndarray:
        """Discrete Laplace noise in grid steps standing for Laplace(``scale``) (int64; scale
        0 gives zeros, as :func:`laplace` does); ``widen`` is applied here."""
        _check_generator(rng)
        shape = _check_size(size)
        n = 1 if shape is None else math.prod(shape)
        scale = float(scale)
        if not (math.isfinite(scale) and scale >= 0):
            raise ValueError(f"scale must be finite and >= 0, got {scale!r}")
        if scale == 0.0:
            draws = np.zeros(n, dtype=np.int64)
        else:
            draws = _discrete_laplace_draws(_grid_steps_scale(scale * self.widen / self.grid),
                                            n, rng)
        return draws.reshape(() if shape is None else shape)

    def values(self, steps) -> np.ndarray:
        """Steps back to doubles (``steps * grid``), for display and for released outputs."""
        return np.asarray(steps, dtype=float) * self.grid


#: :func:`exponential_mechanism` with the base-2 sampler whatever the context.
base2_exponential_mechanism = functools.partial(exponential_mechanism, exact=True)
