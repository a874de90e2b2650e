"""Privacy vectors and data for personalized differential privacy (Li 2017, Ch. 5).

Privacy vectors (Li 2017, §5.3.1 "Privacy specification"):

- :func:`budgets_uniform` -- ``U(low, high)``; the text samples ``U(0.01, 0.1)`` while it
  states the range of budgets as 0.01 to 1.0, so both ``high=0.1`` (default, the text's
  literal distribution) and ``high=1`` are of interest.
- :func:`budgets_normal` -- ``N(0.1, 1)`` (the second argument a standard deviation), clipped
  to ``[0.01, 1]`` (default: 46% of the records land on 0.01 and 18% on 1) or truncated
  (redrawn until inside).
- :func:`budgets_mixed` -- groups of users (fraction, budget range): e.g. conservative /
  moderate / liberal users as in Jorgensen et al. 2015.
- :data:`BUDGET_SETUPS` / :func:`make_budgets` -- the named setups the benchmarks use.
- :func:`figure_5_1` -- the text's example table with one budget per person.

Data (the text's IPUMS US and Brazil census extracts -- 370,000 and 190,000 records, 13
attributes -- are not shipped; no download happens at run time):

- :func:`census_like_records` -- a synthetic stand-in with the text's 13 attributes (Marital
  Status turned into the two binaries Is Single / Is Married, as the text does: 14 columns),
  made-up but plausible dependence, "us" and "brazil" flavours.
- :func:`count_task` -- Li 2017, §5.3.1's count task: Age, Gender, Education and Annual Income,
  100,000 records, coded on a public grid (one cell index per record).
- :func:`logistic_task` -- Li 2017, §5.3.1's logistic regression: all attributes, 50,000 records,
  income above a public threshold as the label; features scaled by their public domains so
  that every row has L2 norm <= 1 (``data_norm = 1``).
- :func:`load_fair_logistic` -- a real public data set shipped offline by statsmodels (Fair
  1978, 6,366 records): "had an affair" from eight coded attributes, scaled the same way.

All randomness comes from the ``rng`` argument (a :class:`numpy.random.Generator`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from ...engine.validation import check_finite_array, check_positive_int, check_rng
from .params import check_budgets, check_edges

__all__ = ["BUDGET_SETUPS", "CENSUS_COLUMNS", "CENSUS_DOMAINS", "COUNT_TASK_SHAPE",
           "INCOME_THRESHOLDS", "ClassificationTask", "CountTask", "budgets_mixed",
           "budgets_normal", "budgets_uniform", "census_like_records", "count_task", "figure_5_1",
           "load_fair_logistic", "logistic_task", "make_budgets", "personalized_stand_in"]


# ---------------------------------------------------------------------------------------------
# Privacy vectors
# ---------------------------------------------------------------------------------------------


def _check_real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def budgets_uniform(
    n: int, low: float = 0.01, high: float = 0.1, rng: np.random.Generator | None = None
) -> np.ndarray:
    """``n`` budgets drawn from ``U(low, high)`` (Li 2017, §5.3.1: ``U(0.01, 0.1)``).

    Raises
    ------
    ValueError
        ``n < 1`` or not ``0 < low < high``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import budgets_uniform
    >>> budgets = budgets_uniform(200, rng=np.random.default_rng(0))
    >>> budgets.shape, bool(((budgets >= 0.01) & (budgets <= 0.1)).all())
    ((200,), True)
    """
    n = check_positive_int(n, "n")
    low, high = _check_real(low, "low"), _check_real(high, "high")
    if not 0 < low < high:
        raise ValueError(f"need 0 < low < high, got low={low!r}, high={high!r}")
    rng = check_rng(rng)
    return rng.uniform(low, high, n)


def budgets_normal(
    n: int,
    mean: float = 0.1,
    sd: float = 1.0,
    clip: tuple[float, float] = (0.01, 1.0),
    rng: np.random.Generator | None = None,
    *,
    mode: str = "clip",
) -> np.ndarray:
    """``n`` budgets from ``N(mean, sd^2)`` kept inside ``clip`` (Li 2017, §5.3.1: ``N(0.1, 1)``,
    budgets from 0.01 to 1.0).

    Parameters
    ----------
    mode : {"clip", "truncate"}
        ``"clip"`` (default) moves the draws outside the range onto its ends -- with the
        text's parameters 46% of the budgets are 0.01 and 18% are 1.0 (mean ~0.35);
        ``"truncate"`` redraws them (a truncated normal, mean ~0.47). The text does not say;
        its remark that the best SVM threshold "around 0.5" is "approximate to the average
        of all privacy budgets" (§5.3.2.2) fits truncation better than clipping.

    Raises
    ------
    ValueError
        ``n < 1``, ``sd <= 0``, a range not ``0 < low < high``, an unknown mode.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import budgets_normal
    >>> rng = np.random.default_rng(0)
    >>> clipped = budgets_normal(200, rng=rng)
    >>> bool(((clipped >= 0.01) & (clipped <= 1.0)).all())
    True
    >>> round(float((clipped == 0.01).mean()), 2)  # the share moved onto the lower end
    0.46
    >>> truncated = budgets_normal(200, rng=rng, mode="truncate")
    >>> bool((truncated > 0.01).all()), round(float(truncated.mean()), 2)
    (True, 0.49)
    """
    n = check_positive_int(n, "n")
    mean, sd = _check_real(mean, "mean"), _check_real(sd, "sd")
    if sd <= 0:
        raise ValueError(f"sd must be > 0, got {sd!r}")
    low, high = (_check_real(c, "clip") for c in clip)
    if not 0 < low < high:
        raise ValueError(f"clip must be (low, high) with 0 < low < high, got {clip!r}")
    if mode not in ("clip", "truncate"):
        raise ValueError(f"mode must be 'clip' or 'truncate', got {mode!r}")
    rng = check_rng(rng)
    if mode == "clip":
        return np.clip(rng.normal(mean, sd, n), low, high)
    # Inverse-CDF sampling of the truncated normal (no rejection loop).
    a, b = special.ndtr((low - mean) / sd), special.ndtr((high - mean) / sd)
    return np.clip(mean + sd * special.ndtri(rng.uniform(a, b, n)), low, high)


def budgets_mixed(
    n: int,
    groups: Sequence[tuple[float, float, float]],
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Budgets from groups of users: ``(fraction, low, high)`` each, uniform within a group.

    A group with ``low == high`` has one fixed budget. Group sizes are drawn multinomially
    with the given fractions (which must sum to 1); the records are in random order. E.g.
    conservative / moderate / liberal users in the spirit of Jorgensen et al. 2015::

        budgets_mixed(n, [(0.5, 0.01, 0.2), (0.4, 0.2, 1.0), (0.1, 1.0, 1.0)], rng)

    Raises
    ------
    ValueError
        Bad ``n``, empty groups, fractions not positive or not summing to 1, budgets not
        ``0 < low <= high``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import budgets_mixed
    >>> groups = [(0.5, 0.01, 0.2), (0.4, 0.2, 1.0), (0.1, 1.0, 1.0)]
    >>> budgets = budgets_mixed(2_000, groups, np.random.default_rng(0))
    >>> bool(((budgets >= 0.01) & (budgets <= 1.0)).all())
    True
    >>> round(float((budgets <= 0.2).mean()), 2), round(float((budgets == 1.0).mean()), 2)
    (0.5, 0.1)
    """
    n = check_positive_int(n, "n")
    if len(groups) == 0:
        raise ValueError("groups must hold at least one (fraction, low, high)")
    table = np.array([[_check_real(v, "groups") for v in g] for g in groups], dtype=float)
    if table.ndim != 2 or table.shape[1] != 3:
        raise ValueError("every group must be (fraction, low, high)")
    fractions, lows, highs = table.T
    if np.any(fractions <= 0) or not np.isclose(fractions.sum(), 1.0, atol=1e-9):
        raise ValueError(f"group fractions must be > 0 and sum to 1, got {fractions.tolist()}")
    if np.any(lows <= 0) or np.any(highs < lows):
        raise ValueError("every group needs 0 < low <= high")
    rng = check_rng(rng)
    group = rng.choice(len(fractions), size=n, p=fractions / fractions.sum())
    return lows[group] + (highs[group] - lows[group]) * rng.random(n)


