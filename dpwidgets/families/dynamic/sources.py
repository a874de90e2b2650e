"""The public series of the dynamic-histogram widget's teaching mode: Li 2017, §4.5.1's two
kinds of data (a census table evolving by tuple replacement, objects moving on a grid), scaled
down, each with the public facts a widget shows (shape, attribute names, snapshot size).

Examples
--------
>>> from dpwidgets.families.dynamic.sources import DATASETS
>>> sorted(DATASETS), DATASETS["moving"].shape, DATASETS["moving"].cardinality
(['census', 'moving'], (16, 16), 20000)
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .standins import census_like_series, dynamic_stand_in, moving_object_series

__all__ = ["DATASETS", "SeriesSource", "add_teaching_series"]


@dataclass(frozen=True)
class SeriesSource:
    """A public series a teaching widget can add to its session, with its public facts."""

    title: str
    make: Callable[[np.random.Generator], object]  # -> dpwidgets.datasets.DynamicSeries
    shape: tuple[int, ...]
    attributes: tuple[str, ...]
    cardinality: int


def _census(rng: np.random.Generator):
    # drift 0.5 (the data module's addition): the people arriving in each of the ten periods
    # come from a slightly different population, so the periods are real change points. The
    # text's own setup (drift 0) only ever differs by sampling noise.
    return census_like_series(500, 100_000, drift=0.5, rng=rng)


def _moving(rng: np.random.Generator):
    return moving_object_series(400, 20_000, grid=(16, 16), rng=rng)


#: The public series of the teaching widget (Li 2017, §4.5.1's two kinds of data, scaled down).
DATASETS: dict[str, SeriesSource] = {
    "census": SeriesSource(
        "Census-like, drifting (Li 2017, §4.5.1): N = 500 snapshots of 100,000 people, "
        "age × education × income",
        _census, (96, 12, 3), ("age", "education", "income"), 100_000,
    ),
    "moving": SeriesSource(
        "Moving objects (Li 2017's Oldenburg data, a stand-in): N = 400 snapshots of 20,000 "
        "on a 16 × 16 grid",
        _moving, (16, 16), ("y", "x"), 20_000,
    ),
}

#: The session's name of each teaching series.
_NAMES = {"census": "census_like", "moving": "moving_objects"}


def add_teaching_series(session, key: str) -> dict:
    """Add the public series ``key`` of :data:`DATASETS` to a teaching ``session`` (once: a
    series already there is reused) and return its public facts: ``name`` (in the session),
    ``shape``, ``attributes``, ``cardinality``.

    The series is made with a seed of its own name, so every widget on it shows the same data;
    its stand-in and its declared ``cardinality`` come from the generator's parameters, never
    from the data.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.dynamic.sources import add_teaching_series
    >>> s = Session(mode="teaching", seed=0)
    >>> facts = add_teaching_series(s, "moving")
    >>> facts["name"], s.shape("moving_objects"), s.facts("moving_objects")["cardinality"]
    ('moving_objects', (400, 256), 20000)
    >>> s.close()
    """
    src = DATASETS[key]
    name = _NAMES.get(key, key)
    if name not in session.datasets:
        series = src.make(np.random.default_rng(zlib.crc32(name.encode())))
        hist = series.histograms
        session.add_dataset(
            name, hist, total_epsilon=10.0, description=src.title,
            stand_in=dynamic_stand_in(hist.shape[0], hist.shape[1], src.cardinality),
            facts={"cardinality": src.cardinality})  # the generator's parameter
    return {"name": name, "shape": src.shape, "attributes": src.attributes,
            "cardinality": src.cardinality}
