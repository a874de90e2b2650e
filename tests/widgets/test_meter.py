"""The budget meter: traits follow the ledger, warn at 80%, state odds, ship their JS."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine.budget import BudgetExceededError
from dpwidgets.widgets import BudgetMeter
from dpwidgets.widgets._static import static_path
from dpwidgets.widgets.meter import odds_sentence

SVT = dict(variant="standard", c=2, threshold=10.0)


def test_meter_segments_follow_the_ledger(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("d", np.arange(50.0), total_epsilon=1.0, stand_in=np.zeros(50))
    meter = s.meter
    assert isinstance(meter, BudgetMeter) and s.meter is meter
    assert meter.budgets[0]["spent"] == 0 and meter.budgets[0]["segments"] == []
    s.release("d", "svt", epsilon=0.25, label="first", **SVT)
    s.release("d", "svt", epsilon=0.25, label="first", **SVT)  # cached replay: no segment
    s.release("d", "svt", epsilon=0.5, label="second", **SVT)
    b = meter.budget("d")
    assert [seg["label"] for seg in b["segments"]] == ["first", "second"]
    assert [seg["epsilon"] for seg in b["segments"]] == [0.25, 0.5]
    assert all(seg["time"] for seg in b["segments"])
    assert b["spent"] == pytest.approx(0.75) and b["remaining"] == pytest.approx(0.25)
    assert b["warning"] is False
    assert "e^0.25" in b["odds"] and f"{math.exp(0.25):.3g}" in b["odds"]


def test_meter_warns_at_eighty_percent_and_reports_refusals(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("d", np.arange(50.0), total_epsilon=1.0, stand_in=np.zeros(50))
    s.release("d", "svt", epsilon=0.79, **SVT)
    assert s.meter.budget("d")["warning"] is False
    s.release("d", "svt", epsilon=0.01, **dict(SVT, c=3))
    assert s.meter.budget("d")["warning"] is True
    with pytest.raises(BudgetExceededError):
        s.release("d", "svt", epsilon=0.5, **dict(SVT, c=4))
    assert "exceeded" in s.meter.message and "Nothing was charged" in s.meter.message
    assert s.meter.budget("d")["spent"] == pytest.approx(0.8)


def test_meter_shows_teaching_overdraft():
    s = Session(mode="teaching")
    s.add_dataset("d", np.arange(50.0), total_epsilon=0.3)
    s.release("d", "svt", epsilon=0.2, **SVT)
    s.release("d", "svt", epsilon=0.2, **dict(SVT, c=3))
    b = s.meter.budget("d")
    assert b["overdraft"] == pytest.approx(0.2)
    assert [seg["overdraft"] for seg in b["segments"]] == [False, True]


def test_odds_sentence():
    text = odds_sentence(1.0)
    assert "factor e^1" in text and "2.72" in text
    # A huge remaining budget (a teaching ledger) must not overflow e^ε.
    assert "10^434" in odds_sentence(1000.0)


def test_meter_front_end_is_shipped():
    js = static_path("meter.js")
    assert js.name == "meter.js" and "export default" in js.read_text()
    source = js.read_text()
    for css_class in ("dpw-meter", "dpw-meter-segment", "dpw-meter-warning", "dpw-meter-odds"):
        assert css_class in source
    assert BudgetMeter._esm  # anywidget resolved the file
    # The wheel ships js/ as dpwidgets/_static (the editable install falls back on js/).
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]["js"] == (
        "dpwidgets/_static"
    )
