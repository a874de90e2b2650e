"""Data where it lives: a table, its public schema, its privacy unit, and the queries that touch it.

A :class:`Table` is what a data owner declares about a table of records -- where it lives
(a Parquet or CSV file, a DuckDB database, any SQL database ibis connects to, or a pandas
DataFrame), its public schema (each column's kind and declared domain), and the privacy unit
(the column naming the person a row belongs to, with the most rows one person may contribute).
Nothing here is read from the data: the domains, the unit and the bound are declarations.

The only data-touching step of every mechanism -- a histogram over a declared domain, a 2-D
histogram, counts per time step, one histogram per snapshot, the rows of a few columns -- is a
:class:`View` of the table. A view is compiled to one ibis expression and pushed down to the
query engine (DuckDB embedded by default; a cluster engine through ibis's PySpark backend), so a
table that is only counted is never loaded: what comes back is the aggregate, whose size is
fixed by the declared domains. The regression diagnostics read a ``"rows"`` view through a
:class:`RowsQuery` instead: the model's predictions become an expression over the columns and
each count they need one query (:mod:`dpwidgets.scored`), so their rows stay in the engine too.

Contribution bounding
---------------------
With a unit column and ``max_rows = k``, every query first drops the rows whose unit is NULL
(or NaN: a row that names no person cannot be attributed to one, and kept as one shared "unit"
an added NULL-id row could change ``2k`` rows of what is counted), then keeps at most ``k`` rows
per unit, a uniformly random subset chosen inside the query engine (``row_number() over
(partition by unit order by random())``). Adding or removing one person then changes at most
``k`` rows of what the mechanism sees, so a mechanism that is ε-DP for one row added or
removed is kε-DP for one person added or removed (group privacy; Dwork & Roth 2014,
Thm. 2.2). The door charges the kε. Rows outside a column's declared domain are dropped before the count (values in float
columns are clipped to their declared range); both are functions of one row alone, so neither
changes the sensitivity.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Column", "RowsQuery", "Table", "View", "connect_source", "declared_views",
           "generated_stand_in",
           "view_entries"]

KINDS = ("int", "category", "float")
VIEW_KINDS = ("counts", "counts2d", "per_step", "snapshots", "rows")
_RANK = "__dpw_rank"
_PRIMES = (2_147_483_647, 2_147_483_629)  # sums of hashes modulo these fit an int64
_KEY = "__dpw_key"


@dataclass(frozen=True)
class Column:
    """One column's public declaration.

    Parameters
    ----------
    name : str
        The column's name in the source.
    kind : {"int", "category", "float"}
        ``"int"``: integers in ``domain = (low, high)``, inclusive; ``"category"``: one of the
        values listed in ``domain`` (strings or numbers), in that order; ``"float"``: real values,
        clipped to ``domain = (low, high)`` when read.
    domain : tuple
        As above. Public: declared by the data owner, never read from the data.
    """

    name: str
    kind: str
    domain: tuple

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a column needs a non-empty name, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        domain = tuple(self.domain) if isinstance(self.domain, Sequence) else None
        if domain is None or not domain:
            raise ValueError(f"column {self.name!r}: declare its domain (a list)")
        if self.kind == "category":
            if len(set(domain)) != len(domain):
                raise ValueError(f"column {self.name!r}: category values must be distinct")
        else:
            if len(domain) != 2 or not all(_is_number(v) for v in domain):
                raise ValueError(f"column {self.name!r}: domain must be [low, high], got {domain!r}")
            low, high = domain
            if self.kind == "int" and not (float(low).is_integer() and float(high).is_integer()):
                raise ValueError(f"column {self.name!r}: an int domain has integer bounds")
            if not low <= high:
                raise ValueError(f"column {self.name!r}: domain low must be <= high")
            domain = (int(low), int(high)) if self.kind == "int" else (float(low), float(high))
        object.__setattr__(self, "domain", domain)

    @property
    def size(self) -> int:
        """The number of cells of the column's domain (int and category columns)."""
        if self.kind == "float":
            raise ValueError(f"column {self.name!r} is real-valued: it has no cells to count")
        return len(self.domain) if self.kind == "category" else self.domain[1] - self.domain[0] + 1

    def codes(self, values: np.ndarray) -> np.ndarray:
        """The cell index of each value (``-1`` outside the domain)."""
        if self.kind == "int":
            v = np.asarray(values, dtype=float)
            idx = v - self.domain[0]
            ok = np.isfinite(v) & (idx >= 0) & (idx < self.size) & (v == np.round(v))
            return np.where(ok, idx, -1).astype(np.int64)
        import pandas as pd

        # Vectorised over the records (a rows view may hold millions): -1 for other values.
        codes = pd.Index(list(self.domain)).get_indexer(np.asarray(values, dtype=object))
        return np.asarray(codes, dtype=np.int64)

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "domain": list(self.domain)}


