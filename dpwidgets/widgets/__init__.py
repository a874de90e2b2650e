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
from ..families import names as _families
from ..ui.meter import BudgetMeter


def _is_widget(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, _w.Widget)


#: The widget classes in the ``__all__`` of every family's ``widget`` module.
_FAMILY_WIDGETS = _exports("widget", keep=_is_widget)
globals().update({name: getattr(importlib.import_module(module), attr)
                  for name, (module, attr) in _FAMILY_WIDGETS.items()})

__all__ = ["BudgetMeter", *sorted(_FAMILY_WIDGETS)]

# Modules that moved into their family's folder (dpwidgets/families/<family>/).
_old_module = moved(__name__, {
    "svt_explorer": ("dpwidgets.families.svt.widget", None),
    "attack_demo": ("dpwidgets.families.svt.attack", None),
})


def __getattr__(name: str):
    if name in _families():  # dpwidgets.widgets.<family>: the family's widget module now
        return moved(__name__, {name: (f"dpwidgets.families.{name}.widget", None)})(name)
    return _old_module(name)
