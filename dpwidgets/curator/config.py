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
    columns.page = { kind = "int", domain = [0, 49] }
    columns.day = { kind = "int", domain = [0, 89] }
    views.pages = { kind = "counts", columns = ["page"], facts = { monotonic = true } }
    views.daily = { kind = "per_step", columns = ["day"] }

Analysts see each view as a dataset named ``"<dataset>/<view>"``; all views of a dataset share
its budget. Stand-ins are generated from the public schema (never from the data) unless a view
names an ``.npy`` file of the view's public shape in ``stand_in``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..engine._validation import check_epsilon
from ..mechanism import MECHANISMS, is_builtin
from ..tables import Table, View, generated_stand_in

__all__ = ["CuratorConfig", "DatasetConfig", "ViewConfig", "load_config"]

_DATASET_KEYS = {"source", "table", "unit", "max_rows", "total_epsilon", "mechanisms",
                 "columns", "views", "description", "engine", "distinct"}
_VIEW_KEYS = {"kind", "columns", "rows", "facts", "stand_in", "description", "outcome"}


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


@dataclass
class CuratorConfig:
    """The whole configuration (see the module docstring)."""

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
        return generated_stand_in(table, view, spec.get("outcome", "continuous"))
    values = np.load(_relative(base, str(given)), allow_pickle=False).astype(float)
    if values.shape != table.shape(view):
        raise ValueError(f"stand_in {given!r} has shape {values.shape}; the view's public "
                         f"shape is {table.shape(view)}")
    return values


def _mechanisms(spec) -> frozenset:
    if spec is None:
        return frozenset(n for n in MECHANISMS if is_builtin(n))
    if isinstance(spec, str) or not all(isinstance(m, str) for m in spec):
        raise ValueError("mechanisms must be a list of mechanism names")
    unknown = sorted(set(spec) - set(MECHANISMS))
    if unknown:
        raise ValueError(f"mechanisms: unknown {unknown}; known: {sorted(MECHANISMS)}")
    return frozenset(spec)


def _dataset(name: str, spec: Mapping[str, Any], base: Path,
             memory_limit: str | None = None) -> DatasetConfig:
    unknown = set(spec) - _DATASET_KEYS
    if unknown:
        raise ValueError(f"datasets.{name}: unknown keys {sorted(unknown)}")
    if "/" in name or not name.strip():
        raise ValueError(f"datasets.{name}: a dataset name has no '/'")
    if "source" not in spec or "total_epsilon" not in spec:
        raise ValueError(f"datasets.{name}: needs source= and total_epsilon=")
    source = spec["source"]
    table = Table(_relative(base, source) if isinstance(source, str) else source,
                  spec.get("columns") or {}, unit=spec.get("unit"),
                  max_rows=spec.get("max_rows", 1), table=spec.get("table"),
                  engine=spec.get("engine", "duckdb"), distinct=spec.get("distinct", False),
                  memory_limit=memory_limit)
    ds = DatasetConfig(name, table, check_epsilon(spec["total_epsilon"], "total_epsilon"),
                       _mechanisms(spec.get("mechanisms")),
                       description=str(spec.get("description", "")))
    views = spec.get("views") or {}
    if not views:
        raise ValueError(f"datasets.{name}: declare at least one view (views.<name> = {{...}})")
    for vname, vspec in views.items():
        unknown = set(vspec) - _VIEW_KEYS
        if unknown:
            raise ValueError(f"datasets.{name}.views.{vname}: unknown keys {sorted(unknown)}")
        view = View(vspec.get("kind"), tuple(vspec.get("columns") or ()), vspec.get("rows"))
        for c in view.columns:
            table.column(c)
        facts = dict(vspec.get("facts") or {})
        ds.views[vname] = ViewConfig(vname, view, facts, _stand_in(table, view, vspec, base),
                                     str(vspec.get("description", "")))
    return ds


def load_config(path: str | os.PathLike) -> CuratorConfig:
    """Read and check a curator configuration file (nothing here reads the data)."""
    path = Path(path).expanduser().resolve()
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    base = path.parent
    cur = raw.get("curator", {})
    unknown = set(cur) - {"ledger", "analysts", "audit", "memory_limit", "claim_lease"}
    if unknown:
        raise ValueError(f"[curator]: unknown keys {sorted(unknown)}")
    memory = cur.get("memory_limit")
    if memory is not None and not isinstance(memory, str):
        raise ValueError(f"[curator] memory_limit is a size like '2GB', got {memory!r}")
    datasets = {n: _dataset(n, s, base, memory) for n, s in (raw.get("datasets") or {}).items()}
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
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"[curator] claim_lease is a number of seconds > 0, got {value!r}")
    return float(value)
