"""The three ways to run SVT over query answers, with the same checks and the same scales.

- :func:`sparse_vector` -> :class:`SVTResult`: one run over a vector of answers. The result
  holds every number a view needs to draw the run (outcomes, numeric outputs, budget split,
  scales) and, marked secret, the noisy threshold and answers for teaching views.
- :func:`sparse_vector_trials` -> :class:`SVTTrials`: many independent runs at once, vectorised
  over trials, each with the distribution of one :func:`sparse_vector` run (the privacy audits
  in :mod:`dpwidgets.engine.audit` draw their samples here). ``_Plan`` (the checks, scales and
  first draws of a run, and its numeric outputs) is shared by both.
- :class:`SparseVector`: the interactive form, one query at a time, refusing after c ⊤
  (:exc:`SVTExhausted`). The threshold noise is drawn once, at construction; every query draws
  fresh noise. The budget is the session's to charge; this object only enforces the cutoff.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from .._results import frozen as _readonly
from ..mechanisms import MAX_DRAWS, laplace_reals
from ..validation import check_positive_int, check_rng
from .variants import (
    VARIANTS,
    SVTNoise,
    SVTVariant,
    _check_answers_and_threshold,
    _check_params,
    _noise_of,
    _Params,
    _Units,
)

__all__ = ["SVTResult", "sparse_vector", "SVTTrials", "sparse_vector_trials", "MAX_TRIALS",
           "SVTAnswer", "SVTExhausted", "SparseVector"]


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


@dataclass(frozen=True, eq=False)
class _Config:
    """What every SVT here (a run, many runs, the interactive one) decides before it draws:
    the checked parameters ``p``, the variant ``spec``, its ``noise`` scales and (decided when
    first asked, after the rng is checked) the ``units`` of its comparisons."""

    p: _Params
    spec: SVTVariant
    noise: SVTNoise

    @functools.cached_property
    def units(self) -> _Units:
        return _Units(self.noise, self.p.sensitivity, self.p.threshold_sensitivity)

    @classmethod
    def of(cls, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
           threshold_sensitivity) -> _Config:
        p = _check_params(
            variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
        )
        spec = VARIANTS[p.variant]
        return cls(p, spec, _noise_of(spec, p))

    @property
    def privacy_loss(self) -> float:
        return self.spec.privacy_loss(self.p.epsilon, self.p.c, self.p.monotonic)


@dataclass(frozen=True, eq=False)
class _Plan(_Config):
    """Everything an SVT run decides before it draws: its :class:`_Config` and the checked
    ``answers`` and ``thresholds``."""

    answers: np.ndarray
    thresholds: np.ndarray

    @classmethod
    def check(cls, answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio,
              epsilon3, threshold_sensitivity) -> _Plan:
        config = _Config.of(
            variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
        )
        answers, thresholds = _check_answers_and_threshold(answers, threshold)
        return cls(config.p, config.spec, config.noise, answers, thresholds)

    def draw_start(self, trials: int | None, rng: np.random.Generator):
        """The threshold noise rho (one per trial; a float for a single run) and the noisy
        answers q_i + nu_i in comparison units, drawn in that order."""
        units, noise, n = self.units, self.noise, self.answers.size
        rho = units.noise(noise.threshold_scale, trials, rng=rng)
        shape = n if trials is None else (trials, n)
        return rho, units.of(self.answers) + units.noise(noise.query_scale, shape, rng=rng)

    def values(self, shape, noisy_answers, where, cols, rng: np.random.Generator) -> np.ndarray:
        """The numeric outputs (NaN where there is none) of the ⊤ queries at ``where`` of
        ``noisy_answers``; ``cols`` are their indices into the answers."""
        values = np.full(shape, np.nan)
        if self.spec.emits_values:
            # Lyu, Su & Li 2017 Alg. 3 line 7 (the leak)
            values[where] = self.units.values(noisy_answers[where])
        elif self.noise.value_scale is not None:
            # Lyu, Su & Li 2017 Alg. 7 line 8: fresh Laplace noise, its own budget epsilon3.
            # Up to c released answers per run, each moving by at most Δ: L1 cΔ over c
            # entries (floating-point safe inside floating_point_safe(), Mironov 2012).
            values[where] = laplace_reals(
                self.answers[cols], self.p.c * self.p.sensitivity, self.noise.epsilon3,
                rng=rng, scale=self.noise.value_scale, max_changed=self.p.c,
            )
        return values


def _resampling_run(noisy_answers: np.ndarray, bars: np.ndarray, rho, plan: _Plan,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """One run of a variant that redraws rho after every ⊤ (``dpbook``, Lyu, Su & Li 2017
    Alg. 2): find the first query at or above the current noisy threshold, redraw rho (line 7),
    continue; at most c vectorised steps. Returns the outcomes and the noisy threshold in
    force at every query, the number of queries examined and whether the run stopped."""
    n = noisy_answers.size
    outcomes = np.zeros(n, dtype=bool)
    noisy_threshold = np.empty(n, dtype=noisy_answers.dtype)
    start, count, stopped = 0, 0, False
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
        if count >= plan.p.c:  # line 8
            stopped = True
            break
        rho = plan.units.noise(plan.noise.resample_scale, rng=rng)
    return outcomes, noisy_threshold, start, stopped


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.svt import sparse_vector
    >>> r = sparse_vector([1, 9, 2, 12, 3], threshold=5, epsilon=4.0, c=2, rng=np.random.default_rng(0))
    >>> r.outcomes.tolist(), r.positives.tolist(), r.stopped
    ([False, True, False, True], [1, 3], True)
    >>> round(r.epsilon1, 3), round(r.epsilon2, 3)
    (1.136, 2.864)
    """
    plan = _Plan.check(
        answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
        threshold_sensitivity,
    )
    p, spec, noise = plan.p, plan.spec, plan.noise
    rng = check_rng(rng)
    units, n = plan.units, plan.answers.size
    bars = units.of(plan.thresholds)
    rho, noisy_answers = plan.draw_start(None, rng)
    if spec.resamples_threshold:
        outcomes, noisy_threshold, examined, stopped = _resampling_run(
            noisy_answers, bars, rho, plan, rng
        )
    else:
        noisy_threshold = bars + rho
        outcomes = noisy_answers >= noisy_threshold
        examined, stopped = n, False
        if spec.has_cutoff:
            tops = np.flatnonzero(outcomes)
            if tops.size >= p.c:  # abort right after the c-th ⊤ (Lyu, Su & Li 2017 Alg. 1 line 8)
                examined = int(tops[p.c - 1]) + 1
                stopped = True

    outcomes = outcomes[:examined]
    positives = np.flatnonzero(outcomes)
    values = plan.values(examined, noisy_answers, positives, positives, rng)

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
        privacy_loss=plan.privacy_loss,
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


