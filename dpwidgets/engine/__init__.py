"""The DP engine: pure numpy/scipy, no UI imports.

| module | what |
|---|---|
| :mod:`.mechanisms` | the one Laplace sampler, the exponential mechanism, the smooth-sensitivity median |
| :mod:`.svt` | the Sparse Vector Technique family, correct and broken; top-c selection; FNR/SER |
| :mod:`.attacks` | the GPTT reconstruction attack; the empirical privacy-loss audit (from :mod:`.audit`) |
| :mod:`.histograms` | 1-D/2-D histogram publishers behind one ``publish()`` (LM, HB, DAWA, AHP, AG, MWEM, EFPA) |
| :mod:`.diagnostics` | private bounds, PriRP, PriROC, PriBRP, their metrics |
| :mod:`.streams` | PeGaSus (batch and online), window sums and event monitors, HS/PHS-PGS, baselines |
| :mod:`.dynamic` | dynamic histogram release: DSFT, DSAT (PID threshold), w-event, baselines |
| :mod:`.synth` | DPCopula synthetic data, its baselines and peers, range-query evaluation |
| :mod:`.personalized` | personalized DP: Minimum, Sampling, privacy-aware/utility partitioning, ensembles |
| :mod:`.errors` | the one error root: refusals (``BudgetExceededError``, ...) and ``ReleaseFailed`` |

The privacy ledger lives in :mod:`dpwidgets.persistence`; ``PrivacyLedger`` is still importable
from here (loaded on first use, so that importing the engine does not load persistence).
"""

from .errors import BudgetExceededError
from .svt import VARIANTS, sparse_vector, top_c

__all__ = ["BudgetExceededError", "PrivacyLedger", "VARIANTS", "sparse_vector", "top_c"]


def __getattr__(name: str):
    if name == "PrivacyLedger":
        from ..persistence import PrivacyLedger

        return PrivacyLedger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
