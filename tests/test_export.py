"""Releases leave the notebook as CSV/Parquet with a JSON sidecar of their provenance."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session


@pytest.fixture
def session(tmp_path):
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    s.add_dataset("sales", np.arange(200.0), total_epsilon=1.0)
    yield s
    s.close()


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_release_saves_as_a_table_and_a_sidecar(session, tmp_path, suffix):
    r = session.release("sales", "laplace_stream", epsilon=0.1)
    table, side = r.save(tmp_path / f"out.{suffix}")
    frame = pd.read_csv(table) if suffix == "csv" else pd.read_parquet(table)
    np.testing.assert_array_equal(frame["estimates"].to_numpy(), r.output["estimates"])
    meta = json.loads(side.read_text())
    assert meta["mechanism"] == "laplace_stream" and meta["epsilon"] == pytest.approx(0.1)
    assert meta["ledger_key"] == r.key and "neighbours" in meta["guarantee"]
    assert meta["parameters"]["epsilon"] == pytest.approx(0.1)


def test_a_preview_is_not_saved_as_a_release(session, tmp_path):
    preview = session.preview("sales", "laplace_stream", epsilon=0.1)
    with pytest.raises(ValueError, match="preview"):
        preview.save(tmp_path / "p.csv")


def test_two_dimensional_outputs_go_long(session, tmp_path):
    from dpwidgets.export import release_table

    frame = release_table({"grid": np.arange(6.0).reshape(2, 3), "n": 3})
    assert list(frame.columns) == ["output", "row", "column", "value"]
    assert frame["value"].tolist() == list(range(6))
