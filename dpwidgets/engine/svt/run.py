"""One SVT run over a vector of query answers: :func:`sparse_vector` -> :class:`SVTResult`.

The result holds every number a view needs to draw the run (outcomes, numeric outputs, budget
split, scales) and, marked secret, the noisy threshold and answers for teaching views.
``_plan`` (the checks and scales a run decides before it draws) is shared with
:func:`~dpwidgets.engine.svt.trials.sparse_vector_trials`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._results import frozen as _readonly
from .._validation import check_rng
from ..mechanisms import laplace_reals
from .variants import VARIANTS, _check_answers_and_threshold, _check_params, _noise_of, _Units

__all__ = ["SVTResult", "sparse_vector"]


@dataclass(frozen=True, eq=False)
class SVTResult:
    """The output of one SVT run, with everything a view needs to draw it.

    Attributes
    ----------
    outcomes : numpy.ndarray of bool
        One entry per query *examined*: True for ⊤, False for ⊥. Shorter than the input when
        the run aborted at its cutoff.
    values : numpy.ndarray of float
        Numeric outputs, same length: the noisy answer q_i + nu_i of ⊤ queries for
        ``roth2011``, q_i + Lap(cΔ/epsilon3) for ``standard`` with ``epsilon3 > 0``; NaN elsewhere.
    positives : numpy.ndarray of int
        Indices (into the input) of the ⊤ queries.
    n_queries, n_examined : int
        Number of queries given and examined.
    stopped : bool
        Whether the run aborted at its cutoff (the c-th ⊤).
    variant, private, guarantee, privacy_loss :
        The variant, whether it is epsilon-DP, its guarantee in words and the bound on the
        privacy loss actually incurred (``inf`` for the broken variants).
    epsilon, epsilon1, epsilon2, epsilon3 : float
        Total budget and its split.
    threshold_scale, query_scale, resample_scale, value_scale : float or None
        The Laplace scales used (see :class:`SVTNoise`).
    c, sensitivity, monotonic, ratio, threshold_sensitivity :
        The parameters of the run.
    noisy_threshold : numpy.ndarray of float
        T_i + rho in force when query i was examined (``dpbook`` redraws rho after each ⊤).
        SECRET internal state: never show or release it in analyst mode — knowing the noisy
        threshold voids the guarantee. For teaching views only.
    noisy_answers : numpy.ndarray of float
        q_i + nu_i as compared against the noisy threshold. SECRET, as above.
    """

    outcomes: np.ndarray
    values: np.ndarray
    positives: np.ndarray
    n_queries: int
    n_examined: int
    stopped: bool
    variant: str
    private: bool
    guarantee: str
    privacy_loss: float
    epsilon: float
    epsilon1: float
    epsilon2: float
    epsilon3: float
    threshold_scale: float
    query_scale: float
    resample_scale: float | None
    value_scale: float | None
    c: int
    sensitivity: float
    monotonic: bool
    ratio: float | None
    threshold_sensitivity: float
    noisy_threshold: np.ndarray = field(repr=False)
    noisy_answers: np.ndarray = field(repr=False)

    @property
    def examined(self) -> int:
        """Number of queries examined (alias of ``n_examined``)."""
        return self.n_examined


def _first_at_or_above(values: np.ndarray, bars: np.ndarray, offset: float, start: int) -> int:
    """Index of the first ``i >= start`` with ``values[i] >= bars[i] + offset``, or -1.

    Scans windows of doubling length so that a hit close to ``start`` costs little.
    """
    width = 64
    while start < values.size:
        stop = min(start + width, values.size)
        hit = np.flatnonzero(values[start:stop] >= bars[start:stop] + offset)
        if hit.size:
            return start + int(hit[0])
        start, width = stop, 2 * width
    return -1


def _plan(answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
          threshold_sensitivity):
    """Everything an SVT run decides before it draws: the checked parameters, the variant,
    its noise scales and the checked answers and thresholds."""
    p = _check_params(
        variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
    )
    answers, thresholds = _check_answers_and_threshold(answers, threshold)
    spec = VARIANTS[p.variant]
    return p, spec, _noise_of(spec, p), answers, thresholds


def sparse_vector(
    answers,
    threshold,
    epsilon: float,
    variant: str = "standard",
    c: int = 1,
    sensitivity: float = 1.0,
    monotonic: bool = False,
    ratio: float | None = None,
    epsilon3: float = 0.0,
    rng: np.random.Generator | None = None,
    *,
    threshold_sensitivity: float = 0.0,
) -> SVTResult:
    """Run one SVT variant over a vector of query answers.

    Parameters
    ----------
    answers : array_like, 1-D
        The true answers q_i(D), in the order the queries are examined.
    threshold : float or array_like
        The public threshold T, or one T_i per query (Lyu, Su & Li 2017 Alg. 1 and 6; testing q_i against
        T_i is the same as testing q_i - T_i against 0, Lyu, Su & Li 2017 §3). For ``generalized`` these are
        the data-dependent thresholds θ_i(D).
    epsilon : float
        Total privacy budget (> 0). For the broken variants this is only the nominal budget;
        see ``result.privacy_loss``.
    variant : str
        A key of :data:`VARIANTS`: ``standard``, ``dpbook``, ``roth2011``, ``lee_clifton``,
        ``stoddard``, ``chen2015``, ``gptt``, ``generalized``.
    c : int
        Cutoff: the run aborts after the c-th ⊤ (variants with ``has_cutoff``); also enters
        the noise scales.
    sensitivity : float
        Δ, the largest change of any q_i between neighbours (Δ1 for ``generalized``), > 0.
    monotonic : bool
        Promise that all queries move in the same direction between neighbours (e.g. counts
        under add/remove-one). Only ``standard`` uses it to halve its query noise (Lyu, Su & Li 2017 Thm 4.9)
        and ``lee_clifton`` to report its smaller loss; the others are unaffected.
    ratio : float, optional
        ``epsilon2/epsilon1``. ``standard``: default (2c)^(2/3), or c^(2/3) when monotonic
        (Lyu, Su & Li 2017 eq. 12, §4.3). ``gptt``: default 1; ``math.inf`` means epsilon1 = epsilon and no
        query noise (the instantiation attacked in Chen 2018 Alg. 6). The other variants fix their
        split and raise if ``ratio`` is given.
    epsilon3 : float
        ``standard`` only: the part of ``epsilon`` spent on releasing q_i + Lap(cΔ/epsilon3)
        for ⊤ queries (Lyu, Su & Li 2017 Alg. 7 line 8); ``epsilon1 + epsilon2 = epsilon - epsilon3``.
    rng : numpy.random.Generator, optional
        Source of randomness (default: a fresh unseeded generator).
    threshold_sensitivity : float
        ``generalized`` only: Δ2, the sensitivity of the thresholds θ_i(D).

    Returns
    -------
    SVTResult
        Outcomes per examined query, numeric outputs, budget split, scales, and (marked
        secret) the noisy threshold.

    Raises
    ------
    ValueError
        Unknown variant; ``epsilon`` not finite and > 0; NaN/inf or non-1-D ``answers``;
        ``threshold`` non-finite or of the wrong length; ``c < 1``; ``sensitivity <= 0``;
        bad or forbidden ``ratio``; ``epsilon3`` negative, ``>= epsilon`` or used with a
        variant other than ``standard``; ``threshold_sensitivity > 0`` outside
        ``generalized``. All checked before any noise is drawn.
    TypeError
        ``rng`` is not a ``numpy.random.Generator``.

    Notes
    -----
    Privacy (``standard``): the ⊥ answers cost nothing beyond the threshold noise (epsilon1)
    and each ⊤ costs epsilon2/c, so c ⊤ cost epsilon1 + epsilon2; numeric outputs add epsilon3.
    Neighbours: the proofs hold for any neighbour relation under which every query has
    sensitivity Δ (for counts: 1 under add/remove-one, monotonic; replace-one is not monotonic).

    The broken variants are implemented faithfully to be shown failing: ``roth2011``,
    ``stoddard``, ``chen2015`` and ``gptt`` are NOT differentially private for any finite
    epsilon, and ``lee_clifton`` is only ((1+6c)/4)·epsilon-DP. Never use them on
    confidential data.

    The vectorised implementation draws query noise for every query, including those after
    the cutoff; these draws are discarded unseen and do not affect privacy.

    Floating point: inside :func:`~.mechanisms.floating_point_safe` (analyst releases) the
    answers and thresholds are rounded to the power-of-two grid of a
    :class:`~.mechanisms.ComparisonGrid`, every noise is discrete Laplace in grid steps with
    its scale widened by about 2**-20 to pay for the rounding, and every comparison is
    between int64 steps, exactly (the grid's Notes); ``noisy_answers`` and
    ``noisy_threshold`` are then grid values. Outside, the textbook arithmetic on doubles.

    References
    ----------
    Lyu, Su & Li 2017 Alg. 1-7 (Fig. 1-2), Thm 4.7, §4.2 eq. 12, §4.3 Thm 4.9; Chen 2018 Alg. 5 (GPTT), Alg. 8
    and Thm 7 (generalized SVT).
    """
    p, spec, noise, answers, thresholds = _plan(
        answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
        threshold_sensitivity,
    )
    rng = check_rng(rng)
    n = answers.size
    units = _Units(noise, p.sensitivity, p.threshold_sensitivity)
    bars = units.of(thresholds)

    rho = units.noise(noise.threshold_scale, rng=rng)
    noisy_answers = units.of(answers) + units.noise(noise.query_scale, n, rng=rng)
    outcomes = np.zeros(n, dtype=bool)
    noisy_threshold = np.empty(n, dtype=noisy_answers.dtype)
    stopped = False

    if spec.resamples_threshold:
        # Lyu, Su & Li 2017 Alg. 2: find the first query above the current noisy threshold, redraw rho
        # (line 7), continue: at most c vectorised steps.
        start, count = 0, 0
        while start < n:
            first = _first_at_or_above(noisy_answers, bars, rho, start)
            if first < 0:
                noisy_threshold[start:] = bars[start:] + rho
                start = n
                break
            stop = first + 1
            noisy_threshold[start:stop] = bars[start:stop] + rho
            outcomes[stop - 1] = True
            count += 1
            start = stop
            if count >= p.c:  # line 8
                stopped = True
                break
            rho = units.noise(noise.resample_scale, rng=rng)
        examined = start
    else:
        noisy_threshold[:] = bars + rho
        outcomes[:] = noisy_answers >= noisy_threshold
        examined = n
        if spec.has_cutoff:
            tops = np.flatnonzero(outcomes)
            if tops.size >= p.c:  # abort right after the c-th ⊤ (Lyu, Su & Li 2017 Alg. 1 line 8)
                examined = int(tops[p.c - 1]) + 1
                stopped = True

    outcomes = outcomes[:examined]
    positives = np.flatnonzero(outcomes)
    values = np.full(examined, np.nan)
    if spec.emits_values:
        # Lyu, Su & Li 2017 Alg. 3 line 7 (the leak)
        values[positives] = units.values(noisy_answers[positives])
    elif noise.value_scale is not None:
        # Lyu, Su & Li 2017 Alg. 7 line 8: fresh Laplace noise, its own budget epsilon3.
        # Up to c released answers, each moving by at most Δ: L1 cΔ over c entries
        # (floating-point safe inside floating_point_safe(), Mironov 2012).
        values[positives] = laplace_reals(
            answers[positives], p.c * p.sensitivity, noise.epsilon3, rng=rng,
            scale=noise.value_scale, max_changed=p.c,
        )

    return SVTResult(
        outcomes=_readonly(outcomes),
        values=_readonly(values),
        positives=_readonly(positives),
        n_queries=n,
        n_examined=examined,
        stopped=stopped,
        variant=spec.name,
        private=spec.private,
        guarantee=spec.guarantee,
        privacy_loss=spec.privacy_loss(p.epsilon, p.c, p.monotonic),
        epsilon=p.epsilon,
        epsilon1=noise.epsilon1,
        epsilon2=noise.epsilon2,
        epsilon3=noise.epsilon3,
        threshold_scale=noise.threshold_scale,
        query_scale=noise.query_scale,
        resample_scale=noise.resample_scale,
        value_scale=noise.value_scale,
        c=p.c,
        sensitivity=p.sensitivity,
        monotonic=p.monotonic,
        ratio=p.ratio,
        threshold_sensitivity=p.threshold_sensitivity,
        noisy_threshold=_readonly(units.values(noisy_threshold[:examined])),
        noisy_answers=_readonly(units.values(noisy_answers[:examined])),
    )
