"""The Sparse Vector Technique (SVT) family, correct and broken, and private top-c selection.

SVT answers a stream of queries with ⊤ ("above the threshold") or ⊥ and pays only for the ⊤'s:
one noisy threshold is drawn, every query gets fresh noise, and the algorithm stops after c ⊤.
The literature contains many variants; several of them are not private at all. This module
implements all of them from one table, :data:`VARIANTS`, so that the correct ones can be used
and the broken ones can be shown failing (the audit in :mod:`.attacks` imports
:func:`sparse_vector_trials` for that).

Where things are
----------------
- :data:`VARIANTS` — one :class:`SVTVariant` per name: source, guarantee, noise scales
  (each variant's scales are written once, in its ``_noise_*`` function just above the table).
- :func:`sparse_vector` — one run over a vector of query answers -> :class:`SVTResult`.
- :func:`sparse_vector_trials` — many independent runs at once -> :class:`SVTTrials`.
- :class:`SparseVector` — the interactive form: one query at a time, refuses after c ⊤.
- :func:`top_c` — non-interactive top-c selection by the exponential mechanism or by SVT with
  retraversal (Lyu, Su & Li 2017 §5); :func:`false_negative_rate`, :func:`score_error_rate` (Lyu, Su & Li 2017 §6).

Sources: M. Lyu, D. Su, N. Li, *Understanding the Sparse Vector Technique for Differential
Privacy*, PVLDB 10(6), 2017 (Lyu, Su & Li 2017); Y. Chen, *Applying Differential Privacy with
Sparse Vector Technique*, PhD thesis, Duke University, 2018, Ch. 3 on GPTT and the generalized
SVT (Chen 2018).

Budget convention
-----------------
``epsilon`` is always the *total* budget the caller intends to spend. For ``standard`` it is
split as ``epsilon1 + epsilon2 + epsilon3 = epsilon`` (Lyu, Su & Li 2017 Thm 4.7): ``epsilon3`` (numeric
outputs of ⊤ queries, Alg. 7 line 8) is taken out first and ``epsilon1:epsilon2 = 1:ratio``
divides the rest. The other variants split ``epsilon`` the way their source does; for the broken
ones ``epsilon`` is only the *nominal* budget — :meth:`SVTVariant.privacy_loss` gives the loss
actually incurred (``math.inf`` when none is bounded).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from ._results import frozen as _readonly
from ._validation import (
    check_bool,
    check_epsilon,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_rng,
)
from .mechanisms import (
    MAX_DRAWS,
    ComparisonGrid,
    exponential_mechanism,
    is_floating_point_safe,
    laplace,
    laplace_reals,
)

__all__ = [
    "VARIANTS",
    "SVTVariant",
    "SVTNoise",
    "SVTResult",
    "SVTTrials",
    "SVTAnswer",
    "SVTExhausted",
    "SparseVector",
    "sparse_vector",
    "sparse_vector_trials",
    "default_ratio",
    "top_c",
    "false_negative_rate",
    "score_error_rate",
    "MAX_CUTOFF",
    "MAX_TRIALS",
    "MAX_PASSES",
]

#: The largest cutoff ``c`` (number of ⊤ answers) any SVT here accepts.
MAX_CUTOFF = 10**7
#: The most runs :func:`sparse_vector_trials` simulates; also ``trials * len(answers)`` must
#: stay within :data:`.mechanisms.MAX_DRAWS`.
MAX_TRIALS = 10**7
#: The most passes of SVT with retraversal (:func:`top_c`, ``method="svt_retr"``).
MAX_PASSES = 10**6

# --------------------------------------------------------------------------------------------
# The variant table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SVTNoise:
    """The budget split and noise scales of one SVT configuration.

    Attributes
    ----------
    epsilon1, epsilon2, epsilon3 : float
        Budget of the threshold noise, of the query noise, and of the numeric outputs.
    threshold_scale : float
        Laplace scale of the threshold noise rho drawn at the start.
    query_scale : float
        Laplace scale of the fresh noise nu_i added to every query (0: no query noise).
    resample_scale : float or None
        ``dpbook`` only: scale of the new rho drawn after every ⊤ (``None``: never redrawn).
    value_scale : float or None
        ``standard`` with ``epsilon3 > 0``: scale of the fresh noise on a released ⊤ answer.
    """

    epsilon1: float
    epsilon2: float
    epsilon3: float
    threshold_scale: float
    query_scale: float
    resample_scale: float | None = None
    value_scale: float | None = None


# Each function below is the single place where a variant's scales are written. Arguments:
# eps (total), c, d (query sensitivity Delta), mono (queries monotonic), ratio (eps2/eps1, or
# None for the variants that fix their split), eps3, d2 (threshold sensitivity, generalized).


def _noise_standard(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Lyu, Su & Li 2017 Alg. 7 lines 3, 5, 8; Lap(c*d/eps2) for monotonic queries (Lyu, Su & Li 2017 Thm 4.9).
    e1 = (eps - eps3) / (1.0 + ratio)
    e2 = (eps - eps3) - e1
    query = (c if mono else 2 * c) * d / e2
    value = c * d / eps3 if eps3 > 0 else None
    return SVTNoise(e1, e2, eps3, d / e1, query, None, value)


def _noise_dpbook(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Lyu, Su & Li 2017 Alg. 2 lines 2, 5, 7: rho ~ Lap(c d/e1), nu ~ Lap(2 c d/e1), rho' ~ Lap(c d/e2).
    e1 = eps / 2
    e2 = eps - e1
    return SVTNoise(e1, e2, 0.0, c * d / e1, 2 * c * d / e1, c * d / e2)


def _noise_roth2011(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Lyu, Su & Li 2017 Alg. 3 lines 2, 5 (outputs q_i + nu_i for a ⊤, line 7).
    e1 = eps / 2
    e2 = eps - e1
    return SVTNoise(e1, e2, 0.0, d / e1, c * d / e2)


def _noise_lee_clifton(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Lyu, Su & Li 2017 Alg. 4 lines 2, 5: eps1 = eps/4 and query noise that does not scale with c.
    e1 = eps / 4
    e2 = eps - e1
    return SVTNoise(e1, e2, 0.0, d / e1, d / e2)


def _noise_stoddard(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Lyu, Su & Li 2017 Alg. 5 lines 2, 5: no query noise at all (eps2 is nominal, never used).
    e1 = eps / 2
    e2 = eps - e1
    return SVTNoise(e1, e2, 0.0, d / e1, 0.0)


def _noise_chen2015(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Lyu, Su & Li 2017 Alg. 6 lines 2, 5.
    e1 = eps / 2
    e2 = eps - e1
    return SVTNoise(e1, e2, 0.0, d / e1, d / e2)


def _noise_gptt(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Chen 2018 Alg. 5 lines 1, 2, 4 with f(eps) given by ratio = eps2/eps1. ratio = inf is the
    # eps1 = eps, eps2 = inf instantiation (no query noise) used by the reconstruction attack.
    if math.isinf(ratio):
        return SVTNoise(eps, math.inf, 0.0, d / eps, 0.0)
    e1 = eps / (1.0 + ratio)
    e2 = eps - e1
    return SVTNoise(e1, e2, 0.0, d / e1, d / e2)


def _noise_generalized(eps, c, d, mono, ratio, eps3, d2) -> SVTNoise:
    # Chen 2018 Alg. 8 lines 1, 3: alpha ~ Lap(2(D1+D2)/eps), nu ~ Lap(4c(D1+D2)/eps); the proof
    # (Chen 2018 Thm 7) spends eps/2 on each, which is what epsilon1/epsilon2 report.
    return SVTNoise(eps / 2, eps / 2, 0.0, 2 * (d + d2) / eps, 4 * c * (d + d2) / eps)


def _optimal_ratio(c: int, monotonic: bool) -> float:
    # Lyu, Su & Li 2017 eq. 12: eps1:eps2 = 1:(2c)^(2/3); 1:c^(2/3) for monotonic queries (Lyu, Su & Li 2017 §4.3).
    return float((c if monotonic else 2 * c) ** (2.0 / 3.0))


@dataclass(frozen=True)
class SVTVariant:
    """One SVT variant: where it comes from, what it guarantees and how much noise it adds.

    Attributes
    ----------
    name : str
        Key in :data:`VARIANTS`.
    title : str
        Short human label for widgets.
    source : str
        The algorithm in the source texts.
    private : bool
        True iff the variant is ``epsilon``-DP for the ``epsilon`` it is given.
    guarantee : str
        The guarantee in words, e.g. ``"epsilon-DP"`` or ``"NOT DP for any finite epsilon"``.
    has_cutoff : bool
        Whether it stops after c ⊤ answers.
    emits_values : bool
        Whether a ⊤ is reported as the compared noisy answer q_i + nu_i (``roth2011``).
        ``standard`` emits values only with ``epsilon3 > 0`` (see ``supports_epsilon3``).
    supports_epsilon3 : bool
        Whether numeric outputs with their own budget are available (Lyu, Su & Li 2017 Alg. 7 line 8).
    resamples_threshold : bool
        Whether rho is redrawn after every ⊤ (``dpbook``).
    accepts_ratio : bool
        Whether the ``epsilon1:epsilon2`` split is a parameter; the others fix it and refuse
        a ``ratio`` argument.
    note : str
        Why the variant is (not) private, in one or two sentences.
    """

    name: str
    title: str
    source: str
    private: bool
    guarantee: str
    has_cutoff: bool
    emits_values: bool
    supports_epsilon3: bool
    resamples_threshold: bool
    note: str
    _noise: Callable[..., SVTNoise] = field(repr=False)
    _default_ratio: Callable[[int, bool], float] | None = field(repr=False)
    _loss: Callable[[float, int, bool], float] = field(repr=False)

    @property
    def accepts_ratio(self) -> bool:
        return self._default_ratio is not None

    def default_ratio(self, c: int = 1, monotonic: bool = False) -> float | None:
        """The default ``epsilon2/epsilon1`` (``None`` if the variant fixes its split)."""
        return None if self._default_ratio is None else self._default_ratio(c, monotonic)

    def noise(
        self,
        epsilon: float,
        c: int = 1,
        sensitivity: float = 1.0,
        monotonic: bool = False,
        ratio: float | None = None,
        epsilon3: float = 0.0,
        threshold_sensitivity: float = 0.0,
    ) -> SVTNoise:
        """Budget split and noise scales; arguments as for :func:`sparse_vector` (validated)."""
        params = _check_params(
            self.name, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
        )
        return _noise_of(self, params)

    def privacy_loss(self, epsilon: float, c: int = 1, monotonic: bool = False) -> float:
        """Upper bound on the privacy loss of one run at nominal ``epsilon`` (``inf``: none)."""
        epsilon = check_epsilon(epsilon)
        c = check_positive_int(c, "c", maximum=MAX_CUTOFF)
        return float(self._loss(epsilon, c, bool(monotonic)))


def _inf(eps: float, c: int, mono: bool) -> float:
    return math.inf


def _eps(eps: float, c: int, mono: bool) -> float:
    return eps


def _variant(
    name: str,
    title: str,
    noise: Callable[..., SVTNoise],
    *,
    source: str,
    guarantee: str,
    note: str,
    private: bool = False,
    has_cutoff: bool = True,
    emits_values: bool = False,
    supports_epsilon3: bool = False,
    resamples_threshold: bool = False,
    ratio: Callable[[int, bool], float] | None = None,
    loss: Callable[[float, int, bool], float] | None = None,
) -> SVTVariant:
    # One table row. The defaults are what most variants share: a cutoff, ⊤/⊥ outputs only,
    # one threshold noise, a fixed epsilon1:epsilon2 split; the loss is epsilon for a private
    # variant and unbounded for a broken one unless a finite bound is given.
    return SVTVariant(
        name, title, source, private, guarantee, has_cutoff, emits_values, supports_epsilon3,
        resamples_threshold, note, noise, ratio, loss or (_eps if private else _inf),
    )


_NOT_DP = "NOT DP for any finite epsilon"

VARIANTS: dict[str, SVTVariant] = {
    v.name: v
    for v in (
        _variant(
            "standard", "Standard SVT (Lyu et al.)", _noise_standard, private=True,
            supports_epsilon3=True, ratio=_optimal_ratio,
            source="Lyu, Su & Li 2017 Alg. 1 / Alg. 7, Thm 4.7; monotonic queries Lyu, Su & Li 2017 §4.3 Thm 4.9",
            guarantee="epsilon-DP (epsilon1 + epsilon2 + epsilon3 = epsilon)",
            note="One threshold noise Lap(Δ/ε1) for the whole run and query noise "
            "Lap(2cΔ/ε2) (Lap(cΔ/ε2) for monotonic queries); stops after c ⊤.",
        ),
        _variant(
            "dpbook", "SVT of Dwork & Roth's book", _noise_dpbook, private=True,
            resamples_threshold=True,
            source="Lyu, Su & Li 2017 Alg. 2 (Dwork & Roth 2014)",
            guarantee="epsilon-DP",
            note="Private, but redraws the threshold noise after every ⊤, which forces it to "
            "scale with c (Lap(cΔ/ε1)): much less accurate than standard (Lyu, Su & Li 2017 §3.2, §6).",
        ),
        _variant(
            "roth2011", "Roth 2011 lecture notes (BROKEN)", _noise_roth2011, emits_values=True,
            source="Lyu, Su & Li 2017 Alg. 3 (Roth 2011 lecture notes)",
            guarantee=f"{_NOT_DP} (Lyu, Su & Li 2017 §3.2, Alg. 3)",
            note="Outputs the noisy answer q_i + nu_i of a ⊤ query, which reveals that the "
            "noisy threshold lies below it; the ⊥ answers are then no longer free.",
        ),
        _variant(
            "lee_clifton", "Lee & Clifton 2014 (weaker than claimed)", _noise_lee_clifton,
            loss=lambda eps, c, mono: (1 + (3 if mono else 6) * c) / 4 * eps,
            source="Lyu, Su & Li 2017 Alg. 4 (Lee & Clifton 2014)",
            guarantee="only ((1+6c)/4)·epsilon-DP (((1+3c)/4)·epsilon for monotonic "
            "queries), NOT epsilon-DP",
            note="Query noise Lap(Δ/ε2) does not scale with c; each ⊤ costs 2ε2 (ε2 when "
            "monotonic) instead of 2ε2/c (Lyu, Su & Li 2017 §3.2).",
        ),
        _variant(
            "stoddard", "Stoddard et al. 2014 (BROKEN)", _noise_stoddard, has_cutoff=False,
            source="Lyu, Su & Li 2017 Alg. 5 (Stoddard et al. 2014)",
            guarantee=f"{_NOT_DP} (Lyu, Su & Li 2017 Thm 3.5)",
            note="No query noise and no cutoff: ⟨⊥,⊤⟩ has positive probability on "
            "q(D)=⟨0,1⟩ and probability 0 on q(D')=⟨1,0⟩ (Lyu, Su & Li 2017 Thm 3.5).",
        ),
        _variant(
            "chen2015", "Chen et al. 2015 (BROKEN)", _noise_chen2015, has_cutoff=False,
            source="Lyu, Su & Li 2017 Alg. 6 (Chen et al. 2015)",
            guarantee=f"{_NOT_DP} (Lyu, Su & Li 2017 §9.2)",
            note="No cutoff: unboundedly many ⊤ answers at a fixed accuracy would be privacy "
            "'for free'; the proof wrongly factorises the integral over rho (Lyu, Su & Li 2017 §3.2).",
        ),
        _variant(
            "gptt", "Generalized Private Threshold Testing (BROKEN)", _noise_gptt,
            has_cutoff=False, ratio=lambda c, mono: 1.0,
            source="Chen 2018 Alg. 5 (GPTT); Lyu, Su & Li 2017 §3.3, §9.1-9.3",
            guarantee=f"{_NOT_DP} (Lyu, Su & Li 2017 §9.1-9.2; Chen 2018 Thm 4's proof of "
            "this is itself flawed, Lyu, Su & Li 2017 §3.3 / §9.3)",
            note="Lap(Δ/ε1) threshold, Lap(Δ/ε2) queries, no cutoff; generalises Alg. 4-6. "
            "It is not private (Lyu, Su & Li 2017 §9.1-9.2), but Chen 2018 Thm 4's constructive proof of that is "
            "wrong: the same argument would 'prove' Alg. 1 non-private (Lyu, Su & Li 2017 §9.3).",
        ),
        _variant(
            "generalized", "Generalized SVT (data-dependent thresholds)", _noise_generalized,
            private=True,
            source="Chen 2018 Alg. 8, Thm 7 (count set once before the loop, an erratum of the text)",
            guarantee="epsilon-DP",
            note="Thresholds θ_i(D) may depend on the data (sensitivity Δ2); threshold noise "
            "Lap(2(Δ1+Δ2)/ε), query noise Lap(4c(Δ1+Δ2)/ε), stops after c ⊤.",
        ),
    )
}
"""Every SVT variant by name; the one place their sources, guarantees and scales live."""


def default_ratio(c: int = 1, monotonic: bool = False) -> float:
    """The optimal ``epsilon2/epsilon1`` of Lyu, Su & Li 2017 eq. 12: ``(2c)^(2/3)``, or ``c^(2/3)`` if monotonic."""
    return _optimal_ratio(check_positive_int(c, "c", maximum=MAX_CUTOFF),
                          check_bool(monotonic, "monotonic"))


# --------------------------------------------------------------------------------------------
# Validation (at the boundary, before any noise is drawn)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Params:
    variant: str
    epsilon: float
    c: int
    sensitivity: float
    monotonic: bool
    ratio: float | None
    epsilon3: float
    threshold_sensitivity: float


def _check_variant(variant: str) -> SVTVariant:
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    return VARIANTS[variant]


def _check_params(
    variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
) -> _Params:
    spec = _check_variant(variant)
    epsilon = check_epsilon(epsilon)
    c = check_positive_int(c, "c", maximum=MAX_CUTOFF)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, Real):
        raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity!r}")
    sensitivity = check_positive(sensitivity, "sensitivity")
    if not isinstance(monotonic, bool | np.bool_):
        raise ValueError(f"monotonic must be True or False, got {monotonic!r}")
    monotonic = bool(monotonic)
    threshold_sensitivity = check_nonnegative(threshold_sensitivity, "threshold_sensitivity")
    if threshold_sensitivity > 0 and spec.name != "generalized":
        raise ValueError(
            f"threshold_sensitivity > 0 (data-dependent thresholds) needs variant='generalized' "
            f"(Chen 2018 Alg. 8); variant {spec.name!r} assumes public thresholds, so pass 0"
        )
    epsilon3 = check_epsilon(epsilon3, "epsilon3", allow_zero=True)
    if epsilon3 > 0 and not spec.supports_epsilon3:
        raise ValueError(
            f"epsilon3 > 0 (numeric outputs, Lyu, Su & Li 2017 Alg. 7) is only available for "
            f"variant='standard', not {spec.name!r}"
        )
    if epsilon3 >= epsilon:
        raise ValueError(
            f"epsilon3 must be < epsilon (it is taken out of the total {epsilon}), got {epsilon3}"
        )
    if ratio is None:
        ratio = spec.default_ratio(c, monotonic)
    elif not spec.accepts_ratio:
        raise ValueError(
            f"ratio cannot be set for variant {spec.name!r}: its source fixes the "
            f"epsilon1:epsilon2 split; ratio is accepted by 'standard' and 'gptt' only"
        )
    else:
        bad = isinstance(ratio, bool) or not isinstance(ratio, Real) or not float(ratio) > 0
        infinite_ok = spec.name == "gptt"
        if bad or math.isnan(float(ratio)) or (math.isinf(float(ratio)) and not infinite_ok):
            accepted = "a number > 0 (math.inf allowed: no query noise)" if infinite_ok else (
                "a finite number > 0"
            )
            raise ValueError(f"ratio (= epsilon2/epsilon1) must be {accepted}, got {ratio!r}")
        ratio = float(ratio)
    return _Params(
        spec.name, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
    )


def _check_answers_and_threshold(answers, threshold) -> tuple[np.ndarray, np.ndarray]:
    answers = check_finite_array(answers, "answers")
    thresholds = check_finite_array(threshold, "threshold", ndim=None)
    if thresholds.ndim == 0:
        thresholds = np.full(answers.shape, float(thresholds))
    elif thresholds.shape != answers.shape:
        raise ValueError(
            f"threshold must be a scalar or one value per query ({answers.size}), "
            f"got shape {thresholds.shape}"
        )
    return answers, thresholds


def _noise_of(spec: SVTVariant, p: _Params) -> SVTNoise:
    return spec._noise(
        p.epsilon, p.c, p.sensitivity, p.monotonic, p.ratio, p.epsilon3, p.threshold_sensitivity
    )


class _Units:
    """Where an SVT run compares its noisy answers with its noisy threshold.

    Outside :func:`~.mechanisms.floating_point_safe` (teaching, previews): doubles, the noise
    from :func:`~.mechanisms.laplace` (the arithmetic of the textbook, bit for bit as
    before). Inside (analyst releases): int64 steps of one
    :class:`~.mechanisms.ComparisonGrid` for the answers, the thresholds and every noise, so
    that each comparison is exact and the rounding of real answers is paid for by widening
    the scales (the grid's Notes); decided once, when the run starts.
    """

    def __init__(self, noise: SVTNoise, sensitivity: float, threshold_sensitivity: float = 0.0
                 ) -> None:
        self.grid: ComparisonGrid | None = None
        if is_floating_point_safe():
            sens = [sensitivity] + ([threshold_sensitivity] if threshold_sensitivity else [])
            scales = [noise.threshold_scale, noise.query_scale, noise.resample_scale or 0.0]
            self.grid = ComparisonGrid.for_sensitivities(*sens, largest_scale=max(scales))

    def of(self, values):
        """Answers or thresholds in comparison units."""
        return values if self.grid is None else self.grid.steps(values)

    def noise(self, scale: float, size=None, *, rng: np.random.Generator):
        """Laplace(``scale``) noise in comparison units (a float when ``size`` is None)."""
        if self.grid is None:
            draw = laplace(scale, size, rng=rng)
            return float(draw) if size is None else draw
        return self.grid.noise(scale, size, rng=rng)

    def values(self, units) -> np.ndarray:
        """Comparison units back to doubles (for the result's secret fields and emitted values)."""
        return units if self.grid is None else self.grid.values(units)


# --------------------------------------------------------------------------------------------
# One run
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SVTResult:
    """The output of one SVT run, with everything a view needs to draw it.

    Attributes
    ----------
    outcomes : numpy.ndarray of bool
        One entry per query *examined*: True for ⊤, False for ⊥. Shorter than the input when
        the run aborted at its cutoff.
    values : numpy.ndarray of float
        Numeric outputs, same length: the noisy answer q_i + nu_i of ⊤ queries for
        ``roth2011``, q_i + Lap(cΔ/epsilon3) for ``standard`` with ``epsilon3 > 0``; NaN elsewhere.
    positives : numpy.ndarray of int
        Indices (into the input) of the ⊤ queries.
    n_queries, n_examined : int
        Number of queries given and examined.
    stopped : bool
        Whether the run aborted at its cutoff (the c-th ⊤).
    variant, private, guarantee, privacy_loss :
        The variant, whether it is epsilon-DP, its guarantee in words and the bound on the
        privacy loss actually incurred (``inf`` for the broken variants).
    epsilon, epsilon1, epsilon2, epsilon3 : float
        Total budget and its split.
    threshold_scale, query_scale, resample_scale, value_scale : float or None
        The Laplace scales used (see :class:`SVTNoise`).
    c, sensitivity, monotonic, ratio, threshold_sensitivity :
        The parameters of the run.
    noisy_threshold : numpy.ndarray of float
        T_i + rho in force when query i was examined (``dpbook`` redraws rho after each ⊤).
        SECRET internal state: never show or release it in analyst mode — knowing the noisy
        threshold voids the guarantee. For teaching views only.
    noisy_answers : numpy.ndarray of float
        q_i + nu_i as compared against the noisy threshold. SECRET, as above.
    """

    outcomes: np.ndarray
    values: np.ndarray
    positives: np.ndarray
    n_queries: int
    n_examined: int
    stopped: bool
    variant: str
    private: bool
    guarantee: str
    privacy_loss: float
    epsilon: float
    epsilon1: float
    epsilon2: float
    epsilon3: float
    threshold_scale: float
    query_scale: float
    resample_scale: float | None
    value_scale: float | None
    c: int
    sensitivity: float
    monotonic: bool
    ratio: float | None
    threshold_sensitivity: float
    noisy_threshold: np.ndarray = field(repr=False)
    noisy_answers: np.ndarray = field(repr=False)

    @property
    def examined(self) -> int:
        """Number of queries examined (alias of ``n_examined``)."""
        return self.n_examined


def _first_at_or_above(values: np.ndarray, bars: np.ndarray, offset: float, start: int) -> int:
    """Index of the first ``i >= start`` with ``values[i] >= bars[i] + offset``, or -1.

    Scans windows of doubling length so that a hit close to ``start`` costs little.
    """
    width = 64
    while start < values.size:
        stop = min(start + width, values.size)
        hit = np.flatnonzero(values[start:stop] >= bars[start:stop] + offset)
        if hit.size:
            return start + int(hit[0])
        start, width = stop, 2 * width
    return -1


def _plan(answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
          threshold_sensitivity):
    """Everything an SVT run decides before it draws: the checked parameters, the variant,
    its noise scales and the checked answers and thresholds."""
    p = _check_params(
        variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
    )
    answers, thresholds = _check_answers_and_threshold(answers, threshold)
    spec = VARIANTS[p.variant]
    return p, spec, _noise_of(spec, p), answers, thresholds


def sparse_vector(
    answers,
    threshold,
    epsilon: float,
    variant: str = "standard",
    c: int = 1,
    sensitivity: float = 1.0,
    monotonic: bool = False,
    ratio: float | None = None,
    epsilon3: float = 0.0,
    rng: np.random.Generator | None = None,
    *,
    threshold_sensitivity: float = 0.0,
) -> SVTResult:
    """Run one SVT variant over a vector of query answers.

    Parameters
    ----------
    answers : array_like, 1-D
        The true answers q_i(D), in the order the queries are examined.
    threshold : float or array_like
        The public threshold T, or one T_i per query (Lyu, Su & Li 2017 Alg. 1 and 6; testing q_i against
        T_i is the same as testing q_i - T_i against 0, Lyu, Su & Li 2017 §3). For ``generalized`` these are
        the data-dependent thresholds θ_i(D).
    epsilon : float
        Total privacy budget (> 0). For the broken variants this is only the nominal budget;
        see ``result.privacy_loss``.
    variant : str
        A key of :data:`VARIANTS`: ``standard``, ``dpbook``, ``roth2011``, ``lee_clifton``,
        ``stoddard``, ``chen2015``, ``gptt``, ``generalized``.
    c : int
        Cutoff: the run aborts after the c-th ⊤ (variants with ``has_cutoff``); also enters
        the noise scales.
    sensitivity : float
        Δ, the largest change of any q_i between neighbours (Δ1 for ``generalized``), > 0.
    monotonic : bool
        Promise that all queries move in the same direction between neighbours (e.g. counts
        under add/remove-one). Only ``standard`` uses it to halve its query noise (Lyu, Su & Li 2017 Thm 4.9)
        and ``lee_clifton`` to report its smaller loss; the others are unaffected.
    ratio : float, optional
        ``epsilon2/epsilon1``. ``standard``: default (2c)^(2/3), or c^(2/3) when monotonic
        (Lyu, Su & Li 2017 eq. 12, §4.3). ``gptt``: default 1; ``math.inf`` means epsilon1 = epsilon and no
        query noise (the instantiation attacked in Chen 2018 Alg. 6). The other variants fix their
        split and raise if ``ratio`` is given.
    epsilon3 : float
        ``standard`` only: the part of ``epsilon`` spent on releasing q_i + Lap(cΔ/epsilon3)
        for ⊤ queries (Lyu, Su & Li 2017 Alg. 7 line 8); ``epsilon1 + epsilon2 = epsilon - epsilon3``.
    rng : numpy.random.Generator, optional
        Source of randomness (default: a fresh unseeded generator).
    threshold_sensitivity : float
        ``generalized`` only: Δ2, the sensitivity of the thresholds θ_i(D).

    Returns
    -------
    SVTResult
        Outcomes per examined query, numeric outputs, budget split, scales, and (marked
        secret) the noisy threshold.

    Raises
    ------
    ValueError
        Unknown variant; ``epsilon`` not finite and > 0; NaN/inf or non-1-D ``answers``;
        ``threshold`` non-finite or of the wrong length; ``c < 1``; ``sensitivity <= 0``;
        bad or forbidden ``ratio``; ``epsilon3`` negative, ``>= epsilon`` or used with a
        variant other than ``standard``; ``threshold_sensitivity > 0`` outside
        ``generalized``. All checked before any noise is drawn.
    TypeError
        ``rng`` is not a ``numpy.random.Generator``.

    Notes
    -----
    Privacy (``standard``): the ⊥ answers cost nothing beyond the threshold noise (epsilon1)
    and each ⊤ costs epsilon2/c, so c ⊤ cost epsilon1 + epsilon2; numeric outputs add epsilon3.
    Neighbours: the proofs hold for any neighbour relation under which every query has
    sensitivity Δ (for counts: 1 under add/remove-one, monotonic; replace-one is not monotonic).

    The broken variants are implemented faithfully to be shown failing: ``roth2011``,
    ``stoddard``, ``chen2015`` and ``gptt`` are NOT differentially private for any finite
    epsilon, and ``lee_clifton`` is only ((1+6c)/4)·epsilon-DP. Never use them on
    confidential data.

    The vectorised implementation draws query noise for every query, including those after
    the cutoff; these draws are discarded unseen and do not affect privacy.

    Floating point: inside :func:`~.mechanisms.floating_point_safe` (analyst releases) the
    answers and thresholds are rounded to the power-of-two grid of a
    :class:`~.mechanisms.ComparisonGrid`, every noise is discrete Laplace in grid steps with
    its scale widened by about 2**-20 to pay for the rounding, and every comparison is
    between int64 steps, exactly (the grid's Notes); ``noisy_answers`` and
    ``noisy_threshold`` are then grid values. Outside, the textbook arithmetic on doubles.

    References
    ----------
    Lyu, Su & Li 2017 Alg. 1-7 (Fig. 1-2), Thm 4.7, §4.2 eq. 12, §4.3 Thm 4.9; Chen 2018 Alg. 5 (GPTT), Alg. 8
    and Thm 7 (generalized SVT).
    """
    p, spec, noise, answers, thresholds = _plan(
        answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
        threshold_sensitivity,
    )
    rng = check_rng(rng)
    n = answers.size
    units = _Units(noise, p.sensitivity, p.threshold_sensitivity)
    bars = units.of(thresholds)

    rho = units.noise(noise.threshold_scale, rng=rng)
    noisy_answers = units.of(answers) + units.noise(noise.query_scale, n, rng=rng)
    outcomes = np.zeros(n, dtype=bool)
    noisy_threshold = np.empty(n, dtype=noisy_answers.dtype)
    stopped = False

    if spec.resamples_threshold:
        # Lyu, Su & Li 2017 Alg. 2: find the first query above the current noisy threshold, redraw rho
        # (line 7), continue: at most c vectorised steps.
        start, count = 0, 0
        while start < n:
            first = _first_at_or_above(noisy_answers, bars, rho, start)
            if first < 0:
                noisy_threshold[start:] = bars[start:] + rho
                start = n
                break
            stop = first + 1
            noisy_threshold[start:stop] = bars[start:stop] + rho
            outcomes[stop - 1] = True
            count += 1
            start = stop
            if count >= p.c:  # line 8
                stopped = True
                break
            rho = units.noise(noise.resample_scale, rng=rng)
        examined = start
    else:
        noisy_threshold[:] = bars + rho
        outcomes[:] = noisy_answers >= noisy_threshold
        examined = n
        if spec.has_cutoff:
            tops = np.flatnonzero(outcomes)
            if tops.size >= p.c:  # abort right after the c-th ⊤ (Lyu, Su & Li 2017 Alg. 1 line 8)
                examined = int(tops[p.c - 1]) + 1
                stopped = True

    outcomes = outcomes[:examined]
    positives = np.flatnonzero(outcomes)
    values = np.full(examined, np.nan)
    if spec.emits_values:
        # Lyu, Su & Li 2017 Alg. 3 line 7 (the leak)
        values[positives] = units.values(noisy_answers[positives])
    elif noise.value_scale is not None:
        # Lyu, Su & Li 2017 Alg. 7 line 8: fresh Laplace noise, its own budget epsilon3.
        # Up to c released answers, each moving by at most Δ: L1 cΔ over c entries
        # (floating-point safe inside floating_point_safe(), Mironov 2012).
        values[positives] = laplace_reals(
            answers[positives], p.c * p.sensitivity, noise.epsilon3, rng=rng,
            scale=noise.value_scale, max_changed=p.c,
        )

    return SVTResult(
        outcomes=_readonly(outcomes),
        values=_readonly(values),
        positives=_readonly(positives),
        n_queries=n,
        n_examined=examined,
        stopped=stopped,
        variant=spec.name,
        private=spec.private,
        guarantee=spec.guarantee,
        privacy_loss=spec.privacy_loss(p.epsilon, p.c, p.monotonic),
        epsilon=p.epsilon,
        epsilon1=noise.epsilon1,
        epsilon2=noise.epsilon2,
        epsilon3=noise.epsilon3,
        threshold_scale=noise.threshold_scale,
        query_scale=noise.query_scale,
        resample_scale=noise.resample_scale,
        value_scale=noise.value_scale,
        c=p.c,
        sensitivity=p.sensitivity,
        monotonic=p.monotonic,
        ratio=p.ratio,
        threshold_sensitivity=p.threshold_sensitivity,
        noisy_threshold=_readonly(units.values(noisy_threshold[:examined])),
        noisy_answers=_readonly(units.values(noisy_answers[:examined])),
    )


# --------------------------------------------------------------------------------------------
# Many runs at once (for audits)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SVTTrials:
    """Independent runs of one SVT configuration on the same answers.

    Attributes
    ----------
    outcomes : numpy.ndarray of bool, shape (trials, n)
        ⊤ per trial and query; False for queries after the run stopped.
    examined : numpy.ndarray of int, shape (trials,)
        Number of queries examined in each trial.
    values : numpy.ndarray of float, shape (trials, n)
        Numeric outputs as in :class:`SVTResult`; NaN where there is none.
    variant, epsilon, noise, privacy_loss :
        The configuration, its :class:`SVTNoise` and the bound on the privacy loss.
    """

    outcomes: np.ndarray
    examined: np.ndarray
    values: np.ndarray
    variant: str
    epsilon: float
    noise: SVTNoise
    privacy_loss: float

    @property
    def trials(self) -> int:
        return int(self.outcomes.shape[0])


def sparse_vector_trials(
    answers,
    threshold,
    epsilon: float,
    variant: str = "standard",
    c: int = 1,
    sensitivity: float = 1.0,
    monotonic: bool = False,
    ratio: float | None = None,
    trials: int = 1000,
    rng: np.random.Generator | None = None,
    *,
    threshold_sensitivity: float = 0.0,
    epsilon3: float = 0.0,
) -> SVTTrials:
    """Simulate ``trials`` independent runs of :func:`sparse_vector`, vectorised over trials.

    Parameters
    ----------
    answers, threshold, epsilon, variant, c, sensitivity, monotonic, ratio, epsilon3, rng,
    threshold_sensitivity :
        As for :func:`sparse_vector` (same validation, same scales from :data:`VARIANTS`).
    trials : int
        Number of independent runs (>= 1).

    Returns
    -------
    SVTTrials
        ``outcomes`` (trials, n) with False after a stop, ``examined`` (trials,), ``values``.

    Raises
    ------
    ValueError, TypeError
        As for :func:`sparse_vector`; ``trials < 1``.

    Notes
    -----
    Each row has the distribution of one :func:`sparse_vector` run (the privacy argument is
    that of the variant; see :func:`sparse_vector`). Memory is O(trials × n): meant for audits
    with few queries and many trials. ``dpbook`` loops over queries (vectorised over trials),
    because its threshold changes after each ⊤.

    References
    ----------
    Lyu, Su & Li 2017 Alg. 1-7; Chen 2018 Alg. 5, Alg. 8.
    """
    p, spec, noise, answers, thresholds = _plan(
        answers, threshold, variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3,
        threshold_sensitivity,
    )
    trials = check_positive_int(trials, "trials", maximum=MAX_TRIALS)
    if trials * answers.size > MAX_DRAWS:
        raise ValueError(
            f"trials x len(answers) must be at most MAX_DRAWS = {MAX_DRAWS} noise draws; "
            f"lower trials"
        )
    rng = check_rng(rng)
    n = answers.size
    units = _Units(noise, p.sensitivity, p.threshold_sensitivity)
    thresholds = units.of(thresholds)

    rho = units.noise(noise.threshold_scale, trials, rng=rng)
    noisy_answers = units.of(answers) + units.noise(noise.query_scale, (trials, n), rng=rng)

    if spec.resamples_threshold:
        outcomes = np.zeros((trials, n), dtype=bool)
        count = np.zeros(trials, dtype=np.int64)
        examined = np.zeros(trials, dtype=np.int64)
        for i in range(n):
            active = count < p.c
            top = active & (noisy_answers[:, i] >= thresholds[i] + rho)
            outcomes[:, i] = top
            examined += active
            count += top
            n_top = int(top.sum())
            if n_top:
                rho[top] = units.noise(noise.resample_scale, n_top, rng=rng)
    else:
        outcomes = noisy_answers >= thresholds + rho[:, None]
        if spec.has_cutoff:
            before = np.cumsum(outcomes, axis=1) - outcomes  # ⊤'s strictly before query i
            live = before < p.c
            outcomes &= live
            examined = live.sum(axis=1)
        else:
            examined = np.full(trials, n, dtype=np.int64)

    values = np.full((trials, n), np.nan)
    if spec.emits_values:
        values[outcomes] = units.values(noisy_answers[outcomes])
    elif noise.value_scale is not None:
        rows, cols = np.nonzero(outcomes)
        # Each trial releases at most c answers (L1 cΔ): the grid is that of one trial.
        values[rows, cols] = laplace_reals(
            answers[cols], p.c * p.sensitivity, noise.epsilon3, rng=rng,
            scale=noise.value_scale, max_changed=p.c,
        )

    return SVTTrials(
        outcomes=outcomes,
        examined=np.asarray(examined, dtype=np.int64),
        values=values,
        variant=spec.name,
        epsilon=p.epsilon,
        noise=noise,
        privacy_loss=spec.privacy_loss(p.epsilon, p.c, p.monotonic),
    )


# --------------------------------------------------------------------------------------------
# Interactive form
# --------------------------------------------------------------------------------------------


class SVTExhausted(RuntimeError):
    """Raised when an interactive SVT has already given its c ⊤ answers."""


@dataclass(frozen=True)
class SVTAnswer:
    """One interactive answer: truthy iff ⊤; ``value`` is the numeric output or NaN."""

    index: int
    above: bool
    value: float = math.nan

    def __bool__(self) -> bool:
        return self.above


class SparseVector:
    """Interactive SVT: answers one query at a time, refuses once c ⊤ have been given.

    The threshold noise is drawn at construction; each :meth:`query` draws fresh query noise.

    Parameters
    ----------
    threshold : float
        Default threshold T (a query may pass its own T_i; for ``generalized`` θ_i(D)).
    epsilon, variant, c, sensitivity, monotonic, ratio, epsilon3, rng, threshold_sensitivity :
        As for :func:`sparse_vector`.

    Attributes
    ----------
    positives : int
        Number of ⊤ answers given so far.
    remaining : int or float
        ⊤ answers still available (``math.inf`` for variants without cutoff).
    history : tuple of SVTAnswer
        Every answer given, in order.

    Raises
    ------
    ValueError, TypeError
        As for :func:`sparse_vector`, at construction or per query.
    SVTExhausted
        From :meth:`query` once c ⊤ have been given (variants with a cutoff).

    Notes
    -----
    Privacy and neighbours as for :func:`sparse_vector`: the whole interaction costs
    ``privacy_loss`` however many ⊥ answers it gives. The budget is the session's to charge
    (at construction); this object only enforces the cutoff.

    References
    ----------
    Lyu, Su & Li 2017 Alg. 1 / Alg. 7 (interactive stream of queries), Alg. 2; Chen 2018 Alg. 8.
    """

    def __init__(
        self,
        threshold: float,
        epsilon: float,
        variant: str = "standard",
        c: int = 1,
        sensitivity: float = 1.0,
        monotonic: bool = False,
        ratio: float | None = None,
        epsilon3: float = 0.0,
        rng: np.random.Generator | None = None,
        *,
        threshold_sensitivity: float = 0.0,
    ) -> None:
        p = _check_params(
            variant, epsilon, c, sensitivity, monotonic, ratio, epsilon3, threshold_sensitivity
        )
        self.threshold = self._check_scalar(threshold, "threshold")
        self._rng = check_rng(rng)
        self._params = p
        self.spec = VARIANTS[p.variant]
        self.noise = _noise_of(self.spec, p)
        # Comparisons on a grid inside floating_point_safe(), decided here for the whole run.
        self._units = _Units(self.noise, p.sensitivity, p.threshold_sensitivity)
        self._rho = self._units.noise(self.noise.threshold_scale, rng=self._rng)
        self._history: list[SVTAnswer] = []
        self._noisy_thresholds: list[float] = []
        self._positives = 0

    @staticmethod
    def _check_scalar(value, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        return float(value)

    @property
    def variant(self) -> str:
        return self.spec.name

    @property
    def epsilon(self) -> float:
        return self._params.epsilon

    @property
    def c(self) -> int:
        return self._params.c

    @property
    def privacy_loss(self) -> float:
        p = self._params
        return self.spec.privacy_loss(p.epsilon, p.c, p.monotonic)

    @property
    def positives(self) -> int:
        return self._positives

    @property
    def remaining(self) -> int | float:
        return self.c - self._positives if self.spec.has_cutoff else math.inf

    @property
    def exhausted(self) -> bool:
        return self.spec.has_cutoff and self._positives >= self.c

    @property
    def history(self) -> tuple[SVTAnswer, ...]:
        return tuple(self._history)

    @property
    def outcomes(self) -> np.ndarray:
        return np.array([a.above for a in self._history], dtype=bool)

    @property
    def secret_noisy_thresholds(self) -> np.ndarray:
        """T_i + rho in force at each query. SECRET: teaching mode only, never release."""
        return np.array(self._noisy_thresholds)

    def query(self, answer: float, threshold: float | None = None) -> SVTAnswer:
        """Test one query answer q_i(D) against the threshold; returns ⊤ (truthy) or ⊥.

        Raises
        ------
        SVTExhausted
            If c ⊤ have already been given.
        ValueError
            If ``answer`` or ``threshold`` is not a finite number.
        """
        if self.exhausted:
            raise SVTExhausted(
                f"this {self.variant!r} SVT has given its c={self.c} ⊤ answers and is spent; "
                f"start a new SparseVector with fresh budget to ask more"
            )
        answer = self._check_scalar(answer, "answer")
        t = self.threshold if threshold is None else self._check_scalar(threshold, "threshold")
        units = self._units
        noisy = units.of(answer) + units.noise(self.noise.query_scale, rng=self._rng)
        bar = units.of(t) + self._rho
        above = bool(noisy >= bar)
        value = math.nan
        if above:
            self._positives += 1
            if self.spec.emits_values:
                value = float(units.values(noisy))  # Lyu, Su & Li 2017 Alg. 3 line 7 (the leak)
            elif self.noise.value_scale is not None:
                value = float(laplace_reals(
                    answer, self.c * self._params.sensitivity, self.noise.epsilon3,
                    rng=self._rng, scale=self.noise.value_scale, max_changed=self.c,
                ))
            if self.spec.resamples_threshold and not self.exhausted:
                self._rho = units.noise(self.noise.resample_scale, rng=self._rng)
        result = SVTAnswer(len(self._history), above, value)
        self._history.append(result)
        self._noisy_thresholds.append(float(units.values(bar)))
        return result


# --------------------------------------------------------------------------------------------
# Non-interactive top-c selection and its metrics (Lyu, Su & Li 2017 §5-6)
# --------------------------------------------------------------------------------------------


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
    """
    scores = check_finite_array(scores, "scores")
    c = check_positive_int(c, "c")
    if c > scores.size:
        raise ValueError(f"c must be at most the number of items ({scores.size}), got {c}")
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    monotonic = check_bool(monotonic, "monotonic")
    if not isinstance(method, str) or method not in ("em", "svt_retr"):
        raise ValueError(f"method must be 'em' or 'svt_retr', got {method!r}")
    increment = check_nonnegative(increment, "increment")
    max_passes = check_positive_int(max_passes, "max_passes", maximum=MAX_PASSES)
    if method == "em":
        if threshold is not None:
            raise ValueError("threshold is only used by method='svt_retr'; pass None for 'em'")
        rng = check_rng(rng)
        return exponential_mechanism(
            scores, epsilon, sensitivity, k=c, monotonic=monotonic, rng=rng
        )
    if threshold is None:
        raise ValueError(
            "threshold is required for method='svt_retr' and must be public (Lyu, Su & Li 2017 §6 uses the "
            "mean of the c-th and (c+1)-th scores)"
        )
    _, thresholds = _check_answers_and_threshold(scores, threshold)
    rng = check_rng(rng)

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
    scores = check_finite_array(scores, "scores")
    c = check_positive_int(c, "c")
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
    Evaluation metric on the true scores (not a private release).

    References
    ----------
    Lyu, Su & Li 2017 §6 ("Score Error Rate").
    """
    sel, scores, c = _check_selection(selected, scores, c)
    top = np.partition(scores, scores.size - c)[scores.size - c :]
    total = float(top.sum())
    if total == 0:
        raise ValueError("score_error_rate is undefined when the top-c scores sum to 0")
    return 1.0 - float(scores[sel].sum()) / total
