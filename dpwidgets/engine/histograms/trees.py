"""Hierarchies of counts: the level sums of a complete tree and least-squares inference on it.

HB and DAWA's second stage measure the nodes of a b-ary tree with Laplace noise and make the
leaf estimates consistent with ``_tree_least_squares`` (Hay, Rastogi, Miklau, Suciu 2010, with
per-node variances); that inference is post-processing and costs no budget.
"""

from __future__ import annotations

import numpy as np

__all__ = []


def _tree_least_squares(
    measured: list[np.ndarray], variances: list[np.ndarray], fanout: int
) -> np.ndarray:
    """Best linear unbiased leaf estimates from noisy counts of every node of a complete tree.

    ``measured[l]`` holds the noisy counts of the ``fanout**l`` nodes of level ``l`` (level 0
    is the root, the last level the leaves; leading axes are a batch), children of a node
    contiguous; ``variances[l]`` their noise variances (``inf``: not measured; 0 at a leaf:
    known exactly, e.g. padding). Two passes, as Hay, Rastogi, Miklau, Suciu 2010 §4 but
    with per-node variances: bottom-up, each node's own measurement is combined with the sum
    of its children's subtree estimates by inverse-variance weighting; top-down, each
    parent's final estimate minus the sum of its children's estimates is shared among the
    children in proportion to their variances. For equal variances this is Hay et al.'s
    constrained inference; in general it is the generalised least-squares solution (the
    Gaussian upward-downward recursion on a tree). Post-processing: costs no budget.
    """
    depth = len(measured) - 1
    z: list[np.ndarray] = [np.empty(0)] * (depth + 1)
    v: list[np.ndarray] = [np.empty(0)] * (depth + 1)
    z[depth] = np.asarray(measured[depth], dtype=float)
    v[depth] = np.asarray(variances[depth], dtype=float)
    for level in range(depth - 1, -1, -1):
        child = z[level + 1]
        s = child.reshape(*child.shape[:-1], -1, fanout).sum(axis=-1)
        vs = v[level + 1].reshape(-1, fanout).sum(axis=-1)
        var = np.asarray(variances[level], dtype=float)
        own = np.isfinite(var)
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = np.where(own, vs / (var + vs), 0.0)
            v[level] = np.where(own, var * vs / (var + vs), vs)
        weight = np.nan_to_num(weight)
        v[level] = np.nan_to_num(v[level])
        y = np.nan_to_num(np.asarray(measured[level], dtype=float))
        z[level] = weight * y + (1.0 - weight) * s
    estimate = z[0]
    for level in range(depth):
        zc = z[level + 1].reshape(*z[level + 1].shape[:-1], -1, fanout)
        vc = v[level + 1].reshape(-1, fanout)
        tot = vc.sum(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(tot > 0, vc / tot, 1.0 / fanout)
        estimate = zc + share * (estimate - zc.sum(axis=-1))[..., None]
        estimate = estimate.reshape(*estimate.shape[:-2], -1)
    return estimate


def _level_sums(leaves: np.ndarray, fanout: int, depth: int) -> list[np.ndarray]:
    """True counts of every level of the complete tree over ``leaves`` (root first)."""
    levels = [leaves]
    for _ in range(depth):
        levels.append(levels[-1].reshape(-1, fanout).sum(axis=-1))
    return levels[::-1]
