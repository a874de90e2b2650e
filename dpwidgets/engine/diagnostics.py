"""Private regression diagnostics: private bounds, PriRP, PriROC, PriBRP and their metrics.

The model being diagnosed is an *input* (its predictions and residuals, or its predicted
probabilities and the true labels); these functions release a differentially private view of
how well it fits. Each returns a small frozen dataclass that holds every number a view needs
and what each step spent (``epsilon_parts``, which sums to ``epsilon``).

Where things are
----------------
- :func:`private_bounds` — Chen 2018 Alg. 10 (SVT over doubling intervals; the counts are
  monotone, so the monotone SVT of Lyu, Su & Li 2017, Thm 4.9 halves the query noise).
- :func:`private_residual_plot` (PriRP) — Chen 2018 Alg. 9: residuals vs predictions, linear models.
- :func:`s_recursive_medians` — Chen 2018 Alg. 12: data-dependent thresholds / bin edges.
- :func:`private_roc_curve` (PriROC) — Chen 2018 Alg. 11; :func:`roc_fixed_laplace` is the naive
  Laplace *baseline* the text argues against (sensitivity ``2|Θ|+1``). PriROC's defaults are
  N-FixedSpace thresholds with :func:`fixed_space_levels` intervals and HB (more accurate at
  the text's sizes); ``defaults="text"`` gives the text's s-RecursiveMedians, ρ = 0.2, DAWA.
- :func:`private_binned_residual_plot` (PriBRP) — Chen 2018 Alg. 13-14: logistic models.
- Metrics: :func:`residual_plot_similarity` (Sim, §4.2.3), :func:`roc_auc`, :func:`auc_error`,
  :func:`symmetric_difference`, :func:`binned_residuals` (the non-private reference),
  :func:`shape_distance` (ShapeD, eq. 4.13), :func:`regret` (eq. 4.2-4.3),
  :func:`discriminatory_power` (TVD between two distributions of a quality measure).

Neighbours and budget
---------------------
``neighbours="replace-one"`` (default; bounded DP, n public): the reading of Chen 2018 §4.3-4.4
(Alg. 12 and PriBRP's counts are "bounded DP") and of Chen et al. 2016 §2. ``neighbours="add/remove"``: the
thesis' own definition (Chen 2018 §2.1), with a *public* row count ``n`` ("we suppose n is known",
Chen 2018 §4.2.2) — it reproduces the text's noise scales of PriRP and PriBRP exactly.

The public row count. Every default, grid, split, SVT threshold and number of levels or bins is a
function of the argument ``n`` (the row count the data owner declared; the door passes a
dataset's public shape), never of ``len(data)``: two neighbouring data sets of different sizes
get the same parameters and the same ``epsilon_parts``, and only the noisy values differ. Without
``n`` a function uses ``len(data)`` under replace-one only (that relation fixes the size, so the
caller declares it public by choosing it) and refuses under add/remove, where the size is what a
neighbour changes (:func:`public_n`). A true size that differs from ``n`` costs accuracy (a
threshold ``θ·n`` that is reached later, a grid sized for ``n``), never privacy.
PriROC is the exception: its text's scales (Thm 11-12 count two changed partitions and
compose the two histograms sequentially) are what *replace-one* needs, so they are its
default, and ``"add/remove"`` halves its noise (see :func:`private_roc_curve`). The histogram
publishers (:mod:`.histograms`) are calibrated for add/remove; where a step is only
``2·eps``-DP under replace-one, it is run at ``eps/2`` in replace-one mode and says so in its
docstring. All Laplace noise comes from :func:`.mechanisms.laplace` (directly or through
:func:`.svt.sparse_vector` and :func:`.histograms.publish`).

Sources: Y. Chen, *Applying Differential Privacy with Sparse Vector Technique*, PhD thesis, Duke
University, 2018, Ch. 4 (Chen 2018); Y. Chen, A. Machanavajjhala, J. P. Reiter, A. F. Barrientos,
*Differentially Private Regression Diagnostics*, 2016, the conference version (Chen et al. 2016).
Errata of the texts followed: N0 ≈ θ²·n (Chen et al. 2016 writes θ²/n); Alg. 12 spends γ/2 per median on at
most two partitions per level; PriROC's privacy follows from Thm 11 (Thm 12 cites itself).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ._results import eps_text
from .histograms import _check_workload
from .mechanisms import (
    MEDIAN_FLOOR_BITS,
    SMOOTH_MEDIAN_VARIANTS,
    _grid_medians_of_runs,
    _noisy_medians_of_runs,
    _safe_alpha,
    is_floating_point_safe,
    laplace,
    laplace_reals,
    median_grid,
)
from .svt import sparse_vector
from .validation import (
    check_epsilon,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
    check_real,
    check_rng,
    split_budget,
)

__all__ = [
    "Records",
    "ArrayRecords",
    "NEIGHBOURS",
    "PrivateBounds",
    "PrivateResidualPlot",
    "PrivateRoc",
    "PrivateBinnedResiduals",
    "private_bounds",
    "private_residual_plot",
    "PriRP",
    "s_recursive_medians",
    "private_roc_curve",
    "PriROC",
    "roc_fixed_laplace",
    "ROC_DEFAULTS",
    "BRP_DEFAULTS",
    "binned_residual_levels",
    "fixed_space_levels",
    "private_binned_residual_plot",
    "PriBRP",
    "residual_plot_similarity",
    "SimilarityReference",
    "similarity_reference",
    "roc_auc",
    "auc_error",
    "symmetric_difference",
    "binned_residuals",
    "shape_distance",
    "regret",
    "discriminatory_power",
    "MAX_DOUBLINGS",
    "MAX_GRID",
    "MAX_LEVELS",
    "median_budget",
    "MAX_THRESHOLDS",
    "MAX_METRIC_BINS",
]

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


# ---------------------------------------------------------------------------------------------
# Shared helpers (validation at the boundary, budget splitting)
# ---------------------------------------------------------------------------------------------


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
    from .histograms import PUBLISHERS  # local: keeps the import graph one-way and lazy

    if not isinstance(publisher, str) or publisher not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {publisher!r}")
    if ndim not in PUBLISHERS[publisher].dims:
        raise ValueError(f"publisher {publisher!r} does not publish {ndim}-D histograms")
    return PUBLISHERS[publisher].name  # the canonical name (an alias such as "dawa" resolves)


def _publish(counts: np.ndarray, epsilon: float, publisher: str, rng, workload):
    from .histograms import publish

    return publish(counts, epsilon, method=publisher, rng=rng, workload=workload)


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


def _scored_records(labels, scores, name: str, bounds=(0.0, 1.0)
                    ) -> tuple[Records, float, float]:
    """:func:`_check_scored` for arrays (wrapped as :class:`ArrayRecords`), or ``labels`` a
    :class:`Records` (``scores`` None), checked against ``bounds`` when it is read."""
    if isinstance(labels, Records) and scores is None:
        return (labels, *_check_domain(bounds))
    y, p, lower, upper = _check_scored(labels, scores, name, bounds)
    return ArrayRecords(p, label=y), lower, upper


def _check_fraction(value: float, name: str) -> float:
    return check_probability(value, name, open_interval=True)


# ---------------------------------------------------------------------------------------------
# The data-touching step: the records a diagnostic reads, as the few aggregates it needs
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Private bounds (Chen 2018 §4.2.2, Alg. 10)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivateBounds:
    """An interval ``[center - half_width, center + half_width]`` released by Alg. 10.

    Attributes
    ----------
    lower, upper : float
        The released bounds.
    center : float
        The public centre the doubling intervals are centred at.
    half_width : float
        ``mu * 2**doublings`` (the ``d`` of Alg. 10).
    doublings : int
        The ``i`` at which SVT answered ⊤ (or ``max_doublings`` when capped).
    capped : bool
        True when no interval up to ``mu * 2**max_doublings`` passed the noisy threshold; the
        widest interval is then returned (post-processing of the all-⊥ answer).
    mu, theta : float
        The unit and the target coverage fraction.
    epsilon : float
        Budget spent.
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
        The privacy statement.
    """

    lower: float
    upper: float
    center: float
    half_width: float
    doublings: int
    capped: bool
    mu: float
    theta: float
    epsilon: float
    n: int
    guarantee: str
    neighbours: str


def private_bounds(
    values,
    epsilon: float,
    *,
    mu: float = 1.0,
    theta: float = 0.95,
    max_doublings: int = 40,
    center: float = 0.0,
    rng: np.random.Generator | None = None,
    monotonic: bool = True,
    n: int | None = None,
) -> PrivateBounds:
    """Find ``[c - d, c + d]`` holding about a ``theta`` fraction of ``values`` (Chen 2018 Alg. 10).

    Alg. 10 asks SVT the counts ``q_i = #{x : |x - c| <= mu 2^i}``, ``i = 0, 1, ...``, against
    the noisy threshold ``theta·n + Lap(2/epsilon)`` with fresh ``Lap(4/epsilon)`` on every
    count, and returns the first ``d = mu 2^i`` whose noisy count reaches it. Here the same
    test is asked of the records outside the interval (``n - q_i <= (1 - theta)·n``, the
    public ``n``; see :func:`_bounds_of`), which needs no true count. This is standard
    SVT with cutoff c = 1 and an even split, so it runs through :func:`.svt.sparse_vector`
    (``variant="standard", c=1, ratio=1``: threshold ``Lap(1/(eps/2)) = Lap(2/eps)``). The
    counts are monotone (below), so by default the queries get ``Lap(1/(eps/2)) = Lap(2/eps)``,
    half the text's noise, at the same budget (Lyu, Su & Li 2017, Thm 4.9); ``monotonic=False``
    gives the text's ``Lap(4/eps)``.

    Parameters
    ----------
    values : array_like, 1-D
        The confidential values (finite).
    epsilon : float
        Budget of this call.
    mu : float
        The unit: 1 for scores or test marks, 1000 for incomes (Chen 2018 §4.2.2).
    theta : float
        Target fraction in (0, 1) (0.95 in the text).
    max_doublings : int
        Cap on ``i`` (public; at most :data:`MAX_DOUBLINGS`): at most ``max_doublings + 1``
        queries; if none passes, the widest interval ``mu 2^max_doublings`` is returned and
        ``capped`` is set.
    center : float
        Public centre. The text centres at 0 (residuals are centred there). For predictions a
        public value from the model's context (the public midpoint of the outcome's range, a
        published mean) gives a tighter interval; this function never estimates it from data.
    rng : numpy.random.Generator, optional
    monotonic : bool
        True (default): the monotone SVT of Lyu, Su & Li 2017, Thm 4.9 (query noise
        ``Lap(2/eps)``). False: the text's scales (``Lap(4/eps)``).
    n : int, optional
        The public row count of the threshold ``theta·n`` (declared by the data owner). Omitted:
        ``len(values)``, and the guarantee is then for replace-one neighbours only (that
        relation fixes the size; under add/remove a threshold of ``len(values)`` would publish
        it).

    Returns
    -------
    PrivateBounds

    Raises
    ------
    ValueError
        NaN/inf or empty values, bad epsilon, ``mu <= 0``, ``theta`` outside (0, 1),
        ``max_doublings < 0``, non-finite centre — before any randomness.

    Notes
    -----
    Privacy: epsilon-DP by SVT with c = 1 (Chen 2018 Thm 9; Lyu, Su & Li 2017 Thm 4.7): each count has sensitivity
    1 under add/remove and under replace-one, and the threshold ``theta·n`` is a public constant
    when ``n`` is given (either relation); with ``n`` omitted it is ``theta·len(values)``,
    public under replace-one only.

    Why the counts are monotone (what Thm 4.9 needs: between any two neighbours, either every
    ``q_i`` goes up or stays, or every one goes down or stays). The intervals are nested, so a
    value ``x`` lies in exactly the intervals ``i >= a(x)``. Adding a record raises the
    ``q_i`` with ``i >= a(x)`` by 1 and leaves the others; removing one lowers them. Replacing
    ``x`` by ``x'`` changes ``q_i`` by ``[i >= a(x')] - [i >= a(x)]``: if ``a(x) <= a(x')`` that
    is -1 for ``a(x) <= i < a(x')`` and 0 elsewhere, otherwise +1 for ``a(x') <= i < a(x)`` and
    0 elsewhere — one sign either way. So under both relations the ⊥ answers' privacy loss is
    covered by the threshold noise alone and the query noise ``Lap(cΔ/eps2)`` suffices
    (instead of ``Lap(2cΔ/eps2)``); with c = 1 the split ``eps2/eps1 = c^(2/3) = 1`` is the
    monotone optimum (Lyu, Su & Li 2017, §4.3), so the even split is kept.
    Utility (Thm 9): with probability 1 - β the interval holds at least a
    ``theta - 8(log(k-1) + log(2/β))/(n eps)`` fraction; n·eps ≥ 470 gives θ - 0.1 at β = 0.05.

    References
    ----------
    Chen 2018 §4.2.2, Alg. 10, Thm 9; Chen et al. 2016 §4.2.1, Alg. 2.
    """
    x = check_finite_array(values, "values")
    epsilon = check_epsilon(epsilon)
    mu = check_positive(mu, "mu")
    theta = _check_fraction(theta, "theta")
    max_doublings = check_positive_int(max_doublings, "max_doublings", minimum=0,
                                       maximum=MAX_DOUBLINGS)
    center = check_real(center, "center")
    if not isinstance(monotonic, bool | np.bool_):
        raise ValueError(f"monotonic must be True or False, got {monotonic!r}")
    declared = n is not None
    n = public_n(n, x.size, "replace-one", minimum=1)
    rng = check_rng(rng)
    out = _bounds_of(ArrayRecords(x), "predicted", epsilon, mu=mu, theta=theta,
                     max_doublings=max_doublings, center=center, rng=rng, monotonic=monotonic,
                     n=n)
    if declared:
        return out
    return dataclasses.replace(
        out, neighbours="replace-one only (n = len(values) public; pass n= for add/remove)")


def _bounds_of(records: Records, column: str, epsilon: float, *, mu: float, theta: float,
               max_doublings: int, center: float, rng: np.random.Generator,
               monotonic: bool, n: int) -> PrivateBounds:
    """:func:`private_bounds` on one column of checked records (parameters checked too);
    ``n`` is the public row count of the threshold (never ``records.n``).

    The test ``q_i >= theta·n`` is asked as ``-o_i >= -(1 - theta)·n`` with ``o_i = #{x : |x -
    c| > mu 2^i}``, the records *outside* interval i: for a true count equal to ``n`` the two
    are the same test (both sides shifted by n; the same noise), and neither needs the true
    count. Where the true count falls short of ``theta·n`` (a declared ``n`` above the true
    one) ``q_i`` could never reach the threshold and every run would be capped at the widest
    interval; ``o_i`` still falls to ``(1 - theta)·n``, so the interval then holds all but
    about ``(1 - theta)·n`` records. ``o_i`` has sensitivity 1 and is monotone in the same
    sense as ``q_i`` (an added record raises the ``o_i`` with ``i < a(x)``, and so on)."""
    # Counts per first doubling index (the last entry: in no interval); o_i sums those above i.
    first = np.asarray(records.doubling_counts(column, center, mu, max_doublings), dtype=float)
    outside = np.cumsum(first[::-1])[::-1][1: max_doublings + 2]

    run = sparse_vector(-outside, -(1.0 - theta) * n, epsilon, variant="standard", c=1,
                        sensitivity=1.0, monotonic=bool(monotonic), ratio=1.0, rng=rng)
    capped = run.positives.size == 0
    i = max_doublings if capped else int(run.positives[0])
    d = mu * 2.0**i
    return PrivateBounds(
        lower=center - d, upper=center + d, center=center, half_width=d, doublings=i,
        capped=capped, mu=mu, theta=theta, epsilon=epsilon, n=int(n),
        guarantee=(f"{eps_text(epsilon)}-DP (SVT, c = 1; Chen 2018 Thm 9"
                   + ("; monotone counts, Lyu, Su & Li 2017 Thm 4.9)" if monotonic else ")")),
        neighbours="add/remove or replace-one (count sensitivity 1 in both; threshold from the "
                   "public n)",
    )


# ---------------------------------------------------------------------------------------------
# PriRP (Chen 2018 §4.2.2, Alg. 9)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PrivateResidualPlot:
    """A private residual plot (PriRP) and what it cost.

    Attributes
    ----------
    points : numpy.ndarray, shape (k, 2)
        Synthetic (prediction, residual) points, ``counts[i, j]`` of them uniform in cell
        (i, j) — the plot to draw.
    counts : numpy.ndarray, shape (m, m)
        The published grid after post-processing (negatives to 0, rounded); rows index
        predictions, columns residuals.
    raw_counts : numpy.ndarray, shape (m, m)
        The publisher's estimate before post-processing (also DP output).
    edges_predicted, edges_residual : numpy.ndarray
        Cell edges (m + 1 each).
    bounds_predicted, bounds_residual : PrivateBounds
        The Alg. 10 releases.
    grid : int
        m, the number of cells per axis.
    publisher : str
        The :data:`.histograms.PUBLISHERS` key used.
    epsilon : float
        Total budget, ``== sum(epsilon_parts.values())``.
    epsilon_parts : mapping
        ``bounds_predicted`` (ε1/2), ``bounds_residual`` (ε1/2), ``histogram`` (ε2).
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
    """

    points: np.ndarray
    counts: np.ndarray
    raw_counts: np.ndarray
    edges_predicted: np.ndarray
    edges_residual: np.ndarray
    bounds_predicted: PrivateBounds
    bounds_residual: PrivateBounds
    grid: int
    publisher: str
    epsilon: float
    epsilon_parts: Mapping[str, float]
    n: int
    guarantee: str
    neighbours: str

    @property
    def bounds(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """``((pred_lo, pred_hi), (resid_lo, resid_hi))``: the plotted region."""
        bp, br = self.bounds_predicted, self.bounds_residual
        return (bp.lower, bp.upper), (br.lower, br.upper)


def residual_plot_defaults(n: int, epsilon: float, theta: float = 0.95,
                           epsilon1: float | None = None, grid: int | None = None
                           ) -> tuple[float, int]:
    """PriRP's bounds budget ``epsilon1`` and grid side ``m`` from public inputs alone.

    ``epsilon1 = min(0.3·eps, 470/n)`` unless given (Chen 2018 §4.2.2) and ``m =
    round(sqrt(N0·(eps - epsilon1)/10))``, ``N0 = θ²·n``, clipped to ``[1, MAX_GRID]``, unless
    given; ``n`` is the public row count (declared by the data owner), so the door decides both
    before the data is read and they are the same for every data set of any true size."""
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    theta = _check_fraction(theta, "theta")
    if epsilon1 is None:
        epsilon1 = min(0.3 * epsilon, 470.0 / n)
    epsilon1 = check_epsilon(epsilon1, "epsilon1")
    if not epsilon1 < epsilon:
        raise ValueError(f"epsilon1 must be < epsilon ({epsilon}), got {epsilon1}")
    if grid is None:
        n0 = theta**2 * n  # erratum: θ²·n, not θ²/n
        grid = min(MAX_GRID, max(1, int(round(math.sqrt(n0 * (epsilon - epsilon1) / 10.0)))))
    return float(epsilon1), check_positive_int(grid, "grid", maximum=MAX_GRID)


def private_residual_plot(
    predicted,
    residuals,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "dawa",
    theta: float = 0.95,
    mu_predicted: float = 1.0,
    mu_residual: float = 1.0,
    center_predicted: float = 0.0,
    center_residual: float = 0.0,
    epsilon1: float | None = None,
    grid: int | None = None,
    max_doublings: int = 40,
    workload: str | None = "range",
    neighbours: str = "replace-one",
    monotonic_bounds: bool = True,
    n: int | None = None,
) -> PrivateResidualPlot:
    """PriRP: an epsilon-DP residual plot (residuals vs predicted values), Chen 2018 Alg. 9.

    Step 1 (§4.2.2 "Computing private bounds"): :func:`private_bounds` on the predictions and
    on the residuals, ``epsilon1/2`` each, ``epsilon1 = min(0.3·eps, 470/n)``.
    Step 2 ("Perturbing residual plots", ``epsilon2 = eps - epsilon1``): an ``m × m`` grid over
    the bounded region with ``m = round(sqrt(N0·epsilon2/10))``, ``N0 = θ²·n`` (erratum: Chen et al. 2016
    writes θ²/n); the 2-D histogram of the records inside the region is released by
    :func:`.histograms.publish` (DAWA by default), negatives set to 0 and rounded; then
    ``counts[i, j]`` points are drawn uniformly in each cell (post-processing).

    Parameters
    ----------
    predicted, residuals : array_like, 1-D, same length
        ``ŷ_i`` and ``r_i = y_i - ŷ_i`` of the model under diagnosis (the model is public or
        DP; its own cost is the caller's, see ``dpwidgets.datasets.fit_model``).
    epsilon : float
        Total budget.
    rng : numpy.random.Generator, optional
    publisher : str
        A 2-D-capable key of :data:`.histograms.PUBLISHERS` (Chen 2018 Table 4.2 compares them;
        DAWA has the least regret).
    theta : float
        Coverage target of each bound (0.95).
    mu_predicted, mu_residual : float
        Units of Alg. 10 (1 for small integer-valued outcomes, 1000 for incomes).
    center_predicted, center_residual : float
        Public centres of the doubling intervals. The text uses 0 for both, which wastes half
        of the grid when all predictions are positive; pass a public centre when one is known
        (e.g. the midpoint of the outcome's published range). No budget is spent on centres.
    epsilon1 : float, optional
        Override of the bounds budget (default ``min(0.3 eps, 470/n)``, Chen 2018 §4.2.2).
    grid : int, optional
        Override of m, at most :data:`MAX_GRID` (the default rule is clipped to it too).
    max_doublings : int
        Cap of Alg. 10 (at most :data:`MAX_DOUBLINGS`).
    workload : str or None
        Passed to the publisher (range queries over the 2-D domain, Chen 2018 §4.2.2).
    monotonic_bounds : bool
        True (default): the private bounds use the monotone SVT (half the query noise, see
        :func:`private_bounds`). False: the text's Alg. 10 scales.
    neighbours : {"replace-one", "add/remove"}
        See the module docstring. The publishers are add/remove-calibrated; a replace-one change
        moves a record between two cells, so in replace-one mode the publisher is called with
        ``epsilon2/2`` (the grid then costs epsilon2). In add/remove mode it gets ``epsilon2``
        (the text).
    n : int, optional
        The public row count (declared by the data owner) that ``epsilon1``, the grid and the
        SVT thresholds ``θ·n`` are decided from (:func:`residual_plot_defaults`). Omitted: the
        number of records under replace-one; required under add/remove (:func:`public_n`).

    Returns
    -------
    PrivateResidualPlot

    Raises
    ------
    ValueError
        Mismatched lengths, NaN/inf, fewer than 2 records, bad epsilon/theta/units, an
        ``epsilon1`` not in (0, eps), an unknown or 1-D-only publisher — before any randomness.

    Notes
    -----
    Privacy: epsilon-DP under the chosen neighbour relation by sequential composition
    (Chen 2018 Thm 10): two Alg. 10 runs of ``epsilon1/2`` (count sensitivity 1 in both relations)
    and one ``epsilon2`` histogram release; sampling is post-processing. ``epsilon1``, ``m`` and
    the thresholds ``θ·n`` are functions of the public ``n`` and ``eps`` only, so they are the
    same on both neighbours and the composition is over fixed parameters.

    References
    ----------
    Chen 2018 §4.2.2, Alg. 9-10, Thm 9-10; Chen et al. 2016 §4.2; Li, Hay, Miklau, Wang 2014 (DAWA).
    """
    if isinstance(predicted, Records) and residuals is None:
        records = predicted
    else:
        records = ArrayRecords(*_check_pair(predicted, residuals, "predicted", "residuals"))
    factor = _check_neighbours(neighbours)
    n = public_n(n, records.n, neighbours)
    epsilon = check_epsilon(epsilon)
    theta = _check_fraction(theta, "theta")
    publisher = _check_publisher(publisher, 2)
    epsilon1, m = residual_plot_defaults(n, epsilon, theta, epsilon1, grid)
    for value, name in ((mu_predicted, "mu_predicted"), (mu_residual, "mu_residual")):
        check_positive(value, name)
    check_positive_int(max_doublings, "max_doublings", minimum=0, maximum=MAX_DOUBLINGS)
    for value, name in ((center_predicted, "center_predicted"), (center_residual, "center_residual")):
        check_real(value, name)
    _check_workload(workload)
    if not isinstance(monotonic_bounds, bool | np.bool_):
        raise ValueError(f"monotonic_bounds must be True or False, got {monotonic_bounds!r}")
    rng = check_rng(rng)

    parts = _parts(epsilon, bounds_predicted=epsilon1 / 2, bounds_residual=epsilon1 / 2,
                   histogram=epsilon - epsilon1)
    epsilon2 = parts["histogram"]
    common = dict(theta=theta, max_doublings=max_doublings, rng=rng,
                  monotonic=bool(monotonic_bounds), n=n)
    bp = _bounds_of(records, "predicted", parts["bounds_predicted"], mu=mu_predicted,
                    center=center_predicted, **common)
    br = _bounds_of(records, "residual", parts["bounds_residual"], mu=mu_residual,
                    center=center_residual, **common)

    ex = np.linspace(bp.lower, bp.upper, m + 1)
    er = np.linspace(br.lower, br.upper, m + 1)
    hist = np.asarray(records.grid_counts(ex, er), dtype=float)

    release = _publish(hist, epsilon2 / factor, publisher, rng, workload)
    counts = release.nonnegative(rounded=True)

    cells = np.repeat(np.arange(m * m), counts.ravel().astype(np.int64))
    i, j = np.divmod(cells, m)
    u = rng.random((cells.size, 2))
    points = np.column_stack((ex[i] + u[:, 0] * (ex[i + 1] - ex[i]),
                              er[j] + u[:, 1] * (er[j + 1] - er[j])))
    return PrivateResidualPlot(
        points=points, counts=counts, raw_counts=np.asarray(release.counts),
        edges_predicted=ex, edges_residual=er, bounds_predicted=bp, bounds_residual=br,
        grid=m, publisher=publisher, epsilon=epsilon, epsilon_parts=parts, n=int(n),
        guarantee=f"{eps_text(epsilon)}-DP (Chen 2018 Thm 10; publisher {publisher!r} at "
        f"{eps_text(epsilon2 / factor)} for {neighbours} neighbours)",
        neighbours=NEIGHBOURS[neighbours],
    )


PriRP = private_residual_plot


# ---------------------------------------------------------------------------------------------
# s-RecursiveMedians (Chen 2018 §4.3.2, Alg. 12)
# ---------------------------------------------------------------------------------------------


def _median_cost_factor(variant: str, name: str = "variant") -> float:
    """``epsilon_spent / epsilon`` of one :func:`smooth_sensitivity_median` call."""
    if not isinstance(variant, str) or variant not in SMOOTH_MEDIAN_VARIANTS:
        raise ValueError(f"{name} must be one of {sorted(SMOOTH_MEDIAN_VARIANTS)}, got {variant!r}")
    if variant == "nrs":
        return 1.0
    alpha, beta = SMOOTH_MEDIAN_VARIANTS[variant]
    return alpha + beta


def median_budget(epsilon1: float, s: int, neighbours: str = "replace-one",
                  variant: str = "nrs") -> float:
    """The budget of each median of :func:`s_recursive_medians` (ε1 over ``s`` levels, γ/2 per
    median under replace-one, γ under add/remove, 8/9 of it for ``"thesis"``).

    Raises ``ValueError`` naming ``epsilon`` when it is too small for the floating-point-safe
    median (its alpha must exceed ``2 MEDIAN_SLACK`` ≈ 1.2e-7), in either mode, so that the
    door refuses such a request before it charges anything."""
    epsilon1 = check_epsilon(epsilon1, "epsilon1")
    s = check_positive_int(s, "s", maximum=MAX_LEVELS)
    factor = _check_neighbours(neighbours)  # 2 medians per level may change under replace-one
    per_median = epsilon1 / s / factor / _median_cost_factor(variant)
    _safe_alpha(SMOOTH_MEDIAN_VARIANTS[variant][0] * per_median)
    return per_median


def s_recursive_medians(
    values,
    epsilon: float,
    s: int,
    lower: float = 0.0,
    upper: float = 1.0,
    *,
    rng: np.random.Generator | None = None,
    variant: str = "nrs",
    neighbours: str = "replace-one",
) -> np.ndarray:
    """s-RecursiveMedians: ``2^s - 1`` private thresholds splitting ``values`` evenly (Alg. 12).

    FINDMEDIANS releases the noisy median of the values inside ``(l, r)`` with
    :func:`.mechanisms.smooth_sensitivity_median` (Cauchy noise scaled to the smooth
    sensitivity of eq. 4.6; a noisy median outside ``(l, r)`` falls back to the midpoint),
    then recurses on ``{x < m~}`` in ``(l, m~)`` and ``{x > m~}`` in ``(m~, r)`` for ``s``
    levels. Here the recursion runs level by level: the values are sorted once and every
    partition is a slice of the sorted array, and the medians of one level (independent given
    the level) are computed together, so each level costs one batched pass over the records;
    the values and the draws are those of one FINDMEDIANS call per partition, in order.

    Parameters
    ----------
    values : array_like, 1-D
        Confidential values, all inside ``[lower, upper]``.
    epsilon : float
        ε1, the budget of the whole recursion.
    s : int
        Depth, in ``[1, MAX_LEVELS]`` (:data:`MAX_LEVELS` = 20: about a million thresholds).
    lower, upper : float
        Public domain (``[0, 1]`` for probabilities).
    rng : numpy.random.Generator, optional
    variant : {"nrs", "thesis"}
        Calibration of each median (see :func:`.mechanisms.smooth_sensitivity_median`).
        With ``"thesis"`` (which spends 9/8 of what it is given) each median is given
        ``(8/9)·γ/2`` (``(8/9)·γ`` under add/remove) so that the recursion still spends
        exactly ε1.
    neighbours : {"replace-one", "add/remove"}
        ``"replace-one"`` (default; the text's Thm 11): each median gets γ/2.
        ``"add/remove"``: each median gets γ (see Notes).

    Returns
    -------
    numpy.ndarray
        At most ``2^s - 1`` strictly increasing thresholds, all strictly inside
        ``(lower, upper)``: exactly ``2^s - 1`` unless heavy ties shrink a partition's interval
        to no float strictly inside it (see Notes).

    Raises
    ------
    ValueError
        Bad epsilon, ``s < 1``, bounds not ``lower < upper``, values outside them or NaN, an
        unknown variant or neighbour relation.

    Notes
    -----
    Privacy (Chen 2018 Thm 11, with the erratum that Alg. 12 spends γ/2 per median): each level uses γ = ε1/s. Under
    replace-one a changed record leaves one partition and joins another, so at most two
    partitions per level differ, each by one added or removed value: each median is
    released with γ/2, ``2 · γ/2`` per level, ε1 over s levels (the text's scales). Under
    add/remove the added or removed record lies in exactly one partition per level (the
    partitions are cut by the medians already released), so only one median per level sees
    a change and each median can be released with γ: ε1 over s levels again, at half the
    noise. The median
    mechanism's proof is stated for replace-one within a set; an added/removed value moves
    the median by at most one order statistic and shifts the index ranges in eq. 4.6 by at
    most one, so ``S*`` stays a β-smooth bound on the local sensitivity for that change
    (NRS 2007 §3.1's argument with k ± 1) — an argument sketched here, not a new proof.
    A partition with no value inside releases its midpoint plus Cauchy noise of scale
    ``(r - l)/alpha`` (the smooth sensitivity of an empty set), never the bare midpoint: a
    neighbour may hold one value there, and an exact midpoint against a noisy one would be
    an output of probability 1 against 0 (:func:`.mechanisms.smooth_sensitivity_median`).

    Ties. A partition is the open interval ``(l, r)`` between two released thresholds and
    holds the values strictly inside it. With heavily tied values a noisy median can land
    within a few float steps of a tied value, and after a midpoint fallback an interval can
    end up with no float strictly inside it (``r = nextafter(l)``, or ``l == r``). Such an
    interval holds no values and its midpoint is one of its ends, so it has nothing to split:
    it is dropped from the recursion and releases no threshold. Whether an interval is
    degenerate is a function of the thresholds already released (public), and a dropped
    partition draws no noise and touches no record, so the accounting above still bounds the
    cost of every level by γ: the recursion spends exactly ε1 (some of it on fewer medians).

    References
    ----------
    Chen 2018 §4.3.2, Alg. 12, eq. 4.6, Thm 11; Chen et al. 2016 §3.2.1, Alg. 1; Nissim, Raskhodnikova, Smith 2007.
    """
    x = check_finite_array(values, "values")
    epsilon = check_epsilon(epsilon)
    s = check_positive_int(s, "s", maximum=MAX_LEVELS)
    lower, upper = _check_domain((lower, upper), "lower and upper")
    _check_in_domain(x, "values", lower, upper)
    per_median = median_budget(epsilon, s, neighbours, variant)
    rng = check_rng(rng)
    return _recursive_medians(x, s, lower, upper, per_median, variant, rng)


def _recursive_medians(x: np.ndarray, s: int, lower: float, upper: float, per_median: float,
                       variant: str, rng: np.random.Generator) -> np.ndarray:
    """:func:`s_recursive_medians` on checked values, which may be empty: a diagnostic on a
    table in its engine must not fail on a true count of 0 (that failure would tell it);
    every partition of an empty set releases its noisy midpoint (Notes there)."""
    xs = np.sort(np.asarray(x, dtype=float))
    if is_floating_point_safe():
        return _grid_recursive_medians(xs, s, lower, upper, per_median, variant, rng)
    # The partitions of a level: (l, r) and xs[start:stop], the values inside, in order. The
    # medians of a level are independent given the level, so they are released together
    # (same values and same draws as one smooth_sensitivity_median call per partition).
    lo, hi = np.array([lower]), np.array([upper])
    start, stop = np.array([0]), np.array([xs.size])
    found: list[float] = []
    for _level in range(s):
        # Drop the intervals with no float strictly inside (they hold no values; see Ties).
        mid = 0.5 * (lo + hi)
        keep = (lo < mid) & (mid < hi)
        if not keep.all():
            lo, hi, start, stop = lo[keep], hi[keep], start[keep], stop[keep]
            if lo.size == 0:
                break
        med = np.array(_noisy_medians_of_runs(xs, start, stop, lo, hi, per_median, variant, rng))
        found += med.tolist()
        cut_lo = np.clip(np.searchsorted(xs, med, side="left"), start, stop)
        cut_hi = np.clip(np.searchsorted(xs, med, side="right"), start, stop)
        # Children in order: (l, m~) holds {x < m~}, (m~, r) holds {x > m~}.
        lo, hi = np.column_stack((lo, med)).ravel(), np.column_stack((med, hi)).ravel()
        start = np.column_stack((start, cut_hi)).ravel()
        stop = np.column_stack((cut_lo, stop)).ravel()
    return np.sort(np.asarray(found))


def _grid_recursive_medians(xs: np.ndarray, s: int, lower: float, upper: float,
                            per_median: float, variant: str, rng: np.random.Generator) -> np.ndarray:
    """:func:`s_recursive_medians` inside :func:`~.mechanisms.floating_point_safe`: the same
    recursion with every median released on the grid ``lower + k g`` of
    :func:`~.mechanisms.median_grid` (``smooth_sensitivity_median``'s Notes). A partition is
    the open interval between two released grid points; one with no grid point strictly
    inside (``k_hi - k_lo < 2``) has nothing to split and is dropped (public, as under Ties)."""
    grid = median_grid(lower, upper)
    floor = (upper - lower) * 2.0**-MEDIAN_FLOOR_BITS
    k_lo, k_hi = np.zeros(1), np.array([(upper - lower) / grid])
    lo, hi = np.array([lower]), np.array([upper])
    start, stop = np.array([0]), np.array([xs.size])
    found: list[np.ndarray] = []
    for _level in range(s):
        keep = k_hi - k_lo >= 2.0
        if not keep.all():
            k_lo, k_hi, lo, hi = k_lo[keep], k_hi[keep], lo[keep], hi[keep]
            start, stop = start[keep], stop[keep]
            if k_lo.size == 0:
                break
        k = _grid_medians_of_runs(xs, start, stop, lo, hi, k_lo, k_hi, lower, grid, floor,
                                  per_median, variant, rng)
        med = lower + k * grid
        found.append(med)
        cut_lo = np.clip(np.searchsorted(xs, med, side="left"), start, stop)
        cut_hi = np.clip(np.searchsorted(xs, med, side="right"), start, stop)
        k_lo, k_hi = np.column_stack((k_lo, k)).ravel(), np.column_stack((k, k_hi)).ravel()
        lo, hi = np.column_stack((lo, med)).ravel(), np.column_stack((med, hi)).ravel()
        start = np.column_stack((start, cut_hi)).ravel()
        stop = np.column_stack((cut_lo, stop)).ravel()
    return np.sort(np.concatenate(found)) if found else np.empty(0)


# ---------------------------------------------------------------------------------------------
# PriROC (Chen 2018 §4.3.2, Alg. 11) and the naive Laplace baseline
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PrivateRoc:
    """A private ROC curve and what it cost.

    Attributes
    ----------
    fpr, tpr : numpy.ndarray
        Non-decreasing, in [0, 1], from (0, 0) to (1, 1); one point per threshold.
    thresholds : numpy.ndarray
        The thresholds Θ, decreasing from ``upper`` (θ_0) to ``lower`` (θ_ℓ); point k is
        (FPR(θ_k), TPR(θ_k)).
    auc : float
        Trapezoidal area under (fpr, tpr).
    noisy_tp, noisy_fp : numpy.ndarray
        Noisy counts per threshold interval (θ_k, θ_{k-1}] (publisher output, before
        monotonicity is restored).
    strategy : str
        ``"recursive_medians"``, ``"fixed"`` or ``"fixed_laplace_baseline"``.
    publisher : str
    s : int
        The depth: ``|Θ| - 1 = 2^s`` intervals (fewer only when heavily tied scores leave
        recursive-median intervals with no float inside, see :func:`s_recursive_medians`).
    epsilon : float
    epsilon_parts : mapping
        Replace-one: ``thresholds`` (ε1), ``tp`` (ε2/2), ``fp`` (ε2/2). Add/remove:
        ``thresholds`` (ε1), ``tp_fp`` (ε2: each histogram is published with ε2, on disjoint
        records — parallel composition).
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float
    noisy_tp: np.ndarray
    noisy_fp: np.ndarray
    strategy: str
    publisher: str
    s: int
    epsilon: float
    epsilon_parts: Mapping[str, float]
    n: int
    guarantee: str
    neighbours: str


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


def _monotone_rates(noisy_cells: np.ndarray) -> np.ndarray:
    """Noisy interval counts -> a rate curve from 0 to 1, monotone by isotonic regression.

    The rate at θ_k is the noisy prefix sum over the noisy total (Chen 2018 §4.3.2: "TPR/FPR use the
    noisy totals"); the endpoints are 0 (θ_0 = upper) and 1 (θ_ℓ = lower) by definition.
    """
    from sklearn.isotonic import IsotonicRegression

    prefix = np.cumsum(noisy_cells)
    total = max(float(prefix[-1]), 1.0)
    inner = prefix[:-1] / total
    if inner.size:
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True)
        inner = iso.fit_transform(np.arange(inner.size, dtype=float), inner)
    return np.concatenate(([0.0], inner, [1.0]))


#: The two sets of defaults of :func:`private_roc_curve`, name -> what they are.
ROC_DEFAULTS: Mapping[str, str] = MappingProxyType({
    "dpwidgets": "N-FixedSpace thresholds (eps1 = 0), 2^s intervals with s = "
                 "clip(round(log2(n eps) / 3) + 1, 3, 10), publisher HB",
    "text": "s-RecursiveMedians thresholds with eps1 = 0.2 eps, s = min(10, floor(log2 n)), "
            "publisher DAWA (Chen 2018, Alg. 11; Chen et al. 2016)",
})


def _default_s(n: int) -> int:
    # Chen 2018 §4.3.3: |Θ| = 2^10; Chen et al. 2016 §3.3: the largest 2^s <= n. Both: min(10, floor(log2 n)).
    return max(1, min(10, int(math.floor(math.log2(n)))))


def fixed_space_levels(n: int, epsilon: float) -> int:
    """The depth ``s`` (``2^s`` equal-width intervals) of PriROC's default N-FixedSpace thresholds.

    ``s = clip(round(log2(n·eps) / 3) + 1, 3, 10)``: 2^3 intervals below ``n·eps ≈ 181``, 2^4
    for ``n·eps`` in about [181, 1448) (the text's n ≈ 500-700 at eps = 1), 2^5 up to about
    11,600, 2^10 from about 4.7·10^7. Why: each interval's two counts carry Laplace noise, and a
    TPR or FPR is a prefix sum of up to ``2^s`` of them, so the noise grows with ``2^s`` (as
    ``sqrt(2^s)/(n eps)`` for the flat tree HB keeps up to 32 cells) while the discretisation
    error of the equal-width curve shrinks with ``2^-s``, so the best depth grows slowly with
    ``n·eps``; the rule sits up to one level finer than the best depth on well-spread scores, which
    costs little there and keeps resolution for scores that crowd into part of the public
    range, where equal-width intervals lose more (the figures behind the rule are on the
    diagnostics family page of the documentation).
    ``n`` is the public row count (declared by the data owner, never ``len(data)``; see
    :func:`public_n`) and ``eps`` is public, so the rule costs no budget and gives the same
    depth on neighbours of any size.
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    return int(min(10, max(3, round(math.log2(n * epsilon) / 3.0) + 1)))


def _roc_guarantee(epsilon: float, neighbours: str, publisher: str) -> str:
    from .histograms import PUBLISHERS

    if not PUBLISHERS[publisher].private:
        return (f"NOT differentially private: publisher {publisher!r} is not epsilon-DP "
                f"(nominal epsilon {epsilon:g}; teaching only)")
    return f"{eps_text(epsilon)}-DP under {neighbours} (Chen 2018 Thm 11 + publisher {publisher!r}; Thm 12)"


def private_roc_curve(
    labels,
    scores,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    defaults: str = "dpwidgets",
    rho: float | None = None,
    s: int | None = None,
    thresholds: str | None = None,
    publisher: str | None = None,
    bounds: tuple[float, float] = (0.0, 1.0),
    median_variant: str = "nrs",
    workload: str | None = "prefix",
    neighbours: str = "replace-one",
    n: int | None = None,
) -> PrivateRoc:
    """PriROC: an epsilon-DP ROC curve of a binary classifier (Chen 2018 Alg. 11).

    Step 1: thresholds Θ by :func:`s_recursive_medians` with ``epsilon1 = rho·eps`` (``2^s - 1``
    medians plus the public ends), or N-FixedSpace (``thresholds="fixed"``: ``2^s``
    equal-width intervals, ``epsilon1 = 0``). Step 2: the counts of positives and of negatives
    per interval ``(θ_k, θ_{k-1}]`` (so TP(θ_k), FP(θ_k) are prefix sums) are released by
    :func:`.histograms.publish` with ``epsilon2/2`` each and the ``"prefix"`` workload; TPR and
    FPR divide the noisy prefix sums by the noisy totals. Step 3: isotonic regression
    (sklearn) makes both monotone; the endpoints (0, 0) and (1, 1) hold by definition.

    Defaults. ``defaults="dpwidgets"`` (the default): N-FixedSpace thresholds, ``2^s``
    intervals with ``s`` from :func:`fixed_space_levels` (a rule in ``n·eps``), and HB. At the
    text's own budgets (ρ = 0.2, s = 9, n ≈ 600, eps <= 1) nearly all of the s-RecursiveMedians
    thresholds fall back to equal-width midpoints, so ε1 buys almost nothing; spending all of
    epsilon on fewer, coarser counts is more accurate than the text's settings and than the
    naive Laplace curve of :func:`roc_fixed_laplace` at the text's budgets (the benchmark
    ``benchmarks/diagnostics_priroc.py`` measures both). ``defaults="text"``:
    s-RecursiveMedians with ρ = 0.2, ``s = min(10, floor(log2 n))``, DAWA — Chen 2018 §4.3.3.
    Any argument given explicitly overrides either set.

    Parameters
    ----------
    labels : array_like of {0, 1}
    scores : array_like
        Predicted probabilities (or any scores inside the public ``bounds``).
    epsilon : float
    rng : numpy.random.Generator, optional
    defaults : {"dpwidgets", "text"}
        Which set of defaults fills the arguments left at ``None`` (see :data:`ROC_DEFAULTS`).
    rho : float, optional
        Fraction of epsilon for the thresholds (0.2, Chen 2018 §4.3.3, Fig. 4.10). Ignored (ε1 = 0)
        for ``thresholds="fixed"``.
    s : int, optional
        ``|Θ| - 1 = 2^s``; default :func:`fixed_space_levels` for fixed thresholds under
        ``defaults="dpwidgets"``, else ``min(10, floor(log2 n))`` (Chen 2018 uses 2^10, Chen et
        al. 2016 the largest 2^s <= n); at most :data:`MAX_LEVELS`.
    thresholds : {"fixed", "recursive_medians"}, optional
        Default ``"fixed"`` (``"recursive_medians"`` under ``defaults="text"``).
    publisher : str, optional
        A 1-D-capable key of :data:`.histograms.PUBLISHERS`; default ``"hb"`` (``"dawa"``
        under ``defaults="text"``; Table 4.4: DAWA has regret 1, but the DAWA the text ran is
        not differentially private, see ``"dawa_published_not_private"``).
    bounds : (float, float)
        Public range of the scores; scores outside raise.
    median_variant : {"nrs", "thesis"}
        Calibration of the noisy medians.
    workload : str or None
        Passed to the publisher ("prefix": TP and FP are one-sided range queries, Chen et al. 2016 Def. 4).
    neighbours : {"replace-one", "add/remove"}
        ``"replace-one"`` (default): the text's scales — γ/2 per median, ε2/2 per histogram.
        ``"add/remove"``: γ per median and ε2 per histogram, half the noise (see Notes).
    n : int, optional
        The public row count (declared by the data owner) the default depth ``s`` is decided
        from. Omitted: the number of records under replace-one; required under add/remove
        (:func:`public_n`).

    Returns
    -------
    PrivateRoc

    Raises
    ------
    ValueError
        Labels not in {0, 1}, scores outside ``bounds`` or NaN, mismatched lengths, fewer
        than 2 records, bad epsilon/rho/s, unknown defaults, strategy or publisher — before
        any randomness.

    Notes
    -----
    Privacy: epsilon-DP under the chosen relation (Thm 11 for Θ, then the publisher's
    guarantee; the text's Thm 12 cites itself). The depth ``s``, hence the number of intervals,
    is a function of the public ``n`` and ``eps`` only: the same on both neighbours. The positives' and the negatives' interval
    counts are two histograms of disjoint sets of records, each published by an
    add/remove-calibrated publisher (one cell changing by 1 costs its budget).

    - Replace-one (the text's scales, which are what this relation needs): a changed record
      either keeps its label and moves between two intervals of one histogram (an L1 change
      of 2: twice that histogram's budget) or changes its label and leaves one histogram for
      the other (L1 change 1 in each: both budgets). With ``epsilon2/2`` per histogram either
      case costs epsilon2. In the medians two partitions per level can change: γ/2 each.
    - Add/remove: the record is in exactly one histogram and changes one of its cells by 1,
      so by parallel composition each histogram can be published with the whole epsilon2;
      and one partition per level changes, so each median gets γ. The text's scales would
      be (epsilon/2)-DP under this relation.

    A publisher registered with ``private=False`` (the published DAWA calibration) voids the
    guarantee; the result then says so.

    References
    ----------
    Chen 2018 §4.3.2, Alg. 11-12, Thm 11-12; Chen et al. 2016 §3.2.
    """
    records, lower, upper = _scored_records(labels, scores, "scores", bounds)
    n = public_n(n, records.n, neighbours)
    epsilon = check_epsilon(epsilon)
    if not isinstance(defaults, str) or defaults not in ROC_DEFAULTS:
        raise ValueError(f"defaults must be one of {sorted(ROC_DEFAULTS)}, got {defaults!r}")
    text = defaults == "text"
    if thresholds is None:
        thresholds = "recursive_medians" if text else "fixed"
    if thresholds not in ("recursive_medians", "fixed"):
        raise ValueError(f"thresholds must be 'recursive_medians' or 'fixed', got {thresholds!r}")
    rho = _check_fraction(0.2 if rho is None else rho, "rho")
    if s is not None:
        s = check_positive_int(s, "s", maximum=MAX_LEVELS)
    elif text or thresholds == "recursive_medians":
        s = _default_s(n)
    else:
        s = fixed_space_levels(n, epsilon)
    publisher = _check_publisher(("dawa" if text else "hb") if publisher is None else publisher, 1)
    _median_cost_factor(median_variant, "median_variant")
    _check_workload(workload)
    factor = _check_neighbours(neighbours)
    rng = check_rng(rng)

    eps1 = rho * epsilon if thresholds == "recursive_medians" else 0.0
    eps2 = epsilon - eps1
    if factor == 2:  # replace-one: sequential composition of the two histograms
        parts = _parts(epsilon, thresholds=eps1, tp=eps2 / 2, fp=eps2 / 2)
        eps_tp, eps_fp = parts["tp"], parts["fp"]
    else:  # add/remove: parallel composition over positives and negatives
        parts = _parts(epsilon, thresholds=eps1, tp_fp=eps2)
        eps_tp = eps_fp = parts["tp_fp"]
    records.check_scored(lower, upper)
    if thresholds == "recursive_medians":  # order statistics: the scores themselves
        y, p = records.scored()
        inner = _recursive_medians(
            p, s, lower, upper, median_budget(parts["thresholds"], s, neighbours, median_variant),
            median_variant, rng)
        theta = np.concatenate(([upper], inner[::-1], [lower]))
        k = _interval_index(p, theta)
        cells = theta.size - 1
        tp_cells = np.bincount(k[y == 1], minlength=cells).astype(float)
        fp_cells = np.bincount(k[y == 0], minlength=cells).astype(float)
    else:
        theta = np.linspace(upper, lower, 2**s + 1)
        # Equal widths: index arithmetic instead of a binary search per score (the same
        # intervals (θ_{k+1}, θ_k], the last one closed, as _interval_index); two counts.
        tp_cells, fp_cells = (np.asarray(c, dtype=float) for c in records.interval_counts(theta))
    noisy_tp = np.asarray(_publish(tp_cells, eps_tp, publisher, rng, workload).counts)
    noisy_fp = np.asarray(_publish(fp_cells, eps_fp, publisher, rng, workload).counts)
    tpr = _monotone_rates(noisy_tp)
    fpr = _monotone_rates(noisy_fp)
    return PrivateRoc(
        fpr=fpr, tpr=tpr, thresholds=theta, auc=roc_auc(fpr, tpr), noisy_tp=noisy_tp,
        noisy_fp=noisy_fp, strategy=thresholds, publisher=publisher, s=s, epsilon=epsilon,
        epsilon_parts=parts, n=int(n),
        guarantee=_roc_guarantee(epsilon, neighbours, publisher),
        neighbours=NEIGHBOURS[neighbours],
    )


PriROC = private_roc_curve


def roc_fixed_laplace(
    labels,
    scores,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    n_thresholds: int = 1024,
    bounds: tuple[float, float] = (0.0, 1.0),
    n: int | None = None,
) -> PrivateRoc:
    """BASELINE: the naive Laplace ROC curve Chen 2018 §4.3.2 argues against.

    N equal-width thresholds; every TP(θ_k), FP(θ_k) and n1 gets ``Lap((2N + 1)/eps)`` (the
    vector of 2N + 1 counts has L1 sensitivity ``2N + 1``; n0 = n - ñ1 with n public); then the
    same rate computation and isotonic regression as PriROC, so the comparison isolates the
    effect of the one-sided range publisher and of the data-dependent thresholds.

    Privacy: epsilon-DP (each count moves by <= 1) under add/remove and replace-one when ``n``
    (the public row count, declared by the data owner) is given; with ``n`` omitted ``n0 = len
    - ñ1`` uses ``len(labels)``, public under replace-one only, and the result says so.
    Returned as a :class:`PrivateRoc` with ``strategy="fixed_laplace_baseline"``.

    References: Chen 2018 §4.3.2 ("high sensitivity (2|Θ| + 1)"); Chen et al. 2016 §3.2.
    """
    from sklearn.isotonic import IsotonicRegression

    y, p, lower, upper = _check_scored(labels, scores, "scores", bounds)
    declared = n is not None
    n = public_n(n, y.size, "replace-one")
    epsilon = check_epsilon(epsilon)
    n_thresholds = check_positive_int(n_thresholds, "n_thresholds", minimum=2,
                                      maximum=MAX_THRESHOLDS)
    rng = check_rng(rng)

    theta = np.linspace(upper, lower, n_thresholds + 1)
    inner = theta[1:-1]
    # TP(θ) = #{y = 1, p > θ}, FP(θ) = #{y = 0, p > θ}, by binary search on sorted scores.
    pos, neg = np.sort(p[y == 1]), np.sort(p[y == 0])
    tp = pos.size - np.searchsorted(pos, inner, side="right")
    fp = neg.size - np.searchsorted(neg, inner, side="right")
    scale = (2 * n_thresholds + 1) / epsilon
    noisy = np.concatenate((tp, fp, [y.sum()])) + laplace(scale, 2 * inner.size + 1, rng=rng)
    n1 = min(max(noisy[-1], 1.0), n - 1.0)
    n0 = n - n1
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True)
    grid = np.arange(inner.size, dtype=float)
    tpr = np.concatenate(([0.0], iso.fit_transform(grid, noisy[: inner.size] / n1), [1.0]))
    fpr = np.concatenate(([0.0], iso.fit_transform(grid, noisy[inner.size : -1] / n0), [1.0]))
    return PrivateRoc(
        fpr=fpr, tpr=tpr, thresholds=theta, auc=roc_auc(fpr, tpr),
        noisy_tp=np.diff(np.concatenate(([0.0], noisy[: inner.size]))),
        noisy_fp=np.diff(np.concatenate(([0.0], noisy[inner.size : -1]))),
        strategy="fixed_laplace_baseline", publisher="laplace", s=int(math.log2(n_thresholds)),
        epsilon=epsilon, epsilon_parts=_parts(epsilon, counts=epsilon), n=int(n),
        guarantee=f"{eps_text(epsilon)}-DP (Laplace, L1 sensitivity 2N + 1)",
        neighbours=("add/remove or replace-one (public n)" if declared
                    else "replace-one (n = len(labels) public)"),
    )


# ---------------------------------------------------------------------------------------------
# PriBRP (Chen 2018 §4.4.2, Alg. 13-14)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PrivateBinnedResiduals:
    """A private binned residual plot (PriBRP) and what it cost.

    Attributes
    ----------
    mean_predicted, mean_residual : numpy.ndarray
        One point per (adjusted) bin, clamped as in eq. 4.11-4.12.
    bins : numpy.ndarray
        Edges of the adjusted bins, ``0 = e_0 < ... < e_K = 1`` (K bins).
    initial_bins : numpy.ndarray
        Edges from s-RecursiveMedians (``2^s`` bins) before Alg. 14.
    noisy_sizes : numpy.ndarray
        ``m~`` per adjusted bin (Lap noise, before the ``>= 1`` floor used for averaging).
    threshold : float
        θ of Alg. 14.
    s : int
    epsilon : float
    epsilon_parts : mapping
        ``bins`` (ε1), ``adjust`` (ε2), ``averages`` (ε3).
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
    """

    mean_predicted: np.ndarray
    mean_residual: np.ndarray
    bins: np.ndarray
    initial_bins: np.ndarray
    noisy_sizes: np.ndarray
    threshold: float
    s: int
    epsilon: float
    epsilon_parts: Mapping[str, float]
    n: int
    guarantee: str
    neighbours: str


def _adjust_bins(sizes: np.ndarray, threshold: float, epsilon: float, rng) -> list[tuple[int, int]]:
    """Chen 2018 Alg. 14 over initial bin sizes; returns groups ``[start, stop)`` of initial bins.

    Every merged bin is one run of SVT with c = 1 and a fresh noisy threshold (line 8): the
    run of :func:`.svt.sparse_vector` with ``variant="standard", monotonic=True, ratio=1``, whose
    threshold noise is ``Lap(2/eps)`` and query noise ``Lap(2/eps)`` — Alg. 14's scales. The
    running sizes of a growing group move in one direction when a record is added or removed,
    hence the monotonic calibration.

    The runs are done here without a call per run (a few hundred runs at PriBRP's default
    s = 8 cost more in call overhead than in arithmetic): the runs cover consecutive bins, so
    every bin's running size is asked exactly once and every run draws one threshold noise.
    All ``m`` query noises and ``m`` threshold noises (at most ``m`` runs) are drawn at once
    through :func:`.mechanisms.laplace` — the same distribution as one ``sparse_vector`` call
    per run (unused draws are independent of the output) — and run ``j``, starting at bin
    ``a``, stops at the first ``i >= a`` with ``C_i - C_{a-1} + ν_i >= θ + ρ_j`` (``C`` the
    cumulative sizes), i.e. ``C_i + ν_i >= θ + ρ_j + C_{a-1}``.
    """
    from .svt import _first_at_or_above

    m = sizes.size
    scale = 2.0 / epsilon  # threshold: Lap(1/(eps/2)); queries: Lap(cΔ/(eps/2)), c = Δ = 1
    rho = laplace(scale, m, rng=rng)
    cumulative = np.cumsum(sizes)
    noisy = cumulative + laplace(scale, m, rng=rng)
    zeros = np.zeros(m)
    groups: list[tuple[int, int]] = []
    start = 0
    while start < m:
        before = cumulative[start - 1] if start else 0.0
        first = _first_at_or_above(noisy, zeros, threshold + rho[len(groups)] + before, start)
        if first < 0:
            break
        groups.append((start, first + 1))
        start = first + 1
    if start < m:  # line 12: the unfinished tail joins the last bin
        groups = groups[:-1] + [(groups[-1][0] if groups else 0, m)]
    return groups


#: The two sets of defaults of :func:`private_binned_residual_plot`'s depth, name -> rule.
BRP_DEFAULTS: Mapping[str, str] = MappingProxyType({
    "dpwidgets": "s = clip(round(log2(n eps) / 2) - 2, 3, the text's s): 2^s about "
                 "sqrt(n eps) / 4 initial bins",
    "text": "s = max{t : 2^t <= sqrt(n)} (Chen 2018, Alg. 13)",
})


def binned_residual_levels(n: int, epsilon: float, defaults: str = "dpwidgets") -> int:
    """The depth ``s`` (``2^s`` initial bins) of PriBRP's s-RecursiveMedians, from public inputs.

    ``defaults="text"``: ``s = max{t : 2^t <= sqrt(n)}`` (Chen 2018, Alg. 13), which ignores
    ε. ``defaults="dpwidgets"`` (the default): ``s = round(log2(n·ε) / 2) - 2``, at least 3
    and at most the text's ``s`` -- about ``sqrt(n·ε) / 4`` initial bins.

    Why: a bin of ``m`` records has a mean residual whose sampling error is about
    ``sqrt(p(1 - p) / m)`` and whose noise is about ``16 / (ε m)`` (the residual sum's
    ``Lap(2(1 + r - l)/(ε3/4))`` under replace-one, over the noisy size). The text's bins
    hold about ``sqrt(n)`` records, far fewer than where the noise stops dominating (``m`` of
    order ``10^3 / ε²``), so its plots are mostly noise and a misspecified model is seldom
    told from a correct one; fewer, larger bins keep the shape a misspecification draws and
    lose the noise. The benchmark ``benchmarks/diagnostics_brp_separation.py`` measures both
    rules. ``n`` and ε are public, so the rule costs no budget.
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    if not isinstance(defaults, str) or defaults not in BRP_DEFAULTS:
        raise ValueError(f"defaults must be one of {sorted(BRP_DEFAULTS)}, got {defaults!r}")
    text = min(MAX_LEVELS, max(1, int(math.floor(math.log2(math.sqrt(n))))))
    if defaults == "text":
        return text
    return int(min(text, max(3, round(math.log2(n * epsilon) / 2.0) - 2)))


def binned_residuals_defaults(n: int, epsilon: float,
                              split: tuple[float, float, float] = (0.15, 0.15, 0.7),
                              s: int | None = None, gamma: float = 0.9,
                              threshold: float | None = None, neighbours: str = "replace-one",
                              defaults: str = "dpwidgets") -> tuple[int, float]:
    """PriBRP's depth ``s`` and Alg. 14 threshold ``θ`` from public inputs alone.

    ``s`` from :func:`binned_residual_levels` (``defaults``) unless given, and ``θ =
    n/(2^s·2) + 2b·ln(2/γ)``, ``b = 2·factor/(split[1]·eps)`` (``factor`` 2 under replace-one,
    1 under add/remove), unless given; ``n`` is the public row count (declared by the data
    owner), so both are the same on neighbours of any size and the door decides them before
    the data is read."""
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    fractions = [check_positive(f, "split") for f in split] if len(split) == 3 else None
    if fractions is None or not math.isclose(math.fsum(fractions), 1.0, rel_tol=1e-9):
        raise ValueError(f"split must be three positive fractions summing to 1, got {split!r}")
    gamma = _check_fraction(gamma, "gamma")
    factor = _check_neighbours(neighbours)
    levels = binned_residual_levels(n, epsilon, defaults)
    s = levels if s is None else check_positive_int(s, "s", maximum=MAX_LEVELS)
    if threshold is None:
        b = 2.0 / (fractions[1] * epsilon / factor)
        threshold = n / (2.0**s * 2.0) + 2.0 * b * math.log(2.0 / gamma)
    return s, float(check_finite_array(np.atleast_1d(threshold), "threshold")[0])


def private_binned_residual_plot(
    labels,
    probabilities,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    split: tuple[float, float, float] = (0.15, 0.15, 0.7),
    s: int | None = None,
    gamma: float = 0.9,
    threshold: float | None = None,
    median_variant: str = "nrs",
    neighbours: str = "replace-one",
    n: int | None = None,
    defaults: str = "dpwidgets",
) -> PrivateBinnedResiduals:
    """PriBRP: an epsilon-DP binned residual plot of a logistic model (Chen 2018 Alg. 13).

    Step 1: ``2^s`` bins by :func:`s_recursive_medians` on the predictions with ε1,
    ``s`` by :func:`binned_residual_levels` (the text's ``s = max{t : 2^t <= sqrt(n)}`` with
    ``defaults="text"``; by default about ``sqrt(n·ε)/4`` bins, far more accurate). Step 2: Alg. 14 merges consecutive small bins with ε2 and
    ``θ = n/(2^s·2) + 2b·ln(2/γ)`` where b is the Laplace scale of its threshold and queries
    (b = 2/ε2 gives the text's ``4 ln(2/γ)/ε2``; γ = 0.9 in the experiments). Step 3, per bin
    ``[l, r]``: the size with ``Lap(2/(ε3/2))``, and with ε3/4 each the sums of the predictions
    (sensitivity r - l) and of the residuals ``y - p`` (sensitivity 1 + r - l); averages are
    the noisy sums over the noisy size, clamped to ``[l, r]`` and ``[-r, 1 - l]``
    (eq. 4.11-4.12).

    Parameters
    ----------
    labels : array_like of {0, 1}
    probabilities : array_like in [0, 1]
        The model's predicted probabilities; residuals are ``labels - probabilities``.
    epsilon : float
    rng : numpy.random.Generator, optional
    split : (float, float, float)
        Fractions (ε1, ε2, ε3) of epsilon; (0.15, 0.15, 0.7) in Chen 2018 §4.4.3 (ρ = 0.15,
        Fig. 4.15). Must be positive and sum to 1.
    s : int, optional
        Depth of the recursion (default as above, clipped to :data:`MAX_LEVELS`; n >= 4
        needed for s >= 1).
    defaults : {"dpwidgets", "text"}
        Which rule gives ``s`` when it is not given (:data:`BRP_DEFAULTS`).
    gamma : float
        Failure probability in θ (Chen 2018 §4.4.2; not Alg. 12's γ).
    threshold : float, optional
        Override of θ.
    median_variant : {"nrs", "thesis"}
    neighbours : {"replace-one", "add/remove"}
        ``"add/remove"`` uses the text's scales for Alg. 14 and the sums. Under replace-one a
        record can move between two bins, so (i) two SVT runs of Alg. 14 can change — each run
        gets ε2/2 (scales ``Lap(4/ε2)``) — and (ii) two bins' sums change — the sums get
        twice the text's sensitivities. The size noise ``Lap(2/(ε3/2))`` is the text's in both
        modes (it is already the replace-one calibration).
    n : int, optional
        The public row count (declared by the data owner) that ``s`` and ``θ`` are decided
        from (:func:`binned_residuals_defaults`). Omitted: the number of records under
        replace-one; required under add/remove (:func:`public_n`).

    Returns
    -------
    PrivateBinnedResiduals

    Raises
    ------
    ValueError
        Labels not in {0, 1}, probabilities outside [0, 1] or NaN, mismatched lengths, fewer
        than 4 records, a bad split or gamma — before any randomness.

    Notes
    -----
    Privacy: epsilon-DP by sequential composition (Chen 2018 Thm 14), with ``s`` and ``θ``
    functions of the public ``n`` and ``eps`` only: ε1 (Thm 11), ε2 (Thm 13:
    each merged bin is one SVT run; a changed record touches the run(s) holding its bin(s)),
    ε3 (per bin ε3/2 + ε3/4 + ε3/4, bins disjoint). One correction to the text: the sum of
    predictions in ``[l, r]`` has sensitivity r (not r - l) when a record enters or leaves
    the bin, so the sums released are of ``p - l`` and of ``(y - p) + r`` (ranges ``[0, r - l]``
    and ``[0, 1 + r - l]``), and the averages are shifted back — same noise, correct bound.

    References
    ----------
    Chen 2018 §4.4.2, Alg. 12-14, eq. 4.8-4.12, Thm 13-14.
    """
    records, _, _ = _scored_records(labels, probabilities, "probabilities")
    factor = _check_neighbours(neighbours)
    n = public_n(n, records.n, neighbours, minimum=4)
    epsilon = check_epsilon(epsilon)
    fractions = [check_positive(f, "split") for f in split] if len(split) == 3 else None
    s, threshold = binned_residuals_defaults(n, epsilon, split, s, gamma, threshold, neighbours,
                                             defaults)
    _median_cost_factor(median_variant, "median_variant")
    rng = check_rng(rng)

    parts = _parts(epsilon, bins=fractions[0] * epsilon, adjust=fractions[1] * epsilon,
                   averages=fractions[2] * epsilon)
    eps1, eps2, eps3 = parts["bins"], parts["adjust"], parts["averages"]
    records.check_scored(0.0, 1.0)
    y, p = records.scored()  # s-RecursiveMedians needs the order statistics of p

    # Step 1 (Alg. 12): 2^s initial bins.
    inner = _recursive_medians(p, s, 0.0, 1.0, median_budget(eps1, s, neighbours, median_variant),
                               median_variant, rng)
    initial = np.concatenate(([0.0], inner, [1.0]))
    index = np.clip(np.searchsorted(initial, p, side="right") - 1, 0, inner.size)
    sizes = np.bincount(index, minlength=inner.size + 1).astype(float)

    # Step 2 (Alg. 14): each SVT run gets eps2/factor; b is its threshold and query scale.
    eps_run = eps2 / factor
    groups = _adjust_bins(sizes, threshold, eps_run, rng)
    edges = np.concatenate(([0.0], [initial[stop] for _, stop in groups[:-1]], [1.0]))

    # Step 3 (eq. 4.9-4.12), vectorised over bins.
    k = edges.size - 1
    lo, hi = edges[:-1], edges[1:]
    width = hi - lo
    bin_of = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, k - 1)
    residual = y - p
    m = np.bincount(bin_of, minlength=k).astype(float)
    tot_p = np.bincount(bin_of, weights=p - lo[bin_of], minlength=k)
    tot_r = np.bincount(bin_of, weights=residual + hi[bin_of], minlength=k)
    m_noisy = m + laplace(2.0 / (eps3 / 2), k, rng=rng)
    # Real sums: one record moves tot_p by at most its bin's width and tot_r by at most
    # 1 + width, in `factor` bins; in those units the L1 sensitivity is `factor` (floating-
    # point safe inside floating_point_safe(), Mironov 2012). m is a count: laplace suffices.
    tot_p_noisy = laplace_reals(tot_p, factor, eps3 / 4, rng=rng, unit=width,
                                scale=factor * width / (eps3 / 4), max_changed=factor)
    tot_r_noisy = laplace_reals(tot_r, factor, eps3 / 4, rng=rng, unit=1.0 + width,
                                scale=factor * (1.0 + width) / (eps3 / 4), max_changed=factor)
    denom = np.maximum(m_noisy, 1.0)  # a noisy size below 1 would flip or explode the average
    mean_p = np.clip(lo + tot_p_noisy / denom, lo, hi)  # eq. 4.11
    mean_r = np.clip(tot_r_noisy / denom - hi, -hi, 1.0 - lo)  # eq. 4.12
    return PrivateBinnedResiduals(
        mean_predicted=mean_p, mean_residual=mean_r, bins=edges, initial_bins=initial,
        noisy_sizes=m_noisy, threshold=float(threshold), s=s, epsilon=epsilon,
        epsilon_parts=parts, n=int(n),
        guarantee=f"{eps_text(epsilon)}-DP (Chen 2018 Thm 14, {neighbours} calibration)",
        neighbours=NEIGHBOURS[neighbours],
    )


PriBRP = private_binned_residual_plot


# ---------------------------------------------------------------------------------------------
# Metrics (non-private: they compare a private output with the confidential truth)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SimilarityReference:
    """The true plot's side of :func:`residual_plot_similarity`, computed once per plot.

    Attributes
    ----------
    fractions : numpy.ndarray, shape (bins, bins)
        ``P(c)``: the fraction of the true points in each cell.
    edges_predicted, edges_residual : numpy.ndarray
        The grid: ``bins`` equal cells over ``[min - margin, max + margin]`` of each column.
    bins : int
    margin : float
    """

    fractions: np.ndarray
    edges_predicted: np.ndarray
    edges_residual: np.ndarray
    bins: int
    margin: float


def similarity_reference(true_points, *, bins: int = 10, margin: float = 0.1) -> SimilarityReference:
    """The grid and cell fractions of the true residual plot that Sim compares against.

    Pass it as ``reference=`` to :func:`residual_plot_similarity` to score many private plots
    of the same true plot without re-binning the true points each time (the widgets do this
    on every control change). Same validation as :func:`residual_plot_similarity`.
    """
    t = check_finite_array(true_points, "true_points", ndim=2)
    if t.shape[1] != 2:
        raise ValueError("true_points and private_points must have shape (k, 2)")
    bins = check_positive_int(bins, "bins", maximum=MAX_METRIC_BINS)
    margin = check_nonnegative(margin, "margin")
    lo = t.min(axis=0) - margin
    hi = t.max(axis=0) + margin
    edges_p = np.linspace(lo[0], hi[0], bins + 1)  # what histogram2d builds from (bins, range)
    edges_r = np.linspace(lo[1], hi[1], bins + 1)
    p_true = np.histogram2d(t[:, 0], t[:, 1], bins=(edges_p, edges_r))[0] / t.shape[0]
    for array in (p_true, edges_p, edges_r):
        array.setflags(write=False)
    return SimilarityReference(fractions=p_true, edges_predicted=edges_p, edges_residual=edges_r,
                               bins=bins, margin=float(margin))


def residual_plot_similarity(true_points, private_points, *, bins: int = 10,
                             margin: float = 0.1,
                             reference: SimilarityReference | None = None) -> float:
    """Sim(RP, PRP): total variation distance on a 10×10 grid over the true plot (Chen 2018 §4.2.3).

    The grid covers ``[min ŷ - 0.1, max ŷ + 0.1] × [min r - 0.1, max r + 0.1]`` of the true
    plot; ``P(c)`` and ``P_p(c)`` are the fractions of true and private points per cell, and
    private points outside the grid count as missing mass::

        Sim = (sum_c |P(c) - P_p(c)| + (1 - sum_c P_p(c))) / 2

    Returns a value in [0, 1]; 0 means identical cell distributions, 1 when the private plot
    is empty or entirely outside. Inputs are (k, 2) arrays of (prediction, residual).
    ``reference`` (from :func:`similarity_reference`) stands in for the true plot: then pass
    ``true_points=None``; its own ``bins`` and ``margin`` are used, and the value is the same
    as from the true points.
    """
    if reference is None:
        reference = similarity_reference(true_points, bins=bins, margin=margin)
    elif true_points is not None:
        raise ValueError("give true_points or reference, not both")
    q = check_finite_array(private_points, "private_points", ndim=2, allow_empty=True)
    if q.size and q.shape[1] != 2:
        raise ValueError("true_points and private_points must have shape (k, 2)")
    if q.size == 0:
        return 1.0
    ex, er = reference.edges_predicted, reference.edges_residual
    m = reference.bins
    # np.histogram2d(q[:, 0], q[:, 1], bins=(ex, er)), by index arithmetic (same counts).
    inside = (q[:, 0] >= ex[0]) & (q[:, 0] <= ex[-1]) & (q[:, 1] >= er[0]) & (q[:, 1] <= er[-1])
    cell = _uniform_bin(q[inside, 0], ex) * m + _uniform_bin(q[inside, 1], er)
    counts = np.bincount(cell, minlength=m * m).reshape(m, m).astype(float)
    p_priv = counts / q.shape[0]
    return float(0.5 * (np.abs(reference.fractions - p_priv).sum() + (1.0 - p_priv.sum())))


def roc_auc(fpr, tpr) -> float:
    """Trapezoidal area under a ROC curve given by non-decreasing ``fpr`` and ``tpr``."""
    f, t = _check_pair(fpr, tpr, "fpr", "tpr")
    _check_in_domain(f, "fpr", 0.0, 1.0)
    _check_in_domain(t, "tpr", 0.0, 1.0)
    # The sum of many trapezoids can round past 1 (1.0000000000000002) on a curve in the unit
    # square; the area of such a curve is in [0, 1] by definition.
    return float(min(max(np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2.0), 0.0), 1.0))


def auc_error(labels, scores, private_auc: float) -> float:
    """``|AUC(labels, scores) - private_auc|``: the AUC error of Chen 2018 §4.3.3 (Fig. 4.8)."""
    from sklearn.metrics import roc_auc_score

    y = _check_labels(labels)
    p = check_finite_array(scores, "scores")
    private_auc = check_probability(private_auc, "private_auc", open_interval=False)
    return float(abs(roc_auc_score(y, p) - private_auc))


def _curve_limits(f: np.ndarray, t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Right and left limits at ``x`` of the piecewise-linear curve through (f, t).

    A vertical step (repeated f) is a jump: the right limit takes its top, the left its bottom.
    """
    fu, first = np.unique(f, return_index=True)
    last = np.unique(f[::-1], return_index=True)[1]
    last = f.size - 1 - last
    bottom, top = t[first], t[last]

    def along(idx: np.ndarray) -> np.ndarray:  # value on segment [fu[idx], fu[idx+1]]
        idx = np.clip(idx, 0, fu.size - 2)
        w = (x - fu[idx]) / (fu[idx + 1] - fu[idx])
        return top[idx] + w * (bottom[idx + 1] - top[idx])

    right = along(np.searchsorted(fu, x, side="right") - 1)
    left = along(np.searchsorted(fu, x, side="left") - 1)
    return right, left


def symmetric_difference(fpr_a, tpr_a, fpr_b, tpr_b) -> float:
    """Area between two ROC curves over FPR in [0, 1] (Chen 2018 §4.3.3, Fig. 4.9).

    Both curves are piecewise linear from (0, 0) to (1, 1) (vertical steps allowed); the area
    is computed exactly on the union of their breakpoints, including where they cross.
    Averaging it over repetitions gives the text's "mean symmetric difference".
    """
    fa, ta = _check_pair(fpr_a, tpr_a, "fpr_a", "tpr_a")
    fb, tb = _check_pair(fpr_b, tpr_b, "fpr_b", "tpr_b")
    for values, name in ((fa, "fpr_a"), (ta, "tpr_a"), (fb, "fpr_b"), (tb, "tpr_b")):
        _check_in_domain(values, name, 0.0, 1.0)
    for f, name in ((fa, "fpr_a"), (fb, "fpr_b")):
        if f[0] != 0 or f[-1] != 1 or np.any(np.diff(f) < 0):
            raise ValueError(f"{name} must be non-decreasing from 0 to 1")
    x = np.union1d(fa, fb)
    ra, la = _curve_limits(fa, ta, x)
    rb, lb = _curve_limits(fb, tb, x)
    d0 = (ra - rb)[:-1]  # difference just right of x_j
    d1 = (la - lb)[1:]  # difference just left of x_{j+1}
    h = np.diff(x)
    same = d0 * d1 >= 0
    a0, a1 = np.abs(d0), np.abs(d1)
    with np.errstate(invalid="ignore", divide="ignore"):
        crossing = np.where(a0 + a1 > 0, (d0**2 + d1**2) / (2 * (a0 + a1)), 0.0)
    return float(np.sum(h * np.where(same, (a0 + a1) / 2, crossing)))


def binned_residuals(labels, probabilities, n_bins: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The confidential binned residual plot (Chen 2018 §4.4.1): bins of (nearly) equal size.

    ``n_bins`` defaults to ``2^s`` with ``s = max{t : 2^t <= sqrt(n)}``, PriBRP's count.
    Returns (mean prediction, mean residual) per bin. Not private: the reference for
    :func:`shape_distance`.
    """
    y, p, _, _ = _check_scored(labels, probabilities, "probabilities")
    n = y.size
    if n_bins is None:
        n_bins = 2 ** max(1, int(math.floor(math.log2(math.sqrt(n)))))
    n_bins = min(check_positive_int(n_bins, "n_bins"), n)
    order = np.argsort(p, kind="stable")
    which = np.empty(n, dtype=np.int64)
    which[order] = (np.arange(n) * n_bins) // n
    size = np.bincount(which, minlength=n_bins)
    mean_p = np.bincount(which, weights=p, minlength=n_bins) / size
    mean_r = np.bincount(which, weights=y - p, minlength=n_bins) / size
    return mean_p, mean_r


def _half_slopes(p: np.ndarray, r: np.ndarray, split: float) -> np.ndarray:
    out = np.zeros(2)
    for side, mask in enumerate((p <= split, p > split)):
        pp, rr = p[mask], r[mask]
        if pp.size >= 2 and np.ptp(pp) > 0:
            dp = pp - pp.mean()
            out[side] = float(np.dot(dp, rr - rr.mean()) / np.dot(dp, dp))
    return out


def shape_distance(predicted, residual, reference_predicted=None, reference_residual=None, *,
                   split: float = 0.5) -> float:
    """ShapeD (Chen 2018 eq. 4.13): the summed |slope differences| of two binned residual plots.

    Each plot's points are split at ``p <= split`` / ``p > split`` and an OLS line of residual
    on prediction is fitted to each half; ``ShapeD = |Slp_A1 - Slp_B1| + |Slp_A2 - Slp_B2|``.
    Without a reference the ideal plot (both slopes 0) is used, as in Table 4.5. A half with
    fewer than two distinct predictions has slope 0 (a flat line: no evidence of a pattern).
    """
    p, r = _check_pair(predicted, residual, "predicted", "residual")
    split = check_real(split, "split")
    if (reference_predicted is None) != (reference_residual is None):
        raise ValueError("reference_predicted and reference_residual must be given together")
    a = _half_slopes(p, r, split)
    if reference_predicted is None:
        b = np.zeros(2)
    else:
        rp, rr = _check_pair(reference_predicted, reference_residual, "reference_predicted",
                             "reference_residual")
        b = _half_slopes(rp, rr, split)
    return float(np.abs(a - b).sum())


def regret(errors: Mapping[str, Sequence[float]] | np.ndarray,
           names: Sequence[str] | None = None) -> dict[str, float]:
    """Average regret (Chen 2018 eq. 4.2-4.3; Tables 4.2 and 4.4).

    ``errors[a][j]`` is algorithm a's error on setting j (a (dataset, ε) pair); the regret of a
    is the mean over settings of its error divided by the smallest error on that setting.
    Accepts a mapping name -> errors, or an (algorithms × settings) array with ``names``.
    """
    if names is not None and (isinstance(names, str) or not isinstance(names, Sequence)
                              or not all(isinstance(name, str) for name in names)):
        raise ValueError("names must be a sequence of algorithm names (strings) or None")
    if isinstance(errors, str):
        raise ValueError("errors must be a mapping name -> errors or an (algorithms x settings) array")
    if isinstance(errors, Mapping):
        names = list(errors)
        table = np.array([np.asarray(errors[k], dtype=float) for k in names])
    else:
        table = check_finite_array(errors, "errors", ndim=2)
        names = list(names) if names is not None else [str(i) for i in range(table.shape[0])]
    table = check_finite_array(table, "errors", ndim=2)
    if np.any(table < 0) or len(names) != table.shape[0]:
        raise ValueError("errors must be non-negative, one row per name")
    best = table.min(axis=0)
    if np.any(best <= 0):
        raise ValueError("every setting needs a positive smallest error (regret divides by it)")
    return {name: float(v) for name, v in zip(names, (table / best).mean(axis=1), strict=True)}


def discriminatory_power(sample_a, sample_b, *, bins: int = 20,
                         value_range: tuple[float, float] | None = None) -> float:
    """TVD between the empirical distributions of a quality measure in two scenarios.

    Chen 2018 §4.2.3 (Fig. 4.3(e, j), Table 4.1) and §4.4.3 (Fig. 4.14(e, j), Table 4.5) judge
    whether noisy plots can tell a good model from a bad one by the total variation distance
    between the distributions of Sim (or ShapeD) over repeated noisy plots of each scenario;
    1 means the two never overlap. The text does not say how the distributions are binned:
    here both samples share ``bins`` equal-width bins over ``value_range`` (default: the
    combined range of the samples).
    """
    a = check_finite_array(sample_a, "sample_a")
    b = check_finite_array(sample_b, "sample_b")
    bins = check_positive_int(bins, "bins", maximum=MAX_METRIC_BINS)
    if value_range is not None:
        value_range = _check_domain(value_range, "value_range")
    if value_range is None:
        lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
        value_range = (lo, hi if hi > lo else lo + 1.0)
    ha = np.histogram(a, bins=bins, range=value_range)[0] / a.size
    hb = np.histogram(b, bins=bins, range=value_range)[0] / b.size
    return float(min(1.0, 0.5 * np.abs(ha - hb).sum()))  # min: float rounding above 1

