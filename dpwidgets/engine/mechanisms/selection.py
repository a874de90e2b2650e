"""The exponential mechanism: :func:`exponential_mechanism` (Gumbel-top-k outside
:func:`floating_point_safe`) and the floating-point-safe base-2 sampler it runs inside
(Ilvento 2020): :func:`_base2_selection`, :func:`base2_selection_probabilities`,
:data:`base2_exponential_mechanism`."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..validation import (
    check_bool,
    check_epsilon,
    check_finite_array,
    check_positive,
    check_positive_int,
    check_rng,
)
from .context import _FLOATING_POINT_SAFE
from .discrete import _MAX_STEPS, GRID_BITS

# base2_exponential_mechanism and base2_selection_probabilities are importable by name but not
# in __all__: exponential_mechanism is the public door (it switches to the base-2 sampler inside
# floating_point_safe()); the two are for tests, benchmarks and explanations.
__all__ = ["exponential_mechanism", "SELECTION_SLACK"]


def exponential_mechanism(
    qualities,
    epsilon: float,
    sensitivity: float = 1.0,
    *,
    k: int = 1,
    monotonic: bool = False,
    rng: np.random.Generator | None = None,
    exact: bool | None = None,
) -> np.ndarray:
    """Select ``k`` distinct indices by the exponential mechanism, ``epsilon/k`` per round.

    Each round picks among the not-yet-selected candidates with probability proportional to
    ``exp(eps_r * q / (2 * sensitivity))`` (``exp(eps_r * q / sensitivity)`` when the quality is
    monotonic), where ``eps_r = epsilon / k``; this is Lyu, Su & Li 2017 §5's "EM run c times
    without replacement, each round with epsilon/c".

    Two samplers, chosen by the context (as :func:`laplace` is):

    * Outside :func:`floating_point_safe` (teaching runs, previews): the Gumbel-top-k trick,
      fast and vectorised. Adding independent Gumbel noise to the log-weights and taking the
      k largest gives the distribution (order included) of sequential sampling without
      replacement (Kool, van Hoof, Welling 2019, Thm. 1) -- in real arithmetic. NOT floating-
      point safe: numpy's Gumbel of a double lies in about [-3.6, 36.7], so a candidate whose
      log-weight is ~40 below the best is never selected, while on a neighbour whose gap is
      a little smaller it can be: the privacy loss of such an output is unbounded (Ilvento
      2020's attacks on floating-point exponential mechanisms).
    * Inside :func:`floating_point_safe` (every analyst release): the base-2 exponential
      mechanism sampled with integer arithmetic (:func:`_base2_selection`): the
      qualities are rounded to a power-of-two grid, every candidate keeps a positive
      probability, and the privacy loss of each round is proved to be at most ``epsilon / k``
      including the rounding (Notes there).

    Guarantee: ``epsilon``-DP by sequential composition of k ``epsilon/k``-DP rounds, under
    whatever neighbour relation ``sensitivity`` is stated for.

    Parameters
    ----------
    qualities : array_like, 1-D
        The quality (utility) score of every candidate.
    epsilon : float
        Total budget of the k rounds.
    sensitivity : float
        Largest change of any quality between neighbours (Delta).
    k : int
        Number of distinct candidates to select (1 <= k <= len(qualities)).
    monotonic : bool
        Whether all qualities move in the same direction between neighbours (Lyu, Su & Li 2017 §4.3).
    exact : bool, optional
        ``True``: the base-2 sampler whatever the context (:func:`_base2_selection`, whose
        Notes hold the proof); ``False``: the Gumbel sampler; ``None`` (default): base-2
        inside :func:`floating_point_safe`, Gumbel outside.

    Returns
    -------
    numpy.ndarray of int
        The selected indices, in selection order.

    References
    ----------
    McSherry and Talwar 2007; Lyu, Su & Li 2017 §5; Ilvento 2020 (the base-2 mechanism).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import exponential_mechanism
    >>> exponential_mechanism([1, 2, 30, 4], epsilon=1.0, rng=np.random.default_rng(0)).tolist()
    [2]
    >>> sorted(exponential_mechanism([1, 20, 30, 4], epsilon=2.0, k=2, rng=np.random.default_rng(0)).tolist())
    [1, 2]
    """
    qualities, epsilon, sensitivity, k, monotonic = _check_selection(
        qualities, epsilon, sensitivity, k, monotonic)
    rng = check_rng(rng)
    if (_FLOATING_POINT_SAFE.get() if exact is None else check_bool(exact, "exact")):
        return _base2_selection(qualities, epsilon, sensitivity, k, monotonic, rng)
    # Teaching sampler (Gumbel-top-k on doubles): fast, not floating-point safe (above).
    factor = 1.0 if monotonic else 2.0
    log_weights = (epsilon / k) * qualities / (factor * sensitivity)
    keys = log_weights + rng.gumbel(size=qualities.size)
    if k == qualities.size:
        return np.argsort(-keys, kind="stable")
    top = np.argpartition(-keys, k - 1)[:k]
    return top[np.argsort(-keys[top], kind="stable")]


# ---------------------------------------------------------------------------------------------
# Floating-point-safe selection: the base-2 exponential mechanism (Ilvento 2020)
# ---------------------------------------------------------------------------------------------
#
# Why not the Gumbel trick on doubles: numpy's Gumbel variates are bounded (about -3.6 to
# 36.7), so a candidate far enough below the best has probability exactly 0, and one a
# little less far below has a positive one; between neighbours that is an unbounded loss.
# Here every weight is an exact dyadic number m 2**-j (integers m, j), the weights are
# summed exactly (Python integers), and the index is drawn from exact uniform integers: the
# implemented probabilities are the stated ones, and the only floating-point operation,
# exp2 of a fraction in [0, 1), enters through a bounded relative error that is charged.

#: The additive privacy-loss slack of one round of :func:`_base2_selection`:
#: the implemented weights are within a relative ``rho <= 1.51 * 2**-44`` of the ideal ones
#: (rounding of the 44-bit mantissas <= 2**-44; ``exp2`` <= 2**-45, the assumption of
#: :data:`_NUDGE`; the conversion of the fraction to a double <= 2**-53), so a probability
#: ratio is at most the ideal one times ``((1 + rho) / (1 - rho))**2``: ``+ 4.01 rho < 2**-41``
#: in log. Every round is calibrated so that its ideal loss plus this slack is its budget.
SELECTION_SLACK = 2.0**-41
#: Bits of the integer mantissas of the weights (in [2**43, 2**44]).
_EM_MANTISSA_BITS = 44
#: eta = a / 2**shift bits per grid step with ``a < 2**_EM_A_BITS`` (exact int64 products).
_EM_A_BITS = 36
#: eta is at most 64 bits per grid step (only budgets above ~5e7 per round are cut); with
#: ``a < 2**36`` this keeps the shift >= 29, which the exact products need.
_EM_ETA_MAX = 64
#: Exponent groups within this many bits of the best live one are summed exactly each
#: round; the candidates beyond (at most n 2**-64 of the mass) are reached by rejection.
_EM_WINDOW = 64
#: An exact rational upper bound on ln 2 (ln 2 = 0.69314718055994530941723212145817656807...).
_LN2_UP = Fraction("0.69314718055994530941723212145817657")
#: Proposals per batch of the rejection step inside an exponent group.
_EM_BATCH = 8


@lru_cache(maxsize=256)  # a pure function of public scalars; the Fraction arithmetic is slow
def _base2_constants(epsilon: float, k: int, sensitivity: float, monotonic: bool
                     ) -> tuple[float, int, int, int]:
    """``(g, K, a, shift)`` of :func:`_base2_selection` for the budget
    ``epsilon / k`` per round: the grid, the sensitivity in steps, ``eta = a / 2**shift``."""
    factor = 1 if monotonic else 2
    budget = Fraction(epsilon) / k - Fraction(SELECTION_SLACK)
    if budget <= 0:
        raise ValueError(f"epsilon / k must exceed SELECTION_SLACK = 2**-41 for the floating-"
                         f"point-safe exponential mechanism, got {epsilon / k:g}")
    bits = GRID_BITS
    while True:
        grid = math.ldexp(1.0, math.frexp(sensitivity)[1] - 1 - bits)
        steps = math.floor(sensitivity / grid) + 1  # sensitivity / grid is exact
        eta = min(budget / (factor * steps * _LN2_UP), Fraction(_EM_ETA_MAX))
        shift = 62
        while math.floor(eta * 2**shift) >= 2**_EM_A_BITS:  # ends at shift >= 29 (eta <= 64)
            shift -= 1
        a = math.floor(eta * 2**shift)
        # A coarser grid (fewer steps K) makes eta, hence a, larger: stop once a >= K, so that
        # neither the rounding of the qualities (1/K) nor that of eta (1/a) wastes more than
        # ~2**-20 of the budget at eps_r ~ 1, and both stay small at tiny budgets.
        if a >= steps or bits == 0:
            return grid, steps, a, shift
        bits -= 1


def _base2_weights(qualities: np.ndarray, epsilon: float, k: int, sensitivity: float,
                   monotonic: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(exponent, mantissa)``: candidate i's weight is exactly ``mantissa[i] * 2**-(exponent[i]
    + 44)`` (the best has weight 1); the Notes of :func:`_base2_selection` say why
    each step is private. All integer arithmetic is exact in int64."""
    # The grid and eta depend on public inputs only (sensitivity, epsilon, k, monotonic).
    grid, _, a, shift = _base2_constants(epsilon, k, sensitivity, monotonic)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        n = np.rint(np.clip(qualities / grid, -_MAX_STEPS, _MAX_STEPS)).astype(np.int64)
    if a == 0:  # eta = 0: every weight is 1 (spends nothing; only at budgets below ~2**-60)
        return (np.zeros(n.size, dtype=np.int64),
                np.full(n.size, 1 << _EM_MANTISSA_BITS, dtype=np.int64))
    d = n.max() - n  # the distance to the best, in steps: <= 2**53
    # a * d = a d1 2**26 + a d0 without overflow (a < 2**36, d1 <= 2**27, d0 < 2**26), then
    # split into the integer part (< 2**60) and the fraction of a * d / 2**shift (shift >= 29).
    a64 = np.int64(a)
    high = (d >> 26) * a64
    low = ((high & ((1 << (shift - 26)) - 1)) << 26) + (d & ((1 << 26) - 1)) * a64
    exponent = (high >> (shift - 26)) + (low >> shift)
    fraction = (low & ((1 << shift) - 1)).astype(float) * 2.0**-shift
    mantissa = np.rint(np.exp2(-fraction) * 2.0**_EM_MANTISSA_BITS).astype(np.int64)
    return exponent, mantissa


def _uniform_below(bound: int, rng: np.random.Generator) -> int:
    """A uniform integer in ``[0, bound)`` (a Python int of any size), exactly: whole random
    bytes, the surplus bits dropped, rejected when ``>= bound`` (probability < 1/2)."""
    bits = bound.bit_length()
    size = (bits + 7) // 8
    while True:
        x = int.from_bytes(rng.bytes(size), "little") >> (8 * size - bits)
        if x < bound:
            return x


def _halves(e: int, rng: np.random.Generator) -> bool:
    """True with probability exactly ``2**-e`` (e >= 0): e fair bits, all zero; stops at the
    first one (so an enormous e costs one draw in all but a 2**-62 fraction of calls)."""
    while e > 0:
        take = min(e, 62)
        if int(rng.integers(0, 1 << take)) != 0:
            return False
        e -= take
    return True


class _Base2Urn:
    """The candidates of one :func:`_base2_selection` run, grouped by exponent, for
    exact draws without replacement (each draw exactly proportional to the live weights)."""

    def __init__(self, exponent: np.ndarray, mantissa: np.ndarray) -> None:
        self.size = exponent.size
        top = int(exponent.max())
        key = exponent.astype(np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.int64)
        self.order = np.argsort(key, kind="stable")  # a radix sort for small exponents
        ranked = exponent[self.order]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(ranked)) + 1))
        sizes = np.diff(np.append(starts, self.size))
        self.group = np.empty(self.size, dtype=np.int64)
        self.group[self.order] = np.repeat(np.arange(starts.size), sizes)
        self.starts = starts.tolist()
        self.levels = ranked[starts].tolist()  # the exponent of each group, ascending
        self.live = sizes.tolist()
        # Exact sums of the mantissas per group: 22-bit halves summed in doubles stay below
        # 2**53 (exact) for fewer than 2**31 candidates.
        ordered = mantissa[self.order]
        low = np.add.reduceat((ordered & ((1 << 22) - 1)).astype(float), starts)
        high = np.add.reduceat((ordered >> 22).astype(float), starts)
        self.totals = [(int(h) << 22) + int(lo) for h, lo in zip(high, low, strict=True)]
        self.exponent = exponent
        self.mantissa = mantissa  # our own array: selected candidates are zeroed in it
        self.pools: dict[int, np.ndarray] = {}
        self.best = 0  # the first group with live candidates
        self.edge = 0  # the first group more than _EM_WINDOW bits below the best

    def draw(self, rng: np.random.Generator) -> int:
        """One candidate, with probability ``m_i 2**-j_i / sum over the live ones``, exactly."""
        groups, levels, totals = len(self.levels), self.levels, self.totals
        best = levels[self.best]
        while self.edge < groups and levels[self.edge] <= best + _EM_WINDOW:
            self.edge += 1
        # In units of 2**-(best + window + 44): group g weighs S_g 2**(best + window - j_g);
        # a candidate beyond the window weighs at most 2**43, so slots * 2**43 bounds them.
        near = [(g, totals[g] << (best + _EM_WINDOW - levels[g]))
                for g in range(self.best, self.edge) if totals[g]]
        near_total = sum(w for _, w in near)
        slots = self.size - self.starts[self.edge] if self.edge < groups else 0
        while True:
            if len(near) == 1 and not slots:
                return self._from_group(near[0][0], rng)
            u = _uniform_below(near_total + (slots << (_EM_MANTISSA_BITS - 1)), rng)
            if u < near_total:
                for g, w in near:
                    if u < w:
                        return self._from_group(g, rng)
                    u -= w
            # Beyond the window: a uniform slot, kept with probability (its weight) / 2**43:
            # m_i / 2**44 times 2**-(j_i - best - window - 1); else the whole draw restarts.
            i = int(self.order[self.starts[self.edge] + int(rng.integers(0, slots))])
            m = int(self.mantissa[i])
            if (m and int(rng.integers(0, 1 << _EM_MANTISSA_BITS)) < m
                    and _halves(int(self.exponent[i]) - best - _EM_WINDOW - 1, rng)):
                return i

    def _from_group(self, g: int, rng: np.random.Generator) -> int:
        """Candidate i of group g with probability ``m_i / S_g`` (uniform proposals, each kept
        when a uniform integer below 2**44 is < m_i; selected candidates have m_i = 0)."""
        pool = self.pools.get(g)
        if pool is None:
            pool = self.order[self.starts[g]:self.starts[g] + self._slots(g)]
        if pool.size == 1:
            return int(pool[0])
        while True:
            pos = rng.integers(0, pool.size, size=_EM_BATCH)
            coin = rng.integers(0, 1 << _EM_MANTISSA_BITS, size=_EM_BATCH)
            hit = np.flatnonzero(coin < self.mantissa[pool[pos]])
            if hit.size:
                return int(pool[pos[hit[0]]])

    def _slots(self, g: int) -> int:
        return (self.starts[g + 1] if g + 1 < len(self.starts) else self.size) - self.starts[g]

    def remove(self, i: int) -> None:
        """Take candidate i out of the urn (it was selected)."""
        g = int(self.group[i])
        self.totals[g] -= int(self.mantissa[i])
        self.mantissa[i] = 0
        self.live[g] -= 1
        pool = self.pools.get(g)
        if pool is None:
            pool = self.order[self.starts[g]:self.starts[g] + self._slots(g)]
        if 2 * self.live[g] < pool.size:  # keep proposals mostly live: drop the selected
            self.pools[g] = pool[self.mantissa[pool] > 0]
        while self.best < len(self.live) - 1 and not self.live[self.best]:
            self.best += 1


