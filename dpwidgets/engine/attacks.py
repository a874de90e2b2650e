"""Attacks on broken SVT variants: the GPTT reconstruction attack of Chen 2018 §3.2.4 (Alg. 6-7).

This module is a teaching instrument, not a mechanism. Generalized Private Threshold Testing
(GPTT, Chen 2018 Alg. 5) stands for the SVT variants that answer an unlimited number of threshold
queries with one noisy threshold; they are not differentially private for any finite epsilon
(Chen 2018 Thm 4 — whose own proof is flawed, Lyu, Su & Li 2017 §9.3 — and Lyu, Su & Li 2017 §9.1-9.2). The attack below shows
what that means in practice: run GPTT on every difference query ``diff(u, v) = x_u - x_v`` of a
histogram, read off an ordering of the cells, and recover most cell counts *exactly* — in
particular the counts 0, 1, 2 ... that single out individuals.

The number of difference queries is ``d (d - 1)`` for ``d`` cells (16.8 million for 4096).
With the query noise switched off (epsilon_2 = infinity, as in the attack) every answer is
``x_u - x_v >= noisy_threshold``, so the whole answer matrix is a function of the sorted
counts and one number: :func:`gptt_partition` computes the partition of Alg. 6 by sorting,
without materialising a single pair.

The other instrument, the empirical privacy-loss audit, lives in
:mod:`dpwidgets.engine.audit` and is re-exported here (``audit_privacy_loss``, ``audit_svt``,
``svt_counterexample``), so both instruments are reached as ``dpwidgets.engine.attacks``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validation
from .audit import (
    COUNTEREXAMPLES,
    AuditResult,
    Counterexample,
    audit_privacy_loss,
    audit_svt,
    svt_counterexample,
)
from .mechanisms import laplace
from .svt import MAX_CUTOFF

__all__ = ["MAX_QUERIES", "ReconstructionResult", "AttackSuccess", "gptt_threshold",
           "gptt_partition", "reconstruct_histogram", "reconstruct_histogram_with_svt",
           "attack_success",
           # the audit, re-exported from .audit (see the module docstring)
           "AuditResult", "COUNTEREXAMPLES", "Counterexample", "audit_privacy_loss", "audit_svt",
           "svt_counterexample"]

#: The most difference queries :func:`reconstruct_histogram_with_svt` asks (``max_queries``).
MAX_QUERIES = 10**7

#: The honest label of the attack's first phase (every algorithm states its guarantee).
GPTT_GUARANTEE = "not DP for any finite epsilon (Chen 2018 Thm 4; Lyu, Su & Li 2017 §9.1-9.3)"


def gptt_threshold(epsilon_1: float, delta: float) -> int:
    """The public threshold ``theta = ceil((1/epsilon_1) ln(1/delta))`` of Chen 2018 Alg. 6 line 2.

    With this theta, the noisy threshold ``theta + Lap(1/epsilon_1)`` is positive with
    probability ``1 - exp(-epsilon_1 theta)/2 >= 1 - delta/2`` and lies in ``[0, 2 theta]``
    with probability ``>= 1 - delta`` (Chen 2018 Lemma 5, Thm 6). The text writes ``log``; the
    Laplace tail makes it the natural logarithm.

    Examples
    --------
    >>> from dpwidgets.engine.attacks import gptt_threshold
    >>> gptt_threshold(0.5, 0.05)
    6
    """
    epsilon_1 = validation.check_epsilon(epsilon_1, "epsilon_1")
    delta = validation.check_probability(delta, "delta")
    return int(math.ceil(math.log(1.0 / delta) / epsilon_1))


def _as_int_counts(counts, name: str = "counts") -> np.ndarray:
    return validation.check_counts(counts, name).astype(np.int64)


def gptt_partition(counts, noisy_threshold: float) -> np.ndarray:
    """The ordered partition of Chen 2018 Alg. 6 (lines 4-9), given GPTT's noisy threshold.

    GPTT with epsilon_2 = infinity answers ``diff(u, v)`` with ⊤ iff
    ``x_u - x_v >= noisy_threshold`` (Chen 2018 Alg. 5 line 5). ``Larger(v)`` is the set of cells
    ``u != v`` answered ⊤ against ``v``; cells with equal ``Larger`` sets form one part, and
    parts are ordered by decreasing ``Larger`` set (``P_0`` holds the smallest counts).

    Parameters
    ----------
    counts : array_like of int, 1-D
        The histogram (non-negative whole numbers).
    noisy_threshold : float
        The realised ``theta + Lap(1/epsilon_1)``.

    Returns
    -------
    numpy.ndarray of int
        ``labels[c]`` is the index ``i`` of the part ``P_i`` holding cell ``c``.

    Notes
    -----
    The counts are integers, so ``x_u - x_v >= noisy_threshold`` iff ``x_u >= x_v + t`` with
    ``t = ceil(noisy_threshold)``: exact integer arithmetic. If ``t >= 1`` (the likely case),
    ``v`` is never in its own ``Larger`` set, so ``Larger(v) = {u : x_u >= x_v + t}``: nested
    upper sets, equal iff they have the same size, which one ``searchsorted`` on the sorted
    counts gives for every cell. If ``t <= 0`` (probability <= delta/2) ``Larger(v)`` omits
    ``v`` itself while ``Larger(u)`` contains it, so no two cells share a set: every cell is
    its own part, ordered by count (ties by index) — the failure event of Lemma 5.

    Examples
    --------
    >>> from dpwidgets.engine.attacks import gptt_partition
    >>> gptt_partition([0, 40, 41, 2, 90], noisy_threshold=10.0).tolist()
    [0, 1, 1, 0, 2]
    """
    x = _as_int_counts(counts)
    noisy_threshold = validation.check_real(noisy_threshold, "noisy_threshold")
    t = math.ceil(noisy_threshold)
    if t >= 1:
        larger_size = x.size - np.searchsorted(np.sort(x), x + t, side="left")
        _, labels = np.unique(-larger_size, return_inverse=True)
        return labels.astype(np.int64)
    labels = np.empty(x.size, dtype=np.int64)
    labels[np.lexsort((np.arange(x.size), x))] = np.arange(x.size)
    return labels


@dataclass(frozen=True)
class ReconstructionResult:
    """What the GPTT reconstruction attack (Chen 2018 Alg. 7) recovered, and what it cost.

    Attributes
    ----------
    estimate : numpy.ndarray of int
        The reconstructed count of every cell: ``round(noisy total / size)`` of its part.
    labels : numpy.ndarray of int
        The part ``P_i`` of every cell (``P_0`` = smallest counts), from :func:`gptt_partition`.
    partition_sizes, noisy_totals : numpy.ndarray
        ``|P_i|`` and ``count(P_i) + Lap(2/epsilon_2)`` for every part.
    threshold, noisy_threshold : int, float
        Alg. 6's ``theta`` and GPTT's ``theta + Lap(1/epsilon_1)``.
    epsilon, epsilon_gptt, epsilon_totals, delta : float
        Total nominal budget and its split (``epsilon_gptt`` is only what GPTT's flawed
        analysis would charge; see ``guarantee``).
    n_queries : int
        The number of difference queries GPTT answered, ``d (d - 1)``.
    """

    estimate: np.ndarray
    labels: np.ndarray
    partition_sizes: np.ndarray
    noisy_totals: np.ndarray
    threshold: int
    noisy_threshold: float
    epsilon: float
    epsilon_gptt: float
    epsilon_totals: float
    delta: float
    n_queries: int
    guarantee: str = (
        "phase 1 (GPTT, nominally epsilon_gptt): " + GPTT_GUARANTEE + "; phase 2 (partition "
        "totals + Lap(2/epsilon_totals)): epsilon_totals-DP given the partition, replace-one"
    )

    @property
    def n_partitions(self) -> int:
        """The number of parts ``p + 1`` found by Alg. 6."""
        return int(self.partition_sizes.size)

    @property
    def epsilon_spent(self) -> float:
        """The nominal budget charged (the privacy actually lost is unbounded)."""
        return self.epsilon

    @property
    def partitions(self) -> tuple[np.ndarray, ...]:
        """The parts ``(P_0, ..., P_p)`` as arrays of cell indices."""
        order = np.argsort(self.labels, kind="stable")
        return tuple(np.split(order, np.cumsum(self.partition_sizes)[:-1]))


def _noisy_part_averages(x: np.ndarray, labels: np.ndarray, n_parts: int, epsilon_2: float,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Phase 2 of the attack (Chen 2018 Alg. 7 lines 4-6): the size of every part, its total
    plus Lap(2/epsilon_2), and its rounded noisy average (an empty part: its noisy total)."""
    sizes = np.bincount(labels, minlength=n_parts)
    totals = np.bincount(labels, weights=x, minlength=n_parts)
    noisy_totals = totals + laplace(2.0 / epsilon_2, n_parts, rng=rng)
    return sizes, noisy_totals, np.rint(noisy_totals / np.maximum(sizes, 1))


