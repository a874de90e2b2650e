"""The public constants of the dynamic releases: the largest window and number of range
queries, the neighbour relations, the text's defaults.
Part of :mod:`~dpwidgets.engine.dynamic`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["NEIGHBOURS", "MAX_WINDOW", "MAX_QUERIES", "DSAT_DEFAULTS"]


#: The largest window ``w`` of the w-event methods (ten million time points).
MAX_WINDOW = 10**7
#: The most random range queries :func:`random_range_queries` / :func:`range_query_error` draw.
MAX_QUERIES = 10**7

#: The neighbour relations of this module, by name.
NEIGHBOURS: Mapping[str, str] = MappingProxyType(
    {
        "user-level": "add/remove one user with all their occurrences (one record in each of up "
        "to N snapshots), snapshot size n public (Li 2017 Def. 4.1.1)",
        "w-event": "add/remove one user's records at the time points of one window of w "
        "consecutive snapshots (Li 2017 Def. 4.1.3; Kellaris et al. 2014), snapshot size n public",
    }
)

#: The text's defaults (Li 2017 Table 4.2 and §4.2.2). ``N``, ``n`` and ``r`` describe the data
#: (see :func:`dpwidgets.datasets.census_like_series`); ``cutoff_fraction`` gives C = 0.01 N.
DSAT_DEFAULTS: Mapping[str, float] = MappingProxyType(
    {
        "N": 500,
        "n": 500_000,
        "epsilon": 1.0,
        "cutoff_fraction": 0.01,
        "update_rate": 0.5,
        "delta": 0.05,
        "theta": 0.5,
        "dimensions": 6,
    }
)
