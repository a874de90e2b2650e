"""The DP engine: pure numpy/scipy, no UI imports.

Modules: :mod:`.budget` (the privacy ledger), :mod:`.mechanisms` (Laplace, exponential
mechanism, smooth-sensitivity median), :mod:`.svt` (the Sparse Vector Technique family, correct
and broken, and top-c selection), :mod:`.attacks` (the reconstruction attack and the empirical
privacy-loss audit).
"""

from .budget import BudgetExceededError, PrivacyLedger

__all__ = ["BudgetExceededError", "PrivacyLedger"]
