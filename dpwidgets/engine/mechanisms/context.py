"""The floating-point-safe switch: :func:`floating_point_safe` and
:func:`is_floating_point_safe`, read by every sampler of :mod:`dpwidgets.engine.mechanisms`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["floating_point_safe", "is_floating_point_safe"]

# The switch of floating_point_safe(): a ContextVar, so a release running in one thread (or
# asyncio task) never changes the sampler of a teaching run in another.
_FLOATING_POINT_SAFE: ContextVar[bool] = ContextVar("dpwidgets_floating_point_safe",
                                                     default=False)


@contextmanager
def floating_point_safe() -> Iterator[None]:
    """Make :func:`laplace` (and :func:`laplace_reals`) floating-point safe inside the block.

    Inside, ``laplace(scale, size, rng=rng)`` returns ``gamma * Z`` with ``Z ~
    discrete_laplace(scale / gamma)`` (the scale in grid steps widened by ``2 b0 NOISE_SLACK``
    relative, below 2**-19 for a scale below 2**GRID_BITS, where ``b0 < 2**(GRID_BITS + 1)``,
    see Notes), ``gamma`` the largest power of two <= ``min(1, scale / 2**GRID_BITS)``
    (:data:`GRID_BITS` = 20: at scale 1, gamma = 2**-20); :func:`laplace_reals` rounds real
    values to a grid and calls :func:`grid_laplace`. Outside, both are the continuous sampler,
    bit for bit as before.
    Contexts nest (the innermost exit restores the enclosing state) and are local to the
    thread or task that entered them (a :class:`contextvars.ContextVar`).

    Notes
    -----
    Privacy: for an integer-valued query, ``count + gamma Z`` lies on ``gamma Z`` (gamma <= 1
    is a power of two) whatever the count, so the output set does not depend on the data
    (Mironov 2012); a shift by an integer ``Delta`` is ``Delta / gamma`` grid steps and costs at
    most ``Delta / scale``, the nominal loss: the scale in steps, ``b0 = scale / gamma``, is
    widened to ``b0 / (1 - 2 b0 NOISE_SLACK)``, which absorbs the sampler's slack
    (:data:`NOISE_SLACK`) for every shift of at least one step when ``b0 <= 2**31`` (scales up
    to 2**31, i.e. a count at epsilon >= 5e-10); beyond, the loss is the nominal one plus
    ``NOISE_SLACK`` per draw. Accuracy: the variance is that of Laplace(scale) within 0.1%
    (the grid is at least 2**GRID_BITS steps per scale).

    Limits: the scale in steps is below 2**(GRID_BITS + 1) for scales below 2**GRID_BITS and
    equals the scale above (gamma = 1), so :data:`MAX_DISCRETE_SCALE` (2**48) bounds the scale
    itself, as without the grid. ``count + gamma Z`` is an exact double while ``|count + gamma
    Z| <= 2**53 gamma``: at scale 1 (gamma = 2**-20) up to 2**33 ~ 8.6e9; more than ``2**32
    scale`` at any scale below 2**GRID_BITS, and 2**53 above (gamma = 1). Beyond, IEEE
    addition rounds the exact sum to a coarser power-of-two grid: a function of the exact
    release (post-processing), so still private, only less fine.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.mechanisms import laplace
    >>> from dpwidgets.engine.mechanisms.discrete import GRID_BITS
    >>> with floating_point_safe():
    ...     x = 3 + laplace(2.0, 4, rng=np.random.default_rng(0))
    >>> gamma = 2.0 * 2.0**-GRID_BITS  # the largest power of two <= 2 / 2**GRID_BITS
    >>> bool(np.all(x / gamma == np.round(x / gamma)))
    True

    References
    ----------
    Mironov 2012; Canonne, Kamath & Steinke 2020 (the discrete Laplace sampler).
    """
    token = _FLOATING_POINT_SAFE.set(True)
    try:
        yield
    finally:
        _FLOATING_POINT_SAFE.reset(token)


def is_floating_point_safe() -> bool:
    """Whether the calling context is inside :func:`floating_point_safe`.

    Examples
    --------
    >>> from dpwidgets.engine.mechanisms import floating_point_safe, is_floating_point_safe
    >>> with floating_point_safe():
    ...     inside = is_floating_point_safe()
    >>> inside, is_floating_point_safe()
    (True, False)
    """
    return _FLOATING_POINT_SAFE.get()
