"""The SVT variant table and the checks of its parameters.

One :class:`SVTVariant` per name in :data:`VARIANTS` (source, guarantee, noise scales, each
variant's scales written once in its ``_noise_*`` function), and the validation every SVT here
runs at the boundary, before any noise is drawn. They share a module because each needs the
other: :meth:`SVTVariant.noise` validates its arguments, and the validation looks the variant
up in the table. ``_Units`` (where a run compares its noisy answers with its noisy threshold)
is decided from the checked noise scales, so it lives here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from ..mechanisms import ComparisonGrid, is_floating_point_safe, laplace
from ..validation import (
    check_bool,
    check_epsilon,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
)

__all__ = ["VARIANTS", "SVTVariant", "SVTNoise", "default_ratio", "MAX_CUTOFF"]

#: The largest cutoff ``c`` (number of ⊤ answers) any SVT here accepts.
MAX_CUTOFF = 10**7

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
    """The optimal ``epsilon2/epsilon1`` of Lyu, Su & Li 2017 eq. 12: ``(2c)^(2/3)``, or ``c^(2/3)`` if monotonic.

    Examples
    --------
    >>> from dpwidgets.engine.svt import default_ratio
    >>> round(default_ratio(1), 3), round(default_ratio(4, monotonic=True), 3)
    (1.587, 2.52)
    """
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
