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
