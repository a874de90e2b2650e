"""Private release of counting streams in real time: PeGaSus, its smoothers, queries,
hierarchies and the baselines it is compared with (Chen 2018 Ch. 5).

A stream is a sequence of counts ``c_1, c_2, ...`` (one per time step, e.g. the number of
users seen at one WiFi access point in each five-minute interval). Every algorithm here is
*real time*: the estimate released at step t uses only ``c_1..c_t``.

Where things are
----------------
- :func:`pegasus` / :class:`PegasusStream` — Chen 2018 Alg. 15 (Perturb-Group-Smooth): the
  Perturber (Laplace), the Deviation-Based Grouper :func:`deviation_grouper` (Alg. 16) and the
  smoothers of §5.3.3 (:data:`SMOOTHERS`: median, average, James-Stein) plus
  :func:`adaptive_window_smoother`. The batch function runs the online object, so both give
  bit-identical output for the same ``rng``. The Grouper is sequential (each step's group
  depends on the previous partition): pushes and short feeds run it one step at a time
  (``_run_core``), longer feeds and the hierarchies vectorised around its chain of groups
  (``_vector_core``), with the same decisions and outputs bit for bit. Two sets of defaults, :data:`DEFAULTS`:
  ``defaults="new"`` (this package's) and ``defaults="text"`` (Chen 2018 §5.6.1).
- Queries by post-processing (no extra budget, §5.4): :func:`window_sum_smoother` (WSS,
  Alg. 17), :func:`sliding_window_sums`, :func:`jump_drop_events`, :func:`low_signal_events`,
  :func:`event_roc`.
- Hierarchies (§5.5): :class:`Hierarchy`, :func:`hs_pegasus` (HS-PGS), :func:`phs_pegasus`
  (PHS-PGS, Alg. 18), :func:`prune_released` (pruning from the estimates released at t − 1,
  free), :func:`hs_laplace` (HS-LM).
- Baselines (§5.6): :func:`laplace_stream` (LM), :func:`backward_smoothing` (BS_k),
  :func:`binary_tree_window_sums` (SW_w, the binary-tree sliding-window counter).
- Quality: :func:`scaled_total_l1`, :func:`average_l1`.

Privacy
-------
Neighbours are *event-level* (Chen 2018 §5.2.3, Def. 7): two stream prefixes differ by adding or
removing one tuple (user, state, time), so one count ``c_t`` of one state changes by 1 (and,
in a hierarchy, every aggregate above that state). Every release here is ``epsilon``-DP under
that relation; ``epsilon_parts`` says what each step spent and sums to ``epsilon``. All Laplace
noise comes from :func:`.mechanisms.laplace`.

Errata and readings (Chen 2018 Ch. 5)
-------------------------------
- Eq. 5.7 (James-Stein) ends in ``+ c̃_t``; the text says the estimate "shrinks to the mean",
  which is ``avg + (1 - (|G|-1)τ²/Σ(c̃_i - avg)²)(c̃_t - avg)``; that is implemented, with
  ``τ² = 2/ε_p²`` (the Laplace noise variance) and no positive-part truncation (as written).
- Thm 17's proof says "line (4)" and "line (7)"; the noise is drawn on Alg. 16 lines 8 and 11.
- BS_k (§5.6.1: "for any t >= k, ĉ_k is updated as Σ_{i=t-k}^t ĉ_i^LM/(k+1)") is read as
  the trailing mean of the last k+1 Laplace outputs, ĉ_t = mean(ĉ^LM_{t-k..t}).
- Alg. 18's PRUNE compares ``c_t(agg) + Lap(2/ε_pr)`` with ``β + Lap(2/ε_pr)`` at every node
  and Thm 20 calls this the Sparse Vector Technique. The tree's comparisons are not one SVT
  run: fresh threshold noise per node does not give the SVT bound along a root-to-leaf path
  (up to h comparisons there), and one threshold noise shared by the whole tree is not private
  for the pruned nodes off the changed path. :func:`phs_pegasus` therefore prunes with
  ``c_t(agg) + Lap(h/ε_pr) < β``: the Laplace mechanism, ``ε_pr/h`` per level, parallel within
  a level (disjoint states) and sequential over the h levels — ``ε_pr``-DP with no SVT claim.
  The other way out costs nothing: prune from the estimates already released at t − 1
  (:func:`prune_released`, ``hs_pegasus(..., beta=)``), post-processing that saves no budget.
- The defaults of §5.6.1 (θ = 5/ε_g with Lap(4/ε_g) on θ and Lap(8/ε_g) on each deviation
  test) make every scale of the Grouper a multiple of 1/ε_g: on a flat stretch (dev = 0) the
  partition does not depend on ε, and open groups are short (a few steps). The median
  smoother then gains only a fixed factor over LM there, about what BS_1 gains, so BS_k with
  k >= 2 beats PeGaSus on flat or sparse streams, and HS-PGS stays close to HS-LM. The text's
  Fig. 5.3 and 5.8 report far larger gains; Alg. 16 as printed does not reproduce them (the
  benchmarks ``benchmarks/streams_unit_counts.py`` and ``benchmarks/streams_hierarchy.py``
  measure both). θ is public, so a larger θ costs no privacy
  and gives longer groups. The defaults here are therefore new (``defaults="new"``): θ =
  160/ε_g, ε_g = 0.05ε, the threshold/test split of Lyu, Su & Li 2017 and an adaptive
  trailing-window smoother; ``defaults="text"`` restores §5.6.1 exactly.

References
----------
- Y. Chen, *Applying Differential Privacy with Sparse Vector Technique*, PhD thesis, Duke
  University, 2018, Ch. 5 ("Chen 2018").
- M. Lyu, D. Su, N. Li, *Understanding the Sparse Vector Technique for Differential Privacy*,
  PVLDB 10(6), 2017 ("Lyu, Su & Li 2017").
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from numbers import Real
from types import MappingProxyType

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._progress import report
from ._results import eps_text
from ._results import frozen as _readonly
from ._validation import (
    check_counts,
    check_epsilon,
    check_finite_array,
    check_positive_int,
    check_rng,
    split_budget,
)
from .mechanisms import ComparisonGrid, is_floating_point_safe, laplace

__all__ = [
    "NEIGHBOURS",
    "SMOOTHERS",
    "DEFAULTS",
    "ADAPTIVE_SMOOTHER",
    "LYU_THRESHOLD_SHARE",
    "PegasusResult",
    "PegasusStream",
    "pegasus",
    "deviation_grouper",
    "deviation",
    "window_sum_smoother",
    "sliding_window_sums",
    "jump_drop_statistic",
    "jump_drop_events",
    "low_signal_events",
    "EventRoc",
    "event_roc",
    "Hierarchy",
    "HierarchyResult",
    "hs_pegasus",
    "phs_pegasus",
    "prune_released",
    "hs_laplace",
    "StreamRelease",
    "WindowSums",
    "laplace_stream",
    "backward_smoothing",
    "binary_tree_window_sums",
    "scaled_total_l1",
    "average_l1",
    "MAX_WINDOW",
]

#: The largest window ``w`` (and backward-smoothing ``k``) accepted: ten million steps.
MAX_WINDOW = 10**7

#: The neighbour relation of every function in this module.
NEIGHBOURS = "event-level: add/remove one tuple (user, state, time), i.e. one c_t changes by 1"

#: The smoothers (post-processing of the Perturber and Grouper outputs): the three of Chen 2018
#: §5.3.3 and this package's adaptive trailing window (:func:`adaptive_window_smoother`).
SMOOTHERS: Mapping[str, str] = MappingProxyType(
    {
        "median": "MedianSmoother, eq. 5.6: median of the noisy counts of the current group",
        "average": "AverageSmoother, eq. 5.5: mean of the noisy counts of the current group",
        "james_stein": "JSSmoother, eq. 5.7: James-Stein shrinkage of c̃_t to the group mean",
        "adaptive": "median of a trailing window inside the group, the window chosen from past "
        "prediction errors, shrunk towards c̃_t where the errors exceed the noise",
    }
)

#: Lyu, Su & Li 2017 (budget allocation for Alg. 7): for SVT that stops at the first
#: positive answer (c = 1) the threshold : query budget ratio 1 : (2c)^(2/3) minimises the
#: error; this is ε_threshold/ε_g:
LYU_THRESHOLD_SHARE = 1.0 / (1.0 + 2.0 ** (2.0 / 3.0))

#: The two sets of defaults. ``"text"``: Chen 2018 §5.6.1 (ε_p = 0.8ε, ε_g = 0.2ε,
#: θ = 5/ε_g, the Grouper's budget halved between threshold and tests, MedianSmoother).
#: ``"new"`` (the default): a Grouper share of 0.05ε, θ = 160/ε_g, the threshold/test split
#: of Lyu, Su & Li 2017 and the adaptive smoother — all public choices, so the privacy
#: argument is the text's (benchmarks/streams_unit_counts.py measures both).
DEFAULTS: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {
        "new": MappingProxyType(
            {"perturber_share": 0.95, "theta_times_eps_g": 160.0,
             "threshold_share": LYU_THRESHOLD_SHARE, "smoother": "adaptive"}
        ),
        "text": MappingProxyType(
            {"perturber_share": 0.8, "theta_times_eps_g": 5.0, "threshold_share": 0.5,
             "smoother": "median"}
        ),
    }
)

#: The adaptive smoother's public settings (:func:`adaptive_window_smoother`): the trailing
#: windows it chooses from (and the whole group so far), the half-life in steps of the
#: prediction-error average that chooses (288 = one day of five-minute steps), the tolerance
#: within which the longest window wins, the half-life of the squared-error average that
#: decides the shrinkage, and how many standard errors above the noise variance it must be.
ADAPTIVE_SMOOTHER: Mapping[str, object] = MappingProxyType(
    {"windows": tuple(2**j for j in range(12)), "horizon": 288.0, "tolerance": 0.005,
     "shrink_horizon": 24.0, "z": 4.0}
)

# Alg. 16 / Thm 17: Delta(dev) = 2 (Lemma 16). The Grouper is SVT (Lyu, Su & Li 2017, Alg. 7
# with c = 1) with eps_1 = share * eps_g on the threshold, Lap(Delta/eps_1), and
# eps_2 = (1 - share) * eps_g on the tests, Lap(2 Delta/eps_2). share = 1/2 gives the text's
# Lap(4/eps_g) (line 8) and Lap(8/eps_g) (line 11).
_SENSITIVITY = 2.0
# Below this size the open group's deviation is summed directly (faster than the tree).
_TREE_MIN_GROUP = 32
# Noise rows drawn at a time by the online form.
_CHUNK = 4096
# Feeds of at least this many steps take the vectorised core (:func:`_vector_core`); shorter
# ones (a push, a sparse hierarchy node) the scalar loop. Both give the same bits.
_VECTOR_MIN = 64
# The vectorised Grouper decides up to this many first offsets of a group opened at every
# step at once, and stops early when fewer than this share of the open candidates fail.
_SHORT_OFFSETS = _TREE_MIN_GROUP - 1
_SHORT_FAIL_SHARE = 0.02
# ... on whole arrays while more than this share of the starts is still open, then on the
# indices of the open ones.
_SLICE_SHARE = 0.4
# An open group of _TREE_MIN_GROUP members or more is tested in chunks of steps, the first
# twice as long as the last long group took (within these bounds: a chunk costs some fifty
# array operations however short), doubling while it grows; a chunk compares at most
# _CROSS_CELLS pairs of (crossed value, step) directly.
_LONG_CHUNK = 256
_MAX_CHUNK = 8192
_CROSS_CELLS = 1 << 13
# While groups are short, the first tests of a long group run one by one, up to this many,
# unless floor(mean) jumps by more than _POINTER_STEP (the pointer would walk too far).
_SCALAR_STEPS = 128
_POINTER_STEP = 64
# The adaptive smoother sorts every window of up to this many steps; longer ones use
# Bottleneck's moving median (two heaps).
_SORTED_WINDOWS = 4
# ... and filters only the steps that use a window when they are fewer than this share.
_SPARSE_WINDOWS = 0.7
# Running group sums (means and Welford's sums of squares): the first steps of all groups at once,
# up to this offset.
_GROUP_SUM_STEPS = 64


# ---------------------------------------------------------------------------------------------
# Validation and budget helpers
# ---------------------------------------------------------------------------------------------


def _check_stream(counts, name: str = "counts") -> np.ndarray:
    """A non-empty 1-D stream of non-negative whole counts, as int64."""
    return check_counts(counts, name).astype(np.int64)


def _check_smoother(smoother: str) -> str:
    if not isinstance(smoother, str) or smoother not in SMOOTHERS:
        raise ValueError(f"smoother must be one of {sorted(SMOOTHERS)}, got {smoother!r}")
    return smoother


def _check_window(w, n: int | None = None) -> int:
    w = check_positive_int(w, "w", maximum=MAX_WINDOW)
    if n is not None and w > n:
        raise ValueError(f"w must be <= the stream length {n}, got {w}")
    return w


_budget_parts = split_budget  # the last part is the exact remainder (see split_budget)


def _check_defaults(defaults) -> str:
    if not isinstance(defaults, str) or defaults not in DEFAULTS:
        raise ValueError(f"defaults must be one of {sorted(DEFAULTS)}, got {defaults!r}")
    return defaults


def _check_share(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a number in the open interval (0, 1), got {value!r}")
    return float(value)


def _grouper_scales(epsilon_g: float, threshold_share: float) -> tuple[float, float]:
    """Laplace scales of the threshold (Alg. 16 line 8) and of each test (line 11)."""
    return (_SENSITIVITY / (threshold_share * epsilon_g),
            2.0 * _SENSITIVITY / ((1.0 - threshold_share) * epsilon_g))


#: Counts below this keep every exact deviation of a short group (at most 32 members, times at
#: most 64) inside int64; a larger count switches those sums to Python integers.
_EXACT_INT64 = 2**50

#: The Grouper compares ``min(dev, DEV_MAX)``: a public cap (monotone and 1-Lipschitz, so
#: Thm 17's argument is unchanged) that bounds the rounding error of a deviation computed in
#: floating point by 2**-23, a quarter of the comparison grid's step (``_deviations``). It
#: changes a decision only for thresholds above 2**30, i.e. epsilon_g below about 1e-7.
DEV_MAX = 2.0**30


def _deviations(dev_n: np.ndarray, n1) -> np.ndarray:
    """``min(dev_n / n1, DEV_MAX)`` for exact integers ``dev_n = n1 dev`` (int64 or Python
    integers), each quotient correctly rounded as Python's ``int / int`` (what the scalar loop
    computes): numpy's quotient is that once ``dev_n < 2**53`` (both exact as doubles)."""
    if dev_n.dtype != object and (dev_n.size == 0 or int(dev_n.max()) < 2**53):
        return np.minimum(dev_n / n1, DEV_MAX)
    n1 = np.broadcast_to(n1, dev_n.shape)
    return np.array([min(int(d) / int(k), DEV_MAX) for d, k in zip(dev_n, n1, strict=True)],
                    dtype=float)


