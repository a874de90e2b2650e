"""The public data of the personalized-DP widget: the values it histograms in teaching mode
(Li 2017, §5.3.1's census-like count task and ages) and the what-if privacy vectors of its
dropdown (Li 2017, §5.3.1's uniform and normal vectors, or a custom mixture of conservative /
moderate / liberal users as in Jorgensen, Yu & Cormode 2015).

Everything here is public: recipes and seeds, never a dataset's values. What the widget knows
of a table (:class:`DataFacts`) is read through the session: its shape, the public privacy
vector, and public bin edges (given, or in a teaching session read off the public values).

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

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ui.base import PublicSource
from .params import PrivacyVector

__all__ = ["DATASETS", "DEFAULT_GROUPS", "GROUP_NAMES", "PRIVACY", "TEACHING_CEILING",
           "DataFacts", "ValueSource", "builtin_facts", "dataset_facts", "what_if_budgets"]

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


@dataclass(frozen=True)
class DataFacts:
    """What the widget knows of a table ``[value, budget]`` (all public).

    Attributes
    ----------
    name : str
        The table in the session (a built-in one is named ``<key>_<n>``, e.g. ``age_50``).
    edges : numpy.ndarray
        Public bin edges of the values.
    shape : tuple of int or None
        The grid the bins flatten; None: 1-D.
    axis : str
        The histogram's x-axis label.
    vector : PrivacyVector or None
        The table's own privacy vector; None on the built-in data (the what-if vectors).
    builtin : bool
        Whether the table is one of :data:`DATASETS`.

    Examples
    --------
    >>> DataFacts("t", np.arange(3.0), None, "value", None, False).axis
    'value'
    """

    name: str
    edges: np.ndarray
    shape: tuple[int, ...] | None
    axis: str
    vector: PrivacyVector | None
    builtin: bool


def _edges(session, dataset: str, bins, value_range) -> np.ndarray:
    """Public bin edges: given, a number of bins over ``value_range``, or (teaching) 40 bins
    over the public values' range."""
    if bins is None:
        if not session.teaching:
            raise ValueError("an analyst widget needs bins= (public bin edges, or a number "
                             "with value_range=): they are not read off the data")
        values = session.public_view(dataset)[:, 0]
        lo, hi = float(values.min()), float(values.max())
        return np.linspace(lo, hi if hi > lo else lo + 1.0, 41)
    if isinstance(bins, int | np.integer):
        if value_range is None:
            raise ValueError("bins given as a number needs value_range=(low, high)")
        return np.linspace(float(value_range[0]), float(value_range[1]), int(bins) + 1)
    return np.asarray(bins, dtype=float)


def dataset_facts(session, dataset: str, budgets=None, bins=None, value_range=None,
                  shape=None) -> DataFacts:
    """The facts of a session's table ``[value, budget]``: its privacy vector (``budgets``, or
    the budget column of its public view -- teaching -- or stand-in -- analyst) and public bin
    edges (``bins``, see the widget), checked.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> s = Session("teaching", seed=0)
    >>> table = np.column_stack((np.arange(10.0), np.full(10, 0.5)))
    >>> s.add_dataset("t", table, total_epsilon=1.0, stand_in=table)
    >>> facts = dataset_facts(s, "t", bins=5, value_range=(0, 10))
    >>> facts.edges.tolist(), float(facts.vector.array.max())
    ([0.0, 2.0, 4.0, 6.0, 8.0, 10.0], 0.5)
    >>> s.close()
    """
    table_shape = session.shape(dataset)
    if len(table_shape) != 2 or table_shape[1] != 2:
        raise ValueError(f"dataset {dataset!r} is not a table [value, budget]: shape "
                         f"{table_shape}")
    n = int(table_shape[0])
    if budgets is None:
        view = (session.public_view(dataset) if session.teaching
                else session.stand_in(dataset))
        budgets = view[:, 1]
    vector = PrivacyVector(np.asarray(budgets, dtype=float))
    if vector.array.shape != (n,) or not np.all(np.isfinite(vector.array)) or np.any(
            vector.array <= 0):
        raise ValueError(f"budgets must hold one finite budget > 0 per record ({n})")
    edges = _edges(session, dataset, bins, value_range)
    if shape is not None and math.prod(shape) != edges.size - 1:
        raise ValueError(f"shape {shape} has {math.prod(shape)} cells, but there are "
                         f"{edges.size - 1} bins")
    return DataFacts(dataset, edges, tuple(shape) if shape else None, "value", vector, False)


def builtin_facts(session, key: str, n: int) -> DataFacts:
    """The facts of the built-in data ``key`` (of :data:`DATASETS`) with ``n`` records, added
    to the teaching ``session`` first if it is not there: its values and a stand-in drawn
    from seeds named by the table, every budget :data:`TEACHING_CEILING`.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> s = Session("teaching", seed=0)
    >>> builtin_facts(s, "age", 50).name, s.datasets
    ('age_50', ['age_50'])
    >>> s.close()
    """
    src = DATASETS[key]
    name = f"{key}_{n}"
    if name not in session.datasets:
        seed = zlib.crc32(name.encode())
        values = src.make(n, np.random.default_rng(seed))
        stand_in = src.stand_in(n, np.random.default_rng(seed + 1))
        ceiling = np.full(n, TEACHING_CEILING)
        session.add_dataset(
            name, np.column_stack((values, ceiling)), total_epsilon=10.0,
            stand_in=np.column_stack((stand_in, ceiling)), description=src.title)
    return DataFacts(name, src.edges, src.shape, src.axis, None, True)
