"""Target 1, histograms (counts per bin): :func:`personalized_histogram`,
:func:`weighted_histogram` and their result, :class:`PersonalizedResult`.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from .._results import readonly as _readonly
from ..histograms import publish
from ..mechanisms import bernoulli_coins, laplace
from ..validation import check_finite_array, check_positive_int, check_rng
from .checks import _check_budgets, _check_method, _check_utility, _check_utility_options
from .constants import _CELL_VARIANCE, _PARTITIONING, HISTOGRAM_METHODS, MAX_BINS, WEIGHT_UNIT
from .plans import ReleasePlan, _check_plan, _enforce_enjoyed, _plan_fields, _Planned, plan_releases

__all__ = ["PersonalizedResult", "personalized_histogram", "weighted_histogram"]


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
        what the plan gives them (:mod:`dpwidgets.families.personalized.params`).

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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.personalized import personalized_histogram
    >>> budgets = np.repeat([0.5, 1.0, 2.0], 100)  # three groups of 100 records
    >>> rng = np.random.default_rng(0)
    >>> values = rng.integers(0, 4, 300)
    >>> out = personalized_histogram(values, budgets, 4, value_range=(0, 4), rng=rng)
    >>> out.method, out.counts.shape
    ('utility', (4,))
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
    cell = _included_cells(_bin_index(values, edges), include, n_bins)

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

    counts, weights = _combine(releases, plan, ensemble, n, n_bins)
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


def _included_cells(cell: np.ndarray, include, n_bins: int) -> np.ndarray:
    """Each record's bin, or the overflow bin ``n_bins`` (kept by no count) for a record that
    ``include`` (one bool per record, or None: all) leaves out."""
    if include is None:
        return cell
    n = cell.size
    include = np.asarray(include)
    if include.dtype != bool or include.shape != (n,):
        raise ValueError(f"include must be one bool per record ({n}), got "
                         f"{include.dtype} of shape {include.shape}")
    return np.where(include, cell, n_bins)


def _combine(releases: np.ndarray, plan: ReleasePlan, ensemble: str, n: int,
             n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The estimate of the whole histogram from the noisy ``releases`` and the weight of each
    of their cells (post-processing: public sizes and budgets only): a sample or the
    threshold's records scaled up to ``n``, the plain sum, or the weighted ensemble."""
    sizes = plan.sizes.astype(float)
    if plan.method == "sampling":
        scale = n / float(np.sum(plan.probabilities))
    elif plan.method == "threshold":
        scale = n / sizes[0]
    elif ensemble == "sum":
        return releases.sum(axis=0), np.ones_like(releases)
    else:
        return _weighted_ensemble(releases, sizes, plan.epsilons, n,
                                  (1.0 - 1.0 / n_bins) / n_bins)
    return scale * releases[0], np.full((1, n_bins), scale)


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

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> out = weighted_histogram(rng.integers(0, 4, 300), np.repeat([0.5, 1.0, 2.0], 100), 4,
    ...                          value_range=(0, 4), rng=rng)
    >>> out.method, out.counts.shape
    ('weighted', (4,))
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
