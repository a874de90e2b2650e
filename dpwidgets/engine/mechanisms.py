"""Basic mechanisms: the one Laplace sampler of the package and the exponential mechanism.

Every mechanism in ``dpwidgets`` that adds Laplace noise draws it through :func:`laplace`,
so there is exactly one place where Laplace noise is generated.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_epsilon, check_finite_array, check_positive_int, check_rng

__all__ = ["laplace", "laplace_mechanism", "exponential_mechanism"]


def laplace(scale, size=None, *, rng: np.random.Generator) -> np.ndarray | float:
    """Draw Laplace(0, ``scale``) noise, vectorised.

    Parameters
    ----------
    scale : float or array_like
        The scale b of the density ``exp(-|x|/b) / (2b)``; ``np.inf`` is not allowed.
        An array broadcasts against ``size``. A scale of 0 returns exact zeros (used by the
        broken SVT variant of Stoddard et al., which adds no query noise).
    size : int or tuple of ints, optional
        Output shape, as for :meth:`numpy.random.Generator.laplace`.
    rng : numpy.random.Generator
        The source of randomness; required, so every caller states where its noise comes from.
    """
    scale = np.asarray(scale, dtype=float)
    if np.any(~np.isfinite(scale)) or np.any(scale < 0):
        raise ValueError(f"scale must be finite and >= 0, got {scale!r}")
    return rng.laplace(0.0, scale, size)


def laplace_mechanism(
    values,
    epsilon: float,
    sensitivity: float = 1.0,
    *,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Release ``values`` + Lap(sensitivity/epsilon) noise per entry.

    Guarantee: ``epsilon``-DP when ``sensitivity`` bounds the L1 change of the whole vector
    ``values`` between neighbouring datasets (for a histogram: 1 under add/remove-one, 2 under
    replace-one).

    References: Dwork, McSherry, Nissim, Smith 2006; 001 §2.
    """
    values = check_finite_array(values, "values", ndim=None)
    epsilon = check_epsilon(epsilon)
    sensitivity = check_epsilon(sensitivity, "sensitivity")
    rng = check_rng(rng)
    return values + laplace(sensitivity / epsilon, values.shape, rng=rng)


def exponential_mechanism(
    qualities,
    epsilon: float,
    sensitivity: float = 1.0,
    *,
    k: int = 1,
    monotonic: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Select ``k`` distinct indices by the exponential mechanism, ``epsilon/k`` per round.

    Each round picks among the not-yet-selected candidates with probability proportional to
    ``exp(eps_r * q / (2 * sensitivity))`` (``exp(eps_r * q / sensitivity)`` when the quality is
    monotonic), where ``eps_r = epsilon / k``; this is 001 §5's "EM run c times without
    replacement, each round with epsilon/c". Rather than k sequential draws, the rounds are
    drawn at once with the Gumbel-top-k trick: adding independent Gumbel noise to the
    log-weights and taking the k largest gives exactly the distribution (order included) of
    sequential sampling without replacement (Kool, van Hoof, Welling 2019, Thm. 1).

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
        Whether all qualities move in the same direction between neighbours (001 §4.3).

    Returns
    -------
    numpy.ndarray of int
        The selected indices, in selection order.

    References
    ----------
    McSherry and Talwar 2007; 001 §5.
    """
    qualities = check_finite_array(qualities, "qualities")
    epsilon = check_epsilon(epsilon)
    sensitivity = check_epsilon(sensitivity, "sensitivity")
    k = check_positive_int(k, "k")
    if k > qualities.size:
        raise ValueError(f"k must be at most the number of candidates ({qualities.size}), got {k}")
    rng = check_rng(rng)
    factor = 1.0 if monotonic else 2.0
    log_weights = (epsilon / k) * qualities / (factor * sensitivity)
    keys = log_weights + rng.gumbel(size=qualities.size)
    if k == qualities.size:
        return np.argsort(-keys, kind="stable")
    top = np.argpartition(-keys, k - 1)[:k]
    return top[np.argsort(-keys[top], kind="stable")]
