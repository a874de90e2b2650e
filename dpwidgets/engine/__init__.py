"""The DP engine: pure numpy/scipy, no UI imports.

| module | what |
|---|---|
| :mod:`.budget` | the privacy ledger (SQLite, shared by processes, never exceedable) |
| :mod:`.mechanisms` | the one Laplace sampler, the exponential mechanism, the smooth-sensitivity median |
| :mod:`.svt` | the Sparse Vector Technique family, correct and broken; top-c selection; FNR/SER |
| :mod:`.attacks` | the GPTT reconstruction attack; the empirical privacy-loss audit (from :mod:`.audit`) |
| :mod:`.histograms` | 1-D/2-D histogram publishers behind one ``publish()`` (LM, HB, DAWA, AHP, AG, MWEM, EFPA) |
| :mod:`.diagnostics` | private bounds, PriRP, PriROC, PriBRP, their metrics |
| :mod:`.streams` | PeGaSus (batch and online), window sums and event monitors, HS/PHS-PGS, baselines |
| :mod:`.dynamic` | dynamic histogram release: DSFT, DSAT (PID threshold), w-event, baselines |
| :mod:`.synth` | DPCopula synthetic data, its baselines and peers, range-query evaluation |
| :mod:`.personalized` | personalized DP: Minimum, Sampling, privacy-aware/utility partitioning, ensembles |
"""

from .budget import BudgetExceededError, PrivacyLedger
from .svt import VARIANTS, sparse_vector, top_c

__all__ = ["BudgetExceededError", "PrivacyLedger", "VARIANTS", "sparse_vector", "top_c"]
