"""Floating-point-safe noise: :func:`discrete_laplace` and the two releases built on it,
:func:`count_laplace` (integer counts) and :func:`grid_laplace` (reals on a power-of-two
grid), with their constants (:data:`NOISE_SLACK`, :data:`GRID_BITS`, ...) and
:data:`NOISE_SAMPLERS`."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from numbers import Integral

import numpy as np

from ..validation import check_epsilon, check_finite_array, check_positive, check_positive_int
from .checks import _check_generator, _check_size

__all__ = ["MAX_DISCRETE_SCALE", "NOISE_SLACK", "NOISE_SAMPLERS", "discrete_laplace",
           "count_laplace", "grid_laplace", "GRID_BITS"]

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
# Selections. The Gumbel-top-k exponential mechanism (.selection) works on doubles: numpy's
# Gumbel is bounded, so far-below candidates get probability exactly 0 (an unbounded loss
# between neighbours). Inside floating_point_safe() it hands over to the base-2 exponential
# mechanism (Ilvento 2020), also in .selection: qualities on a power-of-two grid, weights exact
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import discrete_laplace
    >>> discrete_laplace(2.0, 5, rng=np.random.default_rng(0)).tolist()  # whole steps
    [-1, -6, 0, 8, 0]
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import count_laplace
    >>> count_laplace([5, 0, 12], 1, 1.0, rng=np.random.default_rng(0)).tolist()
    [4, 0, 12]
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import grid_laplace
    >>> noisy, grid = grid_laplace([0.5, 2.25], 1.0, 1.0, rng=np.random.default_rng(0))
    >>> bool(np.all(noisy / grid == np.round(noisy / grid)))  # multiples of the grid
    True
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
