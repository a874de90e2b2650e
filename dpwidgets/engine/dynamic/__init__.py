"""Dynamic histogram release: DSFT, DSAT, DSAT under w-event privacy, and their baselines.

A series of N histogram snapshots ``H_1..H_N`` of one evolving dataset (an ``(N, U)`` array) is
released as N private histograms. Releasing every snapshot with ``epsilon/N`` (the baseline)
drowns it in noise; the distance-based samplers of Li 2017 Ch. 4 release a *new* private histogram
only when the current snapshot has moved far enough from the last release (at most ``C``
times), and repeat the last release otherwise.

Where things are
----------------
- :func:`dsft` — Li 2017 Alg. 7, fixed threshold ``T``.
- :func:`dsat` — Li 2017 Alg. 8, the threshold steered by a P controller: ``variant="paced"``
  (default, our improvement) or ``variant="text"`` (Alg. 8 as printed); see
  :data:`DSAT_VARIANTS`.
- :func:`dsat_w_event` — Li 2017 Alg. 9, DSAT under w-event privacy.
- Baselines: :func:`uniform_budget_release` (``epsilon/N`` per time point),
  :func:`fixed_sampling_release` (every ``N/C`` points), and Kellaris et al.'s w-event
  :func:`budget_distribution_release` (BD) and :func:`budget_absorption_release` (BA).
- Quality: :func:`range_query_error` (mean absolute error of random range-count queries,
  Li 2017 §4.5.1), :func:`random_range_queries`, :func:`update_ratio` (``C_i / i``, Def. 4.2.1),
  :func:`empirical_update_rate` (the data's update rate ``r``, §4.5.1).
- Helpers: :func:`dsft_k` (the budget split of Thm 4.3.4), :func:`paced_k` (the paced
  DSAT's split), :func:`sampling_noise_floor`, :func:`l1_sensitivity` (Lemma 4.2.1).
- The histogram publisher of the releases: ``publisher=`` (default ``"identity"``), or
  ``"auto"`` with the public ``shape=`` of a snapshot: :data:`PUBLISHER_RULE` (DAWA only on
  1-D histograms, identity on flattened multi-dimensional ones;
  :data:`ORDER_DEPENDENT_PUBLISHERS`).

Every function returns a :class:`DynamicRelease` (the ``(N, U)`` releases, the release points,
the public threshold trajectory, what each step spent). The releases themselves go through
:func:`.histograms.publish` (default ``"identity"``: Laplace per cell, the text's LPA), and
the decisions through :class:`.svt.SparseVector` (``variant="standard"``), so all Laplace noise
comes from :mod:`.mechanisms`; in analyst releases (inside ``floating_point_safe()``) the
distance tests of DSAT are exact comparisons on a grid (:class:`.mechanisms.ComparisonGrid`)
and BD/BA's real dissimilarities are released on a grid (:func:`.mechanisms.laplace_reals`)
before they are tested. The series is validated once; the identity releases of
the scheduled baselines are one draw for all their snapshots, the other publishers are called
per snapshot without re-validating it.

The modules of this package:

- :mod:`~dpwidgets.engine.dynamic.sampling` -- DSFT and DSAT;
  :mod:`~dpwidgets.engine.dynamic.w_event` -- DSAT under w-event privacy;
  :mod:`~dpwidgets.engine.dynamic.baselines` -- the user-level and w-event baselines.
- :mod:`~dpwidgets.engine.dynamic.quality` -- the quality measures.
- :mod:`~dpwidgets.engine.dynamic.result` -- :class:`DynamicRelease`;
  :mod:`~dpwidgets.engine.dynamic.common` -- the distance, its sensitivity, the publisher
  calls and the decisions' SVT; :mod:`~dpwidgets.engine.dynamic.checks` -- the checks;
  :mod:`~dpwidgets.engine.dynamic.constants` -- the public constants.

Every public name of the former single module ``dynamic.py`` is importable from here.

Neighbours and guarantees
-------------------------
User level (Li 2017 Def. 4.1.1; :func:`dsft`, :func:`dsat`, the two user-level baselines): two
series are neighbours when one is obtained from the other by adding or removing one user,
*with all of their occurrences* (one record in each of up to N snapshots). Each snapshot's
histogram then changes by one in one cell, so a release at one time point has L1 sensitivity
1 and the N releases compose sequentially.
w-event (Li 2017 Def. 4.1.3; Kellaris et al. 2014; :func:`dsat_w_event`, BD, BA): neighbours
differ by one user's records at time points inside one window of ``w`` consecutive points;
the guarantee is ``epsilon``-DP for every such window (equivalently: every window of ``w``
time points is charged at most ``epsilon``; :attr:`DynamicRelease.window_epsilons`).

The normalised L1 distance ``d(H_i, H~_j) = || H_i/|H_i| - H~_j^+ / |H~_j^+| ||_1`` (range
[0, 2]) has sensitivity ``Delta = 2/(n-1)`` (Lemma 4.2.1) where ``n`` is a *public* lower
bound on the snapshot sizes: the text keeps ``|D_i| = n`` fixed and known (500K, Table 4.2).
``cardinality`` is a required argument of :func:`dsft`, :func:`dsat` and :func:`dsat_w_event`:
it is never derived from the data (the smallest snapshot total is not public, and a release
calibrated to it, with ``Delta`` and the decision share published, is not DP).

Departures from the text (each is an erratum or a fix; see the function docstrings)
-------------------------------------------------------------------------------------
1. Decision noise. Alg. 7 draws ``T~ = T + Lap(2 Delta/eps1)`` and compares
   ``d + Lap(2 C Delta/eps1)``; Thm 4.2.1 charges the ⊤ answers ``eps1/2`` as if each noisy
   distance were a plain Laplace release. In SVT a ⊤ costs a shift of ``2 Delta`` of its query
   noise (the threshold moves by ``Delta`` and the distance may move ``Delta`` the other way;
   the distances are not monotonic in the data), so the printed scales are ``1.5 eps1``-DP. We
   run the decisions as standard SVT (Lyu, Su & Li 2017 Alg. 1) with an even split: threshold
   ``Lap(2 Delta/eps1)`` (the text's) and query noise ``Lap(4 c Delta/eps1)`` -- the scale
   whose variance ``32 c^2 Delta^2/eps1^2`` is what Lemma 4.3.3 and Thm 4.3.4 already use.
   ``c = C - 1``: the first release (time 1) and the forced last one are not SVT answers.
2. DSAT threshold (an erratum of the text: Alg. 8 adjusts ``T~_{i-1}``, eq. 4.2.5 ``T_{i-1}``). We
   adjust the *public* ``T_i`` (clamped to [0, 2]) from the public release count and compare
   against ``T_i + rho`` with the one secret ``rho`` of the SVT. The adjustment is then
   post-processing of released information and the decisions are SVT with adaptively chosen
   queries ``d_i - T_i``. (Clamping the noisy ``T~`` instead would mix the secret ``rho`` into
   the clamp, and the SVT proof no longer applies to the clamped steps.) The separate
   ``T_1 = T + Lap(Delta/eps1_hat)`` of §4.2.2 is not needed and not drawn.
3. w-event DSAT. One ``rho`` for an unbounded stream is not w-event private (⊤ answers outside
   the window would need paying for too), and Alg. 9 lines 9-11 compare ``count/i`` (``i`` the
   absolute time) to ``C/w``. We restart AboveThreshold (one fresh ``rho``) after each ⊤ with
   ``eps1/(C+1)`` per instance -- a window meets at most ``C + 1`` instances -- and feed the PID
   the window's own ratio ``count / min(i, w)``.
4. ``k`` of Thm 4.3.4 is used as ``eps1 = k·eps`` (Alg. 7 line 1) although its proof
   parametrises ``eps1:eps2 = k:1``; the text's ``k = 0.0532`` at ``C = 10`` (Fig. 4.2) does
   not follow from the formula for the US data's 27,648 bins (it gives 0.167). For small U the
   formula hits its cap ``1 - C/N`` (0.98 of the budget on the decisions for 20 bins).
5. ``C = 1``: no decision is ever made (the one release is time 1), so nothing is charged for
   decisions (``k = 0``; Alg. 7 would spend ``k eps`` on nothing); ``C = N`` with the default
   ``k``: every point can be released, ``k = 0`` (Thm 4.3.4's cap gives the same).
6. DSAT as printed does not adapt (``dsat(variant="text")`` keeps it). With
   ``e_i = |E_i - delta|/delta`` the controller's step is largest when the release ratio *meets*
   its target, and ``C_i/i`` starts far above ``C/N`` (time 1 is a release): the threshold
   climbs to 2 until ``i = N/C``, then falls to 0 within a few steps, releases, and climbs
   again -- a release every ``N/C`` points, fixed sampling with ``k eps`` taken from the
   releases. The default ``variant="paced"`` replaces the controller (log-threshold P term
   on the release *count* behind the schedule ``C t/N``, floored at twice the sampling-noise
   distance), measures the distance to the true snapshot at the last release (sensitivity
   ``2 Delta``), and sizes ``k`` from the decision noise it needs (:func:`paced_k`). Same
   privacy argument (SVT on adaptively chosen queries against a public threshold); the
   benchmark ``benchmarks/dynamic_dsat_design.py`` compares it with the text's version, fixed
   sampling and the baseline.

On the text's own data setup (tuples replaced by tuples of the same population) the
histograms only move by sampling noise: there is no change point to find and no version of
DSAT beats fixed sampling there (the published Fig. 4.4-4.5 are not reproduced; see
:func:`dpwidgets.datasets.census_like_series`, whose ``drift`` makes the periods real change
points).

References
----------
Li 2017 Ch. 4 (§4.1-4.5; Alg. 7, 8, 9; Lemma 4.2.1; Thms 4.2.1, 4.2.2, 4.3.4; Table 4.2).
Kellaris, Papadopoulos, Xiao, Papadias 2014, "Differentially private event sequences over
infinite streams", PVLDB 7(12) (w-event privacy, BD, BA). Lyu, Su, Li 2017 (Lyu, Su & Li 2017; SVT).
"""

# dpwidgets.engine.dynamic was one module: its public names are imported from the submodules,
# and its __all__ is theirs (a public name is declared once, in its module's __all__); no other
# module, test or benchmark uses one of its private names.
# ruff: noqa: F401, F403
from __future__ import annotations

from . import baselines, checks, common, constants, quality, result, sampling, w_event
from .baselines import *
from .checks import *
from .common import *
from .constants import *
from .quality import *
from .result import *
from .sampling import *
from .w_event import *

__all__ = [
    *constants.__all__,
    *result.__all__,
    *sampling.__all__,
    *w_event.__all__,
    *baselines.__all__,
    *common.__all__,
    *checks.__all__,
    *quality.__all__,
]
