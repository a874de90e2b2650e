"""The parameters of the synthetic-data mechanisms, one frozen object each.

Every synthetic-data mechanism runs on a *table of attributes* and takes ``epsilon`` (the
whole budget), ``attributes`` (the columns to synthesise; default all), ``domains`` (column
-> public domain; ``None``: read from the data, not DP) and ``n_rows`` (the number of
synthetic records; default the DP record count). :class:`DPCopulaParams` adds DPCopula's own
(Li 2017, Ch. 3: the split ``k = ε1/ε2``, the dependence estimator, the margins' publisher,
the hybrid of Alg. 6, ...); the baselines add what their engine function takes.

Each field is declared once (:func:`~dpwidgets.params.param`): its default, its check against
the dataset's public shape and schema (:class:`~dpwidgets.mechanism.PublicShape`: the number
of rows and columns, the column names), what it means, and how a widget shows it. A spec's
``validate`` is :meth:`~dpwidgets.params.Params.validate` of these classes: the canonical dict
it returns (every default spelt out; attributes sorted, domains in a canonical form) is what
the engine receives and what keys the release cache. Nothing here reads the data.

A domain is given as ``(min, max)`` (inclusive integers), an int ``A`` (the values
``0..A-1``) or a list of values; :func:`domain_values` gives its sorted values. The canonical
forms keep a range and a list apart in the cache key (``(0, 5)`` is six values, ``[0, 5]``
two).

Examples
--------
>>> from dpwidgets.mechanism import PublicShape
>>> from dpwidgets.families.synth.params import DPCopulaParams
>>> shape = PublicShape((1000, 3), columns=("age", "income", "sex"))
>>> p = DPCopulaParams.validate({"epsilon": 1.0, "attributes": ["income", "age"],
...                              "domains": {"age": 96, "income": (0, 1019)}}, shape)
>>> p["attributes"], p["domains"]["age"], p["k"], p["publisher"]
(('age', 'income'), {'min': 0, 'max': 95}, 8.0, 'dawa_dyadic')
"""

from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real

import numpy as np

from ...engine.validation import check_epsilon, check_positive, check_positive_int
from ...params import Choice, Context, Epsilon, Params, one_of, param

__all__ = ["DPCopulaParams", "IndependentSynthParams", "LaplaceHistogramSynthParams", "MAX_ROWS",
           "PEER_INSTALL", "PeerSynthParams", "domain_values", "peers_available", "publisher_name",
           "publisher_options"]

#: How to install the optional peers (AIM, MST).
PEER_INSTALL = "pip install 'opendp[mbi]'  (pulls in mbi, JAX, polars and pyarrow)"

#: Largest number of synthetic rows a release may ask for (memory guard; a public bound).
MAX_ROWS = 10_000_000


def _engine():
    # Imported when a request is checked, not with the package (the engine pulls in pandas).
    from ...engine import synth

    return synth


def peers_available() -> bool:
    """Whether OpenDP with its ``mbi`` extra (AIM, MST) is importable (nothing is imported).

    Examples
    --------
    >>> from dpwidgets.families.synth.params import peers_available
    >>> isinstance(peers_available(), bool)
    True
    """
    return all(importlib.util.find_spec(name) is not None for name in ("opendp", "mbi", "polars"))


def publisher_options(ndim: int = 1) -> list[tuple[str, str]]:
    """The histogram publishers of ``ndim``-dimensional histograms, as ``(label, name)`` pairs
    for a dropdown: each publisher once, by its canonical name (one registered under two
    names, ``"dawa"`` and ``"dawa_dyadic"``, is listed once). The options of the margins'
    publisher, and of the diagnostics widgets' publisher.

    Parameters
    ----------
    ndim : int
        The dimension of the histograms (DPCopula's margins: 1).

    Examples
    --------
    >>> from dpwidgets.families.synth.params import publisher_options
    >>> [name for _, name in publisher_options(1)][:4]
    ['identity', 'uniform', 'hb', 'dawa_dyadic']
    """
    from ...engine.histograms import publisher_choices

    return [(label, name) for name, label in publisher_choices(ndim)]


def publisher_name(name):
    """The canonical name of the histogram publisher ``name`` (an alias resolved); a name
    that is no publisher comes back as it is, for the caller to refuse.

    Examples
    --------
    >>> from dpwidgets.families.synth.params import publisher_name
    >>> publisher_name("dawa"), publisher_name("no such publisher")
    ('dawa_dyadic', 'no such publisher')
    """
    from ...engine.histograms import PUBLISHERS

    return PUBLISHERS[name].name if name in PUBLISHERS else name


