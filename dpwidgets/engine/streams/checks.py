"""Validation of the stream engine's inputs, the PeGaSus budget split and the Grouper's noise
scales, noise rows and comparison grid; the deviation of a group (Chen 2018 eq. 5.4). Part of
:mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from ..mechanisms import ComparisonGrid, is_floating_point_safe, laplace
from ..validation import (
    check_counts,
    check_epsilon,
    check_finite_array,
    check_positive_int,
    split_budget,
)
from .constants import _SENSITIVITY, DEFAULTS, MAX_WINDOW, SMOOTHERS

__all__ = ["deviation"]


def _check_stream(counts, name: str = "counts") -> np.ndarray:
    """A non-empty 1-D stream of non-negative whole counts, as int64."""
    return check_counts(counts, name).astype(np.int64)


def _check_smoother(smoother: str) -> str:
    if not isinstance(smoother, str) or smoother not in SMOOTHERS:
        raise ValueError(f"smoother must be one of {sorted(SMOOTHERS)}, got {smoother!r}")
    return smoother


def _check_window(w, n: int | None = None) -> int:
    w = check_positive_int(w, "w", maximum=MAX_WINDOW)
    if n is not None and w > n:
        raise ValueError(f"w must be <= the stream length {n}, got {w}")
    return w


_budget_parts = split_budget  # the last part is the exact remainder (see split_budget)


def _check_defaults(defaults) -> str:
    if not isinstance(defaults, str) or defaults not in DEFAULTS:
        raise ValueError(f"defaults must be one of {sorted(DEFAULTS)}, got {defaults!r}")
    return defaults


def _check_share(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a number in the open interval (0, 1), got {value!r}")
    return float(value)


def _grouper_scales(epsilon_g: float, threshold_share: float) -> tuple[float, float]:
    """Laplace scales of the threshold (Alg. 16 line 8) and of each test (line 11)."""
    return (_SENSITIVITY / (threshold_share * epsilon_g),
            2.0 * _SENSITIVITY / ((1.0 - threshold_share) * epsilon_g))


#: Counts below this keep every exact deviation of a short group (at most 32 members, times at
#: most 64) inside int64; a larger count switches those sums to Python integers.
_EXACT_INT64 = 2**50

#: The Grouper compares ``min(dev, DEV_MAX)``: a public cap (monotone and 1-Lipschitz, so
#: Thm 17's argument is unchanged) that bounds the rounding error of a deviation computed in
#: floating point by 2**-23, a quarter of the comparison grid's step (``_deviations``). It
#: changes a decision only for thresholds above 2**30, i.e. epsilon_g below about 1e-7.
DEV_MAX = 2.0**30


def _deviations(dev_n: np.ndarray, n1) -> np.ndarray:
    """``min(dev_n / n1, DEV_MAX)`` for exact integers ``dev_n = n1 dev`` (int64 or Python
    integers), each quotient correctly rounded as Python's ``int / int`` (what the scalar loop
    computes): numpy's quotient is that once ``dev_n < 2**53`` (both exact as doubles)."""
    if dev_n.dtype != object and (dev_n.size == 0 or int(dev_n.max()) < 2**53):
        return np.minimum(dev_n / n1, DEV_MAX)
    n1 = np.broadcast_to(n1, dev_n.shape)
    return np.array([min(int(d) / int(k), DEV_MAX) for d, k in zip(dev_n, n1, strict=True)],
                    dtype=float)


def _grouper_grid(epsilon_g: float, threshold_share: float):
    """Inside :func:`~.mechanisms.floating_point_safe`: the :class:`~.mechanisms.ComparisonGrid`
    of the Grouper's tests (sensitivity 2 of a deviation, Thm 17); outside, ``None``."""
    if not is_floating_point_safe():
        return None
    return ComparisonGrid.for_sensitivities(
        _SENSITIVITY, largest_scale=max(_grouper_scales(epsilon_g, threshold_share)))


def _grid_theta(theta: float, grid) -> float:
    """θ on the comparison grid (a public rounding) inside the context, else θ itself."""
    return theta if grid is None else float(grid.values(grid.steps(theta)))


def _grouper_setup(epsilon_g: float, threshold_share: float,
                   theta: float) -> tuple[ComparisonGrid | None, float, tuple[float, float]]:
    """What a run of the Grouper (Alg. 16) fixes before any noise: its comparison grid
    (:func:`_grouper_grid`, ``None`` outside the context), θ on that grid and the Laplace
    scales of its threshold and tests (:func:`_grouper_scales`)."""
    grid = _grouper_grid(epsilon_g, threshold_share)
    return grid, _grid_theta(theta, grid), _grouper_scales(epsilon_g, threshold_share)


