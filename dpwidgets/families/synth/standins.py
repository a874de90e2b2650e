"""Tables for DPCopula (Li 2017, Ch. 3): Gaussian-dependence synthetic tables, census-shaped tables,
two real tables shipped offline by ``statsmodels`` and a made-up table whose dependence a
Gaussian copula cannot hold.

- :func:`gaussian_dependence_table` -- Li 2017, §3.3.1/§3.3.4's synthetic data: ``n = 50,000``
  records, ``m = 2..8`` attributes of domain 1000, Gaussian dependence (a Gaussian copula)
  with Gaussian, uniform or Zipf margins.
- :func:`us_census_like` -- the shape of Li 2017's US census extract (Fig. 3.3a: age 96,
  income 1020, occupation 511, gender 2; 100,000 records).
- :func:`brazil_census_like` -- the shape of Li 2017's Brazil census extract (Fig. 3.3b: eight
  attributes, 188,846 records).
- :func:`load_fair_table` -- the ``fair`` (extramarital affairs) survey of Fair 1978 as
  shipped by ``statsmodels`` (6,366 records, 9 attributes), integer-coded with its
  published codebook.
- :func:`interaction_table` -- dependence a Gaussian copula cannot hold: structural zeros
  (an inequality, a nested code list) and a three-way XOR between attributes that are
  pairwise independent.
- :func:`load_randhie_table` -- the RAND Health Insurance Experiment visits data that
  ``statsmodels`` ships (20,190 records, 10 attributes), a real table with combinations the
  experiment's design rules out.

- :func:`synth_stand_in` -- the public stand-in of a confidential table: its public size and
  declared domains, a made-up dependence (what an analyst's previews run on).

Tables that declare structural zeros list them in ``details["structural_zeros"]``: rules
``(columns, allowed)`` that :func:`impossible_rows` checks.

Every generator returns a :class:`CodedTable`: an integer-coded DataFrame (codes
``0..A-1``), its public domains in the form :func:`dpwidgets.engine.synth.dpcopula` takes
(``(0, A-1)``), and the codebook. The IPUMS extracts the text uses are not shipped (no
download at run time); the census generators reproduce their attributes and domain sizes
with plausible, made-up dependencies. All randomness comes from the ``rng`` argument.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from ...engine.validation import check_positive_int, check_rng
from .params import domain_values

__all__ = ["CodedTable", "GAUSSIAN_MARGINS", "US_CENSUS_DOMAINS", "BRAZIL_CENSUS_DOMAINS",
           "gaussian_dependence_table", "us_census_like", "brazil_census_like", "load_fair_table",
           "INTERACTION_DOMAINS", "RANDHIE_DOMAINS", "interaction_table", "load_randhie_table",
           "impossible_rows", "synth_stand_in"]

#: The margins of Li 2017, Fig. 3.8.
GAUSSIAN_MARGINS = ("gaussian", "uniform", "zipf")

#: Li 2017, Fig. 3.3(a), US census (IPUMS), 100,000 records.
US_CENSUS_DOMAINS: Mapping[str, int] = MappingProxyType(
    {"age": 96, "income": 1020, "occupation": 511, "gender": 2}
)

#: Li 2017, Fig. 3.3(b), Brazil census (IPUMS-International), 188,846 records. The text lists
#: "nativity" among the attributes and the table "marital status" (both binary); we use
#: nativity.
BRAZIL_CENSUS_DOMAINS: Mapping[str, int] = MappingProxyType(
    {"age": 95, "gender": 2, "disability": 2, "nativity": 2, "years_residing": 31,
     "education": 140, "hours_worked": 95, "income": 586}
)


#: The attributes of :func:`interaction_table`.
INTERACTION_DOMAINS: Mapping[str, int] = MappingProxyType(
    {"age": 80, "tenure": 50, "income": 100, "region": 8, "district": 40, "night": 2,
     "weekend": 2, "overtime": 2}
)

#: The attributes of :func:`load_randhie_table` (codes on public grids, see there).
RANDHIE_DOMAINS: Mapping[str, int] = MappingProxyType(
    {"mdvis": 100, "coinsurance": 5, "idp": 2, "lpi": 32, "fmde": 36, "physlm": 2,
     "disea": 60, "hlthg": 2, "hlthf": 2, "hlthp": 2}
)


@dataclass(frozen=True, eq=False)
class CodedTable:
    """An integer-coded table with its public domains.

    Attributes
    ----------
    frame : pandas.DataFrame
        One int64 column per attribute, codes ``0..A-1``.
    domains : dict of str to (int, int)
        ``(0, A-1)`` per column, the form :func:`~dpwidgets.engine.synth.dpcopula` takes.
    name, description : str
    codebook : dict of str to numpy.ndarray
        What each code stands for (the original value or bin label), where meaningful.
    details : dict
        Generation parameters (e.g. the latent correlation matrix).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import us_census_like
    >>> table = us_census_like(200, np.random.default_rng(0))
    >>> table.domain_sizes
    {'age': 96, 'income': 1020, 'occupation': 511, 'gender': 2}
    >>> table.domains["gender"], table.codebook["gender"].tolist()
    ((0, 1), ['female', 'male'])
    """

    frame: pd.DataFrame
    domains: Mapping[str, tuple[int, int]]
    name: str
    description: str
    codebook: Mapping[str, np.ndarray] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "domains", MappingProxyType(dict(self.domains)))
        object.__setattr__(self, "codebook", MappingProxyType(dict(self.codebook)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def n(self) -> int:
        """Number of records."""
        return int(len(self.frame))

    @property
    def domain_sizes(self) -> dict[str, int]:
        """Number of values of every attribute."""
        return {c: hi - lo + 1 for c, (lo, hi) in self.domains.items()}


def _inverse_cdf(pmf: np.ndarray, u: np.ndarray) -> np.ndarray:
    cdf = np.cumsum(pmf / pmf.sum())
    cdf[-1] = 1.0
    return np.minimum(np.searchsorted(cdf, u, side="right"), pmf.size - 1).astype(np.int64)


def _latent(correlation: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of N(0, correlation), shape (n, m)."""
    return rng.standard_normal((n, correlation.shape[0])) @ np.linalg.cholesky(correlation).T