# --------------------------------------------------------------------------------------------
# Domains: canonical forms (distinct in the cache key)
# --------------------------------------------------------------------------------------------
def _is_int(value) -> bool:
    return isinstance(value, Integral | np.integer) and not isinstance(value, bool)


def _canonical_domain(spec, name: str) -> dict:
    """``{"min": lo, "max": hi}`` for an integer range, ``{"values": array}`` for a list.

    The two forms stay distinct in the session's JSON cache key (a range ``(0, 5)`` and the
    two values ``[0, 5]`` are different domains).
    """
    max_size = _engine().MAX_DOMAIN_SIZE
    if isinstance(spec, Mapping) and set(spec) == {"min", "max"}:
        spec = (spec["min"], spec["max"])
    elif isinstance(spec, Mapping) and set(spec) == {"values"}:
        spec = spec["values"]
    if isinstance(spec, tuple):
        if len(spec) != 2 or not all(_is_int(b) for b in spec):
            raise ValueError(
                f"domains[{name!r}] as a tuple must be (min, max), two integers (inclusive); "
                f"got {spec!r} (give a list for explicit values)")
        lo, hi = int(spec[0]), int(spec[1])
        if hi <= lo:
            raise ValueError(f"domains[{name!r}] = (min, max) needs min < max (at least 2 "
                             f"values), got {spec!r}")
        if hi - lo + 1 > max_size:
            raise ValueError(f"domains[{name!r}] has {hi - lo + 1} values, more than "
                             f"{max_size}; bin the attribute")
        return {"min": lo, "max": hi}
    if _is_int(spec):
        if not 2 <= int(spec) <= max_size:
            raise ValueError(f"domains[{name!r}] = A (values 0..A-1) must be in [2, {max_size}], "
                             f"got {spec!r}")
        return {"min": 0, "max": int(spec) - 1}
    if isinstance(spec, str | bytes) or not isinstance(spec, Sequence | np.ndarray):
        raise ValueError(f"domains[{name!r}] must be (min, max), a number of values A or a list "
                         f"of values, got {spec!r}")
    try:
        values = np.asarray(spec, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"domains[{name!r}] must list numbers, got {spec!r}") from None
    if values.ndim != 1 or values.size < 2 or not np.all(np.isfinite(values)):
        raise ValueError(f"domains[{name!r}] must list at least 2 finite numbers, got {spec!r}")
    if values.size > max_size:
        raise ValueError(f"domains[{name!r}] has more than {max_size} values; bin the attribute")
    if np.unique(values).size != values.size:
        raise ValueError(f"domains[{name!r}] must list distinct values, got {spec!r}")
    return {"values": np.sort(values)}


def domain_values(spec) -> np.ndarray:
    """The sorted values of a declared domain (any accepted form, or a canonical one).

    Examples
    --------
    >>> from dpwidgets.families.synth.params import domain_values
    >>> domain_values((2, 5)).tolist(), domain_values(3).tolist(), domain_values([5, 0.5]).tolist()
    ([2, 3, 4, 5], [0, 1, 2], [0.5, 5.0])
    """
    canonical = _canonical_domain(spec, "domain")
    if "values" in canonical:
        values = canonical["values"]
        return values.astype(np.int64) if np.all(values == np.round(values)) else values
    return np.arange(canonical["min"], canonical["max"] + 1, dtype=np.int64)


def _size(canonical: dict) -> int:
    if "values" in canonical:
        return int(np.asarray(canonical["values"]).size)
    return int(canonical["max"]) - int(canonical["min"]) + 1


# --------------------------------------------------------------------------------------------
# The checks (each names its parameter; the public shape and schema only)
# --------------------------------------------------------------------------------------------
def _table_shape(shape, mechanism: str) -> tuple[int, int]:
    shape = tuple(shape)
    if len(shape) != 2:
        raise ValueError(f"{mechanism!r} runs on a table of attributes, got shape {shape}")
    n, m = (int(s) for s in shape)
    if m < 2:
        raise ValueError(f"{mechanism!r} needs at least 2 attributes, the table has {m}")
    return n, m


def _epsilon(value, ctx: Context) -> float:
    return check_epsilon(value)


