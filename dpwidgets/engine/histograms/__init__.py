"""Histogram publishers: one interface for releasing 1-D and 2-D count vectors under DP.

Every algorithm that needs a private histogram (PriRP's 2-D grid, PriROC's one-sided range
counts, PriBRP, DSAT, DPCopula's margins) goes through :func:`publish`::

    release = publish(counts, epsilon, method="dawa", workload="prefix", rng=rng)
    release.counts          # float array, same shape as ``counts``: the estimate of every cell
    release.epsilon         # exactly what was spent (== epsilon)
    release.epsilon_parts   # what each stage spent, e.g. {"partition": 0.025, "measure": 0.075}

:data:`PUBLISHERS` maps each method name to a :class:`Publisher` record (title, paper, supported
dimensions, guarantee, and -- for a simplified variant -- what was simplified). One entry is NOT
differentially private and says so in its name and its ``private=False`` flag:
``"dawa_published_not_private"``, DAWA with the partition calibration of Li, Hay, Miklau & Wang
2014, kept to reproduce Chen 2018, Table 4.4; :func:`partition_singletons_log_ratio` computes its
real loss exactly. ``"dawa"`` is the private ``"dawa_dyadic"``.

Neighbouring datasets (all methods): add or remove one record, so exactly one cell changes by
exactly 1. Under replace-one neighbours two cells change by 1 each; every sensitivity below
doubles, so a release made with ``epsilon`` here is ``2 * epsilon``-DP under replace-one (or,
equivalently, call with ``epsilon / 2`` to get ``epsilon``-DP under replace-one).

All Laplace noise is drawn through :func:`dpwidgets.engine.mechanisms.laplace`; every random
choice uses the explicit ``rng``; inputs are validated before any randomness is consumed.

Where things are
----------------
- :mod:`~dpwidgets.engine.histograms.interface` -- the interface every publisher shares:
  :class:`~dpwidgets.engine.histograms.interface.PublishedHistogram`,
  :class:`~dpwidgets.engine.histograms.interface.Publisher`, the registry
  :data:`~dpwidgets.engine.histograms.interface.PUBLISHERS` and
  :func:`~dpwidgets.engine.histograms.interface.publish`; the budget helpers of the publishers.
- :mod:`~dpwidgets.engine.histograms.workloads` -- the queries a release is tuned for
  (:func:`~dpwidgets.engine.histograms.workloads.workload_matrix`).
- :mod:`~dpwidgets.engine.histograms.hilbert` -- the Hilbert curve that flattens a 2-D grid.
- :mod:`~dpwidgets.engine.histograms.trees` -- level sums and least-squares inference on a tree
  of counts (HB, DAWA).
- One module per publisher: :mod:`~dpwidgets.engine.histograms.baselines` (``"identity"``,
  ``"uniform"``), :mod:`~dpwidgets.engine.histograms.hb`,
  :mod:`~dpwidgets.engine.histograms.dawa` (``"dawa_dyadic"``),
  :mod:`~dpwidgets.engine.histograms.dawa_published` (``"dawa_published_not_private"`` and
  :func:`~dpwidgets.engine.histograms.dawa_published.partition_singletons_log_ratio`),
  :mod:`~dpwidgets.engine.histograms.ahp`, :mod:`~dpwidgets.engine.histograms.ag`,
  :mod:`~dpwidgets.engine.histograms.mwem`, :mod:`~dpwidgets.engine.histograms.efpa`.

Every name of the former single module ``histograms.py``, public or private, is importable
from here.

References
----------
Chen 2018 §4.2.2 (PriRP uses DAWA on a Hilbert-ordered grid), §4.3 (PriROC's one-sided range
queries), Tables 4.2 and 4.4 (regret of the publishers inside PriRP and PriROC).
Hay, Machanavajjhala, Miklau, Chen, Zhang, Bhattacharya, Hay 2016, "Principled evaluation of
differentially private algorithms using DPBench" (the regret measure and the method zoo).
"""

from __future__ import annotations

# A publisher registers itself in PUBLISHERS when its module is imported: this order is the
# order of PUBLISHERS (the order of the single module this package was).
# isort: off
from . import baselines, hb, dawa, dawa_published, ahp, ag, mwem, efpa  # noqa: F401
# isort: on
from . import hilbert, interface, workloads  # noqa: F401
from .ag import _ag, _edges  # noqa: F401
from .ahp import _ahp, _ahp_err_star, _greedy_sorted_clusters  # noqa: F401
from .baselines import _identity, _uniform  # noqa: F401
from .dawa import (  # noqa: F401
    _bucket_hierarchy_design,
    _bucket_hierarchy_search,
    _named_workload_design,
    _tree_workload_error,
    dyadic_l1_partition,
)
from .dawa_published import (  # noqa: F401
    MAX_PUBLISHED_DAWA_CELLS,
    PUBLISHED_DAWA_COST_SCALE,
    _log_laplace_tail,
    partition_singletons_log_ratio,
    published_l1_partition,
)
from .efpa import (  # noqa: F401
    _efpa_scores,
)
from .hb import _deinterleave, _hb, _interleave, hb_branching  # noqa: F401
from .hilbert import (  # noqa: F401
    MAX_HILBERT_ORDER,
    hilbert_d2xy,
    hilbert_order,
    hilbert_xy2d,
)
from .interface import (  # noqa: F401
    NEIGHBOURS,
    PUBLISHERS,
    PublishedHistogram,
    Publisher,
    PublisherFunction,
    publish,
    publisher_choices,
)
from .mwem import _mwem  # noqa: F401
from .trees import _level_sums, _tree_least_squares  # noqa: F401
from .workloads import (  # noqa: F401
    MAX_MATRIX_ENTRIES,
    MAX_QUERIES,
    _check_workload,
    workload_matrix,
)

# Each module owns its list of public names; the package exports them all (the publisher
# modules keep theirs empty: a publisher is reached through publish()).
__all__ = [
    *interface.__all__,
    *workloads.__all__,
    *dawa_published.__all__,
    *hilbert.__all__,
]
