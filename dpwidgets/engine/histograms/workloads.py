"""Workloads: the queries a release should answer well (identity, prefix, range, a matrix).

:func:`workload_matrix` builds the dense query matrix of a workload (and caps its size);
``_Workload`` answers the named workloads without forming that matrix (MWEM's selection needs
every answer each round). The workload is public: sampling random ranges spends no budget.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from ..validation import check_positive_int, check_rng

__all__ = ["workload_matrix", "MAX_QUERIES", "MAX_MATRIX_ENTRIES"]


#: The most queries :func:`workload_matrix` samples (``max_queries``).
MAX_QUERIES = 10**6
#: The most entries of a dense workload matrix (800 MB of float64).
MAX_MATRIX_ENTRIES = 10**8


# ---------------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------------

_NAMED_WORKLOADS = ("identity", "prefix", "range")


def workload_matrix(
    workload, shape: tuple[int, ...], *, rng: np.random.Generator | None = None, max_queries: int = 2000
) -> np.ndarray:
    """The query matrix (queries x cells, cells in C order) of a workload.

    Parameters
    ----------
    workload : None, "identity", "prefix", "range" or array_like
        ``None``/``"identity"``: one query per cell. ``"prefix"``: all prefix sums
        ``x[:i+1].sum()`` (PriROC's one-sided range queries; in 2-D the dominance rectangles
        ``[0, i] x [0, j]``). ``"range"``: all ranges ``[i, j]`` when there are at most
        ``max_queries`` of them, else ``max_queries`` random ranges (random rectangles in 2-D).
        An array: an explicit query matrix with one column per cell.
    shape : tuple of int
        Shape of the histogram.
    rng : numpy.random.Generator, optional
        Used only to sample random ranges (the workload is public: this spends no budget).
    max_queries : int
        Cap on the number of range queries.

    Returns
    -------
    numpy.ndarray
        A dense ``(n_queries, n_cells)`` 0/1 (or explicit) matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.histograms import workload_matrix
    >>> workload_matrix("identity", (3,)).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if (not isinstance(shape, tuple | list) or len(shape) not in (1, 2)
            or not all(isinstance(s, Integral | np.integer) and not isinstance(s, bool) and s >= 1
                       for s in shape)):
        raise ValueError(f"shape must be a tuple of 1 or 2 integers >= 1, got {shape!r}")
    shape = tuple(int(s) for s in shape)
    n = math.prod(shape)
    max_queries = check_positive_int(max_queries, "max_queries", maximum=MAX_QUERIES)
    rng = check_rng(rng)
    if isinstance(workload, str) and workload not in (*_NAMED_WORKLOADS, "identity"):
        raise ValueError(f"workload must be None, one of {_NAMED_WORKLOADS} or a matrix, got {workload!r}")
    if workload is None or isinstance(workload, str):
        if workload is None or workload == "identity" or (workload == "prefix" and len(shape) == 1):
            rows_out = n
        elif workload == "prefix":
            rows_out = min(n, max_queries)
        elif len(shape) == 1:
            rows_out = min(n * (n + 1) // 2, max_queries)
        else:
            rows_out = max_queries
        if rows_out * n > MAX_MATRIX_ENTRIES:
            raise ValueError(
                f"shape and max_queries give a dense {rows_out} x {n} workload matrix; at most "
                f"MAX_MATRIX_ENTRIES = {MAX_MATRIX_ENTRIES} entries are built (use a smaller "
                f"shape or max_queries)"
            )
    if workload is None or (isinstance(workload, str) and workload == "identity"):
        return np.eye(n)
    if isinstance(workload, str):
        if len(shape) == 1:
            idx = np.arange(n)
            if workload == "prefix":
                return (idx[None, :] <= idx[:, None]).astype(float)
            lo, hi = np.triu_indices(n)
            if lo.size > max_queries:
                pick = check_rng(rng).choice(lo.size, size=max_queries, replace=False)
                lo, hi = lo[pick], hi[pick]
            return ((idx[None, :] >= lo[:, None]) & (idx[None, :] <= hi[:, None])).astype(float)
        rows, cols = shape
        r = np.arange(rows)[:, None]
        c = np.arange(cols)[None, :]
        if workload == "prefix":
            i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
            i, j = i.ravel(), j.ravel()
            if i.size > max_queries:
                pick = check_rng(rng).choice(i.size, size=max_queries, replace=False)
                i, j = i[pick], j[pick]
            mats = (r[None] <= i[:, None, None]) & (c[None] <= j[:, None, None])
            return mats.reshape(i.size, n).astype(float)
        gen = check_rng(rng)
        r0, r1 = np.sort(gen.integers(0, rows, size=(2, max_queries)), axis=0)
        c0, c1 = np.sort(gen.integers(0, cols, size=(2, max_queries)), axis=0)
        mats = (
            (r[None] >= r0[:, None, None])
            & (r[None] <= r1[:, None, None])
            & (c[None] >= c0[:, None, None])
            & (c[None] <= c1[:, None, None])
        )
        return mats.reshape(max_queries, n).astype(float)
    matrix = np.asarray(workload, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] != n or not np.all(np.isfinite(matrix)):
        raise ValueError(
            f"workload must be a finite (n_queries, {n}) query matrix, got shape {matrix.shape}"
        )
    return matrix


def _check_workload(workload) -> None:
    """Validate a workload's *kind* before any randomness (its shape is checked later)."""
    if workload is None or isinstance(workload, np.ndarray):
        return
    if isinstance(workload, str):
        if workload not in _NAMED_WORKLOADS:
            raise ValueError(f"workload must be None, one of {_NAMED_WORKLOADS} or a matrix, got {workload!r}")
        return
    try:
        matrix = np.asarray(workload, dtype=float)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.ndim != 2:
        raise ValueError(
            f"workload must be None, one of {_NAMED_WORKLOADS} or a 2-D query matrix, got "
            f"{type(workload).__name__}"
        )


class _Workload:
    """A workload answered without forming a dense matrix for the named kinds.

    ``answer(x)`` returns all query answers of a flat (C-order) vector; ``row(i)`` the i-th
    query as a flat vector; ``sensitivity`` the largest change of any answer when one cell
    changes by 1.
    """

    def __init__(self, workload, shape: tuple[int, ...], rng: np.random.Generator, max_queries: int = 2000):
        self.shape = shape
        self.n = int(np.prod(shape))
        self.kind = "matrix"
        self.sensitivity = 1.0
        if workload is None or (isinstance(workload, str) and workload == "identity"):
            self.kind = "identity"
            self.size = self.n
        elif isinstance(workload, str) and workload == "prefix":
            self.kind = "prefix"
            self.size = self.n
        elif isinstance(workload, str) and workload == "range":
            self.kind = "range"
            if len(shape) == 1:
                lo, hi = np.triu_indices(self.n)
                if lo.size > max_queries:
                    pick = rng.choice(lo.size, size=max_queries, replace=False)
                    lo, hi = lo[pick], hi[pick]
                self.bounds = (lo, hi)
            else:
                rows, cols = shape
                r = np.sort(rng.integers(0, rows, size=(2, max_queries)), axis=0)
                c = np.sort(rng.integers(0, cols, size=(2, max_queries)), axis=0)
                self.bounds = (r[0], r[1], c[0], c[1])
            self.size = self.bounds[0].size
        else:
            self.matrix = workload_matrix(workload, shape)
            self.size = self.matrix.shape[0]
            self.sensitivity = float(np.max(np.abs(self.matrix))) or 1.0

    def answer(self, flat: np.ndarray) -> np.ndarray:
        if self.kind == "identity":
            return flat
        if self.kind == "matrix":
            return self.matrix @ flat
        if len(self.shape) == 1:
            cs = np.concatenate(([0.0], np.cumsum(flat)))
            if self.kind == "prefix":
                return cs[1:]
            lo, hi = self.bounds
            return cs[hi + 1] - cs[lo]
        grid = flat.reshape(self.shape)
        cs = np.zeros((self.shape[0] + 1, self.shape[1] + 1))
        cs[1:, 1:] = grid.cumsum(0).cumsum(1)
        if self.kind == "prefix":
            return cs[1:, 1:].ravel()
        r0, r1, c0, c1 = self.bounds
        return cs[r1 + 1, c1 + 1] - cs[r0, c1 + 1] - cs[r1 + 1, c0] + cs[r0, c0]

    def row(self, i: int) -> np.ndarray:
        if self.kind == "matrix":
            return self.matrix[i]
        q = np.zeros(self.shape)
        if self.kind == "identity":
            q.flat[i] = 1.0
        elif len(self.shape) == 1:
            if self.kind == "prefix":
                q[: i + 1] = 1.0
            else:
                q[self.bounds[0][i] : self.bounds[1][i] + 1] = 1.0
        elif self.kind == "prefix":
            r, c = divmod(i, self.shape[1])
            q[: r + 1, : c + 1] = 1.0
        else:
            r0, r1, c0, c1 = (b[i] for b in self.bounds)
            q[r0 : r1 + 1, c0 : c1 + 1] = 1.0
        return q.ravel()