#: Named privacy vectors: name -> (description, generator(n, rng)).
BUDGET_SETUPS: Mapping[str, tuple[str, Any]] = MappingProxyType(
    {
        "normal": ("N(0.1, 1) clipped to [0.01, 1] (Li 2017, §5.3.1)",
                   lambda n, rng: budgets_normal(n, rng=rng)),
        "normal_truncated": ("N(0.1, 1) truncated to [0.01, 1]",
                             lambda n, rng: budgets_normal(n, rng=rng, mode="truncate")),
        "uniform": ("U(0.01, 0.1) (Li 2017, §5.3.1, as written)",
                    lambda n, rng: budgets_uniform(n, 0.01, 0.1, rng)),
        "uniform_wide": ("U(0.01, 1) (Li 2017, §5.3.1's stated range 0.01-1.0)",
                         lambda n, rng: budgets_uniform(n, 0.01, 1.0, rng)),
    }
)


def make_budgets(name: str, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """The privacy vector of a named setup of :data:`BUDGET_SETUPS`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import BUDGET_SETUPS, make_budgets
    >>> sorted(BUDGET_SETUPS)
    ['normal', 'normal_truncated', 'uniform', 'uniform_wide']
    >>> budgets = make_budgets("uniform_wide", 200, np.random.default_rng(0))
    >>> budgets.shape, bool(((budgets >= 0.01) & (budgets <= 1.0)).all())
    ((200,), True)
    """
    if name not in BUDGET_SETUPS:
        raise ValueError(f"name must be one of {sorted(BUDGET_SETUPS)}, got {name!r}")
    return BUDGET_SETUPS[name][1](n, check_rng(rng))


def figure_5_1() -> pd.DataFrame:
    """Li 2017, Fig. 5.1: a personalized privacy dataset (8 people, Salary sensitive, one budget
    each; the budget is not correlated with the salary).

    Examples
    --------
    >>> from dpwidgets.datasets import figure_5_1
    >>> table = figure_5_1()
    >>> table.shape, list(table.columns)
    ((8, 5), ['name', 'age', 'zip', 'salary', 'budget'])
    >>> table.loc[table["budget"].idxmin(), "name"], float(table["budget"].max())
    ('Alice', 0.15)
    """
    return pd.DataFrame(
        {
            "name": ["Alice", "Emily", "John", "Olga", "Frank", "Bob", "Mark", "Cecilia"],
            "age": [22, 32, 31, 27, 36, 35, 33, 39],
            "zip": ["02152", "02112", "02130", "02114", "02232", "01245", "04323", "02121"],
            "salary": [70000, 180000, 105000, 110000, 90000, 140000, 110000, 100000],
            "budget": [0.01, 0.02, 0.05, 0.07, 0.09, 0.11, 0.14, 0.15],
        }
    )


# ---------------------------------------------------------------------------------------------
# Census-like records (stand-in for the IPUMS US / Brazil extracts of Li 2017, §5.3.1)
# ---------------------------------------------------------------------------------------------

#: The 14 columns (the text's 13 attributes, Marital Status as Is Single / Is Married).
CENSUS_COLUMNS = (
    "age", "gender", "is_single", "is_married", "education", "disability", "nativity",
    "hours_worked", "years_residing", "owns_dwelling", "family_size", "children",
    "automobiles", "income",
)

#: Public domains ``(low, high)`` of every column (income in thousands, top-coded).
CENSUS_DOMAINS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "age": (16, 95), "gender": (0, 1), "is_single": (0, 1), "is_married": (0, 1),
        "education": (0, 15), "disability": (0, 1), "nativity": (0, 1),
        "hours_worked": (0, 99), "years_residing": (0, 60), "owns_dwelling": (0, 1),
        "family_size": (1, 12), "children": (0, 9), "automobiles": (0, 6),
        "income": (0, 500),
    }
)