def _correlation(value, m: int) -> np.ndarray:
    if isinstance(value, Real) and not isinstance(value, bool):
        rho = float(value)
        if not -1.0 / (m - 1) < rho < 1.0:
            raise ValueError(
                f"correlation must be in (-1/(m-1), 1) = ({-1.0 / (m - 1):.3g}, 1) for an "
                f"equicorrelated table of m={m}, got {value!r}"
            )
        out = np.full((m, m), rho)
        np.fill_diagonal(out, 1.0)
        return out
    out = np.asarray(value, dtype=float)
    if out.shape != (m, m) or not np.all(np.isfinite(out)):
        raise ValueError(f"correlation must be a number or a finite ({m}, {m}) matrix")
    if not np.allclose(out, out.T) or not np.allclose(np.diag(out), 1.0):
        raise ValueError("correlation must be symmetric with a unit diagonal")
    if np.linalg.eigvalsh(out).min() <= 0:
        raise ValueError("correlation must be positive definite")
    return out


def gaussian_dependence_table(
    n: int = 50_000,
    m: int = 8,
    domain: int = 1000,
    margins: str = "gaussian",
    rng: np.random.Generator | None = None,
    *,
    correlation: float | np.ndarray = 0.5,
    zipf_exponent: float = 1.1,
) -> CodedTable:
    """A table with Gaussian dependence and chosen margins (Li 2017, §3.3.1, §3.3.4, Fig. 3.8-3.9).

    Latent ``Z ~ N(0, P)`` (``P`` equicorrelated with ``correlation``, or the given matrix);
    ``U = Phi(Z)``; attribute ``j`` is ``F^{-1}(U_j)`` for a discrete margin over
    ``0..domain-1``:

    - ``"gaussian"``: N(domain/2, (domain/8)^2) discretised (floor) and clipped;
    - ``"uniform"``: uniform over the domain;
    - ``"zipf"``: ``P(i) ∝ (i + 1)^(-zipf_exponent)``.

    Every margin is a monotone transform of ``Z_j``, so the table has exactly the Gaussian
    copula with matrix ``P`` (up to discretisation): the setting DPCopula models. The text
    does not state its correlations; 0.5 is our default.

    Parameters
    ----------
    n : int
        Records (the text: 50,000).
    m : int
        Attributes, >= 2 (the text: 2 to 8, default 8).
    domain : int
        Values per attribute, >= 2 (the text: 1000).
    margins : {"gaussian", "uniform", "zipf"}
    rng : numpy.random.Generator, optional
    correlation : float or array_like
        Equicorrelation in ``(-1/(m-1), 1)`` or an (m, m) positive-definite correlation matrix.
    zipf_exponent : float
        Exponent of the Zipf margin (> 0).

    Returns
    -------
    CodedTable
        Columns ``x1..xm``; ``details["correlation"]`` is the latent ``P``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import gaussian_dependence_table
    >>> rng = np.random.default_rng(0)
    >>> table = gaussian_dependence_table(200, m=3, domain=100, margins="uniform", rng=rng)
    >>> table.frame.shape, list(table.frame.columns), table.domains["x1"]
    ((200, 3), ['x1', 'x2', 'x3'], (0, 99))
    >>> round(float(table.frame["x1"].corr(table.frame["x2"], method="spearman")), 2)
    0.48
    """
    n = check_positive_int(n, "n")
    m = check_positive_int(m, "m", minimum=2)
    domain = check_positive_int(domain, "domain", minimum=2)
    if margins not in GAUSSIAN_MARGINS:
        raise ValueError(f"margins must be one of {GAUSSIAN_MARGINS}, got {margins!r}")
    if not (isinstance(zipf_exponent, Real) and zipf_exponent > 0):
        raise ValueError(f"zipf_exponent must be > 0, got {zipf_exponent!r}")
    corr = _correlation(correlation, m)
    rng = check_rng(rng)
    z = _latent(corr, n, rng)
    if margins == "gaussian":
        codes = np.clip(np.floor(domain / 2 + domain / 8 * z), 0, domain - 1).astype(np.int64)
    elif margins == "uniform":
        codes = np.minimum(np.floor(special.ndtr(z) * domain), domain - 1).astype(np.int64)
    else:
        pmf = (np.arange(domain) + 1.0) ** (-float(zipf_exponent))
        u = special.ndtr(z)
        codes = np.stack([_inverse_cdf(pmf, u[:, j]) for j in range(m)], axis=1)
    columns = [f"x{j + 1}" for j in range(m)]
    return CodedTable(
        frame=pd.DataFrame(codes, columns=columns),
        domains={c: (0, domain - 1) for c in columns},
        name=f"gaussian-dependence-{m}d-{margins}",
        description=(
            f"{n} records, {m} attributes of domain {domain}, Gaussian dependence, {margins} "
            f"margins (Li 2017, §3.3.4)"
        ),
        details={"correlation": corr, "margins": margins, "zipf_exponent": float(zipf_exponent)},
    )


