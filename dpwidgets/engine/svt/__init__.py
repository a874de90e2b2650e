"""The Sparse Vector Technique (SVT) family, correct and broken, and private top-c selection.

SVT answers a stream of queries with ⊤ ("above the threshold") or ⊥ and pays only for the ⊤'s:
one noisy threshold is drawn, every query gets fresh noise, and the algorithm stops after c ⊤.
The literature contains many variants; several of them are not private at all. This module
implements all of them from one table, :data:`VARIANTS`, so that the correct ones can be used
and the broken ones can be shown failing (the audit in :mod:`.attacks` imports
:func:`sparse_vector_trials` for that).

Where things are
----------------
The package's modules, by concern (every name below is importable from
``dpwidgets.engine.svt`` itself, as before the split):

=====================  ======================================================================
module                 what
=====================  ======================================================================
:mod:`.variants`       :data:`VARIANTS`, :class:`SVTVariant`, :class:`SVTNoise`,
                       :func:`default_ratio`, and the checks of every parameter, before any
                       noise is drawn
:mod:`.run`            :func:`sparse_vector` (:class:`SVTResult`), :func:`sparse_vector_trials`
                       (:class:`SVTTrials`), :class:`SparseVector` (:class:`SVTAnswer`,
                       :class:`SVTExhausted`): one run, many, one query at a time
:mod:`.selection`      :func:`top_c`, :func:`false_negative_rate`, :func:`score_error_rate`
=====================  ======================================================================

- :data:`VARIANTS` — one :class:`SVTVariant` per name: source, guarantee, noise scales
  (each variant's scales are written once, in its ``_noise_*`` function just above the table).
- :func:`sparse_vector` — one run over a vector of query answers -> :class:`SVTResult`.
- :func:`sparse_vector_trials` — many independent runs at once -> :class:`SVTTrials`.
- :class:`SparseVector` — the interactive form: one query at a time, refuses after c ⊤.
- :func:`top_c` — non-interactive top-c selection by the exponential mechanism or by SVT with
  retraversal (Lyu, Su & Li 2017 §5); :func:`false_negative_rate`, :func:`score_error_rate` (Lyu, Su & Li 2017 §6).

Sources: M. Lyu, D. Su, N. Li, *Understanding the Sparse Vector Technique for Differential
Privacy*, PVLDB 10(6), 2017 (Lyu, Su & Li 2017); Y. Chen, *Applying Differential Privacy with
Sparse Vector Technique*, PhD thesis, Duke University, 2018, Ch. 3 on GPTT and the generalized
SVT (Chen 2018).

Budget convention
-----------------
``epsilon`` is always the *total* budget the caller intends to spend. For ``standard`` it is
split as ``epsilon1 + epsilon2 + epsilon3 = epsilon`` (Lyu, Su & Li 2017 Thm 4.7): ``epsilon3`` (numeric
outputs of ⊤ queries, Alg. 7 line 8) is taken out first and ``epsilon1:epsilon2 = 1:ratio``
divides the rest. The other variants split ``epsilon`` the way their source does; for the broken
ones ``epsilon`` is only the *nominal* budget — :meth:`SVTVariant.privacy_loss` gives the loss
actually incurred (``math.inf`` when none is bounded).
"""

# The private names that other modules, the tests or the benchmarks use are imported too: dpwidgets.engine.svt was one module, and other modules
# and the tests import its helpers (_first_hits, _check_params, ...) from here.
# ruff: noqa: F401
from . import run, selection, variants
from .run import (
    MAX_TRIALS,
    SparseVector,
    SVTAnswer,
    SVTExhausted,
    SVTResult,
    SVTTrials,
    _first_at_or_above,
    _Plan,
    sparse_vector,
    sparse_vector_trials,
)
from .selection import (
    MAX_PASSES,
    _check_selection,
    _first_hits,
    _retraversals,
    false_negative_rate,
    score_error_rate,
    top_c,
)
from .variants import (
    MAX_CUTOFF,
    VARIANTS,
    SVTNoise,
    SVTVariant,
    _check_params,
    _eps,
    _optimal_ratio,
    _variant,
    default_ratio,
)

# Each module owns its list of public names; the package exports them all.
__all__ = [
    *variants.__all__,
    *run.__all__,
    *selection.__all__,
]
