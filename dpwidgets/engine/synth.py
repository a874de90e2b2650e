"""Differentially private synthetic data: DPCopula (Kendall, MLE, hybrid) and its evaluation.

DPCopula (Li 2017 Ch. 3) releases a table of ``m`` integer-coded attributes as synthetic records
drawn from a Gaussian copula: one DP histogram per attribute gives DP margins, a DP
correlation matrix gives the dependence, and Gaussian samples ``Z ~ N(0, P)`` are pushed
through ``U = Phi(Z)`` and the inverse DP margins ``X_j = F~_j^{-1}(U_j)`` (Li 2017 Alg. 3).

Where things are
----------------
- :func:`dpcopula` -- Li 2017 Alg. 4 (Kendall's tau, the default), Alg. 1-2 (``method="mle"``)
  and Alg. 6 (the hybrid for small-domain attributes, on by default).
- Baselines: :func:`independent_synth` (DP margins only, no dependence: the dependence-free
  baseline DPCopula is judged against), :func:`laplace_histogram_synth` (the Laplace
  mechanism on the full-domain histogram, where it fits in memory), :func:`peer_synth`
  (today's peers AIM and MST from OpenDP's ``mbi`` extra, imported lazily).
- Evaluation: :func:`random_range_queries` (random hyper-rectangles over all attributes,
  Li 2017 §3.3.1), :func:`range_count_error` (relative error with a sanity bound),
  :func:`marginal_comparison` (per-column total variation distance),
  :func:`dependence_comparison` (Kendall / Pearson matrices and their difference).
- Helpers: :func:`repair_correlation` (Li 2017 Alg. 5 step 3), :func:`kendall_sample_size`
  (the sampling rule of Li 2017 §3.2.2), :func:`resolve_domains`, :class:`ConcordanceMemo`
  (the per-row concordance counts of a public table, kept between releases: Kendall's tau of
  a later release costs the rows left out of its sample).

Every release returns a :class:`SynthResult` (the synthetic DataFrame, what each step
spent, the DP correlation matrix, the DP margins, the guarantee).

Neighbours and guarantee
------------------------
Add/remove one record (Li 2017 Def. 3.1.1). Every release here is ``epsilon``-DP for that
relation (``2 * epsilon``-DP under replace-one), *given public attribute domains*. The
record count ``n`` is **not** assumed public: the synthetic size and the number ``t`` of
rows Kendall's tau is computed on come from DP outputs (see :func:`dpcopula`, Notes).
When ``domains=None`` the domains are read from the data, which is not private (a
:class:`DomainFromDataWarning` is emitted and the result's ``guarantee`` says so); in
analyst use the caller must declare them.

Departures from the text (each is argued in :func:`dpcopula`'s Notes)
----------------------------------------------------------------------
1. Kendall sensitivity ``4/t`` (``t`` = rows tau is computed on) instead of ``4/(n+1)``:
   Lemma 3.2.1 bounds adding a record to a set of ``n``; removing one from a set of ``n``
   needs ``4/n``. With the text's sample size ``n^ + 1 = ceil(50 m(m-1)/eps2)`` the two
   agree.
2. Thm 3.2.2 states ``epsilon = m eps1 + C(m,2) eps2``; its proof (followed here) gives
   ``eps1 + eps2 = epsilon`` with ``eps1/m`` per margin and ``eps2/C(m,2)`` per pair.
3. eq. 3.1.6 prints ``1{X >= x}``; the empirical CDF counts ``1{X <= x}`` (used by the MLE
   pseudo-copula data, with mid-ranks for ties).
4. DP MLE (Alg. 2) uses i.i.d. random block assignment (so one record changes one block)
   and the normal-scores correlation of each block (the closed-form Gaussian-copula
   estimator) instead of a numerical likelihood maximisation.
5. Alg. 6 leaves the partition-count budget open ("with eps1"); we give the partition
   counts the share ``eps1 * m1/m`` that the ``m1`` small attributes' margins would have had.

Defaults that differ from the text (measured, each switchable back; see :func:`dpcopula`)
------------------------------------------------------------------------------------------
6. Margins through DAWA (``publisher="dawa"``), not EFPA: EFPA keeps a few Fourier
   coefficients and needs all of them -- at ``sqrt(d)`` times Laplace's noise -- for a
   margin with a point mass (a zero income, a top code), so on the census-shaped tables
   DPCopula's range-query error with EFPA margins is many times that with DAWA margins, and
   no better than a dependence-free baseline; on smooth margins the two are close
   (``benchmarks/synth_margin_publishers.py``, ``benchmarks/synth_census.py`` and
   ``benchmarks/synth_synthetic.py`` measure it). ``publisher="efpa"`` is the text's
   configuration.
7. Noisy margins are projected onto the non-negative histograms with the same noisy total
   (Norm-Sub, ``margin_fit="project"``); the text does not say how it removes negatives.
8. Kendall's tau-b (tie-corrected with the DP margins, post-processing) instead of tau-a,
   and for pairs with a tied attribute (a DP margin with sum p^2 > 0.25) the latent
   correlation calibrated by simulation to reproduce that tau-b instead of
   ``sin(pi tau / 2)`` (``tie_correction=False`` is the text's estimator); tau on at least
   every row the DP record count allows when the copula models the whole table
   (``t = round(n~)``, sensitivity ``4/t``; ``sample_size="floor"`` is the previous
   ``max(text rule, 20,000)``, which stays the rule inside the hybrid's partitions, and
   ``sample_size="text"`` the text's rule, which samples fewer rows the larger epsilon is).
9. The hybrid partitions by the small attributes only while the number of partitions stays
   within ``max_partitions`` (default 8; smallest domains first), not by all of them: each
   partition gets its own noisy margins, and thousands of partitions make the synthetic table
   worse than the dependence-free baseline (``benchmarks/synth_hybrid.py``). The text's tables (2 and
   8 partitions) are unaffected.
10. The hybrid partitions only when the DP size per partition supports the margins it must
    pay for: ``epsilon * n~ / (P * m_c) >= hybrid_min_support`` (default 500), with ``n~``
    the sum of the released noisy partition counts and ``m_c`` the number of attributes the
    copula models in each partition -- post-processing of a released value and public
    parameters. Otherwise the small attributes join the copula, their margins taken from the
    released counts (nothing more is spent). At small epsilon the text's partitions cost
    more error than they save, at large epsilon the rule partitions as the text does
    (``benchmarks/synth_hybrid.py``); the threshold counts margins, not only records, because
    a table with more copula attributes needs more support per partition
    (``benchmarks/synth_hybrid_rule.py``). ``hybrid_min_support=0`` is the text's rule.

References
----------
Li 2017 Ch. 3 (§3.1-3.3; Alg. 1-6; Lemma 3.2.1; Thms 3.2.1, 3.2.2, 3.2.4; Table 3.2).
Li, Xiong, Jiang, "DPCopula: differentially private data synthesization via copula
functions", EDBT 2014. Rousseeuw, Molenberghs 1993 (eigenvalue repair).
McKenna, Miklau, Sheldon 2021 (MST); McKenna, Mullins, Sheldon, Miklau 2022 (AIM).
"""

from __future__ import annotations

import hashlib
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from .._progress import report
from ._results import eps_text
from ._results import readonly as _readonly
from ._validation import (
    check_epsilon,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_rng,
)
from .histograms import PUBLISHERS, publish
from .mechanisms import laplace_reals

__all__ = [
    "MAX_ROWS",
    "MAX_PARTITIONS",
    "MAX_CELLS",
    "MAX_QUERIES",
    "NEIGHBOURS",
    "METHODS",
    "MARGIN_FITS",
    "DEFAULT_PUBLISHER",
    "DomainFromDataWarning",
    "SynthResult",
    "RangeQueries",
    "RangeCountError",
    "DependenceComparison",
    "dpcopula",
    "independent_synth",
    "laplace_histogram_synth",
    "peer_synth",
    "repair_correlation",
    "kendall_sample_size",
    "KENDALL_MIN_ROWS",
    "SAMPLE_RULES",
    "HYBRID_MIN_SUPPORT",
    "CONCORDANCE_MAX_CELLS",
    "ConcordanceMemo",
    "HEAVY_TIE_SHARE",
    "TIE_NOISE_LIMIT",
    "resolve_domains",
    "random_range_queries",
    "range_count_error",
    "marginal_comparison",
    "dependence_comparison",
]

#: The most synthetic rows one call generates (``n_rows``).
MAX_ROWS = 10**7
#: The most partitions of the hybrid / MLE methods (``max_partitions``, ``mle_partitions``).
MAX_PARTITIONS = 4096
#: The largest full histogram of :func:`laplace_histogram_synth` (``max_cells``; 800 MB).
MAX_CELLS = 10**8
#: The most random range queries of :func:`random_range_queries`.
MAX_QUERIES = 10**7

#: The neighbour relation every release in this module assumes.
NEIGHBOURS = "add/remove one record (Li 2017 Def. 3.1.1); attribute domains public"

#: The dependence estimators of :func:`dpcopula`.
METHODS: Mapping[str, str] = MappingProxyType(
    {
        "kendall": "DPCopula-Kendall: noisy pairwise Kendall's tau, P = sin(pi tau / 2) "
        "(Li 2017 Alg. 4-5)",
        "mle": "DPCopula-MLE: noisy average of per-block Gaussian-copula estimates over l "
        "disjoint blocks (Li 2017 Alg. 1-2)",
    }
)

#: Largest domain (number of values) accepted for one attribute: its histogram must fit.
MAX_DOMAIN_SIZE = 2**22

#: The text's constant in the Kendall sampling rule n^ >= 50 m (m-1) / eps2 (Li 2017 §3.2.2).
_SAMPLE_CONSTANT = 50.0
#: The fewest rows DP Kendall's tau is computed on by default (when the table has them).
#: The text's rule ``50 m (m-1) / eps2`` alone shrinks the sample as epsilon grows (m = 3,
#: eps = 50: 54 rows), so more budget would give a worse dependence estimate; the floor is a
#: public constant, so ``t`` stays a function of public values and the DP record count.
KENDALL_MIN_ROWS = 20_000
#: Kendall sample-size rules by name (``sample_size=``; an integer is a rule by itself).
SAMPLE_RULES: Mapping[str, str] = MappingProxyType(
    {
        "all": "every row the DP record count allows, t = round(n~)",
        "floor": "max(50 m (m-1) / eps2, KENDALL_MIN_ROWS), at most n~",
        "text": "50 m (m-1) / eps2, at most n~ (Li 2017 §3.2.2)",
    }
)
#: The hybrid partitions by the small attributes only while ``epsilon * n~ / (P * m_c)``
#: (the DP size per partition times the budget, per margin each partition must pay for: m_c
#: attributes left to the copula) stays at least this (``hybrid_min_support``; 0 is the
#: text's rule, always partition). 500 per margin: for the 5 copula attributes of the
#: Brazil-census-shaped table it is the support per partition chosen there
#: (``benchmarks/synth_hybrid.py``).
HYBRID_MIN_SUPPORT = 500.0
#: The text's rule for the number of MLE blocks, l > C(m,2) / (0.025 eps2) (Li 2017 §3.2.1).
_MLE_CONSTANT = 0.025
#: Smallest average MLE block we allow when the text's l would make blocks smaller.
_MLE_MIN_BLOCK = 20


class DomainFromDataWarning(UserWarning):
    """The attribute domains were read from the data: the release is not differentially
    private as such (declare ``domains`` to make it so)."""


# ---------------------------------------------------------------------------------------------
# Result objects
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SynthResult:
    """A DP synthetic table and what it cost.

    Attributes
    ----------
    data : pandas.DataFrame
        The synthetic records: same columns, dtypes and domains as the input.
    epsilon : float
        Total budget charged (add/remove-one neighbours); equals ``math.fsum`` of
        ``epsilon_parts`` exactly.
    epsilon_parts : dict of str to float
        What each step spent: ``"margins"`` (eps1, all margins together), ``"dependence"``
        (eps2, all correlation coefficients together) and, for the hybrid,
        ``"partition_sizes"`` (the noisy sizes of the small-attribute partitions).
    method : str
        ``"dpcopula-kendall"``, ``"dpcopula-mle"``, ``"dpcopula-hybrid-kendall"``,
        ``"dpcopula-hybrid-mle"``, ``"independent"``, ``"laplace-histogram"``, ``"aim"``
        or ``"mst"``.
    correlation : numpy.ndarray or None
        The DP correlation matrix after repair (positive definite, unit diagonal), over
        ``correlation_columns``. ``None`` for the hybrid when it partitions (one matrix per
        partition, in ``details["partition_correlations"]``) and for methods without one.
    correlation_columns : tuple of str
        The attributes ``correlation`` is over (for the hybrid, those the copula models: the
        large-domain ones, or every attribute when it did not partition).
    margins : dict of str to numpy.ndarray
        The DP marginal distribution of each attribute (clipped, normalised), one entry per
        domain value; empty for methods that do not release margins.
    domains : dict of str to numpy.ndarray
        The (public) domain values of each attribute, in order.
    guarantee, neighbours : str
        The privacy statement.
    details : dict
        Noise scales, sample sizes, the noisy record count, partition sizes, ... -- all of it
        DP output or public parameters, never a raw statistic of the data.
    """

    data: pd.DataFrame
    epsilon: float
    epsilon_parts: Mapping[str, float]
    method: str
    correlation: np.ndarray | None
    correlation_columns: tuple[str, ...]
    margins: Mapping[str, np.ndarray]
    domains: Mapping[str, np.ndarray]
    guarantee: str
    neighbours: str = NEIGHBOURS
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.correlation is not None:
            object.__setattr__(self, "correlation", _readonly(self.correlation))
        object.__setattr__(self, "epsilon_parts", MappingProxyType(dict(self.epsilon_parts)))
        object.__setattr__(
            self, "margins", MappingProxyType({c: _readonly(p) for c, p in self.margins.items()})
        )
        object.__setattr__(
            self,
            "domains",
            MappingProxyType({c: _readonly(v, v.dtype) for c, v in self.domains.items()}),
        )
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def n_rows(self) -> int:
        """Number of synthetic records."""
        return int(len(self.data))


