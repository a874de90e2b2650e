"""The empirical privacy-loss audit, and ready-to-run SVT counterexamples.

An epsilon-DP mechanism M satisfies ``P[M(D) ∈ E] <= exp(epsilon) P[M(D') ∈ E]`` for every pair
of neighbours D, D' and every output event E. The audit fixes D, D' and E, estimates both
probabilities by Monte Carlo and turns Clopper-Pearson bounds on them into a lower confidence
bound on the privacy loss: if that bound exceeds the epsilon a mechanism claims, the claim is
refuted (with the stated confidence). A bound at or below the claim proves nothing: an audit
can refute a guarantee, never establish one.

Where things are
----------------
- :func:`audit_privacy_loss` — the generic audit of any mechanism vectorised over trials.
- :class:`AuditResult` — every number a view needs; :meth:`AuditResult.from_counts` turns hit
  counts into bounds (no sampling) and :meth:`AuditResult.summary` into one sentence.
- :func:`svt_counterexample` / :class:`Counterexample` — the neighbouring query answers and
  the output event that break each broken SVT variant (Lyu, Su & Li 2017 Thm 3.5, §9.1, §9.2; Chen 2018 Thm 4).
- :func:`audit_samples` / :func:`output_features` — the black-box audit of any mechanism from
  its sampled outputs (dicts of public fields, arrays, tables): an event chosen among every
  statistic of the output on one half of the samples, bounded on the other half.
- :func:`audit_svt` — runs a variant of :mod:`.svt` on a counterexample and audits it; by
  default on the variant's counterexample sized for the audited epsilon (the rule is in
  :func:`svt_counterexample`'s Notes).

Sources: M. Lyu, D. Su, N. Li, *Understanding the Sparse Vector Technique for Differential
Privacy*, PVLDB 10(6), 2017 (Lyu, Su & Li 2017); Y. Chen, *Applying Differential Privacy with
Sparse Vector Technique*, PhD thesis, Duke University, 2018, Ch. 3 on GPTT (Chen 2018). The SVT noise is drawn only
by :func:`dpwidgets.engine.svt.sparse_vector_trials`; nothing here knows a variant's scales.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy import stats

from .._progress import Progress
from .mechanisms import MAX_DRAWS
from .svt import VARIANTS, SVTTrials, sparse_vector_trials
from .validation import (
    check_epsilon,
    check_positive_int,
    check_probability,
    check_rng,
)

__all__ = [
    "AuditResult",
    "audit_privacy_loss",
    "Counterexample",
    "COUNTEREXAMPLES",
    "svt_counterexample",
    "audit_svt",
    "audit_samples",
    "output_features",
    "MAX_TRIALS",
]

#: The most trials (per input, and per pilot) an audit runs: about a minute of a cheap
#: mechanism; a larger request is refused rather than left running.
MAX_TRIALS = 10**8

#: An audited mechanism: ``mechanism(data, trials, rng)`` -> a batch of ``trials`` outputs.
Mechanism = Callable[[Any, int, np.random.Generator], Any]
#: An output event: ``event(outputs)`` -> bool array of shape ``(trials,)``.
Event = Callable[[Any], np.ndarray]
#: What an audit's ``progress`` may be: ``None`` (a bar when someone watches), a bool (a bar
#: or none), or ``callback(batches_done, batches_total)`` (e.g. a widget's own bar).
ProgressArg = bool | Callable[[int, int | None], None] | None

# The four likelihood ratios checked, by the index pairs of the one-sided bounds they use
# (see AuditResult.from_counts). Written once, so that the names and the arithmetic agree.
_WITNESSES = (
    "P[M(D) ∈ E] / P[M(D') ∈ E]",
    "P[M(D') ∈ E] / P[M(D) ∈ E]",
    "P[M(D) ∉ E] / P[M(D') ∉ E]",
    "P[M(D') ∉ E] / P[M(D) ∉ E]",
)


# --------------------------------------------------------------------------------------------
# Statistics: from hit counts to a lower confidence bound on the privacy loss
# --------------------------------------------------------------------------------------------


def _check_count(value, name: str, trials: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral | np.integer):
        raise ValueError(f"{name} must be an integer in [0, trials={trials}], got {value!r}")
    if not 0 <= value <= trials:
        raise ValueError(f"{name} must be in [0, trials={trials}], got {value!r}")
    return int(value)


def _clopper_pearson(hits: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds, each holding with probability >= 1 - ``alpha``."""
    lower = float(stats.beta.ppf(alpha, hits, trials - hits + 1)) if hits > 0 else 0.0
    upper = float(stats.beta.ppf(1 - alpha, hits + 1, trials - hits)) if hits < trials else 1.0
    return lower, upper


def _log_ratio(numerator: float, denominator: float) -> float:
    """ln(a/b) with 0/b = -inf (no evidence) and a/0 = +inf for a > 0."""
    if numerator <= 0:
        return -math.inf
    if denominator <= 0:
        return math.inf
    return math.log(numerator / denominator)


def _format_loss(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:.3g}"


