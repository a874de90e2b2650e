"""SVT counterexamples: :class:`Counterexample`, the shape that breaks each broken variant
(:data:`COUNTEREXAMPLES`), and :func:`svt_counterexample`, which sizes one for an epsilon.
Part of :mod:`~dpwidgets.engine.audit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from ..svt import SVTTrials
from ..validation import check_epsilon, check_positive_int
from .result import Event

__all__ = ["Counterexample", "COUNTEREXAMPLES", "svt_counterexample"]


@dataclass(frozen=True, eq=False)
class Counterexample:
    """Neighbouring query answers and an output event that expose a broken SVT variant.

    The event is "the run's output agrees with ``pattern`` on at least ``min_agree``
    queries": query i agrees if it was examined, its outcome is ``pattern[i]`` and, when
    ``pattern[i]`` is ⊤ and ``value_at_most`` is set, its released numeric value (if the
    variant releases one) is at most ``value_at_most``. With ``min_agree = len(pattern)`` this
    is the output vector ``a`` of the text.

    Attributes
    ----------
    name : str
        The broken variant the inputs were built against (a key of :data:`COUNTEREXAMPLES`).
    answers, answers_neighbour : numpy.ndarray
        q(D) and q(D'); every query differs by at most Δ = 1 (sensitivity 1).
    threshold : float
        The public threshold T (0 in all the texts' examples).
    pattern : numpy.ndarray of bool
        The output vector of the text, True for ⊤.
    c : int
        Cutoff to run with: the number of ⊤ in ``pattern``, the smallest cutoff under which
        the pattern can occur (the variants without cutoff ignore it; ``standard`` and
        ``dpbook`` need it to be able to produce the pattern at all).
    min_agree : int
        Queries that must agree with ``pattern`` for the event to occur.
    value_at_most : float or None
        Bound on the numeric output of a ⊤ query (``roth2011``), or None.
    trials : int
        Runs per input that expose the variant with a lower bound well above the claim, at
        epsilon = 1 or at the epsilon the construction was sized for.
    source : str
        Where the construction comes from.
    description : str
        The construction in one line, for views.
    pilot : bool
        Whether :func:`audit_svt` should choose ``min_agree`` on a pilot batch by default
        (the epsilon-sized ``chen2015`` / ``gptt`` constructions, see :func:`svt_counterexample`).
    """

    name: str
    answers: np.ndarray = field(repr=False)
    answers_neighbour: np.ndarray = field(repr=False)
    threshold: float
    pattern: np.ndarray = field(repr=False)
    c: int
    min_agree: int
    value_at_most: float | None
    trials: int
    source: str
    description: str
    pilot: bool = False

    @property
    def n_queries(self) -> int:
        return int(self.pattern.size)

    def agreement(self, runs: SVTTrials) -> np.ndarray:
        """Number of queries agreeing with ``pattern`` in each run, shape ``(trials,)``."""
        n = self.n_queries
        agree = runs.outcomes[:, :n] == self.pattern
        agree &= np.arange(n) < runs.examined[:, None]  # an unexamined query agrees with nothing
        if self.value_at_most is not None:
            # "not above" rather than "<=": a ⊤ released without a value (NaN) passes.
            too_high = runs.values[:, :n] > self.value_at_most
            agree &= ~(too_high & self.pattern)
        return agree.sum(axis=1)

    def event(self, runs: SVTTrials) -> np.ndarray:
        """The output event E: at least ``min_agree`` queries agree with ``pattern``."""
        return self.agreement(runs) >= self.min_agree

    def event_at_least(self, k: int) -> Event:
        """The event "at least ``k`` queries agree", for other choices of ``min_agree``."""
        k = check_positive_int(k, "k")
        return lambda runs: self.agreement(runs) >= k


def _straddling(m: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The straddling inputs of Chen 2018 Thm 4: q(D) = 0^m 1^k, q(D') = 1^m 0^k (every query
    moves by Δ = 1), and the pattern a = ⊥^m ⊤^k."""
    return (
        np.r_[np.zeros(m), np.ones(k)],
        np.r_[np.ones(m), np.zeros(k)],
        np.r_[np.zeros(m, dtype=bool), np.ones(k, dtype=bool)],
    )


def _straddling_case(m: int, k: int, value_at_most, trials: int, source: str,
                     description: str) -> tuple:
    """A counterexample tuple (as :data:`COUNTEREXAMPLES` builds) on the straddling inputs."""
    return (*_straddling(m, k), value_at_most, trials, source, description)


def _stoddard(m, c, value_at_most):
    # Lyu, Su & Li 2017 Proof 3.6: q(D) = <0,1>, q(D') = <1,0>, T = 0, a = <⊥,⊤>.
    return (
        np.array([0.0, 1.0]),
        np.array([1.0, 0.0]),
        np.array([False, True]),
        None,
        20_000,
        "Lyu, Su & Li 2017 Thm 3.5 (Proof 3.6)",
        "q(D)=⟨0,1⟩, q(D')=⟨1,0⟩, T=0, a=⟨⊥,⊤⟩: possible on D, impossible on D' without query noise",
    )


def _roth2011(m, c, value_at_most):
    # Lyu, Su & Li 2017 Proof 9.12 with c = 1: q(D) = 0^m Δ, q(D') = Δ^m 0, a = ⊥^m 0. An exact value has
    # probability 0, so "a_{m+1} = 0" becomes "a_{m+1} <= value_at_most": the released value
    # still caps the noisy threshold, which is the leak.
    m = 8 if m is None else m
    value_at_most = 1.5 if value_at_most is None else value_at_most
    return _straddling_case(
        m, 1, value_at_most, 200_000, "Lyu, Su & Li 2017 §9.1 (Thm 9.11, Proof 9.12)",
        f"q(D)=0^{m}·1, q(D')=1^{m}·0, T=0, c=1, a=⊥^{m} then a numeric output ≤ "
        f"{value_at_most:g}: the value reveals that the noisy threshold is below it, after "
        "which every ⊥ costs again",
    )


def _chen2015(m, c, value_at_most):
    # Lyu, Su & Li 2017 Proof 9.14: q(D) = 0^{2m}, q(D') = 1^m (-1)^m, a = ⊥^m ⊤^m.
    m = 4 if m is None else m
    return (
        np.zeros(2 * m),
        np.r_[np.ones(m), -np.ones(m)],
        np.r_[np.zeros(m, dtype=bool), np.ones(m, dtype=bool)],
        None,
        200_000,
        "Lyu, Su & Li 2017 §9.2 (Thm 9.13, Proof 9.14)",
        f"q(D)=0^{2 * m}, q(D')=1^{m}·(−1)^{m}, T=0, a=⊥^{m}⊤^{m}: the loss grows like "
        "m·ε2 with the number of queries",
    )


def _gptt(m, c, value_at_most):
    # Chen 2018 Thm 4 (finite eps2): q(D1) = 0^t 1^t, q(D2) = 1^t 0^t, o = ⊥^t ⊤^t, with t = m.
    m = 5 if m is None else m
    return _straddling_case(
        m, m, None, 100_000,
        "Chen 2018 Thm 4 inputs (its proof is flawed, Lyu, Su & Li 2017 §9.3); ratio ≥ exp(m·ε2) by the "
        "pointwise argument of Lyu, Su & Li 2017 §9.2",
        f"q(D)=0^{m}·1^{m}, q(D')=1^{m}·0^{m}, T=0, a=⊥^{m}⊤^{m}",
    )


def _lee_clifton(m, c, value_at_most):
    # Built here (Lyu, Su & Li 2017 gives the bound, not an input): Chen 2018 Thm 4's straddling inputs with c ⊤
    # queries, so the run stops right after them. m ⊥ queries pin the noisy threshold; each ⊤
    # then costs up to 2·eps2 instead of 2·eps2/c, so the loss approaches ((1+6c)/4)·eps.
    m = 6 if m is None else m
    c = 2 if c is None else c
    return _straddling_case(
        m, c, None, 100_000,
        "Lyu, Su & Li 2017 §3.2 (Alg. 4 is only ((1+6c)/4)ε-DP); inputs in the style of Chen 2018 Thm 4",
        f"q(D)=0^{m}·1^{c}, q(D')=1^{m}·0^{c}, T=0, cutoff c={c}, a=⊥^{m}⊤^{c}",
    )


#: The broken variants that have a counterexample, and the builder of each.
COUNTEREXAMPLES: dict[str, Callable[..., tuple]] = {
    "stoddard": _stoddard,
    "roth2011": _roth2011,
    "chen2015": _chen2015,
    "gptt": _gptt,
    "lee_clifton": _lee_clifton,
}


# Sizing a counterexample for a given epsilon (the rule of svt_counterexample(epsilon=...)).
# Two regimes bound what n trials can prove, with z ~ 2.2 the one-sided normal quantile at
# level (1 - 0.95)/4 and E a fixed event of exact log-ratio L:
#  - small epsilon: L = lam * epsilon for a shape whose probabilities p, p' hardly depend on
#    epsilon (every scale is proportional to 1/epsilon and the sensitivity 1 is a small shift),
#    and the bound is L - z * sqrt(1/(n p) + 1/(n p')): n must grow like A / epsilon^2;
#  - large epsilon: E is (nearly) impossible on one input, and the bound is about
#    ln(n q / ln(4/0.05)) for the probability q of E on the other: n must grow like
#    K * exp(1.5 epsilon).
# A and K (per variant) come from the exact event probabilities, computed by numerical
# integration over the noisy threshold, as the trials at which a pessimistic draw (hits 2 SD
# off) still gives a bound >= 1.65 epsilon (1.1 x the 1.5 epsilon aimed for). The trials are
# capped so that a call simulates at most _SLOTS query answers per input (an interactive
# wait); where the cap binds, the variant may not be exposed (see svt_counterexample).
_SLOTS = 10_000_000
_PILOT_SLOTS = 4_000_000  # chen2015 / gptt: up to 2m candidate events, plus a pilot batch
_LN_ALPHA = math.log(4 / 0.05)  # ln(1/alpha) of each one-sided bound at 95% confidence


def _epsilon_sizes(variant: str, epsilon: float, base_trials: int) -> dict:
    """Sizes of ``variant``'s counterexample for ``epsilon`` (see the comment above)."""
    if variant == "stoddard":
        # E = <⊥,⊤> is impossible on D' (Lyu, Su & Li 2017 Proof 3.6): the bound is ln(n p / ln(1/alpha))
        # with p = P[0 < rho <= 1] = (1 - exp(-epsilon/2)) / 2, rho ~ Lap(2/epsilon).
        p = (1.0 - math.exp(-epsilon / 2.0)) / 2.0
        wanted = _LN_ALPHA * math.exp(1.5 * epsilon + 1.0) / p
        return {"trials": _trials(base_trials, wanted, 2)}
    if variant == "roth2011":
        # m ⊥ each worth epsilon/2 while the released value caps the noisy threshold; the cap
        # sits half a noise scale (1/epsilon) above the ⊤ query's answer, where the exact
        # loss is about 2.5-2.8 epsilon with m = 6; m = 5 below epsilon = 0.2, where trials
        # are the bottleneck and the likelier pattern helps. A = 65,000, K = 700.
        m = 6 if epsilon >= 0.2 else 5
        wanted = max(65_000 / epsilon**2, 700 * math.exp(1.5 * epsilon))
        return {"m": m, "value_at_most": 1.0 + 1.0 / epsilon, "trials": _trials(base_trials, wanted, m + 1)}
    if variant in ("chen2015", "gptt"):
        # The loss grows like t * epsilon2 = t * epsilon/2 with the number t of agreeing ⊥/⊤
        # pairs (Lyu, Su & Li 2017 §9.2), so t = 3/epsilon pairs give a loss of several epsilon on the
        # event "at least k agree", k chosen on a pilot batch (the exact pattern is too rare
        # for large t). Its probabilities are not small, so few trials suffice (K = 130).
        default = 4 if variant == "chen2015" else 5
        m = min(64, max(default, math.ceil(3.0 / epsilon)))
        wanted = 130 * math.exp(1.5 * epsilon)
        trials = min(max(base_trials, math.ceil(wanted)), _PILOT_SLOTS // (2 * m))
        return {"m": m, "trials": trials, "pilot": True}
    if variant == "lee_clifton":
        # With c = 2 the proven loss is 3.25 epsilon (Lyu, Su & Li 2017 §3.2); m = 3 ⊥ queries already push
        # the threshold into the tail where the event's exact loss is 2.66 epsilon, with the
        # likeliest pattern (p about 0.01 at every small epsilon). A = 9,500, K = 110.
        wanted = max(9_500 / epsilon**2, 110 * math.exp(1.5 * epsilon))
        return {"m": 3, "c": 2, "trials": _trials(base_trials, wanted, 5)}
    raise ValueError(f"variant must be one of {sorted(COUNTEREXAMPLES)}, got {variant!r}")


def _trials(base: int, wanted: float, n_queries: int) -> int:
    return int(min(max(base, math.ceil(wanted)), _SLOTS // n_queries))


def svt_counterexample(
    variant: str,
    *,
    epsilon: float | None = None,
    m: int | None = None,
    c: int | None = None,
    min_agree: int | None = None,
    value_at_most: float | None = None,
) -> Counterexample:
    """The inputs and the event that expose a broken SVT variant (Lyu, Su & Li 2017 §3, §9; Chen 2018 Thm 4).

    Parameters
    ----------
    variant : str
        ``"stoddard"``, ``"roth2011"``, ``"chen2015"``, ``"gptt"`` or ``"lee_clifton"``.
    m : int, optional
        Size of the construction: the ⊥ queries before the numeric output (``roth2011``,
        default 8), the pairs ⊥/⊤ (``chen2015``, default 4; ``gptt``, default 5 — the t of
        Chen 2018), the ⊥ queries before the c ⊤ (``lee_clifton``, default 6). ``stoddard`` has
        none (two queries).
    c : int, optional
        ``lee_clifton`` only: its cutoff and number of ⊤ queries (default 2).
    min_agree : int, optional
        Queries that must agree with the pattern (default: all, the text's event). Fewer
        turns the rare exact pattern into a likelier event whose loss keeps growing with
        ``m``; choose it in advance, or let :func:`audit_svt` choose it on a pilot batch.
    value_at_most : float, optional
        ``roth2011`` only: the bound on the released value (default 1.5).
    epsilon : float, optional
        Size the construction for this epsilon instead of epsilon = 1: every size not given
        explicitly, and ``trials``, follow the rule in the Notes (this is what
        :func:`audit_svt` uses by default).

    Returns
    -------
    Counterexample

    Raises
    ------
    ValueError
        Unknown variant; ``m``, ``c``, ``min_agree`` out of range; a parameter given to a
        variant it does not apply to.

    Notes
    -----
    The defaults were sized (by numerical integration of the event probabilities, not on
    audit samples) so that at epsilon = 1, ``trials`` runs give a lower bound of about 2.5-2.8
    (6.8 for ``stoddard``), i.e. well above 1.5 × the claim, in a fraction of a second. At much
    smaller epsilon the per-query loss shrinks with epsilon, and at larger epsilon the bound,
    which grows only like ln(trials) once E is (nearly) impossible on one input, falls below
    epsilon: pass ``epsilon=`` to size the construction for it.

    Sizing rule (``epsilon`` given). Every noise scale is proportional to 1/epsilon, so at
    small epsilon a shape's event probabilities hardly depend on epsilon while its loss is
    ``lam * epsilon``: the trials that resolve the loss grow like ``A / epsilon**2``. At large
    epsilon E is nearly impossible on one input and the bound is about
    ``ln(trials * q / ln(80))`` for E's probability q on the other: trials grow like
    ``K * exp(1.5 epsilon)``. A, K and the shapes were read off the exact event probabilities
    (numerical integration over the noisy threshold) as the trials at which a draw 2 SD off
    still gives 1.65 epsilon; trials never go below the epsilon = 1 defaults and are capped at
    10 million simulated query answers per input (4 million for chen2015 / gptt, which
    evaluate up to 2m candidate events), so an audit stays an interactive wait.

    - ``stoddard``: the same two queries; trials ``ln(80) e^(1.5 eps + 1) / p`` with
      ``p = (1 - e^(-eps/2))/2`` the probability of E on D (E is impossible on D').
    - ``roth2011``: m = 6 (m = 5 below epsilon = 0.2), ``value_at_most = 1 + 1/epsilon`` (half
      the noise scale 2/epsilon above the ⊤ query's answer), trials ``max(65,000/eps^2,
      700 e^(1.5 eps))``; exact loss about 2.5-2.8 epsilon.
    - ``chen2015`` / ``gptt``: ``m = ceil(3/epsilon)`` pairs (at least the defaults 4 / 5, at most
      64), since the loss grows like m * epsilon2 = m * epsilon/2; ``min_agree`` chosen on a
      pilot batch (``pilot=True``); trials ``130 e^(1.5 eps)``.
    - ``lee_clifton``: m = 3, c = 2 (proven bound 3.25 epsilon, the event's exact loss 2.66
      epsilon); trials ``max(9,500/eps^2, 110 e^(1.5 eps))``.

    So sized, every broken variant's bound reaches 1.5 epsilon over the usual range of
    epsilon, in an interactive wait (the seeded figures are on the SVT family page of the
    documentation). Where the cap binds (epsilon
    below about 0.05 for ``roth2011`` and ``lee_clifton``, whose trials grow like
    1/epsilon^2; chen2015 / gptt below about 3/64; every variant above about 6, where the
    bound grows only like ln(trials)) the audit may find no violation: its summary then says
    "no violation found at this size", which is no evidence of privacy — these variants are
    not private at any epsilon (Lyu, Su & Li 2017 Thm 3.5, §9.1, §9.2) or not at the claimed one (§3.2).

    GPTT: Chen 2018 Thm 4 proves non-privacy with these inputs, but its proof is flawed (Lyu, Su & Li 2017 §9.3):
    it bounds the integrand ratio κ(z) on an interval [−δ, δ] whose width grows with t, so
    κ shrinks as t grows, and the same argument would "prove" Alg. 1 non-private. GPTT is
    nevertheless not private (with eps1 = eps2 it *is* Alg. 6, Lyu, Su & Li 2017 §9.2), and for Laplace query
    noise Chen 2018's inputs do work: splitting κ(z) as in Lyu, Su & Li 2017 Proof 9.14 gives κ(z) >= exp(eps2)
    for every z (the ⊥ factor for z <= 0, the ⊤ factor for z >= 1, both in between), hence a
    ratio >= exp(t·eps2). (Lyu, Su & Li 2017 §9.3's remark that κ(z) -> 1 as |z| -> ∞ does not hold for
    Laplace noise, whose tail ratio stays exp(eps2).) The audit shows the ratio empirically.

    References
    ----------
    Lyu, Su & Li 2017 Thm 3.5 and Proof 3.6 (Alg. 5), §9.1 Thm 9.11 (Alg. 3), §9.2 Thm 9.13 (Alg. 6),
    §9.3 and §3.3 (GPTT), §3.2 (Alg. 4's ((1+6c)/4)·epsilon); Chen 2018 Alg. 5 and Thm 4.

    Examples
    --------
    >>> from dpwidgets.engine.audit import svt_counterexample
    >>> ce = svt_counterexample("stoddard")
    >>> ce.answers.tolist(), ce.answers_neighbour.tolist(), ce.pattern.tolist()
    ([0.0, 1.0], [1.0, 0.0], [False, True])
    """
    if not isinstance(variant, str) or variant not in COUNTEREXAMPLES:
        raise ValueError(f"variant must be one of {sorted(COUNTEREXAMPLES)}, got {variant!r}")
    if m is not None:
        if variant == "stoddard":
            raise ValueError("m does not apply to 'stoddard' (its counterexample has two queries)")
        m = check_positive_int(m, "m")
    if c is not None:
        if variant != "lee_clifton":
            raise ValueError(
                f"c applies to 'lee_clifton' only; for {variant!r} the cutoff is the number of "
                "⊤ in the pattern"
            )
        c = check_positive_int(c, "c")
    if value_at_most is not None:
        if variant != "roth2011":
            raise ValueError("value_at_most applies to 'roth2011' only (the one emitting values)")
        if isinstance(value_at_most, bool) or not isinstance(value_at_most, Real) or not (
            math.isfinite(value_at_most)
        ):
            raise ValueError(f"value_at_most must be a finite number, got {value_at_most!r}")
        value_at_most = float(value_at_most)

    pilot = False
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
        base_trials = COUNTEREXAMPLES[variant](None, None, None)[4]
        sizes = _epsilon_sizes(variant, epsilon, base_trials)
        m = sizes.get("m") if m is None else m
        c = sizes.get("c") if c is None else c
        if value_at_most is None:
            value_at_most = sizes.get("value_at_most")
        pilot = sizes.get("pilot", False) and min_agree is None
    answers, neighbour, pattern, bound, trials, source, description = COUNTEREXAMPLES[variant](
        m, c, value_at_most
    )
    if epsilon is not None:
        trials = sizes["trials"]
        source += f"; sized for ε = {epsilon:g}"
    n = int(pattern.size)
    if min_agree is None:
        min_agree = n
    else:
        min_agree = check_positive_int(min_agree, "min_agree")
        if min_agree > n:
            raise ValueError(f"min_agree must be in [1, {n}] (the number of queries), got {min_agree}")
    for array in (answers, neighbour, pattern):
        array.setflags(write=False)
    return Counterexample(
        name=variant,
        answers=answers,
        answers_neighbour=neighbour,
        threshold=0.0,
        pattern=pattern,
        c=max(1, int(pattern.sum())),
        min_agree=min_agree,
        value_at_most=bound,
        trials=trials,
        source=source,
        description=description,
        pilot=pilot,
    )
