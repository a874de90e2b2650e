"""The empirical privacy-loss audit, and ready-to-run SVT counterexamples.

An epsilon-DP mechanism M satisfies ``P[M(D) ∈ E] <= exp(epsilon) P[M(D') ∈ E]`` for every pair
of neighbours D, D' and every output event E. The audit fixes D, D' and E, estimates both
probabilities by Monte Carlo and turns Clopper-Pearson bounds on them into a lower confidence
bound on the privacy loss: if that bound exceeds the epsilon a mechanism claims, the claim is
refuted (with the stated confidence). A bound at or below the claim proves nothing: an audit
can refute a guarantee, never establish one.

Where things are
----------------
- :func:`audit_privacy_loss` — the generic audit of any mechanism vectorised over trials.
- :class:`AuditResult` — every number a view needs; :meth:`AuditResult.from_counts` turns hit
  counts into bounds (no sampling) and :meth:`AuditResult.summary` into one sentence.
- :func:`svt_counterexample` / :class:`Counterexample` — the neighbouring query answers and
  the output event that break each broken SVT variant (Lyu, Su & Li 2017 Thm 3.5, §9.1, §9.2; Chen 2018 Thm 4).
- :func:`audit_samples` / :func:`output_features` — the black-box audit of any mechanism from
  its sampled outputs (dicts of public fields, arrays, tables): an event chosen among every
  statistic of the output on one half of the samples, bounded on the other half.
- :func:`audit_svt` — runs a variant of :mod:`.svt` on a counterexample and audits it; by
  default on the variant's counterexample sized for the audited epsilon (the rule is in
  :func:`svt_counterexample`'s Notes).

The modules of this package:

- :mod:`~dpwidgets.engine.audit.privacy_loss` -- the generic audit;
  :mod:`~dpwidgets.engine.audit.samples` -- the black-box audit of sampled outputs;
  :mod:`~dpwidgets.engine.audit.svt_audit` -- the audit of an SVT variant, on the
  counterexamples of :mod:`~dpwidgets.engine.audit.counterexamples`.
- :mod:`~dpwidgets.engine.audit.result` -- :class:`AuditResult` and its statistics.

Every public name of the former single module ``audit.py`` is importable from here.

Sources: M. Lyu, D. Su, N. Li, *Understanding the Sparse Vector Technique for Differential
Privacy*, PVLDB 10(6), 2017 (Lyu, Su & Li 2017); Y. Chen, *Applying Differential Privacy with
Sparse Vector Technique*, PhD thesis, Duke University, 2018, Ch. 3 on GPTT (Chen 2018). The SVT noise is drawn only
by :func:`dpwidgets.engine.svt.sparse_vector_trials`; nothing here knows a variant's scales.
"""

# dpwidgets.engine.audit was one module: its public names are imported from the submodules
# (no other module, test or benchmark uses one of its private names).
# ruff: noqa: F401
from __future__ import annotations

from . import counterexamples, privacy_loss, result, samples, svt_audit
from .counterexamples import (
    COUNTEREXAMPLES,
    Counterexample,
    svt_counterexample,
)
from .privacy_loss import (
    audit_privacy_loss,
)
from .result import (
    MAX_TRIALS,
    AuditResult,
    Event,
    Mechanism,
    ProgressArg,
)
from .samples import (
    DISCRETE_VALUES,
    FEATURE_ELEMENTS,
    audit_samples,
    output_features,
)
from .svt_audit import (
    audit_svt,
)

# Each module owns its list of public names; the package exports them all.
__all__ = [
    *result.__all__,
    *privacy_loss.__all__,
    *counterexamples.__all__,
    *svt_audit.__all__,
    *samples.__all__,
]