# ---------------------------------------------------------------------------------------------
# Domains and validation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Table:
    """A validated, integer-coded table: ``codes[:, j]`` indexes ``values[j]``."""

    columns: tuple[str, ...]
    dtypes: tuple[Any, ...]
    values: tuple[np.ndarray, ...]
    codes: np.ndarray
    from_data: bool

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(int(v.size) for v in self.values)

    @property
    def m(self) -> int:
        return len(self.columns)

    def domains(self) -> dict[str, np.ndarray]:
        return dict(zip(self.columns, self.values, strict=True))

    def frame(self, codes: np.ndarray) -> pd.DataFrame:
        """A DataFrame of the coded rows ``codes`` with the table's columns and dtypes."""
        dtype = self.dtypes[0] if self.dtypes else None
        if codes.size and isinstance(dtype, np.dtype) and all(d == dtype for d in self.dtypes):
            # One numpy dtype (the common case): decode into one column-major block, which
            # the DataFrame takes without the per-column copies and the consolidation.
            block = np.empty((codes.shape[0], self.m), dtype=dtype, order="F")
            for j, vals in enumerate(self.values):
                block[:, j] = vals[codes[:, j]]
            return pd.DataFrame(block, columns=list(self.columns), copy=False)
        data = {
            col: pd.Series(vals[codes[:, j]] if codes.size else vals[:0]).astype(dtype)
            for j, (col, vals, dtype) in enumerate(
                zip(self.columns, self.values, self.dtypes, strict=True)
            )
        }
        return pd.DataFrame(data, columns=list(self.columns))


def _is_allowed_dtype(dtype) -> bool:
    return pd.api.types.is_bool_dtype(dtype) or (
        pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
    )


def _domain_values(spec, name: str) -> np.ndarray:
    """The sorted domain values of a declared domain ``spec`` (validated)."""
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise ValueError(
                f"domains[{name!r}] as a tuple must be (min, max) (inclusive integer range), "
                f"got {spec!r}; give a list for explicit values"
            )
        lo, hi = spec
        if not all(isinstance(b, Integral | np.integer) and not isinstance(b, bool) for b in spec):
            raise ValueError(f"domains[{name!r}] = (min, max) needs integers, got {spec!r}")
        lo, hi = int(lo), int(hi)
        if hi - lo + 1 > MAX_DOMAIN_SIZE:
            raise ValueError(
                f"domains[{name!r}] has {hi - lo + 1} values, more than {MAX_DOMAIN_SIZE}; bin it"
            )
        values = np.arange(lo, hi + 1, dtype=np.int64)
    elif isinstance(spec, Integral | np.integer) and not isinstance(spec, bool):
        if spec > MAX_DOMAIN_SIZE:
            raise ValueError(f"domains[{name!r}] = {spec} is more than {MAX_DOMAIN_SIZE} values")
        values = np.arange(int(spec), dtype=np.int64)
    else:
        try:
            values = np.asarray(list(spec) if not isinstance(spec, np.ndarray) else spec)
        except TypeError:
            raise ValueError(
                f"domains[{name!r}] must be (min, max), a number of values A (0..A-1) or a "
                f"list of values, got {spec!r}"
            ) from None
        if values.ndim != 1 or not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
            raise ValueError(f"domains[{name!r}] must be a 1-D list of numbers, got {spec!r}")
        if values.size > MAX_DOMAIN_SIZE:
            raise ValueError(f"domains[{name!r}] has more than {MAX_DOMAIN_SIZE} values")
        if values.dtype != bool and not np.all(np.isfinite(values)):
            raise ValueError(f"domains[{name!r}] must be finite numbers")
        values = np.unique(values)
        if values.size != len(spec):
            raise ValueError(f"domains[{name!r}] must list distinct values, got {spec!r}")
    if values.size < 2:
        raise ValueError(
            f"domains[{name!r}] must have at least 2 values, got {values.size} (a constant "
            f"attribute carries no information; drop it)"
        )
    return values


def _check_frame(frame) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    if frame.shape[1] < 2:
        raise ValueError(f"frame must have at least 2 columns, got {frame.shape[1]}")
    if not frame.columns.is_unique:
        raise ValueError("frame must have distinct column names")
    bad = [str(c) for c in frame.columns if not _is_allowed_dtype(frame[c].dtype)]
    if bad:
        raise ValueError(
            f"frame columns must be numeric (integer codes or pre-binned numbers); not numeric: "
            f"{bad}. Code them first (e.g. frame[col].astype('category').cat.codes) and declare "
            f"the coding's domain"
        )


def _prepare(frame, domains) -> _Table:
    """Validate ``frame`` against ``domains`` and integer-code it (no randomness)."""
    _check_frame(frame)
    columns = tuple(frame.columns)
    if domains is not None:
        if not isinstance(domains, Mapping):
            raise ValueError(f"domains must be a mapping column -> domain or None, got {domains!r}")
        missing = [str(c) for c in columns if c not in domains]
        extra = [str(c) for c in domains if c not in frame.columns]
        if missing or extra:
            raise ValueError(
                f"domains must declare exactly the frame's columns; missing {missing}, "
                f"unknown {extra}"
            )
    codes = np.empty((len(frame), len(columns)), dtype=np.int64)
    values_all = []
    for j, col in enumerate(columns):
        series = frame[col]
        # A numpy integer or bool column holds no missing and no non-finite value.
        plain_int = isinstance(series.dtype, np.dtype) and series.dtype.kind in "biu"
        if not plain_int and series.isna().any():
            raise ValueError(f"frame[{col!r}] has missing values")
        raw = series.to_numpy()
        if raw.dtype == object:  # a nullable extension dtype without NA
            raw = raw.astype(float)
        if raw.dtype.kind not in "biu" and not np.all(np.isfinite(raw)):
            raise ValueError(f"frame[{col!r}] has non-finite values")
        if domains is None:
            if raw.size == 0:
                raise ValueError("an empty frame needs declared domains")
            if raw.dtype == bool:
                values = np.array([False, True])
            elif np.all(raw == np.round(raw)):
                values = np.arange(int(raw.min()), int(raw.max()) + 1, dtype=np.int64)
            else:
                values = np.unique(raw)
            if values.size > MAX_DOMAIN_SIZE:
                raise ValueError(f"frame[{col!r}] spans more than {MAX_DOMAIN_SIZE} values; bin it")
            if values.size < 2:
                raise ValueError(
                    f"frame[{col!r}] takes a single value: a domain must have at least 2 values "
                    f"(declare it with domains=)"
                )
        else:
            values = _domain_values(domains[col], str(col))
            _check_domain_fits_dtype(values, series.dtype, str(col))
        contiguous = values.dtype.kind in "iu" and int(values[-1] - values[0]) + 1 == values.size
        offset = contiguous and raw.dtype.kind in "iu" and raw.size > 0
        if offset:
            # Integers on an integer range (the common case): the range is the whole check
            # and the code is the offset, written in place.
            lo = int(values[0])
            ok = lo <= int(raw.min()) and int(raw.max()) <= int(values[-1])
            if ok:
                np.subtract(raw, lo, out=codes[:, j], dtype=np.int64, casting="unsafe")
        elif contiguous and raw.dtype != bool:
            lo = int(values[0])
            ok = (raw >= lo) & (raw <= int(values[-1]))
            if raw.dtype.kind == "f":
                ok &= raw == np.floor(raw)
            idx = np.where(ok, raw - lo, 0).astype(np.int64)
        else:
            idx = np.searchsorted(values, raw)
            inside = idx < values.size
            ok = inside.copy()
            ok[inside] = values[idx[inside]] == raw[inside]
        if not np.all(ok):
            # No example value in the message: it may be shown to someone who may not see data.
            raise ValueError(
                f"frame[{col!r}] has values outside its declared domain "
                f"({values[0]!r}..{values[-1]!r}, {values.size} values); clip or recode them first"
            )
        if not offset:
            codes[:, j] = idx
        values_all.append(values)
    return _Table(
        columns=columns,
        dtypes=tuple(frame[c].dtype for c in columns),
        values=tuple(values_all),
        codes=codes,
        from_data=domains is None,
    )


def _check_domain_fits_dtype(values: np.ndarray, dtype, name: str) -> None:
    """Synthetic values are cast back to the column's dtype: every domain value must survive."""
    try:
        cast = pd.Series(values).astype(dtype).to_numpy()
        same = np.array_equal(np.asarray(cast, dtype=float), values.astype(float))
    except (TypeError, ValueError, OverflowError):
        same = False
    if not same:
        raise ValueError(
            f"domains[{name!r}] has values that the column's dtype {dtype} cannot hold "
            f"(e.g. non-integers for an integer column); change the dtype or the domain"
        )


def resolve_domains(frame, domains=None) -> dict[str, np.ndarray]:
    """The domain values of every column of ``frame``, as :func:`dpcopula` reads them.

    Parameters
    ----------
    frame : pandas.DataFrame
        Numeric (integer-coded or pre-binned) columns.
    domains : mapping or None
        Column -> ``(min, max)`` (inclusive integer range), an int ``A`` (values
        ``0..A-1``) or a list of values. ``None``: read from the data (integers: ``min..max``;
        other numbers: the distinct values) -- **not private**.

    Returns
    -------
    dict of str to numpy.ndarray
        Sorted domain values per column.

    Raises
    ------
    ValueError
        As :func:`dpcopula` for the frame and the domains.
    """
    table = _prepare(frame, domains)
    return table.domains()


def _warn_from_data(table: _Table) -> None:
    if table.from_data:
        warnings.warn(
            "domains=None: the attribute domains were read from the data (min..max or the "
            "distinct values), which is not differentially private. Declare domains= (public "
            "knowledge) for a DP release.",
            DomainFromDataWarning,
            stacklevel=3,
        )


def _guarantee(epsilon: float, table: _Table, what: str = "") -> str:
    base = (
        f"{eps_text(epsilon)}-DP{what} for add/remove-one-record neighbours (Li 2017 Def. 3.1.1); "
        f"{eps_text(2 * epsilon)}-DP under replace-one"
    )
    if table.from_data:
        return (
            base + ". NOT DP as released: the attribute domains were read from the data "
            "(domains=None); declare them to get the guarantee"
        )
    return base + "; attribute domains declared public"


#: DPCopula's default margin publisher (the text's is ``"efpa"``; see the module docstring,
#: departure 6).
DEFAULT_PUBLISHER = "dawa"


def _check_publisher(publisher: str, options) -> dict:
    if not isinstance(publisher, str) or publisher not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {publisher!r}")
    if 1 not in PUBLISHERS[publisher].dims:
        raise ValueError(f"publisher must release 1-D histograms; {publisher!r} is 2-D only")
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"publisher_options must be a mapping or None, got {options!r}")
    return dict(options)


def _check_n_rows(n_rows) -> int | None:
    if n_rows is None:
        return None
    return check_positive_int(n_rows, "n_rows", minimum=0, maximum=MAX_ROWS)


def _exact_parts(epsilon: float, parts: dict[str, float]) -> dict[str, float]:
    """Adjust the largest part by ulps so that ``math.fsum(parts) == epsilon`` exactly."""
    last = max(parts, key=parts.__getitem__)
    parts[last] = epsilon - math.fsum(v for k, v in parts.items() if k != last)
    for _ in range(64):
        total = math.fsum(parts.values())
        if total == epsilon:
            break
        parts[last] = float(np.nextafter(parts[last], np.inf if total < epsilon else -np.inf))
    return parts


# ---------------------------------------------------------------------------------------------
# Margins and sampling (Li 2017 Alg. 1 step 1, Alg. 3)
# ---------------------------------------------------------------------------------------------


#: How a noisy histogram becomes a distribution (post-processing, no budget).
MARGIN_FITS: Mapping[str, str] = MappingProxyType(
    {
        "clip": "negative cells set to 0, then normalised",
        "project": "Euclidean projection onto non-negative histograms with the same (noisy) "
        "total, then normalised (Norm-Sub; Wang, Lopuhaa-Zwakenberg, Li, Skoric, Li 2020)",
    }
)