def _age_pmf(size: int) -> np.ndarray:
    """A population pyramid: flat to 60, thinning after, with cohort bumps."""
    age = np.arange(size)
    pmf = np.where(age < 60, 1.0, np.exp(-(age - 60) / 12.0)) * (1 + 0.15 * np.sin(age / 7.0))
    return pmf / pmf.sum()


def _census_table(domains: Mapping[str, int], columns: dict, **described) -> CodedTable:
    """A :class:`CodedTable` of int64 codes in the domains' column order, codes ``0..A-1``."""
    frame = pd.DataFrame(columns, columns=list(domains)).astype(np.int64)
    return CodedTable(frame=frame, domains={c: (0, a - 1) for c, a in domains.items()},
                      **described)


def us_census_like(n: int = 100_000, rng: np.random.Generator | None = None) -> CodedTable:
    """A table with the attributes and domains of Li 2017's US census extract (Fig. 3.3a).

    Age (96 values: 0-95), income (1020: thousands of dollars, top-coded at 1019), occupation
    (511 codes, ordered by how common they are, as the text imposes a total order on the
    nominal attribute) and gender (2). Made-up but plausible dependence: a latent Gaussian
    drives age, occupation and income (correlations 0.2, 0.35, 0.45); men earn more
    (+0.3 latent s.d.); under-16s have income 0 and occupation 0 ("none") -- structural
    zeros the Gaussian copula cannot express, and a binary gender for the hybrid. ``n``
    records (the text: 100,000), drawn with ``rng``; returns a :class:`CodedTable`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import us_census_like
    >>> frame = us_census_like(200, np.random.default_rng(0)).frame
    >>> frame.shape, list(frame.columns)
    ((200, 4), ['age', 'income', 'occupation', 'gender'])
    >>> bool((frame.loc[frame["age"] < 16, ["income", "occupation"]] == 0).all().all())
    True
    """
    n = check_positive_int(n, "n")
    rng = check_rng(rng)
    corr = np.array([[1.0, 0.2, 0.35], [0.2, 1.0, 0.45], [0.35, 0.45, 1.0]])
    z = _latent(corr, n, rng)  # age, occupation, income
    gender = (rng.random(n) < 0.49).astype(np.int64)  # 1 = male
    age = _inverse_cdf(_age_pmf(96), special.ndtr(z[:, 0]))
    occ_pmf = np.exp(-np.arange(511) / 90.0) + 0.02
    occupation = _inverse_cdf(occ_pmf, special.ndtr(z[:, 1])) + 1
    income = np.floor(np.exp(3.3 + 0.75 * (z[:, 2] + 0.3 * gender))).astype(np.int64)
    income = np.clip(income, 0, 1019)
    minor = age < 16
    occupation = np.where(minor, 0, np.minimum(occupation, 510))
    income = np.where(minor, 0, income)
    return _census_table(
        US_CENSUS_DOMAINS,
        {"age": age, "income": income, "occupation": occupation, "gender": gender},
        name="us-census-like",
        description=(
            f"{n} records shaped like Li 2017's US census extract (age 96, income 1020, "
            f"occupation 511, gender 2); synthetic, made-up dependence"
        ),
        codebook={"gender": np.array(["female", "male"])},
        details={"latent_correlation": corr, "latent_order": ("age", "occupation", "income")},
    )


