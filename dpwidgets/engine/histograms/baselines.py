"""The two baselines every comparison starts from: Identity (LM, Laplace per cell) and
Uniform (a noisy total spread evenly).
"""

from __future__ import annotations

import numpy as np

from ..mechanisms import laplace
from .interface import _no_options, _register

__all__ = []


# ---------------------------------------------------------------------------------------------
# Identity (LM) and Uniform
# ---------------------------------------------------------------------------------------------


@_register(
    "identity",
    title="Identity (Laplace per cell, LM)",
    source="Dwork, McSherry, Nissim, Smith 2006, 'Calibrating noise to sensitivity in private data analysis'",
    dims=(1, 2),
    aliases=("lm",),
)
def _identity(x: np.ndarray, epsilon: float, rng: np.random.Generator, workload, **options):
    """Identity / Laplace mechanism: every cell plus Lap(1/epsilon).

    Privacy: the histogram has L1 sensitivity 1 under add/remove-one neighbours (2 under
    replace-one), so Lap(1/epsilon) per cell is epsilon-DP. Error: variance 2/epsilon^2 per cell.

    References: Dwork, McSherry, Nissim, Smith 2006.
    """
    _no_options("identity", options)
    return x + laplace(1.0 / epsilon, x.shape, rng=rng), {"measure": epsilon}, {}


@_register(
    "uniform",
    title="Uniform (noisy total spread evenly)",
    source="DPBench baseline (Hay et al. 2016); the Laplace mechanism on the total (Dwork et al. 2006)",
    dims=(1, 2),
)
def _uniform(x: np.ndarray, epsilon: float, rng: np.random.Generator, workload, **options):
    """Uniform: release the total with Lap(1/epsilon) and spread it evenly over the cells.

    Privacy: the total has sensitivity 1 under add/remove-one (0 under replace-one),
    so this is epsilon-DP.

    References: Hay et al. 2016 (DPBench's UNIFORM baseline).
    """
    _no_options("uniform", options)
    total = float(np.sum(x)) + float(laplace(1.0 / epsilon, rng=rng))
    return np.full(x.shape, total / x.size), {"measure": epsilon}, {"noisy_total": total}
