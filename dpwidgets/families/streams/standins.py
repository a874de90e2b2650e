"""Counting streams shaped like Chen 2018, Ch. 5's WiFi traces, and a public series turned into counts.

Chen 2018, §5.6 (Table 5.1) evaluates PeGaSus on connection counts from ~4000 campus WiFi access
points over six months, in five-minute steps. The traces are not public; what is reproducible
is their published shape:

========  ======  ======  ===========  =============================================
name      states  length  total count  shape used here
========  ======  ======  ===========  =============================================
Low_5     1       57,901  2,846        sparse: a quiet room used in short episodes
Med_5     1       57,901  101,843      an office / lecture AP, daily + weekly cycle
High_5    1       57,901  2,141,963    a busy hall, strong daily cycle and bursts
Multi_5   128     20,000  646,254      128 APs of very unequal load, binary AGG, h = 8
========  ======  ======  ===========  =============================================

Each stream is a seeded inhomogeneous process: a daily profile (night near zero, a
working-day plateau with class-change spikes on the hour), a weekly factor (weekends low),
breaks, over-dispersion (gamma noise) and, for the sparse streams, random occupancy episodes.
The published total is then met exactly by drawing it multinomially over the intensity.
Five-minute steps: a day is 288 steps, a week 2016 steps, 57,901 steps ≈ 201 days.

"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ...engine.validation import check_positive_int, check_rng

__all__ = ["StreamShape", "STREAM_SHAPES", "DAY", "WEEK", "wifi_stream", "multi_state_streams",
           "load_sunspot_counts"]

#: Five-minute steps per day and per week.
DAY = 288
WEEK = 7 * DAY


@dataclass(frozen=True)
class StreamShape:
    """The published size of one Chen 2018, Table 5.1 stream and the knobs of its stand-in.

    Examples
    --------
    >>> from dpwidgets.datasets import STREAM_SHAPES
    >>> list(STREAM_SHAPES)
    ['Low_5', 'Med_5', 'High_5', 'Multi_5']
    >>> shape = STREAM_SHAPES["Multi_5"]
    >>> shape.states, shape.length, shape.total
    (128, 20000, 646254)
    """

    name: str
    states: int
    length: int
    total: int
    episodic: bool  # activity only in random occupancy episodes (sparse streams)
    dispersion: float  # gamma shape of the per-step over-dispersion (smaller = burstier)
    description: str


STREAM_SHAPES = MappingProxyType({shape.name: shape for shape in (
    StreamShape("Low_5", 1, 57_901, 2_846, True, 0.5,
                "sparse: a quiet room, a few short occupancy episodes per working day"),
    StreamShape("Med_5", 1, 57_901, 101_843, False, 2.0,
                "an office / lecture-room AP: daily and weekly cycle, bursty"),
    StreamShape("High_5", 1, 57_901, 2_141_963, False, 8.0,
                "a busy hall: strong daily cycle, class-change spikes, weekends low"),
    StreamShape("Multi_5", 128, 20_000, 646_254, False, 1.0,
                "128 APs of lognormal load (many sparse), binary hierarchy of height 8"),
)})


def _daily_profile(steps: np.ndarray, shift: float = 0.0) -> np.ndarray:
    """Campus day: near zero at night, plateau 9:00-17:00, evening tail, spikes on the hour."""
    hour = ((steps + shift) % DAY) * 24.0 / DAY
    day = 1.0 / (1.0 + np.exp(-(hour - 8.5) * 2.0)) * 1.0 / (1.0 + np.exp((hour - 18.0) * 1.2))
    evening = 0.25 / (1.0 + np.exp((hour - 22.0) * 1.5)) * (hour > 17)
    minute = ((steps + shift) % 12)  # 12 five-minute steps per hour
    spike = 1.0 + 0.8 * ((minute == 11) | (minute == 0)) * (hour > 8) * (hour < 18)
    return (day + evening + 0.01) * spike


def _calendar(steps: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Weekly factor (weekends low) and a one-week break plus a few single-day holidays."""
    day_index = steps // DAY
    weekday = day_index % 7
    weekly = np.where(weekday < 5, 1.0, np.where(weekday == 5, 0.3, 0.2))
    n_days = int(day_index.max()) + 1
    factor = np.ones(n_days)
    if n_days > 60:
        start = int(rng.integers(n_days // 3, 2 * n_days // 3 - 7))
        factor[start : start + 7] = 0.15
    factor[rng.choice(n_days, size=max(n_days // 40, 1), replace=False)] *= 0.3
    return weekly * factor[day_index]


def _episodes(length: int, rate_per_day: float, rng: np.random.Generator) -> np.ndarray:
    """0/1 occupancy: episodes of 30 min - 3 h starting in working hours on ~rate_per_day days."""
    occupied = np.zeros(length)
    n_days = length // DAY + 1
    for d in range(n_days):
        for _ in range(rng.poisson(rate_per_day)):
            start = d * DAY + int(rng.integers(8 * 12, 18 * 12))
            occupied[start : start + int(rng.integers(6, 36))] = 1.0
    return occupied


def _intensity(shape: StreamShape, length: int, rng: np.random.Generator, shift: float = 0.0) -> np.ndarray:
    steps = np.arange(length)
    lam = _daily_profile(steps, shift) * _calendar(steps, rng)
    if shape.episodic:
        lam = lam * (_episodes(length, 0.6, rng) + 0.002)
    return lam * rng.gamma(shape.dispersion, 1.0 / shape.dispersion, size=length)


def wifi_stream(name: str = "Med_5", rng: np.random.Generator | None = None) -> np.ndarray:
    """One single-state stream shaped like Chen 2018, Table 5.1's ``Low_5``, ``Med_5`` or ``High_5``.

    Returns 57,901 five-minute counts (int64) summing exactly to the published total.

    Parameters
    ----------
    name : {"Low_5", "Med_5", "High_5"}
    rng : numpy.random.Generator, optional

    References
    ----------
    Chen 2018, §5.6, Table 5.1, Fig. 5.2 (High_5's first 8000 steps).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import wifi_stream
    >>> counts = wifi_stream("Low_5", np.random.default_rng(0))
    >>> counts.shape, int(counts.sum())  # the published length and total
    ((57901,), 2846)
    """
    if name not in ("Low_5", "Med_5", "High_5"):
        raise ValueError(f"name must be 'Low_5', 'Med_5' or 'High_5', got {name!r}")
    rng = check_rng(rng)
    shape = STREAM_SHAPES[name]
    lam = _intensity(shape, shape.length, rng)
    return rng.multinomial(shape.total, lam / lam.sum()).astype(np.int64)


def multi_state_streams(
    rng: np.random.Generator | None = None,
    *,
    n_states: int = 128,
    length: int = 20_000,
    total: int = 646_254,
) -> np.ndarray:
    """Streams of ``n_states`` access points shaped like Chen 2018, Table 5.1's ``Multi_5``.

    Returns an int64 array of shape (n_states, length) summing exactly to ``total``; pair it
    with ``dpwidgets.engine.streams.Hierarchy.binary(n_states)`` (height log2(n) + 1: 8 for
    128). Loads are lognormal across APs (σ = 1.5: a few busy APs, many sparse ones); about
    half the APs are episodic; each AP's day is shifted by up to ±1 h.

    References
    ----------
    Chen 2018, §5.6, Table 5.1, §5.6.4 (Fig. 5.8).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import multi_state_streams
    >>> streams = multi_state_streams(np.random.default_rng(0), n_states=8, length=2_016,
    ...                               total=5_000)
    >>> streams.shape, int(streams.sum())
    ((8, 2016), 5000)
    """
    rng = check_rng(rng)
    n_states = check_positive_int(n_states, "n_states")
    length = check_positive_int(length, "length")
    total = check_positive_int(total, "total", minimum=0)
    base = STREAM_SHAPES["Multi_5"]
    loads = rng.lognormal(0.0, 1.5, size=n_states)
    lam = np.empty((n_states, length))
    for s in range(n_states):
        episodic = bool(rng.random() < 0.5)
        shape = StreamShape("", 1, length, 0, episodic, base.dispersion, "")
        lam[s] = loads[s] * _intensity(shape, length, rng, shift=float(rng.integers(-12, 13)))
    p = (lam / lam.sum()).ravel()
    return rng.multinomial(total, p).reshape(n_states, length).astype(np.int64)


def load_sunspot_counts() -> np.ndarray:
    """Yearly sunspot numbers 1700-2008 (309 values) rounded to whole counts.

    The public series shipped with ``statsmodels`` (``statsmodels.datasets.sunspots``, read
    from the package's own files, no download).

    Raises
    ------
    ImportError
        If ``statsmodels`` is not installed. It comes with the ``demo`` and ``test`` extras
        (``pip install "dpwidgets[demo]"``), not with the core package.

    Examples
    --------
    >>> from dpwidgets.datasets import load_sunspot_counts
    >>> counts = load_sunspot_counts()
    >>> counts.shape, counts.dtype.name, int(counts.min()) >= 0
    ((309,), 'int64', True)
    """
    try:
        from statsmodels.datasets import sunspots
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "load_sunspot_counts needs statsmodels: pip install 'dpwidgets[demo]' (or statsmodels)"
        ) from exc
    values = np.asarray(sunspots.load_pandas().data["SUNACTIVITY"], dtype=float)
    return np.rint(values).astype(np.int64)
