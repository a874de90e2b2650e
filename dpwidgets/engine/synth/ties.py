"""Kendall's tau on discrete attributes: the tie correction and the calibration of tied pairs.

Tied pairs count 0 in tau-a, so on discrete attributes ``sin(pi tau / 2)`` understates the
dependence. Post-processing of DP outputs only (the noisy tau and the DP margins): tau-b from
tau-a where the correction is worth its noise (:data:`TIE_NOISE_LIMIT`), and for pairs with a
heavily tied attribute (:data:`HEAVY_TIE_SHARE`) the latent correlation found by simulation
from a fixed public seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from .dependence import _pair_indices
from .margins import _inverse_cdf

__all__ = ["TIE_NOISE_LIMIT", "HEAVY_TIE_SHARE"]

#: Largest standard deviation of the DP noise on a tie-corrected tau: dividing tau-a by
#: ``sqrt(u_j u_k)`` divides its noise too, so pairs whose corrected noise would exceed this
#: keep the text's tau-a (its bias is then the smaller error).
TIE_NOISE_LIMIT = 0.1


def _repeat_chance(probs: Sequence[np.ndarray]) -> np.ndarray:
    """``sum_v p_j(v)**2`` per attribute: the chance that two random records share its
    value (the tie share of its DP margin)."""
    return np.array([float(np.sum(np.square(p))) for p in probs])


def _tie_correction_mask(
    tau_a: np.ndarray, probs: Sequence[np.ndarray], noise_sd: float
) -> np.ndarray:
    """Pairs worth tie-correcting: the estimated bias of tau-a, ``|tau_a| (1 - sqrt(u_j
    u_k))``, exceeds the noise's s.d., and the corrected noise ``noise_sd / sqrt(u_j u_k)``
    stays within TIE_NOISE_LIMIT (functions of DP outputs and public values only)."""
    u = np.maximum(1.0 - _repeat_chance(probs), 0.0)
    denom = np.sqrt(np.outer(u, u))
    bias = np.abs(tau_a) * (1.0 - denom)
    return (denom > 0) & (noise_sd <= TIE_NOISE_LIMIT * denom) & (bias > noise_sd)


def _tie_corrected_tau(
    tau: np.ndarray, probs: Sequence[np.ndarray], mask: np.ndarray | None = None
) -> np.ndarray:
    """Kendall's tau-b from tau-a and the DP margins: ``tau_a / sqrt(u_j u_k)`` with ``u_j =
    1 - sum_v p_j(v)**2`` the chance that two random records differ on attribute j.

    Post-processing of DP outputs (the noisy tau-a and the DP margins ``probs``). Tied pairs
    count 0 in tau-a, so on discrete attributes it understates the dependence (two balanced
    binary attributes with latent correlation 0.6: tau-a 0.20, sin(pi tau-a / 2) = 0.32);
    tau-b divides the ties out (sin(pi tau-b / 2) = 0.60). Clipped to [-1, 1]; a pair with a
    one-valued DP margin gets 0.
    """
    u = np.maximum(1.0 - _repeat_chance(probs), 0.0)
    denom = np.sqrt(np.outer(u, u))
    out = np.divide(tau, denom, out=np.zeros_like(tau), where=denom > 0)
    if mask is not None:  # pairs left out keep tau-a
        out = np.where(mask, out, tau)
    out = np.clip(out, -1.0, 1.0)
    np.fill_diagonal(out, 1.0)
    return out


#: An attribute whose DP margin gives two random records the same value with probability
#: above this is "tied": its pairs' correlation is calibrated by simulation.
HEAVY_TIE_SHARE = 0.25
_CALIBRATION_ROWS = 30_000
_CALIBRATION_STEPS = 10
_CALIBRATION_SEED = 20140325  # public and fixed: the calibration is post-processing


def _tau_b_from_table(table: np.ndarray) -> float:
    """Kendall's tau-b of the rows behind a contingency table (counts), in O(cells):
    concordant minus discordant pairs over the tie-corrected number of pairs."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    # above[a, b] = sum of table[a', b'] over a' > a, b' > b; below: a' > a, b' < b.
    rows_after = np.cumsum(table[::-1], axis=0)[::-1]
    rows_after = np.vstack([rows_after[1:], np.zeros((1, table.shape[1]))])
    above = np.cumsum(rows_after[:, ::-1], axis=1)[:, ::-1]
    above = np.hstack([above[:, 1:], np.zeros((table.shape[0], 1))])
    below = np.cumsum(rows_after, axis=1)
    below = np.hstack([np.zeros((table.shape[0], 1)), below[:, :-1]])
    score = float(np.sum(table * (above - below)))
    pairs = n * (n - 1) / 2.0
    r, c = table.sum(axis=1), table.sum(axis=0)
    denom = (pairs - np.sum(r * (r - 1)) / 2.0) * (pairs - np.sum(c * (c - 1)) / 2.0)
    return score / math.sqrt(denom) if denom > 0 else 0.0


def _calibrate_tied_pairs(
    tau_b: np.ndarray, probs: Sequence[np.ndarray], corr: np.ndarray,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Replace ``sin(pi tau_b / 2)`` by the latent correlation that reproduces ``tau_b`` for
    every pair with a tied attribute (post-processing of DP outputs).

    For a Gaussian copula with discrete margins ``sin(pi tau_b / 2)`` is off when a margin
    has large atoms (a binary 90/10 attribute with latent correlation 0.6 gives 0.41). For
    such pairs we find by bisection the rho whose simulated data -- ``_CALIBRATION_ROWS``
    bivariate normal draws with correlation rho, pushed through the two DP margins exactly
    as :func:`_sample_copula` does -- have Kendall's tau-b equal to the DP ``tau_b``
    (clipped to what the margins can reach). The draws come from a fixed public seed, so
    they are common to every candidate rho (tau-b is then monotone in rho) and spend no
    privacy; tau-b is computed from the contingency table of the simulated codes. Returns
    the new matrix and the number of pairs calibrated.
    """
    m = len(probs)
    share = _repeat_chance(probs)
    tied = (share > HEAVY_TIE_SHARE) & (share < 1.0)
    if not tied.any():
        return corr, 0
    corr = corr.copy()
    z = np.random.default_rng(_CALIBRATION_SEED).standard_normal((_CALIBRATION_ROWS, 2))
    u0 = special.ndtr(z[:, 0])
    done = 0
    for j, k in zip(*_pair_indices(m), strict=True):
        if not (tied[j] or tied[k]) or max(share[j], share[k]) >= 1.0:
            continue
        if mask is not None and not mask[j, k]:
            continue
        size_j, size_k = probs[j].size, probs[k].size
        x = _inverse_cdf(probs[j], u0) * size_k

        def tau_at(rho: float, x=x, k=k, size_j=size_j, size_k=size_k) -> float:
            w = special.ndtr(rho * z[:, 0] + math.sqrt(1.0 - rho * rho) * z[:, 1])
            cells = np.bincount(x + _inverse_cdf(probs[k], w), minlength=size_j * size_k)
            return _tau_b_from_table(cells.reshape(size_j, size_k))

        lo, hi = -0.999, 0.999
        target = float(tau_b[j, k])
        if target <= tau_at(lo):
            rho = lo
        elif target >= tau_at(hi):
            rho = hi
        else:
            for _ in range(_CALIBRATION_STEPS):
                mid = 0.5 * (lo + hi)
                if tau_at(mid) < target:
                    lo = mid
                else:
                    hi = mid
            rho = 0.5 * (lo + hi)
        corr[j, k] = corr[k, j] = rho
        done += 1
    return corr, done
