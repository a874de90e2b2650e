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


# -- every family: what was released is what is written, and reads back unchanged -----------
def _same(a, b, where="output"):
    """Exact equality of two outputs: types, dtypes, shapes and values (NaN equal to NaN)."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert type(a) is type(b) and a == b, where


@pytest.fixture(scope="module")
def every_family(tmp_path_factory):
    from tests.test_session_fuzz import session as fuzz_session

    s = fuzz_session(tmp_path_factory.mktemp("families") / "ledger.sqlite")
    yield s
    s.close()


def _builtin_cases():
    from tests.test_session_fuzz import BASE

    return sorted(BASE.items())


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
@pytest.mark.parametrize(("mechanism", "case"), _builtin_cases())
def test_every_family_exports_everything_it_released(every_family, tmp_path, suffix,
                                                     mechanism, case):
    from dpwidgets.export import load_release

    dataset, params = case
    r = every_family.release(dataset, mechanism, **params)
    table, side = r.save(tmp_path / f"release.{suffix}")
    back = load_release(table)
    _same(r.output, back["output"])
    assert back["guarantee"] == r.guarantee and back["guarantee"]
    assert back["mechanism"] == mechanism and back["ledger_key"] == r.key
    # Every file the sidecar lists exists, and no table pads a ragged field with NaN.
    for name in back["files"]:
        frame = pd.read_csv(tmp_path / name) if suffix == "csv" else pd.read_parquet(
            tmp_path / name)
        padded = [c for c in frame.columns
                  if frame[c].isna().any() and not _has_nan(r.output, c)]
        assert not padded, (name, padded)


def _has_nan(output, column) -> bool:
    """Whether a released array of this name holds NaN itself (then NaN in a table is data)."""
    from dpwidgets.export import _arrays

    return any(a.dtype.kind == "f" and np.isnan(a).any() for path, a in _arrays(output)
               if column in (path[-1], "value"))


def test_synthetic_records_are_the_principal_table(every_family, tmp_path):
    r = every_family.release("frame", "independent_synth", epsilon=0.5,
                             domains={"a": (0, 9), "b": (0, 4), "c": (0, 1)})
    table, _ = r.save(tmp_path / "synthetic.csv")
    frame = pd.read_csv(table)
    assert len(frame) == r.output["n_rows"] > 0
    for column in ("a", "b", "c"):
        np.testing.assert_array_equal(frame[column].to_numpy(), r.output["data"][column])
    margins = pd.read_csv(tmp_path / "synthetic.margins.csv")
    assert list(margins.columns) == ["key", "index", "value"]
    assert len(margins) == sum(len(v) for v in r.output["margins"].values())  # no padding


def test_ragged_curves_are_not_padded(tmp_path):
    from dpwidgets.export import release_files

    files, _ = release_files({"fpr": np.linspace(0, 1, 9), "tpr": np.linspace(0, 1, 9),
                              "noisy_tp": np.arange(8.0), "auc": 0.5})
    names = [n for n, _ in files]
    assert names == ["release.csv", "release.noisy_tp.csv"]
    assert files[0][1].columns.tolist() == ["index", "fpr", "tpr"]
    assert not files[0][1].isna().any().any() and len(files[1][1]) == 8


def test_non_finite_scalars_survive_the_sidecar(session, tmp_path):
    from dpwidgets.export import load_release
    from dpwidgets.mechanism import Release

    r = Release("d", "m", "m", {"epsilon": 1.0}, 1.0,
                {"auc": float("nan"), "top": float("inf"), "x": np.array([1.0, np.nan])},
                charged=True, time=0.0, guarantee="g")
    table, side = r.save(tmp_path / "r.csv")
    json.loads(side.read_text())  # strict JSON: no bare NaN
    back = load_release(side)["output"]
    assert np.isnan(back["auc"]) and back["top"] == float("inf")
    np.testing.assert_array_equal(back["x"], [1.0, np.nan])


def test_csv_floats_read_back_bit_for_bit(tmp_path):
    """200,000 doubles across 600 decades (seed 1) come back from CSV with every bit."""
    from dpwidgets.export import load_release
    from dpwidgets.mechanism import Release

    rng = np.random.default_rng(1)
    x = rng.standard_normal(200_000) * 10.0 ** rng.integers(-300, 300, 200_000)
    r = Release("d", "m", "m", {"epsilon": 1.0}, 1.0, {"x": x}, charged=True, time=0.0)
    table, _ = r.save(tmp_path / "r.csv")
    np.testing.assert_array_equal(load_release(table)["output"]["x"], x)