#: The most runs :func:`sparse_vector_trials` simulates; also ``trials * len(answers)`` must
#: stay within :data:`.mechanisms.MAX_DRAWS`.
MAX_TRIALS = 10**7


@dataclass(frozen=True, eq=False)
class SVTTrials:
    """Independent runs of one SVT configuration on the same answers.

    Attributes
    ----------
    outcomes : numpy.ndarray of bool, shape (trials, n)
        ⊤ per trial and query; False for queries after the run stopped.
    examined : numpy.ndarray of int, shape (trials,)
        Number of queries examined in each trial.
    values : numpy.ndarray of float, shape (trials, n)
        Numeric outputs as in :class:`SVTResult`; NaN where there is none.
    variant, epsilon, noise, privacy_loss :
        The configuration, its :class:`SVTNoise` and the bound on the privacy loss.
    """

    outcomes: np.ndarray
    examined: np.ndarray
    values: np.ndarray
    variant: str
    epsilon: float
    noise: SVTNoise
    privacy_loss: float

    @property
    def trials(self) -> int:
        return int(self.outcomes.shape[0])


def sparse_vector_trials(
    answers,
    threshold,
    epsilon: float,
    variant: str = "standard",
    c: int = 1,
    sensitivity: float = 1.0,
    monotonic: bool = False,
    ratio: float | None = None,
    trials: int = 1000,
    rng: np.random.Generator | None = None,
    *,
    threshold_sensitivity: float = 0.0,
    epsilon3: float = 0.0,
) -> SVTTrials:
    """Simulate ``trials`` independent runs of :func:`sparse_vector`, vectorised over trials.

    Parameters
    ----------
    answers, threshold, epsilon, variant, c, sensitivity, monotonic, ratio, epsilon3, rng,
    threshold_sensitivity :
        As for :func:`sparse_vector` (same validation, same scales from :data:`VARIANTS`).
    trials : int
        Number of independent runs (>= 1).

    Returns
    -------
    SVTTrials
        ``outcomes`` (trials, n) with False after a stop, ``examined`` (trials,), ``values``.

    Raises
    ------
    ValueError, TypeError
        As for :func:`sparse_vector`; ``trials < 1``.

    Notes
    -----
    Each row has the distribution of one :func:`sparse_vector` run (the privacy argument is
    that of the variant; see :func:`sparse_vector`). Memory is O(trials × n): meant for audits
    with few queries and many trials. ``dpbook`` loops over queries (vectorised over trials),
    because its threshold changes after each ⊤.

    References
    ----------
    Lyu, Su & Li 2017 Alg. 1-7; Chen 2018 Alg. 5, Alg. 8.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.svt import sparse_vector_trials
    >>> t = sparse_vector_trials([0, 10], 5, epsilon=2.0, trials=2000, rng=np.random.default_rng(0))
    >>> t.outcomes.shape, t.privacy_loss
    ((2000, 2), 2.0)
    >>> t.outcomes.mean(axis=0).round(1).tolist()
    [0.0, 0.9]
    """
    plan = _Plan.check(
        answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
        threshold_sensitivity,
    )
    p, spec, noise = plan.p, plan.spec, plan.noise
    n = plan.answers.size
    trials = check_positive_int(trials, "trials", maximum=MAX_TRIALS)
    if trials * n > MAX_DRAWS:
        raise ValueError(
            f"trials x len(answers) must be at most MAX_DRAWS = {MAX_DRAWS} noise draws; "
            f"lower trials"
        )
    rng = check_rng(rng)
    units = plan.units
    thresholds = units.of(plan.thresholds)
    rho, noisy_answers = plan.draw_start(trials, rng)

    if spec.resamples_threshold:
        outcomes = np.zeros((trials, n), dtype=bool)
        count = np.zeros(trials, dtype=np.int64)
        examined = np.zeros(trials, dtype=np.int64)
        for i in range(n):
            active = count < p.c
            top = active & (noisy_answers[:, i] >= thresholds[i] + rho)
            outcomes[:, i] = top
            examined += active
            count += top
            n_top = int(top.sum())
            if n_top:
                rho[top] = units.noise(noise.resample_scale, n_top, rng=rng)
    else:
        outcomes = noisy_answers >= thresholds + rho[:, None]
        if spec.has_cutoff:
            before = np.cumsum(outcomes, axis=1) - outcomes  # ⊤'s strictly before query i
            live = before < p.c
            outcomes &= live
            examined = live.sum(axis=1)
        else:
            examined = np.full(trials, n, dtype=np.int64)

    # Each trial releases at most c answers (L1 cΔ): the grid is that of one trial. A boolean
    # mask selects in the row-major order of np.nonzero, so cols lines up with it.
    values = plan.values((trials, n), noisy_answers, outcomes, np.nonzero(outcomes)[1], rng)

    return SVTTrials(
        outcomes=outcomes,
        examined=np.asarray(examined, dtype=np.int64),
        values=values,
        variant=spec.name,
        epsilon=p.epsilon,
        noise=noise,
        privacy_loss=plan.privacy_loss,
    )


