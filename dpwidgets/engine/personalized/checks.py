"""Validation at the boundary, before any randomness: the budgets, the utility, the method,
the threshold, the partition sizes.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..validation import EPSILON_MAX, check_epsilon, check_finite_array, check_positive_int
from .constants import _THRESHOLDED, METHODS, MIN_BUDGET
from .utilities import UTILITIES

__all__: list[str] = []


def _check_budgets(budgets, n: int | None = None) -> np.ndarray:
    budgets = check_finite_array(budgets, "budgets")
    if np.any(budgets < MIN_BUDGET) or np.any(budgets > EPSILON_MAX):
        raise ValueError(
            f"budgets must all be in [{MIN_BUDGET:g}, {EPSILON_MAX:g}] (one privacy budget "
            f"per record); found budgets outside"
        )
    if n is not None and budgets.size != n:
        raise ValueError(f"budgets must have one entry per record ({n}), got {budgets.size}")
    return budgets


def _check_utility(utility) -> Callable[..., Any]:
    """The utility function named (or given) by ``utility``, or a ValueError naming it."""
    if isinstance(utility, str) and utility in UTILITIES:
        return UTILITIES[utility]
    if callable(utility) and not isinstance(utility, str):
        return utility
    raise ValueError(f"utility must be one of {sorted(UTILITIES)} or a callable, got {utility!r}")


def _check_utility_options(options) -> None:
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"utility_options must be a mapping of keyword arguments or None, got "
                         f"{type(options).__name__}")


def _check_method(method: str, allowed: tuple[str, ...] = METHODS) -> str:
    if not isinstance(method, str) or method not in allowed:
        raise ValueError(f"method must be one of {list(allowed)}, got {method!r}")
    return method


def _check_threshold(threshold, budgets: np.ndarray, method: str, default: str) -> float | None:
    if method not in _THRESHOLDED:
        if threshold is not None:
            raise ValueError(f"threshold is only used by methods {list(_THRESHOLDED)}, not {method!r}")
        return None
    if threshold is None:
        # Threshold (the baseline) keeps only eps_j >= eps_T: its default is always the mean.
        if default == "max" and method == "sampling":
            return float(np.max(budgets))
        return float(np.mean(budgets))
    threshold = check_epsilon(threshold, "threshold")
    lo, hi = float(np.min(budgets)), float(np.max(budgets))
    if not lo <= threshold <= hi:
        raise ValueError(
            f"threshold must lie in [min(budgets), max(budgets)] = [{lo:g}, {hi:g}] "
            f"(Li 2017 Def. 5.1.1), got {threshold!r}"
        )
    return threshold


def _check_size_options(n: int, min_size, max_partitions, k) -> tuple[int, int, int | None]:
    if max_partitions is None:
        max_partitions = 16
    max_partitions = check_positive_int(max_partitions, "max_partitions")
    if min_size is None:
        min_size = max(1, math.ceil(n / (2 * max_partitions)))
    min_size = check_positive_int(min_size, "min_size")
    if min_size > n:
        raise ValueError(f"min_size must be at most the number of records ({n}), got {min_size}")
    if k is not None:
        k = check_positive_int(k, "k")
        if k * min_size > n:
            raise ValueError(f"k = {k} partitions of at least min_size = {min_size} records need "
                             f"{k * min_size} records, only {n} given")
    return min_size, max_partitions, k
