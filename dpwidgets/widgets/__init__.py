"""The widgets: ipywidgets controls + Bokeh figures (through jupyter_bokeh) + the budget meter.

Every widget reaches data only through a door (:class:`dpwidgets.Session` or a curator's
session). The widgets of a family live in its folder (``dpwidgets/families/<family>/widget.py``)
and are exported here by name, found without a list (:func:`dpwidgets.families.exports`); what
they are built from (the release widget base, the controls, the Bokeh glue, the budget meter) is
the kit in :mod:`dpwidgets.ui`. See ``README.md`` in this folder for the usage summary.
"""

from __future__ import annotations

import importlib

import ipywidgets as _w

from .._moved import moved
from ..families import exports as _exports
from ..ui.meter import BudgetMeter
from .diagnostics import BinnedResidualWidget, ResidualPlotWidget, RocWidget
from .dynamic import DynamicHistogramWidget
from .personalized import PersonalizedWidget
from .streams import HierarchyWidget, StreamWidget
from .synth import SyntheticDataWidget


def _family_widgets() -> dict[str, tuple[str, str]]:
    """The widget classes in the ``__all__`` of every family's ``widget`` module."""
    found = {}
    for name, (module, attr) in _exports("widget").items():
        obj = getattr(importlib.import_module(module), attr)
        if isinstance(obj, type) and issubclass(obj, _w.Widget):
            found[name] = (module, attr)
    return found


_FAMILY_WIDGETS = _family_widgets()
globals().update({name: getattr(importlib.import_module(module), attr)
                  for name, (module, attr) in _FAMILY_WIDGETS.items()})

__all__ = [
    "BinnedResidualWidget",
    "BudgetMeter",
    "DynamicHistogramWidget",
    "HierarchyWidget",
    "PersonalizedWidget",
    "ResidualPlotWidget",
    "RocWidget",
    "StreamWidget",
    "SyntheticDataWidget",
]
__all__ += sorted(_FAMILY_WIDGETS)

# Modules that moved into their family's folder (dpwidgets/families/<family>/).
__getattr__ = moved(__name__, {
    "svt_explorer": ("dpwidgets.families.svt.widget", None),
    "attack_demo": ("dpwidgets.families.svt.attack", None),
})
