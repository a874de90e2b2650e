"""The data-touching step: :class:`Records` (the few aggregates a diagnostic reads),
:class:`ArrayRecords` (the records in memory) and the bin indexing they count with.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

import numpy as np

from .checks import _check_domain, _check_scored

__all__ = ["Records", "ArrayRecords"]


def _uniform_bin(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each value in ``[edges[0], edges[-1]]`` for evenly spaced ``edges`` (a linspace).

    The same bins as ``np.histogram``/``np.histogram2d`` with these edges (bin i is
    ``[edges[i], edges[i+1])``, the last one closed), found by index arithmetic plus one
    comparison each way against the actual edges, which absorbs the rounding of both the
    division and of linspace: O(n) instead of a binary search per value. ``edges`` must be
    non-decreasing and ``values`` inside ``[edges[0], edges[-1]]``.
    """
    m = edges.size - 1
    scale = m / (edges[-1] - edges[0])
    guess = np.clip(((values - edges[0]) * scale).astype(np.int64), 0, m - 1)
    guess -= values < edges[guess]
    guess += (values >= edges[guess + 1]) & (guess < m - 1)
    # Only when an edge's rounding exceeds a bin (absurd ranges) can one step be too few.
    wrong = (values < edges[guess]) | ((values >= edges[guess + 1]) & (guess < m - 1))
    if wrong.any():
        guess[wrong] = np.clip(np.searchsorted(edges, values[wrong], side="right") - 1, 0, m - 1)
    return guess


def _interval_index(scores: np.ndarray, thresholds_desc: np.ndarray) -> np.ndarray:
    """Index k of the interval (θ_{k+1}, θ_k] holding each score; the last one is closed."""
    ascending = thresholds_desc[::-1]
    j = np.searchsorted(ascending, scores, side="left")  # scores in (a_{j-1}, a_j] -> j
    j = np.clip(j, 1, ascending.size - 1)
    return (ascending.size - 1) - j


def _fixed_interval_index(scores: np.ndarray, thresholds_desc: np.ndarray) -> np.ndarray:
    """:func:`_interval_index` for equal-width thresholds (a linspace), in O(n).

    Interval k is ``(θ_{k+1}, θ_k]``: left-open, so the mirror image of :func:`_uniform_bin`'s
    ``[e_i, e_{i+1})`` bins on the negated scores and thresholds.
    """
    m = thresholds_desc.size - 1
    return _uniform_bin(-scores, -thresholds_desc) if m else np.zeros(scores.size, np.int64)


def _first_doubling(dist: np.ndarray, mu: float, max_doublings: int) -> np.ndarray:
    """The smallest ``i`` in ``[0, max_doublings]`` with ``dist <= mu 2^i`` for each distance
    (``max_doublings + 1``: in no interval). Exact at powers of two (a boundary is inside)."""
    with np.errstate(divide="ignore"):
        first = np.ceil(np.log2(dist / mu))
    first = np.clip(np.nan_to_num(first, neginf=0.0), 0, max_doublings + 1)
    # Exact correction of log2's rounding at powers of two (a boundary value is inside).
    first = np.where((first > 0) & (dist <= mu * np.exp2(first - 1)), first - 1, first)
    first = np.where(dist > mu * np.exp2(first), first + 1, first)
    return np.clip(first, 0, max_doublings + 1).astype(np.int64)