def _grouper_grid(epsilon_g: float, threshold_share: float):
    """Inside :func:`~.mechanisms.floating_point_safe`: the :class:`~.mechanisms.ComparisonGrid`
    of the Grouper's tests (sensitivity 2 of a deviation, Thm 17); outside, ``None``."""
    if not is_floating_point_safe():
        return None
    return ComparisonGrid.for_sensitivities(
        _SENSITIVITY, largest_scale=max(_grouper_scales(epsilon_g, threshold_share)))


def _grid_theta(theta: float, grid) -> float:
    """θ on the comparison grid (a public rounding) inside the context, else θ itself."""
    return theta if grid is None else float(grid.values(grid.steps(theta)))


def _noise_rows(scales: np.ndarray, shape: tuple[int, int], rng: np.random.Generator,
                grid) -> np.ndarray:
    """Noise of ``shape`` whose last two columns are the Grouper's (threshold, deviation) and a
    first one, if any, the Perturber's; ``scales`` broadcasts to ``shape``. Outside the
    context: ``laplace(scales, shape)``. Inside: the Perturber's column is
    :func:`~.mechanisms.laplace`'s grid noise (the noisy counts are released) and the
    Grouper's two are discrete Laplace on the one ``grid`` of its comparisons (scales widened
    by ``grid.widen``), so that ``thr - zdev`` is an exact double."""
    if grid is None:
        return laplace(scales, shape, rng=rng)
    scales = np.broadcast_to(np.asarray(scales, dtype=float), shape)
    k, columns = shape
    rows = np.empty(shape)
    if columns == 3:
        rows[:, 0] = laplace(np.ascontiguousarray(scales[:, 0]), k, rng=rng)
    rows[:, -2] = grid.values(grid.noise(float(scales[0, -2]), k, rng=rng))
    rows[:, -1] = grid.values(grid.noise(float(scales[0, -1]), k, rng=rng))
    return rows


def _split_pegasus_budget(
    epsilon, epsilon_p, epsilon_g, theta, defaults: str = "new"
) -> tuple[float, float, float, float]:
    """Resolve (eps, eps_p, eps_g, theta); eps_p + eps_g must equal eps (Chen 2018 Alg. 15)."""
    epsilon = check_epsilon(epsilon)
    d = DEFAULTS[_check_defaults(defaults)]
    if epsilon_p is None and epsilon_g is None:
        epsilon_p = d["perturber_share"] * epsilon
        epsilon_g = epsilon - epsilon_p
    elif epsilon_g is None:
        epsilon_p = check_epsilon(epsilon_p, "epsilon_p")
        epsilon_g = epsilon - epsilon_p
        if not epsilon_g > 0:
            raise ValueError(f"epsilon_p must be < epsilon = {epsilon}, got {epsilon_p}")
    elif epsilon_p is None:
        epsilon_g = check_epsilon(epsilon_g, "epsilon_g")
        epsilon_p = epsilon - epsilon_g
        if not epsilon_p > 0:
            raise ValueError(f"epsilon_g must be < epsilon = {epsilon}, got {epsilon_g}")
    else:
        epsilon_p = check_epsilon(epsilon_p, "epsilon_p")
        epsilon_g = check_epsilon(epsilon_g, "epsilon_g")
        if not math.isclose(epsilon_p + epsilon_g, epsilon, rel_tol=1e-9, abs_tol=0.0):
            raise ValueError(
                f"epsilon_p + epsilon_g must equal epsilon (Chen 2018 Alg. 15): "
                f"{epsilon_p} + {epsilon_g} = {epsilon_p + epsilon_g} != {epsilon}; "
                f"pass only one of them to have the other computed"
            )
    if theta is None:
        theta = d["theta_times_eps_g"] / epsilon_g
    elif isinstance(theta, bool) or not isinstance(theta, Real) or not math.isfinite(theta) or theta < 0:
        raise ValueError(f"theta must be a finite number >= 0 (a deviation threshold), got {theta!r}")
    return epsilon, float(epsilon_p), float(epsilon_g), float(theta)


def _resolve_options(defaults, smoother, threshold_share) -> tuple[str, str, float]:
    """(defaults, smoother, threshold_share) with the defaults' values filled in, validated."""
    defaults = _check_defaults(defaults)
    d = DEFAULTS[defaults]
    smoother = _check_smoother(d["smoother"] if smoother is None else smoother)
    share = d["threshold_share"] if threshold_share is None else threshold_share
    return defaults, smoother, _check_share(share, "threshold_share")


def deviation(values) -> float:
    """``dev(C[G]) = Σ_i |c_i − mean(C[G])|`` (Chen 2018 eq. 5.4); its sensitivity is 2 (Lemma 16)."""
    values = check_finite_array(values, "values")
    return float(np.abs(values - values.mean()).sum())


# ---------------------------------------------------------------------------------------------
# PeGaSus: the sequential core (Chen 2018 Alg. 15-16, §5.3.3)
# ---------------------------------------------------------------------------------------------


class _GroupState:
    """Where one stream's Grouper and smoothers stopped, so a stream can be fed in pieces.

    Always current: ``t`` (steps seen), whether the last group is open, its noisy threshold,
    the last group's id and first step, ``values`` (the true counts of the open group, in
    order), ``noisy`` (the noisy counts of the last group, open or a closed singleton) and
    the running ``sum``, ``mean = sum / len(noisy)`` and Welford's ``m2`` of ``noisy`` (stale
    after a median-only run).

    Caches of the scalar loop (:func:`_run_core`), valid while ``caches`` is True: ``n`` and
    ``total`` of ``values``; once the group has ``_TREE_MIN_GROUP`` members a histogram of
    ``values`` with a pointer p and the number and sum of the values <= p, so
    ``dev = m·k − s + (S − s) − m·(n − k)`` (k values <= the mean m, summing to s) costs the
    pointer's move to floor(m); and two heaps for the running median. A vectorised run leaves
    them stale; :func:`_sync_scalar` rebuilds them from ``values`` and ``noisy`` (the outputs
    depend on the multisets only, not on how the heaps or the pointer got there).
    """

    __slots__ = (
        "t", "open", "noisy_threshold", "gid", "start", "values", "noisy", "sum", "mean", "m2",
        "caches", "n", "total", "cap", "hist", "ptr", "below_n", "below_s", "lo", "hi",
    )

    def __init__(self) -> None:
        self.t = 0
        self.open = False  # Alg. 16 line 2: at t = 1 the last group is "closed, empty"
        self.noisy_threshold = math.nan
        self.gid = -1
        self.start = 0
        self.values: list[int] = []
        self.noisy: list[float] = []
        self.sum = 0.0
        self.mean = 0.0
        self.m2 = 0.0
        self.caches = True
        self.n = 0
        self.total = 0
        self.cap = 0
        self.hist: list[int] | None = None
        self.ptr = -1
        self.below_n = 0
        self.below_s = 0
        self.lo: list[float] = []
        self.hi: list[float] = []


def _histogram(values: list[int], at_least: int) -> tuple[int, list[int]]:
    """Counts of the integer ``values`` by value, capacity (a power of 2) > ``at_least``."""
    cap = 64
    while cap <= at_least:
        cap *= 2
    hist = [0] * cap
    for v in values:
        hist[v] += 1
    return cap, hist


def _sync_scalar(st: _GroupState) -> None:
    """Rebuild the scalar loop's caches from ``values`` and ``noisy`` after a vectorised run."""
    if st.caches:
        return
    values = st.values
    st.n, st.total = len(values), sum(values)
    st.cap, st.hist = _histogram(values, max(values)) if len(values) >= _TREE_MIN_GROUP else (0, None)
    st.ptr, st.below_n, st.below_s = -1, 0, 0
    ordered = sorted(st.noisy)
    half = (len(ordered) + 1) // 2  # lo holds the smaller half (one more when odd)
    st.lo = [-x for x in reversed(ordered[:half])]  # ascending: already a heap
    st.hi = ordered[half:]
    st.caches = True


def _run_core(
    st: _GroupState,
    counts: list[int],
    zp: list[float],
    zth: list[float],
    zdev: list[float],
    theta: float,
    tau2: float,
    out_noisy: list[float],
    out_median: list[float],
    out_average: list[float],
    out_js: list[float],
    out_gid: list[int],
    out_start: list[int],
    median_only: bool = False,
) -> None:
    """The scalar form of Perturber, Grouper and smoothers, one step at a time: the reference
    that :func:`_vector_core` reproduces bit for bit, and the online form's :meth:`push`.

    ``zp`` is the Perturber noise (already scaled, Lap(1/ε_p)); ``zth`` the threshold noise
    Lap(4/ε_g), used only at steps that open a group; ``zdev`` the deviation noise Lap(8/ε_g),
    used only at steps that test an open group. The state lives in local variables during the
    loop and is written back to ``st`` at the end. ``median_only`` (for the hierarchies,
    which keep one smoother) fills only ``out_noisy``, ``out_median`` and ``out_start`` (what
    the median and adaptive smoothers need) and skips the average and James-Stein state (left
    stale in ``st``: do not mix modes).
    """
    _sync_scalar(st)
    heappush, heappop = heapq.heappush, heapq.heappop
    tree_min = _TREE_MIN_GROUP
    t, is_open, thr, gid, start = st.t, st.open, st.noisy_threshold, st.gid, st.start
    values, gnoisy, n, total, cap, hist = st.values, st.noisy, st.n, st.total, st.cap, st.hist
    ptr, below_n, below_s = st.ptr, st.below_n, st.below_s
    lo, hi, gsum, mean, m2 = st.lo, st.hi, st.sum, st.mean, st.m2
    put_noisy, put_median, put_average = out_noisy.append, out_median.append, out_average.append
    put_js, put_gid, put_start = out_js.append, out_gid.append, out_start.append
    for c, e_p, e_th, e_dev in zip(counts, zp, zth, zdev, strict=True):
        x = c + e_p  # Alg. 15 line 2: Perturber
        extend = False
        if is_open:
            # Alg. 16 line 11: dev(C_t[G ∪ {t}]) + Lap(8/eps_g) < theta~ ?
            n1 = n + 1
            s1 = total + c
            floor_m = s1 // n1  # the values <= m = s1/n1 are those <= floor(m)
            if hist is None:
                dev_n = abs(n1 * c - s1)  # n1 dev, an exact integer
                for v in values:
                    dev_n += abs(n1 * v - s1)
            else:
                q = min(floor_m, cap - 1)
                while ptr < q:
                    ptr += 1
                    below_n += hist[ptr]
                    below_s += hist[ptr] * ptr
                while ptr > q:
                    below_n -= hist[ptr]
                    below_s -= hist[ptr] * ptr
                    ptr -= 1
                below = below_n
                s = below_s
                if c <= floor_m:
                    below += 1
                    s += c
                dev_n = 2 * (s1 * below - n1 * s)  # n1 dev = sum |n1 c_i - s1|, exact
            extend = min(dev_n / n1, DEV_MAX) < thr - e_dev
        if extend:
            # Alg. 16 line 12: G <- G ∪ {t}, still open.
            values.append(c)
            gnoisy.append(x)
            n += 1
            total += c
            if hist is None:
                if n >= tree_min:
                    cap, hist = _histogram(values, max(values))
                    ptr, below_n, below_s = -1, 0, 0
            else:
                if c >= cap:
                    grown = cap
                    while grown <= c:
                        grown *= 2
                    hist.extend([0] * (grown - cap))
                    cap = grown
                hist[c] += 1
                if c <= ptr:
                    below_n += 1
                    below_s += c
            if x <= -lo[0]:
                heappush(lo, -x)
                if len(lo) > len(hi) + 1:
                    heappush(hi, -heappop(lo))
            else:
                heappush(hi, x)
                if len(hi) > len(lo):
                    heappush(lo, -heappop(hi))
            med = -lo[0] if len(lo) > len(hi) else (hi[0] - lo[0]) / 2.0
            if not median_only:
                # The group's mean is its running sum over its size (vectorised exactly by
                # _group_means); m2 is Welford's sum of squared deviations.
                delta = x - mean
                gsum += x
                mean = gsum / n
                m2 += delta * (x - mean)
                # eq. 5.7 (read as shrinkage towards the mean; see the module docstring)
                js = mean + (1.0 - (n - 1) * tau2 / m2) * (x - mean) if m2 > 0.0 else x
        else:
            # A new group {t}: open with a fresh noisy threshold (Alg. 16 lines 6-8) when the
            # last group was closed; otherwise (line 14) G is closed and so is {t}.
            gid += 1
            start = t
            if is_open:
                is_open = False
            else:
                is_open = True
                thr = theta + e_th
                values = [c]
                n = 1
                total = c
                hist = None
            gnoisy = [x]
            lo = [-x]
            hi = []
            gsum = mean = x
            m2 = 0.0
            med = js = x
        if median_only:
            put_noisy(x)
            put_median(med)
            put_start(start)
        else:
            put_noisy(x)
            put_median(med)
            put_average(mean)
            put_js(js)
            put_gid(gid)
            put_start(start)
        t += 1
    st.t, st.open, st.noisy_threshold, st.gid, st.start = t, is_open, thr, gid, start
    st.values, st.noisy, st.n, st.total, st.cap, st.hist = values, gnoisy, n, total, cap, hist
    st.ptr, st.below_n, st.below_s = ptr, below_n, below_s
    st.lo, st.hi, st.sum, st.mean, st.m2 = lo, hi, gsum, mean, m2


# The vectorised Grouper. It must take every decision of the scalar loop above, bit for bit:
# the same float operations in the same order, only batched.


