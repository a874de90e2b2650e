"""The streams a stream widget runs on: the public teaching streams (Chen 2018, Table 5.1's
shapes and the yearly sunspot numbers), added to a teaching session on first use, and the
check that a session's dataset is a stream.

The teaching streams are public, built lazily from
:mod:`~dpwidgets.families.streams.standins` (a shape is made only when it is chosen).

Examples
--------
>>> from dpwidgets import Session
>>> from dpwidgets.families.streams.sources import STREAMS, teaching_stream
>>> sorted(STREAMS)
['High_5', 'Low_5', 'Med_5', 'sunspots']
>>> session = Session("teaching", seed=0)
>>> teaching_stream(session, "Low_5", 100), session.size("Low_5_100")
('Low_5_100', 100)
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...session import Session

__all__ = ["STREAMS", "StreamSource", "check_stream", "teaching_stream"]


@dataclass(frozen=True)
class StreamSource:
    """A public counting stream a teaching widget can add to its session.

    Examples
    --------
    >>> import numpy as np
    >>> StreamSource("three steps", lambda: np.ones(3)).make().size
    3
    """

    title: str
    make: Callable[[], np.ndarray]


def _wifi(name: str) -> Callable[[], np.ndarray]:
    def make() -> np.ndarray:
        from .standins import wifi_stream

        return wifi_stream(name, np.random.default_rng(zlib.crc32(name.encode())))

    return make


def _sunspots() -> np.ndarray:
    from .standins import load_sunspot_counts

    return load_sunspot_counts()


#: The teaching streams: Chen 2018, Table 5.1's shapes (five-minute steps) and a public series.
STREAMS: dict[str, StreamSource] = {
    "High_5": StreamSource("High_5 shape (Chen 2018, Table 5.1): a busy hall, 2,141,963 in 57,901 "
                           "steps", _wifi("High_5")),
    "Med_5": StreamSource("Med_5 shape: an office AP, 101,843 in 57,901 steps", _wifi("Med_5")),
    "Low_5": StreamSource("Low_5 shape: a quiet room, 2,846 in 57,901 steps (sparse)",
                          _wifi("Low_5")),
    "sunspots": StreamSource("Yearly sunspot numbers 1700-2008 (statsmodels, 309 steps)",
                             _sunspots),
}


def check_stream(session: Session, dataset: str) -> None:
    """Refuse a dataset that is not a 1-D stream, from its public shape (an unknown name: the
    session's ValueError).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> session = Session("teaching", seed=0)
    >>> session.add_dataset("grid", np.ones((2, 3)), total_epsilon=1.0, stand_in=np.ones((2, 3)))
    >>> check_stream(session, "grid")
    Traceback (most recent call last):
    ...
    ValueError: dataset 'grid' must be a 1-D stream, has shape (2, 3)
    """
    shape = session.shape(dataset)
    if len(shape) != 1:
        raise ValueError(f"dataset {dataset!r} must be a 1-D stream, has shape {shape}")


def teaching_stream(session: Session, value: str, length: int | None) -> str:
    """The name in ``session`` of the teaching stream ``value`` (a key of :data:`STREAMS`),
    cut to its first ``length`` steps if it is longer, added to the session on first use.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> session = Session("teaching", seed=0)
    >>> teaching_stream(session, "sunspots", 10_000)  # shorter than 10,000: all of it
    'sunspots'
    """
    name = value if length is None else f"{value}_{length}"
    if name not in session.datasets:
        full = STREAMS[value].make()
        if length is not None and length < full.size:
            full = full[:length]
        else:
            name = value
        if name not in session.datasets:
            session.add_dataset(name, full, total_epsilon=10.0, description=STREAMS[value].title)
    return name
