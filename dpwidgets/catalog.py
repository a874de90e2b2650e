"""The datasets a door holds: the data, its public stand-in and schema, and what its owner declared.

Everything here is the *data owner's* side of the door: :func:`entry` checks what the owner hands
over (finite values, a stand-in of the public shape, declared facts that hold for the data) and
records the public facts about it -- the privacy unit, the facts mechanisms rely on, which
third-party mechanisms the owner allows -- together with a content :func:`fingerprint` that the
ledger keys the budget by. :func:`apply_facts` is the analyst's side: it fills the declared facts
into a request and refuses a request that would claim less than the owner declared.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .engine._results import eps_text
from .engine.errors import ParameterError, PrivacyPolicyError, ReleaseRefused
from .engine.validation import EPSILON_MAX, check_finite_array, check_positive_int
from .mechanism import MECHANISMS, Mechanism, PublicShape, is_builtin
from .persistence import default_ledger_path

__all__ = ["FAILED", "UNITS", "Entry", "apply_facts", "decide", "check_allowed", "check_facts",
           "entry", "fingerprint", "guarantee", "ledger_path", "table_stand_in"]

_SAFE_NOISE = (
    "discrete Laplace on a power-of-two grid (Canonne, Kamath & Steinke 2020; Mironov 2012), "
    "calibrated to exactly ε; real values rounded to the grid first"
)
#: The message of a release that failed on confidential data (fixed: it says nothing of them).
FAILED = (
    "the mechanism failed while running on the confidential data. What it said is withheld "
    "(it may depend on the data); the release's cost stays charged, because the failure itself "
    "depends on the data. Check the parameters against the dataset's declared facts."
)
_FAILED = FAILED  # its earlier, private name

#: Privacy units a data owner may declare: ``"row"`` (a guarantee protects one row; a person
#: with many rows is protected less) or ``"person"`` (the owner declares one row per person).
UNITS = ("row", "person")


@dataclass
class Entry:
    """One dataset held by a door (its ``ledger_name`` is set once its ledger is open).

    ``data`` is the array itself, or ``None`` for data that lives elsewhere (a curator's view of
    a table): then ``load()`` runs the query when a release needs it, and ``shape`` is the
    public shape declared for it. ``unit_rows`` is how many rows of ``data`` one person may
    change (1 unless the owner bounded a privacy unit's contributions to more)."""

    name: str
    data: np.ndarray | None
    stand_in: np.ndarray
    fingerprint: str
    description: str = ""
    columns: tuple[str, ...] | None = None  # a DataFrame's public schema
    dtypes: tuple[str, ...] | None = None
    unit: str = "row"
    facts: dict = field(default_factory=dict)
    allowed: frozenset = frozenset()
    ledger_name: str = ""
    unit_rows: int = 1
    load: Callable[[], np.ndarray] | None = None
    domains: dict | None = None  # declared attribute domains of a table's columns
    budget: str = ""  # the budget it is charged to, if not its own (a view of a table)
    ledger_fingerprint: str | None = None  # the table's content, for the budget's aliases
    ranges: tuple | None = None  # per column of a table, its declared (low, high) or None
    shape: tuple[int, ...] = ()
    query: Callable[[], Any] | None = None  # a rows view left in its query engine (pushdown)

    def __post_init__(self):
        if not self.shape:
            self.shape = tuple(int(k) for k in self.data.shape)

    def values(self) -> np.ndarray:
        """The confidential data (running the owner's query for data that lives elsewhere)."""
        return self.data if self.data is not None else self.load()

    def input_for(self, mech: Mechanism):
        """What ``mech.run`` reads on the data: for a :attr:`Mechanism.pushdown` mechanism on
        data that lives elsewhere, the query itself (it asks for aggregates, never the rows);
        otherwise :meth:`values_for` the data."""
        if self.data is None and self.query is not None and mech.pushdown:
            return self.query()
        return self.values_for(mech, self.values())

    def frame(self, values: np.ndarray):
        """``values`` (the data or its stand-in) as a DataFrame with the public schema."""
        import pandas as pd

        pairs = enumerate(zip(self.columns, self.dtypes, strict=True))
        return pd.DataFrame({c: values[:, j].astype(t) for j, (c, t) in pairs})

    def values_for(self, mech: Mechanism, values: np.ndarray):
        """What ``mech.run`` gets: the array, or for ``frame`` mechanisms the DataFrame."""
        return self.frame(values) if mech.frame else values


def fingerprint(data: np.ndarray) -> str:
    """A content fingerprint of a dataset that ignores the order of its rows.

    The ledger keys a budget by it as well as by name, so the same data added under another
    name, or shuffled, is charged against one budget. Sorting merges only datasets with the same
    multiset of rows, which can only share a budget that would otherwise be split.
    """
    values = np.ascontiguousarray(data, dtype=float)
    rows = np.sort(values) if values.ndim == 1 else values[np.lexsort(values.T[::-1])]
    digest = hashlib.sha256(str(values.shape).encode())
    digest.update(np.ascontiguousarray(rows).tobytes())
    return digest.hexdigest()


def ledger_path(mode: str, ledger) -> str:
    """Resolve the ledger file once; teaching ledgers live in memory, analyst ones never do."""
    if mode == "teaching":
        if ledger not in (None, ":memory:"):
            raise ValueError(
                "ledger: a teaching session keeps its ledger in memory (its data is public, and "
                "its runs past the cap must never reach a ledger an analyst session uses); "
                "pass no ledger= or use mode='analyst'"
            )
        return ":memory:"
    raw = ledger
    if raw is None:
        # The variable is read here, raw, so that ":memory:" in it cannot pass as a file name.
        raw = os.environ.get("DPWIDGETS_LEDGER") or default_ledger_path()
    if not isinstance(raw, str | os.PathLike):
        raise TypeError(f"ledger must be a path to a file, got {type(raw).__name__}")
    text = os.fspath(raw)
    if text.startswith(("postgresql://", "postgres://")):
        return text  # a ledger shared by several curator replicas
    if not text.strip() or text.strip() == ":memory:" or text.startswith("file:"):
        raise ValueError(
            "ledger: an analyst session needs a ledger file (a path), not an in-memory "
            "database or a URI: its budget must outlive the process"
        )
    return str(Path(text).expanduser().resolve())


def _frame_schema(frame, name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The public schema (column names, dtypes) of a DataFrame of numeric columns."""
    import pandas as pd

    bad = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise ValueError(
            f"{name}: columns {bad} are not numeric; integer-code them first (e.g. "
            f"frame[col].astype('category').cat.codes) and declare the coding"
        )
    if frame.shape[1] < 2:
        raise ValueError(f"{name}: a DataFrame dataset needs at least 2 columns")
    return tuple(str(c) for c in frame.columns), tuple(str(t) for t in frame.dtypes)


def _is_frame(value) -> bool:
    return hasattr(value, "columns") and hasattr(value, "to_numpy")


def default_stand_in(n: int, total: int | None = None) -> np.ndarray:
    """A public stand-in that depends on nothing but public facts: a Zipf(1) profile of ``n``
    scores (Lyu, Su & Li 2017, §6), in a fixed shuffled order, over ``total`` records -- the
    public total the data owner declared (:meth:`~dpwidgets.session.Session.add_table`'s
    ``totals=``), which the scores then sum to exactly -- or, undeclared, over about
    1,000,000 records."""
    weights = 1.0 / np.arange(1, n + 1)
    if total is None:
        scores = np.round(weights / weights.sum() * 1_000_000)
    else:
        scores = _apportion(weights, total)
    return np.random.default_rng(0).permutation(scores)


def table_stand_in(n: int, n_features: int = 1, outcome: str = "continuous") -> np.ndarray:
    """A public stand-in table (n, n_features + 1) that depends on nothing but the public shape.

    ``"continuous"``: Chen 2018, §4.2.3's Ideal scenario, ``x ~ U[1, 50]`` per feature and
    ``y = mean(x) + N(0, 1)`` -- a well-specified linear model. ``"binary"``: Chen 2018, §4.4.3's M1,
    ``x ~ U[-1, 1]`` per feature and ``logit P(y = 1) = 2·mean(x)``. Seeded (0): a preview on it
    is reproducible and says nothing about any confidential table.
    """
    n = check_positive_int(n, "n")
    n_features = check_positive_int(n_features, "n_features")
    rng = np.random.default_rng(0)
    if outcome == "continuous":
        X = rng.uniform(1.0, 50.0, (n, n_features))
        y = X.mean(axis=1) + rng.normal(0.0, 1.0, n)
    elif outcome == "binary":
        X = rng.uniform(-1.0, 1.0, (n, n_features))
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-2.0 * X.mean(axis=1)))).astype(float)
    else:
        raise ValueError(f"outcome must be 'continuous' or 'binary', got {outcome!r}")
    return np.column_stack((X, y))


def _apportion(weights: np.ndarray, total: int) -> np.ndarray:
    """Whole counts proportional to ``weights`` that sum to ``total`` exactly (largest
    remainders; ties to the first cell)."""
    share = weights / weights.sum() * total
    counts = np.floor(share)
    short = int(total - counts.sum())
    if short > 0:
        counts[np.argsort(counts - share, kind="stable")[:short]] += 1
    return counts


def _stand_in(shape: tuple[int, ...], stand_in) -> np.ndarray:
    if isinstance(stand_in, str):
        if len(shape) != 2:
            raise ValueError("stand_in='continuous'/'binary' is for tables (2-D data)")
        stand_in = table_stand_in(shape[0], shape[1] - 1, stand_in)
    elif stand_in is None:
        if len(shape) == 2:
            raise ValueError(
                f"a table needs a public stand_in of its shape {shape}: pass an array, or "
                f"stand_in='continuous' / 'binary' for a synthetic one (table_stand_in)"
            )
        stand_in = default_stand_in(shape[0])
    else:
        stand_in = check_finite_array(stand_in, "stand_in", ndim=None)
        if stand_in.shape != shape:
            raise ValueError(
                f"stand_in must have the dataset's public shape {shape}, got {stand_in.shape}"
            )
    stand_in.setflags(write=False)
    return stand_in


def check_facts(facts: Mapping[str, Any] | None, data: np.ndarray | None = None) -> dict:
    """The owner's declared facts, checked when declared: each name must be a fact some
    registered mechanism relies on (the error lists the known ones), each value of that fact's
    type (:class:`~dpwidgets.mechanism.FactKind`: ``"false"`` is not a bool, ``-1`` not a
    sensitivity); with ``data``, each must hold for it (``Fact.check``). Returns the canonical
    values. :func:`entry` and :func:`dpwidgets.tables.view_entries` (``add_table`` views and a
    curator's configuration) both go through it."""
    if facts is None:
        return {}
    if not isinstance(facts, Mapping):
        raise ValueError(f"facts must be a mapping name -> value, got {type(facts).__name__}")
    known = {n for m in MECHANISMS.values() for n in m.facts}
    out = {}
    for name, value in facts.items():
        if not isinstance(name, str) or name not in known:
            raise ValueError(f"facts: unknown fact {name!r}; known: {sorted(known)}")
        declaring = [m.facts[name] for m in MECHANISMS.values() if name in m.facts]
        for fact in declaring:  # every mechanism that relies on it must accept the value
            value = fact.parse(name, value)
        out[name] = value
        if data is None:
            continue
        for fact in declaring:
            # The owner sees a false declaration before any analyst can run on it; the message
            # names the fact, not the data.
            if fact.check is not None and not fact.check(data, value):
                raise ValueError(f"facts: the declared {name!r} does not hold for this data")
    return out


def check_allowed(allow_mechanisms) -> frozenset:
    """``allow_mechanisms`` as a set of mechanism names: an iterable of non-empty strings (a
    string itself is refused: ``"svt"`` is not ``{"s", "v", "t"}``)."""
    if isinstance(allow_mechanisms, str | bytes) or isinstance(allow_mechanisms, Mapping):
        raise ValueError(f"allow_mechanisms must be a list of mechanism names, not "
                         f"{type(allow_mechanisms).__name__} {allow_mechanisms!r}")
    try:
        names = list(allow_mechanisms)
    except TypeError:
        raise ValueError(f"allow_mechanisms must be a list of mechanism names, got "
                         f"{type(allow_mechanisms).__name__}") from None
    bad = [m for m in names if not isinstance(m, str) or not m.strip()]
    if bad:
        raise ValueError(f"allow_mechanisms must be mechanism names (non-empty str), got "
                         f"{bad[:3]!r}")
    return frozenset(names)


def check_description(description) -> str:
    """A dataset's description: a string."""
    if not isinstance(description, str):
        raise ValueError(f"description must be a string, got {type(description).__name__}")
    return description


def entry(name: str, data, stand_in, description: str, unit: str,
          facts: Mapping[str, Any] | None, allow_mechanisms: Iterable[str]) -> Entry:
    """Check what a data owner hands over and record it (see :meth:`Session.add_dataset`)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if not isinstance(unit, str) or unit not in UNITS:
        raise ValueError(f"privacy_unit must be one of {UNITS}, got {unit!r}")
    check_description(description)
    allowed = check_allowed(allow_mechanisms)
    columns = dtypes = None
    if _is_frame(data):
        columns, dtypes = _frame_schema(data, "data")
        if _is_frame(stand_in):
            if _frame_schema(stand_in, "stand_in") != (columns, dtypes):
                raise ValueError("stand_in must have the data's columns and dtypes")
            stand_in = stand_in.to_numpy(dtype=float)
        data = data.to_numpy(dtype=float)
    data = check_finite_array(data, "data", ndim=None)
    if data.ndim not in (1, 2) or (data.ndim == 2 and data.shape[1] < 2):
        raise ValueError(
            f"data must be 1-D, or a 2-D table of at least 2 columns; got shape {data.shape}"
        )
    data.setflags(write=False)
    return Entry(
        name, data, _stand_in(data.shape, stand_in), fingerprint(data), description, columns,
        dtypes, unit, check_facts(facts, data), allowed,
    )


def apply_facts(held: Entry, mech: Mechanism, params: dict, *, teaching: bool) -> dict:
    """Fill the owner's declared facts into a request; in analyst mode refuse a request that
    claims less than they say (a smaller sensitivity, monotonic answers not declared, ...).
    A table's declared attribute domains fill a synthetic-data request's ``domains``."""
    if mech.frame and held.domains is not None:
        params.setdefault("domains", held.domains)
    for name, fact in mech.facts.items():
        declared = held.facts.get(name)
        if params.get(name) is None:  # not given (``None`` too): the declared value, if any
            params.pop(name, None)
            if declared is not None:
                params[name] = declared
            continue
        try:  # an analyst's value is of the fact's type, in every mode ("false" is no bool)
            params[name] = fact.parse(name, params[name])
        except ValueError as exc:
            raise ParameterError(f"{exc}. Nothing was charged.") from None
        if teaching:
            continue
        floor = fact.default if declared is None else declared
        try:
            ok = floor is not None and fact.allows(floor, params[name])
        except (TypeError, ValueError):
            ok = False
        if not ok:
            if floor is None:
                known = "the data owner has not declared it"
            else:
                source = "declared by the data owner" if declared is not None else "assumed"
                known = f"{source}: {floor!r}"
            raise PrivacyPolicyError(
                f"{name} is a fact about the data ({known}); a release cannot claim "
                f"{params[name]!r}. Omit {name}= to use the declared value, or ask the data "
                f"owner to declare it (add_dataset(..., facts={{{name!r}: ...}})). Nothing "
                f"was charged."
            )
    return params


def guarantee(ds: Entry, mech: Mechanism, p: dict, cost: float, *, sealed: bool = False) -> str:
    """A release's guarantee in words: ε, the unit it protects, the neighbour relation and the
    sampler (``sealed``: the floating-point-safe one of analyst releases)."""
    k = ds.unit_rows
    group = (f"; user-level: a person has at most {k} rows (bounded before the query; rows "
             f"with a NULL person id are dropped), so {k}x the per-row ε (group privacy)"
             ) if k > 1 else ""
    if mech.guarantee is not None:
        return mech.guarantee(p) + group
    unit = "person (one row per person, as declared)" if ds.unit == "person" else "row"
    unit = (f"person (user-level; {eps_text(cost / k)}-DP per row, {k} rows at most; rows "
            f"with a NULL person id dropped)") if k > 1 else unit
    noise = (_SAFE_NOISE if sealed else
             "continuous Laplace (fast; not floating-point safe: teaching and previews)")
    relation = mech.neighbours(p) if callable(mech.neighbours) else mech.neighbours
    return f"ε = {eps_text(cost)}-DP per {unit}; neighbours: {relation}; noise: {noise}"


def decide(ds: Entry, mechanism: str, params: dict, *, teaching: bool, release: bool
           ) -> tuple[Mechanism, dict, float]:
    """Everything a door decides about a request before the data is read: the mechanism,
    the canonical parameters (the owner's facts applied) and the exact cost (group privacy
    over a unit's rows). Refuses, with a :class:`~dpwidgets.engine.errors.ReleaseRefused`, an
    unknown mechanism, a parameter that is wrong or missing, a mechanism on data of the wrong
    shape, and (``release`` in analyst mode) a mechanism the owner did not allow or one that is
    not differentially private. Reads nothing but the entry's public declarations."""
    mech = MECHANISMS.get(mechanism) if isinstance(mechanism, str) else None
    if mech is None:
        raise ParameterError(f"mechanism must be one of {sorted(MECHANISMS)}, got {mechanism!r}")
    if "epsilon" not in params:
        raise ParameterError(f"{mechanism!r} needs epsilon=")
    if mech.frame and ds.columns is None:
        raise ParameterError(
            f"{mechanism!r} runs on a table of named attributes: add the dataset as a "
            f"pandas DataFrame"
        )
    if mech.table != (len(ds.shape) == 2):
        need = "a table (a 2-D dataset)" if mech.table else "a 1-D array"
        raise ParameterError(f"{mechanism!r} runs on {need}; this dataset has shape "
                             f"{ds.shape}")
    if (release and not teaching and not is_builtin(mech.name)
            and mech.name not in ds.allowed):
        raise PrivacyPolicyError(
            f"{mech.name!r} was registered outside dpwidgets: its privacy claim is its "
            f"author's. The data owner must allow it (add_dataset(..., "
            f"allow_mechanisms=[{mech.name!r}])). Nothing was charged."
        )
    params = apply_facts(ds, mech, dict(params), teaching=teaching)
    try:
        shape = PublicShape(ds.shape, ds.columns, ds.dtypes, ds.ranges)
        p = mech.validate(params, shape if mech.table else shape[0])
        private = bool(mech.private(p))
        cost = float(mech.cost(p)) * ds.unit_rows  # group privacy over a unit's rows
    except ReleaseRefused:
        raise
    except KeyError as exc:  # a spec reads a required parameter that was not given
        missing = exc.args[0] if exc.args else "?"
        raise ParameterError(f"{mech.name!r} needs the parameter {missing}= (it has no "
                             f"default). Nothing was charged.") from None
    except (ValueError, TypeError, ArithmeticError) as exc:  # overflow in a cost, too
        raise ParameterError(str(exc)) from None
    if release and not teaching and not private:
        what = f"variant {p['variant']!r}" if "variant" in p else repr(mech.name)
        raise PrivacyPolicyError(
            f"{what} is not differentially private and is refused in analyst mode; it runs "
            f"only in a teaching session on public data. Nothing was charged."
        )
    if not (math.isfinite(cost) and 0 < cost <= EPSILON_MAX):
        raise ParameterError(
            f"{mech.name!r} would cost {cost!r} (epsilon times the {ds.unit_rows} rows a "
            f"unit may contribute): a cost must be in (0, {EPSILON_MAX:g}]. Nothing was "
            f"charged.")
    return mech, p, cost
