"""Differentially private synthetic data: DPCopula (Kendall, MLE, hybrid) and its evaluation.

DPCopula (Li 2017 Ch. 3) releases a table of ``m`` integer-coded attributes as synthetic records
drawn from a Gaussian copula: one DP histogram per attribute gives DP margins, a DP
correlation matrix gives the dependence, and Gaussian samples ``Z ~ N(0, P)`` are pushed
through ``U = Phi(Z)`` and the inverse DP margins ``X_j = F~_j^{-1}(U_j)`` (Li 2017 Alg. 3).

Where things are
----------------
The package's modules, by concern (every name below is importable from
``dpwidgets.engine.synth`` itself, as before the split):

- :mod:`~dpwidgets.engine.synth.copula` -- :func:`dpcopula` and its hybrid.
- :mod:`~dpwidgets.engine.synth.margins` -- the DP margins and the sampling (Alg. 1 step 1,
  Alg. 3).
- :mod:`~dpwidgets.engine.synth.dependence` -- DP Kendall's tau, DP MLE,
  :func:`repair_correlation`, :class:`ConcordanceMemo`; :mod:`~dpwidgets.engine.synth.ties`
  -- the tie correction of tau on discrete attributes.
- :mod:`~dpwidgets.engine.synth.domains` -- validation, integer coding and
  :func:`resolve_domains`; :mod:`~dpwidgets.engine.synth.result` -- :class:`SynthResult`.
- :mod:`~dpwidgets.engine.synth.baselines` -- the baselines and peers;
  :mod:`~dpwidgets.engine.synth.evaluation` -- range queries and the comparisons.

- :func:`dpcopula` -- Li 2017 Alg. 4 (Kendall's tau, the default), Alg. 1-2 (``method="mle"``)
  and Alg. 6 (the hybrid for small-domain attributes, on by default).
- Baselines: :func:`independent_synth` (DP margins only, no dependence: the dependence-free
  baseline DPCopula is judged against), :func:`laplace_histogram_synth` (the Laplace
  mechanism on the full-domain histogram, where it fits in memory), :func:`peer_synth`
  (today's peers AIM and MST from OpenDP's ``mbi`` extra, imported lazily).
- Evaluation: :func:`random_range_queries` (random hyper-rectangles over all attributes,
  Li 2017 §3.3.1), :func:`range_count_error` (relative error with a sanity bound),
  :func:`marginal_comparison` (per-column total variation distance),
  :func:`dependence_comparison` (Kendall / Pearson matrices and their difference).
- Helpers: :func:`repair_correlation` (Li 2017 Alg. 5 step 3), :func:`kendall_sample_size`
  (the sampling rule of Li 2017 §3.2.2), :func:`resolve_domains`, :class:`ConcordanceMemo`
  (the per-row concordance counts of a public table, kept between releases: Kendall's tau of
  a later release costs the rows left out of its sample).

Every release returns a :class:`SynthResult` (the synthetic DataFrame, what each step
spent, the DP correlation matrix, the DP margins, the guarantee).

Neighbours and guarantee
------------------------
Add/remove one record (Li 2017 Def. 3.1.1). Every release here is ``epsilon``-DP for that
relation (``2 * epsilon``-DP under replace-one), *given public attribute domains*. The
record count ``n`` is **not** assumed public: the synthetic size and the number ``t`` of
rows Kendall's tau is computed on come from DP outputs (see :func:`dpcopula`, Notes).
When ``domains=None`` the domains are read from the data, which is not private (a
:class:`DomainFromDataWarning` is emitted and the result's ``guarantee`` says so); in
analyst use the caller must declare them.

Departures from the text (each is argued in :func:`dpcopula`'s Notes)
----------------------------------------------------------------------
1. Kendall sensitivity ``4/t`` (``t`` = rows tau is computed on) instead of ``4/(n+1)``:
   Lemma 3.2.1 bounds adding a record to a set of ``n``; removing one from a set of ``n``
   needs ``4/n``. With the text's sample size ``n^ + 1 = ceil(50 m(m-1)/eps2)`` the two
   agree.
2. Thm 3.2.2 states ``epsilon = m eps1 + C(m,2) eps2``; its proof (followed here) gives
   ``eps1 + eps2 = epsilon`` with ``eps1/m`` per margin and ``eps2/C(m,2)`` per pair.
3. eq. 3.1.6 prints ``1{X >= x}``; the empirical CDF counts ``1{X <= x}`` (used by the MLE
   pseudo-copula data, with mid-ranks for ties).
4. DP MLE (Alg. 2) uses i.i.d. random block assignment (so one record changes one block)
   and the normal-scores correlation of each block (the closed-form Gaussian-copula
   estimator) instead of a numerical likelihood maximisation.
5. Alg. 6 leaves the partition-count budget open ("with eps1"); we give the partition
   counts the share ``eps1 * m1/m`` that the ``m1`` small attributes' margins would have had.

Defaults that differ from the text (measured, each switchable back; see :func:`dpcopula`)
------------------------------------------------------------------------------------------
6. Margins through DAWA (``publisher="dawa"``), not EFPA: EFPA keeps a few Fourier
   coefficients and needs all of them -- at ``sqrt(d)`` times Laplace's noise -- for a
   margin with a point mass (a zero income, a top code), so on the census-shaped tables
   DPCopula's range-query error with EFPA margins is many times that with DAWA margins, and
   no better than a dependence-free baseline; on smooth margins the two are close
   (``benchmarks/synth_margin_publishers.py``, ``benchmarks/synth_census.py`` and
   ``benchmarks/synth_synthetic.py`` measure it). ``publisher="efpa"`` is the text's
   configuration.
7. Noisy margins are projected onto the non-negative histograms with the same noisy total
   (Norm-Sub, ``margin_fit="project"``); the text does not say how it removes negatives.
8. Kendall's tau-b (tie-corrected with the DP margins, post-processing) instead of tau-a,
   and for pairs with a tied attribute (a DP margin with sum p^2 > 0.25) the latent
   correlation calibrated by simulation to reproduce that tau-b instead of
   ``sin(pi tau / 2)`` (``tie_correction=False`` is the text's estimator); tau on at least
   every row the DP record count allows when the copula models the whole table
   (``t = round(n~)``, sensitivity ``4/t``; ``sample_size="floor"`` is the previous
   ``max(text rule, 20,000)``, which stays the rule inside the hybrid's partitions, and
   ``sample_size="text"`` the text's rule, which samples fewer rows the larger epsilon is).
9. The hybrid partitions by the small attributes only while the number of partitions stays
   within ``max_partitions`` (default 8; smallest domains first), not by all of them: each
   partition gets its own noisy margins, and thousands of partitions make the synthetic table
   worse than the dependence-free baseline (``benchmarks/synth_hybrid.py``). The text's tables (2 and
   8 partitions) are unaffected.
10. The hybrid partitions only when the DP size per partition supports the margins it must
    pay for: ``epsilon * n~ / (P * m_c) >= hybrid_min_support`` (default 500), with ``n~``
    the sum of the released noisy partition counts and ``m_c`` the number of attributes the
    copula models in each partition -- post-processing of a released value and public
    parameters. Otherwise the small attributes join the copula, their margins taken from the
    released counts (nothing more is spent). At small epsilon the text's partitions cost
    more error than they save, at large epsilon the rule partitions as the text does
    (``benchmarks/synth_hybrid.py``); the threshold counts margins, not only records, because
    a table with more copula attributes needs more support per partition
    (``benchmarks/synth_hybrid_rule.py``). ``hybrid_min_support=0`` is the text's rule.

References
----------
Li 2017 Ch. 3 (§3.1-3.3; Alg. 1-6; Lemma 3.2.1; Thms 3.2.1, 3.2.2, 3.2.4; Table 3.2).
Li, Xiong, Jiang, "DPCopula: differentially private data synthesization via copula
functions", EDBT 2014. Rousseeuw, Molenberghs 1993 (eigenvalue repair).
McKenna, Miklau, Sheldon 2021 (MST); McKenna, Mullins, Sheldon, Miklau 2022 (AIM).
"""