def _check_selection(qualities, epsilon, sensitivity, k, monotonic):
    qualities = check_finite_array(qualities, "qualities")
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    k = check_positive_int(k, "k")
    monotonic = check_bool(monotonic, "monotonic")
    if k > qualities.size:
        raise ValueError(f"k must be at most the number of candidates ({qualities.size}), got {k}")
    return qualities, epsilon, sensitivity, k, monotonic


def base2_selection_probabilities(qualities, epsilon: float, sensitivity: float = 1.0, *,
                                  k: int = 1, monotonic: bool = False) -> np.ndarray:
    """The exact selection probabilities of the first round of
    :func:`_base2_selection` (budget ``epsilon / k``), as doubles.

    They are computed from the same integer weights the sampler uses, summed as fractions, so
    they are the implemented distribution (each probability correctly rounded to a double;
    weights more than 1100 bits below the best, whose probabilities are below the smallest
    double, count as 0), not the ideal one; later rounds renormalise the same weights over
    the candidates left. For tests and for explanations of the mechanism.
    """
    qualities, epsilon, sensitivity, k, monotonic = _check_selection(
        qualities, epsilon, sensitivity, k, monotonic)
    exponent, mantissa = _base2_weights(qualities, epsilon, k, sensitivity, monotonic)
    top = int(exponent.min()) + 1100
    scaled = [int(m) << (top - int(j)) if j <= top else 0
              for m, j in zip(mantissa, exponent, strict=True)]
    total = sum(scaled)
    return np.array([float(Fraction(s, total)) for s in scaled])