def reconstruct_histogram(
    counts,
    epsilon: float,
    delta: float = 0.05,
    rng: np.random.Generator | None = None,
    *,
    split: float = 0.5,
    clip_negative: bool = False,
) -> ReconstructionResult:
    """Reconstruct a histogram through GPTT: Chen 2018 Alg. 7 on top of the attack of Alg. 6.

    Phase 1 (Alg. 6, budget ``epsilon_1 = split * epsilon``): GPTT (Chen 2018 Alg. 5) with
    ``epsilon_1`` for the threshold and ``epsilon_2 = infinity`` (no query noise) answers all
    ``d (d - 1)`` difference queries ``diff(u, v) = x_u - x_v`` (sensitivity 1, Def. 5) against
    ``theta = ceil((1/epsilon_1) ln(1/delta))`` perturbed once by ``Lap(1/epsilon_1)``; the sets
    ``Larger(v)`` partition the domain (:func:`gptt_partition`). Phase 2 (Alg. 7 lines 3-6,
    budget ``epsilon_2 = epsilon - epsilon_1``): each part's total count gets ``Lap(2/epsilon_2)``
    noise, and every cell of the part is estimated as the rounded noisy average.

    Parameters
    ----------
    counts : array_like of int, 1-D
        The true histogram (non-negative whole numbers), e.g. a 4096-cell domain.
    epsilon : float
        Total nominal budget ``epsilon = epsilon_1 + epsilon_2`` (Alg. 7 line 1).
    delta : float
        Failure rate of Alg. 6, in (0, 1); 0.05 in the experiments of Chen 2018 §3.2.4.
    rng : numpy.random.Generator, optional
        Source of randomness (one threshold draw, one Laplace draw per part).
    split : float
        ``epsilon_1 / epsilon``, in (0, 1); 1/2 in Chen 2018 §3.2.4 ("epsilon_1 = epsilon_2 = epsilon/2").
    clip_negative : bool
        Round negative averages up to 0 (counts are known to be non-negative). Off by default:
        Alg. 7 line 6 rounds the average as it is.

    Returns
    -------
    ReconstructionResult
        Estimates, the partition, the noise drawn and the budget split.

    Raises
    ------
    ValueError
        Negative, fractional, NaN or infinite counts, an empty histogram, bad epsilon, delta
        or split — before any randomness is used.

    Notes
    -----
    Guarantee: none. Phase 1 is GPTT, not DP for any finite epsilon (Chen 2018 Thm 4; Lyu, Su & Li 2017 §9); the
    phase-2 totals are epsilon_2-DP given the partition under replace-one neighbours (a moved
    record changes two totals by 1 each, hence the 2 in ``Lap(2/epsilon_2)``). Runs in
    O(d log d): a sort and a ``searchsorted`` replace the d (d - 1) queries.

    References
    ----------
    Chen 2018 §3.2.4, Def. 5, Alg. 6-7, Lemma 5, Thm 6, Tables 3.1-3.3; Chen 2018 Alg. 5 (GPTT).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.attacks import reconstruct_histogram
    >>> counts = np.array([0, 0, 40, 40, 40, 3, 0, 40])
    >>> r = reconstruct_histogram(counts, epsilon=1.0, rng=np.random.default_rng(0))
    >>> r.estimate.tolist(), r.n_queries
    ([0, 0, 37, 37, 37, 0, 0, 37], 56)
    """
    x = _as_int_counts(counts)
    epsilon = validation.check_epsilon(epsilon)
    delta = validation.check_probability(delta, "delta")
    split = validation.check_probability(split, "split")
    clip_negative = validation.check_bool(clip_negative, "clip_negative")
    rng = validation.check_rng(rng)

    epsilon_1 = split * epsilon
    epsilon_2 = epsilon - epsilon_1
    theta = gptt_threshold(epsilon_1, delta)
    # Alg. 5 line 2 with Delta(diff) = 1; line 4's query noise is zero (epsilon_2 = infinity).
    noisy_threshold = theta + float(laplace(1.0 / epsilon_1, rng=rng))
    labels = gptt_partition(x, noisy_threshold)

    sizes, noisy_totals, part_estimate = _noisy_part_averages(
        x, labels, int(labels.max()) + 1, epsilon_2, rng
    )
    if clip_negative:
        part_estimate = np.maximum(part_estimate, 0.0)

    return ReconstructionResult(
        estimate=part_estimate[labels].astype(np.int64),
        labels=labels,
        partition_sizes=sizes,
        noisy_totals=noisy_totals,
        threshold=theta,
        noisy_threshold=noisy_threshold,
        epsilon=epsilon,
        epsilon_gptt=epsilon_1,
        epsilon_totals=epsilon_2,
        delta=delta,
        n_queries=int(x.size) * (int(x.size) - 1),
    )


