"""The budget meter: traits follow the ledger, warn at 80%, state odds, ship their JS."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine.budget import BudgetExceededError
from dpwidgets.ui.meter import odds_sentence
from dpwidgets.ui.static import static_path
from dpwidgets.widgets import BudgetMeter

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


def test_odds_sentence_names_the_privacy_unit():
    assert "any one row" in odds_sentence(0.5) and "k rows" in odds_sentence(0.5)
    assert "any one person" in odds_sentence(0.5, unit="person")
    assert "row" not in odds_sentence(0.5, unit="person")
    with pytest.raises(ValueError, match="unit"):
        odds_sentence(0.5, unit="household")


def test_meter_says_row_unless_the_owner_declared_one_row_per_person(tmp_path, monkeypatch):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("d", np.arange(50.0), total_epsilon=1.0, stand_in=np.zeros(50))
    # whatever the session offers today, a missing or failing unit() means "row"
    monkeypatch.setattr(s, "unit", None, raising=False)
    s.meter.refresh()
    assert s.meter.budget("d")["unit"] == "row" and "any one row" in s.meter.budget("d")["odds"]
    monkeypatch.setattr(s, "unit", lambda name: "person", raising=False)
    s.meter.refresh()
    b = s.meter.budget("d")
    assert b["unit"] == "person" and "any one person" in b["odds"]
    monkeypatch.setattr(s, "unit", lambda name: "row", raising=False)
    s.meter.refresh()
    assert "any one row" in s.meter.budget("d")["odds"]

    def broken(name):
        raise KeyError(name)

    monkeypatch.setattr(s, "unit", broken, raising=False)
    s.meter.refresh()
    assert s.meter.budget("d")["unit"] == "row"


def test_meter_refresh_is_bounded_in_the_number_of_spends(tmp_path, monkeypatch):
    from dpwidgets.engine.budget import PrivacyLedger

    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("d", np.arange(50.0), total_epsilon=100.0, stand_in=np.zeros(50))
    ledger = s.ledger("d")
    ledger._conn.execute("PRAGMA synchronous = OFF")  # only to fill the file quickly
    for i in range(1200):
        ledger.spend(0.01, label=f"r{i}")
    ledger.spend(0.5, label="p", partition="age", parts=["a"])
    ledger.spend(0.25, label="q", partition="age", parts=["b"])  # free: age already at 0.5

    def no_full_read(self):
        raise AssertionError("the meter read every spend")

    monkeypatch.setattr(PrivacyLedger, "spends", property(no_full_read))
    s.meter.refresh()
    b = s.meter.budget("d")
    limit = BudgetMeter.LATEST
    assert b["count"] == 1202 and len(b["segments"]) == limit + 1
    earlier, *latest = b["segments"]
    assert earlier["earlier"] is True and earlier["count"] == 1202 - limit
    assert earlier["epsilon"] == pytest.approx(0.01 * (1200 - limit + 2))
    assert [seg["label"] for seg in latest[-3:]] == ["r1199", "p", "q"]
    assert [seg["charged"] for seg in latest[-2:]] == [0.5, 0.0]
    assert latest[-1]["epsilon"] == 0.25
    # the bar adds up to what is spent
    assert math.fsum(seg["charged"] for seg in b["segments"]) == pytest.approx(b["spent"])
    assert b["spent"] == pytest.approx(12.5)


def test_analyst_meter_carries_nothing_computed_from_the_data(tmp_path):
    """Two analyst sessions on different data, with the same releases, show the same meter."""

    def state(data, path):
        s = Session(mode="analyst", ledger=path)
        s.add_dataset("d", data, total_epsilon=1.0, stand_in=np.zeros(50))
        s.release("d", "svt", epsilon=0.25, label="first", **SVT)
        s.release("d", "svt", epsilon=0.5, label="second", **dict(SVT, c=3))
        with pytest.raises(BudgetExceededError):
            s.release("d", "svt", epsilon=0.5, label="third", **dict(SVT, c=4))
        budgets = s.meter.budgets
        for b in budgets:
            for seg in b["segments"]:
                seg.pop("time")  # the clock, not the data
        return budgets, s.meter.message

    rng = np.random.default_rng(0)
    one = state(np.arange(50.0), tmp_path / "a.sqlite")
    two = state(rng.normal(100.0, 30.0, 50), tmp_path / "b.sqlite")
    assert one == two
    assert one[0][0]["overdraft"] == 0.0


def test_the_history_is_viewable_and_exportable(tmp_path):
    import pandas as pd

    s = Session("analyst", ledger=tmp_path / "ledger.sqlite")
    s.add_dataset("sales", np.arange(50.0), total_epsilon=1.0)
    s.release("sales", "laplace_stream", epsilon=0.1)
    s.release("sales", "laplace_stream", epsilon=0.2, run=1)
    history = s.meter.history("sales")
    assert history["epsilon"].tolist() == [0.1, 0.2]
    assert history["charged"].sum() == pytest.approx(s.spent("sales"))
    path = s.meter.export(tmp_path / "history.csv", "sales")
    assert pd.read_csv(path)["label"].tolist() == history["label"].tolist()
    s.meter.close()
    s.close()


def test_two_notebooks_on_one_ledger_agree_when_the_view_asks(tmp_path, close_new_widgets):
    """Two sessions (two notebooks' kernels) on one ledger file: what one spends shows on the
    other's meter as soon as its view asks for a refresh (drawn, in sight, hovered, or its
    timer), with no release on that side."""
    ledger = tmp_path / "shared.sqlite"
    first = Session(mode="analyst", ledger=ledger)
    second = Session(mode="analyst", ledger=ledger)
    for s in (first, second):
        s.add_dataset("d", np.arange(50.0), total_epsilon=1.0, stand_in=np.zeros(50))
    meter = second.meter
    assert meter.budget("d")["spent"] == 0
    first.release("d", "svt", epsilon=0.25, label="from the other notebook", **SVT)
    assert meter.budget("d")["spent"] == 0  # nothing told this kernel yet
    meter._handle_custom_msg({"kind": "refresh"}, [])
    b = meter.budget("d")
    assert b["spent"] == pytest.approx(0.25) and b["remaining"] == pytest.approx(0.75)
    assert [seg["label"] for seg in b["segments"]] == ["from the other notebook"]
    meter._handle_custom_msg({"kind": "something else"}, [])  # ignored
    assert meter.budget("d")["spent"] == pytest.approx(0.25)
    # The view asks on its own: when drawn, when in sight, on hover, on a timer.
    source = static_path("meter.js").read_text()
    for hook in ('kind: "refresh"', "IntersectionObserver", "pointerenter", "setInterval"):
        assert hook in source
    assert meter.refresh_seconds >= 1
    first.close()
    second.close()


def test_a_replay_is_shown_as_free(tmp_path, close_new_widgets):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("d", np.arange(50.0), total_epsilon=1.0, stand_in=np.zeros(50))
    meter = s.meter
    s.release("d", "svt", epsilon=0.25, label="first", **SVT)
    assert meter.notice == ""
    again = s.release("d", "svt", epsilon=0.25, label="first", **SVT)
    assert not again.charged
    assert "first: replayed" in meter.notice and "free, nothing charged" in meter.notice
    assert meter.budget("d")["spent"] == pytest.approx(0.25)
    s.release("d", "svt", epsilon=0.25, label="second", **dict(SVT, c=3))
    assert meter.notice == ""  # a charged release: the bar shows it
    assert "dpw-meter-notice" in static_path("meter.js").read_text()
    s.close()