def brazil_census_like(n: int = 188_846, rng: np.random.Generator | None = None) -> CodedTable:
    """A table with the attributes and domains of Li 2017's Brazil census extract (Fig. 3.3b).

    Age (95), gender (2), disability (2), nativity (2), years residing in the current place
    (31), education (140, a fine-grained attainment code), working hours per week (95) and
    annual income (586 bins). Made-up but plausible dependence: a latent Gaussian over age,
    years residing, education, hours and income (age-years 0.5, education-income 0.55,
    hours-income 0.4, ...); disability more likely with age; migrants (nativity 1) have
    lived fewer years where they are; men work more hours and earn more; children have
    0 hours and 0 income. ``n`` records (the text: 188,846), drawn with ``rng``; returns a
    :class:`CodedTable`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import brazil_census_like
    >>> table = brazil_census_like(200, np.random.default_rng(0))
    >>> table.n, list(table.frame.columns[:4])
    (200, ['age', 'gender', 'disability', 'nativity'])
    >>> children = table.frame["age"] < 14
    >>> bool((table.frame.loc[children, ["hours_worked", "income"]] == 0).all().all())
    True
    """
    n = check_positive_int(n, "n")
    rng = check_rng(rng)
    # Latent order: age, years_residing, education, hours_worked, income.
    corr = np.array(
        [
            [1.0, 0.5, -0.1, 0.1, 0.25],
            [0.5, 1.0, -0.05, 0.05, 0.1],
            [-0.1, -0.05, 1.0, 0.2, 0.55],
            [0.1, 0.05, 0.2, 1.0, 0.4],
            [0.25, 0.1, 0.55, 0.4, 1.0],
        ]
    )
    z = _latent(corr, n, rng)
    u = special.ndtr(z)
    gender = (rng.random(n) < 0.49).astype(np.int64)
    age = _inverse_cdf(_age_pmf(95), u[:, 0])
    disability = (rng.random(n) < 0.03 + 0.25 / (1 + np.exp(-(age - 65) / 8.0))).astype(np.int64)
    nativity = (rng.random(n) < 0.15).astype(np.int64)  # 1 = born elsewhere
    years = np.floor(u[:, 1] * np.minimum(age + 1, 31) * np.where(nativity == 1, 0.5, 1.0))
    years = np.clip(years, 0, 30).astype(np.int64)
    edu_cap = np.clip((age - 4) * 8, 0, 139)
    education = np.minimum(np.floor(u[:, 2] * 140), edu_cap).astype(np.int64)
    hours = np.clip(np.floor(40 + 12 * z[:, 3] + 4 * gender), 0, 94).astype(np.int64)
    income = np.clip(np.floor(np.exp(4.0 + 0.9 * (z[:, 4] + 0.25 * gender))), 0, 585)
    income = income.astype(np.int64)
    child = age < 14
    hours = np.where(child, 0, hours)
    income = np.where(child, 0, income)
    return _census_table(
        BRAZIL_CENSUS_DOMAINS,
        {"age": age, "gender": gender, "disability": disability, "nativity": nativity,
         "years_residing": years, "education": education, "hours_worked": hours,
         "income": income},
        name="brazil-census-like",
        description=(
            f"{n} records shaped like Li 2017's Brazil census extract (8 attributes, domains "
            f"95, 2, 2, 2, 31, 140, 95, 586); synthetic, made-up dependence"
        ),
        codebook={
            "gender": np.array(["female", "male"]),
            "disability": np.array(["no", "yes"]),
            "nativity": np.array(["native", "born elsewhere"]),
        },
        details={
            "latent_correlation": corr,
            "latent_order": ("age", "years_residing", "education", "hours_worked", "income"),
        },
    )


