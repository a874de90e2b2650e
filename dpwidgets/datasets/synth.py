"""Tables for DPCopula (Li 2017, Ch. 3): Gaussian-dependence synthetic tables, census-shaped tables
and one small real table shipped offline by ``statsmodels``.

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

Every generator returns a :class:`CodedTable`: an integer-coded DataFrame (codes
``0..A-1``), its public domains in the form :func:`dpwidgets.engine.synth.dpcopula` takes
(``(0, A-1)``), and the codebook. The IPUMS extracts the text uses are not shipped (no
download at run time); the census generators reproduce their attributes and domain sizes
with plausible, made-up dependencies. All randomness comes from the ``rng`` argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from ..engine._validation import check_positive_int, check_rng

__all__ = [
    "CodedTable",
    "GAUSSIAN_MARGINS",
    "US_CENSUS_DOMAINS",
    "BRAZIL_CENSUS_DOMAINS",
    "gaussian_dependence_table",
    "us_census_like",
    "brazil_census_like",
    "load_fair_table",
]

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


def fair_affairs(caller: str):
    """The 1974 Redbook survey of affairs (Fair 1978) that statsmodels ships, as a DataFrame.

    Raises ``ImportError`` naming ``caller`` without statsmodels (it comes with the ``demo`` and
    ``test`` extras)."""
    try:
        from statsmodels.datasets import fair
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{caller} needs statsmodels: pip install 'dpwidgets[demo]' (or statsmodels)"
        ) from exc
    return fair.load_pandas().data


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

    Raises
    ------
    ImportError
        Without ``statsmodels`` (see :func:`fair_affairs`).
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