class Records:
    """The records a diagnostic reads, seen only through the aggregates its mechanism needs.

    A diagnostic's data-touching step is a handful of counts: how many predictions or
    residuals lie within each doubling interval (:func:`private_bounds`), the 2-D histogram of
    (prediction, residual) on a grid (PriRP), the positives and negatives per score interval
    (PriROC with fixed thresholds). Only order statistics (the s-RecursiveMedians of PriROC's
    text variant and of PriBRP) need the scores themselves. :class:`ArrayRecords` computes
    these in memory; ``dpwidgets.scored.TableRecords`` asks a query engine for them, so a
    curator never loads a table that a diagnostic only counts. Every engine function here
    accepts a :class:`Records` in place of its arrays (its first argument, the second ``None``).

    Columns are named ``"predicted"``, ``"residual"`` and ``"label"`` (the outcome; 0/1 for
    the classifiers' diagnostics, whose scores are the ``"predicted"`` probabilities).
    """

    n: int

    def check_scored(self, lower: float, upper: float) -> None:
        """Raise ``ValueError`` unless every label is 0 or 1 and every score lies in
        ``[lower, upper]`` (the messages of the in-memory checks)."""
        raise NotImplementedError

    def doubling_counts(self, column: str, center: float, mu: float,
                        max_doublings: int) -> np.ndarray:
        """Counts per :func:`_first_doubling` index of ``|column - center|`` (length
        ``max_doublings + 2``; the last entry: in no interval)."""
        raise NotImplementedError

    def grid_counts(self, edges_predicted: np.ndarray, edges_residual: np.ndarray) -> np.ndarray:
        """The ``(m, m)`` histogram of the (prediction, residual) pairs inside both ranges, on
        the bins of :func:`_uniform_bin` for these equal-width ``edges``."""
        raise NotImplementedError

    def interval_counts(self, thresholds_desc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positives and negatives per interval ``(θ_{k+1}, θ_k]`` of equal-width decreasing
        thresholds (:func:`_fixed_interval_index`): two float arrays of ``len - 1`` counts."""
        raise NotImplementedError

    def scored(self) -> tuple[np.ndarray, np.ndarray]:
        """The labels (int8) and scores themselves, for the mechanisms that need order
        statistics."""
        raise NotImplementedError


class ArrayRecords(Records):
    """:class:`Records` held in memory (the arrays an engine function was given)."""

    def __init__(self, predicted: np.ndarray, residual: np.ndarray | None = None,
                 label: np.ndarray | None = None):
        self.columns = {"predicted": predicted, "residual": residual, "label": label}
        self.n = int(predicted.size)

    def check_scored(self, lower: float, upper: float) -> None:
        pass  # the engine functions check their arrays before they wrap them

    def doubling_counts(self, column, center, mu, max_doublings):
        dist = np.abs(self.columns[column] - center)
        return np.bincount(_first_doubling(dist, mu, max_doublings), minlength=max_doublings + 2)

    def grid_counts(self, edges_predicted, edges_residual):
        x, r = self.columns["predicted"], self.columns["residual"]
        m = edges_predicted.size - 1
        inside = ((x >= edges_predicted[0]) & (x <= edges_predicted[-1])
                  & (r >= edges_residual[0]) & (r <= edges_residual[-1]))
        cell = _uniform_bin(x[inside], edges_predicted) * m + _uniform_bin(r[inside], edges_residual)
        return np.bincount(cell, minlength=m * m).reshape(m, m).astype(float)

    def interval_counts(self, thresholds_desc):
        y, p = self.columns["label"], self.columns["predicted"]
        k = _fixed_interval_index(p, thresholds_desc)
        cells = thresholds_desc.size - 1
        return (np.bincount(k[y == 1], minlength=cells).astype(float),
                np.bincount(k[y == 0], minlength=cells).astype(float))

    def scored(self):
        return self.columns["label"], self.columns["predicted"]


def _scored_records(labels, scores, name: str, bounds=(0.0, 1.0)
                    ) -> tuple[Records, float, float]:
    """:func:`_check_scored` for arrays (wrapped as :class:`ArrayRecords`), or ``labels`` a
    :class:`Records` (``scores`` None), checked against ``bounds`` when it is read."""
    if isinstance(labels, Records) and scores is None:
        return (labels, *_check_domain(bounds))
    y, p, lower, upper = _check_scored(labels, scores, name, bounds)
    return ArrayRecords(p, label=y), lower, upper
