"""Personalized differential privacy: one privacy budget per record (Li 2017 Ch. 5).

A privacy vector ``phi = (eps_1, ..., eps_n)`` gives every record its own budget; the vector
is **public** (Li 2017 §5.1: "the value of the privacy budget should not be correlated with any
sensitive information"; §5.2: "the partitioning mechanisms have no privacy risk because [they
are] computed directly from public information, privacy budget of each record").

Mechanisms (``method=``)
------------------------
- ``"minimum"`` -- every record at ``min(phi)`` (Li 2017 §5.1, baseline *Minimum*).
- ``"threshold"`` -- keep the records with ``eps_j >= eps_T`` and run at ``eps_T``
  (Li 2017 §5.1, baseline *Threshold*; the others get nothing).
- ``"sampling"`` -- Jorgensen, Yu, Cormode 2015 (Li 2017 Def. 5.1.1): keep record ``j`` with
  probability ``(e^{eps_j} - 1) / (e^{eps_T} - 1)`` if ``eps_j < eps_T`` (else 1), then an
  ``eps_T``-DP mechanism on the sample. :func:`sampling_probabilities`, :func:`sample_records`.
- ``"privacy_aware"`` -- Li 2017 Alg. 10 (Def. 5.2.2): dynamic programming over the sorted budgets
  minimising the wasted budget ``sum_i sum_j (eps_ij - min_j eps_ij)^2``; the number of
  partitions ``k`` by eq. (5.2.3) (minimise ``sum_i W_i / n_i``) over ``k <= n / T`` with a
  minimum partition size ``T``. :func:`privacy_aware_partition`.
- ``"utility"`` -- Li 2017 Alg. 11 (Def. 5.2.4): the same dynamic programming maximising
  ``sum_i U(n_i, min_j eps_ij)``, ``k`` by eq. (5.2.6). :func:`utility_partition`,
  :data:`UTILITIES`.
- ``"weighted"`` (histograms only) -- Alaggan, Gambs & Kermarrec 2016's heterogeneous DP: every
  record enters one release with weight ``eps_j / eps_max``; one Laplace draw per cell, then
  the weighted histogram is rescaled. :func:`weighted_histogram`.
- ``rounds=T`` -- Li 2017 §5.2.3 T-round partitioning: the left-over budgets
  ``eps_j - (spent so far)`` are partitioned again, ``T`` times (partitioning methods and
  ``"minimum"``, which is partitioning with ``k = 1``).
- ensemble -- Li 2017 §5.2.4: numeric tasks combine the per-partition releases with weights that
  depend on ``(n_i, eps_i)`` (here: inverse-variance weights, :func:`personalized_histogram`);
  classifiers vote, after dropping the partitions that another partition dominates (no fewer
  records *and* no smaller budget) -- the text's drop-out rule
  (:func:`personalized_logistic_regression`).

Targets: :func:`personalized_histogram` (counts per bin, Laplace per release through
:func:`dpwidgets.engine.histograms.publish`) and :func:`personalized_logistic_regression`
(diffprivlib's ``LogisticRegression``, Chaudhuri-Monteleoni-Sarwate objective perturbation).
A :class:`ReleasePlan` (from :func:`plan_releases`) is the public, data-independent part:
which records go into which release at what budget; it can be computed once and reused.

Guarantee and neighbours
------------------------
Personalized DP (Jorgensen et al. 2015, the definition Li 2017 Ch. 5 adopts): for every
record ``j``, every pair of neighbouring datasets that differ in record ``j`` and every
output set ``O``, ``P[M(D) in O] <= exp(eps_j) P[M(D') in O]``. Neighbours here are
**replace-one** -- one record's value changes -- because the privacy vector is public, so the
number of records and who is in the data are public too (the partitions are computed from it);
this is "bounded" PDP. The "unbounded" reading (add/remove a record) would have to protect
the privacy vector itself, which the partitioning mechanisms read in the clear. Li 2017 does not
restate the definition or name the neighbour relation; we follow the reading under which its
mechanisms are private. Every release is calibrated for replace-one (a histogram: Laplace
``2/eps``, i.e. :func:`~dpwidgets.engine.histograms.publish` at ``eps/2``). Each result
reports ``enjoyed``: the budget each record actually spends, always ``<=`` the budget it
asked for (checked).

References
----------
Li 2017 Ch. 5 (§5.1 Def. 5.1.1; §5.2 Def. 5.2.1-5.2.4, Alg. 10-11, eq. 5.2.3, 5.2.5, 5.2.6;
§5.2.3 T-round; §5.2.4 ensemble; §5.3 experiments). Z. Jorgensen, T. Yu, G. Cormode,
"Conservative or liberal? Personalized differential privacy", ICDE 2015. M. Alaggan, S. Gambs,
A.-M. Kermarrec, "Heterogeneous differential privacy", Journal of Privacy and Confidentiality
7(2), 2016 (the stretching of a query by per-record weights).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Integral
from types import MappingProxyType
from typing import Any

import numpy as np

from ._results import readonly as _readonly
from .histograms import publish
from .mechanisms import bernoulli_coins, laplace
from .validation import (
    EPSILON_MAX,
    EPSILON_MIN,
    check_epsilon,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
    check_rng,
)

#: The smallest budget a record, or a release, may have: twice the engine's
#: :data:`~.validation.EPSILON_MIN`, because a histogram release runs at half its budget
#: (replace-one). Left-over budgets below it are not spent in later rounds.
MIN_BUDGET = 2 * EPSILON_MIN
#: The most rounds of T-round repartitioning (``rounds``).
MAX_ROUNDS = 100
#: The largest ``max_groups`` (distinct budget levels the dynamic programs work on; their
#: cost grows with its square).
MAX_GROUPS = 16384
#: The most histogram bins of :func:`personalized_histogram`.
MAX_BINS = 10**6
#: The unit of the weights of :func:`weighted_histogram`: each weight ``eps_j / eps_max`` is
#: rounded *down* to a multiple of it, so the weighted histogram is an integer number of units
#: whatever the data (floating-point safe with :func:`~.mechanisms.laplace`, Mironov 2012) and
#: no record spends more than it asked. A power of two: ``m * WEIGHT_UNIT`` is exact.
WEIGHT_UNIT = 2.0**-20

__all__ = [
    "METHODS",
    "MIN_BUDGET",
    "MAX_ROUNDS",
    "MAX_GROUPS",
    "MAX_BINS",
    "WEIGHT_UNIT",
    "HISTOGRAM_METHODS",
    "NEIGHBOURS",
    "UTILITIES",
    "BudgetPartition",
    "ReleasePlan",
    "PersonalizedResult",
    "PersonalizedClassifier",
    "sampling_probabilities",
    "sample_records",
    "wasted_budget",
    "privacy_aware_partition",
    "utility_partition",
    "plan_releases",
    "personalized_histogram",
    "weighted_histogram",
    "personalized_logistic_regression",
    "misclassification_rate",
    "relative_frequency_error",
    "count_utility",
    "erm_utility",
]

#: The mechanisms, in the order the text introduces them.
METHODS = ("minimum", "threshold", "sampling", "privacy_aware", "utility")
_PARTITIONING = ("minimum", "privacy_aware", "utility")
_THRESHOLDED = ("threshold", "sampling")
#: The methods of :func:`personalized_histogram` (and :func:`plan_releases`): the text's, and
#: Alaggan, Gambs & Kermarrec 2016's one-release weighting (a count-type query only).
HISTOGRAM_METHODS = (*METHODS, "weighted")

#: The neighbour relation every mechanism in this module is calibrated for.
NEIGHBOURS = (
    "replace-one: one record's value changes; the privacy vector (hence n, who is in the data "
    "and each record's budget) is public"
)

#: Variance of one Laplace(2/eps) cell, the replace-one histogram noise, times eps^2.
_CELL_VARIANCE = 8.0


# ---------------------------------------------------------------------------------------------
# Utilities of a partition (Li 2017 §5.2.2)
# ---------------------------------------------------------------------------------------------


def count_utility(n, epsilon, *, cell_variance: float = 0.0):
    """Utility of a partition of ``n`` records at budget ``epsilon`` for counting (Li 2017 §5.2.2 (i)).

    ``U(n, eps) = n^2 / (8 / eps^2 + phi * n)``: the precision (inverse variance) of the
    partition's estimate of the whole data's count of a cell, once scaled by ``N / n``. The
    first term of the denominator is the Laplace variance ``2 (2/eps)^2`` of a replace-one
    count; ``phi = f (1 - f)`` (``cell_variance``) adds the sampling variance of a partition
    seen as a random part of the data. With ``phi = 0`` this is ``1 / (2 (Delta/(n eps))^2)``,
    the inverse of the text's ``U``: the text writes the Laplace *variance* and says
    "maximizing n*eps will lead to best utility", so Alg. 11 must maximise its inverse.
    Inverse variances add up under the inverse-variance ensemble, which is what makes the
    objective ``sum_i U(n_i, eps_i)`` of Def. 5.2.4 the precision of the combined estimate.
    """
    n = check_finite_array(n, "n", ndim=None, allow_empty=True)
    epsilon = check_finite_array(epsilon, "epsilon", ndim=None, allow_empty=True)
    cell_variance = check_nonnegative(cell_variance, "cell_variance")
    with np.errstate(divide="ignore", invalid="ignore"):
        return n * n / (_CELL_VARIANCE / (epsilon * epsilon) + cell_variance * n)


def erm_utility(
    n,
    epsilon,
    *,
    dimension: int,
    coef_norm: float = 1.0,
    lipschitz: float = 0.25,
    generalization_error: float = 0.1,
    sigma: float = 0.05,
):
    """Utility of a partition for DP empirical risk minimisation (Li 2017 eq. 5.2.5).

    The text bounds the excess loss of Chaudhuri et al.'s private classifier by
    ``A / (n eps)^2 + B / n + e_g / 2`` with ``A = 16 ||f0||^4 d^2 log^2(d/sigma)
    (c + e_g/||f0||^2) / e_g^2`` and ``B = ||f0||^2 log(1/sigma) / e_g``, and takes that bound
    as ``U``. A bound on a loss is to be minimised while Alg. 11 maximises, so we use its
    inverse without the constant ``e_g/2``: ``U = 1 / (A / (n eps)^2 + B / n)``. The constants
    (``||f0|| = 1``, ``c = 1/4`` for the logistic loss, ``e_g = 0.1``, ``sigma = 0.05``) are
    ours; the text leaves them open.
    """
    n = check_finite_array(n, "n", ndim=None, allow_empty=True)
    epsilon = check_finite_array(epsilon, "epsilon", ndim=None, allow_empty=True)
    d = float(check_positive_int(dimension, "dimension"))
    coef_norm = check_positive(coef_norm, "coef_norm")
    lipschitz = check_nonnegative(lipschitz, "lipschitz")
    generalization_error = check_positive(generalization_error, "generalization_error")
    sigma = check_probability(sigma, "sigma")
    a = (16.0 * coef_norm**4 * d * d * math.log(d / sigma) ** 2
         * (lipschitz + generalization_error / coef_norm**2) / generalization_error**2)
    b = coef_norm**2 * math.log(1.0 / sigma) / generalization_error
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / (a / (n * epsilon) ** 2 + b / n)


#: Named utility functions for :func:`utility_partition` (``utility=`` also takes a callable
#: ``U(n, eps)`` vectorised over arrays).
UTILITIES: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {"count": count_utility, "erm": erm_utility}
)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _check_budgets(budgets, n: int | None = None) -> np.ndarray:
    budgets = check_finite_array(budgets, "budgets")
    if np.any(budgets < MIN_BUDGET) or np.any(budgets > EPSILON_MAX):
        raise ValueError(
            f"budgets must all be in [{MIN_BUDGET:g}, {EPSILON_MAX:g}] (one privacy budget "
            f"per record); found budgets outside"
        )
    if n is not None and budgets.size != n:
        raise ValueError(f"budgets must have one entry per record ({n}), got {budgets.size}")
    return budgets


def _check_utility(utility) -> Callable[..., Any]:
    """The utility function named (or given) by ``utility``, or a ValueError naming it."""
    if isinstance(utility, str) and utility in UTILITIES:
        return UTILITIES[utility]
    if callable(utility) and not isinstance(utility, str):
        return utility
    raise ValueError(f"utility must be one of {sorted(UTILITIES)} or a callable, got {utility!r}")


def _check_utility_options(options) -> None:
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"utility_options must be a mapping of keyword arguments or None, got "
                         f"{type(options).__name__}")


def _check_method(method: str, allowed: tuple[str, ...] = METHODS) -> str:
    if not isinstance(method, str) or method not in allowed:
        raise ValueError(f"method must be one of {list(allowed)}, got {method!r}")
    return method


def _check_threshold(threshold, budgets: np.ndarray, method: str, default: str) -> float | None:
    if method not in _THRESHOLDED:
        if threshold is not None:
            raise ValueError(f"threshold is only used by methods {list(_THRESHOLDED)}, not {method!r}")
        return None
    if threshold is None:
        # Threshold (the baseline) keeps only eps_j >= eps_T: its default is always the mean.
        if default == "max" and method == "sampling":
            return float(np.max(budgets))
        return float(np.mean(budgets))
    threshold = check_epsilon(threshold, "threshold")
    lo, hi = float(np.min(budgets)), float(np.max(budgets))
    if not lo <= threshold <= hi:
        raise ValueError(
            f"threshold must lie in [min(budgets), max(budgets)] = [{lo:g}, {hi:g}] "
            f"(Li 2017 Def. 5.1.1), got {threshold!r}"
        )
    return threshold


def _check_size_options(n: int, min_size, max_partitions, k) -> tuple[int, int, int | None]:
    if max_partitions is None:
        max_partitions = 16
    max_partitions = check_positive_int(max_partitions, "max_partitions")
    if min_size is None:
        min_size = max(1, math.ceil(n / (2 * max_partitions)))
    min_size = check_positive_int(min_size, "min_size")
    if min_size > n:
        raise ValueError(f"min_size must be at most the number of records ({n}), got {min_size}")
    if k is not None:
        k = check_positive_int(k, "k")
        if k * min_size > n:
            raise ValueError(f"k = {k} partitions of at least min_size = {min_size} records need "
                             f"{k * min_size} records, only {n} given")
    return min_size, max_partitions, k


# ---------------------------------------------------------------------------------------------
# Sampling mechanism (Jorgensen et al. 2015; Li 2017 Def. 5.1.1)
# ---------------------------------------------------------------------------------------------


def sampling_probabilities(budgets, threshold: float) -> np.ndarray:
    """Inclusion probabilities of the sampling mechanism (Li 2017 Def. 5.1.1).

    ``p_j = (e^{eps_j} - 1) / (e^{eps_T} - 1)`` if ``eps_j < eps_T``, else 1.

    Parameters
    ----------
    budgets : array_like, 1-D
        The privacy vector (all > 0).
    threshold : float
        ``eps_T``, in ``[min(budgets), max(budgets)]``.

    Returns
    -------
    numpy.ndarray of float, in (0, 1].

    Raises
    ------
    ValueError
        Bad budgets or a threshold outside ``[min, max]`` of the budgets.
    """
    budgets = _check_budgets(budgets)
    threshold = _check_threshold(threshold, budgets, "sampling", "mean")
    return _inclusion_probabilities(budgets, threshold)


def _inclusion_probabilities(budgets: np.ndarray, threshold: float) -> np.ndarray:
    """``(e^b - 1)/(e^T - 1)`` below the threshold, 1 above (Jorgensen et al. 2015).

    For ``T > 700`` (where ``e^T`` overflows) the same ratio as ``e^(b-T) (1 - e^-b)/(1 - e^-T)``.
    """
    if threshold <= 700.0:
        return np.where(budgets < threshold, np.expm1(budgets) / math.expm1(threshold), 1.0)
    ratio = np.exp(np.minimum(budgets - threshold, 0.0)) * np.expm1(-budgets) / math.expm1(-threshold)
    return np.where(budgets < threshold, ratio, 1.0)


def sample_records(budgets, threshold: float, rng: np.random.Generator | None = None) -> np.ndarray:
    """The procedure ``RS(D, phi, eps_T)``: independent coins, one per record (Li 2017 Def. 5.1.1).

    Returns a boolean mask of the kept records. The coins are independent of the records'
    values, but they must stay secret: amplification by sampling is what turns the
    ``eps_T``-DP mechanism run on the sample into ``eps_j`` for record ``j``.
    """
    probabilities = sampling_probabilities(budgets, threshold)
    rng = check_rng(rng)
    return bernoulli_coins(probabilities, rng)


# ---------------------------------------------------------------------------------------------
# Partitioning (Li 2017 Alg. 10-11, eq. 5.2.3, 5.2.6)
# ---------------------------------------------------------------------------------------------


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
    if kind == "privacy_aware":
        cost = waste
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            values = np.asarray(function(np.where(valid, sizes, 1), low, **options), dtype=float)
        values = np.broadcast_to(values, sizes.shape)
        if np.any(np.isnan(values[valid])):
            raise ValueError("utility returned NaN for a valid partition")
        cost = np.where(valid, -values, np.inf)
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
    """
    _check_utility_options(utility_options)
    return _partition(budgets, "utility", k=k, min_size=min_size, max_partitions=max_partitions,
                      max_groups=max_groups, utility=utility, utility_options=utility_options)


