"""Input validation shared by every engine entry point.

Each check raises :class:`ValueError` naming the argument and the accepted range, and is
called *before* any budget is charged or any noise drawn (validate at the boundary, once).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "check_epsilon",
    "check_nonnegative",
    "check_positive_int",
    "check_finite_array",
    "check_counts",
    "check_probability",
    "check_rng",
]


def check_epsilon(epsilon: float, name: str = "epsilon", *, allow_zero: bool = False) -> float:
    """Return ``epsilon`` as a float, or raise if it is not a finite positive number."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise ValueError(f"{name} must be a finite positive number, got {epsilon!r}")
    value = float(epsilon)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        accepted = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise ValueError(f"{name} must be {accepted}, got {epsilon!r}")
    return value


def check_nonnegative(value: float, name: str) -> float:
    """Return ``value`` as a float, or raise if it is not finite and >= 0."""
    return check_epsilon(value, name, allow_zero=True)


def check_positive_int(value: int, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, or raise if it is not an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_finite_array(
    values, name: str, *, ndim: int | None = 1, allow_empty: bool = False
) -> np.ndarray:
    """Return ``values`` as a float array, or raise on NaN/inf, a wrong rank or emptiness."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of finite numbers ({exc})") from None
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {array.shape}")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(array)):
        bad = int(np.count_nonzero(~np.isfinite(array)))
        raise ValueError(f"{name} must be finite: {bad} value(s) are NaN or infinite")
    return array


def check_counts(values, name: str = "counts", *, ndim: int | None = 1) -> np.ndarray:
    """Return a histogram as a float array, or raise on negative, fractional or non-finite cells."""
    array = check_finite_array(values, name, ndim=ndim)
    if np.any(array < 0):
        raise ValueError(f"{name} must be non-negative counts; found {int(np.sum(array < 0))} negative cell(s)")
    if np.any(array != np.round(array)):
        raise ValueError(f"{name} must be whole-number counts; found fractional values")
    return array


def check_probability(value: float, name: str, *, open_interval: bool = True) -> float:
    """Return ``value`` as a float in (0, 1) (or [0, 1]), or raise."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    value = float(value)
    if open_interval and not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    if not open_interval and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return value


def check_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Return ``rng``, or a fresh unseeded generator when it is ``None``.

    Only :class:`numpy.random.Generator` is accepted: legacy ``RandomState`` objects and bare
    integer seeds are refused so that no code path ever falls back on global random state.
    """
    if rng is None:
        return np.random.default_rng()
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)) or None, "
            f"got {type(rng).__name__}"
        )
    return rng
