"""Generators for the source texts' experimental setups (seeded through an explicit Generator).

Everything is made from public recipes: no download at run time, and where a text's data are
not public, a stand-in with the published shape.

- a family's own stand-ins live in its folder (``dpwidgets/families/<family>/standins.py``) and
  are exported here by name, found without a list: the SVT family's Zipf item scores for SVT /
  top-c selection (Lyu, Su & Li 2017, §6) and Zipf-like 4096-cell histograms shaped like
  Chen 2018, Table 3.1, for the GPTT reconstruction; the synthetic-data family's DPCopula
  tables (Li 2017, Ch. 3: Gaussian dependence, census-shaped, the fair and RAND HIE surveys)
  and the public stand-in of a confidential table (``synth_stand_in``);
  the dynamic family's histogram series (Li 2017, Ch. 4): census-like tuple replacement,
  moving objects, a series' public stand-in;
  the diagnostics family's regression-diagnostics scenarios (Chen 2018, Ch. 4; Chen et al.
  2016) and the models under diagnosis (its old path here is ``regression``);
  the personalized-DP family's privacy vectors (Li 2017, Ch. 5), census-like count and
  logistic tasks, the fair data, and the public stand-in of a table ``[value, budget]``;
  the streams family's counting streams shaped like Chen 2018, Ch. 5's WiFi traces (Table 5.1)
  and a public series turned into counts.
"""

import importlib

from .._moved import moved
from ..families import exports as _exports
from ..families import names as _families

_FAMILY_STANDINS = dict(_exports("standins"))
globals().update({name: getattr(importlib.import_module(module), attr)
                  for name, (module, attr) in _FAMILY_STANDINS.items()})

__all__ = sorted(_FAMILY_STANDINS)

_old_module = moved(__name__, {"svt": ("dpwidgets.families.svt.standins", None)})


def __getattr__(name: str):
    family = "diagnostics" if name == "regression" else name
    if family in _families():  # dpwidgets.datasets.<family>: the family's stand-ins now
        return moved(__name__, {name: (f"dpwidgets.families.{family}.standins", None)})(name)
    return _old_module(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