def _first_failures(
    counts: np.ndarray, csum: np.ndarray, thresholds: np.ndarray, zdev: np.ndarray
) -> tuple[np.ndarray, int]:
    """For a group opened at *every* step s at once: the first offset j (1, 2, ...) at which
    its deviation test fails (Alg. 16 line 11), 0 if none failed within ``depth`` offsets.

    With the text's defaults most groups end within a few steps, so deciding the first
    offsets of every possible start in a few array operations is cheaper than testing the
    actual starts one by one; where the tests nearly all pass (long groups) this stops early
    (:data:`_SHORT_FAIL_SHARE`) and :func:`_grow_group` takes over. The deviation of a group
    of j + 1 < ``_TREE_MIN_GROUP`` counts is summed as the scalar loop sums it: |c_t − m|
    first, then the members in order.
    """
    n = counts.size
    if n and int(counts.max()) >= _EXACT_INT64:  # (j + 1) dev in Python integers
        counts, csum = counts.astype(object), csum.astype(object)
    fail = np.zeros(n, dtype=np.int64)
    open_ = np.ones(n, dtype=bool)  # the starts with no failed test yet
    alive = None  # their indices, once few enough to gather rather than slice
    depth = 0
    for j in range(1, min(_SHORT_OFFSETS, n - 1) + 1):
        width = n - j  # starts s with s + j a step of this feed
        if alive is None:  # most starts still open: whole-array slices, no gathers
            total = csum[j + 1 :] - csum[:width]
            dev_n = np.abs((j + 1) * counts[j:] - total)  # (j + 1) dev, exact integers
            term = np.empty_like(dev_n)
            for k in range(j):
                np.subtract((j + 1) * counts[k : k + width], total, out=term)
                dev_n += np.abs(term, out=term)
            dev = _deviations(dev_n, j + 1)
            failed = open_[:width] & ~(dev < thresholds[:width] - zdev[j:])
            failed = np.flatnonzero(failed)
            open_[failed] = False
            remaining = np.count_nonzero(open_[:width])
            if remaining < _SLICE_SHARE * width:
                alive = np.flatnonzero(open_[:width])
        else:
            alive = alive[: np.searchsorted(alive, width)]
            if alive.size == 0:
                break
            total = csum[alive + j + 1] - csum[alive]
            dev_n = np.abs((j + 1) * counts[j:][alive] - total)
            term = np.empty_like(dev_n)
            for k in range(j):
                np.subtract((j + 1) * counts[k:][alive], total, out=term)
                dev_n += np.abs(term, out=term)
            ok = _deviations(dev_n, j + 1) < thresholds[alive] - zdev[j:][alive]
            failed = alive[~ok]
            alive = alive[ok]
            remaining = alive.size
        fail[failed] = j
        depth = j
        if j >= 2 and failed.size < _SHORT_FAIL_SHARE * (remaining + failed.size):
            break
    return fail, depth


def _direct_tests(counts: np.ndarray, zdev: np.ndarray, pos: int, values: list[int],
                  thr: float) -> tuple[int, int]:
    """The tests of an open group of fewer than ``_TREE_MIN_GROUP`` members, all at once:
    each sums |c_t − m| and then |c_i − m| over the members in order (the scalar loop's
    order; the padding adds exact zeros). Returns (the step that fails or -1, steps tested)."""
    n0 = len(values)
    span = min(_TREE_MIN_GROUP - n0, counts.size - pos)
    new = counts[pos : pos + span]
    members = np.concatenate((np.asarray(values, dtype=np.int64), new[:-1]))
    sizes = np.arange(n0, n0 + span)  # members before each test
    totals = sum(values) + np.cumsum(new)
    big = max(values, default=0) >= _EXACT_INT64 or int(new.max(initial=0)) >= _EXACT_INT64
    rows = np.empty((span, members.size + 1), dtype=object if big else np.int64)
    if big:
        totals = totals.astype(object)
    rows[:, 0] = new
    rows[:, 1:] = members
    terms = np.abs((sizes + 1)[:, None] * rows - totals[:, None])  # n1 |c - m|, exact
    terms[np.arange(members.size + 1) > sizes[:, None]] = 0
    ok = _deviations(terms.sum(axis=1), sizes + 1) < thr - zdev[pos : pos + span]
    return (-1 if ok.all() else pos + int(np.argmin(ok))), span


def _grow_group(
    counts: np.ndarray, zdev: np.ndarray, pos: int, values: list[int], thr: float,
    first_chunk: int = 0,
) -> tuple[int, list[int]]:
    """Grow the open group with members ``values`` from step ``pos`` on (Alg. 16 lines 11-12).

    Returns the step whose test fails (the closed singleton of line 14), or ``counts.size``
    if the group is still open at the end, and then its members. Below ``_TREE_MIN_GROUP``
    members the deviation is summed directly (:func:`_direct_tests`); from there on it is the
    scalar loop's histogram formula, evaluated for chunks of steps at once
    (:func:`_chunk_tests`): a step's test does not depend on whether later steps join. The
    first chunk is twice ``first_chunk`` (the last long group's length; between
    ``_LONG_CHUNK`` and ``_MAX_CHUNK``), then they double. A chunk has a fixed cost of some
    fifty array operations, so when ``first_chunk`` says that groups have been short, the
    first ``_SCALAR_STEPS`` tests run one by one (:func:`_histogram_tests`).
    """
    end = counts.size
    if len(values) < _TREE_MIN_GROUP:
        fails, span = _direct_tests(counts, zdev, pos, values, thr)
        if fails >= 0:
            return fails, values
        values = values + counts[pos : pos + span].tolist()
        pos += span
    if first_chunk < _SCALAR_STEPS and pos < end:  # groups have been short: one by one first
        stop = min(end, pos + _SCALAR_STEPS)
        fails, done = _histogram_tests(counts[pos:stop].tolist(), zdev[pos:stop].tolist(),
                                       values, thr)
        if fails >= 0:
            return pos + fails, values
        pos += done
    first = pos
    n, total = len(values), sum(values)
    ordered = np.sort(np.asarray(values, dtype=np.int64))
    size = min(max(_LONG_CHUNK, 2 * first_chunk), _MAX_CHUNK)
    while pos < end:
        vals = counts[pos : pos + size]
        size *= 2
        fails = _chunk_tests(vals, zdev[pos : pos + vals.size], n, total, ordered, thr)
        if fails >= 0:
            return pos + fails, values
        n, total = n + vals.size, total + int(vals.sum())
        ordered = np.sort(np.concatenate((ordered, vals)), kind="stable")
        pos += vals.size
    return end, values + counts[first:end].tolist()


def _histogram_tests(new: list[int], zdev: list[float], values: list[int],
                     thr: float) -> tuple[int, int]:
    """Tests of an open group of at least ``_TREE_MIN_GROUP`` members, one step at a time, as
    :func:`_run_core` makes them (a histogram of the members and a pointer at floor(m)).

    Appends the steps that join to ``values``. Returns (index in ``new`` of the step that
    fails or -1, steps done); stops early, undecided, where floor(m) jumps by more than
    ``_POINTER_STEP`` (very large counts), leaving the rest to :func:`_chunk_tests`.
    """
    n, total = len(values), sum(values)
    hist: dict[int, int] = {}
    for v in values:
        hist[v] = hist.get(v, 0) + 1
    ptr = (total + new[0]) // (n + 1)  # the first test's floor(m): start the pointer there
    below_n = below_s = 0
    for v in values:
        if v <= ptr:
            below_n += 1
            below_s += v
    for i, (c, e_dev) in enumerate(zip(new, zdev, strict=True)):
        n1 = n + 1
        s1 = total + c
        q = s1 // n1  # floor(m), m = s1 / n1
        if abs(q - ptr) > _POINTER_STEP:
            return -1, i
        while ptr < q:
            ptr += 1
            h = hist.get(ptr, 0)
            below_n += h
            below_s += h * ptr
        while ptr > q:
            h = hist.get(ptr, 0)
            below_n -= h
            below_s -= h * ptr
            ptr -= 1
        below = below_n
        s = below_s
        if c <= q:
            below += 1
            s += c
        if not min(2 * (s1 * below - n1 * s) / n1, DEV_MAX) < thr - e_dev:
            return i, i
        values.append(c)
        n, total = n1, s1
        hist[c] = hist.get(c, 0) + 1
        if c <= ptr:
            below_n += 1
            below_s += c
    return -1, len(new)


def _chunk_tests(vals: np.ndarray, zdev: np.ndarray, n: int, total: int, ordered: np.ndarray,
                 thr: float) -> int:
    """Tests of the next ``vals.size`` steps of an open group with ``n`` members (sorted
    values ``ordered``, sum ``total``), as if each joined: the index of the first that fails,
    or -1.

    k (members <= floor(m_t)) counts the members before the chunk by a binary search in
    ``ordered``, and those in it by accumulating its changes: [c_t <= floor(m_t)] at each
    step and, where floor(m) moves, ± the occurrences so far of the values it crosses.
    """
    b = vals.size
    s1 = total + np.cumsum(vals)
    n1 = np.arange(n + 1, n + 1 + b)
    level = s1 // n1  # floor(m), m = s1 / n1: the members <= m are those <= level
    k_before = np.searchsorted(ordered, level, side="right")
    s_before = np.concatenate(([0], np.cumsum(ordered)))[k_before]
    joins = vals <= level
    dk = joins.astype(np.int64)
    ds = dk * vals
    moves = np.flatnonzero(level[1:] != level[:-1]) + 1  # steps where floor(m) moves
    if moves.size:
        prev, cur = level[moves - 1], level[moves]
        up = cur > prev
        lower = np.where(up, prev, cur)  # the move crosses the values lower+1 .. upper
        width = np.where(up, cur - prev, prev - cur)
        items = int(width.sum())
        if items * b <= _CROSS_CELLS:  # few crossings: compare with the chunk directly
            at = np.repeat(moves, width)
            crossed = np.repeat(lower + 1 - np.cumsum(width) + width, width) + np.arange(items)
            seen = ((vals == crossed[:, None]) & (np.arange(b) < at[:, None])).sum(axis=1)
        else:  # many: binary searches in (value or its rank, step) keys
            top = int(vals.max())
            if items <= 4 * b and top < 1 << 40:  # the crossed values themselves
                key_vals, first = vals, lower + 1
            else:  # ranks among the chunk's distinct values
                distinct = np.unique(vals)
                key_vals = np.searchsorted(distinct, vals)
                first = np.searchsorted(distinct, lower, side="right")
                width = np.searchsorted(distinct, lower + width, side="right") - first
            at = np.repeat(moves, width)
            key = np.repeat(first - np.cumsum(width) + width, width) + np.arange(at.size)
            crossed = key if key_vals is vals else distinct[key]
            order = np.argsort(key_vals.astype(np.uint16) if top < 1 << 16 and key_vals is vals
                               else key_vals, kind="stable")
            keys = key_vals[order] * b + order  # (value, step), sorted
            seen = np.searchsorted(keys, key * b + at) - np.searchsorted(keys, key * b)
        seen = np.where(np.repeat(up, width), seen, -seen)
        np.add.at(dk, at, seen)
        np.add.at(ds, at, seen * crossed)
    below = k_before + np.cumsum(dk)
    s = s_before + np.cumsum(ds)
    if int(s1[-1]) * int(n1[-1]) < 2**61:  # n1 dev = 2 (s1 below - n1 s) fits in int64
        dev_n = 2 * (s1 * below - n1 * s)
    else:  # exact in Python integers (very large counts)
        dev_n = np.array([2 * (int(a) * int(k) - int(c) * int(t))
                          for a, k, c, t in zip(s1, below, n1, s, strict=True)], dtype=object)
    ok = _deviations(dev_n, n1) < thr - zdev
    return -1 if ok.all() else int(np.argmin(ok))


