"""The generic audit: :func:`audit_privacy_loss` of any mechanism vectorised over trials.
Part of :mod:`~dpwidgets.engine.audit`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..._progress import Progress
from ..validation import check_epsilon, check_positive_int, check_probability, check_rng
from .result import MAX_TRIALS, AuditResult, Event, Mechanism, ProgressArg

__all__ = ["audit_privacy_loss"]


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.audit import audit_privacy_loss
    >>> def noisy_count(x, trials, rng):  # the Laplace mechanism, epsilon = 1
    ...     return x + rng.laplace(0, 1.0, trials)
    >>> r = audit_privacy_loss(noisy_count, 0, 1, lambda out: out < 0, trials=20_000,
    ...                        claimed_epsilon=1.0, rng=np.random.default_rng(0), progress=False)
    >>> bool(0 < r.epsilon_lower <= 1.0), r.exceeds_claim
    (True, False)
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
