"""Own data in one call: a table with repeated people, declared once, feeds every family; the
budget is one per table whatever its views, names or paths; nothing public is read from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.engine.budget import BudgetExceededError

PAGES, DAYS = 30, 20
COLUMNS = {"page": {"kind": "int", "domain": [0, PAGES - 1]},
           "day": {"kind": "int", "domain": [0, DAYS - 1]},
           "device": {"kind": "category", "domain": ["phone", "desktop"]},
           "x": {"kind": "float", "domain": [-3, 3]},
           "y": {"kind": "float", "domain": [-5, 5]}}


def visits(seed=0, people=300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(people), rng.integers(1, 8, people))
    n = pid.size
    x = rng.normal(0, 1, n)
    return pd.DataFrame({"person": pid, "page": rng.integers(0, PAGES, n),
                         "day": rng.integers(0, DAYS, n),
                         "device": rng.choice(["phone", "desktop"], n),
                         "x": x, "y": 2 * x + rng.normal(0, 1, n)})


def declare(session, source, name="visits", **extra):
    return session.add_table(
        name, source, columns=COLUMNS, unit_column="person", max_rows=3, total_epsilon=3.0,
        items="page", time="day", snapshots="page", features=["x"], outcome="y",
        attributes=["page", "day", "device"], rows=1000,
        facts={"items": {"monotonic": True}}, **extra)


@pytest.mark.parametrize("kind", ["frame", "csv", "parquet"])
def test_one_call_declares_every_familys_view(tmp_path, kind):
    frame = visits()
    source = frame
    if kind != "frame":
        source = tmp_path / f"visits.{kind}"
        frame.to_csv(source, index=False) if kind == "csv" else frame.to_parquet(source)
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    names = declare(s, source)
    assert names == ["visits/items", "visits/stream", "visits/histograms",
                     "visits/diagnostics", "visits/synthetic"]
    assert s.shape("visits/items") == (PAGES,) and s.shape("visits/histograms") == (DAYS, PAGES)
    assert s.unit("visits/items") == "person" and s.facts("visits/items") == {"monotonic": True}
    # Releases cost 3x: a person has up to 3 rows.
    r = s.release("visits/items", "top_c", epsilon=0.1, c=3)
    assert r.epsilon == pytest.approx(0.3) and "user-level" in r.guarantee
    s.release("visits/stream", "laplace_stream", epsilon=0.1)
    s.release("visits/synthetic", "dpcopula", epsilon=0.1)
    fit = s.release("visits/diagnostics", "fit_model", epsilon=0.1)  # bounds: the declared ranges
    assert fit.charged and fit.params["bounds_y"] == [-5.0, 5.0]
    assert [list(b) for b in fit.params["bounds_X"]] == [[-3.0], [3.0]]
    # One budget for the table.
    assert s.remaining("visits/histograms") == pytest.approx(3.0 - 4 * 0.3)
    with pytest.raises(BudgetExceededError):
        s.release("visits/stream", "laplace_stream", epsilon=1.0, run=1)
    s.close()


def test_nothing_public_is_read_from_the_data(tmp_path):
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    a, b = visits(seed=1), visits(seed=2, people=50)
    declare(s, a, name="a")
    declare(s, b, name="b")
    for view in ("items", "stream", "histograms", "diagnostics", "synthetic"):
        # Shapes and stand-ins come from the declarations: the same for different data.
        assert s.shape(f"a/{view}") == s.shape(f"b/{view}")
        np.testing.assert_array_equal(s.stand_in(f"a/{view}"), s.stand_in(f"b/{view}"))
    s.close()


def test_the_same_table_under_another_name_or_path_shares_its_budget(tmp_path):
    frame = visits()
    first, second = tmp_path / "v1.parquet", tmp_path / "copy" / "v2.parquet"
    second.parent.mkdir()
    frame.to_parquet(first)
    frame.sample(frac=1.0, random_state=3).to_parquet(second)  # same rows, shuffled
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    declare(s, first)
    s.release("visits/stream", "laplace_stream", epsilon=0.5)
    t = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    declare(t, second, name="something else")
    assert t.spent("something else/items") == pytest.approx(1.5)
    s.close()
    t.close()


def test_teaching_mode_reads_the_views_for_the_widgets(tmp_path):
    frame = visits()
    s = Session("teaching")
    declare(s, frame)
    counts = s.public_view("visits/items")
    kept = frame.groupby("person").size().clip(upper=3).sum()
    assert counts.shape == (PAGES,) and counts.sum() == kept


def test_declarations_are_checked_before_anything_is_read(tmp_path):
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    with pytest.raises(ValueError, match="no column"):
        s.add_table("v", visits(), columns={"nope": {"kind": "int", "domain": [0, 3]}},
                    items="nope")
    with pytest.raises(ValueError, match="rows="):
        s.add_table("v", visits(), columns=COLUMNS, attributes=["page", "day"])
    with pytest.raises(ValueError, match="view"):
        s.add_table("v", visits(), columns=COLUMNS)
    assert s.datasets == []


def test_declaring_fewer_columns_of_the_same_table_does_not_reset_its_budget(tmp_path):
    frame = visits()
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    declare(s, frame)
    s.release("visits/stream", "laplace_stream", epsilon=0.5)
    names = s.add_table("narrow", frame, columns={"page": COLUMNS["page"]}, unit_column="person",
                        max_rows=3, items="page", total_epsilon=3.0)
    assert s.spent(names[0]) == pytest.approx(1.5)
    s.close()
