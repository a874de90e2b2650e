"""HB: hierarchical histograms with a chosen branching factor and constrained inference
(Qardaji, Yang, Li 2013; Hay, Rastogi, Miklau, Suciu 2010).
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import laplace
from .interface import _register
from .trees import _level_sums, _tree_least_squares

__all__ = []


# ---------------------------------------------------------------------------------------------
# HB: hierarchical histograms with a chosen branching factor
# ---------------------------------------------------------------------------------------------


def hb_branching(n_cells: int, ndim: int = 1, *, max_branching: int = 1024) -> tuple[int, int]:
    """HB's (branching b, height h) for a domain of ``n_cells`` cells (per side in 2-D).

    1-D: minimise ``(b - 1) * h**3`` with ``h = ceil(log_b n)``, Qardaji, Yang, Li 2013's
    proxy for the average variance of a random range query under constrained inference
    (about ``(b-1)`` nodes per level, ``h`` levels, each with variance ``~h**2``); it gives
    b = 16 for n = 4096 as the paper recommends. 2-D (fanout ``b*b``, ``n_cells`` = side):
    minimise ``(b - 1) * h**2``, our analogue -- a rectangle's boundary dominates and its
    node count grows like ``(b-1)`` times the side, while each node's variance is ``~h**2``.
    """
    best = (math.inf, 2, 1)
    for b in range(2, max(2, min(max_branching, n_cells)) + 1):
        h = max(1, math.ceil(math.log(n_cells) / math.log(b) - 1e-12))
        cost = (b - 1) * h ** (3 if ndim == 1 else 2)
        if cost < best[0]:
            best = (cost, b, h)
    return best[1], best[2]


def _interleave(padded: np.ndarray, b: int, h: int) -> np.ndarray:
    """Flatten a ``b**h x b**h`` grid so that each quadtree-like node's cells are contiguous."""
    axes = padded.reshape((b,) * h + (b,) * h)
    perm = [a for pair in zip(range(h), range(h, 2 * h), strict=True) for a in pair]
    return axes.transpose(perm).reshape(-1)


def _deinterleave(flat: np.ndarray, b: int, h: int) -> np.ndarray:
    perm = [a for pair in zip(range(h), range(h, 2 * h), strict=True) for a in pair]
    inverse = np.argsort(perm)
    return flat.reshape((b,) * (2 * h)).transpose(inverse).reshape(b**h, b**h)


@_register(
    "hb",
    title="HB (hierarchical histogram, chosen branching, constrained inference)",
    source=(
        "Qardaji, Yang, Li, 'Understanding hierarchical methods for differentially private "
        "histograms', PVLDB 6(14), 2013; Hay, Rastogi, Miklau, Suciu, 'Boosting the accuracy of "
        "differentially private histograms through consistency', PVLDB 3(1), 2010"
    ),
    dims=(1, 2),
)
def _hb(x: np.ndarray, epsilon: float, rng: np.random.Generator, workload, *, branching: int | None = None):
    """HB: a b-ary tree of counts, ``epsilon/h`` per level, constrained inference.

    Every level below the root is measured with Lap(h/epsilon) per node (the root is not
    measured); the leaf estimates are the least-squares consistent solution (Hay et al. 2010).
    1-D: a b-ary tree over the cells, b from :func:`hb_branching`. 2-D: a quadtree-like
    hierarchy (each node has ``b x b`` children), not a Hilbert flattening. The domain is
    padded to ``b**h`` (per side) with public zero cells, which are neither noised nor
    estimated.

    Privacy: a record lies in exactly one node per level, so under add/remove-one the ``h``
    levels compose to ``epsilon`` (2*epsilon under replace-one).

    References: Qardaji, Yang, Li 2013; Hay, Rastogi, Miklau, Suciu 2010.
    """
    if x.ndim == 1:
        if branching is None:
            b, h = hb_branching(x.size, 1)
        else:
            b = int(branching)
            h = max(1, math.ceil(math.log(x.size) / math.log(b) - 1e-12))
        fanout, size = b, b**h
        leaves = np.zeros(size)
        leaves[: x.size] = x
        real = np.zeros(size, dtype=bool)
        real[: x.size] = True
    else:
        side = max(x.shape)
        if branching is None:
            b, h = hb_branching(side, 2)
        else:
            b = int(branching)
            h = max(1, math.ceil(math.log(side) / math.log(b) - 1e-12))
        fanout = b * b
        grid = np.zeros((b**h, b**h))
        grid[: x.shape[0], : x.shape[1]] = x
        mask = np.zeros((b**h, b**h), dtype=bool)
        mask[: x.shape[0], : x.shape[1]] = True
        leaves, real = _interleave(grid, b, h), _interleave(mask, b, h)
    if b < 2:
        raise ValueError(f"branching must be an integer >= 2, got {branching!r}")
    eps_level = epsilon / h
    var = 2.0 / eps_level**2
    truth = _level_sums(leaves, fanout, h)
    reals = [r > 0 for r in _level_sums(real.astype(float), fanout, h)]
    measured, variances = [np.zeros(1)], [np.full(1, np.inf)]
    for level in range(1, h + 1):
        noisy = truth[level] + laplace(1.0 / eps_level, truth[level].shape, rng=rng)
        if level == h:
            noisy = np.where(reals[level], noisy, 0.0)
            variances.append(np.where(reals[level], var, 0.0))
        else:
            variances.append(np.where(reals[level], var, np.inf))
        measured.append(noisy)
    est = _tree_least_squares(measured, variances, fanout)
    if x.ndim == 1:
        out = est[: x.size]
    else:
        out = _deinterleave(est, b, h)[: x.shape[0], : x.shape[1]]
    parts = {f"level_{level}": eps_level for level in range(1, h)}
    parts[f"level_{h}"] = epsilon - eps_level * (h - 1)
    return out, parts, {"branching": b, "height": h, "hierarchy": "b-ary" if x.ndim == 1 else "quadtree-like (b x b)"}
