"""DP margins and sampling from the copula (Li 2017 Alg. 1 step 1, Alg. 3).

One DP histogram per attribute (through :func:`~dpwidgets.engine.histograms.interface.publish`)
becomes a probability vector (:data:`MARGIN_FITS`: clipped or projected, post-processing);
synthetic records are drawn by pushing Gaussian samples through the inverse DP margins
(``_sample_copula``), with a guide-table search that keeps the inverse CDF fast on large
domains.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
from scipy import special

from ..histograms import publish

__all__ = ["MARGIN_FITS"]

#: How a noisy histogram becomes a distribution (post-processing, no budget).
MARGIN_FITS: Mapping[str, str] = MappingProxyType(
    {
        "clip": "negative cells set to 0, then normalised",
        "project": "Euclidean projection onto non-negative histograms with the same (noisy) "
        "total, then normalised (Norm-Sub; Wang, Lopuhaa-Zwakenberg, Li, Skoric, Li 2020)",
    }
)


def _project_nonnegative(x: np.ndarray, total: float) -> np.ndarray:
    """The closest (L2) non-negative vector to ``x`` summing to ``total`` > 0:
    ``max(x - theta, 0)`` with theta from the sorted cumulative sums (Duchi et al. 2008)."""
    u = np.sort(x)[::-1]
    excess = np.cumsum(u) - total
    positions = np.arange(1, u.size + 1)
    r = int(np.flatnonzero(u - excess / positions > 0)[-1]) + 1
    return np.maximum(x - excess[r - 1] / r, 0.0)


def _distribution(est: np.ndarray, fit: str) -> np.ndarray:
    """A probability vector from a noisy histogram (post-processing); uniform if empty."""
    total = float(est.sum())
    if fit == "project" and total > 0:
        fitted = _project_nonnegative(est, total)
    else:
        fitted = np.clip(est, 0.0, None)
    mass = fitted.sum()
    return fitted / mass if mass > 0 else np.full(est.size, 1.0 / est.size)


def _dp_margins(
    codes: np.ndarray,
    sizes: Sequence[int],
    eps_each: float,
    publisher: str,
    options: dict,
    fit: str,
    rng: np.random.Generator,
    given: Mapping[int, np.ndarray] | None = None,
) -> tuple[list[np.ndarray], float]:
    """One DP histogram per column with ``eps_each``; returns the DP probability vectors and
    the noisy record count (mean of the unclipped noisy totals; post-processing). Columns in
    ``given`` take that DP distribution instead (already released: nothing is spent)."""
    probs, totals = [], []
    for j, size in enumerate(sizes):
        if given is not None and j in given:
            probs.append(given[j])
            continue
        counts = np.bincount(codes[:, j], minlength=size)
        release = publish(counts, eps_each, publisher, rng=rng, workload="prefix", **options)
        est = np.asarray(release.counts, dtype=float)
        totals.append(float(est.sum()))
        probs.append(_distribution(est, fit))
    return probs, float(np.mean(totals)) if totals else math.nan


def _check_fit(fit: str) -> str:
    if fit not in MARGIN_FITS:
        raise ValueError(f"margin_fit must be one of {sorted(MARGIN_FITS)}, got {fit!r}")
    return fit


def _cdf(prob: np.ndarray) -> np.ndarray:
    cdf = np.cumsum(prob)
    cdf[-1] = 1.0
    return cdf


#: Below this many values a plain binary search is as fast as the guide table.
_GUIDE_MIN_VALUES = 64


def _count_at_most(thresholds: np.ndarray, keys: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``np.searchsorted(thresholds, keys, side="right")`` (``thresholds`` sorted) through a
    guide table (Chen & Asau 1974): the count at the lower edge of the key's bucket of
    ``[lo, hi)`` is a start within a step or two of the answer, which a few vectorised
    steps (up while ``thresholds[i] <= key``, down while ``thresholds[i - 1] > key``) reach;
    the keys still off after them are searched. Exact for any keys; about twice as fast as
    the binary search on a large domain."""
    buckets = int(min(2**16, max(64, 8 * thresholds.size)))
    width = (hi - lo) / buckets
    guide = np.searchsorted(thresholds, lo + width * np.arange(buckets), side="right")
    scaled = (keys - lo) * (1.0 / width)
    np.clip(scaled, 0, buckets - 1, out=scaled)  # keys outside [lo, hi) start at an end
    idx = guide[scaled.astype(np.intp)]
    last = thresholds.size
    padded = np.concatenate(([-np.inf], thresholds, [np.inf]))  # padded[i] = thresholds[i - 1]

    def low(i, k):  # the count is too small: thresholds[i] <= key
        return (i < last) & (padded[i + 1] <= k)

    def high(i, k):  # too large: thresholds[i - 1] > key
        return padded[i] > k

    off = np.flatnonzero(low(idx, keys) | high(idx, keys))
    for _ in range(3):
        if off.size == 0:
            return idx
        k, i = keys[off], idx[off]
        i += low(i, k)
        i -= high(i, k)
        idx[off] = i
        off = off[low(i, k) | high(i, k)]
    if off.size:
        idx[off] = np.searchsorted(thresholds, keys[off], side="right")
    return idx


