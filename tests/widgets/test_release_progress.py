"""A running release shows it is alive: its steps (where the mechanism reports public ones)
and the time it has run, in the widget's status line; nothing of the data."""

from __future__ import annotations

import time

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets._progress import report, reporting
from dpwidgets.datasets import multi_state_streams
from dpwidgets.ui.base import ReleaseProgress
from dpwidgets.widgets import HierarchyWidget

pytestmark = pytest.mark.usefixtures("close_new_widgets")


def _hierarchy(tmp_path, secret):
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite")
    s.add_dataset("states", secret, total_epsilon=1.0, stand_in=np.zeros_like(secret))
    return s, HierarchyWidget(s, dataset="states", epsilon=0.5, debounce=0)


def _watch(widget) -> list[str]:
    seen: list[str] = []
    widget.status.observe(lambda change: seen.append(change["new"]), names="value")
    return seen


def test_report_reaches_only_a_listener():
    heard = []
    report(1, 2)  # nobody listens: nothing happens
    with reporting(lambda done, total: heard.append((done, total))):
        report(3, 7)
    report(4, 7)
    assert heard == [(3, 7)]


def test_a_hierarchy_release_shows_its_nodes(tmp_path, monkeypatch):
    # PHS-PGS reports each node of the public tree (16 states: 31 nodes); the steps are the
    # same whatever the data (two very different secrets show the same lines).
    monkeypatch.setattr(ReleaseProgress, "TICK", 0.0)
    lines = []
    for k, scale in enumerate((1, 1000)):
        secret = multi_state_streams(np.random.default_rng(3), n_states=16, length=300,
                                     total=2000) * scale
        s, hw = _hierarchy(tmp_path / str(k), secret)
        seen = _watch(hw)
        assert hw.release() is not None
        busy = [v for v in seen if "Releasing" in v]
        steps = {v.split(" · ")[0].split("(")[0].strip() for v in busy if "<progress" in v}
        # Every node shown (the step line is drawn at each report when TICK is 0), in a line
        # that holds nothing but public counts; the timer thread's refreshes only repeat them.
        assert steps == {f"<span class='dpw-busy'>Releasing… <progress value='{k}' max='31'>"
                         f"</progress> step {k} of 31" for k in range(31)}, sorted(steps)[:3]
        assert "Releasing" not in hw.status.value  # the released output's line replaced it
        lines.append(steps)
        s.close()
    assert lines[0] == lines[1]


def test_a_slow_release_shows_the_time_it_has_run(tmp_path, monkeypatch):
    # A release of 1.3 s (as on a curator far away): the line is refreshed from a timer
    # thread while the kernel waits, every TICK (0.2 s here).
    monkeypatch.setattr(ReleaseProgress, "TICK", 0.2)
    secret = multi_state_streams(np.random.default_rng(3), n_states=4, length=100, total=300)
    s, hw = _hierarchy(tmp_path, secret)
    real = hw._make_release

    def slow():
        time.sleep(1.3)
        return real()

    monkeypatch.setattr(hw, "_make_release", slow)
    seen = _watch(hw)
    assert hw.release() is not None
    busy = [v for v in seen if "Releasing" in v]
    assert any(" · 0 s" in v for v in busy) and any(" · 1 s" in v for v in busy), busy
    n = len(seen)
    time.sleep(0.5)
    assert len(seen) == n  # the timer stopped with the release
    s.close()