def _base2_selection(qualities: np.ndarray, epsilon: float, sensitivity: float, k: int,
                     monotonic: bool, rng: np.random.Generator) -> np.ndarray:
    """The exponential mechanism, floating-point safe: base 2, exact integer sampling.

    What :func:`exponential_mechanism` runs inside :func:`floating_point_safe` (every analyst
    release) or with ``exact=True``; same arguments (checked there), same guarantee. Each of the k rounds selects one of
    the candidates not yet selected with probability proportional to ``2**(-eta d_i)``, where

    * ``g`` is a public power of two, the largest <= ``Delta / 2**GRID_BITS`` (for budgets
      below about 5e-7 per round, coarsened until ``a >= K``: g depends on public inputs
      only), and ``n_i = rint(q_i / g)`` (ties to even; ``|q_i / g|`` clamped to 2**52) is the
      quality in grid steps;
    * ``d_i = max_j n_j - n_i``: the distance to the best, in steps (at most 2**53);
    * ``eta = a / 2**s`` bits per step, ``a = floor(2**s * min(64, (eps_r - SELECTION_SLACK)
      / (f K ln 2)))`` in exact rational arithmetic (ln 2 rounded up), ``s`` the largest
      shift <= 62 with ``a < 2**36``, ``eps_r = epsilon / k``, ``K = floor(Delta / g) + 1``,
      ``f = 2`` (``f = 1`` if ``monotonic``). The cap of 64 bits per step cuts only budgets
      above ~5e7 per round (the mechanism is then an argmax, and spends less than given).

    The weight ``2**(-eta d_i)`` is ``2**-j_i 2**-phi_i`` with the integer ``j_i = floor(a d_i
    / 2**s)`` (< 2**60) and the dyadic fraction ``phi_i`` of ``a d_i / 2**s``, both exact in
    int64 (``a d_i`` up to 2**89 is split in two products);
    ``2**-phi_i`` in [1/2, 1] becomes the integer mantissa ``m_i = rint(exp2(-phi_i) 2**44)``.
    The implemented weight is exactly ``m_i 2**-(j_i + 44)``. A round draws a uniform integer
    below the exact sum, in units of ``2**-(b + 64 + 44)`` (``b`` the best live exponent), of
    the live mantissas of the exponent groups within 64 bits of ``b``, plus a bound
    (``2**43`` per slot) for the candidates beyond; it falls in a group g (then candidate i of
    g is drawn with probability ``m_i / S_g`` by uniform proposals accepted when a uniform
    integer below 2**44 is ``< m_i``) or in the bound (then a uniform slot beyond is kept with
    probability its weight over the bound, from exact uniform integers and fair bits, and
    otherwise the whole draw restarts). Every step is exact, so candidate i is selected with
    probability exactly ``m_i 2**-j_i / sum_l m_l 2**-j_l`` over the live candidates
    (:func:`base2_selection_probabilities`), every live candidate with a positive one. Time:
    O(n log n) once (vectorised; a radix sort unless the exponents are large) plus O(groups
    within 64 bits) Python operations per round (benchmarks/noise_samplers.py measures it).

    Parameters
    ----------
    qualities, epsilon, sensitivity, k, monotonic, rng
        As for :func:`exponential_mechanism`.

    Returns
    -------
    numpy.ndarray of int64
        The selected indices, in selection order.

    Raises
    ------
    ValueError
        As for :func:`exponential_mechanism`; also ``epsilon / k <= 2**-41`` or 2**31
        candidates or more. Before anything is drawn.

    Notes
    -----
    Neighbours: any relation under which ``|q_i(D) - q_i(D')| <= Delta`` for every candidate
    i (and, with ``monotonic``, all qualities move in the same direction).

    Privacy of one round: ``eps_r``-DP, exactly.

    1. Rounding: ``|rint(x) - rint(y)| <= floor(|x - y|) + 1``, so ``|n_i - n'_i| <= K``; rint
       is non-decreasing, so monotonic qualities stay monotonic. The clamp to +-2**52 is
       1-Lipschitz and non-decreasing too.
    2. The ideal base-2 mechanism on ``n``: ``M = max_j n_j`` is common to all candidates, so
       the weights are proportional to ``2**(eta n_i)``, and ``P(i) / P'(i) = 2**(eta (n_i -
       n'_i)) Z' / Z`` with ``Z = sum_l 2**(eta n_l)``; each factor is at most ``2**(eta
       K)``, and with monotonic qualities one of them is at most 1, so the ratio is at most
       ``2**(f eta K)``, i.e. a loss of at most ``f eta K ln 2 <= eps_r - SELECTION_SLACK``
       (the choice of a: ln 2 rounded up, eta rounded down; never more than the budget).
    3. The implementation: each weight is within a factor ``1 +- rho`` of the ideal,
       ``rho <= 1.51 * 2**-44`` (:data:`SELECTION_SLACK`), so is their sum; the ratio gains at
       most ``2 ln((1 + rho) / (1 - rho)) < SELECTION_SLACK``. The sampling itself is exact
       (above). Total: at most ``eps_r``.
    4. Ties: the mechanism samples, it never takes an argmax, so there is no tie to break:
       candidates of equal quality have equal weights and equal probabilities.

    k rounds without replacement: round r is the mechanism above restricted to the candidates
    not yet selected (a set fixed by the earlier outputs), with the same weights, so it is
    ``eps_r``-DP given the earlier rounds; by (adaptive) sequential composition the k rounds are ``k eps_r = epsilon``-DP
    (Lyu, Su & Li 2017 §5, "EM c times without replacement").

    Accuracy against the textbook mechanism ``exp(eps_r q / (f Delta))``: the grid moves a
    quality by at most g/2 (about 2**-21 Delta), and eta per unit of quality is smaller than
    ``eps_r / (f Delta ln 2)`` by the factor ``Delta / (g K)`` (about ``1 - 2**-20``), by the
    rounding of a (< 1/a) and by ``SELECTION_SLACK / eps_r``: at budgets above ~1e-5 per
    round the selection probabilities agree with the textbook ones to about six digits
    (``tests/engine/test_selection_fp.py``).

    References
    ----------
    Ilvento 2020, "Implementing the exponential mechanism with base-2 differential privacy"
    (CCS; base 2 so that the weights are exact); McSherry & Talwar 2007; Lyu, Su & Li 2017 §5;
    Canonne, Kamath & Steinke 2020 (exact sampling from uniform integers).
    """
    if qualities.size >= 2**31:
        raise ValueError(f"qualities must have fewer than 2**31 candidates, got {qualities.size}")
    urn = _Base2Urn(*_base2_weights(qualities, epsilon, k, sensitivity, monotonic))
    out = np.empty(k, dtype=np.int64)
    for r in range(k):
        out[r] = urn.draw(rng)
        urn.remove(int(out[r]))
    return out


#: :func:`exponential_mechanism` with the base-2 sampler whatever the context.
base2_exponential_mechanism = functools.partial(exponential_mechanism, exact=True)