def _grouper_run(st: _GroupState, counts: np.ndarray, zth: np.ndarray, zdev: np.ndarray,
                 theta: float) -> list[int]:
    """The Deviation-Based Grouper (Chen 2018 Alg. 16) over ``counts`` from ``st``.

    Returns the steps (indices into ``counts``) at which a group starts — opened with a fresh
    threshold (lines 6-8) or closed singletons (line 14) — and moves ``st`` past them. The
    decisions are those of :func:`_run_core`, bit for bit: groups are followed one after the
    other (each start depends on where the previous group failed), the first offsets of all
    possible starts decided at once by :func:`_first_failures`, longer groups grown by
    :func:`_grow_group`.
    """
    end = counts.size
    starts: list[int] = []
    pos = 0
    is_open, thr, values = st.open, st.noisy_threshold, st.values
    if is_open:  # the open group of the previous feed goes on
        pos, values = _grow_group(counts, zdev, 0, values, thr)
        if pos < end:
            starts.append(pos)
            is_open = False
            pos += 1
    if pos < end:
        thresholds = theta + zth  # Alg. 16 line 8, for a group opened at each step
        csum = np.concatenate(([0], np.cumsum(counts)))
        fail, depth = _first_failures(counts, csum, thresholds, zdev)
        fail_list = fail.tolist()
        put = starts.append
        last_long = 0
        while pos < end:
            put(pos)  # the last group is closed: {t} opens a new one
            f = fail_list[pos]
            if f:
                put(pos + f)  # closed singleton
                pos += f + 1
                continue
            tested = pos + min(depth, end - 1 - pos) + 1
            thr = float(thresholds[pos])
            fails, values = _grow_group(counts, zdev, tested, counts[pos:tested].tolist(), thr,
                                        last_long)
            # The next long group's first chunk: as long as this one (a second chunk costs
            # more than testing steps beyond a group's end).
            last_long = max(last_long // 2, fails - pos)
            if fails == end:
                is_open = True
                break
            put(fails)
            is_open = False
            pos = fails + 1
    st.t += end
    st.gid += len(starts)
    if starts:
        st.start = st.t - end + starts[-1]
    st.open, st.noisy_threshold = is_open, thr
    st.values = values if is_open else []
    st.caches = False
    return starts


def _running_median(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``median(values[starts[t] .. t])`` for every t (``starts`` non-decreasing, <= t).

    The MedianSmoother (eq. 5.6) of every step at once: pandas' rolling median with these
    variable windows (a skip list, restarted where a group starts). The median of an even
    count is (lower + upper) / 2, the scalar loop's ``(hi[0] - lo[0]) / 2``, bit for bit.
    """
    import pandas as pd

    indexer = _group_window_indexer()(starts)
    return pd.Series(values).rolling(indexer, min_periods=1).median().to_numpy()


@cache
def _group_window_indexer():
    from pandas.api.indexers import BaseIndexer

    class GroupSoFar(BaseIndexer):
        """Windows from each step's group start to the step itself."""

        def __init__(self, starts: np.ndarray) -> None:
            super().__init__(window_size=0)
            self.starts = starts

        def get_window_bounds(self, num_values=0, min_periods=None, center=None,
                              closed=None, step=None):
            return (np.asarray(self.starts, dtype=np.int64),
                    np.arange(1, num_values + 1, dtype=np.int64))

    return GroupSoFar


def _group_means(noisy: np.ndarray, starts: list[int], k: int, total: float, mean: float,
                 m2: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Running sum, mean and sum of squared deviations of each step's group so far, in the
    scalar loop's arithmetic. ``starts`` are the steps that start a group; the steps before
    the first continue a group of ``k`` members with ``total``, ``mean`` and ``m2``.

    The sums are sequential, as the loop's running total makes them (:func:`_group_sums`);
    the means are those sums over the group's size so far; the squared deviations follow:
    each step adds the loop's ``delta·(x − mean)`` (the count minus the mean before it, times
    the count minus the mean after it), in order.
    """
    n = noisy.size
    carried = starts[0] if starts else n  # the steps continuing the last group
    heads = np.array(([0] if carried else []) + starts, dtype=np.int64)
    first = noisy[heads].copy()
    if carried:
        first[0] = total + noisy[0]
    sums = _group_sums(noisy, heads, n, first)
    fresh = np.zeros(n, dtype=bool)
    fresh[heads] = True
    head_at = np.maximum.accumulate(np.where(fresh, np.arange(n), 0))
    sizes = np.arange(n) - head_at + 1.0
    if carried:
        sizes[:carried] += k
    means = sums / sizes
    before = np.empty(n)
    before[0] = mean
    before[1:] = means[:-1]
    terms = (noisy - before) * (noisy - means)
    # m2 = 0 at a new group's first count; the carried group adds its first term to m2.
    first_m2 = np.zeros(heads.size)
    if carried:
        first_m2[0] = m2 + terms[0]
    return sums, means, _group_sums(terms, heads, n, first_m2)


def _group_sums(terms: np.ndarray, heads: np.ndarray, n: int, first: np.ndarray) -> np.ndarray:
    """``out[h] = first``, then ``out[t] = out[t-1] + terms[t]`` inside each group (heads
    ``heads``, one after the other up to ``n``): sequential sums, as a running total makes
    them. The first ``_GROUP_SUM_STEPS`` steps of all groups at once, the rest of each longer
    group by its own ``cumsum``."""
    out = np.empty(n)
    lengths = np.diff(np.append(heads, n))
    order = np.argsort(-lengths, kind="stable")  # longest first: the groups still going
    heads, lengths = heads[order], lengths[order]  # at an offset are a prefix
    total = first[order]
    out[heads] = total
    for k in range(1, min(_GROUP_SUM_STEPS, int(lengths[0]))):
        going = int(np.searchsorted(-lengths, -k, side="left"))  # groups longer than k
        at = heads[:going] + k
        total = total[:going] + terms[at]
        out[at] = total
    for head, length in zip(heads.tolist(), lengths.tolist(), strict=True):
        if length <= _GROUP_SUM_STEPS:
            break
        rest = slice(head + _GROUP_SUM_STEPS, head + length)
        out[rest] = np.cumsum(np.concatenate(([out[rest.start - 1]], terms[rest])))[1:]
    return out


def _vector_core(st: _GroupState, counts: np.ndarray, noise: np.ndarray, theta: float,
                 tau2: float, median_only: bool = False) -> dict[str, np.ndarray]:
    """Perturber, Grouper and smoothers over a whole feed, vectorised around the Grouper's
    sequential decisions; the outputs of :func:`_run_core` on the same noise, bit for bit.

    Returns ``noisy``, ``median``, ``start`` (and unless ``median_only`` also ``average``,
    ``james_stein`` and ``gid``) as arrays, and moves ``st`` past the feed.
    """
    n = counts.size
    t0, gid0, start0 = st.t, st.gid, st.start
    carried = st.noisy if st.open else []  # the open group goes on: its noisy counts so far
    k0, sum0, mean0, m20 = len(carried), st.sum, st.mean, st.m2
    noisy = counts + noise[:, 0]  # Alg. 15 line 2: Perturber
    starts = _grouper_run(st, counts, noise[:, 1], noise[:, 2], theta)
    fresh = np.zeros(n, dtype=bool)
    fresh[starts] = True
    first = np.maximum.accumulate(np.where(fresh, np.arange(n), -1))
    start = np.where(first >= 0, t0 + first, start0)
    # Window starts inside [carried, noisy]: the carried group starts at 0.
    window_starts = np.where(first >= 0, first + k0, 0)
    if k0:
        ext = np.concatenate((np.asarray(carried, dtype=float), noisy))
        window_starts = np.concatenate((np.zeros(k0, dtype=np.int64), window_starts))
        median = _running_median(ext, window_starts)[k0:]
    else:
        median = _running_median(noisy, window_starts)
    tail = noisy[starts[-1] :] if starts else noisy
    st.noisy = tail.tolist() if starts else carried + tail.tolist()
    out = {"noisy": noisy, "median": median, "start": start}
    if median_only:
        return out
    total, mean, m2 = _group_means(noisy, starts, k0, sum0, mean0, m20)
    st.sum, st.mean, st.m2 = float(total[-1]), float(mean[-1]), float(m2[-1])
    # eq. 5.7, James-Stein towards the group mean (module docstring), as the scalar loop
    sizes = np.arange(t0, t0 + n) - start + 1
    shrink = m2 > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        js = mean + (1.0 - (sizes - 1) * tau2 / np.where(shrink, m2, 1.0)) * (noisy - mean)
    out.update(average=mean, james_stein=np.where(shrink, js, noisy),
               gid=gid0 + np.cumsum(fresh))
    return out


class _Column:
    """One growing output of the online form: arrays from vectorised feeds and a list of the
    values pushed one at a time since, joined when read (pushing stays O(1) per step)."""

    __slots__ = ("pieces", "pending", "size", "dtype")

    def __init__(self, dtype) -> None:
        self.pieces: list[np.ndarray] = []
        self.pending: list = []
        self.size = 0  # values in pieces (pending not counted)
        self.dtype = dtype

    def _flush(self) -> None:
        if self.pending:
            self.pieces.append(np.asarray(self.pending, dtype=self.dtype))
            self.size += len(self.pending)
            self.pending = []

    def add(self, values: np.ndarray) -> None:
        self._flush()
        if values.size:
            self.pieces.append(np.asarray(values, dtype=self.dtype))
            self.size += values.size

    def array(self) -> np.ndarray:
        self._flush()
        if len(self.pieces) != 1:
            self.pieces = [np.concatenate(self.pieces) if self.pieces
                           else np.empty(0, dtype=self.dtype)]
        return self.pieces[0]

    def tail(self, k: int) -> np.ndarray:
        """The last ``k`` values."""
        if k <= len(self.pending):
            return np.asarray(self.pending[len(self.pending) - k :], dtype=self.dtype)
        self._flush()
        parts, need = [], k
        for piece in reversed(self.pieces):
            if need <= 0:
                break
            parts.append(piece[max(piece.size - need, 0) :])
            need -= piece.size
        return np.concatenate(parts[::-1]) if len(parts) != 1 else parts[0]

    def last(self):
        return self.pending[-1] if self.pending else self.pieces[-1][-1]


def _ewma(x: np.ndarray, half_life: float, last: np.ndarray | None) -> np.ndarray:
    """y_t = (1 − a)·x_t + a·y_{t−1} along the last axis from y_{−1} = ``last`` (0 if None)."""
    a = 2.0 ** (-1.0 / half_life)
    if x.shape[1] == 1 and last is not None:  # one push: lfilter's arithmetic, without its cost
        return ((1.0 - a) * x[:, 0] + a * np.asarray(last))[:, None]
    from scipy.signal import lfilter

    zi = np.zeros((x.shape[0], 1)) if last is None else a * np.asarray(last)[:, None]
    return lfilter([1.0 - a], [1.0, -a], x, axis=-1, zi=zi)[0]


@dataclass
class _AdaptiveState:
    """Where the adaptive smoother stopped: error averages, the last window medians, and the
    last noisy counts (enough for the longest window), so a stream can be fed in pieces."""

    score: np.ndarray
    sq: np.ndarray
    last_medians: np.ndarray
    tail: np.ndarray


def _trailing_medians(values: np.ndarray, w: int, first: int) -> np.ndarray:
    """``median(values[i-w+1 .. i])`` for i = first, ..., len-1 (``first >= w - 1``).

    Exact order statistics, so any method gives the same numbers: the element in the middle,
    or (lower + upper) / 2 of the two (as pandas' rolling median). Short windows sort every
    window; long ones run Bottleneck's moving median.
    """
    if w == 1:
        return values[first:].copy()
    if w == 2:
        before, now = values[first - 1 : -1], values[first:]
        return (np.maximum(before, now) + np.minimum(before, now)) / 2.0
    if w == 4:  # the middle two of four: max of the pairs' minima, min of their maxima
        a, b, c, d = (values[first - 3 + i : values.size - 3 + i] for i in range(4))
        low, high = np.maximum(np.minimum(a, b), np.minimum(c, d)), np.minimum(
            np.maximum(a, b), np.maximum(c, d))
        return (np.minimum(low, high) + np.maximum(low, high)) / 2.0
    if w <= _SORTED_WINDOWS:
        rows = np.sort(sliding_window_view(values, w)[first - w + 1 :], axis=1)
        upper = rows[:, w // 2]
        return upper if w % 2 else (rows[:, w // 2 - 1] + upper) / 2.0
    import bottleneck

    # Two heaps over the trailing window (O(log w) a step): the same order statistics, the
    # mean of the middle two of an even window as (lower + upper) / 2.
    return bottleneck.move_median(np.asarray(values, dtype=float), w)[first:]


def _adaptive_chunk(noisy, sizes, group_median, tau2, state, opts: Mapping, last=False):
    """The adaptive smoother (:func:`adaptive_window_smoother`) on the next ``noisy.size``
    steps from ``state`` (None: the start); returns (estimates, windows used, new state).
    ``last``: no step follows, so no state is returned."""
    windows, horizon, tolerance = opts["windows"], opts["horizon"], opts["tolerance"]
    shrink_horizon, z = opts["shrink_horizon"], opts["z"]
    n = noisy.size
    windows = tuple(windows)
    longest = max(windows) if windows else 0
    k = len(windows) + 1
    tail = np.empty(0) if state is None else state.tail
    values = np.concatenate([tail, noisy])
    meds = np.empty((k, n))
    caps = np.empty(k, dtype=np.int64)
    if n == 1:  # one push: the same medians without pandas (an element, or the mean of two)
        size = int(sizes[0])
        for j, w in enumerate(windows):
            meds[j, 0] = group_median[0] if size < w else np.median(values[values.size - w :])
            caps[j] = w
    else:
        # A window of w needs w steps of t's group, so it lies inside [tail, noisy] where it
        # is used; elsewhere (size < w) the group median stands in.
        for j, w in enumerate(windows):
            caps[j] = w
            short = sizes < w
            n_used = n - np.count_nonzero(short)
            if n_used == 0:
                meds[j] = group_median
                continue
            if w > _SORTED_WINDOWS and n_used < _SPARSE_WINDOWS * n:
                meds[j] = group_median
                used = np.flatnonzero(~short)
                # Only the steps whose group so far has w members: their windows, cut out
                # run by run (a run ends where its group does) and filtered together.
                runs = np.flatnonzero(np.diff(used, prepend=-2) != 1)
                lengths = np.diff(np.append(runs, used.size))
                starts = used[runs] + tail.size - w + 1  # first window step of each run
                seg = np.repeat(starts - (np.cumsum(lengths + w - 1) - lengths - w + 1),
                                lengths + w - 1) + np.arange(int((lengths + w - 1).sum()))
                keep = np.ones(seg.size, dtype=bool)
                keep[np.repeat(np.cumsum(lengths + w - 1) - lengths - w + 1, w - 1)
                     + np.tile(np.arange(w - 1), runs.size)] = False
                meds[j, used] = _trailing_medians(values[seg], w, w - 1)[keep[w - 1 :]]
            else:
                first = max(tail.size, w - 1) - tail.size  # before it, sizes < w
                meds[j, :first] = group_median[:first]
                np.copyto(meds[j, first:], _trailing_medians(values, w, first + tail.size))
                np.copyto(meds[j], group_median, where=short)
    meds[-1] = group_median
    caps[-1] = np.iinfo(np.int64).max
    err = np.empty((k, n))
    err[:, 0] = 0.0 if state is None else noisy[0] - state.last_medians
    np.subtract(noisy[1:], meds[:, :-1], out=err[:, 1:])  # m_W(t-1) as a prediction of c~_t
    score = _ewma(np.abs(err), horizon, None if state is None else state.score)
    # The choice at t uses the averages up to t - 1 (zero before the first step).
    score0 = np.zeros(k) if state is None else state.score
    sq0 = np.zeros(k) if state is None else state.sq
    choice = np.empty(n, dtype=np.int64)
    ok0 = score0 <= score0.min() * (1.0 + tolerance)
    choice[0] = k - 1 - np.argmax(ok0[::-1])  # the longest window within tolerance
    past = score[:, :-1]
    ok = past <= past.min(axis=0) * (1.0 + tolerance)
    choice[1:] = k - 1 - np.argmax(ok[::-1], axis=0)
    # Squared errors (for the shrinkage): each row is its own recursion, so a last piece
    # needs only the rows of the windows it chooses.
    if last:
        sq = np.empty((k, n))
        rows = np.unique(choice)
        sq[rows] = _ewma(np.square(err[rows]), shrink_horizon,
                         None if state is None else state.sq[rows])
    else:
        sq = _ewma(np.square(err), shrink_horizon, None if state is None else state.sq)
    cols = np.arange(n)
    est = meds[choice, cols]
    used = np.minimum(caps[choice], sizes)
    s = np.empty(n)
    s[0] = sq0[choice[0]]
    s[1:] = sq[choice[1:], cols[:-1]]
    tau2 = np.broadcast_to(np.asarray(tau2, dtype=float), (n,))
    a = 2.0 ** (-1.0 / shrink_horizon)
    # Var(Lap^2) = 5 (2b^2)^2: an average of n_eff squares has relative standard error
    # sqrt(5/n_eff); shrink only where s is z of them above tau^2.
    n_eff = (1.0 + a) / (1.0 - a)
    shrink = s > tau2 * (1.0 + z * math.sqrt(5.0 / n_eff))
    b = np.where(shrink, tau2 / np.where(shrink, s, 1.0), 1.0)
    keep = longest
    new_state = None if last else _AdaptiveState(
        score[:, -1].copy(), sq[:, -1].copy(), meds[:, -1].copy(),
        values[-keep:].copy() if keep else np.empty(0))
    return est + (1.0 - b) * (noisy - est), used, new_state


def adaptive_window_smoother(
    noisy,
    group_starts,
    group_median,
    tau2,
    *,
    windows: Sequence[int] = ADAPTIVE_SMOOTHER["windows"],
    horizon: float = ADAPTIVE_SMOOTHER["horizon"],
    tolerance: float = ADAPTIVE_SMOOTHER["tolerance"],
    shrink_horizon: float = ADAPTIVE_SMOOTHER["shrink_horizon"],
    z: float = ADAPTIVE_SMOOTHER["z"],
) -> tuple[np.ndarray, np.ndarray]:
    """The adaptive smoother: a trailing-window median inside the group, chosen in real time.

    The group median (Chen 2018 eq. 5.6) is best while the group is flat; once θ is large
    enough for long groups, a group can span a daily ramp and its median lags. Here every
    candidate window W (``windows``, capped at the group so far, and the whole group) gives
    m_W(t), the median of the last W noisy counts of t's group. Its past accuracy is scored by
    how well m_W(s−1) predicted c̃_s (c̃_s's noise is independent of m_W(s−1), so this ranks
    E|c_s − m_W(s−1)| without the truth); at t the longest window whose average error up to
    t−1 (half-life ``horizon`` steps) is within ``tolerance`` of the smallest wins. Then, if the
    squared prediction error of that window (half-life ``shrink_horizon``) exceeds the noise
    variance τ² = 2/ε_p² by ``z`` standard errors, the counts move faster than any window can
    follow (a step-to-step spread comparable to the noise, High_5 at ε = 0.1) and the estimate
    is shrunk towards c̃_t: ĉ_t = m + (1 − τ²/s)(c̃_t − m) (positive-part James-Stein).

    Parameters
    ----------
    noisy, group_starts, group_median : array_like, shape (n,)
        The Perturber's output, the first step of each step's group as of that step, and the
        MedianSmoother's output (a :class:`PegasusResult`'s ``noisy``, ``group_starts``,
        ``smoothed["median"]``).
    tau2 : float or array_like
        The Perturber's noise variance 2/ε_p² (per step if ε_p varies).
    windows, horizon, tolerance, shrink_horizon, z
        Public settings; defaults :data:`ADAPTIVE_SMOOTHER`.

    Returns
    -------
    (estimates, window) : tuple of numpy.ndarray
        ĉ_t and the number of noisy counts the window median used at t.

    Notes
    -----
    Post-processing of released values (c̃ and the partition): no budget. Real time: ĉ_t
    uses c̃_1..c̃_t and the partition as of t only.
    """
    noisy = check_finite_array(noisy, "noisy")
    starts = np.asarray(group_starts, dtype=np.int64)
    gmed = check_finite_array(group_median, "group_median")
    if starts.shape != noisy.shape or gmed.shape != noisy.shape:
        raise ValueError("noisy, group_starts and group_median must have the same length")
    sizes = np.arange(noisy.size) - starts + 1
    opts = {"windows": tuple(check_positive_int(w, "windows") for w in windows),
            "horizon": horizon, "tolerance": tolerance,
            "shrink_horizon": shrink_horizon, "z": z}
    est, used, _ = _adaptive_chunk(noisy, sizes, gmed, tau2, None, opts, last=True)
    return est, used


@dataclass(frozen=True, eq=False)
class PegasusResult:
    """A PeGaSus release of one stream and what it cost.

    Attributes
    ----------
    estimates : numpy.ndarray
        ĉ_t, one per step, from the chosen ``smoother`` (real time: ĉ_t uses only c_1..c_t).
    smoothed : mapping
        The estimates of every smoother in :data:`SMOOTHERS` (all post-processing of the same
        Perturber and Grouper outputs, so comparing them costs nothing).
    noisy : numpy.ndarray
        The Perturber's output c̃_t = c_t + Lap(1/ε_p).
    groups : numpy.ndarray of int
        The Grouper's partition: the group id (0, 1, ...) of each step. Groups are contiguous;
        a step's group never changes after the step (a group may only grow to the right).
    group_starts : numpy.ndarray of int
        Index of the first step of each step's group.
    smoother : str
    theta : float
        The deviation threshold θ of Alg. 16.
    threshold_share : float
        The part of ε_g spent on each group's noisy threshold (the rest on its tests).
    defaults : str
        ``"new"`` or ``"text"``: which set of defaults filled the unspecified parameters.
    window : numpy.ndarray of int
        How many noisy counts the adaptive smoother's window median used at each step.
    epsilon : float
        ``ε_p + ε_g``, the budget spent (== ``sum(epsilon_parts.values())``).
    epsilon_parts : mapping
        ``perturber`` (ε_p) and ``grouper`` (ε_g).
    guarantee, neighbours : str
    """

    estimates: np.ndarray
    smoothed: Mapping[str, np.ndarray]
    noisy: np.ndarray
    groups: np.ndarray
    group_starts: np.ndarray
    smoother: str
    theta: float
    epsilon: float
    epsilon_parts: Mapping[str, float]
    guarantee: str = ""
    neighbours: str = NEIGHBOURS
    threshold_share: float = 0.5
    defaults: str = "text"
    window: np.ndarray | None = None

    @property
    def n_groups(self) -> int:
        return int(self.groups[-1]) + 1 if self.groups.size else 0

    @property
    def group_boundaries(self) -> np.ndarray:
        """Start index of every group, increasing (the partition as boundaries)."""
        return np.flatnonzero(np.diff(self.groups, prepend=-1))

    @property
    def group_size_used(self) -> np.ndarray:
        """Size of each step's group *as of that step* (the group so far: what its estimate used,
        not the group's final size)."""
        return np.arange(self.groups.size) - self.group_starts + 1


class PegasusStream:
    """Online PeGaSus (Chen 2018 Alg. 15): :meth:`push` one count, get its private estimate back.

    Parameters
    ----------
    epsilon : float
        Total budget ε = ε_p + ε_g, spent once for the whole (unbounded) stream.
    smoother : {"adaptive", "median", "average", "james_stein"}, optional
        Which smoother gives the returned estimate (all are kept in :meth:`result`); default
        ``"adaptive"`` (``"median"`` with ``defaults="text"``).
    rng : numpy.random.Generator, optional
    epsilon_p, epsilon_g : float, optional
        Perturber and Grouper budgets; default ε_g = 0.05ε (0.2ε with ``defaults="text"``, Chen
        2018 §5.6.1). Give one and the other is the remainder; give both and they must sum to ε.
    theta : float, optional
        Deviation threshold θ of Alg. 16; default 160/ε_g (5/ε_g with ``defaults="text"``).
    threshold_share : float in (0, 1), optional
        Part of ε_g spent on each group's noisy threshold, the rest on its deviation tests;
        default ``LYU_THRESHOLD_SHARE`` = 1/(1 + 2^(2/3)) ≈ 0.387 (Lyu, Su & Li 2017), 0.5 with
        ``defaults="text"`` (the text's Lap(4/ε_g) and Lap(8/ε_g)).
    defaults : {"new", "text"}
        Which set of :data:`DEFAULTS` fills the parameters not given.

    Raises
    ------
    ValueError
        Bad budgets (ε_p + ε_g ≠ ε), θ, smoother; from :meth:`push`, a count that is negative,
        fractional or not finite (nothing is drawn and the state is unchanged).

    Notes
    -----
    Noise is drawn in rows of three per step (Perturber Lap(1/ε_p), threshold Lap(2/ε_1),
    deviation Lap(4/ε_2), ε_1 + ε_2 = ε_g), a block of rows at a time; a row's unused entries
    are discarded.
    Blocks concatenate to the same sequence as one large draw, so :func:`pegasus` on the same
    ``rng`` gives identical estimates.

    Privacy: ε-DP under event-level neighbours (:data:`NEIGHBOURS`): ε_p-DP Perturber
    (Laplace, sensitivity 1 per step) + ε_g-DP Grouper (Thm 17: SVT on the disjoint groups,
    Δ(dev) = 2, any threshold/test split), sequential composition (Thm 15); θ, the shares and
    the smoother are public, and smoothing is post-processing.

    References
    ----------
    Chen 2018 §5.3, Alg. 15-16, eq. 5.5-5.7, Thm 15, 17; Lyu, Su & Li 2017 (SVT budget split).
    """

    def __init__(
        self,
        epsilon: float,
        smoother: str | None = None,
        rng: np.random.Generator | None = None,
        *,
        epsilon_p: float | None = None,
        epsilon_g: float | None = None,
        theta: float | None = None,
        threshold_share: float | None = None,
        defaults: str = "new",
    ) -> None:
        defaults, smoother, share = _resolve_options(defaults, smoother, threshold_share)
        eps, eps_p, eps_g, th = _split_pegasus_budget(epsilon, epsilon_p, epsilon_g, theta, defaults)
        self.smoother = smoother
        self.defaults = defaults
        self.threshold_share = share
        self._rng = check_rng(rng)
        self.epsilon = eps
        self.epsilon_parts = _budget_parts(eps, perturber=eps_p, grouper=eps_g)
        # Inside floating_point_safe() (decided here, once): the Grouper's comparisons on a grid.
        self._grid = _grouper_grid(eps_g, share)
        self.theta = _grid_theta(th, self._grid)
        self._scales = np.array([1.0 / eps_p, *_grouper_scales(eps_g, share)])
        self._tau2 = 2.0 / eps_p**2
        self._adaptive: _AdaptiveState | None = None
        self._adaptive_done = 0  # steps the adaptive smoother has processed
        self._noise = np.empty((0, 3))
        self._pos = 0
        self._state = _GroupState()
        self._out: dict[str, _Column] = {
            k: _Column(np.int64 if k in ("gid", "start", "window") else float)
            for k in ("noisy", "median", "average", "james_stein", "gid", "start",
                      "adaptive", "window")
        }

    @property
    def t(self) -> int:
        """Number of counts pushed so far."""
        return self._state.t

    def _take_noise(self, k: int) -> np.ndarray:
        available = self._noise.shape[0] - self._pos
        if available < k:
            fresh = _noise_rows(self._scales, (max(_CHUNK, k - available), 3), self._rng,
                                self._grid)
            self._noise = np.concatenate([self._noise[self._pos :], fresh])
            self._pos = 0
        rows = self._noise[self._pos : self._pos + k]
        self._pos += k
        return rows

    def _feed(self, counts: np.ndarray, last: bool = False) -> None:
        """Run ``counts``; ``last``: nothing will follow (:func:`pegasus`), so the adaptive
        smoother keeps no state."""
        noise = self._take_noise(counts.size)
        o = self._out
        if counts.size >= _VECTOR_MIN:
            out = _vector_core(self._state, counts, noise, self.theta, self._tau2)
            for k, v in out.items():
                o[k].add(v)
        else:
            _run_core(
                self._state, counts.tolist(), noise[:, 0].tolist(), noise[:, 1].tolist(),
                noise[:, 2].tolist(), self.theta, self._tau2,
                *(o[k].pending for k in ("noisy", "median", "average", "james_stein", "gid",
                                         "start")),
            )
        if self.smoother == "adaptive" or last:
            self._smooth_adaptive(last)

    def _smooth_adaptive(self, last: bool = False) -> None:
        """The adaptive smoother on the steps not smoothed yet, continuing from where it
        stopped (lazily, in one vectorised piece, unless it is the smoother pushes return:
        the result is the same however the steps are split)."""
        first, now = self._adaptive_done, self._state.t
        if first == now:
            return
        self._adaptive_done = now
        o = self._out
        noisy = o["noisy"].tail(now - first)
        sizes = np.arange(first, now) - o["start"].tail(now - first) + 1
        gmed = o["median"].tail(now - first)
        est, used, self._adaptive = _adaptive_chunk(
            noisy, sizes, gmed, self._tau2, self._adaptive, ADAPTIVE_SMOOTHER, last
        )
        if now - first == 1:
            o["adaptive"].pending.append(float(est[0]))
            o["window"].pending.append(int(used[0]))
        else:
            o["adaptive"].add(est)
            o["window"].add(used)

    def push(self, count) -> float:
        """Release ĉ_t for the next count c_t (Chen 2018 Alg. 15 lines 2-5)."""
        if isinstance(count, int | np.integer) and not isinstance(count, bool) and count >= 0:
            c = int(count)  # fast path for the common case; anything else is fully checked
        else:
            c = int(_check_stream([count], "count")[0])
        zp, zth, zdev = self._take_noise(1)[0].tolist()
        o = self._out
        _run_core(
            self._state, [c], [zp], [zth], [zdev], self.theta, self._tau2,
            *(o[k].pending for k in ("noisy", "median", "average", "james_stein", "gid",
                                     "start")),
        )
        if self.smoother == "adaptive":
            self._smooth_adaptive()
        return float(o[self.smoother].last())

    def extend(self, counts) -> np.ndarray:
        """Push many counts; returns their estimates (same as pushing them one by one)."""
        counts = _check_stream(counts)
        self._feed(counts)
        return np.array(self._out[self.smoother].tail(counts.size), dtype=float)

    def result(self) -> PegasusResult:
        """Everything released so far as a :class:`PegasusResult`."""
        if self._state.t == 0:
            raise ValueError("no count has been pushed yet; push at least one count")
        self._smooth_adaptive()
        o = self._out
        smoothed = {k: _readonly(o[k].array()) for k in SMOOTHERS}
        eps_p, eps_g = self.epsilon_parts["perturber"], self.epsilon_parts["grouper"]
        return PegasusResult(
            estimates=smoothed[self.smoother],
            smoothed=MappingProxyType(smoothed),
            noisy=_readonly(o["noisy"].array()),
            groups=_readonly(o["gid"].array()),
            group_starts=_readonly(o["start"].array()),
            smoother=self.smoother,
            theta=self.theta,
            epsilon=self.epsilon,
            epsilon_parts=self.epsilon_parts,
            guarantee=(
                f"{eps_text(self.epsilon)}-DP (event-level): Perturber {eps_text(eps_p)}-DP + Grouper "
                f"{eps_text(eps_g)}-DP (Chen 2018 Thm 15, 17)"
            ),
            threshold_share=self.threshold_share,
            defaults=self.defaults,
            window=_readonly(o["window"].array()),
        )


def pegasus(
    counts,
    epsilon: float,
    smoother: str | None = None,
    rng: np.random.Generator | None = None,
    *,
    epsilon_p: float | None = None,
    epsilon_g: float | None = None,
    theta: float | None = None,
    threshold_share: float | None = None,
    defaults: str = "new",
) -> PegasusResult:
    """Release a counting stream in real time with PeGaSus (Perturb-Group-Smooth).

    Perturber: c̃_t = c_t + Lap(1/ε_p). Grouper (Alg. 16): a new open group gets a noisy
    threshold θ̃ = θ + Lap(2/ε_1); the open group G takes step t while
    dev(C[G ∪ {t}]) + Lap(4/ε_2) < θ̃ (dev on the *true* counts, eq. 5.4), otherwise G is closed
    and {t} is a closed singleton; ε_1 + ε_2 = ε_g (the text: ε_1 = ε_2, i.e. Lap(4/ε_g) and
    Lap(8/ε_g)). Smoother: ĉ_t from the noisy counts of t's group as of t.

    Two sets of defaults (:data:`DEFAULTS`), one argument apart. ``defaults="text"`` is Chen
    2018 §5.6.1: ε_p = 0.8ε, θ = 5/ε_g, ε_1 = ε_2, MedianSmoother. Every scale of that Grouper
    is a multiple of 1/ε_g, so on flat data its groups are ~3 steps long whatever ε is, and
    PeGaSus cannot gain more than ~1/0.76 over LM (BS_k, k >= 2, beats it). The default
    ``"new"``: ε_g = 0.05ε, θ = 160/ε_g (long groups on flat data), the SVT split of Lyu, Su &
    Li 2017 and the ``"adaptive"`` smoother (which keeps long groups from lagging on ramps and
    shrinks towards c̃_t where counts jump more than the noise). All are public choices: the
    privacy argument is unchanged.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
        The true stream c_1..c_n (non-negative whole counts).
    epsilon : float
        Total budget ε = ε_p + ε_g.
    smoother : {"adaptive", "median", "average", "james_stein"}, optional
        Default "adaptive" ("median" with ``defaults="text"``: Chen 2018 §5.3.4, the most
        accurate in the text's experiments). All are in ``.smoothed`` anyway.
    rng : numpy.random.Generator, optional
    epsilon_p, epsilon_g, theta : float, optional
        Defaults 0.95ε, 0.05ε, 160/ε_g (``defaults="text"``: 0.8ε, 0.2ε, 5/ε_g, Chen 2018
        §5.6.1).
    threshold_share : float in (0, 1), optional
        ε_1/ε_g; default 1/(1 + 2^(2/3)) ≈ 0.387 (Lyu, Su & Li 2017), 0.5 with
        ``defaults="text"``.
    defaults : {"new", "text"}
        Which set of :data:`DEFAULTS` fills the parameters not given.

    Returns
    -------
    PegasusResult
        ``.estimates`` (length n), ``.smoothed`` (all smoothers), ``.noisy``, ``.groups``,
        ``.epsilon``, ``.epsilon_parts``.

    Raises
    ------
    ValueError
        Empty stream, NaN/inf, negative or fractional counts, ε ≤ 0, ε_p + ε_g ≠ ε, θ < 0,
        unknown smoother — before any noise is drawn.

    Notes
    -----
    Privacy: ε-DP under event-level neighbours (one tuple; one c_t changes by 1): the
    Perturber is the Laplace mechanism (ε_p), the Grouper the SVT per group (ε_g, Thm 17; the
    threshold/test split is public), composed sequentially (Thm 15); θ is public and
    smoothing is post-processing, so neither set of defaults changes the guarantee.

    Floating point. The Grouper computes every deviation exactly (``n1 dev = sum |n1 c_i -
    s1|`` in integers; the quotient rounded once and capped at :data:`DEV_MAX`, both monotone
    and 1-Lipschitz) and tests ``dev < θ̃ - noise``. Inside
    :func:`~.mechanisms.floating_point_safe` (analyst releases) θ is rounded to, and both
    Grouper noises are discrete Laplace in whole steps of, one
    :class:`~.mechanisms.ComparisonGrid` for the deviation's sensitivity 2: the right-hand side
    is an exact double, the quotient's rounding (below a quarter step) stays within the
    grid's ``K`` steps, and the widened scales pay for it, so every test is exact and the
    Grouper spends ε_g. The Perturber's noise is :func:`~.mechanisms.laplace`'s grid noise.

    Runs :class:`PegasusStream` over the whole stream; identical to pushing the counts one by
    one with the same ``rng``.

    References
    ----------
    Chen 2018 §5.3, Alg. 15 (PeGaSus), Alg. 16 (DBG), eq. 5.4-5.7, Thm 15, 17; text defaults
    §5.6.1. Lyu, Su & Li 2017, Alg. 7 (SVT budget split).
    """
    counts = _check_stream(counts)
    stream = PegasusStream(
        epsilon, smoother, rng, epsilon_p=epsilon_p, epsilon_g=epsilon_g, theta=theta,
        threshold_share=threshold_share, defaults=defaults,
    )
    stream._feed(counts, last=True)
    return stream.result()


def deviation_grouper(
    counts,
    epsilon_g: float,
    theta: float,
    rng: np.random.Generator | None = None,
    *,
    threshold_share: float = 0.5,
) -> np.ndarray:
    """The Deviation-Based Grouper alone (Chen 2018 Alg. 16): the group id of every step.

    ``threshold_share`` is the part of ε_g on each group's threshold (0.5: the text's
    Lap(4/ε_g) and Lap(8/ε_g); :data:`LYU_THRESHOLD_SHARE` for Lyu, Su & Li 2017's split).

    ``epsilon_g = math.inf`` runs the noiseless rule of Chen 2018 Example 7 (not private).

    Notes
    -----
    Privacy: ε_g-DP (event-level neighbours) for finite ε_g (Chen 2018 Thm 17): SVT with
    Lap(2/ε_1) on each group's threshold and Lap(4/ε_2) on each deviation test, ε_1 + ε_2 = ε_g.

    References
    ----------
    Chen 2018 §5.3.2, Alg. 16, Example 7, Lemma 16, Thm 17.
    """
    counts = _check_stream(counts)
    if isinstance(theta, bool) or not isinstance(theta, Real) or not math.isfinite(theta) or theta < 0:
        raise ValueError(f"theta must be a finite number >= 0, got {theta!r}")
    threshold_share = _check_share(threshold_share, "threshold_share")
    if isinstance(epsilon_g, Real) and not isinstance(epsilon_g, bool) and epsilon_g == math.inf:
        noise = np.zeros((counts.size, 2))
    else:
        epsilon_g = check_epsilon(epsilon_g, "epsilon_g")
        rng = check_rng(rng)
        grid = _grouper_grid(epsilon_g, threshold_share)
        theta = _grid_theta(float(theta), grid)
        noise = _noise_rows(np.array(_grouper_scales(epsilon_g, threshold_share)),
                            (counts.size, 2), rng, grid)
    starts = _grouper_run(_GroupState(), counts, noise[:, 0], noise[:, 1], float(theta))
    fresh = np.zeros(counts.size, dtype=np.int64)
    fresh[starts] = 1
    return np.cumsum(fresh) - 1


# ---------------------------------------------------------------------------------------------
# Queries by post-processing (Chen 2018 §5.4): sliding windows and event monitoring
# ---------------------------------------------------------------------------------------------


def _trailing_sums(x: np.ndarray, w: int) -> np.ndarray:
    """sw_t = Σ_{i=max(0,t-w+1)}^{t} x_i (partial windows at the start: counts before 0 are 0)."""
    csum = np.concatenate([[0.0], np.cumsum(x, dtype=float)])
    t = np.arange(x.size)
    return csum[t + 1] - csum[np.maximum(t - w + 1, 0)]


def _group_medians(result: PegasusResult) -> np.ndarray:
    """Median of the noisy counts of each step's *final* group: the running median at the
    group's last step (the MedianSmoother's, eq. 5.6, over the whole group by then)."""
    groups = result.groups
    last = np.flatnonzero(np.diff(groups, append=groups[-1] + 1))  # each group's last step
    return result.smoothed["median"][last][groups - groups[0]]


def window_sum_smoother(result: PegasusResult, w: int) -> np.ndarray:
    """Window Sum Smoother (WSS, Chen 2018 Alg. 17): private sliding-window sums from PeGaSus.

    At step t every group G of P_t that meets the window ``[t-w+1, t]`` contributes
    ``median{c̃_i : i ∈ G, i <= t} · |G ∩ window|``. A group other than t's own is closed by
    time t, so its median is that of its final members; t's own group contributes the running
    median ĉ_t of the MedianSmoother. Real time: step t uses only P_t and c̃_1..c̃_t.

    Notes
    -----
    Post-processing of a :class:`PegasusResult`: no budget beyond ``result.epsilon``.

    References
    ----------
    Chen 2018 §5.4, Alg. 17.
    """
    if not isinstance(result, PegasusResult):
        raise ValueError(f"result must be a PegasusResult (from pegasus), got {type(result).__name__}")
    n = result.noisy.size
    w = _check_window(w, n)
    closed_median = _group_medians(result)
    csum = np.concatenate([[0.0], np.cumsum(closed_median)])
    t = np.arange(n)
    lo = np.maximum(t - w + 1, 0)
    own = np.maximum(lo, result.group_starts)  # first window step inside t's own group
    return csum[own] - csum[lo] + result.smoothed["median"] * (t - own + 1)


def sliding_window_sums(released, w: int, *, method: str = "wss") -> np.ndarray:
    """Sliding-window sums ``sw_t = Σ_{i=t-w+1}^{t} c_i`` from a release (post-processing).

    Parameters
    ----------
    released : PegasusResult, StreamRelease, WindowSums or array_like
        A :class:`PegasusResult` (then ``method`` applies), a :class:`StreamRelease` (LM, BS_k:
        its estimates) or any released / true stream, whose trailing sums are returned; or a
        :class:`WindowSums` of the same ``w`` (SW_w), returned as released. Windows at the
        start are partial (counts before step 1 are 0), for the truth and the estimates alike.
    w : int
        Window size.
    method : {"wss", "estimates"}
        For a PeGaSus result: the Window Sum Smoother (Alg. 17, the text's PGS_WSS) or the sum
        of the released estimates (PGS_MS with the median smoother).

    Raises
    ------
    ValueError
        Bad ``w`` or ``method``; a :class:`WindowSums` of another width.

    References
    ----------
    Chen 2018 §5.2.2 (sliding windows), §5.4, Alg. 17.
    """
    if not isinstance(method, str) or method not in ("wss", "estimates"):
        raise ValueError(f"method must be 'wss' or 'estimates', got {method!r}")
    if isinstance(released, PegasusResult):
        if method == "wss":
            return window_sum_smoother(released, w)
        if method != "estimates":
            raise ValueError(f"method must be 'wss' or 'estimates', got {method!r}")
        return _trailing_sums(released.estimates, _check_window(w, released.estimates.size))
    if isinstance(released, WindowSums):
        w = _check_window(w, released.sums.size)
        if released.w != w:
            raise ValueError(
                f"w must equal the width of the released {released.method} sums ({released.w}), got {w}"
            )
        return released.sums
    x = _released_values(released)
    return _trailing_sums(x, _check_window(w, x.size))


def _released_values(released) -> np.ndarray:
    """The per-step values of a release (PeGaSus or baseline estimates) or of an array."""
    if isinstance(released, PegasusResult | StreamRelease):
        return released.estimates
    if isinstance(released, WindowSums):
        raise ValueError(
            f"released is a {released.method} window-sum release; per-step counts are needed here"
        )
    return check_finite_array(released, "released")


def jump_drop_statistic(released, w: int) -> np.ndarray:
    """``|c_t − c_{t−w+1}|`` per step (NaN for t < w−1, where the window is incomplete)."""
    x = _released_values(released)
    w = _check_window(w, x.size)
    out = np.full(x.size, np.nan)
    out[w - 1 :] = np.abs(x[w - 1 :] - x[: x.size - w + 1])
    return out


def jump_drop_events(released, w: int, delta: float) -> np.ndarray:
    """Jumping and dropping points ``b_t = |c_t − c_{t−w+1}| >= δ`` (Chen 2018 §5.2.2).

    ``released`` is a stream (true or private) or a :class:`PegasusResult` (its estimates, the
    MedianSmoother in the text's experiment, §5.4). Steps t < w−1 are never events.

    References
    ----------
    Chen 2018 §5.2.2 (event monitoring), §5.4.
    """
    delta = _check_real(delta, "delta")
    stat = jump_drop_statistic(released, w)
    return np.nan_to_num(stat, nan=-np.inf) >= delta


def _low_signal_statistic(released, w: int) -> np.ndarray:
    sums = sliding_window_sums(released, w)
    out = np.full(sums.size, np.nan)
    out[w - 1 :] = sums[w - 1 :]
    return out


def low_signal_events(released, w: int, delta: float) -> np.ndarray:
    """Low-signal points ``b_t = Σ_{i=t−w+1}^{t} c_i < δ`` (Chen 2018 §5.2.2).

    For a :class:`PegasusResult` the window sums come from the Window Sum Smoother (§5.4).
    Steps t < w−1 (incomplete windows) are never events.

    References
    ----------
    Chen 2018 §5.2.2, §5.4, Alg. 17.
    """
    delta = _check_real(delta, "delta")
    stat = _low_signal_statistic(released, w)
    return np.nan_to_num(stat, nan=np.inf) < delta


def _check_real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True, eq=False)
class EventRoc:
    """ROC of private event detection against the true events as the detection threshold moves.

    Attributes
    ----------
    fpr, tpr : numpy.ndarray
        One point per threshold, from (0, 0) to (1, 1).
    thresholds : numpy.ndarray
        Detection thresholds, from strictest to loosest (±inf at the ends).
    auc : float
    kind : str
        ``"jump_drop"`` or ``"low_signal"``.
    w : int
    delta : float
        The δ defining the true events.
    positives, negatives : int
        True events / non-events among the steps with a complete window.
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float
    kind: str
    w: int
    delta: float
    positives: int
    negatives: int


def event_roc(true_counts, released, w: int, delta: float, kind: str = "jump_drop") -> EventRoc:
    """ROC of detecting the true events of ``true_counts`` from a private release.

    The truth is the event stream of the true counts with threshold δ; the private detector
    uses the same statistic on the release with a moving threshold τ (Chen 2018 §5.6.3 varies τ over
    0..1000 for jumps and −4000..4000 for low signal; here every distinct value is a point).
    Only steps with a complete window (t >= w−1) are scored.

    Parameters
    ----------
    true_counts : array_like
    released : array_like, PegasusResult, StreamRelease or WindowSums
        Private estimates (for ``"low_signal"`` a PeGaSus result uses WSS, as in Fig. 5.7; a
        :class:`WindowSums` of width ``w`` — SW_w, the other method of Fig. 5.7 — is used as
        it is; ``"jump_drop"`` needs per-step estimates).
    w : int
    delta : float
    kind : {"jump_drop", "low_signal"}

    Notes
    -----
    Uses the true counts, so the ROC is an *evaluation* (teaching mode), not a release.

    References
    ----------
    Chen 2018 §5.6.3, Fig. 5.6-5.7.
    """
    truth_counts = check_finite_array(true_counts, "true_counts")
    delta = _check_real(delta, "delta")
    if kind == "jump_drop":
        true_stat = jump_drop_statistic(truth_counts, w)
        stat = jump_drop_statistic(released, w)
        truth = true_stat >= delta
        score = stat  # detection: score >= tau
    elif kind == "low_signal":
        true_stat = _low_signal_statistic(truth_counts, w)
        stat = _low_signal_statistic(released, w)
        truth = true_stat < delta
        score = -stat  # detection: sum < tau  <=>  -sum > -tau
    else:
        raise ValueError(f"kind must be 'jump_drop' or 'low_signal', got {kind!r}")
    if stat.size != true_stat.size:
        raise ValueError(
            f"true_counts and released must have the same length, got {true_stat.size} and {stat.size}"
        )
    valid = slice(w - 1, None)
    truth, score = truth[valid], score[valid]
    pos, neg = int(truth.sum()), int((~truth).sum())
    order = np.argsort(-score)  # ties are counted together below: their order is moot
    s = score[order]
    hits = truth[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]  # last index of each distinct score
    tp = np.r_[0, np.cumsum(hits)[last]]
    fp = np.r_[0, np.cumsum(~hits)[last]]
    tpr = tp / pos if pos else np.zeros_like(tp, dtype=float)
    fpr = fp / neg if neg else np.zeros_like(fp, dtype=float)
    thr = np.r_[np.inf, s[last]]
    if kind == "low_signal":
        thr = -thr  # back to "window sum < tau" thresholds (tau just above each score)
    auc = float(np.trapezoid(tpr, fpr)) if pos and neg else math.nan
    return EventRoc(fpr, tpr, thr, auc, kind, int(w), delta, pos, neg)


# ---------------------------------------------------------------------------------------------
# Quality measures (Chen 2018 §5.6)
# ---------------------------------------------------------------------------------------------


def scaled_total_l1(true_counts, estimates) -> float:
    """Scaled total L1 error ``Σ_t |c_t − ĉ_t| / Σ_t c_t`` (Chen 2018 §5.6.1, Fig. 5.3-5.4).

    Works for a matrix of streams too (sums over everything).
    """
    c = check_finite_array(true_counts, "true_counts", ndim=None)
    e = check_finite_array(estimates, "estimates", ndim=None)
    if c.shape != e.shape:
        raise ValueError(f"true_counts and estimates must have the same shape, got {c.shape} and {e.shape}")
    total = c.sum()
    if not total > 0:
        raise ValueError("true_counts must have a positive total for the scaled L1 error")
    return float(np.abs(c - e).sum() / total)


def average_l1(true_values, estimates) -> float:
    """Average L1 error ``mean_t |x_t − x̂_t|`` (Chen 2018 §5.6.2 windows, §5.6.4 hierarchies)."""
    c = check_finite_array(true_values, "true_values", ndim=None)
    e = check_finite_array(estimates, "estimates", ndim=None)
    if c.shape != e.shape:
        raise ValueError(f"true_values and estimates must have the same shape, got {c.shape} and {e.shape}")
    return float(np.abs(c - e).mean())


# ---------------------------------------------------------------------------------------------
# Baselines (Chen 2018 §5.6): LM, BS_k, SW_w
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StreamRelease:
    """A baseline release of one stream: ``estimates`` (one per step) and what it cost."""

    estimates: np.ndarray
    method: str
    epsilon: float
    epsilon_parts: Mapping[str, float]
    guarantee: str = ""
    neighbours: str = NEIGHBOURS


@dataclass(frozen=True, eq=False)
class WindowSums:
    """Private sliding-window sums of width ``w`` (one per step) and what they cost."""

    sums: np.ndarray
    w: int
    method: str
    epsilon: float
    epsilon_parts: Mapping[str, float]
    guarantee: str = ""
    neighbours: str = NEIGHBOURS


def laplace_stream(counts, epsilon: float, rng: np.random.Generator | None = None) -> StreamRelease:
    """The Laplace mechanism per step (LM): ĉ_t = c_t + Lap(1/ε).

    Notes
    -----
    Privacy: ε-DP (event-level): one tuple changes one c_t by 1, and each step is released
    with sensitivity 1 (parallel composition over steps).

    References
    ----------
    Chen 2018 §5.6.1 ("LM", Fig. 5.3).
    """
    counts = _check_stream(counts)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    est = counts + laplace(1.0 / epsilon, counts.size, rng=rng)
    return StreamRelease(
        _readonly(est), "LM", epsilon, _budget_parts(epsilon, perturber=epsilon),
        f"{eps_text(epsilon)}-DP (event-level), Laplace mechanism per step",
    )


def backward_smoothing(
    counts, epsilon: float, k: int, rng: np.random.Generator | None = None
) -> StreamRelease:
    """BS_k: the trailing mean of the last k+1 Laplace outputs, ĉ_t = mean(ĉ^LM_{t−k..t}).

    At the start (t < k) the mean is over the outputs available. Real time.

    Notes
    -----
    Privacy: ε-DP (event-level), post-processing of :func:`laplace_stream`.

    References
    ----------
    Chen 2018 §5.6.1 ("BS_k", Fig. 5.3); the text's formula is read as described in the module
    docstring.
    """
    counts = _check_stream(counts)
    epsilon = check_epsilon(epsilon)
    k = check_positive_int(k, "k", minimum=0, maximum=MAX_WINDOW)
    rng = check_rng(rng)
    lm = counts + laplace(1.0 / epsilon, counts.size, rng=rng)
    sums = _trailing_sums(lm, k + 1)
    est = sums / np.minimum(np.arange(counts.size) + 1, k + 1)
    return StreamRelease(
        _readonly(est), f"BS_{k}", epsilon, _budget_parts(epsilon, perturber=epsilon),
        f"{eps_text(epsilon)}-DP (event-level), post-processed Laplace mechanism",
    )


def _dyadic_nodes(lo: int, hi: int) -> list[tuple[int, int]]:
    """Greedy decomposition of [lo, hi) into aligned dyadic intervals as (level, index)."""
    out = []
    while lo < hi:
        j = 0
        while lo % (1 << (j + 1)) == 0 and lo + (1 << (j + 1)) <= hi:
            j += 1
        out.append((j, lo >> j))
        lo += 1 << j
    return out


def binary_tree_window_sums(
    counts, epsilon: float, w: int, rng: np.random.Generator | None = None
) -> WindowSums:
    """SW_w: sliding-window sums of fixed width w from noisy binary trees over blocks of w steps.

    The stream is cut into consecutive blocks of w steps; over each block sits a binary tree of
    dyadic intervals (levels 0..L, L = ceil(log2 w)), every node released with Lap((L+1)/ε)
    as soon as its interval has ended. The window ending at t is the suffix of the previous
    block plus the prefix of the current one, each a union of at most ~L released nodes
    (before the first block the stream is 0, known). Every step costs O(log w) node updates.

    Notes
    -----
    Privacy: ε-DP (event-level): one count lies in exactly one node per level of one tree, so
    the node vector has L1 sensitivity L+1, released with Lap((L+1)/ε).

    References
    ----------
    Chen 2018 §5.6.2 ("SW_w", Fig. 5.5, 5.7; ref. [8]): "binary trees on every consecutive window of
    w counts ... any sliding window query with size w can be derived as the sum of the prefix
    and suffix of any two neighboring binary trees". The dyadic (binary-tree) counter is that
    of Chan, Shi, Song 2011 and Dwork, Naor, Pitassi, Rothblum 2010, applied per block.
    """
    counts = _check_stream(counts)
    epsilon = check_epsilon(epsilon)
    w = _check_window(w, counts.size)
    rng = check_rng(rng)
    n = counts.size
    n_blocks = -(-n // w)
    levels = max(int(math.ceil(math.log2(w))), 0)
    size = 1 << levels
    padded = np.zeros((n_blocks, size))
    block_view = np.zeros(n_blocks * w)
    block_view[:n] = counts
    padded[:, :w] = block_view.reshape(n_blocks, w)
    scale = (levels + 1) / epsilon
    noisy_levels = []
    for j in range(levels + 1):
        node_sums = padded.reshape(n_blocks, size >> j, 1 << j).sum(axis=2)
        noisy_levels.append(node_sums + laplace(scale, node_sums.shape, rng=rng))
    sums = np.empty(n_blocks * w)
    for m in range(1, w + 1):  # position within the block: prefix of length m
        prefix = np.zeros(n_blocks)
        for j, i in _dyadic_nodes(0, m):
            prefix += noisy_levels[j][:, i]
        suffix = np.zeros(n_blocks)
        for j, i in _dyadic_nodes(m, w):
            suffix[1:] += noisy_levels[j][:-1, i]
        sums[m - 1 :: w] = prefix + suffix
    return WindowSums(
        _readonly(sums[:n]), w, f"SW_{w}", epsilon, _budget_parts(epsilon, tree=epsilon),
        f"{eps_text(epsilon)}-DP (event-level), dyadic tree nodes with Lap({levels + 1}/eps)",
    )


# ---------------------------------------------------------------------------------------------
# Hierarchies of aggregated states (Chen 2018 §5.5): HS-LM, HS-PGS, PHS-PGS
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A tree of aggregations (Chen 2018 Def. 6): leaves are the states, every other node the union
    of its children. Node ids are 0..m−1; ``parents[root] == -1``.

    Attributes
    ----------
    parents : numpy.ndarray of int
    levels : numpy.ndarray of int
        ``level(agg)``: 1 at the root, parent's level + 1 below (Chen 2018 §5.2.2).
    height : int
        h, the number of levels (8 for a binary tree over 128 states, Chen 2018 §5.6.4).
    leaves : numpy.ndarray of int
        The states, in increasing node id: row i of ``leaf_counts`` is state ``leaves[i]``.
    order : numpy.ndarray of int
        Nodes top-down (breadth first from the root).
    """

    parents: np.ndarray
    levels: np.ndarray
    height: int
    leaves: np.ndarray
    order: np.ndarray
    children: tuple[tuple[int, ...], ...] = field(repr=False)

    @classmethod
    def from_parents(cls, parents: Sequence[int]) -> Hierarchy:
        """Build and validate a tree from a parent array (one root, no cycles)."""
        try:
            arr = np.asarray(parents)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"parents must be a 1-D array of node ids ({exc})") from None
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"parents must be a non-empty 1-D array, got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"parents must hold integer node ids (-1 for the root), got dtype {arr.dtype}")
        m = arr.size
        arr = arr.astype(np.int64)
        if np.any((arr < -1) | (arr >= m)):
            raise ValueError(f"parents must be node ids in [0, {m}) or -1 for the root")
        roots = np.flatnonzero(arr == -1)
        if roots.size != 1:
            raise ValueError(f"a hierarchy must have exactly one root (parent -1), found {roots.size}")
        if np.any(arr == np.arange(m)):
            raise ValueError("a node cannot be its own parent")
        children: list[list[int]] = [[] for _ in range(m)]
        for node, parent in enumerate(arr.tolist()):
            if parent >= 0:
                children[parent].append(node)
        levels = np.zeros(m, dtype=np.int64)
        order = [int(roots[0])]
        levels[roots[0]] = 1
        for node in order:  # breadth first; grows while iterating
            for child in children[node]:
                levels[child] = levels[node] + 1
                order.append(child)
        if len(order) != m:
            raise ValueError(
                f"parents do not form a tree: {m - len(order)} node(s) are not reachable from the "
                f"root (they lie on a cycle)"
            )
        leaves = np.array([i for i in range(m) if not children[i]], dtype=np.int64)
        return cls(
            _readonly(arr), _readonly(levels), int(levels.max()), _readonly(leaves),
            _readonly(np.array(order, dtype=np.int64)), tuple(tuple(c) for c in children),
        )

    @classmethod
    def binary(cls, n_leaves: int) -> Hierarchy:
        """A complete binary tree over ``n_leaves`` (a power of 2) states, in heap order.

        ``Hierarchy.binary(128)`` is Chen 2018 §5.6.4's AGG: 255 nodes, height log2(128) + 1 = 8.
        """
        n_leaves = check_positive_int(n_leaves, "n_leaves")
        if n_leaves & (n_leaves - 1):
            raise ValueError(f"n_leaves must be a power of 2, got {n_leaves}")
        m = 2 * n_leaves - 1
        return cls.from_parents(np.r_[-1, (np.arange(1, m) - 1) // 2])

    @property
    def n_nodes(self) -> int:
        return int(self.parents.size)

    def aggregate(self, leaf_counts) -> np.ndarray:
        """Counts of every node (shape (m, T)) from the states' counts (shape (n_leaves, T))."""
        leaf_counts = check_counts(leaf_counts, "leaf_counts", ndim=2)
        if leaf_counts.shape[0] != self.leaves.size:
            raise ValueError(
                f"leaf_counts must have one row per state (leaf): expected {self.leaves.size}, "
                f"got {leaf_counts.shape[0]}"
            )
        out = np.zeros((self.n_nodes, leaf_counts.shape[1]), dtype=np.int64)
        out[self.leaves] = leaf_counts.astype(np.int64)
        for node in self.order[:0:-1]:  # bottom-up, root last
            out[self.parents[node]] += out[node]
        return out


def _check_hierarchy(hierarchy) -> Hierarchy:
    if isinstance(hierarchy, Hierarchy):
        return hierarchy
    if isinstance(hierarchy, str) or not isinstance(hierarchy, Sequence | np.ndarray):
        raise ValueError(f"hierarchy must be a Hierarchy or a parent array, got "
                         f"{type(hierarchy).__name__}")
    try:
        return Hierarchy.from_parents(hierarchy)
    except ValueError as exc:
        raise ValueError(f"hierarchy: {exc}") from None


@dataclass(frozen=True, eq=False)
class HierarchyResult:
    """Private streams for every node of a hierarchy and what they cost.

    Attributes
    ----------
    estimates : numpy.ndarray, shape (m, T)
        ĉ_t(agg) for every node (row = node id).
    method : str
        ``"HS-LM"``, ``"HS-PGS"`` or ``"PHS-PGS"`` (with ", pruned (released, β = ...)" after
        :func:`prune_released`).
    hierarchy : Hierarchy
    pruned : numpy.ndarray of bool, shape (m, T), or None
        Which node-steps were pruned (released as 0): PHS-PGS, and any release pruned by
        :func:`prune_released`; None otherwise.
    epsilon : float
    epsilon_parts : mapping
        What each step spent along any root-to-leaf path at any time step.
    guarantee, neighbours : str
    """

    estimates: np.ndarray
    method: str
    hierarchy: Hierarchy
    pruned: np.ndarray | None
    epsilon: float
    epsilon_parts: Mapping[str, float]
    guarantee: str = ""
    neighbours: str = NEIGHBOURS


def _hierarchy_inputs(leaf_counts, hierarchy) -> tuple[Hierarchy, np.ndarray]:
    h = _check_hierarchy(hierarchy)
    return h, h.aggregate(leaf_counts)


def hs_laplace(
    leaf_counts, hierarchy, epsilon: float, rng: np.random.Generator | None = None
) -> HierarchyResult:
    """HS-LM: the Laplace mechanism on every aggregated stream with ε/h.

    Parameters
    ----------
    leaf_counts : array_like, shape (n_states, T)
        The states' streams, rows in the order of ``hierarchy.leaves``.
    hierarchy : Hierarchy or parent array
    epsilon : float

    Notes
    -----
    Privacy: ε-DP (event-level): one tuple changes one count at one step in one node per
    level; parallel composition within a level, sequential over the h levels.

    References
    ----------
    Chen 2018 §5.6.4 ("HS-LM", Fig. 5.8).
    """
    h, counts = _hierarchy_inputs(leaf_counts, hierarchy)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    est = counts + laplace(h.height / epsilon, counts.shape, rng=rng)
    return HierarchyResult(
        _readonly(est), "HS-LM", h, None, epsilon, _budget_parts(epsilon, perturber=epsilon),
        f"{eps_text(epsilon)}-DP (event-level): Lap(h/eps) per node, h = {h.height} levels",
    )


def _pegasus_rows(
    counts: np.ndarray,
    active: np.ndarray | None,
    perturber_eps: np.ndarray | float,
    epsilon_g: float,
    theta: float,
    smoother: str,
    rng: np.random.Generator,
    threshold_share: float,
) -> np.ndarray:
    """PeGaSus on every row of ``counts``; steps where ``active`` is False are skipped (the
    Grouper and the smoother never see them, Chen 2018 §5.5.2) and released as 0."""
    m, T = counts.shape
    est = np.zeros((m, T))
    grid = _grouper_grid(epsilon_g, threshold_share)  # the Grouper's comparisons, if safe
    theta = _grid_theta(theta, grid)
    for node in range(m):
        report(node, m)  # nodes of the public hierarchy
        idx = np.arange(T) if active is None else np.flatnonzero(active[node])
        if idx.size == 0:
            continue
        eps_p = perturber_eps if np.ndim(perturber_eps) == 0 else perturber_eps[node, idx]
        scales = np.empty((idx.size, 3))
        scales[:, 0] = 1.0 / np.asarray(eps_p, dtype=float)
        scales[:, 1:] = _grouper_scales(epsilon_g, threshold_share)
        noise = _noise_rows(scales, scales.shape, rng, grid)
        tau2 = 2.0 * float(np.mean(scales[:, 0] ** 2))
        out = _pegasus_core(counts[node, idx], noise, theta, tau2,
                            median_only=smoother in ("median", "adaptive"))
        if smoother == "adaptive":
            est[node, idx] = _adaptive_chunk(
                out["noisy"], np.arange(idx.size) - out["start"] + 1, out["median"],
                2.0 * scales[:, 0] ** 2, None, ADAPTIVE_SMOOTHER, last=True,
            )[0]
        else:
            est[node, idx] = out[smoother]
    return est


def _pegasus_core(counts: np.ndarray, noise: np.ndarray, theta: float, tau2: float,
                  median_only: bool) -> dict[str, np.ndarray]:
    """One stream from the start, by the vectorised core or (short streams) the scalar loop."""
    if counts.size >= _VECTOR_MIN:
        return _vector_core(_GroupState(), counts, noise, theta, tau2, median_only)
    outs: list[list] = [[] for _ in range(6)]
    _run_core(_GroupState(), counts.tolist(), noise[:, 0].tolist(), noise[:, 1].tolist(),
              noise[:, 2].tolist(), theta, tau2, *outs, median_only=median_only)
    names = ("noisy", "median", "average", "james_stein", "gid", "start")
    return {k: np.asarray(v) for k, v in zip(names, outs, strict=True) if v}


def hs_pegasus(
    leaf_counts,
    hierarchy,
    epsilon: float,
    smoother: str | None = None,
    rng: np.random.Generator | None = None,
    *,
    theta: float | None = None,
    threshold_share: float | None = None,
    defaults: str = "new",
    beta: float | None = None,
) -> HierarchyResult:
    """HS-PGS: PeGaSus(C(agg), ε/h) on every aggregated stream of the hierarchy.

    Parameters
    ----------
    leaf_counts : array_like, shape (n_states, T)
        Rows in the order of ``hierarchy.leaves``.
    hierarchy : Hierarchy or parent array
    epsilon : float
    smoother : str, optional
        Default from ``defaults`` ("adaptive"; "median" for ``"text"``).
    theta : float, optional
        Default 160/ε_g with ε_g = 0.05ε/h (``defaults="text"``: 5/ε_g with ε_g = 0.2ε/h; each
        node runs PeGaSus with ε/h).
    threshold_share : float, optional
        ε_1/ε_g of each node's Grouper (see :func:`pegasus`).
    defaults : {"new", "text"}
        Which set of :data:`DEFAULTS` fills the parameters not given.
    beta : float, optional
        If given, prune from the estimates released at the previous step
        (:func:`prune_released`, post-processing): a node is released as 0 at t when its
        parent's estimate at t − 1 was below ``beta`` (or the parent is pruned at t).

    Notes
    -----
    Privacy: ε-DP (event-level neighbours), Chen 2018 Thm 19: PeGaSus is ε/h-DP per stream
    (Thm 15), parallel within a level, sequential over the h levels. Pruning with ``beta``
    is post-processing: no budget.

    References
    ----------
    Chen 2018 §5.5.1, Thm 19; Fig. 5.8; §5.5.2 (why pruning small aggregates helps).
    """
    h, counts = _hierarchy_inputs(leaf_counts, hierarchy)
    defaults, smoother, share = _resolve_options(defaults, smoother, threshold_share)
    epsilon = check_epsilon(epsilon)
    _, eps_p, eps_g, theta = _split_pegasus_budget(epsilon / h.height, None, None, theta, defaults)
    if beta is not None:
        beta = _check_real(beta, "beta")
    rng = check_rng(rng)
    est = _pegasus_rows(counts, None, eps_p, eps_g, theta, smoother, rng, share)
    result = HierarchyResult(
        _readonly(est), "HS-PGS", h, None, epsilon,
        _budget_parts(epsilon, perturber=eps_p * h.height, grouper=eps_g * h.height),
        f"{eps_text(epsilon)}-DP (event-level): PeGaSus with eps/h per node, h = {h.height} (Thm 19)",
    )
    return result if beta is None else prune_released(result, beta)


def prune_released(result: HierarchyResult, beta: float) -> HierarchyResult:
    """Prune a hierarchical release from its own previous step: post-processing, no budget.

    Counts cannot grow down the hierarchy (Chen 2018 §5.5.2: ``c_t(agg_1) <= c_t(agg_2)`` when
    ``agg_1 ⊂ agg_2``), so the descendants of a small aggregate are small, and 0 estimates
    them better than noise does. Top-down at every step t: a node is pruned (released as 0)
    when its parent is pruned at t or the parent's estimate released at t − 1 was below
    ``beta``. The root and step 0 are never pruned. Real time: step t uses the release up to
    t − 1 and the pruning at t only.

    Parameters
    ----------
    result : HierarchyResult
        Any hierarchical release (:func:`hs_pegasus`, :func:`hs_laplace`, or :func:`phs_pegasus`,
        whose pruned node-steps stay pruned).
    beta : float
        The threshold on the parent's previous estimate (public). On a sparse hierarchy a
        modest β brings HS-PGS's error down to about PHS-PGS's, at no privacy cost (the
        figures are on the streams family page of the documentation). A larger β prunes
        more, in the limit everything but the root.

    Notes
    -----
    Privacy: a function of the released estimates only (post-processing): the release keeps
    its ε and its ``epsilon_parts``. Unlike PHS-PGS (:func:`phs_pegasus`, Chen 2018 Alg. 18)
    it saves no budget for the nodes it prunes, and spends none on the decision.

    References
    ----------
    Chen 2018 §5.5.2 (the pruning idea, Alg. 18 lines 1-17 with a free test in place of the
    noisy one).
    """
    if not isinstance(result, HierarchyResult):
        raise ValueError(f"result must be a HierarchyResult (from hs_pegasus, hs_laplace or "
                         f"phs_pegasus), got {type(result).__name__}")
    beta = _check_real(beta, "beta")
    tree, est = result.hierarchy, result.estimates
    pruned = np.zeros(est.shape, dtype=bool) if result.pruned is None else result.pruned.copy()
    small = np.zeros(est.shape, dtype=bool)
    small[:, 1:] = est[:, :-1] < beta  # the estimate released at t - 1 was below beta
    for node in tree.order[1:]:  # top-down: a parent is decided before its children
        parent = tree.parents[node]
        pruned[node] |= pruned[parent] | small[parent]
    return HierarchyResult(
        _readonly(np.where(pruned, 0.0, est)), f"{result.method}, pruned (released, β = {beta:g})",
        tree, _readonly(pruned), result.epsilon, result.epsilon_parts,
        f"{result.guarantee}; pruned from the estimates released at t-1 (post-processing)",
        result.neighbours,
    )


def phs_pegasus(
    leaf_counts,
    hierarchy,
    epsilon: float,
    smoother: str | None = None,
    rng: np.random.Generator | None = None,
    *,
    epsilon_pr: float | None = None,
    beta: float | None = None,
    theta: float | None = None,
    threshold_share: float | None = None,
    defaults: str = "new",
) -> HierarchyResult:
    """PHS-PGS (Chen 2018 Alg. 18): HS-PGS that prunes small aggregates top-down at every step and
    gives the budget its pruned descendants would have spent to the node that pruned them.

    At each step t, PRUNE visits the levels top-down: a node whose parent was pruned is pruned;
    otherwise if ``c_t(agg) + Lap(h/ε_pr) < β`` its children are pruned and it gets
    ``ε_agg = h − level + 1`` shares, else ``ε_agg = 1`` (Alg. 18 lines 3-15). A pruned node
    releases 0; an unpruned one runs PeGaSus with Perturber budget
    ``ε_agg(ε_p + ε_g)/h − ε_g/h`` and Grouper budget ``ε_g/h`` (lines 20-25); its Grouper and
    smoother skip the steps at which it was pruned (§5.5.2, last paragraph).

    Parameters
    ----------
    leaf_counts : array_like, shape (n_states, T)
    hierarchy : Hierarchy or parent array
    epsilon : float
        Total ε = ε_pr + ε_p + ε_g.
    epsilon_pr : float, optional
        Pruning budget; default 0.1ε (the text gives no value; 0.05ε-0.2ε perform alike on
        Multi_5-shaped data).
        The rest is split ε_p : ε_g as in :func:`pegasus` (0.95 : 0.05; ``defaults="text"``:
        0.8 : 0.2).
    beta : float, optional
        Pruning threshold β; default ``2h/ε_pr`` (twice the pruning noise scale; the text
        gives no value). A larger β prunes more: in the limit every release is 0.
    theta : float, optional
        Grouper threshold; default 160/(ε_g/h) (``defaults="text"``: 5/(ε_g/h)).
    smoother, threshold_share, defaults
        As in :func:`hs_pegasus`.

    Notes
    -----
    Privacy: ε-DP (event-level neighbours). One tuple changes one state's count at one step, i.e. one
    node per level (a root-to-leaf path). PRUNE: Laplace with ε_pr/h per level, parallel within a
    level, sequential over h levels: ε_pr (not the text's SVT argument, see the module docstring).
    A node whose parent was pruned is pruned whatever its own test says: its test is not drawn
    (the output has the distribution of Alg. 18 with every test drawn, and the cost is the same
    ε_pr, each drawn test being one of the ones the argument counts).
    Release: along the path, if the node at level i has its children pruned, the levels above
    spend (ε_p+ε_g)/h each and it spends (h−i+1)(ε_p+ε_g)/h, the levels below nothing: ε_p + ε_g
    in total (Chen 2018 Thm 21). Steps are disjoint (parallel composition; the Grouper's SVT per
    group as in Thm 17).

    References
    ----------
    Chen 2018 §5.5.2, Alg. 18, Thm 20-21; Fig. 5.8.
    """
    h, counts = _hierarchy_inputs(leaf_counts, hierarchy)
    defaults, smoother, share = _resolve_options(defaults, smoother, threshold_share)
    epsilon = check_epsilon(epsilon)
    if epsilon_pr is None:
        epsilon_pr = 0.1 * epsilon
    epsilon_pr = check_epsilon(epsilon_pr, "epsilon_pr")
    if not epsilon_pr < epsilon:
        raise ValueError(f"epsilon_pr must be < epsilon = {epsilon}, got {epsilon_pr}")
    height = h.height
    if beta is None:
        beta = 2.0 * height / epsilon_pr
    beta = _check_real(beta, "beta")
    rest = epsilon - epsilon_pr
    _, eps_p, eps_g, theta_node = _split_pegasus_budget(rest / height, None, None, theta, defaults)
    rng = check_rng(rng)

    m, T = counts.shape
    # PRUNE (Alg. 18 lines 1-17), vectorised over nodes and time, one level after another. A
    # node whose parent was pruned is pruned whatever its own test says, so its test is not
    # run: noise is drawn only for the node-steps tested (on sparse hierarchies a few percent
    # of them; the released output has the same distribution as with every test drawn).
    pruned = np.zeros((m, T), dtype=bool)
    below = np.zeros((m, T), dtype=bool)
    for level in range(1, height + 1):
        nodes = np.flatnonzero(h.levels == level)
        if level > 1:
            parents = h.parents[nodes]
            pruned[nodes] = pruned[parents] | below[parents]
        tested = ~pruned[nodes]
        n_tested = int(np.count_nonzero(tested))
        if n_tested:
            noisy = counts[nodes][tested] + laplace(height / epsilon_pr, n_tested, rng=rng)
            level_below = np.zeros(tested.shape, dtype=bool)
            level_below[tested] = noisy < beta
            below[nodes] = level_below
    shares = np.where(below, (height - h.levels + 1.0)[:, None], 1.0)
    shares[pruned] = 0.0
    active = ~pruned
    # Alg. 18 line 23: eps_agg (eps_p + eps_g)/h - eps_g/h, with eps_p, eps_g the totals.
    perturber_eps = shares * (eps_p + eps_g) - eps_g
    est = _pegasus_rows(counts, active, perturber_eps, eps_g, theta_node, smoother, rng, share)
    return HierarchyResult(
        _readonly(est), "PHS-PGS", h, _readonly(pruned), epsilon,
        _budget_parts(epsilon, prune=epsilon_pr, perturber=eps_p * height, grouper=eps_g * height),
        f"{eps_text(epsilon)}-DP (event-level): PRUNE {eps_text(epsilon_pr)} + PeGaSus {eps_text(rest)} (Chen 2018 Thm 21)",
    )
