"""Every widget constructor, given a bad ε or an outsize count: it refuses (naming the control
or argument) and stays alive, or raises a ValueError naming the argument -- never clamps,
hangs or fails elsewhere."""

from __future__ import annotations

import inspect
import math

import ipywidgets
import pytest

import dpwidgets.widgets as widgets
from dpwidgets import Session
from dpwidgets.ui.base import ReleaseWidget

pytestmark = pytest.mark.usefixtures("close_new_widgets")


CLASSES = sorted((c for c in vars(widgets).values()
                  if inspect.isclass(c) and issubclass(c, ReleaseWidget)), key=lambda c: c.__name__)


@pytest.mark.slow
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("epsilon", [-1.0, math.nan, 0.0])
def test_a_bad_epsilon_is_refused_not_clamped(cls, epsilon):
    s = Session(mode="teaching", seed=0)
    try:
        widget = cls(s, epsilon=epsilon)
    except ValueError as exc:
        assert "epsilon" in str(exc) or "ε" in str(exc)
        return
    assert isinstance(widget, ipywidgets.Widget)
    assert "Refused" in widget.message.value and "ε" in widget.message.value
    assert s.spent(widget.dataset) == 0.0 and widget.last_release is None


def test_the_top_c_panel_refuses_an_outsize_number_of_runs():
    s = Session(mode="teaching", seed=0)
    with pytest.raises(ValueError, match="topc_runs"):
        widgets.SVTExplorer(s, topc_runs=10**9)
