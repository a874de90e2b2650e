"""Quality measures (Li 2017 §4.5.1): range-query error, random range queries, the update
ratio and the data's update rate.
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..validation import check_positive_int, check_rng
from .checks import _check_series, _check_shape
from .constants import MAX_QUERIES

__all__ = ["random_range_queries", "range_query_error", "update_ratio", "empirical_update_rate"]


def random_range_queries(shape, n_queries: int, rng: np.random.Generator | None = None):
    """Random range-count queries over a ``shape``-d domain (Li 2017 §4.5.1).

    Each query picks, on every attribute, a random interval ``[lo, hi)`` (two uniform cells,
    sorted, both ends included): "Where A_1 in I_1 and ... and A_m in I_m".

    Returns
    -------
    (lo, hi) : two int arrays of shape (n_queries, len(shape)), half-open per dimension.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = random_range_queries((3, 4), 5, np.random.default_rng(0))
    >>> lo.shape, bool(np.all(lo < hi))
    ((5, 2), True)
    """
    try:
        cells = math.prod(int(s) for s in np.atleast_1d(shape))
    except (TypeError, ValueError):
        raise ValueError(f"shape must be a tuple of positive integers, got {shape!r}") from None
    dims = _check_shape(shape, cells)
    n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
    rng = check_rng(rng)
    ends = rng.integers(0, np.array(dims), size=(2, n_queries, len(dims)))
    return np.minimum(ends[0], ends[1]), np.maximum(ends[0], ends[1]) + 1


def _query_matrix(dims: tuple[int, ...], lo: np.ndarray, hi: np.ndarray):
    """Sparse (Q x prod(dims+1)) matrix answering box queries from padded prefix sums."""
    from scipy import sparse

    n_queries, d = lo.shape
    padded = tuple(s + 1 for s in dims)
    corners = np.array(np.meshgrid(*[[0, 1]] * d, indexing="ij")).reshape(d, -1).T  # (2^d, d)
    # Corner c takes hi on the dimensions where c = 1, lo elsewhere; sign (-1)^(#lo).
    coords = np.where(corners[None, :, :] == 1, hi[:, None, :], lo[:, None, :])  # (Q, 2^d, d)
    flat = np.ravel_multi_index(tuple(np.moveaxis(coords, -1, 0)), padded)
    signs = np.where((d - corners.sum(axis=1)) % 2 == 0, 1.0, -1.0)
    rows = np.repeat(np.arange(n_queries), corners.shape[0])
    return sparse.csr_matrix((np.tile(signs, n_queries), (rows, flat.ravel())),
                             shape=(n_queries, math.prod(padded)))


def range_query_error(
    true,
    released,
    n_queries: int = 1000,
    rng: np.random.Generator | None = None,
    *,
    shape: Sequence[int] | None = None,
    queries: tuple[np.ndarray, np.ndarray] | None = None,
) -> float:
    """Mean absolute error of random range-count queries over the series (Li 2017 §4.5.1).

    ``E^a = (1/(M N)) sum_k sum_i |A~_i^k - A_i^k|`` over ``M`` random box queries and all N
    time points, answered on the true and the released histograms.

    Parameters
    ----------
    true, released : array_like, shape (N, U)
        The true snapshots and a release (e.g. ``DynamicRelease.releases``).
    n_queries : int
        ``M`` (the text: 5000 per run, 10 runs).
    rng : numpy.random.Generator, optional
        Draws the queries (use the same seed to compare methods on the same queries).
    shape : sequence of int, optional
        The attribute domains whose product is U (e.g. ``(96, 12, 3)``, a ``(32, 32)`` grid);
        default 1-D ``(U,)``.
    queries : (lo, hi), optional
        Fixed queries from :func:`random_range_queries` (then ``n_queries``/``rng`` unused).

    Returns
    -------
    float

    Notes
    -----
    Not private: it reads the true histograms (an evaluation measure, teaching mode only).
    Vectorised through prefix sums of ``released - true`` and a sparse corner matrix.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> series = rng.multinomial(500, [0.5, 0.3, 0.2], size=20)
    >>> round(range_query_error(series, series + 2.0, 50, rng), 1)  # every cell 2 off
    3.6
    >>> round(range_query_error(series, series, 50, rng), 1)
    0.0
    """
    true = _check_float_series(true, "true")
    released = _check_float_series(released, "released")
    if true.shape != released.shape:
        raise ValueError(f"true and released must have the same shape, got {true.shape} and {released.shape}")
    dims = _check_shape(shape, true.shape[1])
    if queries is None:
        n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
        rng = check_rng(rng)
        lo, hi = random_range_queries(dims, n_queries, rng)
    else:
        if not isinstance(queries, tuple | list) or len(queries) != 2:
            raise ValueError(f"queries must be a pair (lo, hi) of (M, {len(dims)}) integer arrays")
        try:
            lo, hi = (np.asarray(q, dtype=int) for q in queries)
        except (TypeError, ValueError):
            raise ValueError(f"queries must be a pair (lo, hi) of (M, {len(dims)}) integer arrays") from None
        if lo.shape != hi.shape or lo.ndim != 2 or lo.shape[1] != len(dims):
            raise ValueError(f"queries must be two (M, {len(dims)}) arrays (lo, hi)")
        if np.any(lo < 0) or np.any(hi > np.array(dims)) or np.any(lo >= hi):
            raise ValueError("queries must satisfy 0 <= lo < hi <= shape on every dimension")
    diff = (released - true).reshape((true.shape[0], *dims))
    prefix = np.pad(diff, [(0, 0)] + [(1, 0)] * len(dims))
    for axis in range(1, len(dims) + 1):
        prefix = np.cumsum(prefix, axis=axis)
    matrix = _query_matrix(dims, lo, hi)
    errors = matrix @ prefix.reshape(true.shape[0], -1).T  # (M, N)
    return float(np.mean(np.abs(errors)))


def _check_float_series(values, name: str) -> np.ndarray:
    from ..validation import check_finite_array

    return check_finite_array(values, name, ndim=2)


def update_ratio(release_points) -> np.ndarray:
    """``C_i / i``: releases up to and including time ``i``, over ``i`` (Li 2017 Def. 4.2.1).

    Examples
    --------
    >>> update_ratio([True, False, True, False])
    array([1.        , 0.5       , 0.66666667, 0.5       ])
    """
    points = np.asarray(release_points)
    if points.ndim != 1 or points.size == 0 or points.dtype != bool:
        raise ValueError("release_points must be a non-empty 1-D boolean array")
    return np.cumsum(points) / np.arange(1, points.size + 1)


def empirical_update_rate(histograms) -> np.ndarray:
    """Per-step update rate of a series: ``||H_i - H_{i-1}||_1 / |D_{i-1}|`` (N - 1 values).

    When ``m`` tuples are replaced per step the text's update rate is ``r = 2m/|D|``
    (Li 2017 §4.5.1, ``m ~ N(r|D|/2, sigma^2)``); a replaced tuple that lands in the cell it left
    cancels, so this is a lower bound on ``r`` that is close to it when the bins are many.
    Not private (reads the true histograms).

    Examples
    --------
    >>> empirical_update_rate([[5, 5], [4, 6], [4, 6]])
    array([0.2, 0. ])
    """
    series = _check_series(histograms, min_times=2)
    totals = series.sum(axis=1)
    if np.any(totals[:-1] == 0):
        raise ValueError("histograms: a snapshot before the last is empty; the rate is undefined")
    return np.abs(np.diff(series, axis=0)).sum(axis=1) / totals[:-1]
