"""The pieces the samplers and baselines share: the distance's sensitivity
(:func:`l1_sensitivity`, Lemma 4.2.1), DSFT's budget split (:func:`dsft_k`), the normalised
L1 distance, the publisher calls, the SVT of the decisions.
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._results import eps_text
from .._results import frozen as _frozen
from ..mechanisms import laplace
from ..validation import check_epsilon, check_finite_array, check_positive_int
from .checks import _check_split_sizes

__all__ = ["dsft_k", "l1_sensitivity", "normalised_l1"]


def l1_sensitivity(cardinality: int) -> float:
    """Delta = 2/(n - 1) of the normalised L1 distance (Li 2017 Lemma 4.2.1).

    Adding or removing one record to a histogram of ``m`` records moves its normalisation
    ``H/|H|`` by at most ``2/max(m, m')`` in L1; with every snapshot holding at least ``n - 1``
    records (``n`` public), ``2/(n - 1)`` bounds it.

    Examples
    --------
    >>> l1_sensitivity(501)
    0.004
    """
    cardinality = check_positive_int(cardinality, "cardinality", minimum=2)
    return 2.0 / (cardinality - 1)


def dsft_k(cardinality: int, n_bins: int, cutoff: int, n_times: int) -> float:
    """The decision share ``k`` of Li 2017 Thm 4.3.4 (``eps1 = k * eps``).

    ``k = min{ cbrt(n^2 (8 Delta^2 + 32 C^2 Delta^2) / (U C^2)), 1 - C/N }``, Delta = 2/(n-1).
    The cap ``1 - C/N`` keeps ``eps2/C >= eps/N`` (a release is never noisier than the
    baseline's); ``C = N`` gives 0 (no budget for decisions).

    Examples
    --------
    >>> round(dsft_k(500, 3, 4, 20), 2)
    0.8
    """
    cardinality, n_bins, cutoff = _check_split_sizes(cardinality, n_bins, cutoff)
    n_times = check_positive_int(n_times, "n_times")
    delta = 2.0 / (cardinality - 1)
    root = np.cbrt(cardinality**2 * (8 * delta**2 + 32 * cutoff**2 * delta**2) / (n_bins * cutoff**2))
    return float(max(0.0, min(root, 1.0 - cutoff / n_times)))


def _normalise_release(counts: np.ndarray) -> np.ndarray:
    """A released histogram as a distribution (negatives to 0; all-zero -> uniform).
    Post-processing of a DP output: free."""
    positive = np.clip(counts, 0.0, None)
    total = positive.sum()
    if total <= 0:
        return np.full(counts.shape, 1.0 / counts.size)
    return positive / total


def normalised_l1(counts, reference) -> float:
    """``|| counts/|counts| - reference^+/|reference^+| ||_1`` in [0, 2] (Li 2017 §4.2.1).

    Examples
    --------
    >>> normalised_l1([3, 1], [1, 1])
    0.5
    """
    counts = check_finite_array(counts, "counts")
    reference = check_finite_array(reference, "reference")
    if counts.shape != reference.shape:
        raise ValueError("counts and reference must have the same length")
    if np.any(counts < 0) or not counts.sum() > 0:
        raise ValueError("counts must be non-negative with a positive total")
    return float(np.abs(counts / counts.sum() - _normalise_release(reference)).sum())


def _publisher_call(publisher: str):
    """One snapshot's release with the registered publisher, called directly.

    The series was validated once (:func:`_check_series`) and the publisher resolved
    (:func:`_check_publisher`), so the per-snapshot checks and copies of
    :func:`.histograms.publish` are skipped; what each release spent is still checked.
    """
    from ..histograms import PUBLISHERS

    record = PUBLISHERS[publisher]

    def release(counts: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
        epsilon = check_epsilon(epsilon)  # e.g. the last point's remainder: a scalar check
        estimate, parts, _ = record.function(counts, epsilon, rng, None)
        spent = math.fsum(parts.values())
        if not math.isclose(spent, epsilon, rel_tol=1e-9, abs_tol=0.0):  # pragma: no cover
            raise AssertionError(f"{record.name} spent {spent}, expected {epsilon}")
        return np.asarray(estimate, dtype=float).reshape(counts.shape)

    return release


def _release_rows(series: np.ndarray, rows: np.ndarray, epsilon: float, publisher: str,
                  rng: np.random.Generator) -> np.ndarray:
    """The snapshots ``series[rows]`` each released with ``epsilon``, as a ``(len(rows), U)``
    array. Identity (the text's LPA): one Laplace draw for all of them, ``H + Lap(1/epsilon)``
    per cell, in the order the per-snapshot calls would draw it (the same stream, bit for bit,
    outside :func:`.mechanisms.floating_point_safe`). Other publishers: one call per snapshot."""
    if publisher == "identity":
        chosen = series if rows.size == series.shape[0] else series[rows]
        released = laplace(1.0 / check_epsilon(epsilon), chosen.shape, rng=rng)
        released += chosen  # in place: no second (N, U) array
        return released
    release = _publisher_call(publisher)
    return np.stack([release(series[t], epsilon, rng) for t in rows])


#: Rows of normalised distances computed at once while the reference stays the same.
_DISTANCE_CHUNK = 64


class _Distances:
    """``|| H_t/|H_t| - ref ||_1`` for the time points asked, a chunk of rows at a time.

    The reference changes only at a release, so between two releases the distances of the
    following snapshots are computed in one vectorised pass (of at most ``_DISTANCE_CHUNK``
    rows) instead of one array operation per time point."""

    def __init__(self, series: np.ndarray, totals: np.ndarray):
        self.series, self.totals = series, totals
        self.reference: np.ndarray | None = None
        self.start, self.values = 0, np.empty(0)

    def reset(self, reference: np.ndarray) -> None:
        self.reference, self.values = reference, np.empty(0)

    def __call__(self, t: int) -> float:
        if not self.start <= t < self.start + self.values.size:
            stop = min(t + _DISTANCE_CHUNK, self.series.shape[0])
            block = self.series[t:stop] / self.totals[t:stop, None]
            self.start, self.values = t, np.abs(block - self.reference).sum(axis=1)
        return float(self.values[t - self.start])


@dataclass(frozen=True)
class _Repeated:
    """A series of releases kept as its new histograms ``rows`` (k, U) and, for each time
    point, the row in force (``which``; -1 before the first release: zeros)."""

    rows: np.ndarray
    which: np.ndarray

    def expand(self) -> np.ndarray:
        out = self.rows[np.maximum(self.which, 0)] if self.rows.shape[0] else np.zeros(
            (self.which.size, self.rows.shape[1]))
        out[self.which < 0] = 0.0
        return _frozen(out)


class _Schedule:
    """The releases of a sampler as they are decided, one time point at a time.

    ``rows`` holds the private histograms in time order, ``which`` the row in force at each
    time point (-1 before the first release), ``points`` the release points and ``spent`` the
    budget each time point's release spent."""

    def __init__(self, n_times: int):
        self.rows: list[np.ndarray] = []
        self.which = np.zeros(n_times, dtype=int)
        self.points = np.zeros(n_times, dtype=bool)
        self.spent = np.zeros(n_times)

    def release(self, t: int, row: np.ndarray, epsilon: float) -> np.ndarray:
        """Record ``row``, released at time ``t`` with ``epsilon``; return it."""
        self.rows.append(row)
        self.points[t], self.spent[t] = True, epsilon
        self.which[t] = len(self.rows) - 1
        return row

    def repeat(self, t: int) -> None:
        """No release at time ``t``: the last release stays in force."""
        self.which[t] = len(self.rows) - 1

    def releases(self, n_bins: int) -> _Repeated:
        return _expand(self.rows, self.which, n_bins)


def _pid_threshold(current: float, ratio: float, target: float, delta: float,
                   theta: float) -> float:
    """DSAT's threshold after one step of its P controller (Li 2017 Alg. 8 lines 6-8).

    The error ``e = ||ratio - target| - delta|/delta`` (eqs. 4.2.2, 4.2.4) gives ``u = theta e``
    (eq. 4.2.3 with ``theta_P = 1``); the threshold moves down by ``u`` (not below 0) while the
    release ratio is at most its target, else up (not above 2) (eq. 4.2.5). Public: a
    function of the release count only."""
    u = theta * (abs(abs(ratio - target) - delta) / delta)
    return max(0.0, current - u) if ratio - target <= 0 else min(2.0, current + u)


def _expand(rows: list[np.ndarray], which: np.ndarray, n_bins: int) -> _Repeated:
    """The releases of a sampler (:class:`DynamicRelease` builds the ``(N, U)`` array only
    when it is read: a session output needs the ``k`` new histograms alone)."""
    stacked = np.stack(rows) if rows else np.zeros((0, n_bins))
    return _Repeated(_frozen(stacked), _frozen(which))


def _parts(total: float, **parts: float) -> dict[str, float]:
    """Freeze a budget split, the last part recomputed as the exact remainder."""
    names = list(parts)
    values = [float(parts[n]) for n in names]
    values[-1] = total - math.fsum(values[:-1])
    return dict(zip(names, values, strict=True))


def _svt(threshold: float, epsilon: float, c: int, sensitivity: float, ratio: float, rng):
    from ..svt import SparseVector  # local: svt imports nothing from here, but keep it lazy

    return SparseVector(threshold, epsilon, variant="standard", c=c, sensitivity=sensitivity,
                        ratio=ratio, rng=rng)


def _user_guarantee(epsilon: float, what: str) -> str:
    return f"{eps_text(epsilon)}-DP, user level ({what})"
