"""Private release of counting streams in real time: PeGaSus, its smoothers, queries,
hierarchies and the baselines it is compared with (Chen 2018 Ch. 5).

A stream is a sequence of counts ``c_1, c_2, ...`` (one per time step, e.g. the number of
users seen at one WiFi access point in each five-minute interval). Every algorithm here is
*real time*: the estimate released at step t uses only ``c_1..c_t``.

Where things are
----------------
- :func:`pegasus` / :class:`PegasusStream` — Chen 2018 Alg. 15 (Perturb-Group-Smooth): the
  Perturber (Laplace), the Deviation-Based Grouper :func:`deviation_grouper` (Alg. 16) and the
  smoothers of §5.3.3 (:data:`SMOOTHERS`: median, average, James-Stein) plus
  :func:`adaptive_window_smoother`. The batch function runs the online object, so both give
  bit-identical output for the same ``rng``. The Grouper is sequential (each step's group
  depends on the previous partition): pushes and short feeds run it one step at a time
  (``_run_core``), longer feeds and the hierarchies vectorised around its chain of groups
  (``_vector_core``), with the same decisions and outputs bit for bit. Two sets of defaults, :data:`DEFAULTS`:
  ``defaults="new"`` (this package's) and ``defaults="text"`` (Chen 2018 §5.6.1).
- Queries by post-processing (no extra budget, §5.4): :func:`window_sum_smoother` (WSS,
  Alg. 17), :func:`sliding_window_sums`, :func:`jump_drop_events`, :func:`low_signal_events`,
  :func:`event_roc`.
- Hierarchies (§5.5): :class:`Hierarchy`, :func:`hs_pegasus` (HS-PGS), :func:`phs_pegasus`
  (PHS-PGS, Alg. 18), :func:`prune_released` (pruning from the estimates released at t − 1,
  free), :func:`hs_laplace` (HS-LM).
- Baselines (§5.6): :func:`laplace_stream` (LM), :func:`backward_smoothing` (BS_k),
  :func:`binary_tree_window_sums` (SW_w, the binary-tree sliding-window counter).
- Quality: :func:`scaled_total_l1`, :func:`average_l1`.

The modules of this package:

- :mod:`~dpwidgets.engine.streams.perturb_group_smooth` -- PeGaSus: the release, the online
  form, the batch function, the Grouper alone; its cores
  :mod:`~dpwidgets.engine.streams.scalar_core` (one step at a time) and
  :mod:`~dpwidgets.engine.streams.vector_core` (vectorised);
  :mod:`~dpwidgets.engine.streams.adaptive_smoother`.
- :mod:`~dpwidgets.engine.streams.queries`, :mod:`~dpwidgets.engine.streams.hierarchies`,
  :mod:`~dpwidgets.engine.streams.baselines`, :mod:`~dpwidgets.engine.streams.quality`.
- :mod:`~dpwidgets.engine.streams.constants` -- the public constants and defaults, the cores'
  tuning constants; :mod:`~dpwidgets.engine.streams.checks` -- input checks, the budget
  split, the Grouper's noise.

Every name of the former single module ``streams.py``, public or private, is importable
from here.

Privacy
-------
Neighbours are *event-level* (Chen 2018 §5.2.3, Def. 7): two stream prefixes differ by adding or
removing one tuple (user, state, time), so one count ``c_t`` of one state changes by 1 (and,
in a hierarchy, every aggregate above that state). Every release here is ``epsilon``-DP under
that relation; ``epsilon_parts`` says what each step spent and sums to ``epsilon``. All Laplace
noise comes from :func:`.mechanisms.laplace`.

Errata and readings (Chen 2018 Ch. 5)
-------------------------------
- Eq. 5.7 (James-Stein) ends in ``+ c̃_t``; the text says the estimate "shrinks to the mean",
  which is ``avg + (1 - (|G|-1)τ²/Σ(c̃_i - avg)²)(c̃_t - avg)``; that is implemented, with
  ``τ² = 2/ε_p²`` (the Laplace noise variance) and no positive-part truncation (as written).
- Thm 17's proof says "line (4)" and "line (7)"; the noise is drawn on Alg. 16 lines 8 and 11.
- BS_k (§5.6.1: "for any t >= k, ĉ_k is updated as Σ_{i=t-k}^t ĉ_i^LM/(k+1)") is read as
  the trailing mean of the last k+1 Laplace outputs, ĉ_t = mean(ĉ^LM_{t-k..t}).
- Alg. 18's PRUNE compares ``c_t(agg) + Lap(2/ε_pr)`` with ``β + Lap(2/ε_pr)`` at every node
  and Thm 20 calls this the Sparse Vector Technique. The tree's comparisons are not one SVT
  run: fresh threshold noise per node does not give the SVT bound along a root-to-leaf path
  (up to h comparisons there), and one threshold noise shared by the whole tree is not private
  for the pruned nodes off the changed path. :func:`phs_pegasus` therefore prunes with
  ``c_t(agg) + Lap(h/ε_pr) < β``: the Laplace mechanism, ``ε_pr/h`` per level, parallel within
  a level (disjoint states) and sequential over the h levels — ``ε_pr``-DP with no SVT claim.
  The other way out costs nothing: prune from the estimates already released at t − 1
  (:func:`prune_released`, ``hs_pegasus(..., beta=)``), post-processing that saves no budget.
- The defaults of §5.6.1 (θ = 5/ε_g with Lap(4/ε_g) on θ and Lap(8/ε_g) on each deviation
  test) make every scale of the Grouper a multiple of 1/ε_g: on a flat stretch (dev = 0) the
  partition does not depend on ε, and open groups are short (a few steps). The median
  smoother then gains only a fixed factor over LM there, about what BS_1 gains, so BS_k with
  k >= 2 beats PeGaSus on flat or sparse streams, and HS-PGS stays close to HS-LM. The text's
  Fig. 5.3 and 5.8 report far larger gains; Alg. 16 as printed does not reproduce them (the
  benchmarks ``benchmarks/streams_unit_counts.py`` and ``benchmarks/streams_hierarchy.py``
  measure both). θ is public, so a larger θ costs no privacy
  and gives longer groups. The defaults here are therefore new (``defaults="new"``): θ =
  160/ε_g, ε_g = 0.05ε, the threshold/test split of Lyu, Su & Li 2017 and an adaptive
  trailing-window smoother; ``defaults="text"`` restores §5.6.1 exactly.

References
----------
- Y. Chen, *Applying Differential Privacy with Sparse Vector Technique*, PhD thesis, Duke
  University, 2018, Ch. 5 ("Chen 2018").
- M. Lyu, D. Su, N. Li, *Understanding the Sparse Vector Technique for Differential Privacy*,
  PVLDB 10(6), 2017 ("Lyu, Su & Li 2017").
"""

