"""Evaluation helpers: how close a private output is to a reference (pure numpy, no UI).

The widgets score a release against the data (teaching mode, where the data is public), a
preview against the public stand-in (analyst mode), and draw the scores; the numbers are
computed here so a script, a benchmark or a test gets exactly what a widget shows.

- range-count queries and Kendall's τ matrices of integer-coded tables (the DPCopula
  evaluation of Li 2017, Ch. 3);
- event detection rates of a stream statistic (PeGaSus, Chen et al. 2016);
- top-c selection quality: the false negative rate and the score error rate of Lyu, Su &
  Li 2017, §6 (re-exported from :mod:`dpwidgets.engine.svt`).

Every function is post-processing: called on a DP output it spends nothing; called on the
confidential data it is the caller's job (the ``Session``) to keep the result inside.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .svt import false_negative_rate, score_error_rate

__all__ = ["TAU_MAX_ROWS", "TAU_MIN_ROWS", "detect_events", "detection_rates", "encode",
           "false_negative_rate", "kendall_matrix", "range_counts", "score_error_rate", "shares",
           "tau_rows", "top_c_rates"]

#: Kendall's τ of a table is computed on at most this many of its rows (a fixed-seed sample);
#: with many attributes on fewer (:func:`tau_rows`), so that a redraw stays interactive.
TAU_MAX_ROWS = 5_000
#: ... but never on fewer than this many (τ's sampling s.d. is then about 0.015).
TAU_MIN_ROWS = 2_000


def encode(values, domain: np.ndarray) -> np.ndarray:
    """Index of each value's nearest domain value (the code ``0..A-1``; out-of-domain values
    are clamped, as the release clamps them).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.evaluation import encode
    >>> encode([0.9, 5.0, -3.0], np.array([0.0, 1.0, 2.0])).tolist()
    [1, 2, 0]
    """
    raw = np.asarray(values)
    d = np.asarray(domain)
    if d.dtype.kind in "iu" and int(d[-1] - d[0]) + 1 == d.size:
        if raw.dtype.kind in "iu":
            return np.clip(raw.astype(np.int64) - int(d[0]), 0, d.size - 1)
        return np.clip(np.floor(raw + 0.5) - float(d[0]), 0, d.size - 1).astype(np.int64)
    x = raw.astype(float)
    df = d.astype(float)
    right = np.clip(np.searchsorted(df, x), 1, d.size - 1)
    left = right - 1
    return np.where(np.abs(x - df[left]) <= np.abs(df[right] - x), left, right).astype(np.int64)


def shares(codes: np.ndarray, size: int) -> np.ndarray:
    """Share of the records per code (sums to 1; all zeros for an empty table).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.evaluation import shares
    >>> shares(np.array([0, 0, 1, 2]), 4).tolist()
    [0.5, 0.25, 0.25, 0.0]
    """
    counts = np.bincount(codes, minlength=size).astype(float)
    total = counts.sum()
    return counts / total if total > 0 else counts


def _sample_rows(n: int, max_rows: int) -> np.ndarray | slice:
    if n <= max_rows:
        return slice(None)
    return np.sort(np.random.default_rng(0).choice(n, size=max_rows, replace=False))


def tau_rows(m: int) -> int:
    """Rows Kendall's τ is computed on for ``m`` attributes: 60,000 row-pairs of work in all,
    clipped to [:data:`TAU_MIN_ROWS`, :data:`TAU_MAX_ROWS`] (5,000 rows up to 5 attributes,
    2,142 for 8).

    Examples
    --------
    >>> from dpwidgets.engine.evaluation import tau_rows
    >>> tau_rows(2), tau_rows(40)
    (5000, 2000)
    """
    pairs = max(m * (m - 1) // 2, 1)
    return int(min(TAU_MAX_ROWS, max(TAU_MIN_ROWS, 60_000 // pairs)))


def kendall_matrix(codes: np.ndarray, max_rows: int = TAU_MAX_ROWS) -> np.ndarray:
    """Kendall's τ-b of every pair of columns of ``codes`` (n, m), on at most ``max_rows``
    rows (a fixed-seed uniform sample: the same table gives the same matrix).

    A constant column has no τ: its entries are 0 (drawn as "no dependence").

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.evaluation import kendall_matrix
    >>> codes = np.array([[0, 0, 1], [1, 1, 0], [2, 2, 0], [3, 3, 1]])
    >>> kendall_matrix(codes).round(2).tolist()
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    codes = np.asarray(codes)
    sample = codes[_sample_rows(codes.shape[0], max_rows)]
    m = codes.shape[1]
    out = np.eye(m)
    if sample.shape[0] < 2:
        return out
    rows, cols = np.triu_indices(m, k=1)
    # One scipy call per pair (O(n log n) each): the pairs, not the records, are looped over.
    for j, k in zip(rows.tolist(), cols.tolist(), strict=True):
        tau = stats.kendalltau(sample[:, j], sample[:, k]).statistic
        out[j, k] = out[k, j] = tau if np.isfinite(tau) else 0.0
    return out


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)  # pragma: no cover
    return table[words.view(np.uint8)].reshape(*words.shape, 8).sum(axis=-1)  # pragma: no cover


