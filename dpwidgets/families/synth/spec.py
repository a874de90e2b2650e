"""Session mechanisms for DP synthetic data (Li 2017, Ch. 3, DPCopula).

A dataset here is a *table of attributes*: a pandas DataFrame of numeric, integer-coded (or
pre-binned) columns added with :meth:`dpwidgets.Session.add_dataset` (the session keeps its
column names and dtypes as a public schema) and a public stand-in of the same schema and size
(:func:`synth_stand_in` builds one from the public schema and domains alone).

Mechanisms (``session.release(dataset, name, epsilon=..., attributes=..., domains=..., ...)``):

============================  ===========================================================  =======
name                          engine (:mod:`dpwidgets.engine.synth`)                        charged
============================  ===========================================================  =======
``"dpcopula"``                :func:`~dpwidgets.engine.synth.dpcopula` (Li 2017, Alg. 1-6)        ``ε``
``"independent_synth"``       :func:`~dpwidgets.engine.synth.independent_synth` (DP          ``ε``
                              margins only: the dependence-free baseline)
``"laplace_histogram_synth"`` :func:`~dpwidgets.engine.synth.laplace_histogram_synth`        ``ε``
                              (Laplace on the full-domain histogram, where it fits)
``"peer_synth"``              :func:`~dpwidgets.engine.synth.peer_synth` (AIM / MST from     ``ε``
                              OpenDP's optional ``mbi`` extra)
============================  ===========================================================  =======

Parameters shared by all four: ``epsilon`` (the total, > 0); ``attributes`` (the columns to
synthesise, in the dataset's order; default all); ``domains`` (column -> ``(min, max)``
inclusive integers, an int ``A`` for ``0..A-1``, or a list of values -- one entry per
attribute); ``n_rows`` (the number of synthetic records, a public choice; default the DP
record count). ``"dpcopula"`` adds ``method`` (``"kendall"``/``"mle"``), ``k`` (ε1/ε2, default
8), ``publisher`` (the margins' 1-D histogram publisher, default DAWA; the text's is EFPA),
``hybrid_threshold`` (default 10; ``None`` turns the hybrid off), ``sample_size`` (an integer,
``"all"``, ``"floor"`` or ``"text"``), ``mle_partitions``, ``max_partitions`` (default 8),
``hybrid_min_support`` (default 500 per copula margin; 0 is the text's rule, always partition) and
``margin_fit``; the baselines take
what their engine function takes.

Neighbours, guarantee and the public domains
--------------------------------------------
Add/remove one record (Li 2017, Def. 3.1.1): every mechanism is ``ε``-DP *given public attribute
domains* and is charged ``ε``. Domains read from the data are not DP (the engine says so in
the release's guarantee): such a release is allowed in a teaching session only -- in analyst
mode it is refused (``private`` is false without declared domains) before anything is charged.

Values outside a declared domain are **clamped** to the nearest domain value before the engine
runs. Clamping is a per-record map, so it changes no neighbour relation and no guarantee, and,
unlike a refusal ("your data has a value outside the domain, e.g. 97"), it reveals nothing
about the data. A wrong parameter is refused in ``validate``, from the parameters and the public
shape alone; the attribute names are checked against the public schema in ``run``, still before
any randomness and before the session charges anything (the session runs the engine before
charging; see :meth:`dpwidgets.Session.release`).

Outputs
-------
Only the DP output leaves the session (:func:`synth_outputs`): the synthetic records themselves
(DP output: post-processing of the DP margins and correlation), the DP margins, the DP
correlation matrix (per partition for the hybrid), the budget split, the guarantee and the
public settings or DP-derived numbers of the engine's ``details`` (noisy record count, Kendall
sample size, noise scales, noisy partition sizes). Never a record of the data, a true count, a
true margin or a true correlation. :func:`synthetic_frame` turns an output back into a DataFrame
with the dataset's dtypes.

References
----------
Li 2017, Ch. 3 (Alg. 1-6, Lemma 3.2.1, Thms 3.2.1-3.2.4, Table 3.2); the specification
McKenna, Miklau, Sheldon 2021 (MST); McKenna, Mullins, Sheldon, Miklau 2022 (AIM).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np

from ...engine.validation import check_epsilon, check_positive, check_positive_int
from ...mechanism import Mechanism, register_mechanism
from ...persistence.store import plain as _plain
from ...releases._common import publisher_is_private

if TYPE_CHECKING:  # pandas is imported when a table is released, not with the package
    import pandas as pd

__all__ = [
    "PEER_INSTALL",
    "SYNTH_MECHANISMS",
    "clamp_to_domain",
    "domain_values",
    "peers_available",
    "synth_outputs",
    "synth_stand_in",
    "synthetic_frame",
]

#: How to install the optional peers (AIM, MST).
PEER_INSTALL = "pip install 'opendp[mbi]'  (pulls in mbi, JAX, polars and pyarrow)"

#: Largest number of synthetic rows a release may ask for (memory guard; a public bound).
MAX_ROWS = 10_000_000

#: Keys of ``SynthResult.details`` that are public settings or functions of DP outputs only,
#: and may leave the session. Anything else stays behind.
_PUBLIC_DETAILS = (
    "k", "publisher", "publisher_options", "margin_fit", "margin_epsilon_each",
    "hybrid_threshold", "noisy_n", "sample_size", "sample_rule", "kendall_noise_scale",
    "noisy_tau", "tie_correction", "tie_corrected_tau", "tie_corrected_pairs",
    "tie_calibrated_pairs", "mle_blocks",
    "mle_noise_scale", "raw_correlation", "repaired", "min_eigenvalue_before_repair",
    "small_attributes", "small_in_copula", "large_attributes", "n_partitions",
    "partition_noisy_sizes", "partition_rows", "partition_epsilon", "cells", "opendp_rows",
    "hybrid_min_support", "partition_attributes", "counted_partitions", "partition_support",
)


def _engine():
    from ...engine import synth

    return synth


def peers_available() -> bool:
    """Whether OpenDP with its ``mbi`` extra (AIM, MST) is importable (nothing is imported)."""
    return all(importlib.util.find_spec(name) is not None for name in ("opendp", "mbi", "polars"))


# --------------------------------------------------------------------------------------------
# Domains: canonical forms (distinct in the cache key), engine forms, clamping
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


def _engine_domain(canonical: dict):
    """The form :func:`~dpwidgets.engine.synth.dpcopula` takes (a listed integer range as
    ``(min, max)``: the same values, without a list of thousands of Python ints)."""
    if "values" in canonical:
        values = np.asarray(canonical["values"], dtype=float)
        if np.all(values == np.round(values)):
            lo, hi = int(values[0]), int(values[-1])
            if hi - lo + 1 == values.size:  # sorted and distinct: every integer in between
                return (lo, hi)
            return [int(v) for v in values]
        return [float(v) for v in values]
    return (int(canonical["min"]), int(canonical["max"]))


def domain_values(spec) -> np.ndarray:
    """The sorted values of a declared domain (any accepted form, or a canonical one)."""
    canonical = _canonical_domain(spec, "domain")
    if "values" in canonical:
        values = canonical["values"]
        return values.astype(np.int64) if np.all(values == np.round(values)) else values
    return np.arange(canonical["min"], canonical["max"] + 1, dtype=np.int64)


def clamp_to_domain(values, domain: np.ndarray) -> np.ndarray:
    """Every value mapped to the nearest value of the sorted ``domain`` (ties: the lower one).

    A per-record map: applied before a release it keeps the neighbour relation, so it costs
    no budget and changes no guarantee (and, unlike an error, it says nothing about the data).
    """
    raw = np.asarray(values)
    domain = np.asarray(domain)
    contiguous = domain.dtype.kind in "iu" and int(domain[-1] - domain[0]) + 1 == domain.size
    if contiguous and raw.dtype.kind in "iu":
        if raw.size and domain[0] <= raw.min() and raw.max() <= domain[-1]:
            return raw.copy()  # nothing to clamp (two reductions are cheaper than a clip)
        return np.clip(raw, domain[0], domain[-1])
    x = raw.astype(float)
    d = domain.astype(float)
    if contiguous:
        return np.clip(np.floor(x + 0.5), d[0], d[-1]).astype(domain.dtype)
    right = np.clip(np.searchsorted(d, x), 1, d.size - 1)
    left = right - 1
    pick = np.where(np.abs(x - d[left]) <= np.abs(d[right] - x), left, right)
    return domain[pick]


# --------------------------------------------------------------------------------------------
# Validation (parameters and the public shape only; before anything is drawn or charged)
# --------------------------------------------------------------------------------------------
def _table_shape(shape: tuple, mechanism: str) -> tuple[int, int]:
    if len(shape) != 2:
        raise ValueError(f"{mechanism!r} runs on a table of attributes, got shape {shape}")
    n, m = (int(s) for s in shape)
    if m < 2:
        raise ValueError(f"{mechanism!r} needs at least 2 attributes, the table has {m}")
    return n, m


def _attributes(p: dict, n_columns: int) -> tuple[str, ...] | None:
    attrs = p.pop("attributes", None)
    if attrs is None:
        return None
    if isinstance(attrs, str) or not isinstance(attrs, Sequence | np.ndarray):
        raise ValueError(f"attributes must be a list of column names (or None for all), got "
                         f"{attrs!r}")
    attrs = tuple(attrs)
    if not all(isinstance(a, str) and a for a in attrs):
        raise ValueError(f"attributes must be column names (strings), got {list(attrs)!r}")
    if len(set(attrs)) != len(attrs):
        raise ValueError(f"attributes must be distinct, got {list(attrs)!r}")
    if not 2 <= len(attrs) <= n_columns:
        raise ValueError(f"attributes must name between 2 and {n_columns} columns (the table "
                         f"has {n_columns}), got {len(attrs)}")
    # A set of columns: the release takes them in the dataset's order, so the order given
    # does not matter (nor enter the cache key).
    return tuple(sorted(attrs))


def _domains(p: dict, attrs: tuple[str, ...] | None) -> dict | None:
    domains = p.pop("domains", None)
    if domains is None:
        return None
    if not isinstance(domains, Mapping) or not domains:
        raise ValueError(f"domains must be a mapping column -> domain (or None: read from the "
                         f"data, not DP), got {domains!r}")
    if not all(isinstance(c, str) for c in domains):
        raise ValueError("domains must be keyed by column name (str)")
    if attrs is not None:
        missing = [a for a in attrs if a not in domains]
        if missing:
            raise ValueError(f"domains must declare every attribute; missing {missing}")
        # The table's declared domains may list more columns: only the attributes' count
        # (and enter the cache key).
        domains = {a: domains[a] for a in attrs}
    return {c: _canonical_domain(spec, c) for c, spec in domains.items()}


def _size(canonical: dict) -> int:
    if "values" in canonical:
        return int(np.asarray(canonical["values"]).size)
    return int(canonical["max"]) - int(canonical["min"]) + 1


def _n_rows(p: dict) -> int | None:
    n_rows = p.pop("n_rows", None)
    if n_rows is None:
        return None
    n_rows = check_positive_int(n_rows, "n_rows", minimum=0)
    if n_rows > MAX_ROWS:
        raise ValueError(f"n_rows must be at most {MAX_ROWS:,}, got {n_rows:,}")
    return n_rows


def _publisher(p: dict, default: str) -> str:
    from ...engine.histograms import PUBLISHERS

    name = p.pop("publisher", default)
    if not isinstance(name, str) or name not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {name!r}")
    if 1 not in PUBLISHERS[name].dims:
        raise ValueError(f"publisher {name!r} does not publish 1-D histograms")
    return PUBLISHERS[name].name


def _margin_fit(p: dict) -> str:
    fit = p.pop("margin_fit", "project")
    if fit not in _engine().MARGIN_FITS:
        raise ValueError(f"margin_fit must be one of {sorted(_engine().MARGIN_FITS)}, got {fit!r}")
    return fit


def _optional_int(p: dict, name: str, minimum: int) -> int | None:
    value = p.pop(name, None)
    return None if value is None else check_positive_int(value, name, minimum=minimum)


def _unknown(p: dict, mechanism: str) -> None:
    if p:
        raise ValueError(f"unknown parameter(s) for {mechanism!r}: {sorted(p)}")


def _common(params: dict, shape: tuple, mechanism: str) -> tuple[dict, dict]:
    """Check what every synthetic-data mechanism takes; returns (the rest, canonical dict)."""
    p = dict(params)
    _, m = _table_shape(tuple(shape), mechanism)
    out: dict = {"epsilon": check_epsilon(p.pop("epsilon"))}
    out["attributes"] = _attributes(p, m)
    columns = getattr(shape, "columns", None)
    unknown = [a for a in out["attributes"] or () if columns is not None and a not in columns]
    if unknown:
        raise ValueError(f"attributes {unknown} are not columns of this dataset; its (public) "
                         f"columns are {list(columns)}")
    out["domains"] = _domains(p, out["attributes"])
    if out["attributes"] is None and out["domains"] is not None and len(out["domains"]) != m:
        raise ValueError(f"domains must declare every one of the table's {m} columns when "
                         f"attributes= is not given (it declares {len(out['domains'])})")
    out["n_rows"] = _n_rows(p)
    return p, out


def _dpcopula_validate(params: dict, shape: tuple) -> dict:
    p, out = _common(params, shape, "dpcopula")
    method = p.pop("method", "kendall")
    if method not in _engine().METHODS:
        raise ValueError(f"method must be one of {sorted(_engine().METHODS)}, got {method!r}")
    out["method"] = method
    out["k"] = check_positive(p.pop("k", 8.0), "k (= eps1/eps2)")
    # Both parts of the split must be budgets the engine accepts (eps2 = eps / (1 + k)).
    for part, share in (("eps1", out["k"] / (1.0 + out["k"])), ("eps2", 1.0 / (1.0 + out["k"]))):
        check_epsilon(out["epsilon"] * share, f"{part} = epsilon * split by k")
    out["publisher"] = _publisher(p, "dawa")
    threshold = p.pop("hybrid_threshold", 10)
    out["hybrid_threshold"] = (None if threshold is None
                               else check_positive_int(threshold, "hybrid_threshold", minimum=2))
    rule = p.get("sample_size")
    if isinstance(rule, str):
        if rule not in _engine().SAMPLE_RULES:
            raise ValueError(f"sample_size must be an integer >= 2 or one of "
                             f"{list(_engine().SAMPLE_RULES)}, got {rule!r}")
        out["sample_size"] = p.pop("sample_size")
    else:
        out["sample_size"] = _optional_int(p, "sample_size", 2)
    support = p.pop("hybrid_min_support", _engine().HYBRID_MIN_SUPPORT)
    if isinstance(support, bool) or not isinstance(support, Real) or not (
        math.isfinite(support) and support >= 0
    ):
        raise ValueError(f"hybrid_min_support must be a finite number >= 0, got {support!r}")
    out["hybrid_min_support"] = float(support)
    out["mle_partitions"] = _optional_int(p, "mle_partitions", 1)
    out["max_partitions"] = check_positive_int(p.pop("max_partitions", 8), "max_partitions",
                                               maximum=_engine().MAX_PARTITIONS)
    if out["mle_partitions"] is not None and out["mle_partitions"] > _engine().MAX_PARTITIONS:
        raise ValueError(f"mle_partitions must be at most {_engine().MAX_PARTITIONS}, got "
                         f"{out['mle_partitions']}")
    out["margin_fit"] = _margin_fit(p)
    _unknown(p, "dpcopula")
    return out


def _independent_validate(params: dict, shape: tuple) -> dict:
    p, out = _common(params, shape, "independent_synth")
    out.update(publisher=_publisher(p, "dawa"), margin_fit=_margin_fit(p))
    _unknown(p, "independent_synth")
    return out


def _laplace_validate(params: dict, shape: tuple) -> dict:
    p, out = _common(params, shape, "laplace_histogram_synth")
    out.update(publisher=_publisher(p, "identity"),
               max_cells=check_positive_int(p.pop("max_cells", 10**7), "max_cells",
                                            maximum=_engine().MAX_CELLS),
               margin_fit=_margin_fit(p))
    _unknown(p, "laplace_histogram_synth")
    if out["domains"] is not None:
        cells = math.prod(_size(d) for d in out["domains"].values())
        if cells > out["max_cells"]:
            raise ValueError(
                f"the full domain has {cells:.3g} cells, more than max_cells={out['max_cells']}:"
                f" the full-histogram baseline only runs where the histogram fits in memory "
                f"(this is why DPCopula exists, Li 2017, §3.1.2)")
    return out


def _peer_validate(params: dict, shape: tuple) -> dict:
    p, out = _common(params, shape, "peer_synth")
    method = p.pop("method", "mst")
    if method not in ("aim", "mst"):
        raise ValueError(f"method must be 'aim' or 'mst', got {method!r}")
    out["method"] = method
    _unknown(p, "peer_synth")
    if not peers_available():
        raise ValueError(f"AIM and MST need OpenDP with its mbi extra, not installed here: "
                         f"{PEER_INSTALL}")
    return out


# --------------------------------------------------------------------------------------------
# Running the engine
# --------------------------------------------------------------------------------------------
def _select(frame: pd.DataFrame, p: dict) -> tuple[pd.DataFrame, dict | None]:
    """The attributes' columns (clamped to the declared domains) and the engine's domains."""
    attrs = p["attributes"]
    columns = [str(c) for c in frame.columns]
    if attrs is None:
        attrs = tuple(columns)
    unknown = [a for a in attrs if a not in columns]
    if unknown:
        raise ValueError(f"attributes {unknown} are not columns of this dataset; its (public) "
                         f"columns are {columns}")
    attrs = [c for c in columns if c in attrs]  # the dataset's order
    domains = p["domains"]
    if domains is not None:
        missing = [a for a in attrs if a not in domains]
        if missing:
            raise ValueError(f"domains must declare every attribute; missing {missing}")
    if domains is None:
        return frame.loc[:, attrs].copy(), None
    import pandas as pd

    dtypes = [frame[col].dtype for col in attrs]
    # One numpy dtype (the common case): the clamped columns go straight into one block.
    block = (np.empty((len(frame), len(attrs)), dtype=dtypes[0], order="F")
             if all(isinstance(d, np.dtype) and d == dtypes[0] for d in dtypes) else None)
    clamped, engine_domains = {}, {}
    for j, (col, dtype) in enumerate(zip(attrs, dtypes, strict=True)):
        values = domain_values(domains[col])
        if dtype.kind in "iub" and values.dtype.kind == "f":
            raise ValueError(f"domains[{col!r}] lists non-integer values but the column's dtype "
                             f"is {dtype}")
        column = clamp_to_domain(frame[col].to_numpy(), values)
        if block is not None:
            block[:, j] = column
        else:
            clamped[col] = column.astype(dtype)
        engine_domains[col] = _engine_domain(domains[col])
    table = (pd.DataFrame(block, columns=attrs, copy=False) if block is not None
             else pd.DataFrame(clamped, columns=attrs))
    return table, engine_domains


#: Concordance counts of the public tables DPCopula ran on (teaching tables, stand-ins), kept
#: between releases: Kendall's tau then costs the rows left out of its sample, not a count of
#: the whole sample (the release is the same; see the engine's ConcordanceMemo).
PUBLIC_CONCORDANCE = None


def _public_concordance():
    """The memo of concordance counts for a run on public data, ``None`` for confidential data.

    The session runs an analyst release on the confidential data inside
    :func:`~dpwidgets.engine.mechanisms.floating_point_safe`, and nothing else there: a
    teaching run (public data) and a preview (the public stand-in) run outside it. So a run
    outside it may use (and fill) the memo; a sealed run neither reads nor writes it, and
    leaves no statistic of the confidential table behind.
    """
    global PUBLIC_CONCORDANCE
    from ...engine.mechanisms import is_floating_point_safe

    if is_floating_point_safe():
        return None
    if PUBLIC_CONCORDANCE is None:
        PUBLIC_CONCORDANCE = _engine().ConcordanceMemo()
    return PUBLIC_CONCORDANCE


def _run_dpcopula(frame: pd.DataFrame, p: dict, rng: np.random.Generator):
    table, domains = _select(frame, p)
    return _engine().dpcopula(
        table, p["epsilon"], method=p["method"], k=p["k"], domains=domains,
        publisher=p["publisher"], hybrid_threshold=p["hybrid_threshold"], n_rows=p["n_rows"],
        sample_size=p["sample_size"], mle_partitions=p["mle_partitions"],
        max_partitions=p["max_partitions"], margin_fit=p["margin_fit"],
        hybrid_min_support=p["hybrid_min_support"], rng=rng,
        concordance=_public_concordance(),
    )


def _run_independent(frame: pd.DataFrame, p: dict, rng: np.random.Generator):
    table, domains = _select(frame, p)
    return _engine().independent_synth(
        table, p["epsilon"], domains=domains, publisher=p["publisher"], n_rows=p["n_rows"],
        margin_fit=p["margin_fit"], rng=rng,
    )


def _run_laplace(frame: pd.DataFrame, p: dict, rng: np.random.Generator):
    table, domains = _select(frame, p)
    return _engine().laplace_histogram_synth(
        table, p["epsilon"], domains=domains, rng=rng, publisher=p["publisher"],
        max_cells=p["max_cells"], n_rows=p["n_rows"], margin_fit=p["margin_fit"],
    )


def _run_peer(frame: pd.DataFrame, p: dict, rng: np.random.Generator):
    table, domains = _select(frame, p)
    return _engine().peer_synth(table, p["epsilon"], method=p["method"], domains=domains,
                                rng=rng, n_rows=p["n_rows"])


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------
def _compact(values: np.ndarray) -> np.ndarray:
    """The smallest integer dtype that holds ``values`` (floats and bools as they are)."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu" or values.size == 0:
        return values.copy()
    return values.astype(np.result_type(np.min_scalar_type(int(values.min())),
                                        np.min_scalar_type(int(values.max()))))