#: The published values of the fair data's coded attributes (statsmodels' NOTE; Fair 1978).
_FAIR_VALUES: Mapping[str, tuple[float, ...]] = MappingProxyType(
    {
        "rate_marriage": (1, 2, 3, 4, 5),
        "age": (17.5, 22, 27, 32, 37, 42),
        "yrs_married": (0.5, 2.5, 6, 9, 13, 16.5, 23),
        "children": (0, 1, 2, 3, 4, 5.5),
        "religious": (1, 2, 3, 4),
        "educ": (9, 12, 14, 16, 17, 20),
        "occupation": (1, 2, 3, 4, 5, 6),
        "occupation_husb": (1, 2, 3, 4, 5, 6),
    }
)
#: ``affairs`` (a continuous measure) is binned: 0 = none, then half-unit bins, top-coded.
_AFFAIRS_BINS = 21


def _statsmodels_frame(name: str, caller: str) -> pd.DataFrame:
    """The data set ``statsmodels.datasets.<name>`` as a DataFrame (shipped, no download).

    Raises ``ImportError`` naming ``caller`` without statsmodels (it comes with the ``demo`` and
    ``test`` extras)."""
    try:
        module = importlib.import_module(f"statsmodels.datasets.{name}")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{caller} needs statsmodels: pip install 'dpwidgets[demo]' (or statsmodels)"
        ) from exc
    return module.load_pandas().data


def fair_affairs(caller: str):
    """The 1974 Redbook survey of affairs (Fair 1978) that statsmodels ships, as a DataFrame.

    Raises ``ImportError`` naming ``caller`` without statsmodels (it comes with the ``demo`` and
    ``test`` extras)."""
    return _statsmodels_frame("fair", caller)


def load_fair_table() -> CodedTable:
    """The ``fair`` survey (Fair 1978; 6,366 women, Redbook 1974) as an integer-coded table.

    Read from ``statsmodels.datasets.fair`` (shipped with the package, no download). The
    eight coded attributes keep their published value lists (codebook in
    ``statsmodels.datasets.fair.NOTE``), mapped to ``0..A-1``; ``affairs`` (time spent in
    extramarital affairs, continuous) is binned on a public grid: code 0 = none, code ``c``
    in 1..19 = ``((c-1)/2, c/2]``, code 20 = above 9.5. All attributes are ordinal; all but
    ``affairs`` have fewer than 10 values, so with DPCopula's default hybrid threshold (10)
    the hybrid would partition into 1.8 million cells -- use ``hybrid_threshold=None``
    (every attribute through the copula) or a small threshold.

    Returns
    -------
    CodedTable
        6,366 rows of 9 coded attributes; ``codebook`` maps each code back to its published
        value (for ``affairs``, its bin).

    Raises
    ------
    ImportError
        Without ``statsmodels`` (see :func:`fair_affairs`).

    Examples
    --------
    >>> from dpwidgets.datasets import load_fair_table
    >>> table = load_fair_table()
    >>> table.frame.shape, table.domain_sizes["affairs"], str(table.codebook["affairs"][1])
    ((6366, 9), 21, '(0, 0.5]')
    """
    raw = fair_affairs("load_fair_table")
    out = {}
    codebook = {}
    for col, values in _FAIR_VALUES.items():
        vals = np.asarray(values, dtype=float)
        idx = np.searchsorted(vals, raw[col].to_numpy())
        idx = np.minimum(idx, vals.size - 1)
        if not np.all(vals[idx] == raw[col].to_numpy()):  # pragma: no cover - fixed data
            raise ValueError(f"fair.{col} has values outside its published coding")
        out[col] = idx.astype(np.int64)
        codebook[col] = vals
    affairs = raw["affairs"].to_numpy(dtype=float)
    out["affairs"] = np.where(
        affairs <= 0, 0, np.minimum(np.ceil(affairs * 2), _AFFAIRS_BINS - 1)
    ).astype(np.int64)
    labels = ["0"] + [f"({(c - 1) / 2:g}, {c / 2:g}]" for c in range(1, _AFFAIRS_BINS - 1)]
    codebook["affairs"] = np.array(labels + [f"> {(_AFFAIRS_BINS - 2) / 2:g}"])
    frame = pd.DataFrame(out, columns=[*_FAIR_VALUES, "affairs"])
    domains = {c: (0, len(v) - 1) for c, v in _FAIR_VALUES.items()}
    domains["affairs"] = (0, _AFFAIRS_BINS - 1)
    return CodedTable(
        frame=frame,
        domains=domains,
        name="fair",
        description=(
            "Fair (1978) affairs survey, 6,366 records, 9 ordinal attributes, integer-coded "
            "(statsmodels.datasets.fair)"
        ),
        codebook=codebook,
        details={"source": "statsmodels.datasets.fair"},
    )


