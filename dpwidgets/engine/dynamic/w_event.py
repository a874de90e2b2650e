"""DSAT under w-event privacy (Li 2017 §4.4, Alg. 9): :func:`dsat_w_event`.
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._results import eps_text
from ..validation import check_epsilon, check_positive_int, check_rng
from .checks import (
    _check_cardinality,
    _check_cutoff,
    _check_k,
    _check_publisher,
    _check_series,
    _check_threshold,
    _check_unit,
)
from .common import _Distances, _expand, _normalise_release, _parts, _publisher_call, _svt, dsft_k
from .constants import MAX_WINDOW, NEIGHBOURS
from .result import DynamicRelease

__all__ = [
    "dsat_w_event",
]


def _window_sums(per_time: np.ndarray, w: int) -> np.ndarray:
    """Sum of ``per_time`` over every window of ``w`` consecutive points (one if N <= w)."""
    if per_time.size <= w:
        return np.array([math.fsum(per_time)])
    csum = np.concatenate([[0.0], np.cumsum(per_time)])
    return csum[w:] - csum[:-w]


def _check_w(w, n_times: int) -> int:
    return check_positive_int(w, "w", maximum=MAX_WINDOW)


def dsat_w_event(
    histograms,
    epsilon: float,
    w: int,
    cutoff: int | None = None,
    rng: np.random.Generator | None = None,
    *,
    threshold: float = 0.5,
    burn_in: int | None = None,
    delta: float = 0.05,
    theta: float = 0.5,
    k: float | None = None,
    cardinality: int,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    """DSAT under w-event privacy (Li 2017 §4.4, Alg. 9).

    Every window of ``w`` consecutive time points may hold at most ``C`` releases of
    ``eps2/C`` each (Alg. 9 lines 3-5: with no budget left in the window ending at ``t_i``,
    repeat the last release); otherwise DSAT's decision runs, its PID steering the window's
    release ratio ``count/min(i, w)`` towards ``C/w`` (Alg. 9 lines 7-11).

    Parameters
    ----------
    histograms, epsilon, rng, threshold, delta, theta, cardinality, publisher, shape :
        As for :func:`dsat`; ``epsilon`` is the budget of every window of ``w`` time points.
    w : int
        Window length (>= 1). The text uses w up to 800 on 1000 time points (Fig. 4.8-4.9).
    cutoff : int, optional
        ``C``, releases per window (1 <= C <= w); default ``max(1, round(0.01 w))``.
    burn_in : int, optional
        As for :func:`dsat`; default ``max(1, round(0.02 w))`` (must be < w).
    k : float, optional
        Decision share; default :func:`dsft_k` with ``N`` replaced by ``w``.

    Returns
    -------
    DynamicRelease
        ``method="dsat-w"``; ``window_epsilons`` holds what each window was charged.

    Raises
    ------
    ValueError
        As for :func:`dsat`; ``w`` not a positive integer; ``cutoff`` outside [1, w].

    Notes
    -----
    Privacy: ``epsilon``-DP under w-event neighbours (one user's records inside one window of
    ``w`` points; Li 2017 Def. 4.1.3). Releases: at most ``C`` per window, ``eps2/C`` each.
    Decisions: AboveThreshold (SVT with c = 1: threshold ``Lap(2 Delta/eps_a)``, query
    ``Lap(4 Delta/eps_a)``) restarted with a fresh threshold after every ⊤, ``eps_a =
    eps1/(C+1)``; the instances are disjoint in time and a window meets at most ``C + 1`` of
    them (the ≤ C ending inside it and the one running at its end), so it is charged at most
    ``eps1``. Alg. 9 as printed keeps one threshold offset for the whole stream and compares
    ``count/i`` with ``C/w`` (departure 3 in the module docstring).

    References
    ----------
    Li 2017 §4.4, Alg. 9; §4.5.3, Fig. 4.8-4.9. Kellaris et al. 2014 (w-event privacy).
    """
    series = _check_series(histograms, min_times=2)
    epsilon = check_epsilon(epsilon)
    w = _check_w(w, series.shape[0])
    cutoff = _check_cutoff(cutoff, w, what="w")
    threshold = _check_threshold(threshold)
    if burn_in is None:
        burn_in = max(1, int(round(0.02 * w)))
    burn_in = check_positive_int(burn_in, "burn_in")
    if burn_in >= max(w, 2):
        raise ValueError(f"burn_in (M) must be smaller than w = {w}, got {burn_in}")
    delta = _check_unit(delta, "delta")
    theta = _check_unit(theta, "theta")
    k = _check_k(k)
    cardinality = _check_cardinality(cardinality, series)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    rng = check_rng(rng)

    n_times, n_bins = series.shape
    sensitivity = 2.0 / (cardinality - 1)
    if k is None:
        k = dsft_k(cardinality, n_bins, cutoff, w)
    eps1 = k * epsilon
    eps2 = epsilon - eps1
    per_release = eps2 / cutoff
    eps_instance = eps1 / (cutoff + 1)
    release = _publisher_call(publisher)
    target = cutoff / w
    totals = series.sum(axis=1)

    rows: list[np.ndarray] = []  # the private histograms, in time order
    which = np.zeros(n_times, dtype=int)  # the row in force at each time point
    points = np.zeros(n_times, dtype=bool)
    spent = np.zeros(n_times)
    thresholds = np.full(n_times, threshold)
    instance_of = np.full(n_times, -1)  # which AboveThreshold instance asked at each point

    rows.append(last := release(series[0], per_release, rng))
    distance_to = _Distances(series, totals.astype(float))
    distance_to.reset(_normalise_release(last))
    points[0], spent[0] = True, per_release
    svt, n_instances = None, 0
    t_now = threshold
    for t in range(1, n_times):
        i = t + 1
        in_window = int(np.count_nonzero(points[max(0, t - w + 1) : t]))
        if in_window >= cutoff or i <= burn_in:
            # Alg. 9 lines 4-5 (no budget left in the window) / Alg. 8 line 2 (burn-in).
            which[t] = len(rows) - 1
            thresholds[t] = t_now
            continue
        ratio = in_window / min(i, w)
        e = abs(abs(ratio - target) - delta) / delta
        u = theta * e
        t_now = max(0.0, t_now - u) if ratio - target <= 0 else min(2.0, t_now + u)
        thresholds[t] = t_now
        if eps1 <= 0:  # C = w: no decision budget, release whenever the window allows
            above = True
        else:
            if svt is None:
                svt = _svt(threshold, eps_instance, 1, sensitivity, 1.0, rng)
                n_instances += 1
            instance_of[t] = n_instances - 1
            above = bool(svt.query(distance_to(t), threshold=t_now))
        if above:  # Alg. 9 line 12
            rows.append(last := release(series[t], per_release, rng))
            distance_to.reset(_normalise_release(last))
            points[t], spent[t] = True, per_release
            svt = None  # AboveThreshold restarts with a fresh threshold offset
        which[t] = len(rows) - 1  # Alg. 9 line 13: else repeat the last one

    window = min(w, n_times)
    starts = range(max(n_times - w + 1, 1))
    decision_charge = np.array(
        [eps_instance * np.unique(instance_of[s : s + window][instance_of[s : s + window] >= 0]).size
         for s in starts]
    )
    window_eps = _window_sums(spent, w) + decision_charge
    return DynamicRelease(
        releases=_expand(rows, which, n_bins), release_points=points, release_epsilons=spent,
        thresholds=thresholds, epsilon=epsilon,
        epsilon_parts=_parts(epsilon, decision=eps1, release=eps2), method="dsat-w", publisher=publisher,
        guarantee=f"{eps_text(epsilon)}-DP per window of w = {w} time points (w-event privacy)",
        neighbours=NEIGHBOURS["w-event"], cutoff=cutoff, w=w, window_epsilons=window_eps,
        details={"k": k, "epsilon1": eps1, "epsilon2": eps2, "sensitivity": sensitivity,
                 "cardinality": cardinality, "release_scale": 1.0 / per_release,
                 "instance_epsilon": eps_instance, "instances": n_instances,
                 "threshold_scale": 2.0 * sensitivity / eps_instance if eps1 > 0 else None,
                 "query_scale": 4.0 * sensitivity / eps_instance if eps1 > 0 else None,
                 "burn_in": burn_in, "delta": delta, "theta": theta,
                 "initial_threshold": threshold, **choice},
    )