class SVTExhausted(RuntimeError):
    """Raised when an interactive SVT has already given its c ⊤ answers."""


@dataclass(frozen=True)
class SVTAnswer:
    """One interactive answer: truthy iff ⊤; ``value`` is the numeric output or NaN."""

    index: int
    above: bool
    value: float = math.nan

    def __bool__(self) -> bool:
        return self.above


class SparseVector:
    """Interactive SVT: answers one query at a time, refuses once c ⊤ have been given.

    The threshold noise is drawn at construction; each :meth:`query` draws fresh query noise.

    Parameters
    ----------
    threshold : float
        Default threshold T (a query may pass its own T_i; for ``generalized`` θ_i(D)).
    epsilon, variant, c, sensitivity, monotonic, ratio, epsilon3, rng, threshold_sensitivity :
        As for :func:`sparse_vector`.

    Attributes
    ----------
    positives : int
        Number of ⊤ answers given so far.
    remaining : int or float
        ⊤ answers still available (``math.inf`` for variants without cutoff).
    history : tuple of SVTAnswer
        Every answer given, in order.

    Raises
    ------
    ValueError, TypeError
        As for :func:`sparse_vector`, at construction or per query.
    SVTExhausted
        From :meth:`query` once c ⊤ have been given (variants with a cutoff).

    Notes
    -----
    Privacy and neighbours as for :func:`sparse_vector`: the whole interaction costs
    ``privacy_loss`` however many ⊥ answers it gives. The budget is the session's to charge
    (at construction); this object only enforces the cutoff.

    References
    ----------
    Lyu, Su & Li 2017 Alg. 1 / Alg. 7 (interactive stream of queries), Alg. 2; Chen 2018 Alg. 8.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.svt import SparseVector
    >>> sv = SparseVector(threshold=5, epsilon=4.0, c=1, rng=np.random.default_rng(0))
    >>> [bool(sv.query(a)) for a in (1, 2, 20)], sv.exhausted
    ([False, False, True], True)
    """

    def __init__(
        self,
        threshold: float,
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
    ) -> None:
        config = _Config.of(
            variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
        )
        self.threshold = self._check_scalar(threshold, "threshold")
        self._rng = check_rng(rng)
        self._config = config
        self.spec = config.spec
        self.noise = config.noise
        # Comparisons on a grid inside floating_point_safe(), decided here for the whole run.
        self._units = config.units
        self._rho = self._units.noise(self.noise.threshold_scale, rng=self._rng)
        self._history: list[SVTAnswer] = []
        self._noisy_thresholds: list[float] = []
        self._positives = 0

    @staticmethod
    def _check_scalar(value, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        return float(value)

    @property
    def variant(self) -> str:
        return self.spec.name

    @property
    def epsilon(self) -> float:
        return self._config.p.epsilon

    @property
    def c(self) -> int:
        return self._config.p.c

    @property
    def privacy_loss(self) -> float:
        return self._config.privacy_loss

    @property
    def positives(self) -> int:
        return self._positives

    @property
    def remaining(self) -> int | float:
        return self.c - self._positives if self.spec.has_cutoff else math.inf

    @property
    def exhausted(self) -> bool:
        return self.spec.has_cutoff and self._positives >= self.c

    @property
    def history(self) -> tuple[SVTAnswer, ...]:
        return tuple(self._history)

    @property
    def outcomes(self) -> np.ndarray:
        return np.array([a.above for a in self._history], dtype=bool)

    @property
    def secret_noisy_thresholds(self) -> np.ndarray:
        """T_i + rho in force at each query. SECRET: teaching mode only, never release."""
        return np.array(self._noisy_thresholds)

    def query(self, answer: float, threshold: float | None = None) -> SVTAnswer:
        """Test one query answer q_i(D) against the threshold; returns ⊤ (truthy) or ⊥.

        Raises
        ------
        SVTExhausted
            If c ⊤ have already been given.
        ValueError
            If ``answer`` or ``threshold`` is not a finite number.
        """
        if self.exhausted:
            raise SVTExhausted(
                f"this {self.variant!r} SVT has given its c={self.c} ⊤ answers and is spent; "
                f"start a new SparseVector with fresh budget to ask more"
            )
        answer = self._check_scalar(answer, "answer")
        t = self.threshold if threshold is None else self._check_scalar(threshold, "threshold")
        units = self._units
        noisy = units.of(answer) + units.noise(self.noise.query_scale, rng=self._rng)
        bar = units.of(t) + self._rho
        above = bool(noisy >= bar)
        value = math.nan
        if above:
            self._positives += 1
            if self.spec.emits_values:
                value = float(units.values(noisy))  # Lyu, Su & Li 2017 Alg. 3 line 7 (the leak)
            elif self.noise.value_scale is not None:
                value = float(laplace_reals(
                    answer, self.c * self._config.p.sensitivity, self.noise.epsilon3,
                    rng=self._rng, scale=self.noise.value_scale, max_changed=self.c,
                ))
            if self.spec.resamples_threshold and not self.exhausted:
                self._rho = units.noise(self.noise.resample_scale, rng=self._rng)
        result = SVTAnswer(len(self._history), above, value)
        self._history.append(result)
        self._noisy_thresholds.append(float(units.values(bar)))
        return result
