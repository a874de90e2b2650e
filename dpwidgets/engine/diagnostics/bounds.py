"""Private bounds (Chen 2018 §4.2.2, Alg. 10): :func:`private_bounds`, SVT over doubling
intervals.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._results import eps_text
from ..svt import sparse_vector
from ..validation import (
    check_epsilon,
    check_finite_array,
    check_positive,
    check_positive_int,
    check_real,
    check_rng,
)
from .checks import MAX_DOUBLINGS, _check_fraction, public_n
from .records import ArrayRecords, Records

__all__ = ["PrivateBounds", "private_bounds"]


@dataclass(frozen=True)
class PrivateBounds:
    """An interval ``[center - half_width, center + half_width]`` released by Alg. 10.

    Attributes
    ----------
    lower, upper : float
        The released bounds.
    center : float
        The public centre the doubling intervals are centred at.
    half_width : float
        ``mu * 2**doublings`` (the ``d`` of Alg. 10).
    doublings : int
        The ``i`` at which SVT answered ⊤ (or ``max_doublings`` when capped).
    capped : bool
        True when no interval up to ``mu * 2**max_doublings`` passed the noisy threshold; the
        widest interval is then returned (post-processing of the all-⊥ answer).
    mu, theta : float
        The unit and the target coverage fraction.
    epsilon : float
        Budget spent.
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
        The privacy statement.
    """

    lower: float
    upper: float
    center: float
    half_width: float
    doublings: int
    capped: bool
    mu: float
    theta: float
    epsilon: float
    n: int
    guarantee: str
    neighbours: str


def private_bounds(
    values,
    epsilon: float,
    *,
    mu: float = 1.0,
    theta: float = 0.95,
    max_doublings: int = 40,
    center: float = 0.0,
    rng: np.random.Generator | None = None,
    monotonic: bool = True,
    n: int | None = None,
) -> PrivateBounds:
    """Find ``[c - d, c + d]`` holding about a ``theta`` fraction of ``values`` (Chen 2018 Alg. 10).

    Alg. 10 asks SVT the counts ``q_i = #{x : |x - c| <= mu 2^i}``, ``i = 0, 1, ...``, against
    the noisy threshold ``theta·n + Lap(2/epsilon)`` with fresh ``Lap(4/epsilon)`` on every
    count, and returns the first ``d = mu 2^i`` whose noisy count reaches it. Here the same
    test is asked of the records outside the interval (``n - q_i <= (1 - theta)·n``, the
    public ``n``; see :func:`_bounds_of`), which needs no true count. This is standard
    SVT with cutoff c = 1 and an even split, so it runs through :func:`.svt.sparse_vector`
    (``variant="standard", c=1, ratio=1``: threshold ``Lap(1/(eps/2)) = Lap(2/eps)``). The
    counts are monotone (below), so by default the queries get ``Lap(1/(eps/2)) = Lap(2/eps)``,
    half the text's noise, at the same budget (Lyu, Su & Li 2017, Thm 4.9); ``monotonic=False``
    gives the text's ``Lap(4/eps)``.

    Parameters
    ----------
    values : array_like, 1-D
        The confidential values (finite).
    epsilon : float
        Budget of this call.
    mu : float
        The unit: 1 for scores or test marks, 1000 for incomes (Chen 2018 §4.2.2).
    theta : float
        Target fraction in (0, 1) (0.95 in the text).
    max_doublings : int
        Cap on ``i`` (public; at most :data:`MAX_DOUBLINGS`): at most ``max_doublings + 1``
        queries; if none passes, the widest interval ``mu 2^max_doublings`` is returned and
        ``capped`` is set.
    center : float
        Public centre. The text centres at 0 (residuals are centred there). For predictions a
        public value from the model's context (the public midpoint of the outcome's range, a
        published mean) gives a tighter interval; this function never estimates it from data.
    rng : numpy.random.Generator, optional
    monotonic : bool
        True (default): the monotone SVT of Lyu, Su & Li 2017, Thm 4.9 (query noise
        ``Lap(2/eps)``). False: the text's scales (``Lap(4/eps)``).
    n : int, optional
        The public row count of the threshold ``theta·n`` (declared by the data owner). Omitted:
        ``len(values)``, and the guarantee is then for replace-one neighbours only (that
        relation fixes the size; under add/remove a threshold of ``len(values)`` would publish
        it).

    Returns
    -------
    PrivateBounds

    Raises
    ------
    ValueError
        NaN/inf or empty values, bad epsilon, ``mu <= 0``, ``theta`` outside (0, 1),
        ``max_doublings < 0``, non-finite centre — before any randomness.

    Notes
    -----
    Privacy: epsilon-DP by SVT with c = 1 (Chen 2018 Thm 9; Lyu, Su & Li 2017 Thm 4.7): each count has sensitivity
    1 under add/remove and under replace-one, and the threshold ``theta·n`` is a public constant
    when ``n`` is given (either relation); with ``n`` omitted it is ``theta·len(values)``,
    public under replace-one only.

    Why the counts are monotone (what Thm 4.9 needs: between any two neighbours, either every
    ``q_i`` goes up or stays, or every one goes down or stays). The intervals are nested, so a
    value ``x`` lies in exactly the intervals ``i >= a(x)``. Adding a record raises the
    ``q_i`` with ``i >= a(x)`` by 1 and leaves the others; removing one lowers them. Replacing
    ``x`` by ``x'`` changes ``q_i`` by ``[i >= a(x')] - [i >= a(x)]``: if ``a(x) <= a(x')`` that
    is -1 for ``a(x) <= i < a(x')`` and 0 elsewhere, otherwise +1 for ``a(x') <= i < a(x)`` and
    0 elsewhere — one sign either way. So under both relations the ⊥ answers' privacy loss is
    covered by the threshold noise alone and the query noise ``Lap(cΔ/eps2)`` suffices
    (instead of ``Lap(2cΔ/eps2)``); with c = 1 the split ``eps2/eps1 = c^(2/3) = 1`` is the
    monotone optimum (Lyu, Su & Li 2017, §4.3), so the even split is kept.
    Utility (Thm 9): with probability 1 - β the interval holds at least a
    ``theta - 8(log(k-1) + log(2/β))/(n eps)`` fraction; n·eps ≥ 470 gives θ - 0.1 at β = 0.05.

    References
    ----------
    Chen 2018 §4.2.2, Alg. 10, Thm 9; Chen et al. 2016 §4.2.1, Alg. 2.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.diagnostics import private_bounds
    >>> rng = np.random.default_rng(0)
    >>> b = private_bounds(rng.normal(0, 3, 1000), 1.0, rng=rng, n=1000)
    >>> b.lower, b.upper, b.doublings
    (-8.0, 8.0, 3)
    """
    x = check_finite_array(values, "values")
    epsilon = check_epsilon(epsilon)
    mu = check_positive(mu, "mu")
    theta = _check_fraction(theta, "theta")
    max_doublings = check_positive_int(max_doublings, "max_doublings", minimum=0,
                                       maximum=MAX_DOUBLINGS)
    center = check_real(center, "center")
    if not isinstance(monotonic, bool | np.bool_):
        raise ValueError(f"monotonic must be True or False, got {monotonic!r}")
    declared = n is not None
    n = public_n(n, x.size, "replace-one", minimum=1)
    rng = check_rng(rng)
    out = _bounds_of(ArrayRecords(x), "predicted", epsilon, mu=mu, theta=theta,
                     max_doublings=max_doublings, center=center, rng=rng, monotonic=monotonic,
                     n=n)
    if declared:
        return out
    return dataclasses.replace(
        out, neighbours="replace-one only (n = len(values) public; pass n= for add/remove)")


def _bounds_of(records: Records, column: str, epsilon: float, *, mu: float, theta: float,
               max_doublings: int, center: float, rng: np.random.Generator,
               monotonic: bool, n: int) -> PrivateBounds:
    """:func:`private_bounds` on one column of checked records (parameters checked too);
    ``n`` is the public row count of the threshold (never ``records.n``).

    The test ``q_i >= theta·n`` is asked as ``-o_i >= -(1 - theta)·n`` with ``o_i = #{x : |x -
    c| > mu 2^i}``, the records *outside* interval i: for a true count equal to ``n`` the two
    are the same test (both sides shifted by n; the same noise), and neither needs the true
    count. Where the true count falls short of ``theta·n`` (a declared ``n`` above the true
    one) ``q_i`` could never reach the threshold and every run would be capped at the widest
    interval; ``o_i`` still falls to ``(1 - theta)·n``, so the interval then holds all but
    about ``(1 - theta)·n`` records. ``o_i`` has sensitivity 1 and is monotone in the same
    sense as ``q_i`` (an added record raises the ``o_i`` with ``i < a(x)``, and so on)."""
    # Counts per first doubling index (the last entry: in no interval); o_i sums those above i.
    first = np.asarray(records.doubling_counts(column, center, mu, max_doublings), dtype=float)
    outside = np.cumsum(first[::-1])[::-1][1: max_doublings + 2]

    run = sparse_vector(-outside, -(1.0 - theta) * n, epsilon, variant="standard", c=1,
                        sensitivity=1.0, monotonic=bool(monotonic), ratio=1.0, rng=rng)
    capped = run.positives.size == 0
    i = max_doublings if capped else int(run.positives[0])
    d = mu * 2.0**i
    return PrivateBounds(
        lower=center - d, upper=center + d, center=center, half_width=d, doublings=i,
        capped=capped, mu=mu, theta=theta, epsilon=epsilon, n=int(n),
        guarantee=(f"{eps_text(epsilon)}-DP (SVT, c = 1; Chen 2018 Thm 9"
                   + ("; monotone counts, Lyu, Su & Li 2017 Thm 4.9)" if monotonic else ")")),
        neighbours="add/remove or replace-one (count sensitivity 1 in both; threshold from the "
                   "public n)",
    )
