"""Validation at the boundary, before any randomness: the series, the cutoff, the
threshold, the public cardinality, the publisher (:data:`PUBLISHER_RULE`), a snapshot's shape.
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from ..validation import check_counts, check_epsilon, check_positive_int
from .constants import DSAT_DEFAULTS, MAX_WINDOW

__all__ = ["ORDER_DEPENDENT_PUBLISHERS", "PUBLISHER_RULE"]


#: Cells validated per :func:`check_counts` call: its temporaries (a rounded copy, masks) stay
#: a few hundred kB that the allocator reuses, instead of fresh 14 MB ones for a (500, 3456)
#: series whose page faults cost ten times the checks themselves.
_CHECK_BLOCK = 1 << 16


def _check_counts_by_block(histograms, name: str) -> np.ndarray:
    """:func:`check_counts` (``ndim=2``) on the whole series, run a block of rows at a time."""
    try:
        array = np.asarray(histograms, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 2 or array.size <= _CHECK_BLOCK:
        return check_counts(histograms if array is None else array, name, ndim=2)
    step = max(1, _CHECK_BLOCK // array.shape[1])
    for start in range(0, array.shape[0], step):
        check_counts(array[start : start + step], name, ndim=2)
    return array


def _check_series(histograms, name: str = "histograms", *, min_times: int = 1) -> np.ndarray:
    """An (N, U) array of whole non-negative counts; a ragged list is refused by name."""
    if isinstance(histograms, Sequence) and not isinstance(histograms, str | bytes):
        widths = {np.shape(row) for row in histograms}
        if len(widths) > 1:
            raise ValueError(
                f"{name} must be an (N, U) array: every snapshot needs the same number of bins "
                f"U, got snapshots of shapes {sorted(widths)}"
            )
    series = _check_counts_by_block(histograms, name)
    if series.shape[1] == 0:
        raise ValueError(f"{name} must have at least one bin per snapshot, got shape {series.shape}")
    if series.shape[0] < min_times:
        raise ValueError(f"{name} must hold at least {min_times} snapshots, got {series.shape[0]}")
    return series


def _check_cutoff(cutoff, n_times: int, name: str = "cutoff", what: str = "N") -> int:
    if cutoff is None:
        return max(1, int(round(DSAT_DEFAULTS["cutoff_fraction"] * n_times)))
    cutoff = check_positive_int(cutoff, name)
    if cutoff > n_times:
        raise ValueError(f"{name} (C) must be between 1 and {what} = {n_times}, got {cutoff}")
    return cutoff


def _check_w(w) -> int:
    return check_positive_int(w, "w", maximum=MAX_WINDOW)


def _check_threshold(threshold) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 <= threshold <= 2:
        raise ValueError(
            f"threshold must be a number in [0, 2] (the range of the normalised L1 distance), "
            f"got {threshold!r}"
        )
    return float(threshold)


def _check_cardinality(cardinality, series: np.ndarray) -> int:
    totals = series.sum(axis=1)
    if cardinality is None:
        # Never derived from the data: the smallest snapshot total is a function of every
        # user's records, and a release calibrated to it is not DP (adding one user to every
        # snapshot moves it, hence Delta and k, and both would be published).
        raise ValueError(
            "cardinality= is required: the public lower bound n on the snapshot sizes "
            "(Delta = 2/(n-1), Lemma 4.2.1), declared by whoever knows it (the data owner, or "
            "the parameters of a public generator); it is never read off the data"
        )
    cardinality = check_positive_int(cardinality, "cardinality", minimum=2)
    if totals.min() < cardinality - 1:
        raise ValueError(
            f"cardinality (the public snapshot size n) is {cardinality}, but a snapshot holds "
            f"fewer than n - 1 records, so Delta = 2/(n-1) would not bound the "
            f"distance's sensitivity; pass a smaller public lower bound"
        )
    return cardinality


def _check_k(k) -> float | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, Real) or not 0 < k < 1:
        raise ValueError(f"k (the decision share eps1 = k*eps) must be in (0, 1), got {k!r}")
    return float(k)


def _check_unit(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


#: Publishers whose error depends on the order of the cells: DAWA's first stage merges runs of
#: *adjacent* cells into buckets (Li, Hay, Miklau, Wang 2014), EFPA keeps the low frequencies of
#: the 1-D sequence. On a snapshot of several attributes flattened to U cells, adjacent cells
#: differ in the last attribute, or are unrelated where a row of it ends, so the buckets mix
#: cells that have nothing in common and the bias swamps the saving in noise (measured on a
#: flattened multi-dimensional census series by ``benchmarks/dynamic_publishers.py``).
#: Identity, uniform, HB, AHP and MWEM do not rely on a smooth 1-D order; HB is no better than
#: identity there, hence identity for ``"auto"``.
ORDER_DEPENDENT_PUBLISHERS: tuple[str, ...] = ("dawa_dyadic", "efpa")

#: ``publisher="auto"``: the rule that picks the publisher from the snapshot's public ``shape``.
PUBLISHER_RULE = (
    "auto: DAWA ('dawa') where the snapshot is a 1-D histogram (shape with one attribute of "
    "more than one value); identity (Laplace per cell, the text's LPA) where it is a flattened "
    "multi-dimensional one, or where no shape is given (the order of the cells is then unknown)"
)


def _check_publisher(publisher, n_bins: int | None = None, shape=None) -> tuple[str, dict]:
    """The registry name of the publisher and what to record about the choice (public).

    ``"auto"`` applies :data:`PUBLISHER_RULE`. An explicit order-dependent publisher
    (:data:`ORDER_DEPENDENT_PUBLISHERS`) on a multi-dimensional ``shape`` is kept -- the
    caller chose it -- and the result says so in ``details["publisher_note"]``.
    """
    from ..histograms import PUBLISHERS

    dims = None if shape is None else _check_shape(shape, n_bins)
    multi = dims is not None and sum(d > 1 for d in dims) > 1
    if publisher == "auto":
        name = "dawa_dyadic" if dims is not None and not multi else "identity"
        return name, {"publisher_rule": PUBLISHER_RULE}
    if not isinstance(publisher, str) or publisher not in PUBLISHERS:
        raise ValueError(f"publisher must be 'auto' or one of {sorted(PUBLISHERS)}, got {publisher!r}")
    if 1 not in PUBLISHERS[publisher].dims:
        raise ValueError(f"publisher {publisher!r} does not publish 1-D histograms")
    name = PUBLISHERS[publisher].name
    info: dict = {}
    if multi and name in ORDER_DEPENDENT_PUBLISHERS:
        info["publisher_note"] = (
            f"explicit choice: {publisher!r} partitions the {n_bins} cells of the flattened "
            f"{'x'.join(map(str, dims))} snapshot in their 1-D order, which mixes unrelated "
            f"cells; on multi-dimensional histograms its error is typically many times the "
            f"identity publisher's ('auto' picks identity here)"
        )
    return name, info


def _check_burn_in(burn_in, n_times: int, what: str = "N") -> int:
    """DSAT's burn-in ``M``: default ``max(1, round(0.02 n_times))``, below ``n_times`` (the
    series length N, or the window w of w-event DSAT; a window of 1 still allows M = 1)."""
    if burn_in is None:
        return max(1, int(round(0.02 * n_times)))
    burn_in = check_positive_int(burn_in, "burn_in", minimum=1)
    if burn_in >= max(n_times, 2):
        raise ValueError(f"burn_in (M) must be smaller than {what} = {n_times}, got {burn_in}")
    return burn_in


def _check_split_sizes(cardinality, n_bins, cutoff) -> tuple[int, int, int]:
    """The public sizes a decision share ``k`` is computed from (:func:`dsft_k`,
    :func:`paced_k`): the cardinality ``n`` (>= 2), the bins ``U`` and the cutoff ``C``."""
    return (
        check_positive_int(cardinality, "cardinality", minimum=2),
        check_positive_int(n_bins, "n_bins"),
        check_positive_int(cutoff, "cutoff"),
    )


class _DsatArgs(NamedTuple):
    """DSAT's checked arguments (:func:`_check_dsat_args`)."""

    series: np.ndarray
    epsilon: float
    w: int | None
    cutoff: int
    threshold: float
    burn_in: int
    delta: float
    theta: float
    k: float | None
    cardinality: int
    publisher: str
    choice: dict


