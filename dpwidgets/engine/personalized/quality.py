"""The quality measure (not private: reads the true data; evaluation and teaching only):
:func:`relative_frequency_error`.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_finite_array, check_positive

__all__ = ["relative_frequency_error"]


def relative_frequency_error(true_counts, counts, *, shape=None, queries=None,
                             n_queries: int = 1000, rng: np.random.Generator | None = None,
                             n: int | None = None) -> float:
    """Mean relative frequency error of random range-count queries (Li 2017 §5.3.1).

    ``RFE(q) = |A_act(q) - A_noisy(q)| / n`` with ``n`` the number of records of the original
    data (default: the true total), averaged over box queries on the domain ``shape`` (the
    product of whose sizes is the number of cells). The text writes the difference without
    the absolute value; a signed mean would let errors cancel.

    Not private: reads the true histogram.

    Examples
    --------
    >>> import numpy as np
    >>> rfe = relative_frequency_error([10, 20, 30], [12, 18, 30], n_queries=20,
    ...                                rng=np.random.default_rng(0))
    >>> round(rfe, 3)
    0.015
    """
    from ..dynamic import range_query_error

    true_counts = check_finite_array(true_counts, "true_counts")
    counts = check_finite_array(counts, "counts")
    if n is None:
        n = float(np.sum(true_counts))
        if not n > 0:
            raise ValueError("true_counts must have a positive total (or pass n)")
    n = check_positive(n, "n")
    return range_query_error(true_counts[None, :], counts[None, :], n_queries, rng,
                             shape=shape, queries=queries) / n