@dataclass(frozen=True)
class AuditResult:
    """The outcome of an empirical privacy-loss audit: what was observed and what it proves.

    Attributes
    ----------
    epsilon_lower : float
        Lower confidence bound on the privacy loss, ``max(0, ·)`` over the four ratios of
        ``witness``; finite whenever ``trials`` is (a zero count has a positive upper bound).
    epsilon_estimate : float
        Plug-in estimate: the largest of the four log-ratios of the observed frequencies
        (``inf`` when the event was hit on one input and never on the other; 0 if never hit).
    witness : str
        The ratio that attains ``epsilon_lower``, e.g. ``"P[M(D) ∈ E] / P[M(D') ∈ E]"``.
    hits, hits_neighbour : int
        Trials whose output fell in E, on D and on D'.
    trials : int
        Trials per input (the same number on D and on D').
    probability, probability_neighbour : float
        The observed frequencies ``hits / trials`` and ``hits_neighbour / trials``.
    interval, interval_neighbour : tuple of float
        Clopper-Pearson intervals for the two probabilities, each end a one-sided bound at
        level ``1 - alpha_per_bound``; all four ends hold together with probability
        >= ``confidence`` (Bonferroni).
    confidence : float
        The simultaneous confidence level, e.g. 0.95.
    claimed_epsilon : float or None
        The epsilon the mechanism claims, if one was given.
    label : str
        What was audited, for views.
    pilot_trials : int
        Trials per input spent (and discarded) choosing the event among candidates; 0 if the
        event was fixed in advance.
    event_index : int or None
        Index of the chosen candidate event, when several were given.
    """

    epsilon_lower: float
    epsilon_estimate: float
    witness: str
    hits: int
    hits_neighbour: int
    trials: int
    probability: float
    probability_neighbour: float
    interval: tuple[float, float]
    interval_neighbour: tuple[float, float]
    confidence: float
    claimed_epsilon: float | None = None
    label: str = ""
    pilot_trials: int = 0
    event_index: int | None = None

    @property
    def alpha_per_bound(self) -> float:
        """Error level of each of the four one-sided bounds: ``(1 - confidence) / 4``."""
        return (1.0 - self.confidence) / 4.0

    @property
    def exceeds_claim(self) -> bool | None:
        """True iff ``epsilon_lower > claimed_epsilon`` (the claim is refuted); None if no claim."""
        if self.claimed_epsilon is None:
            return None
        return self.epsilon_lower > self.claimed_epsilon

    def summary(self) -> str:
        """One sentence a widget can show, e.g. ``"audited privacy loss ≥ 2.3 with 95%
        confidence; claimed ε = 1 — refuted"``."""
        text = (
            f"audited privacy loss ≥ {_format_loss(self.epsilon_lower)} with "
            f"{100 * self.confidence:g}% confidence"
        )
        if self.claimed_epsilon is not None:
            verdict = (
                "refuted"
                if self.exceeds_claim
                else "not refuted: no violation found at this size (an audit can refute a "
                "claim, never establish it)"
            )
            text += f"; claimed ε = {self.claimed_epsilon:g} — {verdict}"
        text += (
            f" (bound from {self.witness}; point estimate {_format_loss(self.epsilon_estimate)};"
            f" E hit {self.hits:,} times on D and {self.hits_neighbour:,} on D' in"
            f" {self.trials:,} trials each)"
        )
        return text

    @classmethod
    def from_counts(
        cls,
        hits: int,
        hits_neighbour: int,
        trials: int,
        *,
        confidence: float = 0.95,
        claimed_epsilon: float | None = None,
        label: str = "",
        pilot_trials: int = 0,
        event_index: int | None = None,
    ) -> AuditResult:
        """Bound the privacy loss from the hit counts of one event on D and on D'.

        Parameters
        ----------
        hits, hits_neighbour : int
            Trials (out of ``trials``) whose output was in E, on D and on D'.
        trials : int
            Trials per input, >= 1.
        confidence : float
            Simultaneous confidence level in (0, 1).
        claimed_epsilon : float, optional
            The epsilon to test (>= 0).
        label, pilot_trials, event_index :
            Stored as given (see :class:`AuditResult`).

        Returns
        -------
        AuditResult

        Raises
        ------
        ValueError
            Counts outside ``[0, trials]``, ``trials < 1``, ``confidence`` outside (0, 1),
            ``claimed_epsilon`` negative or not finite.

        Notes
        -----
        With ``alpha = 1 - confidence``, four one-sided Clopper-Pearson bounds are computed at
        level ``1 - alpha/4`` each: ``p >= lo``, ``p <= hi``, ``p' >= lo'``, ``p' <= hi'``. By
        the union bound all four hold together with probability >= ``confidence``, and then
        each of ``ln(lo/hi')``, ``ln(lo'/hi)``, ``ln((1-hi)/(1-lo'))``, ``ln((1-hi')/(1-lo))``
        is below the true log-ratio it bounds (E and its complement, both directions), hence
        below epsilon for an epsilon-DP mechanism. Their maximum is reported. If E is never
        hit on D', ``hi' = 1 - (alpha/4)^(1/trials) > 0``, so the bound stays finite and
        grows like ``ln(trials)``: for a mechanism with unbounded loss, more trials prove more.
        """
        trials = check_positive_int(trials, "trials")
        hits = _check_count(hits, "hits", trials)
        hits_neighbour = _check_count(hits_neighbour, "hits_neighbour", trials)
        confidence = check_probability(confidence, "confidence")
        if claimed_epsilon is not None:
            claimed_epsilon = check_epsilon(claimed_epsilon, "claimed_epsilon", allow_zero=True)

        alpha = (1.0 - confidence) / 4.0
        lo, hi = _clopper_pearson(hits, trials, alpha)
        lo2, hi2 = _clopper_pearson(hits_neighbour, trials, alpha)
        p, p2 = hits / trials, hits_neighbour / trials
        lower = (
            _log_ratio(lo, hi2),
            _log_ratio(lo2, hi),
            _log_ratio(1 - hi, 1 - lo2),
            _log_ratio(1 - hi2, 1 - lo),
        )
        estimate = (
            _log_ratio(p, p2),
            _log_ratio(p2, p),
            _log_ratio(1 - p, 1 - p2),
            _log_ratio(1 - p2, 1 - p),
        )
        best = int(np.argmax(lower))
        return cls(
            epsilon_lower=max(0.0, lower[best]),
            epsilon_estimate=max(0.0, *estimate),
            witness=_WITNESSES[best],
            hits=hits,
            hits_neighbour=hits_neighbour,
            trials=trials,
            probability=p,
            probability_neighbour=p2,
            interval=(lo, hi),
            interval_neighbour=(lo2, hi2),
            confidence=confidence,
            claimed_epsilon=claimed_epsilon,
            label=label,
            pilot_trials=pilot_trials,
            event_index=event_index,
        )


# --------------------------------------------------------------------------------------------
# The generic audit
# --------------------------------------------------------------------------------------------


def _event_mask(event: Event, outputs, size: int) -> np.ndarray:
    mask = np.asarray(event(outputs))
    if mask.dtype != bool or mask.shape != (size,):
        raise ValueError(
            f"event must return a boolean array of shape ({size},) (one entry per trial), "
            f"got dtype {mask.dtype} and shape {mask.shape}"
        )
    return mask


def _count_hits(
    mechanism: Mechanism,
    data,
    events: Sequence[Event],
    trials: int,
    batch_size: int,
    rng: np.random.Generator,
    bar: Progress | None = None,
) -> np.ndarray:
    """Hits of each event in ``trials`` runs of ``mechanism(data)``, drawn in batches (one
    step of ``bar`` per batch)."""
    hits = np.zeros(len(events), dtype=np.int64)
    done = 0
    while done < trials:
        size = min(batch_size, trials - done)
        outputs = mechanism(data, size, rng)
        for j, event in enumerate(events):
            hits[j] += np.count_nonzero(_event_mask(event, outputs, size))
        done += size
        if bar is not None:
            bar.update()
    return hits


def _audit_bar(progress: ProgressArg, total: int, label: str) -> Progress:
    """The bar of an audit of ``total`` batches: see ``audit_privacy_loss(progress=)``."""
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise TypeError(f"progress must be None, a bool or callable(done, total), got {progress!r}")
    if callable(progress):
        return Progress(total=total, disable=True, callback=progress)
    # What is audited, without its source in parentheses: one short line before the bar.
    desc = f"audit: {label.split(' (')[0]}" if label else "audit"
    # leave=False: a lesson auditing several variants in a loop keeps no finished bars.
    return Progress(total=total, desc=desc[:60], disable=None if progress is None else not progress,
                    leave=False, unit="batch")


