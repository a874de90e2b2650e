"""The diagnostics' public constants and neighbour relations, and the helpers they share:
validation at the boundary, the budget split, the histogram publisher.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from ..validation import check_finite_array, check_probability, check_real, split_budget

__all__ = ["NEIGHBOURS", "MAX_DOUBLINGS", "MAX_GRID", "MAX_LEVELS", "MAX_THRESHOLDS",
           "MAX_METRIC_BINS"]


#: The most doublings of :func:`private_bounds` (``mu 2^960`` is still a finite float for
#: ``mu`` up to 1e15).
MAX_DOUBLINGS = 960
#: The largest side ``m`` of PriRP's ``m x m`` grid (16.7 million cells); the text's rule
#: ``m = sqrt(N0 eps2 / 10)`` is clipped to it.
MAX_GRID = 4096
#: The deepest s-RecursiveMedians (``2^20 - 1`` thresholds), for PriROC's and PriBRP's ``s``.
MAX_LEVELS = 20
#: The most thresholds of the naive Laplace ROC curve (:func:`roc_fixed_laplace`).
MAX_THRESHOLDS = 2**20
#: The most bins per axis of the metrics' grids (Sim's ``bins x bins`` grid, the histograms
#: of :func:`discriminatory_power`).
MAX_METRIC_BINS = 4096

#: The neighbour relations the diagnostics support, with what each means.
NEIGHBOURS: Mapping[str, str] = MappingProxyType(
    {
        "replace-one": "replace-one (bounded DP): n is public, one record's values changed",
        "add/remove": "add/remove one record, every parameter from the public row count n "
                      "(declared; never len(data))",
    }
)


def _check_neighbours(neighbours: str) -> int:
    """Return the factor by which add/remove-calibrated steps must shrink their budget."""
    if neighbours not in NEIGHBOURS:
        raise ValueError(f"neighbours must be one of {sorted(NEIGHBOURS)}, got {neighbours!r}")
    return 2 if neighbours == "replace-one" else 1


def public_n(n, records_n: int, neighbours: str, minimum: int = 2) -> int:
    """The public row count a diagnostic decides its parameters from.

    ``n`` given (the row count the data owner declared): it, whatever the data's true size.
    ``n`` omitted: ``records_n`` (``len(data)``) under replace-one, whose neighbours share their
    size (the caller, who holds the data, makes it public by choosing that relation); under
    add/remove the size is what a neighbour changes, so this refuses (``ValueError``) rather
    than publish a function of it. Raises ``ValueError`` when the public count is below
    ``minimum`` (a statement about the public count only)."""
    factor = _check_neighbours(neighbours)
    if n is None:
        if factor == 1:
            raise ValueError(
                "under add/remove neighbours the row count is private: pass n=, the public row "
                "count declared by the data owner (every default is decided from it)")
        n = records_n
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise ValueError(f"n must be an integer row count, got {n!r}")
    if int(n) < minimum:
        raise ValueError(f"the public row count n must be at least {minimum}, got {int(n)}")
    return int(n)


def _check_publisher(publisher: str, ndim: int) -> str:
    from ..histograms import PUBLISHERS  # local: keeps the import graph one-way and lazy

    if not isinstance(publisher, str) or publisher not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {publisher!r}")
    if ndim not in PUBLISHERS[publisher].dims:
        raise ValueError(f"publisher {publisher!r} does not publish {ndim}-D histograms")
    return PUBLISHERS[publisher].name  # the canonical name (an alias such as "dawa" resolves)


def _publish(counts: np.ndarray, epsilon: float, publisher: str, rng, workload):
    from ..histograms import publish

    return publish(counts, epsilon, method=publisher, rng=rng, workload=workload)


_parts = split_budget  # the last part is the exact remainder (see split_budget)


def _check_pair(a, b, name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    a = check_finite_array(a, name_a)
    b = check_finite_array(b, name_b)
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same length, got {a.size} and {b.size}")
    return a, b


def _check_labels(labels) -> np.ndarray:
    y = check_finite_array(labels, "labels")
    if not np.all((y == 0) | (y == 1)):
        bad = int(np.count_nonzero((y != 0) & (y != 1)))
        raise ValueError(f"labels must be 0 or 1; {bad} value(s) are not")
    return y.astype(np.int8)


def _check_in_domain(values: np.ndarray, name: str, lower: float, upper: float) -> None:
    if values.min() < lower or values.max() > upper:
        raise ValueError(
            f"{name} must lie in [{lower}, {upper}]; some values fall outside "
            "(give the public bounds of the scores, or clip them first)"
        )


def _check_domain(bounds, name: str = "bounds") -> tuple[float, float]:
    if isinstance(bounds, str) or not isinstance(bounds, Sequence | np.ndarray) or len(bounds) != 2:
        raise ValueError(f"{name} must be a pair (lower, upper), got {bounds!r}")
    lower, upper = (check_real(v, name) for v in bounds)
    if not lower < upper:
        raise ValueError(f"{name} must be finite with lower < upper, got {bounds!r}")
    return lower, upper


def _check_scored(labels, scores, name: str = "scores", bounds=(0.0, 1.0)
                  ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Labels in {0, 1}, one score per label, and the scores inside ``bounds`` (checked too)."""
    y = _check_labels(labels)
    p = check_finite_array(scores, name)
    if p.shape != y.shape:
        raise ValueError(f"labels and {name} must have the same length, got {y.size} and {p.size}")
    lower, upper = _check_domain(bounds)
    _check_in_domain(p, name, lower, upper)
    return y, p, lower, upper


def _check_fraction(value: float, name: str) -> float:
    return check_probability(value, name, open_interval=True)
