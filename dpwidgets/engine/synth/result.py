"""The result of every synthetic-data release here: :class:`SynthResult`.

One frozen record for DPCopula, its baselines and its peers: the synthetic table, what each
step spent, the DP correlation and margins it was sampled from, and the privacy statement.
Its arrays and mappings are made read-only, so a result handed to a widget or a ledger cannot
be changed after the release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._results import readonly as _readonly

__all__ = ["NEIGHBOURS", "SynthResult"]

#: The neighbour relation every release in this module assumes.
NEIGHBOURS = "add/remove one record (Li 2017 Def. 3.1.1); attribute domains public"


@dataclass(frozen=True, eq=False)
class SynthResult:
    """A DP synthetic table and what it cost.

    Attributes
    ----------
    data : pandas.DataFrame
        The synthetic records: same columns, dtypes and domains as the input.
    epsilon : float
        Total budget charged (add/remove-one neighbours); equals ``math.fsum`` of
        ``epsilon_parts`` exactly.
    epsilon_parts : dict of str to float
        What each step spent: ``"margins"`` (eps1, all margins together), ``"dependence"``
        (eps2, all correlation coefficients together) and, for the hybrid,
        ``"partition_sizes"`` (the noisy sizes of the small-attribute partitions).
    method : str
        ``"dpcopula-kendall"``, ``"dpcopula-mle"``, ``"dpcopula-hybrid-kendall"``,
        ``"dpcopula-hybrid-mle"``, ``"independent"``, ``"laplace-histogram"``, ``"aim"``
        or ``"mst"``.
    correlation : numpy.ndarray or None
        The DP correlation matrix after repair (positive definite, unit diagonal), over
        ``correlation_columns``. ``None`` for the hybrid when it partitions (one matrix per
        partition, in ``details["partition_correlations"]``) and for methods without one.
    correlation_columns : tuple of str
        The attributes ``correlation`` is over (for the hybrid, those the copula models: the
        large-domain ones, or every attribute when it did not partition).
    margins : dict of str to numpy.ndarray
        The DP marginal distribution of each attribute (clipped, normalised), one entry per
        domain value; empty for methods that do not release margins.
    domains : dict of str to numpy.ndarray
        The (public) domain values of each attribute, in order.
    guarantee, neighbours : str
        The privacy statement.
    details : dict
        Noise scales, sample sizes, the noisy record count, partition sizes, ... -- all of it
        DP output or public parameters, never a raw statistic of the data.
    """

    data: pd.DataFrame
    epsilon: float
    epsilon_parts: Mapping[str, float]
    method: str
    correlation: np.ndarray | None
    correlation_columns: tuple[str, ...]
    margins: Mapping[str, np.ndarray]
    domains: Mapping[str, np.ndarray]
    guarantee: str
    neighbours: str = NEIGHBOURS
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.correlation is not None:
            object.__setattr__(self, "correlation", _readonly(self.correlation))
        object.__setattr__(self, "epsilon_parts", MappingProxyType(dict(self.epsilon_parts)))
        object.__setattr__(
            self, "margins", MappingProxyType({c: _readonly(p) for c, p in self.margins.items()})
        )
        object.__setattr__(
            self,
            "domains",
            MappingProxyType({c: _readonly(v, v.dtype) for c, v in self.domains.items()}),
        )
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def n_rows(self) -> int:
        """Number of synthetic records."""
        return int(len(self.data))
