"""The public constants of personalized DP: the limits, the mechanisms (:data:`METHODS`,
:data:`HISTOGRAM_METHODS`), the weight unit, the neighbour relation.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

from ..validation import EPSILON_MIN

__all__ = ["METHODS", "MIN_BUDGET", "MAX_ROUNDS", "MAX_GROUPS", "MAX_BINS", "WEIGHT_UNIT",
           "HISTOGRAM_METHODS", "NEIGHBOURS"]


#: The smallest budget a record, or a release, may have: twice the engine's
#: :data:`~.validation.EPSILON_MIN`, because a histogram release runs at half its budget
#: (replace-one). Left-over budgets below it are not spent in later rounds.
MIN_BUDGET = 2 * EPSILON_MIN
#: The most rounds of T-round repartitioning (``rounds``).
MAX_ROUNDS = 100
#: The largest ``max_groups`` (distinct budget levels the dynamic programs work on; their
#: cost grows with its square).
MAX_GROUPS = 16384
#: The most histogram bins of :func:`personalized_histogram`.
MAX_BINS = 10**6
#: The unit of the weights of :func:`weighted_histogram`: each weight ``eps_j / eps_max`` is
#: rounded *down* to a multiple of it, so the weighted histogram is an integer number of units
#: whatever the data (floating-point safe with :func:`~.mechanisms.laplace`, Mironov 2012) and
#: no record spends more than it asked. A power of two: ``m * WEIGHT_UNIT`` is exact.
WEIGHT_UNIT = 2.0**-20


#: The mechanisms, in the order the text introduces them.
METHODS = ("minimum", "threshold", "sampling", "privacy_aware", "utility")
_PARTITIONING = ("minimum", "privacy_aware", "utility")
_THRESHOLDED = ("threshold", "sampling")
#: The methods of :func:`personalized_histogram` (and :func:`plan_releases`): the text's, and
#: Alaggan, Gambs & Kermarrec 2016's one-release weighting (a count-type query only).
HISTOGRAM_METHODS = (*METHODS, "weighted")

#: The neighbour relation every mechanism in this module is calibrated for.
NEIGHBOURS = (
    "replace-one: one record's value changes; the privacy vector (hence n, who is in the data "
    "and each record's budget) is public"
)

#: Variance of one Laplace(2/eps) cell, the replace-one histogram noise, times eps^2.
_CELL_VARIANCE = 8.0
