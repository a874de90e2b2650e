"""The adaptive trailing-window smoother (:func:`adaptive_window_smoother`), in one call or chunk
by chunk for the online form. Part of :mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..validation import (
    check_finite_array,
    check_positive_int,
)
from .constants import _SORTED_WINDOWS, _SPARSE_WINDOWS, ADAPTIVE_SMOOTHER


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
