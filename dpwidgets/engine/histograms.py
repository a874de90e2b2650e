"""Histogram publishers: one interface for releasing 1-D and 2-D count vectors under DP.

Every algorithm that needs a private histogram (PriRP's 2-D grid, PriROC's one-sided range
counts, PriBRP, DSAT, DPCopula's margins) goes through :func:`publish`::

    release = publish(counts, epsilon, method="dawa", workload="prefix", rng=rng)
    release.counts          # float array, same shape as ``counts``: the estimate of every cell
    release.epsilon         # exactly what was spent (== epsilon)
    release.epsilon_parts   # what each stage spent, e.g. {"partition": 0.025, "measure": 0.075}

:data:`PUBLISHERS` maps each method name to a :class:`Publisher` record (title, paper, supported
dimensions, guarantee, and -- for a simplified variant -- what was simplified). One entry is NOT
differentially private and says so in its name and its ``private=False`` flag:
``"dawa_published_not_private"``, DAWA with the partition calibration of Li, Hay, Miklau & Wang
2014, kept to reproduce Chen 2018, Table 4.4; :func:`partition_singletons_log_ratio` computes its
real loss exactly. ``"dawa"`` is the private ``"dawa_dyadic"``.

Neighbouring datasets (all methods): add or remove one record, so exactly one cell changes by
exactly 1. Under replace-one neighbours two cells change by 1 each; every sensitivity below
doubles, so a release made with ``epsilon`` here is ``2 * epsilon``-DP under replace-one (or,
equivalently, call with ``epsilon / 2`` to get ``epsilon``-DP under replace-one).

All Laplace noise is drawn through :func:`dpwidgets.engine.mechanisms.laplace`; every random
choice uses the explicit ``rng``; inputs are validated before any randomness is consumed.

References
----------
Chen 2018 §4.2.2 (PriRP uses DAWA on a Hilbert-ordered grid), §4.3 (PriROC's one-sided range
queries), Tables 4.2 and 4.4 (regret of the publishers inside PriRP and PriROC).
Hay, Machanavajjhala, Miklau, Chen, Zhang, Bhattacharya, Hay 2016, "Principled evaluation of
differentially private algorithms using DPBench" (the regret measure and the method zoo).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from numbers import Integral
from types import MappingProxyType
from typing import Any

import numpy as np

from ._results import readonly as _readonly
from ._validation import (
    check_counts,
    check_epsilon,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_rng,
)
from .mechanisms import exponential_mechanism, is_floating_point_safe, laplace, laplace_reals

__all__ = [
    "NEIGHBOURS",
    "PUBLISHERS",
    "Publisher",
    "PublishedHistogram",
    "publish",
    "workload_matrix",
    "partition_singletons_log_ratio",
    "MAX_QUERIES",
    "MAX_MATRIX_ENTRIES",
    "MAX_HILBERT_ORDER",
]

#: The neighbour relation every publisher in this module assumes.
NEIGHBOURS = "add/remove one record (one cell changes by 1)"

#: The most queries :func:`workload_matrix` samples (``max_queries``).
MAX_QUERIES = 10**6
#: The most entries of a dense workload matrix (800 MB of float64).
MAX_MATRIX_ENTRIES = 10**8
#: The largest Hilbert-curve order (a ``2^31`` square: positions up to ``2^62`` fit in int64).
MAX_HILBERT_ORDER = 31


# ---------------------------------------------------------------------------------------------
# Result object and registry
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublishedHistogram:
    """A private histogram release and what it cost.

    Attributes
    ----------
    counts : numpy.ndarray of float
        The estimate of every cell, same shape as the input counts; may be negative or
        fractional (post-process with :meth:`nonnegative` if a display needs whole counts).
    epsilon : float
        The total privacy budget spent (add/remove-one neighbours); equals the sum of
        ``epsilon_parts``.
    method : str
        The :data:`PUBLISHERS` key of the publisher that made it.
    epsilon_parts : dict of str to float
        What each stage spent, e.g. ``{"partition": ..., "measure": ...}`` for DAWA.
    details : dict
        Method-specific, data-dependent but *private* by-products (the partition DAWA found,
        the branching HB used, the grid sizes AG chose, ...). Everything here is a function of
        the DP output only, so it may be shown freely.
    """

    counts: np.ndarray
    epsilon: float
    method: str
    epsilon_parts: Mapping[str, float]
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", _readonly(self.counts))
        object.__setattr__(self, "epsilon_parts", MappingProxyType(dict(self.epsilon_parts)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the histogram."""
        return self.counts.shape

    @property
    def total(self) -> float:
        """The estimated total count (sum of the cell estimates)."""
        return float(np.sum(self.counts))

    def prefix_sums(self) -> np.ndarray:
        """Estimated prefix sums: ``out[i] = counts[:i+1].sum()`` (1-D), or the 2-D cumulative
        sums ``out[i, j] = counts[:i+1, :j+1].sum()`` (post-processing, free)."""
        out = np.cumsum(self.counts, axis=0)
        if out.ndim == 2:
            out = np.cumsum(out, axis=1)
        return out

    def range_sum(self, lo, hi) -> float:
        """Estimated count of the half-open range ``[lo, hi)``; for 2-D, ``lo`` and ``hi`` are
        ``(row, col)`` pairs and the range is the rectangle ``[lo[0], hi[0]) x [lo[1], hi[1])``."""
        if self.counts.ndim == 1:
            return float(np.sum(self.counts[int(lo) : int(hi)]))
        (r0, c0), (r1, c1) = lo, hi
        return float(np.sum(self.counts[int(r0) : int(r1), int(c0) : int(c1)]))

    def nonnegative(self, *, rounded: bool = True) -> np.ndarray:
        """The estimate with negatives set to 0 and (by default) rounded to whole counts, as
        PriRP post-processes its grid (Chen 2018 §4.2.2). Post-processing: costs nothing."""
        out = np.clip(self.counts, 0.0, None)
        return np.round(out) if rounded else out


#: (counts, epsilon, rng, workload, options) -> (estimate, epsilon_parts, details)
PublisherFunction = Callable[..., tuple[np.ndarray, dict[str, float], dict[str, Any]]]


@dataclass(frozen=True)
class Publisher:
    """What :data:`PUBLISHERS` knows about one histogram publisher.

    Attributes
    ----------
    name : str
        Registry key (the ``method=`` of :func:`publish`).
    title : str
        Human-readable name.
    source : str
        The paper the algorithm comes from.
    dims : tuple of int
        Supported numbers of dimensions (1, 2 or both).
    guarantee : str
        The privacy statement, with the neighbour relation.
    simplification : str or None
        ``None`` when the paper's algorithm is implemented as published; otherwise what was
        simplified (and the name then differs from the original's).
    workload_aware : bool
        Whether the ``workload`` argument changes what the publisher does.
    private : bool
        False for a publisher kept to reproduce a text although it is not ``epsilon``-DP
        (``"dawa_published_not_private"``): the session refuses it in analyst mode.
    function : callable
        The implementation, called by :func:`publish` after validation.
    """

    name: str
    title: str
    source: str
    dims: tuple[int, ...]
    guarantee: str
    simplification: str | None
    workload_aware: bool
    function: PublisherFunction = field(repr=False)
    private: bool = True


_GUARANTEE = (
    "epsilon-DP for add/remove-one neighbours (one cell changes by 1); "
    "2*epsilon-DP under replace-one"
)

_REGISTRY: dict[str, Publisher] = {}
#: method name -> :class:`Publisher`, read-only. Aliases (``"lm"``) map to the same record.
PUBLISHERS: Mapping[str, Publisher] = MappingProxyType(_REGISTRY)


def _register(
    name: str,
    *,
    title: str,
    source: str,
    dims: tuple[int, ...],
    simplification: str | None = None,
    workload_aware: bool = False,
    aliases: tuple[str, ...] = (),
    guarantee: str = _GUARANTEE,
    private: bool = True,
) -> Callable[[PublisherFunction], PublisherFunction]:
    def decorate(function: PublisherFunction) -> PublisherFunction:
        record = Publisher(
            name=name,
            title=title,
            source=source,
            dims=dims,
            guarantee=guarantee,
            simplification=simplification,
            workload_aware=workload_aware,
            function=function,
            private=private,
        )
        for key in (name, *aliases):
            _REGISTRY[key] = record
        return function

    return decorate


# ---------------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------------

_NAMED_WORKLOADS = ("identity", "prefix", "range")