_FLAVOURS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        # income scale (thousands), share foreign-born, education shift, car ownership rate
        "us": MappingProxyType({"income": 12.0, "foreign": 0.13, "edu": 1.0, "cars": 1.6}),
        "brazil": MappingProxyType({"income": 5.5, "foreign": 0.01, "edu": -2.0, "cars": 0.5}),
    }
)


def _age(n: int, rng: np.random.Generator) -> np.ndarray:
    ages = np.arange(16, 96)
    pmf = np.where(ages < 60, 1.0, np.exp(-(ages - 60) / 12.0)) * (1 + 0.1 * np.sin(ages / 6.0))
    return rng.choice(ages, size=n, p=pmf / pmf.sum())


def census_like_records(
    country: str = "us", n: int = 100_000, rng: np.random.Generator | None = None
) -> pd.DataFrame:
    """Synthetic census records with the 13 attributes of Li 2017, §5.3.1 (14 columns).

    Age (16-95), Gender (1 = male), Marital Status as Is Single / Is Married (divorced or
    widowed: both 0), Education (0-15, attainment code), Disability, Nativity (1 = born
    abroad), Working Hours per Week (0-99), Years Residing in the Current Location (0-60),
    Ownership of Dwelling, Family Size (1-12), Number of Children (0-9), Number of
    Automobiles (0-6) and Annual Income (thousands, 0-500, top-coded). The dependence is made
    up but plausible: a latent socio-economic factor drives education, hours, cars and
    income; income also rises with education, hours and (concavely) with age, and men earn
    more; marriage, children, ownership and years of residence follow age. ``"brazil"`` has
    lower incomes and education, few foreign-born and fewer cars.

    Raises
    ------
    ValueError
        Unknown country or ``n < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import census_like_records
    >>> records = census_like_records("brazil", 200, np.random.default_rng(0))
    >>> records.shape, list(records.columns[:4])
    ((200, 14), ['age', 'gender', 'is_single', 'is_married'])
    >>> bool((records["is_single"] + records["is_married"] <= 1).all())  # never both
    True
    """
    if country not in _FLAVOURS:
        raise ValueError(f"country must be one of {sorted(_FLAVOURS)}, got {country!r}")
    n = check_positive_int(n, "n")
    rng = check_rng(rng)
    f = _FLAVOURS[country]
    age = _age(n, rng)
    gender = (rng.random(n) < 0.49).astype(np.int64)
    ses = rng.standard_normal(n)  # latent socio-economic status
    young = 1.0 / (1.0 + np.exp((age - 28.0) / 4.0))
    old = 1.0 / (1.0 + np.exp(-(age - 70.0) / 6.0))
    u = rng.random(n)
    p_single = 0.05 + 0.85 * young
    p_married = (1.0 - p_single) * (0.85 - 0.45 * old)
    is_single = (u < p_single).astype(np.int64)
    is_married = ((u >= p_single) & (u < p_single + p_married)).astype(np.int64)
    education = np.clip(np.round(9.0 + f["edu"] + 2.5 * ses + rng.normal(0, 1.5, n)
                                 - 2.0 * (age > 65)), 0, 15).astype(np.int64)
    disability = (rng.random(n) < 0.03 + 0.3 * old).astype(np.int64)
    nativity = (rng.random(n) < f["foreign"]).astype(np.int64)
    works = rng.random(n) < (0.85 - 0.75 * old - 0.3 * disability + 0.05 * ses).clip(0.02, 0.97)
    hours = np.where(works, np.clip(np.round(38 + 6 * gender + 4 * ses + rng.normal(0, 8, n)), 1, 99),
                     0).astype(np.int64)
    owns = (rng.random(n) < special.expit(-2.0 + 0.06 * (age - 16) + 0.8 * ses
                                          + 0.8 * is_married)).astype(np.int64)
    years = np.clip(np.round(rng.exponential(2.0 + 8.0 * owns + 0.15 * (age - 16))),
                    0, np.minimum(age, 60)).astype(np.int64)
    children = np.clip(rng.poisson(np.where(is_married == 1, 1.6, 0.4)
                                   * np.exp(-((age - 38.0) / 14.0) ** 2)), 0, 9).astype(np.int64)
    family = np.clip(1 + is_married + children + rng.poisson(0.3, n), 1, 12).astype(np.int64)
    cars = np.clip(rng.poisson(f["cars"] * np.exp(0.35 * ses) * (0.6 + 0.2 * is_married)),
                   0, 6).astype(np.int64)
    log_income = (np.log(f["income"]) + 0.12 * (education - 9) + 0.012 * hours
                  + 0.3 * gender + 0.045 * (age - 16) - 0.0006 * (age - 16) ** 2
                  + 0.25 * ses - 0.3 * disability + rng.normal(0, 0.55, n))
    income = np.clip(np.round(np.exp(log_income)), 0, 500).astype(np.int64)
    return pd.DataFrame(
        {
            "age": age, "gender": gender, "is_single": is_single, "is_married": is_married,
            "education": education, "disability": disability, "nativity": nativity,
            "hours_worked": hours, "years_residing": years, "owns_dwelling": owns,
            "family_size": family, "children": children, "automobiles": cars, "income": income,
        },
        columns=list(CENSUS_COLUMNS),
    )


