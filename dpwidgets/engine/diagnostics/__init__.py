"""Private regression diagnostics: private bounds, PriRP, PriROC, PriBRP and their metrics.

The model being diagnosed is an *input* (its predictions and residuals, or its predicted
probabilities and the true labels); these functions release a differentially private view of
how well it fits. Each returns a small frozen dataclass that holds every number a view needs
and what each step spent (``epsilon_parts``, which sums to ``epsilon``).

Where things are
----------------
- :func:`private_bounds` — Chen 2018 Alg. 10 (SVT over doubling intervals; the counts are
  monotone, so the monotone SVT of Lyu, Su & Li 2017, Thm 4.9 halves the query noise).
- :func:`private_residual_plot` (PriRP) — Chen 2018 Alg. 9: residuals vs predictions, linear models.
- :func:`s_recursive_medians` — Chen 2018 Alg. 12: data-dependent thresholds / bin edges.
- :func:`private_roc_curve` (PriROC) — Chen 2018 Alg. 11; :func:`roc_fixed_laplace` is the naive
  Laplace *baseline* the text argues against (sensitivity ``2|Θ|+1``). PriROC's defaults are
  N-FixedSpace thresholds with :func:`fixed_space_levels` intervals and HB (more accurate at
  the text's sizes); ``defaults="text"`` gives the text's s-RecursiveMedians, ρ = 0.2,
  :func:`default_depth` levels, DAWA.
- :func:`private_binned_residual_plot` (PriBRP) — Chen 2018 Alg. 13-14: logistic models.
- Metrics: :func:`residual_plot_similarity` (Sim, §4.2.3), :func:`roc_auc`, :func:`auc_error`,
  :func:`symmetric_difference`, :func:`binned_residuals` (the non-private reference),
  :func:`shape_distance` (ShapeD, eq. 4.13), :func:`regret` (eq. 4.2-4.3),
  :func:`discriminatory_power` (TVD between two distributions of a quality measure).

The modules of this package:

- :mod:`~dpwidgets.engine.diagnostics.bounds` -- :func:`private_bounds`;
  :mod:`~dpwidgets.engine.diagnostics.residual_plot` -- PriRP;
  :mod:`~dpwidgets.engine.diagnostics.recursive_medians` -- s-RecursiveMedians;
  :mod:`~dpwidgets.engine.diagnostics.roc` -- PriROC and its Laplace baseline;
  :mod:`~dpwidgets.engine.diagnostics.binned_residual_plot` -- PriBRP.
- :mod:`~dpwidgets.engine.diagnostics.metrics` -- the metrics.
- :mod:`~dpwidgets.engine.diagnostics.records` -- :class:`Records`, :class:`ArrayRecords`
  and their bin indexing; :mod:`~dpwidgets.engine.diagnostics.checks` -- the constants, the
  neighbour relations and the shared checks.

Every public name of the former single module ``diagnostics.py`` is importable from here, and
so are the private names other modules, the tests or the benchmarks use.

Neighbours and budget
---------------------
``neighbours="replace-one"`` (default; bounded DP, n public): the reading of Chen 2018 §4.3-4.4
(Alg. 12 and PriBRP's counts are "bounded DP") and of Chen et al. 2016 §2. ``neighbours="add/remove"``: the
thesis' own definition (Chen 2018 §2.1), with a *public* row count ``n`` ("we suppose n is known",
Chen 2018 §4.2.2) — it reproduces the text's noise scales of PriRP and PriBRP exactly.

The public row count. Every default, grid, split, SVT threshold and number of levels or bins is a
function of the argument ``n`` (the row count the data owner declared; the door passes a
dataset's public shape), never of ``len(data)``: two neighbouring data sets of different sizes
get the same parameters and the same ``epsilon_parts``, and only the noisy values differ. Without
``n`` a function uses ``len(data)`` under replace-one only (that relation fixes the size, so the
caller declares it public by choosing it) and refuses under add/remove, where the size is what a
neighbour changes (:func:`public_n`). A true size that differs from ``n`` costs accuracy (a
threshold ``θ·n`` that is reached later, a grid sized for ``n``), never privacy.
PriROC is the exception: its text's scales (Thm 11-12 count two changed partitions and
compose the two histograms sequentially) are what *replace-one* needs, so they are its
default, and ``"add/remove"`` halves its noise (see :func:`private_roc_curve`). The histogram
publishers (:mod:`.histograms`) are calibrated for add/remove; where a step is only
``2·eps``-DP under replace-one, it is run at ``eps/2`` in replace-one mode and says so in its
docstring. All Laplace noise comes from :func:`.mechanisms.laplace` (directly or through
:func:`.svt.sparse_vector` and :func:`.histograms.publish`).

Sources: Y. Chen, *Applying Differential Privacy with Sparse Vector Technique*, PhD thesis, Duke
University, 2018, Ch. 4 (Chen 2018); Y. Chen, A. Machanavajjhala, J. P. Reiter, A. F. Barrientos,
*Differentially Private Regression Diagnostics*, 2016, the conference version (Chen et al. 2016).
Errata of the texts followed: N0 ≈ θ²·n (Chen et al. 2016 writes θ²/n); Alg. 12 spends γ/2 per median on at
most two partitions per level; PriROC's privacy follows from Thm 11 (Thm 12 cites itself).
"""

# The public names are the submodules', and so is __all__ (a public name is declared once, in
# its module's __all__). The private names that other modules, the tests or the benchmarks use
# are imported too: dpwidgets.engine.diagnostics was one module, and other modules and the
# tests import its helpers (_publish, _uniform_bin, ...) from here; so are the library names
# the module held that the tests read (laplace, sparse_vector, _noisy_medians_of_runs). A test that
# patches one of these patches the submodule that looks it up (the package's copy is not what
# the code calls).
# ruff: noqa: F401, F403
from __future__ import annotations

from ..mechanisms import _noisy_medians_of_runs, laplace
from ..svt import sparse_vector
from . import (
    binned_residual_plot,
    bounds,
    checks,
    metrics,
    records,
    recursive_medians,
    residual_plot,
    roc,
)
from .binned_residual_plot import *
from .binned_residual_plot import _adjust_bins, binned_residuals_defaults
from .bounds import *
from .checks import *
from .checks import _publish, public_n
from .metrics import *
from .records import *
from .records import _fixed_interval_index, _interval_index, _uniform_bin
from .recursive_medians import *
from .recursive_medians import _median_cost_factor
from .residual_plot import *
from .residual_plot import residual_plot_defaults
from .roc import *

__all__ = [
    *records.__all__,
    *checks.__all__,
    *bounds.__all__,
    *residual_plot.__all__,
    *recursive_medians.__all__,
    *roc.__all__,
    *binned_residual_plot.__all__,
    *metrics.__all__,
]
