"""The audit of an SVT variant on a counterexample: :func:`audit_svt`.
Part of :mod:`~dpwidgets.engine.audit`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..mechanisms import MAX_DRAWS
from ..svt import VARIANTS, SVTTrials, sparse_vector_trials
from ..validation import check_epsilon, check_positive_int, check_probability, check_rng
from .counterexamples import COUNTEREXAMPLES, Counterexample, svt_counterexample
from .privacy_loss import audit_privacy_loss
from .result import MAX_TRIALS, AuditResult, Event, ProgressArg

__all__ = ["audit_svt"]


def _resolve_counterexample(variant: str, counterexample, epsilon: float) -> Counterexample:
    """The counterexample to audit on: the variant's own (sized for ``epsilon``) when none is
    given, the named one, or the one given."""
    if counterexample is None:
        if variant not in COUNTEREXAMPLES:
            raise ValueError(
                f"variant {variant!r} has no counterexample of its own (it is claimed private); "
                f"pass counterexample= one of {sorted(COUNTEREXAMPLES)} to audit it on one"
            )
        return svt_counterexample(variant, epsilon=epsilon)
    if isinstance(counterexample, Counterexample):
        return counterexample
    if isinstance(counterexample, str) and counterexample in COUNTEREXAMPLES:
        return svt_counterexample(counterexample)
    raise ValueError(
        f"counterexample must be a name in {sorted(COUNTEREXAMPLES)} or a Counterexample, "
        f"got {counterexample!r}"
    )


def _events(ex: Counterexample, min_agree: int | str | None) -> list[Event]:
    """The candidate events: the counterexample's own, "agrees on at least ``min_agree``
    queries", or (``"pilot"``, the default of the counterexamples that ask for it) every
    such k, for the audit's pilot to choose from."""
    n = ex.n_queries
    if min_agree is None and ex.pilot:
        min_agree = "pilot"
    if min_agree is None:
        return [ex.event]
    if isinstance(min_agree, str):
        if min_agree != "pilot":
            raise ValueError(f"min_agree must be an integer in [1, {n}] or 'pilot', got {min_agree!r}")
        # One agreement count per batch, shared by the n candidate events.
        memo: dict[str, Any] = {}

        def agreement(runs: SVTTrials) -> np.ndarray:
            if memo.get("runs") is not runs:
                memo["runs"], memo["agree"] = runs, ex.agreement(runs)
            return memo["agree"]

        return [lambda runs, k=k: agreement(runs) >= k for k in range(1, n + 1)]
    k = check_positive_int(min_agree, "min_agree")
    if k > n:
        raise ValueError(f"min_agree must be in [1, {n}] (the number of queries), got {k}")
    return [ex.event_at_least(k)]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.audit import audit_svt
    >>> r = audit_svt("stoddard", 1.0, trials=2000, rng=np.random.default_rng(0), progress=False)
    >>> r.exceeds_claim, bool(r.epsilon_lower > 1.0)
    (True, True)
    """
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    epsilon = check_epsilon(epsilon)
    ex = _resolve_counterexample(variant, counterexample, epsilon)
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

    events = _events(ex, min_agree)
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