def _check_dsat_args(histograms, epsilon, cutoff, threshold, burn_in, delta, theta, k,
                     cardinality, publisher, shape, *, windowed: bool = False,
                     w=None) -> _DsatArgs:
    """The arguments :func:`dsat` and :func:`dsat_w_event` share, checked in this order before
    any randomness. ``windowed`` (w-event DSAT): the window ``w`` is checked too, and bounds
    the cutoff and the burn-in instead of the series length N."""
    series = _check_series(histograms, min_times=2)
    epsilon = check_epsilon(epsilon)
    if not windowed:
        span, what = series.shape[0], "N"
    else:
        span = w = _check_w(w)
        what = "w"
    cutoff = _check_cutoff(cutoff, span, what=what)
    threshold = _check_threshold(threshold)
    burn_in = _check_burn_in(burn_in, span, what=what)
    delta = _check_unit(delta, "delta")
    theta = _check_unit(theta, "theta")
    k = _check_k(k)
    cardinality = _check_cardinality(cardinality, series)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    return _DsatArgs(series, epsilon, w, cutoff, threshold, burn_in, delta, theta, k,
                     cardinality, publisher, choice)


def _check_shape(shape, n_bins: int) -> tuple[int, ...]:
    if shape is None:
        return (n_bins,)
    if isinstance(shape, str):
        raise ValueError(f"shape must be a tuple of positive integers, got {shape!r}")
    try:
        dims = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"shape must be a tuple of positive integers, got {shape!r}") from None
    if any(isinstance(s, bool) or not isinstance(s, Integral | np.integer) for s in shape) or any(
        d < 1 for d in dims
    ):
        raise ValueError(f"shape must be a tuple of positive integers, got {shape!r}")
    if math.prod(dims) != n_bins:
        raise ValueError(f"shape {dims} has {math.prod(dims)} cells, but the histograms have {n_bins} bins")
    return dims
