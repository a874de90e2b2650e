"""Non-interactive top-c selection and its metrics (Lyu, Su & Li 2017 §5-6).

:func:`top_c` selects c of the highest-scoring items by the exponential mechanism or by
standard SVT with retraversal; :func:`false_negative_rate` and :func:`score_error_rate` score
a selection against the true scores (evaluation only, never released).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import validation as validation
from ..mechanisms import exponential_mechanism
from .variants import VARIANTS, _check_answers_and_threshold, _optimal_ratio, _Units

__all__ = ["top_c", "false_negative_rate", "score_error_rate", "MAX_PASSES"]

#: The most passes of SVT with retraversal (:func:`top_c`, ``method="svt_retr"``).
MAX_PASSES = 10**6


def top_c(
    scores,
    c: int,
    epsilon: float,
    method: str = "em",
    monotonic: bool = True,
    rng: np.random.Generator | None = None,
    *,
    sensitivity: float = 1.0,
    threshold: float | None = None,
    increment: float = 1.0,
    max_passes: int = 10_000,
) -> np.ndarray:
    """Privately select (up to) c of the highest-scoring items.

    Parameters
    ----------
    scores : array_like, 1-D
        The quality of every item (e.g. item counts), in the order SVT examines them.
    c : int
        Number of items to select (1 <= c <= len(scores)).
    epsilon : float
        Total budget.
    method : {"em", "svt_retr"}
        ``"em"``: exponential mechanism c times without replacement, epsilon/c each.
        ``"svt_retr"``: standard SVT at epsilon1:epsilon2 = 1:c^(2/3) (1:(2c)^(2/3) if not
        monotonic) with the threshold raised by ``increment`` standard deviations of the query
        noise, re-traversing the unselected items with the same noisy threshold and fresh
        query noise until c are selected.
    monotonic : bool
        Whether the scores are monotonic (counts under add/remove-one: True).
    rng : numpy.random.Generator, optional
        Source of randomness.
    sensitivity : float
        Δ of every score.
    threshold : float or array_like, optional
        ``svt_retr`` only, and required there: the PUBLIC threshold before the increment
        (Lyu, Su & Li 2017 §6 uses the mean of the c-th and (c+1)-th scores — in a real deployment that
        must come from public knowledge, not from the private scores).
    increment : float
        ``svt_retr``: the k of "kD", in standard deviations sqrt(2)·b of the query noise
        Lap(b) (Lyu, Su & Li 2017 §6: "1D means adding one standard deviation").
    max_passes : int
        ``svt_retr``: cap on the traversals. If c items are still not selected after
        ``max_passes`` passes, the (fewer) items selected are returned with a
        ``RuntimeWarning``; the output is private either way.

    Returns
    -------
    numpy.ndarray of int
        Selected indices, in selection order; exactly c unless ``svt_retr`` hit its cap.

    Raises
    ------
    ValueError
        Bad scores, c, epsilon, sensitivity, increment, max_passes or method;
        ``threshold`` missing for ``svt_retr`` or given for ``em``.

    Notes
    -----
    Privacy: EM is epsilon/c-DP per round, epsilon-DP by composition; SVT-ReTr is standard SVT
    on an adaptively chosen, repeating query stream (only ⊤ cost budget), hence epsilon-DP.
    Inside :func:`~.mechanisms.floating_point_safe` (analyst releases) ``"em"`` is the base-2
    exponential mechanism (:func:`~.mechanisms.exponential_mechanism`) and ``"svt_retr"``
    compares on a :class:`~.mechanisms.ComparisonGrid` pass by pass; both spend at most
    epsilon, exactly. Outside it, ``"svt_retr"`` draws for each item the pass in which its
    noisy score first reaches the noisy threshold (a geometric variable, given rho) instead of
    fresh noise for every item in every pass: the same output distribution, in one draw per
    item (a high increment can need thousands of passes).
    Neighbours: any relation under which each score has sensitivity Δ (monotonic: all scores
    move the same way, e.g. counts under add/remove-one record).

    References
    ----------
    Lyu, Su & Li 2017 §5 (SVT versus EM, SVT with retraversal), §6 (Fig. 4-5); McSherry & Talwar 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.svt import top_c
    >>> sorted(top_c([3, 50, 7, 40, 1], c=2, epsilon=2.0, rng=np.random.default_rng(0)).tolist())
    [1, 3]
    """
    scores = validation.check_finite_array(scores, "scores")
    c = validation.check_positive_int(c, "c")
    if c > scores.size:
        raise ValueError(f"c must be at most the number of items ({scores.size}), got {c}")
    epsilon = validation.check_epsilon(epsilon)
    sensitivity = validation.check_positive(sensitivity, "sensitivity")
    monotonic = validation.check_bool(monotonic, "monotonic")
    if not isinstance(method, str) or method not in ("em", "svt_retr"):
        raise ValueError(f"method must be 'em' or 'svt_retr', got {method!r}")
    increment = validation.check_nonnegative(increment, "increment")
    max_passes = validation.check_positive_int(max_passes, "max_passes", maximum=MAX_PASSES)
    if method == "em":
        if threshold is not None:
            raise ValueError("threshold is only used by method='svt_retr'; pass None for 'em'")
        rng = validation.check_rng(rng)
        return exponential_mechanism(
            scores, epsilon, sensitivity, k=c, monotonic=monotonic, rng=rng
        )
    if threshold is None:
        raise ValueError(
            "threshold is required for method='svt_retr' and must be public (Lyu, Su & Li 2017 §6 uses the "
            "mean of the c-th and (c+1)-th scores)"
        )
    _, thresholds = _check_answers_and_threshold(scores, threshold)
    rng = validation.check_rng(rng)

    noise = VARIANTS["standard"].noise(
        epsilon, c, sensitivity, monotonic, _optimal_ratio(c, monotonic)
    )
    units = _Units(noise, sensitivity)
    raised = units.of(thresholds + increment * math.sqrt(2.0) * noise.query_scale)
    scores_u = units.of(scores)
    rho = units.noise(noise.threshold_scale, rng=rng)
    if units.grid is None:
        selected, need = _first_hits(raised + rho - scores_u, noise.query_scale, c, max_passes,
                                     rng)
    else:
        selected, need = _retraversals(scores_u, raised + rho, noise.query_scale, c,
                                       max_passes, units, rng)
    if need:
        warnings.warn(
            f"SVT-ReTr selected only {c - need} of c={c} items in max_passes={max_passes} "
            f"passes; lower the threshold or increment, or raise max_passes",
            RuntimeWarning,
            stacklevel=2,
        )
    return np.concatenate(selected).astype(np.int64)


def _retraversals(scores_u, bars, query_scale: float, c: int, max_passes: int, units: _Units,
                  rng: np.random.Generator) -> tuple[list[np.ndarray], int]:
    """SVT-ReTr pass by pass: fresh query noise for every unselected item in each pass, the
    first ``c`` items whose noisy score reaches its bar (raised threshold + rho) selected.
    Returns the hits of each pass and how many of the ``c`` are still missing."""
    chosen = np.zeros(scores_u.size, dtype=bool)
    selected: list[np.ndarray] = []
    need = c
    for _ in range(max_passes):
        remaining = np.flatnonzero(~chosen)
        noisy = scores_u[remaining] + units.noise(query_scale, remaining.size, rng=rng)
        hits = remaining[noisy >= bars[remaining]][:need]
        chosen[hits] = True
        selected.append(hits)
        need -= hits.size
        if need == 0:
            break
    return selected, need


def _first_hits(gaps: np.ndarray, scale: float, c: int, max_passes: int,
                rng: np.random.Generator) -> tuple[list[np.ndarray], int]:
    """SVT-ReTr (continuous noise) from the pass in which each item first reaches its bar; the
    output of :func:`_retraversals`, with the same distribution, in one draw per item.

    Item i reaches its bar in a pass when its fresh query noise Lap(``scale``) is at least
    ``gaps[i]`` (bar minus score), with probability p_i = P(Lap(scale) >= gaps[i]),
    independently of every other item and pass (rho is fixed for the whole run). So its first
    such pass is Geometric(p_i), drawn here by inversion from one uniform (``inf`` when p_i
    underflows to 0). Before pass t the loop has selected exactly the items whose first pass
    is earlier, and in pass t it takes, in examination order, those whose first pass is t: the
    first c items by (first pass, index), among the passes up to ``max_passes``.
    """
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        p = np.where(gaps >= 0, 0.5 * np.exp(-gaps / scale), -0.5 * np.expm1(gaps / scale) + 0.5)
        u = 1.0 - rng.random(gaps.shape)  # in (0, 1]
        passes = np.floor(np.log(u) / np.log1p(-p)) + 1.0
    passes[p >= 1.0] = 1.0
    passes[p <= 0.0] = np.inf
    order = np.argsort(passes, kind="stable")  # by pass, then in examination order
    selected = order[passes[order] <= max_passes][:c]
    return [selected], c - selected.size


def _check_selection(selected, scores, c) -> tuple[np.ndarray, np.ndarray, int]:
    scores = validation.check_finite_array(scores, "scores")
    c = validation.check_positive_int(c, "c")
    if c > scores.size:
        raise ValueError(f"c must be at most the number of items ({scores.size}), got {c}")
    sel = np.asarray(selected)
    if sel.size == 0:
        sel = sel.astype(np.int64)
    if sel.ndim != 1 or not np.issubdtype(sel.dtype, np.integer):
        raise ValueError(f"selected must be a 1-D array of integer indices, got {selected!r}")
    if np.any(sel < 0) or np.any(sel >= scores.size):
        raise ValueError(f"selected indices must be in [0, {scores.size}), got {selected!r}")
    if np.unique(sel).size != sel.size:
        raise ValueError("selected indices must be distinct")
    if sel.size > c:
        raise ValueError(f"selected has {sel.size} items, more than c={c}")
    return sel, scores, c


def false_negative_rate(selected, scores, c: int) -> float:
    """The fraction of the true top-c items that the selection missed (Lyu, Su & Li 2017 §6).

    Parameters
    ----------
    selected : array_like of int
        Distinct selected indices (at most c).
    scores : array_like, 1-D
        True scores of all items.
    c : int
        Size of the true top set.

    Returns
    -------
    float
        ``1 - |S ∩ Top_c| / c``. Items tied with the c-th score count as top-c (at most c
        hits in total), so ties cannot make the rate depend on an arbitrary ordering.

    Raises
    ------
    ValueError
        Bad scores or c; indices not integer, out of range, repeated or more than c.

    Notes
    -----
    Post-processing of a private selection with the true scores: an evaluation metric only,
    never to be released in analyst mode.

    References
    ----------
    Lyu, Su & Li 2017 §6 ("Utility Measures").

    Examples
    --------
    >>> from dpwidgets.engine.svt import false_negative_rate
    >>> false_negative_rate([0, 3], [9, 7, 1, 5], c=2)  # the true top 2 are items 0 and 1
    0.5
    """
    sel, scores, c = _check_selection(selected, scores, c)
    kth = np.partition(scores, scores.size - c)[scores.size - c]
    hits = min(c, int(np.count_nonzero(scores[sel] >= kth)))
    return 1.0 - hits / c


def score_error_rate(selected, scores, c: int) -> float:
    """SER = 1 − avgScore(S)/avgScore(Top_c), the share of the top-c score missed (Lyu, Su & Li 2017 §6).

    Parameters
    ----------
    selected, scores, c :
        As for :func:`false_negative_rate`.

    Returns
    -------
    float
        ``1 - sum(scores[S]) / sum(top c scores)``; an empty or short selection is averaged
        over c (missing picks score 0), which equals the paper's formula when |S| = c.

    Raises
    ------
    ValueError
        As for :func:`false_negative_rate`, or if the top-c scores sum to zero.

    Notes
    -----
    Evaluation metric on the true scores (not a private release), Lyu, Su & Li 2017 §6
    ("Score Error Rate").

    Examples
    --------
    >>> from dpwidgets.engine.svt import score_error_rate
    >>> score_error_rate([0, 3], [9, 7, 1, 5], c=2)  # 1 - (9 + 5) / (9 + 7)
    0.125
    """
    sel, scores, c = _check_selection(selected, scores, c)
    top = np.partition(scores, scores.size - c)[scores.size - c :]
    total = float(top.sum())
    if total == 0:
        raise ValueError("score_error_rate is undefined when the top-c scores sum to 0")
    return 1.0 - float(scores[sel].sum()) / total
