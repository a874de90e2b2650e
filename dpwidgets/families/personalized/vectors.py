"""The privacy vector the personalized-DP widget draws: the dataset's own (public) one, or a
what-if vector of the teaching dropdown, made once per choice and sorted once per vector.

A what-if vector is a public recipe with a seed named by the dataset and the choice, so the same
choice draws the same vector in every session; nothing here reads a record's value.

Examples
--------
>>> from dpwidgets.families.personalized.vectors import PrivacyVectors
>>> vectors = PrivacyVectors()
>>> v = vectors.vector(("age_100", "uniform"), n=100)
>>> v is vectors.vector(("age_100", "uniform"), n=100), bool(v.array.max() <= 0.1)
(True, True)
>>> vectors.largest(v) == float(v.array.max())
True
"""

from __future__ import annotations

import zlib

import numpy as np

from .display import vector_plot_data
from .params import PrivacyVector
from .sources import what_if_budgets

__all__ = ["PrivacyVectors", "vector_key", "what_if_vector"]

#: How many vectors (and sorts) are kept before the caches start afresh.
_KEPT = 8


def vector_key(dataset: str, choice: str, groups=()) -> tuple:
    """What names a privacy vector: the dataset, the choice (``"dataset"``: its own vector),
    and for ``"custom"`` its groups ``(share, low, high)``.

    Examples
    --------
    >>> vector_key("age_100", "custom", ((1.0, 0.2, 0.3),))
    ('age_100', 'custom', ((1.0, 0.2, 0.3),))
    >>> vector_key("age_100", "normal", ((1.0, 0.2, 0.3),))
    ('age_100', 'normal')
    """
    if choice == "custom":
        return (dataset, "custom", groups)
    return (dataset, choice)


def what_if_vector(key: tuple, n: int) -> PrivacyVector:
    """The what-if privacy vector ``key`` (:func:`vector_key`) of ``n`` records, seeded by the
    dataset's name and the choice.

    Examples
    --------
    >>> bool(what_if_vector(("age_100", "custom", ((1.0, 0.2, 0.3),)), 50).array.min() >= 0.2)
    True
    """
    dataset, kind = key[0], key[1]
    rng = np.random.default_rng(zlib.crc32(f"{dataset}:{kind}".encode()))
    return PrivacyVector(what_if_budgets(kind, n, key[2] if kind == "custom" else (), rng))


class PrivacyVectors:
    """The privacy vectors a widget has drawn, each made once, and what it draws of each
    (its sort order, sorted budgets and histogram), computed once per vector.

    Examples
    --------
    >>> vectors = PrivacyVectors()
    >>> drawn = vectors.derive(PrivacyVector([0.3, 0.1, 0.2]))
    >>> drawn["order"].tolist(), drawn["sorted"].tolist()
    ([1, 2, 0], [0.1, 0.2, 0.3])
    """

    def __init__(self) -> None:
        self._vectors: dict[tuple, PrivacyVector] = {}
        self._derived: dict[str, dict] = {}

    def vector(self, key: tuple, n: int, own: PrivacyVector | None = None) -> PrivacyVector:
        """The vector ``key`` names (:func:`vector_key`): ``own`` (the dataset's) for the
        choice ``"dataset"``, else a what-if vector of ``n`` records."""
        vector = self._vectors.get(key)
        if vector is None:
            vector = own if key[1] == "dataset" else what_if_vector(key, n)
            if len(self._vectors) > _KEPT:
                self._vectors.clear()
            self._vectors[key] = vector
        return vector

    def derive(self, vector: PrivacyVector) -> dict:
        """What the widget draws from ``vector``: ``order`` (its sort, shared with the plans),
        ``sorted`` (the sorted budgets) and ``plot`` (its histogram's columns)."""
        hit = self._derived.get(str(vector))
        if hit is None:
            if len(self._derived) > _KEPT:
                self._derived.clear()
            order = vector.order  # sorted once per vector, shared with the plans
            hit = {"order": order, "sorted": vector.array[order],
                   "plot": vector_plot_data(vector.array)}
            self._derived[str(vector)] = hit
        return hit

    def largest(self, vector: PrivacyVector) -> float:
        """The largest budget any record of ``vector`` asks for."""
        return float(self.derive(vector)["sorted"][-1])
