"""Session mechanisms for DP synthetic data (Li 2017, Ch. 3, DPCopula).

A dataset here is a *table of attributes*: a pandas DataFrame of numeric, integer-coded (or
pre-binned) columns added with :meth:`dpwidgets.Session.add_dataset` (the session keeps its
column names and dtypes as a public schema) and a public stand-in of the same schema and size
(:func:`~dpwidgets.families.synth.standins.synth_stand_in` builds one from the public schema
and domains alone).

Mechanisms (``session.release(dataset, name, epsilon=..., attributes=..., domains=..., ...)``):

=============================  ===============================================================  =======
name                           engine (:mod:`dpwidgets.engine.synth`)                           charged
=============================  ===============================================================  =======
``"dpcopula"``                 :func:`~dpwidgets.engine.synth.dpcopula` (Li 2017, Alg. 1-6)     ``ε``
``"independent_synth"``        :func:`~dpwidgets.engine.synth.independent_synth` (DP margins    ``ε``
                               only: the dependence-free baseline)
``"laplace_histogram_synth"``  :func:`~dpwidgets.engine.synth.laplace_histogram_synth`           ``ε``
                               (Laplace on the full-domain histogram, where it fits)
``"peer_synth"``               :func:`~dpwidgets.engine.synth.peer_synth` (AIM / MST from        ``ε``
                               OpenDP's optional ``mbi`` extra)
=============================  ===============================================================  =======

The parameters, their defaults and their checks are in :mod:`dpwidgets.families.synth.params`
(one frozen object per mechanism, :class:`~dpwidgets.families.synth.params.DPCopulaParams`, ...): ``epsilon`` (the
total); ``attributes`` (the columns to synthesise, in the dataset's order; default all);
``domains`` (column -> ``(min, max)`` inclusive integers, an int ``A`` for ``0..A-1``, or a
list of values -- one entry per attribute); ``n_rows`` (the number of synthetic records, a
public choice; default the DP record count); DPCopula's own and the baselines'.

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
shape and schema alone, before any randomness and before the session charges anything; the
attribute names are checked against the public schema there too, and again when the engine
is called (:func:`_select`).

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
Li 2017, Ch. 3 (Alg. 1-6, Lemma 3.2.1, Thms 3.2.1-3.2.4, Table 3.2); McKenna, Miklau & Sheldon
2021 (MST); McKenna, Mullins, Sheldon & Miklau 2022 (AIM).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._moved import moved
from ...mechanism import Mechanism, publisher_is_private, register_mechanism
from ...persistence.store import plain as _plain
from .params import (
    MAX_ROWS,
    PEER_INSTALL,
    DPCopulaParams,
    IndependentSynthParams,
    LaplaceHistogramSynthParams,
    PeerSynthParams,
    _canonical_domain,  # noqa: F401 - a name of the old path (dpwidgets.releases.synth)
    domain_values,
    peers_available,
)

if TYPE_CHECKING:  # pandas is imported when a table is released, not with the package
    import pandas as pd

__all__ = ["MAX_ROWS", "PEER_INSTALL", "SYNTH_MECHANISMS", "clamp_to_domain", "domain_values",
           "peers_available", "synth_outputs", "synthetic_frame"]

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



# --------------------------------------------------------------------------------------------
# Domains: the engine's form, clamping
# --------------------------------------------------------------------------------------------
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


def _table_mechanism(params, run, label) -> Mechanism:
    """A mechanism on a DataFrame of named attributes, its parameters ``params`` (a
    :class:`~dpwidgets.params.Params` class): the output of :func:`synth_outputs`, DP only with
    declared domains and a DP publisher (:func:`_declared`)."""
    return Mechanism(params.mechanism, params.validate, run, synth_outputs, label, table=True,
                     frame=True, private=_declared, params=params)


SYNTH_MECHANISMS: dict[str, Mechanism] = {
    "dpcopula": _table_mechanism(DPCopulaParams, _run_dpcopula, _dpcopula_label),
    "independent_synth": _table_mechanism(
        IndependentSynthParams, _run_independent,
        lambda p: f"independent DP margins, no dependence ({p['publisher']}): {_what(p)}"),
    "laplace_histogram_synth": _table_mechanism(
        LaplaceHistogramSynthParams, _run_laplace,
        lambda p: f"Laplace on the full-domain histogram ({p['publisher']}): {_what(p)}"),
    "peer_synth": _table_mechanism(
        PeerSynthParams, _run_peer,
        lambda p: f"{p['method'].upper()} (OpenDP mbi): {_what(p)}"),
}
"""The synthetic-data mechanisms, by session name (all registered on import)."""

for _mechanism in SYNTH_MECHANISMS.values():
    register_mechanism(_mechanism)


# synth_stand_in lived in the old spec module (dpwidgets.releases.synth, now an alias of this
# one); it is a stand-in generator (standins.py), which loads pandas: not loaded with the door.
__getattr__ = moved("dpwidgets.releases.synth",
                    {"synth_stand_in": ("dpwidgets.families.synth.standins", "synth_stand_in")})
