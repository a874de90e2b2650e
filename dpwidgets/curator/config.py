"""The curator's configuration: the data owner's declarations, read from one TOML file.

Example (every path is relative to the file)::

    [curator]
    ledger = "ledger.sqlite"           # or postgresql://user@host/db for several replicas
    analysts = "analysts.json"         # written by `dpwidgets curator add-analyst`
    audit = "audit.sqlite"
    memory_limit = "2GB"               # DuckDB spills to disk beyond it (bounded queries)
    claim_lease = 600                  # s a release may run before a replica takes it over

    [datasets.visits]
    source = "visits.parquet"          # .parquet, .csv, .duckdb (+ table=), a database URL
    engine = "duckdb"                  # or "pyspark" (DPWIDGETS_SPARK_MASTER names the cluster)
    unit = "person_id"                 # the privacy unit: the column naming a person
    max_rows = 4                       # the most rows one person contributes
    distinct = false                   # true: at most 4 distinct values, each counted once
    total_epsilon = 4.0                # the dataset's cap, over every analyst
    mechanisms = ["top_c", "svt", "pegasus", "laplace_stream"]   # default: every private one
    respond_after = 2.0                # s: release answers leave on multiples of this (timing)
    columns.page = { kind = "int", domain = [0, 49] }
    columns.day = { kind = "int", domain = [0, 89] }
    views.pages = { kind = "counts", columns = ["page"], facts = { monotonic = true } }
    views.daily = { kind = "per_step", columns = ["day"] }

Analysts see each view as a dataset named ``"<dataset>/<view>"``; all views of a dataset share
its budget. Every field is checked by type and range when the file is loaded, and an error
names the field (``datasets.visits.distinct``): a string where a list, a number or a boolean
belongs is refused, never coerced (``mechanisms = "svt"`` is not ``{s, v, t}``, ``distinct =
"false"`` is not true), and unknown keys are refused. The facts a view declares are checked by
the catalog's fact check (through :func:`~dpwidgets.tables.view_entries`) at load time too.

``respond_after`` (seconds, per dataset) is the timing mitigation: a release's running time
depends on the data (one person with very many rows makes the bounding query slower), so the
curator sends a release answer no earlier than ``respond_after`` seconds after the request
arrived, and a run that takes longer is padded up to the next multiple of it; the answer's time
then reveals only which multiple it fell in. Stand-ins are generated from the public schema (never from the data) unless a view
names an ``.npy`` file of the view's public shape in ``stand_in``.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.validation import check_epsilon
from ..mechanism import MECHANISMS, is_builtin
from ..tables import Table, View, generated_stand_in, view_entries

__all__ = ["CuratorConfig", "DatasetConfig", "ViewConfig", "load_config"]

_DATASET_KEYS = {"source", "table", "unit", "max_rows", "total_epsilon", "mechanisms",
                 "columns", "views", "description", "engine", "distinct", "respond_after"}
_VIEW_KEYS = {"kind", "columns", "rows", "facts", "stand_in", "description", "outcome", "total"}
_CURATOR_KEYS = {"ledger", "analysts", "audit", "memory_limit", "claim_lease"}


def _string(value, where: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ValueError(f"{where} must be a {'' if empty else 'non-empty '}string, "
                         f"got {value!r}")
    return value


def _boolean(value, where: str) -> bool:
    if not isinstance(value, bool):  # TOML's true/false only: "false" is a string
        raise ValueError(f"{where} must be true or false (a boolean, unquoted), got {value!r}")
    return value


def _integer(value, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where} must be an integer in [{low}, {high}], got {value!r}")
    return value


def _seconds(value, where: str) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not 0 < value <= 86_400):
        raise ValueError(f"{where} must be a number of seconds in (0, 86400], got {value!r}")
    return float(value)


def _table(value, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a table ({{key = value, ...}}), got {value!r}")
    return value


def _strings(value, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where} must be a list of names ([\"a\", \"b\"]), got {value!r}")
    return value


@dataclass
class ViewConfig:
    """One view of a dataset, as analysts see it (a dataset named ``<dataset>/<view>``)."""

    name: str
    view: View
    facts: dict
    stand_in: np.ndarray
    description: str = ""


@dataclass
class DatasetConfig:
    """One dataset: a :class:`~dpwidgets.tables.Table`, its cap, the mechanisms analysts may
    run on it, and its views."""

    name: str
    table: Table
    total_epsilon: float
    mechanisms: frozenset
    views: dict[str, ViewConfig] = field(default_factory=dict)
    description: str = ""
    respond_after: float | None = None  # s: the timing quantum of release answers (or none)


@dataclass
class CuratorConfig:
    """The whole configuration (see the module docstring), as :func:`load_config` reads
    it (its Examples build one).

    Examples
    --------
    >>> import dataclasses
    >>> from dpwidgets.curator import CuratorConfig
    >>> [f.name for f in dataclasses.fields(CuratorConfig)]
    ['path', 'ledger', 'analysts', 'audit', 'datasets', 'claim_lease']
    """

    path: Path
    ledger: str
    analysts: Path
    audit: Path
    datasets: dict[str, DatasetConfig]
    claim_lease: float | None = None  # None: dpwidgets.curator.door.CLAIM_LEASE

    def view(self, name: str) -> tuple[DatasetConfig, ViewConfig]:
        """The dataset and view behind an analyst-facing name ``"<dataset>/<view>"``."""
        dataset, _, view = name.partition("/")
        ds = self.datasets.get(dataset)
        if ds is None or view not in ds.views:
            raise KeyError(name)
        return ds, ds.views[view]


def _relative(base: Path, value: str) -> str:
    if "://" in value:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _stand_in(table: Table, view: View, spec: Mapping, base: Path) -> np.ndarray:
    given = spec.get("stand_in")
    if given is None:
        return generated_stand_in(table, view, spec.get("outcome", "continuous"), spec.get("total"))
    values = np.load(_relative(base, str(given)), allow_pickle=False).astype(float)
    if values.shape != table.shape(view):
        raise ValueError(f"stand_in {given!r} has shape {values.shape}; the view's public "
                         f"shape is {table.shape(view)}")
    return values


def _mechanisms(spec, where: str = "mechanisms") -> frozenset:
    if spec is None:
        return frozenset(n for n in MECHANISMS if is_builtin(n))
    _strings(spec, where)
    unknown = sorted(set(spec) - set(MECHANISMS))
    if unknown:
        raise ValueError(f"{where}: unknown {unknown}; known: {sorted(MECHANISMS)}")
    return frozenset(spec)


def _check_dataset(name: str, spec: Mapping[str, Any]) -> None:
    """Every field of ``datasets.<name>`` by type and range (before anything is built)."""
    at = f"datasets.{name}"
    _table(spec, at)
    unknown = set(spec) - _DATASET_KEYS
    if unknown:
        raise ValueError(f"{at}: unknown keys {sorted(unknown)}")
    if "source" not in spec or "total_epsilon" not in spec:
        raise ValueError(f"{at}: needs source= and total_epsilon=")
    _string(spec["source"], f"{at}.source")
    try:
        check_epsilon(spec["total_epsilon"], "total_epsilon")
    except ValueError:
        raise ValueError(f"{at}.total_epsilon must be a finite number > 0 (at most 1e9), got "
                         f"{spec['total_epsilon']!r}") from None
    for key in ("table", "unit", "engine"):
        if key in spec:
            _string(spec[key], f"{at}.{key}")
    if "description" in spec:
        _string(spec["description"], f"{at}.description", empty=True)
    if "max_rows" in spec:
        _integer(spec["max_rows"], f"{at}.max_rows", 1, 10_000)
    if "distinct" in spec:
        _boolean(spec["distinct"], f"{at}.distinct")
    if "respond_after" in spec:
        _seconds(spec["respond_after"], f"{at}.respond_after")
    if "mechanisms" in spec:
        _strings(spec["mechanisms"], f"{at}.mechanisms")
    for cname, cspec in _table(spec.get("columns", {}), f"{at}.columns").items():
        _table(cspec, f"{at}.columns.{cname}")
        if "kind" in cspec:
            _string(cspec["kind"], f"{at}.columns.{cname}.kind")
        if "domain" in cspec and not isinstance(cspec["domain"], list):
            raise ValueError(f"{at}.columns.{cname}.domain must be a list, got "
                             f"{cspec['domain']!r}")
    for vname, vspec in _table(spec.get("views", {}), f"{at}.views").items():
        vat = f"{at}.views.{vname}"
        _table(vspec, vat)
        unknown = set(vspec) - _VIEW_KEYS
        if unknown:
            raise ValueError(f"{vat}: unknown keys {sorted(unknown)}")
        _string(vspec.get("kind"), f"{vat}.kind")
        if "columns" in vspec:
            _strings(vspec["columns"], f"{vat}.columns")
        if "rows" in vspec:
            _integer(vspec["rows"], f"{vat}.rows", 1, 10**9)
        for key in ("stand_in", "outcome"):
            if key in vspec:
                _string(vspec[key], f"{vat}.{key}")
        if "description" in vspec:
            _string(vspec["description"], f"{vat}.description", empty=True)
        if "facts" in vspec:
            _table(vspec["facts"], f"{vat}.facts")


def _dataset(name: str, spec: Mapping[str, Any], base: Path,
             memory_limit: str | None = None) -> DatasetConfig:
    if "/" in name or not name.strip():
        raise ValueError(f"datasets.{name}: a dataset name has no '/'")
    _check_dataset(name, spec)
    try:
        return _build(name, spec, base, memory_limit)
    except ValueError as exc:  # from Table, View or the fact check: say where
        raise ValueError(f"datasets.{name}: {exc}") from None


def _build(name: str, spec: Mapping[str, Any], base: Path,
           memory_limit: str | None) -> DatasetConfig:
    table = Table(_relative(base, spec["source"]), spec.get("columns") or {},
                  unit=spec.get("unit"), max_rows=spec.get("max_rows", 1),
                  table=spec.get("table"), engine=spec.get("engine", "duckdb"),
                  distinct=spec.get("distinct", False), memory_limit=memory_limit)
    ds = DatasetConfig(name, table, check_epsilon(spec["total_epsilon"], "total_epsilon"),
                       _mechanisms(spec.get("mechanisms"), "mechanisms"),
                       description=spec.get("description", ""),
                       respond_after=(None if "respond_after" not in spec
                                      else float(spec["respond_after"])))
    views = spec.get("views") or {}
    if not views:
        raise ValueError("declare at least one view (views.<name> = {...})")
    for vname, vspec in views.items():
        view = View(vspec.get("kind"), tuple(vspec.get("columns") or ()), vspec.get("rows"))
        for c in view.columns:
            table.column(c)
        facts = dict(vspec.get("facts") or {})
        ds.views[vname] = ViewConfig(vname, view, facts, _stand_in(table, view, vspec, base),
                                     vspec.get("description", ""))
    # The declared facts go through the catalog's checks now, as the curator will hold them
    # (nothing is read: load=False); a fact the catalog refuses stops the curator starting.
    view_entries(name, table, {v.name: {"view": v.view, "facts": v.facts,
                                        "stand_in": v.stand_in,
                                        "description": v.description}
                               for v in ds.views.values()},
                 description=ds.description, allowed=ds.mechanisms)
    return ds


def load_config(path: str | os.PathLike) -> CuratorConfig:
    """Read and check a curator configuration file (nothing here reads the data).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> from dpwidgets.curator import load_config
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"person": [1, 1, 2, 3], "page": [0, 3, 3, 1]}).to_csv(
    ...     folder / "visits.csv", index=False)
    >>> _ = (folder / "curator.toml").write_text('''
    ... [datasets.visits]
    ... source = "visits.csv"
    ... unit = "person"
    ... max_rows = 2
    ... total_epsilon = 1.0
    ... columns.page = { kind = "int", domain = [0, 3] }
    ... views.pages = { kind = "counts", columns = ["page"] }
    ... ''')
    >>> config = load_config(folder / "curator.toml")
    >>> sorted(config.datasets), sorted(config.datasets["visits"].views)
    (['visits'], ['pages'])
    >>> dataset, view = config.view("visits/pages")  # the name analysts see
    >>> dataset.total_epsilon, view.name, view.stand_in.shape
    (1.0, 'pages', (4,))
    >>> config.audit.name, config.audit.parent == config.path.parent  # a default: next to it
    ('audit.sqlite', True)
    >>> _ = (folder / "bad.toml").write_text('[datasets.visits]\\nsource = "visits.csv"\\n')
    >>> load_config(folder / "bad.toml")
    Traceback (most recent call last):
    ValueError: datasets.visits: needs source= and total_epsilon=
    """
    path = Path(path).expanduser().resolve()
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    base = path.parent
    unknown = set(raw) - {"curator", "datasets"}
    if unknown:
        raise ValueError(f"unknown top-level table(s) {sorted(unknown)}: [curator], "
                         f"[datasets.<name>]")
    cur = _table(raw.get("curator", {}), "[curator]")
    unknown = set(cur) - _CURATOR_KEYS
    if unknown:
        raise ValueError(f"[curator]: unknown keys {sorted(unknown)}")
    for key in ("ledger", "analysts", "audit"):
        if key in cur:
            _string(cur[key], f"[curator] {key}")
    memory = cur.get("memory_limit")
    if memory is not None and not isinstance(memory, str):
        raise ValueError(f"[curator] memory_limit is a size like '2GB', got {memory!r}")
    datasets = {n: _dataset(n, s, base, memory)
                for n, s in _table(raw.get("datasets", {}), "[datasets]").items()}
    if not datasets:
        raise ValueError("declare at least one dataset ([datasets.<name>])")
    return CuratorConfig(
        path=path,
        ledger=_relative(base, cur.get("ledger", "ledger.sqlite")),
        analysts=Path(_relative(base, cur.get("analysts", "analysts.json"))),
        audit=Path(_relative(base, cur.get("audit", "audit.sqlite"))),
        datasets=datasets,
        claim_lease=_lease(cur.get("claim_lease")),
    )


def _lease(value) -> float | None:
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not value > 0):
        raise ValueError(f"[curator] claim_lease is a number of seconds > 0, got {value!r}")
    return float(value)