def synth_outputs(result, p: dict | None = None) -> dict:
    """The DP output of a :class:`~dpwidgets.engine.synth.SynthResult`, and nothing else.

    Returns the dict (``p``, the validated parameters, is unused: the spec's ``outputs``
    signature):

        ``columns`` (list of str), ``dtypes`` (the dataset's dtypes, for
        :func:`synthetic_frame`), ``data`` (column -> array: the synthetic records, in the
        smallest integer dtype that holds them), ``n_rows``, ``method``, ``epsilon``,
        ``epsilon_parts``, ``guarantee``, ``neighbours``, ``margins`` (column -> DP
        distribution over the domain), ``domains`` (column -> the public domain values),
        ``correlation`` (the DP correlation matrix or ``None``), ``correlation_columns``,
        ``partition_correlations`` (hybrid: a list of ``{"key": [...], "correlation": ...}``)
        and ``details`` (public settings and DP-derived numbers only).

    Notes
    -----
    Everything here is a DP output or a function of the parameters and DP outputs
    (post-processing): the synthetic records are sampled from the DP margins and DP
    correlation; the noisy record count, the Kendall sample size (``min`` of the public rule
    and the DP count) and the partition sizes are noisy. No true count, margin or correlation
    is in the engine's result.
    """
    data = result.data
    details = {k: _plain(v) for k, v in result.details.items() if k in _PUBLIC_DETAILS}
    partitions = [
        {"key": [_plain(v) for v in key],
         "correlation": None if corr is None else np.asarray(corr, dtype=float).copy()}
        for key, corr in result.details.get("partition_correlations", {}).items()
    ]
    return {
        "columns": [str(c) for c in data.columns],
        "dtypes": [str(t) for t in data.dtypes],
        "data": {str(c): _compact(data[c].to_numpy()) for c in data.columns},
        "n_rows": int(len(data)),
        "method": str(result.method),
        "epsilon": float(result.epsilon),
        "epsilon_parts": {k: float(v) for k, v in result.epsilon_parts.items()},
        "guarantee": str(result.guarantee),
        "neighbours": str(result.neighbours),
        "margins": {str(c): np.asarray(v, dtype=float).copy() for c, v in result.margins.items()},
        "domains": {str(c): np.asarray(v).copy() for c, v in result.domains.items()},
        "correlation": (None if result.correlation is None
                        else np.asarray(result.correlation, dtype=float).copy()),
        "correlation_columns": [str(c) for c in result.correlation_columns],
        "partition_correlations": partitions,
        "details": details,
    }


