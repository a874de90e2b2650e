"""The baselines PeGaSus is compared with (Chen 2018 §5.6): LM (:func:`laplace_stream`), BS_k
(:func:`backward_smoothing`) and SW_w (:func:`binary_tree_window_sums`), and their releases.
Part of :mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._results import eps_text
from .._results import frozen as _readonly
from ..mechanisms import laplace
from ..validation import (
    check_epsilon,
    check_positive_int,
    check_rng,
)
from .checks import _budget_parts, _check_stream, _check_window
from .constants import MAX_WINDOW, NEIGHBOURS

__all__ = [
    "StreamRelease", "WindowSums", "laplace_stream", "backward_smoothing",
    "binary_tree_window_sums",
]


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
    Chen 2018 §5.6.1 ("LM", Fig. 5.3); Dwork, McSherry, Nissim, Smith 2006 (the Laplace
    mechanism).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import laplace_stream
    >>> r = laplace_stream([3, 5, 4], epsilon=1.0, rng=np.random.default_rng(0))
    >>> r.method, r.estimates.round(2).tolist()
    ('LM', [3.32, 4.38, 1.5])
    """
    counts = _check_stream(counts)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    est = counts + laplace(1.0 / epsilon, counts.size, rng=rng)
    return StreamRelease(
        _readonly(est), "LM", epsilon, _budget_parts(epsilon, perturber=epsilon),
        f"{eps_text(epsilon)}-DP (event-level), Laplace mechanism per step",
    )


def _trailing_sums(x: np.ndarray, w: int) -> np.ndarray:
    """sw_t = Σ_{i=max(0,t-w+1)}^{t} x_i (partial windows at the start: counts before 0 are 0)."""
    csum = np.concatenate([[0.0], np.cumsum(x, dtype=float)])
    t = np.arange(x.size)
    return csum[t + 1] - csum[np.maximum(t - w + 1, 0)]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import backward_smoothing
    >>> r = backward_smoothing([10, 10, 10, 10], epsilon=1.0, k=2, rng=np.random.default_rng(0))
    >>> r.method, r.estimates.round(1).tolist()
    ('BS_2', [10.3, 9.9, 9.1, 7.8])
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import binary_tree_window_sums
    >>> r = binary_tree_window_sums([1, 2, 3, 4, 5], epsilon=1.0, w=2, rng=np.random.default_rng(0))
    >>> r.method, r.sums.shape
    ('SW_2', (5,))
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