# ---------------------------------------------------------------------------------------------
# Release plans (public: which records enter which release at what budget)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """Which records enter which release at which budget: a function of the public privacy
    vector only, so it costs nothing and can be reused across releases of different data.

    Attributes
    ----------
    method : str
    budgets : numpy.ndarray
        The privacy vector asked for.
    partitions : tuple of numpy.ndarray of int
        The records of every release (for ``"sampling"``: all records, of which a secret
        random sample enters).
    epsilons : numpy.ndarray of float
        The budget every release is run at (``min`` of its records' left-over budgets; for
        ``"sampling"``/``"threshold"``: the threshold).
    rounds : numpy.ndarray of int
        The round (1-based) of every release (Li 2017 §5.2.3).
    labels : numpy.ndarray of int, shape (n,)
        Each record's round-1 release (``-1``: in none, e.g. below the threshold).
    enjoyed : numpy.ndarray of float, shape (n,)
        The budget each record spends, ``<= budgets`` (checked): the sum over the releases it
        is in (sequential composition), or ``min(eps_j, eps_T)`` for sampling.
    threshold : float or None
    probabilities : numpy.ndarray or None
        Sampling: the inclusion probability of every record.
    partitionings : tuple of BudgetPartition
        The partition of each round (partitioning methods).
    min_size : int or None
    weights : numpy.ndarray or None
        ``"weighted"``: each record's weight ``eps_j / eps_max`` rounded down to a multiple of
        :data:`WEIGHT_UNIT` (``enjoyed = weights * eps_max``).
    """

    method: str
    budgets: np.ndarray
    partitions: tuple[np.ndarray, ...]
    epsilons: np.ndarray
    rounds: np.ndarray
    labels: np.ndarray
    enjoyed: np.ndarray
    threshold: float | None = None
    probabilities: np.ndarray | None = None
    partitionings: tuple[BudgetPartition, ...] = ()
    min_size: int | None = None
    weights: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.budgets.size)

    @property
    def sizes(self) -> np.ndarray:
        """Number of records of every release."""
        return np.array([p.size for p in self.partitions], dtype=np.int64)

    @property
    def epsilon_parts(self) -> dict[str, float]:
        """What each release spends (on its own records only: parallel composition within a
        round, sequential across rounds)."""
        if self.method in (*_THRESHOLDED, "weighted"):
            return {self.method: float(self.epsilons[0])}
        return {f"round{r}/part{i}": float(e)
                for i, (r, e) in enumerate(zip(self.rounds, self.epsilons, strict=True))}


def _enforce_enjoyed(enjoyed: np.ndarray, budgets: np.ndarray) -> None:
    if np.any(enjoyed > budgets):  # pragma: no cover - guarded by construction
        worst = int(np.argmax(enjoyed - budgets))
        raise AssertionError(f"record {worst} would spend {enjoyed[worst]!r} > its budget {budgets[worst]!r}")


def plan_releases(
    budgets,
    method: str = "utility",
    *,
    threshold: float | None = None,
    rounds: int = 1,
    min_size: int | None = None,
    max_partitions: int | None = None,
    max_groups: int = 1024,
    utility: str | Callable[..., Any] = "count",
    utility_options: Mapping[str, Any] | None = None,
    default_threshold: str = "mean",
    order=None,
) -> ReleasePlan:
    """The public part of a personalized mechanism: releases, their records and budgets.

    Parameters
    ----------
    budgets : array_like, 1-D
        The privacy vector (public), all > 0.
    method : {"minimum", "threshold", "sampling", "privacy_aware", "utility", "weighted"}
        ``"weighted"`` (Alaggan, Gambs & Kermarrec 2016): one release of all records at
        ``max(budgets)``, record ``j`` weighted ``eps_j / max(budgets)`` (histograms only).
    threshold : float, optional
        ``eps_T`` for ``"sampling"``/``"threshold"``, in ``[min, max]`` of the budgets;
        default: the mean budget (best for counts, Li 2017 §5.3.2.1), except for ``"sampling"``
        with ``default_threshold="max"`` (best for logistic regression, §5.3.2.3).
    rounds : int
        ``T`` of T-round partitioning (Li 2017 §5.2.3), for ``"minimum"``, ``"privacy_aware"`` and
        ``"utility"``: each round partitions the records whose left-over budget is still
        positive, by their left-over budgets. Stops early when fewer than ``min_size``
        records have budget left.
    min_size, max_partitions, max_groups, utility, utility_options
        See :func:`privacy_aware_partition` and :func:`utility_partition`.
    order : array_like of int, optional
        The stable sort order of ``budgets`` (``numpy.argsort(budgets, kind="stable")``), if
        known: the first round's partitioning then does not sort the budgets again (the plans
        of several methods and caps of one privacy vector can share one sort). Checked; the
        plan is the same as without it.

    Returns
    -------
    ReleasePlan

    Raises
    ------
    ValueError
        On any bad argument (before anything else happens).

    Notes
    -----
    No privacy cost: only the public privacy vector is read. Within a round the releases
    are disjoint (parallel composition); a record in releases at ``e_1, e_2, ...`` over the
    rounds spends ``e_1 + e_2 + ...`` (sequential composition), and each ``e_t`` is the
    minimum left-over budget of its release, so no record spends more than it asked for.
    """
    budgets = _check_budgets(budgets)
    method = _check_method(method, HISTOGRAM_METHODS)
    _check_utility(utility)
    _check_utility_options(utility_options)
    if default_threshold not in ("mean", "max"):
        raise ValueError(f"default_threshold must be 'mean' or 'max', got {default_threshold!r}")
    threshold = _check_threshold(threshold, budgets, method, default_threshold)
    if order is not None:
        order = _check_order(order, budgets)
    rounds = check_positive_int(rounds, "rounds", maximum=MAX_ROUNDS)
    if rounds > 1 and method not in _PARTITIONING:
        raise ValueError(f"rounds > 1 (T-round partitioning) needs a method in {list(_PARTITIONING)}, got {method!r}")
    n = budgets.size
    if method in _PARTITIONING:
        min_size, max_partitions, _ = _check_size_options(n, min_size, max_partitions, None)
    max_groups = check_positive_int(max_groups, "max_groups", maximum=MAX_GROUPS)
    all_records = np.arange(n)

    if method == "sampling":
        probabilities = _inclusion_probabilities(budgets, threshold)
        enjoyed = np.minimum(budgets, threshold)  # ln(1 + p_j (e^{eps_T} - 1)) = eps_j below eps_T
        _enforce_enjoyed(enjoyed, budgets)
        return ReleasePlan(method, _readonly(budgets), (_readonly(all_records, np.int64),),
                           _readonly([threshold]), _readonly([1], np.int64),
                           _readonly(np.zeros(n), np.int64), _readonly(enjoyed), threshold,
                           _readonly(probabilities))
    if method == "weighted":
        top = float(np.max(budgets))
        units = _weight_units(budgets, top)
        weights = units * WEIGHT_UNIT
        enjoyed = weights * top
        _enforce_enjoyed(enjoyed, budgets)
        return ReleasePlan(method, _readonly(budgets), (_readonly(all_records, np.int64),),
                           _readonly([top]), _readonly([1], np.int64),
                           _readonly(np.zeros(n), np.int64), _readonly(enjoyed),
                           weights=_readonly(weights))
    if method == "threshold":
        kept = np.flatnonzero(budgets >= threshold)
        labels = np.where(budgets >= threshold, 0, -1)
        enjoyed = np.where(budgets >= threshold, threshold, 0.0)
        _enforce_enjoyed(enjoyed, budgets)
        return ReleasePlan(method, _readonly(budgets), (_readonly(kept, np.int64),),
                           _readonly([threshold]), _readonly([1], np.int64),
                           _readonly(labels, np.int64), _readonly(enjoyed), threshold)

    spent = np.zeros(n)
    partitions: list[np.ndarray] = []
    epsilons: list[float] = []
    round_of: list[int] = []
    partitionings: list[BudgetPartition] = []
    labels = np.full(n, -1, dtype=np.int64)
    for t in range(1, rounds + 1):
        left = budgets - spent
        active = np.flatnonzero(left >= MIN_BUDGET)  # leftovers below it are not spent
        if active.size < min_size or active.size == 0:
            break
        if method == "minimum":
            groups = (active,)
            part = None
        else:
            kind = "privacy_aware" if method == "privacy_aware" else "utility"
            # Round 1 with every record active partitions the budgets themselves: their
            # order, when given, is the sort this would do.
            known = order if t == 1 and active.size == n else None
            part = _partition(left[active], kind, k=None, min_size=min_size,
                              max_partitions=max_partitions, max_groups=max_groups,
                              utility=utility, utility_options=utility_options, order=known)
            partitionings.append(part)
            groups = tuple(active[idx] for idx in part.indices())
        for i, members in enumerate(groups):
            asked, used = budgets[members], spent[members]
            eps = float(np.min(asked - used))
            # Floating point: spent + (budget - spent) may round above budget; step down.
            while np.any(used + eps > asked):
                eps = float(np.nextafter(eps, 0.0))
            if eps < MIN_BUDGET:  # a float remainder, below any budget the engine runs at
                continue
            spent[members] = used + eps
            # A fresh index array (of the active records): frozen rather than copied.
            members = np.asarray(members, dtype=np.int64)
            members.setflags(write=False)
            partitions.append(members)
            epsilons.append(eps)
            round_of.append(t)
            if t == 1:
                labels[members] = i
    _enforce_enjoyed(spent, budgets)
    return ReleasePlan(method, _readonly(budgets), tuple(partitions), _readonly(epsilons),
                       _readonly(round_of, np.int64), _readonly(labels, np.int64),
                       _readonly(spent), None, None, tuple(partitionings), min_size)


def _weight_units(budgets: np.ndarray, top: float) -> np.ndarray:
    """``floor((eps_j / eps_max) / WEIGHT_UNIT)``, stepped down where float rounding would let
    ``units * WEIGHT_UNIT * eps_max`` exceed ``eps_j`` (the record of budget ``eps_max`` gets
    exactly ``1 / WEIGHT_UNIT``)."""
    units = np.floor(budgets / top / WEIGHT_UNIT)
    over = units * WEIGHT_UNIT * top > budgets
    while np.any(over):  # at most a step or two, on the few records float rounding lifted
        units[over] -= 1.0
        over = units * WEIGHT_UNIT * top > budgets
    return np.maximum(units, 0.0)


def _check_plan(plan: ReleasePlan, budgets: np.ndarray) -> ReleasePlan:
    if not isinstance(plan, ReleasePlan):
        raise ValueError(f"plan must be a ReleasePlan from plan_releases, got {type(plan).__name__}")
    if plan.budgets.shape != budgets.shape or not np.array_equal(plan.budgets, budgets):
        raise ValueError("plan was made for a different privacy vector than budgets")
    return plan


def _guarantee(plan: ReleasePlan, target: str) -> str:
    if plan.method == "sampling":
        how = (f"an eps_T = {plan.threshold:g} {target} on a secret Poisson sample with "
               f"p_j = (e^eps_j - 1)/(e^eps_T - 1): record j enjoys min(eps_j, eps_T) "
               f"(amplification by sampling, Jorgensen et al. 2015)")
    elif plan.method == "threshold":
        how = (f"an eps_T = {plan.threshold:g} {target} on the records with eps_j >= eps_T; the "
               f"others are not used")
    elif plan.method == "weighted":
        how = (f"one release of the histogram weighted by eps_j / eps_max (rounded down to "
               f"multiples of {WEIGHT_UNIT:g}), Lap(2/eps_max) per cell with eps_max = "
               f"{float(plan.epsilons[0]):g}: record j moves weight w_j between two cells, so it "
               f"enjoys w_j eps_max <= eps_j (Alaggan, Gambs & Kermarrec 2016)")
    else:
        how = (f"{len(plan.partitions)} disjoint-per-round releases, each an eps_i {target} at "
               f"the minimum left-over budget of its records (parallel composition within a "
               f"round, sequential across {int(plan.rounds.max()) if plan.rounds.size else 0} round(s))")
    return (f"personalized DP (Jorgensen et al. 2015; Li 2017 Ch. 5): record j gets "
            f"enjoyed[j] <= budgets[j]; {how}; neighbours: {NEIGHBOURS}")


def _plan_fields(plan: ReleasePlan, target: str) -> dict[str, Any]:
    """The fields a personalized result takes from its plan: releases, budgets, guarantee."""
    return {
        "partitions": plan.partitions,
        "partition_epsilons": plan.epsilons,
        "partition_rounds": plan.rounds,
        "labels": plan.labels,
        "enjoyed": plan.enjoyed,
        "budgets": plan.budgets,
        "threshold": plan.threshold,
        "epsilon_parts": plan.epsilon_parts,
        "guarantee": _guarantee(plan, target),
        "neighbours": NEIGHBOURS,
    }


# ---------------------------------------------------------------------------------------------
# Target 1: histograms (counts per bin)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, kw_only=True)
class _Planned:
    """The fields every personalized result takes from its release plan (see
    :func:`_plan_fields`), keyword-only, after each result's own fields."""

    method: str
    ensemble: str
    partitions: tuple[np.ndarray, ...]
    partition_epsilons: np.ndarray
    partition_rounds: np.ndarray
    labels: np.ndarray
    enjoyed: np.ndarray
    budgets: np.ndarray
    threshold: float | None
    epsilon_parts: Mapping[str, float]
    guarantee: str
    neighbours: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon_parts", MappingProxyType(dict(self.epsilon_parts)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))


