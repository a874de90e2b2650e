"""The audit's result and its statistics: from hit counts to a lower confidence bound on the
privacy loss (:class:`AuditResult`), and the types and limits of an audit.
Part of :mod:`~dpwidgets.engine.audit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
from scipy import stats

from ..validation import check_epsilon, check_positive_int, check_probability

__all__ = ["AuditResult", "MAX_TRIALS"]


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
            ``epsilon_lower`` is the largest of the four bounds of the Notes (at least 0),
            ``witness`` the ratio that gave it.

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