from __future__ import annotations

from . import baselines, checks, constants, hierarchies, perturb_group_smooth, quality, queries  # noqa: F401
from .adaptive_smoother import (  # noqa: F401
    _trailing_medians,
    adaptive_window_smoother,
)
from .baselines import (  # noqa: F401
    StreamRelease,
    WindowSums,
    backward_smoothing,
    binary_tree_window_sums,
    laplace_stream,
)
from .checks import (  # noqa: F401
    DEV_MAX,
    _grouper_scales,
    deviation,
)
from .constants import (  # noqa: F401
    _CHUNK,
    _VECTOR_MIN,
    ADAPTIVE_SMOOTHER,
    DEFAULTS,
    LYU_THRESHOLD_SHARE,
    MAX_WINDOW,
    NEIGHBOURS,
    SMOOTHERS,
)
from .hierarchies import (  # noqa: F401
    Hierarchy,
    HierarchyResult,
    hs_laplace,
    hs_pegasus,
    phs_pegasus,
    prune_released,
)
from .perturb_group_smooth import (  # noqa: F401
    PegasusResult,
    PegasusStream,
    deviation_grouper,
    pegasus,
)
from .quality import (  # noqa: F401
    average_l1,
    scaled_total_l1,
)
from .queries import (  # noqa: F401
    EventRoc,
    _check_real,
    event_roc,
    jump_drop_events,
    jump_drop_statistic,
    low_signal_events,
    sliding_window_sums,
    window_sum_smoother,
)
from .scalar_core import (  # noqa: F401
    _GroupState,
    _run_core,
)
from .vector_core import (  # noqa: F401
    _running_median,
    _vector_core,
)

# Each module owns its list of public names; the package exports them all.
__all__ = [
    *constants.__all__,
    *perturb_group_smooth.__all__,
    *checks.__all__,
    *queries.__all__,
    *hierarchies.__all__,
    *baselines.__all__,
    *quality.__all__,
]
