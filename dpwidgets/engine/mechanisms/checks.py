"""The argument checks every sampler of :mod:`dpwidgets.engine.mechanisms` shares: the
generator is required, and a ``size`` is a shape of at most :data:`MAX_DRAWS` draws."""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

__all__ = ["MAX_DRAWS"]

#: The most Laplace draws one :func:`laplace` call makes (800 MB of float64): a larger
#: ``size`` is refused before anything is allocated.
MAX_DRAWS = 10**8


def _check_generator(rng) -> np.random.Generator:
    """``rng`` if it is a Generator (required: no fresh unseeded fallback), else TypeError."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_size(size) -> tuple[int, ...] | None:
    """``size`` as a shape tuple (None stays None), or ValueError; at most MAX_DRAWS draws."""
    if size is None:
        return None
    shape = (size,) if isinstance(size, Integral | np.integer) and not isinstance(size, bool) \
        else size
    if not isinstance(shape, tuple) or not all(
        isinstance(d, Integral | np.integer) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ValueError(f"size must be None, an integer >= 0 or a tuple of them, got {size!r}")
    if math.prod(int(d) for d in shape) > MAX_DRAWS:
        raise ValueError(f"size must hold at most MAX_DRAWS = {MAX_DRAWS} draws, got {size!r}")
    return tuple(int(d) for d in shape)