# ---------------------------------------------------------------------------------------------
# The two tasks of Li 2017, §5.3.1
# ---------------------------------------------------------------------------------------------

#: Count-task grid: age in 10-year bands 16-95 (8), gender (2), education in pairs of codes
#: (8), income on a public log grid (16 bins). 2,048 cells.
COUNT_TASK_SHAPE = (8, 2, 8, 16)
_INCOME_EDGES = np.concatenate(([0.0], np.geomspace(2.0, 300.0, 15), [np.inf]))


@dataclass(frozen=True, eq=False)
class CountTask:
    """Records coded on a public grid for range-count queries (Li 2017, §5.3.1).

    Attributes
    ----------
    cells : numpy.ndarray of int, shape (n,)
        Each record's cell (``numpy.ravel_multi_index`` of its codes on ``shape``).
    shape : tuple of int
        The grid (public).
    attributes : tuple of str
    name, description : str

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import count_task
    >>> task = count_task("us", 200, np.random.default_rng(0))
    >>> task.attributes, task.bins.size  # one bin per cell, for the histogram mechanisms
    (('age', 'gender', 'education', 'income'), 2049)
    """

    cells: np.ndarray
    shape: tuple[int, ...]
    attributes: tuple[str, ...]
    name: str
    description: str

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.cells.size)

    @property
    def n_cells(self) -> int:
        """Number of grid cells."""
        return int(np.prod(self.shape))

    @property
    def bins(self) -> np.ndarray:
        """Bin edges putting every cell index in its own bin (for ``personalized_histogram``)."""
        return np.arange(self.n_cells + 1) - 0.5

    def histogram(self) -> np.ndarray:
        """The true count of every cell (not private)."""
        return np.bincount(self.cells, minlength=self.n_cells).astype(float)


