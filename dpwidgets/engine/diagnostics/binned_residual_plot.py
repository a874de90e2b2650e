"""PriBRP (Chen 2018 §4.4.2, Alg. 13-14): :func:`private_binned_residual_plot`, the private
binned residual plot of a logistic model.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .._results import eps_text
from ..mechanisms import laplace, laplace_reals
from ..validation import (
    check_epsilon,
    check_finite_array,
    check_positive,
    check_positive_int,
    check_rng,
)
from .checks import MAX_LEVELS, NEIGHBOURS, _check_fraction, _check_neighbours, _parts, public_n
from .records import _scored_records
from .recursive_medians import _median_cost_factor, _recursive_medians, median_budget

__all__ = ["PrivateBinnedResiduals", "BRP_DEFAULTS", "binned_residual_levels",
           "private_binned_residual_plot", "PriBRP"]


@dataclass(frozen=True, eq=False)
class PrivateBinnedResiduals:
    """A private binned residual plot (PriBRP) and what it cost.

    Attributes
    ----------
    mean_predicted, mean_residual : numpy.ndarray
        One point per (adjusted) bin, clamped as in eq. 4.11-4.12.
    bins : numpy.ndarray
        Edges of the adjusted bins, ``0 = e_0 < ... < e_K = 1`` (K bins).
    initial_bins : numpy.ndarray
        Edges from s-RecursiveMedians (``2^s`` bins) before Alg. 14.
    noisy_sizes : numpy.ndarray
        ``m~`` per adjusted bin (Lap noise, before the ``>= 1`` floor used for averaging).
    threshold : float
        θ of Alg. 14.
    s : int
    epsilon : float
    epsilon_parts : mapping
        ``bins`` (ε1), ``adjust`` (ε2), ``averages`` (ε3).
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
    """

    mean_predicted: np.ndarray
    mean_residual: np.ndarray
    bins: np.ndarray
    initial_bins: np.ndarray
    noisy_sizes: np.ndarray
    threshold: float
    s: int
    epsilon: float
    epsilon_parts: Mapping[str, float]
    n: int
    guarantee: str
    neighbours: str


def _adjust_bins(sizes: np.ndarray, threshold: float, epsilon: float, rng) -> list[tuple[int, int]]:
    """Chen 2018 Alg. 14 over initial bin sizes; returns groups ``[start, stop)`` of initial bins.

    Every merged bin is one run of SVT with c = 1 and a fresh noisy threshold (line 8): the
    run of :func:`.svt.sparse_vector` with ``variant="standard", monotonic=True, ratio=1``, whose
    threshold noise is ``Lap(2/eps)`` and query noise ``Lap(2/eps)`` — Alg. 14's scales. The
    running sizes of a growing group move in one direction when a record is added or removed,
    hence the monotonic calibration.

    The runs are done here without a call per run (a few hundred runs at PriBRP's default
    s = 8 cost more in call overhead than in arithmetic): the runs cover consecutive bins, so
    every bin's running size is asked exactly once and every run draws one threshold noise.
    All ``m`` query noises and ``m`` threshold noises (at most ``m`` runs) are drawn at once
    through :func:`.mechanisms.laplace` — the same distribution as one ``sparse_vector`` call
    per run (unused draws are independent of the output) — and run ``j``, starting at bin
    ``a``, stops at the first ``i >= a`` with ``C_i - C_{a-1} + ν_i >= θ + ρ_j`` (``C`` the
    cumulative sizes), i.e. ``C_i + ν_i >= θ + ρ_j + C_{a-1}``.
    """
    from ..svt import _first_at_or_above

    m = sizes.size
    scale = 2.0 / epsilon  # threshold: Lap(1/(eps/2)); queries: Lap(cΔ/(eps/2)), c = Δ = 1
    rho = laplace(scale, m, rng=rng)
    cumulative = np.cumsum(sizes)
    noisy = cumulative + laplace(scale, m, rng=rng)
    zeros = np.zeros(m)
    groups: list[tuple[int, int]] = []
    start = 0
    while start < m:
        before = cumulative[start - 1] if start else 0.0
        first = _first_at_or_above(noisy, zeros, threshold + rho[len(groups)] + before, start)
        if first < 0:
            break
        groups.append((start, first + 1))
        start = first + 1
    if start < m:  # line 12: the unfinished tail joins the last bin
        groups = groups[:-1] + [(groups[-1][0] if groups else 0, m)]
    return groups


#: The two sets of defaults of :func:`private_binned_residual_plot`'s depth, name -> rule.
BRP_DEFAULTS: Mapping[str, str] = MappingProxyType({
    "dpwidgets": "s = clip(round(log2(n eps) / 2) - 2, 3, the text's s): 2^s about "
                 "sqrt(n eps) / 4 initial bins",
    "text": "s = max{t : 2^t <= sqrt(n)} (Chen 2018, Alg. 13)",
})


def binned_residual_levels(n: int, epsilon: float, defaults: str = "dpwidgets") -> int:
    """The depth ``s`` (``2^s`` initial bins) of PriBRP's s-RecursiveMedians, from public inputs.

    ``defaults="text"``: ``s = max{t : 2^t <= sqrt(n)}`` (Chen 2018, Alg. 13), which ignores
    ε. ``defaults="dpwidgets"`` (the default): ``s = round(log2(n·ε) / 2) - 2``, at least 3
    and at most the text's ``s`` -- about ``sqrt(n·ε) / 4`` initial bins.

    Why: a bin of ``m`` records has a mean residual whose sampling error is about
    ``sqrt(p(1 - p) / m)`` and whose noise is about ``16 / (ε m)`` (the residual sum's
    ``Lap(2(1 + r - l)/(ε3/4))`` under replace-one, over the noisy size). The text's bins
    hold about ``sqrt(n)`` records, far fewer than where the noise stops dominating (``m`` of
    order ``10^3 / ε²``), so its plots are mostly noise and a misspecified model is seldom
    told from a correct one; fewer, larger bins keep the shape a misspecification draws and
    lose the noise. The benchmark ``benchmarks/diagnostics_brp_separation.py`` measures both
    rules. ``n`` and ε are public, so the rule costs no budget.

    Examples
    --------
    >>> binned_residual_levels(2000, 1.0), binned_residual_levels(2000, 1.0, defaults="text")
    (3, 5)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    if not isinstance(defaults, str) or defaults not in BRP_DEFAULTS:
        raise ValueError(f"defaults must be one of {sorted(BRP_DEFAULTS)}, got {defaults!r}")
    text = min(MAX_LEVELS, max(1, int(math.floor(math.log2(math.sqrt(n))))))
    if defaults == "text":
        return text
    return int(min(text, max(3, round(math.log2(n * epsilon) / 2.0) - 2)))


