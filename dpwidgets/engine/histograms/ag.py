"""AG: adaptive grids for 2-D histograms (Qardaji, Yang, Li 2013)."""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import laplace
from .interface import _public_or_private_total, _register, _split

__all__ = []


# ---------------------------------------------------------------------------------------------
# AG: adaptive grids (2-D)
# ---------------------------------------------------------------------------------------------


def _edges(length: int, parts: int) -> np.ndarray:
    """Block index of each of ``length`` positions when cut into ``parts`` near-equal blocks."""
    parts = max(1, min(parts, length))
    return (np.arange(length) * parts) // length


@_register(
    "ag",
    title="AG (adaptive grids, 2-D)",
    source=(
        "Qardaji, Yang, Li, 'Differentially private grids for geospatial data', ICDE 2013"
    ),
    dims=(2,),
)
def _ag(
    x: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    workload,
    *,
    alpha: float = 0.5,
    c: float = 10.0,
    c2: float = 5.0,
    total: float | None = None,
    total_share: float = 0.05,
):
    """AG: a coarse m1 x m1 grid, then an m2 x m2 grid inside every coarse cell.

    ``m1 = max(10, ceil(sqrt(N epsilon / c) / 4))`` with c = 10; the coarse counts get
    ``alpha * epsilon`` (alpha = 0.5); each coarse cell with noisy count N' is cut into
    ``m2 = ceil(sqrt(N' (1 - alpha) epsilon / c2))`` per side (c2 = 5) fine cells measured with
    ``(1 - alpha) * epsilon``; constrained inference combines each coarse count with the sum
    of its fine counts by inverse-variance weighting and spreads the difference equally over
    the fine cells; every fine cell's estimate is spread uniformly over its grid cells. On a
    discrete grid m1 and m2 are capped by the number of cells available (blocks of
    near-equal size). N is the public ``total`` if given, else estimated with
    ``total_share * epsilon`` (Lap noise) -- the paper takes N as known; we spend for it.

    Privacy: each record is in one coarse and one fine cell; N (if private), the coarse and
    the fine counts compose sequentially to epsilon (add/remove-one; 2*epsilon replace-one).

    References: Qardaji, Yang, Li, ICDE 2013.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    n_records, parts, rest = _public_or_private_total(x, epsilon, total, total_share, rng)
    eps_coarse, eps_fine = _split(rest, alpha)
    rows, cols = x.shape
    m1 = max(10, math.ceil(math.sqrt(n_records * rest / c) / 4))
    ri, ci = _edges(rows, m1), _edges(cols, m1)
    m1r, m1c = int(ri[-1]) + 1, int(ci[-1]) + 1
    coarse_id = ri[:, None] * m1c + ci[None, :]
    n_coarse = m1r * m1c
    coarse_true = np.bincount(coarse_id.ravel(), weights=x.ravel(), minlength=n_coarse)
    coarse_noisy = coarse_true + laplace(1.0 / eps_coarse, n_coarse, rng=rng)
    m2 = np.ceil(np.sqrt(np.maximum(coarse_noisy, 0.0) * eps_fine / c2)).astype(np.int64)
    m2 = np.maximum(m2, 1)
    # Position of every grid cell inside its coarse block, and the block's size.
    r_start = np.searchsorted(ri, np.arange(m1r))
    c_start = np.searchsorted(ci, np.arange(m1c))
    r_len = np.bincount(ri, minlength=m1r)
    c_len = np.bincount(ci, minlength=m1c)
    local_r = np.arange(rows) - r_start[ri]
    local_c = np.arange(cols) - c_start[ci]
    m2_cell = m2[coarse_id]
    m2r = np.minimum(m2_cell, r_len[ri][:, None])
    m2c = np.minimum(m2_cell, c_len[ci][None, :])
    fr = (local_r[:, None] * m2r) // r_len[ri][:, None]
    fc = (local_c[None, :] * m2c) // c_len[ci][None, :]
    big = int(m2.max()) + 1
    fine_key = (coarse_id * big + fr) * big + fc
    keys, fine_id = np.unique(fine_key.ravel(), return_inverse=True)
    n_fine = keys.size
    fine_true = np.bincount(fine_id, weights=x.ravel(), minlength=n_fine)
    fine_noisy = fine_true + laplace(1.0 / eps_fine, n_fine, rng=rng)
    fine_coarse = keys // (big * big)
    per_coarse = np.bincount(fine_coarse, minlength=n_coarse)
    fine_sum = np.bincount(fine_coarse, weights=fine_noisy, minlength=n_coarse)
    var_c, var_f = 2.0 / eps_coarse**2, 2.0 / eps_fine**2
    combined = (coarse_noisy * per_coarse * var_f + fine_sum * var_c) / (var_c + per_coarse * var_f)
    fine_est = fine_noisy + ((combined - fine_sum) / per_coarse)[fine_coarse]
    cell_count = np.bincount(fine_id, minlength=n_fine)
    out = (fine_est / cell_count)[fine_id].reshape(x.shape)
    parts = {**parts, "coarse": eps_coarse, "fine": eps_fine}
    return out, parts, {"m1": (m1r, m1c), "n_fine_cells": int(n_fine), "n_estimate": n_records}
