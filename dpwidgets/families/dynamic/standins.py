"""Dynamic datasets for Li 2017, Ch. 4: a census-like table evolving by tuple replacement, and
objects moving on a grid. Both return an ``(N, U)`` series of count histograms.

- :func:`census_like_series` — Li 2017, §4.5.1's US-census setup: six attributes (Age, Gender,
  Education, Health insurance, Marital status, Income) with domains 96, 2, 12, 2, 2, 3; a
  snapshot of ``n`` tuples drawn from a population, then at every step ``m ~ N(r|D|/2,
  sigma^2)`` tuples are deleted and as many drawn from the public pool, the N steps cut into
  10 periods of different update rates. As in the text, the pool is the rest of the same
  population, so the distribution never changes (only sampling noise does); ``drift > 0``
  (our addition) draws each period's inserted tuples from a shifted population, making the
  period boundaries real change points.
- :func:`moving_object_series` — a stand-in for the Oldenburg traffic data (Brinkhoff
  generator, §4.5.1): objects moving between hot spots on the unit square, counted per cell
  of a grid, with a traffic intensity that changes over time.

- :func:`dynamic_stand_in` — the public stand-in of a confidential series: made from its public
  shape and snapshot size alone, what an analyst's previews run on.

The text uses the real IPUMS extract (3M tuples); we have no download at run time, so the
population is drawn from a fixed synthetic joint distribution with census-like dependencies
(:func:`census_distribution`). All randomness comes from the ``rng`` argument (the stand-in's
from its own ``seed``).

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.dynamic.standins import census_like_series
>>> series = census_like_series(20, 5_000, attributes=("age", "income"),
...                             rng=np.random.default_rng(0))
>>> series.histograms.shape, series.shape, int(series.histograms[0].sum())
((20, 288), (96, 3), 5000)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ...engine.validation import check_positive_int, check_rng

# CENSUS_DOMAINS (the attributes' domain sizes) is public here but not in __all__: the
# personalized family's CENSUS_DOMAINS (its features' ranges) is the one dpwidgets.datasets
# exports, as it was before the families moved.
__all__ = ["CENSUS_ATTRIBUTES", "DynamicSeries", "census_distribution", "census_like_series",
           "dynamic_stand_in", "moving_object_series"]

#: The six attributes of Li 2017, §4.5.1 and their domain sizes (the joint has 27,648 cells).
CENSUS_ATTRIBUTES: tuple[str, ...] = (
    "age", "gender", "education", "health_insurance", "marital_status", "income",
)
CENSUS_DOMAINS: Mapping[str, int] = MappingProxyType(
    dict(zip(CENSUS_ATTRIBUTES, (96, 2, 12, 2, 2, 3), strict=True))
)


@dataclass(frozen=True, eq=False)
class DynamicSeries:
    """A series of histogram snapshots and how it was made.

    Attributes
    ----------
    histograms : numpy.ndarray of int64, shape (N, U)
        One row per time point; row ``i`` flattens a histogram of shape ``shape`` (C order).
    shape : tuple of int
        The domain of one snapshot (e.g. ``(96, 12, 3)``, or the grid ``(32, 32)``).
    attributes : tuple of str
        Names of the dimensions of ``shape``.
    cardinality : int
        The (public, constant) number of records per snapshot, ``n``.
    details : dict
        Generation parameters and per-step by-products (``replaced`` per step, period rates...).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import moving_object_series
    >>> rng = np.random.default_rng(0)
    >>> series = moving_object_series(50, 1_000, grid=(8, 8), rng=rng)
    >>> series.n_times, series.n_bins, series.shape, series.attributes, series.cardinality
    (50, 64, (8, 8), ('y', 'x'), 1000)
    """

    histograms: np.ndarray
    shape: tuple[int, ...]
    attributes: tuple[str, ...]
    cardinality: int
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        hist = np.array(self.histograms, dtype=np.int64, copy=True)
        hist.setflags(write=False)
        object.__setattr__(self, "histograms", hist)
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def n_times(self) -> int:
        return int(self.histograms.shape[0])

    @property
    def n_bins(self) -> int:
        return int(self.histograms.shape[1])


def census_distribution() -> np.ndarray:
    """A fixed census-like joint distribution over (age, gender, education, health
    insurance, marital status, income), shape (96, 2, 12, 2, 2, 3), summing to 1.

    Dependencies follow common sense rather than any real table: an age pyramid flat to 60
    and thinning after; education capped by age for the young; marriage and insurance rising
    with age; income code 0 exactly for ages under 20 (the text's "values smaller than 0 mean
    the tuples have ages smaller than 20"), and above the median (code 2) more often with more
    education and in mid-career.

    Examples
    --------
    >>> from dpwidgets.datasets import census_distribution
    >>> joint = census_distribution()
    >>> joint.shape, round(float(joint.sum()), 6)
    ((96, 2, 12, 2, 2, 3), 1.0)
    >>> float(joint[:20, ..., 1:].sum())  # income code 0 exactly for ages under 20
    0.0
    """
    age = np.arange(96)
    p_age = np.where(age < 60, 1.0, np.exp(-(age - 60) / 12.0))
    p_age = p_age * (1 + 0.15 * np.sin(age / 7.0))  # cohort bumps
    p_age /= p_age.sum()
    p_gender = np.array([0.49, 0.51])
    # Education given age: mean level rises with age up to 25, levels above the cap are rare.
    level = np.arange(12)
    cap = np.clip((age - 4) / 1.6, 0, 11)[:, None]
    mean = np.minimum(cap, 7.0 + 0.02 * np.clip(age - 25, 0, None)[:, None] * -1)
    p_edu = np.exp(-0.5 * ((level[None, :] - mean) / 1.8) ** 2) * np.where(level[None, :] <= cap + 1, 1.0, 1e-3)
    p_edu /= p_edu.sum(axis=1, keepdims=True)  # (96, 12)
    # Marital status given age (1 = married).
    married = np.where(age < 18, 0.0, 1.0 / (1.0 + np.exp(-(age - 30) / 5.0)) * 0.65)
    p_mar = np.stack([1 - married, married], axis=1)  # (96, 2)
    # Income given age and education: 0 below 20; else median split driven by both.
    logit = -2.0 + 0.35 * level[None, :] + 0.08 * np.clip(age - 20, 0, 30)[:, None] \
        - 0.06 * np.clip(age - 62, 0, None)[:, None]
    high = 1.0 / (1.0 + np.exp(-logit))
    young = np.broadcast_to((age < 20)[:, None], high.shape)
    p_inc = np.stack([np.where(young, 1.0, 0.0), np.where(young, 0.0, 1 - high),
                      np.where(young, 0.0, high)], axis=-1)  # (96, 12, 3)
    # Health insurance given age and income (1 = insured).
    ins = np.clip(0.72 + 0.004 * age, 0, 0.99)[:, None] + np.array([0.05, 0.0, 0.12])[None, :]
    ins = np.clip(ins, 0.0, 0.995)
    ins = np.where(age[:, None] >= 65, 0.99, ins)
    p_ins = np.stack([1 - ins, ins], axis=-1)  # (96, 3, 2)
    joint = (
        p_age[:, None, None, None, None, None]
        * p_gender[None, :, None, None, None, None]
        * p_edu[:, None, :, None, None, None]
        * np.moveaxis(p_ins, 1, 2)[:, None, None, :, None, :]  # (96, 1, 1, 2, 1, 3)
        * p_mar[:, None, None, None, :, None]
        * p_inc[:, None, :, None, None, :]
    )
    return joint / joint.sum()


def _check_attributes(attributes) -> tuple[str, ...]:
    if isinstance(attributes, str):
        attributes = (attributes,)
    try:
        names = tuple(attributes)
    except TypeError:
        raise ValueError(f"attributes must be a sequence of names from {CENSUS_ATTRIBUTES}") from None
    bad = [a for a in names if a not in CENSUS_DOMAINS]
    if not names or bad or len(set(names)) != len(names):
        raise ValueError(
            f"attributes must be distinct names from {CENSUS_ATTRIBUTES}, got {attributes!r}"
        )
    return tuple(a for a in CENSUS_ATTRIBUTES if a in names)  # keep the table's order


def _check_nonneg(value, name: str, *, upper: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise ValueError(f"{name} must be a number in [0, {upper}], got {value!r}")
    value = float(value)
    if not (0 <= value <= upper) or math.isnan(value):
        raise ValueError(f"{name} must be a number in [0, {upper}], got {value!r}")
    return value


def _census_sizes(n_times, n_records, population, update_rate, sigma2, n_periods,
                  period_rates):
    """The checked sizes and rates of ``census_like_series`` (``rates`` None: drawn later)."""
    n_times = check_positive_int(n_times, "n_times")
    n_records = check_positive_int(n_records, "n_records")
    population = check_positive_int(population, "population")
    if population <= n_records:
        raise ValueError(f"population must exceed n_records = {n_records}, got {population}")
    update_rate = _check_nonneg(update_rate, "update_rate", upper=2.0)
    sigma2 = _check_nonneg(sigma2, "sigma2")
    n_periods = check_positive_int(n_periods, "n_periods")
    if n_periods > n_times:
        raise ValueError(f"n_periods must be at most n_times = {n_times}, got {n_periods}")
    rates = None
    if period_rates is not None:
        rates = np.asarray(period_rates, dtype=float)
        if (rates.shape != (n_periods,) or np.any(~np.isfinite(rates)) or np.any(rates < 0)
                or np.any(rates > 2)):
            raise ValueError(
                f"period_rates must be {n_periods} numbers in [0, 2], got {period_rates!r}")
    return n_times, n_records, population, update_rate, sigma2, n_periods, rates


def census_like_series(
    n_times: int = 500,
    n_records: int = 500_000,
    *,
    population: int = 3_000_000,
    update_rate: float = 0.5,
    sigma2: float = 100_000.0,
    n_periods: int = 10,
    period_rates: Sequence[float] | None = None,
    attributes: Sequence[str] = ("age", "education", "income"),
    drift: float = 0.0,
    rng: np.random.Generator | None = None,
) -> DynamicSeries:
    """The census-like dynamic dataset of Li 2017, §4.5.1, as an (N, U) series of histograms.

    ``D_1`` is ``n_records`` tuples drawn without replacement from a population of
    ``population`` tuples (:func:`census_distribution`); the rest form the public pool. At
    each later step ``m ~ N(r_p |D| / 2, sigma2)`` tuples (rounded, clipped to [0, |D|]) are
    deleted at random and ``m`` drawn at random from the pool; the deleted tuples return to the
    pool, so ``|D_i| = n`` and the pool size stay fixed. The N steps are cut into
    ``n_periods`` equal periods, period ``p`` with rate ``r_p``.

    With the text's setup (``drift=0``) every snapshot is a random sample of *the same*
    population: the tuples change but the distribution does not, so the histograms differ
    only by sampling noise (about 0.05 in normalised L1 at the default sizes, however many
    tuples are replaced) and there is no change point for an adaptive sampler to find.
    ``drift > 0`` (our addition, not in the text) makes the periods real change points: the
    tuples inserted during period ``p`` come from a period-specific population (see
    ``drift`` below), so the snapshot moves towards a new distribution at the period's rate.

    Parameters
    ----------
    n_times : int
        N (500, Table 4.2).
    n_records : int
        ``n = |D_i|`` (500K, Table 4.2).
    population : int
        Size of the population (3M in the text); must exceed ``n_records``.
    update_rate : float
        ``r`` in [0, 2] (0.5, Table 4.2): the mean of the period rates.
    sigma2 : float
        Variance of ``m`` (100K in the text).
    n_periods : int
        Number of periods with different rates (10 in the text).
    period_rates : sequence of float, optional
        The rate of each period. The text only says the periods have "different values of
        m"; default ``update_rate * (2 u_p / mean(u))``-style: ``u_p ~ Exp(1)`` drawn from
        ``rng``, rescaled to mean ``update_rate`` and clipped to [0, 2] -- a few busy periods and
        some nearly static ones.
    attributes : sequence of str
        The marginal to histogram (in the table's order). Default ``("age", "education",
        "income")``: U = 3,456 bins (the text's 3-D US data, Fig. 4.4(c), 4.6). All six give the
        text's full joint, U = 27,648.
    drift : float
        Strength of the distribution shift between periods, >= 0 (default 0: the text's
        stationary pool). Period 0 inserts tuples from the population distribution ``pi``;
        period ``p >= 1`` from ``pi_p ∝ pi · exp(drift · z_p)``, where ``z_p`` is a random
        score over the six attributes (a sinusoid in age, a linear trend in education, level
        effects for gender, insurance, marital status and income) standardised to mean 0 and
        standard deviation 1 under ``pi``; ``||pi_p - pi||_1`` is about ``0.8 drift`` for
        small ``drift``. The inserted tuples are drawn with replacement from ``pi_p`` (an
        unlimited period population; ``population`` then only sets ``D_1``), the deleted ones
        uniformly from the snapshot as before.
    rng : numpy.random.Generator, optional

    Returns
    -------
    DynamicSeries
        ``histograms`` (N, U); ``shape`` the marginal's domains; ``details["replaced"]`` (the
        N - 1 values of m), ``details["period_rates"]``, ``details["period_starts"]`` (the
        time index where each period begins) and ``details["drift"]``.

    Raises
    ------
    ValueError
        Bad sizes, rates, periods or attribute names, before any randomness.

    Notes
    -----
    Deleting a uniform random subset and marginalising is the same as drawing from the
    marginal's counts (multivariate hypergeometric), so the series is generated directly on
    the requested marginal: exact in distribution and cheap.

    References
    ----------
    Li 2017, §4.5.1 (US census dataset, dynamic generation), Table 4.2.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import census_like_series
    >>> rng = np.random.default_rng(0)
    >>> series = census_like_series(20, 5_000, n_periods=4, drift=0.5, rng=rng)
    >>> series.histograms.shape, series.shape, series.attributes
    ((20, 3456), (96, 12, 3), ('age', 'education', 'income'))
    >>> bool((series.histograms.sum(axis=1) == 5_000).all())  # |D_i| = n at every step
    True
    >>> series.details["period_starts"].tolist()
    [0, 5, 10, 15]
    """
    n_times, n_records, population, update_rate, sigma2, n_periods, rates = _census_sizes(
        n_times, n_records, population, update_rate, sigma2, n_periods, period_rates)
    names = _check_attributes(attributes)
    drift = _check_nonneg(drift, "drift", upper=10.0)
    rng = check_rng(rng)

    if period_rates is None:
        draws = rng.exponential(1.0, n_periods)
        rates = np.clip(update_rate * draws / draws.mean(), 0.0, 2.0)
    axes = tuple(i for i, a in enumerate(CENSUS_ATTRIBUTES) if a not in names)
    marginal = census_distribution().sum(axis=axes)
    shape = marginal.shape
    pop = rng.multinomial(population, marginal.ravel())
    current = rng.multivariate_hypergeometric(pop, n_records, method="marginals")
    pool = pop - current

    period_of, replaced = _replacement_counts(rates, n_times, n_periods, n_records, sigma2, rng)
    targets = None if drift == 0 else _period_distributions(drift, n_periods, axes, rng)
    if targets is None:
        replaced = np.minimum(replaced, population - n_records)  # the pool's size

    out = _replace_tuples(current, pool, replaced, targets, period_of, rng)
    period_of_time = np.minimum(np.arange(n_times) * n_periods // n_times, n_periods - 1)
    starts = np.flatnonzero(np.diff(period_of_time, prepend=-1))
    return DynamicSeries(
        histograms=out, shape=tuple(int(s) for s in shape), attributes=names,
        cardinality=n_records,
        details={"replaced": replaced, "period_rates": rates, "update_rate": update_rate,
                 "sigma2": sigma2, "population": population, "n_periods": n_periods,
                 "period_starts": starts, "drift": drift},
    )


def _replacement_counts(rates, n_times, n_periods, n_records, sigma2, rng):
    """The period of each step t = 1..N-1 and its ``m ~ N(r_p n / 2, sigma2)``, rounded and
    clipped to [0, n]."""
    period_of = np.minimum(np.arange(1, n_times) * n_periods // n_times, n_periods - 1)
    mu = rates[period_of] * n_records / 2.0
    replaced = np.clip(np.round(rng.normal(mu, math.sqrt(sigma2))), 0, n_records).astype(np.int64)
    return period_of, replaced


def _replace_tuples(current, pool, replaced, targets, period_of, rng) -> np.ndarray:
    """The (N, U) snapshots of ``census_like_series`` from ``D_1``'s counts ``current``: at
    step t, ``replaced[t - 1]`` tuples deleted at random, as many inserted from the ``pool``
    (or, with ``targets``, drawn from the period's insertion distribution)."""
    out = np.empty((replaced.size + 1, current.size), dtype=np.int64)
    out[0] = current
    for t in range(1, out.shape[0]):
        m = int(replaced[t - 1])
        if m:
            deleted = rng.multivariate_hypergeometric(current, m, method="marginals")
            if targets is None:
                inserted = rng.multivariate_hypergeometric(pool, m, method="marginals")
                pool = pool - inserted + deleted
            else:
                inserted = rng.multinomial(m, targets[period_of[t - 1]])
            current = current - deleted + inserted
        out[t] = current
    return out


def _period_distributions(drift: float, n_periods: int, axes: tuple[int, ...], rng) -> np.ndarray:
    """The (n_periods, U) insertion distributions of ``census_like_series(drift=...)``."""
    joint = census_distribution()
    age = np.arange(96) / 96.0
    out = []
    for p in range(n_periods):
        if p == 0:
            tilted = joint
        else:
            freq, phase = rng.uniform(0.5, 2.0), rng.uniform(0.0, 2 * np.pi)
            score = (
                np.sin(2 * np.pi * freq * age + phase)[:, None, None, None, None, None]
                + rng.normal() * np.linspace(-1.0, 1.0, 12)[None, None, :, None, None, None]
                + 0.5 * rng.normal(size=2)[None, :, None, None, None, None]
                + rng.normal(size=2)[None, None, None, :, None, None]
                + rng.normal(size=2)[None, None, None, None, :, None]
                + rng.normal(size=3)[None, None, None, None, None, :]
            )
            score = np.broadcast_to(score, joint.shape)
            mean = float((joint * score).sum())
            sd = math.sqrt(float((joint * (score - mean) ** 2).sum()))
            tilted = joint * np.exp(drift * (score - mean) / max(sd, 1e-12))
        marginal = tilted.sum(axis=axes).ravel()
        out.append(marginal / marginal.sum())
    return np.array(out)


def moving_object_series(
    n_times: int = 1000,
    n_objects: int = 100_000,
    *,
    grid: tuple[int, int] = (32, 32),
    n_hotspots: int = 6,
    speed: float = 0.01,
    rush_hours: int = 4,
    rng: np.random.Generator | None = None,
) -> DynamicSeries:
    """Objects moving between hot spots on the unit square, counted per grid cell per step.

    A stand-in for the Oldenburg traffic data of Li 2017, §4.5.1 (Brinkhoff's generator: 1000
    timestamps, 500K objects, a 1024 x 1024 grid), scaled down. Every object travels at
    ``speed`` (fraction of the square per step) towards a destination drawn near one of
    ``n_hotspots`` fixed centres, parks there, and leaves again. How many objects are on the
    move varies with a traffic intensity that peaks ``rush_hours`` times over the series
    (between 5% and 60% of the parked objects start a trip per step), so the histogram
    changes fast in some periods and hardly at all in others. The number of objects is
    constant (public).

    Parameters
    ----------
    n_times : int
        N (1000 for the Oldenburg data).
    n_objects : int
        Number of objects (the snapshot size n).
    grid : (int, int)
        Cells per side (the text's 1024 x 1024 is scaled down; U = rows * cols).
    n_hotspots : int
        Number of destination centres.
    speed : float
        Distance per step, in (0, 1].
    rush_hours : int
        Number of traffic peaks over the series (>= 1).
    rng : numpy.random.Generator, optional

    Returns
    -------
    DynamicSeries
        ``histograms`` (N, rows*cols), ``shape == grid``, ``attributes == ("y", "x")``;
        ``details["moving"]`` is the number of objects travelling at each step.

    References
    ----------
    Li 2017, §4.5.1 (Oldenburg traffic data, Brinkhoff generator), §4.5.3, Fig. 4.8-4.9.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import moving_object_series
    >>> series = moving_object_series(50, 1_000, grid=(8, 8), rng=np.random.default_rng(0))
    >>> series.histograms.shape, bool((series.histograms.sum(axis=1) == 1_000).all())
    ((50, 64), True)
    >>> series.details["moving"].shape  # objects travelling at each step
    (50,)
    """
    n_times = check_positive_int(n_times, "n_times")
    n_objects = check_positive_int(n_objects, "n_objects")
    try:
        rows, cols = (int(g) for g in grid)
    except (TypeError, ValueError):
        raise ValueError(f"grid must be two positive integers, got {grid!r}") from None
    if rows < 1 or cols < 1:
        raise ValueError(f"grid must be two positive integers, got {grid!r}")
    n_hotspots = check_positive_int(n_hotspots, "n_hotspots")
    speed = _check_nonneg(speed, "speed", upper=1.0)
    if speed == 0:
        raise ValueError("speed must be in (0, 1], got 0")
    rush_hours = check_positive_int(rush_hours, "rush_hours")
    rng = check_rng(rng)

    centres = rng.uniform(0.1, 0.9, size=(n_hotspots, 2))
    weights = rng.dirichlet(np.full(n_hotspots, 2.0))

    def destinations(size: int) -> np.ndarray:
        spot = rng.choice(n_hotspots, size=size, p=weights)
        return np.clip(centres[spot] + rng.normal(0, 0.06, size=(size, 2)), 0.0, 1.0 - 1e-9)

    position = destinations(n_objects)
    target = position.copy()
    moving = np.zeros(n_objects, dtype=bool)
    phase = np.arange(n_times) / n_times * rush_hours * 2 * np.pi
    intensity = 0.05 + 0.55 * (0.5 - 0.5 * np.cos(phase)) ** 4  # share of parked objects leaving

    out = np.empty((n_times, rows * cols), dtype=np.int64)
    n_moving = np.empty(n_times, dtype=np.int64)
    for t in range(n_times):
        leaving = ~moving & (rng.random(n_objects) < intensity[t])
        count = int(leaving.sum())
        if count:
            target[leaving] = destinations(count)
            moving |= leaving
        # Whole-array arithmetic (parked objects move by 0): no boolean gathers per step.
        step = target - position
        dist = np.hypot(step[:, 0], step[:, 1])
        near = dist <= speed
        scale = np.where(moving, np.where(near, 1.0, speed / np.maximum(dist, 1e-12)), 0.0)
        position += step * scale[:, None]
        moving &= ~near
        cell_y = np.minimum((position[:, 1] * rows).astype(np.int64), rows - 1)
        cell_x = np.minimum((position[:, 0] * cols).astype(np.int64), cols - 1)
        out[t] = np.bincount(cell_y * cols + cell_x, minlength=rows * cols)
        n_moving[t] = int(moving.sum())
    return DynamicSeries(
        histograms=out, shape=(rows, cols), attributes=("y", "x"), cardinality=n_objects,
        details={"moving": n_moving, "intensity": intensity, "hotspots": centres,
                 "speed": speed},
    )


def dynamic_stand_in(
    n_times: int,
    n_bins: int,
    cardinality: int,
    *,
    n_periods: int = 10,
    seed: int = 0,
) -> np.ndarray:
    """A public stand-in series ``(N, U)`` that depends on nothing but the public shape and n.

    A smooth random distribution over the bins drifts towards a fresh random one in each of
    ``n_periods`` periods, at a rate that differs by period (some periods nearly static, some
    busy, as in Li 2017, §4.5.1's update model); every snapshot is a Poisson sample of about
    ``cardinality`` records, topped up to at least ``cardinality``. Seeded (``seed``), so a
    preview on it is reproducible and says nothing about any confidential series.

    Parameters
    ----------
    n_times, n_bins : int
        The public shape (N, U).
    cardinality : int
        The public snapshot size n (each row sums to it).
    n_periods : int
        Number of periods of different drift rates (at most N).
    seed : int
        Seed of the stand-in's own generator.

    Returns
    -------
    numpy.ndarray of float, shape (N, U)
        Whole counts.

    Examples
    --------
    >>> from dpwidgets.families.dynamic.standins import dynamic_stand_in
    >>> stand_in = dynamic_stand_in(50, 30, 2_000)
    >>> stand_in.shape, bool((stand_in.sum(axis=1) >= 2_000).all())
    ((50, 30), True)
    """
    n_times = check_positive_int(n_times, "n_times")
    n_bins = check_positive_int(n_bins, "n_bins")
    cardinality = check_positive_int(cardinality, "cardinality")
    n_periods = min(check_positive_int(n_periods, "n_periods"), n_times)
    rng = np.random.default_rng(seed)

    def smooth(size: int) -> np.ndarray:
        raw = rng.gamma(0.6, 1.0, size)
        kernel = np.ones(min(5, size)) / min(5, size)
        out = np.convolve(raw, kernel, mode="same") + 1e-3
        return out / out.sum()

    targets = np.stack([smooth(n_bins) for _ in range(n_periods + 1)])
    rates = rng.choice([0.0, 0.002, 0.02, 0.1], size=n_periods)
    period = np.minimum(np.arange(n_times) * n_periods // n_times, n_periods - 1)
    step = rates[period]  # the share moved towards the period's target at each time point
    dist = np.empty((n_times, n_bins))
    current = targets[0]
    for t in range(n_times):  # inherently sequential, a tiny body
        current = (1.0 - step[t]) * current + step[t] * targets[period[t] + 1]
        dist[t] = current
    # Poisson sampling noise (a multinomial per snapshot is far slower at this size), then
    # the shortfall below n, if any, added to each snapshot's largest cell: every row holds at
    # least n records, as the public size promises.
    counts = rng.poisson(cardinality * dist / dist.sum(axis=1, keepdims=True)).astype(float)
    short = np.maximum(cardinality - counts.sum(axis=1), 0.0)
    counts[np.arange(n_times), counts.argmax(axis=1)] += short
    return counts