def count_task(
    country: str = "us", n: int = 100_000, rng: np.random.Generator | None = None
) -> CountTask:
    """Li 2017, §5.3.1's count task: Age, Gender, Education, Annual Income of ``n`` records.

    The attributes are coded on the public grid :data:`COUNT_TASK_SHAPE` (the text does not
    give its coding): age in 10-year bands, gender, education in pairs of codes, income on a
    log grid (0-2, ..., 300+ thousand).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import count_task
    >>> task = count_task("us", 200, np.random.default_rng(0))
    >>> task.shape, task.n_cells, task.n
    ((8, 2, 8, 16), 2048, 200)
    >>> int(task.histogram().sum())  # every record in one cell
    200
    """
    frame = census_like_records(country, n, rng)
    codes = (
        np.clip((frame["age"].to_numpy() - 16) // 10, 0, 7),
        frame["gender"].to_numpy(),
        frame["education"].to_numpy() // 2,
        np.clip(np.searchsorted(_INCOME_EDGES, frame["income"].to_numpy(), side="right") - 1, 0, 15),
    )
    cells = np.ravel_multi_index(codes, COUNT_TASK_SHAPE)
    return CountTask(
        cells=cells.astype(np.int64),
        shape=COUNT_TASK_SHAPE,
        attributes=("age", "gender", "education", "income"),
        name=f"{country}-count",
        description=(f"{n} synthetic {country.upper()}-like census records: age (8 bands), "
                     f"gender, education (8), income (16 log bins); stand-in for IPUMS"),
    )


@dataclass(frozen=True, eq=False)
class ClassificationTask:
    """Features and binary labels, with the public norm bound diffprivlib needs.

    Attributes
    ----------
    X : numpy.ndarray, shape (n, d)
        Features mapped from their public domains to ``[-1, 1] / sqrt(d)``: every row has
        L2 norm <= 1 and the domain centre maps to 0.
    y : numpy.ndarray of int, shape (n,)
    data_norm : float
        1.0.
    feature_names : tuple of str
    name, description : str
    details : dict

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import logistic_task
    >>> task = logistic_task("us", 200, np.random.default_rng(0))
    >>> task.X.shape, task.data_norm, task.feature_names[:3]
    ((200, 13), 1.0, ('age', 'gender', 'is_single'))
    """

    X: np.ndarray
    y: np.ndarray
    data_norm: float
    feature_names: tuple[str, ...]
    name: str
    description: str
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.y.size)


