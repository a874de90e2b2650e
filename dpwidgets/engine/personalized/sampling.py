"""The Sampling mechanism (Jorgensen et al. 2015; Li 2017 Def. 5.1.1):
:func:`sampling_probabilities`, :func:`sample_records`.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import bernoulli_coins
from ..validation import check_rng
from .checks import _check_budgets, _check_threshold

__all__ = ["sampling_probabilities", "sample_records"]


def sampling_probabilities(budgets, threshold: float) -> np.ndarray:
    """Inclusion probabilities of the sampling mechanism (Li 2017 Def. 5.1.1).

    ``p_j = (e^{eps_j} - 1) / (e^{eps_T} - 1)`` if ``eps_j < eps_T``, else 1.

    Parameters
    ----------
    budgets : array_like, 1-D
        The privacy vector (all > 0).
    threshold : float
        ``eps_T``, in ``[min(budgets), max(budgets)]``.

    Returns
    -------
    numpy.ndarray of float, in (0, 1].

    Raises
    ------
    ValueError
        Bad budgets or a threshold outside ``[min, max]`` of the budgets.

    Examples
    --------
    >>> sampling_probabilities([0.5, 1.0, 2.0], 1.0).round(3)
    array([0.378, 1.   , 1.   ])
    """
    budgets = _check_budgets(budgets)
    threshold = _check_threshold(threshold, budgets, "sampling", "mean")
    return _inclusion_probabilities(budgets, threshold)


def _inclusion_probabilities(budgets: np.ndarray, threshold: float) -> np.ndarray:
    """``(e^b - 1)/(e^T - 1)`` below the threshold, 1 above (Jorgensen et al. 2015).

    For ``T > 700`` (where ``e^T`` overflows) the same ratio as ``e^(b-T) (1 - e^-b)/(1 - e^-T)``.
    """
    if threshold <= 700.0:
        return np.where(budgets < threshold, np.expm1(budgets) / math.expm1(threshold), 1.0)
    ratio = np.exp(np.minimum(budgets - threshold, 0.0)) * np.expm1(-budgets) / math.expm1(-threshold)
    return np.where(budgets < threshold, ratio, 1.0)


def sample_records(budgets, threshold: float, rng: np.random.Generator | None = None) -> np.ndarray:
    """The procedure ``RS(D, phi, eps_T)``: independent coins, one per record (Li 2017 Def. 5.1.1).

    Returns a boolean mask of the kept records. The coins are independent of the records'
    values, but they must stay secret: amplification by sampling is what turns the
    ``eps_T``-DP mechanism run on the sample into ``eps_j`` for record ``j``.

    Examples
    --------
    >>> import numpy as np
    >>> kept = sample_records([0.5] * 4 + [2.0] * 4, 1.0, np.random.default_rng(0))
    >>> kept.dtype, bool(kept[4:].all())  # a budget >= eps_T is always kept
    (dtype('bool'), True)
    """
    probabilities = sampling_probabilities(budgets, threshold)
    rng = check_rng(rng)
    return bernoulli_coins(probabilities, rng)
