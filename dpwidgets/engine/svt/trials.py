"""Many independent SVT runs at once, vectorised over trials, for the privacy audits.

:func:`sparse_vector_trials` -> :class:`SVTTrials`: each row has the distribution of one
:func:`~dpwidgets.engine.svt.run.sparse_vector` run, with the same checks and the same scales
(the audit in :mod:`dpwidgets.engine.audit` draws its samples here).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_positive_int, check_rng
from ..mechanisms import MAX_DRAWS, laplace_reals
from .run import _plan
from .variants import SVTNoise, _Units

__all__ = ["SVTTrials", "sparse_vector_trials", "MAX_TRIALS"]

#: The most runs :func:`sparse_vector_trials` simulates; also ``trials * len(answers)`` must
#: stay within :data:`.mechanisms.MAX_DRAWS`.
MAX_TRIALS = 10**7


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
