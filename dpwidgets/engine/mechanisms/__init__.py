"""Basic mechanisms: the noise samplers of the package and the exponential mechanism.

Every mechanism in ``dpwidgets`` that adds Laplace noise draws it from this module, so there
is exactly one place where noise is generated. :func:`laplace` is the fast continuous sampler
(teaching mode); :func:`discrete_laplace`, :func:`count_laplace` and :func:`grid_laplace`
(section "Floating-point-safe noise" below, :data:`NOISE_SAMPLERS`) release integers or
multiples of a power of two whose set of possible values does not depend on the data, as
analyst-mode releases need (Mironov 2012).

Floating-point-safe mode
------------------------
The door (:meth:`dpwidgets.session.Session.release` in analyst mode) runs every mechanism
inside :func:`floating_point_safe`. Inside it:

* :func:`laplace` draws grid noise ``gamma * discrete_laplace(scale / gamma)``, ``gamma`` the
  largest power of two <= ``min(1, scale / 2**GRID_BITS)`` (Canonne, Kamath & Steinke 2020).
  Integer-valued queries (counts, histograms, stream counts, partition sizes, sums of counts)
  plus this noise lie on the grid ``gamma Z`` whatever the data, and a shift of ``Delta`` (a
  multiple of gamma) costs at most ``Delta / scale``: the nominal epsilon. Everything computed
  from such noisy counts (least squares in HB/DAWA, smoothing, isotonic regression, ratios)
  is post-processing, hence safe too.
* Real-valued statistics that are *released* go through :func:`laplace_reals` (rounded to a
  power-of-two grid, then :func:`grid_laplace`, same epsilon): SVT's ``epsilon3`` numeric
  answers (``svt.py``), DPCopula's noisy Kendall tau and MLE correlations (``synth.py``),
  PriBRP's noisy sums of predictions and residuals (``diagnostics.py``), EFPA's Fourier
  coefficients (``histograms.py``).
* Selections: :func:`exponential_mechanism` (MWEM's query selection, EFPA's choice of the
  number of coefficients, the top-c ``em`` selection of ``svt.py``) runs
  :func:`_base2_selection`, Ilvento 2020's base-2 mechanism sampled with integer
  arithmetic; its loss, rounding of the qualities and implementation error included, is at
  most the epsilon it is given.
* SVT-style comparisons of noisy scores with a noisy threshold, whose noisy values are never
  released (:mod:`.svt`: every variant, the interactive :class:`~.svt.SparseVector` that
  DSAT's decisions use, SVT-ReTr), compare int64 grid steps of one
  :class:`ComparisonGrid`: scores and thresholds rounded to a power-of-two grid, every noise
  discrete Laplace in steps with the scales widened to pay for the rounding, so each
  comparison is exact and the run spends its nominal epsilon.
* Tests whose noisy statistic may as well be released are released on a grid and then
  tested (post-processing): DAWA's partition costs (``histograms.py``), BD/BA's
  dissimilarities (``dynamic.py``).
* Smooth-sensitivity medians (Cauchy noise: s-RecursiveMedians for PriBRP's bins and PriROC's
  thresholds with ``defaults="text"``) are released on the grid of :func:`median_grid` from a
  Cauchy sampler with relative precision in both tails, their implementation error paid out
  of the budget (:func:`smooth_sensitivity_median`'s Notes).
* Secret sampling coins (personalized DP's Sample mechanism, Li 2017 Def. 5.1.1) come from
  :func:`bernoulli_coins`, whose probability is rounded *down* to a multiple of 2**-53, so the
  amplification argument holds with the probability actually used.

* PeGaSus's Grouper (``streams.py``) computes each deviation exactly (``n1 dev`` in
  integers, the quotient rounded once, capped at ``DEV_MAX``) and compares it with ``theta
  + noise - noise`` whose terms are whole steps of one :class:`ComparisonGrid`, so the
  right-hand side is an exact double; the rounding of the quotient (< a quarter step) is
  inside the grid's ``K``, and the widened scales pay for it.

Teaching runs and previews stay continuous and fast (outside the context), and say so in
their guarantees.

Where things are
----------------
The package's modules, by concern (every name of the former single module ``mechanisms.py``,
public or private, is importable from ``dpwidgets.engine.mechanisms`` itself):

- :mod:`~dpwidgets.engine.mechanisms.noise` -- :func:`laplace`, :func:`laplace_reals`,
  :func:`laplace_mechanism`: the one Laplace door.
- :mod:`~dpwidgets.engine.mechanisms.context` -- the switch :func:`floating_point_safe`,
  :func:`is_floating_point_safe`.
- :mod:`~dpwidgets.engine.mechanisms.checks` -- :data:`MAX_DRAWS` and the checks of ``rng``
  and ``size`` every sampler shares.
- :mod:`~dpwidgets.engine.mechanisms.discrete` -- floating-point-safe noise:
  :func:`discrete_laplace`, :func:`count_laplace`, :func:`grid_laplace`,
  :data:`NOISE_SAMPLERS`, :data:`GRID_BITS`.
- :mod:`~dpwidgets.engine.mechanisms.selection` -- :func:`exponential_mechanism` and the
  base-2 exponential mechanism it runs inside :func:`floating_point_safe`.
- :mod:`~dpwidgets.engine.mechanisms.comparisons` -- :class:`ComparisonGrid`, for SVT-style
  comparisons.
- :mod:`~dpwidgets.engine.mechanisms.smooth_median` -- the smooth-sensitivity median:
  :func:`median_smooth_sensitivity`, :func:`smooth_sensitivity_median`, :func:`median_grid`.
- :mod:`~dpwidgets.engine.mechanisms.coins` -- :func:`bernoulli_coins`.
"""

