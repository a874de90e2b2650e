"""What the personalized-DP widget computes besides the door's releases and previews: the
error measure of Li 2017, §5.3.1 (the relative frequency error of random range counts) and the
reference histogram it is measured against, on public numbers only -- the data in a teaching
session, where it is declared public, the public stand-in otherwise -- and the trail of
Sampling's error as ε_T moves (Li 2017, Fig. 5.2-5.5).

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
from .display import _THRESHOLDED  # the methods with a sampling threshold ε_T
from .params import METHOD_LABELS

__all__ = ["ErrorMeasure", "Trail", "bin_counts", "frequency_error", "range_queries",
           "reference_histogram"]


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


def bin_counts(release) -> np.ndarray:
    """The released counts per public bin of a ``release`` (or preview): what the histogram
    panel draws, one value per bin whatever the run (the accuracy panel's values).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> bin_counts(SimpleNamespace(output={"counts": [3, 4]})).tolist()
    [3.0, 4.0]
    """
    return np.asarray(release.output["counts"], dtype=float)


class ErrorMeasure:
    """The error measure of a widget: the reference histogram of each public table it is
    measured against and the random range queries of each grid, each made once.

    Parameters
    ----------
    n_queries : int
        Random range-count queries per grid (fixed per widget).

    Examples
    --------
    >>> measure = ErrorMeasure(20)
    >>> table = np.array([[0.5, 1.0], [1.5, 1.0]])
    >>> truth = measure.reference(table, np.arange(3.0))
    >>> values, levels, current = measure.errors(
    ...     {"minimum": {"counts": truth}}, truth, edges=np.arange(3.0), shape=None, n=2.0)
    >>> values, levels, current
    ({'Minimum': 0.0}, {'minimum': ('Minimum', 0.0)}, {})
    """

    def __init__(self, n_queries: int) -> None:
        self.n_queries = int(n_queries)
        self._references: dict[int, tuple] = {}
        self._queries: dict[tuple, tuple] = {}

    def reference(self, table: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """The histogram of a public ``table``'s values on ``edges``, once per table and
        edges."""
        key = id(table)
        hit = self._references.get(key)
        if hit is None or hit[0] is not table or not np.array_equal(hit[1], edges):
            if len(self._references) > 4:
                self._references.clear()
            hit = (table, edges, reference_histogram(table, edges))
            self._references[key] = hit
        return hit[2]

    def queries(self, dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The range queries of the grid ``dims`` (:func:`range_queries`), once per grid."""
        key = (dims, self.n_queries)
        if key not in self._queries:
            self._queries[key] = range_queries(dims, self.n_queries)
        return self._queries[key]

    def errors(self, outputs: dict[str, dict], reference: np.ndarray, *, edges: np.ndarray,
               shape, n: float) -> tuple[dict, dict, dict]:
        """The relative frequency error of each method's DP counts (``outputs``, by method)
        against ``reference``, over ``n`` records on the bins ``edges`` (the grid ``shape``):
        ``(values by label, levels, current)``: the errors of the methods without a
        threshold drawn as levels, those with one at their ε_T."""
        queries = self.queries(tuple(shape) if shape else (edges.size - 1,))
        values: dict[str, float] = {}
        levels, current = {}, {}
        for m, out in outputs.items():
            error = frequency_error(reference, out["counts"], shape=shape, queries=queries, n=n)
            values[METHOD_LABELS[m]] = error
            if m in _THRESHOLDED:
                current[m] = (METHOD_LABELS[m], float(out["threshold"]), error)
            else:
                levels[m] = (METHOD_LABELS[m], error)
        return values, levels, current


class Trail:
    """Sampling's error at every ε_T visited (Li 2017, Fig. 5.2's curve, traced by the slider),
    started afresh whenever what it is measured on changes.

    Examples
    --------
    >>> trail = Trail()
    >>> trail.follow(("d", "v"), {"sampling": ("Sampling", 0.3, 0.01)})
    {0.3: 0.01}
    >>> trail.follow(("d", "v"), {"sampling": ("Sampling", 0.5, 0.02)})
    {0.3: 0.01, 0.5: 0.02}
    >>> trail.follow(None, {})
    {}
    """

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.points: dict[float, float] = {}

    def follow(self, key: tuple | None, current: dict) -> dict[float, float]:
        """Add Sampling's point of ``current`` (:meth:`ErrorMeasure.errors`) to the trail of
        ``key`` (what the errors are measured on; None: no error measure, no trail)."""
        if key is None:
            self.key, self.points = None, {}
            return self.points
        if key != self.key:
            self.key, self.points = key, {}
        if "sampling" in current:
            self.points[current["sampling"][1]] = current["sampling"][2]
        return self.points