def impossible_rows(frame: pd.DataFrame, rules) -> np.ndarray:
    """Which rows of ``frame`` fall in a combination a structural-zero rule declares impossible.

    Parameters
    ----------
    frame : pandas.DataFrame
        Integer codes ``0..A-1`` (a real or a synthetic table).
    rules : sequence of (tuple of str, numpy.ndarray)
        ``(columns, allowed)``: ``allowed`` is a boolean array over the joint domain of
        ``columns`` (shape ``(A_1, ..., A_k)``), False where the combination cannot occur --
        as a table's ``details["structural_zeros"]``.

    Returns
    -------
    numpy.ndarray
        Boolean, one entry per row: True if some rule forbids the row's combination.

    Raises
    ------
    ValueError
        If a rule names a column ``frame`` lacks or ``frame`` holds a code outside the rule's
        array.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import impossible_rows, interaction_table
    >>> table = interaction_table(200, np.random.default_rng(0))
    >>> rules = table.details["structural_zeros"]
    >>> int(impossible_rows(table.frame, rules).sum())  # the generated table keeps its rules
    0
    >>> odd = table.frame.head(1).assign(age=0, tenure=10)  # 10 years in the job at 16
    >>> impossible_rows(odd, rules).tolist()
    [True]
    """
    out = np.zeros(len(frame), dtype=bool)
    for columns, allowed in rules:
        allowed = np.asarray(allowed, dtype=bool)
        missing = [c for c in columns if c not in frame.columns]
        if missing or allowed.ndim != len(columns):
            raise ValueError(
                f"a structural-zero rule over {list(columns)} needs those columns and an "
                f"array of {len(columns)} dimensions (missing {missing}, got {allowed.ndim})"
            )
        codes = tuple(frame[c].to_numpy() for c in columns)
        for c, size, values in zip(columns, allowed.shape, codes, strict=True):
            if values.size and (values.min() < 0 or values.max() >= size):
                raise ValueError(f"column {c!r} holds codes outside 0..{size - 1}")
        out |= ~allowed[codes]
    return out


def interaction_table(
    n: int = 50_000, rng: np.random.Generator | None = None, *, flip: float = 0.05
) -> CodedTable:
    """A table whose dependence a Gaussian copula cannot hold: structural zeros, a nested code
    list, a non-monotone relation and a three-way XOR.

    Eight attributes (:data:`INTERACTION_DOMAINS`), made up:

    - ``age`` (80 values, ages 16-95) from the population pyramid of the census tables;
      ``tenure`` (50: years in the current job) ``= floor(U^2 min(age + 1, 50))``, so
      ``tenure <= age`` (no one has worked longer than since 16): 1,225 of the 4,000
      ``(age, tenure)`` cells are structural zeros;
    - ``income`` (100 bins): an inverted U in age (peak at code 30, i.e. age 46) plus 12 bins
      with overtime and Gaussian noise (s.d. 10), top- and bottom-coded: a dependence
      Kendall's tau barely sees;
    - ``region`` (8, unequal sizes) and ``district`` (40): five districts per region, the
      district codes a fixed random permutation (drawn from ``rng``; the map is
      ``details["district_region"]``): a deterministic nominal nesting with 280 of the 320
      ``(region, district)`` cells structurally zero and little rank correlation;
    - ``night`` (night shift), ``weekend`` (fair coins) and ``overtime = night XOR
      weekend``, flipped with probability ``flip``: the three are pairwise independent, so
      every pairwise statistic (Kendall's tau, a 2-way marginal) says "independent", yet
      ``overtime`` is a function of the other two.

    Parameters
    ----------
    n : int
        Records.
    rng : numpy.random.Generator, optional
    flip : float
        Probability in [0, 0.5] that ``overtime`` differs from ``night XOR weekend``.

    Returns
    -------
    CodedTable
        ``details["structural_zeros"]`` holds the rules ``(("age", "tenure"), allowed)`` and
        ``(("region", "district"), allowed)`` for :func:`impossible_rows`;
        ``details["interaction"] = ("night", "weekend", "overtime")``, ``details["flip"]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import interaction_table
    >>> frame = interaction_table(200, np.random.default_rng(0), flip=0.05).frame
    >>> frame.shape, bool((frame["tenure"] <= frame["age"]).all())
    ((200, 8), True)
    >>> xor = frame["night"] ^ frame["weekend"]
    >>> round(float((frame["overtime"] == xor).mean()), 2)  # about 1 - flip
    0.94
    """
    n = check_positive_int(n, "n")
    if isinstance(flip, bool) or not isinstance(flip, Real) or not 0.0 <= flip <= 0.5:
        raise ValueError(f"flip must be a number in [0, 0.5], got {flip!r}")
    rng = check_rng(rng)
    sizes = INTERACTION_DOMAINS
    age = _inverse_cdf(_age_pmf(96)[16:], rng.random(n))
    tenure = np.floor(rng.random(n) ** 2 * np.minimum(age + 1, sizes["tenure"]))
    tenure = tenure.astype(np.int64)
    night = (rng.random(n) < 0.5).astype(np.int64)
    weekend = (rng.random(n) < 0.5).astype(np.int64)
    overtime = night ^ weekend ^ (rng.random(n) < flip).astype(np.int64)
    peak = 30.0 + 30.0 * np.exp(-(((age - 30.0) / 14.0) ** 2))
    income = np.clip(np.round(peak + 12.0 * overtime + 10.0 * rng.standard_normal(n)), 0, 99)
    region_pmf = np.array([8.0, 6, 5, 4, 3, 2, 2, 1])
    region = _inverse_cdf(region_pmf, rng.random(n))
    per_region = sizes["district"] // sizes["region"]
    permutation = rng.permutation(sizes["district"])
    district = permutation[per_region * region + rng.integers(0, per_region, n)]
    district_region = np.empty(sizes["district"], dtype=np.int64)
    district_region[permutation] = np.arange(sizes["district"]) // per_region
    ages, tenures = np.arange(sizes["age"]), np.arange(sizes["tenure"])
    rules = (
        (("age", "tenure"), tenures[None, :] <= ages[:, None]),
        (("region", "district"), district_region[None, :] == np.arange(sizes["region"])[:, None]),
    )
    return _census_table(
        sizes,
        {"age": age, "tenure": tenure, "income": income, "region": region,
         "district": district, "night": night, "weekend": weekend, "overtime": overtime},
        name="interaction",
        description=(
            f"{n} records, 8 attributes (domains 80, 50, 100, 8, 40, 2, 2, 2) with structural "
            f"zeros, a nested code list, a non-monotone relation and a three-way XOR (made up)"
        ),
        codebook={"age": np.arange(16, 96)},
        details={"structural_zeros": rules, "interaction": ("night", "weekend", "overtime"),
                 "flip": float(flip), "district_region": district_region},
    )