def _optional(check):
    """``check`` for a parameter whose ``None`` means "decided elsewhere" (from the data, the
    table's declaration or the engine's rule): ``None`` is kept as it is, anything else checked."""

    @functools.wraps(check)
    def optional(value, ctx: Context):
        return None if value is None else check(value, ctx)

    return optional


@_optional
def _attributes(value, ctx: Context) -> tuple[str, ...]:
    n_columns = int(ctx.shape[1])
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise ValueError(f"attributes must be a list of column names (or None for all), got "
                         f"{value!r}")
    attrs = tuple(value)
    if not all(isinstance(a, str) and a for a in attrs):
        raise ValueError(f"attributes must be column names (strings), got {list(attrs)!r}")
    if len(set(attrs)) != len(attrs):
        raise ValueError(f"attributes must be distinct, got {list(attrs)!r}")
    if not 2 <= len(attrs) <= n_columns:
        raise ValueError(f"attributes must name between 2 and {n_columns} columns (the table "
                         f"has {n_columns}), got {len(attrs)}")
    # A set of columns: the release takes them in the dataset's order, so the order given
    # does not matter (nor enter the cache key).
    attrs = tuple(sorted(attrs))
    columns = getattr(ctx.shape, "columns", None)
    unknown = [a for a in attrs if columns is not None and a not in columns]
    if unknown:
        raise ValueError(f"attributes {unknown} are not columns of this dataset; its (public) "
                         f"columns are {list(columns)}")
    return attrs


@_optional
def _domains(value, ctx: Context) -> dict:
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"domains must be a mapping column -> domain (or None: read from the "
                         f"data, not DP), got {value!r}")
    if not all(isinstance(c, str) for c in value):
        raise ValueError("domains must be keyed by column name (str)")
    attrs = ctx.values["attributes"]
    if attrs is not None:
        missing = [a for a in attrs if a not in value]
        if missing:
            raise ValueError(f"domains must declare every attribute; missing {missing}")
        # The table's declared domains may list more columns: only the attributes' count
        # (and enter the cache key).
        value = {a: value[a] for a in attrs}
    domains = {c: _canonical_domain(spec, c) for c, spec in value.items()}
    m = int(ctx.shape[1])
    if attrs is None and len(domains) != m:
        raise ValueError(f"domains must declare every one of the table's {m} columns when "
                         f"attributes= is not given (it declares {len(domains)})")
    return domains


@_optional
def _n_rows(value, ctx: Context) -> int:
    n_rows = check_positive_int(value, "n_rows", minimum=0)
    if n_rows > MAX_ROWS:
        raise ValueError(f"n_rows must be at most {MAX_ROWS:,}, got {n_rows:,}")
    return n_rows


def _publisher(value, ctx: Context) -> str:
    from ...engine.histograms import PUBLISHERS

    if not isinstance(value, str) or value not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {value!r}")
    if 1 not in PUBLISHERS[value].dims:
        raise ValueError(f"publisher {value!r} does not publish 1-D histograms")
    return PUBLISHERS[value].name


_margin_fit = one_of("margin_fit", lambda: _engine().MARGIN_FITS)


_copula_method = one_of("method", lambda: _engine().METHODS)


def _k(value, ctx: Context) -> float:
    k = check_positive(value, "k (= eps1/eps2)")
    # Both parts of the split must be budgets the engine accepts (eps2 = eps / (1 + k)).
    for part, share in (("eps1", k / (1.0 + k)), ("eps2", 1.0 / (1.0 + k))):
        check_epsilon(ctx.values["epsilon"] * share, f"{part} = epsilon * split by k")
    return k


@_optional
def _hybrid_threshold(value, ctx: Context) -> int:
    return check_positive_int(value, "hybrid_threshold", minimum=2)


def _sample_size(value, ctx: Context) -> int | str | None:
    if isinstance(value, str):
        if value not in _engine().SAMPLE_RULES:
            raise ValueError(f"sample_size must be an integer >= 2 or one of "
                             f"{list(_engine().SAMPLE_RULES)}, got {value!r}")
        return value
    return None if value is None else check_positive_int(value, "sample_size", minimum=2)


def _hybrid_min_support(value, ctx: Context) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not (
        math.isfinite(value) and value >= 0
    ):
        raise ValueError(f"hybrid_min_support must be a finite number >= 0, got {value!r}")
    return float(value)


@_optional
def _mle_partitions(value, ctx: Context) -> int:
    return check_positive_int(value, "mle_partitions", minimum=1)