def workload_matrix(
    workload, shape: tuple[int, ...], *, rng: np.random.Generator | None = None, max_queries: int = 2000
) -> np.ndarray:
    """The query matrix (queries x cells, cells in C order) of a workload.

    Parameters
    ----------
    workload : None, "identity", "prefix", "range" or array_like
        ``None``/``"identity"``: one query per cell. ``"prefix"``: all prefix sums
        ``x[:i+1].sum()`` (PriROC's one-sided range queries; in 2-D the dominance rectangles
        ``[0, i] x [0, j]``). ``"range"``: all ranges ``[i, j]`` when there are at most
        ``max_queries`` of them, else ``max_queries`` random ranges (random rectangles in 2-D).
        An array: an explicit query matrix with one column per cell.
    shape : tuple of int
        Shape of the histogram.
    rng : numpy.random.Generator, optional
        Used only to sample random ranges (the workload is public: this spends no budget).
    max_queries : int
        Cap on the number of range queries.

    Returns
    -------
    numpy.ndarray
        A dense ``(n_queries, n_cells)`` 0/1 (or explicit) matrix.
    """
    if (not isinstance(shape, tuple | list) or len(shape) not in (1, 2)
            or not all(isinstance(s, Integral | np.integer) and not isinstance(s, bool) and s >= 1
                       for s in shape)):
        raise ValueError(f"shape must be a tuple of 1 or 2 integers >= 1, got {shape!r}")
    shape = tuple(int(s) for s in shape)
    n = math.prod(shape)
    max_queries = check_positive_int(max_queries, "max_queries", maximum=MAX_QUERIES)
    rng = check_rng(rng)
    if isinstance(workload, str) and workload not in (*_NAMED_WORKLOADS, "identity"):
        raise ValueError(f"workload must be None, one of {_NAMED_WORKLOADS} or a matrix, got {workload!r}")
    if workload is None or isinstance(workload, str):
        if workload is None or workload == "identity" or (workload == "prefix" and len(shape) == 1):
            rows_out = n
        elif workload == "prefix":
            rows_out = min(n, max_queries)
        elif len(shape) == 1:
            rows_out = min(n * (n + 1) // 2, max_queries)
        else:
            rows_out = max_queries
        if rows_out * n > MAX_MATRIX_ENTRIES:
            raise ValueError(
                f"shape and max_queries give a dense {rows_out} x {n} workload matrix; at most "
                f"MAX_MATRIX_ENTRIES = {MAX_MATRIX_ENTRIES} entries are built (use a smaller "
                f"shape or max_queries)"
            )
    if workload is None or (isinstance(workload, str) and workload == "identity"):
        return np.eye(n)
    if isinstance(workload, str):
        if len(shape) == 1:
            idx = np.arange(n)
            if workload == "prefix":
                return (idx[None, :] <= idx[:, None]).astype(float)
            lo, hi = np.triu_indices(n)
            if lo.size > max_queries:
                pick = check_rng(rng).choice(lo.size, size=max_queries, replace=False)
                lo, hi = lo[pick], hi[pick]
            return ((idx[None, :] >= lo[:, None]) & (idx[None, :] <= hi[:, None])).astype(float)
        rows, cols = shape
        r = np.arange(rows)[:, None]
        c = np.arange(cols)[None, :]
        if workload == "prefix":
            i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
            i, j = i.ravel(), j.ravel()
            if i.size > max_queries:
                pick = check_rng(rng).choice(i.size, size=max_queries, replace=False)
                i, j = i[pick], j[pick]
            mats = (r[None] <= i[:, None, None]) & (c[None] <= j[:, None, None])
            return mats.reshape(i.size, n).astype(float)
        gen = check_rng(rng)
        r0, r1 = np.sort(gen.integers(0, rows, size=(2, max_queries)), axis=0)
        c0, c1 = np.sort(gen.integers(0, cols, size=(2, max_queries)), axis=0)
        mats = (
            (r[None] >= r0[:, None, None])
            & (r[None] <= r1[:, None, None])
            & (c[None] >= c0[:, None, None])
            & (c[None] <= c1[:, None, None])
        )
        return mats.reshape(max_queries, n).astype(float)
    matrix = np.asarray(workload, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] != n or not np.all(np.isfinite(matrix)):
        raise ValueError(
            f"workload must be a finite (n_queries, {n}) query matrix, got shape {matrix.shape}"
        )
    return matrix


def _check_workload(workload) -> None:
    """Validate a workload's *kind* before any randomness (its shape is checked later)."""
    if workload is None or isinstance(workload, np.ndarray):
        return
    if isinstance(workload, str):
        if workload not in _NAMED_WORKLOADS:
            raise ValueError(f"workload must be None, one of {_NAMED_WORKLOADS} or a matrix, got {workload!r}")
        return
    try:
        matrix = np.asarray(workload, dtype=float)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.ndim != 2:
        raise ValueError(
            f"workload must be None, one of {_NAMED_WORKLOADS} or a 2-D query matrix, got "
            f"{type(workload).__name__}"
        )


# ---------------------------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------------------------


def publish(
    counts,
    epsilon: float,
    method: str = "dawa",
    *,
    rng: np.random.Generator | None = None,
    workload=None,
    **options,
) -> PublishedHistogram:
    """Release a 1-D or 2-D histogram with ``epsilon``-differential privacy.

    Parameters
    ----------
    counts : array_like, 1-D or 2-D
        Non-negative whole counts (one cell per bin). Validated before any randomness.
    epsilon : float
        The total budget of the whole release (all stages together).
    method : str
        A key of :data:`PUBLISHERS`: ``"identity"`` (alias ``"lm"``), ``"uniform"``, ``"hb"``,
        ``"dawa"`` (alias of ``"dawa_dyadic"``), ``"ahp_greedy"``, ``"ag"`` (2-D only),
        ``"mwem"``, ``"efpa"`` (1-D only).
    rng : numpy.random.Generator, optional
        Source of all randomness (default: a fresh unseeded generator).
    workload : None, "identity", "prefix", "range" or array_like, optional
        The queries the release should answer well; used by the workload-aware publishers
        (DAWA's second stage, MWEM), ignored by the others. See :func:`workload_matrix`.
    **options
        Method-specific tuning (e.g. ``rho`` for DAWA, ``rounds`` for MWEM, ``branching`` for
        HB); unknown options raise ``TypeError``.

    Returns
    -------
    PublishedHistogram

    Raises
    ------
    ValueError
        Bad ``counts`` (negative, fractional, NaN/inf, empty, or a dimension the method does
        not support), bad ``epsilon``, unknown ``method`` or malformed ``workload``.

    Notes
    -----
    Privacy: each publisher is ``epsilon``-DP for add/remove-one neighbours (one cell changes
    by 1), by sequential composition of its stages (``epsilon_parts``); under replace-one
    neighbours the same release is ``2 * epsilon``-DP.
    """
    if not isinstance(method, str) or method not in _REGISTRY:
        raise ValueError(f"method must be one of {sorted(_REGISTRY)}, got {method!r}")
    publisher = _REGISTRY[method]
    values = check_counts(counts, "counts", ndim=None)
    if values.ndim not in publisher.dims:
        raise ValueError(
            f"counts must be {' or '.join(f'{d}-D' for d in publisher.dims)} for method "
            f"{publisher.name!r}, got shape {values.shape}"
        )
    epsilon = check_epsilon(epsilon)
    _check_workload(workload)
    if workload is not None and not isinstance(workload, str):
        workload_matrix(workload, values.shape)  # shape check, deterministic
    rng = check_rng(rng)
    estimate, parts, details = publisher.function(values, epsilon, rng, workload, **options)
    spent = math.fsum(parts.values())
    if not math.isclose(spent, epsilon, rel_tol=1e-9, abs_tol=0.0):  # pragma: no cover
        raise AssertionError(f"{publisher.name} spent {spent}, expected {epsilon}")
    return PublishedHistogram(
        counts=np.asarray(estimate, dtype=float).reshape(values.shape),
        epsilon=epsilon,
        method=publisher.name,
        epsilon_parts=parts,
        details=details,
    )


def _split(epsilon: float, fraction: float) -> tuple[float, float]:
    """Split ``epsilon`` into ``fraction*epsilon`` and the exact remainder."""
    first = fraction * epsilon
    return first, epsilon - first


def _no_options(name: str, options: dict) -> None:
    if options:
        raise TypeError(f"{name} got unexpected option(s): {', '.join(sorted(options))}")


# ---------------------------------------------------------------------------------------------
# Identity (LM) and Uniform
# ---------------------------------------------------------------------------------------------


@_register(
    "identity",
    title="Identity (Laplace per cell, LM)",
    source="Dwork, McSherry, Nissim, Smith 2006, 'Calibrating noise to sensitivity in private data analysis'",
    dims=(1, 2),
    aliases=("lm",),
)
def _identity(x: np.ndarray, epsilon: float, rng: np.random.Generator, workload, **options):
    """Identity / Laplace mechanism: every cell plus Lap(1/epsilon).

    Privacy: the histogram has L1 sensitivity 1 under add/remove-one neighbours (2 under
    replace-one), so Lap(1/epsilon) per cell is epsilon-DP. Error: variance 2/epsilon^2 per cell.

    References: Dwork, McSherry, Nissim, Smith 2006.
    """
    _no_options("identity", options)
    return x + laplace(1.0 / epsilon, x.shape, rng=rng), {"measure": epsilon}, {}


@_register(
    "uniform",
    title="Uniform (noisy total spread evenly)",
    source="DPBench baseline (Hay et al. 2016); the Laplace mechanism on the total (Dwork et al. 2006)",
    dims=(1, 2),
)
def _uniform(x: np.ndarray, epsilon: float, rng: np.random.Generator, workload, **options):
    """Uniform: release the total with Lap(1/epsilon) and spread it evenly over the cells.

    Privacy: the total has sensitivity 1 under add/remove-one (0 under replace-one),
    so this is epsilon-DP.

    References: Hay et al. 2016 (DPBench's UNIFORM baseline).
    """
    _no_options("uniform", options)
    total = float(np.sum(x)) + float(laplace(1.0 / epsilon, rng=rng))
    return np.full(x.shape, total / x.size), {"measure": epsilon}, {"noisy_total": total}


# ---------------------------------------------------------------------------------------------
# Shared machinery: private total, tree least squares, Hilbert order
# ---------------------------------------------------------------------------------------------


def _public_or_private_total(
    x: np.ndarray, epsilon: float, total, share: float, rng: np.random.Generator
) -> tuple[float, dict[str, float], float]:
    """The record count n: public if ``total`` is given, else Lap(1/(share*epsilon)).

    Returns (n estimate, the part spent, the budget left for the rest of the algorithm).
    """
    if total is not None:
        n = check_nonnegative(total, "total")
        return n, {}, epsilon
    if not 0.0 < share < 1.0:
        raise ValueError(f"total_share must be in (0, 1), got {share!r}")
    eps_total, rest = _split(epsilon, share)
    n = float(np.sum(x)) + float(laplace(1.0 / eps_total, rng=rng))
    return max(n, 1.0), {"total": eps_total}, rest


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


def _check_cells(values, name: str) -> np.ndarray:
    """A copy of ``values`` as int64, or a ValueError naming ``name`` (integers >= 0 only)."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu" or np.any(array < 0):
        raise ValueError(f"{name} must be integers >= 0")
    return array.astype(np.int64)


def hilbert_d2xy(order: int, d) -> tuple[np.ndarray, np.ndarray]:
    """Cell ``(x, y)`` at position ``d`` of the Hilbert curve on a ``2**order`` square (vectorised).

    Consecutive positions are neighbouring cells (distance 1). Inverse of :func:`hilbert_xy2d`.
    """
    order = check_positive_int(order, "order", minimum=0, maximum=MAX_HILBERT_ORDER)
    t = _check_cells(d, "d")
    x = np.zeros_like(t)
    y = np.zeros_like(t)
    s = 1
    side = 1 << order
    while s < side:
        rx = 1 & (t // 2)
        ry = 1 & (t ^ rx)
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        x = x + s * rx
        y = y + s * ry
        t //= 4
        s *= 2
    return x, y


def hilbert_xy2d(order: int, x, y) -> np.ndarray:
    """Position on the Hilbert curve of cell ``(x, y)`` of a ``2**order`` square (vectorised)."""
    order = check_positive_int(order, "order", minimum=0, maximum=MAX_HILBERT_ORDER)
    x = _check_cells(x, "x")
    y = _check_cells(y, "y")
    d = np.zeros(np.broadcast(x, y).shape, dtype=np.int64)
    s = (1 << order) // 2
    while s > 0:
        rx = ((x & s) > 0).astype(np.int64)
        ry = ((y & s) > 0).astype(np.int64)
        d += s * s * ((3 * rx) ^ ry)
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        s //= 2
    return d


def hilbert_order(shape: tuple[int, int]) -> np.ndarray:
    """C-order flat indices of a ``rows x cols`` grid listed along a Hilbert curve.

    The grid is embedded in the smallest ``2**k`` square; cells outside the grid are skipped,
    so for a ``2**k`` square every step is to an adjacent cell.
    """
    if (not isinstance(shape, tuple | list) or len(shape) != 2
            or not all(isinstance(s, Integral | np.integer) and not isinstance(s, bool) and s >= 1
                       for s in shape)):
        raise ValueError(f"shape must be a pair (rows, cols) of integers >= 1, got {shape!r}")
    rows, cols = (int(s) for s in shape)
    order = max(0, math.ceil(math.log2(max(rows, cols, 1))))
    if order > MAX_HILBERT_ORDER or 4**order > MAX_MATRIX_ENTRIES:
        raise ValueError(f"shape must fit in a 2^k square of at most MAX_MATRIX_ENTRIES = "
                         f"{MAX_MATRIX_ENTRIES} cells, got {shape!r}")
    x, y = hilbert_d2xy(order, np.arange(1 << (2 * order)))
    inside = (x < rows) & (y < cols)
    return (x[inside] * cols + y[inside]).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _hilbert_order_cached(shape: tuple[int, int]) -> np.ndarray:
    """:func:`hilbert_order`, computed once per (public) grid shape; read-only."""
    order = hilbert_order(shape)
    order.setflags(write=False)
    return order


__all__ += ["hilbert_d2xy", "hilbert_order", "hilbert_xy2d"]


class _Workload:
    """A workload answered without forming a dense matrix for the named kinds.

    ``answer(x)`` returns all query answers of a flat (C-order) vector; ``row(i)`` the i-th
    query as a flat vector; ``sensitivity`` the largest change of any answer when one cell
    changes by 1.
    """

    def __init__(self, workload, shape: tuple[int, ...], rng: np.random.Generator, max_queries: int = 2000):
        self.shape = shape
        self.n = int(np.prod(shape))
        self.kind = "matrix"
        self.sensitivity = 1.0
        if workload is None or (isinstance(workload, str) and workload == "identity"):
            self.kind = "identity"
            self.size = self.n
        elif isinstance(workload, str) and workload == "prefix":
            self.kind = "prefix"
            self.size = self.n
        elif isinstance(workload, str) and workload == "range":
            self.kind = "range"
            if len(shape) == 1:
                lo, hi = np.triu_indices(self.n)
                if lo.size > max_queries:
                    pick = rng.choice(lo.size, size=max_queries, replace=False)
                    lo, hi = lo[pick], hi[pick]
                self.bounds = (lo, hi)
            else:
                rows, cols = shape
                r = np.sort(rng.integers(0, rows, size=(2, max_queries)), axis=0)
                c = np.sort(rng.integers(0, cols, size=(2, max_queries)), axis=0)
                self.bounds = (r[0], r[1], c[0], c[1])
            self.size = self.bounds[0].size
        else:
            self.matrix = workload_matrix(workload, shape)
            self.size = self.matrix.shape[0]
            self.sensitivity = float(np.max(np.abs(self.matrix))) or 1.0

    def answer(self, flat: np.ndarray) -> np.ndarray:
        if self.kind == "identity":
            return flat
        if self.kind == "matrix":
            return self.matrix @ flat
        if len(self.shape) == 1:
            cs = np.concatenate(([0.0], np.cumsum(flat)))
            if self.kind == "prefix":
                return cs[1:]
            lo, hi = self.bounds
            return cs[hi + 1] - cs[lo]
        grid = flat.reshape(self.shape)
        cs = np.zeros((self.shape[0] + 1, self.shape[1] + 1))
        cs[1:, 1:] = grid.cumsum(0).cumsum(1)
        if self.kind == "prefix":
            return cs[1:, 1:].ravel()
        r0, r1, c0, c1 = self.bounds
        return cs[r1 + 1, c1 + 1] - cs[r0, c1 + 1] - cs[r1 + 1, c0] + cs[r0, c0]

    def row(self, i: int) -> np.ndarray:
        if self.kind == "matrix":
            return self.matrix[i]
        q = np.zeros(self.shape)
        if self.kind == "identity":
            q.flat[i] = 1.0
        elif len(self.shape) == 1:
            if self.kind == "prefix":
                q[: i + 1] = 1.0
            else:
                q[self.bounds[0][i] : self.bounds[1][i] + 1] = 1.0
        elif self.kind == "prefix":
            r, c = divmod(i, self.shape[1])
            q[: r + 1, : c + 1] = 1.0
        else:
            r0, r1, c0, c1 = (b[i] for b in self.bounds)
            q[r0 : r1 + 1, c0 : c1 + 1] = 1.0
        return q.ravel()


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


# ---------------------------------------------------------------------------------------------
# DAWA: private L1 partition + workload-aware measurement of the buckets
# ---------------------------------------------------------------------------------------------


def dyadic_l1_partition(
    x: np.ndarray, epsilon: float, bucket_penalty: float, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """DAWA stage 1 on aligned dyadic intervals: a private least-cost partition of ``x``.

    The candidate buckets are the aligned dyadic intervals ``[j 2^k, (j+1) 2^k)`` of the
    domain padded with public zeros to ``2^L`` cells. A bucket's cost is its L1 deviation
    from its mean, ``dev(B) = sum_{i in B} |x_i - mean_B(x)|``, plus ``bucket_penalty`` (the
    expected absolute error of the bucket's noisy total, ``1/epsilon2``), as in Li et al.
    2014 §3. Every cost of a bucket of >= 2 cells gets Laplace noise (singletons have
    ``dev = 0`` whatever the data, so they need none), the noisy deviation is floored at 0
    (post-processing), and the least-cost partition is found exactly: dyadic intervals form
    a tree, so the optimum is ``opt(B) = min(cost(B), opt(left) + opt(right))``, one
    vectorised pass per level.

    Privacy: adding or removing one record changes ``dev`` of a bucket of size s by at most
    ``2(1 - 1/s)``; a cell lies in one aligned bucket per level, so the vector of all costs
    has L1 sensitivity ``sum_k 2(1 - 2^-k) < 2L`` and Lap(that/epsilon) per cost is
    epsilon-DP; the partition is post-processing of it. The deviations are real numbers:
    inside ``floating_point_safe()`` the noisy costs are one
    :func:`~dpwidgets.engine.mechanisms.laplace_reals` release (one changed cost per level,
    ``max_changed = L``), exact values on a power-of-two grid, and the merge tests that
    follow are post-processing of them (Mironov 2012).

    Returns the bucket start offsets (ascending, first 0) in the *unpadded* domain and the
    noise scale used.
    """
    n = x.size
    depth = max(1, math.ceil(math.log2(n)))
    size = 1 << depth
    padded = np.zeros(size)
    padded[:n] = x
    sensitivity = sum(2.0 * (1.0 - 2.0**-k) for k in range(1, depth + 1))
    scale = sensitivity / epsilon
    devs = []
    for k in range(1, depth + 1):
        blocks = padded.reshape(-1, 1 << k)
        devs.append(np.abs(blocks - blocks.mean(axis=1, keepdims=True)).sum(axis=1))
    if is_floating_point_safe():
        # One release of every level's costs, on a grid (one changed cost per level).
        noisy_devs = np.split(laplace_reals(np.concatenate(devs), sensitivity, epsilon, rng=rng,
                                            max_changed=depth),
                              np.cumsum([d.size for d in devs])[:-1])
    else:
        noisy_devs = [dev + laplace(scale, dev.shape, rng=rng) for dev in devs]
    best = np.full(size, bucket_penalty)  # level 0: singletons
    merge_flags = []
    for noisy_dev in noisy_devs:
        noisy = np.maximum(noisy_dev, 0.0) + bucket_penalty
        split = best.reshape(-1, 2).sum(axis=1)
        merge = noisy <= split
        best = np.where(merge, noisy, split)
        merge_flags.append(merge)
    # Top-down: a node is a bucket if it merges and no ancestor is a bucket.
    covered = np.zeros(1, dtype=bool)
    starts = []
    for k in range(depth, 0, -1):
        flags = merge_flags[k - 1]
        is_bucket = flags & ~covered
        starts.append(np.flatnonzero(is_bucket) << k)
        covered = np.repeat(covered | flags, 2)
    starts.append(np.flatnonzero(~covered))
    start = np.sort(np.concatenate(starts))
    start = start[start < n]
    return start, scale


def _bucket_hierarchy_design(
    k: int, workload_kind: str, bucket_workload: np.ndarray | None
) -> tuple[int, int, np.ndarray, str]:
    """Choose the level weights of a hierarchy over ``k`` bucket totals for the workload.

    Candidates: all budget on the bucket totals ("identity"), or a b-ary tree (b from
    :func:`hb_branching`) with per-level budget proportional to ``gamma**depth``,
    gamma in {0.5, 1, 2}. Each candidate's expected total squared error on the workload is
    computed exactly (data-independent) from the least-squares estimator's response to every
    unit of noise; the cheapest wins. Above 1024 buckets the uniform tree is taken untested.
    Returns (branching, height, weights over levels 1..h summing to 1, label). For the named
    workloads the same choice is made from a closed form and cached per (k, kind)
    (:func:`_named_workload_design`); an explicit matrix goes through the search.
    """
    if workload_kind in ("identity", "prefix", "range"):
        return _named_workload_design(k, workload_kind)
    return _bucket_hierarchy_search(k, workload_kind, bucket_workload)


def _design_candidates(k: int) -> tuple[int, int, dict[str, np.ndarray]]:
    """(b, h, label -> level weights) of the hierarchies :func:`_bucket_hierarchy_design` tries."""
    b, h = hb_branching(max(k, 2), 1)
    candidates = {"identity": np.eye(h)[-1]}
    for gamma in (0.5, 1.0, 2.0):
        w = gamma ** np.arange(h, dtype=float)
        candidates[f"tree(gamma={gamma:g})"] = w / w.sum()
    return b, h, candidates


@functools.lru_cache(maxsize=4096)
def _named_workload_design(k: int, workload_kind: str) -> tuple[int, int, np.ndarray, str]:
    """:func:`_bucket_hierarchy_design` for a named workload: a function of (k, kind) only.

    No confidential value enters the key: k is the bucket count of the DP partition (released
    in the details as ``n_buckets``) and the kind is public, so the design is cached. The expected errors come from :func:`_tree_workload_error`, a closed form that
    costs O(k h); should two distinct candidates come within a relative 1e-6 of each other,
    the choice is left to the matrix computation of :func:`_bucket_hierarchy_search`, so the
    design is always the one that search picks.
    """
    b, h, candidates = _design_candidates(k)
    if workload_kind == "identity":
        design = (b, h, candidates["identity"], "identity")
    elif k > 1024:
        design = (b, h, candidates["tree(gamma=1)"], "tree(gamma=1)")
    else:
        errors = {label: _tree_workload_error(k, b, h, w, workload_kind)
                  for label, w in candidates.items()}
        best = min(errors, key=errors.__getitem__)  # first of equals, as the search's strict <
        close = [label for label, err in errors.items() if label != best
                 and not np.array_equal(candidates[label], candidates[best])
                 and err <= errors[best] * (1 + 1e-6)]
        if close or not all(math.isfinite(e) for e in errors.values()):
            design = _bucket_hierarchy_search(k, workload_kind, None)
        else:
            design = (b, h, candidates[best], best)
    design[2].setflags(write=False)
    return design


def _tree_workload_error(k: int, b: int, h: int, weights: np.ndarray, workload_kind: str) -> float:
    """Expected total squared error, on all prefix or all range queries over ``k`` leaves, of
    least squares on a b-ary tree whose level l is measured with variance ``2 / weights[l-1]**2``
    (nan when the leaves are not measured; the caller then falls back to the matrix search).

    The covariance of the least-squares leaf estimates is the inverse of the information
    matrix ``F = sum_l B_l / v_l`` (``B_l`` joins leaves under the same level-l node; padding
    leaves are known zeros and drop out). Built bottom-up, each measured node adds a term
    ``a 1 1^T`` to a block-diagonal matrix, so by Sherman-Morrison
    ``F^{-1} = v_h I - sum_A c_A w_A w_A^T`` with ``w_A`` the children's ``F^{-1} 1``
    concatenated, ``c_A = a / (1 + a 1^T w_A)``, ``a = 1 / v_level(A)``. The error is then
    ``trace(W^T W F^{-1})``, and ``w^T W^T W w`` of a vector held on one node's contiguous
    leaves is a few sums of its running totals.
    """
    if not weights[h - 1] > 0:
        return math.nan
    v_leaf = 2.0 / weights[h - 1] ** 2
    i = np.arange(k, dtype=float)
    if workload_kind == "prefix":
        trace = float(np.sum(k - i))  # leaf i is in the prefixes [0, t], t = i .. k-1
    else:
        trace = float(np.sum((i + 1) * (k - i)))  # ranges [a, c] with a <= i <= c
    u = np.full(k, v_leaf)  # F_A^{-1} 1 of the current level's nodes, leaf by leaf
    total = v_leaf * trace
    for level in range(h - 1, 0, -1):
        if not weights[level - 1] > 0:
            continue  # an unmeasured level adds nothing to F
        a = weights[level - 1] ** 2 / 2.0
        size = b ** (h - level)
        node = np.arange(k) // size
        first = np.arange(0, k, size)
        last = np.minimum(first + size, k)  # exclusive
        sums = np.add.reduceat(u, first)
        c = a / (1.0 + a * sums)
        running = np.cumsum(u)
        local = running - np.concatenate(([0.0], running))[first][node]  # totals within node
        after = (k - last).astype(float)  # queries that end past the node hold all of it
        sq = np.add.reduceat(local**2, first) + after * sums**2
        if workload_kind == "prefix":
            quad = sq
        else:
            lin = np.add.reduceat(local, first) + after * sums
            quad = (k + 1) * sq - lin**2
        total -= float(np.sum(c * quad))
        u = u / (1.0 + a * sums)[node]
    return total


def _bucket_hierarchy_search(
    k: int, workload_kind: str, bucket_workload: np.ndarray | None
) -> tuple[int, int, np.ndarray, str]:
    """:func:`_bucket_hierarchy_design` by the least-squares response to every unit of noise
    (a ``(#measurements, k)`` matrix per candidate): any workload, O(k^2) per candidate."""
    b, h, candidates = _design_candidates(k)
    if workload_kind == "identity":
        return b, h, candidates["identity"], "identity"
    if k > 1024:
        return b, h, candidates["tree(gamma=1)"], "tree(gamma=1)"
    best_label, best_err = "identity", math.inf
    for label, weights in candidates.items():
        measured, variances, index = [np.zeros((0, 1))], [np.full(1, np.inf)], []
        for level in range(1, h + 1):
            nodes = b**level
            real = np.arange(nodes) * (b ** (h - level)) < k
            if weights[level - 1] > 0:
                var = np.where(real, 2.0 / weights[level - 1] ** 2, np.inf if level < h else 0.0)
            else:
                var = np.where(real, np.inf, np.inf if level < h else 0.0)
            variances.append(var)
            index.append(np.flatnonzero(np.isfinite(var) & (var > 0)))
        total = sum(i.size for i in index)
        offset = 0
        for level in range(1, h + 1):
            block = np.zeros((total, b**level))
            rows = np.arange(offset, offset + index[level - 1].size)
            block[rows, index[level - 1]] = np.sqrt(variances[level][index[level - 1]])
            measured.append(block)
            offset += index[level - 1].size
        measured[0] = np.zeros((total, 1))
        response = _tree_least_squares(measured, variances, b)[:, :k]  # noise -> bucket totals
        if workload_kind == "prefix":
            err = float(np.sum(np.cumsum(response, axis=1) ** 2))
        elif workload_kind == "range":
            p = np.concatenate([np.zeros((total, 1)), np.cumsum(response, axis=1)], axis=1)
            err = float(np.sum((k + 1) * np.sum(p**2, axis=1) - np.sum(p, axis=1) ** 2))
        else:
            err = float(np.sum((bucket_workload @ response.T) ** 2))
        if err < best_err:
            best_label, best_err = label, err
    return b, h, candidates[best_label], best_label


@_register(
    "dawa_dyadic",
    title="DAWA on aligned dyadic buckets (private L1 partition + workload-aware measurement)",
    source=(
        "Li, Hay, Miklau, Wang, 'A data- and workload-aware algorithm for range queries under "
        "differential privacy', PVLDB 7(5), 2014"
    ),
    dims=(1, 2),
    workload_aware=True,
    aliases=("dawa",),
    simplification=(
        "Stage 1 considers only *aligned* dyadic intervals (the paper: every interval whose "
        "length is a power of 2), and calibrates the cost noise to the L1 sensitivity of the "
        "whole cost vector, about 2*log2(n)/epsilon1, instead of the paper's 2/epsilon1 per "
        "interval (a proof we could check). Stage 2 picks among an identity measurement and "
        "three level-weight profiles of a hierarchy over the buckets by exact expected "
        "workload error, instead of the paper's GreedyH strategy search; inference is least "
        "squares on that tree. 2-D: cells in Hilbert order."
    ),
)
def _dawa(
    x: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    workload,
    *,
    rho: float = 0.25,
):
    """DAWA (two stages, after Li, Hay, Miklau, Wang 2014), on aligned dyadic buckets.

    Stage 1 (``rho * epsilon``): :func:`dyadic_l1_partition` groups contiguous cells of
    similar counts into buckets. Stage 2 (``(1 - rho) * epsilon``): the bucket totals are
    measured with a strategy chosen for the workload (Laplace on every bucket total for the
    identity workload; for prefix/range/explicit workloads the best of a few hierarchies
    over the buckets, see :func:`_bucket_hierarchy_design`), least-squares inference makes
    them consistent, and each bucket's total is spread uniformly over its cells. 2-D
    histograms are flattened along a Hilbert curve (:func:`hilbert_order`), as Chen 2018 §4.2.2
    describes for PriRP, and unflattened at the end; a 2-D workload is then matched by its
    1-D analogue over the Hilbert order (an explicit matrix is permuted accordingly).

    Privacy: sequential composition of an ``rho*epsilon``-DP partition and an
    ``(1-rho)*epsilon``-DP measurement (each record is in one bucket, and in one node per
    measured level of the bucket hierarchy), under add/remove-one neighbours; 2*epsilon-DP
    under replace-one.

    References: Li, Hay, Miklau, Wang, PVLDB 7(5) 2014; Chen 2018 §4.2.2; Hilbert 1891 (the curve).
    """
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    shape = x.shape
    order = _hilbert_order_cached(tuple(shape)) if x.ndim == 2 else None
    flat = x.ravel()[order] if order is not None else x
    eps1, eps2 = _split(epsilon, rho)
    start, scale = dyadic_l1_partition(flat, eps1, 1.0 / eps2, rng)
    return _dawa_measure(flat, start, scale, eps1, eps2, rng, workload, shape, order)


def _dawa_measure(flat, start, scale, eps1, eps2, rng, workload, shape, order):
    """DAWA stage 2: the bucket totals measured for the workload, spread over their cells."""
    n, k = flat.size, start.size
    sizes = np.diff(np.append(start, n))
    totals = np.add.reduceat(flat, start)
    if workload is None or (isinstance(workload, str) and workload == "identity"):
        kind, bucket_workload = "identity", None
    elif isinstance(workload, str):
        kind, bucket_workload = workload, None
    else:
        kind = "matrix"
        matrix = workload_matrix(workload, shape)
        if order is not None:
            matrix = matrix[:, order]
        bucket_workload = np.add.reduceat(matrix, start, axis=1) / sizes
    b, h, weights, label = _bucket_hierarchy_design(k, kind, bucket_workload)
    if label == "identity":
        bucket_est = totals + laplace(1.0 / eps2, k, rng=rng)
    else:
        leaves = np.zeros(b**h)
        leaves[:k] = totals
        truth = _level_sums(leaves, b, h)
        measured, variances = [np.zeros(1)], [np.full(1, np.inf)]
        for level in range(1, h + 1):
            real = np.arange(b**level) * (b ** (h - level)) < k
            eps_l = weights[level - 1] * eps2  # every tree profile has all weights > 0
            noisy = truth[level] + laplace(1.0 / eps_l, truth[level].shape, rng=rng)
            var = np.where(real, 2.0 / eps_l**2, np.inf if level < h else 0.0)
            measured.append(np.where(real, noisy, 0.0))
            variances.append(var)
        bucket_est = _tree_least_squares(measured, variances, b)[:k]
    cells = np.repeat(bucket_est / sizes, sizes)
    if order is not None:
        out = np.empty(n)
        out[order] = cells
        cells = out.reshape(shape)
    details = {
        "n_buckets": int(k),
        "bucket_starts": start,
        "partition_noise_scale": scale,
        "strategy": label,
        "cell_order": "hilbert" if order is not None else "natural",
    }
    return cells, {"partition": eps1, "measure": eps2}, details


# ---------------------------------------------------------------------------------------------
# DAWA as published: NOT differentially private (kept to reproduce Chen 2018, Table 4.4)
# ---------------------------------------------------------------------------------------------

#: The noise scale, times epsilon1, that the published DAWA adds to every interval's cost.
PUBLISHED_DAWA_COST_SCALE = 2.0
#: The largest domain :func:`published_l1_partition` accepts (its cost table is O(n log n)
#: intervals, each O(length) to cost: about 4n^2 operations).
MAX_PUBLISHED_DAWA_CELLS = 4096


def _window_deviations(x: np.ndarray, length: int) -> np.ndarray:
    """``dev`` of every window ``x[i:i+length]``: sum of |x_j - mean| (O(n·length), chunked)."""
    from numpy.lib.stride_tricks import sliding_window_view

    windows = sliding_window_view(x, length)
    out = np.empty(windows.shape[0])
    step = max(1, 2**20 // length)
    for i in range(0, windows.shape[0], step):
        w = windows[i : i + step]
        out[i : i + step] = np.abs(w - w.mean(axis=1, keepdims=True)).sum(axis=1)
    return out


def published_l1_partition(
    x: np.ndarray, epsilon: float, bucket_penalty: float, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """DAWA stage 1 as Li, Hay, Miklau & Wang 2014 publish it (§3.2): NOT epsilon-DP.

    Candidates: every interval whose length is a power of 2 (any start). Each interval's cost
    ``dev(B) + bucket_penalty`` gets its own ``Lap(2/epsilon)``, and the least-cost partition
    is found by dynamic programming over the cells. The paper's argument bounds the change of
    one interval's cost by 2 and stops there; but one record changes the cost of *every*
    interval that contains its cell (about 2n of them), so the noisy cost vector has L1
    sensitivity of order n, not 2. See :func:`partition_singletons_log_ratio` for the exact
    loss of one output.
    """
    n = x.size
    scale = PUBLISHED_DAWA_COST_SCALE / epsilon
    lengths = [1 << k for k in range(1, max(1, math.floor(math.log2(n))) + 1) if (1 << k) <= n]
    noisy = {}
    for length in lengths:
        dev = _window_deviations(x, length)
        noisy[length] = np.maximum(dev + laplace(scale, dev.size, rng=rng), 0.0) + bucket_penalty
    best = np.zeros(n + 1)
    back = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):  # inherently sequential: opt(j) = min_L opt(j - L) + cost
        b, arg = best[j - 1] + bucket_penalty, 1
        for length in lengths:
            if length > j:
                break
            c = best[j - length] + noisy[length][j - length]
            if c < b:
                b, arg = c, length
        best[j], back[j] = b, arg
    starts, j = [], n
    while j > 0:
        j -= back[j]
        starts.append(j)
    return np.asarray(starts[::-1], dtype=np.int64), scale


@_register(
    "dawa_published_not_private",
    title="DAWA as published (NOT differentially private; teaching and reproduction only)",
    source=(
        "Li, Hay, Miklau, Wang, 'A data- and workload-aware algorithm for range queries under "
        "differential privacy', PVLDB 7(5), 2014 (the calibration of its §3.2)"
    ),
    dims=(1,),
    workload_aware=True,
    private=False,
    guarantee=(
        "NOT epsilon-DP for add/remove-one neighbours (nor replace-one): the partition step "
        "adds Lap(2/epsilon1) to each interval's cost, but "
        "one record changes the cost of every interval containing its cell; the output 'all "
        "singletons' has log-ratio far above epsilon1 (see partition_singletons_log_ratio)"
    ),
    simplification=(
        "Stage 1 as published (every power-of-2-length interval, Lap(2/epsilon1) per cost), "
        "which is what is wrong with it; stage 2 as in dawa_dyadic (least squares on a "
        "hierarchy chosen for the workload) instead of GreedyH. 1-D only."
    ),
)
def _dawa_published(x: np.ndarray, epsilon: float, rng: np.random.Generator, workload, *,
                    rho: float = 0.25):
    """DAWA with the published stage-1 calibration: NOT epsilon-DP (a counterexample).

    Why it is not private. The partition step releases (a function of) noisy costs
    ``dev(B) + Lap(2/epsilon1)`` of every interval B whose length is a power of 2; one record
    added to cell i changes ``dev(B)`` by up to ``2(1 - 1/|B|)`` for *every* B containing i.
    The output "every cell its own bucket" happens exactly when every noisy cost exceeds
    ``(|B| - 1)`` penalties (the product over B of independent Laplace tails), so its
    log-probability ratio between a histogram of zeros and the same with one record in a
    middle cell is computed exactly by :func:`partition_singletons_log_ratio`: about 2·ε1
    at n = 4 and several thousand ε1 at n = 4096, against ≤ ε1 for ``"dawa_dyadic"``, whose
    noise is calibrated to the L1 sensitivity of the whole cost vector. Chen 2018, Tables 4.2
    and 4.4 (DAWA's regret 1.00) rest on this calibration; it is registered only so that they
    can be reproduced, is refused in analyst mode (``Publisher.private`` is False) and is
    marked NOT private wherever its output is shown; inside
    :func:`.mechanisms.floating_point_safe` (the analyst release path) it refuses to run at all.

    References: Li, Hay, Miklau, Wang, PVLDB 7(5) 2014, §3.2; Chen 2018 §4.3.3, Table 4.4.
    """
    if is_floating_point_safe():
        # Inside floating_point_safe() the run is an analyst release on confidential data. The
        # door refuses this publisher there wherever a mechanism checks Publisher.private; this
        # refusal covers any mechanism that does not (its release then fails, never leaks).
        raise ValueError("'dawa_published_not_private' is not differentially private: it does "
                         "not run on confidential data")
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    if x.size > MAX_PUBLISHED_DAWA_CELLS:
        raise ValueError(f"counts must have at most {MAX_PUBLISHED_DAWA_CELLS} cells for "
                         f"'dawa_published_not_private', got {x.size}")
    eps1, eps2 = _split(epsilon, rho)
    start, scale = published_l1_partition(x, eps1, 1.0 / eps2, rng)
    return _dawa_measure(x, start, scale, eps1, eps2, rng, workload, x.shape, None)


def _log_laplace_tail(t: np.ndarray, scale: float) -> np.ndarray:
    """``log P(L > t)`` for ``L ~ Lap(scale)``, stable in both tails."""
    t = np.asarray(t, dtype=float) / scale
    return np.where(t >= 0, math.log(0.5) - np.maximum(t, 0), np.log1p(-0.5 * np.exp(np.minimum(t, 0))))


def partition_singletons_log_ratio(
    counts, neighbour, epsilon1: float, *, method: str = "dawa_published_not_private",
    bucket_penalty: float = 1.0,
) -> float:
    """Exact ``log P(all singletons | counts) - log P(all singletons | neighbour)`` of DAWA stage 1.

    "All singletons" (every cell its own bucket) is the partition chosen exactly when every
    candidate bucket B's noisy cost exceeds the ``|B|`` penalties of its cells as singletons,
    i.e. ``Lap_B > (|B| - 1)·bucket_penalty - dev(B)`` for every B: a product of independent
    Laplace tails, so its probability, and the log-ratio between two histograms, is exact. An
    ``epsilon1``-DP partition step keeps ``|log-ratio| <= epsilon1`` for neighbours (one cell
    changed by 1); ``method="dawa_published_not_private"`` (every power-of-2-length interval,
    ``Lap(2/epsilon1)`` each) does not; ``method="dawa_dyadic"`` (aligned dyadic buckets of the
    zero-padded domain, noise scaled to the whole cost vector's sensitivity) does.

    Parameters
    ----------
    counts, neighbour : array_like, 1-D
        Two histograms of the same length (they need not be neighbours; then the bound is
        ``epsilon1`` times their L1 distance).
    epsilon1 : float
        The partition step's nominal budget.
    method : {"dawa_published_not_private", "dawa_dyadic"}
    bucket_penalty : float
        The penalty per bucket (``1/epsilon2`` inside the publishers), > 0.

    Returns
    -------
    float
        The log-ratio, in units of nats (divide by ``epsilon1`` for the loss in ε1).

    References
    ----------
    Li, Hay, Miklau & Wang 2014, §3.2 (the calibration examined).
    """
    a = check_counts(counts, "counts")
    b = check_counts(neighbour, "neighbour")
    if a.shape != b.shape:
        raise ValueError(f"counts and neighbour must have the same length, got {a.size} and {b.size}")
    epsilon1 = check_epsilon(epsilon1, "epsilon1")
    if method not in ("dawa_published_not_private", "dawa_dyadic"):
        raise ValueError("method must be 'dawa_published_not_private' or 'dawa_dyadic', "
                         f"got {method!r}")
    bucket_penalty = check_positive(bucket_penalty, "bucket_penalty")
    if a.size > MAX_PUBLISHED_DAWA_CELLS:
        raise ValueError(f"counts must have at most {MAX_PUBLISHED_DAWA_CELLS} cells, got {a.size}")

    def log_p(x: np.ndarray) -> float:
        if method == "dawa_published_not_private":
            scale = PUBLISHED_DAWA_COST_SCALE / epsilon1
            total = 0.0
            for k in range(1, int(math.floor(math.log2(x.size))) + 1 if x.size > 1 else 1):
                length = 1 << k
                dev = _window_deviations(x, length)
                total += float(np.sum(_log_laplace_tail((length - 1) * bucket_penalty - dev, scale)))
            return total
        depth = max(1, math.ceil(math.log2(x.size)))
        padded = np.zeros(1 << depth)
        padded[: x.size] = x
        scale = sum(2.0 * (1.0 - 2.0**-k) for k in range(1, depth + 1)) / epsilon1
        total = 0.0
        for k in range(1, depth + 1):
            blocks = padded.reshape(-1, 1 << k)
            dev = np.abs(blocks - blocks.mean(axis=1, keepdims=True)).sum(axis=1)
            total += float(np.sum(_log_laplace_tail(((1 << k) - 1) * bucket_penalty - dev, scale)))
        return total

    return log_p(a) - log_p(b)


# ---------------------------------------------------------------------------------------------
# AHP: noisy counts, threshold, sort, cluster, re-measure the clusters
# ---------------------------------------------------------------------------------------------


def _ahp_err_star(values: np.ndarray, measure_var: float) -> np.ndarray:
    """AHP's look-ahead cost of each sorted value: its smallest possible share of the error of
    a cluster it would start.

    ``err*(j) = min_{l >= j} (v_j - mean(v_j..v_l))^2 + measure_var / (l - j + 1)^2``: the
    value's squared deviation from that cluster's mean plus its share of the cluster's
    measurement error ``measure_var / |C|`` (Zhang et al. 2014, §4.2). The scan over l stops
    as the paper's early termination: the first term never decreases along a sorted sequence,
    so once its increase exceeds what the second term can still lose (down to ``measure_var /
    (n - j)^2``) no later l can do better. A run of equal values (the thresholded zeros) is
    always scanned to its end (the first term stays 0 there), so the scan starts at the end of
    the run; then it is vectorised over j, looping over the extra length.
    """
    n = values.size
    prefix = np.concatenate(([0.0], np.cumsum(values)))
    j = np.arange(n)
    length = np.searchsorted(values, values, side="right") - j  # to the end of the run
    best = measure_var / length**2.0
    floor = measure_var / (n - j) ** 2.0
    last_dev = np.zeros(n)
    last_share = best.copy()
    active = j[j + length < n]  # positions with values after their run
    while active.size:
        size = length[active] + 1
        dev = (values[active] - (prefix[active + size] - prefix[active]) / size) ** 2
        share = measure_var / size**2.0
        go_on = dev - last_dev[active] < last_share[active] - floor[active]
        active, size, dev, share = active[go_on], size[go_on], dev[go_on], share[go_on]
        best[active] = np.minimum(best[active], dev + share)
        length[active], last_dev[active], last_share[active] = size, dev, share
        active = active[active + size < n]
    return best


def _greedy_sorted_clusters(sorted_values: np.ndarray, measure_var: float) -> np.ndarray:
    """Cut a sorted sequence of (thresholded) noisy counts into clusters, as AHP does.

    The error of a cluster C is ``SSE(C) + measure_var / |C|``: the squared deviation of its
    members' values from their mean (the cost of replacing them by one average; values
    thresholded to 0 are exactly 0 and cost nothing among themselves) plus the error of its
    re-measured total spread over |C| cells (``measure_var = 2 / epsilon2^2``). Scanning
    left to right, the next value closes the current cluster and starts a new one when
    adding it would raise the cluster's error by at least :func:`_ahp_err_star`, its
    cheapest share in a cluster of its own (Zhang et al. 2014, §4.2, Algorithm 2's greedy
    clustering). Inherently sequential, O(n) with prefix sums. Returns the cluster label of
    every sorted position.
    """
    n = sorted_values.size
    star = _ahp_err_star(sorted_values, measure_var).tolist()
    p = np.concatenate(([0.0], np.cumsum(sorted_values))).tolist()
    pp = np.concatenate(([0.0], np.cumsum(sorted_values**2))).tolist()
    starts = [0]
    i, last = 0, float(measure_var)
    for j in range(1, n):
        length = j - i + 1
        s = p[j + 1] - p[i]
        now = (pp[j + 1] - pp[i]) - s * s / length + measure_var / length
        if now >= last + star[j]:
            starts.append(j)
            i, last = j, float(measure_var)
        else:
            last = now
    labels = np.zeros(n, dtype=np.int64)
    labels[starts[1:]] = 1
    return np.cumsum(labels)


@_register(
    "ahp_greedy",
    title="AHP with a greedy sorted clustering",
    source=(
        "Zhang, Chen, Xu, Meng, Xie, 'Towards accurate histogram publication under "
        "differential privacy', SDM 2014"
    ),
    dims=(1, 2),
    simplification=(
        "AHP's structure and its greedy clustering of the sorted noisy values (cluster error "
        "SSE + 2/(epsilon2^2 |C|), split when a value's marginal cost reaches its look-ahead "
        "cost err*); the defaults rho = 0.5 and threshold 2/epsilon1 are ours (DPBench's port "
        "of AHP uses rho = 0.85 and 0.35 ln(n)/epsilon1), and the paper's text is not among "
        "the project's sources, so the clustering follows DPBench's port of it."
    ),
)
def _ahp(
    x: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    workload,
    *,
    rho: float = 0.5,
    threshold: float | None = None,
):
    """AHP-style publication: cluster cells by their noisy counts, then re-measure clusters.

    Stage 1 (``rho * epsilon``): every cell + Lap(1/epsilon1); noisy counts below
    ``threshold`` (default ``2/epsilon1``) are set to 0; the values are sorted and cut into
    clusters by :func:`_greedy_sorted_clusters` (AHP's greedy rule: cluster error SSE of the
    thresholded noisy values + ``2/(epsilon2^2 |C|)``). Stage 2 (``(1 - rho) * epsilon``): the
    true total of each cluster (a set of cells, not necessarily contiguous) + Lap(1/epsilon2),
    spread evenly over its cells.

    An earlier version subtracted the expected first-stage noise ``|C| * 2/epsilon1^2`` from
    each cluster's SSE, also for the cells thresholded to exactly 0, which carry no noise: a
    large cluster of zeros then absorbed every nonzero value whose squared distance was below
    ``|C| * 2/epsilon1^2``, and the release collapsed towards Uniform. The paper's error
    (which we now use) has no such correction.

    Privacy: stage 1 is the Laplace mechanism on the histogram (sensitivity 1); the clusters
    are a function of its output; each record lies in one cluster, so stage 2 has
    sensitivity 1. Sequential composition: epsilon-DP under add/remove-one (2*epsilon under
    replace-one).

    References: Zhang, Chen, Xu, Meng, Xie, SDM 2014 (§4.2, the greedy clustering); Hay et
    al. 2016 (DPBench's port, ``dpcomp_core/algorithm/ahp``).
    """
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    eps1, eps2 = _split(epsilon, rho)
    theta = 2.0 / eps1 if threshold is None else check_nonnegative(threshold, "threshold")
    flat = x.ravel()
    noisy = flat + laplace(1.0 / eps1, flat.size, rng=rng)
    noisy = np.where(noisy < theta, 0.0, noisy)
    order = np.argsort(noisy, kind="stable")
    labels_sorted = _greedy_sorted_clusters(noisy[order], 2.0 / eps2**2)
    labels = np.empty(flat.size, dtype=np.int64)
    labels[order] = labels_sorted
    n_clusters = int(labels_sorted[-1]) + 1
    totals = np.bincount(labels, weights=flat, minlength=n_clusters)
    sizes = np.bincount(labels, minlength=n_clusters)
    est = (totals + laplace(1.0 / eps2, n_clusters, rng=rng)) / sizes
    return est[labels].reshape(x.shape), {"cluster": eps1, "measure": eps2}, {
        "n_clusters": n_clusters,
        "threshold": theta,
    }


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


# ---------------------------------------------------------------------------------------------
# EFPA: Fourier perturbation with a privately chosen number of coefficients (1-D)
# ---------------------------------------------------------------------------------------------

_EFPA_BOUNDS = ("retained", "histogram")
_EFPA_FALLBACKS = (None, "identity")


def _real_fourier_layout(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Energy weight and number of real parameters of each of the ``n // 2 + 1`` coefficients
    of ``numpy.fft.rfft`` of a length-``n`` real vector.

    The DC coefficient (and, for even ``n``, the Nyquist one) is real and stands for itself
    (weight 1, one parameter); every other coefficient also stands for its complex conjugate
    in the full DFT (weight 2) and has a real and an imaginary part (two parameters). With
    ``norm="ortho"``, ``sum(weight * |F|**2) == sum(x**2)`` (Parseval).
    """
    m = n // 2 + 1
    weight = np.full(m, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    return weight, weight.copy()  # a real coefficient: 1 parameter; a complex one: 2


def _efpa_scores(x: np.ndarray, eps2: float, l2_bound: str):
    """EFPA's data-dependent quantities for a 1-D histogram ``x`` (see :func:`_efpa`).

    Returns ``(coeffs, weight, params, d, lam, quality)``: the orthonormal rfft
    coefficients, their energy weights and parameter counts, ``d[k-1]`` the real parameters
    kept with the first k coefficients, ``lam[k-1]`` their Laplace scale and ``quality[k-1]
    = -sqrt(RE(k) + PE(k))``, the exponential mechanism's score (sensitivity <= 1).
    """
    n = x.size
    coeffs = np.fft.rfft(x, norm="ortho")
    weight, params = _real_fourier_layout(n)
    energy = weight * np.abs(coeffs) ** 2
    # RE(k) for k = 1..m: energy of coefficients k..m-1 (suffix sums; RE(m) = 0).
    dropped = np.append(np.cumsum(energy[::-1])[::-1][1:], 0.0)
    d = np.cumsum(params)  # d_k, the real parameters kept with the first k coefficients
    delta2 = np.sqrt(d / n) if l2_bound == "retained" else np.ones_like(d)
    lam = np.sqrt(d) * delta2 / eps2
    quality = -np.sqrt(dropped + 2.0 * d * lam**2)
    return coeffs, weight, params, d, lam, quality


@_register(
    "efpa",
    title="EFPA (enhanced Fourier perturbation, 1-D)",
    source=(
        "Ács, Castelluccia, Chen, 'Differentially private histogram publishing through lossy "
        "compression', ICDM 2012 (Li 2017 §3.2.1 uses it for DPCopula's margins)"
    ),
    dims=(1,),
)
def _efpa(
    x: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    workload,
    *,
    rho: float = 0.5,
    l2_bound: str = "retained",
    fallback: str | None = None,
):
    """EFPA: keep the k lowest Fourier coefficients, k chosen privately, and perturb them.

    1. ``F = rfft(x, norm="ortho")``: the orthonormal DFT; since ``x`` is real only the
       ``m = n // 2 + 1`` first coefficients are free (the rest are their conjugates).
    2. With ``epsilon1 = rho * epsilon`` (the paper: half), the exponential mechanism
       (:func:`~dpwidgets.engine.mechanisms.exponential_mechanism`) picks k in ``1..m`` with
       quality ``U(k) = -sqrt(RE(k) + PE(k))``, where ``RE(k) = sum_{j >= k} w_j |F_j|^2 =
       ||x - x_k||^2`` is the squared error of dropping the other coefficients (w_j = 2 for
       a coefficient standing also for its conjugate) and ``PE(k) = 2 d_k lambda_k^2`` the
       expected squared error of the Laplace noise on the ``d_k`` real parameters kept
       (``d_k = 2k - 1``, or ``2k - 2`` when the Nyquist coefficient of an even ``n`` is
       kept). ``RE + PE`` is exactly the expected squared L2 error of the release; all k are
       scored at once from suffix sums of the coefficient energies (the first k coefficients
       are kept, not the k largest: that choice would itself leak).
    3. With ``epsilon2 = epsilon - epsilon1``, each kept real parameter, in the orthonormal
       real Fourier basis (``sqrt(2) Re F_j``, ``sqrt(2) Im F_j``; ``F_0`` and the Nyquist
       term as they are), gets Lap(lambda_k), ``lambda_k = sqrt(d_k) * Delta2_k /
       epsilon2``; the rest are set to 0 and the inverse DFT gives the estimate.

    ``l2_bound`` chooses Delta2_k, the L2 sensitivity put into the L2-to-L1 step
    ``Delta1 <= sqrt(d) * Delta2`` (Rastogi and Nath's FPA argument, which EFPA reuses):

    - ``"retained"`` (default): ``Delta2_k = sqrt(d_k / n)``. One record changes one cell
      by 1, i.e. adds ``e_t``, whose coordinate on the DC term is ``1/sqrt(n)``, on the
      Nyquist term ``+-1/sqrt(n)`` and on the pair (``sqrt(2) Re F_j``, ``sqrt(2) Im F_j``)
      ``sqrt(2/n) (cos, -sin)(2 pi j t / n)``; the squared norm of the d kept coordinates is
      therefore exactly ``d / n``, so ``Delta1 <= d / sqrt(n)`` (Cauchy-Schwarz; also
      directly, each pair contributes at most ``sqrt(2/n)(|cos| + |sin|) <= 2/sqrt(n)``).
      We derived this bound; it is tighter than the next one by ``sqrt(d/n)``.
    - ``"histogram"``: ``Delta2 = 1``, the L2 sensitivity of the whole histogram (kept by
      the unitary DFT), which is the constant the authors' reference implementation uses
      (``lambda = sqrt(kept) * l2_sens / epsilon2`` with ``l2_sens = 1``; DPComp's copy of
      it). The paper's text is not among the project's sources, so we could not check its
      printed constant; both bounds are valid, this one is the conservative one.

    Privacy: ``U`` has sensitivity <= 1 under add/remove-one: ``sqrt(RE(k))`` is the norm of
    the dropped coordinates, which moves by at most the norm of ``e_t``'s dropped
    coordinates, ``sqrt((n - d_k)/n) <= 1``, and ``a -> sqrt(a^2 + PE)`` is 1-Lipschitz
    (PE is data-independent); so step 2 is epsilon1-DP. Step 3 is the Laplace mechanism
    with L1 sensitivity at most ``sqrt(d_k) Delta2_k`` for the (now public) k: epsilon2-DP.
    Sequential composition: epsilon-DP under add/remove-one (2*epsilon under replace-one).

    Deviations from the reference implementation, each documented: the score is
    ``-sqrt(RE + PE)`` (the authors' code scores ``-(sqrt(RE) + sqrt(PE))``; both have
    sensitivity 1, ours is the root of the expected squared error itself, so its best k
    is the error-minimising one); the noise is added to the real and imaginary parts (the
    authors' code perturbs the magnitudes and keeps the exact phases, which would release
    data-dependent phases without noise); and ``"retained"`` is the default bound.

    ``fallback="identity"`` (ours; default ``None``, the paper's EFPA) adds one more
    candidate to step 2: the Laplace histogram, ``Lap(1/epsilon2)`` on every cell, with
    the quality ``-sqrt(2 n / epsilon2**2)``, its own expected squared error. That score does
    not depend on the data, so the candidates' qualities still have sensitivity <= 1 and
    step 2 stays epsilon1-DP; if it wins, step 3 is the Laplace mechanism (L1 sensitivity 1)
    with epsilon2. Same total, same guarantee. Why: a spiky histogram (a point mass, a top
    code) needs every coefficient, and with all ``d = n`` parameters EFPA's noise per cell is
    ``sqrt(2) n / (sqrt(n) epsilon2)`` -- ``sqrt(n)`` times Laplace's -- so the paper's EFPA
    is then far worse than the plain histogram it set out to beat; with the fallback the
    exponential mechanism picks whichever has the smaller expected L2 error (at the price
    of epsilon1 spent on the choice). ``details["n_coefficients"]`` is then 0 and
    ``details["fallback"]`` says which was chosen.

    1-D only: a 2-D grid raises ``ValueError`` (publish it with another method).

    References: Ács, Castelluccia, Chen, ICDM 2012 (EFPA); Rastogi, Nath, SIGMOD 2010 (FPA,
    the L2-to-L1 step); McSherry, Talwar 2007 (exponential mechanism); Li 2017 §3.2.1 (DPCopula
    computes its DP margins with EFPA).
    """
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1), got {rho!r}")
    if l2_bound not in _EFPA_BOUNDS:
        raise ValueError(f"l2_bound must be one of {_EFPA_BOUNDS}, got {l2_bound!r}")
    if fallback not in _EFPA_FALLBACKS:
        raise ValueError(f"fallback must be one of {_EFPA_FALLBACKS}, got {fallback!r}")
    n = x.size
    eps1, eps2 = _split(epsilon, rho)
    coeffs, weight, params, d, lam, quality = _efpa_scores(x, eps2, l2_bound)
    if fallback == "identity":
        quality = np.append(quality, -np.sqrt(2.0 * n) / eps2)  # data-independent score
    choice = int(exponential_mechanism(quality, eps1, 1.0, rng=rng)[0])
    if choice == d.size:  # the Laplace histogram won the selection
        estimate = x + laplace(1.0 / eps2, n, rng=rng)
        details = {
            "n_coefficients": 0,
            "n_parameters": n,
            "noise_scale": 1.0 / eps2,
            "l2_bound": l2_bound,
            "fallback": "identity",
        }
        return estimate, {"select": eps1, "measure": eps2}, details
    k = choice + 1
    scale = lam[k - 1]
    # Laplace(lambda) on sqrt(2) Re F_j is Laplace(lambda / sqrt(2)) on Re F_j.
    per_part = scale / np.sqrt(weight[:k])
    # The DC (and Nyquist) coefficients are real: their imaginary noise is masked out.
    noisy = np.zeros_like(coeffs)
    if is_floating_point_safe():
        # The d_k real parameters sqrt(w) (Re F_j, Im F_j) have L1 sensitivity sqrt(d_k)
        # Delta2_k = lambda eps2: round them to a grid and add grid noise (Mironov 2012); the
        # public 1/sqrt(w) and the inverse transform are post-processing.
        two = params[:k] == 2.0
        parts = np.concatenate((coeffs[:k].real, coeffs[:k].imag[two]))
        units = 1.0 / np.sqrt(np.concatenate((weight[:k], weight[:k][two])))
        # (1 + 2**-50): lambda eps2 rounds back to sqrt(d_k) Delta2_k within an ulp or two.
        released = laplace_reals(parts, scale * eps2 * (1.0 + 2.0**-50), eps2, rng=rng,
                                 unit=units, max_changed=parts.size)
        imag = coeffs[:k].imag.copy()  # exactly 0 for the DC (and Nyquist) coefficients
        imag[two] = released[k:]
        noisy[:k] = released[:k] + 1j * imag
    else:
        noise = (laplace(per_part, k, rng=rng)
                 + 1j * laplace(per_part, k, rng=rng) * (params[:k] == 2.0))
        noisy[:k] = coeffs[:k] + noise
    estimate = np.fft.irfft(noisy, n=n, norm="ortho")
    details = {
        "n_coefficients": k,
        "n_parameters": int(d[k - 1]),
        "noise_scale": float(scale),
        "l2_bound": l2_bound,
        "fallback": None,
    }
    return estimate, {"select": eps1, "measure": eps2}, details
