"""The DP dependence of DPCopula: Kendall's tau (Li 2017 Alg. 5), MLE (Alg. 2), the repair.

DP Kendall's tau on a sample of ``t`` rows (``_dp_kendall``; :func:`kendall_sample_size` and
:data:`SAMPLE_RULES` say how many), with :class:`ConcordanceMemo` keeping the per-row
concordance counts of a public table between releases; the DP MLE over random blocks
(``_dp_mle``); ``P = sin(pi tau / 2)`` and :func:`repair_correlation`, which makes the noisy
matrix a positive-definite correlation matrix (post-processing).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy import special, stats

from ..mechanisms import laplace_reals
from ..validation import (
    check_epsilon,
    check_positive,
    check_positive_int,
)

__all__ = ["KENDALL_MIN_ROWS", "SAMPLE_RULES", "CONCORDANCE_MAX_CELLS", "ConcordanceMemo",
           "kendall_sample_size", "repair_correlation"]

#: The text's constant in the Kendall sampling rule n^ >= 50 m (m-1) / eps2 (Li 2017 §3.2.2).
_SAMPLE_CONSTANT = 50.0
#: The fewest rows DP Kendall's tau is computed on by default (when the table has them).
#: The text's rule ``50 m (m-1) / eps2`` alone shrinks the sample as epsilon grows (m = 3,
#: eps = 50: 54 rows), so more budget would give a worse dependence estimate; the floor is a
#: public constant, so ``t`` stays a function of public values and the DP record count.
KENDALL_MIN_ROWS = 20_000
#: Kendall sample-size rules by name (``sample_size=``; an integer is a rule by itself).
SAMPLE_RULES: Mapping[str, str] = MappingProxyType(
    {
        "all": "every row the DP record count allows, t = round(n~)",
        "floor": "max(50 m (m-1) / eps2, KENDALL_MIN_ROWS), at most n~",
        "text": "50 m (m-1) / eps2, at most n~ (Li 2017 §3.2.2)",
    }
)


def kendall_sample_size(m: int, epsilon2: float) -> int:
    """The number of rows DP Kendall's tau is computed on: ``ceil(50 m (m-1) / epsilon2)``.

    Li 2017 §3.2.2: "setting n^ >= 50 m (m-1) / eps2 - 1 is adequate", with noise
    ``Lap(4/(n^+1))``; we compute tau on ``t = n^ + 1`` rows with sensitivity ``4/t``.

    Examples
    --------
    >>> kendall_sample_size(3, 0.5)
    600
    """
    m = check_positive_int(m, "m", minimum=2)
    epsilon2 = check_epsilon(epsilon2, "epsilon2")
    return int(math.ceil(_SAMPLE_CONSTANT * m * (m - 1) / epsilon2))


def _pair_indices(m: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(m, k=1)


def _ties(column: np.ndarray) -> float:
    counts = np.bincount(column)
    return float(np.sum(counts * (counts - 1.0) / 2.0))


def _concordance_sums(codes: np.ndarray) -> np.ndarray:
    """``S_jk = sum_{i<i'} sign(x_ij - x_i'j) sign(x_ik - x_i'k)`` for every pair j < k.

    O(n log n) per pair through :func:`scipy.stats.kendalltau` (tau-b), converted back to the
    raw concordance sum with the tie counts: ``S = tau_b sqrt((n0 - n1)(n0 - n2))``.
    """
    n, m = codes.shape
    rows, cols = _pair_indices(m)
    out = np.zeros(rows.size)
    if n < 2:
        return out
    n0 = n * (n - 1) / 2.0
    ties = [_ties(codes[:, j]) for j in range(m)]
    for p, (j, k) in enumerate(zip(rows.tolist(), cols.tolist(), strict=True)):
        denom = (n0 - ties[j]) * (n0 - ties[k])
        if denom <= 0:  # a constant column: every pair is tied, S = 0
            continue
        tau_b = stats.kendalltau(codes[:, j], codes[:, k]).statistic
        if np.isfinite(tau_b):
            out[p] = float(np.rint(tau_b * math.sqrt(denom)))
    return out


#: Largest 2-D table (cells) of a column pair whose per-row concordance counts a
#: :class:`ConcordanceMemo` computes; a pair with larger domains is counted afresh each time.
CONCORDANCE_MAX_CELLS = 2**22


def _row_concordance(x: np.ndarray, y: np.ndarray, size_x: int, size_y: int) -> np.ndarray:
    """``C_i = sum_{i'} sign(x_i - x_i') sign(y_i - y_i')`` for every row ``i`` of a coded pair.

    From the 2-D cumulative counts of the pair, ``below[a, b] = #{x < a, y < b}``, the four
    quadrants of every row are lookups: concordant ``#{<, <} + #{>, >}`` minus discordant
    ``#{<, >} + #{>, <}`` (ties count 0). O(n + size_x size_y); ``sum_i C_i = 2 S``.
    """
    n = x.size
    dtype = np.int32 if n < 2**31 else np.int64
    cells = np.bincount(x * size_y + y, minlength=size_x * size_y).reshape(size_x, size_y)
    below = np.zeros((size_x + 1, size_y + 1), dtype=dtype)
    np.cumsum(np.cumsum(cells, axis=0, dtype=dtype), axis=1, dtype=dtype, out=below[1:, 1:])
    x1, y1 = x + 1, y + 1
    before_x, upto_x = below[x, size_y], below[x1, size_y]
    before_y, upto_y = below[size_x, y], below[size_x, y1]
    upto_both = below[x1, y1]
    after_both = n - upto_x - upto_y + upto_both
    before_x_after_y = before_x - below[x, y1]
    after_x_before_y = before_y - below[x1, y]
    return (below[x, y] + after_both - before_x_after_y - after_x_before_y).astype(dtype)


class ConcordanceMemo:
    """Per-row concordance counts of public tables, kept between releases.

    Kendall's tau of DPCopula needs ``S_jk`` of a uniform ``t``-subset of the rows (Li 2017
    Alg. 5 step 1): ``O(t log t)`` per pair, every release. With the per-row counts ``C`` of
    the whole table (:func:`_row_concordance`, once per column pair) the sum of any subset is
    exact and cheap: ``S(sample) = S(all) - sum_{i out} C_i + S(rows out)``, the pairs with
    one row out removed once and those with both out added back. The draw of the subset is
    unchanged, so a release with a memo equals one without, bit for bit, for the same
    generator.

    The counts are statistics of the table: give a memo only for public data (a teaching
    table, a public stand-in), never for confidential data. Entries are keyed by a digest of
    each column's codes, so attribute subsets of one table share their pairs; the least
    recently used go first beyond ``max_bytes``.
    """

    def __init__(self, max_bytes: int = 2**26) -> None:
        self.max_bytes = int(max_bytes)
        self._pairs: OrderedDict[tuple, tuple[np.ndarray, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pairs)

    def clear(self) -> None:
        """Forget every table."""
        with self._lock:
            self._pairs.clear()
            self._bytes = 0

    @staticmethod
    def _digest(column: np.ndarray, size: int) -> bytes:
        compact = column.astype(np.min_scalar_type(max(size - 1, 0)), copy=False)
        return hashlib.blake2b(np.ascontiguousarray(compact).tobytes(),
                               digest_size=16, key=str(size).encode()).digest()

    def per_row(self, codes: np.ndarray, sizes: Sequence[int]) -> list | None:
        """``[(C, S), ...]`` per pair ``j < k`` of ``codes`` (n, m): the per-row counts and
        their total ``S(all)``; ``None`` if a pair's 2-D table exceeds
        :data:`CONCORDANCE_MAX_CELLS`."""
        m = codes.shape[1]
        rows, cols = _pair_indices(m)
        if any(sizes[j] * sizes[k] > CONCORDANCE_MAX_CELLS
               for j, k in zip(rows.tolist(), cols.tolist(), strict=True)):
            return None
        digests = [self._digest(codes[:, j], int(sizes[j])) for j in range(m)]
        out = []
        for j, k in zip(rows.tolist(), cols.tolist(), strict=True):
            key = (digests[j], digests[k], codes.shape[0])
            with self._lock:
                hit = self._pairs.get(key)
                if hit is not None:
                    self._pairs.move_to_end(key)
            if hit is None:
                per_row = _row_concordance(codes[:, j], codes[:, k], int(sizes[j]),
                                           int(sizes[k]))
                per_row.setflags(write=False)
                hit = (per_row, int(per_row.sum(dtype=np.int64)) // 2)
                with self._lock:
                    self._pairs[key] = hit
                    self._bytes += per_row.nbytes
                    while self._bytes > self.max_bytes and len(self._pairs) > 1:
                        _, (old, _) = self._pairs.popitem(last=False)
                        self._bytes -= old.nbytes
            out.append(hit)
        return out


def _sample_concordance(
    codes: np.ndarray, rows: np.ndarray | None, sizes: Sequence[int] | None,
    memo: ConcordanceMemo | None,
) -> np.ndarray:
    """``S_jk`` of the sample ``codes[rows]`` (``rows`` sorted; ``None``: every row), through
    ``memo`` where it holds the table and the rows left out are fewer than those kept."""
    if memo is None or sizes is None:
        return _concordance_sums(codes if rows is None else codes[rows])
    n = codes.shape[0]
    left_out = None
    if rows is not None:
        outside = np.ones(n, dtype=bool)
        outside[rows] = False
        left_out = np.flatnonzero(outside)
        if left_out.size > rows.size:  # a small sample: counting it directly is cheaper
            return _concordance_sums(codes[rows])
    counts = memo.per_row(codes, sizes)
    if counts is None:
        return _concordance_sums(codes if rows is None else codes[rows])
    total = np.array([s for _, s in counts], dtype=np.int64)
    if left_out is None or left_out.size == 0:
        return total.astype(float)
    out_rows = np.stack([c[left_out] for c, _ in counts], axis=1).sum(axis=0, dtype=np.int64)
    within = np.rint(_concordance_sums(codes[left_out])).astype(np.int64)
    return (total - out_rows + within).astype(float)


def _dp_kendall(
    codes: np.ndarray, t: int, eps2: float, rng: np.random.Generator,
    sizes: Sequence[int] | None = None, memo: ConcordanceMemo | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Noisy Kendall's tau matrix on ``t`` rows (Li 2017 Alg. 5 step 1).

    The statistic of a pair is ``S_jk(sample) / C(t, 2)`` where the sample is a uniform
    ``t``-subset of the rows when there are more than ``t``, else all rows; it changes by at
    most ``4/t`` between neighbours (see :func:`dpcopula`, Notes), and each of the C(m,2)
    pairs gets ``Lap(C(m,2) (4/t) / eps2)``. ``memo`` (public tables only, with the domain
    ``sizes``): the same sums from kept per-row counts (:class:`ConcordanceMemo`).
    """
    n, m = codes.shape
    pairs = m * (m - 1) // 2
    tau = np.eye(m)
    if t < 2:
        return tau, {"sample_size": int(t), "kendall_noise_scale": None}
    sample = None if n <= t else np.sort(rng.choice(n, size=t, replace=False))
    sums = _sample_concordance(codes, sample, sizes, memo)
    scale = pairs * (4.0 / t) / eps2
    # Every pair moves by at most 4/t: L1 pairs * 4/t over all pairs (floating-point safe
    # inside floating_point_safe(), Mironov 2012).
    noisy = laplace_reals(sums / (t * (t - 1) / 2.0), pairs * (4.0 / t), eps2, rng=rng,
                          scale=scale, max_changed=pairs)
    rows, cols = _pair_indices(m)
    tau[rows, cols] = tau[cols, rows] = noisy
    return tau, {"sample_size": int(t), "kendall_noise_scale": float(scale)}


def _midranks_by_block(
    code: np.ndarray, size: int, block: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Mid-rank of every value inside its block (ties share the average rank)."""
    if code.size == 0 or size > 2**16 or block.size and int(block.max()) >= 2**16:
        key = block * np.int64(size) + code
        uniq, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        before = np.cumsum(counts) - counts - starts[uniq // size]
        return (before + (counts + 1) / 2.0)[inverse]
    # The order by (block, code) from a stable sort of two 16-bit keys (numpy radix-sorts
    # those), then runs of equal (block, code): the same ranks as a sort of the joint key.
    order = np.lexsort((code.astype(np.uint16), block.astype(np.uint16)))
    sorted_code, sorted_block = code[order], block[order]
    first = np.empty(order.size, dtype=bool)
    first[0] = True
    np.not_equal(sorted_code[1:], sorted_code[:-1], out=first[1:])
    first[1:] |= sorted_block[1:] != sorted_block[:-1]
    run_start = np.flatnonzero(first)
    lengths = np.diff(np.append(run_start, order.size))
    before = run_start - starts[sorted_block[run_start]]
    ranks = np.empty(order.size)
    ranks[order] = np.repeat(before + (lengths + 1) / 2.0, lengths)
    return ranks


def _dp_mle(
    codes: np.ndarray, sizes: Sequence[int], blocks: int, eps2: float, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    """Noisy average of per-block Gaussian-copula correlation estimates (Li 2017 Alg. 2).

    Every record is assigned to one of ``blocks`` blocks uniformly at random (independently),
    so adding or removing a record changes one block. In each block the pseudo-copula data
    ``U = midrank / (b + 1)`` (eq. 3.1.6-3.1.7) are turned into normal scores
    ``Phi^{-1}(U)`` and their Pearson correlation is the block's estimate (the closed-form
    Gaussian-copula estimator; blocks with fewer than 3 records or a constant attribute
    give 0). Each coefficient lies in [-1, 1] (diameter 2), so the average over ``l`` blocks
    moves by at most ``2/l``; each gets ``Lap(C(m,2) 2 / (l eps2))``.
    """
    n, m = codes.shape
    pairs = m * (m - 1) // 2
    block = rng.integers(0, blocks, size=n)
    bsize = np.bincount(block, minlength=blocks).astype(float)
    starts = np.concatenate(([0.0], np.cumsum(bsize)[:-1]))
    z = np.empty((m, n))  # one contiguous row of normal scores per attribute
    columns = np.ascontiguousarray(codes.T)
    below = bsize[block] + 1.0
    # Phi^{-1}(r / (b + 1)) takes few values: a mid-rank r is a multiple of 1/2 up to the block
    # size b. With small blocks (the usual l) each value is computed once, then looked up.
    big = int(bsize.max()) if n else 0
    scores = None
    if (2 * big + 1) * (big + 1) <= n:
        half = np.arange(2 * big + 1)[:, None] / 2.0
        with np.errstate(all="ignore"):
            scores = special.ndtri(half / (np.arange(big + 1)[None, :] + 1.0))
        size_of = bsize[block].astype(np.intp)
    for j in range(m):
        ranks = _midranks_by_block(columns[j], sizes[j], block, starts)
        if scores is None:
            z[j] = special.ndtri(ranks / below)
        else:
            z[j] = scores[(2.0 * ranks).astype(np.intp), size_of]
    count = np.maximum(bsize, 1.0)

    def block_sum(weights: np.ndarray) -> np.ndarray:
        return np.bincount(block, weights=weights, minlength=blocks)

    sums = [block_sum(z[j]) for j in range(m)]
    var = [block_sum(z[j] ** 2) - sums[j] ** 2 / count for j in range(m)]
    rows, cols = _pair_indices(m)
    avg = np.zeros(pairs)
    for p, (j, k) in enumerate(zip(rows.tolist(), cols.tolist(), strict=True)):
        cov = block_sum(z[j] * z[k]) - sums[j] * sums[k] / count
        denom = np.sqrt(np.maximum(var[j], 0.0) * np.maximum(var[k], 0.0))
        ok = (bsize >= 3) & (denom > 1e-12)
        est = np.zeros(blocks)
        est[ok] = np.clip(cov[ok] / denom[ok], -1.0, 1.0)
        avg[p] = est.sum() / blocks
    scale = pairs * 2.0 / (blocks * eps2)
    # Every average moves by at most 2/l: L1 pairs * 2/l over all pairs.
    noisy = laplace_reals(avg, pairs * 2.0 / blocks, eps2, rng=rng, scale=scale,
                          max_changed=pairs)
    corr = np.eye(m)
    corr[rows, cols] = corr[cols, rows] = np.clip(noisy, -1.0, 1.0)
    return corr, {"mle_blocks": int(blocks), "mle_noise_scale": float(scale)}


def repair_correlation(matrix, *, floor: float = 1e-6) -> tuple[np.ndarray, bool]:
    """Make a symmetric unit-diagonal matrix a positive-definite correlation matrix.

    Li 2017 Alg. 5 step 3 (the eigenvalue method of Rousseeuw and Molenberghs 1993): if the
    smallest eigenvalue is below ``floor``, decompose ``P = R D R^T``, replace eigenvalues
    below ``floor`` by ``floor``, rebuild ``R D~ R^T`` and rescale it to unit diagonal
    (``D^{-1/2} A D^{-1/2}`` stays positive definite). Post-processing: costs no budget.

    Parameters
    ----------
    matrix : array_like, (m, m)
        Symmetric (it is symmetrised), finite.
    floor : float
        Smallest eigenvalue kept (> 0).

    Returns
    -------
    (numpy.ndarray, bool)
        The correlation matrix and whether it had to be repaired.

    Examples
    --------
    >>> import numpy as np
    >>> m, repaired = repair_correlation(np.array([[1.0, 0.9, 0.9], [0.9, 1.0, -0.9], [0.9, -0.9, 1.0]]))
    >>> repaired, bool(np.all(np.linalg.eigvalsh(m) > 0)), np.diag(m).round(6)
    (True, True, array([1., 1., 1.]))
    """
    a = np.asarray(matrix, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.all(np.isfinite(a)):
        raise ValueError(f"matrix must be a finite square matrix, got shape {a.shape}")
    floor = check_positive(floor, "floor")
    a = (a + a.T) / 2.0
    np.fill_diagonal(a, 1.0)
    w, v = np.linalg.eigh(a)
    if w.min() > floor:
        return a, False
    rebuilt = (v * np.maximum(w, floor)) @ v.T
    d = np.sqrt(np.diag(rebuilt))
    out = rebuilt / np.outer(d, d)
    out = (out + out.T) / 2.0
    np.fill_diagonal(out, 1.0)
    return out, True


def _correlation_from_tau(tau: np.ndarray) -> np.ndarray:
    """P = sin(pi tau / 2) with tau clipped to [-1, 1] first (Li 2017 Alg. 5 step 2)."""
    out = np.sin(np.pi / 2.0 * np.clip(tau, -1.0, 1.0))
    np.fill_diagonal(out, 1.0)
    return out
