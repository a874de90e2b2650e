"""Floating-point-safe comparisons: :class:`ComparisonGrid`, the common grid of integer steps
on which SVT-style mechanisms compare noisy scores with noisy thresholds."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..validation import check_positive
from .checks import _check_generator, _check_size
from .discrete import _MAX_STEPS, GRID_BITS, MAX_DISCRETE_SCALE, _discrete_laplace_draws
from .noise import _grid_steps_scale

__all__ = ["ComparisonGrid"]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import ComparisonGrid
    >>> grid = ComparisonGrid.for_sensitivities(1.0, largest_scale=2.0)
    >>> steps = grid.steps(np.array([0.5, 3.0])) + grid.noise(2.0, 2, rng=np.random.default_rng(0))
    >>> steps.dtype.kind, grid.values(steps).shape  # exact integer comparisons, doubles back
    ('i', (2,))
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
