"""DAWA on aligned dyadic buckets: a private L1 partition, then a workload-aware measurement
of the buckets (after Li, Hay, Miklau, Wang 2014); the private ``"dawa"`` of
:func:`~dpwidgets.engine.histograms.interface.publish`.

Stage 1 is ``dyadic_l1_partition``; stage 2 (``_dawa_measure``, shared with the published,
non-private variant in :mod:`~dpwidgets.engine.histograms.dawa_published`) picks a hierarchy
over the buckets by its exact expected workload error (``_bucket_hierarchy_design``) and
measures it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..mechanisms import is_floating_point_safe, laplace, laplace_reals
from .hb import hb_branching
from .hilbert import _hilbert_order_cached
from .interface import _register, _split
from .trees import _level_sums, _tree_least_squares
from .workloads import workload_matrix

__all__ = []


# ---------------------------------------------------------------------------------------------
# DAWA: private L1 partition + workload-aware measurement of the buckets
# ---------------------------------------------------------------------------------------------


def dyadic_l1_partition(
    x: np.ndarray, epsilon: float, bucket_penalty: float, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """DAWA stage 1 on aligned dyadic intervals: a private least-cost partition of ``x``.

    The candidate buckets are the aligned dyadic intervals ``[j 2^k, (j+1) 2^k)`` of the
    domain padded with public zeros to ``2^L`` cells. A bucket's cost is its L1 deviation
    from its mean, ``dev(B) = sum_{i in B} |x_i - mean_B(x)|``, plus ``bucket_penalty`` (the
    expected absolute error of the bucket's noisy total, ``1/epsilon2``), as in Li et al.
    2014 §3. Every cost of a bucket of >= 2 cells gets Laplace noise (singletons have
    ``dev = 0`` whatever the data, so they need none), the noisy deviation is floored at 0
    (post-processing), and the least-cost partition is found exactly: dyadic intervals form
    a tree, so the optimum is ``opt(B) = min(cost(B), opt(left) + opt(right))``, one
    vectorised pass per level.

    Privacy: adding or removing one record changes ``dev`` of a bucket of size s by at most
    ``2(1 - 1/s)``; a cell lies in one aligned bucket per level, so the vector of all costs
    has L1 sensitivity ``sum_k 2(1 - 2^-k) < 2L`` and Lap(that/epsilon) per cost is
    epsilon-DP; the partition is post-processing of it. The deviations are real numbers:
    inside ``floating_point_safe()`` the noisy costs are one
    :func:`~dpwidgets.engine.mechanisms.laplace_reals` release (one changed cost per level,
    ``max_changed = L``), exact values on a power-of-two grid, and the merge tests that
    follow are post-processing of them (Mironov 2012).

    Returns the bucket start offsets (ascending, first 0) in the *unpadded* domain and the
    noise scale used.
    """
    n = x.size
    depth = max(1, math.ceil(math.log2(n)))
    size = 1 << depth
    padded = np.zeros(size)
    padded[:n] = x
    sensitivity = sum(2.0 * (1.0 - 2.0**-k) for k in range(1, depth + 1))
    scale = sensitivity / epsilon
    devs = []
    for k in range(1, depth + 1):
        blocks = padded.reshape(-1, 1 << k)
        devs.append(np.abs(blocks - blocks.mean(axis=1, keepdims=True)).sum(axis=1))
    if is_floating_point_safe():
        # One release of every level's costs, on a grid (one changed cost per level).
        noisy_devs = np.split(laplace_reals(np.concatenate(devs), sensitivity, epsilon, rng=rng,
                                            max_changed=depth),
                              np.cumsum([d.size for d in devs])[:-1])
    else:
        noisy_devs = [dev + laplace(scale, dev.shape, rng=rng) for dev in devs]
    best = np.full(size, bucket_penalty)  # level 0: singletons
    merge_flags = []
    for noisy_dev in noisy_devs:
        noisy = np.maximum(noisy_dev, 0.0) + bucket_penalty
        split = best.reshape(-1, 2).sum(axis=1)
        merge = noisy <= split
        best = np.where(merge, noisy, split)
        merge_flags.append(merge)
    # Top-down: a node is a bucket if it merges and no ancestor is a bucket.
    covered = np.zeros(1, dtype=bool)
    starts = []
    for k in range(depth, 0, -1):
        flags = merge_flags[k - 1]
        is_bucket = flags & ~covered
        starts.append(np.flatnonzero(is_bucket) << k)
        covered = np.repeat(covered | flags, 2)
    starts.append(np.flatnonzero(~covered))
    start = np.sort(np.concatenate(starts))
    start = start[start < n]
    return start, scale


def _bucket_hierarchy_design(
    k: int, workload_kind: str, bucket_workload: np.ndarray | None
) -> tuple[int, int, np.ndarray, str]:
    """Choose the level weights of a hierarchy over ``k`` bucket totals for the workload.

    Candidates: all budget on the bucket totals ("identity"), or a b-ary tree (b from
    :func:`hb_branching`) with per-level budget proportional to ``gamma**depth``,
    gamma in {0.5, 1, 2}. Each candidate's expected total squared error on the workload is
    computed exactly (data-independent) from the least-squares estimator's response to every
    unit of noise; the cheapest wins. Above 1024 buckets the uniform tree is taken untested.
    Returns (branching, height, weights over levels 1..h summing to 1, label). For the named
    workloads the same choice is made from a closed form and cached per (k, kind)
    (:func:`_named_workload_design`); an explicit matrix goes through the search.
    """
    if workload_kind in ("identity", "prefix", "range"):
        return _named_workload_design(k, workload_kind)
    return _bucket_hierarchy_search(k, workload_kind, bucket_workload)


def _design_candidates(k: int) -> tuple[int, int, dict[str, np.ndarray]]:
    """(b, h, label -> level weights) of the hierarchies :func:`_bucket_hierarchy_design` tries."""
    b, h = hb_branching(max(k, 2), 1)
    candidates = {"identity": np.eye(h)[-1]}
    for gamma in (0.5, 1.0, 2.0):
        w = gamma ** np.arange(h, dtype=float)
        candidates[f"tree(gamma={gamma:g})"] = w / w.sum()
    return b, h, candidates


@functools.lru_cache(maxsize=4096)
def _named_workload_design(k: int, workload_kind: str) -> tuple[int, int, np.ndarray, str]:
    """:func:`_bucket_hierarchy_design` for a named workload: a function of (k, kind) only.

    No confidential value enters the key: k is the bucket count of the DP partition (released
    in the details as ``n_buckets``) and the kind is public, so the design is cached. The expected errors come from :func:`_tree_workload_error`, a closed form that
    costs O(k h); should two distinct candidates come within a relative 1e-6 of each other,
    the choice is left to the matrix computation of :func:`_bucket_hierarchy_search`, so the
    design is always the one that search picks.
    """
    b, h, candidates = _design_candidates(k)
    if workload_kind == "identity":
        design = (b, h, candidates["identity"], "identity")
    elif k > 1024:
        design = (b, h, candidates["tree(gamma=1)"], "tree(gamma=1)")
    else:
        errors = {label: _tree_workload_error(k, b, h, w, workload_kind)
                  for label, w in candidates.items()}
        best = min(errors, key=errors.__getitem__)  # first of equals, as the search's strict <
        close = [label for label, err in errors.items() if label != best
                 and not np.array_equal(candidates[label], candidates[best])
                 and err <= errors[best] * (1 + 1e-6)]
        if close or not all(math.isfinite(e) for e in errors.values()):
            design = _bucket_hierarchy_search(k, workload_kind, None)
        else:
            design = (b, h, candidates[best], best)
    design[2].setflags(write=False)
    return design


def _tree_workload_error(k: int, b: int, h: int, weights: np.ndarray, workload_kind: str) -> float:
    """Expected total squared error, on all prefix or all range queries over ``k`` leaves, of
    least squares on a b-ary tree whose level l is measured with variance ``2 / weights[l-1]**2``
    (nan when the leaves are not measured; the caller then falls back to the matrix search).

    The covariance of the least-squares leaf estimates is the inverse of the information
    matrix ``F = sum_l B_l / v_l`` (``B_l`` joins leaves under the same level-l node; padding
    leaves are known zeros and drop out). Built bottom-up, each measured node adds a term
    ``a 1 1^T`` to a block-diagonal matrix, so by Sherman-Morrison
    ``F^{-1} = v_h I - sum_A c_A w_A w_A^T`` with ``w_A`` the children's ``F^{-1} 1``
    concatenated, ``c_A = a / (1 + a 1^T w_A)``, ``a = 1 / v_level(A)``. The error is then
    ``trace(W^T W F^{-1})``, and ``w^T W^T W w`` of a vector held on one node's contiguous
    leaves is a few sums of its running totals.
    """
    if not weights[h - 1] > 0:
        return math.nan
    v_leaf = 2.0 / weights[h - 1] ** 2
    i = np.arange(k, dtype=float)
    if workload_kind == "prefix":
        trace = float(np.sum(k - i))  # leaf i is in the prefixes [0, t], t = i .. k-1
    else:
        trace = float(np.sum((i + 1) * (k - i)))  # ranges [a, c] with a <= i <= c
    u = np.full(k, v_leaf)  # F_A^{-1} 1 of the current level's nodes, leaf by leaf
    total = v_leaf * trace
    for level in range(h - 1, 0, -1):
        if not weights[level - 1] > 0:
            continue  # an unmeasured level adds nothing to F
        a = weights[level - 1] ** 2 / 2.0
        size = b ** (h - level)
        node = np.arange(k) // size
        first = np.arange(0, k, size)
        last = np.minimum(first + size, k)  # exclusive
        sums = np.add.reduceat(u, first)
        c = a / (1.0 + a * sums)
        running = np.cumsum(u)
        local = running - np.concatenate(([0.0], running))[first][node]  # totals within node
        after = (k - last).astype(float)  # queries that end past the node hold all of it
        sq = np.add.reduceat(local**2, first) + after * sums**2
        if workload_kind == "prefix":
            quad = sq
        else:
            lin = np.add.reduceat(local, first) + after * sums
            quad = (k + 1) * sq - lin**2
        total -= float(np.sum(c * quad))
        u = u / (1.0 + a * sums)[node]
    return total


def _bucket_hierarchy_search(
    k: int, workload_kind: str, bucket_workload: np.ndarray | None
) -> tuple[int, int, np.ndarray, str]:
    """:func:`_bucket_hierarchy_design` by the least-squares response to every unit of noise
    (a ``(#measurements, k)`` matrix per candidate): any workload, O(k^2) per candidate."""
    b, h, candidates = _design_candidates(k)
    if workload_kind == "identity":
        return b, h, candidates["identity"], "identity"
    if k > 1024:
        return b, h, candidates["tree(gamma=1)"], "tree(gamma=1)"
    best_label, best_err = "identity", math.inf
    for label, weights in candidates.items():
        measured, variances, index = [np.zeros((0, 1))], [np.full(1, np.inf)], []
        for level in range(1, h + 1):
            nodes = b**level
            real = np.arange(nodes) * (b ** (h - level)) < k
            if weights[level - 1] > 0:
                var = np.where(real, 2.0 / weights[level - 1] ** 2, np.inf if level < h else 0.0)
            else:
                var = np.where(real, np.inf, np.inf if level < h else 0.0)
            variances.append(var)
            index.append(np.flatnonzero(np.isfinite(var) & (var > 0)))
        total = sum(i.size for i in index)
        offset = 0
        for level in range(1, h + 1):
            block = np.zeros((total, b**level))
            rows = np.arange(offset, offset + index[level - 1].size)
            block[rows, index[level - 1]] = np.sqrt(variances[level][index[level - 1]])
            measured.append(block)
            offset += index[level - 1].size
        measured[0] = np.zeros((total, 1))
        response = _tree_least_squares(measured, variances, b)[:, :k]  # noise -> bucket totals
        if workload_kind == "prefix":
            err = float(np.sum(np.cumsum(response, axis=1) ** 2))
        elif workload_kind == "range":
            p = np.concatenate([np.zeros((total, 1)), np.cumsum(response, axis=1)], axis=1)
            err = float(np.sum((k + 1) * np.sum(p**2, axis=1) - np.sum(p, axis=1) ** 2))
        else:
            err = float(np.sum((bucket_workload @ response.T) ** 2))
        if err < best_err:
            best_label, best_err = label, err
    return b, h, candidates[best_label], best_label


@_register(
    "dawa_dyadic",
    title="DAWA on aligned dyadic buckets (private L1 partition + workload-aware measurement)",
    source=(
        "Li, Hay, Miklau, Wang, 'A data- and workload-aware algorithm for range queries under "
        "differential privacy', PVLDB 7(5), 2014"
    ),
    dims=(1, 2),
    workload_aware=True,
    aliases=("dawa",),
    simplification=(
        "Stage 1 considers only *aligned* dyadic intervals (the paper: every interval whose "
        "length is a power of 2), and calibrates the cost noise to the L1 sensitivity of the "
        "whole cost vector, about 2*log2(n)/epsilon1, instead of the paper's 2/epsilon1 per "
        "interval (a proof we could check). Stage 2 picks among an identity measurement and "
        "three level-weight profiles of a hierarchy over the buckets by exact expected "
        "workload error, instead of the paper's GreedyH strategy search; inference is least "
        "squares on that tree. 2-D: cells in Hilbert order."
    ),
)
def _dawa(
    x: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    workload,
    *,
    rho: float = 0.25,
):
    """DAWA (two stages, after Li, Hay, Miklau, Wang 2014), on aligned dyadic buckets.

    Stage 1 (``rho * epsilon``): :func:`dyadic_l1_partition` groups contiguous cells of
    similar counts into buckets. Stage 2 (``(1 - rho) * epsilon``): the bucket totals are
    measured with a strategy chosen for the workload (Laplace on every bucket total for the
    identity workload; for prefix/range/explicit workloads the best of a few hierarchies
    over the buckets, see :func:`_bucket_hierarchy_design`), least-squares inference makes
    them consistent, and each bucket's total is spread uniformly over its cells. 2-D
    histograms are flattened along a Hilbert curve (:func:`hilbert_order`), as Chen 2018 §4.2.2
    describes for PriRP, and unflattened at the end; a 2-D workload is then matched by its
    1-D analogue over the Hilbert order (an explicit matrix is permuted accordingly).

    Privacy: sequential composition of an ``rho*epsilon``-DP partition and an
    ``(1-rho)*epsilon``-DP measurement (each record is in one bucket, and in one node per
    measured level of the bucket hierarchy), under add/remove-one neighbours; 2*epsilon-DP
    under replace-one.

    References: Li, Hay, Miklau, Wang, PVLDB 7(5) 2014; Chen 2018 §4.2.2; Hilbert 1891 (the curve).
    """
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    shape = x.shape
    order = _hilbert_order_cached(tuple(shape)) if x.ndim == 2 else None
    flat = x.ravel()[order] if order is not None else x
    eps1, eps2 = _split(epsilon, rho)
    start, scale = dyadic_l1_partition(flat, eps1, 1.0 / eps2, rng)
    return _dawa_measure(flat, start, scale, eps1, eps2, rng, workload, shape, order)


def _dawa_measure(flat, start, scale, eps1, eps2, rng, workload, shape, order):
    """DAWA stage 2: the bucket totals measured for the workload, spread over their cells."""
    n, k = flat.size, start.size
    sizes = np.diff(np.append(start, n))
    totals = np.add.reduceat(flat, start)
    if workload is None or (isinstance(workload, str) and workload == "identity"):
        kind, bucket_workload = "identity", None
    elif isinstance(workload, str):
        kind, bucket_workload = workload, None
    else:
        kind = "matrix"
        matrix = workload_matrix(workload, shape)
        if order is not None:
            matrix = matrix[:, order]
        bucket_workload = np.add.reduceat(matrix, start, axis=1) / sizes
    b, h, weights, label = _bucket_hierarchy_design(k, kind, bucket_workload)
    if label == "identity":
        bucket_est = totals + laplace(1.0 / eps2, k, rng=rng)
    else:
        leaves = np.zeros(b**h)
        leaves[:k] = totals
        truth = _level_sums(leaves, b, h)
        measured, variances = [np.zeros(1)], [np.full(1, np.inf)]
        for level in range(1, h + 1):
            real = np.arange(b**level) * (b ** (h - level)) < k
            eps_l = weights[level - 1] * eps2  # every tree profile has all weights > 0
            noisy = truth[level] + laplace(1.0 / eps_l, truth[level].shape, rng=rng)
            var = np.where(real, 2.0 / eps_l**2, np.inf if level < h else 0.0)
            measured.append(np.where(real, noisy, 0.0))
            variances.append(var)
        bucket_est = _tree_least_squares(measured, variances, b)[:k]
    cells = np.repeat(bucket_est / sizes, sizes)
    if order is not None:
        out = np.empty(n)
        out[order] = cells
        cells = out.reshape(shape)
    details = {
        "n_buckets": int(k),
        "bucket_starts": start,
        "partition_noise_scale": scale,
        "strategy": label,
        "cell_order": "hilbert" if order is not None else "natural",
    }
    return cells, {"partition": eps1, "measure": eps2}, details
