"""Personalized differential privacy: one privacy budget per record (Li 2017 Ch. 5).

A privacy vector ``phi = (eps_1, ..., eps_n)`` gives every record its own budget; the vector
is **public** (Li 2017 §5.1: "the value of the privacy budget should not be correlated with any
sensitive information"; §5.2: "the partitioning mechanisms have no privacy risk because [they
are] computed directly from public information, privacy budget of each record").

Mechanisms (``method=``)
------------------------
- ``"minimum"`` -- every record at ``min(phi)`` (Li 2017 §5.1, baseline *Minimum*).
- ``"threshold"`` -- keep the records with ``eps_j >= eps_T`` and run at ``eps_T``
  (Li 2017 §5.1, baseline *Threshold*; the others get nothing).
- ``"sampling"`` -- Jorgensen, Yu, Cormode 2015 (Li 2017 Def. 5.1.1): keep record ``j`` with
  probability ``(e^{eps_j} - 1) / (e^{eps_T} - 1)`` if ``eps_j < eps_T`` (else 1), then an
  ``eps_T``-DP mechanism on the sample. :func:`sampling_probabilities`, :func:`sample_records`.
- ``"privacy_aware"`` -- Li 2017 Alg. 10 (Def. 5.2.2): dynamic programming over the sorted budgets
  minimising the wasted budget ``sum_i sum_j (eps_ij - min_j eps_ij)^2``; the number of
  partitions ``k`` by eq. (5.2.3) (minimise ``sum_i W_i / n_i``) over ``k <= n / T`` with a
  minimum partition size ``T``. :func:`privacy_aware_partition`.
- ``"utility"`` -- Li 2017 Alg. 11 (Def. 5.2.4): the same dynamic programming maximising
  ``sum_i U(n_i, min_j eps_ij)``, ``k`` by eq. (5.2.6). :func:`utility_partition`,
  :data:`UTILITIES`.
- ``"weighted"`` (histograms only) -- Alaggan, Gambs & Kermarrec 2016's heterogeneous DP: every
  record enters one release with weight ``eps_j / eps_max``; one Laplace draw per cell, then
  the weighted histogram is rescaled. :func:`weighted_histogram`.
- ``rounds=T`` -- Li 2017 §5.2.3 T-round partitioning: the left-over budgets
  ``eps_j - (spent so far)`` are partitioned again, ``T`` times (partitioning methods and
  ``"minimum"``, which is partitioning with ``k = 1``).
- ensemble -- Li 2017 §5.2.4: numeric tasks combine the per-partition releases with weights that
  depend on ``(n_i, eps_i)`` (here: inverse-variance weights, :func:`personalized_histogram`);
  classifiers vote, after dropping the partitions that another partition dominates (no fewer
  records *and* no smaller budget) -- the text's drop-out rule
  (:func:`personalized_logistic_regression`).

Targets: :func:`personalized_histogram` (counts per bin, Laplace per release through
:func:`dpwidgets.engine.histograms.publish`) and :func:`personalized_logistic_regression`
(diffprivlib's ``LogisticRegression``, Chaudhuri-Monteleoni-Sarwate objective perturbation).
A :class:`ReleasePlan` (from :func:`plan_releases`) is the public, data-independent part:
which records go into which release at what budget; it can be computed once and reused.

The modules of this package:

- :mod:`~dpwidgets.engine.personalized.histogram` -- the histograms;
  :mod:`~dpwidgets.engine.personalized.logistic` -- the logistic regression.
- :mod:`~dpwidgets.engine.personalized.plans` -- the release plans, from
  :mod:`~dpwidgets.engine.personalized.partitioning` (Alg. 10-11, with the utilities of
  :mod:`~dpwidgets.engine.personalized.utilities`) and
  :mod:`~dpwidgets.engine.personalized.sampling`.
- :mod:`~dpwidgets.engine.personalized.quality` -- the quality measure.
- :mod:`~dpwidgets.engine.personalized.constants` -- the public constants;
  :mod:`~dpwidgets.engine.personalized.checks` -- the checks.

Every public name of the former single module ``personalized.py`` is importable from here,
and so is the private name the tests use.

Guarantee and neighbours
------------------------
Personalized DP (Jorgensen et al. 2015, the definition Li 2017 Ch. 5 adopts): for every
record ``j``, every pair of neighbouring datasets that differ in record ``j`` and every
output set ``O``, ``P[M(D) in O] <= exp(eps_j) P[M(D') in O]``. Neighbours here are
**replace-one** -- one record's value changes -- because the privacy vector is public, so the
number of records and who is in the data are public too (the partitions are computed from it);
this is "bounded" PDP. The "unbounded" reading (add/remove a record) would have to protect
the privacy vector itself, which the partitioning mechanisms read in the clear. Li 2017 does not
restate the definition or name the neighbour relation; we follow the reading under which its
mechanisms are private. Every release is calibrated for replace-one (a histogram: Laplace
``2/eps``, i.e. :func:`~dpwidgets.engine.histograms.publish` at ``eps/2``). Each result
reports ``enjoyed``: the budget each record actually spends, always ``<=`` the budget it
asked for (checked).

References
----------
Li 2017 Ch. 5 (§5.1 Def. 5.1.1; §5.2 Def. 5.2.1-5.2.4, Alg. 10-11, eq. 5.2.3, 5.2.5, 5.2.6;
§5.2.3 T-round; §5.2.4 ensemble; §5.3 experiments). Z. Jorgensen, T. Yu, G. Cormode,
"Conservative or liberal? Personalized differential privacy", ICDE 2015. M. Alaggan, S. Gambs,
A.-M. Kermarrec, "Heterogeneous differential privacy", Journal of Privacy and Confidentiality
7(2), 2016 (the stretching of a query by per-record weights).
"""

# The public names are the submodules', and so is __all__ (a public name is declared once, in
# its module's __all__). The private name that the tests use (_bin_index) is imported too:
# dpwidgets.engine.personalized was one module. A test that patches a name patches the submodules that look it up (the
# package's copy is what other modules call, not what the submodules call).
# ruff: noqa: F401, F403
from __future__ import annotations

from . import constants, histogram, logistic, partitioning, plans, quality, sampling, utilities
from .constants import *
from .histogram import *
from .histogram import _bin_index
from .logistic import *
from .logistic import LOGISTIC_MAX_ITER, LOGISTIC_TOL
from .partitioning import *
from .plans import *
from .quality import *
from .sampling import *
from .utilities import *

__all__ = [
    *constants.__all__,
    *utilities.__all__,
    *partitioning.__all__,
    *plans.__all__,
    *histogram.__all__,
    *logistic.__all__,
    *sampling.__all__,
    *quality.__all__,
]