def _search(thresholds: np.ndarray, keys: np.ndarray, lo: float, hi: float) -> np.ndarray:
    if thresholds.size >= _GUIDE_MIN_VALUES and keys.size >= 4 * thresholds.size:
        return _count_at_most(thresholds, keys, lo, hi)
    return np.searchsorted(thresholds, keys, side="right")


def _inverse_cdf(prob: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Codes ``F^{-1}(u)`` of a discrete distribution: P(code = i) = prob[i] (Li 2017 Alg. 3)."""
    return np.minimum(_search(_cdf(prob), u, 0.0, 1.0), prob.size - 1)


def _inverse_cdf_of_normal(prob: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``F^{-1}(Phi(z))`` for standard normal ``z``: the number of CDF values ``<= Phi(z)``,
    i.e. of their normal quantiles ``Phi^{-1}(F(i)) <= z`` (Phi is increasing). The quantiles
    of the ``|A|`` CDF values replace ``Phi`` of every draw."""
    quantiles = special.ndtri(np.minimum(_cdf(prob), 1.0))  # F = 1: +inf, F = 0: -inf
    return np.minimum(_search(quantiles, z, -8.0, 8.0), prob.size - 1)


def _sample_copula(
    probs: Sequence[np.ndarray], corr: np.ndarray | None, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` coded rows: Z ~ N(0, P), U = Phi(Z), X_j = F~_j^{-1}(U_j) (Li 2017 Alg. 3).

    The draws are those of Alg. 3 (``standard_normal((n, m))`` times the Cholesky factor; with
    no dependence ``random((n, m))``), worked on one attribute at a time: ``Z_j = sum_{i<=j}
    L_ji N_i`` as row operations (a product with a tall, thin matrix spends more CPU in the
    BLAS threads than in the arithmetic) and ``F_j^{-1}(Phi(Z_j))`` through the normal
    quantiles of ``F_j`` (:func:`_inverse_cdf_of_normal`). Returns an (n, m) array whose
    columns are contiguous.
    """
    m = len(probs)
    out = np.empty((m, n), dtype=np.int64)
    if corr is None:
        u = np.ascontiguousarray(rng.random((n, m)).T)
        for j, p in enumerate(probs):
            out[j] = _inverse_cdf(p, u[j])
        return out.T
    chol = _cholesky(corr)
    normal = np.ascontiguousarray(rng.standard_normal((n, m)).T)
    z = np.empty(n)
    term = np.empty(n)
    for j, p in enumerate(probs):
        np.multiply(normal[0], chol[j, 0], out=z)
        for i in range(1, j + 1):
            z += np.multiply(normal[i], chol[j, i], out=term)
        out[j] = _inverse_cdf_of_normal(p, z)
    return out.T


def _cholesky(corr: np.ndarray) -> np.ndarray:
    jitter = 0.0
    for _ in range(20):
        try:
            return np.linalg.cholesky(corr + jitter * np.eye(corr.shape[0]))
        except np.linalg.LinAlgError:  # pragma: no cover - repaired matrices are PD
            jitter = max(2 * jitter, 1e-10)
    raise np.linalg.LinAlgError("correlation matrix is not positive definite")  # pragma: no cover