#: RAND HIE coinsurance rates (percent) of the five plans' ``lncoins = ln(rate + 1)`` values.
_RANDHIE_COINSURANCE = (0, 25, 50, 95, 100)
#: Width of the public bins of ``lpi`` and ``fmde`` (logs; 0 stays in the first bin).
_RANDHIE_LOG_BIN = 0.25


def load_randhie_table() -> CodedTable:
    """The RAND Health Insurance Experiment data that ``statsmodels`` ships (20,190 person-years,
    10 attributes), coded on public grids.

    Read offline from ``statsmodels.datasets.randhie``. Codes (domains in
    :data:`RANDHIE_DOMAINS`): ``mdvis`` (outpatient visits) as is, domain 0-99;
    ``coinsurance`` the plan's rate 0, 25, 50, 95 or 100 % (``lncoins = ln(rate + 1)``);
    ``idp`` (individual deductible plan), ``hlthg``, ``hlthf``, ``hlthp`` (self-rated health
    good / fair / poor; excellent is all three 0) as is; ``lpi`` and ``fmde`` (logs of the
    participation incentive and of the maximum dollar expenditure) in bins of 0.25 from 0
    (``lpi`` < 8, ``fmde`` < 9); ``physlm`` (physical limitation; a few imputed fractions)
    rounded to 0/1; ``disea`` (chronic disease index) floored, domain 0-59.

    Structural zeros (``details["structural_zeros"]``, each with zero count in the file):
    at most one of ``hlthg``, ``hlthf``, ``hlthp`` is 1 (one self-rating); the plans tie
    ``idp`` to the coinsurance rate (the individual deductible plan has rate 0 or 100 %, the
    others never 100 %); a 100 % rate has ``fmde`` 0.

    Returns
    -------
    CodedTable
        20,190 rows of 10 coded attributes; ``details["structural_zeros"]`` holds the three
        rules above.

    Raises
    ------
    ImportError
        Without ``statsmodels``.

    Examples
    --------
    >>> from dpwidgets.datasets import impossible_rows, load_randhie_table
    >>> table = load_randhie_table()
    >>> table.frame.shape
    (20190, 10)
    >>> int(impossible_rows(table.frame, table.details["structural_zeros"]).sum())
    0
    """
    raw = _statsmodels_frame("randhie", "load_randhie_table")
    sizes = RANDHIE_DOMAINS
    rates = np.asarray(_RANDHIE_COINSURANCE, dtype=float)
    coinsurance = np.abs(raw["lncoins"].to_numpy()[:, None] - np.log(rates + 1)).argmin(axis=1)
    if not np.allclose(np.log(rates[coinsurance] + 1), raw["lncoins"], atol=1e-5):
        raise ValueError("randhie.lncoins has values outside the five plans")  # pragma: no cover

    def grid(values, size: int) -> np.ndarray:
        return np.minimum(np.floor(np.asarray(values) / _RANDHIE_LOG_BIN), size - 1)

    columns = {
        "mdvis": np.minimum(raw["mdvis"].to_numpy(), sizes["mdvis"] - 1),
        "coinsurance": coinsurance,
        "idp": raw["idp"].to_numpy(),
        "lpi": grid(raw["lpi"], sizes["lpi"]),
        "fmde": grid(raw["fmde"], sizes["fmde"]),
        "physlm": np.round(raw["physlm"].to_numpy()),
        "disea": np.minimum(np.floor(raw["disea"].to_numpy()), sizes["disea"] - 1),
        "hlthg": raw["hlthg"].to_numpy(),
        "hlthf": raw["hlthf"].to_numpy(),
        "hlthp": raw["hlthp"].to_numpy(),
    }
    health = np.ones((2, 2, 2), dtype=bool)
    health[1, 1, :] = health[1, :, 1] = health[:, 1, 1] = False
    plan = np.array([[True, True, True, True, False], [True, False, False, False, True]])
    full_rate = np.ones((5, sizes["fmde"]), dtype=bool)
    full_rate[4, 1:] = False
    rules = (
        (("hlthg", "hlthf", "hlthp"), health),
        (("idp", "coinsurance"), plan),
        (("coinsurance", "fmde"), full_rate),
    )
    edges = np.arange(max(sizes["lpi"], sizes["fmde"]) + 1) * _RANDHIE_LOG_BIN
    return _census_table(
        sizes,
        columns,
        name="randhie",
        description=(
            "RAND Health Insurance Experiment (statsmodels.datasets.randhie), 20,190 records, "
            "10 attributes coded on public grids"
        ),
        codebook={
            "coinsurance": rates,
            "lpi": edges[: sizes["lpi"]],
            "fmde": edges[: sizes["fmde"]],
        },
        details={"source": "statsmodels.datasets.randhie", "structural_zeros": rules},
    )


