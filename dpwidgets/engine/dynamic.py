"""Dynamic histogram release: DSFT, DSAT, DSAT under w-event privacy, and their baselines.

A series of N histogram snapshots ``H_1..H_N`` of one evolving dataset (an ``(N, U)`` array) is
released as N private histograms. Releasing every snapshot with ``epsilon/N`` (the baseline)
drowns it in noise; the distance-based samplers of Li 2017 Ch. 4 release a *new* private histogram
only when the current snapshot has moved far enough from the last release (at most ``C``
times), and repeat the last release otherwise.

Where things are
----------------
- :func:`dsft` — Li 2017 Alg. 7, fixed threshold ``T``.
- :func:`dsat` — Li 2017 Alg. 8, the threshold steered by a P controller: ``variant="paced"``
  (default, our improvement) or ``variant="text"`` (Alg. 8 as printed); see
  :data:`DSAT_VARIANTS`.
- :func:`dsat_w_event` — Li 2017 Alg. 9, DSAT under w-event privacy.
- Baselines: :func:`uniform_budget_release` (``epsilon/N`` per time point),
  :func:`fixed_sampling_release` (every ``N/C`` points), and Kellaris et al.'s w-event
  :func:`budget_distribution_release` (BD) and :func:`budget_absorption_release` (BA).
- Quality: :func:`range_query_error` (mean absolute error of random range-count queries,
  Li 2017 §4.5.1), :func:`random_range_queries`, :func:`update_ratio` (``C_i / i``, Def. 4.2.1),
  :func:`empirical_update_rate` (the data's update rate ``r``, §4.5.1).
- Helpers: :func:`dsft_k` (the budget split of Thm 4.3.4), :func:`paced_k` (the paced
  DSAT's split), :func:`sampling_noise_floor`, :func:`l1_sensitivity` (Lemma 4.2.1).
- The histogram publisher of the releases: ``publisher=`` (default ``"identity"``), or
  ``"auto"`` with the public ``shape=`` of a snapshot: :data:`PUBLISHER_RULE` (DAWA only on
  1-D histograms, identity on flattened multi-dimensional ones;
  :data:`ORDER_DEPENDENT_PUBLISHERS`).

Every function returns a :class:`DynamicRelease` (the ``(N, U)`` releases, the release points,
the public threshold trajectory, what each step spent). The releases themselves go through
:func:`.histograms.publish` (default ``"identity"``: Laplace per cell, the text's LPA), and
the decisions through :class:`.svt.SparseVector` (``variant="standard"``), so all Laplace noise
comes from :mod:`.mechanisms`; in analyst releases (inside ``floating_point_safe()``) the
distance tests of DSAT are exact comparisons on a grid (:class:`.mechanisms.ComparisonGrid`)
and BD/BA's real dissimilarities are released on a grid (:func:`.mechanisms.laplace_reals`)
before they are tested. The series is validated once; the identity releases of
the scheduled baselines are one draw for all their snapshots, the other publishers are called
per snapshot without re-validating it.

Neighbours and guarantees
-------------------------
User level (Li 2017 Def. 4.1.1; :func:`dsft`, :func:`dsat`, the two user-level baselines): two
series are neighbours when one is obtained from the other by adding or removing one user,
*with all of their occurrences* (one record in each of up to N snapshots). Each snapshot's
histogram then changes by one in one cell, so a release at one time point has L1 sensitivity
1 and the N releases compose sequentially.
w-event (Li 2017 Def. 4.1.3; Kellaris et al. 2014; :func:`dsat_w_event`, BD, BA): neighbours
differ by one user's records at time points inside one window of ``w`` consecutive points;
the guarantee is ``epsilon``-DP for every such window (equivalently: every window of ``w``
time points is charged at most ``epsilon``; :attr:`DynamicRelease.window_epsilons`).

The normalised L1 distance ``d(H_i, H~_j) = || H_i/|H_i| - H~_j^+ / |H~_j^+| ||_1`` (range
[0, 2]) has sensitivity ``Delta = 2/(n-1)`` (Lemma 4.2.1) where ``n`` is a *public* lower
bound on the snapshot sizes: the text keeps ``|D_i| = n`` fixed and known (500K, Table 4.2).
``cardinality`` is a required argument of :func:`dsft`, :func:`dsat` and :func:`dsat_w_event`:
it is never derived from the data (the smallest snapshot total is not public, and a release
calibrated to it, with ``Delta`` and the decision share published, is not DP).

Departures from the text (each is an erratum or a fix; see the function docstrings)
-------------------------------------------------------------------------------------
1. Decision noise. Alg. 7 draws ``T~ = T + Lap(2 Delta/eps1)`` and compares
   ``d + Lap(2 C Delta/eps1)``; Thm 4.2.1 charges the ⊤ answers ``eps1/2`` as if each noisy
   distance were a plain Laplace release. In SVT a ⊤ costs a shift of ``2 Delta`` of its query
   noise (the threshold moves by ``Delta`` and the distance may move ``Delta`` the other way;
   the distances are not monotonic in the data), so the printed scales are ``1.5 eps1``-DP. We
   run the decisions as standard SVT (Lyu, Su & Li 2017 Alg. 1) with an even split: threshold
   ``Lap(2 Delta/eps1)`` (the text's) and query noise ``Lap(4 c Delta/eps1)`` -- the scale
   whose variance ``32 c^2 Delta^2/eps1^2`` is what Lemma 4.3.3 and Thm 4.3.4 already use.
   ``c = C - 1``: the first release (time 1) and the forced last one are not SVT answers.
2. DSAT threshold (an erratum of the text: Alg. 8 adjusts ``T~_{i-1}``, eq. 4.2.5 ``T_{i-1}``). We
   adjust the *public* ``T_i`` (clamped to [0, 2]) from the public release count and compare
   against ``T_i + rho`` with the one secret ``rho`` of the SVT. The adjustment is then
   post-processing of released information and the decisions are SVT with adaptively chosen
   queries ``d_i - T_i``. (Clamping the noisy ``T~`` instead would mix the secret ``rho`` into
   the clamp, and the SVT proof no longer applies to the clamped steps.) The separate
   ``T_1 = T + Lap(Delta/eps1_hat)`` of §4.2.2 is not needed and not drawn.
3. w-event DSAT. One ``rho`` for an unbounded stream is not w-event private (⊤ answers outside
   the window would need paying for too), and Alg. 9 lines 9-11 compare ``count/i`` (``i`` the
   absolute time) to ``C/w``. We restart AboveThreshold (one fresh ``rho``) after each ⊤ with
   ``eps1/(C+1)`` per instance -- a window meets at most ``C + 1`` instances -- and feed the PID
   the window's own ratio ``count / min(i, w)``.
4. ``k`` of Thm 4.3.4 is used as ``eps1 = k·eps`` (Alg. 7 line 1) although its proof
   parametrises ``eps1:eps2 = k:1``; the text's ``k = 0.0532`` at ``C = 10`` (Fig. 4.2) does
   not follow from the formula for the US data's 27,648 bins (it gives 0.167). For small U the
   formula hits its cap ``1 - C/N`` (0.98 of the budget on the decisions for 20 bins).
5. ``C = 1``: no decision is ever made (the one release is time 1), so nothing is charged for
   decisions (``k = 0``; Alg. 7 would spend ``k eps`` on nothing); ``C = N`` with the default
   ``k``: every point can be released, ``k = 0`` (Thm 4.3.4's cap gives the same).
6. DSAT as printed does not adapt (``dsat(variant="text")`` keeps it). With
   ``e_i = |E_i - delta|/delta`` the controller's step is largest when the release ratio *meets*
   its target, and ``C_i/i`` starts far above ``C/N`` (time 1 is a release): the threshold
   climbs to 2 until ``i = N/C``, then falls to 0 within a few steps, releases, and climbs
   again -- a release every ``N/C`` points, fixed sampling with ``k eps`` taken from the
   releases. The default ``variant="paced"`` replaces the controller (log-threshold P term
   on the release *count* behind the schedule ``C t/N``, floored at twice the sampling-noise
   distance), measures the distance to the true snapshot at the last release (sensitivity
   ``2 Delta``), and sizes ``k`` from the decision noise it needs (:func:`paced_k`). Same
   privacy argument (SVT on adaptively chosen queries against a public threshold); the
   benchmark ``benchmarks/dynamic_dsat_design.py`` compares it with the text's version, fixed
   sampling and the baseline.

On the text's own data setup (tuples replaced by tuples of the same population) the
histograms only move by sampling noise: there is no change point to find and no version of
DSAT beats fixed sampling there (the published Fig. 4.4-4.5 are not reproduced; see
:func:`dpwidgets.datasets.census_like_series`, whose ``drift`` makes the periods real change
points).

References
----------
Li 2017 Ch. 4 (§4.1-4.5; Alg. 7, 8, 9; Lemma 4.2.1; Thms 4.2.1, 4.2.2, 4.3.4; Table 4.2).
Kellaris, Papadopoulos, Xiao, Papadias 2014, "Differentially private event sequences over
infinite streams", PVLDB 7(12) (w-event privacy, BD, BA). Lyu, Su, Li 2017 (Lyu, Su & Li 2017; SVT).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

import numpy as np

from ._results import eps_text
from ._results import frozen as _frozen
from ._results import readonly as _readonly
from .mechanisms import is_floating_point_safe, laplace, laplace_reals
from .validation import (
    check_counts,
    check_epsilon,
    check_finite_array,
    check_positive_int,
    check_rng,
)

__all__ = [
    "NEIGHBOURS",
    "MAX_WINDOW",
    "MAX_QUERIES",
    "DSAT_DEFAULTS",
    "DynamicRelease",
    "dsft",
    "dsat",
    "dsat_w_event",
    "DSFT",
    "DSAT",
    "uniform_budget_release",
    "fixed_sampling_release",
    "budget_distribution_release",
    "budget_absorption_release",
    "dsft_k",
    "paced_k",
    "sampling_noise_floor",
    "DSAT_VARIANTS",
    "PACED_DEFAULTS",
    "ORDER_DEPENDENT_PUBLISHERS",
    "PUBLISHER_RULE",
    "l1_sensitivity",
    "normalised_l1",
    "random_range_queries",
    "range_query_error",
    "update_ratio",
    "empirical_update_rate",
]

#: The largest window ``w`` of the w-event methods (ten million time points).
MAX_WINDOW = 10**7
#: The most random range queries :func:`random_range_queries` / :func:`range_query_error` draw.
MAX_QUERIES = 10**7

#: The neighbour relations of this module, by name.
NEIGHBOURS: Mapping[str, str] = MappingProxyType(
    {
        "user-level": "add/remove one user with all their occurrences (one record in each of up "
        "to N snapshots), snapshot size n public (Li 2017 Def. 4.1.1)",
        "w-event": "add/remove one user's records at the time points of one window of w "
        "consecutive snapshots (Li 2017 Def. 4.1.3; Kellaris et al. 2014), snapshot size n public",
    }
)

#: The text's defaults (Li 2017 Table 4.2 and §4.2.2). ``N``, ``n`` and ``r`` describe the data
#: (see :func:`dpwidgets.datasets.census_like_series`); ``cutoff_fraction`` gives C = 0.01 N.
DSAT_DEFAULTS: Mapping[str, float] = MappingProxyType(
    {
        "N": 500,
        "n": 500_000,
        "epsilon": 1.0,
        "cutoff_fraction": 0.01,
        "update_rate": 0.5,
        "delta": 0.05,
        "theta": 0.5,
        "dimensions": 6,
    }
)


# ---------------------------------------------------------------------------------------------
# Result object
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DynamicRelease:
    """A private release of a series of histograms and what it cost.

    Attributes
    ----------
    releases : numpy.ndarray, shape (N, U)
        The released histogram at every time point (a repeated row where nothing new was
        released). Float, may be negative (Laplace noise).
    release_points : numpy.ndarray of bool, shape (N,)
        True where a new private histogram was released.
    release_epsilons : numpy.ndarray, shape (N,)
        Budget of the histogram release at each time point (0 where the last one was repeated).
    thresholds : numpy.ndarray, shape (N,)
        The public threshold in force at each time point: constant ``T`` for DSFT, the PID
        trajectory ``T_i`` in [0, 2] for DSAT (NaN for methods without a threshold). The
        secret SVT offset ``rho`` is *not* included (it is never released).
    epsilon : float
        Total budget charged: user level, the whole series; w-event, every window of ``w``.
    epsilon_parts : dict of str to float
        ``{"decision": ..., "release": ...}`` (user level: sums to ``epsilon``; w-event: the
        per-window budgets of the two steps).
    method : str
        ``"dsft"``, ``"dsat"``, ``"dsat-w"``, ``"uniform"``, ``"fixed"``, ``"bd"`` or ``"ba"``.
    publisher : str
        The :func:`.histograms.publish` method used at the release points (what ``"auto"``
        chose; ``details["publisher_rule"]`` / ``details["publisher_note"]`` say why).
    cutoff : int or None
        ``C``: at most this many releases (per window for w-event DSAT).
    w : int or None
        Window length (w-event methods).
    window_epsilons : numpy.ndarray or None
        w-event methods: the budget charged to each window of ``w`` consecutive time points
        (``max(N - w + 1, 1)`` windows); every entry is at most ``epsilon``.
    guarantee, neighbours : str
        The privacy statement.
    details : dict
        Noise scales, ``k``, the sensitivity, burn-in, PID settings, ...; all public.
    """

    releases: np.ndarray
    release_points: np.ndarray
    release_epsilons: np.ndarray
    thresholds: np.ndarray
    epsilon: float
    epsilon_parts: Mapping[str, float]
    method: str
    publisher: str
    guarantee: str
    neighbours: str
    cutoff: int | None = None
    w: int | None = None
    window_epsilons: np.ndarray | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.releases, _Repeated):
            # The samplers' releases repeat k << N histograms: the (N, U) array is built on
            # first read (``__getattr__``), never for a session output (``release_histograms``).
            object.__setattr__(self, "_repeated", self.releases)
            object.__delattr__(self, "releases")
        else:
            object.__setattr__(self, "releases", _owned(self.releases))
        object.__setattr__(self, "release_points", _owned(self.release_points, bool))
        object.__setattr__(self, "release_epsilons", _owned(self.release_epsilons))
        object.__setattr__(self, "thresholds", _owned(self.thresholds))
        if self.window_epsilons is not None:
            object.__setattr__(self, "window_epsilons", _owned(self.window_epsilons))
        object.__setattr__(self, "epsilon_parts", MappingProxyType(dict(self.epsilon_parts)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def __getattr__(self, name: str):
        repeated = self.__dict__.get("_repeated")
        if name != "releases" or repeated is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        releases = repeated.expand()
        object.__setattr__(self, "releases", releases)
        return releases

    @property
    def release_histograms(self) -> np.ndarray:
        """The new private histograms, in time order: ``releases[release_points]``, shape
        (k, U) (read-only)."""
        repeated = self.__dict__.get("_repeated")
        if repeated is not None:
            return repeated.rows
        if self.release_points.all():
            return self.releases
        return _frozen(self.releases[self.release_points])

    @property
    def n_releases(self) -> int:
        """How many new private histograms were released."""
        return int(np.count_nonzero(self.release_points))

    @property
    def update_ratio(self) -> np.ndarray:
        """``C_i / i`` at every time point (Li 2017 Def. 4.2.1)."""
        return update_ratio(self.release_points)


def _owned(array, dtype=float) -> np.ndarray:
    """``array`` kept as it is when the engine has just built and frozen it (read-only, owning
    its memory, of ``dtype``); otherwise a read-only copy. A (500, 3456) series of releases is
    then never copied on its way out (a copy per result cost as much as the releases' noise)."""
    if (isinstance(array, np.ndarray) and array.dtype == dtype and not array.flags.writeable
            and array.flags.owndata):
        return array
    return _readonly(array, dtype)


# ---------------------------------------------------------------------------------------------
# Validation (at the boundary, before any randomness)
# ---------------------------------------------------------------------------------------------


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
    from .histograms import PUBLISHERS

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


def _check_burn_in(burn_in, n_times: int) -> int:
    if burn_in is None:
        return max(1, int(round(0.02 * n_times)))
    burn_in = check_positive_int(burn_in, "burn_in", minimum=1)
    if burn_in >= n_times:
        raise ValueError(f"burn_in (M) must be smaller than N = {n_times}, got {burn_in}")
    return burn_in


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


def l1_sensitivity(cardinality: int) -> float:
    """Delta = 2/(n - 1) of the normalised L1 distance (Li 2017 Lemma 4.2.1).

    Adding or removing one record to a histogram of ``m`` records moves its normalisation
    ``H/|H|`` by at most ``2/max(m, m')`` in L1; with every snapshot holding at least ``n - 1``
    records (``n`` public), ``2/(n - 1)`` bounds it.
    """
    cardinality = check_positive_int(cardinality, "cardinality", minimum=2)
    return 2.0 / (cardinality - 1)


def dsft_k(cardinality: int, n_bins: int, cutoff: int, n_times: int) -> float:
    """The decision share ``k`` of Li 2017 Thm 4.3.4 (``eps1 = k * eps``).

    ``k = min{ cbrt(n^2 (8 Delta^2 + 32 C^2 Delta^2) / (U C^2)), 1 - C/N }``, Delta = 2/(n-1).
    The cap ``1 - C/N`` keeps ``eps2/C >= eps/N`` (a release is never noisier than the
    baseline's); ``C = N`` gives 0 (no budget for decisions).
    """
    cardinality = check_positive_int(cardinality, "cardinality", minimum=2)
    n_bins = check_positive_int(n_bins, "n_bins")
    cutoff = check_positive_int(cutoff, "cutoff")
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
    """``|| counts/|counts| - reference^+/|reference^+| ||_1`` in [0, 2] (Li 2017 §4.2.1)."""
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
    from .histograms import PUBLISHERS

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
    from .svt import SparseVector  # local: svt imports nothing from here, but keep it lazy

    return SparseVector(threshold, epsilon, variant="standard", c=c, sensitivity=sensitivity,
                        ratio=ratio, rng=rng)


def _user_guarantee(epsilon: float, what: str) -> str:
    return f"{eps_text(epsilon)}-DP, user level ({what})"


# ---------------------------------------------------------------------------------------------
# DSFT and DSAT (Li 2017 §4.2, Alg. 7 and 8)
# ---------------------------------------------------------------------------------------------

#: The two versions of DSAT (:func:`dsat`'s ``variant``).
DSAT_VARIANTS: Mapping[str, str] = MappingProxyType(
    {
        "paced": "our improvement (default): the threshold follows the release count's lag behind "
        "the schedule C t/N in log space, floored at twice the sampling-noise distance; distance "
        "to the last released snapshot; decision share from the decision-noise target; SVT "
        "split 1:(2c)^(2/3)",
        "text": "Li 2017 Alg. 8 as printed: the P term of eqs 4.2.2-4.2.5 on the release ratio; "
        "distance to the last private release; k of Thm 4.3.4; SVT split 1:1",
    }
)

#: Settings of the ``"paced"`` variant (public constants, chosen on the series families of
#: ``benchmarks/dynamic_dsat_design.py``; see :func:`dsat`).
PACED_DEFAULTS: Mapping[str, float] = MappingProxyType(
    {
        "gain": math.log(2.0),  # threshold x2 per release ahead of schedule, /2 per release behind
        "floor_multiplier": 2.0,  # on-schedule threshold >= 2 x sampling_noise_floor(n, U)
        "noise_fraction": 0.1,  # SVT query noise scale = 0.1 x on-schedule threshold
        "k_min": 0.01,
        "k_max": 0.5,
    }
)

_REFERENCES = ("release", "snapshot")


def sampling_noise_floor(cardinality: int, n_bins: int) -> float:
    """``(2/sqrt(pi)) sqrt(U/n)``: the normalised L1 distance that sampling noise alone puts
    between two snapshots.

    Two independent samples of ``n`` records from one distribution ``p`` over ``U`` bins differ
    by about ``sum_u (2/sqrt(pi)) sqrt(p_u (1 - p_u)/n)`` in normalised L1 (normal
    approximation of each cell); by Cauchy-Schwarz this is at most ``(2/sqrt(pi)) sqrt(U/n)``,
    reached by the uniform ``p``. A function of the public ``n`` and ``U`` only.
    """
    cardinality = check_positive_int(cardinality, "cardinality", minimum=2)
    n_bins = check_positive_int(n_bins, "n_bins")
    return 2.0 / math.sqrt(math.pi) * math.sqrt(n_bins / cardinality)


def _optimal_ratio(cutoff: int) -> float:
    """``eps_query : eps_threshold = (2c)^(2/3)`` for standard SVT with c = C - 1.

    Lyu, Su & Li 2017 §4.2, eq. 12: the threshold noise ``Lap(Delta/eps_t)`` has variance
    ``2 Delta^2/eps_t^2`` and the query noise ``Lap(2 c Delta/eps_q)`` variance
    ``8 c^2 Delta^2/eps_q^2``; minimising their sum under ``eps_t + eps_q = eps1`` gives
    ``4/eps_t^3 = 16 c^2/eps_q^3``, i.e. ``eps_q/eps_t = (4 c^2)^(1/3) = (2c)^(2/3)``.
    """
    return float((2 * max(cutoff - 1, 1)) ** (2.0 / 3.0))


def paced_k(
    cardinality: int,
    n_bins: int,
    cutoff: int,
    epsilon: float,
    threshold: float = 0.5,
    *,
    decision_ratio: float | None = None,
    reference: str = "snapshot",
) -> float:
    """The decision share ``k`` of the ``"paced"`` DSAT (our rule, not the text's).

    The decisions get just enough budget that the SVT's query noise has scale
    ``noise_fraction`` (0.1) times the on-schedule threshold ``T_s = max(threshold,
    2 sampling_noise_floor(n, U))``: with ``c = C - 1`` answers, sensitivity ``Delta_d``
    (``4/(n-1)`` to the snapshot, ``2/(n-1)`` to the release) and split ``r``, the query noise
    is ``2 c Delta_d (1 + r) / (r eps1)``, so ``eps1 = 2 c Delta_d (1 + r) / (r 0.1 T_s)``;
    ``k = eps1/eps`` clipped to [0.01, 0.5]. ``C = 1`` gives 0 (no decision is ever made).

    Thm 4.3.4's ``k`` (:func:`dsft_k`) does not depend on ``eps`` or on the size of the
    distances, and caps at ``1 - C/N`` for small ``U``: 0.98 of the budget for the decisions
    on a 20-bin histogram. With ``n`` in the hundreds of thousands the rule above gives the
    floor 0.01 (the text's own Fig. 4.2 finds the best ``k`` between 0.01 and 0.1); for a few
    thousand records it buys decisions that are not pure noise, up to half the budget.
    """
    cardinality = check_positive_int(cardinality, "cardinality", minimum=2)
    n_bins = check_positive_int(n_bins, "n_bins")
    cutoff = check_positive_int(cutoff, "cutoff")
    epsilon = check_epsilon(epsilon)
    threshold = _check_threshold(threshold)
    if reference not in _REFERENCES:
        raise ValueError(f"reference must be one of {_REFERENCES}, got {reference!r}")
    if cutoff == 1:
        return 0.0
    ratio = _optimal_ratio(cutoff) if decision_ratio is None else _check_unit(decision_ratio, "decision_ratio")
    scale = _paced_scale(threshold, cardinality, n_bins)
    sensitivity = (2.0 if reference == "snapshot" else 1.0) * 2.0 / (cardinality - 1)
    c = cutoff - 1
    eps1 = 2 * c * sensitivity * (1 + ratio) / (ratio * PACED_DEFAULTS["noise_fraction"] * scale)
    return float(min(PACED_DEFAULTS["k_max"], max(PACED_DEFAULTS["k_min"], eps1 / epsilon)))


def _paced_scale(threshold: float, cardinality: int, n_bins: int) -> float:
    """The on-schedule threshold ``T_s = max(threshold, 2 sampling_noise_floor)`` (<= 2)."""
    floor = PACED_DEFAULTS["floor_multiplier"] * sampling_noise_floor(cardinality, n_bins)
    return min(2.0, max(threshold, floor))


def _distance_sampling(
    series: np.ndarray,
    epsilon: float,
    cutoff: int,
    threshold: float,
    rng: np.random.Generator,
    *,
    k: float | None,
    cardinality: int,
    publisher: str,
    decision_ratio: float | None,
    controller: str,
    reference: str,
    burn_in: int = 1,
    delta: float = 0.05,
    theta: float = 0.5,
    gain: float = PACED_DEFAULTS["gain"],
    choice: Mapping[str, str] | None = None,
) -> DynamicRelease:
    """DSFT (``controller="fixed"``), DSAT as printed (``"text"``) and paced DSAT (``"paced"``)."""
    n_times, n_bins = series.shape
    delta_l1 = 2.0 / (cardinality - 1)
    # Each normalised snapshot moves by at most Delta; a distance between two snapshots by 2 Delta.
    sensitivity = delta_l1 * (2.0 if reference == "snapshot" else 1.0)
    paced = controller == "paced"
    scale = _paced_scale(threshold, cardinality, n_bins) if paced else threshold
    if decision_ratio is None:
        # The optimum split of a c-cutoff standard SVT (DSFT and paced DSAT); the text's DSAT
        # keeps its even split.
        decision_ratio = 1.0 if controller == "text" else _optimal_ratio(cutoff)
    k_rule = "given"
    if cutoff == 1:
        # No decision is ever made (the one release is time 1): nothing to pay for.
        k, k_rule = 0.0, "C = 1"
    elif k is None and cutoff >= n_times:
        k, k_rule = 0.0, "C = N"  # every time point can be released: no decision needed
    elif k is None:
        if paced:
            k = paced_k(cardinality, n_bins, cutoff, epsilon, threshold,
                        decision_ratio=decision_ratio, reference=reference)
            k_rule = "paced_k"
        else:
            k = dsft_k(cardinality, n_bins, cutoff, n_times)
            k_rule = "Thm 4.3.4"
    eps1 = k * epsilon
    eps2 = epsilon - eps1
    per_release = eps2 / cutoff
    release = _publisher_call(publisher)
    target = cutoff / n_times
    svt_c = max(cutoff - 1, 1)

    rows: list[np.ndarray] = []  # the private histograms, in time order
    which = np.zeros(n_times, dtype=int)  # the row in force at each time point
    points = np.zeros(n_times, dtype=bool)
    spent = np.zeros(n_times)
    thresholds = np.full(n_times, scale if paced else threshold)
    # Decisions: standard SVT, c = C - 1 ⊤ answers (departure 1 in the module docstring).
    svt = _svt(scale, eps1, svt_c, sensitivity, decision_ratio, rng) if eps1 > 0 else None
    totals = series.sum(axis=1).astype(float)
    distance_to = _Distances(series, totals)

    def reference_of(t: int, released: np.ndarray) -> np.ndarray:
        return series[t] / totals[t] if reference == "snapshot" else _normalise_release(released)

    # Alg. 7 lines 3-4: release D_1 with eps2/C.
    rows.append(last := release(series[0], per_release, rng))
    distance_to.reset(reference_of(0, last))
    points[0], spent[0], count = True, per_release, 1
    t_now = threshold
    for t in range(1, n_times):
        i = t + 1  # the text's 1-based time
        if paced:
            # Public: the release count's lag behind the schedule 0.5 + C t / N.
            # The cap 2 is reached well before exp() overflows: compare exponents first.
            lag = gain * (count - 0.5 - target * t)
            t_now = 2.0 if lag > math.log(2.0 / scale) + 1.0 else min(2.0, scale * math.exp(lag))
        thresholds[t] = t_now
        if count < cutoff and t == n_times - 1:
            # Alg. 7 line 10 / Alg. 8 line 14: the last time point spends what is left.
            remaining = eps2 - math.fsum(spent)
            rows.append(release(series[t], remaining, rng))
            which[t] = len(rows) - 1
            points[t], spent[t] = True, remaining
            break
        if count >= cutoff or (controller != "fixed" and i <= burn_in):
            # Alg. 7 line 6 / Alg. 8 lines 2, 4: repeat the last release.
            which[t] = len(rows) - 1
            continue
        if controller == "text":
            # Alg. 8 lines 6-8 (P term of eq. 4.2.3 with theta_P = 1): only the public count.
            ratio = count / i
            e = abs(abs(ratio - target) - delta) / delta
            u = theta * e
            t_now = max(0.0, t_now - u) if ratio - target <= 0 else min(2.0, t_now + u)
            thresholds[t] = t_now
        if svt is None:  # k = 0 (C = N): every point is a release point
            above = True
        else:
            above = bool(svt.query(distance_to(t), threshold=t_now))
        if above:  # Alg. 7 line 8 / Alg. 8 line 10
            rows.append(last := release(series[t], per_release, rng))
            distance_to.reset(reference_of(t, last))
            points[t], spent[t] = True, per_release
            count += 1
        which[t] = len(rows) - 1  # Alg. 7 line 9 / Alg. 8 line 12: else repeat the last one

    parts = _parts(epsilon, decision=eps1, release=eps2)
    details: dict[str, Any] = {
        "k": k,
        "k_rule": k_rule,
        "epsilon1": eps1,
        "epsilon2": eps2,
        "sensitivity": sensitivity,
        "cardinality": cardinality,
        "release_scale": 1.0 / per_release,
        "svt_c": svt_c,
        "decision_ratio": decision_ratio,
        "threshold_scale": svt.noise.threshold_scale if svt else None,
        "query_scale": svt.noise.query_scale if svt else None,
        "initial_threshold": threshold,
        "reference": reference,
        **(choice or {}),
    }
    if controller != "fixed":
        details.update(burn_in=burn_in, variant=controller)
    if controller == "text":
        details.update(delta=delta, theta=theta)
    if paced:
        details.update(gain=gain, schedule_threshold=scale,
                       noise_floor=sampling_noise_floor(cardinality, n_bins))
    name = "dsft" if controller == "fixed" else "dsat"
    return DynamicRelease(
        releases=_expand(rows, which, n_bins), release_points=points, release_epsilons=spent,
        thresholds=thresholds, epsilon=epsilon, epsilon_parts=parts, method=name,
        publisher=publisher,
        guarantee=_user_guarantee(epsilon, f"SVT decisions eps1 = {eps_text(eps1)} + at most "
                                  f"C = {cutoff} releases of eps2/C; Li 2017 Thm 4.2.2"),
        neighbours=NEIGHBOURS["user-level"], cutoff=cutoff, details=details,
    )


def _check_reference(reference, default: str) -> str:
    if reference is None:
        return default
    if reference not in _REFERENCES:
        raise ValueError(
            f"reference must be 'release' (distance to the last private release, the text's) "
            f"or 'snapshot' (to the true snapshot at the last release), got {reference!r}"
        )
    return reference


def _check_ratio(decision_ratio) -> float | None:
    return None if decision_ratio is None else _check_unit(decision_ratio, "decision_ratio")


def dsft(
    histograms,
    epsilon: float,
    cutoff: int | None,
    threshold: float,
    rng: np.random.Generator | None = None,
    *,
    k: float | None = None,
    cardinality: int,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
    decision_ratio: float | None = 1.0,
    reference: str = "release",
) -> DynamicRelease:
    """Distance-based Sampling with Fixed Threshold (DSFT, Li 2017 Alg. 7).

    At time 1 release ``H_1`` with ``eps2/C``. At every later time point compare the noisy
    normalised L1 distance between ``H_i`` and the last release ``H~_j`` with the noisy fixed
    threshold ``T``; when above, release ``H_i`` with ``eps2/C``, else repeat ``H~_j``. After
    ``C`` releases every point repeats the last one; if fewer than ``C`` were made, the last
    time point is released with all the budget left.

    Parameters
    ----------
    histograms : array_like, shape (N, U)
        The snapshots: non-negative whole counts, every row over the same U bins, N >= 2.
    epsilon : float
        Total budget of the whole series.
    cutoff : int or None
        ``C``, the most releases (1 <= C <= N); None: 0.01 N (Table 4.2), at least 1.
    threshold : float
        ``T`` in [0, 2], the distance that triggers a release (about 0.025 was best on the
        text's US data, Fig. 4.3).
    rng : numpy.random.Generator, optional
    k : float, optional
        Decision share, ``eps1 = k * eps``, in (0, 1). Default: Thm 4.3.4 (:func:`dsft_k`);
        0 when ``C = 1`` (no decision is ever made).
    cardinality : int
        Required (keyword). The *public* lower bound ``n`` on the snapshot sizes (every
        snapshot must hold at least ``n - 1`` records); ``Delta = 2/(n-1)`` and the default
        ``k`` are functions of it. Declared by the data owner or taken from a public
        generator's parameters, never from the data (the text's snapshots all have the same
        known size, 500K).
    publisher : str
        The :func:`.histograms.publish` method of the releases; default ``"identity"`` (LPA,
        the text's default; it also uses PSD, which this package does not have). ``"auto"``:
        by the dimension of ``shape`` (:data:`PUBLISHER_RULE`: DAWA on a 1-D histogram,
        identity on a flattened multi-dimensional one or without ``shape``). An explicit
        order-dependent publisher (:data:`ORDER_DEPENDENT_PUBLISHERS`, e.g. ``"dawa"``) on a
        multi-dimensional ``shape`` is kept, with a note in ``details["publisher_note"]``:
        it merges cells adjacent only in the flattened order, which can multiply the error
        (``benchmarks/dynamic_publishers.py`` measures it).
    shape : sequence of int, optional
        The public attribute domains of one snapshot (product U), e.g. ``(96, 12, 3)``; used
        only to choose the publisher (see ``publisher``). Default: not given.
    decision_ratio : float or None
        ``eps_query/eps_threshold`` inside the SVT; 1 (the default, even split) keeps the
        text's threshold noise ``Lap(2 Delta/eps1)``; None: the optimum ``(2(C-1))^(2/3)``
        for a standard SVT with ``c = C - 1`` answers (Lyu, Su & Li 2017 §4.2, eq. 12).
    reference : {"release", "snapshot"}
        What the distance is measured to: the last private release ``H~_j`` (the text's,
        sensitivity ``Delta``) or the true snapshot ``H_j`` at the last release time
        (sensitivity ``2 Delta``; see :func:`dsat`).

    Returns
    -------
    DynamicRelease
        ``method="dsft"``; ``thresholds`` is the constant public ``T``.

    Raises
    ------
    ValueError
        Ragged, non-2-D, empty, negative, fractional or non-finite ``histograms``; fewer than
        2 snapshots; ``cutoff`` outside [1, N]; ``threshold`` outside [0, 2]; bad ``epsilon``,
        ``k``, ``cardinality``, ``publisher``, ``decision_ratio``, ``reference`` -- all before
        any randomness.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level -- the decisions are standard SVT with at most
    ``C - 1`` ⊤ answers on queries of sensitivity ``Delta`` (``2 Delta`` to the snapshot)
    (``eps1``), the at most ``C`` releases of L1-sensitivity-1 histograms compose to ``eps2``
    (Li 2017 Thm 4.2.2, with the SVT query noise corrected to ``Lap(4 (C-1) Delta/eps1)``; see the
    module docstring). Neighbours: add/remove one user with all of their occurrences (Li 2017
    Def. 4.1.1).

    References
    ----------
    Li 2017 §4.2.1, Alg. 7; Lemma 4.2.1; Thms 4.2.1, 4.2.2, 4.3.4; Fig. 4.2-4.3.
    """
    series = _check_series(histograms, min_times=2)
    epsilon = check_epsilon(epsilon)
    cutoff = _check_cutoff(cutoff, series.shape[0])
    threshold = _check_threshold(threshold)
    k = _check_k(k)
    cardinality = _check_cardinality(cardinality, series)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    decision_ratio = _check_ratio(decision_ratio)
    reference = _check_reference(reference, "release")
    rng = check_rng(rng)
    return _distance_sampling(series, epsilon, cutoff, threshold, rng, k=k,
                              cardinality=cardinality, publisher=publisher,
                              decision_ratio=decision_ratio, controller="fixed",
                              reference=reference, choice=choice)


def dsat(
    histograms,
    epsilon: float,
    cutoff: int | None = None,
    rng: np.random.Generator | None = None,
    *,
    threshold: float = 0.5,
    burn_in: int | None = None,
    delta: float = 0.05,
    theta: float = 0.5,
    k: float | None = None,
    cardinality: int,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
    decision_ratio: float | None = None,
    variant: str = "paced",
    reference: str | None = None,
    gain: float | None = None,
) -> DynamicRelease:
    """Distance-based Sampling with Adaptive Threshold (DSAT, Li 2017 Alg. 8).

    DSFT whose threshold is steered, from public information only, so that the ``C`` releases
    land where the series moves. Two versions (``variant``):

    ``"text"`` -- Li 2017 Alg. 8 as printed. After a burn-in of ``M`` time points, at each ``t_i``
    the feedback error ``E_i = |C_i/i - C/N|`` (eq. 4.2.2, ``C_i`` releases so far) gives
    ``e_i = |E_i - delta|/delta`` (eq. 4.2.4) and ``u_i = theta * e_i`` (the P term of the PID
    controller, eq. 4.2.3 with ``theta_P = 1``); the threshold moves down by ``u_i`` (not
    below 0) when ``C_i/i <= C/N`` and up (not above 2) otherwise (eq. 4.2.5). Distance to the
    last private release, ``k`` of Thm 4.3.4.

    ``"paced"`` (default) -- our improvement, same privacy argument:

    - the threshold is a P controller on the release *count* in log space,
      ``T_i = min(2, T_s * exp(gain * (C_i - 0.5 - C (i-1)/N)))``: on schedule (the count
      half a release behind ``C t/N``, as fixed sampling is on average) it is ``T_s``; it
      doubles for every release DSAT is ahead and halves for every release it is behind
      (``gain = ln 2``). ``T_s = max(threshold, 2 F)`` with ``F = (2/sqrt(pi)) sqrt(U/n)``
      (:func:`sampling_noise_floor`) so that sampling noise alone does not trigger releases
      on schedule;
    - the distance is measured to the true snapshot at the last release time, ``d(H_i, H_j)``
      (sensitivity ``2 Delta`` instead of ``Delta``), not to the noisy release: the release's
      own Laplace noise then neither masks small changes nor, on sparse histograms, dominates
      the distance;
    - ``k`` from :func:`paced_k` (decision noise ``0.1 T_s``, ``k`` in [0.01, 0.5]) and the
      SVT split ``1:(2c)^(2/3)`` of Lyu, Su & Li 2017 §4.2 instead of 1:1.

    Parameters
    ----------
    histograms, epsilon, rng, k, cardinality, publisher, shape :
        As for :func:`dsft`. ``k`` default: :func:`paced_k` (``"paced"``) or Thm 4.3.4
        (``"text"``); 0 when ``C = 1``.
    cutoff : int, optional
        ``C``; default 0.01 N (Table 4.2), at least 1.
    threshold : float
        In [0, 2]. ``"text"``: the initial threshold ``T_1`` ("can be arbitrarily selected",
        §4.5.2). ``"paced"``: the on-schedule threshold before the floor ``2F``.
    burn_in : int, optional
        ``M``: time points 1..M repeat ``H~_1`` without decisions (Alg. 8 line 2); the text
        only says "a small integer"; default ``max(1, round(0.02 N))`` (10 for N = 500).
    delta, theta : float
        ``"text"`` only: set point of the feedback error and proportional gain (0.05 and 0.5,
        Table 4.2). With the printed ``e_i`` a step is about ``theta`` whenever the rate is
        close to its target, so the threshold swings across [0, 2] in a few steps and the
        releases fall on a near-fixed schedule.
    decision_ratio : float, optional
        ``eps_query/eps_threshold`` inside the SVT; default ``(2(C-1))^(2/3)`` (``"paced"``)
        or 1 (``"text"``).
    variant : {"paced", "text"}
        See above and :data:`DSAT_VARIANTS`.
    reference : {"snapshot", "release"}, optional
        Override the variant's distance reference (``"paced"``: snapshot, ``"text"``: release).
    gain : float, optional
        ``"paced"`` only: > 0, default ``ln 2``.

    Returns
    -------
    DynamicRelease
        ``method="dsat"``; ``thresholds`` is the public trajectory ``T_i`` (in [0, 2]);
        ``details["variant"]``, ``details["k_rule"]``.

    Raises
    ------
    ValueError
        As for :func:`dsft`; ``burn_in`` not in [1, N); ``delta``, ``theta`` or ``gain`` not
        > 0; unknown ``variant`` or ``reference``.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level (Li 2017 Thm 4.2.2): the decisions are standard SVT
    against ``T_i + rho`` with one secret ``rho``, where ``T_i`` is computed from the public
    release count and time only (post-processing; an erratum of the text, departure 2 in the module
    docstring), on queries of sensitivity ``Delta`` (to the release) or ``2 Delta`` (to the
    snapshot: both normalised snapshots move by at most ``Delta``); at most ``C`` releases of
    ``eps2/C``. ``T_s``, ``k`` and the split are functions of the public ``n``, ``U``, ``N``,
    ``C`` and ``eps``. Neighbours: add/remove one user with all of their occurrences (Li 2017
    Def. 4.1.1).

    Why ``"paced"`` is the default: on series with real change points (census-like series
    with drift, objects on a grid, abrupt, gradual, churned, Poisson and sparse histograms)
    its range-query error is below that of fixed sampling on average, where the text's
    version is about level with fixed sampling (its threshold sits at 0 or 2 and it releases
    on the fixed schedule) or, where Thm 4.3.4's ``k`` reaches its cap ``1 - C/N`` (few bins
    for the number of records), much worse. On the text's census setup (no change point)
    paced DSAT and fixed sampling are level. It is not uniformly better: a single trial can
    lose (adaptive releases spent on early changes leave later ones uncovered; most likely
    when ``C`` is 2-4), and on series that change a lot at most steps the stale releases of
    ``C = 0.01 N`` can be worse than the ``eps/N`` baseline at large ``eps`` (pass a larger
    ``cutoff``). The benchmarks ``benchmarks/dynamic_dsat_design.py`` and
    ``benchmarks/dynamic_epsilon.py`` measure it.

    References
    ----------
    Li 2017 §4.2.2, Alg. 8, eqs. 4.2.2-4.2.5, Fig. 4.1; Table 4.2; Fig. 4.3-4.7. Lyu, Su & Li 2017 §4.2 (SVT
    budget split).
    """
    series = _check_series(histograms, min_times=2)
    epsilon = check_epsilon(epsilon)
    cutoff = _check_cutoff(cutoff, series.shape[0])
    threshold = _check_threshold(threshold)
    burn_in = _check_burn_in(burn_in, series.shape[0])
    delta = _check_unit(delta, "delta")
    theta = _check_unit(theta, "theta")
    k = _check_k(k)
    cardinality = _check_cardinality(cardinality, series)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    decision_ratio = _check_ratio(decision_ratio)
    if variant not in DSAT_VARIANTS:
        raise ValueError(f"variant must be one of {sorted(DSAT_VARIANTS)}, got {variant!r}")
    reference = _check_reference(reference, "snapshot" if variant == "paced" else "release")
    gain = PACED_DEFAULTS["gain"] if gain is None else _check_unit(gain, "gain")
    rng = check_rng(rng)
    return _distance_sampling(series, epsilon, cutoff, threshold, rng, k=k,
                              cardinality=cardinality, publisher=publisher,
                              decision_ratio=decision_ratio, controller=variant,
                              reference=reference, burn_in=burn_in, delta=delta, theta=theta,
                              gain=gain, choice=choice)


DSFT = dsft
DSAT = dsat


# ---------------------------------------------------------------------------------------------
# DSAT under w-event privacy (Li 2017 §4.4, Alg. 9)
# ---------------------------------------------------------------------------------------------


def _window_sums(per_time: np.ndarray, w: int) -> np.ndarray:
    """Sum of ``per_time`` over every window of ``w`` consecutive points (one if N <= w)."""
    if per_time.size <= w:
        return np.array([math.fsum(per_time)])
    csum = np.concatenate([[0.0], np.cumsum(per_time)])
    return csum[w:] - csum[:-w]


def _check_w(w, n_times: int) -> int:
    return check_positive_int(w, "w", maximum=MAX_WINDOW)


def dsat_w_event(
    histograms,
    epsilon: float,
    w: int,
    cutoff: int | None = None,
    rng: np.random.Generator | None = None,
    *,
    threshold: float = 0.5,
    burn_in: int | None = None,
    delta: float = 0.05,
    theta: float = 0.5,
    k: float | None = None,
    cardinality: int,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    """DSAT under w-event privacy (Li 2017 §4.4, Alg. 9).

    Every window of ``w`` consecutive time points may hold at most ``C`` releases of
    ``eps2/C`` each (Alg. 9 lines 3-5: with no budget left in the window ending at ``t_i``,
    repeat the last release); otherwise DSAT's decision runs, its PID steering the window's
    release ratio ``count/min(i, w)`` towards ``C/w`` (Alg. 9 lines 7-11).

    Parameters
    ----------
    histograms, epsilon, rng, threshold, delta, theta, cardinality, publisher, shape :
        As for :func:`dsat`; ``epsilon`` is the budget of every window of ``w`` time points.
    w : int
        Window length (>= 1). The text uses w up to 800 on 1000 time points (Fig. 4.8-4.9).
    cutoff : int, optional
        ``C``, releases per window (1 <= C <= w); default ``max(1, round(0.01 w))``.
    burn_in : int, optional
        As for :func:`dsat`; default ``max(1, round(0.02 w))`` (must be < w).
    k : float, optional
        Decision share; default :func:`dsft_k` with ``N`` replaced by ``w``.

    Returns
    -------
    DynamicRelease
        ``method="dsat-w"``; ``window_epsilons`` holds what each window was charged.

    Raises
    ------
    ValueError
        As for :func:`dsat`; ``w`` not a positive integer; ``cutoff`` outside [1, w].

    Notes
    -----
    Privacy: ``epsilon``-DP under w-event neighbours (one user's records inside one window of
    ``w`` points; Li 2017 Def. 4.1.3). Releases: at most ``C`` per window, ``eps2/C`` each.
    Decisions: AboveThreshold (SVT with c = 1: threshold ``Lap(2 Delta/eps_a)``, query
    ``Lap(4 Delta/eps_a)``) restarted with a fresh threshold after every ⊤, ``eps_a =
    eps1/(C+1)``; the instances are disjoint in time and a window meets at most ``C + 1`` of
    them (the ≤ C ending inside it and the one running at its end), so it is charged at most
    ``eps1``. Alg. 9 as printed keeps one threshold offset for the whole stream and compares
    ``count/i`` with ``C/w`` (departure 3 in the module docstring).

    References
    ----------
    Li 2017 §4.4, Alg. 9; §4.5.3, Fig. 4.8-4.9. Kellaris et al. 2014 (w-event privacy).
    """
    series = _check_series(histograms, min_times=2)
    epsilon = check_epsilon(epsilon)
    w = _check_w(w, series.shape[0])
    cutoff = _check_cutoff(cutoff, w, what="w")
    threshold = _check_threshold(threshold)
    if burn_in is None:
        burn_in = max(1, int(round(0.02 * w)))
    burn_in = check_positive_int(burn_in, "burn_in")
    if burn_in >= max(w, 2):
        raise ValueError(f"burn_in (M) must be smaller than w = {w}, got {burn_in}")
    delta = _check_unit(delta, "delta")
    theta = _check_unit(theta, "theta")
    k = _check_k(k)
    cardinality = _check_cardinality(cardinality, series)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    rng = check_rng(rng)

    n_times, n_bins = series.shape
    sensitivity = 2.0 / (cardinality - 1)
    if k is None:
        k = dsft_k(cardinality, n_bins, cutoff, w)
    eps1 = k * epsilon
    eps2 = epsilon - eps1
    per_release = eps2 / cutoff
    eps_instance = eps1 / (cutoff + 1)
    release = _publisher_call(publisher)
    target = cutoff / w
    totals = series.sum(axis=1)

    rows: list[np.ndarray] = []  # the private histograms, in time order
    which = np.zeros(n_times, dtype=int)  # the row in force at each time point
    points = np.zeros(n_times, dtype=bool)
    spent = np.zeros(n_times)
    thresholds = np.full(n_times, threshold)
    instance_of = np.full(n_times, -1)  # which AboveThreshold instance asked at each point

    rows.append(last := release(series[0], per_release, rng))
    distance_to = _Distances(series, totals.astype(float))
    distance_to.reset(_normalise_release(last))
    points[0], spent[0] = True, per_release
    svt, n_instances = None, 0
    t_now = threshold
    for t in range(1, n_times):
        i = t + 1
        in_window = int(np.count_nonzero(points[max(0, t - w + 1) : t]))
        if in_window >= cutoff or i <= burn_in:
            # Alg. 9 lines 4-5 (no budget left in the window) / Alg. 8 line 2 (burn-in).
            which[t] = len(rows) - 1
            thresholds[t] = t_now
            continue
        ratio = in_window / min(i, w)
        e = abs(abs(ratio - target) - delta) / delta
        u = theta * e
        t_now = max(0.0, t_now - u) if ratio - target <= 0 else min(2.0, t_now + u)
        thresholds[t] = t_now
        if eps1 <= 0:  # C = w: no decision budget, release whenever the window allows
            above = True
        else:
            if svt is None:
                svt = _svt(threshold, eps_instance, 1, sensitivity, 1.0, rng)
                n_instances += 1
            instance_of[t] = n_instances - 1
            above = bool(svt.query(distance_to(t), threshold=t_now))
        if above:  # Alg. 9 line 12
            rows.append(last := release(series[t], per_release, rng))
            distance_to.reset(_normalise_release(last))
            points[t], spent[t] = True, per_release
            svt = None  # AboveThreshold restarts with a fresh threshold offset
        which[t] = len(rows) - 1  # Alg. 9 line 13: else repeat the last one

    window = min(w, n_times)
    starts = range(max(n_times - w + 1, 1))
    decision_charge = np.array(
        [eps_instance * np.unique(instance_of[s : s + window][instance_of[s : s + window] >= 0]).size
         for s in starts]
    )
    window_eps = _window_sums(spent, w) + decision_charge
    return DynamicRelease(
        releases=_expand(rows, which, n_bins), release_points=points, release_epsilons=spent,
        thresholds=thresholds, epsilon=epsilon,
        epsilon_parts=_parts(epsilon, decision=eps1, release=eps2), method="dsat-w", publisher=publisher,
        guarantee=f"{eps_text(epsilon)}-DP per window of w = {w} time points (w-event privacy)",
        neighbours=NEIGHBOURS["w-event"], cutoff=cutoff, w=w, window_epsilons=window_eps,
        details={"k": k, "epsilon1": eps1, "epsilon2": eps2, "sensitivity": sensitivity,
                 "cardinality": cardinality, "release_scale": 1.0 / per_release,
                 "instance_epsilon": eps_instance, "instances": n_instances,
                 "threshold_scale": 2.0 * sensitivity / eps_instance if eps1 > 0 else None,
                 "query_scale": 4.0 * sensitivity / eps_instance if eps1 > 0 else None,
                 "burn_in": burn_in, "delta": delta, "theta": theta,
                 "initial_threshold": threshold, **choice},
    )


# ---------------------------------------------------------------------------------------------
# User-level baselines (Li 2017 §4.1.4)
# ---------------------------------------------------------------------------------------------


def _scheduled_release(series, epsilon, points, publisher, rng, method, what,
                       choice: dict) -> DynamicRelease:
    n_times = series.shape[0]
    per_release = epsilon / int(points.sum())
    # The release points are public and fixed in advance: release them all at once, then
    # repeat each until the next (points[0] is always set).
    released = _release_rows(series, np.flatnonzero(points), per_release, publisher, rng)
    releases = (_frozen(released) if released.shape[0] == n_times
                else _Repeated(_frozen(released), _frozen(np.cumsum(points) - 1)))
    spent = np.where(points, per_release, 0.0)
    return DynamicRelease(
        releases=releases, release_points=_frozen(points),
        release_epsilons=_frozen(spent), thresholds=_frozen(np.full(n_times, np.nan)),
        epsilon=epsilon, epsilon_parts={"decision": 0.0, "release": epsilon}, method=method,
        publisher=publisher, guarantee=_user_guarantee(epsilon, what),
        neighbours=NEIGHBOURS["user-level"], cutoff=int(points.sum()),
        details={"release_scale": 1.0 / per_release, **choice},
    )


def uniform_budget_release(
    histograms,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    """The baseline: release every snapshot with ``epsilon/N`` (Li 2017 §4.1.4).

    Parameters
    ----------
    histograms : array_like, shape (N, U)
    epsilon : float
        Total budget of the series.
    rng : numpy.random.Generator, optional
    publisher : str
        :func:`.histograms.publish` method (default ``"identity"``) or ``"auto"``; see
        :func:`dsft`.
    shape : sequence of int, optional
        The public attribute domains of one snapshot (product U), e.g. ``(96, 12, 3)``; used
        only to choose the publisher (see ``publisher``). Default: not given.

    Returns
    -------
    DynamicRelease
        ``method="uniform"``.

    Raises
    ------
    ValueError
        Bad ``histograms`` (as for :func:`dsft`, N >= 1), ``epsilon`` or ``publisher``.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level by sequential composition of N releases of
    ``epsilon/N`` (Li 2017 Thm 4.1.1). Neighbours: add/remove one user with all occurrences.
    Its noise grows as O(N).

    References
    ----------
    Li 2017 §4.1.4 ("Baseline method").
    """
    series = _check_series(histograms)
    epsilon = check_epsilon(epsilon)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    rng = check_rng(rng)
    points = np.ones(series.shape[0], dtype=bool)
    return _scheduled_release(series, epsilon, points, publisher, rng, "uniform",
                              "N releases of eps/N, sequential composition", choice)


def fixed_sampling_release(
    histograms,
    epsilon: float,
    cutoff: int | None = None,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    """Fixed sampling: ``C`` evenly spaced releases of ``epsilon/C`` (Li 2017 §4.1.4).

    The release points are ``round(j N / C)`` for ``j = 0..C-1`` (time 1 always released;
    the interval is ``N/C``); between them the last release is repeated.

    Parameters
    ----------
    histograms : array_like, shape (N, U)
    epsilon : float
    cutoff : int, optional
        ``C`` in [1, N]; default 0.01 N (Table 4.2), at least 1.
    rng : numpy.random.Generator, optional
    publisher : str
        As for :func:`uniform_budget_release`.
    shape : sequence of int, optional
        The public attribute domains of one snapshot (product U), e.g. ``(96, 12, 3)``; used
        only to choose the publisher (see ``publisher``). Default: not given.

    Returns
    -------
    DynamicRelease
        ``method="fixed"``.

    Raises
    ------
    ValueError
        Bad ``histograms``, ``epsilon``, ``cutoff`` (C < 1 or C > N) or ``publisher``.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level; the schedule is public and the C releases compose
    (Li 2017 Thm 4.1.1). Neighbours: add/remove one user with all occurrences. (The text writes
    ``N/T`` releases; ``T`` there is the sampling interval, ``N/C``.)

    References
    ----------
    Li 2017 §4.1.4 ("Fixed-sampling method"); Fig. 4.4-4.7 ("fixed").
    """
    series = _check_series(histograms)
    epsilon = check_epsilon(epsilon)
    n_times = series.shape[0]
    cutoff = _check_cutoff(cutoff, n_times)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    rng = check_rng(rng)
    points = np.zeros(n_times, dtype=bool)
    points[np.unique(np.round(np.arange(cutoff) * n_times / cutoff).astype(int))] = True
    return _scheduled_release(series, epsilon, points, publisher, rng, "fixed",
                              f"C = {cutoff} scheduled releases of eps/C", choice)


# ---------------------------------------------------------------------------------------------
# w-event baselines: BD and BA (Kellaris et al. 2014; Li 2017 §4.1.4, §4.5.3)
# ---------------------------------------------------------------------------------------------


#: Chunk lengths of the dissimilarities BD/BA release ahead in floating-point-safe mode.
_AHEAD_MIN, _AHEAD_MAX = 8, 256


def _kellaris(series, epsilon, w, rng, publisher, choice, absorb: bool) -> DynamicRelease:
    n_times, n_bins = series.shape
    release = _publisher_call(publisher)
    eps_dis = epsilon / (2 * w)  # M_{i,1}: half the window budget, uniformly
    unit = epsilon / (2 * w)  # BA's uniform share of the publication half
    points = np.zeros(n_times, dtype=bool)
    pub = np.zeros(n_times)
    last = np.zeros(n_bins)  # r_0: nothing published yet
    rows: list[np.ndarray] = []  # the private histograms, in time order (-1: r_0)
    which = np.zeros(n_times, dtype=int)  # the row in force at each time point
    last_t, last_units = -1, 0
    safe = is_floating_point_safe()
    ahead, ahead_from, chunk = np.empty(0), 0, _AHEAD_MIN
    for t in range(n_times):
        # M_{i,1}: mean absolute deviation from the last release, sensitivity 1/U. A real
        # number: inside floating_point_safe() it is released on a grid (laplace_reals), and
        # the test against 1/eps_pub below is post-processing of that release.
        if safe:
            if t - ahead_from >= ahead.size:
                # Released ahead against the current last release, a chunk of doubling
                # length at a time (one laplace_reals call instead of one per time point;
                # each entry has the law of a scalar release); discarded unseen at the next
                # release, whose new reference makes them stale.
                stop = min(n_times, t + chunk)
                ahead = laplace_reals(np.abs(series[t:stop] - last).mean(axis=1), 1.0 / n_bins,
                                      eps_dis, rng=rng)
                ahead_from, chunk = t, min(2 * chunk, _AHEAD_MAX)
            dis = float(ahead[t - ahead_from])
        else:
            dis = (float(np.abs(series[t] - last).mean())
                   + float(laplace(1.0 / (n_bins * eps_dis), rng=rng)))
        if absorb:
            if last_t >= 0 and t - last_t <= last_units - 1:
                which[t] = len(rows) - 1  # nullified: its budget was absorbed by the last release
                continue
            absorbable = t + 1 if last_t < 0 else t - (last_t + last_units - 1)
            units = min(absorbable, w)
            eps_pub = units * unit
        else:
            remaining = epsilon / 2 - math.fsum(pub[max(0, t - w + 1) : t])
            eps_pub = remaining / 2
        if eps_pub > 0 and dis > 1.0 / eps_pub:
            rows.append(last := release(series[t], eps_pub, rng))
            points[t], pub[t] = True, eps_pub
            ahead, chunk = np.empty(0), _AHEAD_MIN  # stale: measured against the old release
            if absorb:
                last_t, last_units = t, units
        which[t] = len(rows) - 1
    per_time = pub + eps_dis
    name, title = ("ba", "budget absorption") if absorb else ("bd", "budget distribution")
    return DynamicRelease(
        releases=_expand(rows, which, n_bins), release_points=points, release_epsilons=pub,
        thresholds=np.full(n_times, np.nan), epsilon=epsilon,
        epsilon_parts=_parts(epsilon, decision=epsilon / 2, release=epsilon / 2),
        method=name, publisher=publisher,
        guarantee=f"{eps_text(epsilon)}-DP per window of w = {w} time points (w-event privacy, {title})",
        neighbours=NEIGHBOURS["w-event"], w=w, window_epsilons=_window_sums(per_time, w),
        details={"dissimilarity_epsilon": eps_dis, "dissimilarity_scale": 1.0 / (n_bins * eps_dis),
                 **choice},
    )


_KELLARIS_DOC = """

    Parameters
    ----------
    histograms : array_like, shape (N, U)
    epsilon : float
        Budget of every window of ``w`` time points.
    w : int
        Window length (>= 1).
    rng : numpy.random.Generator, optional
    publisher : str
        :func:`.histograms.publish` method (default ``"identity"``, as in Kellaris et al.) or
        ``"auto"``; see :func:`dsft`.
    shape : sequence of int, optional
        The public attribute domains of one snapshot (product U), e.g. ``(96, 12, 3)``; used
        only to choose the publisher (see ``publisher``). Default: not given.

    Returns
    -------
    DynamicRelease
        ``window_epsilons`` holds what each window was charged (at most ``epsilon``).

    Raises
    ------
    ValueError
        Bad ``histograms``, ``epsilon``, ``w`` or ``publisher``, before any randomness.

    Notes
    -----
    Privacy: ``epsilon``-DP under w-event neighbours (one user's records inside one window of
    ``w`` points; Kellaris et al. Thm 3 and 4): half the window budget pays the private
    dissimilarity ``mean|c_i - r_last| + Lap(1/(U eps/(2w)))`` at every point (sensitivity
    1/U), the other half the publications. The text ran BD/BA "with column partitioning and
    eps1 = eps/U" (§4.5.3), which it does not define further; this is the mechanism of the
    paper.

    References
    ----------
    Kellaris, Papadopoulos, Xiao, Papadias 2014, PVLDB 7(12), §4 (BD, BA);
    Li 2017 §4.1.4, §4.5.3, Fig. 4.8-4.9.
    """


def _check_kellaris(histograms, epsilon, w, rng, publisher, shape):
    """The validated ``(series, epsilon, w, rng, publisher)`` of BD and BA, before any draw."""
    series = _check_series(histograms)
    epsilon = check_epsilon(epsilon)
    w = _check_w(w, series.shape[0])
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    return series, epsilon, w, check_rng(rng), publisher, choice


def budget_distribution_release(
    histograms,
    epsilon: float,
    w: int,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    return _kellaris(*_check_kellaris(histograms, epsilon, w, rng, publisher, shape), absorb=False)


def budget_absorption_release(
    histograms,
    epsilon: float,
    w: int,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    return _kellaris(*_check_kellaris(histograms, epsilon, w, rng, publisher, shape), absorb=True)


budget_distribution_release.__doc__ = (
    """Budget Distribution (BD) under w-event privacy (Kellaris et al. 2014).

    At each time point the publication budget is half of what the window ending there has
    left, ``eps_i = (eps/2 - sum of the last w-1 publication budgets) / 2`` (exponentially
    decreasing); publish ``c_i + Lap(1/eps_i)`` when the private dissimilarity exceeds the
    expected noise ``1/eps_i``, else repeat the last release.""" + _KELLARIS_DOC
)
budget_absorption_release.__doc__ = (
    """Budget Absorption (BA) under w-event privacy (Kellaris et al. 2014).

    Every time point owns ``eps/(2w)`` of publication budget. A publication absorbs the shares
    of the points skipped since the end of the last nullified stretch (at most ``w`` of them)
    and then nullifies as many following points as it absorbed (minus its own); a point
    publishes when the private dissimilarity exceeds ``1/eps_i``.""" + _KELLARIS_DOC
)


# ---------------------------------------------------------------------------------------------
# Quality measures (Li 2017 §4.5.1)
# ---------------------------------------------------------------------------------------------


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


def random_range_queries(shape, n_queries: int, rng: np.random.Generator | None = None):
    """Random range-count queries over a ``shape``-d domain (Li 2017 §4.5.1).

    Each query picks, on every attribute, a random interval ``[lo, hi)`` (two uniform cells,
    sorted, both ends included): "Where A_1 in I_1 and ... and A_m in I_m".

    Returns
    -------
    (lo, hi) : two int arrays of shape (n_queries, len(shape)), half-open per dimension.
    """
    try:
        cells = math.prod(int(s) for s in np.atleast_1d(shape))
    except (TypeError, ValueError):
        raise ValueError(f"shape must be a tuple of positive integers, got {shape!r}") from None
    dims = _check_shape(shape, cells)
    n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
    rng = check_rng(rng)
    ends = rng.integers(0, np.array(dims), size=(2, n_queries, len(dims)))
    return np.minimum(ends[0], ends[1]), np.maximum(ends[0], ends[1]) + 1


def _query_matrix(dims: tuple[int, ...], lo: np.ndarray, hi: np.ndarray):
    """Sparse (Q x prod(dims+1)) matrix answering box queries from padded prefix sums."""
    from scipy import sparse

    n_queries, d = lo.shape
    padded = tuple(s + 1 for s in dims)
    corners = np.array(np.meshgrid(*[[0, 1]] * d, indexing="ij")).reshape(d, -1).T  # (2^d, d)
    # Corner c takes hi on the dimensions where c = 1, lo elsewhere; sign (-1)^(#lo).
    coords = np.where(corners[None, :, :] == 1, hi[:, None, :], lo[:, None, :])  # (Q, 2^d, d)
    flat = np.ravel_multi_index(tuple(np.moveaxis(coords, -1, 0)), padded)
    signs = np.where((d - corners.sum(axis=1)) % 2 == 0, 1.0, -1.0)
    rows = np.repeat(np.arange(n_queries), corners.shape[0])
    return sparse.csr_matrix((np.tile(signs, n_queries), (rows, flat.ravel())),
                             shape=(n_queries, math.prod(padded)))


def range_query_error(
    true,
    released,
    n_queries: int = 1000,
    rng: np.random.Generator | None = None,
    *,
    shape: Sequence[int] | None = None,
    queries: tuple[np.ndarray, np.ndarray] | None = None,
) -> float:
    """Mean absolute error of random range-count queries over the series (Li 2017 §4.5.1).

    ``E^a = (1/(M N)) sum_k sum_i |A~_i^k - A_i^k|`` over ``M`` random box queries and all N
    time points, answered on the true and the released histograms.

    Parameters
    ----------
    true, released : array_like, shape (N, U)
        The true snapshots and a release (e.g. ``DynamicRelease.releases``).
    n_queries : int
        ``M`` (the text: 5000 per run, 10 runs).
    rng : numpy.random.Generator, optional
        Draws the queries (use the same seed to compare methods on the same queries).
    shape : sequence of int, optional
        The attribute domains whose product is U (e.g. ``(96, 12, 3)``, a ``(32, 32)`` grid);
        default 1-D ``(U,)``.
    queries : (lo, hi), optional
        Fixed queries from :func:`random_range_queries` (then ``n_queries``/``rng`` unused).

    Returns
    -------
    float

    Notes
    -----
    Not private: it reads the true histograms (an evaluation measure, teaching mode only).
    Vectorised through prefix sums of ``released - true`` and a sparse corner matrix.
    """
    true = _check_float_series(true, "true")
    released = _check_float_series(released, "released")
    if true.shape != released.shape:
        raise ValueError(f"true and released must have the same shape, got {true.shape} and {released.shape}")
    dims = _check_shape(shape, true.shape[1])
    if queries is None:
        n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
        rng = check_rng(rng)
        lo, hi = random_range_queries(dims, n_queries, rng)
    else:
        if not isinstance(queries, tuple | list) or len(queries) != 2:
            raise ValueError(f"queries must be a pair (lo, hi) of (M, {len(dims)}) integer arrays")
        try:
            lo, hi = (np.asarray(q, dtype=int) for q in queries)
        except (TypeError, ValueError):
            raise ValueError(f"queries must be a pair (lo, hi) of (M, {len(dims)}) integer arrays") from None
        if lo.shape != hi.shape or lo.ndim != 2 or lo.shape[1] != len(dims):
            raise ValueError(f"queries must be two (M, {len(dims)}) arrays (lo, hi)")
        if np.any(lo < 0) or np.any(hi > np.array(dims)) or np.any(lo >= hi):
            raise ValueError("queries must satisfy 0 <= lo < hi <= shape on every dimension")
    diff = (released - true).reshape((true.shape[0], *dims))
    prefix = np.pad(diff, [(0, 0)] + [(1, 0)] * len(dims))
    for axis in range(1, len(dims) + 1):
        prefix = np.cumsum(prefix, axis=axis)
    matrix = _query_matrix(dims, lo, hi)
    errors = matrix @ prefix.reshape(true.shape[0], -1).T  # (M, N)
    return float(np.mean(np.abs(errors)))


def _check_float_series(values, name: str) -> np.ndarray:
    from .validation import check_finite_array

    return check_finite_array(values, name, ndim=2)


def update_ratio(release_points) -> np.ndarray:
    """``C_i / i``: releases up to and including time ``i``, over ``i`` (Li 2017 Def. 4.2.1)."""
    points = np.asarray(release_points)
    if points.ndim != 1 or points.size == 0 or points.dtype != bool:
        raise ValueError("release_points must be a non-empty 1-D boolean array")
    return np.cumsum(points) / np.arange(1, points.size + 1)


def empirical_update_rate(histograms) -> np.ndarray:
    """Per-step update rate of a series: ``||H_i - H_{i-1}||_1 / |D_{i-1}|`` (N - 1 values).

    When ``m`` tuples are replaced per step the text's update rate is ``r = 2m/|D|``
    (Li 2017 §4.5.1, ``m ~ N(r|D|/2, sigma^2)``); a replaced tuple that lands in the cell it left
    cancels, so this is a lower bound on ``r`` that is close to it when the bins are many.
    Not private (reads the true histograms).
    """
    series = _check_series(histograms, min_times=2)
    totals = series.sum(axis=1)
    if np.any(totals[:-1] == 0):
        raise ValueError("histograms: a snapshot before the last is empty; the rate is undefined")
    return np.abs(np.diff(series, axis=0)).sum(axis=1) / totals[:-1]