def _is_number(v) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) and (
        math.isfinite(float(v)))


@dataclass(frozen=True)
class View:
    """What one family's mechanisms see of a table: an aggregate, or the rows of a few columns.

    Parameters
    ----------
    kind : {"counts", "counts2d", "per_step", "snapshots", "rows"}
        ``"counts"``: a histogram of ``columns[0]`` over its domain (1-D: item scores for SVT
        and top-c, histogram counts). ``"counts2d"``: the 2-D histogram of two columns.
        ``"per_step"``: counts per value of the time column ``columns[0]`` (a counting stream).
        ``"snapshots"``: one histogram of ``columns[1]`` per value of the time column
        ``columns[0]`` (a series of histograms, time by cell). ``"rows"``: the listed columns
        as a float table (diagnostics: features then the outcome; synthetic data).
    columns : tuple of str
        The declared columns it reads.
    rows : int, optional
        ``"rows"`` views only: the public number of rows previews are drawn at (declared by the
        owner; the true count is never published).
    """

    kind: str
    columns: tuple[str, ...]
    rows: int | None = None

    def __post_init__(self):
        if self.kind not in VIEW_KINDS:
            raise ValueError(f"a view's kind must be one of {VIEW_KINDS}, got {self.kind!r}")
        cols = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        need = {"counts": 1, "per_step": 1, "counts2d": 2, "snapshots": 2}.get(self.kind)
        if need is not None and len(cols) != need:
            raise ValueError(f"a {self.kind!r} view reads {need} column(s), got {list(cols)}")
        if self.kind == "rows":
            if len(cols) < 2:
                raise ValueError("a 'rows' view reads at least 2 columns")
            if self.rows is None or isinstance(self.rows, bool) or not isinstance(
                    self.rows, int | np.integer) or self.rows < 2:
                raise ValueError("a 'rows' view needs rows= (the public row count of its "
                                 "stand-in, declared by the owner), an integer >= 2")
        object.__setattr__(self, "columns", cols)


def _duckdb(path: str = ":memory:", memory_limit: str | None = None, **kwargs):
    import ibis

    con = ibis.duckdb.connect(path, **kwargs)
    con.raw_sql("SET enable_progress_bar = false")  # a server's output is not a terminal
    # Row order never matters to an aggregate or a DP release; not keeping it saves memory.
    con.raw_sql("SET preserve_insertion_order = false")
    limit = (memory_limit or os.environ.get("DPWIDGETS_DUCKDB_MEMORY", "")).strip()
    if limit:
        if not re.fullmatch(r"\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)", limit):
            raise ValueError(f"a DuckDB memory limit looks like '512MB', got {limit!r}")
        con.raw_sql(f"SET memory_limit = '{limit}'")  # beyond it DuckDB spills to disk
    return con


ENGINES = ("duckdb", "pyspark")
_SPARK: list = []


def _spark():
    """ibis's PySpark backend on one SparkSession per process: ``local[2]`` unless
    ``DPWIDGETS_SPARK_MASTER`` names a cluster (``spark://host:7077``, ``yarn``, ...)."""
    import ibis

    if not _SPARK:
        from pyspark.sql import SparkSession

        master = os.environ.get("DPWIDGETS_SPARK_MASTER", "local[2]")
        spark = (SparkSession.builder.master(master).appName("dpwidgets-curator")
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", os.environ.get(
                     "DPWIDGETS_SPARK_PARTITIONS", "8"))
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        _SPARK.append(ibis.pyspark.connect(spark))
    return _SPARK[0]