# The public names are the submodules', and so is __all__ (a public name is declared once, in
# its module's __all__). The private names that other modules, the tests or the benchmarks use
# are imported too: dpwidgets.engine.synth was one module, and other modules and the tests
# import its helpers (_dp_kendall, _hybrid_attributes, ...) from here; so are the
# library names the module held (the tests use synth.special and synth.laplace_reals).
# ruff: noqa: F401, F403
from scipy import special, stats

from ..histograms import PUBLISHERS, publish
from ..mechanisms import laplace_reals
from . import baselines, copula, dependence, domains, evaluation, margins, result, ties
from .baselines import *
from .copula import *
from .copula import _copula_release, _hybrid_attributes, _supported_partition
from .dependence import *
from .dependence import (
    _concordance_sums,
    _correlation_from_tau,
    _dp_kendall,
    _dp_mle,
    _midranks_by_block,
    _row_concordance,
    _ties,
)
from .domains import *
from .domains import (
    MAX_DOMAIN_SIZE,
    _check_publisher,
    _guarantee,
    _prepare,
)
from .evaluation import *
from .margins import *
from .margins import (
    _cdf,
    _cholesky,
    _count_at_most,
    _distribution,
    _inverse_cdf,
    _project_nonnegative,
    _sample_copula,
)
from .result import *
from .ties import *
from .ties import (
    _calibrate_tied_pairs,
    _tau_b_from_table,
    _tie_corrected_tau,
    _tie_correction_mask,
)

__all__ = [
    *result.__all__,
    *copula.__all__,
    *baselines.__all__,
    *domains.__all__,
    *margins.__all__,
    *dependence.__all__,
    *ties.__all__,
    *evaluation.__all__,
]
