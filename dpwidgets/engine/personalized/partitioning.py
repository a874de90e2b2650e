"""Partitioning (Li 2017 Alg. 10-11, eq. 5.2.3, 5.2.6): :class:`BudgetPartition`,
:func:`privacy_aware_partition`, :func:`utility_partition`, :func:`wasted_budget`.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._results import readonly as _readonly
from ..validation import check_positive_int
from .checks import _check_budgets, _check_size_options, _check_utility, _check_utility_options
from .constants import MAX_GROUPS

__all__ = ["BudgetPartition", "wasted_budget", "privacy_aware_partition", "utility_partition"]


@dataclass(frozen=True, eq=False)
class BudgetPartition:
    """A partition of the records into groups of similar budgets (public: a function of phi).

    Attributes
    ----------
    labels : numpy.ndarray of int, shape (n,)
        Partition of every record, ``0..k-1`` in ascending budget order.
    order : numpy.ndarray of int
        The records sorted by budget (stable); partition ``i`` is
        ``order[bounds[i]:bounds[i+1]]``.
    bounds : numpy.ndarray of int, shape (k+1,)
        Cut positions in sorted order (``bounds[0] = 0``, ``bounds[-1] = n``).
    epsilons : numpy.ndarray of float, shape (k,)
        ``min`` budget of every partition: what its release spends.
    sizes : numpy.ndarray of int, shape (k,)
    k : int
    kind : str
        ``"privacy_aware"`` (Alg. 10) or ``"utility"`` (Alg. 11).
    objective : float
        Alg. 10: the wasted budget ``sum_i W_i``; Alg. 11: ``sum_i U(n_i, eps_i)``.
    selection : numpy.ndarray of float
        The score of the best partition with ``1..K`` parts that chose ``k`` (eq. 5.2.3:
        ``sum_i W_i / n_i``, minimised; eq. 5.2.6: ``sum_i U``, maximised); ``nan`` where no
        partition with that many parts satisfies the size constraint.
    min_size : int
        ``T``, the smallest partition allowed.
    exact : bool
        True when the cuts could fall between any two distinct budgets; False when the
        distinct budgets outnumbered ``max_groups`` and the cuts were restricted to the
        distinct-value boundaries nearest to ``max_groups`` quantiles.
    """

    labels: np.ndarray
    order: np.ndarray
    bounds: np.ndarray
    epsilons: np.ndarray
    sizes: np.ndarray
    k: int
    kind: str
    objective: float
    selection: np.ndarray
    min_size: int
    exact: bool

    def indices(self) -> tuple[np.ndarray, ...]:
        """The record indices of every partition (ascending budget order)."""
        return tuple(self.order[a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True))


def wasted_budget(budgets, labels) -> float:
    """``sum_i sum_j (eps_ij - min_j eps_ij)^2`` (Li 2017 Def. 5.2.2): budget a partition wastes.

    ``labels`` gives each record's partition (any integers); a record labelled ``-1`` is in no
    release and is not counted.

    Examples
    --------
    >>> wasted_budget([0.5, 1.0, 2.0], [0, 0, 1])
    0.25
    """
    budgets = _check_budgets(budgets)
    labels = np.asarray(labels)
    if labels.shape != budgets.shape or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("labels must be an integer array with one label per budget")
    keep = labels >= 0
    b, lab = budgets[keep], labels[keep]
    if b.size == 0:
        return 0.0
    _, inverse = np.unique(lab, return_inverse=True)
    minima = np.full(inverse.max() + 1, np.inf)
    np.minimum.at(minima, inverse, b)
    return float(np.sum((b - minima[inverse]) ** 2))


def _candidate_cuts(sorted_budgets: np.ndarray, max_groups: int) -> tuple[np.ndarray, bool]:
    """Positions (in sorted order) where a partition may start or end.

    Exact: every boundary between distinct budgets (for Alg. 10 without a size constraint no
    optimum splits a run of equal budgets: moving the tied records of a cut run into the
    partition on their right never raises the waste). Otherwise the distinct-value boundaries
    nearest to ``max_groups`` equally spaced quantile positions.
    """
    n = sorted_budgets.size
    starts = np.flatnonzero(sorted_budgets[1:] != sorted_budgets[:-1]) + 1
    cuts = np.concatenate(([0], starts, [n]))
    if cuts.size - 1 <= max_groups:
        return cuts, True
    targets = np.linspace(0, n, max_groups + 1)
    right = np.clip(np.searchsorted(cuts, targets), 1, cuts.size - 1)
    left = right - 1
    nearest = np.where(targets - cuts[left] <= cuts[right] - targets, left, right)
    return np.unique(cuts[nearest]), False


def _segment_costs(sorted_budgets: np.ndarray, cuts: np.ndarray, min_size: int):
    """Size, minimum budget and waste of every segment ``[cuts[a], cuts[b])`` (prefix sums)."""
    s1 = np.concatenate(([0.0], np.cumsum(sorted_budgets)))
    s2 = np.concatenate(([0.0], np.cumsum(sorted_budgets * sorted_budgets)))
    start, end = cuts[:, None], cuts[None, :]
    sizes = end - start
    valid = sizes >= min_size  # implies end > start
    low = sorted_budgets[np.minimum(cuts, sorted_budgets.size - 1)][:, None]  # min of segment
    waste = (s2[end] - s2[start]) - 2.0 * low * (s1[end] - s1[start]) + sizes * low * low
    waste = np.where(valid, np.maximum(waste, 0.0), np.inf)
    return sizes, low, waste, valid


def _dp_layers(cost: np.ndarray, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 10/11's recursion, one layer per number of parts, vectorised over end points.

    ``best[k, b] = min_a best[k-1, a] + cost[a, b]`` (cost = +inf where not allowed).
    Returns ``best`` (k_max+1, G+1) and the arg-min table for backtracking.
    """
    g1 = cost.shape[0]
    best = np.full((k_max + 1, g1), np.inf)
    best[0, 0] = 0.0
    argbest = np.zeros((k_max + 1, g1), dtype=np.int64)
    for k in range(1, k_max + 1):  # sequential in k by the recursion; each layer vectorised
        total = best[k - 1][:, None] + cost
        argbest[k] = np.argmin(total, axis=0)
        best[k] = total[argbest[k], np.arange(g1)]
    return best, argbest


