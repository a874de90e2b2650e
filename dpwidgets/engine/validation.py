"""Input validation shared by every engine entry point.

Each check raises :class:`ValueError` naming the argument and the accepted range, and is
called *before* any budget is charged or any noise drawn (validate at the boundary, once).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from types import MappingProxyType

import numpy as np

__all__ = ["EPSILON_MIN", "EPSILON_MAX", "check_epsilon", "check_positive", "check_real",
           "check_bool", "check_nonnegative", "check_positive_int", "check_finite_array",
           "check_counts", "check_probability", "check_rng", "split_budget"]

#: The smallest privacy budget any engine function accepts. Below it the noise scales
#: ``sensitivity/epsilon`` leave every useful range (1e6 times the sensitivity), and at the
#: subnormal end (5e-324) they overflow to inf or divide by zero.
EPSILON_MIN = 1e-6
#: The largest privacy budget any engine function accepts: far beyond any meaningful
#: guarantee (teaching uses up to 1e6 to show a noiseless release), and small enough that
#: no scale underflows to 0 and no ``epsilon * quality`` overflows.
EPSILON_MAX = 1e9


def _number(value, name: str, accepted: str, within=None) -> float:
    """``value`` as a finite float (for which ``within``, if given, holds), or a ValueError
    naming ``name`` and what is accepted."""
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise ValueError(f"{name} must be {accepted}, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or (within is not None and not within(number)):
        raise ValueError(f"{name} must be {accepted}, got {number!r}")
    return number


def check_epsilon(epsilon: float, name: str = "epsilon", *, allow_zero: bool = False) -> float:
    """Return ``epsilon`` as a float, or raise unless ``EPSILON_MIN <= epsilon <= EPSILON_MAX``.

    With ``allow_zero``, 0 is accepted too. Booleans, strings, NaN and infinities are refused.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_epsilon
    >>> check_epsilon(0.5)
    0.5
    >>> check_epsilon(0)
    Traceback (most recent call last):
        ...
    ValueError: epsilon must be a number in [1e-06, 1e+09], got 0.0
    """
    accepted = (f"a number in [{EPSILON_MIN:g}, {EPSILON_MAX:g}]" + (" or 0" if allow_zero else ""))
    value = _number(epsilon, name, accepted)
    if allow_zero and value == 0:
        return 0.0
    if not EPSILON_MIN <= value <= EPSILON_MAX:
        raise ValueError(f"{name} must be {accepted}, got {value!r}")
    return value


def check_bool(value, name: str) -> bool:
    """Return ``value`` as a bool, or raise unless it is ``True`` or ``False``.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_bool
    >>> check_bool(True, 'flag')
    True
    >>> check_bool(1, 'flag')
    Traceback (most recent call last):
        ...
    TypeError: flag must be True or False, got int
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_real(value: float, name: str) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number (no strings).

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_real
    >>> check_real(1, 'x')
    1.0
    >>> check_real('1', 'x')
    Traceback (most recent call last):
        ...
    ValueError: x must be a finite number, got str
    """
    return _number(value, name, "a finite number")


def check_positive(value: float, name: str) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number > 0 (not a budget:
    a sensitivity, a norm, a scale; no range beyond finiteness).

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_positive
    >>> check_positive(2, 'scale')
    2.0
    >>> check_positive(0, 'scale')
    Traceback (most recent call last):
        ...
    ValueError: scale must be a finite number > 0, got 0.0
    """
    return _number(value, name, "a finite number > 0", lambda number: number > 0)


def check_nonnegative(value: float, name: str) -> float:
    """Return ``value`` as a float, or raise if it is not finite and >= 0.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_nonnegative
    >>> check_nonnegative(0, 'k'), check_nonnegative(2.5, 'k')
    (0.0, 2.5)
    >>> check_nonnegative(-1, 'k')
    Traceback (most recent call last):
        ...
    ValueError: k must be a finite number >= 0, got -1.0
    """
    return _number(value, name, "a finite number >= 0", lambda number: number >= 0)


