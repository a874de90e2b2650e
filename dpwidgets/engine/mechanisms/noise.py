"""The one Laplace door: :func:`laplace` (continuous outside :func:`floating_point_safe`,
grid noise inside), :func:`laplace_reals` for released real values and
:func:`laplace_mechanism`."""

from __future__ import annotations

import math

import numpy as np

from ..validation import (
    check_epsilon,
    check_finite_array,
    check_positive,
    check_positive_int,
    check_rng,
)
from .checks import _check_generator, _check_size
from .context import _FLOATING_POINT_SAFE
from .discrete import (
    GRID_BITS,
    MAX_DISCRETE_SCALE,
    NOISE_SLACK,
    _discrete_laplace_draws,
    grid_laplace,
)

__all__ = ["laplace", "laplace_mechanism", "laplace_reals"]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import laplace
    >>> laplace(2.0, 3, rng=np.random.default_rng(0)).round(2).tolist()
    [0.64, -1.23, -5.0]
    >>> round(float(laplace(1.0, 100_000, rng=np.random.default_rng(0)).var()), 1)  # 2 scale**2
    2.0
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import laplace_reals
    >>> laplace_reals(np.array([0.5, 2.25]), 1.0, 1.0, rng=np.random.default_rng(0)).round(2).tolist()
    [0.82, 1.63]
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import laplace_mechanism
    >>> laplace_mechanism([10, 20, 30], epsilon=1.0, rng=np.random.default_rng(0)).round(2).tolist()
    [10.32, 19.38, 27.5]
    """
    values = check_finite_array(values, "values", ndim=None)
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    rng = check_rng(rng)
    return values + laplace(sensitivity / epsilon, values.shape, rng=rng)
