"""The same views on Spark (ibis's PySpark backend, local mode): the path that scales out."""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets.tables import Table, View

from .conftest import DAYS, MAX_ROWS, PAGES, visits_frame

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("spark") / "visits.parquet"
    visits_frame(seed=5, people=300).to_parquet(path)
    return path


COLUMNS = {"page": {"kind": "int", "domain": [0, PAGES - 1]},
           "day": {"kind": "int", "domain": [0, DAYS - 1]},
           "device": {"kind": "category", "domain": ["phone", "desktop", "tablet"]}}


def test_spark_and_duckdb_agree_on_every_view(parquet):
    pytest.importorskip("pyspark", reason="the spark extra is part of the test extra")
    views = [View("counts", ("page",)), View("counts2d", ("day", "page")),
             View("per_step", ("day",)), View("snapshots", ("day", "device"))]
    duck = Table(str(parquet), COLUMNS)
    spark = Table(str(parquet), COLUMNS, engine="pyspark")
    for view in views:
        np.testing.assert_array_equal(spark.read(view), duck.read(view))
    rows = View("rows", ("page", "device"), rows=100)
    a, b = spark.read(rows), duck.read(rows)
    np.testing.assert_array_equal(a[np.lexsort(a.T)], b[np.lexsort(b.T)])
    # Bounding inside Spark: each person keeps at most MAX_ROWS rows.
    frame = visits_frame(seed=5, people=300)
    bounded = Table(str(parquet), COLUMNS, unit="person", max_rows=MAX_ROWS, engine="pyspark")
    total = bounded.read(View("counts", ("page",))).sum()
    assert total == frame.groupby("person").size().clip(upper=MAX_ROWS).sum()


def test_the_diagnostics_counts_run_in_spark_as_in_duckdb(parquet):
    pytest.importorskip("pyspark", reason="the spark extra is part of the test extra")
    from dpwidgets.scored import TableRecords
    from dpwidgets.tables import RowsQuery

    columns = {**COLUMNS, "x": {"kind": "float", "domain": [-1.5, 1.5]}}
    view = View("rows", ("page", "device", "x"), rows=100)
    model = {"kind": "ols", "model": "public", "coef": [0.05, -0.4], "intercept": -0.5}
    spark = TableRecords(RowsQuery(Table(str(parquet), columns, engine="pyspark"), view), **model)
    duck = TableRecords(RowsQuery(Table(str(parquet), columns), view), **model)
    assert spark.n == duck.n
    edges = np.linspace(-2.0, 2.0, 9)
    np.testing.assert_array_equal(spark.doubling_counts("residual", 0.0, 0.25, 8),
                                  duck.doubling_counts("residual", 0.0, 0.25, 8))
    np.testing.assert_array_equal(spark.grid_counts(edges, edges), duck.grid_counts(edges, edges))
    # A unit-bounded table: one sample (persisted in Spark) for every query of the release.
    bounded = TableRecords(RowsQuery(Table(str(parquet), columns, unit="person",
                                           max_rows=MAX_ROWS, engine="pyspark"), view), **model)
    assert bounded.doubling_counts("residual", 0.0, 0.25, 8).sum() == bounded.n
