"""Utilities of a partition (Li 2017 §5.2.2): :func:`count_utility`, :func:`erm_utility` and
the named ones, :data:`UTILITIES`.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from ..validation import (
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
)
from .constants import _CELL_VARIANCE

__all__ = ["UTILITIES", "count_utility", "erm_utility"]


def count_utility(n, epsilon, *, cell_variance: float = 0.0):
    """Utility of a partition of ``n`` records at budget ``epsilon`` for counting (Li 2017 §5.2.2 (i)).

    ``U(n, eps) = n^2 / (8 / eps^2 + phi * n)``: the precision (inverse variance) of the
    partition's estimate of the whole data's count of a cell, once scaled by ``N / n``. The
    first term of the denominator is the Laplace variance ``2 (2/eps)^2`` of a replace-one
    count; ``phi = f (1 - f)`` (``cell_variance``) adds the sampling variance of a partition
    seen as a random part of the data. With ``phi = 0`` this is ``1 / (2 (Delta/(n eps))^2)``,
    the inverse of the text's ``U``: the text writes the Laplace *variance* and says
    "maximizing n*eps will lead to best utility", so Alg. 11 must maximise its inverse.
    Inverse variances add up under the inverse-variance ensemble, which is what makes the
    objective ``sum_i U(n_i, eps_i)`` of Def. 5.2.4 the precision of the combined estimate.

    Examples
    --------
    >>> float(count_utility(100, 1.0))
    1250.0
    """
    n = check_finite_array(n, "n", ndim=None, allow_empty=True)
    epsilon = check_finite_array(epsilon, "epsilon", ndim=None, allow_empty=True)
    cell_variance = check_nonnegative(cell_variance, "cell_variance")
    with np.errstate(divide="ignore", invalid="ignore"):
        return n * n / (_CELL_VARIANCE / (epsilon * epsilon) + cell_variance * n)


def erm_utility(
    n,
    epsilon,
    *,
    dimension: int,
    coef_norm: float = 1.0,
    lipschitz: float = 0.25,
    generalization_error: float = 0.1,
    sigma: float = 0.05,
):
    """Utility of a partition for DP empirical risk minimisation (Li 2017 eq. 5.2.5).

    The text bounds the excess loss of Chaudhuri et al.'s private classifier by
    ``A / (n eps)^2 + B / n + e_g / 2`` with ``A = 16 ||f0||^4 d^2 log^2(d/sigma)
    (c + e_g/||f0||^2) / e_g^2`` and ``B = ||f0||^2 log(1/sigma) / e_g``, and takes that bound
    as ``U``. A bound on a loss is to be minimised while Alg. 11 maximises, so we use its
    inverse without the constant ``e_g/2``: ``U = 1 / (A / (n eps)^2 + B / n)``. The constants
    (``||f0|| = 1``, ``c = 1/4`` for the logistic loss, ``e_g = 0.1``, ``sigma = 0.05``) are
    ours; the text leaves them open.

    Examples
    --------
    >>> round(float(erm_utility(1000, 1.0, dimension=3)), 3)
    8.738
    """
    n = check_finite_array(n, "n", ndim=None, allow_empty=True)
    epsilon = check_finite_array(epsilon, "epsilon", ndim=None, allow_empty=True)
    d = float(check_positive_int(dimension, "dimension"))
    coef_norm = check_positive(coef_norm, "coef_norm")
    lipschitz = check_nonnegative(lipschitz, "lipschitz")
    generalization_error = check_positive(generalization_error, "generalization_error")
    sigma = check_probability(sigma, "sigma")
    a = (16.0 * coef_norm**4 * d * d * math.log(d / sigma) ** 2
         * (lipschitz + generalization_error / coef_norm**2) / generalization_error**2)
    b = coef_norm**2 * math.log(1.0 / sigma) / generalization_error
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / (a / (n * epsilon) ** 2 + b / n)


#: Named utility functions for :func:`utility_partition` (``utility=`` also takes a callable
#: ``U(n, eps)`` vectorised over arrays).
UTILITIES: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {"count": count_utility, "erm": erm_utility}
)
