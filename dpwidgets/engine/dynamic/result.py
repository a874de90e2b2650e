"""The result of every dynamic release: :class:`DynamicRelease`.
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._results import frozen as _frozen
from .._results import readonly as _readonly
from .common import _Repeated
from .quality import update_ratio

__all__ = ["DynamicRelease"]


@dataclass(frozen=True, eq=False)
class DynamicRelease:
    """A private release of a series of histograms and what it cost.

    Attributes
    ----------
    releases : numpy.ndarray, shape (N, U)
        The released histogram at every time point (a repeated row where nothing new was
        released). Float, may be negative (Laplace noise).
    release_points : numpy.ndarray of bool, shape (N,)
        True where a new private histogram was released.
    release_epsilons : numpy.ndarray, shape (N,)
        Budget of the histogram release at each time point (0 where the last one was repeated).
    thresholds : numpy.ndarray, shape (N,)
        The public threshold in force at each time point: constant ``T`` for DSFT, the PID
        trajectory ``T_i`` in [0, 2] for DSAT (NaN for methods without a threshold). The
        secret SVT offset ``rho`` is *not* included (it is never released).
    epsilon : float
        Total budget charged: user level, the whole series; w-event, every window of ``w``.
    epsilon_parts : dict of str to float
        ``{"decision": ..., "release": ...}`` (user level: sums to ``epsilon``; w-event: the
        per-window budgets of the two steps).
    method : str
        ``"dsft"``, ``"dsat"``, ``"dsat-w"``, ``"uniform"``, ``"fixed"``, ``"bd"`` or ``"ba"``.
    publisher : str
        The :func:`.histograms.publish` method used at the release points (what ``"auto"``
        chose; ``details["publisher_rule"]`` / ``details["publisher_note"]`` say why).
    cutoff : int or None
        ``C``: at most this many releases (per window for w-event DSAT).
    w : int or None
        Window length (w-event methods).
    window_epsilons : numpy.ndarray or None
        w-event methods: the budget charged to each window of ``w`` consecutive time points
        (``max(N - w + 1, 1)`` windows); every entry is at most ``epsilon``.
    guarantee, neighbours : str
        The privacy statement.
    details : dict
        Noise scales, ``k``, the sensitivity, burn-in, PID settings, ...; all public.
    """

    releases: np.ndarray
    release_points: np.ndarray
    release_epsilons: np.ndarray
    thresholds: np.ndarray
    epsilon: float
    epsilon_parts: Mapping[str, float]
    method: str
    publisher: str
    guarantee: str
    neighbours: str
    cutoff: int | None = None
    w: int | None = None
    window_epsilons: np.ndarray | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.releases, _Repeated):
            # The samplers' releases repeat k << N histograms: the (N, U) array is built on
            # first read (``__getattr__``), never for a session output (``release_histograms``).
            object.__setattr__(self, "_repeated", self.releases)
            object.__delattr__(self, "releases")
        else:
            object.__setattr__(self, "releases", _owned(self.releases))
        object.__setattr__(self, "release_points", _owned(self.release_points, bool))
        object.__setattr__(self, "release_epsilons", _owned(self.release_epsilons))
        object.__setattr__(self, "thresholds", _owned(self.thresholds))
        if self.window_epsilons is not None:
            object.__setattr__(self, "window_epsilons", _owned(self.window_epsilons))
        object.__setattr__(self, "epsilon_parts", MappingProxyType(dict(self.epsilon_parts)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def __getattr__(self, name: str):
        repeated = self.__dict__.get("_repeated")
        if name != "releases" or repeated is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        releases = repeated.expand()
        object.__setattr__(self, "releases", releases)
        return releases

    @property
    def release_histograms(self) -> np.ndarray:
        """The new private histograms, in time order: ``releases[release_points]``, shape
        (k, U) (read-only)."""
        repeated = self.__dict__.get("_repeated")
        if repeated is not None:
            return repeated.rows
        if self.release_points.all():
            return self.releases
        return _frozen(self.releases[self.release_points])

    @property
    def n_releases(self) -> int:
        """How many new private histograms were released."""
        return int(np.count_nonzero(self.release_points))

    @property
    def update_ratio(self) -> np.ndarray:
        """``C_i / i`` at every time point (Li 2017 Def. 4.2.1)."""
        return update_ratio(self.release_points)


def _owned(array, dtype=float) -> np.ndarray:
    """``array`` kept as it is when the engine has just built and frozen it (read-only, owning
    its memory, of ``dtype``); otherwise a read-only copy. A (500, 3456) series of releases is
    then never copied on its way out (a copy per result cost as much as the releases' noise)."""
    if (isinstance(array, np.ndarray) and array.dtype == dtype and not array.flags.writeable
            and array.flags.owndata):
        return array
    return _readonly(array, dtype)