def _backtrack(argbest: np.ndarray, k: int, last: int) -> np.ndarray:
    path = [last]
    for layer in range(k, 0, -1):
        path.append(int(argbest[layer, path[-1]]))
    return np.array(path[::-1], dtype=np.int64)


def _check_order(order, budgets: np.ndarray) -> np.ndarray:
    """``order`` must be the stable sort order of ``budgets`` (a wrong one would cut wrong
    groups): a permutation that sorts them, equal budgets in record order."""
    n = budgets.size
    order = np.asarray(order)
    if order.shape != (n,) or not np.issubdtype(order.dtype, np.integer):
        raise ValueError(f"order must hold the {n} record indices in sorted-budget order")
    if n and (order.min() < 0 or order.max() >= n
              or np.any(np.bincount(order, minlength=n) != 1)):
        raise ValueError("order must be a permutation of the record indices")
    step = np.diff(budgets[order])
    if np.any(step < 0) or np.any((step == 0) & (np.diff(order) < 0)):
        raise ValueError("order must be the stable sort order of the budgets "
                         "(numpy.argsort(budgets, kind='stable'))")
    return order


def _utility_cost(function, options: dict, sizes: np.ndarray, low: np.ndarray,
                  valid: np.ndarray) -> np.ndarray:
    """``-U(n_i, eps_i)`` of every valid segment (``inf`` elsewhere): the cost Utility
    partitioning minimises, from each segment's size and smallest budget."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        values = np.asarray(function(np.where(valid, sizes, 1), low, **options), dtype=float)
    values = np.broadcast_to(values, sizes.shape)
    if np.any(np.isnan(values[valid])):
        raise ValueError("utility returned NaN for a valid partition")
    return np.where(valid, -values, np.inf)


def _partition(
    budgets,
    kind: str,
    *,
    k,
    min_size,
    max_partitions,
    max_groups,
    utility,
    utility_options,
    order=None,
) -> BudgetPartition:
    budgets = _check_budgets(budgets)
    n = budgets.size
    min_size, max_partitions, k = _check_size_options(n, min_size, max_partitions, k)
    max_groups = check_positive_int(max_groups, "max_groups", maximum=MAX_GROUPS)
    if kind == "utility":
        function = _check_utility(utility)
        options = dict(utility_options or {})
    order = np.argsort(budgets, kind="stable") if order is None else order
    sorted_budgets = budgets[order]
    cuts, exact = _candidate_cuts(sorted_budgets, max_groups)
    g = cuts.size - 1
    k_max = min(k if k is not None else max_partitions, n // min_size, g)
    if k is not None and k > k_max:
        raise ValueError(f"k = {k} parts are not possible: only {g} distinct budget group(s) "
                         f"can be cut (max_groups = {max_groups})")
    sizes, low, waste, valid = _segment_costs(sorted_budgets, cuts, min_size)
    cost = (waste if kind == "privacy_aware"
            else _utility_cost(function, options, sizes, low, valid))
    best, argbest = _dp_layers(cost, k_max)
    candidates = range(k, k + 1) if k is not None else range(1, k_max + 1)
    selection = np.full(k_max, np.nan)
    paths: dict[int, np.ndarray] = {}
    for parts in candidates:
        if not np.isfinite(best[parts, g]):
            continue
        path = _backtrack(argbest, parts, g)
        paths[parts] = path
        if kind == "privacy_aware":  # eq. (5.2.3): sum_i W_i / n_i
            seg_sizes = np.diff(cuts[path])
            seg_waste = waste[path[:-1], path[1:]]
            selection[parts - 1] = float(np.sum(seg_waste / seg_sizes))
        else:  # eq. (5.2.6): sum_i U(n_i, eps_i)
            selection[parts - 1] = -best[parts, g]
    if not paths:
        raise ValueError(f"no partition into at most {k_max} parts of at least {min_size} records exists")
    scores = {parts: selection[parts - 1] for parts in paths}
    if kind == "privacy_aware":
        chosen = min(scores, key=lambda p: (scores[p], p))
    else:
        chosen = min(scores, key=lambda p: (-scores[p], p))
    bounds = cuts[paths[chosen]]
    part_sizes = np.diff(bounds)
    epsilons = sorted_budgets[bounds[:-1]]
    labels = np.empty(n, dtype=np.int64)
    labels[order] = np.repeat(np.arange(chosen), part_sizes)
    path = paths[chosen]
    if kind == "privacy_aware":
        objective = float(np.sum(waste[path[:-1], path[1:]]))
    else:
        objective = float(-best[chosen, g])
    return BudgetPartition(
        labels=_readonly(labels, np.int64),
        order=_readonly(order, np.int64),
        bounds=_readonly(bounds, np.int64),
        epsilons=_readonly(epsilons),
        sizes=_readonly(part_sizes, np.int64),
        k=int(chosen),
        kind=kind,
        objective=objective,
        selection=_readonly(selection),
        min_size=min_size,
        exact=bool(exact),
    )


def privacy_aware_partition(
    budgets,
    *,
    k: int | None = None,
    min_size: int | None = None,
    max_partitions: int | None = None,
    max_groups: int = 1024,
) -> BudgetPartition:
    """Privacy-aware partitioning (Li 2017 Alg. 10, Def. 5.2.2, eq. 5.2.3).

    Sort the budgets; for every number of parts ``k`` find the contiguous partition (in sorted
    order) minimising the wasted budget ``sum_i sum_j (eps_ij - min_j eps_ij)^2`` by dynamic
    programming; then choose ``k`` minimising ``sum_i W_i / n_i`` (eq. 5.2.3) over
    ``1 <= k <= min(max_partitions, n / T)``, every part holding at least ``T = min_size``
    records (the text's minimum partition size).

    Parameters
    ----------
    budgets : array_like, 1-D
        The privacy vector (public), all > 0.
    k : int, optional
        A fixed number of parts (Alg. 10 with a predefined ``k``); default: chosen by eq. 5.2.3.
    min_size : int, optional
        ``T``; default ``ceil(n / (2 * max_partitions))``.
    max_partitions : int, optional
        The largest ``k`` searched (default 16). The text keeps ``n / T`` constant "for
        complexity reduction"; eq. 5.2.3 tends to pick the largest ``k`` allowed (finer
        partitions waste less), so this cap matters.
    max_groups : int
        Cuts may fall between any two distinct budgets while there are at most this many
        distinct values (exact); beyond, they are restricted to the distinct-value
        boundaries nearest to ``max_groups`` quantiles (``exact=False``). The dynamic
        programme costs ``O(K G^2)`` for ``G`` candidate cuts, vectorised per layer, so
        100,000 continuous budgets take well under a second.

    Returns
    -------
    BudgetPartition

    Raises
    ------
    ValueError
        Bad budgets or options, or no feasible partition.

    Notes
    -----
    No privacy cost: the partition is a function of the public privacy vector only.
    The recursion of Alg. 10 (``currentW = W*(eps_1..eps_j, k-1) + W(eps_{j+1}..eps_n)``) is
    evaluated bottom-up: one vectorised layer per ``k`` over all end points; ``W`` of a
    segment comes from prefix sums of the sorted budgets and their squares.

    References
    ----------
    Li 2017 §5.2.1, Alg. 10, eq. (5.2.3).

    Examples
    --------
    >>> import numpy as np
    >>> part = privacy_aware_partition(np.repeat([0.5, 1.0, 2.0], 100), min_size=50)
    >>> part.k, part.sizes, part.epsilons
    (3, array([100, 100, 100]), array([0.5, 1. , 2. ]))
    """
    return _partition(budgets, "privacy_aware", k=k, min_size=min_size,
                      max_partitions=max_partitions, max_groups=max_groups, utility=None,
                      utility_options=None)


def utility_partition(
    budgets,
    utility: str | Callable[..., Any] = "count",
    *,
    k: int | None = None,
    min_size: int | None = None,
    max_partitions: int | None = None,
    max_groups: int = 1024,
    utility_options: Mapping[str, Any] | None = None,
) -> BudgetPartition:
    """Utility-based partitioning (Li 2017 Alg. 11, Def. 5.2.4, eq. 5.2.6).

    The contiguous partition of the sorted budgets maximising ``sum_i U(n_i, min_j eps_ij)``
    with at most ``max_partitions`` parts of at least ``min_size`` records; ``k`` is the
    maximiser over all allowed numbers of parts (eq. 5.2.6).

    Parameters
    ----------
    budgets : array_like, 1-D
    utility : {"count", "erm"} or callable
        ``U(n, eps)``, vectorised: :func:`count_utility` (default) or :func:`erm_utility`
        (then ``utility_options`` must give ``dimension``), or any callable.
    k, min_size, max_partitions, max_groups
        As for :func:`privacy_aware_partition`.
    utility_options : mapping, optional
        Keyword arguments of the utility (e.g. ``{"cell_variance": 0.01}``).

    Returns
    -------
    BudgetPartition

    Notes
    -----
    No privacy cost (a function of the public privacy vector). The text's Alg. 11 and
    Def. 5.2.4 maximise ``U``, but its examples of ``U`` are a variance and an error bound
    (to be minimised); the named utilities here are their inverses (see
    :func:`count_utility`, :func:`erm_utility`).

    References
    ----------
    Li 2017 §5.2.2, Alg. 11, eq. (5.2.5), (5.2.6).

    Examples
    --------
    >>> import numpy as np
    >>> part = utility_partition(np.repeat([0.5, 1.0, 2.0], 100), "count", min_size=50)
    >>> part.k, part.sizes, part.epsilons
    (3, array([100, 100, 100]), array([0.5, 1. , 2. ]))
    """
    _check_utility_options(utility_options)
    return _partition(budgets, "utility", k=k, min_size=min_size, max_partitions=max_partitions,
                      max_groups=max_groups, utility=utility, utility_options=utility_options)