def _project_nonnegative(x: np.ndarray, total: float) -> np.ndarray:
    """The closest (L2) non-negative vector to ``x`` summing to ``total`` > 0:
    ``max(x - theta, 0)`` with theta from the sorted cumulative sums (Duchi et al. 2008)."""
    u = np.sort(x)[::-1]
    excess = np.cumsum(u) - total
    positions = np.arange(1, u.size + 1)
    r = int(np.flatnonzero(u - excess / positions > 0)[-1]) + 1
    return np.maximum(x - excess[r - 1] / r, 0.0)


def _distribution(est: np.ndarray, fit: str) -> np.ndarray:
    """A probability vector from a noisy histogram (post-processing); uniform if empty."""
    total = float(est.sum())
    if fit == "project" and total > 0:
        fitted = _project_nonnegative(est, total)
    else:
        fitted = np.clip(est, 0.0, None)
    mass = fitted.sum()
    return fitted / mass if mass > 0 else np.full(est.size, 1.0 / est.size)


def _dp_margins(
    codes: np.ndarray,
    sizes: Sequence[int],
    eps_each: float,
    publisher: str,
    options: dict,
    fit: str,
    rng: np.random.Generator,
    given: Mapping[int, np.ndarray] | None = None,
) -> tuple[list[np.ndarray], float]:
    """One DP histogram per column with ``eps_each``; returns the DP probability vectors and
    the noisy record count (mean of the unclipped noisy totals; post-processing). Columns in
    ``given`` take that DP distribution instead (already released: nothing is spent)."""
    probs, totals = [], []
    for j, size in enumerate(sizes):
        if given is not None and j in given:
            probs.append(given[j])
            continue
        counts = np.bincount(codes[:, j], minlength=size)
        release = publish(counts, eps_each, publisher, rng=rng, workload="prefix", **options)
        est = np.asarray(release.counts, dtype=float)
        totals.append(float(est.sum()))
        probs.append(_distribution(est, fit))
    return probs, float(np.mean(totals)) if totals else math.nan


def _check_fit(fit: str) -> str:
    if fit not in MARGIN_FITS:
        raise ValueError(f"margin_fit must be one of {sorted(MARGIN_FITS)}, got {fit!r}")
    return fit


def _cdf(prob: np.ndarray) -> np.ndarray:
    cdf = np.cumsum(prob)
    cdf[-1] = 1.0
    return cdf


#: Below this many values a plain binary search is as fast as the guide table.
_GUIDE_MIN_VALUES = 64