# --------------------------------------------------------------------------------------------
# A public stand-in
# --------------------------------------------------------------------------------------------
def synth_stand_in(
    n: int,
    domains: Mapping[str, object],
    *,
    dtypes: Mapping[str, object] | None = None,
    correlation: float = 0.3,
    seed: int = 0,
) -> pd.DataFrame:
    """A public stand-in table that depends on nothing but public facts.

    ``n`` rows (the dataset's public size) and one column per entry of ``domains`` (the
    declared public domains, in order): a Gaussian copula with equicorrelation
    ``correlation`` (a public, made-up choice) and uniform margins over each domain. Seeded:
    a preview on it is reproducible and says nothing about any confidential table.

    Parameters
    ----------
    n : int
        The public number of rows.
    domains : mapping
        Column -> domain (any form the mechanisms accept).
    dtypes : mapping, optional
        Column -> dtype (default int64 for integer domains, float64 otherwise): give the
        dataset's, so that the stand-in has the same schema.
    correlation : float
        The latent equicorrelation, in ``(-1/(m-1), 1)``.
    seed : int
        Seed of the stand-in's own generator.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from dpwidgets.families.synth.standins import synth_stand_in
    >>> table = synth_stand_in(200, {"age": (0, 95), "sex": 2}, seed=1)
    >>> table.shape, bool(table["age"].between(0, 95).all()), sorted(table["sex"].unique().tolist())
    ((200, 2), True, [0, 1])
    """
    n = check_positive_int(n, "n")
    if not isinstance(domains, Mapping) or len(domains) < 1:
        raise ValueError("domains must be a non-empty mapping column -> domain")
    m = len(domains)
    if not (isinstance(correlation, Real) and (m == 1 or -1.0 / (m - 1) < correlation < 1.0)):
        raise ValueError(f"correlation must be in (-1/(m-1), 1) for m = {m}, got {correlation!r}")
    corr = np.full((m, m), float(correlation))
    np.fill_diagonal(corr, 1.0)
    rng = np.random.default_rng(seed)
    u = special.ndtr(rng.standard_normal((n, m)) @ np.linalg.cholesky(corr).T)
    out = {}
    for j, (col, spec) in enumerate(domains.items()):
        values = domain_values(spec)
        picked = values[np.minimum((u[:, j] * values.size).astype(np.int64), values.size - 1)]
        dtype = (dtypes or {}).get(col, picked.dtype)
        out[str(col)] = pd.Series(picked).astype(dtype)
    return pd.DataFrame(out)
