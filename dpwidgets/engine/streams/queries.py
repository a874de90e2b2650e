"""Queries by post-processing (Chen 2018 §5.4, no extra budget): sliding-window sums (WSS, Alg. 17)
and event monitoring (jump/drop, low signal, ROC). Part of :mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from ..validation import (
    check_finite_array,
)
from .baselines import StreamRelease, WindowSums, _trailing_sums
from .checks import _check_window
from .perturb_group_smooth import PegasusResult

__all__ = [
    "window_sum_smoother", "sliding_window_sums", "jump_drop_statistic", "jump_drop_events",
    "low_signal_events", "EventRoc", "event_roc",
]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import pegasus, window_sum_smoother
    >>> r = pegasus(np.full(12, 10), epsilon=1.0, rng=np.random.default_rng(0))
    >>> window_sum_smoother(r, w=4).shape
    (12,)
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

    Examples
    --------
    >>> from dpwidgets.engine.streams import sliding_window_sums
    >>> sliding_window_sums([1.0, 2.0, 3.0, 4.0], w=2).tolist()
    [1.0, 3.0, 5.0, 7.0]
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
    """``|c_t − c_{t−w+1}|`` per step (NaN for t < w−1, where the window is incomplete).

    Examples
    --------
    >>> from dpwidgets.engine.streams import jump_drop_statistic
    >>> jump_drop_statistic([0, 0, 50, 50, 0], w=2).tolist()
    [nan, 0.0, 50.0, 0.0, 50.0]
    """
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

    Examples
    --------
    >>> from dpwidgets.engine.streams import jump_drop_events
    >>> jump_drop_events([0, 0, 0, 50, 50, 50, 0, 0], w=2, delta=40).astype(int).tolist()
    [0, 0, 0, 1, 0, 0, 1, 0]
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

    Examples
    --------
    >>> from dpwidgets.engine.streams import low_signal_events
    >>> low_signal_events([9, 9, 1, 0, 9], w=2, delta=5).astype(int).tolist()
    [0, 0, 0, 1, 0]
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import event_roc
    >>> counts = np.array([0, 0, 0, 50, 50, 50, 0, 0, 0, 50])
    >>> noisy = counts + np.random.default_rng(0).laplace(0, 5, counts.size)
    >>> roc = event_roc(counts, noisy, w=2, delta=40)
    >>> roc.positives, roc.negatives, round(roc.auc, 2)
    (3, 6, 1.0)
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
