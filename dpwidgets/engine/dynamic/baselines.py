"""The baselines (Li 2017 §4.1.4): the user-level :func:`uniform_budget_release` and
:func:`fixed_sampling_release`, and Kellaris et al.'s w-event BD and BA
(:func:`budget_distribution_release`, :func:`budget_absorption_release`).
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._results import eps_text
from .._results import frozen as _frozen
from ..mechanisms import is_floating_point_safe, laplace, laplace_reals
from ..validation import check_epsilon, check_rng
from .checks import _check_cutoff, _check_publisher, _check_series, _check_w
from .common import _expand, _parts, _publisher_call, _release_rows, _Repeated, _user_guarantee
from .constants import NEIGHBOURS
from .result import DynamicRelease
from .w_event import _window_sums

__all__ = ["uniform_budget_release", "fixed_sampling_release", "budget_distribution_release",
           "budget_absorption_release"]


# ---------------------------------------------------------------------------------------------
# User-level baselines (Li 2017 §4.1.4)
# ---------------------------------------------------------------------------------------------


def _scheduled_release(series, epsilon, points, publisher, rng, method, what,
                       choice: dict) -> DynamicRelease:
    n_times = series.shape[0]
    per_release = epsilon / int(points.sum())
    # The release points are public and fixed in advance: release them all at once, then
    # repeat each until the next (points[0] is always set).
    released = _release_rows(series, np.flatnonzero(points), per_release, publisher, rng)
    releases = (_frozen(released) if released.shape[0] == n_times
                else _Repeated(_frozen(released), _frozen(np.cumsum(points) - 1)))
    spent = np.where(points, per_release, 0.0)
    return DynamicRelease(
        releases=releases, release_points=_frozen(points),
        release_epsilons=_frozen(spent), thresholds=_frozen(np.full(n_times, np.nan)),
        epsilon=epsilon, epsilon_parts={"decision": 0.0, "release": epsilon}, method=method,
        publisher=publisher, guarantee=_user_guarantee(epsilon, what),
        neighbours=NEIGHBOURS["user-level"], cutoff=int(points.sum()),
        details={"release_scale": 1.0 / per_release, **choice},
    )


def uniform_budget_release(
    histograms,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    """The baseline: release every snapshot with ``epsilon/N`` (Li 2017 §4.1.4).

    Parameters
    ----------
    histograms : array_like, shape (N, U)
    epsilon : float
        Total budget of the series.
    rng : numpy.random.Generator, optional
    publisher : str
        :func:`.histograms.publish` method (default ``"identity"``) or ``"auto"``; see
        :func:`dsft`.
    shape : sequence of int, optional
        As for :func:`dsft`.

    Returns
    -------
    DynamicRelease
        ``method="uniform"``; every time point is a release point, charged ``epsilon/N``.

    Raises
    ------
    ValueError
        Bad ``histograms`` (as for :func:`dsft`, N >= 1), ``epsilon`` or ``publisher``.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level by sequential composition of N releases of
    ``epsilon/N`` (Li 2017 Thm 4.1.1). Neighbours: add/remove one user with all occurrences.
    Its noise grows as O(N).

    References
    ----------
    Li 2017 §4.1.4 ("Baseline method").

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.dynamic import uniform_budget_release
    >>> series = np.full((20, 3), 100)  # 20 snapshots of 3 cells
    >>> out = uniform_budget_release(series, 1.0, np.random.default_rng(0))
    >>> out.releases.shape, float(out.release_epsilons[0])
    ((20, 3), 0.05)
    """
    series = _check_series(histograms)
    epsilon = check_epsilon(epsilon)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    rng = check_rng(rng)
    points = np.ones(series.shape[0], dtype=bool)
    return _scheduled_release(series, epsilon, points, publisher, rng, "uniform",
                              "N releases of eps/N, sequential composition", choice)


def fixed_sampling_release(
    histograms,
    epsilon: float,
    cutoff: int | None = None,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
) -> DynamicRelease:
    """Fixed sampling: ``C`` evenly spaced releases of ``epsilon/C`` (Li 2017 §4.1.4).

    The release points are ``round(j N / C)`` for ``j = 0..C-1`` (time 1 always released;
    the interval is ``N/C``); between them the last release is repeated.

    Parameters
    ----------
    histograms : array_like, shape (N, U)
    epsilon : float
    cutoff : int, optional
        ``C`` in [1, N]; default 0.01 N (Table 4.2), at least 1.
    rng : numpy.random.Generator, optional
    publisher : str
        As for :func:`uniform_budget_release`.
    shape : sequence of int, optional
        As for :func:`dsft`.

    Returns
    -------
    DynamicRelease
        ``method="fixed"``.

    Raises
    ------
    ValueError
        Bad ``histograms``, ``epsilon``, ``cutoff`` (C < 1 or C > N) or ``publisher``.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level; the schedule is public and the C releases compose
    (Li 2017 Thm 4.1.1). Neighbours: add/remove one user with all occurrences. (The text writes
    ``N/T`` releases; ``T`` there is the sampling interval, ``N/C``.)

    References
    ----------
    Li 2017 §4.1.4 ("Fixed-sampling method"); Fig. 4.4-4.7 ("fixed").

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.dynamic import fixed_sampling_release
    >>> out = fixed_sampling_release(np.ones((20, 3)), 1.0, 4, np.random.default_rng(0))
    >>> np.flatnonzero(out.release_points)  # every N/C = 5 points, whatever the data
    array([ 0,  5, 10, 15])
    """
    series = _check_series(histograms)
    epsilon = check_epsilon(epsilon)
    n_times = series.shape[0]
    cutoff = _check_cutoff(cutoff, n_times)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    rng = check_rng(rng)
    points = np.zeros(n_times, dtype=bool)
    points[np.unique(np.round(np.arange(cutoff) * n_times / cutoff).astype(int))] = True
    return _scheduled_release(series, epsilon, points, publisher, rng, "fixed",
                              f"C = {cutoff} scheduled releases of eps/C", choice)


# ---------------------------------------------------------------------------------------------
# w-event baselines: BD and BA (Kellaris et al. 2014; Li 2017 §4.1.4, §4.5.3)
# ---------------------------------------------------------------------------------------------


#: Chunk lengths of the dissimilarities BD/BA release ahead in floating-point-safe mode.
_AHEAD_MIN, _AHEAD_MAX = 8, 256


def _kellaris(series, epsilon, w, rng, publisher, choice, absorb: bool) -> DynamicRelease:
    n_times, n_bins = series.shape
    release = _publisher_call(publisher)
    eps_dis = epsilon / (2 * w)  # M_{i,1}: half the window budget, uniformly
    unit = epsilon / (2 * w)  # BA's uniform share of the publication half
    points = np.zeros(n_times, dtype=bool)
    pub = np.zeros(n_times)
    last = np.zeros(n_bins)  # r_0: nothing published yet
    rows: list[np.ndarray] = []  # the private histograms, in time order (-1: r_0)
    which = np.zeros(n_times, dtype=int)  # the row in force at each time point
    last_t, last_units = -1, 0
    safe = is_floating_point_safe()
    ahead, ahead_from, chunk = np.empty(0), 0, _AHEAD_MIN
    for t in range(n_times):
        # M_{i,1}: mean absolute deviation from the last release, sensitivity 1/U. A real
        # number: inside floating_point_safe() it is released on a grid (laplace_reals), and
        # the test against 1/eps_pub below is post-processing of that release.
        if safe:
            if t - ahead_from >= ahead.size:
                # Released ahead against the current last release, a chunk of doubling
                # length at a time (one laplace_reals call instead of one per time point;
                # each entry has the law of a scalar release); discarded unseen at the next
                # release, whose new reference makes them stale.
                stop = min(n_times, t + chunk)
                ahead = laplace_reals(np.abs(series[t:stop] - last).mean(axis=1), 1.0 / n_bins,
                                      eps_dis, rng=rng)
                ahead_from, chunk = t, min(2 * chunk, _AHEAD_MAX)
            dis = float(ahead[t - ahead_from])
        else:
            dis = (float(np.abs(series[t] - last).mean())
                   + float(laplace(1.0 / (n_bins * eps_dis), rng=rng)))
        if absorb:
            if last_t >= 0 and t - last_t <= last_units - 1:
                which[t] = len(rows) - 1  # nullified: its budget was absorbed by the last release
                continue
            absorbable = t + 1 if last_t < 0 else t - (last_t + last_units - 1)
            units = min(absorbable, w)
            eps_pub = units * unit
        else:
            remaining = epsilon / 2 - math.fsum(pub[max(0, t - w + 1) : t])
            eps_pub = remaining / 2
        if eps_pub > 0 and dis > 1.0 / eps_pub:
            rows.append(last := release(series[t], eps_pub, rng))
            points[t], pub[t] = True, eps_pub
            ahead, chunk = np.empty(0), _AHEAD_MIN  # stale: measured against the old release
            if absorb:
                last_t, last_units = t, units
        which[t] = len(rows) - 1
    per_time = pub + eps_dis
    name, title = ("ba", "budget absorption") if absorb else ("bd", "budget distribution")
    return DynamicRelease(
        releases=_expand(rows, which, n_bins), release_points=points, release_epsilons=pub,
        thresholds=np.full(n_times, np.nan), epsilon=epsilon,
        epsilon_parts=_parts(epsilon, decision=epsilon / 2, release=epsilon / 2),
        method=name, publisher=publisher,
        guarantee=f"{eps_text(epsilon)}-DP per window of w = {w} time points (w-event privacy, {title})",
        neighbours=NEIGHBOURS["w-event"], w=w, window_epsilons=_window_sums(per_time, w),
        details={"dissimilarity_epsilon": eps_dis, "dissimilarity_scale": 1.0 / (n_bins * eps_dis),
                 **choice},
    )


_KELLARIS_DOC = """

    Parameters
    ----------
    histograms : array_like, shape (N, U)
    epsilon : float
        Budget of every window of ``w`` time points.
    w : int
        Window length (>= 1).
    rng : numpy.random.Generator, optional
    publisher : str
        :func:`.histograms.publish` method (default ``"identity"``, as in Kellaris et al.) or
        ``"auto"``; see :func:`dsft`.
    shape : sequence of int, optional
        As for :func:`dsft`.

    Returns
    -------
    DynamicRelease
        ``window_epsilons`` holds what each window was charged (at most ``epsilon``).

    Raises
    ------
    ValueError
        Bad ``histograms``, ``epsilon``, ``w`` or ``publisher``, before any randomness.

    Notes
    -----
    Privacy: ``epsilon``-DP under w-event neighbours (one user's records inside one window of
    ``w`` points; Kellaris et al. Thm 3 and 4): half the window budget pays the private
    dissimilarity ``mean|c_i - r_last| + Lap(1/(U eps/(2w)))`` at every point (sensitivity
    1/U), the other half the publications. The text ran BD/BA "with column partitioning and
    eps1 = eps/U" (§4.5.3), which it does not define further; this is the mechanism of the
    paper.

    References
    ----------
    Kellaris, Papadopoulos, Xiao, Papadias 2014, PVLDB 7(12), §4 (BD, BA);
    Li 2017 §4.1.4, §4.5.3, Fig. 4.8-4.9.
    """


_KELLARIS_EXAMPLE = """
    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.dynamic import {function}
    >>> rng = np.random.default_rng(0)
    >>> series = rng.multinomial(500, [0.5, 0.3, 0.2], size=20)
    >>> out = {function}(series, 1.0, 5, rng)  # eps = 1 per window of 5 points
    >>> out.method, bool(out.window_epsilons.max() <= 1.0 + 1e-9)
    ('{method}', True)
    """


def _check_kellaris(histograms, epsilon, w, rng, publisher, shape):
    """The validated ``(series, epsilon, w, rng, publisher)`` of BD and BA, before any draw."""
    series = _check_series(histograms)
    epsilon = check_epsilon(epsilon)
    w = _check_w(w)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    return series, epsilon, w, check_rng(rng), publisher, choice


def _kellaris_release(absorb: bool, name: str, method: str, summary: str):
    """BD (``absorb=False``) or BA as a public function ``name``, with its docstring: the
    ``summary`` of its rule, then what the two share."""

    def release(
        histograms,
        epsilon: float,
        w: int,
        rng: np.random.Generator | None = None,
        *,
        publisher: str = "identity",
        shape: Sequence[int] | None = None,
    ) -> DynamicRelease:
        return _kellaris(*_check_kellaris(histograms, epsilon, w, rng, publisher, shape),
                         absorb=absorb)

    release.__name__ = release.__qualname__ = name
    release.__doc__ = (summary + _KELLARIS_DOC
                       + _KELLARIS_EXAMPLE.format(function=name, method=method))
    return release


budget_distribution_release = _kellaris_release(
    False, "budget_distribution_release", "bd",
    """Budget Distribution (BD) under w-event privacy (Kellaris et al. 2014).

    At each time point the publication budget is half of what the window ending there has
    left, ``eps_i = (eps/2 - sum of the last w-1 publication budgets) / 2`` (exponentially
    decreasing); publish ``c_i + Lap(1/eps_i)`` when the private dissimilarity exceeds the
    expected noise ``1/eps_i``, else repeat the last release.""",
)
budget_absorption_release = _kellaris_release(
    True, "budget_absorption_release", "ba",
    """Budget Absorption (BA) under w-event privacy (Kellaris et al. 2014).

    Every time point owns ``eps/(2w)`` of publication budget. A publication absorbs the shares
    of the points skipped since the end of the last nullified stretch (at most ``w`` of them)
    and then nullifies as many following points as it absorbed (minus its own); a point
    publishes when the private dissimilarity exceeds ``1/eps_i``.""",
)