@dataclass(frozen=True, eq=False)
class PersonalizedResult(_Planned):
    """A personalized-DP histogram and what every record paid for it.

    Attributes
    ----------
    counts : numpy.ndarray of float
        The estimated count of every bin (may be negative or fractional).
    edges : numpy.ndarray
        The public bin edges.
    method, ensemble : str
    partitions : tuple of numpy.ndarray of int
        The records of every release (see :class:`ReleasePlan`).
    partition_epsilons : numpy.ndarray
        The budget of every release.
    partition_rounds : numpy.ndarray of int
    labels : numpy.ndarray of int
        Each record's round-1 release (``-1``: none).
    enjoyed : numpy.ndarray of float
        The budget each record actually spends, ``<= budgets`` (checked).
    budgets : numpy.ndarray of float
        The privacy vector asked for.
    threshold : float or None
    epsilon_parts : dict of str to float
        What each release spent (on its own records).
    guarantee, neighbours : str
    release_counts : numpy.ndarray, shape (releases, bins)
        The noisy histogram of every release (DP outputs), before the ensemble.
    weights : numpy.ndarray, shape (releases, bins)
        The ensemble weight of every release in every bin.
    details : dict
    """

    counts: np.ndarray
    edges: np.ndarray
    release_counts: np.ndarray
    weights: np.ndarray

    @property
    def n(self) -> int:
        """Number of records (public)."""
        return int(self.budgets.size)

    @property
    def frequencies(self) -> np.ndarray:
        """``counts / n``: the estimated relative frequency of every bin."""
        return self.counts / self.n


