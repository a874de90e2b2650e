"""Fixtures for the headless widget tests: sessions with small, recognisable datasets."""

from __future__ import annotations

import base64
import gzip
import json

import numpy as np
import pytest


def zipf_scores(n: int, seed: int = 0) -> np.ndarray:
    """Integer Zipf-shaped scores in a shuffled order (public-looking test data)."""
    w = 1.0 / np.arange(1, n + 1)
    return np.random.default_rng(seed).permutation(np.round(w / w.sum() * 200_000))


def secret_scores(n: int, seed: int = 1) -> np.ndarray:
    """Confidential test data whose every value is recognisable: a Zipf profile plus a
    distinct fraction (…+ 0.371 + i·1e-7), so no stand-in or DP output can equal one by chance."""
    return zipf_scores(n, seed) + 0.371 + np.arange(n) * 1e-7


@pytest.fixture
def teaching_session():
    from dpwidgets import Session

    s = Session(mode="teaching", seed=7)
    s.add_dataset("items", zipf_scores(2000), total_epsilon=50.0)
    yield s
    s.close()


@pytest.fixture
def analyst_session(tmp_path):
    from dpwidgets import Session

    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=7)
    s.add_dataset(
        "items", secret_scores(2000), total_epsilon=1.0, stand_in=zipf_scores(2000, seed=3)
    )
    yield s
    s.close()


# -- serialized state, for the leak tests ------------------------------------------------------
def _decode_ndarray(obj: dict) -> list:
    """The values of a Bokeh ``{"type": "ndarray"}`` entry, whichever way its bytes travel:
    a Buffer object (``Document.to_json()``), a memoryview, or base64 text (``serialize_json``)."""
    array = obj["array"]
    if isinstance(array, list):
        return array
    data = array.get("data") if isinstance(array, dict) else None
    if hasattr(data, "to_bytes"):
        raw = data.to_bytes()
    elif isinstance(data, bytes | memoryview):
        raw = bytes(data)
    elif isinstance(data, str):
        raw = base64.b64decode(data)
        if raw[:2] == b"\x1f\x8b":  # bokeh gzips large buffers before base64
            raw = gzip.decompress(raw)
    else:
        raise AssertionError(f"cannot decode ndarray payload {data!r}: the check would be blind")
    return np.frombuffer(raw, dtype=np.dtype(obj["dtype"])).tolist()


def collect_values(obj, numbers: list, strings: list) -> None:
    """Every number and string in a JSON-like tree, with Bokeh's base64 ndarrays decoded."""
    if isinstance(obj, dict):
        if obj.get("type") == "ndarray" and "array" in obj:
            numbers.extend(v for v in _decode_ndarray(obj) if isinstance(v, int | float))
            return
        for value in obj.values():
            collect_values(value, numbers, strings)
    elif isinstance(obj, list | tuple):
        for value in obj:
            collect_values(value, numbers, strings)
    elif isinstance(obj, bool) or obj is None:
        return
    elif isinstance(obj, int | float):
        numbers.append(float(obj))
    elif isinstance(obj, str):
        strings.append(obj)
        # jupyter_bokeh serializes its render bundle to a JSON string: look inside it too.
        if obj[:1] in "{[":
            try:
                collect_values(json.loads(obj), numbers, strings)
            except ValueError:
                pass
    elif isinstance(obj, bytes | memoryview):
        return


def serialized_state() -> tuple[np.ndarray, list[str]]:
    """Numbers and strings in the state of every live ipywidget and every Bokeh document."""
    from bokeh.embed import json_item
    from ipywidgets.widgets.widget import _instances
    from jupyter_bokeh import BokehModel

    numbers: list[float] = []
    strings: list[str] = []
    docs = {}
    for widget in list(_instances.values()):
        collect_values(widget.get_state(), numbers, strings)
        if isinstance(widget, BokehModel):
            doc = widget._model.document
            docs[id(doc)] = (doc, widget._model)
    for doc, model in docs.values():
        collect_values(doc.to_json(), numbers, strings)
        collect_values(json_item(model), numbers, strings)
    return np.asarray(numbers, dtype=float), strings


def leaked(*raw: np.ndarray) -> list[float]:
    """The raw values that appear, as numbers or as text, in any serialized state.

    Several arrays (of any shape: a table, predictions, residuals, scores) are checked at once;
    the first 200 values of each are also searched for as text.
    """
    arrays = [np.asarray(a, dtype=float).ravel() for a in raw]
    numbers, strings = serialized_state()
    values = np.concatenate(arrays)
    hits = values[np.isin(values, numbers)]
    text = "\n".join(strings)
    hits_text = [
        v for a in arrays for v in a[:200] if f"{v:.6f}"[:-1] in text or repr(float(v)) in text
    ]
    return sorted(set(hits.tolist()) | set(hits_text))


def leak_rate(*raw: np.ndarray) -> float:
    """The share of the distinct raw values that :func:`leaked` finds in the state.

    After an analyst release the DP output is on a power-of-two grid (discrete Laplace noise,
    ``floating_point_safe``): a released count equals some true count by chance, for well under
    1% of the values; a leak puts (nearly) all of them there.
    """
    distinct = np.unique(np.concatenate([np.asarray(a, dtype=float).ravel() for a in raw]))
    return len(leaked(*raw)) / max(distinct.size, 1)