def binned_residuals_defaults(n: int, epsilon: float,
                              split: tuple[float, float, float] = (0.15, 0.15, 0.7),
                              s: int | None = None, gamma: float = 0.9,
                              threshold: float | None = None, neighbours: str = "replace-one",
                              defaults: str = "dpwidgets") -> tuple[int, float]:
    """PriBRP's depth ``s`` and Alg. 14 threshold ``θ`` from public inputs alone.

    ``s`` from :func:`binned_residual_levels` (``defaults``) unless given, and ``θ =
    n/(2^s·2) + 2b·ln(2/γ)``, ``b = 2·factor/(split[1]·eps)`` (``factor`` 2 under replace-one,
    1 under add/remove), unless given; ``n`` is the public row count (declared by the data
    owner), so both are the same on neighbours of any size and the door decides them before
    the data is read."""
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    fractions = [check_positive(f, "split") for f in split] if len(split) == 3 else None
    if fractions is None or not math.isclose(math.fsum(fractions), 1.0, rel_tol=1e-9):
        raise ValueError(f"split must be three positive fractions summing to 1, got {split!r}")
    gamma = _check_fraction(gamma, "gamma")
    factor = _check_neighbours(neighbours)
    levels = binned_residual_levels(n, epsilon, defaults)
    s = levels if s is None else check_positive_int(s, "s", maximum=MAX_LEVELS)
    if threshold is None:
        b = 2.0 / (fractions[1] * epsilon / factor)
        threshold = n / (2.0**s * 2.0) + 2.0 * b * math.log(2.0 / gamma)
    return s, float(check_finite_array(np.atleast_1d(threshold), "threshold")[0])


