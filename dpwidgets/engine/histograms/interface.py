"""The publisher interface: the result object, the :class:`Publisher` record, the registry
:data:`PUBLISHERS` and the entry point :func:`publish`.

Every publisher module registers its implementation here with ``_register`` (at import) and
returns ``(estimate, epsilon_parts, details)``; :func:`publish` validates the input once,
before any randomness, calls it, and checks that the parts add up to ``epsilon``. The budget
helpers every publisher shares (``_split``, ``_public_or_private_total``) and the refusal of
unknown options (``_no_options``) live here too, so that a publisher module imports only this
one for its plumbing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._results import readonly as _readonly
from ..mechanisms import laplace
from ..validation import check_counts, check_epsilon, check_nonnegative, check_rng
from .workloads import _check_workload, workload_matrix

__all__ = ["NEIGHBOURS", "PUBLISHERS", "Publisher", "PublishedHistogram", "publish",
           "publisher_choices"]


#: The neighbour relation every publisher in this module assumes.
NEIGHBOURS = "add/remove one record (one cell changes by 1)"


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
# The entry point
# ---------------------------------------------------------------------------------------------


def publisher_choices(ndim: int = 1) -> tuple[tuple[str, str], ...]:
    """The publishers of ``ndim``-dimensional histograms as ``(name, label)`` pairs, each once
    under its canonical name (one registered under two names, such as ``"dawa"`` and
    ``"dawa_dyadic"``, is listed once, its alias in the label): what a widget's publisher
    dropdown offers.

    Examples
    --------
    >>> [name for name, _ in publisher_choices(1)][:4]
    ['identity', 'uniform', 'hb', 'dawa_dyadic']
    """
    if ndim not in (1, 2) or isinstance(ndim, bool):
        raise ValueError(f"ndim must be 1 or 2, got {ndim!r}")
    seen: dict[str, str] = {}
    for key, pub in PUBLISHERS.items():
        if ndim in pub.dims and pub.name not in seen:
            seen[pub.name] = pub.name if key == pub.name else f"{pub.name} ({key})"
    return tuple(seen.items())


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

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.histograms import publish
    >>> h = publish([5, 0, 0, 7, 40, 38, 0, 1], epsilon=1.0, method="hb", rng=np.random.default_rng(0))
    >>> h.method, h.counts.shape, round(h.epsilon, 2), round(float(h.counts.sum()))
    ('hb', (8,), 1.0, 88)
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
