"""DAWA as published: NOT differentially private, kept only to reproduce Chen 2018, Table 4.4.

``"dawa_published_not_private"`` uses the partition calibration of Li, Hay, Miklau & Wang 2014
(§3.2); :func:`partition_singletons_log_ratio` computes the exact privacy loss of one of its
outputs (and of the private ``"dawa_dyadic"``'s, for comparison). Kept apart from
:mod:`~dpwidgets.engine.histograms.dawa` so that the non-private code is never mistaken for
the private one.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import is_floating_point_safe, laplace
from ..validation import check_counts, check_epsilon, check_positive
from .dawa import _dawa_measure
from .interface import _register, _split

__all__ = ["partition_singletons_log_ratio"]


# ---------------------------------------------------------------------------------------------
# DAWA as published: NOT differentially private (kept to reproduce Chen 2018, Table 4.4)
# ---------------------------------------------------------------------------------------------

#: The noise scale, times epsilon1, that the published DAWA adds to every interval's cost.
PUBLISHED_DAWA_COST_SCALE = 2.0
#: The largest domain :func:`published_l1_partition` accepts (its cost table is O(n log n)
#: intervals, each O(length) to cost: about 4n^2 operations).
MAX_PUBLISHED_DAWA_CELLS = 4096


def _window_deviations(x: np.ndarray, length: int) -> np.ndarray:
    """``dev`` of every window ``x[i:i+length]``: sum of |x_j - mean| (O(n·length), chunked)."""
    from numpy.lib.stride_tricks import sliding_window_view

    windows = sliding_window_view(x, length)
    out = np.empty(windows.shape[0])
    step = max(1, 2**20 // length)
    for i in range(0, windows.shape[0], step):
        w = windows[i : i + step]
        out[i : i + step] = np.abs(w - w.mean(axis=1, keepdims=True)).sum(axis=1)
    return out


def published_l1_partition(
    x: np.ndarray, epsilon: float, bucket_penalty: float, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """DAWA stage 1 as Li, Hay, Miklau & Wang 2014 publish it (§3.2): NOT epsilon-DP.

    Candidates: every interval whose length is a power of 2 (any start). Each interval's cost
    ``dev(B) + bucket_penalty`` gets its own ``Lap(2/epsilon)``, and the least-cost partition
    is found by dynamic programming over the cells. The paper's argument bounds the change of
    one interval's cost by 2 and stops there; but one record changes the cost of *every*
    interval that contains its cell (about 2n of them), so the noisy cost vector has L1
    sensitivity of order n, not 2. See :func:`partition_singletons_log_ratio` for the exact
    loss of one output.
    """
    n = x.size
    scale = PUBLISHED_DAWA_COST_SCALE / epsilon
    lengths = [1 << k for k in range(1, max(1, math.floor(math.log2(n))) + 1) if (1 << k) <= n]
    noisy = {}
    for length in lengths:
        dev = _window_deviations(x, length)
        noisy[length] = np.maximum(dev + laplace(scale, dev.size, rng=rng), 0.0) + bucket_penalty
    best = np.zeros(n + 1)
    back = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):  # inherently sequential: opt(j) = min_L opt(j - L) + cost
        b, arg = best[j - 1] + bucket_penalty, 1
        for length in lengths:
            if length > j:
                break
            c = best[j - length] + noisy[length][j - length]
            if c < b:
                b, arg = c, length
        best[j], back[j] = b, arg
    starts, j = [], n
    while j > 0:
        j -= back[j]
        starts.append(j)
    return np.asarray(starts[::-1], dtype=np.int64), scale


@_register(
    "dawa_published_not_private",
    title="DAWA as published (NOT differentially private; teaching and reproduction only)",
    source=(
        "Li, Hay, Miklau, Wang, 'A data- and workload-aware algorithm for range queries under "
        "differential privacy', PVLDB 7(5), 2014 (the calibration of its §3.2)"
    ),
    dims=(1,),
    workload_aware=True,
    private=False,
    guarantee=(
        "NOT epsilon-DP for add/remove-one neighbours (nor replace-one): the partition step "
        "adds Lap(2/epsilon1) to each interval's cost, but "
        "one record changes the cost of every interval containing its cell; the output 'all "
        "singletons' has log-ratio far above epsilon1 (see partition_singletons_log_ratio)"
    ),
    simplification=(
        "Stage 1 as published (every power-of-2-length interval, Lap(2/epsilon1) per cost), "
        "which is what is wrong with it; stage 2 as in dawa_dyadic (least squares on a "
        "hierarchy chosen for the workload) instead of GreedyH. 1-D only."
    ),
)
def _dawa_published(x: np.ndarray, epsilon: float, rng: np.random.Generator, workload, *,
                    rho: float = 0.25):
    """DAWA with the published stage-1 calibration: NOT epsilon-DP (a counterexample).

    Why it is not private. The partition step releases (a function of) noisy costs
    ``dev(B) + Lap(2/epsilon1)`` of every interval B whose length is a power of 2; one record
    added to cell i changes ``dev(B)`` by up to ``2(1 - 1/|B|)`` for *every* B containing i.
    The output "every cell its own bucket" happens exactly when every noisy cost exceeds
    ``(|B| - 1)`` penalties (the product over B of independent Laplace tails), so its
    log-probability ratio between a histogram of zeros and the same with one record in a
    middle cell is computed exactly by :func:`partition_singletons_log_ratio`: about 2·ε1
    at n = 4 and several thousand ε1 at n = 4096, against ≤ ε1 for ``"dawa_dyadic"``, whose
    noise is calibrated to the L1 sensitivity of the whole cost vector. Chen 2018, Tables 4.2
    and 4.4 (DAWA's regret 1.00) rest on this calibration; it is registered only so that they
    can be reproduced, is refused in analyst mode (``Publisher.private`` is False) and is
    marked NOT private wherever its output is shown; inside
    :func:`.mechanisms.floating_point_safe` (the analyst release path) it refuses to run at all.

    References: Li, Hay, Miklau, Wang, PVLDB 7(5) 2014, §3.2; Chen 2018 §4.3.3, Table 4.4.
    """
    if is_floating_point_safe():
        # Inside floating_point_safe() the run is an analyst release on confidential data. The
        # door refuses this publisher there wherever a mechanism checks Publisher.private; this
        # refusal covers any mechanism that does not (its release then fails, never leaks).
        raise ValueError("'dawa_published_not_private' is not differentially private: it does "
                         "not run on confidential data")
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    if x.size > MAX_PUBLISHED_DAWA_CELLS:
        raise ValueError(f"counts must have at most {MAX_PUBLISHED_DAWA_CELLS} cells for "
                         f"'dawa_published_not_private', got {x.size}")
    eps1, eps2 = _split(epsilon, rho)
    start, scale = published_l1_partition(x, eps1, 1.0 / eps2, rng)
    return _dawa_measure(x, start, scale, eps1, eps2, rng, workload, x.shape, None)


def _log_laplace_tail(t: np.ndarray, scale: float) -> np.ndarray:
    """``log P(L > t)`` for ``L ~ Lap(scale)``, stable in both tails."""
    t = np.asarray(t, dtype=float) / scale
    return np.where(t >= 0, math.log(0.5) - np.maximum(t, 0), np.log1p(-0.5 * np.exp(np.minimum(t, 0))))


def partition_singletons_log_ratio(
    counts, neighbour, epsilon1: float, *, method: str = "dawa_published_not_private",
    bucket_penalty: float = 1.0,
) -> float:
    """Exact ``log P(all singletons | counts) - log P(all singletons | neighbour)`` of DAWA stage 1.

    "All singletons" (every cell its own bucket) is the partition chosen exactly when every
    candidate bucket B's noisy cost exceeds the ``|B|`` penalties of its cells as singletons,
    i.e. ``Lap_B > (|B| - 1)·bucket_penalty - dev(B)`` for every B: a product of independent
    Laplace tails, so its probability, and the log-ratio between two histograms, is exact. An
    ``epsilon1``-DP partition step keeps ``|log-ratio| <= epsilon1`` for neighbours (one cell
    changed by 1); ``method="dawa_published_not_private"`` (every power-of-2-length interval,
    ``Lap(2/epsilon1)`` each) does not; ``method="dawa_dyadic"`` (aligned dyadic buckets of the
    zero-padded domain, noise scaled to the whole cost vector's sensitivity) does.

    Parameters
    ----------
    counts, neighbour : array_like, 1-D
        Two histograms of the same length (they need not be neighbours; then the bound is
        ``epsilon1`` times their L1 distance).
    epsilon1 : float
        The partition step's nominal budget.
    method : {"dawa_published_not_private", "dawa_dyadic"}
    bucket_penalty : float
        The penalty per bucket (``1/epsilon2`` inside the publishers), > 0.

    Returns
    -------
    float
        The log-ratio, in units of nats (divide by ``epsilon1`` for the loss in ε1).

    References
    ----------
    Li, Hay, Miklau & Wang 2014, §3.2 (the calibration examined).

    Examples
    --------
    >>> from dpwidgets.engine.histograms import partition_singletons_log_ratio
    >>> r = partition_singletons_log_ratio([0, 0, 5, 0], [0, 0, 6, 0], 1.0, method="dawa_dyadic")
    >>> bool(abs(r) <= 1.0)  # the dyadic partition step keeps its epsilon1
    True
    """
    a = check_counts(counts, "counts")
    b = check_counts(neighbour, "neighbour")
    if a.shape != b.shape:
        raise ValueError(f"counts and neighbour must have the same length, got {a.size} and {b.size}")
    epsilon1 = check_epsilon(epsilon1, "epsilon1")
    if method not in ("dawa_published_not_private", "dawa_dyadic"):
        raise ValueError("method must be 'dawa_published_not_private' or 'dawa_dyadic', "
                         f"got {method!r}")
    bucket_penalty = check_positive(bucket_penalty, "bucket_penalty")
    if a.size > MAX_PUBLISHED_DAWA_CELLS:
        raise ValueError(f"counts must have at most {MAX_PUBLISHED_DAWA_CELLS} cells, got {a.size}")

    def log_p(x: np.ndarray) -> float:
        if method == "dawa_published_not_private":
            scale = PUBLISHED_DAWA_COST_SCALE / epsilon1
            total = 0.0
            for k in range(1, int(math.floor(math.log2(x.size))) + 1 if x.size > 1 else 1):
                length = 1 << k
                dev = _window_deviations(x, length)
                total += float(np.sum(_log_laplace_tail((length - 1) * bucket_penalty - dev, scale)))
            return total
        depth = max(1, math.ceil(math.log2(x.size)))
        padded = np.zeros(1 << depth)
        padded[: x.size] = x
        scale = sum(2.0 * (1.0 - 2.0**-k) for k in range(1, depth + 1)) / epsilon1
        total = 0.0
        for k in range(1, depth + 1):
            blocks = padded.reshape(-1, 1 << k)
            dev = np.abs(blocks - blocks.mean(axis=1, keepdims=True)).sum(axis=1)
            total += float(np.sum(_log_laplace_tail(((1 << k) - 1) * bucket_penalty - dev, scale)))
        return total

    return log_p(a) - log_p(b)