def range_counts(codes: np.ndarray, lower: np.ndarray, upper: np.ndarray, *,
                 max_bytes: int = 2**25) -> np.ndarray:
    """Exact answers of range-count queries on an integer-coded table, vectorised over queries.

    Query ``q`` counts the rows with ``lower[q, j] <= codes[:, j] <= upper[q, j]`` for every
    column ``j``. For each column, the distinct query end points cut the codes into buckets;
    a table of prefix row-bitsets over the buckets (``P[t]`` = the rows in buckets before
    ``t``) gives each query's row set as ``P[hi + 1] XOR P[lo]``; the columns' sets are ANDed
    and the bits counted. Faster than testing every row against every query, and
    rows are processed in chunks so the bitsets stay under ``max_bytes`` per column.

    Parameters
    ----------
    codes : array (n, m) of int
    lower, upper : array (q, m) of int
        Inclusive code bounds per query and column.

    Returns
    -------
    numpy.ndarray of int64, shape (q,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.evaluation import range_counts
    >>> codes = np.array([[0, 1], [1, 1], [2, 0]])
    >>> range_counts(codes, np.array([[0, 0], [1, 1]]), np.array([[1, 1], [2, 1]])).tolist()
    [2, 1]
    """
    codes = np.asarray(codes)
    lower = np.asarray(lower, dtype=np.int64)
    upper = np.asarray(upper, dtype=np.int64)
    n, m = codes.shape
    q = lower.shape[0]
    out = np.zeros(q, dtype=np.int64)
    if n == 0 or q == 0:
        return out
    cuts, lo_bucket, hi_bucket = [], [], []
    for j in range(m):
        c = np.unique(np.concatenate((lower[:, j], upper[:, j] + 1)))
        cuts.append(c)
        lo_bucket.append(np.searchsorted(c, lower[:, j], side="right"))
        hi_bucket.append(np.searchsorted(c, upper[:, j], side="right"))
    # Bucket of every code, per column: a lookup table over the codes seen (a gather is far
    # cheaper than a search per row).
    luts = [np.searchsorted(c, np.arange(int(codes[:, j].max(initial=0)) + 1), side="right")
            for j, c in enumerate(cuts)]
    most = max(c.size for c in cuts) + 2
    chunk = max(64, (8 * max_bytes // most) // 64 * 64)  # rows whose bitsets fit
    for start in range(0, n, chunk):
        block = codes[start:start + chunk]
        rows = block.shape[0]
        n_bytes = -(-rows // 64) * 8
        byte = np.arange(rows) >> 3
        hits = None
        for j in range(m):
            bucket = luts[j][block[:, j]] + 1
            prefix = np.zeros((cuts[j].size + 2, n_bytes), dtype=np.uint8)
            # Row r is bit r % 8 of byte r // 8. Among the rows with the same r % 8 no two
            # share a byte, so each of these 8 fancy-indexed ORs has no repeated index.
            for b in range(8):
                prefix[bucket[b::8], byte[b::8]] |= np.uint8(1 << b)
            words = prefix.view(np.uint64)
            np.bitwise_xor.accumulate(words, axis=0, out=words)
            inside = words[hi_bucket[j] + 1] ^ words[lo_bucket[j]]
            hits = inside if hits is None else np.bitwise_and(hits, inside, out=hits)
        out += _popcount(hits).sum(axis=1, dtype=np.int64)
    return out


# --------------------------------------------------------------------------------------------
# Event detection on a stream (Chen et al. 2016, §5: jump/drop and low-signal events)
# --------------------------------------------------------------------------------------------
def detect_events(statistic: np.ndarray, kind: str, delta: float) -> np.ndarray:
    """Where an event statistic signals an event at threshold ``delta`` (boolean per step).

    ``"jump_drop"``: the statistic is at least ``delta``; ``"low_signal"``: it is below
    ``delta``. NaN steps (the first ``w - 1`` of a window statistic) never signal.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.evaluation import detect_events
    >>> detect_events(np.array([np.nan, 5.0, 50.0]), "jump_drop", 40).tolist()
    [False, False, True]
    >>> detect_events(np.array([np.nan, 5.0, 50.0]), "low_signal", 40).tolist()
    [False, True, False]
    """
    stat = np.asarray(statistic, dtype=float)
    if kind == "jump_drop":
        return np.nan_to_num(stat, nan=-np.inf) >= delta
    if kind == "low_signal":
        return np.nan_to_num(stat, nan=np.inf) < delta
    raise ValueError(f"kind must be 'jump_drop' or 'low_signal', got {kind!r}")


def detection_rates(detected: np.ndarray, truth: np.ndarray, w: int) -> tuple[float, float]:
    """``(TPR, FPR)`` of ``detected`` against the true events, from the first full window
    (step ``w - 1``) on; NaN when there is no positive (or no negative) step.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.evaluation import detection_rates
    >>> detection_rates(np.array([0, 1, 1, 0], bool), np.array([0, 1, 0, 0], bool), w=2)
    (1.0, 0.5)
    """
    d = np.asarray(detected, dtype=bool)[w - 1:]
    t = np.asarray(truth, dtype=bool)[w - 1:]
    pos, neg = int(t.sum()), int((~t).sum())
    tpr = float((d & t).sum() / pos) if pos else math.nan
    fpr = float((d & ~t).sum() / neg) if neg else math.nan
    return tpr, fpr


# --------------------------------------------------------------------------------------------
# Top-c selection (Lyu, Su & Li 2017, §6)
# --------------------------------------------------------------------------------------------
def top_c_rates(selections, scores: np.ndarray, c: int) -> tuple[float, float]:
    """Mean false negative rate and score error rate of several top-``c`` selections (index
    arrays) against the scores they are meant to pick.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.evaluation import top_c_rates
    >>> scores = np.array([9, 1, 7, 3])
    >>> top_c_rates([[0, 2], [0, 1]], scores, c=2)  # one exact selection, one with a miss
    (0.25, 0.1875)
    """
    selections = list(selections)
    if not selections:
        return math.nan, math.nan
    fnr = [false_negative_rate(np.asarray(s, dtype=int)[:c], scores, c) for s in selections]
    ser = [score_error_rate(np.asarray(s, dtype=int)[:c], scores, c) for s in selections]
    return float(np.mean(fnr)), float(np.mean(ser))