def _max_partitions(value, ctx: Context) -> int:
    limit = _engine().MAX_PARTITIONS
    most = check_positive_int(value, "max_partitions", maximum=limit)
    # mle_partitions (checked before) has the same limit; it is refused once max_partitions is
    # known to be acceptable, as the parameters always were.
    mle = ctx.values["mle_partitions"]
    if mle is not None and mle > limit:
        raise ValueError(f"mle_partitions must be at most {limit}, got {mle}")
    return most


def _max_cells(value, ctx: Context) -> int:
    return check_positive_int(value, "max_cells", maximum=_engine().MAX_CELLS)


def _peer_method(value, ctx: Context) -> str:
    if value not in ("aim", "mst"):
        raise ValueError(f"method must be 'aim' or 'mst', got {value!r}")
    return value


# --------------------------------------------------------------------------------------------
# The fields every synthetic-data mechanism takes (a function each: one field object per class)
# --------------------------------------------------------------------------------------------
def _epsilon_field():
    return param(check=_epsilon, control=Epsilon(), label="ε",
                 doc="the whole budget of the release, charged")


def _attributes_field():
    return param(None, check=_attributes,
                 doc="the columns to synthesise, taken in the dataset's order (None: all)")


def _domains_field():
    return param(None, check=_domains,
                 doc="column -> public domain: (min, max), a number of values A, or a list "
                     "(None: read from the data, NOT DP, teaching only)")


def _n_rows_field():
    return param(None, check=_n_rows,
                 doc=f"the number of synthetic records, a public choice (None: the DP record "
                     f"count); at most {MAX_ROWS:,}")


def _publisher_choices() -> tuple[tuple[str, str], ...]:
    return tuple((name, label) for label, name in publisher_options(1))


def _publisher_field(default: str):
    return param(default, check=_publisher, control=Choice(_publisher_choices),
                 label="margins publisher",
                 doc="the 1-D histogram publisher of the margins (dpwidgets.engine.histograms)")


def _margin_fit_field():
    return param("project", check=_margin_fit,
                 doc="how a noisy margin becomes a distribution: project (onto non-negative "
                     "histograms) or clip")


def _precheck_table(cls, request: Mapping, shape) -> None:
    """A table of at least two attributes, then ``epsilon=None`` refused as a value (as the
    budget's check words it), not as a missing parameter."""
    _table_shape(shape, cls.mechanism)
    if "epsilon" in request and request["epsilon"] is None:
        check_epsilon(None)


class DPCopulaParams(Params, mechanism="dpcopula"):
    """``"dpcopula"``: DPCopula (Li 2017, Ch. 3): DP margins with ε1, a DP correlation matrix
    with ε2 (Kendall's τ, Alg. 4-5, or block MLE, Alg. 1-2), the hybrid for small-domain
    attributes (Alg. 6), records sampled from the Gaussian copula (Alg. 3).

    Examples
    --------
    >>> from dpwidgets.families.synth.params import DPCopulaParams
    >>> p = DPCopulaParams.from_request({"epsilon": 0.5, "domains": {"a": 10, "b": 2}}, (500, 2))
    >>> p.method, p.hybrid_threshold, p.sample_size, p.max_partitions
    ('kendall', 10, None, 8)
    """

    epsilon: float = _epsilon_field()
    attributes: tuple[str, ...] | None = _attributes_field()
    domains: dict | None = _domains_field()
    n_rows: int | None = _n_rows_field()
    method: str = param("kendall", check=_copula_method, label="method",
                        control=Choice((
                            ("kendall", "DPCopula-Kendall: noisy Kendall's τ (Li 2017, Alg. 4-5)"),
                            ("mle", "DPCopula-MLE: noisy block MLE (Li 2017, Alg. 1-2)"))),
                        doc="the dependence estimator")
    # A ratio, not a budget, but shown as one: a log slider with a box for the exact value.
    k: float = param(8.0, check=_k, control=Epsilon(), label="k = ε1/ε2",
                     doc="the margins' share of the budget over the dependence's (Li 2017, "
                         "Table 3.2: 8)")
    publisher: str = _publisher_field("dawa")
    hybrid_threshold: int | None = param(
        10, check=_hybrid_threshold,
        doc="attributes with fewer values partition the data (Li 2017, Alg. 6; None: no hybrid)")
    sample_size: int | str | None = param(
        None, check=_sample_size,
        doc="the rows Kendall's τ is computed on: an integer, 'all', 'floor' or 'text' (None: "
            "the engine's rule)")
    hybrid_min_support: float = param(
        500.0, check=_hybrid_min_support,
        doc="the released partition size each copula margin needs before the hybrid "
            "partitions (ε·n̂/(P·m_c); 0: the text's rule, always partition)")
    mle_partitions: int | None = param(
        None, check=_mle_partitions, doc="MLE only: the number of disjoint blocks l")
    max_partitions: int = param(8, check=_max_partitions,
                                doc="the most partitions the hybrid makes")
    margin_fit: str = _margin_fit_field()

    precheck = classmethod(_precheck_table)