def _noise_rows(scales: np.ndarray, shape: tuple[int, int], rng: np.random.Generator,
                grid) -> np.ndarray:
    """Noise of ``shape`` whose last two columns are the Grouper's (threshold, deviation) and a
    first one, if any, the Perturber's; ``scales`` broadcasts to ``shape``. Outside the
    context: ``laplace(scales, shape)``. Inside: the Perturber's column is
    :func:`~.mechanisms.laplace`'s grid noise (the noisy counts are released) and the
    Grouper's two are discrete Laplace on the one ``grid`` of its comparisons (scales widened
    by ``grid.widen``), so that ``thr - zdev`` is an exact double."""
    if grid is None:
        return laplace(scales, shape, rng=rng)
    scales = np.broadcast_to(np.asarray(scales, dtype=float), shape)
    k, columns = shape
    rows = np.empty(shape)
    if columns == 3:
        rows[:, 0] = laplace(np.ascontiguousarray(scales[:, 0]), k, rng=rng)
    rows[:, -2] = grid.values(grid.noise(float(scales[0, -2]), k, rng=rng))
    rows[:, -1] = grid.values(grid.noise(float(scales[0, -1]), k, rng=rng))
    return rows


def _split_pegasus_budget(
    epsilon, epsilon_p, epsilon_g, theta, defaults: str = "new"
) -> tuple[float, float, float, float]:
    """Resolve (eps, eps_p, eps_g, theta); eps_p + eps_g must equal eps (Chen 2018 Alg. 15)."""
    epsilon = check_epsilon(epsilon)
    d = DEFAULTS[_check_defaults(defaults)]
    if epsilon_p is None and epsilon_g is None:
        epsilon_p = d["perturber_share"] * epsilon
        epsilon_g = epsilon - epsilon_p
    elif epsilon_g is None:
        epsilon_p = check_epsilon(epsilon_p, "epsilon_p")
        epsilon_g = epsilon - epsilon_p
        if not epsilon_g > 0:
            raise ValueError(f"epsilon_p must be < epsilon = {epsilon}, got {epsilon_p}")
    elif epsilon_p is None:
        epsilon_g = check_epsilon(epsilon_g, "epsilon_g")
        epsilon_p = epsilon - epsilon_g
        if not epsilon_p > 0:
            raise ValueError(f"epsilon_g must be < epsilon = {epsilon}, got {epsilon_g}")
    else:
        epsilon_p = check_epsilon(epsilon_p, "epsilon_p")
        epsilon_g = check_epsilon(epsilon_g, "epsilon_g")
        if not math.isclose(epsilon_p + epsilon_g, epsilon, rel_tol=1e-9, abs_tol=0.0):
            raise ValueError(
                f"epsilon_p + epsilon_g must equal epsilon (Chen 2018 Alg. 15): "
                f"{epsilon_p} + {epsilon_g} = {epsilon_p + epsilon_g} != {epsilon}; "
                f"pass only one of them to have the other computed"
            )
    if theta is None:
        theta = d["theta_times_eps_g"] / epsilon_g
    elif isinstance(theta, bool) or not isinstance(theta, Real) or not math.isfinite(theta) or theta < 0:
        raise ValueError(f"theta must be a finite number >= 0 (a deviation threshold), got {theta!r}")
    return epsilon, float(epsilon_p), float(epsilon_g), float(theta)


def _resolve_options(defaults, smoother, threshold_share) -> tuple[str, str, float]:
    """(defaults, smoother, threshold_share) with the defaults' values filled in, validated."""
    defaults = _check_defaults(defaults)
    d = DEFAULTS[defaults]
    smoother = _check_smoother(d["smoother"] if smoother is None else smoother)
    share = d["threshold_share"] if threshold_share is None else threshold_share
    return defaults, smoother, _check_share(share, "threshold_share")


def deviation(values) -> float:
    """``dev(C[G]) = Σ_i |c_i − mean(C[G])|`` (Chen 2018 eq. 5.4); its sensitivity is 2 (Lemma 16).

    Examples
    --------
    >>> from dpwidgets.engine.streams import deviation
    >>> deviation([2, 4, 6])
    4.0
    """
    values = check_finite_array(values, "values")
    return float(np.abs(values - values.mean()).sum())