def connect_source(source, *, table: str | None = None, engine: str = "duckdb",
                   memory_limit: str | None = None):
    """An ibis table expression for a source (see :class:`Table`); ``memory_limit`` caps an
    embedded DuckDB (it spills to disk beyond; default ``$DPWIDGETS_DUCKDB_MEMORY``)."""
    import ibis

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "pyspark":
        if not isinstance(source, str | os.PathLike):
            raise ValueError("the pyspark engine reads files (Parquet, CSV) or Spark tables")
        text = os.fspath(source)
        con = _spark()
        if text.lower().endswith(".csv"):
            return con.read_csv(text)
        return con.table(table) if table else con.read_parquet(text)

    if hasattr(source, "columns") and hasattr(source, "to_numpy"):  # a pandas DataFrame
        # An in-memory table, run by the embedded DuckDB (ibis's default backend).
        return ibis.memtable(source)
    if not isinstance(source, str | os.PathLike):
        raise ValueError(f"source must be a path, a URL or a DataFrame, got {type(source).__name__}")
    text = os.fspath(source)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme == "duckdb":
        path = text.split("://", 1)[1]
        if not table:
            raise ValueError("a DuckDB source needs table= (the table's name in the database)")
        return _duckdb(path, memory_limit, read_only=True).table(table)
    if scheme:
        if not table:
            raise ValueError(f"a {scheme} source needs table= (the table's name)")
        return ibis.connect(text).table(table)
    path = Path(text).expanduser()
    con = _duckdb(memory_limit=memory_limit)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq") or path.is_dir():
        return con.read_parquet(str(path))
    if suffix in (".csv", ".tsv") or text.endswith((".csv.gz", ".tsv.gz")):
        return con.read_csv(str(path))
    if suffix in (".duckdb", ".ddb"):
        if not table:
            raise ValueError("a DuckDB file needs table= (the table's name in the database)")
        return _duckdb(str(path), memory_limit, read_only=True).table(table)
    raise ValueError(f"cannot tell the kind of source {text!r}: use .parquet, .csv, .duckdb or "
                     f"a URL (duckdb://, postgresql://, sqlite://, ...)")