def audit_privacy_loss(
    mechanism: Mechanism,
    data,
    neighbour,
    event: Event | Sequence[Event],
    *,
    trials: int = 100_000,
    confidence: float = 0.95,
    claimed_epsilon: float | None = None,
    rng: np.random.Generator | None = None,
    batch_size: int | None = None,
    pilot_trials: int | None = None,
    label: str = "",
    progress: ProgressArg = None,
) -> AuditResult:
    """Audit a mechanism's privacy loss on two neighbouring inputs and an output event.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, trials, rng)`` returns ``trials`` independent outputs at once (any
        object the events understand: an array with one row per trial, an
        :class:`~dpwidgets.engine.svt.SVTTrials`, ...), drawing all randomness from ``rng``.
    data, neighbour : object
        The two neighbouring inputs D and D', passed to ``mechanism`` as they are.
    event : callable or sequence of callables
        ``event(outputs)`` returns a bool array of shape ``(trials,)``: which outputs lie in E.
        E must be fixed before sampling. Several candidates may be given: then a separate
        *pilot* batch picks the one with the largest pilot lower bound, the pilot samples are
        discarded, and only the chosen event is evaluated on fresh samples — so the reported
        bound keeps its confidence level.
    trials : int
        Runs per input (>= 1). The bound tightens like 1/sqrt(trials) for an event with a
        bounded ratio, and grows like ln(trials) when E is impossible under D'.
    confidence : float
        Simultaneous confidence level in (0, 1) of the four one-sided Clopper-Pearson bounds,
        each at ``1 - (1 - confidence)/4`` (see :meth:`AuditResult.from_counts`).
    claimed_epsilon : float, optional
        The epsilon the mechanism claims; sets ``result.exceeds_claim``.
    rng : numpy.random.Generator, optional
        Source of randomness, passed to every ``mechanism`` call (default: fresh, unseeded).
    batch_size : int, optional
        Largest number of trials per ``mechanism`` call, to bound memory (default: all).
    pilot_trials : int, optional
        Runs per input of the pilot batch when several events are given (default
        ``max(1, trials // 4)``); must not be given for a single event.
    label : str
        What is audited, stored in the result.
    progress : bool or callable, optional
        Progress over the batches (pilot and main, both inputs): ``None`` (default) draws a
        bar when someone watches (a terminal, a notebook; see :mod:`dpwidgets._progress`),
        ``True`` / ``False`` always / never; a callable is called as
        ``progress(batches_done, batches_total)`` after every batch instead (e.g. to feed a
        widget's own bar). The batches, hence the result, are the same either way.

    Returns
    -------
    AuditResult

    Raises
    ------
    ValueError
        ``trials``, ``batch_size`` or ``pilot_trials`` not a positive integer; ``confidence``
        outside (0, 1); ``claimed_epsilon`` negative or not finite; no event; ``pilot_trials``
        with a single event; an event that does not return a bool array of shape (trials,).
    TypeError
        ``mechanism`` or an event not callable; ``rng`` not a ``numpy.random.Generator``;
        ``progress`` neither None, a bool nor callable.

    Notes
    -----
    If M is epsilon-DP (for the neighbour relation that D, D' belong to), then
    ``result.epsilon_lower <= epsilon`` with probability at least ``confidence``. The audit
    touches no confidential data and spends no budget: it is run on chosen, public inputs.

    References
    ----------
    Clopper & Pearson 1934 (exact binomial intervals).
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(data, trials, rng), got {mechanism!r}")
    events = list(event) if isinstance(event, Sequence) else [event]
    if not events:
        raise ValueError("event must be a callable or a non-empty sequence of callables")
    for candidate in events:
        if not callable(candidate):
            raise TypeError(f"event must be callable as event(outputs), got {candidate!r}")
    trials = check_positive_int(trials, "trials", maximum=MAX_TRIALS)
    confidence = check_probability(confidence, "confidence")
    if claimed_epsilon is not None:
        claimed_epsilon = check_epsilon(claimed_epsilon, "claimed_epsilon", allow_zero=True)
    batch_size = (trials if batch_size is None
                  else check_positive_int(batch_size, "batch_size", maximum=MAX_TRIALS))
    if len(events) == 1 and pilot_trials is not None:
        raise ValueError("pilot_trials is only used to choose among several events; pass one event")
    if len(events) > 1:
        pilot_trials = (
            max(1, trials // 4)
            if pilot_trials is None
            else check_positive_int(pilot_trials, "pilot_trials", maximum=MAX_TRIALS)
        )
    rng = check_rng(rng)
    batches = 2 * math.ceil(trials / batch_size)
    if len(events) > 1:
        batches += 2 * math.ceil(pilot_trials / batch_size)
    bar = _audit_bar(progress, batches, label)

    with bar:
        return _audit(mechanism, data, neighbour, events, trials, confidence, claimed_epsilon,
                      rng, batch_size, pilot_trials, label, bar)


def _audit(mechanism, data, neighbour, events, trials, confidence, claimed_epsilon, rng,
           batch_size, pilot_trials, label, bar) -> AuditResult:
    """The sampling of :func:`audit_privacy_loss`, its arguments checked."""
    chosen, used_pilot = 0, 0
    if len(events) > 1:
        pilot = _count_hits(mechanism, data, events, pilot_trials, batch_size, rng, bar)
        pilot2 = _count_hits(mechanism, neighbour, events, pilot_trials, batch_size, rng, bar)
        scores = [
            AuditResult.from_counts(int(a), int(b), pilot_trials, confidence=confidence)
            for a, b in zip(pilot, pilot2, strict=True)
        ]
        chosen = max(
            range(len(events)), key=lambda j: (scores[j].epsilon_lower, scores[j].epsilon_estimate)
        )
        used_pilot = pilot_trials

    hits = _count_hits(mechanism, data, events[chosen : chosen + 1], trials, batch_size, rng,
                       bar)
    hits2 = _count_hits(mechanism, neighbour, events[chosen : chosen + 1], trials, batch_size,
                        rng, bar)
    return AuditResult.from_counts(
        int(hits[0]),
        int(hits2[0]),
        trials,
        confidence=confidence,
        claimed_epsilon=claimed_epsilon,
        label=label,
        pilot_trials=used_pilot,
        event_index=chosen if len(events) > 1 else None,
    )


# --------------------------------------------------------------------------------------------
# SVT counterexamples
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Counterexample:
    """Neighbouring query answers and an output event that expose a broken SVT variant.

    The event is "the run's output agrees with ``pattern`` on at least ``min_agree``
    queries": query i agrees if it was examined, its outcome is ``pattern[i]`` and, when
    ``pattern[i]`` is ⊤ and ``value_at_most`` is set, its released numeric value (if the
    variant releases one) is at most ``value_at_most``. With ``min_agree = len(pattern)`` this
    is the output vector ``a`` of the text.

    Attributes
    ----------
    name : str
        The broken variant the inputs were built against (a key of :data:`COUNTEREXAMPLES`).
    answers, answers_neighbour : numpy.ndarray
        q(D) and q(D'); every query differs by at most Δ = 1 (sensitivity 1).
    threshold : float
        The public threshold T (0 in all the texts' examples).
    pattern : numpy.ndarray of bool
        The output vector of the text, True for ⊤.
    c : int
        Cutoff to run with: the number of ⊤ in ``pattern``, the smallest cutoff under which
        the pattern can occur (the variants without cutoff ignore it; ``standard`` and
        ``dpbook`` need it to be able to produce the pattern at all).
    min_agree : int
        Queries that must agree with ``pattern`` for the event to occur.
    value_at_most : float or None
        Bound on the numeric output of a ⊤ query (``roth2011``), or None.
    trials : int
        Runs per input that expose the variant with a lower bound well above the claim, at
        epsilon = 1 or at the epsilon the construction was sized for.
    source : str
        Where the construction comes from.
    description : str
        The construction in one line, for views.
    pilot : bool
        Whether :func:`audit_svt` should choose ``min_agree`` on a pilot batch by default
        (the epsilon-sized ``chen2015`` / ``gptt`` constructions, see :func:`svt_counterexample`).
    """

    name: str
    answers: np.ndarray = field(repr=False)
    answers_neighbour: np.ndarray = field(repr=False)
    threshold: float
    pattern: np.ndarray = field(repr=False)
    c: int
    min_agree: int
    value_at_most: float | None
    trials: int
    source: str
    description: str
    pilot: bool = False

    @property
    def n_queries(self) -> int:
        return int(self.pattern.size)

    def agreement(self, runs: SVTTrials) -> np.ndarray:
        """Number of queries agreeing with ``pattern`` in each run, shape ``(trials,)``."""
        n = self.n_queries
        agree = runs.outcomes[:, :n] == self.pattern
        agree &= np.arange(n) < runs.examined[:, None]  # an unexamined query agrees with nothing
        if self.value_at_most is not None:
            # "not above" rather than "<=": a ⊤ released without a value (NaN) passes.
            too_high = runs.values[:, :n] > self.value_at_most
            agree &= ~(too_high & self.pattern)
        return agree.sum(axis=1)

    def event(self, runs: SVTTrials) -> np.ndarray:
        """The output event E: at least ``min_agree`` queries agree with ``pattern``."""
        return self.agreement(runs) >= self.min_agree

    def event_at_least(self, k: int) -> Event:
        """The event "at least ``k`` queries agree", for other choices of ``min_agree``."""
        k = check_positive_int(k, "k")
        return lambda runs: self.agreement(runs) >= k


def _stoddard(m, c, value_at_most):
    # Lyu, Su & Li 2017 Proof 3.6: q(D) = <0,1>, q(D') = <1,0>, T = 0, a = <⊥,⊤>.
    return (
        np.array([0.0, 1.0]),
        np.array([1.0, 0.0]),
        np.array([False, True]),
        None,
        20_000,
        "Lyu, Su & Li 2017 Thm 3.5 (Proof 3.6)",
        "q(D)=⟨0,1⟩, q(D')=⟨1,0⟩, T=0, a=⟨⊥,⊤⟩: possible on D, impossible on D' without query noise",
    )


def _roth2011(m, c, value_at_most):
    # Lyu, Su & Li 2017 Proof 9.12 with c = 1: q(D) = 0^m Δ, q(D') = Δ^m 0, a = ⊥^m 0. An exact value has
    # probability 0, so "a_{m+1} = 0" becomes "a_{m+1} <= value_at_most": the released value
    # still caps the noisy threshold, which is the leak.
    m = 8 if m is None else m
    value_at_most = 1.5 if value_at_most is None else value_at_most
    return (
        np.r_[np.zeros(m), 1.0],
        np.r_[np.ones(m), 0.0],
        np.r_[np.zeros(m, dtype=bool), True],
        value_at_most,
        200_000,
        "Lyu, Su & Li 2017 §9.1 (Thm 9.11, Proof 9.12)",
        f"q(D)=0^{m}·1, q(D')=1^{m}·0, T=0, c=1, a=⊥^{m} then a numeric output ≤ "
        f"{value_at_most:g}: the value reveals that the noisy threshold is below it, after "
        "which every ⊥ costs again",
    )


def _chen2015(m, c, value_at_most):
    # Lyu, Su & Li 2017 Proof 9.14: q(D) = 0^{2m}, q(D') = 1^m (-1)^m, a = ⊥^m ⊤^m.
    m = 4 if m is None else m
    return (
        np.zeros(2 * m),
        np.r_[np.ones(m), -np.ones(m)],
        np.r_[np.zeros(m, dtype=bool), np.ones(m, dtype=bool)],
        None,
        200_000,
        "Lyu, Su & Li 2017 §9.2 (Thm 9.13, Proof 9.14)",
        f"q(D)=0^{2 * m}, q(D')=1^{m}·(−1)^{m}, T=0, a=⊥^{m}⊤^{m}: the loss grows like "
        "m·ε2 with the number of queries",
    )


def _gptt(m, c, value_at_most):
    # Chen 2018 Thm 4 (finite eps2): q(D1) = 0^t 1^t, q(D2) = 1^t 0^t, o = ⊥^t ⊤^t, with t = m.
    m = 5 if m is None else m
    return (
        np.r_[np.zeros(m), np.ones(m)],
        np.r_[np.ones(m), np.zeros(m)],
        np.r_[np.zeros(m, dtype=bool), np.ones(m, dtype=bool)],
        None,
        100_000,
        "Chen 2018 Thm 4 inputs (its proof is flawed, Lyu, Su & Li 2017 §9.3); ratio ≥ exp(m·ε2) by the "
        "pointwise argument of Lyu, Su & Li 2017 §9.2",
        f"q(D)=0^{m}·1^{m}, q(D')=1^{m}·0^{m}, T=0, a=⊥^{m}⊤^{m}",
    )


def _lee_clifton(m, c, value_at_most):
    # Built here (Lyu, Su & Li 2017 gives the bound, not an input): Chen 2018 Thm 4's straddling inputs with c ⊤
    # queries, so the run stops right after them. m ⊥ queries pin the noisy threshold; each ⊤
    # then costs up to 2·eps2 instead of 2·eps2/c, so the loss approaches ((1+6c)/4)·eps.
    m = 6 if m is None else m
    c = 2 if c is None else c
    return (
        np.r_[np.zeros(m), np.ones(c)],
        np.r_[np.ones(m), np.zeros(c)],
        np.r_[np.zeros(m, dtype=bool), np.ones(c, dtype=bool)],
        None,
        100_000,
        "Lyu, Su & Li 2017 §3.2 (Alg. 4 is only ((1+6c)/4)ε-DP); inputs in the style of Chen 2018 Thm 4",
        f"q(D)=0^{m}·1^{c}, q(D')=1^{m}·0^{c}, T=0, cutoff c={c}, a=⊥^{m}⊤^{c}",
    )


#: The broken variants that have a counterexample, and the builder of each.
COUNTEREXAMPLES: dict[str, Callable[..., tuple]] = {
    "stoddard": _stoddard,
    "roth2011": _roth2011,
    "chen2015": _chen2015,
    "gptt": _gptt,
    "lee_clifton": _lee_clifton,
}


# Sizing a counterexample for a given epsilon (the rule of svt_counterexample(epsilon=...)).
# Two regimes bound what n trials can prove, with z ~ 2.2 the one-sided normal quantile at
# level (1 - 0.95)/4 and E a fixed event of exact log-ratio L:
#  - small epsilon: L = lam * epsilon for a shape whose probabilities p, p' hardly depend on
#    epsilon (every scale is proportional to 1/epsilon and the sensitivity 1 is a small shift),
#    and the bound is L - z * sqrt(1/(n p) + 1/(n p')): n must grow like A / epsilon^2;
#  - large epsilon: E is (nearly) impossible on one input, and the bound is about
#    ln(n q / ln(4/0.05)) for the probability q of E on the other: n must grow like
#    K * exp(1.5 epsilon).
# A and K (per variant) come from the exact event probabilities, computed by numerical
# integration over the noisy threshold, as the trials at which a pessimistic draw (hits 2 SD
# off) still gives a bound >= 1.65 epsilon (1.1 x the 1.5 epsilon aimed for). The trials are
# capped so that a call simulates at most _SLOTS query answers per input (an interactive
# wait); where the cap binds, the variant may not be exposed (see svt_counterexample).
_SLOTS = 10_000_000
_PILOT_SLOTS = 4_000_000  # chen2015 / gptt: up to 2m candidate events, plus a pilot batch
_LN_ALPHA = math.log(4 / 0.05)  # ln(1/alpha) of each one-sided bound at 95% confidence


def _epsilon_sizes(variant: str, epsilon: float, base_trials: int) -> dict:
    """Sizes of ``variant``'s counterexample for ``epsilon`` (see the comment above)."""
    if variant == "stoddard":
        # E = <⊥,⊤> is impossible on D' (Lyu, Su & Li 2017 Proof 3.6): the bound is ln(n p / ln(1/alpha))
        # with p = P[0 < rho <= 1] = (1 - exp(-epsilon/2)) / 2, rho ~ Lap(2/epsilon).
        p = (1.0 - math.exp(-epsilon / 2.0)) / 2.0
        wanted = _LN_ALPHA * math.exp(1.5 * epsilon + 1.0) / p
        return {"trials": _trials(base_trials, wanted, 2)}
    if variant == "roth2011":
        # m ⊥ each worth epsilon/2 while the released value caps the noisy threshold; the cap
        # sits half a noise scale (1/epsilon) above the ⊤ query's answer, where the exact
        # loss is about 2.5-2.8 epsilon with m = 6; m = 5 below epsilon = 0.2, where trials
        # are the bottleneck and the likelier pattern helps. A = 65,000, K = 700.
        m = 6 if epsilon >= 0.2 else 5
        wanted = max(65_000 / epsilon**2, 700 * math.exp(1.5 * epsilon))
        return {"m": m, "value_at_most": 1.0 + 1.0 / epsilon, "trials": _trials(base_trials, wanted, m + 1)}
    if variant in ("chen2015", "gptt"):
        # The loss grows like t * epsilon2 = t * epsilon/2 with the number t of agreeing ⊥/⊤
        # pairs (Lyu, Su & Li 2017 §9.2), so t = 3/epsilon pairs give a loss of several epsilon on the
        # event "at least k agree", k chosen on a pilot batch (the exact pattern is too rare
        # for large t). Its probabilities are not small, so few trials suffice (K = 130).
        default = 4 if variant == "chen2015" else 5
        m = min(64, max(default, math.ceil(3.0 / epsilon)))
        wanted = 130 * math.exp(1.5 * epsilon)
        trials = min(max(base_trials, math.ceil(wanted)), _PILOT_SLOTS // (2 * m))
        return {"m": m, "trials": trials, "pilot": True}
    if variant == "lee_clifton":
        # With c = 2 the proven loss is 3.25 epsilon (Lyu, Su & Li 2017 §3.2); m = 3 ⊥ queries already push
        # the threshold into the tail where the event's exact loss is 2.66 epsilon, with the
        # likeliest pattern (p about 0.01 at every small epsilon). A = 9,500, K = 110.
        wanted = max(9_500 / epsilon**2, 110 * math.exp(1.5 * epsilon))
        return {"m": 3, "c": 2, "trials": _trials(base_trials, wanted, 5)}
    raise ValueError(f"variant must be one of {sorted(COUNTEREXAMPLES)}, got {variant!r}")


def _trials(base: int, wanted: float, n_queries: int) -> int:
    return int(min(max(base, math.ceil(wanted)), _SLOTS // n_queries))


def svt_counterexample(
    variant: str,
    *,
    epsilon: float | None = None,
    m: int | None = None,
    c: int | None = None,
    min_agree: int | None = None,
    value_at_most: float | None = None,
) -> Counterexample:
    """The inputs and the event that expose a broken SVT variant (Lyu, Su & Li 2017 §3, §9; Chen 2018 Thm 4).

    Parameters
    ----------
    variant : str
        ``"stoddard"``, ``"roth2011"``, ``"chen2015"``, ``"gptt"`` or ``"lee_clifton"``.
    m : int, optional
        Size of the construction: the ⊥ queries before the numeric output (``roth2011``,
        default 8), the pairs ⊥/⊤ (``chen2015``, default 4; ``gptt``, default 5 — the t of
        Chen 2018), the ⊥ queries before the c ⊤ (``lee_clifton``, default 6). ``stoddard`` has
        none (two queries).
    c : int, optional
        ``lee_clifton`` only: its cutoff and number of ⊤ queries (default 2).
    min_agree : int, optional
        Queries that must agree with the pattern (default: all, the text's event). Fewer
        turns the rare exact pattern into a likelier event whose loss keeps growing with
        ``m``; choose it in advance, or let :func:`audit_svt` choose it on a pilot batch.
    value_at_most : float, optional
        ``roth2011`` only: the bound on the released value (default 1.5).
    epsilon : float, optional
        Size the construction for this epsilon instead of epsilon = 1: every size not given
        explicitly, and ``trials``, follow the rule in the Notes (this is what
        :func:`audit_svt` uses by default).

    Returns
    -------
    Counterexample

    Raises
    ------
    ValueError
        Unknown variant; ``m``, ``c``, ``min_agree`` out of range; a parameter given to a
        variant it does not apply to.

    Notes
    -----
    The defaults were sized (by numerical integration of the event probabilities, not on
    audit samples) so that at epsilon = 1, ``trials`` runs give a lower bound of about 2.5-2.8
    (6.8 for ``stoddard``), i.e. well above 1.5 × the claim, in a fraction of a second. At much
    smaller epsilon the per-query loss shrinks with epsilon, and at larger epsilon the bound,
    which grows only like ln(trials) once E is (nearly) impossible on one input, falls below
    epsilon: pass ``epsilon=`` to size the construction for it.

    Sizing rule (``epsilon`` given). Every noise scale is proportional to 1/epsilon, so at
    small epsilon a shape's event probabilities hardly depend on epsilon while its loss is
    ``lam * epsilon``: the trials that resolve the loss grow like ``A / epsilon**2``. At large
    epsilon E is nearly impossible on one input and the bound is about
    ``ln(trials * q / ln(80))`` for E's probability q on the other: trials grow like
    ``K * exp(1.5 epsilon)``. A, K and the shapes were read off the exact event probabilities
    (numerical integration over the noisy threshold) as the trials at which a draw 2 SD off
    still gives 1.65 epsilon; trials never go below the epsilon = 1 defaults and are capped at
    10 million simulated query answers per input (4 million for chen2015 / gptt, which
    evaluate up to 2m candidate events), so an audit stays an interactive wait.

    - ``stoddard``: the same two queries; trials ``ln(80) e^(1.5 eps + 1) / p`` with
      ``p = (1 - e^(-eps/2))/2`` the probability of E on D (E is impossible on D').
    - ``roth2011``: m = 6 (m = 5 below epsilon = 0.2), ``value_at_most = 1 + 1/epsilon`` (half
      the noise scale 2/epsilon above the ⊤ query's answer), trials ``max(65,000/eps^2,
      700 e^(1.5 eps))``; exact loss about 2.5-2.8 epsilon.
    - ``chen2015`` / ``gptt``: ``m = ceil(3/epsilon)`` pairs (at least the defaults 4 / 5, at most
      64), since the loss grows like m * epsilon2 = m * epsilon/2; ``min_agree`` chosen on a
      pilot batch (``pilot=True``); trials ``130 e^(1.5 eps)``.
    - ``lee_clifton``: m = 3, c = 2 (proven bound 3.25 epsilon, the event's exact loss 2.66
      epsilon); trials ``max(9,500/eps^2, 110 e^(1.5 eps))``.

    So sized, every broken variant's bound reaches 1.5 epsilon over the usual range of
    epsilon, in an interactive wait (the seeded figures are on the SVT family page of the
    documentation). Where the cap binds (epsilon
    below about 0.05 for ``roth2011`` and ``lee_clifton``, whose trials grow like
    1/epsilon^2; chen2015 / gptt below about 3/64; every variant above about 6, where the
    bound grows only like ln(trials)) the audit may find no violation: its summary then says
    "no violation found at this size", which is no evidence of privacy — these variants are
    not private at any epsilon (Lyu, Su & Li 2017 Thm 3.5, §9.1, §9.2) or not at the claimed one (§3.2).

    GPTT: Chen 2018 Thm 4 proves non-privacy with these inputs, but its proof is flawed (Lyu, Su & Li 2017 §9.3):
    it bounds the integrand ratio κ(z) on an interval [−δ, δ] whose width grows with t, so
    κ shrinks as t grows, and the same argument would "prove" Alg. 1 non-private. GPTT is
    nevertheless not private (with eps1 = eps2 it *is* Alg. 6, Lyu, Su & Li 2017 §9.2), and for Laplace query
    noise Chen 2018's inputs do work: splitting κ(z) as in Lyu, Su & Li 2017 Proof 9.14 gives κ(z) >= exp(eps2)
    for every z (the ⊥ factor for z <= 0, the ⊤ factor for z >= 1, both in between), hence a
    ratio >= exp(t·eps2). (Lyu, Su & Li 2017 §9.3's remark that κ(z) -> 1 as |z| -> ∞ does not hold for
    Laplace noise, whose tail ratio stays exp(eps2).) The audit shows the ratio empirically.

    References
    ----------
    Lyu, Su & Li 2017 Thm 3.5 and Proof 3.6 (Alg. 5), §9.1 Thm 9.11 (Alg. 3), §9.2 Thm 9.13 (Alg. 6),
    §9.3 and §3.3 (GPTT), §3.2 (Alg. 4's ((1+6c)/4)·epsilon); Chen 2018 Alg. 5 and Thm 4.
    """
    if not isinstance(variant, str) or variant not in COUNTEREXAMPLES:
        raise ValueError(f"variant must be one of {sorted(COUNTEREXAMPLES)}, got {variant!r}")
    if m is not None:
        if variant == "stoddard":
            raise ValueError("m does not apply to 'stoddard' (its counterexample has two queries)")
        m = check_positive_int(m, "m")
    if c is not None:
        if variant != "lee_clifton":
            raise ValueError(
                f"c applies to 'lee_clifton' only; for {variant!r} the cutoff is the number of "
                "⊤ in the pattern"
            )
        c = check_positive_int(c, "c")
    if value_at_most is not None:
        if variant != "roth2011":
            raise ValueError("value_at_most applies to 'roth2011' only (the one emitting values)")
        if isinstance(value_at_most, bool) or not isinstance(value_at_most, Real) or not (
            math.isfinite(value_at_most)
        ):
            raise ValueError(f"value_at_most must be a finite number, got {value_at_most!r}")
        value_at_most = float(value_at_most)

    pilot = False
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
        base_trials = COUNTEREXAMPLES[variant](None, None, None)[4]
        sizes = _epsilon_sizes(variant, epsilon, base_trials)
        m = sizes.get("m") if m is None else m
        c = sizes.get("c") if c is None else c
        if value_at_most is None:
            value_at_most = sizes.get("value_at_most")
        pilot = sizes.get("pilot", False) and min_agree is None
    answers, neighbour, pattern, bound, trials, source, description = COUNTEREXAMPLES[variant](
        m, c, value_at_most
    )
    if epsilon is not None:
        trials = sizes["trials"]
        source += f"; sized for ε = {epsilon:g}"
    n = int(pattern.size)
    if min_agree is None:
        min_agree = n
    else:
        min_agree = check_positive_int(min_agree, "min_agree")
        if min_agree > n:
            raise ValueError(f"min_agree must be in [1, {n}] (the number of queries), got {min_agree}")
    for array in (answers, neighbour, pattern):
        array.setflags(write=False)
    return Counterexample(
        name=variant,
        answers=answers,
        answers_neighbour=neighbour,
        threshold=0.0,
        pattern=pattern,
        c=max(1, int(pattern.sum())),
        min_agree=min_agree,
        value_at_most=bound,
        trials=trials,
        source=source,
        description=description,
        pilot=pilot,
    )


def audit_svt(
    variant: str,
    epsilon: float = 1.0,
    *,
    counterexample: str | Counterexample | None = None,
    trials: int | None = None,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
    ratio: float | None = None,
    min_agree: int | str | None = None,
    pilot_trials: int | None = None,
    batch_size: int | None = None,
    progress: ProgressArg = None,
) -> AuditResult:
    """Run an SVT variant on a counterexample and audit its privacy loss against ``epsilon``.

    Parameters
    ----------
    variant : str
        A key of :data:`dpwidgets.engine.svt.VARIANTS`.
    epsilon : float
        The nominal budget given to the variant, which is also the claim tested: each source
        claims epsilon-DP (``lee_clifton`` is proven only ((1+6c)/4)·epsilon-DP, Lyu, Su & Li 2017 §3.2).
    counterexample : str or Counterexample, optional
        The inputs and event; a name means ``svt_counterexample(name)`` (sized for
        epsilon = 1). Defaults to the variant's own, sized for ``epsilon``:
        ``svt_counterexample(variant, epsilon=epsilon)`` (see its Notes for the rule and where
        it cannot expose the variant). Required for variants without one (``standard``,
        ``dpbook``, ``generalized``), which can be run on any broken variant's counterexample,
        e.g. ``svt_counterexample("roth2011", epsilon=epsilon)`` for the same shape.
    trials : int, optional
        Runs per input (default: the counterexample's recommended ``trials``).
    confidence : float
        Simultaneous confidence level in (0, 1).
    rng : numpy.random.Generator, optional
        Source of randomness (default: a fresh unseeded generator).
    ratio : float, optional
        ``epsilon2/epsilon1`` for the variants that accept it (``standard``, ``gptt``).
    min_agree : int or "pilot", optional
        Overrides the counterexample's ``min_agree``; ``"pilot"`` tries every value on a
        separate pilot batch of ``pilot_trials`` runs and audits the best on fresh runs
        (the default for a counterexample with ``pilot=True``).
    pilot_trials : int, optional
        Pilot runs per input with ``min_agree="pilot"`` (default ``trials // 4``).
    batch_size : int, optional
        Runs per call of the simulator (default: as many as keep about 4 million query slots
        in memory).
    progress : bool or callable, optional
        A bar over the simulator's batches, as in :func:`audit_privacy_loss`.

    Returns
    -------
    AuditResult
        With ``claimed_epsilon = epsilon`` and a label naming variant and counterexample.

    Raises
    ------
    ValueError
        Unknown variant or counterexample, no counterexample for a private variant, bad
        ``epsilon``, ``trials``, ``confidence``, ``ratio``, ``min_agree`` — all before any
        noise is drawn.
    TypeError
        ``rng`` not a ``numpy.random.Generator``.

    Notes
    -----
    The noise is drawn by :func:`dpwidgets.engine.svt.sparse_vector_trials` with sensitivity
    1, the counterexample's threshold and cutoff, and non-monotonic queries.
    A bound at or below ``epsilon`` means no violation was found at this size (see
    :meth:`AuditResult.summary`), never that the variant is private.
    For ``standard`` and ``dpbook`` (epsilon-DP) the lower bound is <= epsilon with
    probability >= ``confidence``; on the ``roth2011`` inputs their point estimate comes
    close to epsilon (about 0.99 at epsilon = 1): these inputs are nearly worst-case for them.

    References
    ----------
    Lyu, Su & Li 2017 §3, §9; Chen 2018 Thm 4.
    """
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    epsilon = check_epsilon(epsilon)
    if counterexample is None:
        if variant not in COUNTEREXAMPLES:
            raise ValueError(
                f"variant {variant!r} has no counterexample of its own (it is claimed private); "
                f"pass counterexample= one of {sorted(COUNTEREXAMPLES)} to audit it on one"
            )
        counterexample = svt_counterexample(variant, epsilon=epsilon)
    if isinstance(counterexample, str):
        if counterexample not in COUNTEREXAMPLES:
            raise ValueError(
                f"counterexample must be a name in {sorted(COUNTEREXAMPLES)} or a Counterexample, "
                f"got {counterexample!r}"
            )
        counterexample = svt_counterexample(counterexample)
    elif not isinstance(counterexample, Counterexample):
        raise ValueError(
            f"counterexample must be a name in {sorted(COUNTEREXAMPLES)} or a Counterexample, "
            f"got {counterexample!r}"
        )
    ex = counterexample
    trials = ex.trials if trials is None else check_positive_int(trials, "trials", maximum=MAX_TRIALS)
    n = ex.n_queries
    if batch_size is None:
        batch_size = max(1, 4_000_000 // n)
    else:  # one batch is one sparse_vector_trials call: at most MAX_DRAWS query slots
        batch_size = check_positive_int(batch_size, "batch_size", maximum=max(1, MAX_DRAWS // n))
    if pilot_trials is not None:
        pilot_trials = check_positive_int(pilot_trials, "pilot_trials", maximum=MAX_TRIALS)
    check_probability(confidence, "confidence")
    rng = check_rng(rng)

    if min_agree is None and ex.pilot:
        min_agree = "pilot"
    events: list[Event]
    if min_agree is None:
        events = [ex.event]
    elif isinstance(min_agree, str):
        if min_agree != "pilot":
            raise ValueError(f"min_agree must be an integer in [1, {n}] or 'pilot', got {min_agree!r}")
        # One agreement count per batch, shared by the n candidate events.
        memo: dict[str, Any] = {}

        def agreement(runs: SVTTrials) -> np.ndarray:
            if memo.get("runs") is not runs:
                memo["runs"], memo["agree"] = runs, ex.agreement(runs)
            return memo["agree"]

        events = [lambda runs, k=k: agreement(runs) >= k for k in range(1, n + 1)]
    else:
        k = check_positive_int(min_agree, "min_agree")
        if k > n:
            raise ValueError(f"min_agree must be in [1, {n}] (the number of queries), got {k}")
        events = [ex.event_at_least(k)]
    # Validate the SVT parameters now, before any noise is drawn.
    VARIANTS[variant].noise(epsilon, c=ex.c, ratio=ratio)

    def mechanism(answers: np.ndarray, size: int, generator: np.random.Generator) -> SVTTrials:
        return sparse_vector_trials(
            answers,
            ex.threshold,
            epsilon,
            variant=variant,
            c=ex.c,
            sensitivity=1.0,
            monotonic=False,
            ratio=ratio,
            trials=size,
            rng=generator,
        )

    return audit_privacy_loss(
        mechanism,
        ex.answers,
        ex.answers_neighbour,
        events,
        trials=trials,
        confidence=confidence,
        claimed_epsilon=epsilon,
        rng=rng,
        batch_size=batch_size,
        pilot_trials=pilot_trials,
        label=f"{variant} on the {ex.name} counterexample ({ex.source})",
        progress=progress,
    )


# --------------------------------------------------------------------------------------------
# Black-box audit of sampled outputs: an event chosen on one half, bounded on the other
# --------------------------------------------------------------------------------------------

#: Arrays up to this many entries contribute each entry as a candidate statistic; larger ones
#: only their size, sum and a few quantiles.
FEATURE_ELEMENTS = 64
#: A statistic with at most this many distinct values (pooled over both inputs) is treated as
#: discrete: its candidate events are sets of values; otherwise thresholds.
DISCRETE_VALUES = 64
#: Thresholds tried per continuous statistic: the pooled pilot quantiles at these levels.
_QUANTILES = np.linspace(0.005, 0.995, 100)
_MISSING, _NAN = -1e300, 1e300


def _leaf_features(output, path: str, out: dict[str, float]) -> None:
    """The numeric leaves of one output (see :func:`output_features`)."""
    if isinstance(output, Mapping):
        out[f"{path}#keys"] = float(zlib.crc32(repr(sorted(map(str, output))).encode()))
        for key, value in output.items():
            _leaf_features(value, f"{path}.{key}", out)
        return
    if hasattr(output, "to_numpy") and hasattr(output, "columns"):  # a DataFrame
        out[f"{path}#rows"] = float(len(output))
        for col in output.columns:
            _leaf_features(output[col].to_numpy(), f"{path}.{col}", out)
        return
    if isinstance(output, str):
        out[path] = float(zlib.crc32(output.encode()))
        return
    if output is None:
        out[path] = _MISSING / 2
        return
    try:
        arr = np.asarray(output, dtype=float)
    except (TypeError, ValueError):
        if isinstance(output, list | tuple):
            out[f"{path}#len"] = float(len(output))
            for i, item in enumerate(output[:FEATURE_ELEMENTS]):
                _leaf_features(item, f"{path}[{i}]", out)
        else:
            out[path] = float(zlib.crc32(repr(output).encode()))
        return
    if arr.ndim == 0:
        out[path] = _NAN if np.isnan(arr) else float(arr)
        return
    out[f"{path}#shape"] = float(zlib.crc32(repr(arr.shape).encode()))
    out[f"{path}#size"] = float(arr.size)
    finite = arr[np.isfinite(arr)]
    out[f"{path}#sum"] = float(finite.sum()) if finite.size else 0.0
    if arr.size <= FEATURE_ELEMENTS:
        flat = np.where(np.isnan(arr), _NAN, arr).ravel()
        for i, value in enumerate(flat):
            out[f"{path}[{i}]"] = float(value)
    elif finite.size:
        for q in (0.1, 0.5, 0.9):
            out[f"{path}#q{q}"] = float(np.quantile(finite, q))


def _check_samples(outputs, outputs_neighbour) -> None:
    """Both sides are sequences of sampled outputs (not one output, not text)."""
    for name, given in (("outputs", outputs), ("outputs_neighbour", outputs_neighbour)):
        if isinstance(given, str | bytes | dict) or not hasattr(given, "__len__"):
            raise TypeError(f"{name} must be a sequence of sampled outputs, got "
                            f"{type(given).__name__}")


def output_features(outputs: Sequence, outputs_neighbour: Sequence) -> tuple[np.ndarray,
                                                                            np.ndarray, list]:
    """Candidate scalar statistics of sampled outputs, aligned between D and D'.

    Each output (a dict of public fields, an array, a number, a DataFrame ...) is flattened
    into numeric leaves: a scalar is itself; a string, a key set or a shape is a code (a CRC
    of its text: equal texts give equal codes); an array gives its size, the sum of its finite
    entries and, when it has at most :data:`FEATURE_ELEMENTS` entries, each entry (else a few
    quantiles). A leaf missing from an output is a sentinel value, so "the field is present" is
    itself a statistic.

    Returns
    -------
    features, features_neighbour : numpy.ndarray, (trials, k)
        One column per statistic, the same columns on both sides.
    names : list of str
        The statistics' names (paths into the output).
    """
    _check_samples(outputs, outputs_neighbour)
    rows = []
    for output in (*outputs, *outputs_neighbour):
        leaves: dict[str, float] = {}
        _leaf_features(output, "", leaves)
        rows.append(leaves)
    names = sorted({key for row in rows for key in row})
    matrix = np.array([[row.get(k, _MISSING) for k in names] for row in rows], dtype=float)
    return matrix[: len(outputs)], matrix[len(outputs):], names


def _lower_bounds(hits: np.ndarray, hits2: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """Vectorised :meth:`AuditResult.from_counts` lower bound (the largest of its four)."""
    hits, hits2 = np.asarray(hits, dtype=float), np.asarray(hits2, dtype=float)

    def bounds(k):
        lo = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), trials - k + 1), 0.0)
        hi = np.where(k < trials, stats.beta.ppf(1 - alpha, k + 1, np.maximum(trials - k, 1)),
                      1.0)
        return lo, hi

    lo, hi = bounds(hits)
    lo2, hi2 = bounds(hits2)
    with np.errstate(divide="ignore", invalid="ignore"):
        cands = np.stack([np.log(lo) - np.log(hi2), np.log(lo2) - np.log(hi),
                          np.log1p(-hi) - np.log1p(-lo2), np.log1p(-hi2) - np.log1p(-lo)])
    cands = np.nan_to_num(cands, nan=-np.inf, posinf=np.inf)
    return np.max(cands, axis=0)


def _candidate_events(a: np.ndarray, b: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
    """Events on one statistic, from its pilot values ``a`` (on D) and ``b`` (on D'), with
    their pilot hits on each side: sets of values (discrete) growing in the order of their
    pilot likelihood ratio, or thresholds ``x > t`` at the pooled quantiles."""
    pooled = np.concatenate([a, b])
    values = np.unique(pooled)
    if values.size <= 1:
        return [], np.zeros(0), np.zeros(0)
    if values.size <= DISCRETE_VALUES:
        ca = np.bincount(np.searchsorted(values, a), minlength=values.size).astype(float)
        cb = np.bincount(np.searchsorted(values, b), minlength=values.size).astype(float)
        order = np.argsort(-(ca + 0.5) / (cb + 0.5), kind="stable")[:-1]
        events = [("in", values[order[: j + 1]]) for j in range(order.size)]
        return events, np.cumsum(ca[order]), np.cumsum(cb[order])
    thresholds = np.unique(np.quantile(pooled, _QUANTILES))
    sa, sb = np.sort(a), np.sort(b)
    ha = a.size - np.searchsorted(sa, thresholds, side="right")
    hb = b.size - np.searchsorted(sb, thresholds, side="right")
    return [("gt", t) for t in thresholds], ha, hb


def _hits(column: np.ndarray, event: tuple[str, Any]) -> int:
    kind, value = event
    if kind == "in":
        return int(np.count_nonzero(np.isin(column, value)))
    return int(np.count_nonzero(column > value))


def _describe(name: str, event: tuple[str, Any]) -> str:
    kind, value = event
    if kind == "in":
        shown = ", ".join(f"{v:g}" for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"{name or 'output'} in {{{shown}}}"
    return f"{name or 'output'} > {value:.6g}"


def audit_samples(
    outputs: Sequence,
    outputs_neighbour: Sequence,
    *,
    claimed_epsilon: float | None = None,
    confidence: float = 0.999,
    label: str = "",
) -> AuditResult:
    """Audit a mechanism from its sampled outputs on D and on D': an event chosen on one half
    of the samples, its privacy-loss lower bound computed on the other half.

    Parameters
    ----------
    outputs, outputs_neighbour : sequence
        Independent outputs of the mechanism on D and on D' (the same number on each side,
        at least 4), in any form :func:`output_features` flattens.
    claimed_epsilon : float, optional
        The epsilon the mechanism claims for this pair; sets ``result.exceeds_claim``.
    confidence : float
        Confidence of the reported bound (four one-sided Clopper-Pearson bounds, Bonferroni).
    label : str
        What was audited; the chosen event is appended to it.

    Returns
    -------
    AuditResult
        ``pilot_trials`` is the half spent choosing the event, ``trials`` the half bounded.

    Notes
    -----
    The first half of each side chooses, among every candidate event of every statistic of
    :func:`output_features` (a set of discrete values, or ``x > t`` at the pooled pilot
    quantiles), the one with the largest pilot lower bound; the second half, independent of
    that choice, gives the bound through :meth:`AuditResult.from_counts`. If the mechanism
    is epsilon-DP for the pair, ``epsilon_lower <= epsilon`` with probability at least
    ``confidence``, however many candidates were tried (they only see the pilot half). Like
    every audit, it refutes a claim or says nothing.
    """
    confidence = check_probability(confidence, "confidence")
    if claimed_epsilon is not None:
        claimed_epsilon = check_epsilon(claimed_epsilon, "claimed_epsilon", allow_zero=True)
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    _check_samples(outputs, outputs_neighbour)
    size = len(outputs)
    if size != len(outputs_neighbour) or size < 4:
        raise ValueError(f"outputs and outputs_neighbour must hold the same number (>= 4) of "
                         f"outputs, got {size} and {len(outputs_neighbour)}")
    features, features2, names = output_features(outputs, outputs_neighbour)
    half = size // 2
    pilot, pilot2 = features[:half], features2[:half]
    test, test2 = features[half:], features2[half:]
    alpha = (1.0 - confidence) / 4.0
    best: tuple[float, int, tuple[str, Any]] | None = None
    for j in range(len(names)):
        events, ha, hb = _candidate_events(pilot[:, j], pilot2[:, j])
        if not events:
            continue
        scores = _lower_bounds(ha, hb, half, alpha)
        k = int(np.argmax(scores))
        if best is None or scores[k] > best[0]:
            best = (float(scores[k]), j, events[k])
    if best is None:  # every statistic constant on both sides: nothing tells D from D'
        hits = hits2 = size - half
        chosen = "no statistic varies"
    else:
        _, j, event = best
        hits, hits2 = _hits(test[:, j], event), _hits(test2[:, j], event)
        chosen = _describe(names[j], event)
    return AuditResult.from_counts(
        hits, hits2, size - half, confidence=confidence, claimed_epsilon=claimed_epsilon,
        label=f"{label}: {chosen}" if label else chosen, pilot_trials=half)