def _scale(frame: pd.DataFrame, domains: Mapping[str, tuple[float, float]]) -> np.ndarray:
    cols = list(domains)
    lo = np.array([domains[c][0] for c in cols], dtype=float)
    hi = np.array([domains[c][1] for c in cols], dtype=float)
    unit = 2.0 * (frame[cols].to_numpy(dtype=float) - lo) / (hi - lo) - 1.0
    return np.clip(unit, -1.0, 1.0) / np.sqrt(len(cols))


#: Public income thresholds (thousands) of the logistic task: roughly the median income.
INCOME_THRESHOLDS: Mapping[str, float] = MappingProxyType({"us": 40.0, "brazil": 13.0})


def logistic_task(
    country: str = "us", n: int = 50_000, rng: np.random.Generator | None = None
) -> ClassificationTask:
    """Li 2017, §5.3.1's logistic regression task: income above a public threshold from the other
    13 columns of :func:`census_like_records` (the text uses 50,000 records).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import logistic_task
    >>> task = logistic_task("us", 200, np.random.default_rng(0))
    >>> task.n, bool((np.linalg.norm(task.X, axis=1) <= task.data_norm).all())
    (200, True)
    >>> task.details["threshold"], round(float(task.y.mean()), 2)  # income above 40 thousand
    (40.0, 0.5)
    """
    frame = census_like_records(country, n, rng)
    features = {c: CENSUS_DOMAINS[c] for c in CENSUS_COLUMNS if c != "income"}
    threshold = INCOME_THRESHOLDS[country]
    y = (frame["income"].to_numpy() > threshold).astype(np.int64)
    return ClassificationTask(
        X=_scale(frame, features),
        y=y,
        data_norm=1.0,
        feature_names=tuple(features),
        name=f"{country}-logistic",
        description=(f"{n} synthetic {country.upper()}-like census records, label income > "
                     f"{threshold:g} thousand; features scaled by public domains"),
        details={"threshold": threshold},
    )


