"""The interactive SVT: :class:`SparseVector` answers one query at a time and refuses after c ⊤.

The threshold noise is drawn once, at construction; every query draws fresh noise. The budget
is the session's to charge; this object only enforces the cutoff (:exc:`SVTExhausted`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from .._validation import check_rng
from ..mechanisms import laplace_reals
from .variants import VARIANTS, _check_params, _noise_of, _Units

__all__ = ["SVTAnswer", "SVTExhausted", "SparseVector"]


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
