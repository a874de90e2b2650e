"""Helpers shared by the engine's result objects (private to the engine)."""

from __future__ import annotations

import numpy as np

__all__ = ["frozen", "readonly"]


def readonly(array, dtype=float) -> np.ndarray:
    """A read-only copy of ``array`` as ``dtype``: results never share memory with inputs."""
    out = np.array(array, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def frozen(array: np.ndarray) -> np.ndarray:
    """``array`` itself, made read-only (for arrays the engine has just created)."""
    array.setflags(write=False)
    return array