def private_binned_residual_plot(
    labels,
    probabilities,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    split: tuple[float, float, float] = (0.15, 0.15, 0.7),
    s: int | None = None,
    gamma: float = 0.9,
    threshold: float | None = None,
    median_variant: str = "nrs",
    neighbours: str = "replace-one",
    n: int | None = None,
    defaults: str = "dpwidgets",
) -> PrivateBinnedResiduals:
    """PriBRP: an epsilon-DP binned residual plot of a logistic model (Chen 2018 Alg. 13).

    Step 1: ``2^s`` bins by :func:`s_recursive_medians` on the predictions with ε1,
    ``s`` by :func:`binned_residual_levels` (the text's ``s = max{t : 2^t <= sqrt(n)}`` with
    ``defaults="text"``; by default about ``sqrt(n·ε)/4`` bins, far more accurate). Step 2: Alg. 14 merges consecutive small bins with ε2 and
    ``θ = n/(2^s·2) + 2b·ln(2/γ)`` where b is the Laplace scale of its threshold and queries
    (b = 2/ε2 gives the text's ``4 ln(2/γ)/ε2``; γ = 0.9 in the experiments). Step 3, per bin
    ``[l, r]``: the size with ``Lap(2/(ε3/2))``, and with ε3/4 each the sums of the predictions
    (sensitivity r - l) and of the residuals ``y - p`` (sensitivity 1 + r - l); averages are
    the noisy sums over the noisy size, clamped to ``[l, r]`` and ``[-r, 1 - l]``
    (eq. 4.11-4.12).

    Parameters
    ----------
    labels : array_like of {0, 1}
    probabilities : array_like in [0, 1]
        The model's predicted probabilities; residuals are ``labels - probabilities``.
    epsilon : float
    rng : numpy.random.Generator, optional
    split : (float, float, float)
        Fractions (ε1, ε2, ε3) of epsilon; (0.15, 0.15, 0.7) in Chen 2018 §4.4.3 (ρ = 0.15,
        Fig. 4.15). Must be positive and sum to 1.
    s : int, optional
        Depth of the recursion (default as above, clipped to :data:`MAX_LEVELS`; n >= 4
        needed for s >= 1).
    defaults : {"dpwidgets", "text"}
        Which rule gives ``s`` when it is not given (:data:`BRP_DEFAULTS`).
    gamma : float
        Failure probability in θ (Chen 2018 §4.4.2; not Alg. 12's γ).
    threshold : float, optional
        Override of θ.
    median_variant : {"nrs", "thesis"}
    neighbours : {"replace-one", "add/remove"}
        ``"add/remove"`` uses the text's scales for Alg. 14 and the sums. Under replace-one a
        record can move between two bins, so (i) two SVT runs of Alg. 14 can change — each run
        gets ε2/2 (scales ``Lap(4/ε2)``) — and (ii) two bins' sums change — the sums get
        twice the text's sensitivities. The size noise ``Lap(2/(ε3/2))`` is the text's in both
        modes (it is already the replace-one calibration).
    n : int, optional
        The public row count (declared by the data owner) that ``s`` and ``θ`` are decided
        from (:func:`binned_residuals_defaults`). Omitted: the number of records under
        replace-one; required under add/remove (:func:`public_n`).

    Returns
    -------
    PrivateBinnedResiduals

    Raises
    ------
    ValueError
        Labels not in {0, 1}, probabilities outside [0, 1] or NaN, mismatched lengths, fewer
        than 4 records, a bad split or gamma — before any randomness.

    Notes
    -----
    Privacy: epsilon-DP by sequential composition (Chen 2018 Thm 14), with ``s`` and ``θ``
    functions of the public ``n`` and ``eps`` only: ε1 (Thm 11), ε2 (Thm 13:
    each merged bin is one SVT run; a changed record touches the run(s) holding its bin(s)),
    ε3 (per bin ε3/2 + ε3/4 + ε3/4, bins disjoint). One correction to the text: the sum of
    predictions in ``[l, r]`` has sensitivity r (not r - l) when a record enters or leaves
    the bin, so the sums released are of ``p - l`` and of ``(y - p) + r`` (ranges ``[0, r - l]``
    and ``[0, 1 + r - l]``), and the averages are shifted back — same noise, correct bound.

    References
    ----------
    Chen 2018 §4.4.2, Alg. 12-14, eq. 4.8-4.12, Thm 13-14.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.diagnostics import private_binned_residual_plot
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=2000)
    >>> p = 1 / (1 + np.exp(-x))  # a logistic model's predictions
    >>> y = rng.binomial(1, p)  # outcomes drawn from them: a calibrated model
    >>> brp = private_binned_residual_plot(y, p, 1.0, rng, n=2000)
    >>> brp.mean_predicted.size == brp.bins.size - 1, sorted(brp.epsilon_parts)
    (True, ['adjust', 'averages', 'bins'])
    """
    records, _, _ = _scored_records(labels, probabilities, "probabilities")
    factor = _check_neighbours(neighbours)
    n = public_n(n, records.n, neighbours, minimum=4)
    epsilon = check_epsilon(epsilon)
    fractions = [check_positive(f, "split") for f in split] if len(split) == 3 else None
    s, threshold = binned_residuals_defaults(n, epsilon, split, s, gamma, threshold, neighbours,
                                             defaults)
    _median_cost_factor(median_variant, "median_variant")
    rng = check_rng(rng)

    parts = _parts(epsilon, bins=fractions[0] * epsilon, adjust=fractions[1] * epsilon,
                   averages=fractions[2] * epsilon)
    eps1, eps2, eps3 = parts["bins"], parts["adjust"], parts["averages"]
    records.check_scored(0.0, 1.0)
    y, p = records.scored()  # s-RecursiveMedians needs the order statistics of p

    # Step 1 (Alg. 12): 2^s initial bins.
    inner = _recursive_medians(p, s, 0.0, 1.0, median_budget(eps1, s, neighbours, median_variant),
                               median_variant, rng)
    initial = np.concatenate(([0.0], inner, [1.0]))
    index = np.clip(np.searchsorted(initial, p, side="right") - 1, 0, inner.size)
    sizes = np.bincount(index, minlength=inner.size + 1).astype(float)

    # Step 2 (Alg. 14): each SVT run gets eps2/factor; b is its threshold and query scale.
    eps_run = eps2 / factor
    groups = _adjust_bins(sizes, threshold, eps_run, rng)
    edges = np.concatenate(([0.0], [initial[stop] for _, stop in groups[:-1]], [1.0]))

    # Step 3 (eq. 4.9-4.12), vectorised over bins.
    k = edges.size - 1
    lo, hi = edges[:-1], edges[1:]
    width = hi - lo
    bin_of = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, k - 1)
    residual = y - p
    m = np.bincount(bin_of, minlength=k).astype(float)
    tot_p = np.bincount(bin_of, weights=p - lo[bin_of], minlength=k)
    tot_r = np.bincount(bin_of, weights=residual + hi[bin_of], minlength=k)
    m_noisy = m + laplace(2.0 / (eps3 / 2), k, rng=rng)
    # Real sums: one record moves tot_p by at most its bin's width and tot_r by at most
    # 1 + width, in `factor` bins; in those units the L1 sensitivity is `factor` (floating-
    # point safe inside floating_point_safe(), Mironov 2012). m is a count: laplace suffices.
    tot_p_noisy = laplace_reals(tot_p, factor, eps3 / 4, rng=rng, unit=width,
                                scale=factor * width / (eps3 / 4), max_changed=factor)
    tot_r_noisy = laplace_reals(tot_r, factor, eps3 / 4, rng=rng, unit=1.0 + width,
                                scale=factor * (1.0 + width) / (eps3 / 4), max_changed=factor)
    denom = np.maximum(m_noisy, 1.0)  # a noisy size below 1 would flip or explode the average
    mean_p = np.clip(lo + tot_p_noisy / denom, lo, hi)  # eq. 4.11
    mean_r = np.clip(tot_r_noisy / denom - hi, -hi, 1.0 - lo)  # eq. 4.12
    return PrivateBinnedResiduals(
        mean_predicted=mean_p, mean_residual=mean_r, bins=edges, initial_bins=initial,
        noisy_sizes=m_noisy, threshold=float(threshold), s=s, epsilon=epsilon,
        epsilon_parts=parts, n=int(n),
        guarantee=f"{eps_text(epsilon)}-DP (Chen 2018 Thm 14, {neighbours} calibration)",
        neighbours=NEIGHBOURS[neighbours],
    )


PriBRP = private_binned_residual_plot
