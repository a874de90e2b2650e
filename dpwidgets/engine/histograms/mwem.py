"""MWEM: multiplicative weights with queries chosen by the exponential mechanism
(Hardt, Ligett, McSherry 2012).
"""

from __future__ import annotations

import numpy as np

from ..mechanisms import exponential_mechanism, is_floating_point_safe, laplace, laplace_reals
from .interface import _public_or_private_total, _register
from .workloads import _Workload

__all__ = []


# ---------------------------------------------------------------------------------------------
# MWEM
# ---------------------------------------------------------------------------------------------


@_register(
    "mwem",
    title="MWEM (multiplicative weights + exponential mechanism)",
    source=(
        "Hardt, Ligett, McSherry, 'A simple and practical algorithm for differentially private "
        "data release', NeurIPS 2012"
    ),
    dims=(1, 2),
    workload_aware=True,
)
def _mwem(
    x: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    workload,
    *,
    rounds: int = 10,
    replays: int = 20,
    total: float | None = None,
    total_share: float = 0.05,
):
    """MWEM: T rounds of (select the worst query, measure it, multiplicative-weights update).

    The total n is the public ``total`` if given, else estimated with ``total_share *
    epsilon`` (default; the paper treats n as public). Each of the ``rounds`` rounds spends
    half of its share choosing, by the exponential mechanism
    (:func:`~dpwidgets.engine.mechanisms.exponential_mechanism`) with quality
    ``|q . A - q . x|``, the query the current estimate A answers worst, and half measuring
    it with the Laplace mechanism; A (initially uniform with total n) is then updated by
    ``A_i <- A_i exp(q_i (m - q . A) / (2n))`` over all measurements so far, ``replays``
    times (the paper's repeated passes), and renormalised to total n. The output is the
    final A. Without a workload the identity workload is used.

    Privacy: the quality and the query have sensitivity ``max |q_i|`` (1 for counting
    queries) under add/remove-one; 2T mechanisms of ``epsilon'/(2T)`` each plus the total
    compose to epsilon (2*epsilon under replace-one).

    References: Hardt, Ligett, McSherry 2012; McSherry, Talwar 2007.
    """
    rounds = int(rounds)
    if rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    n_records, parts, rest = _public_or_private_total(x, epsilon, total, total_share, rng)
    work = _Workload(workload, x.shape, rng)
    flat = x.ravel()
    true_answers = work.answer(flat)
    estimate = np.full(flat.size, n_records / flat.size)
    eps_round = rest / rounds
    eps_select = eps_round / 2.0
    chosen: list[int] = []
    rows: list[np.ndarray] = []
    values: list[float] = []
    for _ in range(rounds):
        quality = np.abs(work.answer(estimate) - true_answers)
        i = int(exponential_mechanism(quality, eps_select, work.sensitivity, rng=rng)[0])
        q = work.row(i)
        scale = work.sensitivity / (eps_round - eps_select)
        if is_floating_point_safe():
            # A workload answer is real when the workload's weights are (an explicit matrix).
            m = laplace_reals(float(true_answers[i]), work.sensitivity, eps_round - eps_select,
                              rng=rng)
        else:
            m = float(true_answers[i]) + float(laplace(scale, rng=rng))
        chosen.append(i)
        rows.append(q)
        values.append(m)
        for _ in range(replays):
            for q_j, m_j in zip(rows, values, strict=True):
                error = m_j - float(q_j @ estimate)
                estimate = estimate * np.exp(np.clip(q_j * error / (2.0 * n_records), -50, 50))
                estimate *= n_records / estimate.sum()
    parts = {**parts}
    for t in range(rounds):
        parts[f"select_{t + 1}"] = eps_select
        parts[f"measure_{t + 1}"] = eps_round - eps_select
    return estimate.reshape(x.shape), parts, {"queries": chosen, "n_estimate": n_records}
