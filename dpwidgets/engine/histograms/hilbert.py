"""The Hilbert curve: how a 2-D grid is flattened so that neighbouring cells stay close.

DAWA (Chen 2018 §4.2.2, for PriRP) partitions a 2-D histogram as a 1-D sequence of its cells
in Hilbert order; :func:`hilbert_order` gives that order (cached per public grid shape for the
publishers), :func:`hilbert_d2xy` and :func:`hilbert_xy2d` the curve itself.
"""

from __future__ import annotations

import functools
import math
from numbers import Integral

import numpy as np

from ..validation import check_positive_int
from .workloads import MAX_MATRIX_ENTRIES

__all__ = ["MAX_HILBERT_ORDER", "hilbert_d2xy", "hilbert_order", "hilbert_xy2d"]


#: The largest Hilbert-curve order (a ``2^31`` square: positions up to ``2^62`` fit in int64).
MAX_HILBERT_ORDER = 31


def _check_cells(values, name: str) -> np.ndarray:
    """A copy of ``values`` as int64, or a ValueError naming ``name`` (integers >= 0 only)."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu" or np.any(array < 0):
        raise ValueError(f"{name} must be integers >= 0")
    return array.astype(np.int64)


def _rotate(s, x, y, rx, ry) -> tuple[np.ndarray, np.ndarray]:
    """Orient the curve inside one quadrant of side ``s`` (the standard Hilbert rotation).

    Where ``ry == 0`` the coordinates are transposed, after a mirror when also ``rx == 1``;
    both directions of the curve (:func:`hilbert_d2xy`, :func:`hilbert_xy2d`) turn alike.
    """
    flip = (ry == 0) & (rx == 1)
    x = np.where(flip, s - 1 - x, x)
    y = np.where(flip, s - 1 - y, y)
    swap = ry == 0
    return np.where(swap, y, x), np.where(swap, x, y)


def hilbert_d2xy(order: int, d) -> tuple[np.ndarray, np.ndarray]:
    """Cell ``(x, y)`` at position ``d`` of the Hilbert curve on a ``2**order`` square (vectorised).

    Consecutive positions are neighbouring cells (distance 1). Inverse of :func:`hilbert_xy2d`.

    Examples
    --------
    >>> from dpwidgets.engine.histograms import hilbert_d2xy
    >>> x, y = hilbert_d2xy(1, [0, 1, 2, 3])
    >>> x.tolist(), y.tolist()
    ([0, 0, 1, 1], [0, 1, 1, 0])
    """
    order = check_positive_int(order, "order", minimum=0, maximum=MAX_HILBERT_ORDER)
    t = _check_cells(d, "d")
    x = np.zeros_like(t)
    y = np.zeros_like(t)
    s = 1
    side = 1 << order
    while s < side:
        rx = 1 & (t // 2)
        ry = 1 & (t ^ rx)
        x, y = _rotate(s, x, y, rx, ry)
        x = x + s * rx
        y = y + s * ry
        t //= 4
        s *= 2
    return x, y


def hilbert_xy2d(order: int, x, y) -> np.ndarray:
    """Position on the Hilbert curve of cell ``(x, y)`` of a ``2**order`` square (vectorised).

    Examples
    --------
    >>> from dpwidgets.engine.histograms import hilbert_xy2d
    >>> hilbert_xy2d(1, [0, 0, 1, 1], [0, 1, 1, 0]).tolist()
    [0, 1, 2, 3]
    """
    order = check_positive_int(order, "order", minimum=0, maximum=MAX_HILBERT_ORDER)
    x = _check_cells(x, "x")
    y = _check_cells(y, "y")
    d = np.zeros(np.broadcast(x, y).shape, dtype=np.int64)
    s = (1 << order) // 2
    while s > 0:
        rx = ((x & s) > 0).astype(np.int64)
        ry = ((y & s) > 0).astype(np.int64)
        d += s * s * ((3 * rx) ^ ry)
        x, y = _rotate(s, x, y, rx, ry)
        s //= 2
    return d


def hilbert_order(shape: tuple[int, int]) -> np.ndarray:
    """C-order flat indices of a ``rows x cols`` grid listed along a Hilbert curve.

    The grid is embedded in the smallest ``2**k`` square; cells outside the grid are skipped,
    so for a ``2**k`` square every step is to an adjacent cell.

    Examples
    --------
    >>> from dpwidgets.engine.histograms import hilbert_order
    >>> hilbert_order((2, 2)).tolist()
    [0, 1, 3, 2]
    """
    if (not isinstance(shape, tuple | list) or len(shape) != 2
            or not all(isinstance(s, Integral | np.integer) and not isinstance(s, bool) and s >= 1
                       for s in shape)):
        raise ValueError(f"shape must be a pair (rows, cols) of integers >= 1, got {shape!r}")
    rows, cols = (int(s) for s in shape)
    order = max(0, math.ceil(math.log2(max(rows, cols, 1))))
    if order > MAX_HILBERT_ORDER or 4**order > MAX_MATRIX_ENTRIES:
        raise ValueError(f"shape must fit in a 2^k square of at most MAX_MATRIX_ENTRIES = "
                         f"{MAX_MATRIX_ENTRIES} cells, got {shape!r}")
    x, y = hilbert_d2xy(order, np.arange(1 << (2 * order)))
    inside = (x < rows) & (y < cols)
    return (x[inside] * cols + y[inside]).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _hilbert_order_cached(shape: tuple[int, int]) -> np.ndarray:
    """:func:`hilbert_order`, computed once per (public) grid shape; read-only."""
    order = hilbert_order(shape)
    order.setflags(write=False)
    return order