def synthetic_frame(output: dict) -> pd.DataFrame:
    """The synthetic records of a synthetic-data release as a DataFrame with the dataset's
    column names and dtypes (post-processing of the DP output)."""
    import pandas as pd

    columns = list(output["columns"])
    dtypes = list(output.get("dtypes") or ["float64"] * len(columns))
    return pd.DataFrame(
        {c: np.asarray(output["data"][c]).astype(t) for c, t in zip(columns, dtypes, strict=True)},
        columns=columns,
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
    """
    import pandas as pd
    from scipy import special

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


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------
def _declared(p: dict) -> bool:
    """DP only with declared (public) domains and a DP margin publisher; analyst mode refuses
    the rest."""
    return p["domains"] is not None and publisher_is_private(p)


def _what(p: dict) -> str:
    attrs = p["attributes"]
    which = f"{len(attrs)} attributes" if attrs is not None else "all attributes"
    note = "" if p["domains"] is not None else "; domains read from the data: NOT DP"
    rows = "" if p["n_rows"] is None else f", {p['n_rows']:,} rows"
    return f"{which}{rows}{note}"


def _dpcopula_label(p: dict) -> str:
    algo = "Alg. 4-5" if p["method"] == "kendall" else "Alg. 1-2"
    hybrid = (f", hybrid < {p['hybrid_threshold']} values (Alg. 6)"
              if p["hybrid_threshold"] is not None else "")
    return (f"DPCopula-{'Kendall' if p['method'] == 'kendall' else 'MLE'} (Li 2017, {algo}): "
            f"k = ε1/ε2 = {p['k']:.3g}, {p['publisher']} margins{hybrid}, {_what(p)}")


def _table_mechanism(name: str, validate, run, label) -> Mechanism:
    """A mechanism on a DataFrame of named attributes: the output of :func:`synth_outputs`,
    DP only with declared domains and a DP publisher (:func:`_declared`)."""
    return Mechanism(name, validate, run, synth_outputs, label, table=True, frame=True,
                     private=_declared)


SYNTH_MECHANISMS: dict[str, Mechanism] = {
    "dpcopula": _table_mechanism("dpcopula", _dpcopula_validate, _run_dpcopula, _dpcopula_label),
    "independent_synth": _table_mechanism(
        "independent_synth", _independent_validate, _run_independent,
        lambda p: f"independent DP margins, no dependence ({p['publisher']}): {_what(p)}"),
    "laplace_histogram_synth": _table_mechanism(
        "laplace_histogram_synth", _laplace_validate, _run_laplace,
        lambda p: f"Laplace on the full-domain histogram ({p['publisher']}): {_what(p)}"),
    "peer_synth": _table_mechanism(
        "peer_synth", _peer_validate, _run_peer,
        lambda p: f"{p['method'].upper()} (OpenDP mbi): {_what(p)}"),
}
"""The synthetic-data mechanisms, by session name (all registered on import)."""

for _mechanism in SYNTH_MECHANISMS.values():
    register_mechanism(_mechanism)