def _check_bins(bins, value_range, values: np.ndarray) -> np.ndarray:
    if isinstance(bins, Integral | np.integer) and not isinstance(bins, bool):
        bins = check_positive_int(bins, "bins", maximum=MAX_BINS)
        if value_range is None:
            raise ValueError("value_range=(low, high) must be given with an integer number of bins "
                             "(a public range; it must not be read from the data)")
        rng_arr = check_finite_array(value_range, "value_range")
        if rng_arr.size != 2 or not rng_arr[0] < rng_arr[1]:
            raise ValueError(f"value_range must be (low, high) with low < high, got {value_range!r}")
        edges = np.linspace(rng_arr[0], rng_arr[1], bins + 1)
    else:
        if value_range is not None:
            raise ValueError("value_range is only used with an integer number of bins")
        edges = check_finite_array(bins, "bins")
        if edges.size > MAX_BINS + 1:
            raise ValueError(f"bins must hold at most MAX_BINS + 1 = {MAX_BINS + 1} edges")
        if edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError("bins must be at least two strictly increasing finite edges")
    if np.any(values < edges[0]) or np.any(values > edges[-1]):
        raise ValueError(
            f"bins must cover every value: some values lie outside [{edges[0]:g}, {edges[-1]:g}] "
            f"(numpy.histogram's convention: the last bin is closed)"
        )
    return edges