# The private names that other modules, the tests or the benchmarks use are imported too: dpwidgets.engine.mechanisms was one module, and other
# modules, the tests and the benchmarks import its helpers (_geometric_levels, _EM_WINDOW, ...)
# from here.
# ruff: noqa: F401
from __future__ import annotations

from . import checks, coins, comparisons, context, discrete, noise, selection, smooth_median
from .checks import (
    MAX_DRAWS,
)
from .coins import (
    bernoulli_coins,
)
from .comparisons import (
    ComparisonGrid,
)
from .context import (
    floating_point_safe,
    is_floating_point_safe,
)
from .discrete import (
    GRID_BITS,
    MAX_DISCRETE_SCALE,
    NOISE_SAMPLERS,
    NOISE_SLACK,
    _acceptance,
    _calibrated_scale,
    _geometric_levels,
    _period,
    count_laplace,
    discrete_laplace,
    grid_laplace,
)
from .noise import (
    laplace,
    laplace_mechanism,
    laplace_reals,
)
from .selection import (
    _EM_WINDOW,
    SELECTION_SLACK,
    _base2_weights,
    _check_selection,
    base2_exponential_mechanism,
    base2_selection_probabilities,
    exponential_mechanism,
)
from .smooth_median import (
    MEDIAN_FLOOR_BITS,
    MEDIAN_GRID_BITS,
    MEDIAN_SLACK,
    SMOOTH_MEDIAN_VARIANTS,
    SmoothSensitivityMedian,
    _cauchy_draws,
    _grid_medians_of_runs,
    _median_smooth_sensitivities,
    _median_smooth_sensitivity_sorted,
    _noisy_medians_of_runs,
    _safe_alpha,
    median_grid,
    median_smooth_sensitivity,
    smooth_sensitivity_median,
)

# Each module owns its list of public names; the package exports them all, the samplers and
# the selection first.
__all__ = [
    *noise.__all__,
    *selection.__all__,
    *context.__all__,
    *smooth_median.__all__,
    *coins.__all__,
    *discrete.__all__,
    *comparisons.__all__,
    *checks.__all__,
]