def reconstruct_histogram_with_svt(
    counts,
    epsilon: float,
    delta: float = 0.05,
    rng: np.random.Generator | None = None,
    *,
    c: int = 10,
    max_queries: int = 200_000,
) -> np.ndarray:
    """The same attacker as :func:`reconstruct_histogram`, facing *standard* SVT instead of GPTT.

    The counterfactual the teaching widget shows next to the attack: the same budget split
    (epsilon_1 = epsilon_2 = epsilon/2), the same threshold ``theta`` and the same difference
    queries ``x_u - x_v`` (at most ``max_queries`` of them, pairs drawn uniformly at random --
    the order is public and data independent), but phase 1 is answered by standard SVT
    (Lyu, Su & Li 2017 Alg. 1 / Alg. 7, query noise Lap(2c/epsilon_1)) which stops after ``c`` positives. All
    the attacker can then do is split the cells into those seen as the larger side of a
    positive pair and the rest; phase 2 is unchanged (noisy part totals with Lap(2/epsilon_2),
    rounded averages).

    Returns
    -------
    numpy.ndarray of int
        The reconstructed count of every cell.

    Notes
    -----
    Guarantee: epsilon-DP under add/remove-one neighbours. Phase 1 is epsilon_1-DP standard SVT
    (Lyu, Su & Li 2017 Thm 3.3) because each difference query has sensitivity 1 (Chen 2018 Def. 5); phase 2 is
    epsilon_2-DP given the partition, which phase 1 released (one total moves by 1; the
    Lap(2/epsilon_2) of Alg. 7 even covers replace-one).

    References
    ----------
    Chen 2018 §3.2.4, Alg. 6-7; Lyu, Su & Li 2017 Alg. 1, Thm 3.3.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.attacks import reconstruct_histogram_with_svt
    >>> counts = np.array([0, 0, 40, 40, 40, 3, 0, 40])
    >>> reconstruct_histogram_with_svt(counts, epsilon=1.0, rng=np.random.default_rng(0)).tolist()
    [14, 14, 33, 33, 14, 14, 14, 14]
    """
    from .svt import sparse_vector  # svt imports nothing from here; avoid a cycle at import time

    x = _as_int_counts(counts)
    epsilon = validation.check_epsilon(epsilon)
    delta = validation.check_probability(delta, "delta")
    c = validation.check_positive_int(c, "c", maximum=MAX_CUTOFF)
    max_queries = validation.check_positive_int(max_queries, "max_queries", maximum=MAX_QUERIES)
    if x.size < 2:
        raise ValueError("counts must have at least 2 cells for difference queries")
    rng = validation.check_rng(rng)

    d = x.size
    epsilon_1 = epsilon_2 = epsilon / 2.0
    m = int(min(max_queries, d * (d - 1)))
    u = rng.integers(d, size=m)
    v = (u + rng.integers(1, d, size=m)) % d  # v != u, uniform over the other cells
    run = sparse_vector(
        x[u] - x[v], gptt_threshold(epsilon_1, delta), epsilon_1, variant="standard", c=c, rng=rng
    )
    labels = np.zeros(d, dtype=np.int64)
    labels[u[run.positives]] = 1
    per_part = _noisy_part_averages(x, labels, 2, epsilon_2, rng)[2]
    return per_part[labels].astype(np.int64)


