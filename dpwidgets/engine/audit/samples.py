"""The black-box audit of sampled outputs: :func:`audit_samples` (an event chosen on one half
of the samples, bounded on the other) and :func:`output_features`.
Part of :mod:`~dpwidgets.engine.audit`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from ..validation import check_epsilon, check_probability
from .result import AuditResult

__all__ = ["audit_samples", "output_features"]


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

    Examples
    --------
    >>> from dpwidgets.engine.audit import output_features
    >>> f, f2, names = output_features([1.0, 2.0, 3.0], [1.5, 2.5, 3.5])
    >>> f.shape, f2.shape, len(names)
    ((3, 1), (3, 1), 1)
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.audit import audit_samples
    >>> rng = np.random.default_rng(0)
    >>> on_d, on_d2 = rng.laplace(0, 1, 2000), rng.laplace(1, 1, 2000)  # Laplace, epsilon = 1
    >>> r = audit_samples(list(on_d), list(on_d2), claimed_epsilon=1.0)
    >>> r.exceeds_claim, bool(r.epsilon_lower <= 1.0)
    (False, True)
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
