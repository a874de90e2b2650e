"""Release plans (public: which records enter which release at what budget):
:class:`ReleasePlan`, :func:`plan_releases`.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._results import readonly as _readonly
from ..validation import check_positive_int
from .checks import (
    _check_budgets,
    _check_method,
    _check_size_options,
    _check_threshold,
    _check_utility,
    _check_utility_options,
)
from .constants import (
    _PARTITIONING,
    _THRESHOLDED,
    HISTOGRAM_METHODS,
    MAX_GROUPS,
    MAX_ROUNDS,
    MIN_BUDGET,
    NEIGHBOURS,
    WEIGHT_UNIT,
)
from .partitioning import BudgetPartition, _check_order, _partition
from .sampling import _inclusion_probabilities

__all__ = ["ReleasePlan", "plan_releases"]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.personalized import plan_releases
    >>> budgets = np.repeat([0.5, 1.0, 2.0], 100)  # the public privacy vector
    >>> plan = plan_releases(budgets, "privacy_aware", min_size=50)
    >>> len(plan.partitions), plan.epsilons, bool(np.all(plan.enjoyed <= budgets))
    (3, array([0.5, 1. , 2. ]), True)
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

    return _partition_rounds(budgets, method, rounds, min_size=min_size,
                             max_partitions=max_partitions, max_groups=max_groups,
                             utility=utility, utility_options=utility_options, order=order)


def _partition_rounds(budgets: np.ndarray, method: str, rounds: int, *, min_size: int,
                      max_partitions: int | None, max_groups: int,
                      utility: str | Callable[..., Any],
                      utility_options: Mapping[str, Any] | None, order) -> ReleasePlan:
    """The plan of the partitioning methods (Minimum, PrivacyAware, Utility), round after
    round (Li 2017 §5.2.3): each round partitions the records with budget left and gives each
    partition the smallest left-over budget of its records."""
    n = budgets.size
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
