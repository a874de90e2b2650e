"""DSAT under w-event privacy (Li 2017 §4.4, Alg. 9): :func:`dsat_w_event`.
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._results import eps_text
from ..validation import check_rng
from .checks import _check_dsat_args
from .common import (
    _Distances,
    _normalise_release,
    _parts,
    _pid_threshold,
    _publisher_call,
    _Schedule,
    _svt,
    dsft_k,
)
from .constants import NEIGHBOURS
from .result import DynamicRelease

__all__ = ["dsat_w_event"]


def _window_sums(per_time: np.ndarray, w: int) -> np.ndarray:
    """Sum of ``per_time`` over every window of ``w`` consecutive points (one if N <= w)."""
    if per_time.size <= w:
        return np.array([math.fsum(per_time)])
    csum = np.concatenate([[0.0], np.cumsum(per_time)])
    return csum[w:] - csum[:-w]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.dynamic import dsat_w_event
    >>> rng = np.random.default_rng(0)
    >>> series = rng.multinomial(500, [0.5, 0.3, 0.2], size=20)
    >>> out = dsat_w_event(series, 1.0, 10, 2, rng, cardinality=500)  # eps = 1 per 10 points
    >>> out.method, bool(out.window_epsilons.max() <= 1.0 + 1e-9)
    ('dsat-w', True)
    """
    (series, epsilon, w, cutoff, threshold, burn_in, delta, theta, k, cardinality, publisher,
     choice) = _check_dsat_args(histograms, epsilon, cutoff, threshold, burn_in, delta, theta,
                                k, cardinality, publisher, shape, windowed=True, w=w)
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

    schedule = _Schedule(n_times)
    thresholds = np.full(n_times, threshold)
    decisions = _Restarts(n_times, threshold, eps_instance, sensitivity, rng)
    distance_to = _Distances(series, series.sum(axis=1).astype(float))

    def release_at(t: int) -> None:
        distance_to.reset(_normalise_release(
            schedule.release(t, release(series[t], per_release, rng), per_release)))

    release_at(0)
    t_now = threshold
    for t in range(1, n_times):
        i = t + 1
        in_window = int(np.count_nonzero(schedule.points[max(0, t - w + 1) : t]))
        if in_window >= cutoff or i <= burn_in:
            # Alg. 9 lines 4-5 (no budget left in the window) / Alg. 8 line 2 (burn-in).
            schedule.repeat(t)
            thresholds[t] = t_now
            continue
        t_now = thresholds[t] = _pid_threshold(t_now, in_window / min(i, w), target, delta, theta)
        # C = w: no decision budget, release whenever the window allows.
        if eps1 <= 0 or decisions.ask(t, distance_to(t), t_now):  # Alg. 9 line 12
            release_at(t)
            decisions.restart()
        else:
            schedule.repeat(t)  # Alg. 9 line 13: repeat the last one

    window_eps = _window_sums(schedule.spent, w) + decisions.window_charges(min(w, n_times))
    return DynamicRelease(
        releases=schedule.releases(n_bins), release_points=schedule.points,
        release_epsilons=schedule.spent, thresholds=thresholds, epsilon=epsilon,
        epsilon_parts=_parts(epsilon, decision=eps1, release=eps2), method="dsat-w", publisher=publisher,
        guarantee=f"{eps_text(epsilon)}-DP per window of w = {w} time points (w-event privacy)",
        neighbours=NEIGHBOURS["w-event"], cutoff=cutoff, w=w, window_epsilons=window_eps,
        details={"k": k, "epsilon1": eps1, "epsilon2": eps2, "sensitivity": sensitivity,
                 "cardinality": cardinality, "release_scale": 1.0 / per_release,
                 "instance_epsilon": eps_instance, "instances": decisions.count,
                 "threshold_scale": 2.0 * sensitivity / eps_instance if eps1 > 0 else None,
                 "query_scale": 4.0 * sensitivity / eps_instance if eps1 > 0 else None,
                 "burn_in": burn_in, "delta": delta, "theta": theta,
                 "initial_threshold": threshold, **choice},
    )


class _Restarts:
    """w-event DSAT's decisions (Alg. 9): one AboveThreshold instance (SVT with c = 1) at a
    time, with a fresh threshold offset after each release."""

    def __init__(self, n_times: int, threshold: float, epsilon: float, sensitivity: float,
                 rng: np.random.Generator):
        self.threshold, self.epsilon, self.sensitivity, self.rng = threshold, epsilon, sensitivity, rng
        self.svt = None
        self.count = 0  # instances started
        self.asked_by = np.full(n_times, -1)  # which instance asked at each point (-1: none)

    def ask(self, t: int, distance: float, threshold: float) -> bool:
        """Whether the noisy ``distance`` at time ``t`` is above the noisy ``threshold``."""
        if self.svt is None:
            self.svt = _svt(self.threshold, self.epsilon, 1, self.sensitivity, 1.0, self.rng)
            self.count += 1
        self.asked_by[t] = self.count - 1
        return bool(self.svt.query(distance, threshold=threshold))

    def restart(self) -> None:
        self.svt = None

    def window_charges(self, window: int) -> np.ndarray:
        """What the instances cost each window of ``window`` points: every instance that asked
        inside the window charges ``epsilon`` once."""
        asked = self.asked_by
        starts = range(max(asked.size - window + 1, 1))
        return np.array(
            [self.epsilon * np.unique(asked[s : s + window][asked[s : s + window] >= 0]).size
             for s in starts]
        )