def _count_at_most(thresholds: np.ndarray, keys: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``np.searchsorted(thresholds, keys, side="right")`` (``thresholds`` sorted) through a
    guide table (Chen & Asau 1974): the count at the lower edge of the key's bucket of
    ``[lo, hi)`` is a start within a step or two of the answer, which a few vectorised
    steps (up while ``thresholds[i] <= key``, down while ``thresholds[i - 1] > key``) reach;
    the keys still off after them are searched. Exact for any keys; about twice as fast as
    the binary search on a large domain."""
    buckets = int(min(2**16, max(64, 8 * thresholds.size)))
    width = (hi - lo) / buckets
    guide = np.searchsorted(thresholds, lo + width * np.arange(buckets), side="right")
    scaled = (keys - lo) * (1.0 / width)
    np.clip(scaled, 0, buckets - 1, out=scaled)  # keys outside [lo, hi) start at an end
    idx = guide[scaled.astype(np.intp)]
    last = thresholds.size
    padded = np.concatenate(([-np.inf], thresholds, [np.inf]))  # padded[i] = thresholds[i - 1]

    def low(i, k):  # the count is too small: thresholds[i] <= key
        return (i < last) & (padded[i + 1] <= k)

    def high(i, k):  # too large: thresholds[i - 1] > key
        return padded[i] > k

    off = np.flatnonzero(low(idx, keys) | high(idx, keys))
    for _ in range(3):
        if off.size == 0:
            return idx
        k, i = keys[off], idx[off]
        i += low(i, k)
        i -= high(i, k)
        idx[off] = i
        off = off[low(i, k) | high(i, k)]
    if off.size:
        idx[off] = np.searchsorted(thresholds, keys[off], side="right")
    return idx


def _search(thresholds: np.ndarray, keys: np.ndarray, lo: float, hi: float) -> np.ndarray:
    if thresholds.size >= _GUIDE_MIN_VALUES and keys.size >= 4 * thresholds.size:
        return _count_at_most(thresholds, keys, lo, hi)
    return np.searchsorted(thresholds, keys, side="right")


def _inverse_cdf(prob: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Codes ``F^{-1}(u)`` of a discrete distribution: P(code = i) = prob[i] (Li 2017 Alg. 3)."""
    return np.minimum(_search(_cdf(prob), u, 0.0, 1.0), prob.size - 1)


def _inverse_cdf_of_normal(prob: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``F^{-1}(Phi(z))`` for standard normal ``z``: the number of CDF values ``<= Phi(z)``,
    i.e. of their normal quantiles ``Phi^{-1}(F(i)) <= z`` (Phi is increasing). The quantiles
    of the ``|A|`` CDF values replace ``Phi`` of every draw."""
    quantiles = special.ndtri(np.minimum(_cdf(prob), 1.0))  # F = 1: +inf, F = 0: -inf
    return np.minimum(_search(quantiles, z, -8.0, 8.0), prob.size - 1)


def _sample_copula(
    probs: Sequence[np.ndarray], corr: np.ndarray | None, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` coded rows: Z ~ N(0, P), U = Phi(Z), X_j = F~_j^{-1}(U_j) (Li 2017 Alg. 3).

    The draws are those of Alg. 3 (``standard_normal((n, m))`` times the Cholesky factor; with
    no dependence ``random((n, m))``), worked on one attribute at a time: ``Z_j = sum_{i<=j}
    L_ji N_i`` as row operations (a product with a tall, thin matrix spends more CPU in the
    BLAS threads than in the arithmetic) and ``F_j^{-1}(Phi(Z_j))`` through the normal
    quantiles of ``F_j`` (:func:`_inverse_cdf_of_normal`). Returns an (n, m) array whose
    columns are contiguous.
    """
    m = len(probs)
    out = np.empty((m, n), dtype=np.int64)
    if corr is None:
        u = np.ascontiguousarray(rng.random((n, m)).T)
        for j, p in enumerate(probs):
            out[j] = _inverse_cdf(p, u[j])
        return out.T
    chol = _cholesky(corr)
    normal = np.ascontiguousarray(rng.standard_normal((n, m)).T)
    z = np.empty(n)
    term = np.empty(n)
    for j, p in enumerate(probs):
        np.multiply(normal[0], chol[j, 0], out=z)
        for i in range(1, j + 1):
            z += np.multiply(normal[i], chol[j, i], out=term)
        out[j] = _inverse_cdf_of_normal(p, z)
    return out.T


def _cholesky(corr: np.ndarray) -> np.ndarray:
    jitter = 0.0
    for _ in range(20):
        try:
            return np.linalg.cholesky(corr + jitter * np.eye(corr.shape[0]))
        except np.linalg.LinAlgError:  # pragma: no cover - repaired matrices are PD
            jitter = max(2 * jitter, 1e-10)
    raise np.linalg.LinAlgError("correlation matrix is not positive definite")  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# Dependence: Kendall's tau (Alg. 5), MLE (Alg. 2), repair
# ---------------------------------------------------------------------------------------------


def kendall_sample_size(m: int, epsilon2: float) -> int:
    """The number of rows DP Kendall's tau is computed on: ``ceil(50 m (m-1) / epsilon2)``.

    Li 2017 §3.2.2: "setting n^ >= 50 m (m-1) / eps2 - 1 is adequate", with noise
    ``Lap(4/(n^+1))``; we compute tau on ``t = n^ + 1`` rows with sensitivity ``4/t``.
    """
    m = check_positive_int(m, "m", minimum=2)
    epsilon2 = check_epsilon(epsilon2, "epsilon2")
    return int(math.ceil(_SAMPLE_CONSTANT * m * (m - 1) / epsilon2))


def _pair_indices(m: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(m, k=1)


def _ties(column: np.ndarray) -> float:
    counts = np.bincount(column)
    return float(np.sum(counts * (counts - 1.0) / 2.0))


def _concordance_sums(codes: np.ndarray) -> np.ndarray:
    """``S_jk = sum_{i<i'} sign(x_ij - x_i'j) sign(x_ik - x_i'k)`` for every pair j < k.

    O(n log n) per pair through :func:`scipy.stats.kendalltau` (tau-b), converted back to the
    raw concordance sum with the tie counts: ``S = tau_b sqrt((n0 - n1)(n0 - n2))``.
    """
    n, m = codes.shape
    rows, cols = _pair_indices(m)
    out = np.zeros(rows.size)
    if n < 2:
        return out
    n0 = n * (n - 1) / 2.0
    ties = [_ties(codes[:, j]) for j in range(m)]
    for p, (j, k) in enumerate(zip(rows.tolist(), cols.tolist(), strict=True)):
        denom = (n0 - ties[j]) * (n0 - ties[k])
        if denom <= 0:  # a constant column: every pair is tied, S = 0
            continue
        tau_b = stats.kendalltau(codes[:, j], codes[:, k]).statistic
        if np.isfinite(tau_b):
            out[p] = float(np.rint(tau_b * math.sqrt(denom)))
    return out


#: Largest 2-D table (cells) of a column pair whose per-row concordance counts a
#: :class:`ConcordanceMemo` computes; a pair with larger domains is counted afresh each time.
CONCORDANCE_MAX_CELLS = 2**22


def _row_concordance(x: np.ndarray, y: np.ndarray, size_x: int, size_y: int) -> np.ndarray:
    """``C_i = sum_{i'} sign(x_i - x_i') sign(y_i - y_i')`` for every row ``i`` of a coded pair.

    From the 2-D cumulative counts of the pair, ``below[a, b] = #{x < a, y < b}``, the four
    quadrants of every row are lookups: concordant ``#{<, <} + #{>, >}`` minus discordant
    ``#{<, >} + #{>, <}`` (ties count 0). O(n + size_x size_y); ``sum_i C_i = 2 S``.
    """
    n = x.size
    dtype = np.int32 if n < 2**31 else np.int64
    cells = np.bincount(x * size_y + y, minlength=size_x * size_y).reshape(size_x, size_y)
    below = np.zeros((size_x + 1, size_y + 1), dtype=dtype)
    np.cumsum(np.cumsum(cells, axis=0, dtype=dtype), axis=1, dtype=dtype, out=below[1:, 1:])
    x1, y1 = x + 1, y + 1
    before_x, upto_x = below[x, size_y], below[x1, size_y]
    before_y, upto_y = below[size_x, y], below[size_x, y1]
    upto_both = below[x1, y1]
    after_both = n - upto_x - upto_y + upto_both
    before_x_after_y = before_x - below[x, y1]
    after_x_before_y = before_y - below[x1, y]
    return (below[x, y] + after_both - before_x_after_y - after_x_before_y).astype(dtype)


class ConcordanceMemo:
    """Per-row concordance counts of public tables, kept between releases.

    Kendall's tau of DPCopula needs ``S_jk`` of a uniform ``t``-subset of the rows (Li 2017
    Alg. 5 step 1): ``O(t log t)`` per pair, every release. With the per-row counts ``C`` of
    the whole table (:func:`_row_concordance`, once per column pair) the sum of any subset is
    exact and cheap: ``S(sample) = S(all) - sum_{i out} C_i + S(rows out)``, the pairs with
    one row out removed once and those with both out added back. The draw of the subset is
    unchanged, so a release with a memo equals one without, bit for bit, for the same
    generator.

    The counts are statistics of the table: give a memo only for public data (a teaching
    table, a public stand-in), never for confidential data. Entries are keyed by a digest of
    each column's codes, so attribute subsets of one table share their pairs; the least
    recently used go first beyond ``max_bytes``.
    """

    def __init__(self, max_bytes: int = 2**26) -> None:
        self.max_bytes = int(max_bytes)
        self._pairs: OrderedDict[tuple, tuple[np.ndarray, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pairs)

    def clear(self) -> None:
        """Forget every table."""
        with self._lock:
            self._pairs.clear()
            self._bytes = 0

    @staticmethod
    def _digest(column: np.ndarray, size: int) -> bytes:
        compact = column.astype(np.min_scalar_type(max(size - 1, 0)), copy=False)
        return hashlib.blake2b(np.ascontiguousarray(compact).tobytes(),
                               digest_size=16, key=str(size).encode()).digest()

    def per_row(self, codes: np.ndarray, sizes: Sequence[int]) -> list | None:
        """``[(C, S), ...]`` per pair ``j < k`` of ``codes`` (n, m): the per-row counts and
        their total ``S(all)``; ``None`` if a pair's 2-D table exceeds
        :data:`CONCORDANCE_MAX_CELLS`."""
        m = codes.shape[1]
        rows, cols = _pair_indices(m)
        if any(sizes[j] * sizes[k] > CONCORDANCE_MAX_CELLS
               for j, k in zip(rows.tolist(), cols.tolist(), strict=True)):
            return None
        digests = [self._digest(codes[:, j], int(sizes[j])) for j in range(m)]
        out = []
        for j, k in zip(rows.tolist(), cols.tolist(), strict=True):
            key = (digests[j], digests[k], codes.shape[0])
            with self._lock:
                hit = self._pairs.get(key)
                if hit is not None:
                    self._pairs.move_to_end(key)
            if hit is None:
                per_row = _row_concordance(codes[:, j], codes[:, k], int(sizes[j]),
                                           int(sizes[k]))
                per_row.setflags(write=False)
                hit = (per_row, int(per_row.sum(dtype=np.int64)) // 2)
                with self._lock:
                    self._pairs[key] = hit
                    self._bytes += per_row.nbytes
                    while self._bytes > self.max_bytes and len(self._pairs) > 1:
                        _, (old, _) = self._pairs.popitem(last=False)
                        self._bytes -= old.nbytes
            out.append(hit)
        return out


def _sample_concordance(
    codes: np.ndarray, rows: np.ndarray | None, sizes: Sequence[int] | None,
    memo: ConcordanceMemo | None,
) -> np.ndarray:
    """``S_jk`` of the sample ``codes[rows]`` (``rows`` sorted; ``None``: every row), through
    ``memo`` where it holds the table and the rows left out are fewer than those kept."""
    if memo is None or sizes is None:
        return _concordance_sums(codes if rows is None else codes[rows])
    n = codes.shape[0]
    left_out = None
    if rows is not None:
        outside = np.ones(n, dtype=bool)
        outside[rows] = False
        left_out = np.flatnonzero(outside)
        if left_out.size > rows.size:  # a small sample: counting it directly is cheaper
            return _concordance_sums(codes[rows])
    counts = memo.per_row(codes, sizes)
    if counts is None:
        return _concordance_sums(codes if rows is None else codes[rows])
    total = np.array([s for _, s in counts], dtype=np.int64)
    if left_out is None or left_out.size == 0:
        return total.astype(float)
    out_rows = np.stack([c[left_out] for c, _ in counts], axis=1).sum(axis=0, dtype=np.int64)
    within = np.rint(_concordance_sums(codes[left_out])).astype(np.int64)
    return (total - out_rows + within).astype(float)


def _dp_kendall(
    codes: np.ndarray, t: int, eps2: float, rng: np.random.Generator,
    sizes: Sequence[int] | None = None, memo: ConcordanceMemo | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Noisy Kendall's tau matrix on ``t`` rows (Li 2017 Alg. 5 step 1).

    The statistic of a pair is ``S_jk(sample) / C(t, 2)`` where the sample is a uniform
    ``t``-subset of the rows when there are more than ``t``, else all rows; it changes by at
    most ``4/t`` between neighbours (see :func:`dpcopula`, Notes), and each of the C(m,2)
    pairs gets ``Lap(C(m,2) (4/t) / eps2)``. ``memo`` (public tables only, with the domain
    ``sizes``): the same sums from kept per-row counts (:class:`ConcordanceMemo`).
    """
    n, m = codes.shape
    pairs = m * (m - 1) // 2
    tau = np.eye(m)
    if t < 2:
        return tau, {"sample_size": int(t), "kendall_noise_scale": None}
    sample = None if n <= t else np.sort(rng.choice(n, size=t, replace=False))
    sums = _sample_concordance(codes, sample, sizes, memo)
    scale = pairs * (4.0 / t) / eps2
    # Every pair moves by at most 4/t: L1 pairs * 4/t over all pairs (floating-point safe
    # inside floating_point_safe(), Mironov 2012).
    noisy = laplace_reals(sums / (t * (t - 1) / 2.0), pairs * (4.0 / t), eps2, rng=rng,
                          scale=scale, max_changed=pairs)
    rows, cols = _pair_indices(m)
    tau[rows, cols] = tau[cols, rows] = noisy
    return tau, {"sample_size": int(t), "kendall_noise_scale": float(scale)}


def _midranks_by_block(
    code: np.ndarray, size: int, block: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Mid-rank of every value inside its block (ties share the average rank)."""
    if code.size == 0 or size > 2**16 or block.size and int(block.max()) >= 2**16:
        key = block * np.int64(size) + code
        uniq, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        before = np.cumsum(counts) - counts - starts[uniq // size]
        return (before + (counts + 1) / 2.0)[inverse]
    # The order by (block, code) from a stable sort of two 16-bit keys (numpy radix-sorts
    # those), then runs of equal (block, code): the same ranks as a sort of the joint key.
    order = np.lexsort((code.astype(np.uint16), block.astype(np.uint16)))
    sorted_code, sorted_block = code[order], block[order]
    first = np.empty(order.size, dtype=bool)
    first[0] = True
    np.not_equal(sorted_code[1:], sorted_code[:-1], out=first[1:])
    first[1:] |= sorted_block[1:] != sorted_block[:-1]
    run_start = np.flatnonzero(first)
    lengths = np.diff(np.append(run_start, order.size))
    before = run_start - starts[sorted_block[run_start]]
    ranks = np.empty(order.size)
    ranks[order] = np.repeat(before + (lengths + 1) / 2.0, lengths)
    return ranks


def _dp_mle(
    codes: np.ndarray, sizes: Sequence[int], blocks: int, eps2: float, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    """Noisy average of per-block Gaussian-copula correlation estimates (Li 2017 Alg. 2).

    Every record is assigned to one of ``blocks`` blocks uniformly at random (independently),
    so adding or removing a record changes one block. In each block the pseudo-copula data
    ``U = midrank / (b + 1)`` (eq. 3.1.6-3.1.7) are turned into normal scores
    ``Phi^{-1}(U)`` and their Pearson correlation is the block's estimate (the closed-form
    Gaussian-copula estimator; blocks with fewer than 3 records or a constant attribute
    give 0). Each coefficient lies in [-1, 1] (diameter 2), so the average over ``l`` blocks
    moves by at most ``2/l``; each gets ``Lap(C(m,2) 2 / (l eps2))``.
    """
    n, m = codes.shape
    pairs = m * (m - 1) // 2
    block = rng.integers(0, blocks, size=n)
    bsize = np.bincount(block, minlength=blocks).astype(float)
    starts = np.concatenate(([0.0], np.cumsum(bsize)[:-1]))
    z = np.empty((m, n))  # one contiguous row of normal scores per attribute
    columns = np.ascontiguousarray(codes.T)
    below = bsize[block] + 1.0
    # Phi^{-1}(r / (b + 1)) takes few values: a mid-rank r is a multiple of 1/2 up to the block
    # size b. With small blocks (the usual l) each value is computed once, then looked up.
    big = int(bsize.max()) if n else 0
    scores = None
    if (2 * big + 1) * (big + 1) <= n:
        half = np.arange(2 * big + 1)[:, None] / 2.0
        with np.errstate(all="ignore"):
            scores = special.ndtri(half / (np.arange(big + 1)[None, :] + 1.0))
        size_of = bsize[block].astype(np.intp)
    for j in range(m):
        ranks = _midranks_by_block(columns[j], sizes[j], block, starts)
        if scores is None:
            z[j] = special.ndtri(ranks / below)
        else:
            z[j] = scores[(2.0 * ranks).astype(np.intp), size_of]
    count = np.maximum(bsize, 1.0)

    def block_sum(weights: np.ndarray) -> np.ndarray:
        return np.bincount(block, weights=weights, minlength=blocks)

    sums = [block_sum(z[j]) for j in range(m)]
    var = [block_sum(z[j] ** 2) - sums[j] ** 2 / count for j in range(m)]
    rows, cols = _pair_indices(m)
    avg = np.zeros(pairs)
    for p, (j, k) in enumerate(zip(rows.tolist(), cols.tolist(), strict=True)):
        cov = block_sum(z[j] * z[k]) - sums[j] * sums[k] / count
        denom = np.sqrt(np.maximum(var[j], 0.0) * np.maximum(var[k], 0.0))
        ok = (bsize >= 3) & (denom > 1e-12)
        est = np.zeros(blocks)
        est[ok] = np.clip(cov[ok] / denom[ok], -1.0, 1.0)
        avg[p] = est.sum() / blocks
    scale = pairs * 2.0 / (blocks * eps2)
    # Every average moves by at most 2/l: L1 pairs * 2/l over all pairs.
    noisy = laplace_reals(avg, pairs * 2.0 / blocks, eps2, rng=rng, scale=scale,
                          max_changed=pairs)
    corr = np.eye(m)
    corr[rows, cols] = corr[cols, rows] = np.clip(noisy, -1.0, 1.0)
    return corr, {"mle_blocks": int(blocks), "mle_noise_scale": float(scale)}


def repair_correlation(matrix, *, floor: float = 1e-6) -> tuple[np.ndarray, bool]:
    """Make a symmetric unit-diagonal matrix a positive-definite correlation matrix.

    Li 2017 Alg. 5 step 3 (the eigenvalue method of Rousseeuw and Molenberghs 1993): if the
    smallest eigenvalue is below ``floor``, decompose ``P = R D R^T``, replace eigenvalues
    below ``floor`` by ``floor``, rebuild ``R D~ R^T`` and rescale it to unit diagonal
    (``D^{-1/2} A D^{-1/2}`` stays positive definite). Post-processing: costs no budget.

    Parameters
    ----------
    matrix : array_like, (m, m)
        Symmetric (it is symmetrised), finite.
    floor : float
        Smallest eigenvalue kept (> 0).

    Returns
    -------
    (numpy.ndarray, bool)
        The correlation matrix and whether it had to be repaired.
    """
    a = np.asarray(matrix, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.all(np.isfinite(a)):
        raise ValueError(f"matrix must be a finite square matrix, got shape {a.shape}")
    floor = check_positive(floor, "floor")
    a = (a + a.T) / 2.0
    np.fill_diagonal(a, 1.0)
    w, v = np.linalg.eigh(a)
    if w.min() > floor:
        return a, False
    rebuilt = (v * np.maximum(w, floor)) @ v.T
    d = np.sqrt(np.diag(rebuilt))
    out = rebuilt / np.outer(d, d)
    out = (out + out.T) / 2.0
    np.fill_diagonal(out, 1.0)
    return out, True


def _correlation_from_tau(tau: np.ndarray) -> np.ndarray:
    """P = sin(pi tau / 2) with tau clipped to [-1, 1] first (Li 2017 Alg. 5 step 2)."""
    out = np.sin(np.pi / 2.0 * np.clip(tau, -1.0, 1.0))
    np.fill_diagonal(out, 1.0)
    return out


# ---------------------------------------------------------------------------------------------
# DPCopula
# ---------------------------------------------------------------------------------------------


#: Largest standard deviation of the DP noise on a tie-corrected tau: dividing tau-a by
#: ``sqrt(u_j u_k)`` divides its noise too, so pairs whose corrected noise would exceed this
#: keep the text's tau-a (its bias is then the smaller error).
TIE_NOISE_LIMIT = 0.1


def _repeat_chance(probs: Sequence[np.ndarray]) -> np.ndarray:
    """``sum_v p_j(v)**2`` per attribute: the chance that two random records share its
    value (the tie share of its DP margin)."""
    return np.array([float(np.sum(np.square(p))) for p in probs])


def _tie_correction_mask(
    tau_a: np.ndarray, probs: Sequence[np.ndarray], noise_sd: float
) -> np.ndarray:
    """Pairs worth tie-correcting: the estimated bias of tau-a, ``|tau_a| (1 - sqrt(u_j
    u_k))``, exceeds the noise's s.d., and the corrected noise ``noise_sd / sqrt(u_j u_k)``
    stays within TIE_NOISE_LIMIT (functions of DP outputs and public values only)."""
    u = np.maximum(1.0 - _repeat_chance(probs), 0.0)
    denom = np.sqrt(np.outer(u, u))
    bias = np.abs(tau_a) * (1.0 - denom)
    return (denom > 0) & (noise_sd <= TIE_NOISE_LIMIT * denom) & (bias > noise_sd)


def _tie_corrected_tau(
    tau: np.ndarray, probs: Sequence[np.ndarray], mask: np.ndarray | None = None
) -> np.ndarray:
    """Kendall's tau-b from tau-a and the DP margins: ``tau_a / sqrt(u_j u_k)`` with ``u_j =
    1 - sum_v p_j(v)**2`` the chance that two random records differ on attribute j.

    Post-processing of DP outputs (the noisy tau-a and the DP margins ``probs``). Tied pairs
    count 0 in tau-a, so on discrete attributes it understates the dependence (two balanced
    binary attributes with latent correlation 0.6: tau-a 0.20, sin(pi tau-a / 2) = 0.32);
    tau-b divides the ties out (sin(pi tau-b / 2) = 0.60). Clipped to [-1, 1]; a pair with a
    one-valued DP margin gets 0.
    """
    u = np.maximum(1.0 - _repeat_chance(probs), 0.0)
    denom = np.sqrt(np.outer(u, u))
    out = np.divide(tau, denom, out=np.zeros_like(tau), where=denom > 0)
    if mask is not None:  # pairs left out keep tau-a
        out = np.where(mask, out, tau)
    out = np.clip(out, -1.0, 1.0)
    np.fill_diagonal(out, 1.0)
    return out


#: An attribute whose DP margin gives two random records the same value with probability
#: above this is "tied": its pairs' correlation is calibrated by simulation.
HEAVY_TIE_SHARE = 0.25
_CALIBRATION_ROWS = 30_000
_CALIBRATION_STEPS = 10
_CALIBRATION_SEED = 20140325  # public and fixed: the calibration is post-processing


def _tau_b_from_table(table: np.ndarray) -> float:
    """Kendall's tau-b of the rows behind a contingency table (counts), in O(cells):
    concordant minus discordant pairs over the tie-corrected number of pairs."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    # above[a, b] = sum of table[a', b'] over a' > a, b' > b; below: a' > a, b' < b.
    rows_after = np.cumsum(table[::-1], axis=0)[::-1]
    rows_after = np.vstack([rows_after[1:], np.zeros((1, table.shape[1]))])
    above = np.cumsum(rows_after[:, ::-1], axis=1)[:, ::-1]
    above = np.hstack([above[:, 1:], np.zeros((table.shape[0], 1))])
    below = np.cumsum(rows_after, axis=1)
    below = np.hstack([np.zeros((table.shape[0], 1)), below[:, :-1]])
    score = float(np.sum(table * (above - below)))
    pairs = n * (n - 1) / 2.0
    r, c = table.sum(axis=1), table.sum(axis=0)
    denom = (pairs - np.sum(r * (r - 1)) / 2.0) * (pairs - np.sum(c * (c - 1)) / 2.0)
    return score / math.sqrt(denom) if denom > 0 else 0.0


def _calibrate_tied_pairs(
    tau_b: np.ndarray, probs: Sequence[np.ndarray], corr: np.ndarray,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Replace ``sin(pi tau_b / 2)`` by the latent correlation that reproduces ``tau_b`` for
    every pair with a tied attribute (post-processing of DP outputs).

    For a Gaussian copula with discrete margins ``sin(pi tau_b / 2)`` is off when a margin
    has large atoms (a binary 90/10 attribute with latent correlation 0.6 gives 0.41). For
    such pairs we find by bisection the rho whose simulated data -- ``_CALIBRATION_ROWS``
    bivariate normal draws with correlation rho, pushed through the two DP margins exactly
    as :func:`_sample_copula` does -- have Kendall's tau-b equal to the DP ``tau_b``
    (clipped to what the margins can reach). The draws come from a fixed public seed, so
    they are common to every candidate rho (tau-b is then monotone in rho) and spend no
    privacy; tau-b is computed from the contingency table of the simulated codes. Returns
    the new matrix and the number of pairs calibrated.
    """
    m = len(probs)
    share = _repeat_chance(probs)
    tied = (share > HEAVY_TIE_SHARE) & (share < 1.0)
    if not tied.any():
        return corr, 0
    corr = corr.copy()
    z = np.random.default_rng(_CALIBRATION_SEED).standard_normal((_CALIBRATION_ROWS, 2))
    u0 = special.ndtr(z[:, 0])
    done = 0
    for j, k in zip(*_pair_indices(m), strict=True):
        if not (tied[j] or tied[k]) or max(share[j], share[k]) >= 1.0:
            continue
        if mask is not None and not mask[j, k]:
            continue
        size_j, size_k = probs[j].size, probs[k].size
        x = _inverse_cdf(probs[j], u0) * size_k

        def tau_at(rho: float, x=x, k=k, size_j=size_j, size_k=size_k) -> float:
            w = special.ndtr(rho * z[:, 0] + math.sqrt(1.0 - rho * rho) * z[:, 1])
            cells = np.bincount(x + _inverse_cdf(probs[k], w), minlength=size_j * size_k)
            return _tau_b_from_table(cells.reshape(size_j, size_k))

        lo, hi = -0.999, 0.999
        target = float(tau_b[j, k])
        if target <= tau_at(lo):
            rho = lo
        elif target >= tau_at(hi):
            rho = hi
        else:
            for _ in range(_CALIBRATION_STEPS):
                mid = 0.5 * (lo + hi)
                if tau_at(mid) < target:
                    lo = mid
                else:
                    hi = mid
            rho = 0.5 * (lo + hi)
        corr[j, k] = corr[k, j] = rho
        done += 1
    return corr, done


def _mle_blocks(m: int, eps2: float, n_est: float, requested: int | None) -> int:
    if requested is not None:
        return requested
    text_l = math.ceil((m * (m - 1) / 2) / (_MLE_CONSTANT * eps2))
    return int(max(1, min(text_l, math.floor(max(n_est, 0.0) / _MLE_MIN_BLOCK))))


def _copula_release(
    codes: np.ndarray,
    sizes: Sequence[int],
    eps_margin_each: float,
    eps_dep: float,
    method: str,
    publisher: str,
    options: dict,
    fit: str,
    n_est: float | None,
    n_out: int | None,
    sample_size: int | str | None,
    mle_partitions: int | None,
    rng: np.random.Generator,
    tie_correction: bool = True,
    given: Mapping[int, np.ndarray] | None = None,
    all_rows: bool = False,
    concordance: ConcordanceMemo | None = None,
) -> tuple[np.ndarray, np.ndarray | None, list[np.ndarray], dict[str, Any]]:
    """DPCopula on coded rows: margins, dependence, sampling. Returns (synthetic codes,
    correlation, margins, details). ``given``: DP margins already released (column -> probs);
    ``all_rows``: the default Kendall rule is every row the DP count allows (the copula runs
    on the whole table), else the floor rule (it runs in a partition); ``concordance``: a
    memo of the (public) table's concordance counts."""
    m = codes.shape[1]
    probs, n_margins = _dp_margins(
        codes, sizes, eps_margin_each, publisher, options, fit, rng, given
    )
    n_hat = n_margins if n_est is None else n_est
    rows = max(int(round(n_hat)), 0) if n_out is None else n_out
    details: dict[str, Any] = {"noisy_n": float(n_hat)}
    corr = None
    if m >= 2 and eps_dep > 0:
        if method == "kendall":
            if sample_size == "all" or (sample_size is None and all_rows):
                # Every row the DP count allows (t = n~; sensitivity 4/t, see dpcopula Notes).
                rule = max(int(round(n_hat)), 2)
            elif sample_size in (None, "floor"):
                rule = max(kendall_sample_size(m, eps_dep), KENDALL_MIN_ROWS)
            elif sample_size == "text":
                rule = kendall_sample_size(m, eps_dep)
            else:
                rule = sample_size
            t = int(min(rule, max(round(n_hat), 0)))
            tau, info = _dp_kendall(codes, t, eps_dep, rng, sizes, concordance)
            details.update(info, sample_rule=int(rule), noisy_tau=_readonly(tau))
            raw = _correlation_from_tau(tau)
            if tie_correction and info["kendall_noise_scale"] is not None:
                noise_sd = math.sqrt(2.0) * info["kendall_noise_scale"]
                mask = _tie_correction_mask(tau, probs, noise_sd)
                tau = _tie_corrected_tau(tau, probs, mask)
                raw, calibrated = _calibrate_tied_pairs(
                    tau, probs, _correlation_from_tau(tau), mask
                )
                pairs = np.triu_indices(m, 1)
                details.update(
                    tie_corrected_tau=_readonly(tau),
                    tie_corrected_pairs=int(mask[pairs].sum()),
                    tie_calibrated_pairs=calibrated,
                )
        else:
            blocks = _mle_blocks(m, eps_dep, n_hat, mle_partitions)
            raw, info = _dp_mle(codes, sizes, blocks, eps_dep, rng)
            details.update(info)
        corr, repaired = repair_correlation(raw)
        details.update(
            raw_correlation=_readonly(raw),
            repaired=bool(repaired),
            min_eigenvalue_before_repair=float(np.linalg.eigvalsh(raw).min()),
        )
    synthetic = _sample_copula(probs, corr, rows, rng)
    return synthetic, corr, probs, details


def _hybrid_attributes(
    sizes: Sequence[int], threshold: int | None, max_partitions: int
) -> tuple[list[int], int]:
    """The attributes the hybrid partitions by, and the number of partitions.

    Attributes with fewer than ``threshold`` values join, smallest domain first (ties: column
    order), while the product of their domain sizes stays <= ``max_partitions``; the rest are
    modelled by the copula. A function of public domain sizes only.
    """
    if threshold is None:
        return [], 1
    candidates = sorted((j for j, size in enumerate(sizes) if size < threshold),
                        key=lambda j: (sizes[j], j))
    chosen, n_parts = [], 1
    for j in candidates:
        if n_parts * sizes[j] > max_partitions:
            break
        chosen.append(j)
        n_parts *= sizes[j]
    return sorted(chosen), n_parts


def _check_min_support(value) -> float:
    if value is None:
        return HYBRID_MIN_SUPPORT
    return check_nonnegative(value, "hybrid_min_support")


def _supported_partition(
    small: Sequence[int], sizes: Sequence[int], epsilon: float, n_hat: float, min_support: float
) -> list[int]:
    """The small attributes the hybrid partitions by: all of ``small`` if ``epsilon * n_hat /
    (P * m_c) >= min_support`` for the ``P`` partitions they make, ``m_c`` the attributes
    left to the copula in each partition (at least 1), else none.

    Each partition pays for its own noisy margins of the ``m_c`` copula attributes on its
    share of the records, so the support needed grows with them. ``n_hat`` is the sum of the
    released noisy partition counts and ``epsilon``, ``min_support`` and the domain sizes are
    public: a function of DP outputs only (post-processing), so the choice costs no budget.
    All or nothing: on the Brazil-shaped table partitioning by some of the binary attributes
    (2 or 4 partitions) was worse than none wherever partitioning by all of them was.
    """
    n_parts = math.prod(sizes[j] for j in small)
    margins = max(len(sizes) - len(small), 1)
    return sorted(small) if epsilon * n_hat / (n_parts * margins) >= min_support else []


def dpcopula(
    frame: pd.DataFrame,
    epsilon: float,
    method: str = "kendall",
    k: float = 8.0,
    domains: Mapping[str, Any] | None = None,
    publisher: str = DEFAULT_PUBLISHER,
    hybrid_threshold: int | None = 10,
    *,
    n_rows: int | None = None,
    sample_size: int | str | None = None,
    mle_partitions: int | None = None,
    max_partitions: int = 8,
    hybrid_min_support: float | None = None,
    margin_fit: str = "project",
    publisher_options: Mapping[str, Any] | None = None,
    tie_correction: bool = True,
    rng: np.random.Generator | None = None,
    concordance: ConcordanceMemo | None = None,
) -> SynthResult:
    """Release a DP synthetic copy of ``frame`` with DPCopula (Li 2017 Alg. 1-6).

    Parameters
    ----------
    frame : pandas.DataFrame
        At least 2 numeric columns of integer codes (or pre-binned numbers listed in
        ``domains``); no missing values. Non-numeric columns must be coded first.
    epsilon : float
        Total budget (> 0).
    method : {"kendall", "mle"}
        Dependence estimator: DP Kendall's tau (Li 2017 Alg. 4-5) or DP MLE (Alg. 1-2).
    k : float
        Ratio ``eps1 / eps2`` of the margin and dependence budgets (> 0; the text's
        default 8, Li 2017 Table 3.2): ``eps2 = epsilon / (k + 1)``, ``eps1 = epsilon - eps2``.
    domains : mapping or None
        Public domain of every column: ``(min, max)`` (inclusive integers), an int ``A``
        (``0..A-1``) or a list of values. ``None`` reads them from the data -- not private
        (:class:`DomainFromDataWarning`); in analyst use they must be declared.
    publisher : str
        The :func:`~dpwidgets.engine.histograms.publish` method for the margins (any 1-D
        publisher; asked to serve the prefix workload, since a margin is used through its
        CDF). Default ``"dawa"`` (:data:`DEFAULT_PUBLISHER`); the text uses ``"efpa"``.
        EFPA keeps a few Fourier coefficients: excellent on smooth margins, poor on spiky
        ones (a point mass such as a zero income or a top code needs every coefficient,
        and then EFPA's noise per cell is about sqrt(domain size) times Laplace's; with
        ``publisher_options={"fallback": "identity"}`` its exponential mechanism may pick
        the Laplace histogram instead). DAWA's data-aware buckets keep spikes and flat
        stretches alike, so it is far more accurate on census-shaped margins and close to
        EFPA on smooth ones (``benchmarks/synth_margin_publishers.py`` and
        ``benchmarks/synth_synthetic.py`` measure it).
    hybrid_threshold : int or None
        Attributes with fewer than this many values are handled by the hybrid (Alg. 6):
        they partition the data and DPCopula runs in every partition. ``None`` (or 2)
        disables it. The text's default; its price is that every margin is estimated per
        partition (the same noise on a fraction of the data), which can outweigh keeping
        the small attributes' dependence exactly (``benchmarks/synth_margin_publishers.py``
        measures it with and without the hybrid).
    n_rows : int, optional
        Number of synthetic records (a public choice). Default: the DP estimate of the
        record count (mean of the margins' unclipped noisy totals; for the hybrid, the sum
        of the noisy partition sizes).
    sample_size : int, "all", "floor" or "text", optional
        Kendall only: the rule for ``t``, the number of rows tau is computed on; ``t`` is
        the smaller of it and the DP record count (:data:`SAMPLE_RULES`). Default: ``"all"``
        (every row the DP count allows, ``t = round(n~)``) when the copula models the whole
        table, ``"floor"`` inside the hybrid's partitions. ``"floor"`` is the larger of
        :func:`kendall_sample_size`, the text's ``50 m (m-1) / eps2``, and
        :data:`KENDALL_MIN_ROWS` = 20,000 (the text's rule alone samples fewer rows the
        larger epsilon is); ``"text"`` is the text's rule alone. At the text's rule the
        tau noise scale ``C(m,2) 4 / (t eps2)`` is 0.04 whatever ``n``, ``m`` and
        ``epsilon``; a larger ``t`` lowers it in proportion, and the sampling error with
        it, at ``O(t log t)`` per pair. All rows are somewhat more accurate than the floor
        rule (``benchmarks/synth_hybrid.py`` measures both).
    mle_partitions : int, optional
        MLE only: the number ``l`` of blocks. Default: the text's
        ``ceil(C(m,2) / (0.025 eps2))``, capped so that blocks hold >= 20 records on average
        (by the DP record count).
    max_partitions : int
        Largest number of hybrid partitions (default 8). The small attributes join the
        partition smallest domain first while the product of their domain sizes stays within
        it; the others are modelled by the copula with the large ones (their ties handled
        by ``tie_correction``). The text partitions by every small attribute (Alg. 6) -- 2
        partitions for its US table, 8 for Brazil, both within the default; but every
        partition gets its own noisy margins, so with many small attributes the hybrid
        drowns the data: with thousands of partitions the synthetic table is less accurate
        than independent margins, and far slower to release
        (``benchmarks/synth_hybrid.py`` measures it). A large value restores the text's rule.
    hybrid_min_support : float, optional
        Partition only if ``epsilon * n~ / (P * m_c)`` is at least this (default
        :data:`HYBRID_MIN_SUPPORT` = 500), ``n~`` the sum of the released noisy partition
        counts, ``P`` the number of partitions and ``m_c`` the number of attributes the
        copula models in each; otherwise the small attributes join the copula
        (``details["partition_attributes"]`` says which way it went). ``0`` always
        partitions (the text's rule). Each partition pays its own margins' noise on a
        fraction of the data, which at small epsilon costs more error than partitioning
        saves (``benchmarks/synth_hybrid.py`` and ``benchmarks/synth_hybrid_rule.py``
        measure the rule against the text's).
    margin_fit : {"clip", "project"}
        How a noisy margin becomes the DP empirical distribution (post-processing, free):
        ``"project"`` (default; Norm-Sub: the closest non-negative histogram with the same
        noisy total, which does not pile the positive noise of empty cells into phantom
        mass) or ``"clip"`` (negatives to 0, normalised); see :data:`MARGIN_FITS`. The text
        does not say how its margins are made non-negative; ``project`` is more accurate
        than ``clip`` for EFPA, identity and HB and level for DAWA
        (``benchmarks/synth_margin_publishers.py`` measures both), hence the default.
    publisher_options : mapping, optional
        Options passed to the margin publisher.
    tie_correction : bool
        Kendall only (default True): turn the DP tau-a into tau-b with the DP margins
        before ``P = sin(pi tau / 2)``, and for every pair with a tied attribute (a DP
        margin with ``sum p^2 >`` :data:`HEAVY_TIE_SHARE`) replace the sine by the
        correlation whose simulated copula data reproduce that tau-b (post-processing,
        free). Pairs whose corrected tau would carry DP noise of
        s.d. above :data:`TIE_NOISE_LIMIT` (0.1) keep tau-a: the correction divides the
        noise by ``sqrt(u_j u_k)`` as well, and for rare categories with many attributes
        (small ``t eps2 / C(m,2)``) the amplified noise is a bigger error than the ties'
        bias. The text treats attributes as continuous; on discrete ones tied pairs count
        0 in tau-a and the copula's correlation comes out too small
        (two balanced binary attributes with latent correlation 0.6 give sin(pi tau-a / 2)
        = 0.32; tau-b gives 0.60; for a 90/10 binary attribute tau-b's sine still gives
        0.41, the calibration 0.6). ``False`` is the text's estimator.
    rng : numpy.random.Generator, optional
        Source of all randomness (default: a fresh unseeded generator).
    concordance : ConcordanceMemo, optional
        Kendall only: per-row concordance counts of the table kept between calls, so that
        tau on a later call costs the rows left out of its sample, not a count of the whole
        sample (:class:`ConcordanceMemo`; the release is the same for the same generator).
        For public data only (a teaching table, a stand-in): it holds statistics of the
        table.

    Returns
    -------
    SynthResult
        The synthetic table with the DP margins and the repaired DP correlation matrix it
        was sampled from; ``epsilon_parts`` splits epsilon into margins and dependence.

    Raises
    ------
    ValueError
        Before any randomness: a non-DataFrame or fewer than 2 columns, a non-numeric column,
        missing or non-finite values, a domain with fewer than 2 values, values outside the
        declared domains, bad ``epsilon``/``k``/``method``/``publisher``/``n_rows``/
        ``sample_size``/``mle_partitions``/``max_partitions``.
    TypeError
        ``rng`` is not a :class:`numpy.random.Generator`.

    Notes
    -----
    Privacy (add/remove one record; domains public). Margins: each histogram has L1
    sensitivity 1 and gets ``eps1/m``; sequential composition gives ``eps1``. The record
    count ``n~``, the sample size ``t = min(rule, n~)`` and the MLE block count are functions
    of those DP outputs. Kendall: the statistic of pair (j, k) is
    ``S_jk(sample) / C(t, 2)`` with ``S_jk`` the sum of sign products over the pairs of the
    sample (a uniform ``t``-subset if there are more than ``t`` rows, else all rows). If the
    data have fewer than ``t`` rows, adding one adds at most ``t - 1`` pairs (change <=
    ``2/t``); otherwise the two samples can be coupled to differ by one replaced record,
    which changes ``t - 1`` pairs by at most 2 (change <= ``4/t``). So ``4/t`` bounds every
    coefficient, ``C(m,2) 4/t`` the vector, and ``Lap(C(m,2) (4/t) / eps2)`` per pair is
    ``eps2``-DP (the coupling averages the Laplace ratio bound). MLE: see ``_dp_mle``,
    ``eps2``-DP. Everything after is post-processing: ``epsilon = eps1 + eps2``
    (Thm 3.2.2's proof; its statement ``m eps1 + C(m,2) eps2`` is a slip).

    Sensitivity differs from Lemma 3.2.1's ``4/(n+1)``: the lemma adds a record to a set of
    ``n``, and removing one from a set of ``n`` needs ``4/n``. We use ``4/t`` for the rows
    tau is computed on; with the text's ``n^ = 50 m(m-1)/eps2 - 1`` and ``t = n^ + 1`` this is
    exactly the text's ``4/(n^+1)``. When the DP count overestimates a small table (``n <
    t``), tau is shrunk by ``C(n,2)/C(t,2)`` (the price of not assuming ``n`` public).

    Hybrid (Alg. 6): with ``m1`` small and ``m2`` large attributes, the partition sizes (one
    count per combination of small values, ``Lap(1/eps_p)`` each: Dwork's method as in the
    text) get ``eps_p = eps1 m1/m``; in every partition DPCopula runs on the large attributes
    with ``eps1/m`` per margin and ``eps2`` for the dependence (if ``m2 >= 2``; otherwise
    ``eps2`` is not split off and margins get ``epsilon/m`` each). Partitions are disjoint,
    so their releases compose in parallel: ``epsilon = eps_p + eps1 m2/m + eps2``. The
    text's Alg. 6 leaves ``eps_p`` open; this choice keeps each attribute's margin at
    ``eps1/m`` and the ratio ``k``. Partitions whose noisy size rounds to 0 produce no rows.
    Whether to partition (``hybrid_min_support``) is decided from ``n~ = sum`` of those
    noisy counts, ``epsilon`` and the domain sizes: post-processing of a released value and
    public parameters, so the decision itself spends nothing and the budget split above
    does not depend on it. Unpartitioned, the small attributes' margins are the margins of
    the released counts (post-processing), the copula covers all ``m`` attributes with
    ``eps2``, and the total is the same. The rule applies when ``m2 >= 2`` (``eps2`` is then
    set aside either way); with fewer large attributes the text's hybrid runs.

    References
    ----------
    Li 2017 Ch. 3: Alg. 1 and 4 (steps), Alg. 2 (DP MLE), Alg. 3 (sampling), Alg. 5 (DP
    Kendall and the repair), Alg. 6 (hybrid), Lemma 3.2.1, Thms 3.2.1-3.2.4, §3.3.2 (k = 8).
    """
    epsilon = check_epsilon(epsilon)
    k = check_positive(k, "k")
    if concordance is not None and not isinstance(concordance, ConcordanceMemo):
        raise ValueError(f"concordance must be a ConcordanceMemo or None, got "
                         f"{type(concordance).__name__}")
    if not isinstance(tie_correction, bool | np.bool_):
        raise ValueError(f"tie_correction must be True or False, got {tie_correction!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    options = _check_publisher(publisher, publisher_options)
    if hybrid_threshold is not None:
        hybrid_threshold = check_positive_int(hybrid_threshold, "hybrid_threshold", minimum=2)
    n_rows = _check_n_rows(n_rows)
    if isinstance(sample_size, str):
        if sample_size not in SAMPLE_RULES:
            raise ValueError(
                f"sample_size must be an integer >= 2 or one of {list(SAMPLE_RULES)}, got "
                f"{sample_size!r}"
            )
    elif sample_size is not None:
        sample_size = check_positive_int(sample_size, "sample_size", minimum=2)
    if mle_partitions is not None:
        mle_partitions = check_positive_int(mle_partitions, "mle_partitions", maximum=MAX_PARTITIONS)
    max_partitions = check_positive_int(max_partitions, "max_partitions", maximum=MAX_PARTITIONS)
    min_support = _check_min_support(hybrid_min_support)
    fit = _check_fit(margin_fit)
    table = _prepare(frame, domains)
    sizes = table.sizes
    m = table.m
    small, n_parts = _hybrid_attributes(sizes, hybrid_threshold, max_partitions)
    large = [j for j in range(m) if j not in small]
    rng = check_rng(rng)
    _warn_from_data(table)

    m1, m2 = len(small), len(large)
    with_dependence = m2 >= 2
    eps_dep = epsilon / (k + 1.0) if with_dependence else 0.0
    eps_margin_each = (epsilon - eps_dep) / m
    common = dict(
        method=method,
        publisher=publisher,
        options=options,
        fit=fit,
        sample_size=sample_size,
        mle_partitions=mle_partitions,
        rng=rng,
        tie_correction=bool(tie_correction),
        concordance=concordance,
    )
    details: dict[str, Any] = {
        "k": k,
        "tie_correction": bool(tie_correction) and method == "kendall",
        "publisher": publisher,
        "publisher_options": dict(options),
        "margin_fit": fit,
        "margin_epsilon_each": eps_margin_each,
        "hybrid_threshold": hybrid_threshold,
        "hybrid_min_support": min_support,
    }

    if not small:
        parts = _exact_parts(epsilon, {"margins": eps_margin_each * m, "dependence": eps_dep})
        synthetic, corr, probs, info = _copula_release(
            table.codes, sizes, eps_margin_each, eps_dep, n_est=None, n_out=n_rows,
            all_rows=True, **common
        )
        details.update(info)
        return SynthResult(
            data=table.frame(synthetic),
            epsilon=epsilon,
            epsilon_parts=parts,
            method=f"dpcopula-{method}",
            correlation=corr,
            correlation_columns=table.columns,
            margins=dict(zip(table.columns, probs, strict=True)),
            domains=table.domains(),
            guarantee=_guarantee(epsilon, table),
            details=details,
        )

    # Hybrid (Li 2017 Alg. 6): noisy counts of every combination of the small attributes.
    eps_part = eps_margin_each * m1
    part_sizes = [sizes[j] for j in small]
    pid = (
        np.ravel_multi_index(tuple(table.codes[:, j] for j in small), part_sizes)
        if len(table.codes)
        else np.zeros(0, dtype=np.int64)
    )
    counts = np.bincount(pid, minlength=n_parts)
    noisy = np.asarray(publish(counts, eps_part, "identity", rng=rng).counts, dtype=float)
    clipped = np.clip(noisy, 0.0, None)
    weights = clipped / clipped.sum() if clipped.sum() > 0 else np.full(n_parts, 1.0 / n_parts)
    small_codes = np.stack(np.unravel_index(np.arange(n_parts), part_sizes), axis=1)
    n_hat = float(noisy.sum())
    # Partition only by the small attributes the DP size per partition supports (a function of
    # the released counts and public values: post-processing); the others join the copula with
    # the DP margins the released counts already give them (post-processing, nothing spent).
    keep = (
        _supported_partition(small, sizes, epsilon, n_hat, min_support)
        if with_dependence and min_support > 0
        else list(small)
    )
    moved = [j for j in small if j not in keep]
    keep_axes = [small.index(j) for j in keep]
    moved_axes = [small.index(j) for j in moved]
    keep_sizes = [sizes[j] for j in keep]
    n_used = math.prod(keep_sizes)
    grid = np.moveaxis(noisy.reshape(part_sizes), keep_axes + moved_axes,
                       list(range(m1))).reshape([n_used] + [sizes[j] for j in moved])
    coarse = grid.reshape(n_used, -1).sum(axis=1)
    coarse_clipped = np.clip(coarse, 0.0, None)
    coarse_weights = (coarse_clipped / coarse_clipped.sum() if coarse_clipped.sum() > 0
                      else np.full(n_used, 1.0 / n_used))
    if n_rows is None:
        rows = np.maximum(np.rint(coarse), 0).astype(np.int64)
    else:
        rows = rng.multinomial(n_rows, coarse_weights)
    cpid = (
        np.ravel_multi_index(tuple(table.codes[:, j] for j in keep), keep_sizes)
        if keep and len(table.codes)
        else np.zeros(len(table.codes), dtype=np.int64)
    )
    order = np.argsort(cpid, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(cpid, minlength=n_used))))
    keep_codes = (np.stack(np.unravel_index(np.arange(n_used), keep_sizes), axis=1)
                  if keep else np.zeros((1, 0), dtype=np.int64))
    copula_cols = sorted(large + moved)
    copula_sizes = [sizes[j] for j in copula_cols]
    pieces = []
    part_corr: dict[tuple, np.ndarray | None] = {}
    large_mix = {j: np.zeros(sizes[j]) for j in large}
    for cell in np.flatnonzero(rows > 0).tolist():
        report(cell, n_used)  # partitions of the public domains
        block = np.empty((int(rows[cell]), m), dtype=np.int64)
        block[:, keep] = keep_codes[cell]
        if copula_cols:
            members = order[bounds[cell] : bounds[cell + 1]]
            given = {}
            for i, j in enumerate(moved):
                other = tuple(a for a in range(len(moved)) if a != i)
                given[copula_cols.index(j)] = _distribution(grid[cell].sum(axis=other), fit)
            synthetic, corr, probs, info = _copula_release(
                table.codes[np.ix_(members, copula_cols)],
                copula_sizes,
                eps_margin_each,
                eps_dep,
                n_est=float(coarse[cell]),
                n_out=int(rows[cell]),
                given=given,
                all_rows=not keep,
                **common,
            )
            block[:, copula_cols] = synthetic
            key = tuple(table.values[j][keep_codes[cell, i]].item() for i, j in enumerate(keep))
            part_corr[key] = corr
            if not keep:
                details.update(info)
            for i, j in enumerate(copula_cols):
                if j in large_mix:
                    large_mix[j] += coarse_weights[cell] * probs[i]
        pieces.append(block)
    synthetic = np.concatenate(pieces) if pieces else np.empty((0, m), dtype=np.int64)
    synthetic = synthetic[rng.permutation(len(synthetic))]
    parts = _exact_parts(
        epsilon,
        {"partition_sizes": eps_part, "margins": eps_margin_each * m2, "dependence": eps_dep},
    )
    # DP margins of the whole table (post-processing): the noisy partition sizes give the
    # small attributes' margins, the size-weighted mixture of the partition margins the others.
    margins: dict[str, np.ndarray] = {}
    for i, j in enumerate(small):
        margins[table.columns[j]] = np.bincount(
            small_codes[:, i], weights=weights, minlength=sizes[j]
        )
    for j in large:
        mass = large_mix[j].sum()
        margins[table.columns[j]] = (
            large_mix[j] / mass if mass > 0 else np.full(sizes[j], 1.0 / sizes[j])
        )
    details.update(
        small_attributes=tuple(table.columns[j] for j in small),
        small_in_copula=tuple(
            table.columns[j]
            for j in large
            if hybrid_threshold is not None and sizes[j] < hybrid_threshold
        ),
        large_attributes=tuple(table.columns[j] for j in large),
        partition_attributes=tuple(table.columns[j] for j in keep),
        n_partitions=int(n_used),
        counted_partitions=int(n_parts),
        partition_support=epsilon * n_hat / n_used,
        partition_noisy_sizes=_readonly(coarse),
        partition_rows=_readonly(rows, np.int64),
        partition_correlations=MappingProxyType(part_corr),
        partition_epsilon=eps_part,
        noisy_n=n_hat,
    )
    return SynthResult(
        data=table.frame(synthetic),
        epsilon=epsilon,
        epsilon_parts=parts,
        method=f"dpcopula-hybrid-{method}",
        correlation=part_corr.get(()) if not keep else None,
        correlation_columns=tuple(table.columns[j] for j in copula_cols),
        margins={c: margins[c] for c in table.columns},
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table),
        details=details,
    )


# ---------------------------------------------------------------------------------------------
# Baselines
# ---------------------------------------------------------------------------------------------


def independent_synth(
    frame: pd.DataFrame,
    epsilon: float,
    domains: Mapping[str, Any] | None = None,
    publisher: str = DEFAULT_PUBLISHER,
    *,
    n_rows: int | None = None,
    margin_fit: str = "project",
    publisher_options: Mapping[str, Any] | None = None,
    rng: np.random.Generator | None = None,
) -> SynthResult:
    """The dependence-free baseline: DP margins only, attributes sampled independently.

    Each attribute's histogram is released with ``epsilon/m`` through
    :func:`~dpwidgets.engine.histograms.publish` (same publisher as DPCopula's margins);
    records are drawn from the product of the DP margins. This is DPCopula with the
    identity correlation and all the budget on the margins -- what DPCopula must beat to
    show that its dependence is worth the budget it takes.

    Parameters
    ----------
    frame, domains, publisher, n_rows, margin_fit, publisher_options, rng
        As :func:`dpcopula`.
    epsilon : float
        Total budget (> 0).

    Returns
    -------
    SynthResult
        ``correlation`` is the identity, ``epsilon_parts == {"margins": epsilon}``.

    Raises
    ------
    ValueError
        As :func:`dpcopula`, before any randomness.

    Notes
    -----
    Privacy: m histograms of L1 sensitivity 1 (add/remove one record) with ``epsilon/m``
    each compose to ``epsilon``; sampling is post-processing.

    References
    ----------
    Li 2017 §3.2 (the margins step of Alg. 1/4 on its own).
    """
    epsilon = check_epsilon(epsilon)
    options = _check_publisher(publisher, publisher_options)
    n_rows = _check_n_rows(n_rows)
    fit = _check_fit(margin_fit)
    table = _prepare(frame, domains)
    rng = check_rng(rng)
    _warn_from_data(table)
    eps_each = epsilon / table.m
    probs, n_hat = _dp_margins(table.codes, table.sizes, eps_each, publisher, options, fit, rng)
    rows = max(int(round(n_hat)), 0) if n_rows is None else n_rows
    synthetic = _sample_copula(probs, None, rows, rng)
    return SynthResult(
        data=table.frame(synthetic),
        epsilon=epsilon,
        epsilon_parts={"margins": epsilon},
        method="independent",
        correlation=np.eye(table.m),
        correlation_columns=table.columns,
        margins=dict(zip(table.columns, probs, strict=True)),
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table),
        details={
            "publisher": publisher,
            "publisher_options": dict(options),
            "margin_fit": fit,
            "margin_epsilon_each": eps_each,
            "noisy_n": n_hat,
        },
    )


def laplace_histogram_synth(
    frame: pd.DataFrame,
    epsilon: float,
    domains: Mapping[str, Any] | None = None,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    max_cells: int = 10**7,
    n_rows: int | None = None,
    margin_fit: str = "project",
) -> SynthResult:
    """The full-domain histogram baseline: Laplace per cell of the joint histogram, then
    sampling (Li 2017 §3.3.1's "methods with histograms as inputs", LM).

    The joint histogram over the product of all domains (``prod |A_j|`` cells, C order) is
    released with ``epsilon`` (``publisher="identity"``: ``Lap(1/epsilon)`` per cell),
    clipped at 0, normalised, and ``n_rows`` records (default: the unclipped noisy total)
    are drawn from it.

    Parameters
    ----------
    frame, domains, rng, n_rows, margin_fit
        As :func:`dpcopula` (``margin_fit`` applies to the joint histogram).
    epsilon : float
        Total budget (> 0).
    publisher : str
        Any 1-D publisher of :func:`~dpwidgets.engine.histograms.publish`.
    max_cells : int
        Refuse domains with more cells than this (the histogram must fit in memory).

    Returns
    -------
    SynthResult
        ``correlation`` is ``None`` (the joint histogram holds every dependence);
        ``epsilon_parts`` are the publisher's (all of epsilon on the one histogram).

    Raises
    ------
    ValueError
        If the full domain has more than ``max_cells`` cells (before any randomness), or as
        :func:`dpcopula`.

    Notes
    -----
    Privacy: the joint histogram has L1 sensitivity 1 under add/remove-one; the publisher
    is ``epsilon``-DP; sampling is post-processing.

    References
    ----------
    Dwork, McSherry, Nissim, Smith 2006; Li 2017 §3.3.1 (why histogram methods do not scale).
    """
    epsilon = check_epsilon(epsilon)
    options = _check_publisher(publisher, None)
    max_cells = check_positive_int(max_cells, "max_cells", maximum=MAX_CELLS)
    n_rows = _check_n_rows(n_rows)
    fit = _check_fit(margin_fit)
    table = _prepare(frame, domains)
    cells = math.prod(table.sizes)
    if cells > max_cells:
        raise ValueError(
            f"the full domain has {cells:.3g} cells ({' x '.join(map(str, table.sizes))}), more "
            f"than max_cells={max_cells}: the full-histogram baseline only runs where the "
            f"histogram fits in memory (use independent_synth or dpcopula)"
        )
    rng = check_rng(rng)
    _warn_from_data(table)
    flat = np.ravel_multi_index(tuple(table.codes.T), table.sizes) if len(table.codes) else []
    counts = np.bincount(np.asarray(flat, dtype=np.int64), minlength=cells)
    release = publish(counts, epsilon, publisher, rng=rng, **options)
    est = np.asarray(release.counts, dtype=float)
    rows = max(int(round(est.sum())), 0) if n_rows is None else n_rows
    prob = _distribution(est, fit)
    drawn = rng.choice(cells, size=rows, p=prob)
    synthetic = np.stack(np.unravel_index(drawn, table.sizes), axis=1).astype(np.int64)
    shaped = prob.reshape(table.sizes)
    margins = {
        col: shaped.sum(axis=tuple(i for i in range(table.m) if i != j))
        for j, col in enumerate(table.columns)
    }
    return SynthResult(
        data=table.frame(synthetic.reshape(rows, table.m)),
        epsilon=epsilon,
        epsilon_parts=dict(release.epsilon_parts),
        method="laplace-histogram",
        correlation=None,
        correlation_columns=(),
        margins=margins,
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table),
        details={
            "publisher": publisher,
            "margin_fit": fit,
            "cells": int(cells),
            "noisy_n": float(est.sum()),
        },
    )


_PEER_INSTALL = "pip install 'opendp[mbi]'  (pulls in mbi, JAX, polars and pyarrow)"


def peer_synth(
    frame: pd.DataFrame,
    epsilon: float,
    method: str = "aim",
    domains: Mapping[str, Any] | None = None,
    rng: np.random.Generator | None = None,
    *,
    n_rows: int | None = None,
) -> SynthResult:
    """Today's peers: AIM or MST from OpenDP's ``mbi`` extra (Private-PGM), as a baseline.

    The frame goes to OpenDP as a polars LazyFrame with ``privacy_unit=unit_of(
    contributions=1)`` (add/remove one row) and ``privacy_loss=loss_of(epsilon=epsilon)``
    (pure DP: every column's keys are the declared domain, so OpenDP needs no delta);
    ``contingency_table(keys=..., algorithm=AIM() or MST())`` is released and synthesised
    with ``n_rows`` rows (default: the model's DP total). OpenDP adds a "null" key to every
    column; synthetic values falling in it are replaced by a draw from that column's other
    synthetic values (post-processing, with ``rng``).

    Parameters
    ----------
    frame, domains, n_rows
        As :func:`dpcopula`.
    epsilon : float
        Total budget (> 0).
    method : {"aim", "mst"}
        AIM (McKenna, Mullins, Sheldon, Miklau 2022) or MST (McKenna, Miklau, Sheldon 2021).
    rng : numpy.random.Generator, optional
        Used only for the null replacement: OpenDP draws its noise from its own
        cryptographic generator and ``mbi`` samples from NumPy's global state, so a peer
        release is **not** reproducible from a seed.

    Returns
    -------
    SynthResult

    Raises
    ------
    ImportError
        If ``opendp[mbi]`` is not installed (the message gives the pip command).
    ValueError
        As :func:`dpcopula`, before any randomness.
    RuntimeError
        If OpenDP fails inside its noise calibration (seen with AIM under pure DP in
        opendp 0.16 on a 4 x 100-value table: "scale (-0.5) must not be finite and
        non-negative", OpenDP issue #2790). Nothing is released; a caller that charges a
        budget before calling should count it as spent.

    Notes
    -----
    Privacy: OpenDP's own accounting -- ``epsilon``-DP (pure) for add/remove-one-row
    neighbours with all keys public; the null replacement is post-processing.

    References
    ----------
    OpenDP ``opendp.extras.mbi`` (``make_contingency_table``, ``AIM``, ``MST``).
    """
    epsilon = check_epsilon(epsilon)
    if method not in ("aim", "mst"):
        raise ValueError(f"method must be 'aim' or 'mst', got {method!r}")
    n_rows = _check_n_rows(n_rows)
    table = _prepare(frame, domains)
    rng = check_rng(rng)
    try:
        import mbi  # noqa: F401
        import opendp.prelude as dp
        import polars as pl
        from opendp.mod import OpenDPException
    except ImportError as exc:
        raise ImportError(f"peer_synth needs OpenDP with its mbi extra: {_PEER_INSTALL}") from exc
    _warn_from_data(table)
    dp.enable_features("contrib")
    names = [f"c{j}" for j in range(table.m)]  # OpenDP needs string names, and no "len"
    coded = pl.DataFrame({name: table.codes[:, j] for j, name in enumerate(names)})
    context = dp.Context.compositor(
        data=coded.lazy(),
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=epsilon),
        split_evenly_over=1,
    )
    algorithm = dp.mbi.AIM() if method == "aim" else dp.mbi.MST()
    keys = {name: list(range(size)) for name, size in zip(names, table.sizes, strict=True)}
    released = context.query().select(*names).contingency_table(keys=keys, algorithm=algorithm)
    try:
        contingency = released.release()
    except OpenDPException as exc:
        raise RuntimeError(
            f"OpenDP's {method.upper()} failed inside its own release (see the chained "
            f"OpenDPException); with opendp 0.16 AIM can fail to calibrate its noise under "
            f"pure epsilon-DP (OpenDP issue #2790). Nothing was returned; try method='mst'"
        ) from exc
    out = contingency.synthesize(rows=n_rows)
    synthetic = np.empty((out.height, table.m), dtype=np.int64)
    for j, name in enumerate(names):
        col = out[name].to_numpy()
        col = np.asarray(col, dtype=float)
        bad = ~np.isfinite(col) | (col < 0) | (col >= table.sizes[j])
        good = col[~bad]
        if bad.any():
            col[bad] = (
                rng.choice(good, size=int(bad.sum()))
                if good.size
                else rng.integers(0, table.sizes[j], size=int(bad.sum()))
            )
        synthetic[:, j] = col.astype(np.int64)
    return SynthResult(
        data=table.frame(synthetic),
        epsilon=epsilon,
        epsilon_parts={method: epsilon},
        method=method,
        correlation=None,
        correlation_columns=(),
        margins={},
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table, " (OpenDP's accounting)"),
        details={"opendp_rows": int(out.height)},
    )


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RangeQueries:
    """Random range-count queries ``COUNT(*) WHERE lower_j <= A_j <= upper_j for all j``.

    Attributes
    ----------
    columns : tuple of str
    lower, upper : numpy.ndarray, shape (n_queries, m)
        Inclusive bounds, in domain values.
    """

    columns: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "lower", _readonly(self.lower))
        object.__setattr__(self, "upper", _readonly(self.upper))

    def __len__(self) -> int:
        return int(self.lower.shape[0])

    def answer(self, frame: pd.DataFrame, *, chunk_cells: int = 2**24) -> np.ndarray:
        """The count of every query on ``frame`` (vectorised over queries in chunks)."""
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise ValueError(f"frame lacks the queried columns {missing}")
        data = [frame[c].to_numpy(dtype=float) for c in self.columns]
        n = len(frame)
        out = np.zeros(len(self), dtype=np.int64)
        if n == 0:
            return out
        step = max(1, chunk_cells // n)
        for start in range(0, len(self), step):
            stop = min(start + step, len(self))
            mask = np.ones((stop - start, n), dtype=bool)
            for j, col in enumerate(data):
                mask &= col[None, :] >= self.lower[start:stop, j, None]
                mask &= col[None, :] <= self.upper[start:stop, j, None]
            out[start:stop] = mask.sum(axis=1)
        return out


def random_range_queries(
    domains: Mapping[str, Any],
    n_queries: int,
    rng: np.random.Generator | None = None,
    *,
    width: float | None = None,
) -> RangeQueries:
    """Random hyper-rectangles over all attributes (Li 2017 §3.3.1, "Metrics").

    For every query and attribute an interval of the domain is drawn: with ``width=None``
    its two end points are independent uniform domain positions (sorted); with a
    ``width`` in (0, 1] it covers ``max(1, round(width |A_j|))`` consecutive domain values
    at a uniform position (Li 2017 Fig. 3.7 fixes the range size this way).

    Parameters
    ----------
    domains : mapping
        Column -> domain (any form :func:`dpcopula` accepts, or the ``domains`` of a
        :class:`SynthResult`). Public: drawing queries spends no budget.
    n_queries : int
    rng : numpy.random.Generator, optional
    width : float, optional

    Returns
    -------
    RangeQueries
    """
    if not isinstance(domains, Mapping) or len(domains) == 0:
        raise ValueError("domains must be a non-empty mapping column -> domain")
    n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
    if width is not None and not (isinstance(width, Real) and 0 < width <= 1):
        raise ValueError(f"width must be in (0, 1] or None, got {width!r}")
    values = {
        c: (np.asarray(v) if isinstance(v, np.ndarray) else _domain_values(v, str(c)))
        for c, v in domains.items()
    }
    rng = check_rng(rng)
    columns = tuple(values)
    lower = np.empty((n_queries, len(columns)))
    upper = np.empty((n_queries, len(columns)))
    for j, c in enumerate(columns):
        vals = values[c]
        size = vals.size
        if width is None:
            ends = np.sort(rng.integers(0, size, size=(n_queries, 2)), axis=1)
            lo, hi = ends[:, 0], ends[:, 1]
        else:
            span = max(1, int(round(width * size)))
            lo = rng.integers(0, size - span + 1, size=n_queries)
            hi = lo + span - 1
        lower[:, j] = vals[lo]
        upper[:, j] = vals[hi]
    return RangeQueries(columns=columns, lower=lower, upper=upper)


@dataclass(frozen=True, eq=False)
class RangeCountError:
    """Errors of range-count queries answered on synthetic data (Li 2017 §3.3.1).

    Attributes
    ----------
    true_answers, synthetic_answers : numpy.ndarray of int
        (``synthetic_answers`` is real-valued with ``rescale_to``.)
    relative : numpy.ndarray
        ``|A_syn - A_act| / max(A_act, s)`` per query.
    absolute : numpy.ndarray
        ``|A_syn - A_act|`` per query.
    sanity_bound : float
        ``s``.
    """

    true_answers: np.ndarray
    synthetic_answers: np.ndarray
    relative: np.ndarray
    absolute: np.ndarray
    sanity_bound: float

    @property
    def mean_relative(self) -> float:
        """The text's reported figure: the average relative error over the queries."""
        return float(np.mean(self.relative))

    @property
    def median_relative(self) -> float:
        return float(np.median(self.relative))

    @property
    def mean_absolute(self) -> float:
        return float(np.mean(self.absolute))


def range_count_error(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    queries: RangeQueries,
    sanity_bound: float = 1.0,
    *,
    rescale_to: float | None = None,
) -> RangeCountError:
    """Relative error of range-count queries: ``|A_noisy(q) - A_act(q)| / max(A_act(q), s)``.

    Li 2017 §3.3.1: the sanity bound ``s`` mitigates queries with tiny true answers; the text
    uses ``s = 1`` by default, ``0.05%`` of the cardinality for the US census and 10 for the
    Brazil census. By default the synthetic answers are raw counts (the text's figure).
    Evaluation only: it reads the real data, so its output is not DP.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
    queries : RangeQueries
    sanity_bound : float
        ``s`` (> 0).
    rescale_to : float, optional
        Answer from the synthetic table's frequencies scaled to this size:
        ``A_syn(q) * rescale_to / len(synthetic)`` (real-valued). Pass the DP record count
        (``result.details["noisy_n"]``) and a synthetic table drawn larger than it (a public
        ``n_rows``): the answers approach the model's expected counts, and the sampling
        noise of a table of DP size is gone. Post-processing of DP outputs; never worse in
        expectation for a convex error such as this one (Jensen: it replaces a draw of the
        model's count by, up to the oversampled table's own noise, its mean).

    Returns
    -------
    RangeCountError
    """
    if not isinstance(queries, RangeQueries):
        raise ValueError("queries must come from random_range_queries")
    _check_finite_frame(real, "real")
    _check_finite_frame(synthetic, "synthetic")
    s = check_positive(sanity_bound, "sanity_bound")
    if rescale_to is not None:
        rescale_to = check_positive(rescale_to, "rescale_to")
        if len(synthetic) == 0:
            raise ValueError("rescale_to needs a non-empty synthetic table")
    true = queries.answer(real)
    syn = queries.answer(synthetic)
    if rescale_to is not None:
        syn = syn * (rescale_to / len(synthetic))
    absolute = np.abs(syn - true).astype(float)
    return RangeCountError(
        true_answers=_readonly(true, np.int64),
        synthetic_answers=_readonly(syn, np.int64 if rescale_to is None else float),
        relative=_readonly(absolute / np.maximum(true, s)),
        absolute=_readonly(absolute),
        sanity_bound=s,
    )


def marginal_comparison(real: pd.DataFrame, synthetic: pd.DataFrame) -> pd.Series:
    """Total variation distance between the real and synthetic margin of every column,
    ``TVD = 0.5 sum_v |p_real(v) - p_syn(v)|`` in [0, 1] (evaluation only, not DP)."""
    _check_same_columns(real, synthetic)
    out = {}
    for c in real.columns:
        p = real[c].value_counts(normalize=True)
        q = synthetic[c].value_counts(normalize=True)
        p, q = p.align(q, fill_value=0.0)
        out[c] = 0.5 * float(np.abs(p - q).sum())
    return pd.Series(out, name="tvd", dtype=float)


def _check_finite_frame(frame, name: str) -> None:
    """Refuse a DataFrame with NaN or infinite cells (non-numeric columns: missing cells)."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame")
    if frame.isna().to_numpy().any():
        raise ValueError(f"{name} must not hold missing (NaN) cells")
    try:
        values = frame.to_numpy(dtype=float)
    except (TypeError, ValueError):
        return  # non-numeric columns: compared by their codes
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must hold finite values: found infinite cells")


def _check_same_columns(real, synthetic) -> None:
    for name, f in (("real", real), ("synthetic", synthetic)):
        _check_finite_frame(f, name)
    if list(real.columns) != list(synthetic.columns):
        raise ValueError(
            f"real and synthetic must have the same columns, got {list(real.columns)} and "
            f"{list(synthetic.columns)}"
        )


@dataclass(frozen=True, eq=False)
class DependenceComparison:
    """Pairwise dependence of the real and the synthetic table (evaluation only, not DP).

    Attributes
    ----------
    real_kendall, synthetic_kendall, kendall_difference : pandas.DataFrame
        Kendall's tau-b matrices and ``synthetic - real``.
    real_pearson, synthetic_pearson, pearson_difference : pandas.DataFrame
        Pearson correlation matrices and ``synthetic - real``.
    """

    real_kendall: pd.DataFrame
    synthetic_kendall: pd.DataFrame
    real_pearson: pd.DataFrame
    synthetic_pearson: pd.DataFrame

    @property
    def kendall_difference(self) -> pd.DataFrame:
        return self.synthetic_kendall - self.real_kendall

    @property
    def pearson_difference(self) -> pd.DataFrame:
        return self.synthetic_pearson - self.real_pearson

    @property
    def max_abs_kendall_difference(self) -> float:
        """Largest ``|tau_syn - tau_real|`` over the pairs."""
        return float(np.nanmax(np.abs(self.kendall_difference.to_numpy())))

    @property
    def mean_abs_kendall_difference(self) -> float:
        """Mean ``|tau_syn - tau_real|`` over the pairs j < k."""
        d = np.abs(self.kendall_difference.to_numpy())
        return float(np.nanmean(d[np.triu_indices(d.shape[0], 1)]))


def _kendall_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    x = frame.to_numpy(dtype=float)
    m = x.shape[1]
    out = np.eye(m)
    rows, cols = _pair_indices(m)
    for j, k in zip(rows.tolist(), cols.tolist(), strict=True):
        out[j, k] = out[k, j] = stats.kendalltau(x[:, j], x[:, k]).statistic
    return pd.DataFrame(out, index=frame.columns, columns=frame.columns)


def dependence_comparison(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    max_rows: int | None = 20_000,
    rng: np.random.Generator | None = None,
) -> DependenceComparison:
    """Kendall's tau-b and Pearson matrices of ``real`` and ``synthetic`` and their difference.

    Tables longer than ``max_rows`` are subsampled (uniformly, with ``rng``) before the
    O(n log n) Kendall computation; ``None`` uses every row.
    """
    _check_same_columns(real, synthetic)
    if max_rows is not None:
        max_rows = check_positive_int(max_rows, "max_rows", minimum=2)
    rng = check_rng(rng)

    def cut(f: pd.DataFrame) -> pd.DataFrame:
        if max_rows is None or len(f) <= max_rows:
            return f
        return f.iloc[np.sort(rng.choice(len(f), size=max_rows, replace=False))]

    r, s = cut(real), cut(synthetic)
    return DependenceComparison(
        real_kendall=_kendall_matrix(r),
        synthetic_kendall=_kendall_matrix(s),
        real_pearson=r.astype(float).corr(),
        synthetic_pearson=s.astype(float).corr(),
    )