def check_positive_int(value: int, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an int, or raise if it is not an integer in ``[minimum, maximum]``.

    ``maximum`` is the documented limit of a size (a module-level constant such as
    ``MAX_LEVELS``): work and memory grow with it, so a huge value is refused, not attempted.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_positive_int
    >>> check_positive_int(3, 'c')
    3
    >>> check_positive_int(2.5, 'c')
    Traceback (most recent call last):
        ...
    ValueError: c must be an integer >= 1, got float 2.5
    """
    accepted = (f"an integer >= {minimum}" if maximum is None
                else f"an integer in [{minimum}, {maximum}]")
    if isinstance(value, bool) or not isinstance(value, Integral | np.integer):
        raise ValueError(f"{name} must be {accepted}, got {type(value).__name__} {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {accepted}, got {value!r}")
    return int(value)


def check_finite_array(
    values, name: str, *, ndim: int | None = 1, allow_empty: bool = False
) -> np.ndarray:
    """Return ``values`` as a float array, or raise on NaN/inf, a wrong rank or emptiness.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_finite_array
    >>> check_finite_array([1, 2.5], 'values').tolist()
    [1.0, 2.5]
    >>> check_finite_array([1, float('nan')], 'values')
    Traceback (most recent call last):
        ...
    ValueError: values must be finite: found NaN or infinite values
    """
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of finite numbers") from None
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {array.shape}")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite: found NaN or infinite values")
    return array


def check_counts(values, name: str = "counts", *, ndim: int | None = 1) -> np.ndarray:
    """Return a histogram as a float array, or raise on negative, fractional or non-finite cells.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_counts
    >>> check_counts([3, 0, 2]).tolist()
    [3.0, 0.0, 2.0]
    >>> check_counts([1, -1])
    Traceback (most recent call last):
        ...
    ValueError: counts must be non-negative counts; found negative cells
    """
    array = check_finite_array(values, name, ndim=ndim)
    if np.any(array < 0):
        raise ValueError(f"{name} must be non-negative counts; found negative cells")
    if np.any(array != np.round(array)):
        raise ValueError(f"{name} must be whole-number counts; found fractional values")
    return array


def check_probability(value: float, name: str, *, open_interval: bool = True) -> float:
    """Return ``value`` as a float in (0, 1) (or [0, 1]), or raise.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_probability
    >>> check_probability(0.25, 'p'), check_probability(1, 'p', open_interval=False)
    (0.25, 1.0)
    >>> check_probability(1, 'p')
    Traceback (most recent call last):
        ...
    ValueError: p must be in the open interval (0, 1), got 1.0
    """
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    value = float(value)
    if open_interval and not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    if not open_interval and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return value


def split_budget(epsilon: float, **parts: float) -> Mapping[str, float]:
    """Freeze a budget split, read-only, in the order given.

    The last part is recomputed as the exact remainder ``epsilon - fsum(others)``, then
    nudged by ulps until ``math.fsum`` of all parts is exactly ``epsilon`` (it nearly always
    is at once), so a result's parts add up to what it was charged.

    Examples
    --------
    >>> from dpwidgets.engine.validation import split_budget
    >>> dict(split_budget(1.0, threshold=0.25, queries=0.75))
    {'threshold': 0.25, 'queries': 0.75}
    """
    names = list(parts)
    values = [float(parts[k]) for k in names]
    values[-1] = epsilon - math.fsum(values[:-1])
    for _ in range(4):
        gap = epsilon - math.fsum(values)
        if gap == 0:
            break
        values[-1] = float(np.nextafter(values[-1], math.copysign(math.inf, gap)))
    return MappingProxyType(dict(zip(names, values, strict=True)))


def check_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Return ``rng``, or a fresh unseeded generator when it is ``None``.

    Only :class:`numpy.random.Generator` is accepted: legacy ``RandomState`` objects and bare
    integer seeds are refused so that no code path ever falls back on global random state.

    Examples
    --------
    >>> from dpwidgets.engine.validation import check_rng
    >>> type(check_rng(None)).__name__
    'Generator'
    >>> check_rng(0)
    Traceback (most recent call last):
        ...
    TypeError: rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)) or None, got int
    """
    if rng is None:
        return np.random.default_rng()
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)) or None, "
            f"got {type(rng).__name__}"
        )
    return rng