#: Public code ranges of the fair data's attributes (statsmodels' codebook, Fair 1978).
_FAIR_DOMAINS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "rate_marriage": (1, 5), "age": (17.5, 42), "yrs_married": (0.5, 23),
        "children": (0, 5.5), "religious": (1, 4), "educ": (9, 20), "occupation": (1, 6),
        "occupation_husb": (1, 6),
    }
)


def load_fair_logistic() -> ClassificationTask:
    """The ``fair`` survey (Fair 1978; 6,366 women, Redbook 1974) as a logistic task.

    Read from ``statsmodels.datasets.fair`` (shipped with the package, no download): label
    ``affairs > 0`` (32% positive), eight coded attributes scaled by their published code
    ranges (public) to rows of L2 norm <= 1.

    Raises
    ------
    ImportError
        Without ``statsmodels`` (see :func:`~dpwidgets.families.synth.standins.fair_affairs`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import load_fair_logistic
    >>> task = load_fair_logistic()
    >>> task.X.shape, round(float(task.y.mean()), 2)
    ((6366, 8), 0.32)
    >>> bool((np.linalg.norm(task.X, axis=1) <= 1.0).all())
    True
    """
    # The synth family's reader of the shipped survey (imported here, when asked: the
    # stand-ins of dpwidgets.datasets are loaded while that package is being imported).
    from ..synth.standins import fair_affairs

    raw = fair_affairs("load_fair_logistic")
    return ClassificationTask(
        X=_scale(raw, _FAIR_DOMAINS),
        y=(raw["affairs"].to_numpy() > 0).astype(np.int64),
        data_norm=1.0,
        feature_names=tuple(_FAIR_DOMAINS),
        name="fair-logistic",
        description="statsmodels.datasets.fair (Fair 1978), label affairs > 0, 6,366 records",
    )


# --------------------------------------------------------------------------------------------
# A public stand-in of a personalized dataset (the table [value, budget])
# --------------------------------------------------------------------------------------------
def personalized_stand_in(budgets, bins, *, value_range=None, profile=None,
                          seed: int = 0) -> np.ndarray:
    """A public stand-in table ``[value, budget]`` for a personalized dataset.

    The budget column is the public privacy vector itself (the widget reads it from here in
    analyst mode, and previews plan with it); the values depend on nothing but the public bins
    and ``profile``: each record falls in a bin drawn from ``profile`` (default: uniform over
    the bins) and takes the bin's centre.

    Parameters
    ----------
    budgets : array_like, 1-D
        The public privacy vector, one budget > 0 per record.
    bins : int or array_like
        Public bin edges, or a number of bins over ``value_range``.
    value_range : (float, float), optional
        With an integer ``bins``.
    profile : array_like, optional
        Public relative frequencies of the bins (non-negative, not all 0).
    seed : int
        Seed of the stand-in's own generator (reproducible, independent of any data).

    Returns
    -------
    numpy.ndarray, shape (n, 2)

    Raises
    ------
    ValueError
        Bad budgets, bins or profile.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import budgets_uniform, personalized_stand_in
    >>> rng = np.random.default_rng(0)
    >>> budgets = budgets_uniform(200, rng=rng)
    >>> table = personalized_stand_in(budgets, 4, value_range=(0, 100))
    >>> table.shape, sorted(set(table[:, 0].tolist()))  # the bins' centres
    ((200, 2), [12.5, 37.5, 62.5, 87.5])
    >>> bool((table[:, 1] == budgets).all())  # the budget column is the public vector
    True
    """
    vector = check_budgets(budgets, int(np.size(budgets)))
    edges = check_edges(bins, value_range)
    n_bins = edges.size - 1
    if profile is None:
        weights = np.full(n_bins, 1.0 / n_bins)
    else:
        weights = check_finite_array(profile, "profile")
        if weights.size != n_bins or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError(f"profile must hold {n_bins} non-negative weights, not all 0")
        weights = weights / weights.sum()
    rng = np.random.default_rng(seed)
    cells = rng.choice(n_bins, size=vector.array.size, p=weights)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return np.column_stack((centres[cells], vector.array))