@dataclass(frozen=True)
class AttackSuccess:
    """Success rates of a reconstruction, as in Chen 2018 Tables 3.2 (overall) and 3.3 (small)."""

    overall: float
    small: float
    n_cells: int
    n_small: int
    small_max: int


def attack_success(true, estimate, small_max: int = 5) -> AttackSuccess:
    """Fraction of cells whose count was recovered exactly, overall and for small counts.

    Parameters
    ----------
    true, estimate : array_like of int, 1-D, same length
        The true histogram and the reconstruction (e.g. ``result.estimate``).
    small_max : int
        Cells with true counts in ``[0, small_max]`` are "small" (5 in Chen 2018 Table 3.3).

    Returns
    -------
    AttackSuccess
        ``overall`` (Table 3.2's measure), ``small`` (Table 3.3's; NaN if no cell is small),
        and the cell counts behind them.

    References
    ----------
    Chen 2018 §3.2.4, Tables 3.2-3.3.

    Examples
    --------
    >>> from dpwidgets.engine.attacks import attack_success
    >>> s = attack_success([0, 3, 40, 40], [0, 0, 40, 39])
    >>> s.overall, s.small
    (0.5, 0.5)
    """
    true = _as_int_counts(true, "true")
    # Estimates may be negative (Alg. 7 rounds noisy averages as they are), but not NaN.
    est = validation.check_finite_array(estimate, "estimate")
    if est.shape != true.shape:
        raise ValueError(f"estimate must have the shape of true {true.shape}, got {est.shape}")
    small_max = validation.check_positive_int(small_max, "small_max", minimum=0)
    hit = est == true
    small = true <= small_max
    n_small = int(small.sum())
    return AttackSuccess(
        overall=float(hit.mean()),
        small=float(hit[small].mean()) if n_small else float("nan"),
        n_cells=int(true.size),
        n_small=n_small,
        small_max=int(small_max),
    )
