"""AHP: noisy counts, threshold, sort, cluster greedily, re-measure the clusters
(Zhang, Chen, Xu, Meng, Xie 2014).
"""

from __future__ import annotations

import numpy as np

from ..mechanisms import laplace
from ..validation import check_nonnegative
from .interface import _register, _split

__all__ = []


# ---------------------------------------------------------------------------------------------
# AHP: noisy counts, threshold, sort, cluster, re-measure the clusters
# ---------------------------------------------------------------------------------------------


def _ahp_err_star(values: np.ndarray, measure_var: float) -> np.ndarray:
    """AHP's look-ahead cost of each sorted value: its smallest possible share of the error of
    a cluster it would start.

    ``err*(j) = min_{l >= j} (v_j - mean(v_j..v_l))^2 + measure_var / (l - j + 1)^2``: the
    value's squared deviation from that cluster's mean plus its share of the cluster's
    measurement error ``measure_var / |C|`` (Zhang et al. 2014, §4.2). The scan over l stops
    as the paper's early termination: the first term never decreases along a sorted sequence,
    so once its increase exceeds what the second term can still lose (down to ``measure_var /
    (n - j)^2``) no later l can do better. A run of equal values (the thresholded zeros) is
    always scanned to its end (the first term stays 0 there), so the scan starts at the end of
    the run; then it is vectorised over j, looping over the extra length.
    """
    n = values.size
    prefix = np.concatenate(([0.0], np.cumsum(values)))
    j = np.arange(n)
    length = np.searchsorted(values, values, side="right") - j  # to the end of the run
    best = measure_var / length**2.0
    floor = measure_var / (n - j) ** 2.0
    last_dev = np.zeros(n)
    last_share = best.copy()
    active = j[j + length < n]  # positions with values after their run
    while active.size:
        size = length[active] + 1
        dev = (values[active] - (prefix[active + size] - prefix[active]) / size) ** 2
        share = measure_var / size**2.0
        go_on = dev - last_dev[active] < last_share[active] - floor[active]
        active, size, dev, share = active[go_on], size[go_on], dev[go_on], share[go_on]
        best[active] = np.minimum(best[active], dev + share)
        length[active], last_dev[active], last_share[active] = size, dev, share
        active = active[active + size < n]
    return best


def _greedy_sorted_clusters(sorted_values: np.ndarray, measure_var: float) -> np.ndarray:
    """Cut a sorted sequence of (thresholded) noisy counts into clusters, as AHP does.

    The error of a cluster C is ``SSE(C) + measure_var / |C|``: the squared deviation of its
    members' values from their mean (the cost of replacing them by one average; values
    thresholded to 0 are exactly 0 and cost nothing among themselves) plus the error of its
    re-measured total spread over |C| cells (``measure_var = 2 / epsilon2^2``). Scanning
    left to right, the next value closes the current cluster and starts a new one when
    adding it would raise the cluster's error by at least :func:`_ahp_err_star`, its
    cheapest share in a cluster of its own (Zhang et al. 2014, §4.2, Algorithm 2's greedy
    clustering). Inherently sequential, O(n) with prefix sums. Returns the cluster label of
    every sorted position.
    """
    n = sorted_values.size
    star = _ahp_err_star(sorted_values, measure_var).tolist()
    p = np.concatenate(([0.0], np.cumsum(sorted_values))).tolist()
    pp = np.concatenate(([0.0], np.cumsum(sorted_values**2))).tolist()
    starts = [0]
    i, last = 0, float(measure_var)
    for j in range(1, n):
        length = j - i + 1
        s = p[j + 1] - p[i]
        now = (pp[j + 1] - pp[i]) - s * s / length + measure_var / length
        if now >= last + star[j]:
            starts.append(j)
            i, last = j, float(measure_var)
        else:
            last = now
    labels = np.zeros(n, dtype=np.int64)
    labels[starts[1:]] = 1
    return np.cumsum(labels)


@_register(
    "ahp_greedy",
    title="AHP with a greedy sorted clustering",
    source=(
        "Zhang, Chen, Xu, Meng, Xie, 'Towards accurate histogram publication under "
        "differential privacy', SDM 2014"
    ),
    dims=(1, 2),
    simplification=(
        "AHP's structure and its greedy clustering of the sorted noisy values (cluster error "
        "SSE + 2/(epsilon2^2 |C|), split when a value's marginal cost reaches its look-ahead "
        "cost err*); the defaults rho = 0.5 and threshold 2/epsilon1 are ours (DPBench's port "
        "of AHP uses rho = 0.85 and 0.35 ln(n)/epsilon1), and the paper's text is not among "
        "the project's sources, so the clustering follows DPBench's port of it."
    ),
)
def _ahp(
    x: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    workload,
    *,
    rho: float = 0.5,
    threshold: float | None = None,
):
    """AHP-style publication: cluster cells by their noisy counts, then re-measure clusters.

    Stage 1 (``rho * epsilon``): every cell + Lap(1/epsilon1); noisy counts below
    ``threshold`` (default ``2/epsilon1``) are set to 0; the values are sorted and cut into
    clusters by :func:`_greedy_sorted_clusters` (AHP's greedy rule: cluster error SSE of the
    thresholded noisy values + ``2/(epsilon2^2 |C|)``). Stage 2 (``(1 - rho) * epsilon``): the
    true total of each cluster (a set of cells, not necessarily contiguous) + Lap(1/epsilon2),
    spread evenly over its cells.

    An earlier version subtracted the expected first-stage noise ``|C| * 2/epsilon1^2`` from
    each cluster's SSE, also for the cells thresholded to exactly 0, which carry no noise: a
    large cluster of zeros then absorbed every nonzero value whose squared distance was below
    ``|C| * 2/epsilon1^2``, and the release collapsed towards Uniform. The paper's error
    (which we now use) has no such correction.

    Privacy: stage 1 is the Laplace mechanism on the histogram (sensitivity 1); the clusters
    are a function of its output; each record lies in one cluster, so stage 2 has
    sensitivity 1. Sequential composition: epsilon-DP under add/remove-one (2*epsilon under
    replace-one).

    References: Zhang, Chen, Xu, Meng, Xie, SDM 2014 (§4.2, the greedy clustering); Hay et
    al. 2016 (DPBench's port, ``dpcomp_core/algorithm/ahp``).
    """
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    eps1, eps2 = _split(epsilon, rho)
    theta = 2.0 / eps1 if threshold is None else check_nonnegative(threshold, "threshold")
    flat = x.ravel()
    noisy = flat + laplace(1.0 / eps1, flat.size, rng=rng)
    noisy = np.where(noisy < theta, 0.0, noisy)
    order = np.argsort(noisy, kind="stable")
    labels_sorted = _greedy_sorted_clusters(noisy[order], 2.0 / eps2**2)
    labels = np.empty(flat.size, dtype=np.int64)
    labels[order] = labels_sorted
    n_clusters = int(labels_sorted[-1]) + 1
    totals = np.bincount(labels, weights=flat, minlength=n_clusters)
    sizes = np.bincount(labels, minlength=n_clusters)
    est = (totals + laplace(1.0 / eps2, n_clusters, rng=rng)) / sizes
    return est[labels].reshape(x.shape), {"cluster": eps1, "measure": eps2}, {
        "n_clusters": n_clusters,
        "threshold": theta,
    }
