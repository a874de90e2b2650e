"""Secret sampling coins: :func:`bernoulli_coins`, whose probability inside
:func:`floating_point_safe` is rounded down to a multiple of 2**-53 (personalized DP's Sample
mechanism, Li 2017 Def. 5.1.1)."""

from __future__ import annotations

import numpy as np

from ..validation import check_finite_array
from .checks import _check_generator
from .context import is_floating_point_safe

__all__ = ["bernoulli_coins"]


def bernoulli_coins(probabilities, rng: np.random.Generator) -> np.ndarray:
    """Independent coins, True with the given probabilities (public, in [0, 1]).

    ``rng.random() < p`` is True with probability ``ceil(p 2**53) / 2**53``, a hair *above* p
    (numpy's uniforms are multiples of 2**-53). Inside :func:`floating_point_safe` the coins
    compare the same uniforms with ``floor(p 2**53) / 2**53`` instead, so each coin's
    probability is exactly that, never above p: privacy amplification by sampling, which
    charges ``ln(1 + p (e^eps - 1))``, then holds with the probability actually used. Outside
    the context the textbook comparison is kept (seeded teaching runs stay bit for bit).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import bernoulli_coins
    >>> bernoulli_coins([0.0, 1.0, 0.5, 0.5], np.random.default_rng(0)).tolist()
    [False, True, True, True]
    """
    p = check_finite_array(probabilities, "probabilities", ndim=None, allow_empty=True)
    if p.size and not (p.min() >= 0.0 and p.max() <= 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    _check_generator(rng)
    u = rng.random(p.shape)
    if is_floating_point_safe():
        return u < np.floor(p * 2.0**53) * 2.0**-53
    return u < p
