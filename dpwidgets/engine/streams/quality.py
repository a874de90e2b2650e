"""Quality measures of stream releases (Chen 2018 §5.6): scaled total L1 and average L1 error. Part
of :mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

import numpy as np

from ..validation import (
    check_finite_array,
)

__all__ = ["scaled_total_l1", "average_l1"]


def scaled_total_l1(true_counts, estimates) -> float:
    """Scaled total L1 error ``Σ_t |c_t − ĉ_t| / Σ_t c_t`` (Chen 2018 §5.6.1, Fig. 5.3-5.4).

    Works for a matrix of streams too (sums over everything).

    Examples
    --------
    >>> from dpwidgets.engine.streams import scaled_total_l1
    >>> scaled_total_l1([10, 10], [9, 12])  # (1 + 2) / 20
    0.15
    """
    c = check_finite_array(true_counts, "true_counts", ndim=None)
    e = check_finite_array(estimates, "estimates", ndim=None)
    if c.shape != e.shape:
        raise ValueError(f"true_counts and estimates must have the same shape, got {c.shape} and {e.shape}")
    total = c.sum()
    if not total > 0:
        raise ValueError("true_counts must have a positive total for the scaled L1 error")
    return float(np.abs(c - e).sum() / total)


def average_l1(true_values, estimates) -> float:
    """Average L1 error ``mean_t |x_t − x̂_t|`` (Chen 2018 §5.6.2 windows, §5.6.4 hierarchies).

    Examples
    --------
    >>> from dpwidgets.engine.streams import average_l1
    >>> average_l1([10, 10], [9, 12])
    1.5
    """
    c = check_finite_array(true_values, "true_values", ndim=None)
    e = check_finite_array(estimates, "estimates", ndim=None)
    if c.shape != e.shape:
        raise ValueError(f"true_values and estimates must have the same shape, got {c.shape} and {e.shape}")
    return float(np.abs(c - e).mean())
