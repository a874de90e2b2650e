"""Hierarchies of aggregated states (Chen 2018 §5.5): :class:`Hierarchy`, HS-LM
(:func:`hs_laplace`), HS-PGS (:func:`hs_pegasus`), PHS-PGS (:func:`phs_pegasus`, Alg. 18) and
pruning from released estimates (:func:`prune_released`). Part of
:mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..._progress import report
from .._results import eps_text
from .._results import frozen as _readonly
from ..mechanisms import laplace
from ..validation import (
    check_counts,
    check_epsilon,
    check_positive_int,
    check_rng,
)
from .adaptive_smoother import _adaptive_chunk
from .checks import (
    _budget_parts,
    _grouper_setup,
    _noise_rows,
    _resolve_options,
    _split_pegasus_budget,
)
from .constants import _VECTOR_MIN, ADAPTIVE_SMOOTHER, NEIGHBOURS
from .queries import _check_real
from .scalar_core import _GroupState, _run_core
from .vector_core import _vector_core

__all__ = [
    "Hierarchy", "HierarchyResult", "hs_pegasus", "phs_pegasus", "prune_released", "hs_laplace",
]


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A tree of aggregations (Chen 2018 Def. 6): leaves are the states, every other node the union
    of its children. Node ids are 0..m−1; ``parents[root] == -1``.

    Attributes
    ----------
    parents : numpy.ndarray of int
    levels : numpy.ndarray of int
        ``level(agg)``: 1 at the root, parent's level + 1 below (Chen 2018 §5.2.2).
    height : int
        h, the number of levels (8 for a binary tree over 128 states, Chen 2018 §5.6.4).
    leaves : numpy.ndarray of int
        The states, in increasing node id: row i of ``leaf_counts`` is state ``leaves[i]``.
    order : numpy.ndarray of int
        Nodes top-down (breadth first from the root).

    Examples
    --------
    >>> from dpwidgets.engine.streams import Hierarchy
    >>> h = Hierarchy.from_parents([-1, 0, 0, 1, 1])
    >>> h.height, h.leaves.tolist(), h.levels.tolist()
    (3, [2, 3, 4], [1, 2, 2, 3, 3])
    >>> h.aggregate([[1, 2], [3, 4], [5, 6]]).tolist()  # rows: the nodes, root first
    [[9, 12], [8, 10], [1, 2], [3, 4], [5, 6]]
    """

    parents: np.ndarray
    levels: np.ndarray
    height: int
    leaves: np.ndarray
    order: np.ndarray
    children: tuple[tuple[int, ...], ...] = field(repr=False)

    @classmethod
    def from_parents(cls, parents: Sequence[int]) -> Hierarchy:
        """Build and validate a tree from a parent array (one root, no cycles)."""
        try:
            arr = np.asarray(parents)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"parents must be a 1-D array of node ids ({exc})") from None
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"parents must be a non-empty 1-D array, got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"parents must hold integer node ids (-1 for the root), got dtype {arr.dtype}")
        m = arr.size
        arr = arr.astype(np.int64)
        if np.any((arr < -1) | (arr >= m)):
            raise ValueError(f"parents must be node ids in [0, {m}) or -1 for the root")
        roots = np.flatnonzero(arr == -1)
        if roots.size != 1:
            raise ValueError(f"a hierarchy must have exactly one root (parent -1), found {roots.size}")
        if np.any(arr == np.arange(m)):
            raise ValueError("a node cannot be its own parent")
        children: list[list[int]] = [[] for _ in range(m)]
        for node, parent in enumerate(arr.tolist()):
            if parent >= 0:
                children[parent].append(node)
        levels = np.zeros(m, dtype=np.int64)
        order = [int(roots[0])]
        levels[roots[0]] = 1
        for node in order:  # breadth first; grows while iterating
            for child in children[node]:
                levels[child] = levels[node] + 1
                order.append(child)
        if len(order) != m:
            raise ValueError(
                f"parents do not form a tree: {m - len(order)} node(s) are not reachable from the "
                f"root (they lie on a cycle)"
            )
        leaves = np.array([i for i in range(m) if not children[i]], dtype=np.int64)
        return cls(
            _readonly(arr), _readonly(levels), int(levels.max()), _readonly(leaves),
            _readonly(np.array(order, dtype=np.int64)), tuple(tuple(c) for c in children),
        )

    @classmethod
    def binary(cls, n_leaves: int) -> Hierarchy:
        """A complete binary tree over ``n_leaves`` (a power of 2) states, in heap order.

        ``Hierarchy.binary(128)`` is Chen 2018 §5.6.4's AGG: 255 nodes, height log2(128) + 1 = 8.
        """
        n_leaves = check_positive_int(n_leaves, "n_leaves")
        if n_leaves & (n_leaves - 1):
            raise ValueError(f"n_leaves must be a power of 2, got {n_leaves}")
        m = 2 * n_leaves - 1
        return cls.from_parents(np.r_[-1, (np.arange(1, m) - 1) // 2])

    @property
    def n_nodes(self) -> int:
        return int(self.parents.size)

    def aggregate(self, leaf_counts) -> np.ndarray:
        """Counts of every node (shape (m, T)) from the states' counts (shape (n_leaves, T))."""
        leaf_counts = check_counts(leaf_counts, "leaf_counts", ndim=2)
        if leaf_counts.shape[0] != self.leaves.size:
            raise ValueError(
                f"leaf_counts must have one row per state (leaf): expected {self.leaves.size}, "
                f"got {leaf_counts.shape[0]}"
            )
        out = np.zeros((self.n_nodes, leaf_counts.shape[1]), dtype=np.int64)
        out[self.leaves] = leaf_counts.astype(np.int64)
        for node in self.order[:0:-1]:  # bottom-up, root last
            out[self.parents[node]] += out[node]
        return out


def _check_hierarchy(hierarchy) -> Hierarchy:
    if isinstance(hierarchy, Hierarchy):
        return hierarchy
    if isinstance(hierarchy, str) or not isinstance(hierarchy, Sequence | np.ndarray):
        raise ValueError(f"hierarchy must be a Hierarchy or a parent array, got "
                         f"{type(hierarchy).__name__}")
    try:
        return Hierarchy.from_parents(hierarchy)
    except ValueError as exc:
        raise ValueError(f"hierarchy: {exc}") from None


@dataclass(frozen=True, eq=False)
class HierarchyResult:
    """Private streams for every node of a hierarchy and what they cost.

    Attributes
    ----------
    estimates : numpy.ndarray, shape (m, T)
        ĉ_t(agg) for every node (row = node id).
    method : str
        ``"HS-LM"``, ``"HS-PGS"`` or ``"PHS-PGS"`` (with ", pruned (released, β = ...)" after
        :func:`prune_released`).
    hierarchy : Hierarchy
    pruned : numpy.ndarray of bool, shape (m, T), or None
        Which node-steps were pruned (released as 0): PHS-PGS, and any release pruned by
        :func:`prune_released`; None otherwise.
    epsilon : float
    epsilon_parts : mapping
        What each step spent along any root-to-leaf path at any time step.
    guarantee, neighbours : str
    """

    estimates: np.ndarray
    method: str
    hierarchy: Hierarchy
    pruned: np.ndarray | None
    epsilon: float
    epsilon_parts: Mapping[str, float]
    guarantee: str = ""
    neighbours: str = NEIGHBOURS


def _hierarchy_inputs(leaf_counts, hierarchy) -> tuple[Hierarchy, np.ndarray]:
    h = _check_hierarchy(hierarchy)
    return h, h.aggregate(leaf_counts)


def hs_laplace(
    leaf_counts, hierarchy, epsilon: float, rng: np.random.Generator | None = None
) -> HierarchyResult:
    """HS-LM: the Laplace mechanism on every aggregated stream with ε/h.

    Parameters
    ----------
    leaf_counts : array_like, shape (n_states, T)
        The states' streams, rows in the order of ``hierarchy.leaves``.
    hierarchy : Hierarchy or parent array
    epsilon : float

    Notes
    -----
    Privacy: ε-DP (event-level): one tuple changes one count at one step in one node per
    level; parallel composition within a level, sequential over the h levels.

    References
    ----------
    Chen 2018 §5.6.4 ("HS-LM", Fig. 5.8).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import hs_laplace
    >>> leaves = np.array([[3, 4, 3, 5], [30, 31, 29, 30]])  # two states under one root
    >>> r = hs_laplace(leaves, [-1, 0, 0], epsilon=2.0, rng=np.random.default_rng(0))
    >>> r.estimates.shape, r.method
    ((3, 4), 'HS-LM')
    >>> r.estimates[0].round(0).tolist()  # the root: the two states' total
    [33.0, 34.0, 29.0, 32.0]
    """
    h, counts = _hierarchy_inputs(leaf_counts, hierarchy)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    est = counts + laplace(h.height / epsilon, counts.shape, rng=rng)
    return HierarchyResult(
        _readonly(est), "HS-LM", h, None, epsilon, _budget_parts(epsilon, perturber=epsilon),
        f"{eps_text(epsilon)}-DP (event-level): Lap(h/eps) per node, h = {h.height} levels",
    )


def _pegasus_hierarchy_inputs(leaf_counts, hierarchy, epsilon, defaults, smoother,
                              threshold_share):
    """The checks :func:`hs_pegasus` and :func:`phs_pegasus` share, in their order: the
    hierarchy and its aggregated counts, the options with their defaults, the budget."""
    h, counts = _hierarchy_inputs(leaf_counts, hierarchy)
    defaults, smoother, share = _resolve_options(defaults, smoother, threshold_share)
    return h, counts, defaults, smoother, share, check_epsilon(epsilon)


def _pegasus_rows(
    counts: np.ndarray,
    active: np.ndarray | None,
    perturber_eps: np.ndarray | float,
    epsilon_g: float,
    theta: float,
    smoother: str,
    rng: np.random.Generator,
    threshold_share: float,
) -> np.ndarray:
    """PeGaSus on every row of ``counts``; steps where ``active`` is False are skipped (the
    Grouper and the smoother never see them, Chen 2018 §5.5.2) and released as 0."""
    m, T = counts.shape
    est = np.zeros((m, T))
    grid, theta, grouper_scales = _grouper_setup(epsilon_g, threshold_share, theta)
    for node in range(m):
        report(node, m)  # nodes of the public hierarchy
        idx = np.arange(T) if active is None else np.flatnonzero(active[node])
        if idx.size == 0:
            continue
        eps_p = perturber_eps if np.ndim(perturber_eps) == 0 else perturber_eps[node, idx]
        scales = np.empty((idx.size, 3))
        scales[:, 0] = 1.0 / np.asarray(eps_p, dtype=float)
        scales[:, 1:] = grouper_scales
        noise = _noise_rows(scales, scales.shape, rng, grid)
        tau2 = 2.0 * float(np.mean(scales[:, 0] ** 2))
        out = _pegasus_core(counts[node, idx], noise, theta, tau2,
                            median_only=smoother in ("median", "adaptive"))
        if smoother == "adaptive":
            est[node, idx] = _adaptive_chunk(
                out["noisy"], np.arange(idx.size) - out["start"] + 1, out["median"],
                2.0 * scales[:, 0] ** 2, None, ADAPTIVE_SMOOTHER, last=True,
            )[0]
        else:
            est[node, idx] = out[smoother]
    return est


def _pegasus_core(counts: np.ndarray, noise: np.ndarray, theta: float, tau2: float,
                  median_only: bool) -> dict[str, np.ndarray]:
    """One stream from the start, by the vectorised core or (short streams) the scalar loop."""
    if counts.size >= _VECTOR_MIN:
        return _vector_core(_GroupState(), counts, noise, theta, tau2, median_only)
    outs: list[list] = [[] for _ in range(6)]
    _run_core(_GroupState(), counts.tolist(), noise[:, 0].tolist(), noise[:, 1].tolist(),
              noise[:, 2].tolist(), theta, tau2, *outs, median_only=median_only)
    names = ("noisy", "median", "average", "james_stein", "gid", "start")
    return {k: np.asarray(v) for k, v in zip(names, outs, strict=True) if v}


def hs_pegasus(
    leaf_counts,
    hierarchy,
    epsilon: float,
    smoother: str | None = None,
    rng: np.random.Generator | None = None,
    *,
    theta: float | None = None,
    threshold_share: float | None = None,
    defaults: str = "new",
    beta: float | None = None,
) -> HierarchyResult:
    """HS-PGS: PeGaSus(C(agg), ε/h) on every aggregated stream of the hierarchy.

    Parameters
    ----------
    leaf_counts : array_like, shape (n_states, T)
        Rows in the order of ``hierarchy.leaves``.
    hierarchy : Hierarchy or parent array
    epsilon : float
    smoother : str, optional
        Default from ``defaults`` ("adaptive"; "median" for ``"text"``).
    theta : float, optional
        Default 160/ε_g with ε_g = 0.05ε/h (``defaults="text"``: 5/ε_g with ε_g = 0.2ε/h; each
        node runs PeGaSus with ε/h).
    threshold_share : float, optional
        ε_1/ε_g of each node's Grouper (see :func:`pegasus`).
    defaults : {"new", "text"}
        Which set of :data:`DEFAULTS` fills the parameters not given.
    beta : float, optional
        If given, prune from the estimates released at the previous step
        (:func:`prune_released`, post-processing): a node is released as 0 at t when its
        parent's estimate at t − 1 was below ``beta`` (or the parent is pruned at t).

    Notes
    -----
    Privacy: ε-DP (event-level neighbours), Chen 2018 Thm 19: PeGaSus is ε/h-DP per stream
    (Thm 15), parallel within a level, sequential over the h levels. Pruning with ``beta``
    is post-processing: no budget.

    References
    ----------
    Chen 2018 §5.5.1, Thm 19; Fig. 5.8; §5.5.2 (why pruning small aggregates helps).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import hs_pegasus
    >>> leaves = np.array([[3] * 20, [30] * 20])
    >>> r = hs_pegasus(leaves, [-1, 0, 0], epsilon=2.0, rng=np.random.default_rng(0))
    >>> r.estimates.shape, r.method, round(r.epsilon, 2)
    ((3, 20), 'HS-PGS', 2.0)
    """
    h, counts, defaults, smoother, share, epsilon = _pegasus_hierarchy_inputs(
        leaf_counts, hierarchy, epsilon, defaults, smoother, threshold_share
    )
    _, eps_p, eps_g, theta = _split_pegasus_budget(epsilon / h.height, None, None, theta, defaults)
    if beta is not None:
        beta = _check_real(beta, "beta")
    rng = check_rng(rng)
    est = _pegasus_rows(counts, None, eps_p, eps_g, theta, smoother, rng, share)
    result = HierarchyResult(
        _readonly(est), "HS-PGS", h, None, epsilon,
        _budget_parts(epsilon, perturber=eps_p * h.height, grouper=eps_g * h.height),
        f"{eps_text(epsilon)}-DP (event-level): PeGaSus with eps/h per node, h = {h.height} (Thm 19)",
    )
    return result if beta is None else prune_released(result, beta)


def prune_released(result: HierarchyResult, beta: float) -> HierarchyResult:
    """Prune a hierarchical release from its own previous step: post-processing, no budget.

    Counts cannot grow down the hierarchy (Chen 2018 §5.5.2: ``c_t(agg_1) <= c_t(agg_2)`` when
    ``agg_1 ⊂ agg_2``), so the descendants of a small aggregate are small, and 0 estimates
    them better than noise does. Top-down at every step t: a node is pruned (released as 0)
    when its parent is pruned at t or the parent's estimate released at t − 1 was below
    ``beta``. The root and step 0 are never pruned. Real time: step t uses the release up to
    t − 1 and the pruning at t only.

    Parameters
    ----------
    result : HierarchyResult
        Any hierarchical release (:func:`hs_pegasus`, :func:`hs_laplace`, or :func:`phs_pegasus`,
        whose pruned node-steps stay pruned).
    beta : float
        The threshold on the parent's previous estimate (public). On a sparse hierarchy a
        modest β brings HS-PGS's error down to about PHS-PGS's, at no privacy cost (the
        figures are on the streams family page of the documentation). A larger β prunes
        more, in the limit everything but the root.

    Notes
    -----
    Privacy: a function of the released estimates only (post-processing): the release keeps
    its ε and its ``epsilon_parts``. Unlike PHS-PGS (:func:`phs_pegasus`, Chen 2018 Alg. 18)
    it saves no budget for the nodes it prunes, and spends none on the decision.

    References
    ----------
    Chen 2018 §5.5.2 (the pruning idea, Alg. 18 lines 1-17 with a free test in place of the
    noisy one).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import hs_laplace, prune_released
    >>> leaves = np.array([[0, 0, 0, 0], [0, 0, 0, 0]])
    >>> r = hs_laplace(leaves, [-1, 0, 0], epsilon=1.0, rng=np.random.default_rng(0))
    >>> p = prune_released(r, beta=50.0)  # every parent estimate is below 50
    >>> p.pruned.astype(int).tolist(), p.epsilon == r.epsilon
    ([[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 1, 1]], True)
    """
    if not isinstance(result, HierarchyResult):
        raise ValueError(f"result must be a HierarchyResult (from hs_pegasus, hs_laplace or "
                         f"phs_pegasus), got {type(result).__name__}")
    beta = _check_real(beta, "beta")
    tree, est = result.hierarchy, result.estimates
    pruned = np.zeros(est.shape, dtype=bool) if result.pruned is None else result.pruned.copy()
    small = np.zeros(est.shape, dtype=bool)
    small[:, 1:] = est[:, :-1] < beta  # the estimate released at t - 1 was below beta
    for node in tree.order[1:]:  # top-down: a parent is decided before its children
        parent = tree.parents[node]
        pruned[node] |= pruned[parent] | small[parent]
    return HierarchyResult(
        _readonly(np.where(pruned, 0.0, est)), f"{result.method}, pruned (released, β = {beta:g})",
        tree, _readonly(pruned), result.epsilon, result.epsilon_parts,
        f"{result.guarantee}; pruned from the estimates released at t-1 (post-processing)",
        result.neighbours,
    )


def phs_pegasus(
    leaf_counts,
    hierarchy,
    epsilon: float,
    smoother: str | None = None,
    rng: np.random.Generator | None = None,
    *,
    epsilon_pr: float | None = None,
    beta: float | None = None,
    theta: float | None = None,
    threshold_share: float | None = None,
    defaults: str = "new",
) -> HierarchyResult:
    """PHS-PGS (Chen 2018 Alg. 18): HS-PGS that prunes small aggregates top-down at every step and
    gives the budget its pruned descendants would have spent to the node that pruned them.

    At each step t, PRUNE visits the levels top-down: a node whose parent was pruned is pruned;
    otherwise if ``c_t(agg) + Lap(h/ε_pr) < β`` its children are pruned and it gets
    ``ε_agg = h − level + 1`` shares, else ``ε_agg = 1`` (Alg. 18 lines 3-15). A pruned node
    releases 0; an unpruned one runs PeGaSus with Perturber budget
    ``ε_agg(ε_p + ε_g)/h − ε_g/h`` and Grouper budget ``ε_g/h`` (lines 20-25); its Grouper and
    smoother skip the steps at which it was pruned (§5.5.2, last paragraph).

    Parameters
    ----------
    leaf_counts : array_like, shape (n_states, T)
    hierarchy : Hierarchy or parent array
    epsilon : float
        Total ε = ε_pr + ε_p + ε_g.
    epsilon_pr : float, optional
        Pruning budget; default 0.1ε (the text gives no value; 0.05ε-0.2ε perform alike on
        Multi_5-shaped data).
        The rest is split ε_p : ε_g as in :func:`pegasus` (0.95 : 0.05; ``defaults="text"``:
        0.8 : 0.2).
    beta : float, optional
        Pruning threshold β; default ``2h/ε_pr`` (twice the pruning noise scale; the text
        gives no value). A larger β prunes more: in the limit every release is 0.
    theta : float, optional
        Grouper threshold; default 160/(ε_g/h) (``defaults="text"``: 5/(ε_g/h)).
    smoother, threshold_share, defaults
        As in :func:`hs_pegasus`.

    Notes
    -----
    Privacy: ε-DP (event-level neighbours). One tuple changes one state's count at one step, i.e. one
    node per level (a root-to-leaf path). PRUNE: Laplace with ε_pr/h per level, parallel within a
    level, sequential over h levels: ε_pr (not the text's SVT argument, see the module docstring).
    A node whose parent was pruned is pruned whatever its own test says: its test is not drawn
    (the output has the distribution of Alg. 18 with every test drawn, and the cost is the same
    ε_pr, each drawn test being one of the ones the argument counts).
    Release: along the path, if the node at level i has its children pruned, the levels above
    spend (ε_p+ε_g)/h each and it spends (h−i+1)(ε_p+ε_g)/h, the levels below nothing: ε_p + ε_g
    in total (Chen 2018 Thm 21). Steps are disjoint (parallel composition; the Grouper's SVT per
    group as in Thm 17).

    References
    ----------
    Chen 2018 §5.5.2, Alg. 18, Thm 20-21; Fig. 5.8.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import phs_pegasus
    >>> leaves = np.array([[0] * 20, [30] * 20])
    >>> r = phs_pegasus(leaves, [-1, 0, 0], epsilon=2.0, rng=np.random.default_rng(0))
    >>> r.estimates.shape, r.method, sorted(r.epsilon_parts)
    ((3, 20), 'PHS-PGS', ['grouper', 'perturber', 'prune'])
    """
    h, counts, defaults, smoother, share, epsilon = _pegasus_hierarchy_inputs(
        leaf_counts, hierarchy, epsilon, defaults, smoother, threshold_share
    )
    if epsilon_pr is None:
        epsilon_pr = 0.1 * epsilon
    epsilon_pr = check_epsilon(epsilon_pr, "epsilon_pr")
    if not epsilon_pr < epsilon:
        raise ValueError(f"epsilon_pr must be < epsilon = {epsilon}, got {epsilon_pr}")
    height = h.height
    if beta is None:
        beta = 2.0 * height / epsilon_pr
    beta = _check_real(beta, "beta")
    rest = epsilon - epsilon_pr
    _, eps_p, eps_g, theta_node = _split_pegasus_budget(rest / height, None, None, theta, defaults)
    rng = check_rng(rng)

    m, T = counts.shape
    # PRUNE (Alg. 18 lines 1-17), vectorised over nodes and time, one level after another. A
    # node whose parent was pruned is pruned whatever its own test says, so its test is not
    # run: noise is drawn only for the node-steps tested (on sparse hierarchies a few percent
    # of them; the released output has the same distribution as with every test drawn).
    pruned = np.zeros((m, T), dtype=bool)
    below = np.zeros((m, T), dtype=bool)
    for level in range(1, height + 1):
        nodes = np.flatnonzero(h.levels == level)
        if level > 1:
            parents = h.parents[nodes]
            pruned[nodes] = pruned[parents] | below[parents]
        tested = ~pruned[nodes]
        n_tested = int(np.count_nonzero(tested))
        if n_tested:
            noisy = counts[nodes][tested] + laplace(height / epsilon_pr, n_tested, rng=rng)
            level_below = np.zeros(tested.shape, dtype=bool)
            level_below[tested] = noisy < beta
            below[nodes] = level_below
    shares = np.where(below, (height - h.levels + 1.0)[:, None], 1.0)
    shares[pruned] = 0.0
    active = ~pruned
    # Alg. 18 line 23: eps_agg (eps_p + eps_g)/h - eps_g/h, with eps_p, eps_g the totals.
    perturber_eps = shares * (eps_p + eps_g) - eps_g
    est = _pegasus_rows(counts, active, perturber_eps, eps_g, theta_node, smoother, rng, share)
    return HierarchyResult(
        _readonly(est), "PHS-PGS", h, _readonly(pruned), epsilon,
        _budget_parts(epsilon, prune=epsilon_pr, perturber=eps_p * height, grouper=eps_g * height),
        f"{eps_text(epsilon)}-DP (event-level): PRUNE {eps_text(epsilon_pr)} + PeGaSus {eps_text(rest)} (Chen 2018 Thm 21)",
    )
