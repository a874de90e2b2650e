"""Helpers shared by the engine's result objects (private to the engine)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["eps_text", "frozen", "readonly"]


def eps_text(epsilon: float) -> str:
    """An ε for a guarantee in words: 3 significant digits, rounded up (a guarantee may be
    stated weaker than it is, never stronger): 1/30 reads 0.0334, 0.1 reads 0.1 and 0.3
    computed as 3 × 0.1 reads 0.3 (within 1e-9 relative of a 3-digit value, that value)."""
    x = float(epsilon)
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    near = float(f"{x:.3g}")
    if abs(near - x) <= 1e-9 * abs(x) or near >= x:
        return f"{near:g}"
    step = 10.0 ** (math.floor(math.log10(abs(x))) - 2)  # one unit in the third digit
    return f"{float(f'{near + step:.3g}'):g}"


def readonly(array, dtype=float) -> np.ndarray:
    """A read-only copy of ``array`` as ``dtype``: results never share memory with inputs."""
    out = np.array(array, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def frozen(array: np.ndarray) -> np.ndarray:
    """``array`` itself, made read-only (for arrays the engine has just created)."""
    array.setflags(write=False)
    return array