@dataclass
class Table:
    """A table of records where it lives, declared by its owner (see the module docstring).

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
        A Parquet file (or a directory of them), a CSV file, a DuckDB file (with ``table=``),
        a database URL ibis connects to (``duckdb://``, ``postgresql://``, ``sqlite://``, ...,
        with ``table=``), or an in-memory DataFrame.
    columns : mapping of str to dict or Column
        The public schema: ``{"age": {"kind": "int", "domain": [0, 99]}, ...}``.
    unit : str, optional
        The column naming the person each row belongs to. ``None``: one row per person, as the
        owner declares (row-level). Rows whose unit is NULL (or NaN) are dropped inside the
        query engine before anything is counted (they name nobody).
    max_rows : int
        The most rows one unit contributes (kept at random inside the query engine).
    distinct : bool
        Bound distinct values instead of rows: each unit contributes each value (of the
        columns a view reads) at most once, and at most ``max_rows`` distinct values. Counts
        then count people per value ("how many people visited page p"); a unit still changes
        at most ``max_rows`` cells by one each.
    table : str, optional
        The table's name in a database source.
    memory_limit : str, optional
        DuckDB's memory cap ("2GB"): beyond it a bounded query spills to disk instead of
        growing (default ``$DPWIDGETS_DUCKDB_MEMORY``, else DuckDB's 80% of RAM).
    engine : {"duckdb", "pyspark"}
        The query engine the views run on: DuckDB embedded (default), or Spark through ibis's
        PySpark backend for tables that outgrow one machine (the same expressions).
    """

    source: Any
    columns: Mapping[str, Any]
    unit: str | None = None
    max_rows: int = 1
    distinct: bool = False
    table: str | None = None
    engine: str = "duckdb"
    memory_limit: str | None = None
    _expr: Any = field(default=None, init=False, repr=False)
    _lock: Any = field(default_factory=threading.RLock, init=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.columns, Mapping) or not self.columns:
            raise ValueError("columns: declare the public schema, {name: {kind, domain}}")
        cols = {}
        for name, spec in self.columns.items():
            if isinstance(spec, Column):
                cols[name] = spec
            elif isinstance(spec, Mapping):
                unknown = set(spec) - {"kind", "domain"}
                if unknown:
                    raise ValueError(f"column {name!r}: unknown keys {sorted(unknown)}")
                cols[name] = Column(name, spec.get("kind"), spec.get("domain"))
            else:
                raise ValueError(f"column {name!r}: give {{kind, domain}}, got {spec!r}")
        self.columns = cols
        if self.unit is not None:
            if not isinstance(self.unit, str) or not self.unit:
                raise ValueError(f"the unit column (add_table's unit_column=) must be a column "
                                 f"name or None, got {self.unit!r}")
            if self.unit in cols:
                raise ValueError("the unit column identifies people: it is not a public column")
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, int) or not (
                1 <= self.max_rows <= 10_000):
            raise ValueError(f"max_rows must be an integer in [1, 10000], got {self.max_rows!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.table is not None and (not isinstance(self.table, str) or not self.table):
            raise ValueError(f"table must be a table's name (a non-empty str) or None, got "
                             f"{self.table!r}")
        if not isinstance(self.distinct, bool):
            raise ValueError(f"distinct must be True or False, got {self.distinct!r}")
        if self.unit is None and (self.max_rows != 1 or self.distinct):
            raise ValueError("max_rows bounds the rows of one person: declare the unit column "
                             "with it (add_table's unit_column=)")

    # -- what is public ---------------------------------------------------------------------
    @property
    def unit_rows(self) -> int:
        """How many rows one person may change in any view (the group-privacy factor)."""
        return self.max_rows if self.unit is not None else 1

    def column(self, name: str) -> Column:
        try:
            return self.columns[name]
        except KeyError:
            raise ValueError(f"unknown column {name!r}; declared: {list(self.columns)}") from None

    def shape(self, view: View) -> tuple[int, ...]:
        """The public shape of a view's array (from the declared domains alone)."""
        cols = [self.column(c) for c in view.columns]
        if view.kind in ("counts", "per_step"):
            return (cols[0].size,)
        if view.kind in ("counts2d", "snapshots"):
            return (cols[0].size, cols[1].size)
        return (int(view.rows), len(cols))

    def identity(self) -> str:
        """A public fingerprint of the declaration (source, schema, unit): what a ledger
        names the budget by. Not of the content: hashing 1e9 rows to name a budget would be
        a full scan, and the owner's config names the dataset anyway."""
        src = self.source if isinstance(self.source, str | os.PathLike) else "<in memory>"
        blob = json.dumps({"source": os.fspath(src), "table": self.table, "unit": self.unit,
                           "engine": self.engine,
                           "max_rows": self.max_rows, "distinct": self.distinct,
                           "columns": [c.describe() for c in self.columns.values()]},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    # -- touching the data --------------------------------------------------------------------
    @property
    def expr(self):
        """The source as an ibis table expression (connected once)."""
        with self._lock:
            if self._expr is None:
                self._expr = connect_source(self.source, table=self.table, engine=self.engine,
                                            memory_limit=self.memory_limit)
            return self._expr

    def fingerprint(self) -> str:
        """A fingerprint of the table's content that ignores the order of its rows: per
        column of the source, the row count and sums of row hashes modulo two
        primes, in one scan inside the query engine. A ledger keys a budget by it, so the
        same table under another name or path is charged to one budget."""
        t = self.expr
        # Every column of the source, declared or not: declaring fewer columns of the same
        # table must not make it another budget.
        # (pandas' stored row index is not content: a shuffled copy must match.)
        names = sorted(c for c in t.columns if not c.startswith("__index_level_"))
        sums = {f"{c}_{p}": (t[c].hash() % p).sum() for c in names for p in _PRIMES}
        with self._lock:
            row = self.expr.aggregate(__dpw_n=t.count(), **sums).to_pyarrow().to_pylist()[0]
        return hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()

    def check_schema(self) -> None:
        """Check that the source has the declared columns and the unit (its schema only: a
        catalogue lookup, no row is read)."""
        have = set(self.expr.columns)
        need = set(self.columns) | ({self.unit} if self.unit else set())
        missing = sorted(need - have)
        if missing:
            raise ValueError(f"the source has no column(s) {missing}; it has {sorted(have)}")

    def bounded(self, columns: Sequence[str] | None = None):
        """The source (its ``columns`` only, if given) with each unit's contributions bounded:
        at most ``max_rows`` random rows per unit, chosen inside the query engine. Rows whose
        unit is NULL (or NaN) are dropped first: they name no person, and a window over
        them would make them one "unit" whose kept rows one added NULL-id row could swap
        (an L1 change of ``2 max_rows`` charged as ``max_rows``)."""
        import ibis

        t = self.expr
        if self.unit is None:
            return t if columns is None else t.select(*columns)
        unit = t[self.unit]
        named = unit.notnull()
        if unit.type().is_floating():
            named = named & ~unit.isnan()
        t = t.filter(named)
        if columns is not None:  # the window sorts what it carries: carry only what is read
            t = t.select(self.unit, *columns)
        if self.distinct:
            t = t.distinct()  # each (unit, value) once
        keyed = t.mutate(**{_KEY: ibis.random()})
        window = ibis.window(group_by=keyed[self.unit], order_by=keyed[_KEY])
        ranked = keyed.mutate(**{_RANK: ibis.row_number().over(window)})
        return ranked.filter(ranked[_RANK] < self.max_rows).drop(_RANK, _KEY)

    def expression(self, view: View):
        """The ibis expression a view runs (an aggregate, except for ``"rows"``)."""
        t = self.bounded(view.columns)
        cols = [self.column(c) for c in view.columns]
        if view.kind == "rows":
            return t.select(*[t[c.name] for c in cols])
        keys = [t[c.name] for c in cols]
        pred = None
        for c, k in zip(cols, keys, strict=True):
            cond = (k.isin(list(c.domain)) if c.kind == "category"
                    else k.between(c.domain[0], c.domain[1]))
            pred = cond if pred is None else pred & cond
        kept = t.filter(pred)
        return kept.group_by([c.name for c in cols]).aggregate(__dpw_n=kept.count())

    def rows_expression(self, view: View):
        """A ``"rows"`` view as an ibis expression of float columns ``c0, c1, ...`` cleaned as
        :meth:`read` cleans them (categories as codes, rows with a value outside an int or
        category domain or not finite dropped, floats clipped), for mechanisms that ask the
        engine for aggregates of the rows instead of the rows (:class:`RowsQuery`)."""
        import ibis

        if view.kind != "rows":
            raise ValueError(f"rows_expression needs a 'rows' view, got {view.kind!r}")
        t = self.expression(view)
        out, keep = {}, []
        for j, c in enumerate(self.column(name) for name in view.columns):
            v = t[c.name]
            if c.kind == "category":
                code = v.substitute({value: i for i, value in enumerate(c.domain)}, else_=-1)
                keep.append(v.notnull() & (code >= 0))
                out[f"c{j}"] = code.cast("float64")
                continue
            f = v.cast("float64")
            keep.append(f.notnull() & ~f.isnan() & ~f.isinf())
            if c.kind == "float":  # (nulls are dropped below: GREATEST/LEAST suffice)
                f = ibis.greatest(float(c.domain[0]), ibis.least(float(c.domain[1]), f))
            else:
                keep.append(f.between(float(c.domain[0]), float(c.domain[1])))
            out[f"c{j}"] = f
        pred = keep[0]
        for k in keep[1:]:
            pred = pred & k
        return t.filter(pred).select(**out)

    def read(self, view: View) -> np.ndarray:
        """Run a view on the data: the aggregate array, or the rows as floats (clipped)."""
        cols = [self.column(c) for c in view.columns]
        with self._lock:  # one connection per table: its queries run one at a time
            frame = self.expression(view).to_pyarrow()
        if view.kind == "rows":
            out = np.empty((frame.num_rows, len(cols)))
            keep = np.ones(frame.num_rows, dtype=bool)
            for j, c in enumerate(cols):
                raw = frame.column(j).to_numpy(zero_copy_only=False)
                if c.kind == "category":
                    out[:, j] = c.codes(raw)
                    keep &= out[:, j] >= 0
                    continue
                out[:, j] = np.asarray(raw, dtype=float)
                keep &= np.isfinite(out[:, j])
                if c.kind == "float":
                    np.clip(out[:, j], c.domain[0], c.domain[1], out=out[:, j])
                else:
                    keep &= (out[:, j] >= c.domain[0]) & (out[:, j] <= c.domain[1])
            return out[keep]
        counts = np.asarray(frame.column("__dpw_n").to_numpy(), dtype=np.int64)
        idx = [c.codes(frame.column(i).to_numpy(zero_copy_only=False))
               for i, c in enumerate(cols)]
        ok = np.logical_and.reduce([i >= 0 for i in idx])
        result = np.zeros(self.shape(view), dtype=np.int64)
        np.add.at(result, tuple(i[ok] for i in idx), counts[ok])
        return result.astype(float)


def _materialise(expr):
    """``expr`` computed once into a temporary table of its engine, dropped with the returned
    expression (Spark: persisted). The drop is written here: ibis 12's own (``cache()``,
    ``drop_table``) emits a statement without the table's name under this sqlglot."""
    import weakref

    backend = expr._find_backend(use_default=True)  # a DataFrame's: the default DuckDB
    if backend.name == "pyspark":
        return expr.cache()
    name = f"__dpw_rows_{uuid.uuid4().hex}"
    table = backend.create_table(name, expr, temp=True)
    weakref.finalize(table, _drop_quietly, backend, name)
    return table


def _drop_quietly(backend, name: str) -> None:
    try:
        result = backend.raw_sql(f'DROP TABLE IF EXISTS "{name}"')
        if result is not None and result is not getattr(backend, "con", None):
            result.close()  # a cursor (DuckDB returns its connection: that stays open)
    except Exception:  # noqa: BLE001,S110 -- a closed connection has dropped it already
        pass


@dataclass(frozen=True)
class RowsQuery:
    """A table's ``"rows"`` view left where it lives: what a pushdown mechanism
    (:attr:`dpwidgets.mechanism.Mechanism.pushdown`) gets instead of the rows. It asks the
    query engine for the aggregates it needs (:mod:`dpwidgets.scored`).

    A table with a privacy unit bounds each unit's rows at random inside the engine; a
    mechanism that asks several queries must ask them of one bounded sample, so
    :meth:`rows` materialises the bounded, cleaned rows once, as a temporary table in the
    engine (never in Python), and every query of this object reads it.
    """

    table: Table
    view: View
    _rows: list = field(default_factory=list, compare=False, repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        """The view's public shape (the declared row count, not the true one)."""
        return self.table.shape(self.view)

    def rows(self):
        """The cleaned rows (float columns ``c0, c1, ...``; the last is the outcome of a
        diagnostics view) as an ibis expression."""
        if not self._rows:
            expr = self.table.rows_expression(self.view)
            if self.table.unit is not None:  # one bounded sample for every query of this run
                with self.table._lock:
                    expr = _materialise(expr)
            self._rows.append(expr)
        return self._rows[0]

    def run(self, expr):
        """Run an aggregate expression of :meth:`rows` and return it as a pyarrow table."""
        with self.table._lock:  # one connection per table: its queries run one at a time
            return expr.to_pyarrow()


# -- what a door holds for a table's views --------------------------------------------------------

_DTYPES = {"int": "int64", "category": "int64", "float": "float64"}


def generated_stand_in(table: Table, view: View, outcome: str = "continuous",
                       total: int | None = None) -> np.ndarray:
    """A public stand-in of a view's public shape, from the declared schema alone (seeded;
    never from the data): a Zipf profile for counts, Poisson counts per step or cell, rows
    uniform over the declared domains (or a well-specified linear model for real columns).

    ``total`` (a counting view's public total, declared by the owner: :func:`check_total`)
    scales a counting view's stand-in to sum to it exactly: the Zipf profile over ``total``
    records, or ``total`` records spread uniformly at random over the steps or cells. Without
    one: Zipf over about 1,000,000 records, 20 per step, 5 per cell."""
    from .catalog import default_stand_in, table_stand_in

    shape = table.shape(view)
    rng = np.random.default_rng(0)
    if total is not None:
        total = check_total(total, view)
    if view.kind == "counts":
        return default_stand_in(shape[0], total)
    if total is not None:  # per_step, counts2d, snapshots: total records over the cells
        cells = int(np.prod(shape))
        return rng.multinomial(total, np.full(cells, 1.0 / cells)).reshape(shape).astype(float)
    if view.kind == "per_step":
        return rng.poisson(20.0, shape[0]).astype(float)
    if view.kind in ("counts2d", "snapshots"):
        return rng.poisson(5.0, shape).astype(float)
    cols = [table.column(c) for c in view.columns]
    if all(c.kind == "float" for c in cols) and outcome in ("continuous", "binary"):
        return _within_domains(table_stand_in(shape[0], shape[1] - 1, outcome), cols)
    out = np.empty(shape)
    for j, c in enumerate(cols):
        if c.kind == "float":
            out[:, j] = rng.uniform(c.domain[0], c.domain[1], shape[0])
        else:
            high = c.domain[1] + 1 if c.kind == "int" else c.size
            out[:, j] = rng.integers(c.domain[0] if c.kind == "int" else 0, high, shape[0])
    return out


def _within_domains(stand_in: np.ndarray, cols) -> np.ndarray:
    """A generated table mapped into its columns' declared domains: a column that leaves its
    domain is moved affinely onto it (which keeps a linear model linear), so a preview sees
    values its release could see. Columns already inside are left as they are."""
    out = stand_in.copy()
    for j, c in enumerate(cols):
        lo, hi = (float(v) for v in c.domain)
        a, b = float(out[:, j].min()), float(out[:, j].max())
        if a < lo or b > hi:
            out[:, j] = (lo + (out[:, j] - a) * (hi - lo) / (b - a) if b > a
                         else np.full(out.shape[0], (lo + hi) / 2.0))
    return out


def check_total(total, view: View | None = None) -> int:
    """A counting view's declared public total: an integer >= 1 (how many rows the view
    counts; the owner's number, e.g. a published table size -- never read from the data).
    A ``"rows"`` view declares its size with ``rows=`` instead."""
    if view is not None and view.kind == "rows":
        raise ValueError("a 'rows' view declares its public size with rows=, not total=")
    if isinstance(total, bool) or not isinstance(total, int | np.integer) or total < 1:
        raise ValueError(f"a view's public total must be an integer >= 1 (the rows it "
                         f"counts, declared by the owner), got {total!r}")
    return int(total)


def _synth_domains(table: Table, columns) -> dict | None:
    """A rows view's declared domains as synthetic-data domains (codes for categories), or
    ``None`` if a column is real-valued (it has no finite domain)."""
    out = {}
    for name in columns:
        c = table.column(name)
        if c.kind == "float":
            return None
        lo, hi = (0, c.size - 1) if c.kind == "category" else c.domain
        out[name] = {"min": int(lo), "max": int(hi)}
    return out


def view_entries(name: str, table: Table, views: Mapping[str, Mapping], *, load: bool = False,
                 description: str = "", allowed=frozenset(), fingerprint: str | None = None
                 ) -> list:
    """One :class:`~dpwidgets.catalog.Entry` per view, named ``"<name>/<view>"``, all keyed to
    the budget ``name`` (and, if given, to the table's content ``fingerprint``). ``views``
    maps a view's name to ``{"view": View, "facts": {...}, "stand_in": array or None,
    "total": int or None, "outcome": ..., "description": ...}`` (``total``: the public total
    a counting view's generated stand-in sums to, :func:`generated_stand_in`). ``load=True`` (teaching:
    the data is public) reads every view now; otherwise a view is read when a release runs."""
    from .catalog import Entry, check_allowed, check_description, check_facts

    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    allowed = check_allowed(allowed)
    check_description(description)
    entries = []
    for vname, spec in views.items():
        view = spec["view"]
        try:  # typed when declared; checked against the data only where it is public (loaded)
            facts = check_facts(spec.get("facts"))
        except ValueError as exc:
            raise ValueError(f"view {vname!r}: {exc}") from None
        rows = view.kind == "rows"
        stand_in = spec.get("stand_in")
        if spec.get("total") is not None and stand_in is not None:
            raise ValueError(f"view {vname!r}: give a stand_in or its total, not both")
        if stand_in is None:
            try:
                stand_in = generated_stand_in(table, view, spec.get("outcome", "continuous"),
                                              spec.get("total"))
            except ValueError as exc:
                raise ValueError(f"view {vname!r}: {exc}") from None
        elif np.shape(stand_in) != table.shape(view):
            raise ValueError(f"view {vname!r}: stand_in has shape {np.shape(stand_in)}; its "
                             f"public shape is {table.shape(view)}")
        stand_in = np.array(stand_in, dtype=float)
        stand_in.setflags(write=False)
        ident = hashlib.sha256(f"{fingerprint or table.identity()}|{view!r}".encode()).hexdigest()
        data = None
        if load:
            data = table.read(view)
            data.setflags(write=False)
            try:
                facts = check_facts(facts, data)
            except ValueError as exc:
                raise ValueError(f"view {vname!r}: {exc}") from None
        held = Entry(
            f"{name}/{vname}", data, stand_in, ident,
            spec.get("description") or description,
            view.columns if rows else None,
            tuple(_DTYPES[table.column(c).kind] for c in view.columns) if rows else None,
            "person" if table.unit else "row", facts, allowed,
            unit_rows=table.unit_rows, load=(lambda v=view: table.read(v)),
            query=(lambda v=view: RowsQuery(table, v)) if rows and data is None else None,
            # The declared shape in both modes: a rows view's true (bounded) row count is
            # never its public size, even when teaching loads the rows.
            shape=table.shape(view),
            domains=_synth_domains(table, view.columns) if rows else None,
            ranges=tuple(None if table.column(c).kind == "category" else table.column(c).domain
                         for c in view.columns) if rows else None,
            budget=name, ledger_fingerprint=fingerprint,
        )
        entries.append(held)
    return entries


def declared_views(*, views: Mapping[str, Mapping] | None = None, items: str | None = None,
                   time: str | None = None, snapshots: str | None = None,
                   features: Sequence[str] | None = None, outcome: str | None = None,
                   attributes: Sequence[str] | None = None, rows: int | None = None,
                   facts: Mapping[str, Mapping] | None = None,
                   totals: Mapping[str, int] | None = None) -> dict[str, dict]:
    """The views of a table from which columns feed which family (or from ``views`` given in
    full, ``{name: {"kind", "columns", "rows", "facts", "stand_in", "outcome"}}``):

    ``items``: counts per item (SVT, top-c) as ``"items"``; ``time``: counts per time step
    (streams) as ``"stream"``, and with ``snapshots`` one histogram of that column per step
    (dynamic histograms) as ``"histograms"``; ``features`` + ``outcome``: the rows, features
    then the outcome (regression diagnostics) as ``"diagnostics"``; ``attributes``: the rows
    (synthetic data) as ``"synthetic"``. ``rows`` is the public row count previews use.
    ``facts`` maps a view's name to the facts its owner declares for it.

    ``totals`` maps a counting view's name to its public total (the rows it counts, declared
    by the owner: ``{"items": 20_000}``; ``"total"`` in a ``views`` spec says the same): its
    stand-in sums to it, so previews -- an SVT threshold suggested on the stand-in -- are on
    the table's scale. A counting view without one takes ``rows`` as its total if declared."""
    out: dict[str, dict] = {}
    for vname, spec in (views or {}).items():
        unknown = set(spec) - {"kind", "columns", "rows", "facts", "stand_in", "outcome",
                               "description", "total"}
        if unknown:
            raise ValueError(f"views.{vname}: unknown keys {sorted(unknown)}")
        out[vname] = {**spec, "view": View(spec.get("kind"), tuple(spec.get("columns") or ()),
                                           spec.get("rows"))}
    if items is not None:
        out["items"] = {"view": View("counts", (items,))}
    if time is not None:
        out["stream"] = {"view": View("per_step", (time,))}
        if snapshots is not None:
            out["histograms"] = {"view": View("snapshots", (time, snapshots))}
    elif snapshots is not None:
        raise ValueError("snapshots= needs time= (one histogram per time step)")
    if (features is None) != (outcome is None):
        raise ValueError("give features= and outcome= together (the diagnostics' rows)")
    if features is not None:
        out["diagnostics"] = {"view": View("rows", (*features, outcome), rows)}
    if attributes is not None:
        out["synthetic"] = {"view": View("rows", tuple(attributes), rows)}
    for vname, declared in (facts or {}).items():
        if vname not in out:
            raise ValueError(f"facts: no view named {vname!r}; views: {sorted(out)}")
        out[vname]["facts"] = dict(declared)
    if totals is not None and not isinstance(totals, Mapping):
        raise ValueError(f"totals must map a view's name to its public total, got {totals!r}")
    for vname, total in (totals or {}).items():
        if vname not in out:
            raise ValueError(f"totals: no view named {vname!r}; views: {sorted(out)}")
        out[vname]["total"] = total
    for vname, spec in out.items():
        if spec.get("total") is not None:
            try:
                check_total(spec["total"], spec["view"])
            except ValueError as exc:
                raise ValueError(f"view {vname!r}: {exc}") from None
        elif (isinstance(rows, int) and not isinstance(rows, bool) and rows >= 1
              and spec["view"].kind != "rows" and spec.get("stand_in") is None):
            spec["total"] = rows  # the owner's declared row count: the scale of every count
    if not out:
        raise ValueError("declare at least one view: items=, time=, features=/outcome=, "
                         "attributes= or views=")
    return out
