"""DSFT and DSAT (Li 2017 §4.2, Alg. 7 and 8): :func:`dsft`, :func:`dsat` (the paced
variant and the text's) and the paced variant's budget split (:func:`paced_k`).
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from .._results import eps_text
from ..validation import check_epsilon, check_positive_int, check_rng
from .checks import (
    _check_cardinality,
    _check_cutoff,
    _check_dsat_args,
    _check_k,
    _check_publisher,
    _check_series,
    _check_split_sizes,
    _check_threshold,
    _check_unit,
)
from .common import (
    _Distances,
    _normalise_release,
    _parts,
    _pid_threshold,
    _publisher_call,
    _Schedule,
    _svt,
    _user_guarantee,
    dsft_k,
)
from .constants import NEIGHBOURS
from .result import DynamicRelease

__all__ = ["dsft", "dsat", "DSFT", "DSAT", "paced_k", "sampling_noise_floor", "DSAT_VARIANTS",
           "PACED_DEFAULTS"]


#: The two versions of DSAT (:func:`dsat`'s ``variant``).
DSAT_VARIANTS: Mapping[str, str] = MappingProxyType(
    {
        "paced": "our improvement (default): the threshold follows the release count's lag behind "
        "the schedule C t/N in log space, floored at twice the sampling-noise distance; distance "
        "to the last released snapshot; decision share from the decision-noise target; SVT "
        "split 1:(2c)^(2/3)",
        "text": "Li 2017 Alg. 8 as printed: the P term of eqs 4.2.2-4.2.5 on the release ratio; "
        "distance to the last private release; k of Thm 4.3.4; SVT split 1:1",
    }
)

#: Settings of the ``"paced"`` variant (public constants, chosen on the series families of
#: ``benchmarks/dynamic_dsat_design.py``; see :func:`dsat`).
PACED_DEFAULTS: Mapping[str, float] = MappingProxyType(
    {
        "gain": math.log(2.0),  # threshold x2 per release ahead of schedule, /2 per release behind
        "floor_multiplier": 2.0,  # on-schedule threshold >= 2 x sampling_noise_floor(n, U)
        "noise_fraction": 0.1,  # SVT query noise scale = 0.1 x on-schedule threshold
        "k_min": 0.01,
        "k_max": 0.5,
    }
)

_REFERENCES = ("release", "snapshot")


def sampling_noise_floor(cardinality: int, n_bins: int) -> float:
    """``(2/sqrt(pi)) sqrt(U/n)``: the normalised L1 distance that sampling noise alone puts
    between two snapshots.

    Two independent samples of ``n`` records from one distribution ``p`` over ``U`` bins differ
    by about ``sum_u (2/sqrt(pi)) sqrt(p_u (1 - p_u)/n)`` in normalised L1 (normal
    approximation of each cell); by Cauchy-Schwarz this is at most ``(2/sqrt(pi)) sqrt(U/n)``,
    reached by the uniform ``p``. A function of the public ``n`` and ``U`` only.

    Examples
    --------
    >>> round(sampling_noise_floor(500, 3), 4)
    0.0874
    """
    cardinality = check_positive_int(cardinality, "cardinality", minimum=2)
    n_bins = check_positive_int(n_bins, "n_bins")
    return 2.0 / math.sqrt(math.pi) * math.sqrt(n_bins / cardinality)


def _optimal_ratio(cutoff: int) -> float:
    """``eps_query : eps_threshold = (2c)^(2/3)`` for standard SVT with c = C - 1.

    Lyu, Su & Li 2017 §4.2, eq. 12: the threshold noise ``Lap(Delta/eps_t)`` has variance
    ``2 Delta^2/eps_t^2`` and the query noise ``Lap(2 c Delta/eps_q)`` variance
    ``8 c^2 Delta^2/eps_q^2``; minimising their sum under ``eps_t + eps_q = eps1`` gives
    ``4/eps_t^3 = 16 c^2/eps_q^3``, i.e. ``eps_q/eps_t = (4 c^2)^(1/3) = (2c)^(2/3)``.
    """
    return float((2 * max(cutoff - 1, 1)) ** (2.0 / 3.0))


def paced_k(
    cardinality: int,
    n_bins: int,
    cutoff: int,
    epsilon: float,
    threshold: float = 0.5,
    *,
    decision_ratio: float | None = None,
    reference: str = "snapshot",
) -> float:
    """The decision share ``k`` of the ``"paced"`` DSAT (our rule, not the text's).

    The decisions get just enough budget that the SVT's query noise has scale
    ``noise_fraction`` (0.1) times the on-schedule threshold ``T_s = max(threshold,
    2 sampling_noise_floor(n, U))``: with ``c = C - 1`` answers, sensitivity ``Delta_d``
    (``4/(n-1)`` to the snapshot, ``2/(n-1)`` to the release) and split ``r``, the query noise
    is ``2 c Delta_d (1 + r) / (r eps1)``, so ``eps1 = 2 c Delta_d (1 + r) / (r 0.1 T_s)``;
    ``k = eps1/eps`` clipped to [0.01, 0.5]. ``C = 1`` gives 0 (no decision is ever made).

    Thm 4.3.4's ``k`` (:func:`dsft_k`) does not depend on ``eps`` or on the size of the
    distances, and caps at ``1 - C/N`` for small ``U``: 0.98 of the budget for the decisions
    on a 20-bin histogram. With ``n`` in the hundreds of thousands the rule above gives the
    floor 0.01 (the text's own Fig. 4.2 finds the best ``k`` between 0.01 and 0.1); for a few
    thousand records it buys decisions that are not pure noise, up to half the budget.

    Examples
    --------
    >>> round(paced_k(500, 3, 4, 1.0), 2)
    0.5
    """
    cardinality, n_bins, cutoff = _check_split_sizes(cardinality, n_bins, cutoff)
    epsilon = check_epsilon(epsilon)
    threshold = _check_threshold(threshold)
    if reference not in _REFERENCES:
        raise ValueError(f"reference must be one of {_REFERENCES}, got {reference!r}")
    if cutoff == 1:
        return 0.0
    ratio = _optimal_ratio(cutoff) if decision_ratio is None else _check_unit(decision_ratio, "decision_ratio")
    scale = _paced_scale(threshold, cardinality, n_bins)
    sensitivity = (2.0 if reference == "snapshot" else 1.0) * 2.0 / (cardinality - 1)
    c = cutoff - 1
    eps1 = 2 * c * sensitivity * (1 + ratio) / (ratio * PACED_DEFAULTS["noise_fraction"] * scale)
    return float(min(PACED_DEFAULTS["k_max"], max(PACED_DEFAULTS["k_min"], eps1 / epsilon)))


def _paced_scale(threshold: float, cardinality: int, n_bins: int) -> float:
    """The on-schedule threshold ``T_s = max(threshold, 2 sampling_noise_floor)`` (<= 2)."""
    floor = PACED_DEFAULTS["floor_multiplier"] * sampling_noise_floor(cardinality, n_bins)
    return min(2.0, max(threshold, floor))


def _distance_sampling(
    series: np.ndarray,
    epsilon: float,
    cutoff: int,
    threshold: float,
    rng: np.random.Generator,
    *,
    k: float | None,
    cardinality: int,
    publisher: str,
    decision_ratio: float | None,
    controller: str,
    reference: str,
    burn_in: int = 1,
    delta: float = 0.05,
    theta: float = 0.5,
    gain: float = PACED_DEFAULTS["gain"],
    choice: Mapping[str, str] | None = None,
) -> DynamicRelease:
    """DSFT (``controller="fixed"``), DSAT as printed (``"text"``) and paced DSAT (``"paced"``)."""
    n_times, n_bins = series.shape
    paced = controller == "paced"
    scale = _paced_scale(threshold, cardinality, n_bins) if paced else threshold
    plan = _sampling_plan(controller, cutoff, n_times, n_bins, k, decision_ratio, cardinality,
                          epsilon, threshold, reference)
    eps1, eps2 = plan["epsilon1"], plan["epsilon2"]
    per_release = eps2 / cutoff
    release = _publisher_call(publisher)
    target = cutoff / n_times

    schedule = _Schedule(n_times)
    thresholds = np.full(n_times, scale if paced else threshold)
    # Decisions: standard SVT, c = C - 1 ⊤ answers (departure 1 in the module docstring).
    svt = (_svt(scale, eps1, plan["svt_c"], plan["sensitivity"], plan["decision_ratio"], rng)
           if eps1 > 0 else None)
    totals = series.sum(axis=1).astype(float)
    distance_to = _Distances(series, totals)

    def release_at(t: int, budget: float) -> None:
        last = schedule.release(t, release(series[t], budget, rng), budget)
        distance_to.reset(series[t] / totals[t] if reference == "snapshot"
                          else _normalise_release(last))

    # Alg. 7 lines 3-4: release D_1 with eps2/C.
    release_at(0, per_release)
    count = 1
    t_now = threshold
    for t in range(1, n_times):
        i = t + 1  # the text's 1-based time
        if paced:
            # Public: the release count's lag behind the schedule 0.5 + C t / N.
            t_now = _paced_threshold(scale, gain * (count - 0.5 - target * t))
        thresholds[t] = t_now
        if count < cutoff and t == n_times - 1:
            # Alg. 7 line 10 / Alg. 8 line 14: the last time point spends what is left.
            remaining = eps2 - math.fsum(schedule.spent)
            schedule.release(t, release(series[t], remaining, rng), remaining)
            break
        if count >= cutoff or (controller != "fixed" and i <= burn_in):
            # Alg. 7 line 6 / Alg. 8 lines 2, 4: repeat the last release.
            schedule.repeat(t)
            continue
        if controller == "text":
            # Alg. 8 lines 6-8: only the public count.
            t_now = thresholds[t] = _pid_threshold(t_now, count / i, target, delta, theta)
        # k = 0 (C = N, no SVT): every point is a release point.
        if svt is None or svt.query(distance_to(t), threshold=t_now):
            release_at(t, per_release)  # Alg. 7 line 8 / Alg. 8 line 10
            count += 1
        else:
            schedule.repeat(t)  # Alg. 7 line 9 / Alg. 8 line 12: repeat the last one

    details: dict[str, Any] = {
        **plan,
        "threshold_scale": svt.noise.threshold_scale if svt else None,
        "query_scale": svt.noise.query_scale if svt else None,
        "initial_threshold": threshold,
        "reference": reference,
        **(choice or {}),
        **_controller_details(controller, burn_in=burn_in, delta=delta, theta=theta, gain=gain,
                              scale=scale, cardinality=cardinality, n_bins=n_bins),
    }
    return DynamicRelease(
        releases=schedule.releases(n_bins), release_points=schedule.points,
        release_epsilons=schedule.spent, thresholds=thresholds, epsilon=epsilon,
        epsilon_parts=_parts(epsilon, decision=eps1, release=eps2),
        method="dsft" if controller == "fixed" else "dsat", publisher=publisher,
        guarantee=_user_guarantee(epsilon, f"SVT decisions eps1 = {eps_text(eps1)} + at most "
                                  f"C = {cutoff} releases of eps2/C; Li 2017 Thm 4.2.2"),
        neighbours=NEIGHBOURS["user-level"], cutoff=cutoff, details=details,
    )


def _paced_threshold(scale: float, lag: float) -> float:
    """Paced DSAT's threshold ``min(2, T_s exp(lag))`` for the public ``lag`` (``gain`` times
    the release count's lead over the schedule). The cap 2 is reached well before exp()
    overflows: the exponents are compared first."""
    return 2.0 if lag > math.log(2.0 / scale) + 1.0 else min(2.0, scale * math.exp(lag))


def _controller_details(controller: str, *, burn_in: int, delta: float, theta: float,
                        gain: float, scale: float, cardinality: int, n_bins: int) -> dict:
    """The settings of DSAT's threshold controller for ``details`` (none for DSFT)."""
    details: dict[str, Any] = {}
    if controller != "fixed":
        details.update(burn_in=burn_in, variant=controller)
    if controller == "text":
        details.update(delta=delta, theta=theta)
    if controller == "paced":
        details.update(gain=gain, schedule_threshold=scale,
                       noise_floor=sampling_noise_floor(cardinality, n_bins))
    return details


def _sampling_plan(controller: str, cutoff: int, n_times: int, n_bins: int, k: float | None,
                   decision_ratio: float | None, cardinality: int, epsilon: float,
                   threshold: float, reference: str) -> dict[str, Any]:
    """The public side of one :func:`_distance_sampling` run, decided from public parameters
    before any randomness: the distance's sensitivity, the budget split and the SVT's settings,
    the first entries of the result's ``details``."""
    # Each normalised snapshot moves by at most Delta; a distance between two snapshots by 2 Delta.
    sensitivity = 2.0 / (cardinality - 1) * (2.0 if reference == "snapshot" else 1.0)
    decision_ratio, k, k_rule = _decision_split(
        controller, controller == "paced", cutoff, n_times, n_bins, k, decision_ratio,
        cardinality, epsilon, threshold, reference,
    )
    eps1 = k * epsilon
    eps2 = epsilon - eps1
    return {"k": k, "k_rule": k_rule, "epsilon1": eps1, "epsilon2": eps2,
            "sensitivity": sensitivity, "cardinality": cardinality,
            "release_scale": 1.0 / (eps2 / cutoff), "svt_c": max(cutoff - 1, 1),
            "decision_ratio": decision_ratio}


def _decision_split(
    controller: str, paced: bool, cutoff: int, n_times: int, n_bins: int, k: float | None,
    decision_ratio: float | None, cardinality: int, epsilon: float, threshold: float,
    reference: str,
) -> tuple[float, float, str]:
    """:func:`_distance_sampling`'s budget split, from public parameters only (no randomness):
    ``(decision_ratio, k, k_rule)``, the SVT's split and the decisions' share ``k`` with the
    rule that chose it."""
    if decision_ratio is None:
        # The optimum split of a c-cutoff standard SVT (DSFT and paced DSAT); the text's DSAT
        # keeps its even split.
        decision_ratio = 1.0 if controller == "text" else _optimal_ratio(cutoff)
    k_rule = "given"
    if cutoff == 1:
        # No decision is ever made (the one release is time 1): nothing to pay for.
        k, k_rule = 0.0, "C = 1"
    elif k is None and cutoff >= n_times:
        k, k_rule = 0.0, "C = N"  # every time point can be released: no decision needed
    elif k is None:
        if paced:
            k = paced_k(cardinality, n_bins, cutoff, epsilon, threshold,
                        decision_ratio=decision_ratio, reference=reference)
            k_rule = "paced_k"
        else:
            k = dsft_k(cardinality, n_bins, cutoff, n_times)
            k_rule = "Thm 4.3.4"
    return decision_ratio, k, k_rule


def _check_reference(reference, default: str) -> str:
    if reference is None:
        return default
    if reference not in _REFERENCES:
        raise ValueError(
            f"reference must be 'release' (distance to the last private release, the text's) "
            f"or 'snapshot' (to the true snapshot at the last release), got {reference!r}"
        )
    return reference


def _check_ratio(decision_ratio) -> float | None:
    return None if decision_ratio is None else _check_unit(decision_ratio, "decision_ratio")


def dsft(
    histograms,
    epsilon: float,
    cutoff: int | None,
    threshold: float,
    rng: np.random.Generator | None = None,
    *,
    k: float | None = None,
    cardinality: int,
    publisher: str = "identity",
    shape: Sequence[int] | None = None,
    decision_ratio: float | None = 1.0,
    reference: str = "release",
) -> DynamicRelease:
    """Distance-based Sampling with Fixed Threshold (DSFT, Li 2017 Alg. 7).

    At time 1 release ``H_1`` with ``eps2/C``. At every later time point compare the noisy
    normalised L1 distance between ``H_i`` and the last release ``H~_j`` with the noisy fixed
    threshold ``T``; when above, release ``H_i`` with ``eps2/C``, else repeat ``H~_j``. After
    ``C`` releases every point repeats the last one; if fewer than ``C`` were made, the last
    time point is released with all the budget left.

    Parameters
    ----------
    histograms : array_like, shape (N, U)
        The snapshots: non-negative whole counts, every row over the same U bins, N >= 2.
    epsilon : float
        Total budget of the whole series.
    cutoff : int or None
        ``C``, the most releases (1 <= C <= N); None: 0.01 N (Table 4.2), at least 1.
    threshold : float
        ``T`` in [0, 2], the distance that triggers a release (about 0.025 was best on the
        text's US data, Fig. 4.3).
    rng : numpy.random.Generator, optional
    k : float, optional
        Decision share, ``eps1 = k * eps``, in (0, 1). Default: Thm 4.3.4 (:func:`dsft_k`);
        0 when ``C = 1`` (no decision is ever made).
    cardinality : int
        Required (keyword). The *public* lower bound ``n`` on the snapshot sizes (every
        snapshot must hold at least ``n - 1`` records); ``Delta = 2/(n-1)`` and the default
        ``k`` are functions of it. Declared by the data owner or taken from a public
        generator's parameters, never from the data (the text's snapshots all have the same
        known size, 500K).
    publisher : str
        The :func:`.histograms.publish` method of the releases; default ``"identity"`` (LPA,
        the text's default; it also uses PSD, which this package does not have). ``"auto"``:
        by the dimension of ``shape`` (:data:`PUBLISHER_RULE`: DAWA on a 1-D histogram,
        identity on a flattened multi-dimensional one or without ``shape``). An explicit
        order-dependent publisher (:data:`ORDER_DEPENDENT_PUBLISHERS`, e.g. ``"dawa"``) on a
        multi-dimensional ``shape`` is kept, with a note in ``details["publisher_note"]``:
        it merges cells adjacent only in the flattened order, which can multiply the error
        (``benchmarks/dynamic_publishers.py`` measures it).
    shape : sequence of int, optional
        The public attribute domains of one snapshot (product U), e.g. ``(96, 12, 3)``; used
        only to choose the publisher (see ``publisher``). Default: not given.
    decision_ratio : float or None
        ``eps_query/eps_threshold`` inside the SVT; 1 (the default, even split) keeps the
        text's threshold noise ``Lap(2 Delta/eps1)``; None: the optimum ``(2(C-1))^(2/3)``
        for a standard SVT with ``c = C - 1`` answers (Lyu, Su & Li 2017 §4.2, eq. 12).
    reference : {"release", "snapshot"}
        What the distance is measured to: the last private release ``H~_j`` (the text's,
        sensitivity ``Delta``) or the true snapshot ``H_j`` at the last release time
        (sensitivity ``2 Delta``; see :func:`dsat`).

    Returns
    -------
    DynamicRelease
        ``method="dsft"``; ``thresholds`` is the constant public ``T``.

    Raises
    ------
    ValueError
        Ragged, non-2-D, empty, negative, fractional or non-finite ``histograms``; fewer than
        2 snapshots; ``cutoff`` outside [1, N]; ``threshold`` outside [0, 2]; bad ``epsilon``,
        ``k``, ``cardinality``, ``publisher``, ``decision_ratio``, ``reference`` -- all before
        any randomness.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level -- the decisions are standard SVT with at most
    ``C - 1`` ⊤ answers on queries of sensitivity ``Delta`` (``2 Delta`` to the snapshot)
    (``eps1``), the at most ``C`` releases of L1-sensitivity-1 histograms compose to ``eps2``
    (Li 2017 Thm 4.2.2, with the SVT query noise corrected to ``Lap(4 (C-1) Delta/eps1)``; see the
    module docstring). Neighbours: add/remove one user with all of their occurrences (Li 2017
    Def. 4.1.1).

    References
    ----------
    Li 2017 §4.2.1, Alg. 7; Lemma 4.2.1; Thms 4.2.1, 4.2.2, 4.3.4; Fig. 4.2-4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.dynamic import dsft
    >>> rng = np.random.default_rng(0)
    >>> series = rng.multinomial(500, [0.5, 0.3, 0.2], size=20)  # 20 snapshots of 500 records
    >>> out = dsft(series, 1.0, 4, 0.05, rng, cardinality=500)
    >>> out.releases.shape, bool(out.release_points[0]), int(out.release_points.sum()) <= 4
    ((20, 3), True, True)
    """
    series = _check_series(histograms, min_times=2)
    epsilon = check_epsilon(epsilon)
    cutoff = _check_cutoff(cutoff, series.shape[0])
    threshold = _check_threshold(threshold)
    k = _check_k(k)
    cardinality = _check_cardinality(cardinality, series)
    publisher, choice = _check_publisher(publisher, series.shape[1], shape)
    decision_ratio = _check_ratio(decision_ratio)
    reference = _check_reference(reference, "release")
    rng = check_rng(rng)
    return _distance_sampling(series, epsilon, cutoff, threshold, rng, k=k,
                              cardinality=cardinality, publisher=publisher,
                              decision_ratio=decision_ratio, controller="fixed",
                              reference=reference, choice=choice)


def dsat(
    histograms,
    epsilon: float,
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
    decision_ratio: float | None = None,
    variant: str = "paced",
    reference: str | None = None,
    gain: float | None = None,
) -> DynamicRelease:
    """Distance-based Sampling with Adaptive Threshold (DSAT, Li 2017 Alg. 8).

    DSFT whose threshold is steered, from public information only, so that the ``C`` releases
    land where the series moves. Two versions (``variant``):

    ``"text"`` -- Li 2017 Alg. 8 as printed. After a burn-in of ``M`` time points, at each ``t_i``
    the feedback error ``E_i = |C_i/i - C/N|`` (eq. 4.2.2, ``C_i`` releases so far) gives
    ``e_i = |E_i - delta|/delta`` (eq. 4.2.4) and ``u_i = theta * e_i`` (the P term of the PID
    controller, eq. 4.2.3 with ``theta_P = 1``); the threshold moves down by ``u_i`` (not
    below 0) when ``C_i/i <= C/N`` and up (not above 2) otherwise (eq. 4.2.5). Distance to the
    last private release, ``k`` of Thm 4.3.4.

    ``"paced"`` (default) -- our improvement, same privacy argument:

    - the threshold is a P controller on the release *count* in log space,
      ``T_i = min(2, T_s * exp(gain * (C_i - 0.5 - C (i-1)/N)))``: on schedule (the count
      half a release behind ``C t/N``, as fixed sampling is on average) it is ``T_s``; it
      doubles for every release DSAT is ahead and halves for every release it is behind
      (``gain = ln 2``). ``T_s = max(threshold, 2 F)`` with ``F = (2/sqrt(pi)) sqrt(U/n)``
      (:func:`sampling_noise_floor`) so that sampling noise alone does not trigger releases
      on schedule;
    - the distance is measured to the true snapshot at the last release time, ``d(H_i, H_j)``
      (sensitivity ``2 Delta`` instead of ``Delta``), not to the noisy release: the release's
      own Laplace noise then neither masks small changes nor, on sparse histograms, dominates
      the distance;
    - ``k`` from :func:`paced_k` (decision noise ``0.1 T_s``, ``k`` in [0.01, 0.5]) and the
      SVT split ``1:(2c)^(2/3)`` of Lyu, Su & Li 2017 §4.2 instead of 1:1.

    Parameters
    ----------
    histograms, epsilon, rng, k, cardinality, publisher, shape :
        As for :func:`dsft`. ``k`` default: :func:`paced_k` (``"paced"``) or Thm 4.3.4
        (``"text"``); 0 when ``C = 1``.
    cutoff : int, optional
        ``C``; default 0.01 N (Table 4.2), at least 1.
    threshold : float
        In [0, 2]. ``"text"``: the initial threshold ``T_1`` ("can be arbitrarily selected",
        §4.5.2). ``"paced"``: the on-schedule threshold before the floor ``2F``.
    burn_in : int, optional
        ``M``: time points 1..M repeat ``H~_1`` without decisions (Alg. 8 line 2); the text
        only says "a small integer"; default ``max(1, round(0.02 N))`` (10 for N = 500).
    delta, theta : float
        ``"text"`` only: set point of the feedback error and proportional gain (0.05 and 0.5,
        Table 4.2). With the printed ``e_i`` a step is about ``theta`` whenever the rate is
        close to its target, so the threshold swings across [0, 2] in a few steps and the
        releases fall on a near-fixed schedule.
    decision_ratio : float, optional
        ``eps_query/eps_threshold`` inside the SVT; default ``(2(C-1))^(2/3)`` (``"paced"``)
        or 1 (``"text"``).
    variant : {"paced", "text"}
        See above and :data:`DSAT_VARIANTS`.
    reference : {"snapshot", "release"}, optional
        Override the variant's distance reference (``"paced"``: snapshot, ``"text"``: release).
    gain : float, optional
        ``"paced"`` only: > 0, default ``ln 2``.

    Returns
    -------
    DynamicRelease
        ``method="dsat"``; ``thresholds`` is the public trajectory ``T_i`` (in [0, 2]);
        ``details["variant"]``, ``details["k_rule"]``.

    Raises
    ------
    ValueError
        As for :func:`dsft`; ``burn_in`` not in [1, N); ``delta``, ``theta`` or ``gain`` not
        > 0; unknown ``variant`` or ``reference``.

    Notes
    -----
    Privacy: ``epsilon``-DP at user level (Li 2017 Thm 4.2.2): the decisions are standard SVT
    against ``T_i + rho`` with one secret ``rho``, where ``T_i`` is computed from the public
    release count and time only (post-processing; an erratum of the text, departure 2 in the module
    docstring), on queries of sensitivity ``Delta`` (to the release) or ``2 Delta`` (to the
    snapshot: both normalised snapshots move by at most ``Delta``); at most ``C`` releases of
    ``eps2/C``. ``T_s``, ``k`` and the split are functions of the public ``n``, ``U``, ``N``,
    ``C`` and ``eps``. Neighbours: add/remove one user with all of their occurrences (Li 2017
    Def. 4.1.1).

    Why ``"paced"`` is the default: on series with real change points (census-like series
    with drift, objects on a grid, abrupt, gradual, churned, Poisson and sparse histograms)
    its range-query error is below that of fixed sampling on average, where the text's
    version is about level with fixed sampling (its threshold sits at 0 or 2 and it releases
    on the fixed schedule) or, where Thm 4.3.4's ``k`` reaches its cap ``1 - C/N`` (few bins
    for the number of records), much worse. On the text's census setup (no change point)
    paced DSAT and fixed sampling are level. It is not uniformly better: a single trial can
    lose (adaptive releases spent on early changes leave later ones uncovered; most likely
    when ``C`` is 2-4), and on series that change a lot at most steps the stale releases of
    ``C = 0.01 N`` can be worse than the ``eps/N`` baseline at large ``eps`` (pass a larger
    ``cutoff``). The benchmarks ``benchmarks/dynamic_dsat_design.py`` and
    ``benchmarks/dynamic_epsilon.py`` measure it.

    References
    ----------
    Li 2017 §4.2.2, Alg. 8, eqs. 4.2.2-4.2.5, Fig. 4.1; Table 4.2; Fig. 4.3-4.7. Lyu, Su & Li 2017 §4.2 (SVT
    budget split).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.dynamic import DSAT_VARIANTS, dsat
    >>> series = np.random.default_rng(0).multinomial(500, [0.5, 0.3, 0.2], size=20)
    >>> for variant in DSAT_VARIANTS:
    ...     out = dsat(series, 1.0, 4, np.random.default_rng(1), cardinality=500, variant=variant)
    ...     print(variant, out.details["k_rule"], int(out.release_points.sum()) <= 4)
    paced paced_k True
    text Thm 4.3.4 True
    """
    a = _check_dsat_args(histograms, epsilon, cutoff, threshold, burn_in, delta, theta, k,
                         cardinality, publisher, shape)
    decision_ratio = _check_ratio(decision_ratio)
    if variant not in DSAT_VARIANTS:
        raise ValueError(f"variant must be one of {sorted(DSAT_VARIANTS)}, got {variant!r}")
    reference = _check_reference(reference, "snapshot" if variant == "paced" else "release")
    gain = PACED_DEFAULTS["gain"] if gain is None else _check_unit(gain, "gain")
    rng = check_rng(rng)
    return _distance_sampling(a.series, a.epsilon, a.cutoff, a.threshold, rng, k=a.k,
                              cardinality=a.cardinality, publisher=a.publisher,
                              decision_ratio=decision_ratio, controller=variant,
                              reference=reference, burn_in=a.burn_in, delta=a.delta,
                              theta=a.theta, gain=gain, choice=a.choice)


DSFT = dsft
DSAT = dsat