_ENSEMBLES_HIST = ("weighted", "sum")


def _cell_counts(cell: np.ndarray, n_bins: int, weights=None) -> np.ndarray:
    """Counts (or weight sums) of cells ``0 .. n_bins - 1``; cell ``n_bins`` (a record left
    out, see ``include`` of :func:`personalized_histogram`) is dropped."""
    return np.bincount(cell, weights=weights, minlength=n_bins + 1)[:n_bins]


def _bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of every value, numpy.histogram's convention (``edges[i] <= v < edges[i + 1]``,
    the last bin closed): ``clip(searchsorted(edges, v, "right") - 1, 0, B - 1)``.

    Equal-width edges (public, the common case) give the bin by arithmetic, as
    numpy.histogram does, then one exact comparison with the edges either side corrects a
    rounding; other edges are searched.
    """
    n_bins = edges.size - 1
    width = np.diff(edges)
    if values.size < 4 * n_bins or np.ptp(width) > 1e-9 * float(np.mean(width)):
        return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, n_bins - 1)
    cell = ((values - edges[0]) * (n_bins / (edges[-1] - edges[0]))).astype(np.intp)
    np.clip(cell, 0, n_bins - 1, out=cell)
    cell -= values < edges[cell]
    np.clip(cell, 0, n_bins - 1, out=cell)
    cell += (values >= edges[cell + 1]) & (cell < n_bins - 1)
    wrong = np.flatnonzero((values < edges[cell]) & (cell > 0)
                           | (values >= edges[cell + 1]) & (cell < n_bins - 1))
    if wrong.size:  # more than a step off: search those (never on equal-width edges)
        cell[wrong] = np.clip(np.searchsorted(edges, values[wrong], side="right") - 1, 0,
                              n_bins - 1)
    return cell


def _weighted_ensemble(release_counts: np.ndarray, sizes: np.ndarray, epsilons: np.ndarray,
                       n: int, phi0: float) -> tuple[np.ndarray, np.ndarray]:
    """Inverse-variance ensemble of per-release histograms, cell by cell (post-processing).

    Release ``r`` holds ``n_r`` records; its count of a cell estimates ``(n_r / n) H`` with
    variance ``v_r + phi n_r`` (Laplace ``v_r = 8 / eps_r^2``; sampling ``phi = f (1 - f)``),
    when the budgets are independent of the values (Li 2017 §5.1's premise). The unbiased linear
    combination ``sum_r a_r H~_r`` (``sum_r a_r n_r = n``) of least variance has
    ``a_r ∝ n_r / (v_r + phi n_r)``. ``phi`` starts at the public plug-in ``phi0`` and is then
    set per cell from that first estimate (a function of DP outputs only).
    """
    variance = _CELL_VARIANCE / epsilons**2

    def weights(phi: np.ndarray) -> np.ndarray:
        ratio = sizes[:, None] / (variance[:, None] + phi[None, :] * sizes[:, None])
        return ratio * (n / np.sum(sizes[:, None] * ratio, axis=0))[None, :]

    bins = release_counts.shape[1]
    w = weights(np.full(bins, phi0))
    pilot = np.sum(w * release_counts, axis=0)
    f = np.clip(pilot / n, 0.5 / n, 0.5)
    w = weights(f * (1.0 - f))
    return np.sum(w * release_counts, axis=0), w


def personalized_histogram(
    values,
    budgets,
    bins,
    method: str = "utility",
    *,
    value_range: tuple[float, float] | None = None,
    rng: np.random.Generator | None = None,
    threshold: float | None = None,
    rounds: int = 1,
    ensemble: str = "weighted",
    min_size: int | None = None,
    max_partitions: int | None = None,
    max_groups: int = 1024,
    utility: str | Callable[..., Any] = "count",
    utility_options: Mapping[str, Any] | None = None,
    plan: ReleasePlan | None = None,
    include=None,
) -> PersonalizedResult:
    """Estimate the histogram of ``values`` under personalized DP, one budget per record.

    Parameters
    ----------
    values : array_like, 1-D
        One value per record (finite; at least one record).
    budgets : array_like, 1-D
        The public privacy vector: one budget > 0 per record.
    bins : int or array_like
        Bin edges, as :func:`numpy.histogram` takes them (strictly increasing; the last bin is
        closed), or a number of equal bins over the public ``value_range``. Every value must
        lie within the edges: a value outside would silently vanish from the counts.
    method : {"minimum", "threshold", "sampling", "privacy_aware", "utility", "weighted"}
        See the module docstring; ``"weighted"``: :func:`weighted_histogram`.
    value_range : (float, float), optional
        Public range, required with an integer ``bins``.
    rng : numpy.random.Generator, optional
    threshold : float, optional
        ``eps_T`` for ``"sampling"``/``"threshold"`` (default: the mean budget, Li 2017 §5.3.2.1).
    rounds : int
        T-round partitioning (Li 2017 §5.2.3).
    ensemble : {"weighted", "sum"}
        How the partition releases are combined (Li 2017 §5.2.4). ``"weighted"``: inverse-variance
        weights per cell, see Notes. ``"sum"``: the plain sum of the round-1 partition
        histograms -- unbiased for this very data with no assumption, but its noise variance
        ``sum_i 8/eps_i^2`` always exceeds Minimum's ``8/eps_min^2`` (a teaching baseline;
        ``rounds`` must be 1).
    min_size, max_partitions, max_groups, utility, utility_options
        Partitioning options (:func:`privacy_aware_partition`, :func:`utility_partition`).
        For ``utility="count"`` the default ``cell_variance`` is the public plug-in
        ``(1 - 1/B) / B`` for ``B`` bins.
    plan : ReleasePlan, optional
        A plan from :func:`plan_releases` for these budgets (reuse across calls); when given,
        the other planning arguments are ignored.
    include : array_like of bool, optional
        Which records are counted (default: all). A record left out contributes to no count
        of any release; the plan (partitions, budgets, sizes, scaling) is unchanged, so the
        outputs other than the noisy counts do not depend on ``include``. Leaving a record
        out is a function of that record alone, so it costs no record anything: record
        ``j``'s loss stays at most ``enjoyed[j]`` whatever ``include[j]`` is (its value is
        either counted as planned, or removed -- a change the replace-one calibration covers
        at half its budget). The door uses it for records whose own stated budget is below
        what the plan gives them (:mod:`dpwidgets.releases.personalized`).

    Returns
    -------
    PersonalizedResult

    Raises
    ------
    ValueError
        Empty input, NaN/inf values, budgets <= 0 / NaN / of the wrong length, bins that do
        not cover the values, bad options -- all before any noise is drawn.

    Notes
    -----
    Privacy: every release is the Laplace mechanism (``publish(..., "identity")`` at
    ``eps_r / 2``, i.e. Lap(2/eps_r) per cell, ``eps_r``-DP for replace-one) on the histogram
    of its own records; a record is in at most one release per round, so it enjoys the sum
    of its releases' budgets over the rounds, ``<= eps_j`` (:class:`ReleasePlan`). Sampling:
    ``eps_T``-DP Laplace on a secret sample, ``eps_j`` by amplification (Lap(2/eps_T) is
    ``eps_T``-DP for replace-one and ``eps_T/2``-DP for add/remove, which the amplification
    argument for a replaced record needs). Everything after the noise is post-processing:
    sampling and threshold estimates are scaled by ``n / sum_j p_j`` (``n / n_T``), public
    numbers; the weighted ensemble uses public sizes and budgets and DP outputs only.

    Estimation: a partition (or sample) of the records estimates the *whole* histogram only
    if the budgets are independent of the values -- Li 2017 §5.1's premise; then release ``r``'s
    count of a cell is ``(n_r/n) H`` plus sampling error plus Laplace noise and
    ``sum_r a_r H~_r`` with ``a_r ∝ n_r / (8/eps_r^2 + f(1-f) n_r)``, ``sum_r a_r n_r = n``,
    is the unbiased combination of least variance (for disjoint releases; a heuristic
    weighting across T rounds). Minimum needs no such premise.

    References
    ----------
    Li 2017 §5.1 (Minimum, Threshold, Def. 5.1.1 Sampling), §5.2 (Def. 5.2.1-5.2.4, Alg. 10-11),
    §5.2.3 (T-round), §5.2.4 (ensemble); Jorgensen, Yu, Cormode, ICDE 2015.
    """
    values = check_finite_array(values, "values")
    budgets = _check_budgets(budgets, values.size)
    edges = _check_bins(bins, value_range, values)
    method = _check_method(method, HISTOGRAM_METHODS)
    _check_utility(utility)
    _check_utility_options(utility_options)
    if ensemble not in _ENSEMBLES_HIST:
        raise ValueError(f"ensemble must be one of {list(_ENSEMBLES_HIST)}, got {ensemble!r}")
    n_bins = edges.size - 1
    if plan is None:
        options = dict(utility_options or {})
        if utility == "count":
            options.setdefault("cell_variance", (1.0 - 1.0 / n_bins) / n_bins)
        plan = plan_releases(budgets, method, threshold=threshold, rounds=rounds,
                             min_size=min_size, max_partitions=max_partitions,
                             max_groups=max_groups, utility=utility, utility_options=options,
                             default_threshold="mean")
    else:
        plan = _check_plan(plan, budgets)
    if ensemble == "sum" and plan.rounds.size and int(plan.rounds.max()) > 1:
        raise ValueError("ensemble='sum' adds the round-1 partitions; use rounds=1 (or 'weighted')")
    rng = check_rng(rng)
    n = values.size
    cell = _bin_index(values, edges)
    if include is not None:
        include = np.asarray(include)
        if include.dtype != bool or include.shape != (n,):
            raise ValueError(f"include must be one bool per record ({n}), got "
                             f"{include.dtype} of shape {include.shape}")
        # A record left out goes to an overflow cell that no count keeps.
        cell = np.where(include, cell, n_bins)

    if plan.method == "weighted":
        return _weighted_release(cell, n_bins, edges, plan, budgets, rng)
    if plan.method == "sampling":
        kept = bernoulli_coins(plan.probabilities, rng)
        true_counts = _cell_counts(cell[kept], n_bins)[None, :]
    else:
        true_counts = np.stack([_cell_counts(cell[p], n_bins) for p in plan.partitions]) \
            if plan.partitions else np.zeros((0, n_bins))
    releases = np.stack([
        publish(c, e / 2.0, "identity", rng=rng).counts  # replace-one: eps_r/2 for add/remove
        for c, e in zip(true_counts, plan.epsilons, strict=True)
    ]) if len(plan.partitions) else np.zeros((0, n_bins))

    sizes = plan.sizes.astype(float)
    if plan.method == "sampling":
        scale = n / float(np.sum(plan.probabilities))
        weights = np.full((1, n_bins), scale)
        counts = scale * releases[0]
    elif plan.method == "threshold":
        scale = n / sizes[0]
        weights = np.full((1, n_bins), scale)
        counts = scale * releases[0]
    elif ensemble == "sum":
        weights = np.ones_like(releases)
        counts = releases.sum(axis=0)
    else:
        counts, weights = _weighted_ensemble(releases, sizes, plan.epsilons, n,
                                             (1.0 - 1.0 / n_bins) / n_bins)
    _enforce_enjoyed(plan.enjoyed, budgets)
    return PersonalizedResult(
        counts=_readonly(counts),
        edges=_readonly(edges),
        method=plan.method,
        ensemble=ensemble if plan.method in _PARTITIONING else "scaled",
        **_plan_fields(plan, "Laplace histogram (Lap(2/eps) per bin)"),
        release_counts=_readonly(releases),
        weights=_readonly(weights),
        details={"plan": plan, "sizes": plan.sizes},
    )


def _weighted_release(cell: np.ndarray, n_bins: int, edges: np.ndarray, plan: ReleasePlan,
                      budgets: np.ndarray, rng: np.random.Generator) -> PersonalizedResult:
    """The one release of :func:`weighted_histogram` (its Notes hold the proof)."""
    top = float(plan.epsilons[0])
    units = np.rint(plan.weights / WEIGHT_UNIT)  # exact: the weights are multiples of the unit
    # Weighted histogram in units: sums of integers below 2**53, exact in float64.
    true_units = _cell_counts(cell, n_bins, units)
    # Replace-one moves units[j] out of one cell into another: L1 change 2 units[j], so
    # Lap(2 / (eps_max WEIGHT_UNIT)) costs record j units[j] WEIGHT_UNIT eps_max = enjoyed[j].
    noisy_units = true_units + laplace(2.0 / (top * WEIGHT_UNIT), n_bins, rng=rng)
    # Post-processing with public numbers only: back to weights, then divide by the mean weight.
    release = noisy_units * WEIGHT_UNIT
    scale = plan.n / float(np.sum(plan.weights))
    _enforce_enjoyed(plan.enjoyed, budgets)
    return PersonalizedResult(
        counts=_readonly(scale * release),
        edges=_readonly(edges),
        method="weighted",
        ensemble="scaled",
        **_plan_fields(plan, "Laplace weighted histogram (Lap(2/eps_max) per bin)"),
        release_counts=_readonly(release[None, :]),
        weights=_readonly(np.full((1, n_bins), scale)),
        details={"plan": plan, "sizes": plan.sizes, "mean_weight": 1.0 / scale},
    )


def weighted_histogram(
    values,
    budgets,
    bins,
    *,
    value_range: tuple[float, float] | None = None,
    rng: np.random.Generator | None = None,
    plan: ReleasePlan | None = None,
) -> PersonalizedResult:
    """Personalized-DP histogram in one release, each record weighted by its budget.

    Alaggan, Gambs & Kermarrec 2016's heterogeneous DP for a count query: record ``j`` enters
    the histogram with weight ``w_j = eps_j / eps_max`` (rounded down to a multiple of
    :data:`WEIGHT_UNIT`), one Laplace draw of scale ``2 / eps_max`` is added to every cell of
    the weighted histogram, and the result is divided by the mean weight ``sum_j w_j / n``.
    Every record is used, with a single noise draw per cell (no partition, no sampling).

    Parameters
    ----------
    values : array_like, 1-D
        One value per record (finite; at least one record).
    budgets : array_like, 1-D
        The public privacy vector: one budget per record.
    bins : int or array_like
        Bin edges, or a number of equal bins over the public ``value_range``
        (as :func:`personalized_histogram`).
    value_range : (float, float), optional
        Public range, required with an integer ``bins``.
    rng : numpy.random.Generator, optional
    plan : ReleasePlan, optional
        ``plan_releases(budgets, "weighted")``, to reuse.

    Returns
    -------
    PersonalizedResult
        ``method="weighted"``; one release (``release_counts``: the noisy weighted histogram);
        ``enjoyed = w_j eps_max <= eps_j``; ``weights``: the public rescaling ``n / sum_j w_j``.

    Raises
    ------
    ValueError
        As :func:`personalized_histogram`, before any noise is drawn.

    Notes
    -----
    Privacy (personalized DP; neighbours: :data:`NEIGHBOURS`): replacing record ``j``'s value
    moves weight ``w_j`` from one cell to another, an L1 change of ``2 w_j``, so
    Lap(``2/eps_max``) per cell gives it a loss of ``w_j eps_max <= eps_j``. The weights are
    public (a function of the privacy vector), hence so is their mean; the rescaling is
    post-processing. Noise is drawn on the integer histogram of weight units (``w_j /
    WEIGHT_UNIT``), scale ``2 / (eps_max WEIGHT_UNIT)``, so the grid sampler of
    :func:`~.mechanisms.floating_point_safe` keeps it exact. (Under add/remove neighbours the
    L1 change would be ``w_j`` and Lap(``1/eps_max``) would do; the privacy vector is public
    here, so replace-one is the relation, as for every method of this module.)

    Estimation: ``E[H~_c] = sum_{j in c} w_j / w_bar``. When the budgets are assigned to the
    records independently of their values (Li 2017 §5.1's premise; exchangeably), ``E[w_j] =
    w_bar`` for every record, so the estimate is unbiased for the true count ``H_c``; its
    noise variance ``8 / (eps_max w_bar)^2 = 8 / eps_bar^2`` is that of one Laplace release at
    the *mean* budget. Budgets correlated with the values bias it (as they bias Sampling and
    the partition ensembles).

    References
    ----------
    M. Alaggan, S. Gambs, A.-M. Kermarrec, "Heterogeneous differential privacy", Journal of
    Privacy and Confidentiality 7(2), 2016; Li 2017 §5.1 (the premise that budgets and values
    are independent).
    """
    values = check_finite_array(values, "values")
    budgets = _check_budgets(budgets, values.size)
    edges = _check_bins(bins, value_range, values)
    if plan is None:
        plan = plan_releases(budgets, "weighted")
    else:
        plan = _check_plan(plan, budgets)
        if plan.method != "weighted":
            raise ValueError(f"plan must be a 'weighted' plan for weighted_histogram, got "
                             f"{plan.method!r}")
    return personalized_histogram(values, budgets, edges, "weighted", rng=rng, plan=plan)


# ---------------------------------------------------------------------------------------------
# Target 2: logistic regression (diffprivlib)
# ---------------------------------------------------------------------------------------------

_ENSEMBLES_LR = ("weighted_vote", "vote", "best")


@dataclass(frozen=True, eq=False)
class PersonalizedClassifier(_Planned):
    """Personalized-DP logistic regression: the fitted model(s) and their ensemble.

    Attributes
    ----------
    models : tuple of diffprivlib.models.LogisticRegression
        One fitted model per release (each a DP output).
    weights : numpy.ndarray of float
        The vote of every model (0 for a dropped model; they sum to 1).
    partitions, partition_epsilons, partition_rounds, labels, enjoyed, budgets, threshold
        As in :class:`PersonalizedResult`.
    method, ensemble, guarantee, neighbours : str
    epsilon_parts : dict of str to float
    details : dict
    """

    models: tuple[Any, ...]
    weights: np.ndarray

    def _check_x(self, X) -> np.ndarray:
        X = check_finite_array(X, "X", ndim=2)
        expected = self.models[0].coef_.shape[1]
        if X.shape[1] != expected:
            raise ValueError(f"X must have {expected} columns, got {X.shape[1]}")
        return X

    def predict_proba(self, X) -> np.ndarray:
        """Weighted mean predicted probability of class 1 (post-processing)."""
        X = self._check_x(X)
        return sum(w * m.predict_proba(X)[:, 1]
                   for m, w in zip(self.models, self.weights, strict=True) if w > 0)

    def predict(self, X) -> np.ndarray:
        """Weighted majority vote of the models; a tie goes to :meth:`predict_proba` (Li 2017 §5.2.4)."""
        X = self._check_x(X)
        votes = sum(w * m.predict(X) for m, w in zip(self.models, self.weights, strict=True) if w > 0)
        votes = np.asarray(votes, dtype=float)
        out = (votes > 0.5).astype(np.int64)
        tie = np.isclose(votes, 0.5)
        if np.any(tie):
            out[tie] = (self.predict_proba(X[tie]) > 0.5).astype(np.int64)
        return out

    def misclassification_rate(self, X, y) -> float:
        """Fraction of ``(X, y)`` misclassified (Li 2017 §5.3.1's measure)."""
        return misclassification_rate(y, self.predict(X))


def misclassification_rate(y_true, y_pred) -> float:
    """The fraction of tuples that are incorrectly classified (Li 2017 §5.3.1)."""
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1 or y_true.size == 0:
        raise ValueError("y_true and y_pred must be non-empty 1-D arrays of the same length")
    for labels, name in ((y_true, "y_true"), (y_pred, "y_pred")):
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise ValueError(f"{name} must hold class labels: found NaN or infinite values")
    return float(np.mean(y_true != y_pred))


def _check_labels(y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.size != n:
        raise ValueError(f"y must be a 1-D array with one label per row of X ({n}), got shape {y.shape}")
    if not np.all(np.isin(y, (0, 1))):
        raise ValueError("y must hold binary labels in {0, 1}")
    return y.astype(np.int64)


def _pareto_front(sizes: np.ndarray, epsilons: np.ndarray) -> np.ndarray:
    """Releases no other release dominates (>= records and >= budget, one of them >)."""
    ge = (sizes[None, :] >= sizes[:, None]) & (epsilons[None, :] >= epsilons[:, None])
    gt = (sizes[None, :] > sizes[:, None]) | (epsilons[None, :] > epsilons[:, None])
    return ~np.any(ge & gt, axis=1)


#: Gradient tolerance of the objective-perturbation fits (L-BFGS ``pgtol``): far tighter than
#: diffprivlib's default 1e-4, so the released model is the minimiser the proof is about up to
#: a negligible optimisation error, at a few dozen iterations at most on the benchmark data.
LOGISTIC_TOL = 1e-8

#: Default iteration cap of :func:`personalized_logistic_regression` (a fit that needs more
#: is refused, never released half-way).
LOGISTIC_MAX_ITER = 1000


def _fit_dp_logistic(X, y, epsilon, data_norm, C, max_iter, seed):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression
    from sklearn.exceptions import ConvergenceWarning

    model = LogisticRegression(epsilon=epsilon, data_norm=data_norm, C=C, max_iter=max_iter,
                               tol=LOGISTIC_TOL, random_state=seed, accountant=BudgetAccountant())
    with warnings.catch_warnings():
        # Objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011) is DP for the exact
        # minimiser of the perturbed objective only: a fit that stops early is not covered,
        # so non-convergence is an error, never silenced. (diffprivlib 0.6 passes options
        # newer SciPy deprecates: not ours to act on.)
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return model.fit(X, y)
        except ConvergenceWarning:
            raise ValueError(
                f"max_iter: the objective-perturbation fit did not converge within "
                f"max_iter={max_iter} iterations, and only its exact minimiser is DP; raise "
                f"max_iter (or lower C)"
            ) from None


def personalized_logistic_regression(
    X,
    y,
    budgets,
    method: str = "utility",
    *,
    data_norm: float,
    rng: np.random.Generator | None = None,
    threshold: float | None = None,
    rounds: int = 1,
    ensemble: str = "weighted_vote",
    min_size: int | None = None,
    max_partitions: int | None = None,
    max_groups: int = 1024,
    utility: str | Callable[..., Any] = "erm",
    utility_options: Mapping[str, Any] | None = None,
    C: float = 1.0,
    max_iter: int = LOGISTIC_MAX_ITER,
    plan: ReleasePlan | None = None,
) -> PersonalizedClassifier:
    """Logistic regression under personalized DP (Li 2017 §5.3.2.3), diffprivlib as the DP learner.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features, scaled with public constants; rows are clipped to L2 norm ``data_norm`` by
        diffprivlib.
    y : array_like, shape (n,)
        Labels in {0, 1}.
    budgets : array_like, shape (n,)
        The public privacy vector.
    method : {"minimum", "threshold", "sampling", "privacy_aware", "utility"}
    data_norm : float
        Public bound on the L2 norm of a row of ``X`` (required: never read from the data).
    rng : numpy.random.Generator, optional
        Source of all randomness (the sampling coins, and one seed per diffprivlib fit).
    threshold : float, optional
        ``eps_T`` (default: the max budget, the best threshold for logistic regression in
        Li 2017 §5.3.2.3).
    rounds, min_size, max_partitions, max_groups
        As for :func:`plan_releases`. Default ``min_size``: ``max(ceil(n / (2 K)), 50)``.
    utility : {"erm", "count"} or callable
        For ``"utility"``: :func:`erm_utility` (eq. 5.2.5) by default, with ``dimension = d+1``.
    ensemble : {"weighted_vote", "vote", "best"}
        How the partition models are combined (Li 2017 §5.2.4). All first drop every model that
        another one dominates (no fewer records and no smaller budget: the text's drop-out
        rule for "equal number of records but smaller privacy budgets", generalised).
        ``"weighted_vote"`` (default): the rest vote with weights ``U(n_i, eps_i)`` (the
        text: "the weights will depend on O(n_i, eps_i)"); ``"vote"``: the text's plain
        majority vote; ``"best"``: only the model with the largest utility.
    C, max_iter
        diffprivlib's inverse regularisation strength and iteration cap (default
        :data:`LOGISTIC_MAX_ITER` = 1000; each fit runs L-BFGS to a gradient tolerance of
        :data:`LOGISTIC_TOL` = 1e-8). A fit that does not converge within ``max_iter`` raises
        ``ValueError`` naming ``max_iter``: objective perturbation is DP for the exact
        minimiser only, so a half-converged model is never released.
    plan : ReleasePlan, optional

    Returns
    -------
    PersonalizedClassifier

    Raises
    ------
    ValueError
        Bad shapes, NaN/inf, labels not in {0, 1}, budgets <= 0 / NaN / wrong length, missing
        or bad ``data_norm``, bad options (before any fit). diffprivlib raises if a release
        holds a single class (a data-dependent failure: keep partitions large); a fit that
        does not converge within ``max_iter`` raises (never a silenced ConvergenceWarning).

    Notes
    -----
    Privacy: diffprivlib's ``LogisticRegression(epsilon=e)`` is ``e``-DP for datasets of a
    fixed size differing in one record (Chaudhuri, Monteleoni, Sarwate 2011), i.e.
    replace-one, which fits the partitioning methods, Minimum and Threshold (their record
    sets are public). Sampling: amplification by Poisson sampling for a *replaced* record
    needs the base learner to be ``eps_T``-DP between a dataset with and without the record
    as well -- an add/remove guarantee diffprivlib does not state. So the records left out
    by the coins are replaced by a public placeholder (``x = 0``, label ``j mod 2``) instead
    of removed: the learner always sees ``n`` records, and "record ``j`` kept" vs "record
    ``j`` replaced by its placeholder" are replace-one neighbours, so Jorgensen et al.'s
    bound ``ln(1 + p_j (e^{eps_T} - 1)) = eps_j`` goes through. The placeholders pull the
    intercept towards 0 (a deviation from the text, which removes the records).

    References
    ----------
    Li 2017 §5.2.2 (eq. 5.2.5), §5.2.4 (majority voting), §5.3.1-5.3.2.3; Jorgensen et al. 2015;
    Chaudhuri, Monteleoni, Sarwate, JMLR 2011 (diffprivlib's LogisticRegression).
    """
    X = check_finite_array(X, "X", ndim=2)
    n, d = X.shape
    y = _check_labels(y, n)
    budgets = _check_budgets(budgets, n)
    method = _check_method(method)
    _check_utility(utility)
    _check_utility_options(utility_options)
    if data_norm is None:
        raise ValueError("data_norm must be given: a public bound on the L2 norm of a row of X")
    data_norm = check_positive(data_norm, "data_norm")
    C = check_positive(C, "C")
    max_iter = check_positive_int(max_iter, "max_iter")
    if ensemble not in _ENSEMBLES_LR:
        raise ValueError(f"ensemble must be one of {list(_ENSEMBLES_LR)}, got {ensemble!r}")
    options = dict(utility_options or {})
    if utility == "erm":
        options.setdefault("dimension", d + 1)
    if plan is None:
        if min_size is None and method in ("privacy_aware", "utility"):
            k_cap = 16 if max_partitions is None else check_positive_int(max_partitions, "max_partitions")
            min_size = min(n, max(math.ceil(n / (2 * k_cap)), 50))
        plan = plan_releases(budgets, method, threshold=threshold, rounds=rounds,
                             min_size=min_size, max_partitions=max_partitions,
                             max_groups=max_groups, utility=utility, utility_options=options,
                             default_threshold="max")
    else:
        plan = _check_plan(plan, budgets)
        if plan.method not in METHODS:
            raise ValueError(f"plan: method {plan.method!r} is for histograms only; use one of "
                             f"{list(METHODS)}")
    rng = check_rng(rng)
    seeds = rng.integers(0, 2**31 - 1, size=len(plan.partitions))
    models = []
    if plan.method == "sampling":
        kept = bernoulli_coins(plan.probabilities, rng)
        Xs = np.where(kept[:, None], X, 0.0)
        ys = np.where(kept, y, np.arange(n) % 2)
        models.append(_fit_dp_logistic(Xs, ys, float(plan.epsilons[0]), data_norm, C, max_iter,
                                       int(seeds[0])))
    else:
        for members, eps, seed in zip(plan.partitions, plan.epsilons, seeds, strict=True):
            models.append(_fit_dp_logistic(X[members], y[members], float(eps), data_norm, C,
                                           max_iter, int(seed)))
    sizes = plan.sizes.astype(float)
    function = UTILITIES[utility] if isinstance(utility, str) else utility
    scores = np.broadcast_to(np.asarray(function(sizes, plan.epsilons, **options), dtype=float),
                             sizes.shape)
    keep = _pareto_front(sizes, plan.epsilons)
    if len(models) == 1:
        weights = np.ones(1)
    elif ensemble == "best":
        weights = np.zeros(len(models))
        weights[int(np.argmax(np.where(keep, scores, -np.inf)))] = 1.0
    elif ensemble == "vote":
        weights = keep / keep.sum()
    else:
        raw = np.where(keep, np.maximum(scores, 0.0), 0.0)
        weights = raw / raw.sum() if raw.sum() > 0 else keep / keep.sum()
    _enforce_enjoyed(plan.enjoyed, budgets)
    return PersonalizedClassifier(
        models=tuple(models),
        weights=_readonly(weights),
        method=plan.method,
        ensemble=ensemble if len(models) > 1 else "single",
        **_plan_fields(plan, "diffprivlib LogisticRegression"
                       + (" (left-out records replaced by public placeholders)"
                          if plan.method == "sampling" else "")),
        details={"plan": plan, "data_norm": data_norm, "C": C},
    )


# ---------------------------------------------------------------------------------------------
# Quality measure (not private: reads the true data; evaluation and teaching only)
# ---------------------------------------------------------------------------------------------


def relative_frequency_error(true_counts, counts, *, shape=None, queries=None,
                             n_queries: int = 1000, rng: np.random.Generator | None = None,
                             n: int | None = None) -> float:
    """Mean relative frequency error of random range-count queries (Li 2017 §5.3.1).

    ``RFE(q) = |A_act(q) - A_noisy(q)| / n`` with ``n`` the number of records of the original
    data (default: the true total), averaged over box queries on the domain ``shape`` (the
    product of whose sizes is the number of cells). The text writes the difference without
    the absolute value; a signed mean would let errors cancel.

    Not private: reads the true histogram.
    """
    from .dynamic import range_query_error

    true_counts = check_finite_array(true_counts, "true_counts")
    counts = check_finite_array(counts, "counts")
    if n is None:
        n = float(np.sum(true_counts))
        if not n > 0:
            raise ValueError("true_counts must have a positive total (or pass n)")
    n = check_positive(n, "n")
    return range_query_error(true_counts[None, :], counts[None, :], n_queries, rng,
                             shape=shape, queries=queries) / n
