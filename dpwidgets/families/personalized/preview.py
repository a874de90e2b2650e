"""What the personalized-DP widget computes besides the door's releases and previews: the
error measure of Li 2017, §5.3.1 (the relative frequency error of random range counts) and the
reference histogram it is measured against, on public numbers only -- the data in a teaching
session, where it is declared public, the public stand-in otherwise.

The widget imports the engine only through this module (and the door).

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.personalized.preview import (frequency_error, range_queries,
...                                                       reference_histogram)
>>> queries = range_queries((4,), 10)
>>> truth = reference_histogram(np.array([[0.5, 1.0], [1.5, 1.0]]), np.arange(5.0))
>>> truth.tolist(), frequency_error(truth, truth, shape=None, queries=queries, n=2.0)
([1.0, 1.0, 0.0, 0.0], 0.0)
"""

from __future__ import annotations

import zlib

import numpy as np

from ...engine.dynamic import random_range_queries
from ...engine.personalized import relative_frequency_error

__all__ = ["frequency_error", "range_queries", "reference_histogram"]


def range_queries(dims: tuple[int, ...], n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """``n_queries`` random range-count queries (boxes) on the grid ``dims``, the same for a
    grid whatever the data (seeded by the grid): Li 2017, §5.3.1's workload.

    Examples
    --------
    >>> low, high = range_queries((8, 2), 3)
    >>> low.shape, bool((low <= high).all())
    ((3, 2), True)
    """
    return random_range_queries(dims, n_queries,
                                np.random.default_rng(zlib.crc32(repr(dims).encode())))


def frequency_error(reference: np.ndarray, counts: np.ndarray, *, shape, queries,
                    n: float) -> float:
    """The relative frequency error of ``counts`` against ``reference`` on ``queries``
    (Li 2017, §5.3.1), over ``n`` records.

    Examples
    --------
    >>> truth = np.array([5.0, 5.0])
    >>> frequency_error(truth, truth + 1.0, shape=None, queries=range_queries((2,), 4),
    ...                 n=10.0) > 0
    True
    """
    return relative_frequency_error(reference, counts, shape=shape, queries=queries, n=n)


def reference_histogram(table: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The histogram of a public table's values (its first column) on ``edges``, a value
    outside them in the nearest end bin: what the errors are measured against.

    Examples
    --------
    >>> reference_histogram(np.array([[-3.0, 1.0], [0.2, 1.0]]), np.array([0.0, 1.0])).tolist()
    [2.0]
    """
    values = np.clip(table[:, 0], edges[0], edges[-1])
    return np.histogram(values, bins=edges)[0].astype(float)