class IndependentSynthParams(Params, mechanism="independent_synth"):
    """``"independent_synth"``: DP margins only, each attribute sampled independently (the
    dependence-free baseline).

    Examples
    --------
    >>> from dpwidgets.families.synth.params import IndependentSynthParams
    >>> IndependentSynthParams.validate({"epsilon": 1}, (100, 2))["publisher"]  # DAWA's name
    'dawa_dyadic'
    """

    epsilon: float = _epsilon_field()
    attributes: tuple[str, ...] | None = _attributes_field()
    domains: dict | None = _domains_field()
    n_rows: int | None = _n_rows_field()
    publisher: str = _publisher_field("dawa")
    margin_fit: str = _margin_fit_field()

    precheck = classmethod(_precheck_table)


class LaplaceHistogramSynthParams(Params, mechanism="laplace_histogram_synth"):
    """``"laplace_histogram_synth"``: the Laplace mechanism on the full-domain histogram, only
    where it fits in memory (why DPCopula exists, Li 2017, §3.1.2).

    Examples
    --------
    >>> from dpwidgets.families.synth.params import LaplaceHistogramSynthParams
    >>> LaplaceHistogramSynthParams.validate(
    ...     {"epsilon": 1, "domains": {"a": 1000, "b": 1000}, "max_cells": 10**5}, (100, 2))
    Traceback (most recent call last):
        ...
    ValueError: the full domain has 1e+06 cells, more than max_cells=100000: the full-histogram baseline only runs where the histogram fits in memory (this is why DPCopula exists, Li 2017, §3.1.2)
    """

    epsilon: float = _epsilon_field()
    attributes: tuple[str, ...] | None = _attributes_field()
    domains: dict | None = _domains_field()
    n_rows: int | None = _n_rows_field()
    publisher: str = _publisher_field("identity")
    max_cells: int = param(10**7, check=_max_cells,
                           doc="the largest full-domain histogram the baseline builds")
    margin_fit: str = _margin_fit_field()

    precheck = classmethod(_precheck_table)

    def check(self, shape) -> None:
        if self.domains is not None:
            cells = math.prod(_size(d) for d in self.domains.values())
            if cells > self.max_cells:
                raise ValueError(
                    f"the full domain has {cells:.3g} cells, more than max_cells="
                    f"{self.max_cells}: the full-histogram baseline only runs where the "
                    f"histogram fits in memory (this is why DPCopula exists, Li 2017, §3.1.2)")


class PeerSynthParams(Params, mechanism="peer_synth"):
    """``"peer_synth"``: today's peers AIM and MST (McKenna, Miklau & Sheldon 2021; McKenna,
    Mullins, Sheldon & Miklau 2022) through OpenDP's optional ``mbi`` extra; refused without
    it (:data:`PEER_INSTALL`).

    Examples
    --------
    >>> from dpwidgets.families.synth.params import PeerSynthParams
    >>> PeerSynthParams.validate({"epsilon": 1, "method": "pgm"}, (100, 2))
    Traceback (most recent call last):
        ...
    ValueError: method must be 'aim' or 'mst', got 'pgm'
    """

    epsilon: float = _epsilon_field()
    attributes: tuple[str, ...] | None = _attributes_field()
    domains: dict | None = _domains_field()
    n_rows: int | None = _n_rows_field()
    method: str = param("mst", check=_peer_method, label="peer",
                        control=Choice((("mst", "MST"), ("aim", "AIM"))),
                        doc="MST (McKenna, Miklau & Sheldon 2021) or AIM (McKenna et al. 2022)")

    precheck = classmethod(_precheck_table)

    def check(self, shape) -> None:
        if not peers_available():
            raise ValueError(f"AIM and MST need OpenDP with its mbi extra, not installed here: "
                             f"{PEER_INSTALL}")
