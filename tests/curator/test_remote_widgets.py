"""Every widget previews and releases on a curator session exactly as on a local one.

One table with repeated people is declared twice, with the same views: in a local analyst
session (``Session.add_table``) and in a real curator process (``dpwidgets curator serve``),
reached with ``Session.connect``. Each widget is made on both, with the same preview seed: the
preview (status line and every plotted source) must be the same, it must cost nothing, and a
Release must charge the same ε on both -- the ε the preview said it would.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.curator.config import load_config
from dpwidgets.curator.door import Analysts

from .conftest import Server

# Widgets made here are closed after each test: later leak checks scan every live widget.
pytestmark = pytest.mark.usefixtures("close_new_widgets")

MAX_ROWS = 2
COLUMNS = {"page": {"kind": "int", "domain": [0, 19]},
           "day": {"kind": "int", "domain": [0, 29]},
           "state": {"kind": "int", "domain": [0, 7]},
           "device": {"kind": "category", "domain": ["phone", "desktop"]},
           "x": {"kind": "float", "domain": [-3, 3]},
           "y": {"kind": "float", "domain": [-8, 8]},
           "label": {"kind": "int", "domain": [0, 1]},
           "value": {"kind": "float", "domain": [0, 100]},
           "budget": {"kind": "float", "domain": [0.5, 1.0]}}
VIEWS = {"pages": {"kind": "counts", "columns": ["page"], "facts": {"monotonic": True}},
         "daily": {"kind": "per_step", "columns": ["day"]},
         "states": {"kind": "counts2d", "columns": ["state", "day"]},
         "histograms": {"kind": "snapshots", "columns": ["day", "page"],
                        "facts": {"cardinality": 5}},
         "table": {"kind": "rows", "columns": ["page", "day", "device"], "rows": 900},
         "xy": {"kind": "rows", "columns": ["x", "y"], "rows": 900},
         "clinic": {"kind": "rows", "columns": ["x", "label"], "rows": 900},
         "survey": {"kind": "rows", "columns": ["value", "budget"], "rows": 900}}
MECHANISMS = ["top_c", "svt", "laplace_stream", "pegasus", "hierarchical_pegasus", "dsat",
              "dsft", "dynamic_fixed", "dynamic_uniform", "dpcopula", "independent_synth",
              "laplace_histogram_synth", "fit_model", "roc_curve", "binned_residuals",
              "residual_plot", "personalized_histogram"]


def visits(seed: int = 3, people: int = 300) -> pd.DataFrame:
    """People with 1-5 rows each (so bounding to MAX_ROWS matters)."""
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(people), rng.integers(1, 6, people))
    n = pid.size
    x = rng.normal(0, 1, n)
    return pd.DataFrame({
        "person": pid, "page": rng.integers(0, 20, n), "day": rng.integers(0, 30, n),
        "state": rng.integers(0, 8, n), "device": rng.choice(["phone", "desktop"], n),
        "x": x, "y": 2 * x + rng.normal(0, 1, n),
        "label": (rng.random(n) < 1 / (1 + np.exp(-2 * x))).astype(int),
        "value": rng.uniform(0, 100, n), "budget": rng.choice([0.5, 1.0], n)})


def _toml(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """(local analyst session, remote session): the same table and views, budget 100 each."""
    where = tmp_path_factory.mktemp("remote_widgets")
    frame = visits()
    frame.to_parquet(where / "visits.parquet")
    lines = ['[curator]', 'ledger = "ledger.sqlite"', '', '[datasets.visits]',
             'source = "visits.parquet"', 'unit = "person"', f"max_rows = {MAX_ROWS}",
             "total_epsilon = 100.0", f"mechanisms = {_toml(MECHANISMS)}"]
    lines += [f"columns.{k} = {_toml(v)}" for k, v in COLUMNS.items()]
    lines += [f"views.{k} = {_toml(v)}" for k, v in VIEWS.items()]
    (where / "curator.toml").write_text("\n".join(lines) + "\n")
    config = load_config(where / "curator.toml")
    token = Analysts(config.analysts).add("alice", {"visits": 100.0})
    server = Server(where / "curator.toml").start()
    local = Session("analyst", ledger=where / "local.sqlite", seed=11)
    local.add_table("visits", frame, columns=COLUMNS, unit_column="person", max_rows=MAX_ROWS,
                    total_epsilon=100.0, views=VIEWS)
    remote = Session.connect(server.url, token=token, seed=11)
    try:
        yield local, remote
    finally:
        remote.close()
        local.close()
        server.stop()


def sources(widget) -> list[str]:
    """The data of every Bokeh source the widget draws, as sorted JSON texts."""
    from bokeh.models import ColumnDataSource
    from jupyter_bokeh import BokehModel

    found, seen, stack = [], set(), [widget]
    while stack:
        w = stack.pop(0)
        if id(w) in seen:
            continue
        seen.add(id(w))
        if isinstance(w, BokehModel):
            for source in w._model.select({"type": ColumnDataSource}):
                found.append(json.dumps({k: np.asarray(v).tolist()
                                         for k, v in source.data.items()}, sort_keys=True))
        stack.extend(getattr(w, "children", ()))
    return sorted(found)


def make(which: str, session):
    from dpwidgets import widgets as w

    return {
        "svt": lambda: w.SVTExplorer(session, dataset="visits/pages", c=3, debounce=0),
        "stream": lambda: w.StreamWidget(session, dataset="visits/daily", debounce=0),
        "hierarchy": lambda: w.HierarchyWidget(session, dataset="visits/states", debounce=0),
        "dynamic": lambda: w.DynamicHistogramWidget(session, dataset="visits/histograms",
                                                   debounce=0),
        "synthetic": lambda: w.SyntheticDataWidget(session, dataset="visits/table",
                                                   debounce=0),
        "roc": lambda: w.RocWidget(session, dataset="visits/clinic", debounce=0),
        "binned": lambda: w.BinnedResidualWidget(session, dataset="visits/clinic",
                                                 debounce=0),
        "residuals": lambda: w.ResidualPlotWidget(session, dataset="visits/xy", debounce=0),
        "personalized": lambda: w.PersonalizedWidget(session, "visits/survey",
                                                     bins=np.linspace(0, 100, 11), debounce=0),
    }[which]()


@pytest.mark.slow
@pytest.mark.parametrize("which", ["svt", "stream", "hierarchy", "dynamic", "synthetic", "roc",
                                   "binned", "residuals", "personalized"])
def test_a_widget_previews_and_releases_on_a_curator_as_locally(sessions, which):
    local, remote = sessions
    made = {}
    for name, s in (("local", local), ("remote", remote)):
        spent = s.spent("visits/pages")
        w = make(which, s)
        assert "PREVIEW" in w.status.value, (name, w.message.value)
        assert s.spent("visits/pages") == spent  # a preview is free
        made[name] = w
    assert made["local"].status.value == made["remote"].status.value
    drawn = sources(made["local"])
    assert drawn and any(any(len(v) for v in json.loads(d).values()) for d in drawn)
    assert drawn == sources(made["remote"])
    if which == "svt":  # a release needs a threshold the analyst typed
        for w in made.values():
            w.threshold.value = 20.0
    charged = {}
    for name, s in (("local", local), ("remote", remote)):
        w = made[name]
        cost = w.cost()
        spent = s.spent("visits/pages")
        release = w.release()
        assert release is not None, (name, w.message.value)
        assert release.charged and release.epsilon == pytest.approx(cost)
        assert s.spent("visits/pages") - spent == pytest.approx(cost)
        assert "released" in w.status.value.lower()
        charged[name] = release.epsilon
        w.close()
    assert charged["local"] == pytest.approx(charged["remote"])
