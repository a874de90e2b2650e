"""The public data of the personalized-DP widget: the values it histograms in teaching mode
(Li 2017, §5.3.1's census-like count task and ages) and the what-if privacy vectors of its
dropdown (Li 2017, §5.3.1's uniform and normal vectors, or a custom mixture of conservative /
moderate / liberal users as in Jorgensen, Yu & Cormode 2015).

Everything here is public: recipes and seeds, never a dataset's values.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.personalized.sources import DATASETS, what_if_budgets
>>> DATASETS["age"].edges[:2].tolist()
[15.5, 16.5]
>>> b = what_if_budgets("uniform", 5, (), np.random.default_rng(0))
>>> b.shape, bool(b.max() <= 0.1)
((5,), True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ui.base import PublicSource

__all__ = ["DATASETS", "DEFAULT_GROUPS", "GROUP_NAMES", "PRIVACY", "TEACHING_CEILING",
           "ValueSource", "what_if_budgets"]

#: The budget column of the built-in teaching tables: the most any what-if vector may ask.
TEACHING_CEILING = 1.0


@dataclass(frozen=True)
class ValueSource(PublicSource):
    """Public values to histogram; see :class:`PublicSource`.

    Attributes
    ----------
    stand_in : callable ``(n, rng) -> values``
        A public stand-in of the same size (another public draw).
    edges : numpy.ndarray
        Public bin edges.
    shape : tuple of int or None
        The grid the bins flatten (range queries are boxes on it); None: 1-D.
    axis : str
        The histogram's x-axis label.
    """

    stand_in: Callable[[int, np.random.Generator], np.ndarray]
    edges: np.ndarray
    shape: tuple[int, ...] | None
    axis: str


def _cells(country: str):
    def make(n: int, rng: np.random.Generator) -> np.ndarray:
        from .standins import count_task

        return count_task(country, n, rng).cells.astype(float)

    return make


def _ages(country: str):
    def make(n: int, rng: np.random.Generator) -> np.ndarray:
        from .standins import census_like_records

        return census_like_records(country, n, rng)["age"].to_numpy(dtype=float)

    return make


def _grid():
    from .standins import COUNT_TASK_SHAPE

    return COUNT_TASK_SHAPE


#: The public data sets of the teaching widget.
DATASETS: dict[str, ValueSource] = {
    "census": ValueSource(
        "Census-like count task (Li 2017, §5.3.1): age × gender × education × income, 2,048 cells",
        _cells("us"), _cells("brazil"), np.arange(2049) - 0.5, _grid(),
        "cell of the age × gender × education × income grid",
    ),
    "age": ValueSource(
        "Census-like ages (16-95, one bin per year)", _ages("us"), _ages("brazil"),
        np.arange(16, 97) - 0.5, None, "age",
    ),
}

#: Privacy vectors of the teaching widget: name -> dropdown label.
PRIVACY = {
    "normal": "N(0.1, 1) clipped to [0.01, 1] (Li 2017, §5.3.1)",
    "normal_truncated": "N(0.1, 1) truncated to [0.01, 1]",
    "uniform": "U(0.01, 0.1) (Li 2017, §5.3.1, as written)",
    "uniform_wide": "U(0.01, 1) (Li 2017, §5.3.1's stated range)",
    "custom": "custom: conservative / moderate / liberal users (sliders)",
}
#: Default custom groups: (share, lowest budget, highest budget).
DEFAULT_GROUPS = ((0.54, 0.01, 0.2), (0.37, 0.2, 1.0), (0.09, 1.0, 1.0))
#: The custom vector's three groups, in the order of their sliders.
GROUP_NAMES = ("conservative", "moderate", "liberal")


def what_if_budgets(kind: str, n: int, groups, rng: np.random.Generator) -> np.ndarray:
    """A what-if privacy vector of ``n`` records (a key of :data:`PRIVACY`; ``"custom"``: the
    ``(share, low, high)`` ``groups``), at most :data:`TEACHING_CEILING`.

    Examples
    --------
    >>> b = what_if_budgets("custom", 100, [(1.0, 0.2, 0.3)], np.random.default_rng(0))
    >>> bool(b.min() >= 0.2 and b.max() <= 0.3)
    True
    """
    from .standins import budgets_mixed, make_budgets

    if kind == "custom":
        array = budgets_mixed(n, list(groups), rng)
    else:
        array = make_budgets(kind, n, rng)
    return np.minimum(array, TEACHING_CEILING)
