"""Data where it lives: the same views give the same arrays from a DataFrame, Parquet, CSV, a
DuckDB file and a PostgreSQL table (through ibis; the query runs where the data is)."""

from __future__ import annotations

import os
import uuid

import duckdb
import numpy as np
import pytest

from dpwidgets.tables import Column, Table, View

from .conftest import DAYS, PAGES, visits_frame

COLUMNS = {"page": {"kind": "int", "domain": [0, PAGES - 1]},
           "day": {"kind": "int", "domain": [0, DAYS - 1]},
           "device": {"kind": "category", "domain": ["phone", "desktop", "tablet"]},
           "x": {"kind": "float", "domain": [-1.5, 1.5]}}
VIEWS = [View("counts", ("page",)), View("counts2d", ("day", "page")),
         View("per_step", ("day",)), View("snapshots", ("day", "device")),
         View("rows", ("page", "device", "x"), rows=100)]


def _sorted(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort(rows.T)]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sources")
    frame = visits_frame(seed=9, people=200)
    frame.loc[::97, "page"] = PAGES + 3  # out of the declared domain: dropped
    frame.to_parquet(tmp / "v.parquet")
    frame.to_csv(tmp / "v.csv", index=False)
    with duckdb.connect(str(tmp / "v.duckdb")) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE visits AS SELECT * FROM frame")
    found = {"frame": Table(frame, COLUMNS), "parquet": Table(str(tmp / "v.parquet"), COLUMNS),
             "csv": Table(str(tmp / "v.csv"), COLUMNS),
             "duckdb": Table(str(tmp / "v.duckdb"), COLUMNS, table="visits")}
    return frame, found


def test_every_source_gives_the_same_views(sources):
    frame, found = sources
    expected_pages = np.bincount(frame.page[frame.page < PAGES], minlength=PAGES)
    for name, table in found.items():
        np.testing.assert_array_equal(table.read(VIEWS[0]), expected_pages, err_msg=name)
        for view in VIEWS[1:4]:
            np.testing.assert_array_equal(table.read(view), found["frame"].read(view),
                                          err_msg=f"{name} {view.kind}")
        rows = table.read(VIEWS[4])
        np.testing.assert_allclose(_sorted(rows), _sorted(found["frame"].read(VIEWS[4])))
        assert rows[:, 2].min() >= -1.5 and rows[:, 2].max() <= 1.5  # clipped to the domain
        assert set(np.unique(rows[:, 1])) <= {0.0, 1.0, 2.0}  # category codes


def test_a_postgresql_table(sources):
    url = os.environ.get("DPW_POSTGRES_URL")
    if not url:
        pytest.skip("DPW_POSTGRES_URL is unset (make test starts PostgreSQL and sets it)")
    import psycopg

    frame, found = sources
    name = f"visits_{uuid.uuid4().hex[:8]}"
    cols = ["person", "page", "day", "device", "x"]
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE TABLE {name} (person bigint, page bigint, day bigint, "
                    f"device text, x double precision)")
        with con.cursor().copy(f"COPY {name} ({', '.join(cols)}) FROM STDIN") as copy:
            for row in frame[cols].itertuples(index=False):
                copy.write_row(row)
    try:
        table = Table(url, COLUMNS, table=name)
        for view in VIEWS[:4]:
            np.testing.assert_array_equal(table.read(view), found["frame"].read(view))
        bounded = Table(url, COLUMNS, table=name, unit="person", max_rows=2)
        total = bounded.read(VIEWS[0]).sum()
        kept = frame[frame.page < PAGES].groupby("person").size()
        assert total <= kept.clip(upper=2).sum() and total >= 0
        # The diagnostics' counts run in PostgreSQL as they do in DuckDB.
        _same_diagnostic_counts(table, found["parquet"])
        _same_diagnostic_counts(bounded, found["parquet"], bounded=True)
    finally:
        with psycopg.connect(url, autocommit=True) as con:
            con.execute(f"DROP TABLE {name}")


def _same_diagnostic_counts(table, reference, bounded: bool = False) -> None:
    """PriRP's and PriROC's counts (dpwidgets.scored) on ``table`` equal those on
    ``reference`` (or, for a unit-bounded ``table``, are consistent across its queries)."""
    from dpwidgets.scored import TableRecords
    from dpwidgets.tables import RowsQuery

    view = VIEWS[4]  # features page and device, outcome x
    model = {"kind": "ols", "model": "public", "coef": [0.05, -0.4], "intercept": -0.5}
    got = TableRecords(RowsQuery(table, view), **model)
    edges = np.linspace(-2.0, 2.0, 9)
    if bounded:  # one bounded sample per query object: the counts add up to its n
        assert got.doubling_counts("residual", 0.0, 0.25, 8).sum() == got.n
        assert got.grid_counts(edges, edges).sum() <= got.n
        return
    want = TableRecords(RowsQuery(reference, view), **model)
    assert got.n == want.n
    np.testing.assert_array_equal(got.doubling_counts("residual", 0.0, 0.25, 8),
                                  want.doubling_counts("residual", 0.0, 0.25, 8))
    np.testing.assert_array_equal(got.grid_counts(edges, edges), want.grid_counts(edges, edges))


def test_the_diagnostics_counts_are_the_same_from_every_source(sources):
    _, found = sources
    for name in ("frame", "csv", "duckdb"):
        _same_diagnostic_counts(found[name], found["parquet"])


@pytest.mark.parametrize("bad, match", [
    ({"kind": "int", "domain": [0]}, "domain"),
    ({"kind": "int", "domain": [0.5, 3]}, "integer"),
    ({"kind": "category", "domain": ["a", "a"]}, "distinct"),
    ({"kind": "text", "domain": ["a"]}, "kind"),
    ({"kind": "float", "domain": [3, 1]}, "low"),
])
def test_declarations_are_checked(bad, match):
    with pytest.raises(ValueError, match=match):
        Column("c", bad["kind"], bad["domain"])


def test_the_unit_is_not_a_public_column_and_bounds_need_a_unit():
    with pytest.raises(ValueError, match="unit"):
        Table("x.parquet", {"person": {"kind": "int", "domain": [0, 9]}}, unit="person")
    with pytest.raises(ValueError, match="unit"):
        Table("x.parquet", {"a": {"kind": "int", "domain": [0, 9]}}, max_rows=3)


def test_a_memory_cap_for_duckdb(sources, tmp_path):
    frame, found = sources
    path = tmp_path / "v.parquet"
    frame.to_parquet(path)
    capped = Table(str(path), COLUMNS, unit="person", max_rows=2, memory_limit="64MB")
    assert capped.read(VIEWS[0]).sum() > 0
    with pytest.raises(ValueError, match="memory limit"):
        Table(str(path), COLUMNS, memory_limit="lots").read(VIEWS[0])
